//! Host collectives on GPU memory: broadcast, collect and fcollect, alltoall and alltoalls,
//! reduce and reducescatter, when the destination or the source is in the GPU heap.
//!
//! Every PE's GPU heap is mapped in every other PE of the node ((`GpuSegment::remote_for`)), so
//! nothing is staged: when the destination is in the GPU heap each member *pushes* its part
//! straight into every member's destination (the source read where it is, host or GPU memory);
//! when only the source is, each member *pulls* its parts out of the members' sources into its
//! own destination. Each byte crosses once. A reduction is a reduce-scatter and an allgather in
//! one pass: member `i` reads block `i` of every member's source, chunk by chunk, into host
//! memory, combines the chunks in team order on the CPU, and writes the result into block `i`
//! of every member's destination (so every member gets the same bits, and an in-place
//! reduction is safe: the only reader of a member's block `i` is member `i`, which has read it
//! before it writes it).
//!
//! Synchronization: the entry is an exchange of one word per member over the team, after which
//! every member is in the call (its destination free, its source ready); the exit is a team
//! sync, after which every copy into this PE's destination has landed and no member still
//! reads its source. The word is a `collect`'s size (its offsets follow), and for the other
//! collectives a signature of the arguments and of which buffers are GPU memory, compared, so
//! that members called with different arguments all get the same error instead of copying to
//! the wrong places. An error after the entry ends the job: the other members are inside the
//! collective and would wait for this one for ever.
//!
//! The exchange is the runtime's fcollect of that word over symmetric host memory: an area per
//! slot of the runtime's team pool ([`oxshmem_rt::Team::slot`]), carved from the back end's
//! symmetric host buffers ([`team_words`], which `team_made` uses too to agree on a new team's
//! device slot). Teams alive at once hold different
//! slots, so collectives on different teams, from several threads, share nothing here and take
//! no lock: none can wait for another in a cycle. (The staged collectives this replaces shared
//! one pair of host buffers under one lock: two threads running collectives on two teams could
//! each hold it on a different PE while waiting for the other's.) Collectives on one team are
//! called one at a time and in one order by its members, as the specification requires, so one
//! area per team is enough.

use std::sync::Arc;

use oxshmem_device::cuda::DevAddr;
use oxshmem_rt::{ReduceOp, Result, raw};

use oxshmem_device::cuda::segment::GpuSegment;

use super::{backend, copy_any, owns, with_stage};
use crate::error::invalid;
use crate::handles::TeamRec;

/// Bytes at the start of each host buffer before the exchange areas (a cache line).
const XCHG_AT: usize = 64;
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

/// The way when the destination is GPU memory, or else the source.
fn way(dest: *const u8) -> Way {
    if owns(dest as usize) { Way::Push } else { Way::Pull }
}

