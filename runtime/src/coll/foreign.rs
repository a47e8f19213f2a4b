//! Team collectives whose buffers lie in a segment that a layer above the runtime registered
//! (`crate::segment`: the GPU heap): the runtime's collective entry points (the pointer forms
//! of [`crate::coll::api::raw`]) hand such a call to the segment
//! ([`ForeignSegment::collective`]), which moves the data its own way (the GPU heap: copies
//! through the peers' mappings, `oxshmem_device::cuda::coll`). What the runtime lends it: the
//! team, and [`team_words`], an exchange of one word per member through the team's mailboxes,
//! with which the segment's collective checks that every member passed the same arguments
//! before any data moves.

use std::sync::Arc;

use crate::coll::header::{Group, Header, Received, kind};
use crate::coll::wire::payload_of;
use crate::error::{Error, ErrorKind, Result};
use crate::segment::{self, ForeignSegment};
use crate::team::Team;
use crate::world::Runtime;

/// Every member's `word`, in team order, exchanged through `team`'s own mailboxes (the
/// runtime's checked exchange: one message to every other member, no symmetric buffer of the
/// caller's). Collective over `team`, and counted among its collectives: the members call it
/// at the same point of their sequence of collectives on the team. A segment's collectives
/// begin with it, so that members called with different arguments all see it before any data
/// moves (and each knows the others are in the call: their buffers are ready).
pub fn team_words(team: &Team, func: &'static str, word: u64) -> Result<Vec<u64>> {
    let (rt, t) = team.live(func)?;
    let g = Group { slot: t.slot, members: &t.members, me: t.me, set: 0 };
    // An fcollect of one word, marked (root u32::MAX, which no broadcast has) so that a
    // member in an ordinary fcollect of 8 bytes disagrees instead of taking this for data.
    let mut hdr = Header::new(kind::FCOLLECT);
    hdr.count = 8;
    hdr.count_varies = 1;
    hdr.root = u32::MAX;
    let bytes = word.to_le_bytes();
    let mut recv = Received::new();
    // SAFETY: the payload is a live local of 8 bytes.
    unsafe { rt.exchange(g, hdr, func, |_| (bytes.as_ptr(), bytes.len()), &mut recv)? };
    let mut all = Vec::with_capacity(g.n());
    for (j, r) in recv.iter().enumerate() {
        all.push(match r {
            None if j == g.me => word,
            Some((h, mail)) if h.payload == 8 => {
                let mut w = [0u8; 8];
                // SAFETY: the message carries its 8 payload bytes after its header.
                unsafe { std::ptr::copy_nonoverlapping(payload_of(mail), w.as_mut_ptr(), 8) };
                u64::from_le_bytes(w)
            }
            _ => {
                rt.release_all(g, &recv, func)?;
                return Err(Error::new(
                    rt.me,
                    func,
                    ErrorKind::CollectiveMismatch(format!("team member {j} (PE {}) sent no word", g.members[j])),
                ));
            }
        });
    }
    rt.release_all(g, &recv, func)?;
    Ok(all)
}

/// The registered segment that a collective's buffer at `dest` or `source` lies in (either
/// outside the runtime's own segments), which then runs the collective: the one place the
/// collectives meet the registered segments ([`segment::find`], one load when none is).
#[inline]
pub(crate) fn route(rt: &Runtime, dest: *const u8, source: *const u8) -> Option<Arc<dyn ForeignSegment>> {
    let foreign = |addr: usize| {
        if rt.segs.iter().any(|&(base, len)| addr.wrapping_sub(base) < len) { None } else { segment::find(addr, 0) }
    };
    foreign(dest as usize).or_else(|| foreign(source as usize))
}
