//! How the device crate's waiting loops wait between polls: the channels' (the proxy and the
//! software NIC draining their queues, host-side quiet) and, for its spin phase, a device
//! thread's (`cpu::Waiter`). The atomics and cells of the lock-free queue code are
//! `crate::sync`'s.
//!
//! A wait spins, then yields on every poll. How long it spins adapts, per thread, to what
//! spinning has bought it lately ([`Pacing`]): on the CPU back end a device thread, its PE's
//! proxy and the PE itself compete for the cores, and whether the thread a wait depends on
//! runs beside it (a spin sees its answer in a fraction of a microsecond) or on the same core
//! (a spin only delays it: the answer comes after the waiter yields) changes as the scheduler
//! moves them. A fixed spin of 200 polls made a proxy put + quiet 17 µs where its peer thread
//! shared the core, against 0.2 µs where it did not; yielding at once made it 3 µs everywhere.

use std::cell::Cell;

use oxshmem::wait::SpinPolicy;

/// The longest spin phase of a wait.
const MAX_SPINS: u32 = 200;
/// The shortest: enough for an answer that is on its way from another core.
const MIN_SPINS: u32 = 4;

thread_local! {
    /// This thread's spin phase, as its recent waits taught it ([`Pacing`]).
    static SPINS: Cell<u32> = const { Cell::new(MAX_SPINS) };
}

/// One wait's pauses between polls: a spin phase of this thread's current length, then a
/// yield per poll. When the wait ends (the value is dropped) the thread's spin phase learns
/// from it: a wait that ended while spinning doubles it (up to 200 polls), one that had to
/// yield halves it (down to 4) — the thread it waits for did not run during the spin, so
/// spinning only kept it from the core.
#[derive(Debug)]
pub(crate) struct Pacing {
    polls: u32,
    /// The runtime's spin-then-yield policy, with this thread's spin phase.
    policy: SpinPolicy,
}

impl Pacing {
    /// A wait that has not paused yet.
    #[inline]
    pub(crate) fn new() -> Self {
        Pacing { polls: 0, policy: SpinPolicy::spin_then_yield(SPINS.with(Cell::get)) }
    }

    /// Whether the next pause spins.
    #[inline]
    pub(crate) fn spinning(&self) -> bool {
        !self.policy.spun_out(self.polls)
    }

    /// Spins once if the wait is in its spin phase (counting the poll); returns whether it
    /// did. A loop that does something of its own after the spin phase starts with this.
    #[inline]
    pub(crate) fn spin(&mut self) -> bool {
        self.policy.spin(&mut self.polls)
    }

    /// Waits once between two polls: a spin, or past the spin phase a yield.
    #[inline]
    pub(crate) fn pause(&mut self) {
        self.policy.pause(&mut self.polls);
    }
}

impl Drop for Pacing {
    #[inline]
    fn drop(&mut self) {
        if self.polls == 0 {
            return; // Answered at the first poll: nothing learnt.
        }
        let spins = self.policy.spins;
        let next = if self.polls <= spins { (spins * 2).min(MAX_SPINS) } else { (spins / 2).max(MIN_SPINS) };
        SPINS.with(|s| s.set(next));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> u32 {
        SPINS.with(Cell::get)
    }

    /// Waits that must yield shorten the thread's spin phase down to its floor; waits that end
    /// while spinning lengthen it back up to its ceiling.
    #[test]
    fn the_spin_phase_follows_what_spinning_bought() {
        std::thread::spawn(|| {
            assert_eq!(current(), MAX_SPINS);
            let wait = |polls: u32| {
                let mut p = Pacing::new();
                for _ in 0..polls {
                    p.pause();
                }
            };
            wait(MAX_SPINS + 1);
            assert_eq!(current(), MAX_SPINS / 2, "a wait that yielded halves the spin");
            for _ in 0..10 {
                wait(1_000);
            }
            assert_eq!(current(), MIN_SPINS);
            let mut p = Pacing::new();
            for _ in 0..MIN_SPINS {
                assert!(p.spinning());
                p.pause();
            }
            assert!(!p.spinning() && !p.spin(), "the floor's spins are spent");
            drop(p);
            assert_eq!(current(), MIN_SPINS * 2, "a wait that ended within its spin doubles it");
            wait(0);
            assert_eq!(current(), MIN_SPINS * 2, "a wait answered at once teaches nothing");
            for _ in 0..10 {
                wait(1);
            }
            assert_eq!(current(), MAX_SPINS);
        })
        .join()
        .unwrap();
    }
}
