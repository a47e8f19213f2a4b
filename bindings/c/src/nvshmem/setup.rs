//! NVSHMEM's setup routines: `nvshmem_init*`, `nvshmemx_init_attr` (with a unique id, an MPI
//! communicator, or the launcher's environment), finalize, the status and version queries,
//! the CUDA module and library bindings (`nvshmemx_cumodule_init`, `nvshmemx_culibrary_init`),
//! and the routines that need a GPU, which say so.
//!
//! Every init goes through the same runtime init as `shmem_init` (the executable's data
//! segment becomes symmetric, `SHMEM_TEAM_WORLD` is set), over the bootstrap the caller chose:
//! - `nvshmem_init`, `NVSHMEMX_INIT_THREAD_PES`, `NVSHMEMX_INIT_WITH_SHMEM`: the launcher's
//!   (`oshrun`, Hydra, Slurm; `OXSHMEM_BOOTSTRAP`);
//! - `NVSHMEMX_INIT_WITH_UNIQUEID`: the unique-id rendezvous (`oxshmem_bootstrap::uid`), after
//!   rank 0's `nvshmemx_get_uniqueid` and every rank's `nvshmemx_set_attr_uniqueid_args`;
//! - `NVSHMEMX_INIT_WITH_MPI_COMM`: the program's MPI communicator (`oxshmem_bootstrap::mpi`),
//!   found at run time in the MPI library the program loaded.

use std::ffi::{c_char, c_int, c_uint, c_void};

use oxshmem_bootstrap::Bootstrap;
use oxshmem_bootstrap::uid::{self, UniqueId};
use oxshmem_rt::{Error, ErrorKind, Result, ThreadLevel, raw};

use super::{NvInitAttr, NvUniqueId, code};
use crate::error::{fatal, invalid, ok, report};

/// `NVSHMEMX_INIT_THREAD_PES`.
const INIT_THREAD_PES: c_uint = 1;
/// `NVSHMEMX_INIT_WITH_MPI_COMM`.
const INIT_WITH_MPI_COMM: c_uint = 1 << 1;
/// `NVSHMEMX_INIT_WITH_SHMEM`.
const INIT_WITH_SHMEM: c_uint = 1 << 2;
/// `NVSHMEMX_INIT_WITH_UNIQUEID`.
const INIT_WITH_UNIQUEID: c_uint = 1 << 3;

/// `(1 << 16) + sizeof(nvshmemx_uniqueid_t)`: `NVSHMEMX_UNIQUEID_INITIALIZER`'s version.
const UNIQUEID_VERSION: c_int = (1 << 16) + 128;

fn boot_err(func: &'static str, e: impl std::fmt::Display) -> Error {
    Error::new(crate::error::me(), func, ErrorKind::Bootstrap(e.to_string()))
}

/// Initializes the runtime (over `boot`, or the environment's bootstrap) and both APIs' teams.
fn init(func: &'static str, level: ThreadLevel, boot: Option<Box<dyn Bootstrap>>) -> Result<ThreadLevel> {
    // Before the bootstrap: every PE runs the same program, so every PE stops here alike.
    super::device_lib::check_at_init().map_err(|m| crate::error::invalid(func, m))?;
    // The hang report names the routines as the program called them.
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let provided = crate::setup::init_with(func, level, boot)?;
    super::teams::init_nv_teams(func)?;
    // Every finalize, shmem_finalize's too, tears the CUDA back end down first.
    crate::setup::before_finalize(super::finalize_gpu);
    #[cfg(feature = "cuda")]
    super::gpu::init(func)?;
    // The collectives above were init's own: the hang report's "last" is the init routine.
    oxshmem_bootstrap::status::enter(
        oxshmem_bootstrap::status::Routine::of(oxshmem_bootstrap::status::code::INIT),
        None,
        0,
        oxshmem_bootstrap::status::Arg::None,
    );
    Ok(provided)
}

/// `nvshmem_init`: over the launcher's bootstrap; collective. Ends the job on failure.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_init() {
    const F: &str = "nvshmem_init";
    ok(F, init(F, ThreadLevel::Serialized, None).map(drop));
}

