//! One GPU as a PE sees it: the device, its primary context, copies, pinned host memory.
//!
//! Every call first makes the primary context current on the calling thread (the current
//! context is per thread, and the runtime calls from its proxy and user threads alike).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys;

use super::error::check;
use super::{CudaError, DEVICE_VAR, DevAddr, device, device_count, device_name, driver};

/// The device a PE uses: `OXSHMEM_CUDA_DEVICE` (its value `env`) when set, else — as NVSHMEM
/// does — the PE's rank on its node modulo the devices present, so that the PEs of a node
/// spread over its GPUs and share them when there are more PEs than GPUs.
///
/// ```
/// use oxshmem_device::cuda::pick_device;
/// assert_eq!(pick_device(None, 5, 4), Ok(1));
/// assert_eq!(pick_device(Some("0"), 5, 4), Ok(0));
/// assert_eq!(
///     pick_device(Some("3"), 0, 1).unwrap_err().to_string(),
///     "CUDA device 3 requested but only 1 present"
/// );
/// ```
///
/// # Errors
/// No device; a value that is not a device ordinal; an ordinal beyond the devices present.
pub fn pick_device(env: Option<&str>, local_rank: usize, count: i32) -> Result<i32, CudaError> {
    if count <= 0 {
        return Err(CudaError::NoDevice { detail: format!("cuDeviceGetCount returned {count}") });
    }
    match env.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => {
            let requested: i64 = s.parse().map_err(|_| CudaError::BadSetting {
                var: DEVICE_VAR,
                value: s.to_string(),
                why: "expected a device ordinal (0, 1, ...)".into(),
            })?;
            if requested < 0 {
                return Err(CudaError::BadSetting {
                    var: DEVICE_VAR,
                    value: s.to_string(),
                    why: "a device ordinal is not negative".into(),
                });
            }
            if requested >= i64::from(count) {
                return Err(CudaError::BadOrdinal { requested, present: count });
            }
            Ok(requested as i32)
        }
        None => Ok((local_rank % count as usize) as i32),
    }
}

/// Whether `ptr` is GPU memory (`cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)` is
/// `CU_MEMORYTYPE_DEVICE`): a device allocation, or a mapping of the GPU heap or of a peer's.
/// Host memory, pinned or not, is not. Host RMA uses it to choose between a plain copy and
/// [`Gpu::copy_htod`] and friends.
///
/// # Errors
/// [`CudaError::NoDriver`] without a driver; a driver error other than "not a CUDA pointer".
pub fn pointer_is_device(ptr: *const c_void) -> Result<bool, CudaError> {
    driver()?;
    let mut ty: std::ffi::c_uint = 0;
    // SAFETY: `ty` is a valid out-pointer of the attribute's type (unsigned int); the driver
    // only looks the address up, it does not dereference it.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            (&mut ty as *mut std::ffi::c_uint).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ptr as DevAddr,
        )
    };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(ty == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32),
        // An address the driver does not know: plain host memory.
        sys::CUresult::CUDA_ERROR_INVALID_VALUE => Ok(false),
        r => Err(CudaError::driver(format!("cuPointerGetAttribute(MEMORY_TYPE, {ptr:p})"), r)),
    }
}

/// A CUDA stream as programs pass it (`CUstream`, the same pointer as the runtime's
/// `cudaStream_t`; null: the legacy default stream).
pub type RawStream = sys::CUstream;

struct GpuInner {
    ordinal: i32,
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    name: String,
    /// The stream host copies run on (made on first use): non-blocking, so that a copy never
    /// waits for the program's kernels on the legacy default stream's implicit
    /// synchronisation (a host put that a running kernel waits for would deadlock).
    copy_stream: std::sync::OnceLock<Result<StreamHandle, CudaError>>,
}

/// A `CUstream` the layer owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StreamHandle(sys::CUstream);
// SAFETY: a stream handle may be used from any thread (the driver API is thread-safe).
unsafe impl Send for StreamHandle {}
// SAFETY: as above.
unsafe impl Sync for StreamHandle {}

