//! Distributed locks (`shmem_set_lock`, `shmem_test_lock`, `shmem_clear_lock`): an MCS queue
//! lock over remote atomics, fair (first come, first served) and free of lost wake-ups.
//!
//! The lock is a symmetric `long` (zero when free). Its copy on PE 0 holds the queue's tail;
//! every PE's copy is that PE's queue node: the successor that linked behind it, and the
//! "go" bit its predecessor sets to hand the lock over. The fields share one 64-bit word and
//! are only ever changed with atomic read-modify-writes on their own bits:
//!
//! | bits  | field | meaning (PE numbers + 1; 0 = none) |
//! |-------|-------|------------------------------------|
//! | 0-23  | tail  | last PE in the queue (PE 0's copy only) |
//! | 24-47 | next  | the PE queued behind this one |
//! | 48    | go    | the lock has been handed to this PE |
//!
//! A waiter spins on its *own* copy only, so waiting costs no remote traffic, and yields
//! after a short spin: with more PEs than cores the holder gets the CPU back. Threads of one PE
//! first take a process-local lock for the same variable, since the queue node is per PE.
//!
//! The process-local table also records which locks this PE holds, so that `shmem_clear_lock`
//! of a lock it does not hold is refused at once: the queue would otherwise wait forever for
//! a successor to link behind a node that was never in it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, ErrorKind, Result};
use crate::transport::{AmoOp, SymAddr, Width};
use crate::world::{Runtime, running};

const TAIL: u64 = (1 << 24) - 1;
const NEXT_SHIFT: u32 = 24;
const NEXT: u64 = TAIL << NEXT_SHIFT;
const GO: u64 = 1 << 48;
/// Largest job the lock's 24-bit PE fields can name.
pub(crate) const MAX_LOCK_PES: usize = (1 << 24) - 2;

/// Where this PE is with a lock, in the process-local table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Local {
    /// A thread of this PE is queueing for it (or testing it).
    Taking,
    /// This PE holds it.
    Held,
    /// A thread of this PE is handing it over.
    Clearing,
}

/// The locks this PE is busy with, by address; absent ones it neither holds nor wants.
static LOCAL: Mutex<Option<HashMap<usize, Local>>> = Mutex::new(None);
static LOCAL_CV: Condvar = Condvar::new();

/// Claims the lock at `addr` for one thread of this PE (waiting while another thread has it,
/// when `block`); returns whether it did.
fn local_acquire(addr: usize, block: bool) -> bool {
    let mut g = LOCAL.lock();
    loop {
        let map = g.get_or_insert_with(HashMap::new);
        if let std::collections::hash_map::Entry::Vacant(e) = map.entry(addr) {
            e.insert(Local::Taking);
            return true;
        }
        if !block {
            return false;
        }
        LOCAL_CV.wait(&mut g);
    }
}

/// Moves the lock at `addr` from `from` to `to` in the table; returns whether it was `from`.
fn local_move(addr: usize, from: Local, to: Local) -> bool {
    let mut g = LOCAL.lock();
    match g.as_mut().and_then(|m| m.get_mut(&addr)) {
        Some(state) if *state == from => {
            *state = to;
            true
        }
        _ => false,
    }
}

/// Forgets the lock at `addr`: another thread of this PE may take it.
fn local_release(addr: usize) {
    let mut g = LOCAL.lock();
    if let Some(map) = g.as_mut() {
        map.remove(&addr);
    }
    LOCAL_CV.notify_all();
}

impl Runtime {
    fn lock_word(&self, lock: *mut i64, func: &'static str) -> Result<SymAddr> {
        let a = self.translate(lock as usize, 8, "lock", func)?;
        if !(lock as usize).is_multiple_of(8) {
            return Err(Error::new(self.me, func, ErrorKind::Misaligned { addr: lock as usize, width: 8 }));
        }
        if self.n > MAX_LOCK_PES {
            return Err(Error::new(
                self.me,
                func,
                ErrorKind::InvalidArgument(format!("locks support at most {MAX_LOCK_PES} PEs")),
            ));
        }
        Ok(a)
    }

