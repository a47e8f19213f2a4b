//! The GPU heap as a segment of the runtime: host RMA, atomics, signals, waits and tests on GPU
//! memory through the runtime's ordinary entry points (`oxshmem::raw::putmem`, `atomic`,
//! `wait_until`, …), from Rust and from the C library alike.
//!
//! When a PE's GPU side comes up (the C library's CUDA back end at `nvshmem_init`, or
//! [`GpuDevice::init`](super::GpuDevice::init)), it registers its heap ([`register`]) as a
//! [`ForeignSegment`] of the runtime ([`oxshmem::segment`]); the runtime then routes every
//! address of the heap here, in the one place it decides where an address lives. This module
//! carries the operations out:
//!
//! - put and get (`p` and `g` too): a synchronous CUDA copy into or out of the peer's mapping of
//!   its GPU heap (every PE of the node maps every other's), on unified addresses, so the other
//!   side may be host memory, pinned memory or GPU memory alike;
//! - strided put and get: one 2D copy;
//! - atomics (and so signals): the device library's host-callable AMO kernel, which
//!   `libnvshmem_device.a` registers at load time (through the C library's
//!   `oxshmemi_register_device_amo`, which lands in [`set_amo_kernel`]); a Rust program may
//!   register one itself. Without one, an atomic on GPU memory fails saying so;
//! - waits and tests: the runtime polls this PE's copy with gets.
//!
//! - the team collectives (broadcast, collect and fcollect, alltoall and alltoalls, reductions and
//!   reducescatter) with a buffer in the heap: the runtime's collective entry points hand them
//!   here too, and `super::coll` runs them with this module's copies.
//!
//! Only peers of this node are reachable (a job spanning nodes fails at set-up).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use oxshmem::raw::{AmoOp, Width};
use oxshmem::segment::{Collective, ForeignSegment};
use oxshmem::transport::{LocalBytes, LocalBytesMut};
use oxshmem::{Error, ErrorKind, Result, Team};
use parking_lot::Mutex;

use cudarc::driver::sys;

use super::error::check;
use super::{CudaError, DevAddr, GpuPe, SetupError};
use crate::channel::proxy::amo_flags;

/// The device library's host-callable atomic on GPU memory: `amo(addr, flags, value, cond,
/// &old)` with `flags` an `OXSHMEM_AMO_*` operation (`| OXSHMEM_AMO_W64`); 0 or a CUDA error.
pub type AmoFn = unsafe extern "C" fn(addr: u64, flags: u32, value: u64, cond: u64, old: *mut u64) -> i32;

static AMO: Mutex<Option<AmoFn>> = Mutex::new(None);

/// Registers the atomic on GPU memory that host atomics use (the device library's one-thread
/// kernel; the C library forwards `oxshmemi_register_device_amo` here). A later registration
/// replaces an earlier one.
///
/// # Safety
/// `f` must be a function of the [`AmoFn`] signature that performs the operation atomically on
/// the GPU word at `addr` (a device address of a GPU heap mapped in this process) and stays
/// valid for the life of the process.
pub unsafe fn set_amo_kernel(f: AmoFn) {
    *AMO.lock() = Some(f);
}

/// The registered atomic on GPU memory, if any.
pub fn amo_kernel() -> Option<AmoFn> {
    *AMO.lock()
}

/// This PE's GPU heap as a segment of the runtime: see the [module documentation](self).
#[derive(Debug)]
pub struct GpuSegment {
    pe: Arc<GpuPe>,
}

impl std::ops::Deref for GpuSegment {
    type Target = GpuPe;
    fn deref(&self) -> &GpuPe {
        &self.pe
    }
}

/// A registered segment: itself, and the same as the runtime holds it (to remove it by).
struct Registered {
    seg: Arc<GpuSegment>,
    dynamic: Arc<dyn ForeignSegment>,
}

/// The registered segment (one GPU heap per process), and its range for [`owns`].
static CURRENT: Mutex<Option<Registered>> = Mutex::new(None);
static HEAP_LO: AtomicUsize = AtomicUsize::new(0);
static HEAP_HI: AtomicUsize = AtomicUsize::new(0);

