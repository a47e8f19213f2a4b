//! Prefix sums over a team: `shmem_sum_inscan` and `shmem_sum_exscan` (OpenSHMEM 1.6; Sandia
//! OpenSHMEM's `shmemx_TYPE_sum_inscan`/`_exscan`).
//!
//! Member `i` of the team gets, element by element, the sum of the sources of members `0..=i`
//! (inclusive scan) or `0..i` (exclusive scan; zero on member 0). Sums are taken in member
//! order, `((s0 + s1) + s2) + …`, on every path, so floating-point results do not depend on the
//! algorithm or the timing.
//!
//! Like every collective here, a scan opens with the checked exchange (every member sees every
//! other's arguments before any data moves, and PEs that disagree all get the same error).
//! - Small scans (up to one mailbox payload) ride in the exchange itself: each member sends its
//!   source to the members after it and sums what it receives — one cache-line trip.
//! - Larger scans run as a pipelined chain: member `i` receives the running prefix from member
//!   `i - 1` one mailbox-sized chunk at a time, adds its own chunk, passes the result on to
//!   member `i + 1` and writes its destination. Each member reads only its own source and
//!   writes only its own destination, so `dest` may be `source` (an in-place scan), and each
//!   byte crosses between cores once per member; chunks overlap along the chain.

use crate::coll::header::{Group, Header, Received, kind};
use crate::coll::reduce::{ArithReducible, ReduceOp, copy_into};
use crate::coll::wire::payload_of;
use crate::error::{Error, ErrorKind, Result};
use crate::sym::SymSlice;
use crate::team::{Team, TeamInner};
use crate::transport::SymAddr;
use crate::world::Runtime;

fn group(t: &TeamInner) -> Group<'_> {
    Group { slot: t.slot, members: &t.members, me: t.me, set: 0 }
}

/// `acc[i] = prev[i] + acc[i]`: the running prefix first, so that sums are taken in member
/// order. `prev` may be unaligned (a mailbox payload).
fn add_prefix<T: ArithReducible>(acc: &mut [T], prev: *const T) {
    for (i, a) in acc.iter_mut().enumerate() {
        // SAFETY: the caller's `prev` holds at least acc.len() elements.
        let p = unsafe { prev.add(i).read_unaligned() };
        *a = T::apply(ReduceOp::Sum, p, *a);
    }
}

impl Runtime {
    /// Inclusive (`exclusive == false`) or exclusive prefix sum of `count` elements of `T` from
    /// `src` on every member into `dest` on every member.
    pub(crate) fn scan<T: ArithReducible>(
        &self,
        g: Group<'_>,
        dest: SymAddr,
        src: SymAddr,
        count: usize,
        exclusive: bool,
        func: &'static str,
    ) -> Result<()> {
        let n = g.n();
        let es = size_of::<T>().max(1);
        let bytes = count * es;
        let small = bytes <= self.inline_max();
        let src_ptr = self.local_addr(src) as *const T;
        let dst_ptr = self.local_addr(dest) as *mut T;
        let mut hdr = Header::new(if exclusive { kind::EXSCAN } else { kind::INSCAN });
        hdr.op = ReduceOp::Sum as u8;
        hdr.type_id = T::TYPE_ID;
        hdr.count = bytes as u64;
        // Small: only the members after this one need its source.
        let payload =
            |j: usize| if small && j > g.me && count > 0 { (src_ptr.cast(), bytes) } else { (std::ptr::null(), 0) };
        let mut recv = Received::new();
        // SAFETY: the payload is our own symmetric source of `count` elements.
        unsafe { self.exchange(g, hdr, func, payload, &mut recv)? };
        if small {
            let last = if exclusive { g.me } else { g.me + 1 };
            let mut acc: Vec<T> = vec![T::zeroed(); count];
            for (j, r) in recv.iter().enumerate().take(last) {
                let from: *const T = if j == g.me {
                    src_ptr
                } else {
                    payload_of(&r.as_ref().expect("a message from every other member").1).cast()
                };
                if j == 0 {
                    for (i, a) in acc.iter_mut().enumerate() {
                        // SAFETY: member 0's contribution holds count elements.
                        *a = unsafe { from.add(i).read_unaligned() };
                    }
                } else {
                    // acc holds members 0..j; member j's source is added last.
                    for (i, a) in acc.iter_mut().enumerate() {
                        // SAFETY: as above.
                        let x = unsafe { from.add(i).read_unaligned() };
                        *a = T::apply(ReduceOp::Sum, *a, x);
                    }
                }
            }
            self.release_all(g, &recv, func)?;
            if count > 0 {
                // SAFETY: our own destination of count elements; every contribution was copied.
                unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dst_ptr, count) };
            }
            return Ok(());
        }
        self.release_all(g, &recv, func)?;
        // Large: the chain. The exchange proved that every member agrees on `count`, so every
        // member cuts the same chunks.
        let chunk = (self.mb_capacity() / es).max(1);
        let mut acc: Vec<T> = Vec::with_capacity(chunk.min(count));
        let mut start = 0;
        while start < count {
            let len = chunk.min(count - start);
            acc.clear();
            // SAFETY: elements start..start+len of our own source, read before anything of this
            // chunk is written (dest may be source); acc, empty, is a buffer of its own. Only
            // this call writes our destination, and no other agent our source, until the scan
            // returns (OpenSHMEM's rule for a collective's buffers), so a plain copy races nothing.
            unsafe { copy_into(&mut acc, src_ptr.add(start), len) };
            // SAFETY: elements start..start+len of our own destination, which the writes below
            // stay within.
            let out = unsafe { dst_ptr.add(start) };
            if g.me > 0 {
                let mail = self.mb_recv(g.slot, g.members[g.me - 1]);
                let prev = mail.ptr.cast::<T>();
                if exclusive {
                    // SAFETY: the message holds len elements; out is ours for len elements.
                    unsafe { std::ptr::copy_nonoverlapping(prev.cast::<u8>(), out.cast::<u8>(), len * es) };
                }
                add_prefix(&mut acc, prev);
                self.mb_release(g.slot, g.members[g.me - 1], mail, func)?;
            } else if exclusive {
                // SAFETY: as above (all-zero bytes are a valid `Pod` value).
                unsafe { std::ptr::write_bytes(out, 0, len) };
            }
            if g.me + 1 < n {
                // SAFETY: acc holds len elements, at most one mailbox.
                unsafe { self.mb_send_parts(g.slot, g.members[g.me + 1], &[(acc.as_ptr().cast(), len * es)], func)? };
            }
            if !exclusive {
                // SAFETY: as above.
                unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), out, len) };
            }
            start += len;
        }
        Ok(())
    }
}

