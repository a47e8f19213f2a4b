//! Library setup, exit and query: `shmem_init*`, `shmem_finalize`, `shmem_my_pe`, … and the
//! deprecated `start_pes`, `_my_pe`, `_num_pes`.
//!
//! Every initialization goes through `oxshmem::raw::init_with_static_data`: in a C program,
//! global and static variables are symmetric objects, so the executable's data segment must
//! become a symmetric segment before the program can start threads.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use oxshmem_rt::{Result, ThreadLevel, raw};

use crate::error::{fatal, invalid, ok, report};
use crate::handles::{self, ShmemTeam};

/// The thread level provided at init (-1 before).
static THREAD_LEVEL: AtomicI32 = AtomicI32::new(-1);

fn init(func: &'static str, level: ThreadLevel) -> Result<ThreadLevel> {
    init_with(func, level, None)
}

/// The C library's logging: the stderr formatter with `OXSHMEM_LOG`'s filter (or
/// `SHMEM_DEBUG`'s, `NVSHMEM_DEBUG`'s), `warn` when none is set (`oxshmem_bootstrap::logging`).
pub(crate) fn install_logging() {
    oxshmem_bootstrap::logging::install(Some("warn"));
}

/// Initializes the runtime over `boot` (else the environment's bootstrap) and sets the team
/// handles: every init of the C ABI, OpenSHMEM's and NVSHMEM's, comes here.
pub(crate) fn init_with(
    func: &'static str,
    level: ThreadLevel,
    boot: Option<Box<dyn oxshmem_bootstrap::Bootstrap>>,
) -> Result<ThreadLevel> {
    install_logging();
    crate::longdouble::install_hooks();
    // The device layer's variables join the runtime's table before its init, which so checks
    // them and lists them in SHMEM_INFO (the CUDA back end reads them after init).
    #[cfg(feature = "cuda")]
    oxshmem_rt::config::register(&oxshmem_device::config::LAYER);
    let provided = match boot {
        Some(b) => raw::init_with_bootstrap(level, b),
        None => raw::init_with_static_data(level),
    }
    .map_err(|mut e| {
        e.func = func;
        e
    })?;
    handles::init_teams(func)?;
    THREAD_LEVEL.store(provided as i32, Ordering::Release);
    Ok(provided)
}

/// `shmem_init`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_init() {
    const F: &str = "shmem_init";
    ok(F, init(F, ThreadLevel::Single).map(drop));
}

/// `shmem_init_thread`: 0 on success, with the level provided in `*provided`.
///
/// # Safety
/// `provided` must be NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    const F: &str = "shmem_init_thread";
    let r = ThreadLevel::from_c(requested)
        .ok_or_else(|| {
            invalid(F, format!("thread level {requested} is not SHMEM_THREAD_SINGLE..SHMEM_THREAD_MULTIPLE"))
        })
        .and_then(|level| init(F, level));
    match r {
        Ok(level) => {
            if !provided.is_null() {
                // SAFETY: the caller's contract.
                unsafe { provided.write(level as c_int) };
            }
            0
        }
        Err(e) => {
            report(F, e);
            -1
        }
    }
}

/// `start_pes` (deprecated): `shmem_init`; `npes` is ignored, as the specification says. The
/// specification also says a `start_pes` program need not call `shmem_finalize`: the library
/// is finalized implicitly when the program exits, which an `atexit` handler does.
#[unsafe(no_mangle)]
pub extern "C" fn start_pes(_npes: c_int) {
    const F: &str = "start_pes";
    ok(F, init(F, ThreadLevel::Single).map(drop));
    // SAFETY: registering a plain extern "C" fn with no captured state.
    unsafe { atexit(implicit_finalize) };
}

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> c_int;
}

/// The implicit `shmem_finalize` of `start_pes` programs (collective, like an explicit one).
extern "C" fn implicit_finalize() {
    // Not while the job is being ended (shmem_global_exit, a fatal error): the exit that runs
    // this handler is the abort's own.
    if oxshmem_rt::world::initialized() && !oxshmem_rt::world::aborting() {
        let _ = raw::finalize();
    }
}

/// `shmem_query_thread`.
///
/// # Safety
/// `provided` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
    // SAFETY: forwarded.
    unsafe { query_thread("shmem_query_thread", provided) }
}

/// `shmem_query_thread` and `nvshmem_query_thread`, naming `func`.
///
/// # Safety
/// `provided` must be valid for a write.
pub(crate) unsafe fn query_thread(func: &'static str, provided: *mut c_int) {
    let level = THREAD_LEVEL.load(Ordering::Acquire);
    if let Err(e) = raw::my_pe() {
        fatal(func, e);
    }
    if provided.is_null() {
        fatal(func, invalid(func, "provided is NULL"));
    }
    // SAFETY: the caller's contract; checked non-null.
    unsafe { provided.write(level) };
}