/// `nvshmem_init_thread`: 0 on success, with the level provided in `*provided`.
///
/// # Safety
/// `provided` must be NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    const F: &str = "nvshmem_init_thread";
    let r = ThreadLevel::from_c(requested)
        .ok_or_else(|| {
            invalid(F, format!("thread level {requested} is not NVSHMEM_THREAD_SINGLE..NVSHMEM_THREAD_MULTIPLE"))
        })
        .and_then(|level| init(F, level, None));
    match r {
        Ok(level) => {
            if !provided.is_null() {
                // SAFETY: the caller's contract; checked non-null.
                unsafe { provided.write(level as c_int) };
            }
            code::SUCCESS
        }
        Err(e) => super::fail(F, code::INTERNAL, e),
    }
}

/// `nvshmem_query_thread`.
///
/// # Safety
/// `provided` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_query_thread(provided: *mut c_int) {
    // SAFETY: forwarded; the OpenSHMEM routine checks the same things.
    unsafe { crate::setup::query_thread("nvshmem_query_thread", provided) }
}

/// `nvshmem_finalize`: collective. The sockets of unique ids this process made and did not use
/// close too, whatever bootstrap the job had.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_finalize() {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_finalize");
    ok("nvshmem_finalize", crate::setup::finalize());
    uid::close_unused();
}

/// `nvshmemx_hostlib_finalize`: `nvshmem_finalize` (host and device library are one here).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_hostlib_finalize() {
    ok("nvshmemx_hostlib_finalize", crate::setup::finalize());
}

/// `nvshmem_global_exit`: ends the whole job with `status`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_global_exit(status: c_int) {
    raw::global_exit(status)
}

/// `nvshmem_my_pe`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_my_pe() -> c_int {
    ok("nvshmem_my_pe", raw::my_pe()) as c_int
}

/// `nvshmem_n_pes`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_n_pes() -> c_int {
    ok("nvshmem_n_pes", raw::n_pes()) as c_int
}

/// `nvshmem_info_get_version`: the OpenSHMEM version NVSHMEM reports (1.3).
///
/// # Safety
/// `major` and `minor` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    const F: &str = "nvshmem_info_get_version";
    if major.is_null() || minor.is_null() {
        fatal(F, invalid(F, "major or minor is NULL"));
    }
    // SAFETY: the caller's contract; checked non-null.
    unsafe {
        major.write(1);
        minor.write(3);
    }
}

/// The vendor string of `nvshmem.h`'s `NVSHMEM_VENDOR_STRING`.
pub(crate) const VENDOR_STRING: &str = concat!("oxshmem ", env!("CARGO_PKG_VERSION"), " (NVSHMEM 3.4 API)");

/// `nvshmem_info_get_name`: the vendor string, NUL-terminated, at most `NVSHMEM_MAX_NAME_LEN`
/// bytes with the NUL.
///
/// # Safety
/// `name` must be valid for `NVSHMEM_MAX_NAME_LEN` (256) bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_info_get_name(name: *mut c_char) {
    // SAFETY: forwarded.
    unsafe { crate::setup::write_name("nvshmem_info_get_name", name, VENDOR_STRING) }
}

/// `nvshmemx_vendor_get_version_info`: the NVSHMEM version whose API this library follows.
///
/// # Safety
/// The three pointers must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_vendor_get_version_info(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) {
    const F: &str = "nvshmemx_vendor_get_version_info";
    if major.is_null() || minor.is_null() || patch.is_null() {
        fatal(F, invalid(F, "major, minor or patch is NULL"));
    }
    // SAFETY: the caller's contract; checked non-null.
    unsafe {
        major.write(3);
        minor.write(4);
        patch.write(5);
    }
}

/// `nvshmemx_init_status`: `NVSHMEM_STATUS_IS_INITIALIZED` (2) between init and finalize,
/// else `NVSHMEM_STATUS_NOT_INITIALIZED` (0).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_init_status() -> c_int {
    if oxshmem_rt::world::initialized() { 2 } else { 0 }
}

