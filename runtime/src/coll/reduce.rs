//! Reductions (`and`, `or`, `xor`, `max`, `min`, `sum`, `prod`) over a team, for every type
//! OpenSHMEM 1.5 lists.
//!
//! A reduction that fits one mailbox rides in the checked exchange: every member sends its
//! contribution to every other and combines what it receives — one cache-line trip. Larger
//! reductions are a reduce-scatter and allgather in one pass: member `i` reads segment `i` of
//! every member's source (in 32 KiB chunks), combines it, and writes the result segment into
//! every member's destination; one signal per pair ends it. Each byte crosses between cores
//! about twice, whatever the team size. `dest` may alias `source` in both paths.

use bytemuck::{Pod, Zeroable};

use crate::coll::header::{Group, Header, Received, kind};
use crate::coll::wire::payload_of;
use crate::error::Result;
use crate::transport::SymAddr;
use crate::world::Runtime;

pub use crate::reduce_op::ReduceOp;

/// A complex number of `f32` or `f64` parts (C's `float _Complex` / `double _Complex`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Complex<T> {
    /// Real part.
    pub re: T,
    /// Imaginary part.
    pub im: T,
}

// SAFETY: Complex<f32>/Complex<f64> are repr(C) pairs of Pod floats with no padding.
unsafe impl Zeroable for Complex<f32> {}
// SAFETY: as above.
unsafe impl Pod for Complex<f32> {}
// SAFETY: as above.
unsafe impl Zeroable for Complex<f64> {}
// SAFETY: as above.
unsafe impl Pod for Complex<f64> {}

mod sealed {
    pub trait Sealed {}
}

/// Types a reduction can combine. Which operations a type supports follows the OpenSHMEM 1.5
/// reduction tables: integers all seven; floats max, min, sum, prod; complex sum and prod.
pub trait Reducible: Pod + sealed::Sealed {
    /// Identifies the type in the checked exchange (mismatched types are an error).
    const TYPE_ID: u32;
    /// Whether `op` is defined for this type.
    fn supports(op: ReduceOp) -> bool;
    /// `a op b`.
    fn apply(op: ReduceOp, a: Self, b: Self) -> Self;
}

/// Types that `and`, `or`, `xor` reductions take (integers).
pub trait BitwiseReducible: Reducible {}
/// Types that `max`, `min` reductions take (integers and floats).
pub trait MinMaxReducible: Reducible {}
/// Types that `sum`, `prod` reductions take (integers, floats, complex).
pub trait ArithReducible: Reducible {}

macro_rules! int_reducible {
    ($($t:ty = $id:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl Reducible for $t {
            const TYPE_ID: u32 = $id;
            fn supports(_: ReduceOp) -> bool { true }
            #[inline(always)]
            fn apply(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::And => a & b,
                    ReduceOp::Or => a | b,
                    ReduceOp::Xor => a ^ b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                }
            }
        }
        impl BitwiseReducible for $t {}
        impl MinMaxReducible for $t {}
        impl ArithReducible for $t {}
    )*};
}
int_reducible!(i8 = 1, u8 = 2, i16 = 3, u16 = 4, i32 = 5, u32 = 6, i64 = 7, u64 = 8, isize = 9, usize = 10);

macro_rules! float_reducible {
    ($($t:ty = $id:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl Reducible for $t {
            const TYPE_ID: u32 = $id;
            fn supports(op: ReduceOp) -> bool {
                matches!(op, ReduceOp::Max | ReduceOp::Min | ReduceOp::Sum | ReduceOp::Prod)
            }
            #[inline(always)]
            fn apply(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Max => if a > b { a } else { b },
                    ReduceOp::Min => if a < b { a } else { b },
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    _ => unreachable!("checked by supports()"),
                }
            }
        }
        impl MinMaxReducible for $t {}
        impl ArithReducible for $t {}
    )*};
}
float_reducible!(f32 = 11, f64 = 12);

