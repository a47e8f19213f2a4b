//! The shared-memory transport: peers on this host, reached through their mapped segments.
//!
//! Every PE maps every node peer's segments once at init. A put is a `memcpy` into the
//! mapping, a get a `memcpy` out of it, an atomic is the CPU's own atomic instruction on the
//! shared mapping — atomic against every other PE on the host, with no syscall anywhere.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

use super::{AmoOp, MAX_SEGMENTS, SymAddr, Transport, Width};
use crate::error::Result;
use crate::heap::segment::Mapping;

/// The mapped segments of every PE on this host.
#[derive(Debug)]
pub struct ShmTransport {
    n_pes: usize,
    /// `bases[pe * MAX_SEGMENTS + seg]`: where `pe`'s segment `seg` is mapped here; 0 if not.
    bases: Box<[usize]>,
    /// Lengths of each segment, same layout.
    lens: Box<[usize]>,
    /// Keeps the peers' mappings alive.
    _maps: Vec<Mapping>,
}

impl ShmTransport {
    pub(crate) fn new(n_pes: usize) -> Self {
        ShmTransport {
            n_pes,
            bases: vec![0; n_pes * MAX_SEGMENTS].into_boxed_slice(),
            lens: vec![0; n_pes * MAX_SEGMENTS].into_boxed_slice(),
            _maps: Vec::new(),
        }
    }

    /// Records that `pe`'s segment `seg` is at `base..base+len` in this process.
    pub(crate) fn set(&mut self, pe: usize, seg: usize, base: usize, len: usize) {
        self.bases[pe * MAX_SEGMENTS + seg] = base;
        self.lens[pe * MAX_SEGMENTS + seg] = len;
    }

    /// Keeps a mapping alive as long as the transport.
    pub(crate) fn keep(&mut self, m: Mapping) {
        self._maps.push(m);
    }

    /// Where `pe`'s segment `seg` is mapped in this process (0 when it is not).
    #[inline(always)]
    pub fn base(&self, pe: usize, seg: usize) -> usize {
        self.bases[pe * MAX_SEGMENTS + seg]
    }

    /// Length of `pe`'s segment `seg` as mapped here (0 when not mapped).
    pub fn len(&self, pe: usize, seg: usize) -> usize {
        self.lens.get(pe * MAX_SEGMENTS + seg).copied().unwrap_or(0)
    }

    /// The address of `a` on `pe` in this process, if mapped and `len` bytes fit.
    #[inline(always)]
    pub fn ptr(&self, pe: usize, a: SymAddr, len: usize) -> Option<*mut u8> {
        let i = pe * MAX_SEGMENTS + a.seg;
        let base = *self.bases.get(i)?;
        if base == 0 || a.offset.checked_add(len)? > self.lens[i] {
            return None;
        }
        Some((base + a.offset) as *mut u8)
    }
}

/// Performs `op` on the integer at `p`.
///
/// # Safety
/// `p` must be valid for atomic access of `width` bytes and aligned to it, for the duration of
/// the call, and every concurrent access to it must be atomic.
#[inline(always)]
pub unsafe fn atomic_at(p: *mut u8, width: Width, op: AmoOp) -> u64 {
    const O: Ordering = Ordering::SeqCst;
    match width {
        Width::W32 => {
            // SAFETY: the caller guarantees p is valid and 4-byte aligned for atomic access.
            let a = unsafe { AtomicU32::from_ptr(p.cast()) };
            let v = |x: u64| x as u32;
            u64::from(match op {
                AmoOp::Fetch => a.load(O),
                AmoOp::Set(x) => {
                    a.store(v(x), O);
                    0
                }
                AmoOp::Swap(x) => a.swap(v(x), O),
                AmoOp::CompareSwap { cond, value } => a.compare_exchange(v(cond), v(value), O, O).unwrap_or_else(|e| e),
                AmoOp::FetchAdd(x) => a.fetch_add(v(x), O),
                AmoOp::FetchAnd(x) => a.fetch_and(v(x), O),
                AmoOp::FetchOr(x) => a.fetch_or(v(x), O),
                AmoOp::FetchXor(x) => a.fetch_xor(v(x), O),
            })
        }
        Width::W64 => {
            // SAFETY: the caller guarantees p is valid and 8-byte aligned for atomic access.
            let a = unsafe { AtomicU64::from_ptr(p.cast()) };
            match op {
                AmoOp::Fetch => a.load(O),
                AmoOp::Set(x) => {
                    a.store(x, O);
                    0
                }
                AmoOp::Swap(x) => a.swap(x, O),
                AmoOp::CompareSwap { cond, value } => a.compare_exchange(cond, value, O, O).unwrap_or_else(|e| e),
                AmoOp::FetchAdd(x) => a.fetch_add(x, O),
                AmoOp::FetchAnd(x) => a.fetch_and(x, O),
                AmoOp::FetchOr(x) => a.fetch_or(x, O),
                AmoOp::FetchXor(x) => a.fetch_xor(x, O),
            }
        }
    }
}

impl ShmTransport {
    fn unmapped(&self, pe: usize, a: SymAddr, len: usize, func: &'static str) -> crate::Error {
        crate::Error::new(
            crate::world::my_pe_or_zero(),
            func,
            crate::ErrorKind::InvalidArgument(format!(
                "shm transport: PE {pe} segment {} offset {:#x} (+{len}) is not mapped here",
                a.seg, a.offset
            )),
        )
    }
}

impl Transport for ShmTransport {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn reaches(&self, pe: usize) -> bool {
        pe < self.n_pes && self.base(pe, 0) != 0
    }

    fn put(&self, func: &'static str, pe: usize, dst: SymAddr, src: &[u8]) -> Result<()> {
        let p = self.ptr(pe, dst, src.len()).ok_or_else(|| self.unmapped(pe, dst, src.len(), func))?;
        // SAFETY: ptr() checked that the whole range lies inside pe's live mapping; the source is
        // a distinct, valid slice (a symmetric range never overlaps a caller's borrowed slice
        // unless the caller put to itself, which copy handles as memmove).
        unsafe { std::ptr::copy(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    fn get(&self, func: &'static str, pe: usize, src: SymAddr, dst: &mut [u8]) -> Result<()> {
        let p = self.ptr(pe, src, dst.len()).ok_or_else(|| self.unmapped(pe, src, dst.len(), func))?;
        // SAFETY: as in put, the range is inside a live mapping.
        unsafe { std::ptr::copy(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn atomic(&self, func: &'static str, pe: usize, dst: SymAddr, width: Width, op: AmoOp) -> Result<u64> {
        let p = self.ptr(pe, dst, width.bytes()).ok_or_else(|| self.unmapped(pe, dst, width.bytes(), func))?;
        if !(p as usize).is_multiple_of(width.bytes()) {
            return Err(crate::Error::new(
                crate::world::my_pe_or_zero(),
                func,
                crate::ErrorKind::Misaligned { addr: p as usize, width: width.bytes() },
            ));
        }
        // SAFETY: in a live mapping, aligned, and all PEs access it atomically.
        Ok(unsafe { atomic_at(p, width, op) })
    }

    fn fence(&self) -> Result<()> {
        fence(Ordering::Release);
        Ok(())
    }

    fn quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        Ok(())
    }
}
