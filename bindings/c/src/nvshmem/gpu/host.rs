//! Host routines on the GPU heap: RMA by copies (strided RMA by 2D copies), atomics through
//! the device library's AMO kernel, signals, waits and tests (single- and multi-word: the host
//! polls the words with copies), and the note for the routines that do not reach it.

use std::cell::Cell;
use std::time::Duration;

use oxshmem_bootstrap::status::{self, Arg, Routine, code};
use oxshmem_device::channel::proxy::amo_flags as proxy_amo_flags;
use oxshmem_device::cuda::DevAddr;
use oxshmem_rt::raw::AmoOp;
use oxshmem_rt::{Cmp, CmpValues, Error, ErrorKind, Result};

use super::{Backend, backend, cuda_err, invalid, owns};

impl Backend {
    /// A strided copy on unified addresses: `rows` blocks of `width` bytes, `spitch` bytes apart
    /// at `src` and `dpitch` apart at `dst` (one 2D copy of the driver's, or one copy per block
    /// where it takes no such pitch), complete when it returns; like [`Backend::copy`] it waits
    /// for its own copies only.
    ///
    /// # Safety
    /// Every block of both sides is valid for `width` bytes.
    pub(super) unsafe fn copy_2d(
        &self,
        func: &'static str,
        dst: DevAddr,
        dpitch: isize,
        src: DevAddr,
        spitch: isize,
        width: usize,
        rows: usize,
    ) -> Result<()> {
        // SAFETY: the caller's; unified addressing reaches every kind of memory, as in copy.
        unsafe { self.gpu.copy_2d(dst, dpitch, src, spitch, width, rows) }.map_err(|e| cuda_err(func, e))
    }
}

/// The bytes `n` elements of `es` bytes span at a stride of `stride` elements, and that stride
/// in bytes: strides below 1 and extents that overflow are refused, as the runtime does.
fn strided(func: &'static str, stride: isize, es: usize, n: usize) -> Result<(usize, isize)> {
    if stride < 1 {
        return Err(invalid(func, format!("stride {stride} must be at least 1")));
    }
    let overflow = || {
        Error::new(
            crate::error::me(),
            func,
            ErrorKind::InvalidSize { what: format!("{n} elements of {es} bytes at stride {stride} overflows") },
        )
    };
    let pitch = stride.checked_mul(isize::try_from(es).map_err(|_| overflow())?).ok_or_else(overflow)?;
    let extent =
        n.checked_sub(1).map_or(Some(0), |k| k.checked_mul(pitch as usize)?.checked_add(es)).ok_or_else(overflow)?;
    Ok((extent, pitch))
}

/// A strided put (`shmem_iput`): `n` elements of `es` bytes, element `i * sst` of `src` to
/// element `i * dst` of `dest` (in the GPU heap) on world PE `pe`, as one strided copy into the
/// PE's mapping. `None` when `dest` is not GPU memory of the back end.
///
/// # Safety
/// `src` is valid for the strided reads (host or GPU memory).
pub(crate) unsafe fn iput(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    es: usize,
    n: usize,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(dest as usize) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        let (dext, dpitch) = strided(func, dst, es, n)?;
        let (_, spitch) = strided(func, sst, es, n)?;
        if n == 0 {
            return Ok(());
        }
        let d = b.remote(func, dest as usize, dext, pe)?;
        // SAFETY: the strided destination lies in pe's mapped heap (checked as a whole); the
        // strided source per the caller.
        unsafe { b.copy_2d(func, d, dpitch, src as DevAddr, spitch, es, n) }
    })())
}

/// A strided get (`shmem_iget`): `n` elements of `es` bytes, element `i * sst` of `src` (in the
/// GPU heap) on world PE `pe` to element `i * dst` of `dest`, as one strided copy out of the
/// PE's mapping. `None` when `src` is not GPU memory of the back end.
///
/// # Safety
/// `dest` is valid for the strided writes (host or GPU memory).
pub(crate) unsafe fn iget(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    es: usize,
    n: usize,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(src as usize) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        let (_, dpitch) = strided(func, dst, es, n)?;
        let (sext, spitch) = strided(func, sst, es, n)?;
        if n == 0 {
            return Ok(());
        }
        let s = b.remote(func, src as usize, sext, pe)?;
        // SAFETY: the strided source lies in pe's mapped heap (checked as a whole); the strided
        // destination per the caller.
        unsafe { b.copy_2d(func, dest as DevAddr, dpitch, s, spitch, es, n) }
    })())
}

