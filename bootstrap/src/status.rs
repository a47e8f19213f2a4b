//! The hang report's status table: where each PE of an `oshrun` job is, readable by `oshrun`
//! at any time without the PE's help (a PE that hangs, spins or is stopped cannot answer).
//!
//! `oshrun` creates one memfd of [`HEADER_BYTES`] plus [`SLOT_BYTES`] per PE ([`Table::create`];
//! nothing in `/dev/shm`), passes it to every PE and names it in [`FD_VAR`]. A PE maps it at
//! init ([`attach`]) and owns the slot of its rank. On entering a collective and when a wait
//! starts and stops blocking, the runtime writes its slot under a sequence lock ([`enter`],
//! [`wait_begin`], [`wait_end`]): which routine (a [`Routine`] code, named by
//! [`routine_name`]), team, collective sequence number, an argument (a PE, an address), since
//! when it waits and for whom. `oshrun` reads the slots ([`Table::read`], a bounded number of
//! tries) when the job times out and on `SIGQUIT`, and prints a line per PE
//! ([`Snapshot::describe`]).
//!
//! Cost: [`enter`] is a load and a branch when there is no table (Hydra, Slurm, a singleton),
//! else four plain stores into one cache line of this PE's own (sequence count, routine,
//! collective number, sequence count; measured at 1–2 ns) — no clock, no atomic
//! read-modify-write (unless the PE asked for `SHMEM_THREAD_MULTIPLE`, where the slot is taken
//! with a compare-and-swap and a write that finds it busy is dropped). Only waits that go past
//! their spinning phase ([`wait_begin`], [`wait_end`]) read the clock. Nothing is written on
//! leaving a routine that did not block: a slot says which routine a PE entered last, and
//! whether it is blocked in it now.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering, fence};

/// The environment variable that names the table's descriptor in each PE.
pub const FD_VAR: &str = "OXSHMEM_STATUS_FD";
/// Bytes of the table's header.
pub const HEADER_BYTES: usize = 64;
/// Bytes of each PE's slot.
pub const SLOT_BYTES: usize = 64;
/// The header's first word.
const MAGIC: u64 = u64::from_le_bytes(*b"OXSTATS1");
/// How many times a reader tries to get a consistent copy of a slot that is being written.
const READ_TRIES: usize = 1000;

/// Routine codes. The data collectives use the collective kinds of the runtime's checked
/// exchange (1–8); barriers and syncs, the collective allocation routines and the waits have
/// codes of their own.
pub mod code {
    /// `shmem_broadcast`.
    pub const BROADCAST: u16 = 1;
    /// `shmem_collect`.
    pub const COLLECT: u16 = 2;
    /// `shmem_fcollect`.
    pub const FCOLLECT: u16 = 3;
    /// `shmem_alltoall`.
    pub const ALLTOALL: u16 = 4;
    /// `shmem_alltoalls`.
    pub const ALLTOALLS: u16 = 5;
    /// `shmem_TYPE_OP_reduce` (operation and type in the routine's `op` and `ty`).
    pub const REDUCE: u16 = 6;
    /// `shmem_TYPE_sum_inscan`.
    pub const INSCAN: u16 = 7;
    /// `shmem_TYPE_sum_exscan`.
    pub const EXSCAN: u16 = 8;
    /// `shmem_barrier_all`.
    pub const BARRIER_ALL: u16 = 16;
    /// `shmem_sync_all`.
    pub const SYNC_ALL: u16 = 17;
    /// `shmem_team_sync`.
    pub const TEAM_SYNC: u16 = 18;
    /// `shmem_barrier` (active set).
    pub const BARRIER: u16 = 19;
    /// `shmem_sync` (active set).
    pub const SYNC: u16 = 20;
    /// `shmem_init`.
    pub const INIT: u16 = 21;
    /// `shmem_finalize`.
    pub const FINALIZE: u16 = 22;
    /// `shmem_team_destroy`.
    pub const TEAM_DESTROY: u16 = 23;
    /// `shmem_team_split_strided`.
    pub const TEAM_SPLIT_STRIDED: u16 = 24;
    /// `shmem_team_split_2d`.
    pub const TEAM_SPLIT_2D: u16 = 25;
    /// `shmem_malloc`.
    pub const MALLOC: u16 = 32;
    /// `shmem_calloc`.
    pub const CALLOC: u16 = 33;
    /// `shmem_align`.
    pub const ALIGN: u16 = 34;
    /// `shmem_realloc`.
    pub const REALLOC: u16 = 35;
    /// `shmem_free`.
    pub const FREE: u16 = 36;
    /// `shmem_malloc_with_hints`.
    pub const MALLOC_WITH_HINTS: u16 = 37;
    /// `shmem_wait_until` (and `shmem_TYPE_wait_until`).
    pub const WAIT_UNTIL: u16 = 48;
    /// `shmem_wait_until_all`.
    pub const WAIT_UNTIL_ALL: u16 = 49;
    /// `shmem_wait_until_any`.
    pub const WAIT_UNTIL_ANY: u16 = 50;
    /// `shmem_wait_until_some`.
    pub const WAIT_UNTIL_SOME: u16 = 51;
    /// `shmem_signal_wait_until`.
    pub const SIGNAL_WAIT_UNTIL: u16 = 52;
    /// `shmem_set_lock`.
    pub const SET_LOCK: u16 = 53;
    /// `shmem_quiet`.
    pub const QUIET: u16 = 54;
    /// A routine of the runtime that has no code of its own.
    pub const OTHER: u16 = 255;
}

