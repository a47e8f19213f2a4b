//! The public face of the collectives: [`Team`] methods over symmetric objects, and the
//! pointer-based forms the C ABI wraps.
//!
//! Arguments are validated locally first (lengths against the symmetric objects, PE numbers),
//! but a PE whose arguments are wrong still takes part in the checked exchange — marked
//! invalid — so that every member returns an error and none waits for it.

use bytemuck::Pod;

use crate::coll::collect::Room;
use crate::coll::foreign;
use crate::coll::header::{Group, kind};
use crate::coll::reduce::{ArithReducible, BitwiseReducible, MinMaxReducible, ReduceOp, Reducible};
use crate::error::{Error, ErrorKind, Result};
use crate::segment::{Collective, Combine};
use crate::sym::SymSlice;
use crate::team::{Team, TeamInner};
use crate::transport::SymAddr;
use crate::world::Runtime;

fn group(t: &TeamInner) -> Group<'_> {
    Group { slot: t.slot, members: &t.members, me: t.me, set: 0 }
}

fn too_short(rt: &Runtime, func: &'static str, what: &str, need: Option<usize>, have: usize) -> Option<Error> {
    match need {
        Some(need) if need <= have => None,
        Some(need) => Some(Error::new(
            rt.me,
            func,
            ErrorKind::SizeMismatch { what: format!("{what} needs {need} elements but holds {have}") },
        )),
        None => Some(Error::new(rt.me, func, ErrorKind::InvalidSize { what: format!("{what} size overflows") })),
    }
}

