//! The team collectives on GPU memory: broadcast, collect and fcollect, alltoall and alltoalls,
//! reduce and reducescatter, when the destination or the source is in the GPU heap. The runtime
//! routes them here ([`oxshmem::segment::ForeignSegment::collective`]) from its ordinary
//! collective entry points (`oxshmem::coll::api::raw`), which the C library's `shmem_*` and
//! `nvshmem_*` collectives and Rust programs on [`GpuBuf`](super::GpuBuf) memory call alike.
//!
//! Every PE's GPU heap is mapped in every other PE of the node ([`GpuSegment::remote_for`]), so
//! nothing is staged: when the destination is in the GPU heap each member *pushes* its part
//! straight into every member's destination (the source read where it is, host or GPU memory);
//! when only the source is, each member *pulls* its parts out of the members' sources into its
//! own destination. Each byte crosses once. A reduction is a reduce-scatter and an allgather in
//! one pass: member `i` reads block `i` of every member's source, chunk by chunk, into host
//! memory, combines the chunks in team order on the CPU (with the runtime's combine for the
//! type, or the C library's for `long double`), and writes the result into block `i` of every
//! member's destination (so every member gets the same bits, and an in-place reduction is safe:
//! the only reader of a member's block `i` is member `i`, which has read it before it writes it).
//!
//! Synchronization: the entry is an exchange of one word per member over the team's own
//! mailboxes ([`oxshmem::coll::team_words`]), after which every member is in the call (its
//! destination free, its source ready); the exit is a team sync, after which every copy into
//! this PE's destination has landed and no member still reads its source. The word is a
//! `collect`'s size (its offsets follow), and for the other collectives a signature of the
//! arguments and of which buffers are GPU memory, compared, so that members called with
//! different arguments all get the same error instead of copying to the wrong places. An error
//! after the entry ends the job: the other members are inside the collective and would wait for
//! this one for ever. The exchange uses the team's slot of the runtime's pool, so collectives
//! on different teams, from several threads, share nothing here and take no lock.

use oxshmem::segment::{Collective, Combine, ForeignSegment};
use oxshmem::{Error, ErrorKind, Result, Team, raw};

use super::DevAddr;
use super::segment::GpuSegment;

/// Bytes of each host buffer a reduction combines in (the running result, one member's chunk).
const CHUNK: usize = 256 << 10;

/// The collectives, in signatures.
const BROADCAST: u64 = 1;
const FCOLLECT: u64 = 2;
const ALLTOALLS: u64 = 3;
const REDUCE: u64 = 4;
const REDUCESCATTER: u64 = 5;

/// Where a collective's data moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Each member writes its part into the members' destinations (in the GPU heap).
    Push,
    /// Each member reads its parts out of the members' sources (in the GPU heap).
    Pull,
}

/// A signature of a collective's arguments (FNV-1a of the words).
fn signature(words: &[u64]) -> u64 {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// An invalid-argument error of `func`.
fn invalid(func: &'static str, what: impl Into<String>) -> Error {
    Error::new(oxshmem::world::pe_for_errors(), func, ErrorKind::InvalidArgument(what.into()))
}

/// `n` elements of `size` bytes, in bytes, or the error that it overflows.
fn bytes(func: &'static str, n: usize, size: usize) -> Result<usize> {
    n.checked_mul(size).ok_or_else(|| {
        Error::new(
            oxshmem::world::pe_for_errors(),
            func,
            ErrorKind::InvalidSize { what: format!("{n} elements of {size} bytes overflows") },
        )
    })
}

/// A zeroed host buffer of at least `len` bytes whose start is aligned to 16 bytes, as a
/// reduction's combine expects ([`Combine`]).
fn aligned(len: usize) -> Vec<u128> {
    vec![0u128; len.div_ceil(16)]
}

/// Runs the collective `c` on `team` for the GPU heap `b` ([`ForeignSegment::collective`]).
///
/// # Safety
/// The buffers of `c` are valid for the extents the collective names.
pub(super) unsafe fn run(b: &GpuSegment, team: &Team, func: &'static str, c: Collective<'_>) -> Result<usize> {
    let cl = Coll::new(func, b, team)?;
    // SAFETY: every arm forwards the buffers of `c`, valid per the caller.
    unsafe {
        match c {
            Collective::Broadcast { dest, source, len, root, esize } => {
                cl.broadcast(dest, source, len, root, esize).map(|()| 0)
            }
            Collective::Collect { dest, source, len, fixed, esize } => cl.collect(dest, source, len, fixed, esize),
            Collective::Alltoalls { dest, source, dst, sst, nelems, esize } => {
                cl.alltoalls(dest, source, dst, sst, nelems, esize).map(|()| 0)
            }
            Collective::Reduce { dest, source, nelems, esize, op, combine } => {
                cl.reduce(op as u64, dest, source, nelems, esize, combine).map(|()| 0)
            }
            Collective::ReduceScatter { dest, source, nreduce, esize, op, combine } => {
                cl.reducescatter(op as u64, dest, source, nreduce, esize, combine).map(|()| 0)
            }
            other => Err(invalid(func, format!("{other:?} on GPU memory is not implemented"))),
        }
    }
}

/// One collective call on this PE.
struct Coll<'a> {
    func: &'static str,
    b: &'a GpuSegment,
    team: &'a Team,
    /// World PE of each member, in team order.
    members: Vec<usize>,
    /// This PE's index in the team.
    me: usize,
}

