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
//! Layout: the ring is plain `#[repr(C)]` data — a header ([`Ring`]: `issue`, `completed`,
//! `capacity`, `slots`) and `capacity` slots of 64 bytes ([`Slot`]: `seq`, `body`), all in ONE
//! allocation from a [`DeviceAlloc`] ([`RingBox`] owns it) — shared with CUDA device code
//! through the generated header `device/include/oxshmem/device_state.h` (`oxshmem_ring_t`,
//! `oxshmem_ring_slot_t`); `tests/c_layout.rs` checks that both compilers agree on it.
//!
//! The types say who may do what: [`Ring`] is the producers' face (`submit`, and the counters
//! `quiet` reads), shared by every producer thread; taking tickets is the one [`Consumer`]'s,
//! a handle that is not `Sync` and keeps its own next ticket, so a second consumer, or one that
//! completes a ticket it has not read, cannot be written in safe code.
//!
//! Its atomics and cells come from `crate::sync`: std's, or loom's when the crate is built
//! with `--cfg loom`, as `tests/loom_ring.rs` builds it to model-check this protocol.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::devmem::{Carve, DeviceAlloc, DeviceMem, host};
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::cell::UnsafeCell;

/// A slot's `seq` while a completed request's result waits in it for its producer
/// ([`Consumer::complete_held`]); no later producer takes the slot until it is released.
pub const HELD: u64 = u64::MAX;

/// One slot: the sequence word and the request (C: `oxshmem_ring_slot_t`).
#[repr(C)]
#[derive(Debug)]
pub struct Slot<T> {
    /// `t + 1` once ticket `t`'s request is published in this slot; [`HELD`] while a held
    /// result waits in it; 0 once released.
    pub seq: AtomicU64,
    /// The request.
    pub(crate) body: UnsafeCell<T>,
}

/// The ring's header (C: `oxshmem_ring_t`). `T` is the request body (plain data). It lives in
/// the allocation its [`RingBox`] owns, with its slots.
#[repr(C)]
#[derive(Debug)]
pub struct Ring<T> {
    /// Tickets handed out.
    pub issue: AtomicU64,
    /// Tickets completed (a prefix count).
    pub completed: AtomicU64,
    /// Slots (at least 1).
    pub capacity: u64,
    /// `capacity` slots.
    pub slots: *mut Slot<T>,
}

// SAFETY: a slot's body is written by the one producer that owns its ticket, before it is
// published, and read by the consumer only after it is published and before it is completed;
// the ticket protocol makes those accesses exclusive, and there is one consumer: reading and
// completing tickets is only possible through a `Consumer`, which is not `Sync` and which safe
// code gets at most once per ring (`RingBox::consumer`). `slots` points into memory the owning
// `RingBox` keeps alive as long as the header.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Ring<T> {}

/// Why a producer gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stalled {
    /// The ticket that could not get its slot.
    pub ticket: u64,
    /// Tickets completed when it gave up.
    pub completed: u64,
}

/// Owns a ring: its header and slots in one allocation. Dereferences to the header.
#[derive(Debug)]
pub struct RingBox<T> {
    ring: *mut Ring<T>,
    mem: DeviceMem,
    /// Whether a [`Consumer`] of this ring is alive ([`RingBox::consumer`]).
    consumer_taken: AtomicBool,
}

// SAFETY: as for `Ring`.
unsafe impl<T: Send> Sync for RingBox<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for RingBox<T> {}

impl<T: Copy + Default> RingBox<T> {
    /// A ring of `capacity` slots (at least 1) on the Rust heap (for tests and models; the
    /// device uses [`new_in`](Self::new_in)).
    ///
    /// # Panics
    /// When the heap cannot supply the memory (as `Box::new` would fail).
    pub fn new(capacity: usize) -> Self {
        Self::new_in(capacity, &host()).unwrap_or_else(|e| panic!("RingBox::new: {e}"))
    }

    /// A ring of `capacity` slots (at least 1) in memory from `from`.
    pub fn new_in(capacity: usize, from: &Arc<dyn DeviceAlloc>) -> Result<Self, String> {
        let cap = capacity.max(1);
        let mut c = Carve::default();
        let h = c.take::<Ring<T>>(1);
        let s = c.take::<Slot<T>>(cap);
        let mem = DeviceMem::new(c.bytes(), from)
            .map_err(|e| format!("the proxy ring ({cap} slots, {} bytes): {e}", c.bytes()))?;
        // SAFETY: both parts lie inside the allocation, aligned for their types; every value
        // is written before the ring is used.
        unsafe {
            let ring = mem.as_ptr().add(h).cast::<Ring<T>>();
            let slots = mem.as_ptr().add(s).cast::<Slot<T>>();
            for i in 0..cap {
                slots.add(i).write(Slot { seq: AtomicU64::new(0), body: UnsafeCell::new(T::default()) });
            }
            ring.write(Ring { issue: AtomicU64::new(0), completed: AtomicU64::new(0), capacity: cap as u64, slots });
            Ok(RingBox { ring, mem, consumer_taken: AtomicBool::new(false) })
        }
    }
}

