//! Alltoall and alltoalls: block `j` of every member's source goes to member `j`'s
//! destination, at the sender's block.
//!
//! Blocks that fit a mailbox ride in the checked exchange (packed, for the strided form);
//! larger ones are put straight into each member's destination after it, member `me+1` first
//! so that members do not all write to the same PE at once, then one signal per member.

use crate::coll::header::{Group, Header, Received, kind};
use crate::coll::wire::payload_of;
use crate::error::Result;
use crate::transport::SymAddr;
use crate::world::Runtime;

impl Runtime {
    /// Strided all-to-all of `nelems` elements of `esize` bytes per pair: block `j` is
    /// `src[(j*nelems + k)*sst]`, and lands at `dest[(me*nelems + k)*dst]` on member `j`
    /// (`dst = sst = 1` is plain alltoall).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoalls(
        &self,
        g: Group<'_>,
        dest: SymAddr,
        src: SymAddr,
        dst: usize,
        sst: usize,
        nelems: usize,
        esize: usize,
        func: &'static str,
    ) -> Result<()> {
        let n = g.n();
        let contiguous = dst == 1 && sst == 1;
        let mut hdr = Header::new(if contiguous { kind::ALLTOALL } else { kind::ALLTOALLS });
        hdr.count = nelems as u64;
        hdr.type_id = esize as u32;
        hdr.a = u32::try_from(dst).unwrap_or(u32::MAX);
        hdr.b = u32::try_from(sst).unwrap_or(u32::MAX);
        let block = nelems * esize;
        let fits = block <= self.inline_max();
        let src_ptr = self.local_addr(src) as *const u8;
        let dst_ptr = self.local_addr(dest) as *mut u8;
        let src_elem = |j: usize, k: usize| (j * nelems + k) * sst * esize;
        let dst_elem = |i: usize, k: usize| (i * nelems + k) * dst * esize;
        // Strided blocks are packed so that each travels as one message.
        let packed: Vec<Vec<u8>> = if fits && !contiguous {
            (0..n)
                .map(|j| {
                    let mut v = vec![0u8; block];
                    for k in 0..nelems {
                        // SAFETY: element k of block j lies inside the caller's source.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                src_ptr.add(src_elem(j, k)),
                                v.as_mut_ptr().add(k * esize),
                                esize,
                            )
                        };
                    }
                    v
                })
                .collect()
        } else {
            Vec::new()
        };
        let payload = |j: usize| {
            if !fits {
                (std::ptr::null(), 0)
            } else if contiguous {
                (src_ptr.wrapping_add(j * block), block)
            } else {
                (packed[j].as_ptr(), block)
            }
        };
        let mut recv = Received::new();
        // SAFETY: payloads are blocks of our own source (or packed copies of them).
        unsafe { self.exchange(g, hdr, func, payload, &mut recv)? };
        let unpack = |from: *const u8, i: usize| {
            if contiguous {
                // SAFETY: block i of our destination.
                unsafe { std::ptr::copy_nonoverlapping(from, dst_ptr.add(i * block), block) };
                return;
            }
            for k in 0..nelems {
                // SAFETY: element k of block i lies inside our destination.
                unsafe { std::ptr::copy(from.add(k * esize), dst_ptr.add(dst_elem(i, k)), esize) };
            }
        };
        if fits {
            for (j, r) in recv.iter().enumerate() {
                if let Some((_, mail)) = r {
                    unpack(payload_of(mail), j);
                }
            }
        }
        // Our own block.
        if contiguous {
            // SAFETY: block `me` of our source to block `me` of our destination (no overlap:
            // alltoall's source and destination must not overlap).
            unsafe { std::ptr::copy(src_ptr.add(g.me * block), dst_ptr.add(g.me * block), block) };
        } else {
            for k in 0..nelems {
                // SAFETY: element k of our own block, both inside their arrays.
                unsafe { std::ptr::copy(src_ptr.add(src_elem(g.me, k)), dst_ptr.add(dst_elem(g.me, k)), esize) };
            }
        }
        self.release_all(g, &recv, func)?;
        if !fits {
            for k in 1..n {
                let j = (g.me + k) % n;
                if contiguous {
                    let mut at = dest;
                    at.offset += g.me * block;
                    // SAFETY: block j of our source.
                    unsafe { self.put_raw(g.members[j], at, src_ptr.add(j * block), block, func)? };
                } else {
                    for e in 0..nelems {
                        let mut at = dest;
                        at.offset += dst_elem(g.me, e);
                        // SAFETY: element e of block j of our source.
                        unsafe { self.put_raw(g.members[j], at, src_ptr.add(src_elem(j, e)), esize, func)? };
                    }
                }
                self.sig_send(g.slot, g.members[j], func)?;
            }
            for k in 1..n {
                let j = (g.me + n - k) % n;
                self.sig_wait(g.slot, g.members[j]);
            }
        }
        Ok(())
    }
}