impl<'a> Coll<'a> {
    fn new(func: &'static str, b: &'a GpuSegment, team: &'a Team) -> Result<Coll<'a>> {
        Ok(Coll { func, b, team, members: team.members()?, me: team.my_pe()? })
    }

    /// Members.
    fn n(&self) -> usize {
        self.members.len()
    }

    /// World PE of member `k`.
    fn pe(&self, k: usize) -> usize {
        self.members[k]
    }

    /// Whether `addr` is in the GPU heap.
    fn owns<T>(&self, addr: *const T) -> bool {
        self.b.contains(addr as usize, 0)
    }

    /// Checks that `len` bytes at `addr` lie in the GPU heap when `addr` is GPU memory (before
    /// the entry: the addresses are symmetric, so every member finds the same, and all return
    /// the error rather than some waiting in the collective for the others).
    fn fits<T>(&self, addr: *const T, len: usize) -> Result<()> {
        if self.owns(addr) && len > 0 {
            self.b.remote_for(self.func, addr as usize, len, self.b.me).map(drop)
        } else {
            Ok(())
        }
    }

    /// The entry of a collective whose members pass equal arguments: `sig` exchanged and
    /// compared.
    fn enter(&self, sig: u64) -> Result<()> {
        let all = oxshmem::coll::team_words(self.team, self.func, sig)?;
        if all.iter().any(|&s| s != sig) {
            return Err(invalid(
                self.func,
                "the team's members called it with different arguments (counts, root, strides, operation, or a buffer \
                 in the GPU heap on some PEs and in host memory on others)",
            ));
        }
        Ok(())
    }

    /// The exit, after the copies `r` (an error there ends the job: the members are inside the
    /// collective); `put_host`: some went through the runtime, so they are completed first.
    fn leave(&self, r: Result<()>, put_host: bool) -> Result<()> {
        if let Err(e) = r {
            raw::abort(1, &e.to_string());
        }
        if put_host {
            raw::quiet()?;
        }
        self.team.sync()
    }

    /// `len` bytes from `from` (memory of this process) into `to` (the GPU heap) on member `k`.
    ///
    /// # Safety
    /// `from` is valid for `len` bytes.
    unsafe fn push(&self, to: usize, from: *const u8, len: usize, k: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let d = self.b.remote_for(self.func, to, len, self.pe(k))?;
        // SAFETY: `d` is inside member k's mapped heap for len bytes; `from` per the caller.
        unsafe { self.b.copy(self.func, d, from as DevAddr, len) }
    }

    /// `len` bytes at `from` (the GPU heap) on member `k` into `into` (memory of this process).
    ///
    /// # Safety
    /// `into` is valid for writes of `len` bytes.
    unsafe fn pull(&self, into: *mut u8, from: usize, len: usize, k: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let s = self.b.remote_for(self.func, from, len, self.pe(k))?;
        // SAFETY: `s` is inside member k's mapped heap for len bytes; `into` per the caller.
        unsafe { self.b.copy(self.func, into as DevAddr, s, len) }
    }

    /// A read of member `k`'s `from` (symmetric: the GPU heap, or the runtime's).
    ///
    /// # Safety
    /// As [`Coll::pull`].
    unsafe fn read(&self, into: *mut u8, from: usize, len: usize, k: usize) -> Result<()> {
        if self.owns(from as *const u8) {
            // SAFETY: forwarded.
            unsafe { self.pull(into, from, len, k) }
        } else {
            // SAFETY: `into` per the caller; the runtime checks `from`.
            unsafe { raw::getmem(into, from as *const u8, len, self.pe(k) as i32) }
        }
    }

    /// A write into member `k`'s `to` (symmetric: the GPU heap, or the runtime's).
    ///
    /// # Safety
    /// As [`Coll::push`].
    unsafe fn write(&self, to: usize, from: *const u8, len: usize, k: usize) -> Result<()> {
        if self.owns(to as *const u8) {
            // SAFETY: forwarded.
            unsafe { self.push(to, from, len, k) }
        } else {
            // SAFETY: `from` per the caller; the runtime checks `to`.
            unsafe { raw::putmem(to as *mut u8, from, len, self.pe(k) as i32) }
        }
    }

    /// `broadcast` of `len` bytes from team PE `root`: every member pulls the root's source
    /// (when it is GPU memory), or the root pushes it into every member's destination. The
    /// root's destination is written too.
    ///
    /// # Safety
    /// `dest` and `source` hold `len` bytes (symmetric).
    unsafe fn broadcast(&self, dest: *mut u8, source: *const u8, len: usize, root: i32, esize: usize) -> Result<()> {
        let (func, n) = (self.func, self.n());
        let root = usize::try_from(root)
            .ok()
            .filter(|&r| r < n)
            .ok_or_else(|| invalid(func, format!("root {root} is not a PE of the team (0..{n})")))?;
        if len == 0 {
            return Ok(());
        }
        self.fits(dest, len)?;
        self.fits(source, len)?;
        let pull = self.owns(source);
        self.enter(signature(&[
            BROADCAST,
            len as u64,
            root as u64,
            esize as u64,
            u64::from(pull),
            u64::from(self.owns(dest)),
        ]))?;
        let same = dest.cast_const() == source;
        let r = if pull {
            if self.me == root && same {
                Ok(())
            } else {
                // SAFETY: dest holds len bytes (the caller's); the root's source is in its heap.
                unsafe { self.pull(dest, source as usize, len, root) }
            }
        } else if self.me == root {
            (0..n).filter(|&k| !(k == root && same)).try_for_each(|k| {
                // SAFETY: source holds len bytes; every member's dest is in the GPU heap (push).
                unsafe { self.push(dest as usize, source, len, k) }
            })
        } else {
            Ok(())
        };
        self.leave(r, false)
    }

    /// `[f]collect`: member `i`'s `len` bytes land at the sum of the lengths before it in every
    /// member's destination (`fixed`: all lengths equal, else exchanged at the entry). The
    /// total bytes.
    ///
    /// # Safety
    /// `source` holds `len` bytes and `dest` the lengths of all members (symmetric).
    unsafe fn collect(&self, dest: *mut u8, source: *const u8, len: usize, fixed: bool, esize: usize) -> Result<usize> {
        let (func, n) = (self.func, self.n());
        let way = if self.owns(dest) { Way::Push } else { Way::Pull };
        let lens = if fixed {
            if len == 0 {
                return Ok(0);
            }
            self.fits(source, len)?;
            self.fits(dest, bytes(func, len, n)?)?;
            self.enter(signature(&[FCOLLECT, len as u64, esize as u64, way as u64]))?;
            vec![len; n]
        } else {
            // The length, then the element size and the way: the last two must agree.
            let low = (esize as u64 & 0xff) << 1 | u64::from(way == Way::Push);
            if (len as u64) >> 55 != 0 {
                return Err(invalid(func, format!("{len} bytes is too large")));
            }
            let all = oxshmem::coll::team_words(self.team, func, (len as u64) << 9 | low)?;
            if all.iter().any(|w| w & 0x1ff != low) {
                return Err(invalid(
                    func,
                    "the team's members called it with different element sizes, or with a destination in the GPU \
                     heap on some PEs and in host memory on others",
                ));
            }
            all.iter().map(|w| (w >> 9) as usize).collect()
        };
        let mut offs = Vec::with_capacity(n);
        let mut total = 0usize;
        for &l in &lens {
            offs.push(total);
            total = total.checked_add(l).ok_or_else(|| invalid(func, "the members' sizes overflow"))?;
        }
        // Every member knows every size now, so every member finds the same error here (the
        // source checked for the largest contribution).
        self.fits(dest, total)?;
        self.fits(source, lens.iter().copied().max().unwrap_or(0))?;
        let r = match way {
            Way::Push => (0..n).try_for_each(|k| {
                // SAFETY: source holds lens[me] bytes; every member's dest holds the total, in
                // the GPU heap.
                unsafe { self.push(dest as usize + offs[self.me], source, lens[self.me], k) }
            }),
            Way::Pull => (0..n).try_for_each(|k| {
                // SAFETY: dest holds the total (the caller's); member k's source is in its heap.
                unsafe { self.pull(dest.wrapping_add(offs[k]), source as usize, lens[k], k) }
            }),
        };
        self.leave(r, false).map(|()| total)
    }

    /// `alltoall[s]`: block `j` of member `i`'s source (`nelems` elements `sst` apart) to block
    /// `i` of member `j`'s destination (`dst` apart), each block one strided copy, pushed into
    /// the destinations or pulled out of the sources.
    ///
    /// # Safety
    /// `dest` and `source` hold the strided blocks of every member (symmetric).
    unsafe fn alltoalls(
        &self,
        dest: *mut u8,
        source: *const u8,
        dst: isize,
        sst: isize,
        nelems: usize,
        esize: usize,
    ) -> Result<()> {
        let (func, n) = (self.func, self.n());
        if dst < 1 || sst < 1 {
            return Err(invalid(func, format!("strides {dst}/{sst} must be at least 1")));
        }
        if nelems == 0 || esize == 0 {
            return Ok(());
        }
        let (dspan, dpitch, dstep) = blocks(func, n, nelems, dst, esize)?;
        let (sspan, spitch, sstep) = blocks(func, n, nelems, sst, esize)?;
        self.fits(dest, (n - 1) * dstep + dspan)?;
        self.fits(source, (n - 1) * sstep + sspan)?;
        let way = if self.owns(dest) { Way::Push } else { Way::Pull };
        self.enter(signature(&[ALLTOALLS, nelems as u64, esize as u64, dst as u64, sst as u64, way as u64]))?;
        let (me, b) = (self.me, self.b);
        let r = (0..n).try_for_each(|k| {
            let pe = self.pe(k);
            match way {
                Way::Push => {
                    let d = b.remote_for(func, dest as usize + me * dstep, dspan, pe)?;
                    // SAFETY: block me of member k's destination is in its mapped heap
                    // (checked); block k of our source holds the strided elements (the
                    // caller's).
                    unsafe {
                        b.copy_2d(func, d, dpitch, source.wrapping_add(k * sstep) as DevAddr, spitch, esize, nelems)
                    }
                }
                Way::Pull => {
                    let s = b.remote_for(func, source as usize + me * sstep, sspan, pe)?;
                    // SAFETY: as above, mirrored.
                    unsafe {
                        b.copy_2d(func, dest.wrapping_add(k * dstep) as DevAddr, dpitch, s, spitch, esize, nelems)
                    }
                }
            }
        });
        self.leave(r, false)
    }

    /// A reduction of `n` elements of `es` bytes with `op` (its code: in the signature only),
    /// combined by `combine` (see the module's doc).
    ///
    /// # Safety
    /// `dest` and `source` hold `n` elements each (symmetric: in the GPU heap or the
    /// runtime's); they may be the same array.
    unsafe fn reduce(
        &self,
        op: u64,
        dest: *mut u8,
        source: *const u8,
        n: usize,
        es: usize,
        combine: &Combine<'_>,
    ) -> Result<()> {
        let func = self.func;
        let all = bytes(func, n, es)?;
        if n == 0 || es == 0 {
            return Ok(());
        }
        let m = self.n();
        let per = n.div_ceil(m);
        let lo = (self.me * per).min(n);
        let hi = (lo + per).min(n);
        let chunk = (CHUNK / es).max(1).min(hi - lo);
        self.fits(dest, all)?;
        self.fits(source, all)?;
        let (d_gpu, s_gpu) = (self.owns(dest), self.owns(source));
        self.enter(signature(&[REDUCE, n as u64, es as u64, op, u64::from(d_gpu), u64::from(s_gpu)]))?;
        let r = (|| {
            let mut acc = aligned(chunk * es);
            let mut tmp = aligned(chunk * es);
            let mut at = lo;
            while at < hi {
                let k = chunk.min(hi - at);
                let len = k * es;
                let a = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut acc)[..len];
                let x = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut tmp)[..len];
                for j in 0..m {
                    let into = if j == 0 { a.as_mut_ptr() } else { x.as_mut_ptr() };
                    // SAFETY: `into` holds len bytes; block [at, at + k) lies in every source.
                    unsafe { self.read(into, source as usize + at * es, len, j) }?;
                    if j > 0 {
                        combine(a, x)?;
                    }
                }
                for j in 0..m {
                    // SAFETY: `a` holds len bytes; block [at, at + k) lies in every destination.
                    unsafe { self.write(dest as usize + at * es, a.as_ptr(), len, j) }?;
                }
                at += k;
            }
            Ok(())
        })();
        self.leave(r, !d_gpu)
    }

    /// NVSHMEM's `reducescatter`: this member's `nreduce` elements of the reduction over the
    /// members' sources (`nreduce` times the team's size each), read block by block from every
    /// member, combined on the host and written into `dest` once every member has read what it
    /// needs.
    ///
    /// # Safety
    /// `source` holds `nreduce` elements per member (symmetric), `dest` `nreduce`.
    unsafe fn reducescatter(
        &self,
        op: u64,
        dest: *mut u8,
        source: *const u8,
        nreduce: usize,
        es: usize,
        combine: &Combine<'_>,
    ) -> Result<()> {
        let func = self.func;
        let m = self.n();
        let len = bytes(func, nreduce, es)?;
        let all = bytes(func, nreduce.saturating_mul(m), es)?;
        if len == 0 {
            return Ok(());
        }
        self.fits(dest, len)?;
        self.fits(source, all)?;
        let (d_gpu, s_gpu) = (self.owns(dest), self.owns(source));
        self.enter(signature(&[REDUCESCATTER, nreduce as u64, es as u64, op, u64::from(d_gpu), u64::from(s_gpu)]))?;
        let mut acc = aligned(len);
        let r = (|| {
            let chunk = (CHUNK / es).max(1).min(nreduce);
            let mut tmp = aligned(chunk * es);
            let acc = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut acc)[..len];
            let mine = source as usize + self.me * len;
            for j in 0..m {
                let mut at = 0;
                while at < nreduce {
                    let k = chunk.min(nreduce - at);
                    let part = at * es..(at + k) * es;
                    let x = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut tmp)[..k * es];
                    let into = if j == 0 { acc[part.clone()].as_mut_ptr() } else { x.as_mut_ptr() };
                    // SAFETY: `into` holds k elements; this member's block lies in every source.
                    unsafe { self.read(into, mine + part.start, k * es, j) }?;
                    if j > 0 {
                        combine(&mut acc[part], x)?;
                    }
                    at += k;
                }
            }
            Ok(())
        })();
        // Every member has read every source before any writes its destination (which may be
        // a member's source too).
        self.leave(r, false)?;
        // SAFETY: dest holds len bytes (the caller's); acc is a host buffer of as many.
        unsafe { self.b.copy(func, dest as DevAddr, acc.as_ptr() as DevAddr, len) }
    }
}

