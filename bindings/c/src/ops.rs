//! What the generated functions call: one generic function per routine family, taking the C
//! name of the exported function (for error messages), the context handle (the default one for
//! the routines without a context argument) and the C arguments.
//!
//! Each resolves the context's PE numbering, calls the runtime's pointer-based routine, and
//! turns an error into the specification's return value or the end of the job
//! ([`crate::error`]). Nothing here may panic: these run inside `extern "C"` functions.

use std::ffi::{c_int, c_long, c_void};

use oxshmem_rt::raw::{self, AmoOp};
use oxshmem_rt::{AmoType, Cmp, CmpValues, ReduceOp, Reducible, Result, SyncType};

use crate::error::{bytes, count, invalid, ok, status};
use crate::handles::{self, ShmemCtx, ShmemTeam, TeamRec};

/// `SHMEM_CMP_NE`: what the deprecated `shmem_TYPE_wait` waits for.
pub(crate) const CMP_NE: c_int = Cmp::Ne as c_int;

/// Contiguous put.
///
/// # Safety
/// `source` must be valid for reads of `nelems * esize` bytes. `dest` is checked to be
/// symmetric, `ctx` and `pe` to be valid.
#[inline(always)]
pub(crate) unsafe fn put(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    esize: usize,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: the caller guarantees `source` holds nelems elements; the runtime checks dest.
        let len = bytes(func, nelems, esize)?;
        // SAFETY: as above.
        unsafe { raw::putmem(dest.cast(), source.cast(), len, pe) }
    });
    ok(func, r)
}

/// Nonblocking contiguous put (`source` is read before this returns).
///
/// # Safety
/// As [`put`].
#[inline(always)]
pub(crate) unsafe fn put_nbi(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    esize: usize,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: as in `put`.
        let len = bytes(func, nelems, esize)?;
        // SAFETY: as above.
        unsafe { raw::putmem_nbi(dest.cast(), source.cast(), len, pe) }
    });
    ok(func, r)
}

/// Contiguous get.
///
/// # Safety
/// `dest` must be valid for writes of `nelems * esize` bytes. `source` is checked to be
/// symmetric, `ctx` and `pe` to be valid.
#[inline(always)]
pub(crate) unsafe fn get(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    esize: usize,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: the caller guarantees `dest` holds nelems elements; the runtime checks source.
        let len = bytes(func, nelems, esize)?;
        // SAFETY: as above.
        unsafe { raw::getmem(dest.cast(), source.cast(), len, pe) }
    });
    ok(func, r)
}

/// Nonblocking contiguous get.
///
/// # Safety
/// As [`get`], and `dest` must stay valid until the next quiet.
#[inline(always)]
pub(crate) unsafe fn get_nbi(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    esize: usize,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: as in `get`.
        let len = bytes(func, nelems, esize)?;
        // SAFETY: as above.
        unsafe { raw::getmem_nbi(dest.cast(), source.cast(), len, pe) }
    });
    ok(func, r)
}

/// Elemental put.
///
/// # Safety
/// None beyond the checks: `dest` is checked to be symmetric, `ctx` and `pe` to be valid.
#[inline(always)]
pub(crate) unsafe fn p<T: bytemuck::Pod>(func: &'static str, ctx: ShmemCtx, dest: *mut T, value: T, pe: c_int) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: the runtime checks dest; value is a local.
        unsafe { raw::p(dest, value, pe) }
    });
    ok(func, r)
}

/// Elemental get.
///
/// # Safety
/// None beyond the checks: `source` is checked to be symmetric, `ctx` and `pe` to be valid.
#[inline(always)]
pub(crate) unsafe fn g<T: bytemuck::Pod>(func: &'static str, ctx: ShmemCtx, source: *const T, pe: c_int) -> T {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: the runtime checks source.
        unsafe { raw::g(source, pe) }
    });
    ok(func, r)
}

/// Strided put: element `i` of `source` (at `i * sst`) to element `i * dst` of `dest` (in the
/// GPU heap: one strided copy).
///
/// # Safety
/// `source` must be valid for reads of `nelems` elements of `esize` bytes, `sst` elements
/// apart. `dest` is checked to be symmetric (over its whole strided extent).
pub(crate) unsafe fn iput(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    esize: usize,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: the caller guarantees the strided source is readable; the runtime checks dest.
        unsafe { raw::iput(dest.cast(), source.cast(), dst, sst, esize, nelems, pe) }
    });
    ok(func, r)
}