macro_rules! complex_reducible {
    ($($t:ty = $id:expr),*) => {$(
        impl sealed::Sealed for Complex<$t> {}
        impl Reducible for Complex<$t> {
            const TYPE_ID: u32 = $id;
            fn supports(op: ReduceOp) -> bool {
                matches!(op, ReduceOp::Sum | ReduceOp::Prod)
            }
            #[inline(always)]
            fn apply(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => Complex { re: a.re + b.re, im: a.im + b.im },
                    ReduceOp::Prod => Complex { re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re },
                    _ => unreachable!("checked by supports()"),
                }
            }
        }
        impl ArithReducible for Complex<$t> {}
    )*};
}
complex_reducible!(f32 = 13, f64 = 14);

/// 16-bit floats: stored as binary16/bfloat16, each step computed in `f32` and rounded back
/// (what NVSHMEM's `half` and `bfloat16` reductions do).
macro_rules! half_reducible {
    ($($t:ty = $id:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl Reducible for $t {
            const TYPE_ID: u32 = $id;
            fn supports(op: ReduceOp) -> bool {
                matches!(op, ReduceOp::Max | ReduceOp::Min | ReduceOp::Sum | ReduceOp::Prod)
            }
            #[inline(always)]
            fn apply(op: ReduceOp, a: Self, b: Self) -> Self {
                let (x, y) = (a.to_f32(), b.to_f32());
                match op {
                    ReduceOp::Max => if x > y { a } else { b },
                    ReduceOp::Min => if x < y { a } else { b },
                    ReduceOp::Sum => <$t>::from_f32(x + y),
                    ReduceOp::Prod => <$t>::from_f32(x * y),
                    _ => unreachable!("checked by supports()"),
                }
            }
        }
        impl MinMaxReducible for $t {}
        impl ArithReducible for $t {}
    )*};
}
half_reducible!(half::f16 = 15, half::bf16 = 16);

/// Elements combined at a time by the large-reduction path (32 KiB of `u64`).
const CHUNK_BYTES: usize = 32 * 1024;

