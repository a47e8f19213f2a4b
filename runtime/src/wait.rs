//! Waiting: `wait_until`, `test` and their `_all`, `_any`, `_some` and `_vector` forms, and the
//! back-off every waiting loop in the runtime uses (`Backoff`, over the polling loops' common
//! [`SpinPolicy`], which the device layer's loops use too).
//!
//! A waiter spins briefly (a remote store usually lands within a microsecond), then yields
//! the CPU on every poll: jobs run with more PEs than cores, and a PE that spins on a shared
//! core would hold up the very PE it waits for for a whole scheduler tick.
//!
//! A wait that stops spinning is a wait that may last: it notes in `oshrun`'s status table
//! (`oxshmem_bootstrap::status`) that this PE waits, in which routine, for whom and since
//! when, and notes the end of the wait when it is over, so that the hang report can say who
//! waits for whom. Waits that end while spinning write nothing.

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{
    AtomicI16, AtomicI32, AtomicI64, AtomicIsize, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

use oxshmem_bootstrap::status::{self, Arg, Routine, code};

use crate::error::{Error, ErrorKind, Result};
use crate::segment::{ForeignSegment, Route, poll_words};
pub use crate::spin::{Nap, Spin, SpinPolicy};
use crate::transport::Transport;
use crate::world::Runtime;

/// How long a wait yields on every poll before it starts to sleep between polls, where the
/// cores are crowded: this host runs more PEs than it has CPUs, or this process runs agent
/// threads (the device layer's proxy, software NIC). A wait that long is not ended by a PE on
/// this core, and the sleeper's core goes to the threads that can use it.
const YIELD_FOR_CROWDED: std::time::Duration = std::time::Duration::from_millis(1);
/// The same where every PE of this host has a core: only a wait this long is idle. A PE with
/// a core of its own that waits for a PE which lost its core to another process (a busy
/// process beside the job) must not sleep after a scheduler slice or two: its core falls idle,
/// the balancer moves the other process onto it, and each wake-up comes a nap late on a core
/// now shared — a barrier that stays at 80 µs where it takes 0.1 µs. It yields instead, as
/// OpenMPI and NVSHMEM's waits do, which hands the core to nothing, as nothing else waits for it.
const YIELD_FOR: std::time::Duration = std::time::Duration::from_millis(100);
/// The sleep between polls of a wait that has lasted [`YIELD_FOR`] (or
/// [`YIELD_FOR_CROWDED`]).
const NAP: std::time::Duration = std::time::Duration::from_micros(50);

/// The runtime's waits: `spin` polls (`OXSHMEM_SPIN`) spinning, then a yield per poll, then
/// (after [`YIELD_FOR`], a millisecond where the cores are `crowded`) a 50 µs nap per poll.
const fn wait_policy(spin: u32, crowded: bool) -> SpinPolicy {
    SpinPolicy::spin_then_yield(spin).nap_after(if crowded { YIELD_FOR_CROWDED } else { YIELD_FOR }, NAP)
}

/// Spin, then yield, then nap ([`wait_policy`]) — progressing the network transport on
/// every poll, and telling the hang report about the waits that last.
#[derive(Debug)]
pub(crate) struct Backoff<'a> {
    spin: Spin,
    /// The network transport, progressed on every poll.
    net: Option<&'a dyn Transport>,
    /// It yields, and said so in the status table.
    blocked: bool,
    /// The PE it waits for (`usize::MAX`: none in particular).
    peer: usize,
    /// The routine it waits in, when the caller said; else the caller's file tells.
    what: Option<(Routine, Arg)>,
    at: &'static Location<'static>,
}

impl Runtime {
    /// A wait of this PE: it spins `OXSHMEM_SPIN` polls and progresses this PE's network
    /// transport on every poll.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn backoff(&self) -> Backoff<'_> {
        Backoff::new(self.config.spin, self.config.crowded || crate::segment::agents_running(), self.net.as_deref())
    }
}

