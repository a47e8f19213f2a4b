//! Barrier and sync on a team: a dissemination barrier over the slot's signal streams.
//!
//! Round `k`: signal member `me + 2^k`, then consume the signal of member `me - 2^k`. Two PEs
//! take one round — one cache-line transfer each way, overlapped; n PEs take ceil(log2 n).
//!
//! On a crowded host (the whole job on one host, more PEs than CPUs: `OXSHMEM_BARRIER=auto`)
//! a round costs a member waiting for its turn on a core, so the barrier is central instead:
//! every member signals member 0, which, having heard from all, signals each of them. Member 0
//! leaves while it holds a core, so what it does next (the root's part of a broadcast, say)
//! is under way before the others run again.
//!
//! Each signal carries the tag of the barrier (routine and number on the team, in the cache
//! line the signal writes anyway), and each round checks the tag it receives, and that what
//! came is a signal at all and not another collective's message (`sequence.rs`): a PE in a
//! barrier while another is in a reduction, a sync, another barrier or `shmem_finalize` fails,
//! and so does every other member.

use oxshmem_bootstrap::status::Routine;

use crate::coll::header::Seen;
use crate::coll::sequence::same_collective;
use crate::coll::wire::Item;
use crate::error::Result;
use crate::team::{TeamInner, WORLD_SLOT};
use crate::world::Runtime;

impl Runtime {
    /// The dissemination rounds of a barrier among `members` (world PEs, this PE at `me`)
    /// through `slot`, as routine `func` (whose name says which barrier it is: see
    /// `Routine::from_name`).
    #[inline(always)]
    pub(crate) fn dissemination(&self, slot: usize, members: &[usize], me: usize, func: &'static str) -> Result<()> {
        self.disseminate(slot, members, me, Routine::from_name(func), None, func).map(drop)
    }

    /// The dissemination rounds as routine `r`. With `key`, every PE also learns the smallest
    /// and the largest of the PEs' keys (equal exactly when every PE passed the same key): the
    /// dissemination pattern spreads a minimum and a maximum to every PE in the same rounds,
    /// in two words beside each signal's tag. Without, returns `(0, 0)`.
    #[inline(always)]
    fn disseminate(
        &self,
        slot: usize,
        members: &[usize],
        me: usize,
        r: Routine,
        key: Option<u64>,
        func: &'static str,
    ) -> Result<(u64, u64)> {
        let c = self.coll_begin(slot, r, members, func)?;
        let n = members.len();
        let (mut lo, mut hi) = key.map_or((0, 0), |k| (k, k));
        if self.config.central_barrier {
            // Gather at member 0, which releases everyone: on a crowded host each member
            // needs the CPU twice (to arrive, then to leave) instead of once per round, and
            // the releaser leaves while it holds a core.
            if me == 0 {
                for &from in &members[1..] {
                    let (l, h) = self.barrier_signal(
                        &c,
                        slot,
                        members,
                        from,
                        key.is_some(),
                        members[1..].iter().copied(),
                        func,
                    )?;
                    (lo, hi) = (lo.min(l), hi.max(h));
                }
                for &to in &members[1..] {
                    self.sig_send_tagged(slot, to, c.tag, key.map(|_| (lo, hi)), func)?;
                }
                // Having released everyone, take the headers of an active-set broadcast this
                // PE was the root of (each member sent its header before its signal, so all
                // are here): the released members need the CPU to run again anyway, and the
                // root's next broadcast then goes out at once. At 4 PEs on 2 CPUs this halved
                // the root's part of an 8-byte broadcast.
                self.settle_active_broadcast_from(slot);
            } else {
                self.sig_send_tagged(slot, members[0], c.tag, key.map(|_| (lo, hi)), func)?;
                // On a mismatch every other member hears of it: in another collective they may
                // wait for this PE, which signalled only member 0.
                let others = members.iter().copied().filter(|&p| p != members[me] && p != members[0]);
                let words = self.barrier_signal(&c, slot, members, members[0], key.is_some(), others, func)?;
                if key.is_some() {
                    (lo, hi) = words;
                }
            }
            return Ok((lo, hi));
        }
        let mut dist = 1;
        while dist < n {
            self.sig_send_tagged(slot, members[(me + dist) % n], c.tag, key.map(|_| (lo, hi)), func)?;
            let from = members[(me + n - dist) % n];
            // Members this PE has not signalled in this barrier: those at distances beyond
            // this round's.
            let unsent = (1..n).filter(|&d| d > dist || !d.is_power_of_two()).map(|d| members[(me + d) % n]);
            let (l, h) = self.barrier_signal(&c, slot, members, from, key.is_some(), unsent, func)?;
            (lo, hi) = (lo.min(l), hi.max(h));
            dist <<= 1;
        }
        Ok((lo, hi))
    }