impl<T> RingBox<T> {
    /// The header, for device code (`DeviceState::ring`).
    pub fn as_ptr(&self) -> *mut Ring<T> {
        self.ring
    }

    /// The allocation the ring lives in.
    pub fn memory(&self) -> &DeviceMem {
        &self.mem
    }

    /// The ring's consumer, starting at the first ticket not completed yet; `None` while
    /// another consumer of this ring is alive (dropping it gives the role back).
    pub fn consumer(&self) -> Option<Consumer<'_, T>> {
        if self.consumer_taken.swap(true, std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        let ring: &Ring<T> = self;
        let next = ring.completed.load(Ordering::Acquire);
        Some(Consumer { next, read: false, ring, taken: Some(&self.consumer_taken), _not_sync: PhantomData })
    }
}

impl<T> std::ops::Deref for RingBox<T> {
    type Target = Ring<T>;
    fn deref(&self) -> &Ring<T> {
        // SAFETY: written in `new_in`, alive as long as `mem`.
        unsafe { &*self.ring }
    }
}

impl<T> Drop for RingBox<T> {
    fn drop(&mut self) {
        // SAFETY: the values placed in `new_in`, dropped once, before `mem` is freed.
        unsafe {
            let cap = (*self.ring).capacity as usize;
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut((*self.ring).slots, cap));
            std::ptr::drop_in_place(self.ring);
        }
    }
}

impl<T: Copy> Ring<T> {
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    fn slot(&self, t: u64) -> &Slot<T> {
        // SAFETY: `t % capacity` is in bounds; the slots live as long as the header.
        unsafe { &*self.slots.add((t % self.capacity) as usize) }
    }

    /// Reserves a ticket and publishes `body` under it, waiting while the ring is full.
    /// `wait` is called between polls; when it returns false the producer gives up. That only
    /// happens when the consumer has stopped draining for longer than the device's timeout:
    /// the unpublished ticket then blocks the ring for good, and the device reports the stall.
    pub fn submit(&self, body: T, mut wait: impl FnMut() -> bool) -> Result<u64, Stalled> {
        let t = self.issue.fetch_add(1, Ordering::Relaxed);
        let cap = self.capacity();
        let mut gave_up = false;
        while self.completed.load(Ordering::Acquire) + cap <= t {
            if !wait() {
                gave_up = true;
                break;
            }
        }
        let slot = self.slot(t);
        // The ticket before ours on this slot may still hold its result there (HELD).
        while !gave_up && slot.seq.load(Ordering::Acquire) == HELD {
            if !wait() {
                gave_up = true;
            }
        }
        if gave_up {
            return Err(Stalled { ticket: t, completed: self.completed.load(Ordering::Acquire) });
        }
        // SAFETY: ticket t owns the slot: the consumer completed t - cap, and no other
        // producer holds t.
        slot.body.with_mut(|p| unsafe { p.write(body) });
        slot.seq.store(t + 1, Ordering::Release);
        Ok(t)
    }

    /// The consumer of a ring whose owner is not at hand (the proxy thread reaches the ring
    /// through the device state's pointer), starting at the first ticket not completed yet.
    ///
    /// # Safety
    /// No other consumer of this ring may be alive while the returned one is: two consumers
    /// would read and complete the same tickets.
    pub unsafe fn consumer_unchecked(&self) -> Consumer<'_, T> {
        Consumer { next: self.completed(), read: false, ring: self, taken: None, _not_sync: PhantomData }
    }

    /// Tickets completed (a prefix count).
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Acquire)
    }

    /// Releases the slot of held ticket `t` once its producer has read the result from it.
    pub fn release(&self, t: u64) {
        self.slot(t).seq.store(0, Ordering::Release);
    }

    /// Tickets handed out.
    pub fn issued(&self) -> u64 {
        self.issue.load(Ordering::Acquire)
    }
}

/// The ring's one consumer: reads tickets strictly in order and completes each after executing
/// it. Not `Sync` (one thread drives it) and not `Clone`; it may move to another thread (`Send`).
#[derive(Debug)]
pub struct Consumer<'r, T> {
    ring: &'r Ring<T>,
    /// The ticket to read next.
    next: u64,
    /// Whether [`peek`](Consumer::peek) has read ticket `next` (what `complete` may complete).
    read: bool,
    /// The owner's flag to clear on drop (`None` for [`Ring::consumer_unchecked`]).
    taken: Option<&'r AtomicBool>,
    _not_sync: PhantomData<Cell<()>>,
}