impl<'a> Backoff<'a> {
    /// A wait that spins `spin` polls, naps early where the cores are `crowded`, and
    /// progresses `net` on every poll.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn new(spin: u32, crowded: bool, net: Option<&'a dyn Transport>) -> Self {
        Backoff {
            spin: Spin::new(wait_policy(spin, crowded)),
            net,
            blocked: false,
            peer: usize::MAX,
            what: None,
            at: Location::caller(),
        }
    }

    /// The wait waits for world PE `pe` (for the hang report).
    #[inline(always)]
    pub(crate) fn waiting_for(mut self, pe: usize) -> Self {
        self.peer = pe;
        self
    }

    /// The wait is routine `r` with argument `arg` (for the hang report).
    #[inline(always)]
    pub(crate) fn routine(mut self, r: Routine, arg: Arg) -> Self {
        self.what = Some((r, arg));
        self
    }

    /// The wait starts to block: say where.
    #[cold]
    #[inline(never)]
    fn block(&mut self) {
        self.blocked = true;
        // A collective's waits are part of it: its own entry says where. Other waits are
        // named by their caller, or by the file they are in.
        let what = self.what.or_else(|| Some((Routine::of(routine_of_file(self.at.file())?), Arg::None)));
        status::wait_begin(what, (self.peer != usize::MAX).then_some(self.peer));
    }

    /// Waits a little before the next poll. A network transport that needs this PE to make
    /// progress gets it here: a waiting PE is often the target its peer waits on.
    ///
    /// After the spin, every poll yields (a PE that shares the core gets it at once); once
    /// that has lasted (a millisecond where the cores are crowded, else 100 ms:
    /// [`wait_policy`]), each poll sleeps 50 µs instead: a yield that nothing else wants
    /// returns at once, so the waiter would hold its core against threads that could use it,
    /// while 50 µs late is little at the end of a wait that long.
    #[inline(always)]
    pub(crate) fn snooze(&mut self) {
        if let Some(net) = self.net {
            net.progress();
        }
        if self.spin.spinning() {
            self.spin.pause();
        } else {
            self.wait_long();
        }
    }

    #[cold]
    #[inline(never)]
    fn wait_long(&mut self) {
        if !self.blocked {
            self.block();
        }
        self.spin.pause();
    }
}

impl Drop for Backoff<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.blocked {
            status::wait_end();
        }
    }
}

/// The routine a wait that did not name one counts as in the hang report, from the runtime
/// source file it was made in (`Location::file`: `runtime/src/sym/wait.rs`, or an absolute
/// path when the crate is built elsewhere): `None` for a collective's wait (the collective's
/// own entry says where). Only the path below the crate's `src` folder counts.
fn routine_of_file(file: &str) -> Option<u16> {
    // Innermost first: `sym/wait.rs` gives "wait.rs", then "sym".
    let mut below_src = file.rsplit(['/', '\\']).take_while(|c| *c != "src");
    let name = below_src.next().unwrap_or_default();
    let parent = below_src.next();
    let top = below_src.last().or(parent);
    if top == Some("coll") {
        return None;
    }
    Some(match (parent, name) {
        (None, "lock.rs") => code::SET_LOCK,
        (None, "signal.rs") => code::SIGNAL_WAIT_UNTIL,
        // The raw forms (`wait.rs`) and `SymSlice`'s (`sym/wait.rs`).
        (None | Some("sym"), "wait.rs") => code::WAIT_UNTIL,
        _ => code::OTHER,
    })
}

/// Comparison operators of the point-to-point synchronization routines (`SHMEM_CMP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Cmp {
    /// Equal.
    Eq = 0,
    /// Not equal.
    Ne = 1,
    /// Greater than.
    Gt = 2,
    /// Greater than or equal.
    Ge = 3,
    /// Less than.
    Lt = 4,
    /// Less than or equal.
    Le = 5,
}

impl Cmp {
    /// From the C constant (`SHMEM_CMP_EQ` = 0 … `SHMEM_CMP_LE` = 5).
    pub fn from_c(v: i32) -> Option<Cmp> {
        Some(match v {
            0 => Cmp::Eq,
            1 => Cmp::Ne,
            2 => Cmp::Gt,
            3 => Cmp::Ge,
            4 => Cmp::Lt,
            5 => Cmp::Le,
            _ => return None,
        })
    }