impl Runtime {
    /// Reduces `count` elements of `T` from `src` on every member into `dest` on every member.
    pub(crate) fn reduce<T: Reducible>(
        &self,
        g: Group<'_>,
        op: ReduceOp,
        dest: SymAddr,
        src: SymAddr,
        count: usize,
        func: &'static str,
    ) -> Result<()> {
        let n = g.n();
        let es = size_of::<T>().max(1);
        let small = count * es <= self.inline_max();
        let src_ptr = self.local_addr(src) as *const T;
        let dst_ptr = self.local_addr(dest) as *mut T;
        let mut hdr = Header::new(kind::REDUCE);
        hdr.op = op as u8;
        hdr.type_id = T::TYPE_ID;
        hdr.count = (count * es) as u64;
        let payload = |_| if small { (src_ptr.cast(), count * es) } else { (std::ptr::null(), 0) };
        let mut recv = Received::new();
        // SAFETY: the payload (small case) is our own symmetric source of count elements.
        unsafe { self.exchange(g, hdr, func, payload, &mut recv)? };
        if small {
            // Combine in member order 0..n on every PE, so that every PE computes the very same
            // floating-point result.
            let contribution = |j: usize| -> *const T {
                if j == g.me {
                    src_ptr
                } else {
                    payload_of(&recv[j].as_ref().expect("a message from every other member").1).cast()
                }
            };
            let bytes = count * es;
            let (d, s) = (dst_ptr as usize, src_ptr as usize);
            if (d == s && g.me < 2) || d + bytes <= s || s + bytes <= d {
                // Straight into the destination, with no staging buffer: our own contribution
                // does not overlap it, or is it exactly and is read in the first step (we are
                // member 0 or 1), each element before that element is written.
                // SAFETY: every contribution holds count elements (ours, or its message); dst
                // is our own destination of count elements; combine_into allows out == a or b.
                unsafe {
                    combine_into(op, dst_ptr, contribution(0), contribution(1 % n), count, n > 1);
                    for j in 2..n {
                        combine_into(op, dst_ptr, dst_ptr, contribution(j), count, true);
                    }
                }
                self.release_all(g, &recv, func)?;
                return Ok(());
            }
            // In place as member 2 or later (our source is read only at step g.me, after the
            // destination, the same memory, has been written), or a partial overlap: build
            // the result aside.
            // SAFETY: member 0's contribution holds count elements (ours, or its message).
            let mut acc: Vec<T> = (0..count).map(|i| unsafe { contribution(0).add(i).read_unaligned() }).collect();
            for j in 1..n {
                combine(op, &mut acc, contribution(j));
            }
            self.release_all(g, &recv, func)?;
            // SAFETY: our own destination of count elements; every contribution was copied.
            unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dst_ptr, count) };
            return Ok(());
        }
        self.release_all(g, &recv, func)?;
        // Large: member i computes segment i of the result from every member's source and
        // writes it into every member's destination. Segments are disjoint, so dest may alias
        // source: only member i reads segment i of any source, and only after all reads of it
        // does member i write segment i anywhere.
        let (lo, hi) = (count * g.me / n, count * (g.me + 1) / n);
        if hi > lo {
            // Every member's source segment and destination mapped here: combine straight from
            // the sources into our own destination, and copy that out (each byte read once
            // from where it lies, written once where it goes; no staging copies).
            let seg = |a: SymAddr, pe: usize| {
                let mut at = a;
                at.offset += lo * es;
                self.shm.ptr(pe, at, (hi - lo) * es)
            };
            let srcs: Option<Vec<*mut u8>> = g.members.iter().map(|&pe| seg(src, pe)).collect();
            let dsts: Option<Vec<*mut u8>> = g.members.iter().map(|&pe| seg(dest, pe)).collect();
            if let (Some(srcs), Some(dsts)) = (srcs, dsts) {
                // A chunk of the result is built in our own destination, or, when that
                // overlaps our source (in place: our source is still to be read there), in
                // `acc`, which stays in this core's cache.
                let chunk = (CHUNK_BYTES / es).max(1).min(hi - lo);
                let bytes = (hi - lo) * es;
                let (d, s) = (dsts[g.me] as usize, srcs[g.me] as usize);
                let in_place = d < s + bytes && s < d + bytes;
                let mut acc: Vec<T> = if in_place { vec![T::zeroed(); chunk] } else { Vec::new() };
                let mut start = 0;
                while start < hi - lo {
                    let len = chunk.min(hi - lo - start);
                    // SAFETY: every pointer is a mapped range of (hi - lo) elements (ptr()
                    // checked it); start + len stays inside; acc holds chunk >= len elements.
                    // Without acc, `out` overlaps none of the sources.
                    unsafe {
                        let at = |p: *mut u8| p.cast::<T>().add(start).cast_const();
                        let out = if in_place { acc.as_mut_ptr() } else { dsts[g.me].cast::<T>().add(start) };
                        combine_into(op, out, at(srcs[0]), at(srcs[1 % n]), len, n > 1);
                        for sj in srcs.iter().skip(2) {
                            combine_into(op, out, out, at(*sj), len, true);
                        }
                        for k in 0..n {
                            let j = (g.me + k) % n;
                            let to = dsts[j].cast::<T>().add(start);
                            if to != out {
                                std::ptr::copy_nonoverlapping(out, to, len);
                            }
                        }
                    }
                    start += len;
                }
                return self.reduce_done(g, func);
            }
        }
        let chunk = (CHUNK_BYTES / es).max(1);
        let mut acc: Vec<T> = Vec::with_capacity(chunk.min(hi - lo));
        let mut tmp: Vec<T> = vec![T::zeroed(); chunk.min(hi - lo)];
        let mut start = lo;
        while start < hi {
            let len = chunk.min(hi - start);
            // Member order 0..n, as in the small path.
            acc.clear();
            let mut at = src;
            at.offset += start * es;
            for j in 0..n {
                let from: *const T = if j == g.me {
                    // SAFETY: elements start..start+len of our own source.
                    unsafe { src_ptr.add(start) }
                } else {
                    // SAFETY: tmp holds len elements.
                    unsafe { self.get_raw(g.members[j], at, tmp.as_mut_ptr().cast(), len * es, func)? };
                    tmp.as_ptr()
                };
                if j == 0 {
                    // SAFETY: `from` holds len elements (our source, or tmp), and acc, empty, is
                    // a buffer of its own. No other agent writes our source during the
                    // reduction (OpenSHMEM: it may not change until the call returns), so a plain
                    // copy races nothing.
                    unsafe { copy_into(&mut acc, from, len) };
                } else {
                    combine(op, &mut acc, from);
                }
            }
            let mut d = dest;
            d.offset += start * es;
            for k in 0..n {
                let j = (g.me + k) % n;
                // SAFETY: acc holds len elements.
                unsafe { self.put_raw(g.members[j], d, acc.as_ptr().cast(), len * es, func)? };
            }
            start += len;
        }
        self.reduce_done(g, func)
    }

    /// The end of a large reduction: one signal to every member, and every member's signal
    /// (its segment is in our destination).
    fn reduce_done(&self, g: Group<'_>, func: &'static str) -> Result<()> {
        let n = g.n();
        for k in 1..n {
            self.sig_send(g.slot, g.members[(g.me + k) % n], func)?;
        }
        for k in 1..n {
            self.sig_wait(g.slot, g.members[(g.me + n - k) % n]);
        }
        Ok(())
    }
}

