//! Collectives on teams, built from the runtime's own one-sided operations on the team slot's
//! internal symmetric flags and mailboxes — no second communication stack.
//!
//! Everything rests on two primitives: an ordered signal stream per pair of PEs per slot (a
//! flag store carrying a running count, and beside it, in the same cache line, a tag naming
//! the collective: `sig_send`/`sig_wait` below, the tags in `sequence.rs`; these are the
//! collectives' own signals, not the user's `shmem_signal_*` of `crate::signal`), and a
//! mailbox per pair per slot (a put into the receiver's copy of the slot, then a signal), with
//! credit-based flow control (`mailbox.rs`). Every collective except barrier/sync begins with a *checked
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
pub mod foreign;
pub(crate) mod header;
pub(crate) mod mailbox;
pub mod reduce;
pub mod scan;
pub(crate) mod sequence;
pub(crate) mod wire;

pub use foreign::team_words;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::team::Chan;
use crate::transport::SymAddr;
use crate::world::Runtime;

/// What a zero-length buffer of a collective stands for. No algorithm reads or writes zero
/// bytes, so such a buffer needs no symmetric address: any pointer is accepted, NULL
/// included, as zero-length RMA accepts it. The collective itself still runs (its checked
/// exchange, so every member takes part and learns every other's arguments); only the data
/// movement is empty.
pub(crate) const NOWHERE: SymAddr = SymAddr { seg: 0, offset: 0 };

/// Where the tag and the two words of signal number `count` lie in the receiver's arrival flag
/// line for the sender: after the count, one 24-byte slot per parity of the count.
#[inline(always)]
fn signal_slot(count: u64) -> usize {
    8 + (count % 2) as usize * 24
}

impl Runtime {
    /// The symmetric address of a collective's buffer `[p, p + len)`, or [`NOWHERE`] for a
    /// zero-length one, whatever `p` is.
    pub(crate) fn coll_buf(&self, p: *const u8, len: usize, what: &'static str, func: &'static str) -> Result<SymAddr> {
        if len == 0 { Ok(NOWHERE) } else { self.translate(p as usize, len, what, func) }
    }

    /// Sends the next signal of this PE's stream to world PE `to` in `slot`; returns its count.
    /// Release: everything this PE wrote before is visible to whoever consumes the signal. It
    /// carries the tag of the collective this PE is in on the slot.
    #[inline(always)]
    pub(crate) fn sig_send(&self, slot: usize, to: usize, func: &'static str) -> Result<u64> {
        self.sig_send_tagged(slot, to, self.cur_tag(slot), None, func)
    }

    /// [`sig_send`](Self::sig_send) with tag `tag` and, when given, two words.
    ///
    /// The tag and the words go into the receiver's arrival flag line for this PE, in the
    /// slot of the signal count's parity ([`signal_slot`]), before the count itself, whose
    /// release store publishes them. The sender's next signal to the same PE uses the other
    /// slot; the one after that could overwrite this slot, but it cannot be sent before the
    /// receiver has read it: every collective of a team completes on a member only once every
    /// member has entered it, and no collective sends a PE a second signal before a message
    /// from that PE in the same collective. So signal `c + 2` comes in a later collective than
    /// `c`, which the receiver enters only after it read `c`'s slot.
    #[inline(always)]
    pub(crate) fn sig_send_tagged(
        &self,
        slot: usize,
        to: usize,
        tag: u64,
        words: Option<(u64, u64)>,
        func: &'static str,
    ) -> Result<u64> {
        let st = &self.teams.streams[slot];
        let c = st.sent[to].load(Ordering::Relaxed) + 1;
        let flag = self.slots.flag(slot, Chan::Arrive, self.me);
        let off = signal_slot(c);
        match self.shm.ptr(to, flag, 64) {
            Some(line) => {
                // SAFETY: the flag line is 64 aligned bytes of `to`'s mapped slot, whose words
                // only this PE writes, always atomically: the slot's words, then the count
                // with release ordering, which publishes them.
                unsafe {
                    let w = line.add(off).cast::<u64>();
                    AtomicU64::from_ptr(w).store(tag, Ordering::Relaxed);
                    if let Some((a, b)) = words {
                        AtomicU64::from_ptr(w.add(1)).store(a, Ordering::Relaxed);
                        AtomicU64::from_ptr(w.add(2)).store(b, Ordering::Relaxed);
                    }
                    AtomicU64::from_ptr(line.cast()).store(c, Ordering::Release);
                }
            }
            None => {
                let mut at = flag;
                at.offset += off;
                let (a, b) = words.unwrap_or((0, 0));
                let w = [tag, a, b];
                let len = if words.is_some() { 24 } else { 8 };
                // SAFETY: w is a local of 24 bytes; store_flag's fence orders the put before
                // the count.
                unsafe { self.put_raw(to, at, w.as_ptr().cast(), len, func)? };
                self.store_flag(to, flag, c, func)?;
            }
        }
        st.sent[to].store(c, Ordering::Relaxed);
        Ok(c)
    }

    /// The word at `word` of the slot of the signal from `from` this PE consumed last.
    #[inline(always)]
    fn signal_word(&self, slot: usize, from: usize, word: usize) -> u64 {
        self.signal_word_of(slot, from, self.teams.streams[slot].recvd[from].load(Ordering::Relaxed), word)
    }

    /// The word at `word` of the slot of signal `c` from `from`, which this PE consumed.
    #[inline(always)]
    pub(crate) fn signal_word_of(&self, slot: usize, from: usize, c: u64, word: usize) -> u64 {
        let mut at = self.slots.flag(slot, Chan::Arrive, from);
        at.offset += signal_slot(c) + 8 * word;
        // SAFETY: an aligned u64 inside our own flag line for `from`, written atomically by
        // `from` before the count this PE acquired.
        unsafe { AtomicU64::from_ptr(self.local_addr(at) as *mut u64) }.load(Ordering::Relaxed)
    }

    /// The two words of the signal from `from` this PE consumed last.
    pub(crate) fn signal_words(&self, slot: usize, from: usize) -> (u64, u64) {
        (self.signal_word(slot, from, 1), self.signal_word(slot, from, 2))
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
        self.flag_wait(self.slots.flag(slot, Chan::Arrive, from), c, from);
        st.recvd[from].store(c, Ordering::Relaxed);
        c
    }

    /// Waits until this PE's flag at `a` (in its own segment), which world PE `from` writes,
    /// is at least `v`.
    #[inline(always)]
    pub(crate) fn flag_wait(&self, a: crate::transport::SymAddr, v: u64, from: usize) {
        // SAFETY: flags are live, aligned internal objects in our own segment, accessed
        // atomically by every PE.
        let f = unsafe { AtomicU64::from_ptr(self.local_addr(a) as *mut u64) };
        if f.load(Ordering::Acquire) >= v {
            return;
        }
        let mut b = self.backoff().waiting_for(from);
        while f.load(Ordering::Acquire) < v {
            b.snooze();
        }
    }
}
