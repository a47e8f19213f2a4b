//! The collective sequence check: every collective knows which routine it is and its number
//! on its team, says so in each signal and message it sends, and checks what it receives, so
//! that PEs in different collectives — a barrier against a reduction, a PE that skipped one, a
//! sync against a barrier, an extra barrier against the others' finalize — all fail, naming
//! both calls, instead of waiting for each other forever.
//!
//! - Each PE counts the collectives it enters on each team slot ([`Runtime::coll_begin`]):
//!   collective number `k` of a team is the same collective on every member, as long as they
//!   make the same calls.
//! - A signal carries a *tag* beside its count, in the same cache line: the routine (code,
//!   operation, type) and the low 32 bits of the number. A message carries the routine in its
//!   header (the collective kind, operation and type the checked exchange compares anyway) and
//!   the low 16 bits of the number.
//! - Each wait looks at both places a peer can write the next item of its stream to this PE —
//!   the arrival flag (a signal) and the mailbox (a message) — and takes whichever comes: a
//!   barrier that gets a message, or an exchange that gets a signal, has met another
//!   collective. Tags and headers must name the same routine (or one the caller accepts as the
//!   same: [`same_collective`]) and the same number.
//! - A PE that finds a mismatch sends a *poison* signal to every member it has not sent to in
//!   this collective, naming the culprit, so that no member waits for it; a member that gets
//!   poison fails too and passes it on. Every member of a collective that a member missed
//!   therefore fails: a dissemination barrier completes on a member only through a chain of
//!   signals from every member, and an exchange only with an item from every member.
//! - The team is then unusable on that PE ([`Runtime::coll_begin`] refuses every later
//!   collective on it, `shmem_finalize` included, with the first error's text): its streams
//!   are no longer in step, and a program that called collectives out of order cannot go on.
//!
//! The deprecated active-set routines share one slot among all active sets, so their numbers
//! are not comparable between PEs: there only the routine is checked.

use std::sync::atomic::Ordering;

use oxshmem_bootstrap::status::{self, Arg, Routine, code};
use parking_lot::Mutex;

use crate::coll::header::Seen;
use crate::error::{Error, ErrorKind, Result};
use crate::team::{ACTIVE_SLOT, SHARED_SLOT, WORLD_SLOT};
use crate::world::Runtime;

/// Set in a slot's collective counter once a collective on it failed this way.
const BROKEN: u64 = 1 << 63;
/// Set in a tag that says "a member found a mismatch in this collective".
pub(crate) const POISON: u64 = 1 << 47;

/// A tag: routine bits in the high half, the low 32 bits of the collective number below.
#[inline(always)]
pub(crate) const fn tag(r: Routine, seq: u64) -> u64 {
    (r.bits() as u64) << 32 | (seq & 0xffff_ffff)
}

fn tag_routine(t: u64) -> Routine {
    Routine::from_bits(((t & !POISON) >> 32) as u32)
}

/// The full collective number nearest to `near` whose low `bits` bits are `low`.
fn widen(near: u64, low: u64, bits: u32) -> u64 {
    let m = (1u64 << bits) - 1;
    let d = low.wrapping_sub(near) & m;
    let d = if d > m / 2 { d as i64 - (m as i64 + 1) } else { d as i64 };
    near.wrapping_add_signed(d)
}

/// Routines that are the same collective whoever calls which: `shmem_sync_all` and
/// `shmem_team_sync` (on the world team: the specification defines one by the other), and the
/// collective allocation routines, whose barrier compares the calls itself and names both.
fn class(r: Routine) -> (u16, u8, u8) {
    match r.code {
        code::SYNC_ALL | code::TEAM_SYNC => (code::SYNC_ALL, 0, 0),
        code::MALLOC..=code::MALLOC_WITH_HINTS => (code::MALLOC, 0, 0),
        c => (c, r.op, r.ty),
    }
}

/// Whether tags `a` and `b` are the same collective (poison is none).
#[inline(always)]
pub(crate) fn same_collective(a: u64, b: u64) -> bool {
    a == b || same_class(a, b)
}

