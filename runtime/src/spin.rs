//! The back-off of every polling loop: spin, then yield, then (optionally) nap.
//!
//! A [`SpinPolicy`] says how a loop waits between polls; each loop keeps its own policy (how
//! long it spins, whether it ever sleeps), as what it waits for differs: a remote store, a
//! NIC, a device thread. Loops that only spin and yield count their polls in a `u32`
//! ([`SpinPolicy::pause`]); loops that go on to nap need the clock as well ([`Spin`]).
//!
//! A leaf: it uses nothing of the runtime, so the transports (below `wait`, which builds the
//! runtime's waits over it) poll with it without importing `wait`. Its public path is
//! `oxshmem::wait::{SpinPolicy, Spin, Nap}`.

use std::time::{Duration, Instant};

/// How a polling loop waits between polls: `spins` polls that only spin
/// (`std::hint::spin_loop`), then a `std::thread::yield_now` per poll, and — with a [`Nap`] —
/// once yielding has lasted `nap.after`, a sleep of `nap.sleep` per poll instead.
///
/// ```
/// use oxshmem::wait::SpinPolicy;
///
/// let policy = SpinPolicy::spin_then_yield(2);
/// let mut polls = 0;
/// assert!(policy.spin(&mut polls) && policy.spin(&mut polls));
/// assert!(!policy.spin(&mut polls), "two spins, then the loop yields");
/// policy.pause(&mut polls);
/// assert_eq!(polls, 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpinPolicy {
    /// Polls that spin before the first yield.
    pub spins: u32,
    /// When yielding gives way to sleeping; `None`: the loop yields however long it waits.
    pub nap: Option<Nap>,
}

/// The last stage of a [`SpinPolicy`]: sleeping between polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nap {
    /// How long a wait yields on every poll before it starts to sleep between polls.
    pub after: Duration,
    /// The sleep between polls from then on.
    pub sleep: Duration,
}

/// A wait that yields looks at the clock (to know when to nap) once per this many yields: a
/// clock read costs as much as a poll.
const CLOCK_EVERY: u32 = 64;

impl SpinPolicy {
    /// Spin `spins` polls, then yield on every poll.
    pub const fn spin_then_yield(spins: u32) -> Self {
        SpinPolicy { spins, nap: None }
    }

    /// Yield on every poll, from the first.
    pub const YIELD: SpinPolicy = SpinPolicy::spin_then_yield(0);

    /// This policy, sleeping `sleep` per poll once yielding has lasted `after`.
    pub const fn nap_after(self, after: Duration, sleep: Duration) -> Self {
        SpinPolicy { nap: Some(Nap { after, sleep }), ..self }
    }

    /// Whether a wait that has polled `polls` times is past its spin phase.
    #[inline(always)]
    pub fn spun_out(&self, polls: u32) -> bool {
        polls >= self.spins
    }

    /// Spins once if a wait that has polled `*polls` times is still in its spin phase, and
    /// counts the poll; returns whether it did. A loop that does something of its own once the
    /// spin phase is over (drive a queue, check a deadline) starts each pause with this.
    #[inline(always)]
    pub fn spin(&self, polls: &mut u32) -> bool {
        if self.spun_out(*polls) {
            return false;
        }
        *polls += 1;
        std::hint::spin_loop();
        true
    }

    /// Waits once between two polls of a wait that has polled `*polls` times (counted here,
    /// saturating): a spin in the spin phase, a yield after it. A policy that naps needs the
    /// clock: use [`Spin`].
    #[inline(always)]
    pub fn pause(&self, polls: &mut u32) {
        debug_assert!(self.nap.is_none(), "a policy that naps keeps a clock: use Spin");
        if !self.spin(polls) {
            *polls = polls.saturating_add(1);
            std::thread::yield_now();
        }
    }
}

/// One wait under a [`SpinPolicy`], clock included: spins, yields, then naps.
#[derive(Debug, Clone)]
pub struct Spin {
    policy: SpinPolicy,
    /// Polls in the spin phase so far (up to `policy.spins`).
    polls: u32,
    /// Yields since the spin phase ended (`u32::MAX` once napping), and when it ended.
    yields: u32,
    since: Option<Instant>,
}

impl Spin {
    /// A wait that has not polled yet.
    #[inline(always)]
    pub const fn new(policy: SpinPolicy) -> Self {
        Spin { policy, polls: 0, yields: 0, since: None }
    }

    /// Whether the wait is still in its spin phase (its next pause spins).
    #[inline(always)]
    pub fn spinning(&self) -> bool {
        !self.policy.spun_out(self.polls)
    }

    /// Waits once between two polls.
    #[inline(always)]
    pub fn pause(&mut self) {
        if !self.policy.spin(&mut self.polls) {
            self.pause_long();
        }
    }

    /// Past the spin phase: yield, or — a while after the first yield, for a policy with a
    /// nap — sleep.
    #[cold]
    #[inline(never)]
    fn pause_long(&mut self) {
        let Some(nap) = self.policy.nap else {
            std::thread::yield_now();
            return;
        };
        let since = *self.since.get_or_insert_with(Instant::now);
        if self.yields < u32::MAX {
            self.yields += 1;
            if self.yields.is_multiple_of(CLOCK_EVERY) && since.elapsed() >= nap.after {
                self.yields = u32::MAX;
            } else {
                std::thread::yield_now();
                return;
            }
        }
        std::thread::sleep(nap.sleep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_spins_then_yields_and_counts_every_poll() {
        let p = SpinPolicy::spin_then_yield(3);
        let mut polls = 0;
        for _ in 0..3 {
            assert!(!p.spun_out(polls));
            p.pause(&mut polls);
        }
        assert!(p.spun_out(polls) && !p.spin(&mut polls), "three spins");
        assert_eq!(polls, 3, "a refused spin counts nothing");
        p.pause(&mut polls);
        assert_eq!(polls, 4, "a yield counts");
        let mut polls = u32::MAX;
        p.pause(&mut polls);
        assert_eq!(polls, u32::MAX, "saturates");
        let mut polls = 0;
        SpinPolicy::YIELD.pause(&mut polls);
        assert_eq!(polls, 1);
    }

    #[test]
    fn a_spin_naps_once_yielding_has_lasted() {
        let p = SpinPolicy::spin_then_yield(2).nap_after(Duration::from_millis(1), Duration::from_micros(10));
        let mut s = Spin::new(p);
        assert!(s.spinning());
        s.pause();
        s.pause();
        assert!(!s.spinning());
        assert!(s.since.is_none(), "no clock while spinning");
        s.pause();
        assert!(s.since.is_some() && s.yields == 1);
        std::thread::sleep(Duration::from_millis(2));
        for _ in 0..CLOCK_EVERY {
            s.pause();
        }
        assert_eq!(s.yields, u32::MAX, "napping after the 64th yield looked at the clock");
        let t = Instant::now();
        s.pause();
        assert!(t.elapsed() >= Duration::from_micros(10), "a nap sleeps");
    }
}