// SAFETY: a CUcontext is a handle the driver lets any thread make current; the driver API is
// thread-safe. The other fields are plain data.
unsafe impl Send for GpuInner {}
// SAFETY: as above; nothing here is mutated after construction.
unsafe impl Sync for GpuInner {}

impl Drop for GpuInner {
    fn drop(&mut self) {
        if let Some(Ok(s)) = self.copy_stream.get() {
            // SAFETY: the stream was made by this value and is destroyed once, here, with
            // its context current.
            unsafe {
                sys::cuCtxSetCurrent(self.ctx);
                sys::cuStreamDestroy_v2(s.0);
            }
        }
        // SAFETY: releases the retain taken in `Gpu::open`; the heaps and buffers that used
        // the context hold a `Gpu` clone, so they are gone by now.
        unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.dev) };
    }
}

/// One GPU, opened by this process: the device and its primary context (the context the CUDA
/// runtime uses too, so kernels launched through either see the same memory). Cheap to clone;
/// the context is released when the last clone, heap or buffer goes.
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<GpuInner>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gpu({}: {})", self.inner.ordinal, self.inner.name)
    }
}

impl Gpu {
    /// Opens device `ordinal`: loads the driver, `cuInit`, retains the primary context.
    ///
    /// # Errors
    /// `no CUDA driver: libcuda.so.1 not found`, `no CUDA device: cuDeviceGetCount returned 0`,
    /// `CUDA device 3 requested but only 1 present`, or the driver call that failed.
    pub fn open(ordinal: i32) -> Result<Gpu, CudaError> {
        driver()?;
        let count = device_count()?;
        if count == 0 {
            return Err(CudaError::NoDevice { detail: "cuDeviceGetCount returned 0".into() });
        }
        if ordinal < 0 || ordinal >= count {
            return Err(CudaError::BadOrdinal { requested: i64::from(ordinal), present: count });
        }
        let dev = device(ordinal)?;
        let name = device_name(dev)?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `ctx` is a valid out-pointer; `dev` a device handle.
        check(|| format!("cuDevicePrimaryCtxRetain({ordinal})"), unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
        })?;
        tracing::debug!(target: "cuda", ordinal, %name, "device opened");
        let gpu =
            Gpu { inner: Arc::new(GpuInner { ordinal, dev, ctx, name, copy_stream: std::sync::OnceLock::new() }) };
        gpu.make_current()?;
        Ok(gpu)
    }

    /// Opens the device of the PE whose rank on its node is `local_rank` ([`pick_device`] with
    /// `OXSHMEM_CUDA_DEVICE`).
    ///
    /// # Errors
    /// As [`Gpu::open`], and a bad `OXSHMEM_CUDA_DEVICE`.
    pub fn select(local_rank: usize) -> Result<Gpu, CudaError> {
        driver()?;
        let env = std::env::var(DEVICE_VAR).ok();
        let ordinal = pick_device(env.as_deref(), local_rank, device_count()?)?;
        Gpu::open(ordinal)
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> i32 {
        self.inner.ordinal
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub(crate) fn dev(&self) -> sys::CUdevice {
        self.inner.dev
    }

    /// Makes the primary context current on the calling thread.
    ///
    /// # Errors
    /// The driver's, from `cuCtxSetCurrent`.
    pub fn make_current(&self) -> Result<(), CudaError> {
        // SAFETY: the context is retained for as long as `self` lives.
        check(|| "cuCtxSetCurrent".into(), unsafe { sys::cuCtxSetCurrent(self.inner.ctx) })
    }

    /// [`pointer_is_device`] with this GPU's context current (the driver may want one to
    /// look an address up).
    ///
    /// # Errors
    /// As [`pointer_is_device`].
    pub fn pointer_is_device(&self, ptr: *const c_void) -> Result<bool, CudaError> {
        self.make_current()?;
        pointer_is_device(ptr)
    }

    /// Waits for all work of the context (`cuCtxSynchronize`).
    ///
    /// # Errors
    /// The driver's; an asynchronous error of an earlier kernel shows up here.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.make_current()?;
        // SAFETY: no arguments; the context is current.
        check(|| "cuCtxSynchronize".into(), unsafe { sys::cuCtxSynchronize() })
    }

    /// Maps the I/O page holding `addr` (a NIC's doorbell register, mapped in this process)
    /// for this GPU (`cuMemHostRegister` with `IOMEMORY`); the device address of `addr`.
    /// Undo with [`unmap_io`](Self::unmap_io).
    ///
    /// # Safety
    /// The page holding `addr` is an I/O mapping of this process that outlives the mapping.
    ///
    /// # Errors
    /// The driver's (a GPU or platform that cannot map I/O memory for peer access).
    pub unsafe fn map_io(&self, addr: u64) -> Result<DevAddr, CudaError> {
        const PAGE: u64 = 4096;
        super::need(&["cuMemHostRegister_v2", "cuMemHostUnregister"])?;
        self.make_current()?;
        let page = addr & !(PAGE - 1);
        let flags =
            sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_IOMEMORY;
        // SAFETY: the caller's page; registration only pins and maps it for the device.
        check(|| format!("cuMemHostRegister({page:#x}, IOMEMORY)"), unsafe {
            sys::cuMemHostRegister_v2(page as *mut c_void, PAGE as usize, flags)
        })?;
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: the page was just registered; `dev` is a valid out-pointer.
        check(|| "cuMemHostGetDevicePointer (the doorbell page)".into(), unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut dev, page as *mut c_void, 0)
        })?;
        Ok(dev + (addr - page))
    }

    /// A dma-buf file descriptor for the `len` bytes of this GPU's memory at `addr`
    /// (`cuMemGetHandleForAddressRange`, `DMA_BUF_FD`): what a NIC registers GPU memory
    /// through (`ibv_reg_dmabuf_mr`) without `nvidia_peermem`. Byte 0 of the buffer is `addr`.
    ///
    /// # Errors
    /// `addr` or `len` is not a multiple of the host page; the driver's (a GPU, driver or
    /// kernel without dma-buf export answers `CUDA_ERROR_NOT_SUPPORTED`).
    pub fn export_dmabuf(&self, addr: DevAddr, len: usize) -> Result<std::os::fd::OwnedFd, CudaError> {
        use std::os::fd::FromRawFd;
        let page = oxshmem::config::page_size().max(4096) as u64;
        let what = || format!("cuMemGetHandleForAddressRange({addr:#x}, {len}, DMA_BUF_FD)");
        if !addr.is_multiple_of(page) || !(len as u64).is_multiple_of(page) || len == 0 {
            return Err(CudaError::InvalidArgument {
                routine: "Gpu::export_dmabuf",
                why: format!("{}: the range must be whole host pages ({page} bytes)", what()),
            });
        }
        self.make_current()?;
        super::need(&["cuMemGetHandleForAddressRange"])?;
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: `fd` is a valid out-pointer for the descriptor; the range is the caller's.
        check(what, unsafe {
            sys::cuMemGetHandleForAddressRange(
                (&raw mut fd).cast(),
                addr,
                len,
                sys::CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                0,
            )
        })?;
        // SAFETY: the driver made a new descriptor, ours to close.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }

    /// Undoes [`map_io`](Self::map_io) for the page holding `addr`.
    ///
    /// # Safety
    /// No device code uses the mapping any more.
    pub unsafe fn unmap_io(&self, addr: u64) {
        let page = addr & !4095;
        if super::need(&["cuMemHostUnregister"]).is_ok() && self.make_current().is_ok() {
            // SAFETY: registered by map_io (the caller's promise), unused now.
            let _ = unsafe { sys::cuMemHostUnregister(page as *mut c_void) };
        }
    }

    /// The layer's own non-blocking stream for host copies.
    fn copy_stream(&self) -> Result<sys::CUstream, CudaError> {
        self.make_current()?;
        self.inner
            .copy_stream
            .get_or_init(|| {
                let mut s: sys::CUstream = std::ptr::null_mut();
                // SAFETY: `s` is a valid out-pointer; the context is current.
                let r = unsafe { sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) };
                check(|| "cuStreamCreate (the host copy stream)".into(), r).map(|()| StreamHandle(s))
            })
            .clone()
            .map(|s| s.0)
    }

    /// A copy of `bytes` from `src` to `dst` on the layer's copy stream, complete (for the
    /// GPU too) when it returns; `routine` names the wrapper in the error.
    fn memcpy(&self, routine: &str, dst: DevAddr, src: DevAddr, bytes: usize) -> Result<(), CudaError> {
        if bytes == 0 {
            return Ok(());
        }
        let s = self.copy_stream()?;
        // SAFETY: the callers' contracts make both ranges valid for `bytes` until the stream
        // is synchronized below, before returning.
        let r = unsafe { sys::cuMemcpyAsync(dst, src, bytes, s) };
        check(|| format!("cuMemcpyAsync ({routine} of {bytes} bytes from {src:#x} to {dst:#x})"), r)?;
        // SAFETY: a stream of this context.
        check(|| "cuStreamSynchronize (the host copy stream)".into(), unsafe { sys::cuStreamSynchronize(s) })
    }

    /// Copies `src` (host memory) to device address `dst`, synchronously.
    ///
    /// # Safety
    /// `dst .. dst + src.len()` is GPU memory of this process (a device allocation or a heap
    /// mapping) or mapped host memory that no Rust reference covers during the call.
    ///
    /// # Errors
    /// `cuMemcpyAsync (copy_htod of 8 bytes from 0x… to 0x…) failed: CUDA_ERROR_INVALID_VALUE (1)`.
    pub unsafe fn copy_htod(&self, dst: DevAddr, src: &[u8]) -> Result<(), CudaError> {
        self.memcpy("copy_htod", dst, src.as_ptr() as DevAddr, src.len())
    }

    /// Copies `dst.len()` bytes from device address `src` into `dst`, synchronously.
    ///
    /// # Safety
    /// `src .. src + dst.len()` is GPU memory of this process or mapped host memory.
    ///
    /// # Errors
    /// As [`Gpu::copy_htod`].
    pub unsafe fn copy_dtoh(&self, dst: &mut [u8], src: DevAddr) -> Result<(), CudaError> {
        self.memcpy("copy_dtoh", dst.as_mut_ptr() as DevAddr, src, dst.len())
    }

    /// Copies `bytes` from device address `src` to device address `dst` (on this GPU or a peer
    /// heap mapped here), synchronously.
    ///
    /// # Safety
    /// Both ranges are GPU memory of this process or mapped host memory that no Rust reference
    /// covers during the call.
    ///
    /// # Errors
    /// As [`Gpu::copy_htod`].
    pub unsafe fn copy_dtod(&self, dst: DevAddr, src: DevAddr, bytes: usize) -> Result<(), CudaError> {
        self.memcpy("copy_dtod", dst, src, bytes)
    }

    /// Enqueues `f` on `stream` (`cuLaunchHostFunc`): it runs on a driver thread once
    /// everything enqueued there before has finished, and what is enqueued after waits for it.
    /// `f` must not call CUDA (the driver's rule for host functions) and should return soon:
    /// it holds its stream.
    ///
    /// # Safety
    /// `stream` is a live stream of this GPU's context (a `cudaStream_t` of the program, or
    /// null for the legacy default stream).
    ///
    /// # Errors
    /// The driver's (`cuLaunchHostFunc on stream 0x… failed: CUDA_ERROR_INVALID_HANDLE (400)`).
    pub unsafe fn launch_host_fn(&self, stream: RawStream, f: Box<dyn FnOnce() + Send>) -> Result<(), CudaError> {
        /// Runs the closure the driver was handed, once.
        ///
        /// # Safety
        /// `user` is the `Box<Box<dyn FnOnce() + Send>>` made below, passed to it exactly once.
        unsafe extern "C" fn trampoline(user: *mut c_void) {
            // SAFETY: `user` is the Box made below, handed to the driver once and called once.
            let f = unsafe { Box::from_raw(user.cast::<Box<dyn FnOnce() + Send>>()) };
            // A panic must not unwind into the driver.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        }
        super::need(&["cuLaunchHostFunc"])?;
        self.make_current()?;
        let user = Box::into_raw(Box::new(f));
        // SAFETY: the trampoline takes ownership of `user` when the driver calls it.
        let r = unsafe { sys::cuLaunchHostFunc(stream, Some(trampoline), user.cast()) };
        check(|| format!("cuLaunchHostFunc on stream {stream:p}"), r).inspect_err(|_| {
            // SAFETY: the driver refused it, so it will never call the trampoline.
            drop(unsafe { Box::from_raw(user) });
        })
    }

    /// Makes `stream` wait until the 32-bit word at device address `addr` reaches `value`
    /// (`cuStreamWaitValue32`, `CU_STREAM_WAIT_VALUE_GEQ`: wrap-around `(int32)(*addr - value)
    /// >= 0`). The host keeps on; the stream stalls on the device side.
    ///
    /// # Safety
    /// `stream` as in [`Gpu::launch_host_fn`]; `addr` is the device address of a word of
    /// pinned host memory ([`PinnedBuf::device_ptr`]) that lives until the wait is over.
    ///
    /// # Errors
    /// The driver's (a device or driver without stream memory operations).
    pub unsafe fn stream_wait_value32(&self, stream: RawStream, addr: DevAddr, value: u32) -> Result<(), CudaError> {
        super::need(&["cuStreamWaitValue32_v2"])?;
        self.make_current()?;
        let geq = sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32;
        // SAFETY: per the caller's contract.
        let r = unsafe { sys::cuStreamWaitValue32_v2(stream, addr, value, geq) };
        check(|| format!("cuStreamWaitValue32 on stream {stream:p} ({addr:#x} >= {value})"), r)
    }

    /// Whether `stream` is being captured into a CUDA graph (`cuStreamIsCapturing`): work
    /// enqueued then is recorded, not run, and runs at every launch of the graph.
    ///
    /// # Safety
    /// `stream` as in [`Gpu::launch_host_fn`].
    ///
    /// # Errors
    /// The driver's.
    pub unsafe fn stream_is_capturing(&self, stream: RawStream) -> Result<bool, CudaError> {
        super::need(&["cuStreamIsCapturing"])?;
        self.make_current()?;
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: per the caller's contract; `status` is a valid out-pointer.
        let r = unsafe { sys::cuStreamIsCapturing(stream, &mut status) };
        check(|| format!("cuStreamIsCapturing({stream:p})"), r)?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Waits until everything enqueued on `stream` has finished (`cuStreamSynchronize`).
    ///
    /// # Safety
    /// `stream` as in [`Gpu::launch_host_fn`].
    ///
    /// # Errors
    /// The driver's; an asynchronous error of the stream's work shows up here.
    pub unsafe fn stream_synchronize(&self, stream: RawStream) -> Result<(), CudaError> {
        self.make_current()?;
        // SAFETY: per the caller's contract.
        check(|| format!("cuStreamSynchronize({stream:p})"), unsafe { sys::cuStreamSynchronize(stream) })
    }

    /// Sets `bytes` bytes at device address `dst` to `value` (`cuMemsetD8Async` on the copy
    /// stream, waited for).
    ///
    /// # Safety
    /// As [`Gpu::copy_dtod`]'s destination.
    ///
    /// # Errors
    /// `cuMemsetD8Async (4096 bytes at 0x…) failed: CUDA_ERROR_INVALID_VALUE (1)`.
    pub unsafe fn memset(&self, dst: DevAddr, value: u8, bytes: usize) -> Result<(), CudaError> {
        if bytes == 0 {
            return Ok(());
        }
        let s = self.copy_stream()?;
        // SAFETY: the caller's contract makes the range valid for `bytes`; the stream is
        // synchronized before returning.
        let r = unsafe { sys::cuMemsetD8Async(dst, value, bytes, s) };
        check(|| format!("cuMemsetD8Async ({bytes} bytes at {dst:#x})"), r)?;
        // SAFETY: a stream of this context.
        check(|| "cuStreamSynchronize (the host copy stream)".into(), unsafe { sys::cuStreamSynchronize(s) })
    }

    /// A strided copy: `rows` blocks of `width` bytes, block `i` from `src + i * spitch` to
    /// `dst + i * dpitch` (with `width` an element's size, what `shmem_iput` and `alltoalls`
    /// move), on the layer's copy stream, complete (for the GPU too) when it returns. Either
    /// side may be host or GPU memory (unified addressing).
    ///
    /// It is one `cuMemcpy2DAsync` when both pitches are at least `width` and at most the
    /// device's `CU_DEVICE_ATTRIBUTE_MAX_PITCH`; a pitch outside that (0, negative, smaller than
    /// `width`, too large) or a driver that refuses the pitches (it may, for a copy within one
    /// device, when they are not `cuMemAllocPitch`'s) gets one `cuMemcpyAsync` per block on the
    /// same stream instead. Contiguous blocks are one plain copy. Like every copy here it waits
    /// for its own stream only, never for the context: it may run while a kernel waits for it.
    ///
    /// # Safety
    /// For every `i < rows`, `[src + i * spitch, + width)` and `[dst + i * dpitch, + width)` are
    /// memory of this process (GPU memory, a heap mapping, pinned or pageable host memory) valid
    /// for the copy, the destination blocks covered by no Rust reference during the call. With
    /// overlapping destination blocks (a pitch smaller than `width`) the last block written wins.
    ///
    /// # Errors
    /// The driver's: `cuMemcpy2DAsync (copy_2d of 4 rows of 8 bytes from 0x… pitch 16 to 0x…
    /// pitch 8) failed: CUDA_ERROR_INVALID_VALUE (1)`, or the per-block copy's that failed.
    pub unsafe fn copy_2d(
        &self,
        dst: DevAddr,
        dpitch: isize,
        src: DevAddr,
        spitch: isize,
        width: usize,
        rows: usize,
    ) -> Result<(), CudaError> {
        if width == 0 || rows == 0 {
            return Ok(());
        }
        let w = width as isize;
        if rows == 1 || (dpitch == w && spitch == w) {
            // One block, or blocks that touch: one span (the caller's contract makes it valid).
            let bytes = width.checked_mul(rows).ok_or_else(|| CudaError::InvalidArgument {
                routine: "copy_2d",
                why: format!("{rows} rows of {width} bytes overflow"),
            })?;
            return self.memcpy("copy_2d", dst, src, bytes);
        }
        let s = self.copy_stream()?;
        let mut limit: std::ffi::c_int = 0;
        // SAFETY: `limit` is a valid out-pointer; `dev` a device handle of this context.
        let r = unsafe {
            sys::cuDeviceGetAttribute(
                &mut limit,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_PITCH,
                self.inner.dev,
            )
        };
        check(|| "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MAX_PITCH)".into(), r)?;
        let fits = |p: isize| p >= w && p <= limit as isize;
        // A driver without the 2D copy gets the copy block by block, as for pitches it refuses.
        if fits(dpitch) && fits(spitch) && super::need(&["cuMemcpy2DAsync_v2"]).is_ok() {
            let unified = sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED;
            let p = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: unified,
                srcHost: std::ptr::null(),
                srcDevice: src,
                srcArray: std::ptr::null_mut(),
                srcPitch: spitch as usize,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: unified,
                dstHost: std::ptr::null_mut(),
                dstDevice: dst,
                dstArray: std::ptr::null_mut(),
                dstPitch: dpitch as usize,
                WidthInBytes: width,
                Height: rows,
            };
            // SAFETY: `p` is a complete descriptor on the stack, read during the call; the
            // blocks it names are valid per the caller's contract until the stream is
            // synchronized below, before returning.
            let r = unsafe { sys::cuMemcpy2DAsync_v2(&p, s) };
            match r {
                sys::CUresult::CUDA_SUCCESS => {
                    // SAFETY: a stream of this context.
                    let r = unsafe { sys::cuStreamSynchronize(s) };
                    return check(|| "cuStreamSynchronize (the host copy stream)".into(), r);
                }
                // Pitches the driver does not take for this pair of memories: block by block.
                sys::CUresult::CUDA_ERROR_INVALID_VALUE => {
                    tracing::debug!(target: "cuda", dpitch, spitch, width, rows, "cuMemcpy2DAsync refused; copying by blocks")
                }
                r => {
                    return Err(CudaError::driver(
                        format!(
                            "cuMemcpy2DAsync (copy_2d of {rows} rows of {width} bytes from {src:#x} pitch {spitch} to \
                             {dst:#x} pitch {dpitch})"
                        ),
                        r,
                    ));
                }
            }
        }
        let at =
            |base: DevAddr, pitch: isize, i: usize| base.wrapping_add_signed((i as i64).wrapping_mul(pitch as i64));
        let mut failed = None;
        for i in 0..rows {
            let (d, from) = (at(dst, dpitch, i), at(src, spitch, i));
            // SAFETY: block i of both sides is valid per the caller's contract until the stream
            // is synchronized below.
            let r = unsafe { sys::cuMemcpyAsync(d, from, width, s) };
            if let Err(e) =
                check(|| format!("cuMemcpyAsync (copy_2d block {i} of {width} bytes from {from:#x} to {d:#x})"), r)
            {
                failed = Some(e);
                break;
            }
        }
        // The blocks enqueued before a failure are waited for too: the caller's memory must be
        // left alone when this returns.
        // SAFETY: a stream of this context.
        let r = unsafe { sys::cuStreamSynchronize(s) };
        match failed {
            Some(e) => Err(e),
            None => check(|| "cuStreamSynchronize (the host copy stream)".into(), r),
        }
    }
}

