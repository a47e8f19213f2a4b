//! `shmem_team_t` and `shmem_ctx_t`: opaque values that name a record slot and its generation.
//!
//! Records live in arenas of fixed-size chunks of slots that are never freed. A handle is a
//! slot's address with the slot's generation in its top 16 bits; it is valid when its address
//! is a slot of an arena chunk — checked by address range, without reading through it — and
//! the slot is live with the handle's generation. Destroying a team or context marks its slot
//! and queues it for reuse (after a quarantine, under a new generation), so a handle used
//! afterwards, even once its slot holds another record, or a value that was never a handle,
//! gets a clear error instead of a crash, and a program may create and destroy any number of
//! teams and contexts. Lookups take no lock: chunk pointers are published once, and a slot's
//! state after its record.
//!
//! `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` are exported variables set by `shmem_init`;
//! `SHMEM_CTX_DEFAULT` is an exported variable whose value is a distinguished address meaning
//! "the default context", which the routines without a context argument also use. The common
//! case, an operation on the default context, costs one pointer comparison.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ffi::c_int;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU16, AtomicUsize, Ordering};
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

/// `SHMEMX_TEAM_NODE` (`shmemx.h`): the PEs of this node, set by `shmem_init`. A node here is
/// the set of PEs that share memory, so it is the team of `SHMEM_TEAM_SHARED` (the same handle).
#[unsafe(no_mangle)]
pub static SHMEMX_TEAM_NODE: AtomicPtr<OpaqueTeam> = AtomicPtr::new(null_mut());

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

/// Bits of a handle that hold its slot's generation: the top 16 of the 64. A handle is the
/// slot's address (below 2^48 in every user address space this library runs in) with the
/// generation of the record it was made for above it; a slot's generation changes each time
/// the slot is reused, so a handle kept after its team or context was destroyed names the
/// slot's old generation and is refused ("was destroyed") even after the slot holds a new
/// record. Generations run from 1 to 65535 and wrap; a destroyed slot goes to the back of a
/// FIFO of at least [`QUARANTINE`] slots before it is reused, so a stale handle could only be
/// taken for a new one after some 67 million destroys of other handles in between.
const GEN_SHIFT: u32 = 48;
const ADDR_MASK: usize = (1 << GEN_SHIFT) - 1;

/// How many destroyed slots wait before the oldest is reused. Besides spacing out the
/// generations of one slot, it keeps a record alive a long while after its destroy, for a
/// program that (wrongly) uses a handle in one thread while another destroys it: the record
/// it read stays valid during that call.
const QUARANTINE: usize = 1024;

/// One record and its state.
#[derive(Debug)]
pub(crate) struct Slot<T> {
    state: AtomicU8,
    /// The generation of the record it holds (1 to 65535).
    generation: AtomicU16,
    /// The record: a leaked `Box`, replaced (and the old one freed) when the slot is reused.
    value: AtomicPtr<T>,
    /// Its index in its arena.
    index: usize,
}

/// Records per chunk.
const CHUNK: usize = 64;
/// Chunks per arena: at most `CHUNK * MAX_CHUNKS` teams (and as many contexts) alive or in
/// quarantine at once; creation fails with an error past that. Destroyed handles are reused,
/// so a program may create and destroy any number of them over its life.
const MAX_CHUNKS: usize = 256;

/// An arena of records whose slots are reused after a destroy.
#[derive(Debug)]
pub(crate) struct Arena<T: 'static> {
    chunks: [AtomicPtr<Slot<T>>; MAX_CHUNKS],
    next: AtomicUsize,
    /// Destroyed slots, oldest first.
    free: Mutex<VecDeque<usize>>,
}

/// The types that live in an arena, and which arena.
pub(crate) trait Pooled: Send + Sync + Sized + 'static {
    /// The arena of this type's records.
    fn arena() -> &'static Arena<Self>;
}