/// `nvshmemx_get_uniqueid`: on rank 0, a new unique id (rank 0's address and a fresh key) for
/// every rank's `nvshmemx_set_attr_uniqueid_args`; rank 0 listens there from now on.
///
/// # Safety
/// `uniqueid` must be valid for a write of an `nvshmemx_uniqueid_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_get_uniqueid(uniqueid: *mut NvUniqueId) -> c_int {
    const F: &str = "nvshmemx_get_uniqueid";
    if uniqueid.is_null() {
        return super::fail(F, code::INVALID_VALUE, invalid(F, "uniqueid is NULL"));
    }
    match uid::create_unique_id() {
        Ok(id) => {
            let out = NvUniqueId { version: UNIQUEID_VERSION, internal: id.to_bytes() };
            // SAFETY: the caller's contract; checked non-null.
            unsafe { uniqueid.write(out) };
            code::SUCCESS
        }
        Err(e) => super::fail(F, code::INTERNAL, boot_err(F, e)),
    }
}

/// `nvshmemx_set_attr_uniqueid_args`: records this rank, the number of ranks and the id in
/// `attr` for `nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, attr)` (which checks them).
///
/// # Safety
/// `attr` must be valid for writes; `uniqueid` must stay valid until the init.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_set_attr_uniqueid_args(
    myrank: c_int,
    nranks: c_int,
    uniqueid: *const NvUniqueId,
    attr: *mut NvInitAttr,
) -> c_int {
    const F: &str = "nvshmemx_set_attr_uniqueid_args";
    if attr.is_null() || uniqueid.is_null() {
        return super::fail(F, code::INVALID_VALUE, invalid(F, "attr or uniqueid is NULL"));
    }
    // SAFETY: the caller's contract; checked non-null. Field writes: the rest of attr keeps
    // what NVSHMEMX_INIT_ATTR_INITIALIZER put there.
    unsafe {
        let a = &raw mut (*attr).args.uid_args;
        (&raw mut (*a).id).write(uniqueid.cast_mut());
        (&raw mut (*a).myrank).write(myrank);
        (&raw mut (*a).nranks).write(nranks);
    }
    code::SUCCESS
}

/// `nvshmemx_set_attr_mpi_comm_args`: records the program's communicator (`mpi_comm` points
/// at an `MPI_Comm`) for `nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, attr)`.
///
/// # Safety
/// `attr` must be valid for writes; `mpi_comm` must stay valid until the init.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_set_attr_mpi_comm_args(mpi_comm: *mut c_void, attr: *mut NvInitAttr) -> c_int {
    const F: &str = "nvshmemx_set_attr_mpi_comm_args";
    if attr.is_null() || mpi_comm.is_null() {
        return super::fail(F, code::INVALID_VALUE, invalid(F, "attr or mpi_comm is NULL"));
    }
    // SAFETY: the caller's contract; checked non-null.
    unsafe { (&raw mut (*attr).mpi_comm).write(mpi_comm) };
    code::SUCCESS
}

