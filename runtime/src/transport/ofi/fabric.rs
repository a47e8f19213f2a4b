//! The libfabric objects of one PE — provider choice, fabric, domain, completion queue,
//! address vector, endpoint and memory regions — opened in order and closed in the reverse
//! order libfabric requires.
//!
//! Never closes an endpoint that was not enabled: `ofi_rxm` 1.17 segfaults on that. Such an
//! endpoint (and everything it is bound to) is left open; the process is failing anyway.

use std::ffi::{CString, c_void};
use std::ptr::null_mut;

use super::ffi::{self, fi_info, fid_av, fid_cq, fid_domain, fid_ep, fid_fabric, fid_mr};

/// Every `FI_MR_*` mode bit this transport knows how to honour (`fi_mr(3)`): local
/// registration (bounce buffer), virtual addresses, allocated memory, provider keys and
/// endpoint-bound regions.
pub(super) const MR_MODES: u32 =
    ffi::FI_MR_LOCAL | ffi::FI_MR_VIRT_ADDR | ffi::FI_MR_ALLOCATED | ffi::FI_MR_PROV_KEY | ffi::FI_MR_ENDPOINT;

/// Signals whose default action ends the process with a core dump, which a launcher reports
/// as death by that signal.
const FATAL_SIGNALS: [libc::c_int; 5] = [libc::SIGABRT, libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE];

/// Undoes the crash handlers of libraries that libfabric's providers load: libinfinipath and
/// libpsm2 (the `psm` and `psm2` providers) catch SIGABRT, SIGSEGV and others in a library
/// constructor, print a backtrace and `exit(1)`. A PE that aborts then looks like one that
/// exited with status 1, with no core dump. A handler is reset to the default only when its
/// code lies in one of those libraries, so the program's own handlers stay. Returns the
/// signals reset.
pub(super) fn undo_foreign_crash_handlers() -> Vec<libc::c_int> {
    let mut reset = Vec::new();
    for sig in FATAL_SIGNALS {
        // SAFETY: sigaction is plain data; all zeroes is a valid value.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: with a null new action sigaction only reads the current one into `old`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            continue;
        }
        let h = old.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            continue;
        }
        // SAFETY: Dl_info is plain data; all zeroes is a valid value.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr only reads the loader's tables; `info` is written on success.
        if unsafe { libc::dladdr(h as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
            continue;
        }
        // SAFETY: dladdr returned a NUL-terminated path owned by the loader.
        let lib = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        let file = lib.rsplit('/').next().unwrap_or(&lib);
        if file.starts_with("libinfinipath") || file.starts_with("libpsm") {
            // SAFETY: sigaction is plain data; all zeroes is a valid value.
            let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
            dfl.sa_sigaction = libc::SIG_DFL;
            // SAFETY: installs the default disposition (no handler, empty mask).
            if unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) } == 0 {
                reset.push(sig);
            }
        }
    }
    reset
}

/// Runs [`undo_foreign_crash_handlers`] at load time too, after the constructors of the
/// libraries this one depends on (which install the handlers), so that a PE that aborts even
/// before `shmem_init` dies by its signal.
#[used]
#[unsafe(link_section = ".init_array")]
static UNDO_AT_LOAD: extern "C" fn() = {
    extern "C" fn undo() {
        undo_foreign_crash_handlers();
    }
    undo
};

/// What the chosen provider said about itself.
#[derive(Debug, Clone)]
pub(super) struct ProviderInfo {
    /// `fabric_attr->prov_name` (`tcp;ofi_rxm`).
    pub(super) name: String,
    /// `domain_attr->name` (`lo`, `eth0`).
    pub(super) domain: String,
    /// `domain_attr->mr_mode`.
    pub(super) mr_mode: u32,
    /// Whether the provider needs the application to drive data progress.
    pub(super) manual_progress: bool,
    /// Whether the domain is `FI_THREAD_SAFE` (else calls are serialized by the transport).
    pub(super) thread_safe: bool,
    /// Whether `FI_DELIVERY_COMPLETE` is available (quiet = remote completion).
    pub(super) delivery_complete: bool,
    /// `tx_attr->inject_size`.
    pub(super) inject_size: usize,
    /// `ep_attr->max_msg_size`.
    pub(super) max_msg_size: usize,
    /// `tx_attr->msg_order`.
    pub(super) msg_order: u64,
}