impl Team {
    /// `shmem_team_sync`: every member has arrived (no completion of outstanding operations).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.team_world().sync()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn sync(&self) -> Result<()> {
        const F: &str = "shmem_team_sync";
        let (rt, t) = self.live(F)?;
        rt.team_sync(t, F)
    }

    /// `shmem_broadcast`: copies `nelems` elements of `source` on team PE `root` into `dest` on
    /// every member (the root included). Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let src = shmem.alloc_slice(4, shmem.my_pe() as u32)?;
    /// let dst = shmem.alloc_slice(4, 0u32)?;
    /// shmem.team_world().broadcast(&dst, &src, 4, 0)?;
    /// assert_eq!(dst.to_vec(), [0; 4]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn broadcast<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        root: usize,
    ) -> Result<()> {
        const F: &str = "shmem_broadcast";
        let (rt, t) = self.live(F)?;
        let g = group(t);
        if let Some(e) = too_short(rt, F, "source", Some(nelems), source.len())
            .or_else(|| too_short(rt, F, "dest", Some(nelems), dest.len()))
        {
            return rt.reject_broadcast(g, Some(root), e, F);
        }
        rt.broadcast(g, dest.sym(), source.sym(), nelems * size_of::<T>(), root, true, size_of::<T>() as u32, F)
    }

    /// `shmem_fcollect`: concatenates `nelems` elements of every member's `source`, in team
    /// order, into every member's `dest`. Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let n = shmem.n_pes();
    /// let src = shmem.alloc_slice(1, shmem.my_pe() as u64)?;
    /// let dst = shmem.alloc_slice(n, 0u64)?;
    /// shmem.team_world().fcollect(&dst, &src, 1)?;
    /// assert_eq!(dst.to_vec(), (0..n as u64).collect::<Vec<_>>());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn fcollect<T: Pod>(&self, dest: &SymSlice<T>, source: &SymSlice<T>, nelems: usize) -> Result<()> {
        const F: &str = "shmem_fcollect";
        let (rt, t) = self.live(F)?;
        let g = group(t);
        if let Some(e) = too_short(rt, F, "source", Some(nelems), source.len())
            .or_else(|| too_short(rt, F, "dest", nelems.checked_mul(t.n()), dest.len()))
        {
            return rt.reject(g, kind::FCOLLECT, e, F);
        }
        let es = size_of::<T>();
        rt.collect(g, dest.sym(), source.sym(), nelems * es, true, Room::Holds(dest.len() * es), es as u32, F).map(drop)
    }

    /// `shmem_collect`: concatenates every member's first `nelems` elements of `source` (which
    /// may differ between members), in team order, into every member's `dest`; returns the
    /// number of elements collected. Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let me = shmem.my_pe();
    /// let src = shmem.alloc_slice(8, me as i32)?;
    /// let dst = shmem.alloc_slice(8 * shmem.n_pes(), -1i32)?;
    /// let total = shmem.team_world().collect(&dst, &src, me % 3)?;
    /// assert_eq!(total, (0..shmem.n_pes()).map(|p| p % 3).sum::<usize>());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn collect<T: Pod>(&self, dest: &SymSlice<T>, source: &SymSlice<T>, nelems: usize) -> Result<usize> {
        const F: &str = "shmem_collect";
        let (rt, t) = self.live(F)?;
        let g = group(t);
        if let Some(e) = too_short(rt, F, "source", Some(nelems), source.len()) {
            return rt.reject(g, kind::COLLECT, e, F).map(|_| 0);
        }
        let es = size_of::<T>().max(1);
        rt.collect(g, dest.sym(), source.sym(), nelems * es, false, Room::Holds(dest.len() * es), es as u32, F)
            .map(|b| b / es)
    }

    /// `shmem_alltoall`: block `j` (of `nelems` elements) of every member's `source` goes to
    /// member `j`'s `dest`, at the sender's block. Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let (me, n) = (shmem.my_pe(), shmem.n_pes());
    /// let src = shmem.alloc_slice(n, 0usize)?;
    /// for j in 0..n { src.write(j, me * 100 + j); }
    /// let dst = shmem.alloc_slice(n, 0usize)?;
    /// shmem.team_world().alltoall(&dst, &src, 1)?;
    /// assert_eq!(dst.to_vec(), (0..n).map(|i| i * 100 + me).collect::<Vec<_>>());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn alltoall<T: Pod>(&self, dest: &SymSlice<T>, source: &SymSlice<T>, nelems: usize) -> Result<()> {
        self.alltoalls_named(dest, source, 1, 1, nelems, "shmem_alltoall")
    }

    /// `shmem_alltoalls`: strided alltoall; block `j` is `source[(j*nelems + k)*sst]` for
    /// `k < nelems`, landing at `dest[(me*nelems + k)*dst]` on member `j`. Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let n = shmem.n_pes();
    /// let src = shmem.alloc_slice(2 * n, 7u8)?;
    /// let dst = shmem.alloc_slice(2 * n, 0u8)?;
    /// shmem.team_world().alltoalls(&dst, &src, 2, 2, 1)?;
    /// assert_eq!(dst.read(0), 7);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn alltoalls<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
    ) -> Result<()> {
        self.alltoalls_named(dest, source, dst, sst, nelems, "shmem_alltoalls")
    }

    fn alltoalls_named<T: Pod>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
        func: &'static str,
    ) -> Result<()> {
        let (rt, t) = self.live(func)?;
        let g = group(t);
        let k = if dst == 1 && sst == 1 { kind::ALLTOALL } else { kind::ALLTOALLS };
        let extent = |stride: usize| {
            if nelems == 0 { Some(0) } else { (t.n() * nelems - 1).checked_mul(stride).and_then(|x| x.checked_add(1)) }
        };
        let err = if dst == 0 || sst == 0 {
            Some(Error::new(rt.me, func, ErrorKind::InvalidArgument("strides must be at least 1".into())))
        } else {
            too_short(rt, func, "source", extent(sst), source.len())
                .or_else(|| too_short(rt, func, "dest", extent(dst), dest.len()))
        };
        if let Some(e) = err {
            return rt.reject(g, k, e, func);
        }
        rt.alltoalls(g, dest.sym(), source.sym(), dst, sst, nelems, size_of::<T>(), func)
    }

    /// Reduces `nreduce` elements of every member's `source` with `op` into every member's
    /// `dest` (`shmem_TYPENAME_OP_reduce`). `dest` may be `source`. Collective.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::ReduceOp;
    /// let src = shmem.alloc_slice(2, 1i64)?;
    /// let dst = shmem.alloc_slice(2, 0i64)?;
    /// shmem.team_world().reduce(ReduceOp::Sum, &dst, &src, 2)?;
    /// assert_eq!(dst.to_vec(), [shmem.n_pes() as i64; 2]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn reduce<T: Reducible>(
        &self,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        const F: &str = "shmem_reduce";
        let (rt, t) = self.live(F)?;
        let g = group(t);
        let err = if !T::supports(op) {
            Some(Error::new(
                rt.me,
                F,
                ErrorKind::InvalidArgument(format!(
                    "reduction {op:?} is not defined for {}",
                    std::any::type_name::<T>()
                )),
            ))
        } else {
            too_short(rt, F, "source", Some(nreduce), source.len())
                .or_else(|| too_short(rt, F, "dest", Some(nreduce), dest.len()))
        };
        if let Some(e) = err {
            return rt.reject(g, kind::REDUCE, e, F);
        }
        rt.reduce::<T>(g, op, dest.sym(), source.sym(), nreduce, F)
    }

    /// `shmem_TYPENAME_and_reduce`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 0b111u8)?;
    /// shmem.team_world().and_reduce(&s, &s, 1)?;
    /// assert_eq!(s.read(0), 0b111);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn and_reduce<T: BitwiseReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(ReduceOp::And, dest, source, nreduce)
    }

    /// `shmem_TYPENAME_or_reduce`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 1u32 << shmem.my_pe())?;
    /// shmem.team_world().or_reduce(&s, &s, 1)?;
    /// assert_eq!(s.read(0), (1u32 << shmem.n_pes()) - 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn or_reduce<T: BitwiseReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(ReduceOp::Or, dest, source, nreduce)
    }

    /// `shmem_TYPENAME_xor_reduce`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 1u16)?;
    /// shmem.team_world().xor_reduce(&s, &s, 1)?;
    /// assert_eq!(s.read(0), (shmem.n_pes() % 2) as u16);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn xor_reduce<T: BitwiseReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(ReduceOp::Xor, dest, source, nreduce)
    }

    /// `shmem_TYPENAME_max_reduce`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, shmem.my_pe() as f64)?;
    /// shmem.team_world().max_reduce(&s, &s, 1)?;
    /// assert_eq!(s.read(0), (shmem.n_pes() - 1) as f64);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn max_reduce<T: MinMaxReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(ReduceOp::Max, dest, source, nreduce)
    }

    /// `shmem_TYPENAME_min_reduce`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, shmem.my_pe() as i8)?;
    /// shmem.team_world().min_reduce(&s, &s, 1)?;
    /// assert_eq!(s.read(0), 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn min_reduce<T: MinMaxReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(ReduceOp::Min, dest, source, nreduce)
    }

    /// `shmem_TYPENAME_sum_reduce`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 2usize)?;
    /// shmem.team_world().sum_reduce(&s, &s, 1)?;
    /// assert_eq!(s.read(0), 2 * shmem.n_pes());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn sum_reduce<T: ArithReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(ReduceOp::Sum, dest, source, nreduce)
    }

    /// `shmem_TYPENAME_prod_reduce`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 2u64)?;
    /// shmem.team_world().prod_reduce(&s, &s, 1)?;
    /// assert_eq!(s.read(0), 1 << shmem.n_pes());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn prod_reduce<T: ArithReducible>(
        &self,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(ReduceOp::Prod, dest, source, nreduce)
    }
}

