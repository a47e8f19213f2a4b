//! Per-context completion state ([`Track`]) and the table of contexts ([`CtxTable`]).
//!
//! Every counted operation is counted twice when it belongs to a created context: in the
//! transport's own [`Track`] (`Inner::all`: the default context's, which counts every
//! context's operations, so that `shmem_quiet`, barriers and finalize complete everything as
//! before) and in its context's. A context's quiet waits for its own count only, reads back
//! from the peers its own long puts dirtied, and reports its own failures; its fence opens an
//! epoch of its own. The counters are atomics (the completion that decrements them may be read
//! by any thread, the progress thread included) and nothing takes a lock on the way, so a
//! `SHMEM_CTX_PRIVATE` context costs its owner no lock and a shared one none either.
//!
//! A context's state lives in a fixed table, allocated when the slot is first used and kept
//! (reused, never freed) until the transport drops: a completion names its context by slot
//! number, and finds the state there however late it is read. A destroyed context's slot is
//! given out again; whatever of it is still in flight then counts against the next context of
//! that slot, whose quiet so waits for a little more than its own, never for less.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::transport::CtxId;

/// Most contexts with state of their own at once; more are served by the default context's
/// state (their quiet is then the PE's).
pub(super) const MAX_CTXS: usize = 1024;

/// Completion and ordering state of one context.
pub(super) struct Track {
    /// Counted (non-blocking) operations in flight, per peer and in all.
    pub(super) pending: Box<[AtomicU64]>,
    pub(super) total: AtomicU64,
    /// Peers with writes whose delivery only a read-back proves (long puts, and every write on
    /// providers without delivery-complete), and whether there is any.
    pub(super) dirty: Box<[AtomicBool]>,
    pub(super) any_dirty: AtomicBool,
    /// Fences so far, and per peer the epoch its last operation saw.
    pub(super) fence_epoch: AtomicU64,
    pub(super) fence_seen: Box<[AtomicU64]>,
    /// Whether `failure` holds something (read without the lock by every quiet and fence).
    failed: AtomicBool,
    /// The first counted operation that failed; reported by the next fence or quiet.
    failure: Mutex<Option<String>>,
}

impl Track {
    pub(super) fn new(n: usize) -> Track {
        Track {
            pending: (0..n).map(|_| AtomicU64::new(0)).collect(),
            total: AtomicU64::new(0),
            dirty: (0..n).map(|_| AtomicBool::new(false)).collect(),
            any_dirty: AtomicBool::new(false),
            fence_epoch: AtomicU64::new(0),
            fence_seen: (0..n).map(|_| AtomicU64::new(0)).collect(),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// One more operation to `pe` in flight (counted before it is posted: its completion may
    /// be read by another thread at once).
    #[inline]
    pub(super) fn issue(&self, pe: usize) {
        self.pending[pe].fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
    }

    /// An operation to `pe` is no longer in flight (completed, or never posted).
    #[inline]
    pub(super) fn retire(&self, pe: usize) {
        if let Some(p) = self.pending.get(pe) {
            p.fetch_sub(1, Ordering::Release);
        }
        self.total.fetch_sub(1, Ordering::Release);
    }

    /// `pe` has writes whose delivery only a read-back proves.
    pub(super) fn mark_dirty(&self, pe: usize) {
        self.dirty[pe].store(true, Ordering::Relaxed);
        self.any_dirty.store(true, Ordering::Release);
    }

    /// Records a failed operation, unless an earlier failure is still unreported.
    pub(super) fn fail(&self, msg: impl FnOnce() -> String) {
        self.failure.lock().get_or_insert_with(msg);
        self.failed.store(true, Ordering::Release);
    }

    /// The failure recorded since the last call, if any.
    pub(super) fn take_failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        let mut f = self.failure.lock();
        self.failed.store(false, Ordering::Relaxed);
        f.take()
    }
}

/// The created contexts' [`Track`]s, by slot (slot 0 is the default context, whose state is
/// `Inner::all`, not here).
pub(super) struct CtxTable {
    slots: Box<[OnceLock<Box<Track>>]>,
    /// Slots given back by destroyed contexts, and the next never-used slot.
    free: Mutex<(Vec<u32>, u32)>,
    n_peers: usize,
}

impl CtxTable {
    pub(super) fn new(n_peers: usize) -> CtxTable {
        CtxTable { slots: (0..MAX_CTXS).map(|_| OnceLock::new()).collect(), free: Mutex::new((Vec::new(), 1)), n_peers }
    }

    /// A slot for a new context; [`CtxId::DEFAULT`] when all are taken.
    pub(super) fn create(&self) -> CtxId {
        let slot = {
            let mut f = self.free.lock();
            match f.0.pop() {
                Some(s) => s,
                None if (f.1 as usize) < MAX_CTXS => {
                    f.1 += 1;
                    f.1 - 1
                }
                None => return CtxId::DEFAULT,
            }
        };
        let t = self.slots[slot as usize].get_or_init(|| Box::new(Track::new(self.n_peers)));
        // A reused slot: what the previous context left unreported is not this one's.
        let _ = t.take_failure();
        CtxId::new(slot)
    }

    /// Gives `ctx`'s slot back.
    pub(super) fn destroy(&self, ctx: CtxId) {
        if ctx != CtxId::DEFAULT && self.get(ctx).is_some() {
            let mut f = self.free.lock();
            let s = ctx.index() as u32;
            if !f.0.contains(&s) {
                f.0.push(s);
            }
        }
    }

    /// The state of context `ctx`; `None` for the default context (and for a number this
    /// table never gave out, which is then served as the default context).
    #[inline]
    pub(super) fn get(&self, ctx: CtxId) -> Option<&Track> {
        match ctx.index() {
            0 => None,
            i => self.slots.get(i).and_then(OnceLock::get).map(|b| &**b),
        }
    }

    /// The state of the context in slot `i` of a completion context (0: none).
    #[inline]
    pub(super) fn by_slot(&self, i: usize) -> Option<&Track> {
        self.get(CtxId::new(i as u32))
    }
}