/// How to pick the provider: what `FI_PROVIDER` and the source address say, plus test
/// overrides.
#[derive(Debug, Clone, Default)]
pub(super) struct Choice {
    /// Provider name for the hints (`None`: libfabric's own choice, which honours `FI_PROVIDER`).
    pub(super) provider: Option<String>,
    /// Node to bind to (`fi_getinfo` node with `FI_SOURCE`).
    pub(super) src_addr: Option<String>,
}

/// The result list of `fi_getinfo`, freed on drop.
pub(super) struct InfoList(*mut fi_info);

impl InfoList {
    /// The first (chosen) entry.
    pub(super) fn first(&self) -> *mut fi_info {
        self.0
    }
}

impl Drop for InfoList {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the list came from fi_getinfo and is freed exactly once.
            unsafe { ffi::fi_freeinfo(self.0) };
        }
    }
}

/// Hints as `fi_getinfo(3)` reads them, freed on drop.
struct Hints(*mut fi_info);

impl Drop for Hints {
    fn drop(&mut self) {
        // SAFETY: allocated by fi_allocinfo, freed once; fi_freeinfo frees the strdup'ed
        // provider name too.
        unsafe { ffi::fi_freeinfo(self.0) };
    }
}

fn hints(choice: &Choice, delivery: bool, thread_safe: bool) -> Result<Hints, String> {
    // SAFETY: fi_allocinfo returns a zeroed fi_info with every attr struct allocated, or null.
    let h = unsafe { ffi::oxs_allocinfo() };
    if h.is_null() {
        return Err("fi_allocinfo failed (out of memory)".into());
    }
    let hints = Hints(h);
    // SAFETY: h and its attribute structs are valid allocations from fi_allocinfo; the
    // provider name is malloc'ed so that fi_freeinfo may free it.
    unsafe {
        (*h).caps = u64::from(ffi::FI_RMA | ffi::FI_ATOMIC);
        (*h).mode = 0;
        (*(*h).ep_attr).type_ = ffi::FI_EP_RDM;
        (*(*h).domain_attr).mr_mode = MR_MODES as i32;
        (*(*h).domain_attr).threading = if thread_safe { ffi::FI_THREAD_SAFE } else { ffi::FI_THREAD_DOMAIN };
        if delivery {
            (*(*h).tx_attr).op_flags = u64::from(ffi::FI_DELIVERY_COMPLETE);
        }
        if let Some(p) = &choice.provider {
            let c = CString::new(p.as_str()).map_err(|_| format!("provider name {p:?} contains a NUL byte"))?;
            (*(*h).fabric_attr).prov_name = libc::strdup(c.as_ptr());
        }
    }
    Ok(hints)
}

/// Whether provider `name` delivers a write before it reports the write complete under
/// `FI_DELIVERY_COMPLETE`. libfabric 1.17's `shm` does not, always: it carries a small
/// delivery-complete write by its segmentation (SAR) protocol, and a write so completed was
/// seen to land at the target after a later atomic that waited for that completion (a
/// collective's tag arriving after its count: in 1 to 5 of 180 two-PE jobs, run six at a
/// time on two cores).
/// Without it, quiet and fence prove delivery by a read-back, as for any provider without
/// delivery-complete. `shm` declares no read-after-write order, but it has it: a write either
/// lands before `fi_write` returns (cross-memory attach) or is queued in the one command
/// queue the target serves in order, and the read-back goes the same way.
pub(super) fn trusts_delivery_complete(name: &str) -> bool {
    name != "shm"
}

