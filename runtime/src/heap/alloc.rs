//! The deterministic symmetric allocator.
//!
//! Every PE runs this allocator on its own copy of the heap's bookkeeping. Because it is a pure
//! function of the sequence of calls (first fit over an ordered free list, no randomness, no
//! addresses, no time), the same collective call sequence yields the same offsets on every PE,
//! with no communication. It never touches the heap's memory itself; offsets are relative to
//! the start of the managed range.
//!
//! Public for other symmetric segments managed outside the runtime (the C library's GPU heap).

use std::collections::{BTreeMap, HashMap};

/// Every block starts on, and is a multiple of, one cache line: no two objects share a line,
/// so remote atomics on one never slow a neighbour, and every atomic type is aligned.
pub const MIN_ALIGN: usize = 64;

/// The allocator could not satisfy a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// Not enough contiguous space.
    Exhausted {
        /// Bytes asked for, rounded up to [`MIN_ALIGN`].
        asked: usize,
        /// Bytes free in all.
        free: usize,
        /// The largest free block.
        largest: usize,
    },
    /// The size overflows once rounded up.
    Overflow,
    /// Not the start of a live block.
    NotLive,
}

/// First-fit allocator over `[0, total)`.
#[derive(Debug)]
pub struct Allocator {
    total: usize,
    /// offset -> length of each free block; adjacent free blocks are always merged.
    free: BTreeMap<usize, usize>,
    /// offset -> length of each live block.
    live: HashMap<usize, usize>,
    free_bytes: usize,
}

fn round_up(x: usize, a: usize) -> Option<usize> {
    x.checked_add(a - 1).map(|v| v & !(a - 1))
}

impl Allocator {
    /// Manages `total` bytes (rounded down to `MIN_ALIGN`).
    pub fn new(total: usize) -> Self {
        let total = total & !(MIN_ALIGN - 1);
        let mut free = BTreeMap::new();
        if total > 0 {
            free.insert(0, total);
        }
        Allocator { total, free, live: HashMap::new(), free_bytes: total }
    }

    /// Bytes managed.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Bytes free.
    pub fn free_bytes(&self) -> usize {
        self.free_bytes
    }

    /// Largest contiguous free block.
    pub fn largest_free(&self) -> usize {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// Allocates `size` bytes (> 0) aligned to `align` (a power of two). Returns the offset.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<usize, AllocError> {
        debug_assert!(size > 0 && align.is_power_of_two());
        let align = align.max(MIN_ALIGN);
        let len = round_up(size, MIN_ALIGN).ok_or(AllocError::Overflow)?;
        let mut found = None;
        for (&off, &blen) in &self.free {
            let Some(start) = round_up(off, align) else {
                continue;
            };
            let pad = start - off;
            if blen >= pad && blen - pad >= len {
                found = Some((off, blen, start));
                break;
            }
        }
        let Some((off, blen, start)) = found else {
            return Err(AllocError::Exhausted { asked: len, free: self.free_bytes, largest: self.largest_free() });
        };
        self.free.remove(&off);
        if start > off {
            self.free.insert(off, start - off);
        }
        let end = start + len;
        if off + blen > end {
            self.free.insert(end, off + blen - end);
        }
        self.live.insert(start, len);
        self.free_bytes -= len;
        Ok(start)
    }

    /// Length of the live block at `off`.
    pub fn len_of(&self, off: usize) -> Option<usize> {
        self.live.get(&off).copied()
    }

    /// Frees the live block at `off`.
    pub fn free(&mut self, off: usize) -> Result<(), AllocError> {
        let len = self.live.remove(&off).ok_or(AllocError::NotLive)?;
        self.insert_free(off, len);
        self.free_bytes += len;
        Ok(())
    }

    fn insert_free(&mut self, mut off: usize, mut len: usize) {
        if let Some((&p, &plen)) = self.free.range(..off).next_back()
            && p + plen == off
        {
            self.free.remove(&p);
            off = p;
            len += plen;
        }
        if let Some(&nlen) = self.free.get(&(off + len)) {
            self.free.remove(&(off + len));
            len += nlen;
        }
        self.free.insert(off, len);
    }