/// The names of the routines with a fixed name, by code.
const NAMES: &[(u16, &str)] = &[
    (code::BROADCAST, "shmem_broadcast"),
    (code::COLLECT, "shmem_collect"),
    (code::FCOLLECT, "shmem_fcollect"),
    (code::ALLTOALL, "shmem_alltoall"),
    (code::ALLTOALLS, "shmem_alltoalls"),
    (code::BARRIER_ALL, "shmem_barrier_all"),
    (code::SYNC_ALL, "shmem_sync_all"),
    (code::TEAM_SYNC, "shmem_team_sync"),
    (code::BARRIER, "shmem_barrier"),
    (code::SYNC, "shmem_sync"),
    (code::INIT, "shmem_init"),
    (code::FINALIZE, "shmem_finalize"),
    (code::TEAM_DESTROY, "shmem_team_destroy"),
    (code::TEAM_SPLIT_STRIDED, "shmem_team_split_strided"),
    (code::TEAM_SPLIT_2D, "shmem_team_split_2d"),
    (code::MALLOC, "shmem_malloc"),
    (code::CALLOC, "shmem_calloc"),
    (code::ALIGN, "shmem_align"),
    (code::REALLOC, "shmem_realloc"),
    (code::FREE, "shmem_free"),
    (code::MALLOC_WITH_HINTS, "shmem_malloc_with_hints"),
    (code::WAIT_UNTIL, "shmem_wait_until"),
    (code::WAIT_UNTIL_ALL, "shmem_wait_until_all"),
    (code::WAIT_UNTIL_ANY, "shmem_wait_until_any"),
    (code::WAIT_UNTIL_SOME, "shmem_wait_until_some"),
    (code::SIGNAL_WAIT_UNTIL, "shmem_signal_wait_until"),
    (code::SET_LOCK, "shmem_set_lock"),
    (code::QUIET, "shmem_quiet"),
];

/// A routine as the status table and the collectives' mismatch check name it: a [`code`],
/// and for reductions and scans the operation and element type (the runtime's numbering:
/// `op` 1–7 is and, or, xor, max, min, sum, prod; `ty` 1–16 is `i8` … `bf16`). For the other
/// data collectives `ty` is the element size when it fits in a byte (0 otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Routine {
    /// A [`code`].
    pub code: u16,
    /// Reduction operation, or 0.
    pub op: u8,
    /// Element type (reductions, scans) or size (other data collectives), or 0.
    pub ty: u8,
}

impl Routine {
    /// A routine without operation or type.
    pub const fn of(code: u16) -> Routine {
        Routine { code, op: 0, ty: 0 }
    }

