//! `shmem_team_t` and `shmem_ctx_t`: opaque pointers to records that are never freed.
//!
//! Records live in append-only arenas of fixed-size chunks. A handle is valid when it points at
//! a record slot of an arena chunk — checked by address range, without reading through the
//! pointer — and the slot is live; destroying a team or context only marks its slot, so a handle
//! used afterwards, or a pointer that was never a handle, gets a clear error instead of a
//! crash. Lookups take no lock: chunk pointers are published once, and a slot's state after its
//! record.
//!
//! `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` are exported variables set by `shmem_init`;
//! `SHMEM_CTX_DEFAULT` is an exported variable whose value is a distinguished address meaning
//! "the default context", which the routines without a context argument also use. The common
//! case, an operation on the default context, costs one pointer comparison.

use std::ffi::c_int;
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::thread::ThreadId;

use oxshmem_rt::{Ctx, Error, ErrorKind, Result, Team};

use crate::error::{invalid, me};

/// What `shmem_team_t` points to, as C sees it.
#[repr(C)]
#[derive(Debug)]
pub struct OpaqueTeam {
    _private: [u8; 0],
}

/// What `shmem_ctx_t` points to, as C sees it.
#[repr(C)]
#[derive(Debug)]
pub struct OpaqueCtx {
    _private: [u8; 0],
}

/// `shmem_team_t`.
pub type ShmemTeam = *mut OpaqueTeam;
/// `shmem_ctx_t`.
pub type ShmemCtx = *mut OpaqueCtx;

/// `shmem_team_config_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TeamConfig {
    /// Contexts the program will create on the team.
    pub num_contexts: c_int,
}

/// `SHMEM_TEAM_WORLD`: set by `shmem_init`.
#[unsafe(no_mangle)]
pub static SHMEM_TEAM_WORLD: AtomicPtr<OpaqueTeam> = AtomicPtr::new(null_mut());

/// `SHMEM_TEAM_SHARED`: set by `shmem_init`.
#[unsafe(no_mangle)]
pub static SHMEM_TEAM_SHARED: AtomicPtr<OpaqueTeam> = AtomicPtr::new(null_mut());

/// The address that stands for the default context.
static DEFAULT_CTX: u8 = 0;

/// `SHMEM_CTX_DEFAULT`.
#[unsafe(no_mangle)]
pub static SHMEM_CTX_DEFAULT: AtomicPtr<OpaqueCtx> = AtomicPtr::new((&raw const DEFAULT_CTX).cast_mut().cast());

/// The default context's handle (the value of `SHMEM_CTX_DEFAULT`).
#[inline(always)]
pub(crate) fn default_ctx() -> ShmemCtx {
    (&raw const DEFAULT_CTX).cast_mut().cast()
}

const EMPTY: u8 = 0;
const LIVE: u8 = 1;
const DESTROYED: u8 = 2;

/// One record and its state.
#[derive(Debug)]
pub(crate) struct Slot<T> {
    state: AtomicU8,
    value: OnceLock<T>,
}

/// Records per chunk.
const CHUNK: usize = 64;
/// Chunks per arena: at most `CHUNK * MAX_CHUNKS` teams (and as many contexts) over the life
/// of the program; creation fails with an error past that.
const MAX_CHUNKS: usize = 256;

/// An append-only arena of records.
#[derive(Debug)]
struct Arena<T: 'static> {
    chunks: [AtomicPtr<Slot<T>>; MAX_CHUNKS],
    next: AtomicUsize,
}