    /// Grows or shrinks the live block at `off` in place if it can; returns whether it did.
    pub fn resize_in_place(&mut self, off: usize, size: usize) -> Result<bool, AllocError> {
        let cur = *self.live.get(&off).ok_or(AllocError::NotLive)?;
        let want = round_up(size.max(1), MIN_ALIGN).ok_or(AllocError::Overflow)?;
        if want <= cur {
            if want < cur {
                self.live.insert(off, want);
                self.insert_free(off + want, cur - want);
                self.free_bytes += cur - want;
            }
            return Ok(true);
        }
        let extra = want - cur;
        match self.free.get(&(off + cur)).copied() {
            Some(nlen) if nlen >= extra => {
                self.free.remove(&(off + cur));
                if nlen > extra {
                    self.free.insert(off + want, nlen - extra);
                }
                self.live.insert(off, want);
                self.free_bytes -= extra;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_and_coalesce() {
        let mut a = Allocator::new(4096);
        let x = a.alloc(1, 8).unwrap();
        let y = a.alloc(100, 8).unwrap();
        let z = a.alloc(64, 8).unwrap();
        assert_eq!((x, y, z), (0, 64, 192));
        assert_eq!(a.free_bytes(), 4096 - 256);
        a.free(y).unwrap();
        // A smaller block reuses the hole first.
        assert_eq!(a.alloc(10, 8).unwrap(), 64);
        a.free(64).unwrap();
        a.free(x).unwrap();
        a.free(z).unwrap();
        assert_eq!(a.free_bytes(), 4096);
        assert_eq!(a.largest_free(), 4096);
        assert_eq!(a.free.len(), 1, "all blocks merged back into one");
    }

    #[test]
    fn alignment() {
        let mut a = Allocator::new(1 << 16);
        a.alloc(1, 1).unwrap();
        let b = a.alloc(8, 4096).unwrap();
        assert_eq!(b % 4096, 0);
        // The gap in front of b is still usable.
        assert_eq!(a.alloc(8, 8).unwrap(), 64);
    }

    #[test]
    fn exhaustion_reports_sizes() {
        let mut a = Allocator::new(1024);
        a.alloc(512, 64).unwrap();
        match a.alloc(1000, 64) {
            Err(AllocError::Exhausted { asked, free, largest }) => {
                assert_eq!((asked, free, largest), (1024, 512, 512));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.alloc(usize::MAX - 10, 64), Err(AllocError::Overflow));
        assert_eq!(a.free(7), Err(AllocError::NotLive));
    }

    #[test]
    fn resize() {
        let mut a = Allocator::new(4096);
        let x = a.alloc(64, 64).unwrap();
        assert!(a.resize_in_place(x, 1000).unwrap());
        assert_eq!(a.len_of(x), Some(1024));
        let y = a.alloc(64, 64).unwrap();
        assert_eq!(y, 1024);
        assert!(!a.resize_in_place(x, 2000).unwrap());
        assert!(a.resize_in_place(x, 10).unwrap());
        assert_eq!(a.len_of(x), Some(64));
        assert_eq!(a.free_bytes(), 4096 - 128);
    }

    #[test]
    fn deterministic() {
        // Two allocators fed the same sequence agree at every step.
        let seq = [(100usize, 8usize), (4000, 64), (1, 1024), (77, 8), (9000, 4096)];
        let mut a = Allocator::new(1 << 20);
        let mut b = Allocator::new(1 << 20);
        for (i, &(s, al)) in seq.iter().enumerate() {
            let oa = a.alloc(s, al).unwrap();
            assert_eq!(oa, b.alloc(s, al).unwrap());
            if i % 2 == 1 {
                a.free(oa).unwrap();
                b.free(oa).unwrap();
            }
        }
    }
}