    /// The routine the runtime calls `func` (its name for error messages), [`code::OTHER`]
    /// for a name it does not know. Meant to be folded away for a constant `func`.
    #[inline(always)]
    pub fn from_name(func: &str) -> Routine {
        Routine::of(match func {
            "shmem_barrier_all" => code::BARRIER_ALL,
            "shmem_sync_all" => code::SYNC_ALL,
            "shmem_team_sync" => code::TEAM_SYNC,
            "shmem_barrier" => code::BARRIER,
            "shmem_sync" => code::SYNC,
            "shmem_init" => code::INIT,
            "shmem_finalize" => code::FINALIZE,
            "shmem_team_destroy" => code::TEAM_DESTROY,
            "shmem_team_split_strided" => code::TEAM_SPLIT_STRIDED,
            "shmem_team_split_2d" => code::TEAM_SPLIT_2D,
            "shmem_malloc" => code::MALLOC,
            "shmem_calloc" => code::CALLOC,
            "shmem_align" => code::ALIGN,
            "shmem_realloc" => code::REALLOC,
            "shmem_free" => code::FREE,
            "shmem_malloc_with_hints" => code::MALLOC_WITH_HINTS,
            _ => code::OTHER,
        })
    }

    /// The routine's bits in one word (`code | op << 16 | ty << 24`), and back.
    pub const fn bits(self) -> u32 {
        self.code as u32 | (self.op as u32) << 16 | (self.ty as u32) << 24
    }

    /// See [`bits`](Self::bits).
    pub const fn from_bits(b: u32) -> Routine {
        Routine { code: b as u16, op: (b >> 16) as u8, ty: (b >> 24) as u8 }
    }
}

/// The C name of reduction type `ty` (the runtime's type numbering) in routine names
/// (`shmem_long_sum_reduce`): each Rust type by the first C type the C API maps to it.
pub fn type_name(ty: u8) -> &'static str {
    match ty {
        1 => "schar",
        2 => "uchar",
        3 => "short",
        4 => "ushort",
        5 => "int",
        6 => "uint",
        7 => "long",
        8 => "ulong",
        9 => "ptrdiff",
        10 => "size",
        11 => "float",
        12 => "double",
        13 => "complexf",
        14 => "complexd",
        15 => "half",
        16 => "bfloat16",
        _ => "TYPE",
    }
}

/// The OpenSHMEM name of reduction operation code `op` (`sum` in `shmem_long_sum_reduce`), None
/// for an unknown code.
pub fn op_name(op: u8) -> Option<&'static str> {
    Some(match op {
        1 => "and",
        2 => "or",
        3 => "xor",
        4 => "max",
        5 => "min",
        6 => "sum",
        7 => "prod",
        _ => return None,
    })
}

/// The OpenSHMEM name of `r`: `shmem_long_sum_reduce`, `shmem_barrier_all`. `active`: the
/// deprecated active-set form (`shmem_long_sum_to_all`, `shmem_broadcast64`).
pub fn routine_name(r: Routine, active: bool) -> String {
    let sized = |base: &str| match (active, r.ty) {
        (true, 4) => format!("{base}32"),
        (true, 8) => format!("{base}64"),
        _ => base.to_string(),
    };
    match r.code {
        code::REDUCE if active => format!("shmem_{}_{}_to_all", type_name(r.ty), op_name(r.op).unwrap_or("OP")),
        code::REDUCE => format!("shmem_{}_{}_reduce", type_name(r.ty), op_name(r.op).unwrap_or("OP")),
        code::INSCAN => format!("shmem_{}_sum_inscan", type_name(r.ty)),
        code::EXSCAN => format!("shmem_{}_sum_exscan", type_name(r.ty)),
        code::BROADCAST => sized("shmem_broadcast"),
        code::COLLECT => sized("shmem_collect"),
        code::FCOLLECT => sized("shmem_fcollect"),
        code::ALLTOALL => sized("shmem_alltoall"),
        code::ALLTOALLS => sized("shmem_alltoalls"),
        c => match NAMES.iter().find(|(k, _)| *k == c) {
            Some((_, n)) => (*n).to_string(),
            None => "an oxshmem routine".to_string(),
        },
    }
}

/// The NVSHMEM name of the routine the runtime calls `name` (`shmem_barrier_all` is
/// `nvshmem_barrier_all`, `shmem_long_sum_reduce` is `nvshmem_long_sum_reduce`): what an NVSHMEM
/// program called. Names of no OpenSHMEM routine are kept.
pub fn nvshmem_name(name: &str) -> String {
    match name.strip_prefix("shmem_") {
        Some(rest) => format!("nvshmem_{rest}"),
        None => name.to_string(),
    }
}

/// How a team appears in the table: its slot in the runtime's team pool (0 the world, 1 the
/// shared team, 2 the deprecated active sets).
pub fn team_name(slot: u16) -> String {
    match slot {
        0 => "world".into(),
        1 => "shared".into(),
        2 => "active set".into(),
        s => format!("team slot {s}"),
    }
}