/// Appends `len` elements from `from` to `acc`, where `from` may be symmetric memory: a raw
/// copy (the `memcpy` a slice copy would be, vectorized), never a slice over the symmetric side
/// (the access rule of `crate::sym`), and byte-wise, as C callers may pass unaligned addresses.
///
/// # Safety
/// `from` must be valid for reads of `len` elements and not overlap `acc`'s buffer, and no other
/// thread of this process may write those elements during the call (a plain copy).
#[inline]
pub(crate) unsafe fn copy_into<T: Pod>(acc: &mut Vec<T>, from: *const T, len: usize) {
    acc.reserve(len);
    let have = acc.len();
    // SAFETY: reserved room for len more elements past `have`; `from` per the caller; T is Pod,
    // so the copied bytes are initialized elements.
    unsafe {
        std::ptr::copy_nonoverlapping(from.cast::<u8>(), acc.as_mut_ptr().add(have).cast::<u8>(), len * size_of::<T>());
        acc.set_len(have + len);
    }
}

/// `out[i] = a[i] op b[i]` (or `out[i] = a[i]` without `two`) for `len` elements, through raw
/// pointers: `out` may be `a` or `b` (each element is read before it is written), and any of
/// them may lie in another PE's memory, which other PEs write too (but not these elements
/// while this runs).
///
/// # Safety
/// Each pointer must be valid for `len` elements of `T` (reads; writes for `out`).
#[inline]
unsafe fn combine_into<T: Reducible>(op: ReduceOp, out: *mut T, a: *const T, b: *const T, len: usize, two: bool) {
    if !two {
        // SAFETY: per the caller; copy handles out == a.
        unsafe { std::ptr::copy(a, out, len) };
        return;
    }
    macro_rules! arms {
        ($($o:ident),*) => {
            match op {
                $(ReduceOp::$o => {
                    for i in 0..len {
                        // SAFETY: per the caller (unaligned: C callers may pass any address).
                        unsafe {
                            let v = T::apply(ReduceOp::$o, a.add(i).read_unaligned(), b.add(i).read_unaligned());
                            out.add(i).write_unaligned(v)
                        };
                    }
                })*
            }
        };
    }
    arms!(And, Or, Xor, Max, Min, Sum, Prod);
}