impl<T: Send + Sync + 'static> Arena<T> {
    const fn new() -> Self {
        Arena { chunks: [const { AtomicPtr::new(null_mut()) }; MAX_CHUNKS], next: AtomicUsize::new(0) }
    }

    /// Stores `value` in a new slot; `None` when the arena is full.
    fn alloc(&self, value: T) -> Option<&'static Slot<T>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let c = i / CHUNK;
        if c >= MAX_CHUNKS {
            return None;
        }
        let mut base = self.chunks[c].load(Ordering::Acquire);
        if base.is_null() {
            let chunk: &'static mut [Slot<T>] =
                Box::leak((0..CHUNK).map(|_| Slot { state: AtomicU8::new(EMPTY), value: OnceLock::new() }).collect());
            let fresh = chunk.as_mut_ptr();
            base = match self.chunks[c].compare_exchange(null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => fresh,
                Err(winner) => {
                    // SAFETY: `fresh` came from the Box leaked just above and was never published.
                    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, CHUNK)) });
                    winner
                }
            };
        }
        // SAFETY: `base` points to a leaked chunk of CHUNK slots that is never freed.
        let slot: &'static Slot<T> = unsafe { &*base.add(i % CHUNK) };
        // Index i is this call's alone, so the slot is empty.
        let _ = slot.value.set(value);
        slot.state.store(LIVE, Ordering::Release);
        Some(slot)
    }

    /// The slot at address `p`, if `p` is one.
    fn find(&self, p: usize) -> Option<&'static Slot<T>> {
        let size = size_of::<Slot<T>>();
        let used = self.next.load(Ordering::Acquire).div_ceil(CHUNK).min(MAX_CHUNKS);
        for c in &self.chunks[..used] {
            let base = c.load(Ordering::Acquire) as usize;
            let off = p.wrapping_sub(base);
            if base != 0 && off < CHUNK * size && off.is_multiple_of(size) {
                // SAFETY: `p` is the address of one of the chunk's slots, which are never freed.
                return Some(unsafe { &*(p as *const Slot<T>) });
            }
        }
        None
    }
}

/// A team, as its handle holds it.
#[derive(Debug)]
pub(crate) struct TeamRec {
    pub(crate) team: Team,
    /// World PE of each member, in team order.
    pub(crate) members: Box<[usize]>,
}

/// A context other than the default one.
#[derive(Debug)]
pub(crate) struct CtxRec {
    pub(crate) ctx: Ctx,
    /// The team it was created on.
    pub(crate) team: &'static Slot<TeamRec>,
    /// The creating thread, for a `SHMEM_CTX_PRIVATE` context.
    pub(crate) owner: Option<ThreadId>,
}

static TEAMS: Arena<TeamRec> = Arena::new();
static CTXS: Arena<CtxRec> = Arena::new();

fn handle_error(func: &'static str, what: &str, p: usize, state: Option<u8>) -> Error {
    match state {
        Some(DESTROYED) => invalid(func, format!("{what} was destroyed")),
        // The macros are spelled SHMEM_TEAM_INVALID and SHMEM_CTX_INVALID.
        _ if p == 0 => {
            let name = if what == "context" { "CTX" } else { "TEAM" };
            invalid(func, format!("the {what} is SHMEM_{name}_INVALID"))
        }
        _ => invalid(func, format!("{p:#x} is not a {what} handle (never returned by this library)")),
    }
}