/// Bytes an alltoalls over `n` members touches in one array: `n * nelems` elements of
/// `esize` bytes at `stride` (none for zero elements).
pub(crate) fn alltoalls_extent(n: usize, nelems: usize, stride: usize, esize: usize) -> Option<usize> {
    if nelems == 0 {
        return Some(0);
    }
    n.checked_mul(nelems)?.checked_sub(1)?.checked_mul(stride)?.checked_add(1)?.checked_mul(esize)
}

/// Pointer forms of the team collectives, for the C ABI.
pub mod raw {
    use super::*;

    /// A buffer of `len` bytes (zero-length ones are not looked at: see [`NOWHERE`]).
    ///
    /// [`NOWHERE`]: crate::coll::NOWHERE
    fn sym(rt: &Runtime, p: *const u8, len: usize, what: &'static str, func: &'static str) -> Result<SymAddr> {
        rt.coll_buf(p, len, what, func)
    }

    /// The destination of a collect that contributes `nbytes` (the total, which the others'
    /// counts decide, is checked once known): a member that contributes nothing may pass any
    /// pointer, and gets an error only if the others contribute something.
    pub(crate) fn collect_dest(
        rt: &Runtime,
        dest: *mut u8,
        nbytes: usize,
        func: &'static str,
    ) -> Result<(SymAddr, Room)> {
        if nbytes > 0 {
            return Ok((rt.translate(dest as usize, nbytes, "dest", func)?, Room::Check));
        }
        Ok(match rt.translate(dest as usize, 1, "dest", func) {
            Ok(d) => (d, Room::Check),
            Err(_) => (crate::coll::NOWHERE, Room::Absent(dest as usize)),
        })
    }