    /// Receives this barrier's signal from `from`, with its key words when `keyed` (else
    /// `(u64::MAX, 0)`, which leaves a minimum and a maximum as they are); anything else is a
    /// mismatch, which `unsent` (the members this PE has not signalled yet) hear about.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn barrier_signal(
        &self,
        c: &crate::coll::sequence::Coll,
        slot: usize,
        members: &[usize],
        from: usize,
        keyed: bool,
        unsent: impl Iterator<Item = usize>,
        func: &'static str,
    ) -> Result<(u64, u64)> {
        match self.recv_item(slot, from, true) {
            Item::Signal(t) if same_collective(t, c.tag) => {
                Ok(if keyed { self.signal_words(slot, from) } else { (u64::MAX, 0) })
            }
            item => {
                let seen = match item {
                    Item::Signal(t) => Seen::Signal(t, self.signal_words(slot, from)),
                    Item::Mail(mail) => {
                        // SAFETY: a message begins with its header (HDR bytes).
                        let h = unsafe { mail.ptr.cast::<crate::coll::header::Header>().read_unaligned() };
                        self.mb_release(slot, from, mail, func)?;
                        Seen::Message(h)
                    }
                };
                Err(self.coll_mismatch(c, members, unsent, from, seen, func))
            }
        }
    }

    /// `shmem_team_sync`: every member has arrived; outstanding operations are not completed.
    #[inline(always)]
    pub(crate) fn team_sync(&self, t: &TeamInner, func: &'static str) -> Result<()> {
        self.dissemination(t.slot, &t.members, t.me, func)
    }

    /// Quiet, then sync: `shmem_barrier_all` on a team.
    #[inline(always)]
    pub(crate) fn team_barrier(&self, t: &TeamInner, func: &'static str) -> Result<()> {
        self.quiet_internal()?;
        self.team_sync(t, func)
    }

    /// `shmem_barrier_all` that also tells every PE the smallest and the largest of the PEs'
    /// `key`s (equal exactly when every PE passed the same key). The keys ride in the
    /// barrier's own signals, so the check costs two stores into a cache line the signal
    /// writes anyway, and no message of its own.
    ///
    /// Every PE must call it at the same point (it is the barrier of a collective routine);
    /// a PE that meets a plain barrier of another collective allocation routine there reads
    /// stale words, which differ from its own key but for a 2^-64 chance, and so reports the
    /// mismatch; one that meets any other collective fails as every barrier does.
    pub(crate) fn barrier_all_checked(&self, func: &'static str, key: u64) -> Result<(u64, u64)> {
        self.quiet_internal()?;
        let t = &self.teams.world.0;
        self.disseminate(WORLD_SLOT, &t.members, t.me, Routine::from_name(func), Some(key), func)
    }

    /// `shmem_sync_all`.
    #[inline(always)]
    pub(crate) fn sync_all_internal(&self, func: &'static str) -> Result<()> {
        self.team_sync(&self.teams.world.0, func)
    }

    /// `shmem_barrier_all`.
    #[inline(always)]
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