fn too_short(rt: &Runtime, func: &'static str, what: &str, need: usize, have: usize) -> Option<Error> {
    (need > have).then(|| {
        Error::new(
            rt.me,
            func,
            ErrorKind::SizeMismatch { what: format!("{what} needs {need} elements but holds {have}") },
        )
    })
}

impl Team {
    /// `shmem_sum_inscan` (OpenSHMEM 1.6): member `i` gets in `dest` the element-wise sum of the
    /// first `nelems` elements of `source` on members `0..=i`. `dest` may be `source`.
    /// Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let me = shmem.my_pe() as u64;
    /// let src = shmem.alloc_slice(2, me + 1)?;
    /// let dst = shmem.alloc_slice(2, 0u64)?;
    /// shmem.team_world().sum_inscan(&dst, &src, 2)?;
    /// assert_eq!(dst.read(0), (me + 1) * (me + 2) / 2); // 1 + 2 + … + (me + 1)
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn sum_inscan<T: ArithReducible>(&self, dest: &SymSlice<T>, source: &SymSlice<T>, nelems: usize) -> Result<()> {
        self.sum_scan(dest, source, nelems, false, "shmem_sum_inscan")
    }

    /// `shmem_sum_exscan` (OpenSHMEM 1.6): member `i` gets in `dest` the element-wise sum of the
    /// first `nelems` elements of `source` on members `0..i`; member 0 gets zeros. `dest` may
    /// be `source`. Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let me = shmem.my_pe() as u64;
    /// let src = shmem.alloc_slice(2, me + 1)?;
    /// shmem.team_world().sum_exscan(&src, &src, 2)?; // in place
    /// assert_eq!(src.read(1), me * (me + 1) / 2); // 1 + 2 + … + me
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn sum_exscan<T: ArithReducible>(&self, dest: &SymSlice<T>, source: &SymSlice<T>, nelems: usize) -> Result<()> {
        self.sum_scan(dest, source, nelems, true, "shmem_sum_exscan")
    }

    fn sum_scan<T: ArithReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        exclusive: bool,
        func: &'static str,
    ) -> Result<()> {
        let (rt, t) = self.live(func)?;
        let g = group(t);
        if let Some(e) = too_short(rt, func, "source", nelems, source.len())
            .or_else(|| too_short(rt, func, "dest", nelems, dest.len()))
        {
            return rt.reject(g, if exclusive { kind::EXSCAN } else { kind::INSCAN }, e, func);
        }
        rt.scan::<T>(g, dest.sym(), source.sym(), nelems, exclusive, func)
    }
}

/// Pointer forms of the scans, for the C ABI.
pub mod raw {
    use super::*;

    /// `shmem_TYPENAME_sum_inscan` (`exclusive == false`) and `shmem_TYPENAME_sum_exscan`.
    ///
    /// # Safety
    /// `dest` and `source` must hold `nelems` elements (checked to be symmetric).
    pub unsafe fn sum_scan<T: ArithReducible>(
        team: &Team,
        dest: *mut T,
        source: *const T,
        nelems: usize,
        exclusive: bool,
    ) -> Result<()> {
        let func = if exclusive { "shmem_sum_exscan" } else { "shmem_sum_inscan" };
        let (rt, t) = team.live(func)?;
        let g = group(t);
        let args = (|| {
            let bytes = nelems.checked_mul(size_of::<T>()).ok_or_else(|| {
                Error::new(rt.me, func, ErrorKind::InvalidSize { what: format!("{nelems} elements overflow") })
            })?;
            Ok((rt.coll_buf(dest.cast(), bytes, "dest", func)?, rt.coll_buf(source.cast(), bytes, "source", func)?))
        })();
        match args {
            Ok((d, s)) => rt.scan::<T>(g, d, s, nelems, exclusive, func),
            Err(e) => rt.reject(g, if exclusive { kind::EXSCAN } else { kind::INSCAN }, e, func),
        }
    }
}
