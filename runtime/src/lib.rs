//! # oxshmem
//!
//! A PGAS runtime with OpenSHMEM 1.5 semantics. Every process of a job is a *PE*; each owns a
//! symmetric heap that every other PE can read, write and update atomically with one-sided
//! operations, without the owner taking part.
//!
//! ```
//! fn main() -> Result<(), oxshmem::Error> {
//!     let shmem = oxshmem::init()?;                  // collective: every PE joins
//!     let (me, n) = (shmem.my_pe(), shmem.n_pes());
//!     let slot = shmem.alloc_slice(n, 0u64)?;        // collective: same object on every PE
//!     for pe in 0..n {
//!         slot.p(me, me as u64 * 10, pe)?;            // write my entry on every PE
//!     }
//!     shmem.barrier_all()?;
//!     assert_eq!(slot.read(me), me as u64 * 10);
//!     slot.free()?;                                  // collective, like its allocation
//!     shmem.finalize()                               // collective, and every PE's last call
//! }
//! ```
//!
//! Start a job with `oshrun -n 4 your-program`; without a launcher a program is PE 0 of 1.
//! `finalize` is not optional: to `oshrun`, a PE that returns from `main` without it died
//! early, and the launcher ends the job with status 1.
//!
//! **Start here: the [`guide`]** (`docs/rust.md` in the repository) walks through all of it
//! with whole programs, a heat stencil and a distributed histogram among them; `cargo doc
//! --no-deps -p oxshmem -p oxshmem-device --open` opens this reference.
//!
//! # What is where
//!
//! - **Start and end**: [`init`] (or [`init_thread`]) returns the [`Shmem`] handle;
//!   [`Shmem::finalize`] ends.
//! - **Symmetric memory**: [`Shmem::alloc_slice`] and [`Shmem::alloc`] make a [`SymSlice`] or
//!   [`SymBox`] of any [`Pod`] type. Dropping one frees it *collectively*, so every PE must
//!   drop its symmetric objects in the same order ([`SymSlice::free`] returns the error a
//!   mismatch gives).
//! - **RMA**: [`SymSlice::put`], [`SymSlice::get`], [`SymSlice::p`], [`SymSlice::g`] and
//!   their `_nbi` forms; ordering with [`Shmem::fence`], [`Shmem::quiet`] and
//!   [`Shmem::barrier_all`].
//! - **Signals** ([`signal`]): [`SymSlice::put_signal`] puts data and then updates a `u64`
//!   signal word ([`SignalOp`]); the receiver waits with [`SymSlice::signal_wait_until`].
//!   Other words are waited on with [`SymSlice::wait_until`] ([`wait`], [`Cmp`]).
//! - **Atomics** ([`amo`]): [`SymSlice::atomic_add`], [`SymSlice::atomic_fetch_add`],
//!   [`SymSlice::atomic_compare_swap`], [`SymSlice::atomic_swap`] and the rest, on any PE.
//! - **Teams** ([`team`]): [`Shmem::team_world`], [`Shmem::team_shared`],
//!   [`Team::split_strided`], [`Team::split_2d`].
//! - **Collectives and reductions** ([`coll`]): methods of a [`Team`]:
//!   [`Team::sum_reduce`] (and `prod`, `min`, `max`, `and`, `or`, `xor`), [`Team::reduce`],
//!   [`Team::broadcast`], [`Team::fcollect`], [`Team::collect`], [`Team::alltoall`],
//!   [`Team::sync`].
//! - **Contexts** ([`ctx`]): [`Shmem::ctx_create`] and [`Team::create_ctx`] give a [`Ctx`], a
//!   stream of operations with its own quiet and fence.
//! - **Locks**: [`lock::SymLock`].
//! - **Errors**: every call returns [`Result`]; an [`Error`] names the PE, the OpenSHMEM
//!   routine and the reason ([`ErrorKind`]).
//! - **Device-initiated operations** are the crate `oxshmem-device` (folder `device/`):
//!   `Device::init`, kernels launched on a stream whose threads call NVSHMEM's device API
//!   (puts, signals, atomics, waits) over P2P, proxy or IBGDA channels.
//! - **Pointer-based forms** of every operation, which the C ABI wraps: [`raw`].
//!
//! Layers, bottom up: [`world`] (init, PEs, nodes), [`heap`] (symmetric memory),
//! [`transport`] (how bytes reach a peer), then the operations above. How they are built, and
//! where they depart from the design the project started from, is `docs/architecture.md`; the
//! design card itself is `docs/design.md`; every environment variable is in
//! `docs/configuration.md`.

// OpenSHMEM routines take many arguments (collectives, signals, strided forms); their Rust
// forms mirror the specification rather than bundle them.
#![allow(clippy::too_many_arguments)]

pub mod amo;
pub mod coll;
pub mod config;
pub mod ctx;
mod error;
#[doc = include_str!("../../docs/rust.md")]
pub mod guide {}
pub mod heap;
mod ibrma;
pub mod lock;
mod order;
mod reduce_op;
mod rma;
pub mod segment;
pub mod signal;
mod spin;
mod sym;
pub mod team;
pub mod transport;
pub mod wait;
pub mod world;

