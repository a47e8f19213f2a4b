//! The proxy ring's lock-free core: many producers, one consumer, fixed-size requests.
//!
//! A producer reserves a ticket with one `fetch_add` on `issue`; ticket `t` owns slot
//! `t % capacity`. The slot is free once the consumer has completed ticket `t - capacity`
//! (back-pressure: a producer never overwrites a request that has not been executed). The
//! producer writes the request body, then publishes it by storing `t + 1` into the slot's
//! sequence word (release). The consumer takes tickets strictly in order: it waits for slot
//! `t`'s sequence word to read `t + 1` (acquire), executes the request, and stores `t + 1` into
//! `completed` (release). `completed` is therefore a prefix count, which is what makes
//! `quiet` a single comparison: everything a thread issued up to ticket `t` is done once
//! `completed > t`. (NVSHMEM's ring uses a lap-parity bit; a full 64-bit ticket cannot alias.)
//!
//! This file has no dependency on the rest of the crate, so `tests/loom_ring.rs` model-checks
//! it with loom's atomics.

use super::sync::{AtomicU64, Ordering, UnsafeCell};

/// One slot: the sequence word and the request.
#[derive(Debug)]
pub(crate) struct Slot<T> {
    seq: AtomicU64,
    body: UnsafeCell<T>,
}

/// The ring. `T` is the request body (plain data).
#[derive(Debug)]
pub(crate) struct Ring<T> {
    issue: AtomicU64,
    completed: AtomicU64,
    slots: Box<[Slot<T>]>,
}

// SAFETY: a slot's body is written by the one producer that owns its ticket, before it is
// published, and read by the consumer only after it is published and before it is completed;
// the ticket protocol makes those accesses exclusive.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Ring<T> {}

/// Why a producer gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stalled {
    /// The ticket that could not get its slot.
    pub(crate) ticket: u64,
    /// Tickets completed when it gave up.
    pub(crate) completed: u64,
}

impl<T: Copy + Default> Ring<T> {
    /// A ring of `capacity` slots (at least 1).
    pub(crate) fn new(capacity: usize) -> Self {
        let slots = (0..capacity.max(1))
            .map(|_| Slot { seq: AtomicU64::new(0), body: UnsafeCell::new(T::default()) })
            .collect();
        Ring { issue: AtomicU64::new(0), completed: AtomicU64::new(0), slots }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Reserves a ticket and publishes `body` under it, waiting while the ring is full.
    /// `wait` is called between polls; when it returns false the producer gives up. That only
    /// happens when the consumer has stopped draining for longer than the device's timeout:
    /// the unpublished ticket then blocks the ring for good, and the device reports the stall.
    pub(crate) fn submit(&self, body: T, mut wait: impl FnMut() -> bool) -> Result<u64, Stalled> {
        let t = self.issue.fetch_add(1, Ordering::Relaxed);
        let cap = self.capacity();
        let mut gave_up = false;
        while self.completed.load(Ordering::Acquire) + cap <= t {
            if !wait() {
                gave_up = true;
                break;
            }
        }
        if gave_up {
            return Err(Stalled { ticket: t, completed: self.completed.load(Ordering::Acquire) });
        }
        let slot = &self.slots[(t % cap) as usize];
        // SAFETY: ticket t owns the slot: the consumer completed t - cap, and no other
        // producer holds t.
        slot.body.with_mut(|p| unsafe { p.write(body) });
        slot.seq.store(t + 1, Ordering::Release);
        Ok(t)
    }

    /// Consumer: the request of ticket `t` if it has been published.
    pub(crate) fn poll(&self, t: u64) -> Option<T> {
        let slot = &self.slots[(t % self.capacity()) as usize];
        if slot.seq.load(Ordering::Acquire) != t + 1 {
            return None;
        }
        // SAFETY: published and not yet completed, so no producer writes it.
        Some(slot.body.with(|p| unsafe { p.read() }))
    }

    /// Consumer: ticket `t` (and so every ticket before it) is done.
    pub(crate) fn complete(&self, t: u64) {
        self.completed.store(t + 1, Ordering::Release);
    }

    /// Tickets completed (a prefix count).
    pub(crate) fn completed(&self) -> u64 {
        self.completed.load(Ordering::Acquire)
    }

    /// Tickets handed out.
    pub(crate) fn issued(&self) -> u64 {
        self.issue.load(Ordering::Acquire)
    }
}