/// A signature of a collective's arguments (FNV-1a of the words).
fn signature(words: &[u64]) -> u64 {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Every member's `word`, in team order, through `team`'s exchange area (see the module's
/// doc): `None` when the job has more PEs than the areas hold (511). Collective over `team`.
pub(crate) fn team_words(func: &'static str, team: &oxshmem_rt::Team, word: u64) -> Result<Option<Vec<u64>>> {
    let slot = team.slot()?;
    let world = raw::n_pes()?;
    let Some((src, dst, cap)) = with_stage(|s, d, cap| (s as usize, d as usize, cap)) else {
        return Err(invalid(func, "GPU memory without the CUDA back end"));
    };
    let area = world * 8;
    let slots = oxshmem_rt::team::MAX_TEAMS;
    if XCHG_AT + slots * 8 > cap || XCHG_AT.saturating_add(slots.saturating_mul(area)) > cap {
        return Ok(None);
    }
    let n = team.n_pes()?;
    let mine = (src + XCHG_AT + slot * 8) as *mut u64;
    let all = (dst + XCHG_AT + slot * area) as *mut u64;
    // SAFETY: both lie inside the symmetric staging buffers (checked above), which live until
    // finalize; this team's words are used by this team's calls only, one at a time (the last
    // one's readers all passed its closing sync before this call began).
    unsafe {
        mine.write(word);
        oxshmem_rt::coll::api::raw::collect(team, all.cast(), mine.cast_const().cast(), 8, true, 8)?;
        Ok(Some((0..n).map(|k| all.add(k).read()).collect()))
    }
}

/// One collective call on this PE.
struct Coll<'a> {
    func: &'static str,
    b: Arc<GpuSegment>,
    t: &'a TeamRec,
    /// This PE's index in the team.
    me: usize,
}

impl<'a> Coll<'a> {
    fn new(func: &'static str, t: &'a TeamRec) -> Result<Coll<'a>> {
        let b = backend().ok_or_else(|| invalid(func, "GPU memory without the CUDA back end"))?;
        let me = t.team.my_pe()?;
        Ok(Coll { func, b, t, me })
    }

    /// Members.
    fn n(&self) -> usize {
        self.t.members.len()
    }

    /// World PE of member `k`.
    fn pe(&self, k: usize) -> usize {
        self.t.members[k]
    }

    /// Every member's `word`, in team order, through the team's exchange area (see the
    /// module's doc): `None` when the job has more PEs than the areas hold (511).
    fn exchange(&self, word: u64) -> Result<Option<Vec<u64>>> {
        team_words(self.func, &self.t.team, word)
    }

    /// Checks that `len` bytes at `addr` lie in the GPU heap when `addr` is GPU memory (before
    /// the entry: the addresses are symmetric, so every member finds the same, and all return
    /// the error rather than some waiting in the collective for the others).
    fn fits<T>(&self, addr: *const T, len: usize) -> Result<()> {
        if owns(addr as usize) && len > 0 {
            self.b.remote_for(self.func, addr as usize, len, self.b.me).map(drop)
        } else {
            Ok(())
        }
    }

    /// The entry of a collective whose members pass equal arguments: `sig` exchanged and
    /// compared (a team sync instead when there is no exchange area).
    fn enter(&self, sig: u64) -> Result<()> {
        match self.exchange(sig)? {
            Some(all) if all.iter().any(|&s| s != sig) => Err(invalid(
                self.func,
                "the team's members called it with different arguments (counts, root, strides, operation, or a buffer \
                 in the GPU heap on some PEs and in host memory on others)",
            )),
            Some(_) => Ok(()),
            None => self.t.team.sync(),
        }
    }

    /// The exit, after the copies `r` (an error there ends the job: the members are inside the
    /// collective); `put_host`: some went through the runtime, so they are completed first.
    fn leave(&self, r: Result<()>, put_host: bool) -> Result<()> {
        if let Err(e) = r {
            crate::error::fatal(self.func, e);
        }
        if put_host {
            raw::quiet()?;
        }
        self.t.team.sync()
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
        if owns(from) {
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
        if owns(to) {
            // SAFETY: forwarded.
            unsafe { self.push(to, from, len, k) }
        } else {
            // SAFETY: `from` per the caller; the runtime checks `to`.
            unsafe { raw::putmem(to as *mut u8, from, len, self.pe(k) as i32) }
        }
    }
}

/// `shmem_broadcast[mem]` of `len` bytes from team PE `root`, with the destination or the
/// source in the GPU heap: every member pulls the root's source (when it is GPU memory), or the
/// root pushes it into every member's destination. The root's destination is written too.
///
/// # Safety
/// `dest` and `source` hold `len` bytes (symmetric).
pub(crate) unsafe fn broadcast(
    func: &'static str,
    t: &TeamRec,
    dest: *mut u8,
    source: *const u8,
    len: usize,
    root: i32,
    esize: usize,
) -> Result<()> {
    let c = Coll::new(func, t)?;
    let n = c.n();
    let root = usize::try_from(root)
        .ok()
        .filter(|&r| r < n)
        .ok_or_else(|| invalid(func, format!("root {root} is not a PE of the team (0..{n})")))?;
    if len == 0 {
        return Ok(());
    }
    c.fits(dest, len)?;
    c.fits(source, len)?;
    let pull = owns(source as usize);
    c.enter(signature(&[
        BROADCAST,
        len as u64,
        root as u64,
        esize as u64,
        u64::from(pull),
        u64::from(owns(dest as usize)),
    ]))?;
    let same = dest.cast_const() == source;
    let r = if pull {
        if c.me == root && same {
            Ok(())
        } else {
            // SAFETY: dest holds len bytes (the caller's); the root's source is in its heap.
            unsafe { c.pull(dest, source as usize, len, root) }
        }
    } else if c.me == root {
        (0..n).filter(|&k| !(k == root && same)).try_for_each(|k| {
            // SAFETY: source holds len bytes; every member's dest is in the GPU heap (push).
            unsafe { c.push(dest as usize, source, len, k) }
        })
    } else {
        Ok(())
    };
    c.leave(r, false)
}

/// `shmem_[f]collect[mem]` with the destination or the source in the GPU heap: member `i`'s
/// `len` bytes land at the sum of the lengths before it in every member's destination (`fixed`:
/// all lengths equal, else exchanged at the entry).
///
/// # Safety
/// `source` holds `len` bytes and `dest` the lengths of all members (symmetric).
pub(crate) unsafe fn collect(
    func: &'static str,
    t: &TeamRec,
    dest: *mut u8,
    source: *const u8,
    len: usize,
    fixed: bool,
    esize: usize,
) -> Result<()> {
    let c = Coll::new(func, t)?;
    let n = c.n();
    let way = way(dest);
    let lens = if fixed {
        if len == 0 {
            return Ok(());
        }
        c.fits(source, len)?;
        c.fits(dest, crate::error::bytes(func, len, n)?)?;
        c.enter(signature(&[FCOLLECT, len as u64, esize as u64, way as u64]))?;
        vec![len; n]
    } else {
        // The length, then the element size and the way: the last two must agree.
        let low = (esize as u64 & 0xff) << 1 | u64::from(way == Way::Push);
        if (len as u64) >> 55 != 0 {
            return Err(invalid(func, format!("{len} bytes is too large")));
        }
        let all = c.exchange((len as u64) << 9 | low)?.ok_or_else(|| {
            invalid(
                func,
                "collect on GPU memory exchanges its sizes in an area for at most 511 PEs; this job is larger",
            )
        })?;
        if all.iter().any(|w| w & 0x1ff != low) {
            return Err(invalid(
                func,
                "the team's members called it with different element sizes, or with a destination in the GPU heap \
                 on some PEs and in host memory on others",
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
    c.fits(dest, total)?;
    c.fits(source, lens.iter().copied().max().unwrap_or(0))?;
    let r = match way {
        Way::Push => (0..n).try_for_each(|k| {
            // SAFETY: source holds lens[me] bytes; every member's dest holds the total, in the
            // GPU heap.
            unsafe { c.push(dest as usize + offs[c.me], source, lens[c.me], k) }
        }),
        Way::Pull => (0..n).try_for_each(|k| {
            // SAFETY: dest holds the total (the caller's); member k's source is in its heap.
            unsafe { c.pull(dest.wrapping_add(offs[k]), source as usize, lens[k], k) }
        }),
    };
    c.leave(r, false)
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

/// `shmem_alltoall[s][mem]` with the destination or the source in the GPU heap: block `j` of
/// member `i`'s source (`nelems` elements `sst` apart) to block `i` of member `j`'s destination
/// (`dst` apart), each block one strided copy, pushed into the destinations or pulled out of
/// the sources.
///
/// # Safety
/// `dest` and `source` hold the strided blocks of every member (symmetric).
pub(crate) unsafe fn alltoalls(
    func: &'static str,
    t: &TeamRec,
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    esize: usize,
) -> Result<()> {
    let c = Coll::new(func, t)?;
    let n = c.n();
    if dst < 1 || sst < 1 {
        return Err(invalid(func, format!("strides {dst}/{sst} must be at least 1")));
    }
    if nelems == 0 || esize == 0 {
        return Ok(());
    }
    let (dspan, dpitch, dstep) = blocks(func, n, nelems, dst, esize)?;
    let (sspan, spitch, sstep) = blocks(func, n, nelems, sst, esize)?;
    c.fits(dest, (n - 1) * dstep + dspan)?;
    c.fits(source, (n - 1) * sstep + sspan)?;
    let way = way(dest);
    c.enter(signature(&[ALLTOALLS, nelems as u64, esize as u64, dst as u64, sst as u64, way as u64]))?;
    let (me, b) = (c.me, &c.b);
    let r = (0..n).try_for_each(|k| {
        let pe = c.pe(k);
        match way {
            Way::Push => {
                let d = b.remote_for(func, dest as usize + me * dstep, dspan, pe)?;
                // SAFETY: block me of member k's destination is in its mapped heap (checked);
                // block k of our source holds the strided elements (the caller's).
                unsafe { b.copy_2d(func, d, dpitch, source.wrapping_add(k * sstep) as DevAddr, spitch, esize, nelems) }
            }
            Way::Pull => {
                let s = b.remote_for(func, source as usize + me * sstep, sspan, pe)?;
                // SAFETY: as above, mirrored.
                unsafe { b.copy_2d(func, dest.wrapping_add(k * dstep) as DevAddr, dpitch, s, spitch, esize, nelems) }
            }
        }
    });
    c.leave(r, false)
}

/// `shmem_TYPE_OP_reduce` with the destination or the source in the GPU heap (see the module's
/// doc): `combine(acc, x)` does `acc[i] = acc[i] op x[i]`; `zero` fills the host buffers.
///
/// # Safety
/// `dest` and `source` hold `n` elements each (symmetric: in the GPU heap or the runtime's);
/// they may be the same array.
pub(crate) unsafe fn reduce<T: Copy>(
    func: &'static str,
    t: &TeamRec,
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    n: usize,
    zero: T,
    combine: impl Fn(&mut [T], &[T]) -> Result<()>,
) -> Result<()> {
    let c = Coll::new(func, t)?;
    let es = size_of::<T>();
    crate::error::bytes(func, n, es)?;
    if n == 0 || es == 0 {
        return Ok(());
    }
    let m = c.n();
    let per = n.div_ceil(m);
    let lo = (c.me * per).min(n);
    let hi = (lo + per).min(n);
    let chunk = (CHUNK / es).max(1).min(hi - lo);
    c.fits(dest, n * es)?;
    c.fits(source, n * es)?;
    let (d_gpu, s_gpu) = (owns(dest as usize), owns(source as usize));
    c.enter(signature(&[REDUCE, n as u64, es as u64, op as u64, u64::from(d_gpu), u64::from(s_gpu)]))?;
    let r = (|| {
        let mut acc = vec![zero; chunk];
        let mut tmp = vec![zero; chunk];
        let mut at = lo;
        while at < hi {
            let k = chunk.min(hi - at);
            let len = k * es;
            let (a, x) = (&mut acc[..k], &mut tmp[..k]);
            for j in 0..m {
                let into = if j == 0 { a.as_mut_ptr() } else { x.as_mut_ptr() };
                // SAFETY: `into` holds k elements; block [at, at + k) lies in every source.
                unsafe { c.read(into.cast(), source.wrapping_add(at) as usize, len, j) }?;
                if j > 0 {
                    combine(a, x)?;
                }
            }
            for j in 0..m {
                // SAFETY: `a` holds k elements; block [at, at + k) lies in every destination.
                unsafe { c.write(dest.wrapping_add(at) as usize, a.as_ptr().cast(), len, j) }?;
            }
            at += k;
        }
        Ok(())
    })();
    c.leave(r, !d_gpu)
}

/// NVSHMEM's `TYPE_OP_reducescatter` with the destination or the source in the GPU heap: this
/// member's `nreduce` elements of the reduction over the members' sources (`nreduce` times the
/// team's size each), read block by block from every member, combined on the host and written
/// into `dest` once every member has read what it needs.
///
/// # Safety
/// `source` holds `nreduce` elements per member (symmetric), `dest` `nreduce`.
pub(crate) unsafe fn reducescatter<T: Copy>(
    func: &'static str,
    t: &TeamRec,
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
    zero: T,
    combine: impl Fn(&mut [T], &[T]) -> Result<()>,
) -> Result<()> {
    let c = Coll::new(func, t)?;
    let es = size_of::<T>();
    let m = c.n();
    let len = crate::error::bytes(func, nreduce, es)?;
    let all = crate::error::bytes(func, nreduce.saturating_mul(m), es)?;
    if len == 0 {
        return Ok(());
    }
    c.fits(dest, len)?;
    c.fits(source, all)?;
    let (d_gpu, s_gpu) = (owns(dest as usize), owns(source as usize));
    c.enter(signature(&[REDUCESCATTER, nreduce as u64, es as u64, op as u64, u64::from(d_gpu), u64::from(s_gpu)]))?;
    let mut acc = vec![zero; nreduce];
    let r = (|| {
        let chunk = (CHUNK / es).max(1).min(nreduce);
        let mut tmp = vec![zero; chunk];
        let mine = source.wrapping_add(c.me * nreduce);
        for j in 0..m {
            let mut at = 0;
            while at < nreduce {
                let k = chunk.min(nreduce - at);
                let into = if j == 0 { acc[at..].as_mut_ptr() } else { tmp.as_mut_ptr() };
                // SAFETY: `into` holds k elements; this member's block lies in every source.
                unsafe { c.read(into.cast(), mine.wrapping_add(at) as usize, k * es, j) }?;
                if j > 0 {
                    combine(&mut acc[at..at + k], &tmp[..k])?;
                }
                at += k;
            }
        }
        Ok(())
    })();
    // Every member has read every source before any writes its destination (which may be a
    // member's source too).
    c.leave(r, false)?;
    // SAFETY: dest holds nreduce elements (the caller's); acc is a host buffer of as many.
    unsafe { copy_any(func, dest.cast(), acc.as_ptr().cast(), len) }
}
