//! [`SymSlice`] and [`SymBox`], the typed symmetric objects: allocation, collective free, and
//! the local accessors (which follow the access rule of the module documentation).

use std::marker::PhantomData;
use std::ops::Deref;

use bytemuck::Pod;

use super::handle::{Shmem, runtime};
use crate::error::{Error, ErrorKind, Result};
use crate::transport::{SymAddr, relaxed};
use crate::world::{Runtime, running};

impl Shmem {
    /// Allocates one symmetric `T` initialized to `value` on every PE (`shmem_malloc`; collective).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let counter = shmem.alloc(0u64)?;
    /// counter.add(1, 0)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn alloc<T: Pod>(&self, value: T) -> Result<SymBox<T>> {
        let s = self.alloc_slice(1, value)?;
        Ok(SymBox(s))
    }

    /// Allocates `len` symmetric elements, each set to `fill` (`shmem_malloc`; collective).
    /// `len` must be at least 1.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let buf = shmem.alloc_slice(1024, 0u8)?;
    /// assert_eq!(buf.len(), 1024);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn alloc_slice<T: Pod>(&self, len: usize, fill: T) -> Result<SymSlice<T>> {
        self.alloc_aligned(len, align_of::<T>(), fill)
    }

    /// Allocates `len` elements aligned to `align` bytes (`shmem_align`; collective).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let page = shmem.alloc_aligned(512, 4096, 0u64)?;
    /// assert_eq!(page.as_ptr() as usize % 4096, 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn alloc_aligned<T: Pod>(&self, len: usize, align: usize, fill: T) -> Result<SymSlice<T>> {
        const F: &str = "shmem_malloc";
        let rt = runtime(F)?;
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
            Error::new(
                rt.me,
                F,
                ErrorKind::InvalidSize { what: format!("{len} elements of {} bytes overflows", size_of::<T>()) },
            )
        })?;
        let addr = rt.sym_alloc(F, bytes, align.max(align_of::<T>()))?;
        let s = SymSlice::<T> { addr, sym: rt.translate(addr, bytes, "allocation", F)?, len, _t: PhantomData };
        for i in 0..len {
            // SAFETY: i < len, inside the fresh allocation, aligned for T; no other PE writes it
            // before the barrier below, but use the same atomic store as `write`.
            unsafe { relaxed::store(s.as_ptr().add(i), fill) };
        }
        // Every PE has filled its copy before any PE can put into it.
        rt.sync_all_internal(F)?;
        Ok(s)
    }
}

/// A symmetric array of `T`: the same `len` elements exist on every PE, at the same offset.
/// Dropping it frees it collectively (`shmem_free`), so every PE must drop it in the same order.
#[derive(Debug)]
pub struct SymSlice<T: Pod> {
    addr: usize,
    sym: SymAddr,
    len: usize,
    _t: PhantomData<T>,
}

// SAFETY: a SymSlice names memory shared by every thread of the process (and other processes);
// its safe accessors are atomic (`transport::relaxed`), its non-atomic ones `unsafe`, and T is
// Pod.
unsafe impl<T: Pod> Send for SymSlice<T> {}
// SAFETY: as above.
unsafe impl<T: Pod> Sync for SymSlice<T> {}

impl<T: Pod> Drop for SymSlice<T> {
    fn drop(&mut self) {
        // Freeing is collective (it begins with a barrier). While a panic unwinds, the other
        // PEs are not freeing in step, so joining a barrier would hang this PE (and release a
        // peer's barrier early): leave the block allocated; the process is ending.
        if std::thread::panicking() {
            return;
        }
        if let Ok(rt) = running("shmem_free")
            && let Err(e) = rt.sym_free("shmem_free", self.addr)
        {
            eprintln!("{e}");
        }
    }
}

