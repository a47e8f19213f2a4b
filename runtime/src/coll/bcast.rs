//! Broadcast: root's source to every member's destination.
//!
//! Broadcast is the one collective whose data flows one way, so it does not open with the
//! all-to-all checked exchange of the others: the root sends each member one message, its
//! header (plus the data, when small), and each member sends only the root its own header.
//! No member hears from any member but the root.
//!
//! - Small (fits a mailbox after the header): the root's message carries the data and **the
//!   root does not wait for anyone**: it returns once its messages are written. The members'
//!   headers stay in its mailboxes until its next collective on the team begins
//!   ([`Runtime::settle_broadcast`]), where it takes them, so the streams stay in step. A
//!   member that disagrees with the root fails at once; the root learns of it only then, and
//!   says so on stderr (its own call did what it was asked).
//! - Large: every member checks the root's header, copies straight from the root's source
//!   into its own destination (all members in parallel, one copy each) and signals the root,
//!   which takes every member's header at once (so it fails with any member that disagrees)
//!   and returns once every agreeing member is done reading its source.
//!
//! A member that rejects its own arguments ([`Runtime::reject_broadcast`]) still sends and
//! takes its messages, marked invalid, so nobody waits for it.
//!
//! What the star costs: members that disagree with the root learn it, but members that agree
//! with it never hear of each other. Members that disagree on the root itself, or a member in
//! another collective where the others broadcast, cannot be matched up any more: they fail
//! as collectives in different places do (`sequence.rs`: the team is unusable afterwards,
//! and every member is told, so none waits forever), where the all-to-all exchange gave every
//! member a `CollectiveMismatch` and kept the team.

use std::sync::atomic::Ordering;

use crate::coll::header::{Group, Header, PerMember, Seen, kind};
use crate::coll::sequence::{Coll, POISON};
use crate::coll::wire::{HDR, Item, payload_of};
use crate::error::{Error, ErrorKind, Result};
use crate::team::{ACTIVE_SLOT, Chan, PARKED_WORDS, Parked};
use crate::transport::SymAddr;
use crate::world::Runtime;

/// The headers a small broadcast's root has not yet taken: one from each member but itself.
/// What the root parks on the slot meanwhile lives in the slot's [`Parked`] words (the team
/// layer keeps the words; this module alone gives them their meaning): the broadcast's
/// number, tag and routine, the root's own header as sent, and the root's place among the
/// members.
///
/// Plain atomics, written with relaxed stores: the root must not execute a locked
/// instruction (a mutex) after its messages, or it waits for their cache lines to reach the
/// members, which is the very trip it does not wait for.
struct Owed<'a>(&'a Parked);

/// The words of [`Owed`]: seq, tag, routine, the header, the root's place.
const OWED_WORDS: usize = 3 + HDR / 8 + 1;
const _: () = assert!(OWED_WORDS <= PARKED_WORDS, "the parked words of a slot hold a broadcast's");

impl Owed<'_> {
    fn put(&self, c: &Coll, hdr: &Header, me: usize) {
        let [seq, tag, routine, rest @ ..] = &self.0[..] else { unreachable!() };
        seq.store(c.seq, Ordering::Relaxed);
        tag.store(c.tag, Ordering::Relaxed);
        routine.store(u64::from(c.routine.bits()), Ordering::Relaxed);
        let words: [u64; HDR / 8] = bytemuck::cast(*hdr);
        for (a, w) in rest.iter().zip(words) {
            a.store(w, Ordering::Relaxed);
        }
        rest[HDR / 8].store(me as u64, Ordering::Relaxed);
    }

    fn get(&self, slot: usize) -> (Coll, Header, usize) {
        let [seq, tag, routine, rest @ ..] = &self.0[..] else { unreachable!() };
        let c = Coll {
            slot,
            routine: oxshmem_bootstrap::status::Routine::from_bits(routine.load(Ordering::Relaxed) as u32),
            seq: seq.load(Ordering::Relaxed),
            tag: tag.load(Ordering::Relaxed),
        };
        let mut words = [0u64; HDR / 8];
        for (w, a) in words.iter_mut().zip(rest) {
            *w = a.load(Ordering::Relaxed);
        }
        (c, bytemuck::cast(words), rest[HDR / 8].load(Ordering::Relaxed) as usize)
    }
}

/// The data side of a broadcast that this PE takes part in with valid arguments.
#[derive(Debug, Clone, Copy)]
struct Data {
    dest: SymAddr,
    src: SymAddr,
    include_root: bool,
}