    /// Whether `a cmp b` holds.
    #[inline(always)]
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Types a PE can wait on (OpenSHMEM 1.5 Table 10: 16-, 32- and 64-bit integers).
pub trait SyncType: bytemuck::Pod + PartialOrd + sealed::Sealed {
    /// Atomic load with acquire ordering.
    ///
    /// # Safety
    /// `p` must be valid and aligned for an atomic load of `Self`.
    unsafe fn load_acquire(p: *const Self) -> Self;
}

macro_rules! sync_type {
    ($($t:ty => $a:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl SyncType for $t {
            /// # Safety
            /// As the trait's: `p` valid and aligned for an atomic load of `Self`.
            #[inline(always)]
            unsafe fn load_acquire(p: *const Self) -> Self {
                // SAFETY: the caller guarantees p is valid and aligned; the atomic type has the
                // same size and alignment as the integer.
                unsafe { <$a>::from_ptr(p as *mut _) }.load(Ordering::Acquire) as $t
            }
        }
    )*};
}
sync_type!(i16 => AtomicI16, u16 => AtomicU16, i32 => AtomicI32, u32 => AtomicU32,
           i64 => AtomicI64, u64 => AtomicU64, isize => AtomicIsize, usize => AtomicUsize);

/// Checks that `n` elements from `ivars` are symmetric and aligned; returns the runtime, and
/// the registered segment they are in when they are not in the runtime's own (the waits then
/// poll it: [`crate::segment::poll_words`]).
fn check_ivars<T>(
    func: &'static str,
    ivars: *const T,
    n: usize,
) -> Result<(&'static Runtime, Option<Arc<dyn ForeignSegment>>)> {
    let rt = crate::world::running(func)?;
    let len = n
        .checked_mul(size_of::<T>())
        .ok_or_else(|| Error::new(rt.me, func, ErrorKind::InvalidSize { what: format!("{n} elements overflows") }))?;
    let r = rt.route(ivars as usize, len.max(1), "ivars", func)?;
    if !(ivars as usize).is_multiple_of(align_of::<T>()) {
        return Err(Error::new(rt.me, func, ErrorKind::Misaligned { addr: ivars as usize, width: size_of::<T>() }));
    }
    Ok((
        rt,
        match r {
            Route::Sym(_) => None,
            Route::Foreign(s) => Some(s),
        },
    ))
}

/// Raw `shmem_TYPE_test`: whether `*ivar cmp value` holds now.
///
/// # Safety
/// `ivar` must point to a live `T` (checked to be symmetric).
pub unsafe fn test<T: SyncType>(ivar: *const T, cmp: Cmp, value: T) -> Result<bool> {
    const F: &str = "shmem_test";
    if let (rt, Some(seg)) = check_ivars(F, ivar, 1)? {
        let hit = |w: &[T]| Some(cmp.holds(w[0], value));
        return poll_words(rt, &*seg, F, code::WAIT_UNTIL, ivar as usize, 1, false, hit).map(|r| r == Some(true));
    }
    // SAFETY: checked symmetric and aligned above.
    Ok(cmp.holds(unsafe { T::load_acquire(ivar) }, value))
}

/// Raw `shmem_TYPE_wait_until`: blocks until `*ivar cmp value`.
///
/// # Safety
/// `ivar` must point to a live `T` (checked to be symmetric).
pub unsafe fn wait_until<T: SyncType>(ivar: *const T, cmp: Cmp, value: T) -> Result<()> {
    const F: &str = "shmem_wait_until";
    let (rt, seg) = check_ivars(F, ivar, 1)?;
    if let Some(seg) = seg {
        let hit = |w: &[T]| cmp.holds(w[0], value).then_some(());
        return poll_words(rt, &*seg, F, code::WAIT_UNTIL, ivar as usize, 1, true, hit).map(drop);
    }
    let mut b = rt.backoff().routine(Routine::of(code::WAIT_UNTIL), Arg::Addr(ivar as u64));
    // SAFETY: checked symmetric and aligned above.
    while !cmp.holds(unsafe { T::load_acquire(ivar) }, value) {
        b.snooze();
    }
    Ok(())
}

/// Which elements of an array a `_all/_any/_some` call looks at.
fn active(status: Option<&[i32]>, i: usize) -> bool {
    status.is_none_or(|s| s.get(i).is_none_or(|&v| v == 0))
}

fn check_status(func: &'static str, n: usize, status: Option<&[i32]>, values: Option<usize>) -> Result<()> {
    let rt = crate::world::running(func)?;
    if let Some(s) = status
        && s.len() < n
    {
        return Err(Error::new(
            rt.me,
            func,
            ErrorKind::SizeMismatch { what: format!("status has {} entries for {n} ivars", s.len()) },
        ));
    }
    if let Some(v) = values
        && v < n
    {
        return Err(Error::new(
            rt.me,
            func,
            ErrorKind::SizeMismatch { what: format!("cmp_values has {v} entries for {n} ivars") },
        ));
    }
    Ok(())
}

/// The value to compare element `i` with: one value for all, or one per element (`_vector`).
#[derive(Debug, Clone, Copy)]
pub enum CmpValues<'a, T> {
    /// The same value for every element.
    One(T),
    /// One value per element.
    Each(&'a [T]),
}

impl<T: Copy> CmpValues<'_, T> {
    fn at(&self, i: usize) -> T {
        match self {
            CmpValues::One(v) => *v,
            CmpValues::Each(v) => v[i],
        }
    }
    fn len(&self) -> Option<usize> {
        match self {
            CmpValues::One(_) => None,
            CmpValues::Each(v) => Some(v.len()),
        }
    }
}

