//! Teams: ordered subsets of the world's PEs, with team-relative PE numbers.
//!
//! Every team occupies one *slot* of a pool reserved at init beside the heap (`SlotLayout`):
//! the slot holds the team's internal symmetric objects — barrier flags, per-member signal
//! flags and an exchange area — at the same offset on every PE, so collectives need no
//! allocation. A split agrees on a slot through an exchange over the parent team (the AND of
//! every member's free-slot mask); the same exchange compares the split's arguments, so PEs
//! that disagree all get the same clear error instead of a hang.
//!
//! Flags only ever grow: collective number `s` of a team signals with values derived from `s`
//! and waits for "at least", so a flag never needs resetting while the team lives; destroy
//! zeroes the slot (after a barrier that proves no member still writes into it) for the next
//! team that takes it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, ErrorKind, Result};
use crate::transport::SymAddr;
use crate::world::{Runtime, running};

/// Team slots in the pool (and so the most teams that can exist at once on a PE).
pub const MAX_TEAMS: usize = 64;
/// Slot of `SHMEM_TEAM_WORLD`.
pub(crate) const WORLD_SLOT: usize = 0;
/// Slot of `SHMEM_TEAM_SHARED`.
pub(crate) const SHARED_SLOT: usize = 1;
/// Slot of the deprecated active-set collectives (`PE_start`, `logPE_stride`, `PE_size`).
pub(crate) const ACTIVE_SLOT: usize = 2;
/// Bytes of the exchange record each member owns in a slot.
pub(crate) const XCHG: usize = 64;
const LINE: usize = 64;

/// Bytes of each mailbox in a slot: 64 KiB per sender shared among the job's PEs, between
/// 1 KiB and 32 KiB each, a whole number of cache lines.
pub(crate) fn box_bytes(n: usize) -> usize {
    (65536 / n.max(1)).clamp(1024, 32768) & !(LINE - 1)
}

/// Mailboxes per pair of PEs: two, used alternately, so that a sender needs the credit of the
/// message before last, which has long been granted in a steady stream.
pub(crate) const BOXES: usize = 2;

/// The flags of a slot. Indexed by world PE, so that any subset of PEs can use a slot. Each
/// flag has a cache line to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chan {
    /// A signal has arrived from that PE (one flag per PE). The rest of the flag's line holds
    /// what a signal carries besides its count (`Runtime::sig_send_tagged`), in two slots.
    Arrive,
    /// How many of that PE's messages this PE is done with (written by this PE in its own
    /// copy; read by that PE only when the count carried by our own messages is not enough).
    Consumed,
}

/// Where each slot's objects lie in the segment (offsets from the heap segment's start).
#[derive(Debug, Clone)]
pub(crate) struct SlotLayout {
    base: usize,
    n: usize,
    slot_bytes: usize,
    /// `box_bytes(n)`, kept: every message's send and receive needs it, and it is a division.
    box_len: usize,
}

impl SlotLayout {
    /// The pool starts at `base` (the end of the user's heap) for a job of `n` PEs.
    pub(crate) fn new(base: usize, n: usize) -> Self {
        let box_len = box_bytes(n);
        let slot_bytes = 2 * n * LINE + n * XCHG + n * BOXES * box_len;
        SlotLayout { base, n, slot_bytes, box_len }
    }

    pub(crate) fn total_bytes(&self) -> usize {
        MAX_TEAMS * self.slot_bytes
    }

    fn slot(&self, slot: usize) -> usize {
        self.base + slot * self.slot_bytes
    }

    /// The flag for channel `ch` and PE `pe`, in every PE's copy of the slot.
    pub(crate) fn flag(&self, slot: usize, ch: Chan, pe: usize) -> SymAddr {
        let line = match ch {
            Chan::Arrive => pe,
            Chan::Consumed => self.n + pe,
        };
        SymAddr { seg: 0, offset: self.slot(slot) + line * LINE }
    }

    pub(crate) fn xchg(&self, slot: usize, member: usize) -> SymAddr {
        SymAddr { seg: 0, offset: self.slot(slot) + 2 * self.n * LINE + member * XCHG }
    }