    fn amo64(&self, pe: usize, a: SymAddr, op: AmoOp, func: &'static str) -> Result<u64> {
        self.atomic_sym(pe, a, Width::W64, op, func)
    }

    /// Replaces the tail field on PE 0 with `new` if it holds `expect` (any `expect` when
    /// `None`); returns the tail seen.
    fn swap_tail(&self, a: SymAddr, expect: Option<u64>, new: u64, func: &'static str) -> Result<u64> {
        let mut old = self.amo64(0, a, AmoOp::Fetch, func)?;
        loop {
            let tail = old & TAIL;
            if expect.is_some_and(|e| e != tail) {
                return Ok(tail);
            }
            let seen = self.amo64(0, a, AmoOp::CompareSwap { cond: old, value: (old & !TAIL) | new }, func)?;
            if seen == old {
                return Ok(tail);
            }
            old = seen;
        }
    }

    fn mine(&self, a: SymAddr) -> &AtomicU64 {
        // SAFETY: the lock word is a live, aligned symmetric long in our own segment, only
        // accessed atomically while the lock is in use.
        unsafe { AtomicU64::from_ptr(self.local_addr(a) as *mut u64) }
    }

    /// Joins the queue; returns once this PE holds the lock.
    fn mcs_acquire(&self, a: SymAddr, func: &'static str) -> Result<()> {
        let me1 = self.me as u64 + 1;
        self.mine(a).fetch_and(!(NEXT | GO), Ordering::SeqCst);
        let pred = self.swap_tail(a, None, me1, func)?;
        if pred == 0 {
            return Ok(());
        }
        self.amo64(pred as usize - 1, a, AmoOp::FetchOr(me1 << NEXT_SHIFT), func)?;
        let mut b = self.backoff();
        while self.mine(a).load(Ordering::Acquire) & GO == 0 {
            b.snooze();
        }
        Ok(())
    }

    /// Takes the lock only if nobody holds or waits for it.
    fn mcs_try(&self, a: SymAddr, func: &'static str) -> Result<bool> {
        self.mine(a).fetch_and(!(NEXT | GO), Ordering::SeqCst);
        Ok(self.swap_tail(a, Some(0), self.me as u64 + 1, func)? == 0)
    }

    /// Hands the lock to the next PE in the queue, or frees it.
    fn mcs_release(&self, a: SymAddr, func: &'static str) -> Result<()> {
        let me1 = self.me as u64 + 1;
        let mut next = (self.mine(a).load(Ordering::Acquire) & NEXT) >> NEXT_SHIFT;
        if next == 0 {
            if self.swap_tail(a, Some(me1), 0, func)? == me1 {
                return Ok(());
            }
            // Someone swapped the tail but has not linked behind us yet.
            let mut b = self.backoff();
            loop {
                next = (self.mine(a).load(Ordering::Acquire) & NEXT) >> NEXT_SHIFT;
                if next != 0 {
                    break;
                }
                b.snooze();
            }
        }
        self.mine(a).fetch_and(!NEXT, Ordering::SeqCst);
        self.amo64(next as usize - 1, a, AmoOp::FetchOr(GO), func).map(drop)
    }
}

/// `shmem_set_lock`: blocks until this PE holds the lock at `lock` (a symmetric `long`,
/// initially 0).
///
/// # Safety
/// `lock` is checked to be symmetric and aligned; it must be used only through these routines.
pub unsafe fn set_lock(lock: *mut i64) -> Result<()> {
    const F: &str = "shmem_set_lock";
    let rt = running(F)?;
    let a = rt.lock_word(lock, F)?;
    local_acquire(lock as usize, true);
    match rt.mcs_acquire(a, F) {
        Ok(()) => {
            local_move(lock as usize, Local::Taking, Local::Held);
            Ok(())
        }
        Err(e) => {
            local_release(lock as usize);
            Err(e)
        }
    }
}