    /// `shmem_broadcastmem` / `shmem_TYPE_broadcast`: `nbytes` from `source` on team PE `root`.
    ///
    /// # Safety
    /// `dest` and `source` must be symmetric objects of at least `nbytes` bytes (checked to be
    /// symmetric).
    pub unsafe fn broadcast(
        team: &Team,
        dest: *mut u8,
        source: *const u8,
        nbytes: usize,
        root: i32,
        esize: usize,
    ) -> Result<()> {
        const F: &str = "shmem_broadcast";
        let (rt, t) = team.live(F)?;
        if let Some(seg) = foreign::route(rt, dest, source) {
            let c = Collective::Broadcast { dest, source, len: nbytes, root, esize };
            // SAFETY: the caller's contract is the collective's.
            return unsafe { seg.collective(team, F, c) }.map(drop);
        }
        let g = group(t);
        let args = (|| {
            let d = sym(rt, dest, nbytes, "dest", F)?;
            let s = sym(rt, source, nbytes, "source", F)?;
            let r = usize::try_from(root)
                .map_err(|_| Error::new(rt.me, F, ErrorKind::PeOutOfRange { pe: i128::from(root), n_pes: t.n() }))?;
            Ok((d, s, r))
        })();
        match args {
            Ok((d, s, r)) => rt.broadcast(g, d, s, nbytes, r, true, esize as u32, F),
            Err(e) => rt.reject_broadcast(g, usize::try_from(root).ok(), e, F),
        }
    }

    /// `shmem_collectmem` / `shmem_fcollectmem` and typed forms: returns bytes collected.
    ///
    /// # Safety
    /// `source` must hold `nbytes` bytes and `dest` the team's total (checked symmetric).
    pub unsafe fn collect(
        team: &Team,
        dest: *mut u8,
        source: *const u8,
        nbytes: usize,
        fixed: bool,
        esize: usize,
    ) -> Result<usize> {
        let func = if fixed { "shmem_fcollect" } else { "shmem_collect" };
        let (rt, t) = team.live(func)?;
        if let Some(seg) = foreign::route(rt, dest, source) {
            let c = Collective::Collect { dest, source, len: nbytes, fixed, esize };
            // SAFETY: the caller's contract is the collective's.
            return unsafe { seg.collective(team, func, c) };
        }
        let g = group(t);
        let args = (|| Ok((collect_dest(rt, dest, nbytes, func)?, sym(rt, source, nbytes, "source", func)?)))();
        match args {
            Ok(((d, room), s)) => rt.collect(g, d, s, nbytes, fixed, room, esize as u32, func),
            Err(e) => rt.reject(g, if fixed { kind::FCOLLECT } else { kind::COLLECT }, e, func).map(|_| 0),
        }
    }

