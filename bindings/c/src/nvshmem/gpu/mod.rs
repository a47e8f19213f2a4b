//! The CUDA back end of the C library (feature `cuda`): the GPU symmetric heap that
//! `nvshmem_malloc` allocates from, host RMA on it, `nvshmem_ptr` into peers' GPU heaps, and
//! the device state handed to `libnvshmem_device.a` so that kernels can call NVSHMEM.
//!
//! At `nvshmem_init` (after the runtime and the teams), when the program links the device
//! library or `OXSHMEM_CUDA_HEAP=on` asks for it (`off`: never; `auto`, the default: when the
//! device library is linked), every PE sets its GPU side up (`oxshmem_device::cuda::GpuPe`:
//! the GPU heap, the peers' mappings, the device state and team table in pinned memory) and
//! calls the device library's `attach` with their addresses.
//!
//! The GPU heap is a segment of the runtime (`oxshmem_device::cuda::segment`, registered here
//! once the back end is up), so host RMA on GPU memory (`nvshmem_putmem`, `_getmem`, `_p`,
//! `_g`, strided forms, and their `shmem_` and typed twins), host atomics, signals, waits and
//! tests reach it through the runtime's own routines, which route its addresses to the device
//! crate: nothing of that is in this library, and neither are the team collectives on GPU
//! memory, which the runtime's collectives hand to the same segment
//! (`oxshmem_device::cuda::coll`). What is still here is the set-up (the GPU side, the device
//! library's attach, the proxy thread and software NIC, the stream executor), the team
//! bookkeeping of the device, and the GPU heap's allocation routines. The few host routines
//! that do not reach GPU memory end the job with an error saying so (the segment's
//! explanation, `docs/cuda.md`). Only peers of this node
//! are reachable (a job spanning nodes fails at init with a message): the device channel is
//! P2P for each, or with `OXSHMEM_DEVICE_CHANNEL` the proxy (a ring in pinned memory drained by
//! the CPU back end's proxy thread, with the device crate's `GpuTarget`, which copies into the
//! peers' mappings) or IBGDA (the queues in pinned memory over the GPU heap, executed by the
//! software NIC through the device crate's `GpuNicMemory`).

use std::ffi::c_void;
use std::sync::Arc;

use oxshmem_device::ChannelKind;
use oxshmem_device::channel::proxy::Proxy;
use oxshmem_device::cuda::channels::{GpuNicMemory, GpuTarget};
use oxshmem_device::cuda::node::{DEVICE_ABI_VERSION, DEVICE_TEAMS, PREDEFINED};
use oxshmem_device::cuda::segment::{self, GpuSegment, cuda_err, owns, setup_err};
use oxshmem_device::cuda::{DevAddr, Gpu, GpuPe, LoadedCode};
use oxshmem_device::ibgda::softnic::SoftNic;
use oxshmem_device::ibgda::{Ibgda, NicMemory};
use oxshmem_device::state::DeviceState;
use oxshmem_rt::{Result, Team};
use parking_lot::Mutex;

use crate::error::invalid;

const _: () = assert!(DEVICE_TEAMS == super::teams::MAX_TEAMS && DEVICE_ABI_VERSION == ABI_VERSION);
/// The device library's ABI this library registers (`oxshmemi::ABI_VERSION`).
const ABI_VERSION: u32 = super::device_lib::DEVICE_ABI_VERSION as u32;
/// The variable that switches the back end: `auto` (default), `on`, `off`.
pub(crate) const MODE_VAR: &str = "OXSHMEM_CUDA_HEAP";

/// The proxy thread (with the proxy channel); stopped before the back end goes.
static PROXY: Mutex<Option<Proxy>> = Mutex::new(None);
/// The software NIC's thread (with the IBGDA channel); stopped before the back end goes.
static NIC: Mutex<Option<SoftNic>> = Mutex::new(None);

/// The back end: the GPU heap's segment, registered with the runtime while the back end is up.
fn backend() -> Option<Arc<GpuSegment>> {
    segment::current()
}

/// Whether the back end is up.
pub(crate) fn active() -> bool {
    segment::current().is_some()
}

/// What `OXSHMEM_CUDA_HEAP` asks for, given whether the device library is linked.
fn wanted(func: &'static str, device_lib: bool) -> Result<bool> {
    let v = std::env::var(MODE_VAR).unwrap_or_default();
    match v.trim() {
        "" | "auto" => Ok(device_lib),
        "on" | "1" | "yes" => Ok(true),
        "off" | "0" | "no" if device_lib => Err(invalid(
            func,
            format!("{MODE_VAR}=off, but this program links libnvshmem_device.a, whose kernels need the GPU heap"),
        )),
        "off" | "0" | "no" => Ok(false),
        other => Err(invalid(func, format!("{MODE_VAR}={other:?}: expected auto, on or off"))),
    }
}

