//! The CUDA driver layer of the device back end (feature `cuda`).
//!
//! It owns the process's view of one GPU ([`Gpu`](crate::cuda::Gpu): the driver, the device,
//! its primary context), the GPU symmetric heap ([`GpuHeap`](crate::cuda::GpuHeap), reserved
//! and mapped with CUDA's virtual memory management and exported as a POSIX file descriptor),
//! the mappings of the heaps of the other PEs on the node
//! ([`PeerMapping`](crate::cuda::PeerMapping)), host-pinned memory a GPU reaches
//! ([`PinnedBuf`](crate::cuda::PinnedBuf)), synchronous copies for host RMA on GPU memory, and
//! the passing of file descriptors between the processes of a node
//! ([`fdpass`](crate::cuda::fdpass)). It never decides which channel a peer uses and never
//! calls the runtime: the device layer above asks it for memory and mappings.
//!
//! The driver is loaded at run time (`dlopen` of `libcuda.so.1`, through `cudarc`'s dynamic
//! loading), so this feature builds on machines without CUDA and every entry point there
//! returns [`CudaError::NoDriver`](crate::cuda::CudaError::NoDriver)
//! (`no CUDA driver: libcuda.so.1 not found`) instead of panicking. The bindings follow
//! CUDA 13.0's header (driver 580); every call used here has had the same signature since
//! CUDA 11.
//!
//! ```
//! match oxshmem_device::cuda::probe() {
//!     Ok(info) => println!("{info}"),
//!     Err(e) => println!("no GPU here: {e}"),
//! }
//! ```
//!
//! On top of it: one PE's GPU side ([`GpuPe`](crate::cuda::GpuPe): the heap exchanged with the
//! node's PEs, the device state and team table in pinned memory), shared by the C library's
//! back end and the Rust face ([`GpuDevice`](crate::cuda::GpuDevice): GPU buffers, CUDA modules
//! that use NVSHMEM's device API, kernel launches checked against the kernel's parameters),
//! and the GPU heap as a segment of the runtime ([`segment`](crate::cuda::segment): host RMA,
//! atomics, waits and, in `coll.rs`, the team collectives on GPU memory, which the runtime's
//! ordinary routines route there).
//!
//! `docs/cuda.md` describes the heap's life: reserved, created, exported, passed, imported.

pub mod channels;
mod coll;
mod device;
mod error;
mod exchange;
pub mod fdpass;
mod gpu;
mod heap;
pub mod node;
pub mod segment;

use std::ffi::{CStr, c_char, c_int};
use std::fmt;
use std::sync::OnceLock;

pub use cudarc::driver::sys::CUresult;
pub use device::{GpuBuf, GpuDevice, GpuModule, Kernel, KernelArg, LaunchConfig, LoadedCode};
pub use error::CudaError;
pub use gpu::{Gpu, PinnedAlloc, PinnedBuf, RawStream, pick_device, pointer_is_device};
pub use heap::{GpuAlloc, GpuHeap, PeerMapping, granularity};
pub use node::{GpuPe, SetupError};

use cudarc::driver::sys;
use error::check;

/// A device address (`CUdeviceptr`): an address in the unified address space of the process,
/// which the host must not dereference unless it is mapped host memory.
pub type DevAddr = u64;

/// The variable that names the device a PE uses (else: local rank modulo the device count).
pub const DEVICE_VAR: &str = "OXSHMEM_CUDA_DEVICE";

/// The library the driver is loaded from (the name error messages use).
pub const DRIVER_LIB: &str = "libcuda.so.1";