/// Registers `pe`'s GPU heap as a segment of the runtime (replacing one registered before):
/// from now on the runtime's host routines reach it.
pub fn register(pe: Arc<GpuPe>) -> Arc<GpuSegment> {
    let seg = Arc::new(GpuSegment { pe });
    let dynamic: Arc<dyn ForeignSegment> = seg.clone();
    let mut cur = CURRENT.lock();
    if let Some(old) = cur.take() {
        oxshmem::segment::unregister(&old.dynamic);
    }
    oxshmem::segment::register(dynamic.clone());
    let (base, len) = dynamic.range();
    HEAP_LO.store(base, Ordering::Relaxed);
    HEAP_HI.store(base + len, Ordering::Relaxed);
    *cur = Some(Registered { seg: seg.clone(), dynamic });
    seg
}

/// Removes the segment of `pe` (registered by [`register`]); nothing when another is current.
pub fn unregister(pe: &GpuPe) {
    let mut cur = CURRENT.lock();
    if cur.as_ref().is_some_and(|r| std::ptr::eq(&*r.seg.pe, pe)) {
        HEAP_LO.store(0, Ordering::Relaxed);
        HEAP_HI.store(0, Ordering::Relaxed);
        if let Some(r) = cur.take() {
            oxshmem::segment::unregister(&r.dynamic);
        }
    }
}

/// The registered GPU heap, if any.
pub fn current() -> Option<Arc<GpuSegment>> {
    CURRENT.lock().as_ref().map(|r| r.seg.clone())
}

/// Whether `addr` lies in the registered GPU heap of this PE (one pair of loads).
#[inline]
pub fn owns(addr: usize) -> bool {
    addr >= HEAP_LO.load(Ordering::Relaxed) && addr < HEAP_HI.load(Ordering::Relaxed)
}

/// A CUDA driver error of `func`, worded as the runtime's (`PE 0: shmem_putmem: …`).
pub fn cuda_err(func: &'static str, e: impl std::fmt::Display) -> Error {
    Error::new(oxshmem::world::pe_for_errors(), func, ErrorKind::Layer { layer: "cuda", reason: e.to_string() })
}

/// An invalid-argument error of `func`.
fn invalid(func: &'static str, what: impl Into<String>) -> Error {
    Error::new(oxshmem::world::pe_for_errors(), func, ErrorKind::InvalidArgument(what.into()))
}

/// A set-up error of the GPU side worded as the runtime's.
pub fn setup_err(func: &'static str, e: SetupError) -> Error {
    match e {
        SetupError::Cuda(e) => cuda_err(func, e),
        SetupError::Invalid(m) => invalid(func, m),
        SetupError::Runtime(e) => e,
    }
}

impl GpuSegment {
    /// The GPU side it belongs to.
    pub fn pe(&self) -> &Arc<GpuPe> {
        &self.pe
    }

    /// The device address of `pe`'s copy of the `len` bytes at `addr` (in this PE's GPU heap).
    pub fn remote_for(&self, func: &'static str, addr: usize, len: usize, pe: usize) -> Result<DevAddr> {
        self.pe.remote(addr, len, pe).map_err(|e| setup_err(func, e))
    }

    /// A copy on unified addresses (either side host or GPU memory), complete (also for the
    /// GPU) when it returns. It waits for its own copy only: never for the context (a
    /// `cuCtxSynchronize` here would wait for a program stream that waits for this very copy,
    /// when it runs as a stream operation).
    ///
    /// # Safety
    /// Both ranges are valid for `len` bytes.
    pub unsafe fn copy(&self, func: &'static str, dst: DevAddr, src: DevAddr, len: usize) -> Result<()> {
        // SAFETY: the caller's; with unified addressing the copy reaches pageable host memory,
        // pinned memory, this GPU's heap and peer mappings alike.
        unsafe { self.pe.gpu.copy_dtod(dst, src, len) }.map_err(|e| cuda_err(func, e))
    }

    /// A strided copy on unified addresses: `rows` blocks of `width` bytes, `spitch` bytes apart
    /// at `src` and `dpitch` apart at `dst`, complete when it returns; like
    /// [`copy`](Self::copy) it waits for its own copies only.
    ///
    /// # Safety
    /// Every block of both sides is valid for `width` bytes.
    pub unsafe fn copy_2d(
        &self,
        func: &'static str,
        dst: DevAddr,
        dpitch: isize,
        src: DevAddr,
        spitch: isize,
        width: usize,
        rows: usize,
    ) -> Result<()> {
        // SAFETY: the caller's; unified addressing reaches every kind of memory, as in copy.
        unsafe { self.pe.gpu.copy_2d(dst, dpitch, src, spitch, width, rows) }.map_err(|e| cuda_err(func, e))
    }