fn lookup<T: Send + Sync>(arena: &Arena<T>, func: &'static str, what: &str, p: usize) -> Result<&'static Slot<T>> {
    if p == 0 {
        // Before init every team variable is still SHMEM_TEAM_INVALID: say what is wrong.
        oxshmem_rt::raw::my_pe()?;
    }
    match arena.find(p) {
        Some(slot) => match slot.state.load(Ordering::Acquire) {
            LIVE => Ok(slot),
            s => Err(handle_error(func, what, p, Some(s))),
        },
        None => Err(handle_error(func, what, p, None)),
    }
}

impl<T> Slot<T> {
    /// The record of a live slot.
    pub(crate) fn get(&self) -> &T {
        self.value.get().expect("a live slot holds its record")
    }

    fn destroyed(&self) -> bool {
        self.state.load(Ordering::Acquire) == DESTROYED
    }

    /// Marks the slot destroyed: its handle is invalid from now on.
    pub(crate) fn destroy(&self) {
        self.state.store(DESTROYED, Ordering::Release);
    }
}

impl Slot<TeamRec> {
    /// The handle of this team.
    pub(crate) fn handle(&'static self) -> ShmemTeam {
        (self as *const Slot<TeamRec>).cast_mut().cast()
    }
}

/// The live team `p` refers to, or the error naming what is wrong with `p`.
pub(crate) fn team(func: &'static str, p: ShmemTeam) -> Result<&'static Slot<TeamRec>> {
    lookup(&TEAMS, func, "team", p as usize)
}

/// A handle for a new team.
pub(crate) fn new_team(func: &'static str, team: Team) -> Result<ShmemTeam> {
    let members = team.members()?.into_boxed_slice();
    TEAMS.alloc(TeamRec { team, members }).map(Slot::handle).ok_or_else(|| {
        invalid(func, format!("too many teams: at most {} can be created over a program's life", CHUNK * MAX_CHUNKS))
    })
}

/// The context `p` refers to: `None` for the default context.
pub(crate) fn ctx(func: &'static str, p: ShmemCtx) -> Result<Option<&'static CtxRec>> {
    if p == default_ctx() {
        return Ok(None);
    }
    lookup(&CTXS, func, "context", p as usize).map(|s| Some(s.get()))
}

/// The live context slot of `p` (not the default context).
pub(crate) fn ctx_slot(func: &'static str, p: ShmemCtx) -> Result<&'static Slot<CtxRec>> {
    lookup(&CTXS, func, "context", p as usize)
}

/// A handle for a new context.
pub(crate) fn new_ctx(func: &'static str, rec: CtxRec) -> Result<ShmemCtx> {
    let slot = CTXS.alloc(rec).inspect(|s| crate::ext::ctx_created(s.get()));
    slot.map(|s| (s as *const Slot<CtxRec>).cast_mut().cast()).ok_or_else(|| {
        invalid(func, format!("too many contexts: at most {} can be created over a program's life", CHUNK * MAX_CHUNKS))
    })
}

thread_local! {
    static THREAD: ThreadId = std::thread::current().id();
}

impl CtxRec {
    /// The world PE number of this context's team PE `pe`.
    fn world_pe(&self, func: &'static str, pe: c_int) -> Result<c_int> {
        // A registered gettid function names the owner (see `ext`); else the system thread.
        if let Some(owner) = self.owner
            && !crate::ext::gettid_owner(self).unwrap_or_else(|| THREAD.with(|t| *t) == owner)
        {
            return Err(invalid(func, "a SHMEM_CTX_PRIVATE context is used by a thread other than its creator"));
        }
        if self.team.destroyed() {
            return Err(invalid(func, "the context's team was destroyed"));
        }
        let members = &self.team.get().members;
        usize::try_from(pe)
            .ok()
            .and_then(|i| members.get(i))
            .map(|&w| w as c_int)
            .ok_or_else(|| Error::new(me(), func, ErrorKind::PeOutOfRange { pe: i128::from(pe), n_pes: members.len() }))
    }
}

/// The world PE number of PE `pe` of context `ctx`'s team (`pe` itself on the default
/// context, whose team is the world; the runtime checks its range).
#[inline(always)]
pub(crate) fn ctx_pe(func: &'static str, ctx: ShmemCtx, pe: c_int) -> Result<c_int> {
    if ctx == default_ctx() { Ok(pe) } else { ctx_pe_slow(func, ctx, pe) }
}

#[inline(never)]
fn ctx_pe_slow(func: &'static str, ctx: ShmemCtx, pe: c_int) -> Result<c_int> {
    lookup(&CTXS, func, "context", ctx as usize)?.get().world_pe(func, pe)
}

/// Sets `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` (after the runtime's init).
pub(crate) fn init_teams(func: &'static str) -> Result<()> {
    let shmem = shmem_handle(func)?;
    SHMEM_TEAM_WORLD.store(new_team(func, shmem.team_world())?, Ordering::Release);
    SHMEM_TEAM_SHARED.store(new_team(func, shmem.team_shared())?, Ordering::Release);
    crate::ext::init_team_node(SHMEM_TEAM_SHARED.load(Ordering::Acquire));
    Ok(())
}

/// The runtime's `Shmem` handle (the C ABI initializes through the raw API).
fn shmem_handle(func: &'static str) -> Result<oxshmem_rt::Shmem> {
    oxshmem_rt::current().map_err(|mut e| {
        e.func = func;
        e
    })
}
