//! The symmetric heap: segment 0 of every PE.
//!
//! One heap per PE, `SHMEM_SYMMETRIC_SIZE` bytes of address space backed by a memfd
//! (`segment.rs`), carved by the deterministic allocator (`alloc.rs`). Allocation is collective:
//! every PE makes the same calls in the same order and gets the same offset, and the routines
//! here end (or begin) with the barrier the OpenSHMEM specification requires.
//!
//! That barrier also checks, always, that the PEs are in step: each PE folds every collective
//! allocation call (routine, size or offset, alignment) into a running hash, and the barrier
//! carries it (`Runtime::barrier_all_checked`), so every PE learns whether all PEs passed the
//! same. When they did not, every PE undoes the call and returns `CollectiveMismatch`, naming
//! a PE that differs and both calls, which the PEs then exchange (off the allocation path).
//! `SHMEM_DEBUG` adds nothing to this check. It used to add a comparison through the
//! launcher's allgather before the call, which a PE in another collective never joined: a
//! mismatch that the barrier reports at once became a hang under debugging (issue 32).

pub mod alloc;
pub(crate) mod segment;
pub(crate) mod static_data;

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, ErrorKind, Result};
use crate::world::Runtime;
use alloc::{AllocError, Allocator};

/// The local heap's bookkeeping.
#[derive(Debug)]
pub(crate) struct Heap {
    pub(crate) base: usize,
    pub(crate) len: usize,
    /// A panic while it is held leaves the allocator consistent (every mutation completes
    /// before it can panic), and the lock usable (parking_lot's locks do not poison).
    alloc: Mutex<Allocator>,
    /// Running hash of the collective allocation calls every PE agreed on. Collective calls
    /// do not run concurrently on a PE (OpenSHMEM 1.5 §9.2), so plain loads and stores do.
    hash: AtomicU64,
}

/// One collective allocation call, as the PEs compare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Call {
    /// The routine, as [`routine_id`] gives it.
    routine: u64,
    /// Size asked (allocations) or offset freed.
    value: u64,
    /// Alignment asked (1 for none).
    align: u64,
    /// Anything else that must agree (the offset reallocated), hashed only.
    extra: u64,
}

/// The routines a [`Call`] names (by the name the runtime was given; others are "a collective
/// allocation routine").
const ROUTINES: [&str; 6] =
    ["shmem_malloc", "shmem_free", "shmem_calloc", "shmem_align", "shmem_malloc_with_hints", "shmem_realloc"];

/// A number for the routine `func` that tells the [`ROUTINES`] apart and costs no search: its
/// length and its seventh byte (`shmem_m`alloc, `shmem_c`alloc, ...).
#[inline(always)]
fn routine_id(func: &str) -> u64 {
    func.len() as u64 | u64::from(func.as_bytes().get(6).copied().unwrap_or(0)) << 8
}

impl Call {
    fn new(func: &str, value: u64, align: usize, extra: u64) -> Self {
        Call { routine: routine_id(func), value, align: align as u64, extra }
    }

    fn name(&self) -> &'static str {
        ROUTINES.iter().find(|r| routine_id(r) == self.routine).copied().unwrap_or("a collective allocation routine")
    }

    /// What `value` is.
    fn what(&self) -> &'static str {
        if self.name() == "shmem_free" { "offset" } else { "size" }
    }

    fn describe(&self) -> String {
        if self.name() == "shmem_free" && self.value == NOT_A_BLOCK {
            return "shmem_free with an address outside the symmetric heap".into();
        }
        let mut s = format!("{} with {} {}", self.name(), self.what(), self.value);
        if self.align > 1 {
            s += &format!(" and alignment {}", self.align);
        }
        s
    }
}

/// The running hash after `call`. Every call is checked, and a call that fails the check is
/// undone on every PE, so the PEs' hashes always agree before a call: what matters is that
/// two calls that differ give different hashes from the same previous one, which holds
/// whenever a single word of the calls differs (each word is spread by an odd multiplier, an
/// invertible map, and xor with the rotated previous hash is invertible too). The words are
/// spread independently of the previous hash, so only a rotation and a xor lie on the path
/// from one allocation to the next.
#[inline(always)]
fn fold(hash: u64, c: &Call) -> u64 {
    let d = c.routine
        ^ c.value.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ c.align.wrapping_mul(0xd6e8_feb8_6659_fd93).rotate_left(13)
        ^ c.extra.wrapping_add(1).wrapping_mul(0xc2b2_ae3d_27d4_eb4f).rotate_left(29);
    hash.rotate_left(23) ^ d
}

