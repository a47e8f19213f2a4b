//! How the device crate's waiting loops wait between polls: the channels' (the proxy and the
//! software NIC draining their queues, host-side quiet) and, for its spin phase, a device
//! thread's (`cpu::Waiter`). The atomics and cells of the lock-free queue code are
//! `crate::sync`'s.

/// How the device crate's waiting loops wait between polls: 200 spins, then a yield per poll.
pub(crate) const WAIT: oxshmem::wait::SpinPolicy = oxshmem::wait::SpinPolicy::spin_then_yield(200);

/// What a waiting loop does between polls, `*spins` the polls it made so far ([`WAIT`]).
pub(crate) fn pause(spins: &mut u32) {
    WAIT.pause(spins);
}