    /// This PE's record of a collective allocation call that failed its check (see `heap`),
    /// which peers read to name the mismatch: exchange record 1 of the world's slot, which
    /// splits of the world do not use (they exchange through record 0). It exists for 2 PEs
    /// and more, and nothing is checked with 1.
    pub(crate) fn alloc_record(&self) -> SymAddr {
        debug_assert!(self.n >= 2);
        self.xchg(WORLD_SLOT, 1)
    }

    /// Mailbox `b` in which PE `from` leaves messages (in every PE's copy of the slot).
    pub(crate) fn mailbox(&self, slot: usize, from: usize, b: usize) -> SymAddr {
        let boxes = self.slot(slot) + 2 * self.n * LINE + self.n * XCHG;
        SymAddr { seg: 0, offset: boxes + (from * BOXES + b) * self.box_len }
    }

    /// Bytes of one mailbox.
    pub(crate) fn box_len(&self) -> usize {
        self.box_len
    }

    /// The whole slot, for zeroing at destroy.
    fn span(&self, slot: usize) -> (usize, usize) {
        (self.slot(slot), self.slot_bytes)
    }
}

/// Options of a new team (`shmem_team_config_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TeamConfig {
    /// Contexts the program will create on the team (`num_contexts`); advisory here.
    pub num_contexts: i32,
}

/// What a team is, on one of its members.
#[derive(Debug)]
pub(crate) struct TeamInner {
    pub(crate) slot: usize,
    /// World PE of each member, by team PE number (in the parent's order, or reversed by a
    /// negative stride: not necessarily ascending).
    pub(crate) members: Vec<usize>,
    /// Whether `members` ascends (then `index_of` searches it by halves).
    pub(crate) ascending: bool,
    /// This PE's number in the team.
    pub(crate) me: usize,
    pub(crate) config: TeamConfig,
    /// Whether `config` was given (`SHMEM_TEAM_NUM_CONTEXTS` mask bit).
    pub(crate) config_mask: i64,
    pub(crate) destroyed: AtomicBool,
    pub(crate) name: &'static str,
}

impl TeamInner {
    pub(crate) fn n(&self) -> usize {
        self.members.len()
    }

    /// Team PE number of world PE `w`.
    pub(crate) fn index_of(&self, w: usize) -> Option<usize> {
        if self.ascending { self.members.binary_search(&w).ok() } else { self.members.iter().position(|&m| m == w) }
    }
}

/// A team handle (`shmem_team_t`). Cloning gives another handle to the same team.
///
/// ```
/// let shmem = oxshmem::init()?;
/// let world = shmem.team_world();
/// assert_eq!(world.n_pes()?, shmem.n_pes());
/// assert_eq!(world.my_pe()?, shmem.my_pe());
/// # Ok::<(), oxshmem::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Team(pub(crate) Arc<TeamInner>);

/// The teams of this PE.
#[derive(Debug)]
pub(crate) struct Teams {
    pub(crate) world: Team,
    pub(crate) shared: Team,
    /// Bit `i` set: slot `i` is free on this PE.
    free: Mutex<u64>,
    /// Per slot, the signal streams to and from every PE.
    pub(crate) streams: Vec<Streams>,
}

/// Words of a slot that a collective parks there between calls; plain atomics, so that parking
/// is relaxed stores. The team layer keeps them and never reads them: the collectives above it
/// say what they hold (the small broadcast's root parks the headers it has not yet taken,
/// `coll/bcast.rs`), so that this layer imports nothing of theirs.
pub(crate) type Parked = [AtomicU64; PARKED_WORDS];

/// How many [`Parked`] words a slot has.
pub(crate) const PARKED_WORDS: usize = 9;