/// What must end before the runtime does, registered by the layer that started it
/// ([`before_finalize`]): the CUDA back end, which `nvshmem_init` sets up.
static BEFORE_FINALIZE: std::sync::OnceLock<fn() -> Result<()>> = std::sync::OnceLock::new();

/// Registers `f` to run at every finalize of the C ABI ([`finalize`]) before the runtime's
/// (the first registration stays; `f` must do nothing when there is nothing to end).
pub(crate) fn before_finalize(f: fn() -> Result<()>) {
    let _ = BEFORE_FINALIZE.set(f);
}

/// Every finalize of the C ABI, OpenSHMEM's and NVSHMEM's: what [`before_finalize`]
/// registered, then the runtime.
pub(crate) fn finalize() -> Result<()> {
    BEFORE_FINALIZE.get().map_or(Ok(()), |f| f()).and_then(|()| raw::finalize())
}

/// `shmem_finalize`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_finalize() {
    ok("shmem_finalize", finalize());
}

/// `shmem_global_exit`: ends the whole job with `status`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_global_exit(status: c_int) -> ! {
    raw::global_exit(status)
}

/// `shmem_my_pe`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_my_pe() -> c_int {
    ok("shmem_my_pe", raw::my_pe()) as c_int
}

/// `shmem_n_pes`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_n_pes() -> c_int {
    ok("shmem_n_pes", raw::n_pes()) as c_int
}

/// `_my_pe` (deprecated).
#[unsafe(no_mangle)]
pub extern "C" fn _my_pe() -> c_int {
    ok("_my_pe", raw::my_pe()) as c_int
}

/// `_num_pes` (deprecated).
#[unsafe(no_mangle)]
pub extern "C" fn _num_pes() -> c_int {
    ok("_num_pes", raw::n_pes()) as c_int
}

/// `shmem_pe_accessible`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_pe_accessible(pe: c_int) -> c_int {
    raw::pe_accessible(pe).into()
}

/// `shmem_addr_accessible`.
///
/// # Safety
/// None: `addr` is only compared with the symmetric segments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    raw::addr_accessible(addr.cast(), pe).into()
}

/// `shmem_ptr`: a local pointer to `dest` on `pe`, or NULL.
///
/// # Safety
/// None: `dest` is only translated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    raw::ptr(dest.cast(), pe).cast()
}

/// `shmem_team_ptr`: `shmem_ptr` with `pe` numbered in `team`; NULL for `SHMEM_TEAM_INVALID`.
///
/// # Safety
/// None: `dest` is only translated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_ptr(team: ShmemTeam, dest: *const c_void, pe: c_int) -> *mut c_void {
    const F: &str = "shmem_team_ptr";
    if team.is_null() {
        return std::ptr::null_mut();
    }
    match handles::team(F, team) {
        Ok(t) => {
            let members = &t.get().members;
            match usize::try_from(pe).ok().and_then(|i| members.get(i)) {
                Some(&w) => raw::ptr(dest.cast(), w as c_int).cast(),
                None => std::ptr::null_mut(),
            }
        }
        Err(e) => {
            report(F, e);
            std::ptr::null_mut()
        }
    }
}

/// `shmem_info_get_version`.
///
/// # Safety
/// `major` and `minor` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    const F: &str = "shmem_info_get_version";
    if major.is_null() || minor.is_null() {
        fatal(F, invalid(F, "major or minor is NULL"));
    }
    let (ma, mi) = oxshmem_rt::info_get_version();
    // SAFETY: the caller's contract; checked non-null.
    unsafe {
        major.write(ma as c_int);
        minor.write(mi as c_int);
    }
}

/// `shmem_info_get_name`: the vendor string, NUL-terminated, at most `SHMEM_MAX_NAME_LEN`
/// bytes with the NUL.
///
/// # Safety
/// `name` must be valid for `SHMEM_MAX_NAME_LEN` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    // SAFETY: forwarded.
    unsafe { write_name("shmem_info_get_name", name, oxshmem_rt::info_get_name()) }
}

/// Writes `text` to `name`, NUL-terminated, at most `SHMEM_MAX_NAME_LEN` (= NVSHMEM's
/// `NVSHMEM_MAX_NAME_LEN`, 256) bytes with the NUL; a NULL `name` ends the job naming `func`.
///
/// # Safety
/// `name` must be NULL or valid for 256 bytes of writes.
pub(crate) unsafe fn write_name(func: &'static str, name: *mut c_char, text: &str) {
    /// `SHMEM_MAX_NAME_LEN` (checked against the header by the unit tests).
    const MAX_NAME_LEN: usize = 256;
    if name.is_null() {
        fatal(func, invalid(func, "name is NULL"));
    }
    let s = text.as_bytes();
    let n = s.len().min(MAX_NAME_LEN - 1);
    // SAFETY: the caller's contract: name holds MAX_NAME_LEN bytes; n + 1 <= that.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), name.cast::<u8>(), n);
        name.add(n).write(0);
    }
}
