//! Collect (allgather, sizes may differ) and fcollect (allgather, equal sizes).
//!
//! Every member's contribution lands at its offset in every member's destination, in member
//! order. Contributions that fit a mailbox ride in the checked exchange; larger ones are put
//! straight into each member's destination after it (the exchange proves each destination is
//! ready), followed by one signal per member.

use crate::coll::header::{Group, Header, PerMember, Received, kind};
use crate::coll::wire::payload_of;
use crate::error::{Error, ErrorKind, Result};
use crate::transport::SymAddr;
use crate::world::Runtime;

/// What a collect knows of its destination's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// It holds this many bytes (the safe API's slices): every member learns every member's.
    Holds(usize),
    /// Unknown (the pointer forms): the total must be a symmetric range from `dest`.
    Check,
    /// There is none: this member contributes nothing and passed a pointer that is not
    /// symmetric (NULL, typically), given here for the message. Only a total of 0 fits.
    Absent(usize),
}

impl Runtime {
    /// Concatenates every member's `nbytes` (which may differ between members) from `src`
    /// into `dest`; `room` says what bounds the total. Returns the total bytes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn collect(
        &self,
        g: Group<'_>,
        dest: SymAddr,
        src: SymAddr,
        nbytes: usize,
        fixed: bool,
        room: Room,
        type_id: u32,
        func: &'static str,
    ) -> Result<usize> {
        let n = g.n();
        let mut hdr = Header::new(if fixed { kind::FCOLLECT } else { kind::COLLECT });
        hdr.count = nbytes as u64;
        hdr.count_varies = u8::from(!fixed);
        hdr.type_id = type_id;
        // The destination's capacity travels in the header, so that members whose
        // destinations differ all learn it before any data moves.
        let cap = match room {
            Room::Holds(c) => c as u64,
            Room::Check | Room::Absent(_) => 0,
        };
        (hdr.a, hdr.b) = (cap as u32, (cap >> 32) as u32);
        let fits = nbytes <= self.inline_max();
        let src_ptr = self.local_addr(src) as *const u8;
        let dst_ptr = self.local_addr(dest) as *mut u8;
        let mut recv = Received::new();
        // SAFETY: the payload is our own symmetric source of nbytes bytes.
        unsafe {
            self.exchange(g, hdr, func, |_| if fits { (src_ptr, nbytes) } else { (std::ptr::null(), 0) }, &mut recv)?
        };
        let size = |j: usize| {
            if j == g.me { nbytes } else { recv[j].as_ref().map_or(0, |r| r.0.count as usize) }
        };
        let mut offs: PerMember<usize> = PerMember::with_capacity(n);
        let mut total = 0usize;
        for j in 0..n {
            offs.push(total);
            total = match total.checked_add(size(j)) {
                Some(t) => t,
                None => {
                    self.release_all(g, &recv, func)?;
                    return Err(Error::new(
                        self.me,
                        func,
                        ErrorKind::InvalidSize { what: "total collected size overflows".into() },
                    ));
                }
            };
        }
        // Every member sees every size and every member's capacity, so all decide alike: a
        // member whose destination is too small gets SizeMismatch, the others learn who.
        let cap_of = |j: usize| {
            if j == g.me { cap } else { recv[j].as_ref().map_or(0, |r| u64::from(r.0.a) | u64::from(r.0.b) << 32) }
        };
        let short = (0..n).find(|&j| cap_of(j) != 0 && (total as u64) > cap_of(j));
        let fits_room = match short {
            Some(j) if j == g.me => Err(ErrorKind::SizeMismatch {
                what: format!("the team contributes {total} bytes but the destination holds {cap}"),
            }),
            Some(j) => Err(ErrorKind::CollectiveMismatch(format!(
                "team member {j} (PE {})'s destination holds {} bytes but the team contributes {total}",
                g.members[j],
                cap_of(j)
            ))),
            None => match room {
                Room::Holds(_) => Ok(()),
                Room::Check => self.extent_ok(dest, total).map_err(|_| ErrorKind::NotSymmetric {
                    what: "dest",
                    addr: self.local_addr(dest),
                    len: total,
                }),
                Room::Absent(addr) if total > 0 => Err(ErrorKind::NotSymmetric { what: "dest", addr, len: total }),
                Room::Absent(_) => Ok(()),
            },
        };
        if let Err(kind) = fits_room {
            self.release_all(g, &recv, func)?;
            if matches!(room, Room::Absent(_)) {
                // Only this member knows it has no destination: the others put their large
                // contributions (into this PE's copy of their own, valid, destination) and
                // signal as usual. Take those signals, so that the streams stay in step.
                self.wait_direct(g, &recv);
            }
            return Err(Error::new(self.me, func, kind));
        }
        for (j, r) in recv.iter().enumerate() {
            if let Some((h, mail)) = r
                && (h.payload > 0 || h.count == 0)
            {
                // SAFETY: the message carries count bytes after its header; the
                // destination range was checked above (or is the caller's promise).
                unsafe { std::ptr::copy_nonoverlapping(payload_of(mail), dst_ptr.add(offs[j]), h.count as usize) };
            }
        }
        // SAFETY: our own contribution into our own destination.
        unsafe { std::ptr::copy(src_ptr, dst_ptr.add(offs[g.me]), nbytes) };
        self.release_all(g, &recv, func)?;
        if !fits {
            for k in 1..n {
                let j = (g.me + k) % n;
                let mut at = dest;
                at.offset += offs[g.me];
                // SAFETY: src_ptr is our own source of nbytes bytes.
                unsafe { self.put_raw(g.members[j], at, src_ptr, nbytes, func)? };
                self.sig_send(g.slot, g.members[j], func)?;
            }
        }
        self.wait_direct(g, &recv);
        Ok(total)
    }

    /// Takes the signal of every member whose contribution came directly (too large for its
    /// message): it has been put into this PE's destination.
    fn wait_direct(&self, g: Group<'_>, recv: &Received) {
        for (j, r) in recv.iter().enumerate() {
            if let Some((h, _)) = r
                && h.payload == 0
                && h.count > 0
            {
                self.sig_wait(g.slot, g.members[j]);
            }
        }
    }
}