/// The ordered signal streams between this PE and every other within one slot.
///
/// Every signal from PE `i` to PE `j` in a slot stores `i`'s running count of them into
/// `j`'s arrival flag for `i`; `j` counts the ones it has consumed and waits for "at least its
/// count". Collectives on one team run in the same order on every member, so each pair's
/// stream is consumed in the order it is produced — whatever the team's shape, and for the
/// deprecated active sets as well.
#[derive(Debug)]
pub(crate) struct Streams {
    /// Signals sent to each PE.
    pub(crate) sent: Box<[AtomicU64]>,
    /// Signals consumed from each PE.
    pub(crate) recvd: Box<[AtomicU64]>,
    /// Messages sent to each PE (which mailbox is next).
    pub(crate) mails_sent: Box<[AtomicU64]>,
    /// Messages received from each PE.
    pub(crate) mails_recvd: Box<[AtomicU64]>,
    /// Messages from each PE that this PE is done with.
    pub(crate) mails_released: Box<[AtomicU64]>,
    /// The highest count of our messages each PE has told us it is done with.
    pub(crate) acked: Box<[AtomicU64]>,
    /// What a collective parks on the slot until the next one: the members' headers of the
    /// last small broadcast this PE was the root of, not yet taken, when `owes` (the
    /// collectives give the words their meaning, `coll/bcast.rs`).
    pub(crate) parked: Parked,
    pub(crate) owes: std::sync::atomic::AtomicBool,
}

impl Streams {
    fn new(n: usize) -> Self {
        let z = |k: usize| (0..k).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>();
        Streams {
            sent: z(n),
            recvd: z(n),
            mails_sent: z(n),
            mails_recvd: z(n),
            mails_released: z(n),
            acked: z(n),
            parked: Default::default(),
            owes: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn reset(&self) {
        let all = [&self.sent, &self.recvd, &self.mails_sent, &self.mails_recvd, &self.mails_released, &self.acked];
        for a in all.into_iter().flat_map(|v| v.iter()) {
            a.store(0, Ordering::Relaxed);
        }
        self.owes.store(false, Ordering::Relaxed);
    }
}

impl Teams {
    pub(crate) fn new(world_n: usize, me: usize, local_pes: &[usize]) -> Self {
        let mk = |slot, members: Vec<usize>, name| {
            let idx = members.binary_search(&me).expect("a PE is a member of its own world and node");
            Team(Arc::new(TeamInner {
                slot,
                members,
                ascending: true,
                me: idx,
                config: TeamConfig::default(),
                config_mask: 0,
                destroyed: AtomicBool::new(false),
                name,
            }))
        };
        Teams {
            world: mk(WORLD_SLOT, (0..world_n).collect(), "SHMEM_TEAM_WORLD"),
            shared: mk(SHARED_SLOT, local_pes.to_vec(), "SHMEM_TEAM_SHARED"),
            free: Mutex::new(!(1 << WORLD_SLOT) & !(1 << SHARED_SLOT) & !(1 << ACTIVE_SLOT)),
            streams: (0..MAX_TEAMS).map(|_| Streams::new(world_n)).collect(),
        }
    }

    fn free_mask(&self) -> u64 {
        *self.free.lock()
    }

    fn take(&self, slot: usize) {
        *self.free.lock() &= !(1u64 << slot);
    }

    fn give_back(&self, slot: usize) {
        *self.free.lock() |= 1u64 << slot;
    }
}

impl Team {
    /// The team's state, or the error for a destroyed team.
    pub(crate) fn live(&self, func: &'static str) -> Result<(&'static Runtime, &TeamInner)> {
        let rt = running(func)?;
        if self.0.destroyed.load(Ordering::Acquire) {
            return Err(Error::new(
                rt.me,
                func,
                ErrorKind::InvalidArgument(format!("{} was destroyed", self.describe())),
            ));
        }
        Ok((rt, &self.0))
    }

    fn describe(&self) -> String {
        if self.0.name.is_empty() {
            format!("team (slot {}, {} PEs)", self.0.slot, self.0.members.len())
        } else {
            self.0.name.to_string()
        }
    }

    /// This PE's number in the team (`shmem_team_my_pe`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.team_shared().my_pe()?, 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn my_pe(&self) -> Result<usize> {
        Ok(self.live("shmem_team_my_pe")?.1.me)
    }

    /// Number of PEs in the team (`shmem_team_n_pes`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.team_world().n_pes()?, shmem.n_pes());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn n_pes(&self) -> Result<usize> {
        Ok(self.live("shmem_team_n_pes")?.1.n())
    }

