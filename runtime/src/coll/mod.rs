//! Collectives on teams, built from the runtime's own one-sided operations on the team slot's
//! internal symmetric flags and mailboxes — no second communication stack.
//!
//! Everything rests on two primitives (`signal.rs` of this folder is `mailbox.rs`): an ordered
//! signal stream per pair of PEs per slot (a flag store carrying a running count), and a
//! mailbox per pair per slot (a put into the receiver's copy of the slot, then a signal), with
//! credit-based flow control. Every collective except barrier/sync begins with a *checked
//! exchange*: each member sends every other a header describing its arguments (kind, sizes,
//! root, operation); small payloads ride in the same message. Every member therefore sees
//! every other's arguments before any data moves, and PEs that disagree all return the same
//! error instead of hanging or overrunning a buffer.
//!
//! Algorithms (chosen from the agreed arguments, so every member picks the same):
//! - barrier/sync: dissemination, ceil(log2 n) rounds of one signal each;
//! - small payloads (up to one mailbox): carried by the checked exchange itself — one
//!   cache-line trip for broadcast, collect, fcollect, alltoall(s) and reductions;
//! - large broadcast: every member copies straight from the root's source (one copy, all
//!   members in parallel), then signals the root that the source is free;
//! - large collect/fcollect/alltoall(s): direct puts into every member's destination after
//!   the exchange (which proves every destination is ready), then one signal each;
//! - large reductions: pipelined in mailbox-sized chunks, each chunk exchanged and combined
//!   while the next is in flight on the other PEs.

pub mod active_set;
pub(crate) mod alltoall;
pub mod api;
pub(crate) mod barrier;
pub(crate) mod bcast;
pub(crate) mod collect;
pub(crate) mod header;
pub(crate) mod mailbox;
pub mod reduce;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::team::Chan;
use crate::wait::Backoff;
use crate::world::Runtime;

impl Runtime {
    /// Sends the next signal of this PE's stream to world PE `to` in `slot`; returns its count.
    /// Release: everything this PE wrote before is visible to whoever consumes the signal.
    #[inline(always)]
    pub(crate) fn sig_send(&self, slot: usize, to: usize, func: &'static str) -> Result<u64> {
        let st = &self.teams.streams[slot];
        let c = st.sent[to].load(Ordering::Relaxed) + 1;
        let a = self.slots.flag(slot, Chan::Arrive, self.me);
        self.store_flag(to, a, c, func)?;
        st.sent[to].store(c, Ordering::Relaxed);
        Ok(c)
    }

    /// Stores `v` into the flag at `a` on world PE `to`, after everything this PE wrote to
    /// `to` before: a release store on a mapped peer; through the network transport, a fence
    /// and then an atomic write.
    #[inline(always)]
    pub(crate) fn store_flag(&self, to: usize, a: crate::transport::SymAddr, v: u64, func: &'static str) -> Result<()> {
        match self.shm.ptr(to, a, 8) {
            // SAFETY: flags are live, 8-byte aligned internal objects in `to`'s mapped
            // segment, only ever accessed atomically.
            Some(p) => unsafe { AtomicU64::from_ptr(p.cast()) }.store(v, Ordering::Release),
            None => {
                let net = self.net_for(to, a, 8, func)?;
                net.fence()?;
                net.atomic(func, to, a, crate::transport::Width::W64, crate::transport::AmoOp::Set(v))?;
            }
        }
        Ok(())
    }

    /// Reads the flag at `a` on world PE `from` atomically.
    pub(crate) fn load_flag(&self, from: usize, a: crate::transport::SymAddr, func: &'static str) -> Result<u64> {
        match self.shm.ptr(from, a, 8) {
            // SAFETY: as in store_flag.
            Some(p) => Ok(unsafe { AtomicU64::from_ptr(p.cast()) }.load(Ordering::Acquire)),
            None => self.net_for(from, a, 8, func)?.atomic(
                func,
                from,
                a,
                crate::transport::Width::W64,
                crate::transport::AmoOp::Fetch,
            ),
        }
    }

    /// Consumes the next signal from world PE `from` in `slot`, waiting for it; returns its
    /// count. Acquire: what `from` wrote before sending it is visible.
    #[inline(always)]
    pub(crate) fn sig_wait(&self, slot: usize, from: usize) -> u64 {
        let st = &self.teams.streams[slot];
        let c = st.recvd[from].load(Ordering::Relaxed) + 1;
        self.flag_wait(self.slots.flag(slot, Chan::Arrive, from), c);
        st.recvd[from].store(c, Ordering::Relaxed);
        c
    }

    /// Waits until this PE's flag at `a` (in its own segment) is at least `v`.
    #[inline(always)]
    pub(crate) fn flag_wait(&self, a: crate::transport::SymAddr, v: u64) {
        // SAFETY: flags are live, aligned internal objects in our own segment, accessed
        // atomically by every PE.
        let f = unsafe { AtomicU64::from_ptr(self.local_addr(a) as *mut u64) };
        if f.load(Ordering::Acquire) >= v {
            return;
        }
        let mut b = Backoff::new(self.config.spin);
        while f.load(Ordering::Acquire) < v {
            b.snooze();
        }
    }
}