    /// A host atomic on the `width`-byte word at `dest` (in the GPU heap) of world PE `pe`,
    /// through the registered AMO kernel, on `pe`'s GPU where it is visible here
    /// ([`GpuPe::amo_device`]): the prior value.
    pub fn amo(&self, func: &'static str, dest: usize, width: usize, op: AmoOp, pe: usize) -> Result<u64> {
        if !dest.is_multiple_of(width) || !matches!(width, 4 | 8) {
            return Err(invalid(func, format!("{dest:#x} is not a naturally aligned 4- or 8-byte word")));
        }
        let target = self.remote_for(func, dest, width, pe)?;
        amo_at(func, target, width, op, self.pe.amo_device(pe))
    }

    /// Runs the registered AMO kernel once on every device this PE's host atomics use (an
    /// atomic fetch of the first word of each heap), so that its first real use, perhaps while
    /// a kernel spins on its result, loads and creates nothing. Errors are the kernel's.
    pub fn warm_atomics(&self, func: &'static str) -> Result<()> {
        if amo_kernel().is_none() {
            return Ok(());
        }
        let mut done = Vec::new();
        for pe in 0..self.pe.n_pes() {
            let (device, base) = (self.pe.amo_device(pe), self.pe.peer_base(pe));
            if base == 0 || done.contains(&device) {
                continue;
            }
            done.push(device);
            amo_at(func, base, 8, AmoOp::Fetch, device)?;
        }
        Ok(())
    }
}

/// The contexts host atomics on GPU memory run in: one per device (by ordinal), made at first
/// use, for the life of the process. Not the device's primary context, which the program's
/// kernels use: a GPU time-slices its contexts, so an atomic's one-thread kernel runs even
/// while a persistent or cooperative kernel of the program fills every multiprocessor and spins
/// on that atomic's result (in the primary context it would wait for a free multiprocessor:
/// a deadlock). Where a second context cannot be made (the device in exclusive-process compute
/// mode), the primary context, said once.
static AMO_CONTEXTS: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());

fn amo_context(ordinal: i32) -> std::result::Result<sys::CUcontext, CudaError> {
    let mut all = AMO_CONTEXTS.lock();
    if let Some(&(_, c)) = all.iter().find(|(o, _)| *o == ordinal) {
        return Ok(c as sys::CUcontext);
    }
    super::need(&["cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2"])?;
    let dev = super::device(ordinal)?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    let r = match super::need(&["cuCtxCreate_v4"]) {
        // SAFETY: `ctx` is a valid out-pointer, `dev` a device handle; no creation parameters.
        Ok(()) => unsafe { sys::cuCtxCreate_v4(&mut ctx, std::ptr::null_mut(), 0, dev) },
        Err(_) => sys::CUresult::CUDA_ERROR_NOT_SUPPORTED,
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        // cuCtxCreate made it current (pushed it): back to what was current before.
        let mut top: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `top` is a valid out-pointer; the new context is on this thread's stack.
        check(|| "cuCtxPopCurrent".into(), unsafe { sys::cuCtxPopCurrent_v2(&mut top) })?;
    } else {
        tracing::warn!(
            target: "cuda",
            ordinal,
            ?r,
            "no context of its own for host atomics on this GPU (cuCtxCreate failed: exclusive-process compute \
             mode, or a driver older than CUDA 12.5): they run in the primary context, where a kernel that fills the GPU and waits for one of them \
             deadlocks"
        );
        // SAFETY: `ctx` is a valid out-pointer; the retain lasts for the process.
        check(|| format!("cuDevicePrimaryCtxRetain({ordinal})"), unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
        })?;
    }
    all.push((ordinal, ctx as usize));
    Ok(ctx)
}