/// # Safety
/// `ivars` must point to `n` live `T`s, checked symmetric.
unsafe fn holds_at<T: SyncType>(ivars: *const T, i: usize, cmp: Cmp, v: &CmpValues<'_, T>) -> bool {
    // SAFETY: i < n and the caller checked the array.
    cmp.holds(unsafe { T::load_acquire(ivars.add(i)) }, v.at(i))
}

/// Raw `shmem_TYPE_test_all[_vector]`: whether every active element satisfies its comparison.
///
/// # Safety
/// `ivars` must point to `n` live `T`s (checked to be symmetric).
pub unsafe fn test_all<T: SyncType>(
    ivars: *const T,
    n: usize,
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
) -> Result<bool> {
    const F: &str = "shmem_test_all";
    let (rt, seg) = check_ivars(F, ivars, n)?;
    check_status(F, n, status, v.len())?;
    if let Some(seg) = seg {
        let all = |w: &[T]| Some((0..n).all(|i| !active(status, i) || cmp.holds(w[i], v.at(i))));
        return poll_words(rt, &*seg, F, code::WAIT_UNTIL_ALL, ivars as usize, n, false, all).map(|r| r == Some(true));
    }
    // SAFETY: checked above.
    Ok((0..n).all(|i| !active(status, i) || unsafe { holds_at(ivars, i, cmp, &v) }))
}

/// Raw `shmem_TYPE_wait_until_all[_vector]`.
///
/// # Safety
/// As [`test_all`].
pub unsafe fn wait_until_all<T: SyncType>(
    ivars: *const T,
    n: usize,
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
) -> Result<()> {
    const F: &str = "shmem_wait_until_all";
    let (rt, seg) = check_ivars(F, ivars, n)?;
    check_status(F, n, status, v.len())?;
    if let Some(seg) = seg {
        let all = |w: &[T]| (0..n).all(|i| !active(status, i) || cmp.holds(w[i], v.at(i))).then_some(());
        return poll_words(rt, &*seg, F, code::WAIT_UNTIL_ALL, ivars as usize, n, true, all).map(drop);
    }
    let mut b = rt.backoff().routine(Routine::of(code::WAIT_UNTIL_ALL), Arg::Addr(ivars as u64));
    for i in 0..n {
        if !active(status, i) {
            continue;
        }
        // SAFETY: checked above.
        while !unsafe { holds_at(ivars, i, cmp, &v) } {
            b.snooze();
        }
    }
    Ok(())
}

