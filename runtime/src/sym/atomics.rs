//! Atomic memory operations on symmetric objects (`shmem_atomic_*`), and the [`SymBox`]
//! shorthands for them.

use bytemuck::Pod;

use super::{SymBox, SymSlice};
use crate::amo::{AmoInt, AmoType};
use crate::error::Result;
use crate::transport::AmoOp;

impl<T: Pod + AmoType> SymSlice<T> {
    #[inline(always)]
    fn amo(&self, at: usize, op: AmoOp, pe: usize, func: &'static str) -> Result<T> {
        let (rt, pe, a) = self.target(pe, at, 1, func)?;
        rt.atomic_sym(pe, a, T::WIDTH, op, func).map(T::from_bits)
    }

    /// Atomically reads element `at` on `pe` (`shmem_atomic_fetch`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 2.5f32)?;
    /// assert_eq!(x.atomic_fetch(0, 0)?, 2.5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn atomic_fetch(&self, at: usize, pe: usize) -> Result<T> {
        self.amo(at, AmoOp::Fetch, pe, "shmem_atomic_fetch")
    }

    /// Atomically writes element `at` on `pe` (`shmem_atomic_set`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0u64)?;
    /// x.atomic_set(0, 9, 0)?;
    /// assert_eq!(x.read(0), 9);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn atomic_set(&self, at: usize, value: T, pe: usize) -> Result<()> {
        self.amo(at, AmoOp::Set(value.to_bits()), pe, "shmem_atomic_set").map(drop)
    }

    /// Atomically exchanges element `at` on `pe`; returns the old value (`shmem_atomic_swap`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 1.0f64)?;
    /// assert_eq!(x.atomic_swap(0, 2.0, 0)?, 1.0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn atomic_swap(&self, at: usize, value: T, pe: usize) -> Result<T> {
        self.amo(at, AmoOp::Swap(value.to_bits()), pe, "shmem_atomic_swap")
    }

    /// Non-blocking atomic fetch (`shmem_atomic_fetch_nbi`); `fetch` is a borrowed local, so
    /// it holds the value on return.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 4i32)?;
    /// let mut v = 0;
    /// x.atomic_fetch_nbi(&mut v, 0, 0)?;
    /// assert_eq!(v, 4);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn atomic_fetch_nbi(&self, fetch: &mut T, at: usize, pe: usize) -> Result<()> {
        *fetch = self.amo(at, AmoOp::Fetch, pe, "shmem_atomic_fetch_nbi")?;
        Ok(())
    }

    /// Non-blocking atomic swap (`shmem_atomic_swap_nbi`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 4u32)?;
    /// let mut old = 0;
    /// x.atomic_swap_nbi(&mut old, 0, 5, 0)?;
    /// assert_eq!((old, x.read(0)), (4, 5));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn atomic_swap_nbi(&self, fetch: &mut T, at: usize, value: T, pe: usize) -> Result<()> {
        *fetch = self.amo(at, AmoOp::Swap(value.to_bits()), pe, "shmem_atomic_swap_nbi")?;
        Ok(())
    }
}

