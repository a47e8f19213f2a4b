//! The device channels other than P2P, on the GPU heap: the proxy's requests
//! ([`GpuTarget`], a `ProxyTarget` of the CPU back end's proxy thread) and the software NIC's
//! memory accesses ([`GpuNicMemory`], a `NicMemory` of its IBGDA engine).

use oxshmem_device::channel::proxy::{ProxyTarget, Request, amo as proxy_amo, amo_of, kind};
use oxshmem_device::cuda::{DevAddr, Gpu};
use oxshmem_device::ibgda::NicMemory;
use oxshmem_rt::Result;
use oxshmem_rt::raw::AmoOp;

use super::host::{amo, amo_at, get, put};
use super::{backend, invalid};

/// How the software NIC reaches the GPU heaps: copies on unified addresses, and the device
/// library's AMO kernel; and how GPU threads reach a hardware NIC's doorbell (its UAR page
/// mapped for the GPU).
#[derive(Debug)]
pub(super) struct GpuNicMemory {
    pub(super) gpu: Gpu,
    /// Doorbell pages mapped for the GPU ([`NicMemory::map_doorbell`]): page, its device
    /// address. Unmapped on drop.
    pub(super) doorbells: parking_lot::Mutex<Vec<(u64, u64)>>,
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
        // SAFETY: the NIC checked both ranges against their regions.
        unsafe { self.gpu.copy_dtod(dst, src, len) }.map_err(|e| e.to_string())
    }

    fn atomic(&self, addr: u64, width: u32, op: AmoOp) -> std::result::Result<u64, String> {
        amo_at("nvshmem softnic", addr, width as usize, op).map_err(|e| e.to_string())
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

/// The proxy's requests, carried out on the GPU heaps: copies for put, get and p, the device
/// library's AMO kernel for atomics and signals.
pub(super) struct GpuTarget;

impl ProxyTarget for GpuTarget {
    fn execute(&self, r: &Request) -> std::result::Result<(), String> {
        const F: &str = "nvshmem proxy";
        let pe = r.pe as usize;
        refuse_device_local(r);
        let signal = |sig: u64, op: AmoOp| amo(F, sig as usize, 8, op, pe).unwrap_or_else(|| not_gpu(sig)).map(drop);
        let r2 = match r.kind {
            // SAFETY: the device thread that submitted the request keeps `local` valid for `len`
            // bytes until its ticket completes.
            kind::PUT => unsafe { put(F, r.dest as *mut u8, r.local as *const u8, r.len as usize, pe) }
                .unwrap_or_else(|| not_gpu(r.dest)),
            // SAFETY: as for PUT.
            kind::GET => unsafe { get(F, r.local as *mut u8, r.dest as *const u8, r.len as usize, pe) }
                .unwrap_or_else(|| not_gpu(r.dest)),
            // SAFETY: the value is a field of the request, `len` (1..=8) bytes of it.
            kind::P => unsafe { put(F, r.dest as *mut u8, (&raw const r.value).cast(), r.len as usize, pe) }
                .unwrap_or_else(|| not_gpu(r.dest)),
            kind::AMO => {
                let width = if r.flags & proxy_amo::W64 != 0 { 8 } else { 4 };
                amo(F, r.dest as usize, width, amo_of(r), pe).unwrap_or_else(|| not_gpu(r.dest)).and_then(|old| {
                    if r.local == 0 {
                        return Ok(());
                    }
                    let b = backend().ok_or_else(|| invalid(F, "the CUDA back end is gone"))?;
                    // SAFETY: the device thread gave `local` for the fetched value (8 bytes).
                    unsafe { b.copy(F, r.local, (&raw const old) as DevAddr, 8) }
                })
            }
            kind::PUT_SIGNAL => {
                // SAFETY: as for PUT.
                unsafe { put(F, r.dest as *mut u8, r.local as *const u8, r.len as usize, pe) }
                    .unwrap_or_else(|| not_gpu(r.dest))
                    .and_then(|()| signal(r.sig, signal_op(r.flags, r.value)))
            }
            kind::SIGNAL_OP => signal(r.sig, signal_op(r.flags, r.value)),
            k => Err(invalid(F, format!("unknown request kind {k}"))),
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
    if let Some(what) = crate::nvshmem::device_lib::device_local(r.local, len) {
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
            crate::error::me(),
            r.local
        );
        std::process::abort();
    }
}

/// A proxy request's address outside the GPU heap.
fn not_gpu<T>(addr: u64) -> Result<T> {
    Err(invalid("nvshmem proxy", format!("{addr:#x} is not in the GPU symmetric heap")))
}

/// A put-signal's or signal op's update: the proxy's flags are OpenSHMEM's signal operations
/// (0: set, 1: add).
fn signal_op(flags: u16, value: u64) -> AmoOp {
    if flags == 0 { AmoOp::Set(value) } else { AmoOp::FetchAdd(value) }
}