/// Every driver routine this crate calls, with the CUDA release (and the Linux driver branch)
/// that brought it. `cudarc` resolves a routine on its first call and panics when the library
/// lacks it (a driver of an older CUDA), which aborts the process, so none is called unchecked:
/// `driver` looks them all up once; a library that lacks one the basic operations need
/// (device, context, heap, pinned memory, streams) is no driver for us, and the others
/// ([`AT_USE`]) are checked by the operation that needs them (`need`). (`cuFuncGetParamInfo`,
/// CUDA 12.4, is only called on a driver that reports 12.4 or later.)
pub const DRIVER_SYMBOLS: &[(&str, &str)] = &[
    ("cuInit", "CUDA 2.0"),
    ("cuDriverGetVersion", "CUDA 2.2"),
    ("cuDeviceGet", "CUDA 2.0"),
    ("cuDeviceGetCount", "CUDA 2.0"),
    ("cuDeviceGetName", "CUDA 2.0"),
    ("cuDeviceGetAttribute", "CUDA 2.0"),
    ("cuDeviceGetP2PAttribute", "CUDA 8.0"),
    ("cuDeviceTotalMem_v2", "CUDA 3.2"),
    ("cuCtxSynchronize", "CUDA 2.0"),
    ("cuMemcpy2DAsync_v2", "CUDA 3.2"),
    ("cuMemsetD8Async", "CUDA 3.2"),
    ("cuMemHostGetDevicePointer_v2", "CUDA 3.2"),
    ("cuModuleGetGlobal_v2", "CUDA 3.2"),
    ("cuModuleGetFunction", "CUDA 2.0"),
    ("cuModuleLoadData", "CUDA 2.0"),
    ("cuModuleUnload", "CUDA 2.0"),
    ("cuMemHostAlloc", "CUDA 2.2"),
    ("cuMemFreeHost", "CUDA 2.0"),
    ("cuStreamCreate", "CUDA 2.0"),
    ("cuStreamSynchronize", "CUDA 2.0"),
    ("cuCtxSetCurrent", "CUDA 4.0"),
    ("cuCtxPushCurrent_v2", "CUDA 4.0"),
    ("cuCtxPopCurrent_v2", "CUDA 4.0"),
    ("cuLaunchKernel", "CUDA 4.0"),
    ("cuMemcpyAsync", "CUDA 4.0"),
    ("cuMemHostUnregister", "CUDA 4.0"),
    ("cuPointerGetAttribute", "CUDA 4.0"),
    ("cuStreamDestroy_v2", "CUDA 4.0"),
    ("cuMemHostRegister_v2", "CUDA 6.5"),
    ("cuDevicePrimaryCtxRetain", "CUDA 7.0"),
    ("cuLaunchHostFunc", "CUDA 10.0 (driver 410)"),
    ("cuStreamIsCapturing", "CUDA 10.0 (driver 410)"),
    ("cuMemAddressReserve", "CUDA 10.2 (driver 440)"),
    ("cuMemAddressFree", "CUDA 10.2 (driver 440)"),
    ("cuMemCreate", "CUDA 10.2 (driver 440)"),
    ("cuMemRelease", "CUDA 10.2 (driver 440)"),
    ("cuMemMap", "CUDA 10.2 (driver 440)"),
    ("cuMemUnmap", "CUDA 10.2 (driver 440)"),
    ("cuMemSetAccess", "CUDA 10.2 (driver 440)"),
    ("cuMemGetAllocationGranularity", "CUDA 10.2 (driver 440)"),
    ("cuMemExportToShareableHandle", "CUDA 10.2 (driver 440)"),
    ("cuMemImportFromShareableHandle", "CUDA 10.2 (driver 440)"),
    ("cuDevicePrimaryCtxRelease_v2", "CUDA 11.0 (driver 450)"),
    ("cuStreamWaitValue32_v2", "CUDA 11.7 (driver 515)"),
    ("cuMemGetHandleForAddressRange", "CUDA 11.7 (driver 515)"),
    ("cuLibraryGetGlobal", "CUDA 12.0 (driver 525)"),
    ("cuCtxCreate_v4", "CUDA 12.5 (driver 555)"),
];

/// The routines of [`DRIVER_SYMBOLS`] that only some operations call, each checked by that
/// operation (`need`) rather than when the driver loads: CUDA modules, libraries and kernels, 2D copies,
/// host function and stream-wait launches, I/O memory registration, dma-buf export, the P2P
/// atomics query (without it, peers on other GPUs take the proxy for atomics).
pub const AT_USE: &[&str] = &[
    "cuCtxCreate_v4",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2",
    "cuDeviceGetP2PAttribute",
    "cuMemcpy2DAsync_v2",
    "cuModuleGetGlobal_v2",
    "cuModuleGetFunction",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuMemHostUnregister",
    "cuMemHostRegister_v2",
    "cuLaunchHostFunc",
    "cuStreamIsCapturing",
    "cuStreamWaitValue32_v2",
    "cuMemGetHandleForAddressRange",
    "cuLibraryGetGlobal",
];

