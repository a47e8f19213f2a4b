//! Setting up one PE's transport ([`OfiTransport::new`]): open the libfabric objects, register
//! the symmetric segments and the bounce buffer, probe the atomics, exchange endpoint
//! addresses, segment bases and keys with every PE through the bootstrap, insert the peers
//! this transport reaches into the address vector, and start the progress thread where the
//! provider needs one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64};

use parking_lot::Mutex;

use super::atomics::{AmoTable, probe_atomics};
use super::card::{Card, SegCard};
use super::fabric::{self, Fids};
use super::settings::Options;
use super::track::{CtxTable, Track};
use super::{Bounce, Inner, Local, OfiTransport, Peer, SLOT_SIZE, SLOTS, ffi, progress};
use crate::error::{Error, ErrorKind, Result};
use crate::transport::MAX_SEGMENTS;

/// `sockaddr_in` as `a.b.c.d:port`, anything else as hex (for messages).
pub(super) fn show_addr(a: &[u8]) -> String {
    if a.len() == 16 && u16::from_ne_bytes([a[0], a[1]]) == libc::AF_INET as u16 {
        return format!("{}.{}.{}.{}:{}", a[4], a[5], a[6], a[7], u16::from_be_bytes([a[2], a[3]]));
    }
    a.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes an address point nowhere: a `sockaddr_in` gets port 1 (nothing listens there), any
/// other format has its bytes inverted.
pub(super) fn corrupt(a: &mut [u8]) {
    if a.len() == 16 && u16::from_ne_bytes([a[0], a[1]]) == libc::AF_INET as u16 {
        a[2..4].copy_from_slice(&1u16.to_be_bytes());
    } else {
        a.iter_mut().for_each(|b| *b = !*b);
    }
}

impl OfiTransport {
    /// Sets up this PE's endpoint, registers `segments` and exchanges addresses and keys with
    /// every PE through `boot` (collective); peers marked in `need` become reachable.
    pub fn new(
        boot: &dyn oxshmem_bootstrap::Bootstrap,
        me: usize,
        n: usize,
        segments: &[(usize, usize)],
        need: &[bool],
        config: &crate::config::Config,
    ) -> Result<OfiTransport> {
        let opts = Options { spin_polls: config.spin, ..Options::from_env(me)? };
        OfiTransport::with_options(boot, me, n, segments, need, opts)
    }

    /// [`OfiTransport::new`] with explicit options.
    pub(crate) fn with_options(
        boot: &dyn oxshmem_bootstrap::Bootstrap,
        me: usize,
        n: usize,
        segments: &[(usize, usize)],
        need: &[bool],
        opts: Options,
    ) -> Result<OfiTransport> {
        const F: &str = "shmem_init";
        let fail = |m: String| Error::new(me, F, ErrorKind::Transport(format!("ofi: {m}")));
        if segments.len() > MAX_SEGMENTS {
            return Err(fail(format!("{} segments, at most {MAX_SEGMENTS}", segments.len())));
        }
        let (list, mut prov) = fabric::getinfo(&opts.choice).map_err(fail)?;
        // After fi_getinfo: providers may load their libraries then.
        fabric::undo_foreign_crash_handlers();
        prov.mr_mode |= opts.extra_mr_mode;
        let pname = prov.name.clone();
        tracing::debug!(
            target: "ofi",
            provider = %pname,
            mr_mode = format_args!("{:#x}", prov.mr_mode),
            manual_progress = prov.manual_progress,
            "provider chosen"
        );
        let fail_p = |m: String| fail(format!("{m} (provider {pname})"));
        let mr = |bit: u32| prov.mr_mode & bit != 0;
        let (virt, prov_key, mr_local) = (mr(ffi::FI_MR_VIRT_ADDR), mr(ffi::FI_MR_PROV_KEY), mr(ffi::FI_MR_LOCAL));
        let mut fids = Fids::new(list, mr(ffi::FI_MR_ENDPOINT));
        fids.open(n).map_err(fail_p)?;

        // One region per symmetric segment, for remote access (and local use under FI_MR_LOCAL).
        let local_access = u64::from(ffi::FI_READ | ffi::FI_WRITE);
        let access = u64::from(ffi::FI_REMOTE_READ | ffi::FI_REMOTE_WRITE) | if mr_local { local_access } else { 0 };
        let mut local = Vec::new();
        let mut mine = Vec::new();
        for (i, &(base, len)) in segments.iter().enumerate() {
            if len == 0 {
                mine.push(SegCard::default());
                continue;
            }
            let (key, desc) = fids
                .register(base, len, access, i as u64 + 1)
                .map_err(|e| fail_p(format!("registering segment {i} ({len} bytes at {base:#x}): {e}")))?;
            local.push(Local { base, len, desc });
            mine.push(SegCard { base: base as u64, len: len as u64, key: if prov_key { key } else { i as u64 + 1 } });
        }
        let bounce = Bounce::new(SLOTS * SLOT_SIZE).ok_or_else(|| fail("cannot allocate the bounce buffer".into()))?;
        let (_, bounce_desc) = fids
            .register(bounce.ptr as usize, SLOTS * SLOT_SIZE, local_access, MAX_SEGMENTS as u64 + 1)
            .map_err(|e| fail_p(format!("registering the bounce buffer: {e}")))?;

        let mut amo = probe_atomics(fids.ep).map_err(fail_p)?;
        if opts.emulate_atomics {
            amo = AmoTable { cswap: amo.cswap, ..AmoTable::default() };
        }

        // Exchange: endpoint address, segment bases and keys.
        let card = Card { provider: prov.name.clone(), addr: fabric::getname(fids.ep).map_err(fail_p)?, segs: mine };
        let addr_text = show_addr(&card.addr);
        let all = boot
            .allgather(&card.encode())
            .map_err(|e| Error::new(me, F, ErrorKind::Bootstrap(format!("ofi address exchange: {e}"))))?;
        let mut peers = vec![Peer::default(); n].into_boxed_slice();
        for pe in 0..n {
            let wanted = if pe == me { opts.self_loop } else { need.get(pe).copied().unwrap_or(false) };
            if !wanted {
                continue;
            }
            let c = all
                .get(pe)
                .and_then(|b| Card::decode(b))
                .ok_or_else(|| fail(format!("PE {pe} sent a malformed address record")))?;
            if c.provider != prov.name {
                return Err(fail(format!(
                    "PE {pe} uses libfabric provider {:?} and this PE {:?}: every PE must use the same (set FI_PROVIDER)",
                    c.provider, prov.name
                )));
            }
            let mut addr = c.addr.clone();
            if opts.bad_peer == Some(pe) {
                corrupt(&mut addr);
            }
            let mut fi_addr = 0u64;
            // SAFETY: the address vector is open; addr holds a whole address of the provider's
            // format (as fi_getname wrote it on the peer, possibly corrupted by the test hook).
            let rc = unsafe { ffi::oxs_av_insert(fids.av, addr.as_ptr().cast(), &mut fi_addr) };
            if rc != 1 {
                return Err(fail_p(format!(
                    "PE {pe}'s endpoint address {} cannot be used: fi_av_insert: {}",
                    show_addr(&addr),
                    if rc < 0 { ffi::strerror(rc as isize) } else { "not inserted".into() }
                )));
            }
            let mut segs = [SegCard::default(); MAX_SEGMENTS];
            for (s, sc) in c.segs.iter().enumerate() {
                segs[s] = SegCard { base: if virt { sc.base } else { 0 }, ..*sc };
            }
            peers[pe] = Peer { fi_addr, reach: true, segs };
        }

        let delivery = prov.delivery_complete;
        let inner = Arc::new(Inner {
            ep: fids.ep,
            cq: fids.cq,
            fids: Mutex::new(Some(fids)),
            bounce,
            bounce_desc,
            addr_text,
            me,
            peers,
            local,
            mr_local,
            amo,
            wflags: u64::from(ffi::FI_COMPLETION) | if delivery { u64::from(ffi::FI_DELIVERY_COMPLETE) } else { 0 },
            slot_free: AtomicU64::new(u64::MAX),
            slot_done: std::array::from_fn(|_| AtomicU32::new(0)),
            slot_err: std::array::from_fn(|_| AtomicI32::new(0)),
            slot_msg: std::array::from_fn(|_| Mutex::new(String::new())),
            all: Track::new(n),
            ctxs: CtxTable::new(n),
            read_after_write: prov.msg_order & ffi::FI_ORDER_RMA_RAW != 0,
            timeout: opts.timeout,
            serial: (!prov.thread_safe).then(|| Mutex::new(())),
            caller_polls: AtomicU64::new(0),
            busy_callers: AtomicU32::new(0),
            spin: opts.spin,
            spin_polls: opts.spin_polls,
            stop: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            thread: Mutex::new(None),
            prov,
        });
        if inner.prov.manual_progress {
            progress::start_progress_thread(&inner)
                .map_err(|e| fail(format!("cannot start the progress thread: {e}")))?;
            tracing::debug!(target: "ofi", "progress thread started");
        }
        Ok(OfiTransport { inner })
    }

    /// The provider in use (`tcp;ofi_rxm`).
    pub fn provider(&self) -> &str {
        &self.inner.prov.name
    }
}