/// `fi_getinfo` for RDM endpoints with RMA and atomics. Tries the best configuration first
/// (thread-safe domain with delivery-complete), then gives up one wish at a time.
pub(super) fn getinfo(choice: &Choice) -> Result<(InfoList, ProviderInfo), String> {
    let node = match &choice.src_addr {
        Some(a) => Some(CString::new(a.as_str()).map_err(|_| format!("address {a:?} contains a NUL byte"))?),
        None => None,
    };
    let mut last = 0isize;
    for (delivery, thread_safe) in [(true, true), (false, true), (true, false), (false, false)] {
        let h = hints(choice, delivery, thread_safe)?;
        let mut info: *mut fi_info = null_mut();
        let flags = if node.is_some() { ffi::FI_SOURCE } else { 0 };
        // SAFETY: hints is a valid fi_info; node is null or a valid C string; info receives
        // the result list, which InfoList frees.
        let rc = unsafe {
            ffi::fi_getinfo(
                ffi::oxs_build_version(),
                node.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
                std::ptr::null(),
                flags,
                h.0,
                &mut info,
            )
        };
        if rc == 0 && !info.is_null() {
            let list = InfoList(info);
            // SAFETY: info is the first entry of a valid list, with its attr structs.
            let pi = unsafe { describe(info, delivery) };
            if pi.delivery_complete && !trusts_delivery_complete(&pi.name) {
                // Ask again without it: the endpoint must not apply it by default either.
                tracing::debug!(target: "ofi", "{}: not using FI_DELIVERY_COMPLETE; quiet and fence read back", pi.name);
                continue;
            }
            return Ok((list, pi));
        }
        last = rc as isize;
    }
    let which = match (&choice.provider, std::env::var("FI_PROVIDER")) {
        (Some(p), _) => format!(" from provider {p:?}"),
        (None, Ok(p)) => format!(" from provider {p:?} (FI_PROVIDER)"),
        _ => String::new(),
    };
    let at = choice.src_addr.as_ref().map(|a| format!(" bound to {a:?}")).unwrap_or_default();
    Err(format!(
        "no libfabric endpoint{which}{at} offers reliable datagrams (FI_EP_RDM) with FI_RMA and FI_ATOMIC: fi_getinfo: {} \
         (`fi_info -t FI_EP_RDM -c 'FI_RMA|FI_ATOMIC'` lists the candidates)",
        ffi::strerror(last)
    ))
}

/// # Safety
/// `i` must be a valid `fi_info` from `fi_getinfo`.
unsafe fn describe(i: *mut fi_info, delivery: bool) -> ProviderInfo {
    // SAFETY: per the caller, i and its attribute structs are valid.
    unsafe {
        let d = &*(*i).domain_attr;
        let tx = &*(*i).tx_attr;
        ProviderInfo {
            name: ffi::cstr((*(*i).fabric_attr).prov_name),
            domain: ffi::cstr(d.name),
            mr_mode: d.mr_mode as u32,
            manual_progress: d.data_progress == ffi::FI_PROGRESS_MANUAL,
            thread_safe: d.threading == ffi::FI_THREAD_SAFE,
            delivery_complete: delivery && tx.op_flags & u64::from(ffi::FI_DELIVERY_COMPLETE) != 0,
            inject_size: tx.inject_size,
            max_msg_size: (*(*i).ep_attr).max_msg_size.max(1),
            msg_order: tx.msg_order,
        }
    }
}

/// A libfabric call's return code as a `Result`, with the call's name in the error.
pub(super) fn check(rc: i32, call: &str) -> Result<(), String> {
    if rc == 0 { Ok(()) } else { Err(format!("{call} failed: {}", ffi::strerror(rc as isize))) }
}

/// Every object of one PE, closed in order on drop.
pub(super) struct Fids {
    pub(super) info: Option<InfoList>,
    pub(super) fabric: *mut fid_fabric,
    pub(super) domain: *mut fid_domain,
    pub(super) cq: *mut fid_cq,
    pub(super) av: *mut fid_av,
    pub(super) ep: *mut fid_ep,
    pub(super) ep_enabled: bool,
    /// Memory regions (segments and the bounce buffer); null entries for empty segments.
    pub(super) mrs: Vec<*mut fid_mr>,
    pub(super) mr_endpoint: bool,
}

impl Fids {
    pub(super) fn new(info: InfoList, mr_endpoint: bool) -> Fids {
        Fids {
            info: Some(info),
            fabric: null_mut(),
            domain: null_mut(),
            cq: null_mut(),
            av: null_mut(),
            ep: null_mut(),
            ep_enabled: false,
            mrs: Vec::new(),
            mr_endpoint,
        }
    }

    /// Opens fabric, domain, completion queue (no wait object: see the progress thread),
    /// address vector for `n_peers` and the endpoint, binds and enables it.
    pub(super) fn open(&mut self, n_peers: usize) -> Result<(), String> {
        let info = self.info.as_ref().map(InfoList::first).ok_or("no fi_info")?;
        // SAFETY: info is a valid fi_info from fi_getinfo; each out-pointer is a field of self
        // that the calls set on success; the objects are used only after they were opened.
        unsafe {
            check(ffi::oxs_fabric(info, &mut self.fabric), "fi_fabric")?;
            check(ffi::oxs_domain(self.fabric, info, &mut self.domain), "fi_domain")?;
            let size = (*(*info).tx_attr).size.max(64) * 2;
            check(ffi::oxs_cq_open(self.domain, size, ffi::FI_WAIT_NONE as i32, &mut self.cq), "fi_cq_open")?;
            check(ffi::oxs_av_open(self.domain, n_peers.max(1), &mut self.av), "fi_av_open")?;
            check(ffi::oxs_endpoint(self.domain, info, &mut self.ep), "fi_endpoint")?;
            check(
                ffi::oxs_ep_bind(self.ep, ffi::oxs_fid_cq(self.cq), u64::from(ffi::FI_TRANSMIT | ffi::FI_RECV)),
                "fi_ep_bind (completion queue)",
            )?;
            check(ffi::oxs_ep_bind(self.ep, ffi::oxs_fid_av(self.av), 0), "fi_ep_bind (address vector)")?;
            check(ffi::oxs_enable(self.ep), "fi_enable")?;
            self.ep_enabled = true;
            Ok(())
        }
    }

