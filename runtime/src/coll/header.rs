//! The checked exchange that opens every data-moving collective.
//!
//! Each member sends every other member one mailbox message: a 40-byte header describing the
//! call (kind, root, sizes, operation, element type) and, when it fits, the payload that
//! member needs. Each member receives every other's message before any other data moves, so
//! every member learns every other's arguments — PEs that disagree all get the same
//! `CollectiveMismatch` error, and none waits for data that will never come. The exchange
//! also proves that every member has entered the collective, i.e. that its destination buffer
//! is ready, which is what lets large collectives put straight into peers' destinations.
//!
//! The header also carries the collective's number on its team, and each member takes from
//! each other member whatever comes next, message or signal (see `sequence.rs`): a member in
//! another collective (a barrier, the next one) makes every member fail naming both calls.
//! What a member takes instead is a [`Seen`], and the routine a header names is
//! [`Header::routine`]; both live here, so that `sequence.rs` imports this file and not the
//! reverse.

use bytemuck::{Pod, Zeroable};
use oxshmem_bootstrap::status::{Routine, code, op_name};

use crate::coll::wire::{HDR, Item, Mail, type_name};
use crate::error::{Error, ErrorKind, Result};
use crate::world::Runtime;

/// What a collective call looked like on its caller.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct Header {
    pub(crate) kind: u8,
    pub(crate) op: u8,
    /// 1 when the sender rejected its own arguments (and so moves no data).
    pub(crate) invalid: u8,
    /// Whether `count` may differ between members (collect).
    pub(crate) count_varies: u8,
    pub(crate) type_id: u32,
    pub(crate) root: u32,
    /// Payload bytes that follow the header in this message (at most a mailbox, < 64 KiB).
    pub(crate) payload: u16,
    /// The low 16 bits of the collective's number on its team (see `sequence.rs`).
    pub(crate) seq: u16,
    pub(crate) count: u64,
    /// Strides of alltoalls (saturated to 32 bits).
    pub(crate) a: u32,
    pub(crate) b: u32,
    /// The active set (`PE_start | logPE_stride << 24 | PE_size << 32`) of the deprecated
    /// routines; 0 for teams.
    pub(crate) set: u64,
}

/// What a PE received where a collective expected the next item of the same collective.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seen {
    /// A signal with this tag and these words.
    Signal(u64, (u64, u64)),
    /// A message with this header.
    Message(Header),
}

// The header is 40 bytes (HDR): 16 bytes of codes, the count, the two strides, the set.
const _: () = assert!(size_of::<Header>() == HDR && HDR == 40);

/// Collective kinds.
pub(crate) mod kind {
    pub(crate) const BCAST: u8 = 1;
    pub(crate) const COLLECT: u8 = 2;
    pub(crate) const FCOLLECT: u8 = 3;
    pub(crate) const ALLTOALL: u8 = 4;
    pub(crate) const ALLTOALLS: u8 = 5;
    pub(crate) const REDUCE: u8 = 6;
    /// Prefix sums (`coll/scan.rs`): inclusive and exclusive.
    pub(crate) const INSCAN: u8 = 7;
    pub(crate) const EXSCAN: u8 = 8;

    // The kinds are the status table's routine codes of the same collectives.
    use oxshmem_bootstrap::status::code;
    const _: () = assert!(
        BCAST as u16 == code::BROADCAST
            && COLLECT as u16 == code::COLLECT
            && FCOLLECT as u16 == code::FCOLLECT
            && ALLTOALL as u16 == code::ALLTOALL
            && ALLTOALLS as u16 == code::ALLTOALLS
            && REDUCE as u16 == code::REDUCE
            && INSCAN as u16 == code::INSCAN
            && EXSCAN as u16 == code::EXSCAN
    );
}

impl Header {
    pub(crate) fn new(kind: u8) -> Self {
        Header { kind, ..Zeroable::zeroed() }
    }

    pub(crate) fn agrees(&self, o: &Header) -> bool {
        self.invalid == 0
            && o.invalid == 0
            && self.kind == o.kind
            && self.root == o.root
            && self.op == o.op
            && self.type_id == o.type_id
            && (self.count == o.count || self.count_varies == 1)
            // collect/fcollect carry the destination's capacity in a/b, checked separately.
            && (matches!(self.kind, kind::COLLECT | kind::FCOLLECT) || (self.a == o.a && self.b == o.b))
            && self.set == o.set
    }

