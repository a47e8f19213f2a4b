//! NVSHMEM's host API over the same runtime as the OpenSHMEM one.
//!
//! The typed routines are generated (`gen/nvshmem.rs`) and call the same `crate::ops` functions
//! as their `shmem_` twins; what is NVSHMEM's own lives here:
//!
//! - [`teams`]: `nvshmem_team_t` is an integer; a table maps it to the team records of
//!   [`crate::handles`] (`NVSHMEM_TEAM_WORLD` 0, `NVSHMEM_TEAM_SHARED` 1, `NVSHMEMX_TEAM_NODE` 2,
//!   `NVSHMEMX_TEAM_SAME_MYPE_NODE` 3, new teams from 7 on).
//! - [`stream`]: the `*_on_stream` routines run through a stream executor. Without the CUDA back
//!   end there is none, and stream 0 (CUDA's default stream) means program order on the host.
//! - [`setup`]: `nvshmem_init`, `nvshmemx_init_attr` with a unique id or an MPI communicator, the
//!   status and version queries.
//! - [`device_lib`]: where `libnvshmem_device.a` registers itself, and the check `nvshmem_init`
//!   makes for programs with device code.
//! - [`memory`], [`sync`]: the untyped memory, ordering and signal routines, and the ones that
//!   need a GPU (collective launch, CUDA module init), which say so.
//!
//! NVSHMEM's constants differ from OpenSHMEM's where they overlap: the comparisons LE and GE
//! swap values, and the signal operations are 9 and 10; [`cmp`] and [`sig_op`] translate.

use std::ffi::{c_int, c_uint, c_void};

use oxshmem_rt::{ReduceOp, Reducible};

use crate::error::{invalid, report};
use crate::handles::ShmemTeam;

mod device_lib;
#[cfg(feature = "cuda")]
pub(crate) mod gpu;
#[cfg(feature = "cuda")]
mod gpu_stream;
mod memory;
mod setup;
mod stream;
mod sync;
mod teams;

pub use device_lib::{
    AmoFn, AttachFn, DEVICE_ABI_VERSION, LocalMemoryFn, oxshmemi_register_cpu_target, oxshmemi_register_device_amo,
    oxshmemi_register_device_library,
};
pub use memory::*;
pub use setup::*;
pub use stream::{StreamExecutor, set_stream_executor};
pub use sync::*;
pub use teams::*;

pub(crate) use stream::{on_stream, on_stream_status, on_stream_value};
pub(crate) use teams::team_status;

/// `nvshmem_team_t`.
pub type NvTeam = c_int;

/// `cudaStream_t`: CUDA's opaque stream handle (null is the default stream).
pub type CudaStream = *mut c_void;

/// `dim3`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim3 {
    /// x extent.
    pub x: c_uint,
    /// y extent.
    pub y: c_uint,
    /// z extent.
    pub z: c_uint,
}

/// `nvshmem_team_config_t` (NVSHMEM 3's version 2 layout, 64 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvTeamConfig {
    /// `(2 << 16) + sizeof` from `NVSHMEM_TEAM_CONFIG_INITIALIZER`.
    pub version: c_int,
    /// Contexts the program will create on the team.
    pub num_contexts: c_int,
    /// The team's unique id (`nvshmemx_team_init`).
    pub uniqueid: u64,
    /// Reserved.
    pub padding: [u8; 48],
}

/// `nvshmemx_uniqueid_t`: 128 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvUniqueId {
    /// `(1 << 16) + sizeof` from `NVSHMEMX_UNIQUEID_INITIALIZER`.
    pub version: c_int,
    /// The id's bytes (rank 0's address and the job's key).
    pub internal: [u8; 124],
}

/// `nvshmemx_uniqueid_args_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvUniqueIdArgs {
    /// Layout version.
    pub version: c_int,
    /// The id every rank was given.
    pub id: *mut NvUniqueId,
    /// This process's rank.
    pub myrank: c_int,
    /// Number of ranks.
    pub nranks: c_int,
}

/// `nvshmemx_init_args_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvInitArgs {
    /// Layout version.
    pub version: c_int,
    /// For `NVSHMEMX_INIT_WITH_UNIQUEID`.
    pub uid_args: NvUniqueIdArgs,
    /// The CUDA device to use (-1: the current one).
    pub cuda_device_id: c_int,
    /// Reserved.
    pub content: [u8; 92],
}

/// `nvshmemx_init_attr_t` (144 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvInitAttr {
    /// Layout version.
    pub version: c_int,
    /// For `NVSHMEMX_INIT_WITH_MPI_COMM`: a pointer to the program's `MPI_Comm`.
    pub mpi_comm: *mut c_void,
    /// The rest.
    pub args: NvInitArgs,
}

const _: () = assert!(size_of::<NvTeamConfig>() == 64);
const _: () = assert!(size_of::<NvUniqueId>() == 128);
const _: () = assert!(size_of::<NvUniqueIdArgs>() == 24);
const _: () = assert!(size_of::<NvInitArgs>() == 128);
const _: () = assert!(size_of::<NvInitAttr>() == 144);
const _: () = assert!(std::mem::offset_of!(NvInitArgs, cuda_device_id) == 32);