    /// Registers `len` bytes at `base` with `access`, asking for `key` (ignored under
    /// `FI_MR_PROV_KEY`); binds the region to the endpoint under `FI_MR_ENDPOINT`. Returns
    /// the key peers must use and the local descriptor.
    pub(super) fn register(
        &mut self,
        base: usize,
        len: usize,
        access: u64,
        key: u64,
    ) -> Result<(u64, *mut c_void), String> {
        let mut mr: *mut fid_mr = null_mut();
        // SAFETY: the domain is open; [base, base+len) is memory this process owns for the
        // life of the transport (the symmetric segments, the bounce buffer).
        unsafe {
            check(ffi::oxs_mr_reg(self.domain, base as *const c_void, len, access, key, &mut mr), "fi_mr_reg")?;
            self.mrs.push(mr);
            if self.mr_endpoint {
                check(ffi::oxs_mr_bind_ep(mr, self.ep, 0), "fi_mr_bind/fi_mr_enable (FI_MR_ENDPOINT)")?;
            }
            Ok((ffi::oxs_mr_key(mr), ffi::oxs_mr_desc(mr)))
        }
    }

    fn close_mrs(&mut self) {
        for mr in self.mrs.drain(..).filter(|m| !m.is_null()) {
            // SAFETY: each region was registered once and is closed once.
            unsafe { ffi::oxs_close(ffi::oxs_fid_mr(mr)) };
        }
    }

    /// Closes everything, in the order `fi_endpoint(3)`/`fi_mr(3)` require: endpoint-bound
    /// regions before their endpoint, the endpoint before what it is bound to, the domain
    /// before the fabric. Idempotent.
    pub(super) fn close(&mut self) {
        if self.mr_endpoint {
            self.close_mrs();
        }
        if !self.ep.is_null() {
            if !self.ep_enabled {
                // ofi_rxm 1.17 segfaults closing an endpoint that was never enabled; leave it
                // and everything it is bound to open.
                self.close_mrs();
                self.ep = null_mut();
                self.av = null_mut();
                self.cq = null_mut();
                self.domain = null_mut();
                self.fabric = null_mut();
                return;
            }
            // SAFETY: an enabled endpoint, closed once.
            unsafe { ffi::oxs_close(ffi::oxs_fid_ep(self.ep)) };
            self.ep = null_mut();
        }
        self.close_mrs();
        // SAFETY: each object was opened once, is closed once, after everything bound to it.
        unsafe {
            if !self.av.is_null() {
                ffi::oxs_close(ffi::oxs_fid_av(self.av));
            }
            if !self.cq.is_null() {
                ffi::oxs_close(ffi::oxs_fid_cq(self.cq));
            }
            if !self.domain.is_null() {
                ffi::oxs_close(ffi::oxs_fid_domain(self.domain));
            }
            if !self.fabric.is_null() {
                ffi::oxs_close(ffi::oxs_fid_fabric(self.fabric));
            }
        }
        self.av = null_mut();
        self.cq = null_mut();
        self.domain = null_mut();
        self.fabric = null_mut();
        self.info = None;
    }
}

impl Drop for Fids {
    fn drop(&mut self) {
        self.close();
    }
}

/// This endpoint's address (`fi_getname`).
pub(super) fn getname(ep: *mut fid_ep) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; 256];
    let mut len = buf.len();
    // SAFETY: ep is an enabled endpoint; buf is writable for len bytes.
    let mut rc = unsafe { ffi::oxs_getname(ep, buf.as_mut_ptr().cast(), &mut len) };
    if rc == -(ffi::FI_ETOOSMALL as i32) {
        buf.resize(len, 0);
        // SAFETY: as above, with the size the provider asked for.
        rc = unsafe { ffi::oxs_getname(ep, buf.as_mut_ptr().cast(), &mut len) };
    }
    check(rc, "fi_getname")?;
    buf.truncate(len);
    Ok(buf)
}
