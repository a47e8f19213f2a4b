//! The atomics the lock-free channel code uses: std's here, loom's in the model tests (which
//! include the channel files under their own `sync` module).

pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// An `UnsafeCell` with loom's closure API, so that the same ring code runs under loom.
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

impl<T> UnsafeCell<T> {
    pub(crate) fn new(v: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// How the channels' waiting loops wait between polls: 200 spins, then a yield per poll.
pub(crate) const WAIT: oxshmem::wait::SpinPolicy = oxshmem::wait::SpinPolicy::spin_then_yield(200);

/// What a waiting loop does between polls, `*spins` the polls it made so far ([`WAIT`]).
pub(crate) fn pause(spins: &mut u32) {
    WAIT.pause(spins);
}