/// What a slot's argument is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arg {
    /// Nothing.
    #[default]
    None,
    /// A PE (the target of a lock, say).
    Pe(u64),
    /// An address (the variable a wait watches).
    Addr(u64),
}

impl Arg {
    fn encode(self) -> (u64, u64) {
        match self {
            Arg::None => (0, 0),
            Arg::Pe(p) => (1, p),
            Arg::Addr(a) => (2, a),
        }
    }

    fn decode(kind: u64, v: u64) -> Arg {
        match kind {
            1 => Arg::Pe(v),
            2 => Arg::Addr(v),
            _ => Arg::None,
        }
    }
}

/// Where a PE is, per its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// It has written nothing yet (not initialized, or not an oxshmem program).
    Unknown,
    /// It entered `routine` (and may have left it: the runtime writes no exit, only the end of
    /// a wait).
    Entered,
    /// It waits, blocked, inside `routine`.
    Waiting,
}

const STATE_ENTERED: u64 = 1;
const STATE_WAITING: u64 = 2;
/// In a slot's `what`: `left_at` is this routine's (a wait of it ended).
const HAS_LEFT: u64 = 1 << 7;
/// In a slot's `what`: the routine was called through NVSHMEM's API ([`NvshmemCall`]), so the
/// hang report names it as NVSHMEM's (`nvshmem_barrier_all`).
const VIA_NVSHMEM: u64 = 1 << 15;
const NO_TEAM: u64 = 0xffff;
const NO_PEER: u64 = u64::MAX;

/// The eight words of a slot.
#[repr(C, align(64))]
struct Slot {
    /// Sequence lock: odd while the owner writes.
    seq: AtomicU64,
    /// `state | HAS_LEFT | arg kind << 8 | team << 16 | routine bits << 32`. The other words
    /// mean something only as it says: `arg` with an arg kind, `peer` and `wait_since` while
    /// waiting, `left_at` with [`HAS_LEFT`]; so entering a routine writes `what` and `coll`
    /// alone.
    what: AtomicU64,
    /// Collective sequence number on the team (0: not a collective).
    coll: AtomicU64,
    arg: AtomicU64,
    /// The PE waited for, or [`NO_PEER`].
    peer: AtomicU64,
    /// `CLOCK_MONOTONIC` nanoseconds at which the wait began.
    wait_since: AtomicU64,
    /// `CLOCK_MONOTONIC` nanoseconds at which the last wait of this routine ended.
    left_at: AtomicU64,
    _reserved: AtomicU64,
}

const _: () = assert!(size_of::<Slot>() == SLOT_BYTES);

/// A consistent copy of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// Where the PE is.
    pub state: State,
    /// The routine it entered last.
    pub routine: Routine,
    /// The team (slot number) of a collective.
    pub team: Option<u16>,
    /// The collective's sequence number on the team (0: not a collective).
    pub coll: u64,
    /// The routine's argument.
    pub arg: Arg,
    /// The PE it waits for.
    pub peer: Option<u64>,
    /// `CLOCK_MONOTONIC` nanoseconds at which its wait began (0: not known).
    pub wait_since: u64,
    /// `CLOCK_MONOTONIC` nanoseconds at which its last wait ended (0: none).
    pub left_at: u64,
    /// The routine was called through NVSHMEM's API: it is named as NVSHMEM's.
    pub nvshmem: bool,
}

fn secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

impl Snapshot {
    /// The routine with its team, collective number and argument:
    /// `shmem_barrier_all (world, collective #7)`, `shmem_wait_until (on 0x7f00…)`.
    pub fn routine_text(&self) -> String {
        let active = self.team == Some(2);
        let mut s = routine_name(self.routine, active);
        if self.nvshmem {
            s = nvshmem_name(&s);
        }
        let mut inner = Vec::new();
        if let Some(t) = self.team {
            inner.push(team_name(t));
        }
        if self.coll != 0 && !active {
            inner.push(format!("collective #{}", self.coll));
        }
        match self.arg {
            Arg::None => {}
            Arg::Pe(p) => inner.push(format!("PE {p}")),
            Arg::Addr(a) => inner.push(format!("on {a:#x}")),
        }
        if !inner.is_empty() {
            s += &format!(" ({})", inner.join(", "));
        }
        s
    }

