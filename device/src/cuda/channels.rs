//! The device channels other than P2P, on the GPU heap: the proxy's requests
//! ([`GpuTarget`], a `ProxyTarget` of the CPU back end's proxy thread) and the software NIC's
//! memory accesses ([`GpuNicMemory`], a `NicMemory` of its IBGDA engine), both carried out with
//! the GPU heap's segment ([`super::segment`]): copies into the peers' mappings and the
//! registered AMO kernel.

use oxshmem::raw::AmoOp;
use oxshmem::transport::{LocalBytes, LocalBytesMut};
use oxshmem::{Error, ErrorKind, Result};
use parking_lot::Mutex;

use super::segment::{GpuSegment, amo_at, current};
use super::{DevAddr, Gpu};
use crate::channel::proxy::{ProxyTarget, Request, amo as proxy_amo, amo_of, kind};
use crate::ibgda::NicMemory;

/// The CPU target's question (`oxshmemi_cpu_local_memory` in `bindings/cuda/src/cpu_runtime.cpp`):
/// is `[addr, addr + len)` a device thread's local memory or a block's shared memory? 1 and a
/// description in `what`, else 0.
pub type LocalMemoryFn =
    unsafe extern "C" fn(addr: u64, len: u64, what: *mut std::ffi::c_char, what_len: usize) -> std::ffi::c_int;

static CPU_TARGET: Mutex<Option<LocalMemoryFn>> = Mutex::new(None);

/// Registers the CPU target's question about device-local memory (the C library forwards
/// `oxshmemi_register_cpu_target` here), which the proxy asks before it touches memory on a
/// device thread's behalf (a GPU's host cannot reach a thread's local or shared memory; the CPU
/// target refuses what a GPU could not do).
///
/// # Safety
/// `f` must be a function of the [`LocalMemoryFn`] signature that stays valid for the life of
/// the process.
pub unsafe fn set_local_memory_check(f: LocalMemoryFn) {
    *CPU_TARGET.lock() = Some(f);
}

/// With the CPU target: the description of the device-local memory that `[addr, addr + len)`
/// overlaps (`the local memory (stack) of block (0,0,0) thread (3,0,0)`), if it does.
pub fn device_local(addr: u64, len: u64) -> Option<String> {
    let f = (*CPU_TARGET.lock())?;
    let mut what = [0 as std::ffi::c_char; 160];
    // SAFETY: `f` was registered as a LocalMemoryFn; `what` is writable for its length.
    let hit = unsafe { f(addr, len, what.as_mut_ptr(), what.len()) };
    if hit == 0 {
        return None;
    }
    // SAFETY: the callee wrote a NUL-terminated string into `what` (snprintf).
    Some(unsafe { std::ffi::CStr::from_ptr(what.as_ptr()) }.to_string_lossy().into_owned())
}

/// An invalid-argument error of the proxy.
fn invalid(what: impl Into<String>) -> Error {
    Error::new(oxshmem::world::pe_for_errors(), "nvshmem proxy", ErrorKind::InvalidArgument(what.into()))
}

/// How the software NIC reaches the GPU heaps: copies on unified addresses, and the device
/// library's AMO kernel; and how GPU threads reach a hardware NIC's doorbell (its UAR page
/// mapped for the GPU).
#[derive(Debug)]
pub struct GpuNicMemory {
    gpu: Gpu,
    /// Doorbell pages mapped for the GPU ([`NicMemory::map_doorbell`]): page, its device
    /// address. Unmapped on drop.
    doorbells: Mutex<Vec<(u64, u64)>>,
}

impl GpuNicMemory {
    /// The software NIC's way into `gpu`'s heaps (and doorbells).
    pub fn new(gpu: Gpu) -> GpuNicMemory {
        GpuNicMemory { gpu, doorbells: Mutex::default() }
    }
}

impl Drop for GpuNicMemory {
    fn drop(&mut self) {
        for (at, _) in self.doorbells.lock().drain(..) {
            // SAFETY: mapped by map_doorbell; the queues that rang it are gone with the channel.
            unsafe { self.gpu.unmap_io(at) };
        }
    }
}

impl NicMemory for GpuNicMemory {
    /// A copy on unified addresses, complete when it returns.
    ///
    /// # Safety
    /// Both ranges are valid for `len` bytes (the NIC checked them against their regions).
    unsafe fn copy(&self, dst: u64, src: u64, len: usize) -> std::result::Result<(), String> {
        // The CPU target's rule, as for the proxy: a NIC cannot reach a GPU thread's local
        // memory or a block's shared memory either.
        for (addr, side) in [(src, "source"), (dst, "destination")] {
            if let Some(what) = device_local(addr, len as u64) {
                eprintln!(
                    "PE {}: nvshmem softnic: a work request's {side} at {addr:#x} is {what}, which a NIC cannot \
                     reach on a GPU (the CPU target refuses what a GPU could not do); use symmetric or registered memory",
                    oxshmem::world::pe_for_errors()
                );
                std::process::abort();
            }
        }
        // SAFETY: the NIC checked both ranges against their regions.
        unsafe { self.gpu.copy_dtod(dst, src, len) }.map_err(|e| e.to_string())
    }

    fn atomic(&self, addr: u64, width: u32, op: AmoOp) -> std::result::Result<u64, String> {
        let device = current().map_or_else(|| self.gpu.ordinal(), |s| s.amo_device_at(addr));
        amo_at("nvshmem softnic", addr, width as usize, op, device).map_err(|e| e.to_string())
    }