    /// The routine this header describes (its kind is the routine's code).
    pub(crate) fn routine(&self) -> Routine {
        let reduction = matches!(u16::from(self.kind), code::REDUCE | code::INSCAN | code::EXSCAN);
        let ty = if reduction || self.type_id <= 255 { self.type_id as u8 } else { 0 };
        Routine { code: u16::from(self.kind), op: self.op, ty }
    }

    pub(crate) fn describe(&self) -> String {
        let name = match self.kind {
            kind::BCAST => "broadcast",
            kind::COLLECT => "collect",
            kind::FCOLLECT => "fcollect",
            kind::ALLTOALL => "alltoall",
            kind::ALLTOALLS => "alltoalls",
            kind::REDUCE => "reduction",
            kind::INSCAN => "inclusive scan",
            kind::EXSCAN => "exclusive scan",
            _ => "unknown collective",
        };
        // Alltoalls carry their element count and size; the other kinds carry bytes.
        let mut s = if matches!(self.kind, kind::ALLTOALL | kind::ALLTOALLS) {
            let bytes = u128::from(self.count) * u128::from(self.type_id.max(1));
            format!("{name} of {bytes} bytes per PE ({} elements)", self.count)
        } else {
            format!("{name} of {} bytes", self.count)
        };
        if self.kind == kind::BCAST {
            s += &format!(", root {}", self.root);
        }
        let reduction = matches!(self.kind, kind::REDUCE | kind::INSCAN | kind::EXSCAN);
        if reduction {
            s += &format!(", operation {}, element type {}", op_name(self.op).unwrap_or("?"), type_name(self.type_id));
        }
        if matches!(self.kind, kind::COLLECT | kind::FCOLLECT) && (self.a, self.b) != (0, 0) {
            s += &format!(", destination of {} bytes", u64::from(self.a) | u64::from(self.b) << 32);
        }
        if self.kind == kind::ALLTOALLS {
            s += &format!(", strides {}/{}", self.a, self.b);
        }
        if self.set != 0 {
            s += &format!(
                ", active set (PE_start {}, logPE_stride {}, PE_size {})",
                self.set & 0xff_ffff,
                (self.set >> 24) & 0xff,
                self.set >> 32
            );
        }
        if self.type_id != 0 && !reduction {
            s += &format!(", element size {}", self.type_id);
        }
        s
    }
}

/// A group of PEs running one collective through one slot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group<'a> {
    pub(crate) slot: usize,
    /// World PE of each member, in member order.
    pub(crate) members: &'a [usize],
    /// This PE's member number.
    pub(crate) me: usize,
    /// The active set, for the deprecated routines (see [`Header::set`]).
    pub(crate) set: u64,
}

impl Group<'_> {
    pub(crate) fn n(&self) -> usize {
        self.members.len()
    }
}

/// The exchange's result: every other member's header and message, by member number (this
/// PE's own entry is `None`). The caller owns it and [`Runtime::exchange`] fills it in place:
/// returned by value, its 460 inline bytes were copied out, which made 8-byte collectives
/// slower than a heap vector; filled in place, it saves the allocation.
pub(crate) type Received = PerMember<Option<(Header, Mail)>>;

/// A short per-member list a collective builds on every call (an active set's members,
/// collect's offsets): inline up to 8 members, so small collectives allocate nothing for it.
pub(crate) type PerMember<T> = smallvec::SmallVec<[T; 8]>;

