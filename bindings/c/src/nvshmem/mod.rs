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
/// elements of the reduction over the members' `src` arrays of `nreduce * n_pes` elements.
/// Each member reads its block from every member (so each element crosses once), after a
/// barrier that makes every `src` ready and before one that keeps it alive until all have read.
/// With either buffer in the GPU heap, the CUDA back end's does the same through the peers'
/// mappings.
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
        let rec = t.get();
        if !T::supports(op) {
            return Err(invalid(func, format!("{op:?} is not defined for this type")));
        }
        if gpu_rma::is_gpu(dest as usize) || gpu_rma::is_gpu(src as usize) {
            // SAFETY: forwarded from the caller.
            return unsafe { gpu_rma::reducescatter(func, rec, op, dest, src, nreduce) };
        }
        let me = rec.team.my_pe()?;
        let es = size_of::<T>();
        let block = nreduce.checked_mul(es).ok_or_else(|| invalid(func, "nreduce overflows"))?;
        rec.team.sync()?;
        let mut acc: Vec<T> = vec![T::zeroed(); nreduce];
        let mut tmp: Vec<T> = vec![T::zeroed(); nreduce];
        for (i, &pe) in rec.members.iter().enumerate() {
            let from = src.wrapping_add(me * nreduce).cast::<u8>();
            let into = if i == 0 { acc.as_mut_ptr() } else { tmp.as_mut_ptr() };
            // SAFETY: `into` holds nreduce elements; the runtime checks `from` is symmetric.
            unsafe { oxshmem_rt::raw::getmem(into.cast(), from, block, pe as c_int)? };
            if i > 0 {
                for (a, b) in acc.iter_mut().zip(&tmp) {
                    *a = T::apply(op, *a, *b);
                }
            }
        }
        rec.team.sync()?;
        if nreduce > 0 {
            // SAFETY: the caller guarantees dest holds nreduce elements.
            unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dest, nreduce) };
        }
        Ok(())
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
/// runtime finalizes; nothing to do without it.
pub(crate) fn finalize_gpu() -> oxshmem_rt::Result<()> {
    #[cfg(feature = "cuda")]
    return gpu::finalize();
    #[cfg(not(feature = "cuda"))]
    Ok(())
}

/// The host collectives whose destination or source is in the GPU heap, which [`crate::ops`]
/// hands to the CUDA back end. (Host RMA, atomics, signals, waits and tests on GPU memory need
/// nothing here: the GPU heap is a segment of the runtime, which routes them to the device
/// crate, `oxshmem_device::cuda::segment`.)
pub(crate) mod gpu_rma {
    use oxshmem_rt::{ReduceOp, Result};

    use crate::handles::TeamRec;
    use crate::ops::CReduce;

    /// Whether `addr` is in the CUDA back end's GPU heap.
    #[inline]
    pub(crate) fn is_gpu(addr: usize) -> bool {
        #[cfg(feature = "cuda")]
        return oxshmem_device::cuda::segment::owns(addr);
        #[cfg(not(feature = "cuda"))]
        {
            let _ = addr;
            false
        }
    }

    /// The error of a collective on GPU memory without the CUDA back end (unreachable: only
    /// the back end makes GPU memory).
    #[cfg(not(feature = "cuda"))]
    fn no_backend(func: &'static str) -> oxshmem_rt::Error {
        crate::error::invalid(func, "GPU memory without the CUDA back end")
    }

    /// `broadcast` of `len` bytes from team PE `root`, `dest` or `source` in the GPU heap.
    ///
    /// # Safety
    /// `dest` and `source` hold `len` bytes (symmetric).
    pub(crate) unsafe fn broadcast(
        func: &'static str,
        t: &TeamRec,
        dest: *mut u8,
        source: *const u8,
        len: usize,
        root: i32,
        esize: usize,
    ) -> Result<()> {
        #[cfg(feature = "cuda")]
        // SAFETY: forwarded.
        return unsafe { super::gpu::coll::broadcast(func, t, dest, source, len, root, esize) };
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (t, dest, source, len, root, esize);
            Err(no_backend(func))
        }
    }

    /// `[f]collect` of `len` bytes from this member, `dest` or `source` in the GPU heap.
    ///
    /// # Safety
    /// `source` holds `len` bytes, `dest` every member's (symmetric).
    pub(crate) unsafe fn collect(
        func: &'static str,
        t: &TeamRec,
        dest: *mut u8,
        source: *const u8,
        len: usize,
        fixed: bool,
        esize: usize,
    ) -> Result<()> {
        #[cfg(feature = "cuda")]
        // SAFETY: forwarded.
        return unsafe { super::gpu::coll::collect(func, t, dest, source, len, fixed, esize) };
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (t, dest, source, len, fixed, esize);
            Err(no_backend(func))
        }
    }

    /// `alltoall[s]` of `nelems` elements of `esize` bytes per member, `dst` and `sst` apart.
    ///
    /// # Safety
    /// `dest` and `source` hold every member's strided block (symmetric).
    pub(crate) unsafe fn alltoalls(
        func: &'static str,
        t: &TeamRec,
        dest: *mut u8,
        source: *const u8,
        dst: isize,
        sst: isize,
        nelems: usize,
        esize: usize,
    ) -> Result<()> {
        #[cfg(feature = "cuda")]
        // SAFETY: forwarded.
        return unsafe { super::gpu::coll::alltoalls(func, t, dest, source, dst, sst, nelems, esize) };
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (t, dest, source, dst, sst, nelems, esize);
            Err(no_backend(func))
        }
    }

    /// `TYPE_OP_reduce` of `n` elements, `dest` or `source` in the GPU heap.
    ///
    /// # Safety
    /// `dest` and `source` hold `n` elements (symmetric).
    pub(crate) unsafe fn reduce<T: CReduce>(
        func: &'static str,
        t: &TeamRec,
        op: ReduceOp,
        dest: *mut T,
        source: *const T,
        n: usize,
    ) -> Result<()> {
        T::check(func, op)?;
        #[cfg(feature = "cuda")]
        // SAFETY: forwarded.
        return unsafe {
            super::gpu::coll::reduce(func, t, op, dest, source, n, T::zero(), |a, x| T::combine(op, a, x))
        };
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (t, dest, source, n);
            Err(no_backend(func))
        }
    }

    /// NVSHMEM's `TYPE_OP_reducescatter` of `nreduce` elements per member, `dest` or `source`
    /// in the GPU heap.
    ///
    /// # Safety
    /// `source` holds `nreduce` elements per member (symmetric), `dest` `nreduce`.
    pub(crate) unsafe fn reducescatter<T: CReduce>(
        func: &'static str,
        t: &TeamRec,
        op: ReduceOp,
        dest: *mut T,
        source: *const T,
        nreduce: usize,
    ) -> Result<()> {
        T::check(func, op)?;
        #[cfg(feature = "cuda")]
        // SAFETY: forwarded.
        return unsafe {
            super::gpu::coll::reducescatter(func, t, op, dest, source, nreduce, T::zero(), |a, x| T::combine(op, a, x))
        };
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (t, dest, source, nreduce);
            Err(no_backend(func))
        }
    }
}