impl<T: Pod> SymSlice<T> {
    /// Number of elements.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 0i32)?;
    /// assert_eq!(s.len(), 3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a symmetric object has at least one element.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert!(!shmem.alloc_slice(1, 0u8)?.is_empty());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The local address of element 0 (for raw and C interfaces).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(4, 0u32)?;
    /// assert!(!s.as_ptr().is_null());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn as_ptr(&self) -> *mut T {
        self.addr as *mut T
    }

    /// Frees collectively now, returning any error (dropping does the same, printing errors).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(4, 0u32)?;
    /// s.free()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn free(self) -> Result<()> {
        let me = std::mem::ManuallyDrop::new(self);
        running("shmem_free")?.sym_free("shmem_free", me.addr)
    }

    /// The symmetric location of element 0.
    pub(crate) fn sym(&self) -> SymAddr {
        self.sym
    }

    #[inline(always)]
    pub(super) fn range(&self, rt: &Runtime, at: usize, n: usize, func: &'static str) -> Result<SymAddr> {
        match at.checked_add(n) {
            Some(end) if end <= self.len => {
                Ok(SymAddr { seg: self.sym.seg, offset: self.sym.offset + at * size_of::<T>() })
            }
            _ => Err(self.out_of_bounds(rt, at, n, func)),
        }
    }

    /// The error of a range outside the object, out of line so that the data path of every
    /// operation that checks a range stays one straight run of code.
    #[cold]
    #[inline(never)]
    fn out_of_bounds(&self, rt: &Runtime, at: usize, n: usize, func: &'static str) -> Error {
        Error::new(rt.me, func, ErrorKind::OutOfBounds { start: at, end: at.saturating_add(n), len: self.len })
    }

    #[inline(always)]
    pub(crate) fn target(
        &self,
        pe: usize,
        at: usize,
        n: usize,
        func: &'static str,
    ) -> Result<(&'static Runtime, usize, SymAddr)> {
        let rt = running(func)?;
        let pe = rt.check_pe(pe, func)?;
        let a = self.range(rt, at, n, func)?;
        Ok((rt, pe, a))
    }

    fn local_check(&self, at: usize) -> *mut T {
        assert!(at < self.len, "index {at} out of range for a symmetric object of {} elements", self.len);
        // SAFETY: at < len, inside the allocation.
        unsafe { self.as_ptr().add(at) }
    }

    /// Reads local element `at` (a copy; panics if `at >= len`, like slice indexing): relaxed
    /// atomic, so it may race any other access (see [the memory model](crate::transport::relaxed)).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(2, 1u32)?;
    /// assert_eq!(s.read(1), 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn read(&self, at: usize) -> T {
        // SAFETY: local_check bounds the index; the element is aligned for T, and every
        // accessor that may race this load is atomic of the same width.
        unsafe { relaxed::load(self.local_check(at)) }
    }

    /// Writes local element `at` (panics if `at >= len`): relaxed atomic, as [`read`](Self::read).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(2, 0u32)?;
    /// s.write(0, 5);
    /// assert_eq!(s.read(0), 5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn write(&self, at: usize, value: T) {
        // SAFETY: as in read.
        unsafe { relaxed::store(self.local_check(at), value) }
    }

    /// Copies the local elements out, each with relaxed atomic loads (see [the memory
    /// model](crate::transport::relaxed)): safe against any concurrent writer, but elements
    /// written at the same time may come out old or new, and one larger than 8 bytes torn
    /// between its words — synchronise first (a barrier, or wait for the writer's signal) to
    /// see a peer's data. [`to_vec_unsync`](Self::to_vec_unsync) is the plain `memcpy`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 7u8)?;
    /// assert_eq!(s.to_vec(), vec![7, 7, 7]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn to_vec(&self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        // SAFETY: no slice over the symmetric side (the module's access rule): the allocation
        // holds len elements, aligned for T, which every racing accessor accesses atomically;
        // v's fresh buffer has room for len and cannot overlap it, and T is Pod, so the len
        // copied elements are initialized values.
        unsafe {
            relaxed::copy_out(self.as_ptr(), v.as_mut_ptr(), self.len);
            v.set_len(self.len);
        }
        v
    }

    /// [`to_vec`](Self::to_vec) as one plain `memcpy`, for bulk data a phase of the program
    /// owns (several times faster for 1 and 2-byte elements, whose atomic copy moves one
    /// element per access).
    ///
    /// # Safety
    /// No other thread of this process may write these elements during the call: no `write`,
    /// `fill` or `copy_from_slice` on another thread, no put or atomic to this PE from another
    /// thread, no CPU-target device thread storing into them. (Other processes' writes are the
    /// program's synchronisation to order, as for every copy; a racing one gives stale values.)
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 7u8)?;
    /// shmem.barrier_all()?;
    /// // SAFETY: this program's only thread is here, and no PE writes `s` before the next barrier.
    /// assert_eq!(unsafe { s.to_vec_unsync() }, vec![7, 7, 7]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub unsafe fn to_vec_unsync(&self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        // SAFETY: a raw copy, no slice over the symmetric side; sizes as in to_vec; no racing
        // writer in this process, per the caller.
        unsafe {
            std::ptr::copy_nonoverlapping(self.as_ptr(), v.as_mut_ptr(), self.len);
            v.set_len(self.len);
        }
        v
    }

    /// Copies `src` into the local elements `0..src.len()` (panics if longer than the object),
    /// each with relaxed atomic stores (see [the memory model](crate::transport::relaxed)):
    /// safe against any concurrent access; a peer reading meanwhile may see old or new
    /// elements. [`copy_from_slice_unsync`](Self::copy_from_slice_unsync) is the plain `memcpy`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 0u8)?;
    /// s.copy_from_slice(&[1, 2]);
    /// assert_eq!(s.to_vec(), [1, 2, 0]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn copy_from_slice(&self, src: &[T]) {
        assert!(src.len() <= self.len, "{} elements do not fit a symmetric object of {}", src.len(), self.len);
        // SAFETY: bounded above; no slice over the symmetric side (the module's access rule);
        // aligned for T, and every racing accessor is atomic. `src` cannot be a view of this
        // object: such a view (`as_slice`) forbids writes to it while it lives.
        unsafe { relaxed::copy_in(src.as_ptr(), self.as_ptr(), src.len()) };
    }

    /// [`copy_from_slice`](Self::copy_from_slice) as one plain `memmove`.
    ///
    /// # Safety
    /// No other thread of this process may read or write these elements during the call (as
    /// for [`to_vec_unsync`](Self::to_vec_unsync), and no `read` or `to_vec` either).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 0u8)?;
    /// // SAFETY: this program's only thread is here, and no PE accesses `s` before a barrier.
    /// unsafe { s.copy_from_slice_unsync(&[1, 2]) };
    /// assert_eq!(s.to_vec(), [1, 2, 0]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub unsafe fn copy_from_slice_unsync(&self, src: &[T]) {
        assert!(src.len() <= self.len, "{} elements do not fit a symmetric object of {}", src.len(), self.len);
        // SAFETY: bounded above; a raw copy, no slice over the symmetric side; no racing access
        // in this process, per the caller.
        unsafe { std::ptr::copy(src.as_ptr(), self.as_ptr(), src.len()) };
    }

    /// Sets every local element to `value` (relaxed atomic stores, as [`write`](Self::write)).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 0u8)?;
    /// s.fill(4);
    /// assert_eq!(s.to_vec(), [4, 4, 4]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn fill(&self, value: T) {
        for i in 0..self.len {
            self.write(i, value);
        }
    }

    /// The local elements as a slice: the one exception to the module's access rule, for a
    /// phase that owns the object exclusively. Prefer a guard type whose constructor is the
    /// synchronisation point and whose lifetime bounds this slice's.
    ///
    /// # Safety
    /// No other PE (or thread) may write these elements while the reference lives: the caller
    /// must have synchronized (barrier, wait, signal) so that no remote put is in flight.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 2u8)?;
    /// shmem.barrier_all()?;
    /// // SAFETY: no PE writes `s` until the next barrier.
    /// let sum: u32 = unsafe { s.as_slice() }.iter().map(|&x| u32::from(x)).sum();
    /// assert_eq!(sum, 6);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: the allocation holds len initialized Pod elements; the caller guarantees no
        // concurrent writer.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }

    /// The local elements as a mutable slice.
    ///
    /// # Safety
    /// As [`as_slice`](Self::as_slice), and no other reference to them may exist.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let mut s = shmem.alloc_slice(3, 0u8)?;
    /// // SAFETY: nobody else touches `s` here.
    /// unsafe { s.as_mut_slice() }.copy_from_slice(&[1, 2, 3]);
    /// assert_eq!(s.read(2), 3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub unsafe fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above; &mut self rules out other references through this handle.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr(), self.len) }
    }
}