/// The routines of [`DRIVER_SYMBOLS`] the loaded library lacks, and its version's text
/// (`, a CUDA 11.4 driver,`), found by [`driver`].
static MISSING: OnceLock<(Vec<&'static (&'static str, &'static str)>, String)> = OnceLock::new();

/// What to say of the routines `missing` the driver lacks: each with the CUDA release that
/// brought it, and the release to update to (the newest of them).
fn lacks(missing: &[&(&str, &str)], version: &str) -> String {
    let newest = missing
        .iter()
        .map(|(_, v)| *v)
        .max_by_key(|v| {
            let num = v.trim_start_matches("CUDA ").split(' ').next().unwrap_or("0");
            let (maj, min) = num.split_once('.').unwrap_or((num, "0"));
            (maj.parse::<u32>().unwrap_or(0), min.parse::<u32>().unwrap_or(0))
        })
        .unwrap_or("a newer CUDA");
    let names: Vec<String> = missing.iter().map(|(n, v)| format!("{n} ({v})")).collect();
    format!(
        "{DRIVER_LIB}{version} lacks {} that oxshmem calls: it needs a driver of {newest} or newer (update the NVIDIA driver)",
        names.join(", ")
    )
}

/// Looks every routine of [`DRIVER_SYMBOLS`] up in the loaded library (once); the error when
/// one that the basic operations need is missing.
fn check_symbols() -> Result<(), CudaError> {
    let (missing, version) = MISSING.get_or_init(|| {
        // SAFETY: the library is present (checked by the caller); culib() only dlopens it once.
        let lib = unsafe { sys::culib() };
        // SAFETY: looking a symbol up calls nothing; the type is not used.
        let has = |name: &str| unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok();
        let missing = DRIVER_SYMBOLS.iter().filter(|(n, _)| !has(n)).collect();
        let version = if has("cuDriverGetVersion") {
            let mut v: c_int = 0;
            // SAFETY: `v` is a valid out-pointer; cuDriverGetVersion needs no cuInit.
            let r = unsafe { sys::cuDriverGetVersion(&mut v) };
            if r == CUresult::CUDA_SUCCESS {
                format!(", a CUDA {}.{} driver,", v / 1000, v % 1000 / 10)
            } else {
                String::new()
            }
        } else {
            String::new()
        };
        (missing, version)
    });
    let basic: Vec<&(&str, &str)> = missing.iter().copied().filter(|(n, _)| !AT_USE.contains(n)).collect();
    if basic.is_empty() { Ok(()) } else { Err(CudaError::NoDriver { detail: lacks(&basic, version) }) }
}

/// `Ok` when the driver has every routine of `names` (routines of [`AT_USE`] an operation is
/// about to call), else the error naming the missing ones and the CUDA release they came with.
pub(crate) fn need(names: &[&str]) -> Result<(), CudaError> {
    driver()?;
    let Some((missing, version)) = MISSING.get() else { return Ok(()) };
    let lacking: Vec<&(&str, &str)> = missing.iter().copied().filter(|(n, _)| names.contains(n)).collect();
    if lacking.is_empty() { Ok(()) } else { Err(CudaError::OldDriver { detail: lacks(&lacking, version) }) }
}

/// Loads the driver and initializes it, once per process; later calls return the first
/// outcome. Every entry point of this module starts here, so none calls into a missing
/// library or a missing routine (`cudarc`'s loader panics on either, which aborts the
/// process): a library that lacks a basic routine of [`DRIVER_SYMBOLS`] is no driver for us.
pub(crate) fn driver() -> Result<(), CudaError> {
    static DRIVER: OnceLock<Result<(), CudaError>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the driver's library names and closes them again;
            // the driver's load-time code is the driver's own.
            if !unsafe { sys::is_culib_present() } {
                tracing::debug!(target: "cuda", "no driver: {DRIVER_LIB} not found");
                return Err(CudaError::NoDriver { detail: format!("{DRIVER_LIB} not found") });
            }
            if let Err(e) = check_symbols() {
                tracing::debug!(target: "cuda", "{e}");
                return Err(e);
            }
            // SAFETY: cuInit takes flags 0 and may be called more than once.
            let r = unsafe { sys::cuInit(0) };
            match r {
                CUresult::CUDA_SUCCESS => Ok(()),
                CUresult::CUDA_ERROR_NO_DEVICE => {
                    Err(CudaError::NoDevice { detail: "cuInit returned CUDA_ERROR_NO_DEVICE (100)".into() })
                }
                CUresult::CUDA_ERROR_STUB_LIBRARY => Err(CudaError::NoDriver {
                    detail: format!(
                        "{DRIVER_LIB} is the CUDA toolkit's stub library, not a driver \
                         (cuInit returned CUDA_ERROR_STUB_LIBRARY (34)); take the stubs directory out of LD_LIBRARY_PATH"
                    ),
                }),
                r => Err(CudaError::driver("cuInit", r)),
            }
            .inspect(|()| tracing::debug!(target: "cuda", "driver loaded and initialised"))
            .inspect_err(|e| tracing::debug!(target: "cuda", "no driver: {e}"))
        })
        .clone()
}