/// `acc[i] = acc[i] op other[i]` for every element of `acc`. The operation is matched once,
/// outside the loop, so each arm compiles to a tight (vectorizable) loop.
#[inline]
fn combine<T: Reducible>(op: ReduceOp, acc: &mut [T], other: *const T) {
    macro_rules! arms {
        ($($o:ident),*) => {
            match op {
                $(ReduceOp::$o => {
                    for (i, a) in acc.iter_mut().enumerate() {
                        // SAFETY: the message holds at least acc.len() elements; read unaligned
                        // because message payloads need not be aligned to T.
                        let b = unsafe { other.add(i).read_unaligned() };
                        *a = T::apply(ReduceOp::$o, *a, b);
                    }
                })*
            }
        };
    }
    arms!(And, Or, Xor, Max, Min, Sum, Prod);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::wire::type_name;
    use half::{bf16, f16};

    /// The names a mismatch error gives are those of the operations and types defined here.
    #[test]
    fn wire_names_are_those_of_the_operations_and_types() {
        use ReduceOp::*;
        for op in [And, Or, Xor, Max, Min, Sum, Prod] {
            assert_eq!(oxshmem_bootstrap::status::op_name(op as u8).unwrap(), format!("{op:?}").to_lowercase());
        }
        assert_eq!(type_name(i8::TYPE_ID), "i8");
        assert_eq!(type_name(usize::TYPE_ID), "usize");
        assert_eq!(type_name(f64::TYPE_ID), "f64");
        assert_eq!(type_name(Complex::<f32>::TYPE_ID), "Complex<f32>");
        assert_eq!(type_name(Complex::<f64>::TYPE_ID), "Complex<f64>");
    }

    /// The large reduce and scan paths copy their source chunk with `copy_into`: from an
    /// address C may leave unaligned for T (a slice there was undefined behaviour), while
    /// another thread writes the word right after the chunk (as a peer's signal beside its
    /// data) — both clean under Miri.
    #[test]
    fn copy_into_takes_unaligned_sources_beside_a_writer() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let words = Vec::leak(vec![0u64; 8]).as_mut_ptr();
        let expect: Vec<u64> = (0..5).map(|i| 0x0101_0101_0101_0101 * (i + 1)).collect();
        // SAFETY: bytes 1..41 and word 6 lie in the leaked block of 64 bytes.
        let (src, flag) = unsafe { (words.cast::<u8>().add(1).cast::<u64>(), AtomicU64::from_ptr(words.add(6))) };
        for (i, v) in expect.iter().enumerate() {
            // SAFETY: element i of the unaligned source, inside the block.
            unsafe { src.add(i).write_unaligned(*v) };
        }
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for r in 1..=8 {
                    flag.store(r, Ordering::Release);
                }
            });
            let mut acc = vec![7u64];
            // SAFETY: the source holds 5 elements, bytes 1..41, apart from `acc` and the flag.
            unsafe { copy_into(&mut acc, src, 5) };
            assert_eq!(acc[0], 7);
            assert_eq!(acc[1..], expect[..]);
        });
        assert_eq!(flag.load(Ordering::Acquire), 8);
    }

    #[test]
    fn half_types_combine_in_f32_and_round_back() {
        let (a, b) = (f16::from_f32(1.5), f16::from_f32(2.25));
        assert_eq!(f16::apply(ReduceOp::Sum, a, b), f16::from_f32(3.75));
        assert_eq!(f16::apply(ReduceOp::Prod, a, b), f16::from_f32(3.375));
        assert_eq!(f16::apply(ReduceOp::Max, a, b), b);
        assert_eq!(f16::apply(ReduceOp::Min, a, b), a);
        // 2048 + 1 is not a binary16 value: the f32 sum rounds to even.
        assert_eq!(f16::apply(ReduceOp::Sum, f16::from_f32(2048.0), f16::from_f32(1.0)), f16::from_f32(2048.0));
        let (c, d) = (bf16::from_f32(3.0), bf16::from_f32(-0.5));
        assert_eq!(bf16::apply(ReduceOp::Prod, c, d), bf16::from_f32(-1.5));
        assert!(!f16::supports(ReduceOp::Xor) && bf16::supports(ReduceOp::Sum));
        assert_eq!((type_name(f16::TYPE_ID), type_name(bf16::TYPE_ID)), ("f16", "bf16"));
    }
}