/// An atomic `op` on the naturally aligned `width`-byte word at `target` (a GPU heap as mapped
/// here), through the registered AMO kernel ([`set_amo_kernel`]) run on device `device` (the
/// memory's own GPU, or this PE's), in that device's atomic context (a context of its own, not
/// the program's: see `AMO_CONTEXTS`): the prior value. The kernel runs in the context current
/// when it is called.
pub fn amo_at(func: &'static str, target: u64, width: usize, op: AmoOp, device: i32) -> Result<u64> {
    let kernel = amo_kernel().ok_or_else(|| {
        invalid(
            func,
            format!(
                "{target:#x} is GPU memory, and an atomic there from the host needs libnvshmem_device.a's AMO \
                 kernel, which this program did not register (link the device library)"
            ),
        )
    })?;
    let ctx = amo_context(device).map_err(|e| cuda_err(func, e))?;
    // SAFETY: the context lives for the process.
    check(|| "cuCtxPushCurrent".into(), unsafe { sys::cuCtxPushCurrent_v2(ctx) }).map_err(|e| cuda_err(func, e))?;
    let (flags, value, cond) = amo_flags(op, width == 8);
    let mut old = 0u64;
    // SAFETY: `target` is a naturally aligned word of a GPU heap mapped here, which `device`
    // may reach; the callback writes the prior value to `old`, a live local.
    let rc = unsafe { kernel(target, u32::from(flags), value, cond, &mut old) };
    let mut top: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `top` is a valid out-pointer; the push above is on this thread's stack.
    unsafe { sys::cuCtxPopCurrent_v2(&mut top) };
    if rc != 0 {
        return Err(cuda_err(func, format!("the device library's atomic kernel returned CUDA error {rc}")));
    }
    Ok(old)
}