/// Sets the back end up if wanted (collective: every PE decides alike, from the same
/// environment and program).
pub(crate) fn init(func: &'static str) -> Result<()> {
    let registered = super::device_lib::registered();
    if !wanted(func, registered.is_some())? {
        return Ok(());
    }
    let (channel, var) = oxshmem_device::config::device_channel().map_err(|m| invalid(func, m))?;
    let kind = match channel.trim() {
        "" | "auto" | "p2p" => ChannelKind::P2p,
        "proxy" => ChannelKind::Proxy,
        "ibgda" => ChannelKind::Ibgda,
        other => return Err(invalid(func, format!("{var}={other:?}: expected p2p, proxy, ibgda or auto"))),
    };
    let b = setup(func, kind)?;
    if let Some(r) = registered {
        let state = b.state_device_ptr() as *const c_void;
        let cuda_state = b.cuda_state_device_ptr() as *const c_void;
        // SAFETY: the device library's attach copies two pointers into its __device__
        // globals; both point into the back end's pinned memory, which lives until finalize.
        let rc = unsafe { (r.attach)(state, cuda_state) };
        if rc != 0 {
            return Err(invalid(
                func,
                format!(
                    "libnvshmem_device.a's attach (cudaMemcpyToSymbol of the device state) returned CUDA error {rc}"
                ),
            ));
        }
    }
    // The *_on_stream routines become stream operations (a process initializes once, so the
    // executor is installed once).
    let streams = super::gpu_stream::CudaStreams::new(&b.gpu).map_err(|m| invalid(func, m))?;
    super::stream::set_stream_executor(Box::new(streams));
    let shmem = oxshmem_rt::current()?;
    tracing::info!(
        target: "cuda",
        gpu = ?b.gpu,
        heap = b.heap().size(),
        peers_mapped = (0..shmem.n_pes()).filter(|&pe| b.peer_base(pe) != 0).count(),
        amo_via_proxy = ?b.amo_proxied(),
        attached = registered.is_some(),
        "CUDA back end up"
    );
    let ring = b.ring().map(|r| r.as_ptr().cast_const());
    let state = std::ptr::from_ref::<DeviceState>(b.state());
    let ib = b.ibgda().filter(|i| i.needs_software_nic()).map(|i| i as *const Ibgda);
    let timeout = b.timeout_ns();
    // From here on the runtime's host routines reach the GPU heap, and `backend()` is it.
    let seg = segment::register(Arc::new(b));
    // Host atomics' kernels loaded and their streams made, in their own contexts, before any
    // kernel of the program can wait for one.
    seg.warm_atomics(func)?;
    if let Some(ib) = ib {
        // SAFETY: the queues live in the back end until finalize, which stops the NIC first.
        *NIC.lock() = Some(unsafe { SoftNic::start_for(ib, timeout) });
    }
    if let Some(ring) = ring {
        // SAFETY: the state and the ring live in the back end until finalize, which stops
        // the proxy before it lets the back end go.
        let proxy = unsafe { Proxy::start_with(state, ring, proxy_spin(func)?, Arc::new(GpuTarget)) };
        *PROXY.lock() = Some(proxy);
    }
    Ok(())
}

/// `nvshmemx_cumodule_init` and `nvshmemx_culibrary_init` (`bind`), and their `_finalize`s:
/// point the device library's globals in CUDA code the program loaded itself (a cubin or
/// fatbin linked with `libnvshmem_device.a`: Triton's and nvshmem4py's kernels) at this PE's
/// device state, or back at null. The device state stays where `nvshmem_init` put it until
/// `nvshmem_finalize`, so one binding serves the code's whole life (teams made later are in the
/// table the state points at).
///
/// # Safety
/// `code` is NULL or a live handle of the kind it says, loaded in the PE's GPU's primary
/// context.
pub(crate) unsafe fn bind_code(func: &'static str, code: LoadedCode, bind: bool) -> Result<()> {
    let what = code.what();
    let null = match code {
        LoadedCode::Module(m) => m.is_null(),
        LoadedCode::Library(l) => l.is_null(),
    };
    if null {
        return Err(invalid(func, format!("a NULL {what} handle")));
    }
    let b = backend().ok_or_else(|| {
        invalid(
            func,
            format!(
                "the CUDA back end is not up: call it between nvshmem_init and nvshmem_finalize, in a program that \
                 links libnvshmem_device.a or runs with {MODE_VAR}=on"
            ),
        )
    })?;
    // SAFETY: the caller's.
    let r = unsafe { if bind { b.bind_code(code) } else { b.unbind_code(code) } };
    match r.map_err(|e| setup_err(func, e))? {
        true => {
            tracing::debug!(target: "cuda", what, bind, "device library globals set");
            Ok(())
        }
        false => Err(invalid(
            func,
            format!(
                "the CUDA {what} holds no NVSHMEM device library (no oxshmemi_state_d / oxshmemi_cuda_d globals): \
                 link its device code with libnvshmem_device.a (nvcc -rdc=true, then nvcc -dlink with the archive; \
                 oshnvcc --target cpu for the CPU target)"
            ),
        )),
    }
}