/// A put of `len` bytes from `src` to `dest` (in the GPU heap) on world PE `pe`: `None` when
/// `dest` is not GPU memory of the back end.
///
/// # Safety
/// `src` is valid for `len` bytes (host or GPU memory).
pub(crate) unsafe fn put(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(dest as usize) {
        return None;
    }
    let b = backend()?;
    Some(b.remote(func, dest as usize, len, pe).and_then(|d| {
        // SAFETY: `d` is inside pe's mapped heap for len bytes; src per the caller.
        unsafe { b.copy(func, d, src as DevAddr, len) }
    }))
}

/// A get of `len` bytes at `src` (in the GPU heap) on world PE `pe` into `dest`: `None` when
/// `src` is not GPU memory of the back end.
///
/// # Safety
/// `dest` is valid for writes of `len` bytes (host or GPU memory).
pub(crate) unsafe fn get(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(src as usize) {
        return None;
    }
    let b = backend()?;
    Some(b.remote(func, src as usize, len, pe).and_then(|s| {
        // SAFETY: `s` is inside pe's mapped heap for len bytes; dest per the caller.
        unsafe { b.copy(func, dest as DevAddr, s, len) }
    }))
}

/// Reads the `n` `T`s at `addr` in this PE's GPU heap (one copy, complete when it returns).
fn read_words<T: bytemuck::Pod>(func: &'static str, b: &Backend, addr: usize, n: usize) -> Result<Vec<T>> {
    let mut v = vec![T::zeroed(); n];
    let len = size_of_val(v.as_slice());
    if len > 0 {
        let src = b.remote(func, addr, len, b.me)?;
        // SAFETY: `src` is inside this PE's heap for len bytes; `v` is a live local of len bytes.
        unsafe { b.copy(func, v.as_mut_ptr() as DevAddr, src, len) }?;
    }
    Ok(v)
}

/// The ivars of a wait or test must be aligned for their type, as on the host heap.
fn aligned<T>(func: &'static str, ivars: usize) -> Result<()> {
    if ivars.is_multiple_of(align_of::<T>()) {
        Ok(())
    } else {
        Err(Error::new(crate::error::me(), func, ErrorKind::Misaligned { addr: ivars, width: size_of::<T>() }))
    }
}

/// The back-off of a host wait on GPU memory: a yield per poll at first, then naps growing to a
/// millisecond (a copy per poll costs more than a load, and jobs run more PEs than cores). A
/// wait that starts to nap says so in `oshrun`'s status table, as the runtime's waits do, so
/// that a hang report (the launcher's timeout, which is what ends a wait that never ends) names
/// it; its end is noted when it is dropped.
struct Poll {
    polls: u32,
    what: (Routine, Arg),
    blocked: bool,
}

impl Poll {
    /// A wait in routine `code` on the words at `addr`.
    fn new(code: u16, addr: usize) -> Poll {
        Poll { polls: 0, what: (Routine::of(code), Arg::Addr(addr as u64)), blocked: false }
    }

    /// Waits a little before the next poll.
    fn snooze(&mut self) {
        self.polls = self.polls.saturating_add(1);
        if self.polls < 64 {
            std::thread::yield_now();
            return;
        }
        if !self.blocked {
            self.blocked = true;
            status::wait_begin(Some(self.what), None);
        }
        std::thread::sleep(Duration::from_micros(u64::from(self.polls.min(1000))));
    }
}

impl Drop for Poll {
    fn drop(&mut self) {
        if self.blocked {
            status::wait_end();
        }
    }
}

/// Whether the `T` at `ivar` (in the GPU heap) satisfies `cmp value` now: `None` when `ivar` is
/// not GPU memory of the back end.
pub(crate) fn test<T: bytemuck::Pod + PartialOrd>(
    func: &'static str,
    ivar: usize,
    cmp: Cmp,
    value: T,
) -> Option<Result<bool>> {
    if !owns(ivar) {
        return None;
    }
    let b = backend()?;
    Some(aligned::<T>(func, ivar).and_then(|()| read_words::<T>(func, &b, ivar, 1)).map(|v| cmp.holds(v[0], value)))
}

/// Waits until the `T` at `ivar` (in the GPU heap) satisfies `cmp value`, and returns it: `None`
/// when `ivar` is not GPU memory of the back end. The host polls the word with copies ([`Poll`]);
/// the launcher's timeout ends a wait that never ends.
pub(crate) fn wait_until<T: bytemuck::Pod + PartialOrd>(
    func: &'static str,
    ivar: usize,
    cmp: Cmp,
    value: T,
) -> Option<Result<T>> {
    if !owns(ivar) {
        return None;
    }
    let b = backend()?;
    let routine = if func.contains("signal_wait_until") { code::SIGNAL_WAIT_UNTIL } else { code::WAIT_UNTIL };
    Some((|| {
        aligned::<T>(func, ivar)?;
        let mut poll = Poll::new(routine, ivar);
        loop {
            let v = read_words::<T>(func, &b, ivar, 1)?[0];
            if cmp.holds(v, value) {
                return Ok(v);
            }
            poll.snooze();
        }
    })())
}

