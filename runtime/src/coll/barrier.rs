//! Barrier and sync on a team: a dissemination barrier over the slot's signal streams.
//!
//! Round `k`: signal member `me + 2^k`, then consume the signal of member `me - 2^k`. Two PEs
//! take one round — one cache-line transfer each way, overlapped; n PEs take ceil(log2 n).

use crate::error::Result;
use crate::team::TeamInner;
use crate::world::Runtime;

impl Runtime {
    /// The dissemination rounds of a barrier among `members` (world PEs, this PE at `me`)
    /// through `slot`.
    pub(crate) fn dissemination(&self, slot: usize, members: &[usize], me: usize, func: &'static str) -> Result<()> {
        let n = members.len();
        let mut dist = 1;
        while dist < n {
            self.sig_send(slot, members[(me + dist) % n], func)?;
            self.sig_wait(slot, members[(me + n - dist) % n]);
            dist <<= 1;
        }
        Ok(())
    }

    /// `shmem_team_sync`: every member has arrived; outstanding operations are not completed.
    pub(crate) fn team_sync(&self, t: &TeamInner, func: &'static str) -> Result<()> {
        self.dissemination(t.slot, &t.members, t.me, func)
    }

    /// Quiet, then sync: `shmem_barrier_all` on a team.
    pub(crate) fn team_barrier(&self, t: &TeamInner, func: &'static str) -> Result<()> {
        self.quiet_internal()?;
        self.team_sync(t, func)
    }

    /// `shmem_sync_all`.
    pub(crate) fn sync_all_internal(&self, func: &'static str) -> Result<()> {
        self.team_sync(&self.teams.world.0, func)
    }

    /// `shmem_barrier_all`.
    pub(crate) fn barrier_all_internal(&self, func: &'static str) -> Result<()> {
        self.team_barrier(&self.teams.world.0, func)
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