/// Strided get: element `i * sst` of `source` to element `i * dst` of `dest`.
///
/// # Safety
/// `dest` must be valid for writes of `nelems` elements of `esize` bytes, `dst` elements
/// apart. `source` is checked to be symmetric (over its whole strided extent).
pub(crate) unsafe fn iget(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    esize: usize,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: the caller guarantees the strided dest is writable; the runtime checks source.
        unsafe { raw::iget(dest.cast(), source.cast(), dst, sst, esize, nelems, pe) }
    });
    ok(func, r)
}

/// Put with signal (blocking and nonblocking: on this transport both complete on return).
///
/// # Safety
/// `source` must be valid for reads of `nelems * esize` bytes. `dest` is checked to be
/// symmetric, `sig_addr` to be symmetric and aligned.
pub(crate) unsafe fn put_signal(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    esize: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        let len = bytes(func, nelems, esize)?;
        // SAFETY: the caller guarantees `source` holds len bytes; the runtime checks dest and
        // sig_addr.
        unsafe {
            oxshmem_rt::signal::raw::put_signal(dest.cast(), source.cast(), len, sig_addr, signal, sig_op, pe, func)
        }
    });
    ok(func, r)
}

/// An atomic operation with its operands.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Amo<T> {
    Fetch,
    Set(T),
    Swap(T),
    CompareSwap(T, T),
    Inc,
    Add(T),
    And(T),
    Or(T),
    Xor(T),
}

impl<T: AmoType> Amo<T> {
    #[inline(always)]
    fn op(self) -> AmoOp {
        match self {
            Amo::Fetch => AmoOp::Fetch,
            Amo::Set(v) => AmoOp::Set(v.to_bits()),
            Amo::Swap(v) => AmoOp::Swap(v.to_bits()),
            Amo::CompareSwap(cond, value) => AmoOp::CompareSwap { cond: cond.to_bits(), value: value.to_bits() },
            Amo::Inc => AmoOp::FetchAdd(1),
            Amo::Add(v) => AmoOp::FetchAdd(v.to_bits()),
            Amo::And(v) => AmoOp::FetchAnd(v.to_bits()),
            Amo::Or(v) => AmoOp::FetchOr(v.to_bits()),
            Amo::Xor(v) => AmoOp::FetchXor(v.to_bits()),
        }
    }
}

/// Every blocking AMO: returns the target's previous value.
///
/// # Safety
/// None beyond the checks: `dest` is checked to be symmetric and aligned, `ctx` and `pe` to be
/// valid.
#[inline(always)]
pub(crate) unsafe fn amo<T: AmoType>(func: &'static str, ctx: ShmemCtx, dest: *mut T, op: Amo<T>, pe: c_int) -> T {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        // SAFETY: the runtime checks dest (symmetric and aligned).
        unsafe { raw::atomic(dest, op.op(), pe, func) }
    });
    ok(func, r)
}

/// Every nonblocking fetching AMO: the previous value goes to `fetch`.
///
/// # Safety
/// A non-null `fetch` must be valid for a (possibly unaligned) write of a `T` until the next
/// quiet. `dest` is checked as in [`amo`].
#[inline(always)]
pub(crate) unsafe fn amo_nbi<T: AmoType>(
    func: &'static str,
    ctx: ShmemCtx,
    fetch: *mut T,
    dest: *mut T,
    op: Amo<T>,
    pe: c_int,
) {
    let r = handles::ctx_pe(func, ctx, pe).and_then(|pe| {
        if fetch.is_null() {
            return Err(invalid(func, "fetch is NULL"));
        }
        // SAFETY: the caller guarantees fetch is writable; the runtime checks dest.
        unsafe { raw::atomic_nbi(fetch, dest, op.op(), pe, func) }
    });
    ok(func, r)
}

fn cmp(func: &'static str, cmp: c_int) -> Result<Cmp> {
    Cmp::from_c(cmp).ok_or_else(|| invalid(func, format!("cmp {cmp} is not a SHMEM_CMP_ constant (0..=5)")))
}