macro_rules! int_amos {
    ($( $(#[$doc:meta])* $name:ident / $nbi:ident ($($arg:ident),*) => $op:expr, $func:literal; )*) => {
        impl<T: Pod + AmoInt> SymSlice<T> {
            $(
                $(#[$doc])*
                pub fn $name(&self, at: usize, $($arg: T,)* pe: usize) -> Result<T> {
                    self.amo(at, $op, pe, $func)
                }

                #[doc = concat!("Non-blocking form of [`", stringify!($name), "`](Self::", stringify!($name), "); `fetch` holds the old value on return.")]
                pub fn $nbi(&self, fetch: &mut T, at: usize, $($arg: T,)* pe: usize) -> Result<()> {
                    *fetch = self.amo(at, $op, pe, concat!($func, "_nbi"))?;
                    Ok(())
                }
            )*
        }
    };
}

int_amos! {
    /// Compare-and-swap: writes `value` if element `at` on `pe` equals `cond`; returns the old
    /// value (`shmem_atomic_compare_swap`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 1i64)?;
    /// assert_eq!(x.atomic_compare_swap(0, 1, 5, 0)?, 1);
    /// assert_eq!(x.atomic_compare_swap(0, 1, 6, 0)?, 5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_compare_swap / atomic_compare_swap_nbi (cond, value) => AmoOp::CompareSwap { cond: cond.to_bits(), value: value.to_bits() }, "shmem_atomic_compare_swap";
    /// Adds one; returns the old value (`shmem_atomic_fetch_inc`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0u32)?;
    /// assert_eq!(x.atomic_fetch_inc(0, 0)?, 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_fetch_inc / atomic_fetch_inc_nbi () => AmoOp::FetchAdd(T::ONE.to_bits()), "shmem_atomic_fetch_inc";
    /// Adds `value`; returns the old value (`shmem_atomic_fetch_add`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 10i32)?;
    /// assert_eq!(x.atomic_fetch_add(0, -3, 0)?, 10);
    /// assert_eq!(x.read(0), 7);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_fetch_add / atomic_fetch_add_nbi (value) => AmoOp::FetchAdd(value.to_bits()), "shmem_atomic_fetch_add";
    /// Bitwise and; returns the old value (`shmem_atomic_fetch_and`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0b1100u64)?;
    /// assert_eq!(x.atomic_fetch_and(0, 0b0100, 0)?, 0b1100);
    /// assert_eq!(x.read(0), 0b0100);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_fetch_and / atomic_fetch_and_nbi (value) => AmoOp::FetchAnd(value.to_bits()), "shmem_atomic_fetch_and";
    /// Bitwise or; returns the old value (`shmem_atomic_fetch_or`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 1u32)?;
    /// assert_eq!(x.atomic_fetch_or(0, 2, 0)?, 1);
    /// assert_eq!(x.read(0), 3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_fetch_or / atomic_fetch_or_nbi (value) => AmoOp::FetchOr(value.to_bits()), "shmem_atomic_fetch_or";
    /// Bitwise xor; returns the old value (`shmem_atomic_fetch_xor`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 3i64)?;
    /// assert_eq!(x.atomic_fetch_xor(0, 1, 0)?, 3);
    /// assert_eq!(x.read(0), 2);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_fetch_xor / atomic_fetch_xor_nbi (value) => AmoOp::FetchXor(value.to_bits()), "shmem_atomic_fetch_xor";
}

macro_rules! int_amos_nofetch {
    ($( $(#[$doc:meta])* $name:ident ($($arg:ident),*) => $op:expr, $func:literal; )*) => {
        impl<T: Pod + AmoInt> SymSlice<T> {
            $(
                $(#[$doc])*
                pub fn $name(&self, at: usize, $($arg: T,)* pe: usize) -> Result<()> {
                    self.amo(at, $op, pe, $func).map(drop)
                }
            )*
        }
    };
}

int_amos_nofetch! {
    /// Adds one (`shmem_atomic_inc`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0u64)?;
    /// x.atomic_inc(0, 0)?;
    /// assert_eq!(x.read(0), 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_inc () => AmoOp::FetchAdd(T::ONE.to_bits()), "shmem_atomic_inc";
    /// Adds `value` (`shmem_atomic_add`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0i32)?;
    /// x.atomic_add(0, 5, 0)?;
    /// assert_eq!(x.read(0), 5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_add (value) => AmoOp::FetchAdd(value.to_bits()), "shmem_atomic_add";
    /// Bitwise and (`shmem_atomic_and`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 7u32)?;
    /// x.atomic_and(0, 2, 0)?;
    /// assert_eq!(x.read(0), 2);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_and (value) => AmoOp::FetchAnd(value.to_bits()), "shmem_atomic_and";
    /// Bitwise or (`shmem_atomic_or`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 1u32)?;
    /// x.atomic_or(0, 4, 0)?;
    /// assert_eq!(x.read(0), 5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_or (value) => AmoOp::FetchOr(value.to_bits()), "shmem_atomic_or";
    /// Bitwise xor (`shmem_atomic_xor`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 1u32)?;
    /// x.atomic_xor(0, 3, 0)?;
    /// assert_eq!(x.read(0), 2);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    atomic_xor (value) => AmoOp::FetchXor(value.to_bits()), "shmem_atomic_xor";
}

impl<T: Pod + AmoInt> SymBox<T> {
    /// Atomic fetch-and-add on `pe`'s copy (`shmem_atomic_fetch_add`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc(1u64)?;
    /// assert_eq!(x.fetch_add(2, 0)?, 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn fetch_add(&self, value: T, pe: usize) -> Result<T> {
        self.0.atomic_fetch_add(0, value, pe)
    }

    /// Atomic add on `pe`'s copy (`shmem_atomic_add`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc(1u64)?;
    /// x.add(2, 0)?;
    /// assert_eq!(x.value(), 3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn add(&self, value: T, pe: usize) -> Result<()> {
        self.0.atomic_add(0, value, pe)
    }
}