/// `shmem_test_lock`: takes the lock if it is free; returns whether it did (the C routine
/// returns 0 when it did).
///
/// # Safety
/// As [`set_lock`].
pub unsafe fn test_lock(lock: *mut i64) -> Result<bool> {
    const F: &str = "shmem_test_lock";
    let rt = running(F)?;
    let a = rt.lock_word(lock, F)?;
    if !local_acquire(lock as usize, false) {
        return Ok(false);
    }
    match rt.mcs_try(a, F) {
        Ok(true) => {
            local_move(lock as usize, Local::Taking, Local::Held);
            Ok(true)
        }
        other => {
            local_release(lock as usize);
            other
        }
    }
}

/// `shmem_clear_lock`: releases the lock this PE holds (after a quiet, as the specification
/// requires, so that updates made under the lock are visible to the next holder). A lock this
/// PE does not hold (never taken, held by another PE, already cleared) is an error, at once.
///
/// # Safety
/// As [`set_lock`].
pub unsafe fn clear_lock(lock: *mut i64) -> Result<()> {
    const F: &str = "shmem_clear_lock";
    let rt = running(F)?;
    let a = rt.lock_word(lock, F)?;
    if !local_move(lock as usize, Local::Held, Local::Clearing) {
        return Err(Error::new(
            rt.me,
            F,
            ErrorKind::InvalidArgument(format!(
                "lock {:#x} is not held by this PE (clear only a lock that shmem_set_lock or a successful shmem_test_lock took)",
                lock as usize
            )),
        ));
    }
    // Until the hand-over is done no other thread of this PE may queue: the queue node is
    // the PE's.
    let r = rt.quiet_internal().and_then(|()| rt.mcs_release(a, F));
    local_release(lock as usize);
    r
}

/// A symmetric lock for the safe API; `lock()` returns a guard that releases on drop.
///
/// ```
/// # let shmem = oxshmem::init()?;
/// let lock = oxshmem::lock::SymLock::new(&shmem)?;
/// let counter = shmem.alloc(0u64)?;
/// {
///     let _held = lock.lock()?;
///     let v = counter.get_value(0)?;
///     counter.put_value(v + 1, 0)?;
/// }
/// # Ok::<(), oxshmem::Error>(())
/// ```
#[derive(Debug)]
pub struct SymLock(crate::SymBox<i64>);

impl SymLock {
    /// Allocates a lock (collective).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let lock = oxshmem::lock::SymLock::new(&shmem)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn new(shmem: &crate::Shmem) -> Result<SymLock> {
        Ok(SymLock(shmem.alloc(0i64)?))
    }

    /// Blocks until this PE holds the lock.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// # let lock = oxshmem::lock::SymLock::new(&shmem)?;
    /// let guard = lock.lock()?;
    /// drop(guard);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn lock(&self) -> Result<LockGuard<'_>> {
        // SAFETY: the lock word is a live symmetric long used only by these routines.
        unsafe { set_lock(self.0.as_ptr())? };
        Ok(LockGuard(self))
    }

    /// Takes the lock if it is free.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// # let lock = oxshmem::lock::SymLock::new(&shmem)?;
    /// if let Some(g) = lock.try_lock()? { drop(g); }
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn try_lock(&self) -> Result<Option<LockGuard<'_>>> {
        // SAFETY: as in lock.
        Ok(unsafe { test_lock(self.0.as_ptr())? }.then(|| LockGuard(self)))
    }
}

/// Holds a [`SymLock`]; releases it on drop.
#[derive(Debug)]
pub struct LockGuard<'a>(&'a SymLock);

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this PE holds the lock.
        if let Err(e) = unsafe { clear_lock(self.0.0.as_ptr()) } {
            eprintln!("{e}");
        }
    }
}