/// Whether the proxy thread spins (`OXSHMEM_PROXY_SPIN`; by default where this host has a CPU
/// for every PE and its proxy, as on the CPU back end).
fn proxy_spin(func: &'static str) -> Result<bool> {
    Ok(match oxshmem_device::config::proxy_spin().map_err(|m| invalid(func, m))? {
        Some(s) => s,
        None => {
            let node = oxshmem_rt::current()?.team_shared().n_pes()?;
            oxshmem_rt::config::job_cpus() >= 2 * node
        }
    })
}

fn setup(func: &'static str, kind: ChannelKind) -> Result<GpuPe> {
    let shmem = oxshmem_rt::current()?;
    let mut predefined = Vec::with_capacity(PREDEFINED);
    for index in 0..PREDEFINED {
        predefined.push(match super::teams::resolve(func, index as i32) {
            Ok(h) => Some(crate::handles::team(func, h)?.get().team.clone()),
            Err(_) => None,
        });
    }
    let nic_memory = |gpu: &Gpu| -> Arc<dyn NicMemory> { Arc::new(GpuNicMemory::new(gpu.clone())) };
    GpuPe::new(&shmem, kind, Some(&nic_memory), &predefined).map_err(|e| setup_err(func, e))
}

/// A team the program made got NVSHMEM index `index` (called on every member, collectively):
/// describe it to the device, with a slot of flags and scratch in the reserved area that every
/// member agrees on — the lowest slot free on all of them (an AND of the free masks, exchanged
/// through the new team's own mailboxes, [`oxshmem_rt::coll::team_words`]). The slot's flags are zeroed and the team
/// synchronized before it is used, so a slot a destroyed team left behind starts clean. Without
/// a free slot (or for a team that is not a stride of world PEs) the team has no device
/// collectives, and a kernel's barrier or collective on it records an error.
pub(crate) fn team_made(func: &'static str, index: i32, team: &Team) -> Result<()> {
    let Some(b) = backend() else { return Ok(()) };
    if index as usize >= DEVICE_TEAMS {
        return Ok(());
    }
    if oxshmem_device::cuda::node::strided(&team.members()?).is_none() {
        b.clear_team(index as usize);
        return Ok(());
    }
    // The slots free on every member: an AND of their masks, exchanged through the new team's
    // own mailboxes (no lock: teams made at once on other threads use their own).
    let common = oxshmem_rt::coll::team_words(team, func, b.free_slots())?.iter().fold(!0u64, |a, &m| a & m);
    if common == 0 {
        tracing::debug!(target: "cuda", index, "no team slot free on every member: no device collectives");
        return b.set_team(index as usize, Some((team, 0))).map_err(|e| setup_err(func, e));
    }
    let at = b.take_slot(index, common.trailing_zeros() as usize).map_err(|e| setup_err(func, e))?;
    team.sync()?;
    b.set_team(index as usize, Some((team, at))).map_err(|e| setup_err(func, e))
}

/// Team index `index` was destroyed: its slot is free again here.
pub(crate) fn team_gone(index: i32) {
    if let Some(b) = backend() {
        b.release_team(index);
    }
}

/// `nvshmem_malloc` and friends on the GPU heap: `None` without the back end. Collective.
pub(crate) fn malloc(func: &'static str, size: usize, align: usize, zero: bool) -> Option<Result<*mut c_void>> {
    let b = backend()?;
    Some((|| {
        let shmem = oxshmem_rt::current()?;
        if size == 0 {
            shmem.barrier_all()?;
            return Ok(std::ptr::null_mut());
        }
        let addr = b.alloc(size, align, zero).map_err(|e| setup_err(func, e))?;
        shmem.barrier_all()?;
        Ok(addr as *mut c_void)
    })())
}

/// `nvshmem_free` on the GPU heap: `None` when `ptr` is not in it. Collective.
pub(crate) fn free(func: &'static str, ptr: *mut c_void) -> Option<Result<()>> {
    if !owns(ptr as usize) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        let shmem = oxshmem_rt::current()?;
        shmem.barrier_all()?;
        b.free(ptr as DevAddr).map_err(|e| setup_err(func, e))
    })())
}

/// Tears the back end down before the runtime finalizes: every PE stops using the peers'
/// heaps, then unmaps them and frees its own (collective).
pub(crate) fn finalize() -> Result<()> {
    let Some(b) = backend() else { return Ok(()) };
    // First the GPU's work, with everything still up: kernels still running may use the proxy
    // or the NIC, and stream operations still queued run on the lanes through the back end.
    let r = b.gpu.synchronize().map_err(|e| cuda_err("nvshmem_finalize", e));
    // Then the proxy and the NIC: they finish what was issued.
    if let Some(mut p) = PROXY.lock().take() {
        p.stop();
    }
    if let Some(mut nic) = NIC.lock().take() {
        nic.stop();
    }
    // The runtime stops routing GPU addresses here.
    segment::unregister(b.pe());
    // Every PE has stopped using its peers' heaps before any of them unmaps its own.
    oxshmem_rt::raw::barrier_all()?;
    drop(b);
    r
}
