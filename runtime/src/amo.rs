//! Atomic memory operations on 32- and 64-bit integers, and fetch/set/swap on floats.
//!
//! On a mapped peer an AMO is the CPU's own atomic instruction on the shared mapping, so it is
//! atomic against every other PE of the host (and against the device layer's P2P path, which
//! uses the same instructions). The target must be naturally aligned; that is always checked.

use crate::error::{Error, ErrorKind, Result};
use crate::segment::{ForeignSegment, Route};
use crate::transport::shm::atomic_at;
use crate::transport::{AmoOp, SymAddr, Width};
use crate::world::{Runtime, running};

mod sealed {
    pub trait Sealed {}
}

/// Types with atomic fetch, set and swap (OpenSHMEM 1.5 Table 7/8: the standard and
/// extended AMO types): 32/64-bit integers and `f32`/`f64`.
pub trait AmoType: bytemuck::Pod + sealed::Sealed {
    /// Operand width.
    const WIDTH: Width;
    /// The value's bits, zero-extended.
    fn to_bits(self) -> u64;
    /// The value from (the low bits of) `b`.
    fn from_bits(b: u64) -> Self;
}

/// Integer AMO types: also compare-swap, add, inc and the bitwise operations.
pub trait AmoInt: AmoType + PartialEq {
    /// The value one.
    const ONE: Self;
}

macro_rules! amo_int {
    ($($t:ty : $w:ident as $u:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl AmoType for $t {
            const WIDTH: Width = Width::$w;
            #[inline(always)]
            fn to_bits(self) -> u64 { self as $u as u64 }
            #[inline(always)]
            fn from_bits(b: u64) -> Self { b as $u as $t }
        }
        impl AmoInt for $t { const ONE: Self = 1; }
    )*};
}
amo_int!(i32: W32 as u32, u32: W32 as u32, i64: W64 as u64, u64: W64 as u64, isize: W64 as u64, usize: W64 as u64);

impl sealed::Sealed for f32 {}
impl AmoType for f32 {
    const WIDTH: Width = Width::W32;
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
}
impl sealed::Sealed for f64 {}
impl AmoType for f64 {
    const WIDTH: Width = Width::W64;
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
}

impl Runtime {
    /// Performs `op` at `dst` on `pe`.
    #[inline(always)]
    pub(crate) fn atomic_sym(
        &self,
        pe: usize,
        dst: SymAddr,
        width: Width,
        op: AmoOp,
        func: &'static str,
    ) -> Result<u64> {
        let w = width.bytes();
        match self.shm.ptr(pe, dst, w) {
            Some(p) => {
                if !(p as usize).is_multiple_of(w) {
                    return Err(Error::new(
                        self.me,
                        func,
                        ErrorKind::Misaligned { addr: self.local_addr(dst), width: w },
                    ));
                }
                // SAFETY: p lies in pe's live mapping, is aligned, and every PE accesses AMO
                // targets atomically.
                Ok(unsafe { atomic_at(p, width, op) })
            }
            None => {
                if !self.local_addr(dst).is_multiple_of(w) {
                    return Err(Error::new(
                        self.me,
                        func,
                        ErrorKind::Misaligned { addr: self.local_addr(dst), width: w },
                    ));
                }
                self.net_for(pe, dst, w, func)?.atomic(func, pe, dst, width, op)
            }
        }
    }
}

/// An atomic on a registered segment: the word's alignment checked as on the heap.
#[cold]
pub(crate) fn foreign_atomic(
    rt: &Runtime,
    seg: &dyn ForeignSegment,
    pe: usize,
    dest: usize,
    width: Width,
    op: AmoOp,
    func: &'static str,
) -> Result<u64> {
    if !dest.is_multiple_of(width.bytes()) {
        return Err(Error::new(rt.me, func, ErrorKind::Misaligned { addr: dest, width: width.bytes() }));
    }
    seg.atomic(func, pe, dest, width, op)
}

/// Raw form of every AMO: performs `op` on the `T` at symmetric `dest` on `pe` and returns the
/// previous value (the C ABI's `shmem_TYPE_atomic_*` routines are thin wrappers of this).
///
/// # Safety
/// None beyond what is checked: `dest` must be symmetric and aligned (both checked).
#[inline]
pub unsafe fn atomic<T: AmoType>(dest: *mut T, op: AmoOp, pe: i32, func: &'static str) -> Result<T> {
    let rt = running(func)?;
    if pe < 0 || pe as usize >= rt.n {
        return Err(rt.pe_error(i128::from(pe), func));
    }
    match rt.route(dest as usize, size_of::<T>(), "destination", func)? {
        Route::Sym(d) => rt.atomic_sym(pe as usize, d, T::WIDTH, op, func).map(T::from_bits),
        Route::Foreign(s) => foreign_atomic(rt, &*s, pe as usize, dest as usize, T::WIDTH, op, func).map(T::from_bits),
    }
}

/// Raw non-blocking fetching AMO (`shmem_TYPE_atomic_fetch_*_nbi`): the previous value is
/// stored to `fetch`, valid after the next quiet.
///
/// # Safety
/// `fetch` must be valid for a write of `T` until the next quiet.
#[inline]
pub unsafe fn atomic_nbi<T: AmoType>(
    fetch: *mut T,
    dest: *mut T,
    op: AmoOp,
    pe: i32,
    func: &'static str,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let v = unsafe { atomic(dest, op, pe, func)? };
    // SAFETY: the caller guarantees fetch is writable.
    unsafe { fetch.write_unaligned(v) };
    Ok(())
}