/// The comparison of element `i`: its own value (`_vector`) or the one for all.
fn value_at<T: Copy>(v: &CmpValues<'_, T>, i: usize) -> T {
    match v {
        CmpValues::One(x) => *x,
        CmpValues::Each(xs) => xs[i],
    }
}

/// Whether element `i` takes part (`status` null, or its entry 0).
fn active(status: Option<&[i32]>, i: usize) -> bool {
    status.is_none_or(|s| s.get(i).is_none_or(|&x| x == 0))
}

/// Polls the `n` ivars at `ivars` (in the GPU heap), one copy of them all per poll, until `done`
/// says what the call returns (`block`), or once (a test): `None` when `ivars` is not GPU memory
/// of the back end; `Some(Ok(None))` for a test that finds nothing yet.
fn poll_many<T: bytemuck::Pod + PartialOrd, R>(
    func: &'static str,
    routine: u16,
    ivars: usize,
    n: usize,
    block: bool,
    mut done: impl FnMut(&[T]) -> Option<R>,
) -> Option<Result<Option<R>>> {
    if !owns(ivars) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        aligned::<T>(func, ivars)?;
        let mut poll = Poll::new(routine, ivars);
        loop {
            let words = read_words::<T>(func, &b, ivars, n)?;
            if let Some(r) = done(&words) {
                return Ok(Some(r));
            }
            if !block {
                return Ok(None);
            }
            poll.snooze();
        }
    })())
}

/// `shmem_TYPE_wait_until_all[_vector]` (`block`) and `test_all[_vector]` on ivars in the GPU
/// heap: whether every active element satisfies its comparison (a wait returns once they do).
/// `None` when `ivars` is not GPU memory of the back end.
pub(crate) fn wait_all<T: bytemuck::Pod + PartialOrd>(
    func: &'static str,
    ivars: usize,
    n: usize,
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
    block: bool,
) -> Option<Result<bool>> {
    let all = |w: &[T]| (0..w.len()).all(|i| !active(status, i) || cmp.holds(w[i], value_at(&v, i))).then_some(());
    poll_many(func, code::WAIT_UNTIL_ALL, ivars, n, block, all).map(|r| r.map(|x| x.is_some()))
}

thread_local! {
    /// Where this thread's next `_any` scan starts: after the element the last one returned,
    /// so that no element starves (as the runtime's do).
    static ANY_START: Cell<usize> = const { Cell::new(0) };
}

/// `shmem_TYPE_wait_until_any[_vector]` (`block`) and `test_any[_vector]` on ivars in the GPU
/// heap: the index of an active element that satisfies its comparison; `None` when there is
/// none (yet), at once when no element is active. `None` outside: not GPU memory.
pub(crate) fn wait_any<T: bytemuck::Pod + PartialOrd>(
    func: &'static str,
    ivars: usize,
    n: usize,
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
    block: bool,
) -> Option<Result<Option<usize>>> {
    let block = block && (0..n).any(|i| active(status, i));
    let any = |w: &[T]| {
        let start = ANY_START.with(Cell::get) % w.len().max(1);
        let i = (0..w.len())
            .map(|k| (start + k) % w.len())
            .find(|&i| active(status, i) && cmp.holds(w[i], value_at(&v, i)))?;
        ANY_START.with(|s| s.set(i + 1));
        Some(i)
    };
    poll_many(func, code::WAIT_UNTIL_ANY, ivars, n, block, any)
}

/// `shmem_TYPE_wait_until_some[_vector]` (`block`) and `test_some[_vector]` on ivars in the GPU
/// heap: how many active elements satisfy their comparison, their indices in `out`; 0 when none
/// does (yet), at once when no element is active. `None` when `ivars` is not GPU memory.
pub(crate) fn wait_some<T: bytemuck::Pod + PartialOrd>(
    func: &'static str,
    ivars: usize,
    n: usize,
    out: &mut [usize],
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
    block: bool,
) -> Option<Result<usize>> {
    if out.len() < n {
        return Some(Err(invalid(func, format!("indices has {} entries for {n} ivars", out.len()))));
    }
    let block = block && (0..n).any(|i| active(status, i));
    let some = |w: &[T]| {
        let mut k = 0;
        for i in (0..w.len()).filter(|&i| active(status, i) && cmp.holds(w[i], value_at(&v, i))) {
            out[k] = i;
            k += 1;
        }
        (k > 0).then_some(k)
    };
    poll_many(func, code::WAIT_UNTIL_SOME, ivars, n, block, some).map(|r| r.map(|k| k.unwrap_or(0)))
}