/// The comparison value(s) of a wait or test routine.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Vals<T> {
    /// One value for every element.
    One(T),
    /// `cmp_values`: one per element (the `_vector` routines).
    Each(*const T),
}

/// The runtime's forms of the array arguments of the `_all/_any/_some` routines.
///
/// # Safety
/// Non-null `status` and `Vals::Each` pointers must hold `n` elements, valid for `'a`.
unsafe fn arrays<'a, T: Copy>(
    func: &'static str,
    n: usize,
    status: *const c_int,
    v: Vals<T>,
) -> Result<(Option<&'a [i32]>, CmpValues<'a, T>)> {
    // SAFETY: per this function's contract.
    let status = (!status.is_null() && n > 0).then(|| unsafe { std::slice::from_raw_parts(status, n) });
    let values = match v {
        Vals::One(x) => CmpValues::One(x),
        Vals::Each(_) if n == 0 => CmpValues::Each(&[]),
        Vals::Each(p) if p.is_null() => return Err(invalid(func, "cmp_values is NULL")),
        // SAFETY: per this function's contract.
        Vals::Each(p) => CmpValues::Each(unsafe { std::slice::from_raw_parts(p, n) }),
    };
    Ok((status, values))
}

/// # Safety
/// A non-null `indices` must hold `n` elements.
unsafe fn indices<'a>(func: &'static str, n: usize, indices: *mut usize) -> Result<&'a mut [usize]> {
    match (n, indices.is_null()) {
        (0, _) => Ok(&mut []),
        (_, true) => Err(invalid(func, "indices is NULL")),
        // SAFETY: per this function's contract.
        _ => Ok(unsafe { std::slice::from_raw_parts_mut(indices, n) }),
    }
}

/// `shmem_TYPE_wait_until`.
///
/// # Safety
/// `ivar` must point to a `T` (checked to be symmetric and aligned).
pub(crate) unsafe fn wait_until<T: SyncType>(func: &'static str, ivar: *mut T, c: c_int, value: T) {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: the runtime checks ivar.
        unsafe { raw::wait_until(ivar, c, value) }
    });
    ok(func, r)
}

/// `shmem_signal_wait_until` and its NVSHMEM forms: the signal's value once `value cmp
/// cmp_value` holds.
///
/// # Safety
/// `sig_addr` is checked to be symmetric (in the runtime's segments or one registered with it, such as the GPU heap).
pub(crate) unsafe fn signal_wait_until(func: &'static str, sig_addr: *mut u64, c: Cmp, cmp_value: u64) -> Result<u64> {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    // SAFETY: the runtime checks sig_addr.
    unsafe { oxshmem_rt::signal::raw::signal_wait_until(sig_addr, c, cmp_value) }
}

/// `shmem_signal_fetch` and `nvshmem_signal_fetch`.
///
/// # Safety
/// `sig_addr` is checked to be symmetric (in the runtime's segments or one registered with it, such as the GPU heap).
pub(crate) unsafe fn signal_fetch(func: &'static str, sig_addr: *const u64) -> Result<u64> {
    // SAFETY: the runtime checks sig_addr.
    unsafe { oxshmem_rt::signal::raw::signal_fetch(sig_addr) }.map_err(|e| oxshmem_rt::Error { func, ..e })
}

/// `shmem_TYPE_test`.
///
/// # Safety
/// As [`wait_until`].
pub(crate) unsafe fn test<T: SyncType>(func: &'static str, ivar: *mut T, c: c_int, value: T) -> c_int {
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: the runtime checks ivar.
        unsafe { raw::test(ivar, c, value) }
    });
    ok(func, r).into()
}

/// `shmem_TYPE_wait_until_all[_vector]`.
///
/// # Safety
/// `ivars` must point to `n` `T`s (checked to be symmetric and aligned). A non-null `status`
/// and the pointer of a `Vals::Each` must be valid for reads of `n` elements.
pub(crate) unsafe fn wait_until_all<T: SyncType>(
    func: &'static str,
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    c: c_int,
    v: Vals<T>,
) {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: the caller guarantees the arrays hold n elements; the runtime checks ivars.
        unsafe {
            let (status, v) = arrays(func, n, status, v)?;
            raw::wait_until_all(ivars, n, status, c, v)
        }
    });
    ok(func, r)
}