    /// The world PE numbers of the members, in team order.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.team_world().members()?, (0..shmem.n_pes()).collect::<Vec<_>>());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn members(&self) -> Result<Vec<usize>> {
        Ok(self.live("shmem_team_members")?.1.members.clone())
    }

    /// The team's slot in the runtime's pool of team objects (`0..MAX_TEAMS`): the same on
    /// every member, and held by no other live team of this PE. A layer above the runtime may
    /// keep per-team symmetric objects of its own by it.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.team_world().slot()?, 0);
    /// assert!(shmem.team_shared().slot()? < oxshmem::team::MAX_TEAMS);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn slot(&self) -> Result<usize> {
        Ok(self.live("shmem_team_slot")?.1.slot)
    }

    /// The team's configuration (`shmem_team_get_config`): the options it was created with.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.team_world().get_config()?.num_contexts, 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn get_config(&self) -> Result<TeamConfig> {
        Ok(self.live("shmem_team_get_config")?.1.config)
    }

    /// The mask of the options given at creation (`SHMEM_TEAM_NUM_CONTEXTS` = 1).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.team_world().config_mask()?, 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn config_mask(&self) -> Result<i64> {
        Ok(self.live("shmem_team_get_config")?.1.config_mask)
    }

    /// The number in `dest` of this team's PE `pe` (`shmem_team_translate_pe`), or `None` when
    /// it is not a member of `dest`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let w = shmem.team_world();
    /// assert_eq!(shmem.team_shared().translate_pe(0, &w)?, Some(shmem.layout()?.local_pes[0]));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn translate_pe(&self, pe: usize, dest: &Team) -> Result<Option<usize>> {
        const F: &str = "shmem_team_translate_pe";
        let (rt, t) = self.live(F)?;
        let (_, d) = dest.live(F)?;
        let Some(&w) = t.members.get(pe) else {
            return Err(Error::new(rt.me, F, ErrorKind::PeOutOfRange { pe: pe as i128, n_pes: t.n() }));
        };
        Ok(d.index_of(w))
    }

    /// Splits this team into a new team of the members `start, start+stride, …` (`size` of
    /// them, numbered in parent order; `shmem_team_split_strided`). Collective over this team:
    /// every member must pass the same arguments, or all get a `CollectiveMismatch` error.
    /// Returns `None` on PEs that are not in the new team. For negative strides see
    /// [`split_strided_signed`](Self::split_strided_signed).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let world = shmem.team_world();
    /// let evens = world.split_strided(0, 2, (shmem.n_pes() + 1) / 2, Default::default())?;
    /// assert_eq!(evens.is_some(), shmem.my_pe() % 2 == 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn split_strided(&self, start: usize, stride: usize, size: usize, config: TeamConfig) -> Result<Option<Team>> {
        self.split_strided_masked(start, stride, size, config, SHMEM_TEAM_NUM_CONTEXTS)
    }

    /// [`split_strided`](Self::split_strided) with a stride of either sign, as OpenSHMEM 1.6
    /// states and Sandia OpenSHMEM does: team PE `i` is parent PE `start + i*stride`, so a
    /// negative stride makes a team in reverse parent order (`start` is then its highest parent
    /// PE). Every member must lie inside the parent; a zero stride allows only `size` 1.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let n = shmem.n_pes();
    /// let rev = shmem.team_world().split_strided_signed(n - 1, -1, n, Default::default())?.unwrap();
    /// assert_eq!(rev.my_pe()?, n - 1 - shmem.my_pe());
    /// assert_eq!(rev.members()?, (0..n).rev().collect::<Vec<_>>());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn split_strided_signed(
        &self,
        start: usize,
        stride: isize,
        size: usize,
        config: TeamConfig,
    ) -> Result<Option<Team>> {
        self.split_strided_signed_masked(start, stride, size, config, SHMEM_TEAM_NUM_CONTEXTS)
    }

    /// [`split_strided`](Self::split_strided) with the C API's `config_mask`: only the options
    /// whose bit is set are taken from `config`, the others keep their defaults.
    #[doc(hidden)]
    pub fn split_strided_masked(
        &self,
        start: usize,
        stride: usize,
        size: usize,
        config: TeamConfig,
        config_mask: i64,
    ) -> Result<Option<Team>> {
        // A stride past isize::MAX cannot reach a second member; it is refused below like any
        // other stride that leaves the parent.
        let stride = isize::try_from(stride).unwrap_or(isize::MAX);
        self.split_strided_signed_masked(start, stride, size, config, config_mask)
    }

    /// [`split_strided_signed`](Self::split_strided_signed) with the C API's `config_mask`.
    #[doc(hidden)]
    pub fn split_strided_signed_masked(
        &self,
        start: usize,
        stride: isize,
        size: usize,
        config: TeamConfig,
        config_mask: i64,
    ) -> Result<Option<Team>> {
        const F: &str = "shmem_team_split_strided";
        let (rt, t) = self.live(F)?;
        let config = masked(config, config_mask);
        let args = [start as u64, stride as i64 as u64, size as u64, config.num_contexts as u64];
        let recs = rt.team_exchange(t, F, &args)?;
        let mask = agree(rt, F, &recs, &args, |i| {
            format!("split_strided(start {}, stride {}, size {})", recs[i][1], recs[i][2] as i64, recs[i][3])
        })?;
        let n = t.n();
        let Some(parent_idx) = strided_indices(start, stride, size, n) else {
            return Err(Error::new(
                rt.me,
                F,
                ErrorKind::InvalidArgument(format!(
                    "start {start}, stride {stride}, size {size} do not fit in the parent team of {n} PEs"
                )),
            ));
        };
        let slot = pick_slot(rt, F, mask, 0)?;
        Ok(self.make_child(rt, slot, &parent_idx, config, config_mask))
    }

    fn make_child(
        &self,
        rt: &Runtime,
        slot: usize,
        parent_idx: &[usize],
        config: TeamConfig,
        config_mask: i64,
    ) -> Option<Team> {
        let t = &self.0;
        // Team PE i is parent PE parent_idx[i]: the parent's order, reversed by a negative
        // stride (OpenSHMEM 1.6), never re-sorted by world PE.
        let members: Vec<usize> = parent_idx.iter().map(|&i| t.members[i]).collect();
        let me = parent_idx.iter().position(|&i| i == t.me)?;
        rt.teams.take(slot);
        Some(Team(Arc::new(TeamInner {
            slot,
            ascending: members.is_sorted(),
            members,
            me,
            config,
            config_mask,
            destroyed: AtomicBool::new(false),
            name: "",
        })))
    }

    /// Splits this team into a 2-D grid with `xrange` columns (`shmem_team_split_2d`):
    /// returns this PE's row team (x) and column team (y). Collective over this team.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let (x, y) = shmem.team_world().split_2d(2, Default::default(), Default::default())?;
    /// let (x, y) = (x.unwrap(), y.unwrap());
    /// assert_eq!(x.my_pe()?, shmem.my_pe() % 2);
    /// assert_eq!(y.my_pe()?, shmem.my_pe() / 2);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn split_2d(
        &self,
        xrange: usize,
        xconfig: TeamConfig,
        yconfig: TeamConfig,
    ) -> Result<(Option<Team>, Option<Team>)> {
        self.split_2d_masked(xrange, xconfig, SHMEM_TEAM_NUM_CONTEXTS, yconfig, SHMEM_TEAM_NUM_CONTEXTS)
    }

    /// [`split_2d`](Self::split_2d) with the C API's config masks.
    #[doc(hidden)]
    pub fn split_2d_masked(
        &self,
        xrange: usize,
        xconfig: TeamConfig,
        xmask: i64,
        yconfig: TeamConfig,
        ymask: i64,
    ) -> Result<(Option<Team>, Option<Team>)> {
        const F: &str = "shmem_team_split_2d";
        let (rt, t) = self.live(F)?;
        let (xconfig, yconfig) = (masked(xconfig, xmask), masked(yconfig, ymask));
        let args = [xrange as u64, xconfig.num_contexts as u64, yconfig.num_contexts as u64, 0];
        let recs = rt.team_exchange(t, F, &args)?;
        let mask = agree(rt, F, &recs, &args, |i| format!("split_2d(xrange {})", recs[i][1]))?;
        if xrange == 0 {
            return Err(Error::new(rt.me, F, ErrorKind::InvalidArgument("xrange must be at least 1".into())));
        }
        let n = t.n();
        let xslot = pick_slot(rt, F, mask, 0)?;
        let yslot = pick_slot(rt, F, mask & !(1u64 << xslot), 0)?;
        let xr = xrange.min(n);
        let row = t.me / xr;
        let col = t.me % xr;
        let xs: Vec<usize> = (row * xr..((row + 1) * xr).min(n)).collect();
        let ys: Vec<usize> = (col..n).step_by(xr).collect();
        let x = self.make_child(rt, xslot, &xs, xconfig, xmask);
        let y = self.make_child(rt, yslot, &ys, yconfig, ymask);
        Ok((x, y))
    }

    /// Destroys the team (`shmem_team_destroy`); collective over its members. Using any handle
    /// of it afterwards is an error. The world and shared teams cannot be destroyed.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// if let Some(t) = shmem.team_world().split_strided(0, 1, 1, Default::default())? {
    ///     t.destroy()?;
    /// }
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        const F: &str = "shmem_team_destroy";
        let (rt, t) = self.live(F)?;
        if t.slot == WORLD_SLOT || t.slot == SHARED_SLOT {
            return Err(Error::new(rt.me, F, ErrorKind::InvalidArgument(format!("{} cannot be destroyed", t.name))));
        }
        rt.team_barrier(t, F)?;
        t.destroyed.store(true, Ordering::Release);
        // The barrier proved every write into this slot's flags has been seen: zero it for
        // the next team that takes the slot.
        let (off, len) = rt.slots.span(t.slot);
        // SAFETY: the slot lies inside this PE's own heap segment mapping, and no PE writes it
        // any more (see above).
        unsafe { ((rt.heap.base + off) as *mut u8).write_bytes(0, len) };
        rt.teams.streams[t.slot].reset();
        rt.teams.give_back(t.slot);
        Ok(())
    }
}