    /// `shmem_alltoall(s)mem` and typed forms.
    ///
    /// # Safety
    /// `dest`/`source` must hold the strided blocks of every member (checked symmetric).
    pub unsafe fn alltoalls(
        team: &Team,
        dest: *mut u8,
        source: *const u8,
        dst: isize,
        sst: isize,
        nelems: usize,
        esize: usize,
    ) -> Result<()> {
        let func = if dst == 1 && sst == 1 { "shmem_alltoall" } else { "shmem_alltoalls" };
        let (rt, t) = team.live(func)?;
        if let Some(seg) = foreign::route(rt, dest, source) {
            let c = Collective::Alltoalls { dest, source, dst, sst, nelems, esize };
            // SAFETY: the caller's contract is the collective's.
            return unsafe { seg.collective(team, func, c) }.map(drop);
        }
        let g = group(t);
        let k = if dst == 1 && sst == 1 { kind::ALLTOALL } else { kind::ALLTOALLS };
        let args = (|| {
            if dst < 1 || sst < 1 {
                return Err(Error::new(
                    rt.me,
                    func,
                    ErrorKind::InvalidArgument(format!("strides {dst}/{sst} must be at least 1")),
                ));
            }
            let (de, se) = (
                alltoalls_extent(t.n(), nelems, dst as usize, esize),
                alltoalls_extent(t.n(), nelems, sst as usize, esize),
            );
            let bad = || Error::new(rt.me, func, ErrorKind::InvalidSize { what: "alltoalls extent overflows".into() });
            Ok((
                sym(rt, dest, de.ok_or_else(bad)?, "dest", func)?,
                sym(rt, source, se.ok_or_else(bad)?, "source", func)?,
            ))
        })();
        match args {
            Ok((d, s)) => rt.alltoalls(g, d, s, dst as usize, sst as usize, nelems, esize, func),
            Err(e) => rt.reject(g, k, e, func),
        }
    }

    /// `shmem_TYPENAME_OP_reduce`.
    ///
    /// # Safety
    /// `dest` and `source` must hold `nreduce` elements (checked symmetric).
    pub unsafe fn reduce<T: Reducible>(
        team: &Team,
        op: ReduceOp,
        dest: *mut T,
        source: *const T,
        nreduce: usize,
    ) -> Result<()> {
        const F: &str = "shmem_reduce";
        let (rt, t) = team.live(F)?;
        let unsupported = || {
            Error::new(rt.me, F, ErrorKind::InvalidArgument(format!("reduction {op:?} is not defined for this type")))
        };
        if let Some(seg) = foreign::route(rt, dest.cast(), source.cast()) {
            if !T::supports(op) {
                return Err(unsupported());
            }
            let combine = combine_as::<T>(rt, op, F);
            let c = Collective::Reduce {
                dest: dest.cast(),
                source: source.cast(),
                nelems: nreduce,
                esize: size_of::<T>(),
                op,
                combine: &combine,
            };
            // SAFETY: the caller's contract is the collective's.
            return unsafe { seg.collective(team, F, c) }.map(drop);
        }
        let g = group(t);
        let bytes = nreduce * size_of::<T>();
        let args = (|| {
            if !T::supports(op) {
                return Err(unsupported());
            }
            Ok((sym(rt, dest.cast(), bytes, "dest", F)?, sym(rt, source.cast(), bytes, "source", F)?))
        })();
        match args {
            Ok((d, s)) => rt.reduce::<T>(g, op, d, s, nreduce, F),
            Err(e) => rt.reject(g, kind::REDUCE, e, F),
        }
    }

    /// A reduction whose destination or source lies in a registered segment, with a combine of
    /// the caller's (for a type the runtime does not reduce itself: C's `long double`):
    /// `nelems` elements of `esize` bytes, `combine` as the segment calls it ([`Combine`]).
    /// `None` when neither buffer lies in one (then the caller reduces them itself).
    ///
    /// # Safety
    /// As [`reduce`]; `combine` does what `op` does to elements of `esize` bytes.
    pub unsafe fn reduce_in_segment(
        team: &Team,
        op: ReduceOp,
        dest: *mut u8,
        source: *const u8,
        nelems: usize,
        esize: usize,
        combine: &Combine<'_>,
    ) -> Option<Result<()>> {
        const F: &str = "shmem_reduce";
        let rt = match team.live(F) {
            Ok((rt, _)) => rt,
            Err(e) => return Some(Err(e)),
        };
        let seg = foreign::route(rt, dest, source)?;
        let c = Collective::Reduce { dest, source, nelems, esize, op, combine };
        // SAFETY: the caller's contract is the collective's.
        Some(unsafe { seg.collective(team, F, c) }.map(drop))
    }