    /// One line for the hang report, `now` being `CLOCK_MONOTONIC` nanoseconds:
    /// `in shmem_barrier_all (world, collective #7) for 12.3 s, waiting for PE 1`, or
    /// `running (last: shmem_barrier_all (world, collective #6), left 12.5 s ago)`.
    pub fn describe(&self, now: u64) -> String {
        match self.state {
            State::Unknown => "running (no blocking oxshmem call seen)".into(),
            State::Waiting => {
                let mut s = format!("in {}", self.routine_text());
                if self.wait_since != 0 {
                    s += &format!(" for {}", secs(now.saturating_sub(self.wait_since)));
                }
                if let Some(p) = self.peer {
                    s += &format!(", waiting for PE {p}");
                }
                s
            }
            State::Entered => {
                let mut s = format!("running (last: {}", self.routine_text());
                if self.left_at != 0 {
                    s += &format!(", left {} ago", secs(now.saturating_sub(self.left_at)));
                }
                s + ")"
            }
        }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (the same clock in every process of the host).
pub fn now_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to fill; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

// ------------------------------------------------------------------------- the launcher side

/// The table as `oshrun` owns it: the memfd and its mapping.
#[derive(Debug)]
pub struct Table {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    npes: usize,
}

impl Table {
    /// A zeroed table for `npes` PEs, owned by this process (the launcher): a memfd with
    /// close-on-exec set (the launcher clears it in each PE between fork and exec).
    pub fn create(npes: usize) -> std::io::Result<Table> {
        let len = HEADER_BYTES + npes * SLOT_BYTES;
        // SAFETY: a constant NUL-terminated name; memfd_create touches no memory of ours.
        let raw = unsafe { libc::memfd_create(c"oxshmem-status".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ftruncate on our own descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let base = map(fd.as_raw_fd(), len)?;
        let t = Table { fd, base, len, npes };
        let h = t.header();
        h[1].store(npes as u64 | (SLOT_BYTES as u64) << 32, Ordering::Relaxed);
        h[2].store(u64::from(std::process::id()), Ordering::Relaxed);
        h[0].store(MAGIC, Ordering::Release);
        Ok(t)
    }

    /// The descriptor to pass to the PEs.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn header(&self) -> &[AtomicU64; 8] {
        // SAFETY: the header is the first 64 bytes of the live, page-aligned mapping.
        unsafe { &*self.base.cast::<[AtomicU64; 8]>() }
    }

    fn slot(&self, rank: usize) -> &Slot {
        assert!(rank < self.npes, "rank {rank} out of the table's {}", self.npes);
        // SAFETY: slot `rank` lies inside the mapping, 64-byte aligned, and is only ever
        // accessed through atomics.
        unsafe { &*self.base.add(HEADER_BYTES + rank * SLOT_BYTES).cast::<Slot>() }
    }

    /// A consistent copy of PE `rank`'s slot, or `None` when it is being written on every one
    /// of a bounded number of tries (a PE stopped in the middle of a write).
    pub fn read(&self, rank: usize) -> Option<Snapshot> {
        read_slot(self.slot(rank))
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: base/len are our own mapping; nothing refers to it after the table.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn map(fd: RawFd, len: usize) -> std::io::Result<*mut u8> {
    // SAFETY: a fresh shared mapping of `len` bytes of `fd`; the kernel picks the address.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED { Err(std::io::Error::last_os_error()) } else { Ok(p.cast()) }
}

fn read_slot(s: &Slot) -> Option<Snapshot> {
    for _ in 0..READ_TRIES {
        let a = s.seq.load(Ordering::Acquire);
        if a % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let what = s.what.load(Ordering::Relaxed);
        let coll = s.coll.load(Ordering::Relaxed);
        let arg = s.arg.load(Ordering::Relaxed);
        let peer = s.peer.load(Ordering::Relaxed);
        let wait_since = s.wait_since.load(Ordering::Relaxed);
        let left_at = s.left_at.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if s.seq.load(Ordering::Relaxed) != a {
            continue;
        }
        let state = match what & 0x7f {
            STATE_ENTERED => State::Entered,
            STATE_WAITING => State::Waiting,
            _ => State::Unknown,
        };
        let waiting = state == State::Waiting;
        let team = (what >> 16) & 0xffff;
        return Some(Snapshot {
            state,
            routine: Routine::from_bits((what >> 32) as u32),
            team: (team != NO_TEAM).then_some(team as u16),
            coll,
            arg: Arg::decode((what >> 8) & 0x7f, arg),
            peer: (waiting && peer != NO_PEER).then_some(peer),
            wait_since: if waiting { wait_since } else { 0 },
            left_at: if what & HAS_LEFT != 0 { left_at } else { 0 },
            nvshmem: what & VIA_NVSHMEM != 0,
        });
    }
    None
}

// ------------------------------------------------------------------------------ the PE side

/// This PE's slot, once [`attach`] found the table; its lowest bit set when several threads
/// may write it at once (`SHMEM_THREAD_MULTIPLE`: slots are 64-byte aligned).
static MINE: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());

/// Maps the table `oshrun` passed in [`FD_VAR`] and takes the slot of `rank`; returns whether
/// it did. Nothing happens (and nothing is written later) when the variable is absent — any
/// launcher but `oshrun` — or names something that is not this job's table: a descriptor
/// that is not open, not a table, one for another number of PEs, or one of a launcher that
/// is not an ancestor of this process. The descriptor is closed once mapped. `multi`: threads may
/// call the runtime concurrently.
pub fn attach(rank: usize, npes: usize, multi: bool) -> bool {
    if !MINE.load(Ordering::Acquire).is_null() {
        return true;
    }
    let Some(fd) = std::env::var(FD_VAR).ok().and_then(|v| v.trim().parse::<RawFd>().ok()) else {
        return false;
    };
    if fd < 3 || rank >= npes {
        return false;
    }
    let len = HEADER_BYTES + npes * SLOT_BYTES;
    // SAFETY: fstat fills a zeroed stat; a bad descriptor gives an error.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0
        || (st.st_mode & libc::S_IFMT) != libc::S_IFREG
        || st.st_size as usize != len
    {
        return false;
    }
    let Ok(base) = map(fd, len) else { return false };
    // SAFETY: the header is the first 64 bytes of the fresh mapping.
    let h = unsafe { &*base.cast::<[AtomicU64; 8]>() };
    let ok = h[0].load(Ordering::Acquire) == MAGIC
        && h[1].load(Ordering::Relaxed) == npes as u64 | (SLOT_BYTES as u64) << 32
        && is_ancestor(h[2].load(Ordering::Relaxed));
    if !ok {
        // SAFETY: our own fresh mapping, referred to by nothing.
        unsafe { libc::munmap(base.cast(), len) };
        return false;
    }
    // The mapping stays for the life of the process; the descriptor is no longer needed, and
    // no program this PE starts must inherit it.
    // SAFETY: the descriptor was passed to us for this table alone.
    unsafe { libc::close(fd) };
    // SAFETY: slot `rank` lies inside the mapping, 64-byte aligned.
    let slot = unsafe { base.add(HEADER_BYTES + rank * SLOT_BYTES) }.cast::<Slot>();
    MINE.store(slot.map_addr(|a| a | usize::from(multi)), Ordering::Release);
    true
}

/// Whether process `pid` is this process's parent, or the parent's parent … (a PE that a
/// wrapper such as `sh -c` or `taskset` started is not the launcher's child).
fn is_ancestor(pid: u64) -> bool {
    // SAFETY: getppid cannot fail.
    let mut p = u64::from(unsafe { libc::getppid() } as u32);
    for _ in 0..16 {
        if p == pid {
            return true;
        }
        if p <= 1 {
            return false;
        }
        let Some(next) = std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse::<u64>().ok())
        else {
            return false;
        };
        p = next;
    }
    false
}

/// Whether this process writes a slot.
pub fn attached() -> bool {
    !MINE.load(Ordering::Relaxed).is_null()
}

/// Runs `f` on this PE's slot under the sequence lock (nothing without a table).
#[inline(always)]
fn write(f: impl FnOnce(&Slot)) {
    let p = MINE.load(Ordering::Relaxed);
    if p.is_null() {
        return;
    }
    // SAFETY: MINE only ever holds null or this PE's slot (tagged in its lowest bit) in a
    // mapping that is never unmapped.
    let s = unsafe { &*p.map_addr(|a| a & !1) };
    let q = s.seq.load(Ordering::Relaxed);
    if p.addr() & 1 == 1 {
        // Several writers: take the lock, or drop this write if another thread holds it.
        if q % 2 == 1 || s.seq.compare_exchange(q, q + 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return;
        }
    } else {
        s.seq.store(q + 1, Ordering::Relaxed);
    }
    // The odd count is visible before any of the fields change.
    fence(Ordering::Release);
    f(s);
    s.seq.store(q + 2, Ordering::Release);
}

#[inline(always)]
fn what(state: u64, arg_kind: u64, team: Option<u16>, r: Routine) -> u64 {
    state | arg_kind << 8 | team.map_or(NO_TEAM, u64::from) << 16 | u64::from(r.bits()) << 32
}

/// This PE enters `r` (a collective on team slot `team`, number `coll` there; or a routine
/// without team, `coll` 0). Four plain stores (five with an argument); nothing without a
/// table.
#[inline(always)]
pub fn enter(r: Routine, team: Option<u16>, coll: u64, arg: Arg) {
    write(|s| {
        let (kind, v) = arg.encode();
        s.what.store(what(STATE_ENTERED, kind, team, r) | via(), Ordering::Relaxed);
        s.coll.store(coll, Ordering::Relaxed);
        if kind != 0 {
            s.arg.store(v, Ordering::Relaxed);
        }
    });
}

/// A wait of this PE stops spinning and starts blocking: inside the routine last
/// [`enter`]ed, or inside `what` (a routine without team) when given; `peer` is the PE it
/// waits for, if one.
#[cold]
#[inline(never)]
pub fn wait_begin(what_: Option<(Routine, Arg)>, peer: Option<usize>) {
    if !attached() {
        return;
    }
    let now = now_ns();
    write(|s| {
        let w = match what_ {
            Some((r, arg)) => {
                let (kind, v) = arg.encode();
                s.coll.store(0, Ordering::Relaxed);
                s.arg.store(v, Ordering::Relaxed);
                s.left_at.store(0, Ordering::Relaxed);
                what(STATE_WAITING, kind, None, r) | via()
            }
            None => s.what.load(Ordering::Relaxed) & !0xff | STATE_WAITING,
        };
        // (Entering a routine cleared HAS_LEFT; this wait's end sets it again.)
        s.what.store(w, Ordering::Relaxed);
        s.peer.store(peer.map_or(NO_PEER, |p| p as u64), Ordering::Relaxed);
        s.wait_since.store(now, Ordering::Relaxed);
    });
}

thread_local! {
    /// Whether this thread is inside a routine of NVSHMEM's API ([`NvshmemCall`]).
    static VIA_NV: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While it lives, the routines this thread enters are recorded as called through NVSHMEM's
/// API (the hang report then says `nvshmem_barrier_all` where the program called that, and
/// `shmem_barrier_all` where it called OpenSHMEM's). The C library's NVSHMEM entry points
/// hold one around their call into the runtime.
#[derive(Debug)]
pub struct NvshmemCall {
    was: bool,
}

impl NvshmemCall {
    /// Marks this thread's calls as NVSHMEM's when `func` (the C routine's name) is one of
    /// NVSHMEM's (`nvshmem_*`, `nvshmemx_*`), as OpenSHMEM's otherwise, until dropped.
    #[inline(always)]
    pub fn new(func: &str) -> NvshmemCall {
        let nv = func.starts_with("nvshmem");
        NvshmemCall { was: VIA_NV.with(|v| v.replace(nv)) }
    }
}

impl Drop for NvshmemCall {
    #[inline(always)]
    fn drop(&mut self) {
        VIA_NV.with(|v| v.set(self.was));
    }
}

#[inline(always)]
fn via() -> u64 {
    if VIA_NV.with(std::cell::Cell::get) { VIA_NVSHMEM } else { 0 }
}

/// The wait that [`wait_begin`] reported is over.
#[cold]
#[inline(never)]
pub fn wait_end() {
    if !attached() {
        return;
    }
    let now = now_ns();
    write(|s| {
        s.left_at.store(now, Ordering::Relaxed);
        let w = s.what.load(Ordering::Relaxed) & !0xff | STATE_ENTERED | HAS_LEFT;
        s.what.store(w, Ordering::Relaxed);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let r = Routine { code: code::REDUCE, op: 6, ty: 7 };
        assert_eq!(routine_name(r, false), "shmem_long_sum_reduce");
        assert_eq!(routine_name(r, true), "shmem_long_sum_to_all");
        assert_eq!(op_name(0), None);
        assert_eq!(routine_name(Routine { op: 0, ..r }, false), "shmem_long_OP_reduce");
        assert_eq!(routine_name(Routine { code: code::BROADCAST, op: 0, ty: 8 }, true), "shmem_broadcast64");
        assert_eq!(routine_name(Routine { code: code::BROADCAST, op: 0, ty: 8 }, false), "shmem_broadcast");
        assert_eq!(routine_name(Routine::from_name("shmem_barrier_all"), false), "shmem_barrier_all");
        assert_eq!(Routine::from_name("shmem_no_such").code, code::OTHER);
        for (c, n) in NAMES {
            assert_eq!(routine_name(Routine::of(*c), false), *n);
            if *c >= code::BARRIER_ALL && *c < code::WAIT_UNTIL {
                assert_eq!(Routine::from_name(n).code, *c, "{n}");
            }
        }
        assert_eq!(Routine::from_bits(r.bits()), r);
    }

    #[test]
    fn a_slot_reads_back_what_was_written() {
        let t = Table::create(3).unwrap();
        let s = t.slot(1);
        assert_eq!(t.read(1).unwrap().state, State::Unknown);
        // The writer's side, on this slot directly.
        MINE.store((s as *const Slot).cast_mut(), Ordering::Release);
        enter(Routine::of(code::BARRIER_ALL), Some(0), 7, Arg::None);
        let snap = t.read(1).unwrap();
        assert_eq!((snap.state, snap.coll, snap.team), (State::Entered, 7, Some(0)));
        assert_eq!(snap.describe(now_ns()), "running (last: shmem_barrier_all (world, collective #7))");
        wait_begin(None, Some(2));
        let snap = t.read(1).unwrap();
        assert_eq!(snap.state, State::Waiting);
        assert!(
            snap.describe(snap.wait_since + 12_300_000_000)
                == "in shmem_barrier_all (world, collective #7) for 12.3 s, waiting for PE 2",
            "{}",
            snap.describe(snap.wait_since + 12_300_000_000)
        );
        wait_end();
        let snap = t.read(1).unwrap();
        assert_eq!(snap.state, State::Entered);
        assert!(snap.describe(snap.left_at + 2_000_000_000).ends_with(", left 2.0 s ago)"));
        wait_begin(Some((Routine::of(code::WAIT_UNTIL), Arg::Addr(0x1000))), None);
        let snap = t.read(1).unwrap();
        assert_eq!(snap.describe(snap.wait_since), "in shmem_wait_until (on 0x1000) for 0.0 s");
        // A slot left odd (a writer stopped mid-write) gives up after bounded tries.
        s.seq.fetch_add(1, Ordering::Relaxed);
        assert_eq!(t.read(1), None);
        s.seq.fetch_add(1, Ordering::Relaxed);
        // Entering another routine forgets the last one's wait.
        enter(Routine::of(code::SYNC_ALL), Some(0), 8, Arg::None);
        assert_eq!(t.read(1).unwrap().describe(0), "running (last: shmem_sync_all (world, collective #8))");
        // Through NVSHMEM's API: the same slot names what the program called.
        let nv = NvshmemCall::new("nvshmem_sync_all");
        enter(Routine::of(code::SYNC_ALL), Some(0), 8, Arg::None);
        assert_eq!(t.read(1).unwrap().describe(0), "running (last: nvshmem_sync_all (world, collective #8))");
        enter(Routine { code: code::REDUCE, op: 6, ty: 7 }, Some(0), 9, Arg::None);
        wait_begin(None, Some(0));
        let snap = t.read(1).unwrap();
        assert!(snap.describe(snap.wait_since).starts_with("in nvshmem_long_sum_reduce (world, collective #9)"));
        wait_begin(Some((Routine::of(code::WAIT_UNTIL), Arg::Addr(0x40))), None);
        assert!(t.read(1).unwrap().describe(0).starts_with("in nvshmem_wait_until (on 0x40)"));
        drop(nv);
        // An OpenSHMEM call of the same program keeps its OpenSHMEM name.
        let shmem = NvshmemCall::new("shmem_int_wait_until_all");
        wait_begin(Some((Routine::of(code::WAIT_UNTIL_ALL), Arg::Addr(0x40))), None);
        assert!(t.read(1).unwrap().describe(0).starts_with("in shmem_wait_until_all (on 0x40)"));
        drop(shmem);
        MINE.store(std::ptr::null_mut(), Ordering::Release);
        assert_eq!(t.read(0).unwrap().state, State::Unknown);
        assert!(!t.read(0).unwrap().nvshmem);
    }
}