    fn map_doorbell(&self, addr: u64) -> std::result::Result<u64, String> {
        let page = addr & !4095;
        let mut pages = self.doorbells.lock();
        // Every queue of a NIC may share one page: it is mapped once.
        if let Some(&(_, dev)) = pages.iter().find(|p| p.0 == page) {
            return Ok(dev + (addr - page));
        }
        // SAFETY: the NIC provider's UAR page, mapped in this process for as long as the
        // channel (which owns this memory and drops it before the provider).
        let dev = unsafe { self.gpu.map_io(page) }.map_err(|e| e.to_string())?;
        pages.push((page, dev));
        Ok(dev + (addr - page))
    }

    fn export_dmabuf(&self, addr: u64, len: u64) -> std::result::Result<std::os::fd::OwnedFd, String> {
        self.gpu.export_dmabuf(addr, len as usize).map_err(|e| e.to_string())
    }
}

/// The proxy's requests, carried out on the GPU heaps: copies for put, get and p, the
/// registered AMO kernel for atomics and signals.
#[derive(Debug, Default)]
pub struct GpuTarget;

/// The registered GPU heap holding `len` bytes at `addr`, or the proxy's error.
fn heap(addr: u64, len: u64) -> Result<std::sync::Arc<GpuSegment>> {
    use oxshmem::segment::ForeignSegment as _;
    let seg = current().ok_or_else(|| invalid("the CUDA back end is gone"))?;
    if seg.contains(addr as usize, len as usize) {
        Ok(seg)
    } else {
        Err(invalid(format!("{addr:#x} is not in the GPU symmetric heap")))
    }
}

impl ProxyTarget for GpuTarget {
    fn execute(&self, r: &Request) -> std::result::Result<(), String> {
        use oxshmem::segment::ForeignSegment as _;
        const F: &str = "nvshmem proxy";
        let pe = r.pe as usize;
        refuse_device_local(r);
        let signal = |sig: u64, op: AmoOp| heap(sig, 8)?.amo(F, sig as usize, 8, op, pe).map(drop);
        let len = r.len as usize;
        let r2 = match r.kind {
            // SAFETY: the device thread that submitted the request keeps `local` valid for `len`
            // bytes until its ticket completes.
            kind::PUT => heap(r.dest, r.len)
                .and_then(|s| unsafe { s.put(F, pe, r.dest as usize, LocalBytes::new(r.local as *const u8, len)) }),
            // SAFETY: as for PUT.
            kind::GET => heap(r.dest, r.len)
                .and_then(|s| unsafe { s.get(F, pe, r.dest as usize, LocalBytesMut::new(r.local as *mut u8, len)) }),
            // SAFETY: the value is a field of the request, `len` (1..=8) bytes of it.
            kind::P => heap(r.dest, r.len).and_then(|s| unsafe {
                s.put(F, pe, r.dest as usize, LocalBytes::new((&raw const r.value).cast(), len))
            }),
            kind::AMO => {
                let width = if r.flags & proxy_amo::W64 != 0 { 8 } else { 4 };
                heap(r.dest, width as u64).and_then(|s| {
                    let old = s.amo(F, r.dest as usize, width, amo_of(r), pe)?;
                    if r.local == 0 {
                        return Ok(());
                    }
                    // SAFETY: the device thread gave `local` for the fetched value (8 bytes).
                    unsafe { s.copy(F, r.local, (&raw const old) as DevAddr, 8) }
                })
            }
            // SAFETY: as for PUT.
            kind::PUT_SIGNAL => heap(r.dest, r.len)
                .and_then(|s| unsafe { s.put(F, pe, r.dest as usize, LocalBytes::new(r.local as *const u8, len)) })
                .and_then(|()| signal(r.sig, signal_op(r.flags, r.value))),
            kind::SIGNAL_OP => signal(r.sig, signal_op(r.flags, r.value)),
            k => Err(invalid(format!("unknown request kind {k}"))),
        };
        r2.map_err(|e| e.to_string())
    }
}

/// The CPU target's rule: a host proxy cannot reach a GPU thread's local memory or a block's
/// shared memory, so a request whose local buffer (a put's source, a get's destination, a
/// fetching atomic's result) lies there ends the PE, naming the memory, instead of quietly
/// working on CPUs and corrupting memory on a GPU.
fn refuse_device_local(r: &Request) {
    let len = match r.kind {
        kind::PUT | kind::GET | kind::PUT_SIGNAL => r.len,
        kind::AMO if r.local != 0 => 8,
        _ => return,
    };
    if let Some(what) = device_local(r.local, len) {
        let op = match r.kind {
            kind::PUT => "put source",
            kind::GET if r.len <= 8 => "get (nvshmem_g) result",
            kind::GET => "get destination",
            kind::PUT_SIGNAL => "put-signal source",
            _ => "fetching atomic's result",
        };
        eprintln!(
            "PE {}: nvshmem proxy: a request's {op} at {:#x} is {what}, which a host proxy cannot reach on a GPU \
             (the CPU target refuses what a GPU could not do); use symmetric or registered memory",
            oxshmem::world::pe_for_errors(),
            r.local
        );
        std::process::abort();
    }
}

/// A put-signal's or signal op's update: the proxy's flags are OpenSHMEM's signal operations
/// (0: set, 1: add).
fn signal_op(flags: u16, value: u64) -> AmoOp {
    if flags == 0 { AmoOp::Set(value) } else { AmoOp::FetchAdd(value) }
}