/// The value compared for an address outside the heap.
const NOT_A_BLOCK: u64 = u64::MAX;

/// Bytes of the record a PE writes when a call's check fails: `[hash, value, routine | align
/// << 16]` (the alignment saturated to 48 bits).
const RECORD: usize = 24;

impl Heap {
    pub(crate) fn new(base: usize, len: usize) -> Self {
        Heap { base, len, alloc: Mutex::new(Allocator::new(len)), hash: AtomicU64::new(0) }
    }

    /// The runtime's error for the allocator's failure `e` in `func`: `size_or_addr` is the
    /// size asked for, or the address of a block that is not live.
    fn alloc_error(&self, pe: usize, func: &'static str, e: AllocError, size_or_addr: usize) -> Error {
        let kind = match e {
            AllocError::Exhausted { asked, free, largest } => {
                ErrorKind::OutOfMemory { asked, free, largest, total: self.len }
            }
            AllocError::Overflow => ErrorKind::InvalidSize { what: format!("{size_or_addr} bytes overflows") },
            AllocError::NotLive => ErrorKind::BadFree { addr: size_or_addr },
        };
        Error::new(pe, func, kind)
    }

    /// Allocates locally (no barrier): the offset of a new block.
    pub(crate) fn alloc(&self, pe: usize, func: &'static str, size: usize, align: usize) -> Result<usize> {
        if size == 0 {
            return Err(Error::new(pe, func, ErrorKind::InvalidSize { what: "zero bytes".into() }));
        }
        if !align.is_power_of_two() || align > crate::world::HEAP_ALIGN {
            return Err(Error::new(pe, func, ErrorKind::BadAlignment { align }));
        }
        self.alloc.lock().alloc(size, align).map_err(|e| self.alloc_error(pe, func, e, size))
    }

    /// Frees locally (no barrier) the block starting at `addr`.
    pub(crate) fn free(&self, pe: usize, func: &'static str, addr: usize) -> Result<()> {
        let off = self.offset_of_block(pe, func, addr)?;
        self.alloc.lock().free(off).map_err(|e| self.alloc_error(pe, func, e, addr))
    }

    /// Length of the live block at `addr`.
    pub(crate) fn block_len(&self, pe: usize, func: &'static str, addr: usize) -> Result<usize> {
        let off = self.offset_of_block(pe, func, addr)?;
        self.alloc.lock().len_of(off).ok_or_else(|| Error::new(pe, func, ErrorKind::BadFree { addr }))
    }

    fn offset_of_block(&self, pe: usize, func: &'static str, addr: usize) -> Result<usize> {
        if addr < self.base || addr >= self.base + self.len {
            return Err(Error::new(pe, func, ErrorKind::BadFree { addr }));
        }
        Ok(addr - self.base)
    }

    /// Resizes in place if possible.
    pub(crate) fn resize_in_place(&self, pe: usize, func: &'static str, addr: usize, size: usize) -> Result<bool> {
        let off = self.offset_of_block(pe, func, addr)?;
        self.alloc.lock().resize_in_place(off, size).map_err(|e| self.alloc_error(pe, func, e, size))
    }

    /// Bytes free.
    pub(crate) fn free_bytes(&self) -> usize {
        self.alloc.lock().free_bytes()
    }

    /// Bytes managed.
    pub(crate) fn total(&self) -> usize {
        self.alloc.lock().total()
    }
}

/// Hints accepted by `shmem_malloc_with_hints` (OpenSHMEM 1.5 §9.3.2).
pub const SHMEM_MALLOC_ATOMICS_REMOTE: u64 = 1 << 0;
/// The allocation will be used mostly for signals.
pub const SHMEM_MALLOC_SIGNAL_REMOTE: u64 = 1 << 1;
/// Sandia OpenSHMEM's `SHMEMX_MALLOC_NO_BARRIER`: the program synchronizes before it uses the
/// allocation, so the library may leave out its barrier. Accepted; the barrier stays (it also
/// carries the check that every PE allocates alike), which the hint allows.
pub const SHMEMX_MALLOC_NO_BARRIER: u64 = 1 << 2;