/// `config` with every option whose bit is not in `mask` at its default (OpenSHMEM 1.5
/// §9.4.3: "A config_mask value of 0 indicates that the team should be created with the
/// default values for all configuration parameters").
fn masked(config: TeamConfig, mask: i64) -> TeamConfig {
    let d = TeamConfig::default();
    TeamConfig { num_contexts: if mask & SHMEM_TEAM_NUM_CONTEXTS != 0 { config.num_contexts } else { d.num_contexts } }
}

/// The parent indices `start + i*stride`, `i < size`, when they all lie in `0..n` (a zero
/// stride only for `size` 1); `None` otherwise.
fn strided_indices(start: usize, stride: isize, size: usize, n: usize) -> Option<Vec<usize>> {
    if size == 0 || start >= n || (stride == 0 && size > 1) {
        return None;
    }
    // The indices are monotonic: the first and the last bound them all.
    let last = i128::try_from(size - 1).ok()?.checked_mul(stride as i128)?.checked_add(start as i128)?;
    if last < 0 || last >= n as i128 {
        return None;
    }
    Some((0..size).map(|i| (start as i128 + i as i128 * stride as i128) as usize).collect())
}

/// Checks that every member passed `args`; returns the AND of their free-slot masks.
fn agree(
    rt: &Runtime,
    func: &'static str,
    recs: &[[u64; 5]],
    args: &[u64; 4],
    describe: impl Fn(usize) -> String,
) -> Result<u64> {
    let mut mask = !0u64;
    for (i, r) in recs.iter().enumerate() {
        if r[1..] != args[..] {
            return Err(Error::new(
                rt.me,
                func,
                ErrorKind::CollectiveMismatch(format!(
                    "team member {i} called {}, this PE called with {:?}",
                    describe(i),
                    args
                )),
            ));
        }
        mask &= r[0];
    }
    Ok(mask)
}