/// The driver's CUDA version, as `cuDriverGetVersion` gives it (13000 for 13.0).
pub fn driver_version() -> Result<i32, CudaError> {
    driver()?;
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer; the driver is initialized.
    check(|| "cuDriverGetVersion".into(), unsafe { sys::cuDriverGetVersion(&mut v) })?;
    Ok(v)
}

/// How many devices the driver sees (0 is not an error here).
pub fn device_count() -> Result<i32, CudaError> {
    driver()?;
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer; the driver is initialized.
    check(|| "cuDeviceGetCount".into(), unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n)
}

/// What one device offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Its ordinal in this process (after `CUDA_VISIBLE_DEVICES`).
    pub ordinal: i32,
    /// Its name (`NVIDIA H200`).
    pub name: String,
    /// Compute capability (major, minor): (9, 0) for Hopper.
    pub compute_capability: (i32, i32),
    /// Its memory, in bytes.
    pub total_mem: usize,
    /// `CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`: the GPU heap needs it.
    pub vmm: bool,
    /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED`: the heap's export needs it.
    pub posix_fd: bool,
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`: a NIC can reach the heap.
    pub gdr_vmm: bool,
}

/// What [`probe`] found: the driver and every device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// `cuDriverGetVersion` (13000 for 13.0).
    pub driver_version: i32,
    /// Every device, by ordinal.
    pub devices: Vec<DeviceInfo>,
}

/// `13000` as `13.0`.
pub fn version_string(v: i32) -> String {
    format!("{}.{}", v / 1000, v % 1000 / 10)
}

impl fmt::Display for GpuInfo {
    /// One line for the driver, one per device.
    ///
    /// ```
    /// use oxshmem_device::cuda::{DeviceInfo, GpuInfo};
    /// let info = GpuInfo {
    ///     driver_version: 13000,
    ///     devices: vec![DeviceInfo {
    ///         ordinal: 0,
    ///         name: "NVIDIA H200".into(),
    ///         compute_capability: (9, 0),
    ///         total_mem: 150_000_000_000,
    ///         vmm: true,
    ///         posix_fd: true,
    ///         gdr_vmm: true,
    ///     }],
    /// };
    /// assert_eq!(
    ///     info.to_string(),
    ///     "CUDA driver 13.0, 1 device\n\
    ///      device 0: NVIDIA H200, compute capability 9.0, 139.7 GiB, VMM yes, POSIX fd handles yes, GPUDirect RDMA on VMM yes"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.devices.len();
        write!(f, "CUDA driver {}, {n} device{}", version_string(self.driver_version), if n == 1 { "" } else { "s" })?;
        let yes = |b: bool| if b { "yes" } else { "no" };
        for d in &self.devices {
            write!(
                f,
                "\ndevice {}: {}, compute capability {}.{}, {:.1} GiB, VMM {}, POSIX fd handles {}, GPUDirect RDMA on VMM {}",
                d.ordinal,
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_mem as f64 / (1u64 << 30) as f64,
                yes(d.vmm),
                yes(d.posix_fd),
                yes(d.gdr_vmm)
            )?;
        }
        Ok(())
    }
}