impl Runtime {
    /// Broadcasts `nbytes` from `src` on member `root` to `dest` on every member (on the root
    /// too when `include_root`, as OpenSHMEM 1.5's team broadcast does; the deprecated
    /// active-set form leaves the root's `dest` alone).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn broadcast(
        &self,
        g: Group<'_>,
        dest: SymAddr,
        src: SymAddr,
        nbytes: usize,
        root: usize,
        include_root: bool,
        type_id: u32,
        func: &'static str,
    ) -> Result<()> {
        let mut hdr = Header::new(kind::BCAST);
        hdr.root = root as u32;
        hdr.count = nbytes as u64;
        hdr.type_id = type_id;
        self.bcast(g, hdr, Some(Data { dest, src, include_root }), func)
    }

    /// Takes part in a broadcast from `root` whose arguments this PE rejected (`err`): its
    /// messages say so, so that no member waits for data, and it returns `err`. With no valid
    /// root, nobody can be waited for or waits: it only counts the collective.
    pub(crate) fn reject_broadcast(
        &self,
        g: Group<'_>,
        root: Option<usize>,
        err: Error,
        func: &'static str,
    ) -> Result<()> {
        let mut hdr = Header::new(kind::BCAST);
        hdr.invalid = 1;
        match root {
            Some(r) if r < g.n() => {
                hdr.root = r as u32;
                // Any error of the exchange itself says less than the rejection.
                let _ = self.bcast(g, hdr, None, func);
            }
            _ => {
                self.coll_begin(g.slot, hdr.routine(), g.members, func)?;
            }
        }
        Err(err)
    }

    fn bcast(&self, g: Group<'_>, hdr: Header, data: Option<Data>, func: &'static str) -> Result<()> {
        let n = g.n();
        let root = hdr.root as usize;
        if root >= n {
            self.coll_begin(g.slot, hdr.routine(), g.members, func)?;
            return Err(Error::new(self.me, func, ErrorKind::PeOutOfRange { pe: root as i128, n_pes: n }));
        }
        let c = self.coll_begin(g.slot, hdr.routine(), g.members, func)?;
        let mut mine = hdr;
        mine.set = g.set;
        mine.seq = c.seq as u16;
        let nbytes = hdr.count as usize;
        let small = nbytes <= self.inline_max();
        if g.me == root {
            self.bcast_root(g, &c, mine, data, small, func)
        } else {
            self.bcast_member(g, &c, mine, data, func)
        }
    }

    fn bcast_root(
        &self,
        g: Group<'_>,
        c: &Coll,
        mine: Header,
        data: Option<Data>,
        small: bool,
        func: &'static str,
    ) -> Result<()> {
        let n = g.n();
        let nbytes = mine.count as usize;
        let src_ptr = data.map_or(std::ptr::null(), |d| self.local_addr(d.src) as *const u8);
        let (p, len) = if small && data.is_some() { (src_ptr, nbytes) } else { (std::ptr::null(), 0) };
        let mut h = mine;
        h.payload = len as u16;
        for k in 1..n {
            let j = (g.me + k) % n;
            // SAFETY: h is a local of HDR bytes; the payload is the root's own symmetric
            // source of nbytes bytes.
            unsafe { self.mb_send_parts(g.slot, g.members[j], &[((&raw const h).cast(), HDR), (p, len)], func)? };
        }
        if let Some(d) = data
            && d.include_root
            && nbytes > 0
        {
            // SAFETY: both are symmetric ranges of nbytes in our own segment (may alias).
            unsafe { std::ptr::copy(src_ptr, self.local_addr(d.dest) as *mut u8, nbytes) };
        }
        if small || data.is_none() {
            // Nobody reads our source: the members' headers can wait for our next collective.
            let st = &self.teams.streams[g.slot];
            Owed(&st.parked).put(c, &mine, g.me);
            st.owes.store(true, Ordering::Relaxed);
            return Ok(());
        }
        // Large: the members read our source. Take every header now; wait for the members
        // that agree, which are the ones that read.
        let mut bad = None;
        let mut readers = Vec::with_capacity(n - 1);
        for k in 1..n {
            let j = (g.me + k) % n;
            match self.take_header(g.slot, c, &mine, g.members, j, false, func)? {
                Ok(()) => readers.push(j),
                Err(h) => {
                    bad.get_or_insert((j, h));
                }
            }
        }
        for j in readers {
            self.sig_wait(g.slot, g.members[j]);
        }
        match bad {
            Some((j, h)) => Err(self.disagreement(g, j, &h, &mine, func)),
            None => Ok(()),
        }
    }

    fn bcast_member(&self, g: Group<'_>, c: &Coll, mine: Header, data: Option<Data>, func: &'static str) -> Result<()> {
        let root = mine.root as usize;
        let rpe = g.members[root];
        // Our header first: the root of a large broadcast waits for it.
        // SAFETY: mine is a local of HDR bytes.
        unsafe { self.mb_send_parts(g.slot, rpe, &[((&raw const mine).cast(), HDR)], func)? };
        let from = match self.wait_for_root(g, rpe, mine.seq) {
            Some(j) => g.members[j],
            None => rpe,
        };
        let mail = match self.recv_item(g.slot, from, false) {
            Item::Mail(mail) if from == rpe => mail,
            item => {
                let seen = match item {
                    Item::Mail(mail) => {
                        // SAFETY: a message begins with its header (HDR bytes).
                        let h: Header = unsafe { mail.ptr.cast::<Header>().read_unaligned() };
                        self.mb_release(g.slot, from, mail, func)?;
                        Seen::Message(h)
                    }
                    Item::Signal(tag) => Seen::Signal(tag, self.signal_words(g.slot, from)),
                };
                // Tell everyone but the root (which has our header): another member saw
                // another root, and whoever waits for us must not wait forever.
                let unsent = g.members.iter().copied().filter(|&w| w != rpe && w != self.me);
                return Err(self.coll_mismatch(c, g.members, unsent, from, seen, func));
            }
        };
        // SAFETY: the root's message begins with its header (HDR bytes).
        let h: Header = unsafe { mail.ptr.cast::<Header>().read_unaligned() };
        if (h.seq != mine.seq && g.slot != ACTIVE_SLOT) || h.kind != mine.kind {
            self.mb_release(g.slot, rpe, mail, func)?;
            let unsent = g.members.iter().copied().filter(|&w| w != rpe && w != self.me);
            return Err(self.coll_mismatch(c, g.members, unsent, rpe, Seen::Message(h), func));
        }
        if !mine.agrees(&h) {
            self.mb_release(g.slot, rpe, mail, func)?;
            return Err(self.disagreement(g, root, &h, &mine, func));
        }
        let Some(d) = data else {
            // An agreeing header marked invalid is ours: rejected (agrees() refuses invalid
            // headers, so this is not reached).
            self.mb_release(g.slot, rpe, mail, func)?;
            return Ok(());
        };
        let nbytes = h.count as usize;
        let dst_ptr = self.local_addr(d.dest) as *mut u8;
        if usize::from(h.payload) == nbytes {
            // SAFETY: the root's message carries nbytes of payload after its header.
            unsafe { std::ptr::copy_nonoverlapping(payload_of(&mail), dst_ptr, nbytes) };
            self.mb_release(g.slot, rpe, mail, func)?;
        } else {
            self.mb_release(g.slot, rpe, mail, func)?;
            // SAFETY: dst_ptr is our own symmetric destination of nbytes bytes.
            unsafe { self.get_raw(rpe, d.src, dst_ptr, nbytes, func)? };
            self.sig_send(g.slot, rpe, func)?;
        }
        Ok(())
    }

    /// Waits until the root's next item has arrived (`None`), or until member `j` has sent
    /// this PE something it never sends a member of a broadcast in which `j` is not the root
    /// (`Some(j)`): a message of this same broadcast (number `seq`: `j` took itself, or this
    /// PE, for the root), or poison. Members disagreeing on the root would otherwise wait for
    /// each other forever. Items of `j`'s later collectives are not looked at: `j` may be
    /// done with this broadcast before the root's message reaches this PE.
    fn wait_for_root(&self, g: Group<'_>, rpe: usize, seq: u16) -> Option<usize> {
        let st = &self.teams.streams[g.slot];
        let next = |pe: usize| st.recvd[pe].load(Ordering::Relaxed) + 1;
        let word = |a: SymAddr| {
            // SAFETY: a live, aligned u64 in our own copy of the slot, written atomically by
            // its sender.
            unsafe { std::sync::atomic::AtomicU64::from_ptr(self.local_addr(a) as *mut u64) }
        };
        let arrive = |pe: usize| self.slots.flag(g.slot, Chan::Arrive, pe);
        let (mail, signal) = (word(self.mailbox_next(g.slot, rpe)), word(arrive(rpe)));
        let c = next(rpe);
        let arrived = || mail.load(Ordering::Acquire) >= c || signal.load(Ordering::Acquire) >= c;
        if arrived() {
            return None;
        }
        let mut b = self.backoff().waiting_for(rpe);
        let mut polls = 0u32;
        loop {
            if arrived() {
                return None;
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) {
                for (j, &pe) in g.members.iter().enumerate() {
                    if pe == rpe || pe == self.me {
                        continue;
                    }
                    let cj = next(pe);
                    let m = self.mailbox_next(g.slot, pe);
                    if word(m).load(Ordering::Acquire) >= cj {
                        // SAFETY: the header follows the mailbox's 16 bytes of sequence words
                        // in our own copy of the slot, published by the release above.
                        let h: Header =
                            unsafe { (self.local_addr(m) as *const u8).add(16).cast::<Header>().read_unaligned() };
                        if h.kind == kind::BCAST && h.seq == seq {
                            return Some(j);
                        }
                    }
                    if word(arrive(pe)).load(Ordering::Acquire) >= cj
                        && self.signal_word_of(g.slot, pe, cj, 0) & POISON != 0
                    {
                        return Some(j);
                    }
                }
            }
            b.snooze();
        }
    }

    /// Takes member `j`'s header of collective `c` (whose own header was `mine`): `Ok(Ok)`
    /// when it agrees, `Ok(Err(its header))` when not, `Err` when `j` is in another
    /// collective altogether (the slot is then broken, as every such mismatch breaks it, and
    /// with `poison_all` every other member is told: a root that settles late may be waited
    /// for in its next collective by anyone).
    #[allow(clippy::too_many_arguments)]
    fn take_header(
        &self,
        slot: usize,
        c: &Coll,
        mine: &Header,
        members: &[usize],
        j: usize,
        poison_all: bool,
        func: &'static str,
    ) -> Result<std::result::Result<(), Header>> {
        let pe = members[j];
        let unsent = || members.iter().copied().filter(|&w| poison_all && w != self.me);
        let mail = match self.recv_item(slot, pe, false) {
            Item::Mail(mail) => mail,
            Item::Signal(tag) => {
                let seen = Seen::Signal(tag, self.signal_words(slot, pe));
                return Err(self.coll_mismatch(c, members, unsent(), pe, seen, func));
            }
        };
        // SAFETY: a message begins with its header (HDR bytes).
        let h: Header = unsafe { mail.ptr.cast::<Header>().read_unaligned() };
        self.mb_release(slot, pe, mail, func)?;
        // Another collective altogether (its number, or its kind: a member in an exchange
        // that took our message for its own, which waits for members that never write to it).
        if (h.seq != mine.seq && slot != ACTIVE_SLOT) || h.kind != mine.kind {
            return Err(self.coll_mismatch(c, members, unsent(), pe, Seen::Message(h), func));
        }
        Ok(if mine.agrees(&h) { Ok(()) } else { Err(h) })
    }

    /// Takes the headers a small broadcast's root left in its mailboxes on `slot`, before the
    /// root's next collective there receives anything. A member that disagreed has failed
    /// already; the root says so on stderr. A member in another collective altogether breaks
    /// the slot, and the error is the next collective's.
    #[cold]
    #[inline(never)]
    pub(crate) fn settle_broadcast(&self, slot: usize, members: &[usize]) -> Result<()> {
        self.settle_broadcast_if(slot, members, false).map(drop)
    }

    /// Takes an active-set broadcast's headers, if this PE owes any, while it is in a
    /// collective on `slot` elsewhere (the barrier that the deprecated routines' pSync rules
    /// put between two of them), when every one has arrived: the root's next broadcast then
    /// need not. Never waits: the members may well be in another team's collective with this
    /// PE first. Costs one relaxed load when nothing is owed.
    #[inline(always)]
    pub(crate) fn settle_active_broadcast_from(&self, slot: usize) {
        if slot != ACTIVE_SLOT && self.teams.streams[ACTIVE_SLOT].owes.load(Ordering::Relaxed) {
            self.try_settle_active_broadcast();
        }
    }

    #[cold]
    #[inline(never)]
    fn try_settle_active_broadcast(&self) {
        // An error here is the slot's, and the next active-set collective reports it.
        let _ = self.settle_broadcast_if(ACTIVE_SLOT, &[], true);
    }

    /// [`settle_broadcast`](Self::settle_broadcast); with `only_if_arrived`, does nothing
    /// (and returns false) unless every header is there already.
    fn settle_broadcast_if(&self, slot: usize, members: &[usize], only_if_arrived: bool) -> Result<bool> {
        const F: &str = "shmem_broadcast";
        let (c, hdr, me) = Owed(&self.teams.streams[slot].parked).get(slot);
        // A team's slot holds that team's members; the active sets share one slot, and the
        // broadcast's header names its set.
        let mut set_members = PerMember::new();
        let members = if slot == ACTIVE_SLOT {
            crate::coll::active_set::fill_members(hdr.set, &mut set_members);
            &set_members[..]
        } else {
            members
        };
        let n = members.len();
        let g = Group { slot, members, me, set: hdr.set };
        if only_if_arrived && !members.iter().all(|&pe| pe == self.me || self.next_item_arrived(slot, pe)) {
            return Ok(false);
        }
        self.teams.streams[slot].owes.store(false, Ordering::Relaxed);
        for k in 1..n {
            let j = (me + k) % n;
            match self.take_header(slot, &c, &hdr, members, j, true, F) {
                Ok(Ok(())) => {}
                Ok(Err(h)) => {
                    let e = self.disagreement(g, j, &h, &hdr, F);
                    eprintln!(
                        "{e} (in the broadcast this PE was the root of, collective #{} on its team: the root of a \
                         small broadcast does not wait for the members, and learns of it at its next collective; \
                         that member's call failed)",
                        c.seq
                    );
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}
