//! The world barrier: a dissemination barrier over internal symmetric flags.
//!
//! Round `k` of barrier number `e`: store `e` into round `k`'s flag on PE `me + 2^k`, then wait
//! until our own round-`k` flag is at least `e`. Each flag has exactly one writer per round and
//! epochs only grow, so flags never need resetting and back-to-back barriers cannot confuse
//! each other: a flag already holding `e + 1` proves its writer finished barrier `e`. Each
//! round's flag has its own cache line, since each is written by a different PE. Two PEs take
//! one round: one cache-line transfer each way, overlapped.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::wait::Backoff;
use crate::world::Runtime;

impl Runtime {
    /// `shmem_sync_all`: every PE has arrived; no completion of outstanding operations.
    pub(crate) fn sync_all_internal(&self, func: &'static str) -> Result<()> {
        let n = self.n;
        if n == 1 {
            return Ok(());
        }
        // Concurrent barriers from several threads of one PE are not allowed by the spec; the
        // epoch is still atomic so that misuse cannot corrupt the protocol silently.
        let epoch = self.internal.barrier_epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let flags = self.internal.barrier_flags;
        let mut dist = 1;
        let mut round = 0;
        while dist < n {
            let to = (self.me + dist) % n;
            let mut a = flags;
            a.offset += round * 64;
            let remote = self
                .shm
                .ptr(to, a, 8)
                .ok_or_else(|| self.unreachable(to, func))?;
            // SAFETY: the flag is a live, 8-byte aligned internal object in `to`'s mapped heap,
            // only ever accessed atomically.
            unsafe { AtomicU64::from_ptr(remote.cast()) }.store(epoch, Ordering::Release);
            let local = self.local_addr(a) as *mut u64;
            // SAFETY: the same flag in our own heap.
            let mine = unsafe { AtomicU64::from_ptr(local) };
            let mut b = Backoff::new(self.config.spin);
            while mine.load(Ordering::Acquire) < epoch {
                b.snooze();
            }
            dist <<= 1;
            round += 1;
        }
        Ok(())
    }

    /// `shmem_barrier_all`: quiet, then sync.
    pub(crate) fn barrier_all_internal(&self, func: &'static str) -> Result<()> {
        self.quiet_internal();
        self.sync_all_internal(func)
    }

    #[cold]
    pub(crate) fn unreachable(&self, pe: usize, func: &'static str) -> crate::Error {
        crate::Error::new(
            self.me,
            func,
            crate::ErrorKind::Unreachable { pe, host: self.layout.hosts[self.layout.node_of[pe]].clone() },
        )
    }
}