fn pick_slot(rt: &Runtime, func: &'static str, mask: u64, _skip: usize) -> Result<usize> {
    if mask == 0 {
        return Err(Error::new(
            rt.me,
            func,
            ErrorKind::InvalidArgument(format!(
                "no free team slot: at most {} teams besides the world and shared teams may exist at once; destroy unused teams",
                MAX_TEAMS - 3
            )),
        ));
    }
    Ok(mask.trailing_zeros() as usize)
}

impl Runtime {
    /// Every member publishes `[free-slot mask, args…]` and reads everyone's; collective.
    fn team_exchange(&self, t: &TeamInner, func: &'static str, args: &[u64; 4]) -> Result<Vec<[u64; 5]>> {
        let mut rec = [0u64; 5];
        rec[0] = self.teams.free_mask();
        rec[1..].copy_from_slice(args);
        let mine = self.local_addr(self.slots.xchg(t.slot, 0)) as *mut [u64; 5];
        // SAFETY: the exchange record lies in this PE's own mapped slot; nobody else writes it.
        unsafe { mine.write_volatile(rec) };
        self.team_barrier(t, func)?;
        let mut out = Vec::with_capacity(t.n());
        for &w in &t.members {
            let mut r = [0u64; 5];
            // SAFETY: r is a local of exactly 40 bytes.
            unsafe { self.get_raw(w, self.slots.xchg(t.slot, 0), (&raw mut r).cast(), size_of_val(&r), func)? };
            out.push(r);
        }
        // Nobody may overwrite its record before everyone has read it.
        self.team_barrier(t, func)?;
        Ok(out)
    }
}