/// `shmem_malloc_with_hints`: collective; `size` must be positive. Hints only advise
/// (OpenSHMEM 1.5 §9.3.2: "an implementation may ignore hints"), so bits this library does
/// not know are ignored like the ones it does, never a reason to fail; under `SHMEM_DEBUG` a
/// PE says so once.
///
/// ```
/// # let _shmem = oxshmem::init()?;
/// let p = oxshmem::heap::malloc_with_hints(64, !oxshmem::heap::SHMEM_MALLOC_ATOMICS_REMOTE)?;
/// assert!(!p.is_null());
/// # Ok::<(), oxshmem::Error>(())
/// ```
pub fn malloc_with_hints(size: usize, hints: u64) -> Result<*mut u8> {
    const F: &str = "shmem_malloc_with_hints";
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let rt = crate::world::running(F)?;
    let unknown = hints & !(SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE | SHMEMX_MALLOC_NO_BARRIER);
    if unknown != 0 && rt.config.debug && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("PE {}: {F}: ignored unknown hint bits {unknown:#x} (hints only advise; said once per PE)", rt.me);
    }
    rt.sym_alloc(F, size, 1).map(|a| a as *mut u8)
}

impl Runtime {
    /// The barrier of a collective allocation call, which checks that every PE makes the same
    /// `call` (see the module's documentation). On a mismatch, which every PE sees, returns
    /// the error each PE reports; the caller undoes what it did.
    fn checked_barrier(&self, func: &'static str, call: Call) -> Result<()> {
        if self.n == 1 {
            return self.barrier_all_internal(func);
        }
        let hash = fold(self.heap.hash.load(Ordering::Relaxed), &call);
        let (lo, hi) = self.barrier_all_checked(func, hash)?;
        if lo == hi {
            self.heap.hash.store(hash, Ordering::Relaxed);
            return Ok(());
        }
        Err(self.mismatch(func, hash, call))
    }

    /// The error for a call that not every PE made alike, naming the first PE whose call
    /// differs from ours. Every PE comes here together: the barrier's tag proved that all of
    /// them are in this very collective (the same routine, the same number on the world team),
    /// and all learnt the same smallest and largest keys. So each writes its call into its
    /// record only now, off the path of every allocation, and two barriers frame the reading:
    /// every record is written before anyone reads, and read before anyone can write again.
    #[cold]
    #[inline(never)]
    fn mismatch(&self, func: &'static str, hash: u64, call: Call) -> Error {
        let rec = [hash, call.value, call.routine | (call.align.min(u64::MAX >> 16) << 16)];
        let mine = self.local_addr(self.slots.alloc_record()) as *mut u64;
        for (k, w) in rec.iter().enumerate() {
            // SAFETY: the record is 64 aligned bytes of our own slot; peers only read it.
            unsafe { AtomicU64::from_ptr(mine.add(k)) }.store(*w, Ordering::Relaxed);
        }
        let mut other = None;
        if self.barrier_all_internal(func).is_ok() {
            for pe in (0..self.n).filter(|&p| p != self.me) {
                let mut r = [0u64; RECORD / 8];
                // SAFETY: r is a local of exactly the record's bytes.
                let got = unsafe {
                    self.get_raw(pe, self.slots.alloc_record(), r.as_mut_ptr().cast(), size_of_val(&r), func)
                };
                if got.is_err() || r[0] == hash {
                    continue;
                }
                let theirs = Call { routine: r[2] & 0xffff, value: r[1], align: r[2] >> 16, extra: 0 };
                let ours = Call { extra: 0, ..call };
                other = Some(if theirs != ours {
                    format!("PE {pe} called {}", theirs.describe())
                } else if call.name() == "shmem_realloc" {
                    format!("PE {pe} called {} on another block", theirs.describe())
                } else {
                    format!("PE {pe} made the same call, after a different sequence of collective allocation calls")
                });
                break;
            }
            let _ = self.barrier_all_internal(func);
        }
        let other = other.unwrap_or_else(|| "another PE called otherwise".into());
        Error::new(self.me, func, ErrorKind::CollectiveMismatch(format!("this PE called {}, {other}", call.describe())))
    }

