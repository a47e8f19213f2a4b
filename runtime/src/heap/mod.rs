//! The symmetric heap: segment 0 of every PE.
//!
//! One heap per PE, `SHMEM_SYMMETRIC_SIZE` bytes of address space backed by a memfd
//! (`segment.rs`), carved by the deterministic allocator (`alloc.rs`). Allocation is collective:
//! every PE makes the same calls in the same order and gets the same offset, and the routines
//! here end (or begin) with the barrier the OpenSHMEM specification requires.

pub(crate) mod alloc;
pub(crate) mod segment;
pub(crate) mod static_data;

use std::sync::Mutex;

use crate::error::{Error, ErrorKind, Result};
use crate::world::Runtime;
use alloc::{AllocError, Allocator};

/// The local heap's bookkeeping.
#[derive(Debug)]
pub(crate) struct Heap {
    pub(crate) base: usize,
    pub(crate) len: usize,
    alloc: Mutex<Allocator>,
}

impl Heap {
    pub(crate) fn new(base: usize, len: usize) -> Self {
        Heap { base, len, alloc: Mutex::new(Allocator::new(len)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Allocator> {
        // A panic while holding the lock leaves the allocator consistent (every mutation
        // completes before it can panic), so a poisoned lock is still usable.
        self.alloc.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn map_err(&self, pe: usize, func: &'static str, e: AllocError, size: usize) -> Error {
        let kind = match e {
            AllocError::Exhausted { asked, free, largest } => {
                ErrorKind::OutOfMemory { asked, free, largest, total: self.len }
            }
            AllocError::Overflow => ErrorKind::InvalidSize { what: format!("{size} bytes overflows") },
            AllocError::NotLive => ErrorKind::BadFree { addr: size },
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
        self.lock().alloc(size, align).map_err(|e| self.map_err(pe, func, e, size))
    }

    /// Frees locally (no barrier) the block starting at `addr`.
    pub(crate) fn free(&self, pe: usize, func: &'static str, addr: usize) -> Result<()> {
        let off = self.offset_of_block(pe, func, addr)?;
        self.lock().free(off).map_err(|e| self.map_err(pe, func, e, addr))
    }

    /// Length of the live block at `addr`.
    pub(crate) fn block_len(&self, pe: usize, func: &'static str, addr: usize) -> Result<usize> {
        let off = self.offset_of_block(pe, func, addr)?;
        self.lock().len_of(off).ok_or_else(|| Error::new(pe, func, ErrorKind::BadFree { addr }))
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
        self.lock().resize_in_place(off, size).map_err(|e| self.map_err(pe, func, e, size))
    }

    /// Bytes free.
    pub(crate) fn free_bytes(&self) -> usize {
        self.lock().free_bytes()
    }

    /// Bytes managed.
    pub(crate) fn total(&self) -> usize {
        self.lock().total()
    }
}

/// Hints accepted by `shmem_malloc_with_hints` (OpenSHMEM 1.5 §9.3.2).
pub const SHMEM_MALLOC_ATOMICS_REMOTE: u64 = 1 << 0;
/// The allocation will be used mostly for signals.
pub const SHMEM_MALLOC_SIGNAL_REMOTE: u64 = 1 << 1;

impl Runtime {
    /// Debug mode: check that every PE called the same allocation routine with the same size.
    fn check_collective(&self, func: &'static str, what: &str, value: u64) -> Result<()> {
        if !self.config.debug || self.n == 1 {
            return Ok(());
        }
        let mut blob = func.as_bytes().to_vec();
        blob.extend_from_slice(&value.to_le_bytes());
        let all =
            self.boot.allgather(&blob).map_err(|e| Error::new(self.me, func, ErrorKind::Bootstrap(e.to_string())))?;
        for (pe, b) in all.iter().enumerate() {
            if *b != blob {
                let theirs = b
                    .get(b.len().saturating_sub(8)..)
                    .and_then(|s| <[u8; 8]>::try_from(s).ok())
                    .map(u64::from_le_bytes)
                    .unwrap_or(0);
                let tf = String::from_utf8_lossy(&b[..b.len().saturating_sub(8)]).into_owned();
                return Err(Error::new(
                    self.me,
                    func,
                    ErrorKind::CollectiveMismatch(format!(
                        "this PE called {func} with {what} {value}, PE {pe} called {tf} with {theirs}"
                    )),
                ));
            }
        }
        Ok(())
    }

    /// Collective allocation: `shmem_malloc`, `shmem_align`, `shmem_malloc_with_hints`.
    pub(crate) fn sym_alloc(&self, func: &'static str, size: usize, align: usize) -> Result<usize> {
        self.check_collective(func, "size", size as u64)?;
        let r = self.heap.alloc(self.me, func, size, align).map(|off| self.heap.base + off);
        // The barrier comes after the allocation on every PE, so that no PE writes into the
        // new object before its owner has it, and on error too, so that no PE is left waiting.
        self.barrier_all_internal(func)?;
        r
    }

    /// Collective free: `shmem_free` (barrier first, so no PE still uses the block).
    pub(crate) fn sym_free(&self, func: &'static str, addr: usize) -> Result<()> {
        self.check_collective(func, "offset", addr.wrapping_sub(self.heap.base) as u64)?;
        self.barrier_all_internal(func)?;
        self.heap.free(self.me, func, addr)
    }

    /// Collective reallocation: `shmem_realloc`. Contents up to the smaller size are kept.
    pub(crate) fn sym_realloc(&self, func: &'static str, addr: usize, size: usize) -> Result<usize> {
        self.check_collective(func, "size", size as u64)?;
        self.barrier_all_internal(func)?;
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