impl<T: Send + Sync + 'static> Arena<T> {
    const fn new() -> Self {
        Arena {
            chunks: [const { AtomicPtr::new(null_mut()) }; MAX_CHUNKS],
            next: AtomicUsize::new(0),
            free: Mutex::new(VecDeque::new()),
        }
    }

    /// The slot of index `i`, creating its chunk if need be.
    fn slot_at(&self, i: usize) -> &'static Slot<T> {
        let c = i / CHUNK;
        let mut base = self.chunks[c].load(Ordering::Acquire);
        if base.is_null() {
            let chunk: &'static mut [Slot<T>] = Box::leak(
                (0..CHUNK)
                    .map(|k| Slot {
                        state: AtomicU8::new(EMPTY),
                        generation: AtomicU16::new(0),
                        value: AtomicPtr::new(null_mut()),
                        index: c * CHUNK + k,
                    })
                    .collect(),
            );
            let fresh = chunk.as_mut_ptr();
            assert!(
                (fresh as usize + CHUNK * size_of::<Slot<T>>()) >> GEN_SHIFT == 0,
                "oxshmem: a handle record lies above 2^48 ({fresh:p}); handles cannot carry a generation"
            );
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
        unsafe { &*base.add(i % CHUNK) }
    }

    /// Stores `value` in a slot: the oldest destroyed one once [`QUARANTINE`] wait, else a
    /// new one, else (every slot taken) the oldest destroyed one; `None` when none is free.
    fn alloc(&self, value: T) -> Option<&'static Slot<T>> {
        let reuse = {
            let mut free = self.free.lock();
            if free.len() > QUARANTINE || self.next.load(Ordering::Relaxed) >= CHUNK * MAX_CHUNKS {
                free.pop_front()
            } else {
                None
            }
        };
        let i = match reuse {
            Some(i) => i,
            None => {
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                if i >= CHUNK * MAX_CHUNKS {
                    self.next.fetch_sub(1, Ordering::Relaxed);
                    return self.free.lock().pop_front().map(|i| self.install(i, value));
                }
                i
            }
        };
        Some(self.install(i, value))
    }

    /// Puts `value` in slot `i` (new, or destroyed and out of every list) under a new
    /// generation.
    fn install(&self, i: usize, value: T) -> &'static Slot<T> {
        let slot = self.slot_at(i);
        let g = slot.generation.load(Ordering::Relaxed);
        slot.generation.store(if g == u16::MAX { 1 } else { g + 1 }, Ordering::Relaxed);
        let old = slot.value.swap(Box::into_raw(Box::new(value)), Ordering::AcqRel);
        slot.state.store(LIVE, Ordering::Release);
        if !old.is_null() {
            // SAFETY: `old` is the Box this slot held for a record destroyed at least
            // QUARANTINE destroys ago (or when every slot was taken); no handle reaches it.
            drop(unsafe { Box::from_raw(old) });
        }
        slot
    }

    /// The slot at address `p` (a handle without its generation), if `p` is one.
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
    /// That team's generation in its slot (the slot may hold another team later).
    team_generation: u16,
    /// The creating thread, for a `SHMEM_CTX_PRIVATE` context.
    pub(crate) owner: Option<ThreadId>,
}

impl CtxRec {
    /// The record of context `ctx`, created on the team in `team` now.
    pub(crate) fn new(ctx: Ctx, team: &'static Slot<TeamRec>, owner: Option<ThreadId>) -> Self {
        CtxRec { ctx, team, team_generation: team.generation(), owner }
    }

    /// The handle of the team it was created on (which may have been destroyed since).
    pub(crate) fn team_handle(&self) -> ShmemTeam {
        ((self.team as *const Slot<TeamRec> as usize) | usize::from(self.team_generation) << GEN_SHIFT) as ShmemTeam
    }
}

static TEAMS: Arena<TeamRec> = Arena::new();
static CTXS: Arena<CtxRec> = Arena::new();

impl Pooled for TeamRec {
    fn arena() -> &'static Arena<Self> {
        &TEAMS
    }
}

impl Pooled for CtxRec {
    fn arena() -> &'static Arena<Self> {
        &CTXS
    }
}

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
    let generation = (p >> GEN_SHIFT) as u16;
    match arena.find(p & ADDR_MASK).filter(|_| generation != 0) {
        Some(slot) => match slot.state.load(Ordering::Acquire) {
            // A handle of an older generation: its record was destroyed and the slot reused.
            _ if slot.generation.load(Ordering::Acquire) != generation => {
                Err(handle_error(func, what, p, Some(DESTROYED)))
            }
            LIVE => Ok(slot),
            s => Err(handle_error(func, what, p, Some(s))),
        },
        None => Err(handle_error(func, what, p, None)),
    }
}

