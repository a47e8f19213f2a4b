//! The process-wide state of the runtime: where it is in its life ([`Phase`]), the runtime
//! itself once an init has succeeded, and what error messages and the launcher need before
//! and after that (this PE's number, a failed init's launcher connection, whether the job is
//! being ended).
//!
//! The runtime lives in a `std::sync::OnceLock` and is never dropped: an init succeeds at most
//! once per process (init after finalize fails), handles such as teams stay valid objects
//! after finalize, and a thread racing with finalize must not see it freed. Operations get it
//! through [`running`], which fails unless the phase is [`Phase::Running`].

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU64, Ordering};

use oxshmem_bootstrap::Bootstrap;
use parking_lot::Mutex;

use super::Runtime;
use crate::error::{Error, ErrorKind, Result};

/// Where this process's runtime is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Phase {
    /// No init has succeeded yet. A failed init comes back here, and may be tried again.
    Uninitialized = 0,
    /// A thread is running init.
    Initializing = 1,
    /// Init succeeded and finalize has not run: operations run.
    Running = 2,
    /// Finalize ran; nothing but process exit may follow (init fails from here on).
    Finalized = 3,
}

impl Phase {
    fn from_bits(b: u8) -> Phase {
        match b {
            0 => Phase::Uninitialized,
            1 => Phase::Initializing,
            2 => Phase::Running,
            _ => Phase::Finalized,
        }
    }
}

/// The phase, and the runtime of the one init that succeeded (set once, before the phase
/// becomes [`Phase::Running`]).
struct World {
    phase: AtomicU8,
    runtime: OnceLock<Runtime>,
}

static WORLD: World = World { phase: AtomicU8::new(Phase::Uninitialized as u8), runtime: OnceLock::new() };

fn phase() -> Phase {
    Phase::from_bits(WORLD.phase.load(Ordering::Acquire))
}

/// The runtime in `WORLD` while the phase is [`Phase::Running`], null otherwise: every
/// operation starts with [`running`], and this makes its check one load and one compare (the
/// phase and the `OnceLock`'s own state are two of each, a few percent of an 8-byte
/// `put_nbi`, which costs about six cycles).
static RUNNING: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());

/// The running runtime, or the error `func` must report: not initialized, or finalized.
#[inline(always)]
pub(crate) fn running(func: &'static str) -> Result<&'static Runtime> {
    let p = RUNNING.load(Ordering::Acquire);
    if p.is_null() {
        return Err(not_running(func));
    }
    // SAFETY: RUNNING is null or points at the value of WORLD.runtime, a static OnceLock that
    // is set once and never dropped (publish); the Acquire load pairs with publish's Release
    // store, made after the value was set.
    Ok(unsafe { &*p })
}

/// The runtime of the init that succeeded, finalized or not: handles such as teams stay valid
/// objects after finalize (operations on them then fail through [`running`]). `None` only
/// before the first successful init.
pub(crate) fn ever_initialized() -> Option<&'static Runtime> {
    WORLD.runtime.get()
}

/// Whether the runtime is initialized and not finalized.
pub fn initialized() -> bool {
    phase() == Phase::Running
}

#[cold]
fn not_running(func: &'static str) -> Error {
    let kind = match phase() {
        Phase::Finalized => ErrorKind::Finalized,
        _ => ErrorKind::NotInitialized,
    };
    Error::new(pe_for_errors(), func, kind)
}

/// Starts an init: moves from [`Phase::Uninitialized`] to [`Phase::Initializing`], or says
/// which phase the runtime is in instead.
pub(super) fn begin_init() -> std::result::Result<(), Phase> {
    WORLD
        .phase
        .compare_exchange(Phase::Uninitialized as u8, Phase::Initializing as u8, Ordering::AcqRel, Ordering::Acquire)
        .map(drop)
        .map_err(Phase::from_bits)
}

/// Ends an init that failed: another may be tried.
pub(super) fn abandon_init() {
    WORLD.phase.store(Phase::Uninitialized as u8, Ordering::Release);
}

/// Ends an init that succeeded: publishes `rt` and enters [`Phase::Running`].
pub(super) fn publish(rt: Runtime) -> &'static Runtime {
    // begin_init admits one init at a time, and none after one succeeded.
    if WORLD.runtime.set(rt).is_err() {
        unreachable!("a second init succeeded");
    }
    let rt = WORLD.runtime.get().expect("just set");
    WORLD.phase.store(Phase::Running as u8, Ordering::Release);
    RUNNING.store(std::ptr::from_ref(rt).cast_mut(), Ordering::Release);
    rt
}

/// Moves from [`Phase::Running`] to [`Phase::Finalized`]; false if the runtime was not
/// running (another thread finalized it first).
pub(super) fn finalize() -> bool {
    let won = WORLD
        .phase
        .compare_exchange(Phase::Running as u8, Phase::Finalized as u8, Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    if won {
        RUNNING.store(std::ptr::null_mut(), Ordering::Release);
    }
    won
}

/// This PE's number once the bootstrap said it; `u64::MAX` before. Readable for error
/// messages even before init finishes.
static MY_PE: AtomicU64 = AtomicU64::new(u64::MAX);

/// Records this PE's number, as the bootstrap said it.
pub(super) fn set_my_pe(me: usize) {
    MY_PE.store(me as u64, Ordering::Relaxed);
}

/// The PE number to put in an error message: this PE's once the bootstrap said it, else the
/// rank the launcher put in the environment (`PMI_RANK`, `PMIX_RANK`, `OXSHMEM_UID_RANK`),
/// else [`crate::error::UNKNOWN_PE`] (`PE ?`): a process that fails before it knows its rank
/// must not claim to be PE 0.
pub fn pe_for_errors() -> usize {
    match MY_PE.load(Ordering::Relaxed) {
        u64::MAX => ["PMI_RANK", "PMIX_RANK", "OXSHMEM_UID_RANK"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok())
            .unwrap_or(crate::error::UNKNOWN_PE),
        pe => pe as usize,
    }
}

/// The launcher connection of an init in progress, kept when init fails. Dropping it would
/// close the connection, and a launcher takes a PMI connection closed before `finalize` for a
/// dead PE: Hydra kills the whole job at once, before any PE has printed why its init failed.
/// Kept, the PE reports its error and exits (or aborts through it, [`crate::raw::abort`]).
static INIT_BOOT: Mutex<Option<Arc<dyn Bootstrap>>> = Mutex::new(None);

/// Keeps `boot`, the launcher connection of the init in progress, until [`release_init_boot`].
pub(super) fn keep_init_boot(boot: Arc<dyn Bootstrap>) {
    *INIT_BOOT.lock() = Some(boot);
}

/// Init succeeded: the runtime holds the connection now.
pub(super) fn release_init_boot() {
    INIT_BOOT.lock().take();
}

/// The launcher connection of a failed init, if any (for [`crate::raw::abort`]).
pub(crate) fn failed_init_boot() -> Option<Arc<dyn Bootstrap>> {
    INIT_BOOT.lock().clone()
}

/// Set once this process is ending the job (`shmem_global_exit`, a fatal error).
static ABORTING: AtomicBool = AtomicBool::new(false);

/// Records that this process is ending the job.
pub(super) fn mark_aborting() {
    ABORTING.store(true, Ordering::Release);
}

/// Whether this process is ending the job: exit handlers must then do nothing collective (an
/// implicit `shmem_finalize` at exit would wait in a barrier for PEs that are being killed,
/// and could let them past a barrier of their own first).
pub fn aborting() -> bool {
    ABORTING.load(Ordering::Acquire)
}
