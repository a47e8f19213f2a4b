//! The deprecated active-set collectives (OpenSHMEM 1.5 §9.9, deprecated since 1.5): barrier,
//! broadcast32/64, collect32/64, fcollect32/64, alltoall(s)32/64 and the `TYPE_OP_to_all`
//! reductions, on the set `PE_start + i * 2^logPE_stride`, `i < PE_size`.
//!
//! They run on the same algorithms as the team collectives, through a slot reserved for active
//! sets. The signal streams of a slot are per pair of PEs, so any sequence of overlapping
//! active sets works as long as each pair of PEs meets its collectives in the same order —
//! which the specification requires anyway. The `pSync` and `pWrk` arrays are checked to be
//! symmetric, as the specification's contract requires, but the runtime keeps its own
//! synchronization state: it never writes them, so they are trivially left at
//! `SHMEM_SYNC_VALUE` for the next call, with no barrier needed between calls that reuse them.
//! As the specification says for this form, the root's `dest` is not written by broadcast.

use crate::coll::header::{Group, PerMember, kind};
use crate::coll::reduce::{ReduceOp, Reducible};
use crate::error::{Error, ErrorKind, Result};
use crate::team::ACTIVE_SLOT;
use crate::transport::SymAddr;
use crate::world::{Runtime, running};

/// An active set: its code (the collectives' header `set`) and this PE's place in it.
#[derive(Debug, Clone, Copy)]
struct ActiveSet {
    me: usize,
    code: u64,
}

impl ActiveSet {
    /// The set as a group, its members written into the caller's `members` (see
    /// [`fill_members`] for why the caller holds them).
    #[inline(always)]
    fn group<'a>(&self, members: &'a mut PerMember<usize>) -> Group<'a> {
        fill_members(self.code, members);
        Group { slot: ACTIVE_SLOT, members, me: self.me, set: self.code }
    }
}

fn resolve(
    rt: &Runtime,
    start: i32,
    log_stride: i32,
    size: i32,
    psync: *const i64,
    func: &'static str,
) -> Result<ActiveSet> {
    let bad = |why: String| Error::new(rt.me, func, ErrorKind::InvalidArgument(why));
    if start < 0 || !(0..31).contains(&log_stride) || size < 1 {
        return Err(bad(format!("active set PE_start {start}, logPE_stride {log_stride}, PE_size {size} is invalid")));
    }
    let stride = 1usize << log_stride;
    let (start, size) = (start as usize, size as usize);
    let last = (size - 1).checked_mul(stride).and_then(|x| x.checked_add(start));
    if last.is_none_or(|l| l >= rt.n) {
        return Err(bad(format!(
            "active set PE_start {start}, stride {stride}, PE_size {size} reaches past the last PE ({})",
            rt.n - 1
        )));
    }
    if rt.me < start || !(rt.me - start).is_multiple_of(stride) || (rt.me - start) / stride >= size {
        return Err(bad(format!("this PE is not in the active set PE_start {start}, stride {stride}, PE_size {size}")));
    }
    rt.translate(psync as usize, 8, "pSync", func)?;
    let code = start as u64 | (log_stride as u64) << 24 | (size as u64) << 32;
    Ok(ActiveSet { me: (rt.me - start) / stride, code })
}

/// Writes the world PEs of the active set whose code (`ActiveSet::code`, the collectives'
/// header `set`) is `code` into `v` (emptied first). It fills the caller's vector rather than
/// returning one: returned, the vector is copied out, a measurable part of a small collective.
#[inline(always)]
pub(crate) fn fill_members(code: u64, v: &mut PerMember<usize>) {
    let (start, log, size) = ((code & 0xff_ffff) as usize, ((code >> 24) & 0xff) as u32, (code >> 32) as usize);
    v.clear();
    for i in 0..size {
        v.push(start + (i << log));
    }
}

/// `shmem_barrier(PE_start, logPE_stride, PE_size, pSync)`: quiet, then wait for every PE of
/// the active set.
///
/// # Safety
/// `psync` is checked to be symmetric.
pub unsafe fn barrier(start: i32, log_stride: i32, size: i32, psync: *mut i64) -> Result<()> {
    const F: &str = "shmem_barrier";
    let rt = running(F)?;
    let mut members = PerMember::new();
    let g = resolve(rt, start, log_stride, size, psync, F)?.group(&mut members);
    rt.quiet_internal()?;
    rt.dissemination(ACTIVE_SLOT, g.members, g.me, F)
}

/// `shmem_sync(PE_start, logPE_stride, PE_size, pSync)`: wait for every PE of the active set.
///
/// # Safety
/// `psync` is checked to be symmetric.
pub unsafe fn sync(start: i32, log_stride: i32, size: i32, psync: *mut i64) -> Result<()> {
    const F: &str = "shmem_sync";
    let rt = running(F)?;
    let mut members = PerMember::new();
    let g = resolve(rt, start, log_stride, size, psync, F)?.group(&mut members);
    rt.dissemination(ACTIVE_SLOT, g.members, g.me, F)
}

/// The destination and source of `len` bytes each (zero-length ones are not looked at: see
/// [`NOWHERE`](crate::coll::NOWHERE)).
fn syms(rt: &Runtime, dest: *const u8, src: *const u8, len: usize, func: &'static str) -> Result<(SymAddr, SymAddr)> {
    Ok((rt.coll_buf(dest, len, "dest", func)?, rt.coll_buf(src, len, "source", func)?))
}