pub use amo::{AmoInt, AmoType};
/// The `bytemuck` crate the runtime is built with, for `#[bytemuck(crate = "oxshmem::bytemuck")]`.
pub use bytemuck;
/// What may live in symmetric memory and cross the wire: plain old data, any bytes another PE
/// writes being a valid value. Derive it, with [`Zeroable`], for your own `#[repr(C)]` types;
/// the attribute `#[bytemuck(crate = "oxshmem::bytemuck")]` lets the derive work without adding
/// `bytemuck` to your own dependencies (as `examples/particles.rs` does).
///
/// For example:
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq, oxshmem::Pod, oxshmem::Zeroable)]
/// #[bytemuck(crate = "oxshmem::bytemuck")]
/// #[repr(C)]
/// struct Particle {
///     pos: [f32; 3],
///     id: u32,
/// }
///
/// let shmem = oxshmem::init()?;
/// let p = shmem.alloc_slice(4, Particle { pos: [0.0; 3], id: 0 })?;
/// p.p(1, Particle { pos: [1.0, 2.0, 3.0], id: 7 }, shmem.my_pe())?;
/// assert_eq!(p.read(1).id, 7);
/// drop(p);
/// shmem.finalize()?;
/// # Ok::<(), oxshmem::Error>(())
/// ```
///
/// (What follows is bytemuck's own documentation.)
///
pub use bytemuck::Pod;
/// All-zero bytes are a valid value: what [`Pod`] requires beside it. Derive both (see
/// [`Pod`]).
///
/// (What follows is bytemuck's own documentation.)
///
pub use bytemuck::Zeroable;
pub use coll::reduce::{ArithReducible, BitwiseReducible, Complex, MinMaxReducible, ReduceOp, Reducible};
pub use ctx::Ctx;
pub use error::{Error, ErrorKind, Result, UNKNOWN_PE};
/// bfloat16, the element type of NVSHMEM's `bfloat16` routines (reductions combine it in `f32`).
///
/// (What follows is the `half` crate's own documentation.)
///
pub use half::bf16;
/// IEEE 754 binary16 ("half"), the element type of NVSHMEM's `half` routines (reductions
/// combine it in `f32`).
///
/// (What follows is the `half` crate's own documentation.)
///
pub use half::f16;
pub use signal::SignalOp;
pub use sym::{Shmem, SymBox, SymSlice, current, init, init_thread};
pub use team::{Team, TeamConfig};
pub use wait::{Cmp, CmpValues, SyncType};
pub use world::{NodeLayout, ThreadLevel};

/// OpenSHMEM specification version implemented (`SHMEM_MAJOR_VERSION`, `SHMEM_MINOR_VERSION`).
pub const SPEC_VERSION: (u32, u32) = (1, 5);

/// Vendor string (`SHMEM_VENDOR_STRING`, `shmem_info_get_name`).
pub const VENDOR_STRING: &str = concat!("oxshmem ", env!("CARGO_PKG_VERSION"));

/// `shmem_info_get_version`: the OpenSHMEM version implemented.
///
/// ```
/// assert_eq!(oxshmem::info_get_version(), (1, 5));
/// ```
pub fn info_get_version() -> (u32, u32) {
    SPEC_VERSION
}

/// `shmem_info_get_name`: the vendor string.
///
/// ```
/// assert!(oxshmem::info_get_name().starts_with("oxshmem"));
/// ```
pub fn info_get_name() -> &'static str {
    VENDOR_STRING
}

pub use config::info_text;

/// Pointer-based forms of every operation, for the C ABI and other foreign callers.
///
/// Addresses are checked to be symmetric and PEs to be in range; errors come back as
/// [`Error`] values, which the C ABI prints as `PE n: function: reason` before ending the job.
pub mod raw {
    pub use crate::amo::{atomic, atomic_nbi};
    pub use crate::ibrma::{ibget, ibput};
    pub use crate::order::{fence_all as fence, quiet};
    pub use crate::rma::{
        addr_accessible, g, getmem, getmem_nbi, iget, iput, p, pe_accessible, ptr, putmem, putmem_nbi,
    };
    pub use crate::transport::{AmoOp, Width};
    pub use crate::wait::{
        test, test_all, test_any, test_some, wait_until, wait_until_all, wait_until_any, wait_until_some,
    };
    pub use crate::world::global_exit;

    /// Ends the whole job from this PE with `status`, telling the launcher `msg` (which it
    /// prints as the reason). For fatal errors of foreign callers (the C ABI).
    pub fn abort(status: i32, msg: &str) -> ! {
        match running("shmem_abort") {
            Ok(rt) => rt.abort(status, msg),
            Err(_) => match crate::world::failed_init_boot() {
                // Init failed: the launcher connection it opened still ends the job.
                Some(boot) => {
                    crate::world::flush_output();
                    boot.abort(status, msg)
                }
                None => {
                    eprintln!("{msg}");
                    std::process::exit(if status == 0 { 1 } else { status })
                }
            },
        }
    }

