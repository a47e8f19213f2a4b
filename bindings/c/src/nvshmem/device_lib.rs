//! The meeting point with `libnvshmem_device.a`, the CUDA device library (`bindings/cuda/`).
//!
//! A program that calls NVSHMEM from its kernels links the device library statically
//! (`nvcc -rdc=true … libnvshmem_device.a -lnvshmem_host`). Its device code reads a device state
//! through `__device__` globals that only host code linked into the same program can set
//! (`cudaMemcpyToSymbol`); so the archive's host part registers an `attach` callback here from a
//! load-time constructor, and `nvshmem_init` hands it the device state once the CUDA back end
//! has built one. NVSHMEM does the same dance between `libnvshmem_device.a` and its host library
//! (`nvshmemi_init_thread` and the device state symbol), under other names.
//!
//! Until the CUDA back end is in this library (`docs/cuda.md`), a program that links the device
//! library cannot run its kernels here: `nvshmem_init` says so and ends the job, instead of
//! letting the first kernel dereference a device state nobody set.

use std::ffi::{c_int, c_void};

use parking_lot::Mutex;

/// The device library's ABI version this host library speaks: the layout of the device state
/// (`device/include/oxshmem/device_state.h`) and the `attach` signature. Bumped with either.
pub const DEVICE_ABI_VERSION: c_int = 5;

/// The callback the device library registers: copies the device state pointers into its
/// `__device__` globals; 0 on success, a CUDA error number otherwise.
pub type AttachFn = unsafe extern "C" fn(device_state: *const c_void, cuda_state: *const c_void) -> c_int;

/// What the device library registered: its ABI version and its attach callback.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Registered {
    pub(crate) abi: c_int,
    #[allow(dead_code)] // called once the CUDA back end builds a device state
    pub(crate) attach: AttachFn,
}

static REGISTERED: Mutex<Option<Registered>> = Mutex::new(None);

/// `oxshmemi_register_device_library`: called by `libnvshmem_device.a`'s load-time constructor,
/// before `main`. Returns 0, or -1 when `attach` is NULL. A second registration (two copies of
/// the archive in one program) replaces the first.
///
/// # Safety
/// `attach` must be NULL or a function of the [`AttachFn`] signature that stays valid for the
/// life of the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshmemi_register_device_library(abi_version: c_int, attach: Option<AttachFn>) -> c_int {
    let Some(attach) = attach else { return -1 };
    *REGISTERED.lock() = Some(Registered { abi: abi_version, attach });
    0
}

/// The device library's host-callable atomic on GPU memory: `amo(addr, flags, value, cond,
/// &old)` with `flags` an `OXSHMEM_AMO_*` operation (`| OXSHMEM_AMO_W64`); 0 or a CUDA error.
pub type AmoFn = unsafe extern "C" fn(addr: u64, flags: u32, value: u64, cond: u64, old: *mut u64) -> c_int;

/// `oxshmemi_register_device_amo`: called by `libnvshmem_device.a`'s load-time constructor
/// (after `oxshmemi_register_device_library`) with the function that performs an atomic on GPU
/// memory with a one-thread kernel. Returns 0, or -1 when `amo` is NULL.
///
/// # Safety
/// `amo` must be NULL or a function of the [`AmoFn`] signature that stays valid for the life
/// of the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshmemi_register_device_amo(amo: Option<AmoFn>) -> c_int {
    let Some(amo) = amo else { return -1 };
    // The GPU heap's segment (in the device crate) carries host atomics out with it; without
    // the CUDA back end there is no GPU memory to use it on.
    #[cfg(feature = "cuda")]
    // SAFETY: the caller's contract is the device crate's.
    unsafe {
        oxshmem_device::cuda::segment::set_amo_kernel(amo)
    };
    #[cfg(not(feature = "cuda"))]
    let _ = amo;
    0
}

/// The CPU target's question (`oxshmemi_cpu_local_memory` in `bindings/cuda/src/cpu_runtime.cpp`):
/// is `[addr, addr + len)` a device thread's local memory or a block's shared memory? 1 and a
/// description in `what`, else 0.
pub type LocalMemoryFn =
    unsafe extern "C" fn(addr: u64, len: u64, what: *mut std::ffi::c_char, what_len: usize) -> c_int;

/// `oxshmemi_register_cpu_target`: called by the CPU target's `libnvshmem_device.a` at load time
/// with its question about device-local memory, which the proxy and the software NIC ask before
/// they touch memory on a device thread's behalf (a GPU's host cannot reach a thread's local or
/// shared memory; the CPU target refuses what a GPU could not do). Returns 0, or -1 for NULL.
///
/// # Safety
/// `f` must be NULL or a function of the [`LocalMemoryFn`] signature that stays valid for the
/// life of the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshmemi_register_cpu_target(f: Option<LocalMemoryFn>) -> c_int {
    let Some(f) = f else { return -1 };
    // Asked by the proxy's target on the GPU heap (in the device crate); without the CUDA back
    // end there is no proxy on GPU memory to ask it.
    #[cfg(feature = "cuda")]
    // SAFETY: the caller's contract is the device crate's.
    unsafe {
        oxshmem_device::cuda::channels::set_local_memory_check(f)
    };
    #[cfg(not(feature = "cuda"))]
    let _ = f;
    0
}

/// The registration, if the program links the device library.
pub(crate) fn registered() -> Option<Registered> {
    *REGISTERED.lock()
}

/// The check `nvshmem_init` makes: a program with device code needs a device state this
/// library can build, and a device library that speaks its ABI.
pub(crate) fn check_at_init() -> Result<(), String> {
    let Some(r) = registered() else { return Ok(()) };
    if r.abi != DEVICE_ABI_VERSION {
        return Err(format!(
            "this program links a libnvshmem_device.a built for device ABI {}, but this host library speaks \
             ABI {DEVICE_ABI_VERSION}: rebuild the program against one oxshmem prefix",
            r.abi
        ));
    }
    if cfg!(feature = "cuda") {
        // The CUDA back end builds the device state after the runtime's init (nvshmem/gpu/).
        return Ok(());
    }
    Err("this program links libnvshmem_device.a (NVSHMEM calls in CUDA kernels), but this build of oxshmem has no \
         CUDA back end to give its kernels a device state (see docs/cuda.md); host-only NVSHMEM programs \
         (-lnvshmem_host without the device library) run"
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An [`AttachFn`] that attaches nothing: it reads neither argument, so it is a safe fn
    /// (which coerces to the `unsafe` pointer type).
    extern "C" fn attach(_: *const c_void, _: *const c_void) -> c_int {
        0
    }

    #[test]
    fn registration_is_checked_at_init() {
        assert!(check_at_init().is_ok(), "nothing registered: a host-only program");
        // SAFETY: `attach` lives for the whole process.
        assert_eq!(unsafe { oxshmemi_register_device_library(1, None) }, -1);
        // SAFETY: as above.
        assert_eq!(unsafe { oxshmemi_register_device_library(7, Some(attach)) }, 0);
        let e = check_at_init().unwrap_err();
        assert!(e.contains("device ABI 7") && e.contains(&format!("speaks ABI {DEVICE_ABI_VERSION}")), "{e}");
        // SAFETY: as above.
        unsafe { oxshmemi_register_device_library(DEVICE_ABI_VERSION, Some(attach)) };
        let r = check_at_init();
        if cfg!(feature = "cuda") {
            assert_eq!(r, Ok(()), "the CUDA back end builds the device state later, at init");
        } else {
            assert!(r.unwrap_err().contains("no CUDA back end"), "the library without the cuda feature");
        }
    }
}