/// Host memory that a GPU reads and writes (`cuMemHostAlloc(DEVICEMAP | PORTABLE)`): the proxy
/// ring and the IBGDA queues, which the host and the GPU share. Zeroed when created. Reach it
/// through raw pointers or atomics only, never a Rust reference: the GPU writes it.
pub struct PinnedBuf {
    gpu: Gpu,
    host: *mut u8,
    dev: DevAddr,
    len: usize,
}

// SAFETY: the buffer is a plain allocation owned by this value; access goes through raw
// pointers whose users synchronize.
unsafe impl Send for PinnedBuf {}
// SAFETY: as above: `&PinnedBuf` hands out only raw pointers.
unsafe impl Sync for PinnedBuf {}

impl PinnedBuf {
    /// Allocates `bytes` of pinned host memory mapped into `gpu`'s address space.
    ///
    /// # Errors
    /// `bytes` 0; the driver's (`cuMemHostAlloc of 4096 bytes failed: CUDA_ERROR_OUT_OF_MEMORY (2)`).
    pub fn new(gpu: &Gpu, bytes: usize) -> Result<PinnedBuf, CudaError> {
        if bytes == 0 {
            return Err(CudaError::InvalidArgument {
                routine: "PinnedBuf::new",
                why: "size 0 bytes; a pinned buffer holds at least one byte".into(),
            });
        }
        gpu.make_current()?;
        let mut host: *mut c_void = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: `host` is a valid out-pointer; the context is current.
        check(|| format!("cuMemHostAlloc of {bytes} bytes"), unsafe { sys::cuMemHostAlloc(&mut host, bytes, flags) })?;
        let mut dev: DevAddr = 0;
        // SAFETY: `host` was just allocated with DEVICEMAP; `dev` is a valid out-pointer.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host, 0) };
        if let Err(e) = check(|| format!("cuMemHostGetDevicePointer({host:p})"), r) {
            // SAFETY: frees what was allocated above, used by nobody yet.
            unsafe { sys::cuMemFreeHost(host) };
            return Err(e);
        }
        // SAFETY: `host` is valid for `bytes` writes and nobody else sees it yet.
        unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
        Ok(PinnedBuf { gpu: gpu.clone(), host: host.cast(), dev, len: bytes })
    }