/// `shmem_broadcast32/64`: `nelems` elements of `esize` bytes from active-set member `root`
/// (an index in the set) to every other member's `dest`.
///
/// # Safety
/// `dest`/`source` must hold `nelems` elements (checked symmetric).
#[allow(clippy::too_many_arguments)]
pub unsafe fn broadcast(
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    esize: usize,
    root: i32,
    start: i32,
    log_stride: i32,
    size: i32,
    psync: *mut i64,
) -> Result<()> {
    const F: &str = "shmem_broadcast";
    let rt = running(F)?;
    let mut members = PerMember::new();
    let g = resolve(rt, start, log_stride, size, psync, F)?.group(&mut members);
    let nbytes = nelems * esize;
    match syms(rt, dest, source, nbytes, F) {
        Ok((d, src)) if root >= 0 => rt.broadcast(g, d, src, nbytes, root as usize, false, esize as u32, F),
        Ok(_) => rt.reject_broadcast(
            g,
            None,
            Error::new(rt.me, F, ErrorKind::PeOutOfRange { pe: i128::from(root), n_pes: g.n() }),
            F,
        ),
        Err(e) => rt.reject_broadcast(g, usize::try_from(root).ok(), e, F),
    }
}

/// `shmem_collect32/64` (`fixed = false`) and `shmem_fcollect32/64` (`fixed = true`).
///
/// # Safety
/// `dest` must hold the set's total, `source` `nelems` elements (checked symmetric).
#[allow(clippy::too_many_arguments)]
pub unsafe fn collect(
    dest: *mut u8,
    source: *const u8,
    nelems: usize,
    esize: usize,
    fixed: bool,
    start: i32,
    log_stride: i32,
    size: i32,
    psync: *mut i64,
) -> Result<()> {
    let func = if fixed { "shmem_fcollect" } else { "shmem_collect" };
    let rt = running(func)?;
    let mut members = PerMember::new();
    let g = resolve(rt, start, log_stride, size, psync, func)?.group(&mut members);
    let nbytes = nelems * esize;
    let checked = crate::coll::api::raw::collect_dest(rt, dest, nbytes, func)
        .and_then(|d| Ok((d, rt.coll_buf(source, nbytes, "source", func)?)));
    match checked {
        Ok(((d, room), src)) => rt.collect(g, d, src, nbytes, fixed, room, esize as u32, func).map(drop),
        Err(e) => rt.reject(g, if fixed { kind::FCOLLECT } else { kind::COLLECT }, e, func),
    }
}

/// `shmem_alltoall32/64` (`dst = sst = 1`) and `shmem_alltoalls32/64`.
///
/// # Safety
/// `dest`/`source` must hold every member's strided blocks (checked symmetric).
#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoalls(
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    esize: usize,
    start: i32,
    log_stride: i32,
    size: i32,
    psync: *mut i64,
) -> Result<()> {
    let func = if dst == 1 && sst == 1 { "shmem_alltoall" } else { "shmem_alltoalls" };
    let rt = running(func)?;
    let mut members = PerMember::new();
    let g = resolve(rt, start, log_stride, size, psync, func)?.group(&mut members);
    let k = if dst == 1 && sst == 1 { kind::ALLTOALL } else { kind::ALLTOALLS };
    if dst < 1 || sst < 1 {
        return rt.reject(
            g,
            k,
            Error::new(rt.me, func, ErrorKind::InvalidArgument(format!("strides {dst}/{sst} must be at least 1"))),
            func,
        );
    }
    let extents = (
        crate::coll::api::alltoalls_extent(g.n(), nelems, dst as usize, esize),
        crate::coll::api::alltoalls_extent(g.n(), nelems, sst as usize, esize),
    );
    let checked = match extents {
        (Some(de), Some(se)) => {
            rt.coll_buf(dest, de, "dest", func).and_then(|d| Ok((d, rt.coll_buf(source, se, "source", func)?)))
        }
        _ => Err(Error::new(rt.me, func, ErrorKind::InvalidSize { what: "alltoalls extent overflows".into() })),
    };
    match checked {
        Ok((d, src)) => rt.alltoalls(g, d, src, dst as usize, sst as usize, nelems, esize, func),
        Err(e) => rt.reject(g, k, e, func),
    }
}

/// `shmem_TYPE_OP_to_all`: reduces `nreduce` elements over the active set.
///
/// # Safety
/// `dest`/`source` must hold `nreduce` elements; `pwrk` and `psync` are checked symmetric.
#[allow(clippy::too_many_arguments)]
pub unsafe fn to_all<T: Reducible>(
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
    start: i32,
    log_stride: i32,
    size: i32,
    pwrk: *mut T,
    psync: *mut i64,
) -> Result<()> {
    const F: &str = "shmem_to_all";
    let rt = running(F)?;
    let mut members = PerMember::new();
    let g = resolve(rt, start, log_stride, size, psync, F)?.group(&mut members);
    let bytes = nreduce * size_of::<T>();
    let checked = (|| {
        if !T::supports(op) {
            return Err(Error::new(
                rt.me,
                F,
                ErrorKind::InvalidArgument(format!("reduction {op:?} is not defined for this type")),
            ));
        }
        rt.translate(pwrk as usize, size_of::<T>(), "pWrk", F)?;
        syms(rt, dest.cast(), source.cast(), bytes, F)
    })();
    match checked {
        Ok((d, src)) => rt.reduce::<T>(g, op, d, src, nreduce, F),
        Err(e) => rt.reject(g, kind::REDUCE, e, F),
    }
}