impl<T: Copy> Consumer<'_, T> {
    /// The ticket [`peek`](Self::peek) reads and [`complete`](Self::complete) completes.
    pub fn ticket(&self) -> u64 {
        self.next
    }

    /// The request of the next ticket, once its producer has published it.
    pub fn peek(&mut self) -> Option<T> {
        let t = self.next;
        let slot = self.ring.slot(t);
        if slot.seq.load(Ordering::Acquire) != t + 1 {
            return None;
        }
        self.read = true;
        // SAFETY: published and not yet completed, so no producer writes it, and this is the
        // ring's only consumer (a `Consumer` exists once per ring and is not `Sync`).
        Some(slot.body.with(|p| unsafe { p.read() }))
    }

    /// The ticket [`peek`](Self::peek) read is done (its request executed): completes it, and
    /// so every ticket before it, and moves on. Returns `false`, completing nothing, when
    /// `peek` has not returned the ticket's request (there was nothing to execute).
    pub fn complete(&mut self) -> bool {
        if !self.read {
            return false;
        }
        self.read = false;
        self.ring.completed.store(self.next + 1, Ordering::Release);
        self.next += 1;
        true
    }

    /// As [`complete`](Self::complete), for a request whose result lies in its slot
    /// (`proxy::flag::HOLD`): the slot stays [`HELD`] until the producer has read the result
    /// and released it ([`Ring::release`]), so that no later ticket overwrites it first.
    pub fn complete_held(&mut self) -> bool {
        if !self.read {
            return false;
        }
        self.ring.slot(self.next).seq.store(HELD, Ordering::Release);
        self.complete()
    }

    /// The ring, for the counters producers read too.
    pub fn ring(&self) -> &Ring<T> {
        self.ring
    }
}

impl<T> Drop for Consumer<'_, T> {
    fn drop(&mut self) {
        if let Some(flag) = self.taken {
            flag.store(false, std::sync::atomic::Ordering::Release);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A ring has one consumer at a time, and the role comes back when it is dropped; a
    /// consumer completes only what it has read.
    #[test]
    fn one_consumer_at_a_time() {
        let ring = RingBox::<u64>::new(4);
        let mut c = ring.consumer().expect("the first consumer");
        assert!(ring.consumer().is_none(), "a second consumer while the first lives");
        assert!(!c.complete(), "completed a ticket nobody published");
        ring.submit(7, || true).unwrap();
        assert!(!c.complete(), "completed a ticket it has not read");
        assert_eq!(ring.completed(), 0);
        assert_eq!(c.peek(), Some(7));
        assert!(c.complete());
        assert!(!c.complete(), "completed the same ticket twice");
        assert_eq!((ring.completed(), c.ticket()), (1, 1));
        drop(c);
        let c = ring.consumer().expect("the role is back after the first is dropped");
        assert_eq!(c.ticket(), 1, "a new consumer starts after what is completed");
    }

    /// Two producer threads and the consumer on a third, on a ring small enough to wrap: every
    /// request arrives once, in ticket order per producer, and completion is a prefix count.
    /// (Under Miri this checks the slots' accesses for data races and aliasing.)
    #[test]
    fn producers_and_the_consumer_on_their_own_threads() {
        let per = if cfg!(miri) { 4 } else { 2_000 };
        let ring = RingBox::<(u64, u64)>::new(3);
        std::thread::scope(|s| {
            for p in 1..=2u64 {
                let ring = &ring;
                s.spawn(move || {
                    for k in 1..=per {
                        ring.submit((p, k), || {
                            std::thread::yield_now();
                            true
                        })
                        .expect("the consumer drains");
                    }
                });
            }
            let mut c = ring.consumer().expect("the consumer");
            let mut last = [0u64; 2];
            while c.ticket() < 2 * per {
                match c.peek() {
                    Some((p, k)) => {
                        assert_eq!(last[(p - 1) as usize] + 1, k, "producer {p}: {k} after {}", last[(p - 1) as usize]);
                        last[(p - 1) as usize] = k;
                        assert!(c.complete());
                        assert_eq!(c.ring().completed(), c.ticket());
                    }
                    None => std::thread::yield_now(),
                }
            }
            assert_eq!(last, [per, per]);
        });
        assert_eq!(ring.issued(), 2 * per);
        assert_eq!(ring.completed(), 2 * per);
    }
}