/// `shmem_TYPE_test_all[_vector]`.
///
/// # Safety
/// As [`wait_until_all`].
pub(crate) unsafe fn test_all<T: SyncType>(
    func: &'static str,
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    c: c_int,
    v: Vals<T>,
) -> c_int {
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: as in wait_until_all.
        unsafe {
            let (status, v) = arrays(func, n, status, v)?;
            raw::test_all(ivars, n, status, c, v)
        }
    });
    ok(func, r).into()
}

/// `shmem_TYPE_wait_until_any[_vector]`: `SIZE_MAX` when no element is active.
///
/// # Safety
/// As [`wait_until_all`].
pub(crate) unsafe fn wait_until_any<T: SyncType>(
    func: &'static str,
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    c: c_int,
    v: Vals<T>,
) -> usize {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: as in wait_until_all.
        unsafe {
            let (status, v) = arrays(func, n, status, v)?;
            raw::wait_until_any(ivars, n, status, c, v)
        }
    });
    ok(func, r).unwrap_or(usize::MAX)
}

/// `shmem_TYPE_test_any[_vector]`: `SIZE_MAX` when no element satisfies its comparison.
///
/// # Safety
/// As [`wait_until_all`].
pub(crate) unsafe fn test_any<T: SyncType>(
    func: &'static str,
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    c: c_int,
    v: Vals<T>,
) -> usize {
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: as in wait_until_all.
        unsafe {
            let (status, v) = arrays(func, n, status, v)?;
            raw::test_any(ivars, n, status, c, v)
        }
    });
    ok(func, r).unwrap_or(usize::MAX)
}

/// `shmem_TYPE_wait_until_some[_vector]`.
///
/// # Safety
/// As [`wait_until_all`], and a non-null `idx` must be valid for writes of `n` `usize`s.
pub(crate) unsafe fn wait_until_some<T: SyncType>(
    func: &'static str,
    ivars: *mut T,
    n: usize,
    idx: *mut usize,
    status: *const c_int,
    c: c_int,
    v: Vals<T>,
) -> usize {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: the caller guarantees the arrays hold n elements; the runtime checks ivars.
        unsafe {
            let (status, v) = arrays(func, n, status, v)?;
            let out = indices(func, n, idx)?;
            raw::wait_until_some(ivars, n, out, status, c, v)
        }
    });
    ok(func, r)
}

/// `shmem_TYPE_test_some[_vector]`.
///
/// # Safety
/// As [`wait_until_some`].
pub(crate) unsafe fn test_some<T: SyncType>(
    func: &'static str,
    ivars: *mut T,
    n: usize,
    idx: *mut usize,
    status: *const c_int,
    c: c_int,
    v: Vals<T>,
) -> usize {
    let r = cmp(func, c).and_then(|c| {
        // SAFETY: as in wait_until_some.
        unsafe {
            let (status, v) = arrays(func, n, status, v)?;
            let out = indices(func, n, idx)?;
            raw::test_some(ivars, n, out, status, c, v)
        }
    });
    ok(func, r)
}

/// `shmem_TYPE_broadcast`, `shmem_broadcastmem`.
///
/// # Safety
/// `dest` and `source` must each hold `nelems * esize` bytes (checked to be symmetric).
pub(crate) unsafe fn broadcast(
    func: &'static str,
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    esize: usize,
    root: c_int,
) -> c_int {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = handles::team(func, team).and_then(|t| {
        let n = bytes(func, nelems, esize)?;
        // SAFETY: the runtime checks both objects are symmetric (or in a registered segment,
        // the GPU heap, which then runs it); their length is the caller's.
        unsafe { oxshmem_rt::coll::api::raw::broadcast(&t.get().team, dest.cast(), source.cast(), n, root, esize) }
    });
    status(func, r)
}

/// `shmem_TYPE_[f]collect`, `shmem_[f]collectmem`.
///
/// # Safety
/// `source` must hold `nelems * esize` bytes and `dest` every member's contribution (`nelems`
/// times the team's size when `fixed`), both checked to be symmetric.
pub(crate) unsafe fn collect(
    func: &'static str,
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    esize: usize,
    fixed: bool,
) -> c_int {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = handles::team(func, team).and_then(|t| {
        let n = bytes(func, nelems, esize)?;
        // SAFETY: as in broadcast.
        unsafe { oxshmem_rt::coll::api::raw::collect(&t.get().team, dest.cast(), source.cast(), n, fixed, esize) }
            .map(drop)
    });
    status(func, r)
}