/// [`same_collective`] for tags that differ: off the barrier's path.
#[cold]
#[inline(never)]
fn same_class(a: u64, b: u64) -> bool {
    (a | b) & POISON == 0 && a as u32 == b as u32 && class(tag_routine(a)) == class(tag_routine(b))
}

/// The collective a PE is in: the team slot, the routine, its number there and its tag.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Coll {
    pub(crate) slot: usize,
    pub(crate) routine: Routine,
    pub(crate) seq: u64,
    pub(crate) tag: u64,
}

/// Another PE's collective, as a mismatch names it.
#[derive(Debug, Clone, Copy)]
struct Theirs {
    pe: usize,
    routine: Routine,
    seq: u64,
    /// The member that found it and sent word of it, when this PE did not see it itself.
    found_by: Option<usize>,
}

/// Why each broken slot is broken (the first error's text), for the errors of later calls.
static BROKEN_WHY: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

impl Runtime {
    /// The counter of collectives this PE entered in `slot`, kept in the slot's stream to
    /// itself (no PE sends itself anything), which team destroy resets with the others.
    #[inline(always)]
    fn coll_counter(&self, slot: usize) -> &std::sync::atomic::AtomicU64 {
        &self.teams.streams[slot].sent[self.me]
    }

    /// The tag of the collective this PE is in on `slot` (kept beside the counter), which the
    /// signals of its later phases carry.
    #[inline(always)]
    pub(crate) fn cur_tag(&self, slot: usize) -> u64 {
        self.teams.streams[slot].recvd[self.me].load(Ordering::Relaxed)
    }

    /// Enters the next collective on `slot`: `r`, among `members` (world PEs, for messages).
    /// Refuses it when an earlier one on the slot failed with a mismatch.
    #[inline(always)]
    pub(crate) fn coll_begin(&self, slot: usize, r: Routine, members: &[usize], func: &'static str) -> Result<Coll> {
        if self.teams.streams[slot].owes.load(Ordering::Relaxed) {
            self.settle_broadcast(slot, members)?;
        }
        self.settle_active_broadcast_from(slot);
        let counter = self.coll_counter(slot);
        let w = counter.load(Ordering::Relaxed);
        if w & BROKEN != 0 {
            return Err(self.broken_error(slot, members, func));
        }
        let seq = w + 1;
        counter.store(seq, Ordering::Relaxed);
        let tag = tag(r, if slot == ACTIVE_SLOT { 0 } else { seq });
        self.teams.streams[slot].recvd[self.me].store(tag, Ordering::Relaxed);
        status::enter(r, Some(slot as u16), seq, Arg::None);
        Ok(Coll { slot, routine: r, seq, tag })
    }

    #[cold]
    fn broken_error(&self, slot: usize, members: &[usize], func: &'static str) -> Error {
        let why = BROKEN_WHY.lock().iter().find(|(s, _)| *s == slot).map(|(_, w)| w.clone()).unwrap_or_default();
        Error::new(
            self.me,
            func,
            ErrorKind::CollectiveSequence(format!(
                "{}: no collective can run on it any more, after an earlier one failed ({why})",
                team_text(slot, members)
            )),
        )
    }

