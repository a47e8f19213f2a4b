//! The atomics and cells of the lock-free queue code — the IBGDA queue pair (`ibgda/qp.rs`)
//! and the proxy ring (`channel/ring.rs`) — which import them from here alone: std's in every
//! ordinary build, loom's when the crate is built with `RUSTFLAGS="--cfg loom"`, as the loom
//! models in `tests/loom_ibgda.rs` and `tests/loom_ring.rs` build it (crossbeam's `cfg(loom)`
//! shim). Nothing else in the crate changes under `cfg(loom)`: only those models may run such
//! a build (a loom atomic panics outside `loom::model`).
//!
//! Under loom a 64-bit word is a handle whose loom atomic is created on first use, with
//! `materialize()` to create them all at once (the loom build's `AtomicU64` says why).

/// `std::sync::atomic`'s types (loom's under `cfg(loom)`).
#[cfg(not(loom))]
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
}

/// An `UnsafeCell` with loom's closure API (`with`, `with_mut`); loom's under `cfg(loom)`.
#[cfg(not(loom))]
pub(crate) mod cell {
    /// `std::cell::UnsafeCell` with loom's closure API, so that the same queue code runs
    /// under loom.
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// A cell holding `v`.
        pub(crate) fn new(v: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(v))
        }
        /// Calls `f` with a pointer to the value, for reading.
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        /// Calls `f` with a pointer to the value, for writing.
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// loom's atomics, but for [`AtomicU64`], a lazily created loom atomic.
#[cfg(loom)]
pub mod atomic {
    pub use super::lazy::AtomicU64;
    pub use loom::sync::atomic::{AtomicU32, Ordering};
}

/// loom's `UnsafeCell`.
#[cfg(loom)]
pub mod cell {
    pub use loom::cell::UnsafeCell;
}

#[cfg(loom)]
pub use lazy::materialize;