/// `shmem_TYPE_alltoall[s]`, `shmem_alltoall[s]mem`.
///
/// # Safety
/// `dest` and `source` must each hold `nelems` elements of `esize` bytes for every member of
/// the team, `dst` (in `dest`) and `sst` (in `source`) elements apart (checked to be symmetric).
pub(crate) unsafe fn alltoalls(
    func: &'static str,
    team: ShmemTeam,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    esize: usize,
) -> c_int {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = handles::team(func, team).and_then(|t| {
        // SAFETY: as in broadcast.
        unsafe {
            oxshmem_rt::coll::api::raw::alltoalls(&t.get().team, dest.cast(), source.cast(), dst, sst, nelems, esize)
        }
    });
    status(func, r)
}

/// A type the reductions take: the runtime's [`Reducible`] types, and `long double`, which the
/// runtime cannot combine (`crate::longdouble` implements it for them).
pub(crate) trait CReduce: Sized + Copy {
    /// Reduction over a team.
    ///
    /// # Safety
    /// `dest` and `source` must hold `n` elements (checked symmetric).
    unsafe fn team_reduce(t: &TeamRec, op: ReduceOp, dest: *mut Self, source: *const Self, n: usize) -> Result<()>;

    /// Reduction over an active set (the deprecated `_to_all` routines).
    ///
    /// # Safety
    /// As [`team_reduce`](Self::team_reduce); `pwrk` and `psync` are checked symmetric.
    unsafe fn active_reduce(
        op: ReduceOp,
        dest: *mut Self,
        source: *const Self,
        n: usize,
        start: c_int,
        log_stride: c_int,
        size: c_int,
        pwrk: *mut Self,
        psync: *mut c_long,
    ) -> Result<()>;
}

impl<T: Reducible> CReduce for T {
    /// The runtime's team reduction.
    ///
    /// # Safety
    /// As [`CReduce::team_reduce`].
    unsafe fn team_reduce(t: &TeamRec, op: ReduceOp, dest: *mut T, source: *const T, n: usize) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { oxshmem_rt::coll::api::raw::reduce(&t.team, op, dest, source, n) }
    }

    /// The runtime's active-set reduction.
    ///
    /// # Safety
    /// As [`CReduce::active_reduce`].
    unsafe fn active_reduce(
        op: ReduceOp,
        dest: *mut T,
        source: *const T,
        n: usize,
        start: c_int,
        log_stride: c_int,
        size: c_int,
        pwrk: *mut T,
        psync: *mut c_long,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { oxshmem_rt::coll::active_set::to_all(op, dest, source, n, start, log_stride, size, pwrk, psync) }
    }
}

/// `shmem_TYPE_OP_reduce`.
///
/// # Safety
/// `dest` and `source` must each hold `nreduce` elements (checked to be symmetric).
pub(crate) unsafe fn reduce<T: CReduce>(
    func: &'static str,
    team: ShmemTeam,
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
) -> c_int {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = handles::team(func, team).and_then(|t| {
        // SAFETY: forwarded from the caller.
        unsafe { T::team_reduce(t.get(), op, dest, source, nreduce) }
    });
    status(func, r)
}

/// `shmem_TYPE_OP_to_all` (deprecated).
///
/// # Safety
/// `dest` and `source` must each hold `nreduce` elements; they, `pwrk` and `psync` are checked
/// to be symmetric.
pub(crate) unsafe fn to_all<T: CReduce>(
    func: &'static str,
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    nreduce: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    pwrk: *mut T,
    psync: *mut c_long,
) {
    // The hang report names the routine as the program called it (NVSHMEM's or OpenSHMEM's).
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let r = count(func, "nreduce", nreduce).and_then(|n| {
        // SAFETY: forwarded from the caller.
        unsafe { T::active_reduce(op, dest, source, n, start, log_stride, size, pwrk, psync) }
    });
    ok(func, r)
}
