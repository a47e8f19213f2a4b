//! Reductions (`and`, `or`, `xor`, `max`, `min`, `sum`, `prod`) over a team, for every type
//! OpenSHMEM 1.5 lists.
//!
//! Every member sends its contribution to every other member in mailbox-sized chunks and
//! combines what it receives; chunk 0 rides in the checked exchange, so a reduction that fits
//! one mailbox costs one cache-line trip. Larger reductions are pipelined: while this PE
//! combines chunk `c`, the others are already sending it chunk `c+1`. Each chunk of the result
//! is written only after this PE's own chunk was sent, so `dest` may alias `source`.

use bytemuck::{Pod, Zeroable};

use crate::coll::header::{Group, HDR, Header, kind, payload_of};
use crate::error::Result;
use crate::transport::SymAddr;
use crate::world::Runtime;

/// A reduction operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ReduceOp {
    /// Bitwise and.
    And = 1,
    /// Bitwise or.
    Or = 2,
    /// Bitwise xor.
    Xor = 3,
    /// Maximum.
    Max = 4,
    /// Minimum.
    Min = 5,
    /// Sum (wrapping for integers).
    Sum = 6,
    /// Product (wrapping for integers).
    Prod = 7,
}

pub(crate) fn op_name(op: u32) -> &'static str {
    match op {
        1 => "and",
        2 => "or",
        3 => "xor",
        4 => "max",
        5 => "min",
        6 => "sum",
        7 => "prod",
        _ => "?",
    }
}

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
int_reducible!(
    i8 = 1,
    u8 = 2,
    i16 = 3,
    u16 = 4,
    i32 = 5,
    u32 = 6,
    i64 = 7,
    u64 = 8,
    isize = 9,
    usize = 10
);

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
        let first = ((self.mb_capacity() - HDR) / es).min(count);
        let later = (self.mb_capacity() / es).max(1);
        let src_ptr = self.local_addr(src) as *const T;
        let dst_ptr = self.local_addr(dest) as *mut T;
        let mut hdr = Header::new(kind::REDUCE);
        hdr.op = op as u32;
        hdr.type_id = T::TYPE_ID;
        hdr.count = count as u64;
        // SAFETY: the payload is the first chunk of our own symmetric source.
        let recv = unsafe { self.exchange(g, hdr, func, |_| (src_ptr.cast(), first * es))? };
        let mut acc: Vec<T> = Vec::with_capacity(first.max(later.min(count)));
        // Chunk 0 from the exchange.
        // SAFETY: the first `first` elements of our own source.
        acc.extend_from_slice(unsafe { std::slice::from_raw_parts(src_ptr, first) });
        for r in recv.iter().flatten() {
            combine(op, &mut acc, payload_of(&r.1).cast());
        }
        self.release_all(g, &recv, func)?;
        // SAFETY: the first `first` elements of our own destination; our chunk 0 was sent.
        unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dst_ptr, first) };
        // Later chunks, in lock step.
        let mut start = first;
        while start < count {
            let len = later.min(count - start);
            for k in 1..n {
                let j = (g.me + k) % n;
                // SAFETY: elements start..start+len of our own source.
                unsafe {
                    self.mb_send(
                        g.slot,
                        g.members[j],
                        src_ptr.add(start).cast(),
                        len * es,
                        func,
                    )?
                };
            }
            acc.clear();
            // SAFETY: as above.
            acc.extend_from_slice(unsafe { std::slice::from_raw_parts(src_ptr.add(start), len) });
            for k in 1..n {
                let j = (g.me + n - k) % n;
                let mail = self.mb_recv(g.slot, g.members[j]);
                combine(op, &mut acc, mail.ptr.cast());
                self.mb_release(g.slot, g.members[j], mail, func)?;
            }
            // SAFETY: elements start..start+len of our own destination.
            unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dst_ptr.add(start), len) };
            start += len;
        }
        Ok(())
    }
}

/// `acc[i] = acc[i] op other[i]` for every element of `acc`.
#[inline]
fn combine<T: Reducible>(op: ReduceOp, acc: &mut [T], other: *const T) {
    for (i, a) in acc.iter_mut().enumerate() {
        // SAFETY: the message holds at least acc.len() elements; mailboxes are 64-byte aligned
        // and every chunk starts on an element boundary, but read unaligned to be safe.
        let b = unsafe { other.add(i).read_unaligned() };
        *a = T::apply(op, *a, b);
    }
}