    /// NVSHMEM's `TYPE_OP_reducescatter`: every member gets, in `dest`, its block of
    /// `nreduce` elements of the reduction over the members' `source` arrays of `nreduce`
    /// times the team's size elements. Each member reads its block from every member (so each
    /// element crosses once), after a sync that makes every source ready and before one that
    /// keeps it alive until all have read. With either buffer in a registered segment, the
    /// segment's ([`ForeignSegment::collective`]).
    ///
    /// # Safety
    /// `source` must hold `nreduce` elements per member (checked symmetric), `dest` `nreduce`.
    ///
    /// [`ForeignSegment::collective`]: crate::segment::ForeignSegment::collective
    pub unsafe fn reducescatter<T: Reducible>(
        team: &Team,
        op: ReduceOp,
        dest: *mut T,
        source: *const T,
        nreduce: usize,
    ) -> Result<()> {
        const F: &str = "shmem_reducescatter";
        let (rt, t) = team.live(F)?;
        if !T::supports(op) {
            return Err(Error::new(
                rt.me,
                F,
                ErrorKind::InvalidArgument(format!("{op:?} is not defined for this type")),
            ));
        }
        if let Some(seg) = foreign::route(rt, dest.cast(), source.cast()) {
            let combine = combine_as::<T>(rt, op, F);
            let c = Collective::ReduceScatter {
                dest: dest.cast(),
                source: source.cast(),
                nreduce,
                esize: size_of::<T>(),
                op,
                combine: &combine,
            };
            // SAFETY: the caller's contract is the collective's.
            return unsafe { seg.collective(team, F, c) }.map(drop);
        }
        let block = nreduce
            .checked_mul(size_of::<T>())
            .ok_or_else(|| Error::new(rt.me, F, ErrorKind::InvalidSize { what: "nreduce overflows".into() }))?;
        team.sync()?;
        let mut acc: Vec<T> = vec![T::zeroed(); nreduce];
        let mut tmp: Vec<T> = vec![T::zeroed(); nreduce];
        for (i, &pe) in t.members.iter().enumerate() {
            let from = source.wrapping_add(t.me * nreduce).cast::<u8>();
            let into = if i == 0 { acc.as_mut_ptr() } else { tmp.as_mut_ptr() };
            // SAFETY: `into` holds nreduce elements; getmem checks `from` is symmetric.
            unsafe { crate::rma::getmem(into.cast(), from, block, pe as i32)? };
            if i > 0 {
                for (a, b) in acc.iter_mut().zip(&tmp) {
                    *a = T::apply(op, *a, *b);
                }
            }
        }
        team.sync()?;
        if nreduce > 0 {
            // SAFETY: the caller guarantees dest holds nreduce elements.
            unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dest, nreduce) };
        }
        Ok(())
    }

    /// `acc[i] = acc[i] op x[i]` on elements of `T` given as bytes ([`Combine`]).
    fn combine_as<T: Reducible>(
        rt: &Runtime,
        op: ReduceOp,
        func: &'static str,
    ) -> impl Fn(&mut [u8], &[u8]) -> Result<()> + use<T> {
        let me = rt.me;
        move |acc: &mut [u8], x: &[u8]| {
            let bad = |e: bytemuck::PodCastError| {
                Error::new(me, func, ErrorKind::InvalidArgument(format!("a segment's reduction buffers: {e:?}")))
            };
            let a: &mut [T] = bytemuck::try_cast_slice_mut(acc).map_err(bad)?;
            let b: &[T] = bytemuck::try_cast_slice(x).map_err(bad)?;
            for (a, b) in a.iter_mut().zip(b) {
                *a = T::apply(op, *a, *b);
            }
            Ok(())
        }
    }

    /// `shmem_team_sync`.
    pub fn team_sync(team: &Team) -> Result<()> {
        team.sync()
    }
}