/// The bootstrap `flags` and `attr` ask for (`None`: the environment's).
///
/// # Safety
/// `attr` must be NULL or readable, and what it points to valid (the routine's contract).
unsafe fn bootstrap_of(
    func: &'static str,
    flags: c_uint,
    attr: *const NvInitAttr,
) -> Result<Option<Box<dyn Bootstrap>>> {
    let known = INIT_THREAD_PES | INIT_WITH_MPI_COMM | INIT_WITH_SHMEM | INIT_WITH_UNIQUEID;
    if flags & !known != 0 {
        return Err(invalid(func, format!("flags {flags:#x} has bits NVSHMEM does not define")));
    }
    let ways = [INIT_WITH_MPI_COMM, INIT_WITH_SHMEM, INIT_WITH_UNIQUEID].iter().filter(|&&f| flags & f != 0).count();
    if ways > 1 {
        return Err(invalid(
            func,
            format!("flags {flags:#x} name more than one of NVSHMEMX_INIT_WITH_MPI_COMM, _WITH_SHMEM, _WITH_UNIQUEID"),
        ));
    }
    if flags & (INIT_WITH_MPI_COMM | INIT_WITH_UNIQUEID) != 0 && attr.is_null() {
        return Err(invalid(func, "attr is NULL"));
    }
    if flags & INIT_WITH_UNIQUEID != 0 {
        // SAFETY: checked non-null; the caller's contract.
        let args = unsafe { (*attr).args.uid_args };
        if args.id.is_null() {
            return Err(invalid(
                func,
                "NVSHMEMX_INIT_WITH_UNIQUEID: attr holds no unique id (call nvshmemx_set_attr_uniqueid_args first)",
            ));
        }
        let (rank, size) = (args.myrank, args.nranks);
        if size <= 0 {
            return Err(invalid(func, format!("NVSHMEMX_INIT_WITH_UNIQUEID: nranks {size} is not positive")));
        }
        if rank < 0 || rank >= size {
            return Err(invalid(func, format!("NVSHMEMX_INIT_WITH_UNIQUEID: rank {rank} is outside 0..{size}")));
        }
        // SAFETY: checked non-null; the caller keeps the id valid until the init.
        let bytes = unsafe { (*args.id).internal };
        let id = UniqueId::from_bytes(&bytes)
            .map_err(|e| boot_err(func, format!("NVSHMEMX_INIT_WITH_UNIQUEID (rank {rank} of {size}): {e}")))?;
        let b = uid::Uid::init(&id, rank as usize, size as usize)
            .map_err(|e| boot_err(func, format!("NVSHMEMX_INIT_WITH_UNIQUEID (rank {rank} of {size}): {e}")))?;
        return Ok(Some(Box::new(b)));
    }
    if flags & INIT_WITH_MPI_COMM != 0 {
        // SAFETY: checked non-null; the caller's contract.
        let comm = unsafe { (*attr).mpi_comm };
        if comm.is_null() {
            return Err(invalid(
                func,
                "NVSHMEMX_INIT_WITH_MPI_COMM: attr holds no communicator (call nvshmemx_set_attr_mpi_comm_args first)",
            ));
        }
        // SAFETY: comm points at the program's MPI_Comm (the routine's contract).
        let b = unsafe { oxshmem_bootstrap::mpi::Mpi::from_comm(comm.cast_const()) }.map_err(|e| boot_err(func, e))?;
        return Ok(Some(Box::new(b)));
    }
    Ok(None)
}

/// `nvshmemx_init_attr` and `nvshmemx_hostlib_init_attr`.
///
/// # Safety
/// `attr` must be NULL or readable (see [`bootstrap_of`]).
unsafe fn init_attr(func: &'static str, flags: c_uint, attr: *const NvInitAttr) -> c_int {
    // Before the bootstrap is built here (unique id, MPI): its events are logged too.
    crate::setup::install_logging();
    if oxshmem_rt::world::initialized() {
        // With NVSHMEMX_INIT_WITH_SHMEM an OpenSHMEM init may have come first: that is the
        // runtime. Any other init of a running library is an error, found before a bootstrap
        // (a unique-id rendezvous, an MPI duplicate) is built for nothing.
        if flags & INIT_WITH_SHMEM != 0 {
            return match super::teams::init_nv_teams(func) {
                Ok(()) => code::SUCCESS,
                Err(e) => super::fail(func, code::INTERNAL, e),
            };
        }
        return super::fail(
            func,
            code::INVALID_VALUE,
            Error::new(crate::error::me(), func, ErrorKind::AlreadyInitialized),
        );
    }
    // SAFETY: forwarded.
    let r = unsafe { bootstrap_of(func, flags, attr) }.and_then(|boot| init(func, ThreadLevel::Serialized, boot));
    match r {
        Ok(_) => code::SUCCESS,
        Err(e) => {
            let c = if matches!(e.kind, ErrorKind::InvalidArgument(_)) { code::INVALID_VALUE } else { code::INTERNAL };
            super::fail(func, c, e)
        }
    }
}

/// `nvshmemx_init_attr`: init with a unique id (`NVSHMEMX_INIT_WITH_UNIQUEID`), an MPI
/// communicator (`NVSHMEMX_INIT_WITH_MPI_COMM`), or the launcher's environment (no flag,
/// `NVSHMEMX_INIT_THREAD_PES`, `NVSHMEMX_INIT_WITH_SHMEM`). 0, or an error code after saying why.
///
/// # Safety
/// `attributes` must be NULL or point at an `nvshmemx_init_attr_t` set up as NVSHMEM says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_init_attr(flags: c_uint, attributes: *mut NvInitAttr) -> c_int {
    // SAFETY: forwarded.
    unsafe { init_attr("nvshmemx_init_attr", flags, attributes) }
}