/// One symmetric `T`: a [`SymSlice`] of length 1 with index-free shorthands. Everything a
/// `SymSlice` offers is available through `Deref` with index 0.
///
/// ```
/// # let shmem = oxshmem::init()?;
/// let x = shmem.alloc(5u64)?;
/// assert_eq!(x.get_value(0)?, 5);
/// x.put_value(6, shmem.my_pe())?;
/// assert_eq!(x.value(), 6);
/// # Ok::<(), oxshmem::Error>(())
/// ```
#[derive(Debug)]
pub struct SymBox<T: Pod>(pub(super) SymSlice<T>);

impl<T: Pod> Deref for SymBox<T> {
    type Target = SymSlice<T>;
    fn deref(&self) -> &SymSlice<T> {
        &self.0
    }
}

impl<T: Pod> SymBox<T> {
    /// The local value (a copy).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.alloc(3i8)?.value(), 3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn value(&self) -> T {
        self.0.read(0)
    }

    /// Sets the local value.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc(0u8)?;
    /// x.set_value(1);
    /// assert_eq!(x.value(), 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn set_value(&self, v: T) {
        self.0.write(0, v)
    }

    /// Stores `v` into this object on `pe` (`shmem_p`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc(0u32)?;
    /// x.put_value(4, 0)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn put_value(&self, v: T, pe: usize) -> Result<()> {
        self.0.p(0, v, pe)
    }

    /// Loads this object from `pe` (`shmem_g`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc(8u32)?;
    /// assert_eq!(x.get_value(0)?, 8);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn get_value(&self, pe: usize) -> Result<T> {
        self.0.g(0, pe)
    }

    /// Frees collectively now.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.alloc(0u8)?.free()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn free(self) -> Result<()> {
        self.0.free()
    }
}