    use crate::error::Result;
    use crate::world::running;

    /// `shmem_init`.
    pub fn init() -> Result<()> {
        crate::world::init_runtime_checked(crate::ThreadLevel::Single, false, None).map(drop)
    }

    /// `shmem_init_thread`: returns the level provided.
    pub fn init_thread(level: crate::ThreadLevel) -> Result<crate::ThreadLevel> {
        crate::world::init_runtime_checked(level, false, None)
    }

    /// Initialization for C programs: as [`init_thread`], and the executable's static data
    /// (`.data` and `.bss`) becomes symmetric segment 1, so global and static variables are
    /// valid targets of every operation. Must be called before the program starts threads.
    pub fn init_with_static_data(level: crate::ThreadLevel) -> Result<crate::ThreadLevel> {
        crate::world::init_runtime_checked(level, true, None)
    }

    /// As [`init_with_static_data`], over a bootstrap the caller connected itself (NVSHMEM's
    /// `nvshmemx_init_attr` with a unique id or an MPI communicator) instead of the one the
    /// environment names.
    pub fn init_with_bootstrap(
        level: crate::ThreadLevel,
        boot: Box<dyn oxshmem_bootstrap::Bootstrap>,
    ) -> Result<crate::ThreadLevel> {
        crate::world::init_runtime_checked(level, true, Some(boot))
    }

    /// `shmem_finalize`.
    pub fn finalize() -> Result<()> {
        crate::world::finalize_runtime()
    }

    /// `shmem_my_pe`.
    pub fn my_pe() -> Result<usize> {
        running("shmem_my_pe").map(|r| r.me)
    }

    /// `shmem_n_pes`.
    pub fn n_pes() -> Result<usize> {
        running("shmem_n_pes").map(|r| r.n)
    }

    /// `shmem_barrier_all`.
    pub fn barrier_all() -> Result<()> {
        running("shmem_barrier_all")?.barrier_all_internal("shmem_barrier_all")
    }

    /// `shmem_sync_all`.
    pub fn sync_all() -> Result<()> {
        running("shmem_sync_all")?.sync_all_internal("shmem_sync_all")
    }

    /// `shmem_malloc`: collective; `size` must be positive (the C ABI maps 0 to NULL).
    pub fn malloc(size: usize) -> Result<*mut u8> {
        running("shmem_malloc")?.sym_alloc("shmem_malloc", size, 1).map(|a| a as *mut u8)
    }

    /// `shmem_calloc`: collective; zeroed.
    pub fn calloc(count: usize, size: usize) -> Result<*mut u8> {
        const F: &str = "shmem_calloc";
        let rt = running(F)?;
        let bytes = count.checked_mul(size).ok_or_else(|| {
            crate::Error::new(
                rt.me,
                F,
                crate::ErrorKind::InvalidSize { what: format!("{count} x {size} bytes overflows") },
            )
        })?;
        let p = rt.sym_alloc(F, bytes, 1)? as *mut u8;
        // SAFETY: p is a fresh allocation of `bytes` bytes.
        unsafe { p.write_bytes(0, bytes) };
        // Zeroed everywhere before any PE may put into it.
        rt.sync_all_internal(F)?;
        Ok(p)
    }

    /// `shmem_align`: collective.
    pub fn align(alignment: usize, size: usize) -> Result<*mut u8> {
        running("shmem_align")?.sym_alloc("shmem_align", size, alignment).map(|a| a as *mut u8)
    }

    /// `shmem_malloc_with_hints`: collective; hints only advise (unknown bits are ignored, with
    /// one warning per PE under `SHMEM_DEBUG`). See [`crate::heap::malloc_with_hints`].
    pub fn malloc_with_hints(size: usize, hints: u64) -> Result<*mut u8> {
        crate::heap::malloc_with_hints(size, hints)
    }

    /// `shmem_realloc`: collective.
    ///
    /// # Safety
    /// `ptr` must not be used after a successful call (it may have moved).
    pub unsafe fn realloc(ptr: *mut u8, size: usize) -> Result<*mut u8> {
        running("shmem_realloc")?.sym_realloc("shmem_realloc", ptr as usize, size).map(|a| a as *mut u8)
    }

    /// `shmem_free`: collective.
    ///
    /// # Safety
    /// `ptr` must not be used afterwards.
    pub unsafe fn free(ptr: *mut u8) -> Result<()> {
        running("shmem_free")?.sym_free("shmem_free", ptr as usize)
    }

    /// Bytes free in the symmetric heap (`shmemx_heap_free`-style diagnostics).
    pub fn heap_free() -> Result<usize> {
        running("shmem_heap_free").map(|r| r.heap.free_bytes())
    }

    /// Bytes managed by the symmetric heap.
    pub fn heap_size() -> Result<usize> {
        running("shmem_heap_size").map(|r| r.heap.total())
    }

    /// This PE's symmetric heap: its base address and the bytes users can allocate in it.
    pub fn heap_range() -> Result<(*mut u8, usize)> {
        running("shmem_heap_range").map(|r| (r.heap.base as *mut u8, r.heap.len))
    }
}