/// Raw `shmem_TYPE_test_any[_vector]`: the index of an active element that satisfies its
/// comparison, if any. Successive calls start where the last one stopped, so that no element
/// starves.
///
/// # Safety
/// As [`test_all`].
pub unsafe fn test_any<T: SyncType>(
    ivars: *const T,
    n: usize,
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
) -> Result<Option<usize>> {
    const F: &str = "shmem_test_any";
    let (rt, seg) = check_ivars(F, ivars, n)?;
    check_status(F, n, status, v.len())?;
    if let Some(seg) = seg {
        let any = |w: &[T]| Some(scan_any_by(n, status, |i| cmp.holds(w[i], v.at(i))));
        return poll_words(rt, &*seg, F, code::WAIT_UNTIL_ANY, ivars as usize, n, false, any).map(Option::flatten);
    }
    // SAFETY: checked above.
    Ok(unsafe { scan_any(ivars, n, status, cmp, &v) })
}

thread_local! {
    static ANY_START: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// # Safety
/// `ivars` checked for `n` elements.
unsafe fn scan_any<T: SyncType>(
    ivars: *const T,
    n: usize,
    status: Option<&[i32]>,
    cmp: Cmp,
    v: &CmpValues<'_, T>,
) -> Option<usize> {
    // SAFETY: scan_any_by asks for indices below n only.
    scan_any_by(n, status, |i| unsafe { holds_at(ivars, i, cmp, v) })
}

/// The index of an active element of `n` for which `holds` is true, starting after the one
/// this thread's last scan returned.
#[inline(always)]
fn scan_any_by(n: usize, status: Option<&[i32]>, mut holds: impl FnMut(usize) -> bool) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let start = ANY_START.with(|s| s.get()) % n;
    for k in 0..n {
        let i = (start + k) % n;
        if active(status, i) && holds(i) {
            ANY_START.with(|s| s.set(i + 1));
            return Some(i);
        }
    }
    None
}

/// Raw `shmem_TYPE_wait_until_any[_vector]`: blocks until some active element satisfies its
/// comparison and returns its index; `None` (C: `SIZE_MAX`) if no element is active.
///
/// # Safety
/// As [`test_all`].
pub unsafe fn wait_until_any<T: SyncType>(
    ivars: *const T,
    n: usize,
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
) -> Result<Option<usize>> {
    const F: &str = "shmem_wait_until_any";
    let (rt, seg) = check_ivars(F, ivars, n)?;
    check_status(F, n, status, v.len())?;
    if !(0..n).any(|i| active(status, i)) {
        return Ok(None);
    }
    if let Some(seg) = seg {
        let any = |w: &[T]| scan_any_by(n, status, |i| cmp.holds(w[i], v.at(i)));
        return poll_words(rt, &*seg, F, code::WAIT_UNTIL_ANY, ivars as usize, n, true, any);
    }
    let mut b = rt.backoff().routine(Routine::of(code::WAIT_UNTIL_ANY), Arg::Addr(ivars as u64));
    loop {
        // SAFETY: checked above.
        if let Some(i) = unsafe { scan_any(ivars, n, status, cmp, &v) } {
            return Ok(Some(i));
        }
        b.snooze();
    }
}

/// Raw `shmem_TYPE_test_some[_vector]`: writes the indices of every active element that
/// satisfies its comparison into `out` and returns how many.
///
/// # Safety
/// As [`test_all`].
pub unsafe fn test_some<T: SyncType>(
    ivars: *const T,
    n: usize,
    out: &mut [usize],
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
) -> Result<usize> {
    const F: &str = "shmem_test_some";
    let (rt, seg) = check_ivars(F, ivars, n)?;
    check_status(F, n, status, v.len())?;
    if out.len() < n {
        return Err(Error::new(
            rt.me,
            F,
            ErrorKind::SizeMismatch { what: format!("indices has {} entries for {n} ivars", out.len()) },
        ));
    }
    if let Some(seg) = seg {
        let some = |w: &[T]| {
            let mut k = 0;
            for i in (0..n).filter(|&i| active(status, i) && cmp.holds(w[i], v.at(i))) {
                out[k] = i;
                k += 1;
            }
            Some(k)
        };
        return poll_words(rt, &*seg, F, code::WAIT_UNTIL_SOME, ivars as usize, n, false, some)
            .map(Option::unwrap_or_default);
    }
    let mut k = 0;
    for i in 0..n {
        // SAFETY: checked above.
        if active(status, i) && unsafe { holds_at(ivars, i, cmp, &v) } {
            out[k] = i;
            k += 1;
        }
    }
    Ok(k)
}