/// `NVSHMEMX_SUCCESS` and the error codes of `enum nvshmemx_status`.
pub(crate) mod code {
    use std::ffi::c_int;
    /// Success.
    pub(crate) const SUCCESS: c_int = 0;
    /// A bad argument.
    pub(crate) const INVALID_VALUE: c_int = 1;
    /// Not available in this build or on this machine.
    pub(crate) const NOT_SUPPORTED: c_int = 3;
    /// Anything else.
    pub(crate) const INTERNAL: c_int = 7;
}

/// A raw pointer that a stream job may carry to the thread that runs it. The job runs while
/// the routine's contract holds (the caller keeps the memory valid until the stream reaches the
/// operation, as with NVSHMEM).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendPtr<T>(pub(crate) T);

// SAFETY: only raw pointers are wrapped; what they point to is the caller's to keep valid until
// the stream has run the operation (the contract of every `*_on_stream` routine).
unsafe impl<T> Send for SendPtr<T> {}

impl<T: Copy> SendPtr<T> {
    /// The pointer (a method, so that a closure captures the whole wrapper, not its field).
    #[inline(always)]
    pub(crate) fn get(self) -> T {
        self.0
    }
}

/// OpenSHMEM's `SHMEM_CMP_*` value of NVSHMEM's comparison `c` (LE and GE swap), or the end of
/// the job naming `func`.
#[inline(always)]
pub(crate) fn cmp(func: &'static str, c: c_int) -> c_int {
    match c {
        0..=2 | 4 => c,
        3 => 5,
        5 => 3,
        _ => crate::error::fatal(
            func,
            invalid(func, format!("comparison {c} is not one of NVSHMEM_CMP_EQ, _NE, _GT, _LE, _LT, _GE (0..5)")),
        ),
    }
}

/// OpenSHMEM's `SHMEM_SIGNAL_*` value of NVSHMEM's signal operation `op` (`NVSHMEM_SIGNAL_SET`
/// 9, `NVSHMEM_SIGNAL_ADD` 10), or the end of the job naming `func`.
#[inline(always)]
pub(crate) fn sig_op(func: &'static str, op: c_int) -> c_int {
    match op {
        9 => 0,
        10 => 1,
        _ => crate::error::fatal(
            func,
            invalid(func, format!("signal operation {op} is not NVSHMEM_SIGNAL_SET (9) or NVSHMEM_SIGNAL_ADD (10)")),
        ),
    }
}

/// `nvshmem_TYPE_OP_reducescatter`: every member gets, in `dest`, its block of `nreduce`
/// elements of the reduction over the members' `src` arrays of `nreduce * n_pes` elements: the
/// runtime's ([`oxshmem_rt::coll::api::raw::reducescatter`]), which hands it to the GPU heap's
/// segment when either buffer is GPU memory.
///
/// # Safety
/// `src` must hold `nreduce * n_pes` elements (symmetric), `dest` `nreduce`.
pub(crate) unsafe fn reducescatter<T: Reducible>(
    func: &'static str,
    team: ShmemTeam,
    op: ReduceOp,
    dest: *mut T,
    src: *const T,
    nreduce: usize,
) -> c_int {
    let r = crate::handles::team(func, team).and_then(|t| {
        // SAFETY: forwarded from the caller.
        unsafe { oxshmem_rt::coll::api::raw::reducescatter(&t.get().team, op, dest, src, nreduce) }
    });
    match r {
        Ok(()) => 0,
        Err(e) => {
            report(func, e);
            -1
        }
    }
}

/// An error of `func` as its status code (after printing it).
pub(crate) fn fail(func: &'static str, code: c_int, e: oxshmem_rt::Error) -> c_int {
    report(func, e);
    code
}

/// Tears the CUDA back end down (collective: every PE unmaps its peers' GPU heaps) before the
/// runtime finalizes; nothing to do without it. Then reports the first error a kernel recorded
/// in the device state (a bad PE, a range outside the heap, an unregistered local buffer over
/// IBGDA, ...: device code cannot return one), as the error of the finalize, which ends the
/// job — as a device-side failure ends an NVSHMEM job.
pub(crate) fn finalize_gpu() -> oxshmem_rt::Result<()> {
    #[cfg(feature = "cuda")]
    {
        // Held across the teardown (which waits for the kernels first) to read the state after
        // it; let go right after, once every PE has passed the teardown's barrier.
        let backend = oxshmem_device::cuda::segment::current();
        gpu::finalize()?;
        let recorded = backend.and_then(|b| b.recorded_error());
        if let Some(why) = recorded {
            return Err(oxshmem_rt::Error::new(
                crate::error::me(),
                "nvshmem_finalize",
                oxshmem_rt::ErrorKind::Layer { layer: "device", reason: why },
            ));
        }
    }
    Ok(())
}