/// What `oxshmem-info` or a GPU check prints: the driver version and every device, with the
/// capabilities the GPU heap needs. Creates no context.
///
/// # Errors
/// [`CudaError::NoDriver`] without a driver, [`CudaError::NoDevice`] when it sees no device.
pub fn probe() -> Result<GpuInfo, CudaError> {
    let driver_version = driver_version()?;
    let n = device_count()?;
    if n == 0 {
        return Err(CudaError::NoDevice { detail: "cuDeviceGetCount returned 0".into() });
    }
    let devices = (0..n).map(device_info).collect::<Result<_, _>>()?;
    Ok(GpuInfo { driver_version, devices })
}

/// The device handle of `ordinal` (the driver initialized, the ordinal checked).
pub(crate) fn device(ordinal: i32) -> Result<sys::CUdevice, CudaError> {
    let mut dev: sys::CUdevice = 0;
    // SAFETY: `dev` is a valid out-pointer.
    check(|| format!("cuDeviceGet({ordinal})"), unsafe { sys::cuDeviceGet(&mut dev, ordinal) })?;
    Ok(dev)
}

/// An attribute of `dev`.
pub(crate) fn attribute(dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32, CudaError> {
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer, `dev` a device handle.
    check(|| format!("cuDeviceGetAttribute({attr:?})"), unsafe { sys::cuDeviceGetAttribute(&mut v, attr, dev) })?;
    Ok(v)
}

/// Whether device `src` has native atomics on device `dst`'s memory over P2P
/// (`CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`; the same device: yes). A driver without
/// the query (before CUDA 8.0) or a peer ordinal it does not know answers no: atomics to that
/// peer then take the proxy, which is always correct.
pub(crate) fn p2p_native_atomics(src: sys::CUdevice, dst_ordinal: i32) -> bool {
    let mut dst: sys::CUdevice = 0;
    // SAFETY: `dst` is a valid out-pointer.
    if unsafe { sys::cuDeviceGet(&mut dst, dst_ordinal) } != CUresult::CUDA_SUCCESS {
        return false;
    }
    if dst == src {
        return true;
    }
    if need(&["cuDeviceGetP2PAttribute"]).is_err() {
        return false;
    }
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer, `src` and `dst` device handles.
    let r = unsafe {
        sys::cuDeviceGetP2PAttribute(
            &mut v,
            sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
            src,
            dst,
        )
    };
    r == CUresult::CUDA_SUCCESS && v != 0
}

/// The name of `dev`.
pub(crate) fn device_name(dev: sys::CUdevice) -> Result<String, CudaError> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the buffer is writable for its length, which is passed.
    check(|| "cuDeviceGetName".into(), unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev) })?;
    // SAFETY: the driver wrote a NUL-terminated string into the buffer; the last byte stays 0
    // because the driver truncates to len - 1.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

fn device_info(ordinal: i32) -> Result<DeviceInfo, CudaError> {
    use sys::CUdevice_attribute as A;
    let dev = device(ordinal)?;
    let mut total: usize = 0;
    // SAFETY: `total` is a valid out-pointer.
    check(|| "cuDeviceTotalMem".into(), unsafe { sys::cuDeviceTotalMem_v2(&mut total, dev) })?;
    Ok(DeviceInfo {
        ordinal,
        name: device_name(dev)?,
        compute_capability: (
            attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        total_mem: total,
        vmm: attribute(dev, A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? != 0,
        posix_fd: attribute(dev, A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)? != 0,
        gdr_vmm: attribute(dev, A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)? != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_major_minor() {
        assert_eq!(version_string(13000), "13.0");
        assert_eq!(version_string(12090), "12.9");
        assert_eq!(version_string(11080), "11.8");
    }
}