/// `nvshmemx_hostlib_init_attr`: as `nvshmemx_init_attr` (there is one library here).
///
/// # Safety
/// As [`nvshmemx_init_attr`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_hostlib_init_attr(flags: c_uint, attr: *mut NvInitAttr) -> c_int {
    // SAFETY: forwarded.
    unsafe { init_attr("nvshmemx_hostlib_init_attr", flags, attr) }
}

fn needs_cuda(func: &'static str, what: &str) -> c_int {
    report(
        func,
        invalid(
            func,
            format!(
                "{what} needs the CUDA back end, which this build of oxshmem does not have (build it with the cuda \
                 feature and run on a GPU)"
            ),
        ),
    );
    code::NOT_SUPPORTED
}

/// `nvshmemx_cumodule_init` and the three others: the CUDA back end's
/// [`bind_code`](super::gpu::bind_code), 0 or an error code after saying why.
#[cfg(feature = "cuda")]
fn code_state(func: &'static str, code: oxshmem_device::cuda::LoadedCode, bind: bool) -> c_int {
    // SAFETY: the handle is the caller's (a live module or library, or NULL, refused).
    match unsafe { super::gpu::bind_code(func, code, bind) } {
        Ok(()) => code::SUCCESS,
        Err(e) => {
            let c = if matches!(e.kind, ErrorKind::InvalidArgument(_)) { code::INVALID_VALUE } else { code::INTERNAL };
            super::fail(func, c, e)
        }
    }
}

/// `nvshmemx_cumodule_init`: points the NVSHMEM device state of a CUDA module the program
/// loaded (`cuModuleLoadData` of code linked with `libnvshmem_device.a`) at this PE's, so its
/// kernels can call NVSHMEM. 0, or an error code after saying why (no CUDA back end, a NULL
/// module, a module without the device library, a driver error).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_cumodule_init(module: *mut c_void) -> c_int {
    #[cfg(feature = "cuda")]
    return code_state("nvshmemx_cumodule_init", oxshmem_device::cuda::LoadedCode::Module(module.cast()), true);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = module;
        needs_cuda("nvshmemx_cumodule_init", "initializing a CUDA module's NVSHMEM state")
    }
}

/// `nvshmemx_cumodule_finalize`: sets the module's device state back to null (its kernels can
/// no longer call NVSHMEM); see [`nvshmemx_cumodule_init`].
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_cumodule_finalize(module: *mut c_void) -> c_int {
    #[cfg(feature = "cuda")]
    return code_state("nvshmemx_cumodule_finalize", oxshmem_device::cuda::LoadedCode::Module(module.cast()), false);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = module;
        needs_cuda("nvshmemx_cumodule_finalize", "finalizing a CUDA module's NVSHMEM state")
    }
}

/// `nvshmemx_culibrary_init`: [`nvshmemx_cumodule_init`] for a CUDA library
/// (`cuLibraryLoadData`, CUDA 12.0 and later; its globals through `cuLibraryGetGlobal`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_culibrary_init(library: *mut c_void) -> c_int {
    #[cfg(feature = "cuda")]
    return code_state("nvshmemx_culibrary_init", oxshmem_device::cuda::LoadedCode::Library(library.cast()), true);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = library;
        needs_cuda("nvshmemx_culibrary_init", "initializing a CUDA library's NVSHMEM state")
    }
}

/// `nvshmemx_culibrary_finalize`: [`nvshmemx_cumodule_finalize`] for a CUDA library.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_culibrary_finalize(library: *mut c_void) -> c_int {
    #[cfg(feature = "cuda")]
    return code_state("nvshmemx_culibrary_finalize", oxshmem_device::cuda::LoadedCode::Library(library.cast()), false);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = library;
        needs_cuda("nvshmemx_culibrary_finalize", "finalizing a CUDA library's NVSHMEM state")
    }
}

/// `nvshmemx_qp_create`: queue pairs for a GPU kernel's own use — needs the CUDA back end.
///
/// # Safety
/// `out_qp_array` must be NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_qp_create(_num_qps: c_int, out_qp_array: *mut *mut c_int) -> c_int {
    if !out_qp_array.is_null() {
        // SAFETY: the caller's contract; checked non-null.
        unsafe { out_qp_array.write(std::ptr::null_mut()) };
    }
    needs_cuda("nvshmemx_qp_create", "creating queue pairs for GPU kernels")
}