    /// The host address.
    pub fn host_ptr(&self) -> *mut u8 {
        self.host
    }

    /// The address device code uses (equal to the host address on systems with unified
    /// addressing, which every 64-bit system CUDA 13 supports is).
    pub fn device_ptr(&self) -> DevAddr {
        self.dev
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (a pinned buffer holds at least one byte); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for PinnedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedBuf({:p}, device {:#x}, {} bytes, {:?})", self.host, self.dev, self.len, self.gpu)
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        // Free with the owning context current; an error here leaves nothing to undo.
        let _ = self.gpu.make_current();
        // SAFETY: `host` came from cuMemHostAlloc and is freed once, here.
        unsafe { sys::cuMemFreeHost(self.host.cast()) };
    }
}

/// Pinned host memory as a [`DeviceAlloc`](crate::channel::devmem::DeviceAlloc): what the
/// proxy ring and the IBGDA queues are built in when a GPU produces into them. Each allocation
/// is one [`PinnedBuf`]; its device address must equal its host address (unified addressing),
/// since the structures store host addresses that device code follows.
#[derive(Debug)]
pub struct PinnedAlloc {
    gpu: Gpu,
    live: parking_lot::Mutex<std::collections::HashMap<usize, PinnedBuf>>,
}

impl PinnedAlloc {
    /// An allocator of `gpu`'s pinned memory.
    pub fn new(gpu: &Gpu) -> PinnedAlloc {
        PinnedAlloc { gpu: gpu.clone(), live: Default::default() }
    }
}

impl crate::channel::devmem::DeviceAlloc for PinnedAlloc {
    fn name(&self) -> &str {
        "cuMemHostAlloc"
    }

    fn alloc(&self, bytes: usize) -> Result<*mut u8, String> {
        let b = PinnedBuf::new(&self.gpu, bytes).map_err(|e| e.to_string())?;
        if b.device_ptr() != b.host_ptr() as DevAddr {
            return Err(format!(
                "pinned memory at {:p} has device address {:#x}: the CUDA back end needs unified addressing",
                b.host_ptr(),
                b.device_ptr()
            ));
        }
        let p = b.host_ptr();
        self.live.lock().insert(p as usize, b);
        Ok(p)
    }

    /// Frees the pinned buffer `alloc` returned at `ptr`.
    ///
    /// # Safety
    /// `ptr` came from this allocator's `alloc` and is used no more.
    unsafe fn free(&self, ptr: *mut u8, _bytes: usize) {
        self.live.lock().remove(&(ptr as usize));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_rank_modulo_devices() {
        assert_eq!(pick_device(None, 0, 1), Ok(0));
        assert_eq!(pick_device(None, 7, 1), Ok(0));
        assert_eq!(pick_device(None, 7, 8), Ok(7));
        assert_eq!(pick_device(None, 9, 8), Ok(1));
        assert_eq!(pick_device(Some(""), 3, 2), Ok(1));
    }

    #[test]
    fn the_variable_wins_and_is_checked() {
        assert_eq!(pick_device(Some(" 1 "), 0, 2), Ok(1));
        assert_eq!(pick_device(Some("3"), 0, 1), Err(CudaError::BadOrdinal { requested: 3, present: 1 }));
        assert_eq!(
            pick_device(Some("gpu1"), 0, 2).unwrap_err().to_string(),
            "OXSHMEM_CUDA_DEVICE=\"gpu1\": expected a device ordinal (0, 1, ...)"
        );
        assert_eq!(
            pick_device(Some("-1"), 0, 2).unwrap_err().to_string(),
            "OXSHMEM_CUDA_DEVICE=\"-1\": a device ordinal is not negative"
        );
        assert_eq!(pick_device(None, 0, 0).unwrap_err().to_string(), "no CUDA device: cuDeviceGetCount returned 0");
    }
}