/// A put with signal to `pe` whose data or signal word is in the GPU heap: the data, then the
/// signal (`op` 0: set, else add), each on the heap it is in (a copy or the AMO kernel for the
/// GPU heap, the runtime for the host heap; data put through the runtime is completed with a
/// quiet before the signal). `None` when neither is GPU memory.
///
/// # Safety
/// `src` is valid for reads of `len` bytes.
pub(crate) unsafe fn put_signal(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    sig: *mut u64,
    signal: u64,
    op: i32,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(dest as usize) && !owns(sig as usize) {
        return None;
    }
    Some((|| {
        if len > 0 {
            // SAFETY: the caller's.
            match unsafe { put(func, dest, src, len, pe) } {
                Some(r) => r?,
                None => {
                    // SAFETY: the caller's; the runtime checks dest.
                    unsafe { oxshmem_rt::raw::putmem(dest, src, len, pe as i32) }?;
                    oxshmem_rt::raw::quiet()?;
                }
            }
        }
        let sop = if op == 0 { AmoOp::Set(signal) } else { AmoOp::FetchAdd(signal) };
        match amo(func, sig as usize, 8, sop, pe) {
            Some(r) => r.map(drop),
            // SAFETY: the runtime checks the signal word (symmetric, aligned).
            None => unsafe { oxshmem_rt::raw::atomic(sig, sop, pe as i32, func) }.map(drop),
        }
    })())
}

/// A host atomic on the `width`-byte word at `dest` (in the GPU heap) of world PE `pe`, through
/// the device library's one-thread kernel (the host cannot reach GPU memory atomically): the
/// prior value. `None` when `dest` is not GPU memory of the back end.
pub(crate) fn amo(func: &'static str, dest: usize, width: usize, op: AmoOp, pe: usize) -> Option<Result<u64>> {
    if !owns(dest) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        if !dest.is_multiple_of(width) || !matches!(width, 4 | 8) {
            return Err(invalid(func, format!("{dest:#x} is not a naturally aligned 4- or 8-byte word")));
        }
        let target = b.remote(func, dest, width, pe)?;
        amo_at(func, target, width, op)
    })())
}

/// An atomic `op` on the naturally aligned `width`-byte word at `target` (a GPU heap as mapped
/// here), through the device library's AMO kernel: the prior value.
pub(super) fn amo_at(func: &'static str, target: u64, width: usize, op: AmoOp) -> Result<u64> {
    let kernel = super::super::device_lib::amo().ok_or_else(|| {
        invalid(
            func,
            format!(
                "{target:#x} is GPU memory, and an atomic there from the host needs libnvshmem_device.a's AMO \
                 kernel, which this program did not register (link the device library)"
            ),
        )
    })?;
    if let Some(b) = backend() {
        // The callback makes the PE's device current itself; this also covers a device library
        // built before it did.
        b.gpu.make_current().map_err(|e| cuda_err(func, e))?;
    }
    let (flags, value, cond) = proxy_amo_flags(op, width == 8);
    let flags = u32::from(flags);
    let mut old = 0u64;
    // SAFETY: `target` is a naturally aligned word of a GPU heap mapped here; the callback
    // writes the prior value to `old`, a live local.
    let rc = unsafe { kernel(target, flags, value, cond, &mut old) };
    if rc != 0 {
        return Err(cuda_err(func, format!("the device library's atomic kernel returned CUDA error {rc}")));
    }
    Ok(old)
}

/// What to say of `addr`, instead of "is not symmetric", when it is GPU memory: the routine
/// does not reach the GPU heap from the host. Host RMA (strided too), atomics, signals, waits
/// and tests and the team collectives do; what is left is the deprecated active-set
/// collectives, the locks, and the extensions of `shmemx.h` (prefix sums, blocked strided RMA).
pub(crate) fn explain(addr: usize) -> Option<String> {
    owns(addr).then(|| {
        "is in the GPU symmetric heap (nvshmem_malloc), which this host routine does not reach in oxshmem's \
         CUDA back end: host RMA (strided too), atomics, signals, waits and tests and the team collectives do, \
         but not the deprecated active-set collectives (_to_all, broadcast32/64, [f]collect32/64, \
         alltoall[s]32/64), locks, or the prefix sums and blocked strided RMA of shmemx.h; for those, call \
         the routine from a kernel or use a host buffer (shmem_malloc)"
            .to_string()
    })
}