/// Team creation options mask bit (`SHMEM_TEAM_NUM_CONTEXTS`).
pub const SHMEM_TEAM_NUM_CONTEXTS: i64 = 1;

impl crate::Shmem {
    /// `SHMEM_TEAM_WORLD`: every PE.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let w = shmem.team_world();
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn team_world(&self) -> Team {
        crate::world::ever_initialized().expect("a Shmem handle exists only after init").teams.world.clone()
    }

    /// `SHMEM_TEAM_SHARED`: the PEs of this host (whose memory this PE can map).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.team_shared();
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn team_shared(&self) -> Team {
        crate::world::ever_initialized().expect("a Shmem handle exists only after init").teams.shared.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_indices_of_either_sign() {
        assert_eq!(strided_indices(0, 2, 3, 6), Some(vec![0, 2, 4]));
        assert_eq!(strided_indices(5, -2, 3, 6), Some(vec![5, 3, 1]));
        assert_eq!(strided_indices(5, -1, 6, 6), Some(vec![5, 4, 3, 2, 1, 0]));
        assert_eq!(strided_indices(3, 0, 1, 6), Some(vec![3]));
        assert_eq!(strided_indices(3, -7, 1, 6), Some(vec![3]), "one member: the stride is never used");
        // Leaving the parent at either end, or nothing at all, is refused.
        assert_eq!(strided_indices(5, -2, 4, 6), None);
        assert_eq!(strided_indices(0, -1, 2, 6), None);
        assert_eq!(strided_indices(4, 1, 3, 6), None);
        assert_eq!(strided_indices(6, -1, 1, 6), None);
        assert_eq!(strided_indices(0, 1, 0, 6), None);
        assert_eq!(strided_indices(0, 0, 2, 6), None);
        // Extremes overflow nothing.
        assert_eq!(strided_indices(5, isize::MIN, 2, 6), None);
        assert_eq!(strided_indices(5, isize::MAX, 2, 6), None);
        assert_eq!(strided_indices(usize::MAX, -1, usize::MAX, 6), None);
        assert_eq!(strided_indices(5, -1, usize::MAX, 6), None);
    }

    #[test]
    fn config_outside_the_mask_is_the_default() {
        let c = TeamConfig { num_contexts: 3 };
        assert_eq!(masked(c, 0), TeamConfig::default());
        assert_eq!(masked(c, SHMEM_TEAM_NUM_CONTEXTS), c);
        assert_eq!(masked(c, 2), TeamConfig::default(), "bits without an option select nothing");
    }
}