impl Runtime {
    /// Runs the checked exchange: sends `hdr` plus `payload(j)` (pointer and length, at most
    /// `mb_capacity() - HDR`) to each member `j`, receives everyone's, and checks that all
    /// agree, filling `out` with what every member sent. On success the caller reads the
    /// payloads and then calls [`release_all`].
    ///
    /// # Safety
    /// Each `payload(j)` must be valid for reads of its length.
    ///
    /// [`release_all`]: Self::release_all
    pub(crate) unsafe fn exchange(
        &self,
        g: Group<'_>,
        hdr: Header,
        func: &'static str,
        payload: impl Fn(usize) -> (*const u8, usize),
        out: &mut Received,
    ) -> Result<()> {
        let c = self.coll_begin(g.slot, hdr.routine(), g.members, func)?;
        let n = g.n();
        let mut mine = hdr;
        mine.set = g.set;
        mine.seq = c.seq as u16;
        for k in 1..n {
            let j = (g.me + k) % n;
            let (p, len) = payload(j);
            debug_assert!(len <= self.mb_capacity() - HDR);
            let mut h = mine;
            h.payload = len as u16;
            // SAFETY: h is a local of HDR bytes; the payload is valid per the caller.
            unsafe { self.mb_send_parts(g.slot, g.members[j], &[((&raw const h).cast(), HDR), (p, len)], func)? };
        }
        out.clear();
        out.resize(n, None);
        let mut bad = None;
        // A member in another collective altogether: whatever it sent, and who.
        let mut other: Option<(usize, Seen)> = None;
        for k in 1..n {
            let j = (g.me + n - k) % n;
            let mail = match self.recv_item(g.slot, g.members[j], false) {
                Item::Mail(mail) => mail,
                Item::Signal(tag) => {
                    let words = self.signal_words(g.slot, g.members[j]);
                    other.get_or_insert((j, Seen::Signal(tag, words)));
                    continue;
                }
            };
            // SAFETY: the mailbox holds a header written by member j (aligned, HDR bytes).
            let h: Header = unsafe { mail.ptr.cast::<Header>().read_unaligned() };
            if h.seq != mine.seq && g.slot != crate::team::ACTIVE_SLOT {
                other.get_or_insert((j, Seen::Message(h)));
            } else if bad.is_none() && !mine.agrees(&h) {
                bad = Some((j, h));
            }
            out[j] = Some((h, mail));
        }
        if let Some((j, seen)) = other {
            self.release_all(g, out, func)?;
            // Every member has had this PE's message: nobody is left to tell.
            return Err(self.coll_mismatch(&c, g.members, std::iter::empty(), g.members[j], seen, func));
        }
        if let Some((j, h)) = bad {
            self.release_all(g, out, func)?;
            return Err(self.disagreement(g, j, &h, &hdr, func));
        }
        Ok(())
    }

    /// The error of a member whose call `mine` disagrees with member `j`'s `theirs`.
    #[cold]
    pub(crate) fn disagreement(
        &self,
        g: Group<'_>,
        j: usize,
        theirs: &Header,
        mine: &Header,
        func: &'static str,
    ) -> Error {
        let text = if theirs.invalid != 0 {
            format!("team member {j} (PE {}) rejected its arguments to this {}", g.members[j], theirs.describe())
        } else {
            format!(
                "team member {j} (PE {}) called {}, this PE called {}",
                g.members[j],
                theirs.describe(),
                Header { set: g.set, ..*mine }.describe()
            )
        };
        Error::new(self.me, func, ErrorKind::CollectiveMismatch(text))
    }

    /// Takes part in a collective whose arguments this PE rejected: tells every member (so none
    /// waits for data) and returns `err`. Only the exchange runs, so no data moves anywhere.
    pub(crate) fn reject(&self, g: Group<'_>, kind: u8, err: Error, func: &'static str) -> Result<()> {
        let mut hdr = Header::new(kind);
        hdr.invalid = 1;
        let mut recv = Received::new();
        // SAFETY: no payloads.
        if unsafe { self.exchange(g, hdr, func, |_| (std::ptr::null(), 0), &mut recv) }.is_ok() {
            self.release_all(g, &recv, func)?
        }
        Err(err)
    }

    /// Grants every sender of `recv` its credit.
    pub(crate) fn release_all(&self, g: Group<'_>, recv: &Received, func: &'static str) -> Result<()> {
        for (j, r) in recv.iter().enumerate() {
            if let Some((_, mail)) = r {
                self.mb_release(g.slot, g.members[j], *mail, func)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32, item 12: an alltoall's header holds elements and their size; its description
    /// says bytes (an 8-byte alltoall said "alltoall of 1 bytes").
    #[test]
    fn alltoall_descriptions_count_bytes() {
        let mut h = Header::new(kind::ALLTOALL);
        h.count = 1;
        h.type_id = 8;
        (h.a, h.b) = (1, 1);
        assert_eq!(h.describe(), "alltoall of 8 bytes per PE (1 elements), element size 8");
        let mut h = Header::new(kind::ALLTOALLS);
        h.count = 3;
        h.type_id = 4;
        (h.a, h.b) = (2, 1);
        assert_eq!(h.describe(), "alltoalls of 12 bytes per PE (3 elements), strides 2/1, element size 4");
        let mut h = Header::new(kind::BCAST);
        h.count = 8;
        assert_eq!(h.describe(), "broadcast of 8 bytes, root 0");
    }
}