impl ForeignSegment for GpuSegment {
    fn name(&self) -> &'static str {
        "GPU heap"
    }

    fn range(&self) -> (usize, usize) {
        (self.pe.heap().base() as usize, self.pe.heap().size())
    }

    /// Completes what this PE's kernels issued and the host side still carries: every proxy
    /// request submitted so far, and every IBGDA queue's work requests (as the device's quiet
    /// does). NVSHMEM's host quiet and barrier (and their stream forms) complete device-issued
    /// operations too; without this, a kernel's `nvshmem_int_p` over the proxy could land after
    /// the host's `nvshmemx_barrier_all_on_stream` that follows the kernel.
    fn quiet(&self, func: &'static str) -> Result<()> {
        let timeout = std::time::Duration::from_nanos(self.pe.timeout_ns().max(1));
        let start = std::time::Instant::now();
        let mut spins = 0u32;
        let mut wait = || {
            spins += 1;
            if spins.is_multiple_of(64) {
                std::thread::sleep(std::time::Duration::from_micros(20));
            } else {
                std::thread::yield_now();
            }
            self.pe.timeout_ns() == 0 || start.elapsed() < timeout
        };
        if let Some(ring) = self.pe.ring() {
            // The device's ticket counter is in GPU memory (the ring header's stays 0).
            let issued = self.pe.ring_issued().map_err(|e| cuda_err(func, e))?;
            while ring.completed() < issued {
                if !wait() {
                    return Err(cuda_err(
                        func,
                        format!(
                            "the proxy did not complete the device's requests within {timeout:?} ({} of {issued} done)",
                            ring.completed()
                        ),
                    ));
                }
            }
        }
        if let Some(ib) = self.pe.ibgda().filter(|i| i.needs_software_nic()) {
            // Observing only: the GPU's threads own the queues' locks and indices (in GPU
            // memory, copied out).
            ib.quiet_observing(&mut wait).map_err(|e| cuda_err(func, format!("an IBGDA queue: {e}")))?;
        }
        Ok(())
    }

    /// # Safety
    /// As the trait's.
    unsafe fn put(&self, func: &'static str, pe: usize, dest: usize, src: LocalBytes<'_>) -> Result<()> {
        let d = self.remote_for(func, dest, src.len(), pe)?;
        // SAFETY: `d` is inside pe's mapped heap for the length; src per the caller.
        unsafe { self.copy(func, d, src.as_ptr() as DevAddr, src.len()) }
    }

    /// # Safety
    /// As the trait's.
    unsafe fn get(&self, func: &'static str, pe: usize, src: usize, dst: LocalBytesMut<'_>) -> Result<()> {
        let s = self.remote_for(func, src, dst.len(), pe)?;
        // SAFETY: `s` is inside pe's mapped heap for the length; dst per the caller.
        unsafe { self.copy(func, dst.as_mut_ptr() as DevAddr, s, dst.len()) }
    }

    /// One 2D copy into the peer's mapping.
    ///
    /// # Safety
    /// As the trait's.
    unsafe fn put_strided(
        &self,
        func: &'static str,
        pe: usize,
        dest: usize,
        dpitch: usize,
        src: *const u8,
        spitch: usize,
        elem: usize,
        n: usize,
    ) -> Result<()> {
        let ext = strided_extent(func, dpitch, elem, n)?;
        let d = self.remote_for(func, dest, ext, pe)?;
        let (dp, sp) = (pitch(func, dpitch)?, pitch(func, spitch)?);
        // SAFETY: the strided destination lies in pe's mapped heap (checked as a whole); the
        // strided source per the caller.
        unsafe { self.copy_2d(func, d, dp, src as DevAddr, sp, elem, n) }
    }

    /// One 2D copy out of the peer's mapping.
    ///
    /// # Safety
    /// As the trait's.
    unsafe fn get_strided(
        &self,
        func: &'static str,
        pe: usize,
        dst: *mut u8,
        dpitch: usize,
        src: usize,
        spitch: usize,
        elem: usize,
        n: usize,
    ) -> Result<()> {
        let ext = strided_extent(func, spitch, elem, n)?;
        let s = self.remote_for(func, src, ext, pe)?;
        let (dp, sp) = (pitch(func, dpitch)?, pitch(func, spitch)?);
        // SAFETY: the strided source lies in pe's mapped heap (checked as a whole); the strided
        // destination per the caller.
        unsafe { self.copy_2d(func, dst as DevAddr, dp, s, sp, elem, n) }
    }

    fn atomic(&self, func: &'static str, pe: usize, dest: usize, width: Width, op: AmoOp) -> Result<u64> {
        self.amo(func, dest, width.bytes(), op, pe)
    }

    /// The team collectives on GPU memory (`cuda/coll.rs`).
    ///
    /// # Safety
    /// As the trait's.
    unsafe fn collective(&self, team: &Team, func: &'static str, c: Collective<'_>) -> Result<usize> {
        // SAFETY: forwarded.
        unsafe { super::coll::run(self, team, func, c) }
    }

    /// `pe`'s GPU heap as mapped here (`nvshmem_ptr`): a device address.
    fn ptr(&self, addr: usize, pe: usize) -> Option<*mut u8> {
        let base = self.pe.peer_base(pe);
        (base != 0).then(|| (base as usize + (addr - self.pe.heap().base() as usize)) as *mut u8)
    }

    /// Host RMA (strided too), atomics, signals, waits and tests and the team collectives reach
    /// GPU memory; what is left is the deprecated active-set collectives, the locks, and the
    /// extensions of `shmemx.h` (prefix sums, blocked strided RMA).
    fn explain(&self) -> Option<String> {
        Some(
            "is in the GPU symmetric heap (nvshmem_malloc), which this host routine does not reach in oxshmem's \
             CUDA back end: host RMA (strided too), atomics, signals, waits and tests and the team collectives \
             do, but not the deprecated active-set collectives (_to_all, broadcast32/64, [f]collect32/64, \
             alltoall[s]32/64), locks, or the prefix sums and blocked strided RMA of shmemx.h; for those, call \
             the routine from a kernel or use a host buffer (shmem_malloc)"
                .to_string(),
        )
    }
}

/// A pitch in bytes as the driver takes it.
fn pitch(func: &'static str, p: usize) -> Result<isize> {
    isize::try_from(p).map_err(|_| invalid(func, format!("a stride of {p} bytes is too large")))
}

/// The bytes `n` elements of `elem` bytes span at `pitch` bytes apart (the runtime checked it
/// does not overflow).
fn strided_extent(func: &'static str, pitch: usize, elem: usize, n: usize) -> Result<usize> {
    n.checked_sub(1)
        .map_or(Some(0), |k| k.checked_mul(pitch)?.checked_add(elem))
        .ok_or_else(|| invalid(func, format!("{n} elements of {elem} bytes at {pitch} bytes apart overflow")))
}
