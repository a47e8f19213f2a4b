//! `long double`, which Rust has no type for.
//!
//! Data movement needs no arithmetic: a `long double` is 16 bytes to move ([`LongDouble`]).
//! Passing one by value does need the C ABI (x87 on x86-64), so `shmem_longdouble_p`/`_g` and
//! their context forms are compiled from C (`c_impl.c`, generated) and call back into Rust
//! through a hook installed at init ([`install_hooks`]).
//!
//! The reductions need `long double` arithmetic, which the runtime's sealed `Reducible` trait
//! cannot be given from here. They are done in this crate instead: every member first waits for
//! all (a team sync: every source is ready), reads every member's source in team order and
//! combines them with C's arithmetic (`csrc/longdouble.c`) — the same order on every PE, so every
//! PE gets the same bits — then syncs again before writing `dest` (which may be a source that
//! others are still reading). Fine for the sizes `long double` is used at; the runtime's
//! reductions scale better (see the crate's report for the runtime change that would let them
//! take `long double`).

use std::ffi::{CStr, c_char, c_int, c_long, c_void};

use oxshmem_rt::{Error, ErrorKind, ReduceOp, Result};

use crate::error::{bytes, invalid};
use crate::handles::{ShmemCtx, TeamRec};
use crate::ops::CReduce;

/// C's `long double`: 16 bytes, 16-byte aligned on x86-64 and AArch64 Linux.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LongDouble(pub [u8; 16]);

type RmaHook = unsafe extern "C" fn(c_int, ShmemCtx, *mut c_void, *const c_void, usize, c_int, *const c_char);

unsafe extern "C" {
    /// The hook `csrc/longdouble.c` calls (null until installed).
    static mut oxshmem_ld_rma_hook: Option<RmaHook>;
    /// `acc[i] = acc[i] op x[i]` for `i < n`, op coded as in [`code`].
    fn oxshmem_ld_combine(op: c_int, acc: *mut LongDouble, x: *const LongDouble, n: usize);
}

/// Installs the hook of the C routines. Called by every initialization routine, before the
/// program can start threads.
pub(crate) fn install_hooks() {
    // SAFETY: a plain store of a function pointer, before any thread can run the C routines.
    unsafe { (&raw mut oxshmem_ld_rma_hook).write(Some(rma)) };
}

/// The transfer of `shmem_[ctx_]longdouble_p/g`: `len` bytes, a put (`get == 0`) or a get.
///
/// # Safety
/// `func` must be a NUL-terminated string that lives for the whole program (the C routines pass
/// a string literal). The local side must be valid for `len` bytes: `src` for reads (put) or
/// `dest` for writes (get); the symmetric side, `ctx` and `pe` are checked.
unsafe extern "C" fn rma(
    get: c_int,
    ctx: ShmemCtx,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    func: *const c_char,
) {
    // SAFETY: the C routines pass the address of a string literal: static and NUL-terminated.
    let func: &'static CStr = unsafe { CStr::from_ptr(func) };
    let func = func.to_str().unwrap_or("shmem_longdouble_p");
    // SAFETY: the C routine passes its own local as the local side and the user's pointer as
    // the symmetric side, which `ops` checks.
    unsafe {
        if get != 0 {
            crate::ops::get(func, ctx, dest, src, 1, len, pe)
        } else {
            crate::ops::put(func, ctx, dest, src, 1, len, pe)
        }
    }
}

/// The operation codes of `oxshmem_ld_combine`.
fn code(op: ReduceOp) -> Result<c_int> {
    match op {
        ReduceOp::Max => Ok(0),
        ReduceOp::Min => Ok(1),
        ReduceOp::Sum => Ok(2),
        ReduceOp::Prod => Ok(3),
        other => Err(invalid("shmem_longdouble_reduce", format!("reduction {other:?} is not defined for long double"))),
    }
}

/// `acc[i] = acc[i] op x[i]` for the whole elements of two byte buffers, as a segment's
/// reduction calls it ([`oxshmem_rt::segment::Combine`]: both start 16-byte aligned; checked),
/// or the error for an operation long double does not have.
fn combine_bytes(op: ReduceOp, acc: &mut [u8], x: &[u8]) -> Result<()> {
    let code = code(op)?;
    let es = size_of::<LongDouble>();
    let aligned = |p: *const u8| p.cast::<LongDouble>().is_aligned();
    if !aligned(acc.as_ptr()) || !aligned(x.as_ptr()) {
        return Err(invalid("shmem_longdouble_reduce", "a segment's reduction buffers are not 16-byte aligned"));
    }
    let n = acc.len().min(x.len()) / es;
    if n > 0 {
        // SAFETY: both buffers hold at least n elements and are aligned for them (checked).
        unsafe { oxshmem_ld_combine(code, acc.as_mut_ptr().cast(), x.as_ptr().cast(), n) };
    }
    Ok(())
}