/// The bytes a block of `nelems` elements of `es` bytes spans at a stride of `stride` elements,
/// the stride in bytes, and the distance between blocks (`nelems * stride` elements), with the
/// whole of `n` blocks checked not to overflow.
fn blocks(func: &'static str, n: usize, nelems: usize, stride: isize, es: usize) -> Result<(usize, isize, usize)> {
    let overflow =
        || invalid(func, format!("{n} blocks of {nelems} elements of {es} bytes at stride {stride} overflow"));
    let s = usize::try_from(stride).map_err(|_| overflow())?;
    let pitch = s.checked_mul(es).filter(|&p| isize::try_from(p).is_ok()).ok_or_else(overflow)?;
    let step = nelems.checked_mul(pitch).ok_or_else(overflow)?;
    let span = (nelems - 1).checked_mul(pitch).and_then(|x| x.checked_add(es)).ok_or_else(overflow)?;
    (n - 1).checked_mul(step).and_then(|x| x.checked_add(span)).ok_or_else(overflow)?;
    Ok((span, pitch as isize, step))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_differ_by_argument() {
        let a = signature(&[FCOLLECT, 12, 4, Way::Push as u64]);
        assert_eq!(a, signature(&[FCOLLECT, 12, 4, Way::Push as u64]));
        assert_ne!(a, signature(&[FCOLLECT, 16, 4, Way::Push as u64]));
        assert_ne!(a, signature(&[FCOLLECT, 12, 4, Way::Pull as u64]));
    }

    #[test]
    fn blocks_span_and_overflow() {
        // 3 blocks of 2 elements of 4 bytes at stride 3: a block spans (2-1)*12+4 bytes.
        assert_eq!(blocks("f", 3, 2, 3, 4).unwrap(), (16, 12, 24));
        assert!(blocks("f", 2, usize::MAX / 2, 4, 8).is_err());
    }

    #[test]
    fn reduction_buffers_are_aligned_for_long_double() {
        let v = aligned(33);
        assert!(v.len() * 16 >= 33 && (v.as_ptr() as usize).is_multiple_of(16));
    }
}