/// The loom build's 64-bit atomic word, with one economy. A queue allocates every word it has
/// as an atomic, among them a 2,048-word scratch buffer the IBGDA models never touch, and a
/// loom atomic costs about 20 µs to create in a debug build — in each of thousands of
/// executions. So a word here is a handle (8 bytes, like the real one) whose loom atomic is
/// created on demand, and [`materialize`] creates them on the model's main thread right after
/// the queue is built, before any other thread exists — all but the words marked with
/// [`AtomicU64::skip`] — so every word a model uses is a loom atomic created before every
/// access to it, exactly as with eager creation.
#[cfg(loom)]
mod lazy {
    use std::cell::RefCell;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex, OnceLock};

    use loom::sync::atomic::{Ordering, fence};

    #[derive(Debug)]
    struct Word {
        init: u64,
        skip: AtomicBool,
        cell: OnceLock<loom::sync::atomic::AtomicU64>,
        /// The last value stored (the newest in modification order: loom runs one operation
        /// at a time) and the thread that stored it (`None`: the initial value).
        last: Mutex<(u64, Option<loom::thread::ThreadId>)>,
    }

    thread_local! {
        /// Words made since the last `materialize` (loom runs the model on one OS thread).
        static MADE: RefCell<Vec<Arc<Word>>> = const { RefCell::new(Vec::new()) };
    }

    /// A 64-bit atomic word (a handle: 8 bytes, like the real one).
    #[derive(Debug)]
    pub struct AtomicU64(Arc<Word>);

    impl AtomicU64 {
        /// A word holding `v`; its loom atomic is made by [`materialize`] or on first use.
        pub fn new(v: u64) -> Self {
            let w = Arc::new(Word {
                init: v,
                skip: AtomicBool::new(false),
                cell: OnceLock::new(),
                last: Mutex::new((v, None)),
            });
            MADE.with(|m| m.borrow_mut().push(w.clone()));
            AtomicU64(w)
        }
        fn get(&self) -> &loom::sync::atomic::AtomicU64 {
            assert!(!self.0.skip.load(std::sync::atomic::Ordering::Relaxed), "the model touched a skipped word");
            self.0.cell.get_or_init(|| loom::sync::atomic::AtomicU64::new(self.0.init))
        }
        /// Leaves this word out of [`materialize`] (it must never be used).
        pub fn skip(&self) {
            self.0.skip.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        /// As `AtomicU64::load`.
        pub fn load(&self, o: Ordering) -> u64 {
            sc_before(o);
            self.get().load(o)
        }
        fn wrote(&self, v: u64) {
            *self.0.last.lock().unwrap() = (v, Some(loom::thread::current().id()));
        }
        /// As `AtomicU64::store`.
        pub fn store(&self, v: u64, o: Ordering) {
            // A relaxed store of the value the newest store already holds, by the thread that
            // made that store (or over the initial value, which precedes every thread), changes
            // no value any load can return and synchronizes nothing: leave it out. It would
            // only multiply the values loom lets each relaxed load choose among (a CQE's seven
            // zero words, rewritten on every completion).
            if o == Ordering::Relaxed {
                let (last, by) = *self.0.last.lock().unwrap();
                if last == v && by.is_none_or(|t| t == loom::thread::current().id()) {
                    return;
                }
            }
            self.get().store(v, o);
            self.wrote(v);
            sc_after(o);
        }
        /// As `AtomicU64::swap`.
        pub fn swap(&self, v: u64, o: Ordering) -> u64 {
            let old = self.get().swap(v, o);
            self.wrote(v);
            sc_after_value(old, o)
        }
        /// As `AtomicU64::fetch_add`.
        pub fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
            let old = self.get().fetch_add(v, o);
            self.wrote(old.wrapping_add(v));
            sc_after_value(old, o)
        }
        /// As `AtomicU64::fetch_and`.
        pub fn fetch_and(&self, v: u64, o: Ordering) -> u64 {
            let old = self.get().fetch_and(v, o);
            self.wrote(old & v);
            sc_after_value(old, o)
        }
        /// As `AtomicU64::fetch_or`.
        pub fn fetch_or(&self, v: u64, o: Ordering) -> u64 {
            let old = self.get().fetch_or(v, o);
            self.wrote(old | v);
            sc_after_value(old, o)
        }
        /// As `AtomicU64::fetch_max`.
        pub fn fetch_max(&self, v: u64, o: Ordering) -> u64 {
            let old = self.get().fetch_max(v, o);
            self.wrote(old.max(v));
            sc_after_value(old, o)
        }
        /// As `AtomicU64::compare_exchange`.
        pub fn compare_exchange(&self, c: u64, n: u64, ok: Ordering, err: Ordering) -> Result<u64, u64> {
            let r = self.get().compare_exchange(c, n, ok, err);
            if r.is_ok() {
                self.wrote(n);
            }
            sc_after_value(r, ok)
        }
        /// As `AtomicU64::compare_exchange_weak` (never fails spuriously here).
        pub fn compare_exchange_weak(&self, c: u64, n: u64, ok: Ordering, err: Ordering) -> Result<u64, u64> {
            self.compare_exchange(c, n, ok, err)
        }
    }

    // loom models `SeqCst` accesses as `AcqRel` (its README: "Unsupported features"), which
    // allows the store-buffering outcome that sequential consistency forbids (two threads
    // each store with SeqCst, then each load the other's location with SeqCst, and both miss
    // the other's store). loom does model `fence(SeqCst)`; so a `SeqCst` access here is the
    // access with a `SeqCst` fence on the side that forbids that outcome — after a store or
    // read-modify-write, before a load (the usual hardware mapping of SeqCst).
    fn sc_before(o: Ordering) {
        if o == Ordering::SeqCst {
            fence(Ordering::SeqCst);
        }
    }
    fn sc_after(o: Ordering) {
        if o == Ordering::SeqCst {
            fence(Ordering::SeqCst);
        }
    }
    fn sc_after_value<T>(v: T, o: Ordering) -> T {
        sc_after(o);
        v
    }

    impl Default for AtomicU64 {
        fn default() -> Self {
            Self::new(0)
        }
    }

    /// Creates the loom atomic of every word made on this thread since the last call, except
    /// skipped ones. A model calls it right after building its queue (which also empties the
    /// list, so that words do not pile up across executions).
    pub fn materialize() {
        for w in MADE.with(|m| std::mem::take(&mut *m.borrow_mut())) {
            if !w.skip.load(std::sync::atomic::Ordering::Relaxed) {
                AtomicU64(w).get();
            }
        }
    }
}