/// Checks that `[p, p + len)` is symmetric on this PE.
fn symmetric(what: &'static str, p: *const LongDouble, len: usize) -> Result<()> {
    let me = oxshmem_rt::raw::my_pe()? as c_int;
    // A zero-length object has nothing to reach; its address is not looked at.
    let last = (p as usize).wrapping_add(len.saturating_sub(1)) as *const u8;
    if len == 0 || (oxshmem_rt::raw::addr_accessible(p.cast(), me) && oxshmem_rt::raw::addr_accessible(last, me)) {
        Ok(())
    } else {
        Err(Error::new(me as usize, "shmem_longdouble_reduce", ErrorKind::NotSymmetric { what, addr: p as usize, len }))
    }
}

/// Combines `n` elements of `source` on every world PE of `members`, in that order, into `dest`;
/// `sync` is the collective's synchronization (called before and after).
///
/// # Safety
/// `dest` and `source` must hold `n` elements (their ranges are checked to be symmetric);
/// `dest` is written locally, so it must also be aligned for `LongDouble`.
unsafe fn combine_from(
    members: &[usize],
    op: ReduceOp,
    dest: *mut LongDouble,
    source: *const LongDouble,
    n: usize,
    sync: &dyn Fn() -> Result<()>,
) -> Result<()> {
    let code = code(op)?;
    let len = bytes("shmem_longdouble_reduce", n, size_of::<LongDouble>())?;
    symmetric("source", source, len)?;
    symmetric("dest", dest, len)?;
    sync()?;
    let mut acc = vec![LongDouble::default(); n];
    let mut next = vec![LongDouble::default(); n];
    for (k, &pe) in members.iter().enumerate() {
        let buf = if k == 0 { &mut acc } else { &mut next };
        // SAFETY: buf holds n elements; the runtime checks source on that PE.
        unsafe { oxshmem_rt::raw::getmem(buf.as_mut_ptr().cast(), source.cast(), len, pe as c_int)? };
        if k > 0 {
            // SAFETY: both buffers hold n elements.
            unsafe { oxshmem_ld_combine(code, acc.as_mut_ptr(), next.as_ptr(), n) };
        }
    }
    // Every member has read every source before any member writes a destination.
    sync()?;
    // SAFETY: dest holds n elements (the caller's contract) and acc is a separate buffer.
    unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dest, n) };
    Ok(())
}

impl CReduce for LongDouble {
    /// [`team_reduce`].
    ///
    /// # Safety
    /// As [`CReduce::team_reduce`].
    unsafe fn team_reduce(
        t: &TeamRec,
        op: ReduceOp,
        dest: *mut LongDouble,
        source: *const LongDouble,
        n: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { team_reduce(t, op, dest, source, n) }
    }

    /// [`active_reduce`] (`pwrk` is not needed).
    ///
    /// # Safety
    /// As [`CReduce::active_reduce`].
    unsafe fn active_reduce(
        op: ReduceOp,
        dest: *mut LongDouble,
        source: *const LongDouble,
        n: usize,
        start: c_int,
        log_stride: c_int,
        size: c_int,
        _pwrk: *mut LongDouble,
        psync: *mut c_long,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { active_reduce(op, dest, source, n, start, log_stride, size, psync) }
    }
}

/// `shmem_longdouble_OP_reduce` over a team.
///
/// # Safety
/// As [`combine_from`].
pub(crate) unsafe fn team_reduce(
    t: &TeamRec,
    op: ReduceOp,
    dest: *mut LongDouble,
    source: *const LongDouble,
    n: usize,
) -> Result<()> {
    code(op)?;
    // In a registered segment (the GPU heap), the segment's reduction, combined with C's
    // arithmetic.
    let combine = |acc: &mut [u8], x: &[u8]| combine_bytes(op, acc, x);
    let es = size_of::<LongDouble>();
    // SAFETY: forwarded from the caller; `combine` does `op` on elements of es bytes.
    if let Some(r) = unsafe {
        oxshmem_rt::coll::api::raw::reduce_in_segment(&t.team, op, dest.cast(), source.cast(), n, es, &combine)
    } {
        return r;
    }
    // SAFETY: forwarded from the caller.
    unsafe { combine_from(&t.members, op, dest, source, n, &|| t.team.sync()) }
}

/// `shmem_longdouble_OP_to_all` over an active set.
///
/// # Safety
/// As [`combine_from`]; `psync` is checked to be symmetric.
pub(crate) unsafe fn active_reduce(
    op: ReduceOp,
    dest: *mut LongDouble,
    source: *const LongDouble,
    n: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    psync: *mut c_long,
) -> Result<()> {
    // The runtime's active-set sync checks the set and that this PE is in it; the members
    // computed here are only used after it succeeded.
    let members: Vec<usize> = if (0..31).contains(&log_stride) && start >= 0 && size > 0 {
        (0..size as usize).map(|i| start as usize + (i << log_stride)).collect()
    } else {
        Vec::new()
    };
    // SAFETY: the runtime checks psync is symmetric.
    let sync = || unsafe { oxshmem_rt::coll::active_set::sync(start, log_stride, size, psync) };
    if members.is_empty() {
        sync()?;
        return Err(invalid("shmem_longdouble_to_all", "empty active set"));
    }
    // SAFETY: forwarded from the caller.
    unsafe { combine_from(&members, op, dest, source, n, &sync) }
}