    /// Collective allocation: `shmem_malloc`, `shmem_align`, `shmem_malloc_with_hints`.
    pub(crate) fn sym_alloc(&self, func: &'static str, size: usize, align: usize) -> Result<usize> {
        let r = self.heap.alloc(self.me, func, size, align).map(|off| self.heap.base + off);
        // The barrier comes after the allocation on every PE, so that no PE writes into the
        // new object before its owner has it, and on error too, so that no PE is left waiting.
        if let Err(e) = self.checked_barrier(func, Call::new(func, size as u64, align, 0)) {
            // Every PE undoes the call: the heaps stay as they were, in step.
            if let Ok(addr) = r {
                let _ = self.heap.free(self.me, func, addr);
            }
            return Err(e);
        }
        r
    }

    /// The offset of the block at `addr`, as the PEs compare it: [`NOT_A_BLOCK`] for an
    /// address outside the heap (each PE then reports it itself; where a stack or a `malloc`
    /// lies is no business of the others, and differs between them). An address inside the
    /// heap is symmetric: the same offset on every PE whether or not a block starts there.
    fn block_key(&self, addr: usize) -> u64 {
        let off = addr.wrapping_sub(self.heap.base);
        if off < self.heap.len { off as u64 } else { NOT_A_BLOCK }
    }

    /// Collective free: `shmem_free` (barrier first, so no PE still uses the block).
    pub(crate) fn sym_free(&self, func: &'static str, addr: usize) -> Result<()> {
        // Nothing is freed unless every PE frees the same block.
        self.checked_barrier(func, Call::new(func, self.block_key(addr), 1, 0))?;
        self.heap.free(self.me, func, addr)
    }

    /// Collective reallocation: `shmem_realloc`. Contents up to the smaller size are kept.
    pub(crate) fn sym_realloc(&self, func: &'static str, addr: usize, size: usize) -> Result<usize> {
        // Nothing changes unless every PE resizes the same block to the same size.
        self.checked_barrier(func, Call::new(func, size as u64, 1, self.block_key(addr)))?;
        let r = (|| {
            if size == 0 {
                return Err(Error::new(self.me, func, ErrorKind::InvalidSize { what: "zero bytes".into() }));
            }
            let old_len = self.heap.block_len(self.me, func, addr)?;
            if self.heap.resize_in_place(self.me, func, addr, size)? {
                return Ok(addr);
            }
            let new = self.heap.base + self.heap.alloc(self.me, func, size, 1)?;
            // SAFETY: both blocks are live, disjoint heap blocks of at least min(old, size) bytes.
            unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, new as *mut u8, old_len.min(size)) };
            self.heap.free(self.me, func, addr)?;
            Ok(new)
        })();
        self.barrier_all_internal(func)?;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_hash_tells_calls_apart() {
        let calls = [
            Call::new("shmem_malloc", 1024, 1, 0),
            Call::new("shmem_malloc", 2048, 1, 0),
            Call::new("shmem_align", 1024, 1, 0),
            Call::new("shmem_malloc", 1024, 64, 0),
            Call::new("shmem_malloc", 1024, 3, 0),
            Call::new("shmem_free", 1024, 1, 0),
            Call::new("shmem_realloc", 1024, 1, 64),
            Call::new("shmem_realloc", 1024, 1, 128),
        ];
        let hashes: Vec<u64> = calls.iter().map(|c| fold(0, c)).collect();
        for i in 0..hashes.len() {
            for j in 0..i {
                assert_ne!(hashes[i], hashes[j], "{:?} and {:?}", calls[i], calls[j]);
            }
        }
        // The same calls in another order are another sequence.
        assert_ne!(fold(fold(0, &calls[0]), &calls[1]), fold(fold(0, &calls[1]), &calls[0]));
        assert_eq!(fold(7, &calls[3]), fold(7, &Call::new("shmem_malloc", 1024, 64, 0)));
    }

    #[test]
    fn calls_describe_themselves() {
        assert_eq!(Call::new("shmem_malloc", 1024, 1, 0).describe(), "shmem_malloc with size 1024");
        assert_eq!(Call::new("shmem_align", 64, 4096, 0).describe(), "shmem_align with size 64 and alignment 4096");
        assert_eq!(Call::new("shmem_free", 640, 1, 0).describe(), "shmem_free with offset 640");
        assert_eq!(Call::new("shmem_foo", 1, 1, 0).name(), "a collective allocation routine");
        for r in ROUTINES {
            assert_eq!(Call::new(r, 1, 1, 0).name(), r);
        }
    }
}