/// Raw `shmem_TYPE_wait_until_some[_vector]`: blocks until at least one active element
/// satisfies its comparison; returns how many do (their indices in `out`), 0 if none is active.
///
/// # Safety
/// As [`test_all`].
pub unsafe fn wait_until_some<T: SyncType>(
    ivars: *const T,
    n: usize,
    out: &mut [usize],
    status: Option<&[i32]>,
    cmp: Cmp,
    v: CmpValues<'_, T>,
) -> Result<usize> {
    if !(0..n).any(|i| active(status, i)) {
        check_ivars("shmem_wait_until_some", ivars, n)?;
        return Ok(0);
    }
    // Before init or after finalize test_some fails at once, naming itself.
    let b = match crate::world::running("shmem_wait_until_some") {
        Ok(rt) => rt.backoff(),
        Err(_) => Backoff::new(1000, true, None),
    };
    let mut b = b.routine(Routine::of(code::WAIT_UNTIL_SOME), Arg::Addr(ivars as u64));
    loop {
        // SAFETY: forwarded from the caller.
        let k = unsafe { test_some(ivars, n, out, status, cmp, v) }?;
        if k > 0 {
            return Ok(k);
        }
        b.snooze();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PE with a core of its own yields through a scheduler slice or two (the PE it waits
    /// for lost its core to another process); one on crowded cores naps after a millisecond.
    #[test]
    fn a_wait_naps_early_only_where_the_cores_are_crowded() {
        let nap = |crowded| wait_policy(7, crowded).nap.expect("the runtime's waits nap in the end");
        assert_eq!(nap(true).after, std::time::Duration::from_millis(1));
        assert_eq!(nap(false).after, std::time::Duration::from_millis(100));
        assert_eq!((nap(true).sleep, nap(false).sleep), (NAP, NAP));
        assert_eq!(wait_policy(7, false).spins, 7);
    }

    /// An agent thread (a proxy, a software NIC) counts while it lives, and only once.
    #[test]
    fn agent_threads_count_while_they_live() {
        let (started, finish) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::segment::agent_thread();
                crate::segment::agent_thread();
                started.wait();
                finish.wait();
            });
            started.wait();
            assert!(crate::segment::agents_running());
            finish.wait();
        });
        // The count drops when the thread's locals go, as it ends (just after the scope saw
        // it finish).
        let t = std::time::Instant::now();
        while crate::segment::agents_running() {
            assert!(t.elapsed() < std::time::Duration::from_secs(10), "an ended agent still counts");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_wait_is_named_by_the_file_below_src_that_made_it() {
        let wait = Some(code::WAIT_UNTIL);
        assert_eq!(routine_of_file("runtime/src/sym/wait.rs"), wait);
        assert_eq!(routine_of_file("runtime/src/wait.rs"), wait);
        assert_eq!(routine_of_file(r"C:\work\runtime\src\sym\wait.rs"), wait);
        assert_eq!(routine_of_file("/home/u/.cargo/registry/src/index/oxshmem-0.1.0/src/sym/wait.rs"), wait);
        assert_eq!(routine_of_file("runtime/src/lock.rs"), Some(code::SET_LOCK));
        assert_eq!(routine_of_file("runtime/src/signal.rs"), Some(code::SIGNAL_WAIT_UNTIL));
        // A collective's waits are its own entry's.
        assert_eq!(routine_of_file("runtime/src/coll/mailbox.rs"), None);
        assert_eq!(routine_of_file(r"runtime\src\coll\barrier.rs"), None);
        // Only the path below `src` counts: a checkout under a folder named `coll` is no
        // collective, and a file of the same name elsewhere is not that routine.
        assert_eq!(routine_of_file("/home/coll/runtime/src/wait.rs"), wait);
        assert_eq!(routine_of_file("runtime/src/sym/slice.rs"), Some(code::OTHER));
        assert_eq!(routine_of_file("runtime/src/transport/ofi/wait.rs"), Some(code::OTHER));
        assert_eq!(routine_of_file("runtime/src/heap/lock.rs"), Some(code::OTHER));
    }
}