    /// The error of collective `c` (among `members`) that met `seen` from world PE `from`, and
    /// everything that goes with it: poison to every member in `unsent` (those this PE has
    /// sent nothing to in this collective), and the slot marked unusable.
    #[cold]
    #[inline(never)]
    pub(crate) fn coll_mismatch(
        &self,
        c: &Coll,
        members: &[usize],
        unsent: impl Iterator<Item = usize>,
        from: usize,
        seen: Seen,
        func: &'static str,
    ) -> Error {
        let theirs = self.theirs(c, from, seen);
        let words = (theirs.pe as u64 | u64::from(theirs.routine.bits()) << 32, theirs.seq);
        for to in unsent {
            // Best effort: a member this PE cannot reach any more gets nothing.
            let _ = self.sig_send_tagged(c.slot, to, c.tag | POISON, Some(words), func);
        }
        let active = c.slot == ACTIVE_SLOT;
        let number = |seq: u64| if active { String::new() } else { format!(" (collective #{seq})") };
        let mut text = format!(
            "{}: this PE is in {}{} but PE {} is in {}{}",
            team_text(c.slot, members),
            status::routine_name(c.routine, active),
            number(c.seq),
            theirs.pe,
            status::routine_name(theirs.routine, active),
            number(theirs.seq),
        );
        if let Some(by) = theirs.found_by {
            text += &format!(", as PE {by} found");
        }
        self.coll_counter(c.slot).fetch_or(BROKEN, Ordering::Relaxed);
        let mut why = BROKEN_WHY.lock();
        why.retain(|(s, _)| *s != c.slot);
        why.push((c.slot, format!("collective #{}: {}", c.seq, text.split_once(": ").map_or("", |x| x.1))));
        Error::new(self.me, func, ErrorKind::CollectiveSequence(text))
    }

    /// Who is where, from what this PE saw.
    fn theirs(&self, c: &Coll, from: usize, seen: Seen) -> Theirs {
        match seen {
            Seen::Message(h) => {
                Theirs { pe: from, routine: h.routine(), seq: widen(c.seq, u64::from(h.seq), 16), found_by: None }
            }
            Seen::Signal(t, (w0, w1)) => {
                let first_hand = Theirs { pe: from, routine: tag_routine(t), seq: widen(c.seq, t, 32), found_by: None };
                if t & POISON == 0 || !same_collective(t & !POISON, c.tag) {
                    // A signal of another collective, or poison from a member that is itself
                    // in another collective than this PE: that member is the mismatch.
                    return first_hand;
                }
                let culprit = (w0 & 0xffff_ffff) as usize;
                if culprit == self.me || culprit >= self.n {
                    return first_hand;
                }
                Theirs { pe: culprit, routine: Routine::from_bits((w0 >> 32) as u32), seq: w1, found_by: Some(from) }
            }
        }
    }
}

/// How messages name the team of `slot` with world PEs `members`.
pub(crate) fn team_text(slot: usize, members: &[usize]) -> String {
    let list = || {
        let shown: Vec<String> = members.iter().take(8).map(usize::to_string).collect();
        let more = if members.len() > 8 { format!(", … ({} PEs)", members.len()) } else { String::new() };
        format!("{}{more}", shown.join(", "))
    };
    match slot {
        WORLD_SLOT => "the world team".into(),
        SHARED_SLOT => format!("the shared team (PEs {})", list()),
        ACTIVE_SLOT => format!("the active set of PEs {}", list()),
        _ => format!("the team of PEs {}", list()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_widen_to_the_nearest() {
        assert_eq!(widen(7, 7, 16), 7);
        assert_eq!(widen(7, 8, 16), 8);
        assert_eq!(widen(70_000, 70_001 & 0xffff, 16), 70_001);
        assert_eq!(widen(65_537, 65_535, 16), 65_535);
    }

    #[test]
    fn sync_all_and_team_sync_are_one_collective_but_barrier_is_not() {
        let t = |c, s| tag(Routine::of(c), s);
        assert!(same_collective(t(code::SYNC_ALL, 7), t(code::TEAM_SYNC, 7)));
        assert!(same_collective(t(code::MALLOC, 3), t(code::FREE, 3)));
        assert!(!same_collective(t(code::SYNC_ALL, 7), t(code::BARRIER_ALL, 7)));
        assert!(!same_collective(t(code::BARRIER_ALL, 7), t(code::BARRIER_ALL, 8)));
        assert!(!same_collective(t(code::BARRIER_ALL, 7), t(code::FINALIZE, 7)));
        assert_eq!(tag_routine(t(code::FINALIZE, 9) | POISON), Routine::of(code::FINALIZE));
        assert!(!same_collective(t(code::SYNC_ALL, 7) | POISON, t(code::SYNC_ALL, 7)));
    }
}
