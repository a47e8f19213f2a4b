//! Element-wise relaxed atomic access to symmetric memory: what the safe local accessors
//! (`SymSlice::read`, `write`, `fill`, `to_vec`, `copy_from_slice`, the device API's
//! `DevPtr::read_local`) are made of.
//!
//! Symmetric memory may be written at any time by another thread of this process (a put to
//! this PE, a CPU-target device thread, another accessor), so a plain load or copy of it from
//! safe code would be a data race, which is undefined behaviour in Rust however the hardware
//! treats it. Here every access is a relaxed atomic load or store instead.
//!
//! **The memory model.** An element of `T` at address `p` is accessed as `size_of::<T>() / W`
//! relaxed atomic words of `W` bytes, `W` the largest of 8, 4, 2 and 1 that divides both
//! `size_of::<T>()` and `p` ([`width`]). For the 1, 2, 4 and 8-byte integers and floats, whose
//! addresses are naturally aligned, that is one atomic access per element — the width `p`
//! (`shmem_p`), the AMOs and the waits use, so those never mix access sizes with these. A larger
//! element (`Complex<f64>`, `[u32; 3]`) is several atomic words: a racing writer may leave it
//! torn between words, never undefined. Every element of one object has the same `W` (the
//! object's address and `size_of::<T>()` decide it), so two accessors never race with accesses
//! of different sizes. The accesses are relaxed: they order nothing. As in OpenSHMEM, ordering
//! comes from the program's synchronisation — `quiet`, `fence`, a barrier, a wait on a signal —
//! after which a load sees the writes that synchronisation covers.
//!
//! Atomic loads and stores compile to the ordinary `mov`s on x86-64 and aarch64, but the
//! compiler does not merge or vectorize them: a bulk copy moves one word of `W` bytes per
//! access (one 8-byte word per access for `u64`, one byte for `u8`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64};

use bytemuck::Pod;

/// The width in bytes (8, 4, 2 or 1) of the atomic words an element of `T` at `p` is accessed
/// as: the largest that divides both the element's size and its address. Elements `p.add(i)`
/// all have the width of `p`, as the size is a multiple of it.
#[inline(always)]
pub fn width<T>(p: *const T) -> usize {
    let m = size_of::<T>() | p as usize | 8;
    m & m.wrapping_neg()
}

macro_rules! by_width {
    ($w:expr, $body:ident) => {
        match $w {
            8 => $body!(AtomicU64, u64),
            4 => $body!(AtomicU32, u32),
            2 => $body!(AtomicU16, u16),
            _ => $body!(AtomicU8, u8),
        }
    };
}

/// Copies `n` elements out of symmetric memory at `src` into `dst`, element-wise relaxed atomic
/// (see the module documentation).
///
/// # Safety
/// `src` must be valid for reads of `n` elements and aligned for `T`, and every access to them
/// that may race this one must be atomic (through this module, or an atomic of the element's
/// width); `dst` must be valid for writes of `n` elements (it need not be aligned beyond `T`)
/// and must not overlap `src`.
#[inline]
pub unsafe fn copy_out<T: Pod>(src: *const T, dst: *mut T, n: usize) {
    let bytes = n * size_of::<T>();
    macro_rules! words {
        ($a:ty, $u:ty) => {{
            let (s, d) = (src.cast::<$u>(), dst.cast::<$u>());
            for i in 0..bytes / size_of::<$u>() {
                // SAFETY: per the caller, word i lies inside `src`, aligned to the width (see
                // `width`), and is accessed atomically by everyone who may race us; word i of
                // `dst` is inside it (written unaligned: `dst` is only aligned for T).
                unsafe { d.add(i).write_unaligned(<$a>::from_ptr(s.add(i).cast_mut()).load(Relaxed)) };
            }
        }};
    }
    by_width!(width(src), words)
}

/// Copies `n` elements from `src` into symmetric memory at `dst`, element-wise relaxed atomic
/// (see the module documentation).
///
/// # Safety
/// `dst` must be valid for writes of `n` elements and aligned for `T`, and every access to them
/// that may race this one must be atomic; `src` must be valid for reads of `n` elements (it need
/// not be aligned beyond `T`) and must not be written meanwhile.
#[inline]
pub unsafe fn copy_in<T: Pod>(src: *const T, dst: *mut T, n: usize) {
    let bytes = n * size_of::<T>();
    macro_rules! words {
        ($a:ty, $u:ty) => {{
            let (s, d) = (src.cast::<$u>(), dst.cast::<$u>());
            for i in 0..bytes / size_of::<$u>() {
                // SAFETY: as in copy_out, with the roles swapped.
                unsafe { <$a>::from_ptr(d.add(i)).store(s.add(i).read_unaligned(), Relaxed) };
            }
        }};
    }
    by_width!(width(dst), words)
}

/// Loads one element of symmetric memory (relaxed atomic words, see the module documentation).
///
/// # Safety
/// As for [`copy_out`] with `n == 1`.
#[inline(always)]
pub unsafe fn load<T: Pod>(p: *const T) -> T {
    let mut v = T::zeroed();
    // SAFETY: per the caller; v is a live local, distinct from p.
    unsafe { copy_out(p, &raw mut v, 1) };
    v
}

/// Stores one element into symmetric memory (relaxed atomic words, see the module
/// documentation).
///
/// # Safety
/// As for [`copy_in`] with `n == 1`.
#[inline(always)]
pub unsafe fn store<T: Pod>(p: *mut T, v: T) {
    // SAFETY: per the caller; v is a live local, distinct from p.
    unsafe { copy_in(&raw const v, p, 1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_is_the_largest_dividing_size_and_address() {
        let a = [0u64; 4];
        let p = a.as_ptr();
        assert_eq!(width(p), 8);
        assert_eq!(width(p.cast::<u32>()), 4);
        assert_eq!(width(p.cast::<u8>()), 1);
        assert_eq!(width(p.cast::<[u8; 16]>()), 8);
        assert_eq!(width(p.cast::<u8>().wrapping_add(4).cast::<[u8; 8]>()), 4);
        assert_eq!(width(p.cast::<[u16; 3]>()), 2);
        assert_eq!(width(p.cast::<()>()), 8);
    }

    #[test]
    fn copies_round_trip_every_width() {
        let mut mem = [0u64; 8];
        let base = mem.as_mut_ptr().cast::<u8>();
        let src: Vec<u8> = (0..48).collect();
        // SAFETY: every range below lies inside `mem` (64 bytes) and nothing else touches it.
        unsafe {
            copy_in(src.as_ptr(), base, 48);
            let mut out = vec![0u8; 48];
            copy_out(base, out.as_mut_ptr(), 48);
            assert_eq!(out, src);
            let d = base.add(2).cast::<[u8; 6]>(); // width 2
            store(d, [9, 8, 7, 6, 5, 4]);
            assert_eq!(load(d), [9, 8, 7, 6, 5, 4]);
            let q = base.add(8).cast::<[u32; 3]>(); // width 4
            store(q, [1, 2, 3]);
            assert_eq!(load(q), [1, 2, 3]);
            let w = base.add(16).cast::<f64>(); // width 8
            store(w, 2.5);
            assert_eq!(load(w), 2.5);
        }
    }
}