/// The safe accessors against a second thread writing the same memory, the case that was a data
/// race while they were plain copies; run under Miri (`scripts/miri.sh`), which reports any race
/// (non-atomic, or atomic of mixed sizes) as undefined behaviour.
#[cfg(test)]
pub(super) mod tests {
    use std::mem::ManuallyDrop;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A `SymSlice` over a leaked local buffer of `len` elements (64-byte aligned, as the heap's
    /// objects are), never freed: the accessors need no runtime.
    pub(in crate::sym) fn local<T: Pod>(len: usize, fill: T) -> ManuallyDrop<SymSlice<T>> {
        let layout = std::alloc::Layout::from_size_align((len * size_of::<T>()).max(1), 64).unwrap();
        // SAFETY: a layout of non-zero size; the block is leaked (Miri runs ignore leaks).
        let addr = unsafe { std::alloc::alloc_zeroed(layout) } as usize;
        assert_ne!(addr, 0);
        let s = SymSlice::<T> { addr, sym: SymAddr { seg: 0, offset: 0 }, len, _t: PhantomData };
        s.fill(fill);
        ManuallyDrop::new(s)
    }

    const ROUNDS: u64 = 24;

    #[test]
    fn to_vec_and_read_race_write_and_fill() {
        let s = local(8, 0u64);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for r in 1..=ROUNDS {
                    s.write((r % 8) as usize, r);
                    s.fill(r);
                }
            });
            for _ in 0..ROUNDS {
                let v = s.to_vec();
                assert!(v.iter().all(|&x| x <= ROUNDS));
                assert!(s.read(3) <= ROUNDS);
            }
        });
        assert_eq!(s.to_vec(), [ROUNDS; 8]);
    }

    #[test]
    fn copy_from_slice_races_to_vec_for_bytes_and_wide_elements() {
        let b = local(13, 0u8);
        let w = local(5, [0u32; 3]);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for r in 1..=ROUNDS as u8 {
                    b.copy_from_slice(&[r; 13]);
                    w.copy_from_slice(&[[u32::from(r); 3]; 4]);
                }
            });
            for _ in 0..ROUNDS {
                assert!(b.to_vec().iter().all(|&x| u64::from(x) <= ROUNDS));
                // Each 4-byte word is atomic; a 12-byte element may mix rounds.
                assert!(w.to_vec().iter().flatten().all(|&x| u64::from(x) <= ROUNDS));
                assert!(w.read(4) == [0; 3]);
            }
        });
        assert_eq!(b.to_vec(), [ROUNDS as u8; 13]);
        assert_eq!(w.read(0), [ROUNDS as u32; 3]);
    }

    /// A put to this PE (`shmem_p`) and the AMOs store a 1, 2, 4 or 8-byte element as one
    /// atomic of its size: the accessors use that same size, so they do not race it.
    #[test]
    fn accessors_race_element_sized_atomics() {
        let s = local(4, 0u64);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for r in 1..=ROUNDS {
                    // SAFETY: element 2 of the live buffer, 8-byte aligned.
                    unsafe { AtomicU64::from_ptr(s.as_ptr().add(2)) }.fetch_add(1, Ordering::Relaxed);
                    // SAFETY: as above.
                    unsafe { AtomicU64::from_ptr(s.as_ptr()) }.store(r, Ordering::Release);
                }
            });
            let mut last = 0;
            for _ in 0..ROUNDS {
                let v = s.to_vec();
                assert!(v[0] >= last && v[2] <= ROUNDS);
                last = v[0];
                s.write(3, last);
            }
        });
        assert_eq!(s.to_vec()[..3], [ROUNDS, 0, ROUNDS]);
    }
}