impl<T: Pooled> Slot<T> {
    /// The record of a live slot (or of one destroyed less than [`QUARANTINE`] destroys ago).
    pub(crate) fn get(&self) -> &T {
        let p = self.value.load(Ordering::Acquire);
        assert!(!p.is_null(), "a live slot holds its record");
        // SAFETY: `p` is the leaked Box of this slot's record, freed only when the slot is
        // reused, QUARANTINE destroys after this one was destroyed.
        unsafe { &*p }
    }

    /// The generation of the record it holds now.
    pub(crate) fn generation(&self) -> u16 {
        self.generation.load(Ordering::Acquire)
    }

    /// Whether the record of generation `generation` is gone: destroyed, or replaced.
    fn gone(&self, generation: u16) -> bool {
        self.state.load(Ordering::Acquire) != LIVE || self.generation() != generation
    }

    /// The handle of the record it holds now: its address and generation.
    fn raw_handle(&'static self) -> usize {
        (self as *const Slot<T> as usize) | usize::from(self.generation()) << GEN_SHIFT
    }

    /// Marks the slot destroyed: its handle is invalid from now on, and the slot waits in its
    /// arena's quarantine for reuse.
    pub(crate) fn destroy(&self) {
        if self.state.swap(DESTROYED, Ordering::AcqRel) == LIVE {
            T::arena().free.lock().push_back(self.index);
        }
    }
}

impl Slot<TeamRec> {
    /// The handle of this team.
    pub(crate) fn handle(&'static self) -> ShmemTeam {
        self.raw_handle() as ShmemTeam
    }
}

/// The live team `p` refers to, or the error naming what is wrong with `p`.
pub(crate) fn team(func: &'static str, p: ShmemTeam) -> Result<&'static Slot<TeamRec>> {
    lookup(&TEAMS, func, "team", p as usize)
}

/// A handle for a new team.
pub(crate) fn new_team(func: &'static str, team: Team) -> Result<ShmemTeam> {
    let members = team.members()?.into_boxed_slice();
    TEAMS
        .alloc(TeamRec { team, members })
        .map(Slot::handle)
        .ok_or_else(|| invalid(func, format!("too many teams: at most {} can exist at once", CHUNK * MAX_CHUNKS)))
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
    let slot = CTXS.alloc(rec).inspect(|s| {
        let rec = s.get();
        if rec.owner.is_some() {
            crate::ctx_owner::created(rec as *const CtxRec as usize);
        }
    });
    slot.map(|s| s.raw_handle() as ShmemCtx)
        .ok_or_else(|| invalid(func, format!("too many contexts: at most {} can exist at once", CHUNK * MAX_CHUNKS)))
}

thread_local! {
    static THREAD: ThreadId = std::thread::current().id();
}

impl CtxRec {
    /// The world PE number of this context's team PE `pe`.
    fn world_pe(&self, func: &'static str, pe: c_int) -> Result<c_int> {
        // A registered gettid function names the owner (see `ctx_owner`); else the system
        // thread.
        if let Some(owner) = self.owner
            && !crate::ctx_owner::owns(self as *const CtxRec as usize).unwrap_or_else(|| THREAD.with(|t| *t) == owner)
        {
            return Err(invalid(func, "a SHMEM_CTX_PRIVATE context is used by a thread other than its creator"));
        }
        if self.team.gone(self.team_generation) {
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
    // A node here is the set of PEs that share memory: the same team.
    SHMEMX_TEAM_NODE.store(SHMEM_TEAM_SHARED.load(Ordering::Acquire), Ordering::Release);
    Ok(())
}

/// The runtime's `Shmem` handle (the C ABI initializes through the raw API).
fn shmem_handle(func: &'static str) -> Result<oxshmem_rt::Shmem> {
    oxshmem_rt::current().map_err(|mut e| {
        e.func = func;
        e
    })
}
