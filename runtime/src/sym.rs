//! The safe Rust API: the [`Shmem`] handle and typed symmetric objects.
//!
//! A [`SymSlice<T>`] (and its one-element form [`SymBox<T>`]) can only be made by a
//! collective allocation, so safe code cannot name a non-symmetric address. Element indices
//! are checked against the object's length and PE numbers against the job, and both give an
//! [`Error`], never a wild access. Elements are [`bytemuck::Pod`]: any bytes another PE writes
//! are a valid value.
//!
//! Remote PEs may write into a symmetric object at any time; that is the point of it. The safe
//! local accessors ([`SymSlice::read`], [`SymSlice::write`], [`SymSlice::to_vec`], ...) copy
//! elements in and out instead of handing out references, so no Rust reference ever aliases
//! memory another process is writing. [`SymSlice::as_slice`] gives a reference, and is
//! `unsafe` for exactly that reason.

use std::marker::PhantomData;
use std::ops::Deref;

use bytemuck::Pod;

use crate::amo::{AmoInt, AmoType};
use crate::error::{Error, ErrorKind, Result};
use crate::transport::{AmoOp, SymAddr};
use crate::wait::{Backoff, Cmp, CmpValues, SyncType};
use crate::world::{NodeLayout, Runtime, ThreadLevel, rt};

/// A handle to the initialized runtime; cheap to copy, usable from any thread.
///
/// ```
/// let shmem = oxshmem::init()?;
/// assert!(shmem.my_pe() < shmem.n_pes());
/// shmem.barrier_all()?;
/// # Ok::<(), oxshmem::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Shmem {
    me: usize,
    n: usize,
}

/// Initializes the runtime (`shmem_init`): collective over all PEs. A program started without
/// a launcher is PE 0 of 1. Calling it twice is an error.
///
/// ```
/// let shmem = oxshmem::init()?;
/// println!("PE {} of {}", shmem.my_pe(), shmem.n_pes());
/// # Ok::<(), oxshmem::Error>(())
/// ```
pub fn init() -> Result<Shmem> {
    init_thread(ThreadLevel::Single).map(|(s, _)| s)
}

/// Initializes the runtime asking for a thread level (`shmem_init_thread`); returns the handle
/// and the level provided (this runtime always provides [`ThreadLevel::Multiple`] when asked).
///
/// ```
/// use oxshmem::ThreadLevel;
/// let (shmem, level) = oxshmem::init_thread(ThreadLevel::Multiple)?;
/// assert_eq!(level, ThreadLevel::Multiple);
/// # Ok::<(), oxshmem::Error>(())
/// ```
pub fn init_thread(level: ThreadLevel) -> Result<(Shmem, ThreadLevel)> {
    let provided = crate::world::init_runtime_checked(level, false, None)?;
    let rt = rt("shmem_init")?;
    Ok((Shmem { me: rt.me, n: rt.n }, provided))
}

/// The handle of the runtime already initialized (by [`init`] or a raw/C `shmem_init`).
///
/// ```
/// let shmem = oxshmem::init()?;
/// assert_eq!(oxshmem::current()?.my_pe(), shmem.my_pe());
/// # Ok::<(), oxshmem::Error>(())
/// ```
pub fn current() -> Result<Shmem> {
    let rt = rt("shmem_current")?;
    Ok(Shmem { me: rt.me, n: rt.n })
}

fn runtime(func: &'static str) -> Result<&'static Runtime> {
    rt(func)
}

impl Shmem {
    /// This PE's number (`shmem_my_pe`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let me = shmem.my_pe();
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn my_pe(&self) -> usize {
        self.me
    }

    /// Number of PEs in the job (`shmem_n_pes`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let right = (shmem.my_pe() + 1) % shmem.n_pes();
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn n_pes(&self) -> usize {
        self.n
    }

    /// Where the PEs live: node of each PE, host names, the PEs sharing this host.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let layout = shmem.layout()?;
    /// assert!(layout.local_pes.contains(&shmem.my_pe()));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn layout(&self) -> Result<NodeLayout> {
        Ok(runtime("shmem_layout")?.layout.clone())
    }

    /// The thread level provided at init (`shmem_query_thread`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let level = shmem.query_thread()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn query_thread(&self) -> Result<ThreadLevel> {
        Ok(runtime("shmem_query_thread")?.thread_level)
    }

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
            // SAFETY: i < len, inside the fresh allocation; no other PE writes it before the
            // barrier of the next collective call, but use the same copying store as `write`.
            unsafe { s.as_ptr().add(i).write_volatile(fill) };
        }
        // Every PE has filled its copy before any PE can put into it.
        rt.sync_all_internal(F)?;
        Ok(s)
    }

    /// `shmem_barrier_all`: completes this PE's operations, then waits for every PE.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.barrier_all()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn barrier_all(&self) -> Result<()> {
        runtime("shmem_barrier_all")?.barrier_all_internal("shmem_barrier_all")
    }

    /// `shmem_sync_all`: waits for every PE, without completing outstanding operations.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.sync_all()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn sync_all(&self) -> Result<()> {
        runtime("shmem_sync_all")?.sync_all_internal("shmem_sync_all")
    }

    /// `shmem_fence`: this PE's puts and AMOs to each PE are delivered in order around it.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.fence()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn fence(&self) -> Result<()> {
        crate::order::fence_all()
    }

    /// `shmem_quiet`: every put and AMO this PE issued is complete and visible.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.quiet()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn quiet(&self) -> Result<()> {
        crate::order::quiet()
    }

    /// `shmem_pe_accessible`: whether `pe` is reachable from here.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert!(shmem.pe_accessible(shmem.my_pe()));
    /// assert!(!shmem.pe_accessible(shmem.n_pes()));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn pe_accessible(&self, pe: usize) -> bool {
        i32::try_from(pe).is_ok_and(crate::rma::pe_accessible)
    }

    /// `shmem_finalize`: collective; releases the runtime. Symmetric objects must not be used
    /// afterwards (their drop then does nothing).
    ///
    /// ```no_run
    /// let shmem = oxshmem::init()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn finalize(self) -> Result<()> {
        crate::world::finalize_runtime()
    }

    /// `shmem_global_exit`: ends the whole job with `status`, from any one PE.
    ///
    /// ```no_run
    /// # let shmem = oxshmem::init()?;
    /// shmem.global_exit(3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn global_exit(&self, status: i32) -> ! {
        crate::world::global_exit(status)
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
// all access goes through copying loads/stores or atomics, and T is Pod.
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
        if let Ok(rt) = rt("shmem_free")
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
        rt("shmem_free")?.sym_free("shmem_free", me.addr)
    }

    /// The symmetric location of element 0.
    pub(crate) fn sym(&self) -> SymAddr {
        self.sym
    }

    #[inline(always)]
    fn range(&self, rt: &Runtime, at: usize, n: usize, func: &'static str) -> Result<SymAddr> {
        match at.checked_add(n) {
            Some(end) if end <= self.len => {
                Ok(SymAddr { seg: self.sym.seg, offset: self.sym.offset + at * size_of::<T>() })
            }
            _ => Err(Error::new(
                rt.me,
                func,
                ErrorKind::OutOfBounds { start: at, end: at.saturating_add(n), len: self.len },
            )),
        }
    }

    #[inline(always)]
    pub(crate) fn target(
        &self,
        pe: usize,
        at: usize,
        n: usize,
        func: &'static str,
    ) -> Result<(&'static Runtime, usize, SymAddr)> {
        let rt = rt(func)?;
        let pe = rt.check_pe(pe, func)?;
        let a = self.range(rt, at, n, func)?;
        Ok((rt, pe, a))
    }

    /// Copies `src` into elements `at..at+src.len()` on `pe` (`shmem_put`). Blocking: `src`
    /// may be reused at once; delivery is complete after the next quiet or barrier.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let dst = shmem.alloc_slice(4, 0u32)?;
    /// let right = (shmem.my_pe() + 1) % shmem.n_pes();
    /// dst.put(0, &[1, 2, 3, 4], right)?;
    /// shmem.barrier_all()?;
    /// assert_eq!(dst.to_vec(), [1, 2, 3, 4]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn put(&self, at: usize, src: &[T], pe: usize) -> Result<()> {
        const F: &str = "shmem_put";
        let (rt, pe, a) = self.target(pe, at, src.len(), F)?;
        // SAFETY: src is a valid slice of exactly the bytes written.
        unsafe { rt.put_raw(pe, a, src.as_ptr().cast(), size_of_val(src), F) }
    }

    /// Non-blocking put (`shmem_put_nbi`): delivered by the next quiet. The source is consumed
    /// before return, so `src` may be reused at once.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let dst = shmem.alloc_slice(2, 0u64)?;
    /// dst.put_nbi(0, &[7, 8], shmem.my_pe())?;
    /// shmem.quiet()?;
    /// assert_eq!(dst.read(1), 8);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn put_nbi(&self, at: usize, src: &[T], pe: usize) -> Result<()> {
        const F: &str = "shmem_put_nbi";
        let (rt, pe, a) = self.target(pe, at, src.len(), F)?;
        // SAFETY: src is a valid slice of exactly the bytes written.
        unsafe { rt.put_raw(pe, a, src.as_ptr().cast(), size_of_val(src), F) }
    }

    /// Copies elements `at..at+dst.len()` of `pe`'s copy into `dst` (`shmem_get`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(2, 5u16)?;
    /// let mut out = [0u16; 2];
    /// s.get(0, &mut out, 0)?;
    /// assert_eq!(out, [5, 5]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn get(&self, at: usize, dst: &mut [T], pe: usize) -> Result<()> {
        const F: &str = "shmem_get";
        let (rt, pe, a) = self.target(pe, at, dst.len(), F)?;
        // SAFETY: dst is a valid mutable slice of exactly the bytes read.
        unsafe { rt.get_raw(pe, a, dst.as_mut_ptr().cast(), size_of_val(dst), F) }
    }

    /// Non-blocking get (`shmem_get_nbi`). Because `dst` is a borrowed local buffer, the data
    /// is in place when this returns (a quiet is not needed to read it).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 9u8)?;
    /// let mut out = [0u8];
    /// s.get_nbi(0, &mut out, 0)?;
    /// assert_eq!(out, [9]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn get_nbi(&self, at: usize, dst: &mut [T], pe: usize) -> Result<()> {
        const F: &str = "shmem_get_nbi";
        let (rt, pe, a) = self.target(pe, at, dst.len(), F)?;
        // SAFETY: dst is a valid mutable slice of exactly the bytes read.
        unsafe { rt.get_raw(pe, a, dst.as_mut_ptr().cast(), size_of_val(dst), F) }
    }

    /// Stores one element on `pe` (`shmem_p`), as a single store when `T` is 1, 2, 4 or 8
    /// bytes, so that a peer waiting on it never sees a torn value.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let flag = shmem.alloc_slice(1, 0i64)?;
    /// flag.p(0, 42, shmem.my_pe())?;
    /// assert_eq!(flag.read(0), 42);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn p(&self, at: usize, value: T, pe: usize) -> Result<()> {
        const F: &str = "shmem_p";
        let (rt, pe, a) = self.target(pe, at, 1, F)?;
        // SAFETY: value is a live local of size_of::<T>() bytes.
        unsafe { rt.p_raw(pe, a, (&raw const value).cast(), size_of::<T>(), F) }
    }

    /// Loads one element from `pe` (`shmem_g`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 3.5f64)?;
    /// assert_eq!(s.g(0, 0)?, 3.5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn g(&self, at: usize, pe: usize) -> Result<T> {
        const F: &str = "shmem_g";
        let (rt, pe, a) = self.target(pe, at, 1, F)?;
        let mut v = T::zeroed();
        // SAFETY: v is a live local of size_of::<T>() bytes.
        unsafe { rt.get_raw(pe, a, (&raw mut v).cast(), size_of::<T>(), F)? };
        Ok(v)
    }

    /// Strided put (`shmem_iput`): element `i` of the transfer goes from `src[i*sst]` to
    /// element `at + i*dst` on `pe`, for `i < n`. Strides are at least 1.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(6, 0i32)?;
    /// s.iput(0, 2, &[1, 9, 2, 9, 3], 2, 3, shmem.my_pe())?; // every other element
    /// assert_eq!(s.to_vec(), [1, 0, 2, 0, 3, 0]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn iput(&self, at: usize, dst: usize, src: &[T], sst: usize, n: usize, pe: usize) -> Result<()> {
        const F: &str = "shmem_iput";
        let rt = rt(F)?;
        let pe = rt.check_pe(pe, F)?;
        if n == 0 {
            return Ok(());
        }
        let (dext, sext) = strided(rt, F, dst, sst, n)?;
        if sext > src.len() {
            return Err(Error::new(rt.me, F, ErrorKind::OutOfBounds { start: 0, end: sext, len: src.len() }));
        }
        let a = self.range(rt, at, dext, F)?;
        for i in 0..n {
            let mut e = a;
            e.offset += i * dst * size_of::<T>();
            // SAFETY: src[i*sst] exists (checked against sext).
            unsafe { rt.p_raw(pe, e, src.as_ptr().add(i * sst).cast(), size_of::<T>(), F)? };
        }
        Ok(())
    }

    /// Strided get (`shmem_iget`): `dst[i*dst_stride]` receives element `at + i*sst` of
    /// `pe`'s copy, for `i < n`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(4, 0u8)?;
    /// s.copy_from_slice(&[1, 2, 3, 4]);
    /// let mut out = [0u8; 2];
    /// s.iget(1, 2, &mut out, 1, 2, 0)?;
    /// assert_eq!(out, [2, 4]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn iget(&self, at: usize, sst: usize, dst: &mut [T], dst_stride: usize, n: usize, pe: usize) -> Result<()> {
        const F: &str = "shmem_iget";
        let rt = rt(F)?;
        let pe = rt.check_pe(pe, F)?;
        if n == 0 {
            return Ok(());
        }
        let (dext, sext) = strided(rt, F, dst_stride, sst, n)?;
        if dext > dst.len() {
            return Err(Error::new(rt.me, F, ErrorKind::OutOfBounds { start: 0, end: dext, len: dst.len() }));
        }
        let a = self.range(rt, at, sext, F)?;
        for i in 0..n {
            let mut e = a;
            e.offset += i * sst * size_of::<T>();
            // SAFETY: dst[i*dst_stride] exists (checked against dext).
            unsafe { rt.get_raw(pe, e, dst.as_mut_ptr().add(i * dst_stride).cast(), size_of::<T>(), F)? };
        }
        Ok(())
    }

    /// A pointer to this object on `pe` (`shmem_ptr`), when `pe`'s memory is mapped here.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(1, 0u32)?;
    /// assert!(s.remote_ptr(shmem.my_pe()).is_some());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn remote_ptr(&self, pe: usize) -> Option<*mut T> {
        let rt = rt("shmem_ptr").ok()?;
        if pe >= rt.n {
            return None;
        }
        rt.shm.ptr(pe, self.sym, self.len * size_of::<T>()).map(|p| p.cast())
    }

    fn local_check(&self, at: usize) -> *mut T {
        assert!(at < self.len, "index {at} out of range for a symmetric object of {} elements", self.len);
        // SAFETY: at < len, inside the allocation.
        unsafe { self.as_ptr().add(at) }
    }

    /// Reads local element `at` (a copy; panics if `at >= len`, like slice indexing).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(2, 1u32)?;
    /// assert_eq!(s.read(1), 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[inline]
    pub fn read(&self, at: usize) -> T {
        // SAFETY: local_check bounds the index; volatile so that a value another PE stored is
        // re-read, never cached by the compiler.
        unsafe { self.local_check(at).read_volatile() }
    }

    /// Writes local element `at` (panics if `at >= len`).
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
        unsafe { self.local_check(at).write_volatile(value) }
    }

    /// Copies the local elements out.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let s = shmem.alloc_slice(3, 7u8)?;
    /// assert_eq!(s.to_vec(), vec![7, 7, 7]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn to_vec(&self) -> Vec<T> {
        let mut v = vec![T::zeroed(); self.len];
        // SAFETY: the allocation holds len elements; v has room for len.
        unsafe { std::ptr::copy(self.as_ptr(), v.as_mut_ptr(), self.len) };
        v
    }

    /// Copies `src` into the local elements `0..src.len()` (panics if longer than the object).
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
        // SAFETY: bounded above.
        unsafe { std::ptr::copy(src.as_ptr(), self.as_ptr(), src.len()) };
    }

    /// Sets every local element to `value`.
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

    /// The local elements as a slice.
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

fn strided(rt: &Runtime, func: &'static str, a: usize, b: usize, n: usize) -> Result<(usize, usize)> {
    if a == 0 || b == 0 {
        return Err(Error::new(rt.me, func, ErrorKind::InvalidArgument("strides must be at least 1".into())));
    }
    let ext = |s: usize| (n - 1).checked_mul(s).and_then(|x| x.checked_add(1));
    match (ext(a), ext(b)) {
        (Some(x), Some(y)) => Ok((x, y)),
        _ => Err(Error::new(
            rt.me,
            func,
            ErrorKind::InvalidSize { what: format!("{n} elements at strides {a}/{b} overflows") },
        )),
    }
}

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

impl<T: Pod + SyncType> SymSlice<T> {
    /// Blocks until local element `at` satisfies `cmp value` (`shmem_wait_until`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::Cmp;
    /// let flag = shmem.alloc_slice(1, 0i32)?;
    /// flag.p(0, 1, shmem.my_pe())?;
    /// flag.wait_until(0, Cmp::Eq, 1)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until(&self, at: usize, cmp: Cmp, value: T) -> Result<()> {
        let p = self.checked_elem(at, "shmem_wait_until")?;
        let mut b = Backoff::new(rt("shmem_wait_until")?.config.spin);
        // SAFETY: p is an aligned element of this live object.
        while !cmp.holds(unsafe { T::load_acquire(p) }, value) {
            b.snooze();
        }
        Ok(())
    }

    /// Whether local element `at` satisfies `cmp value` now (`shmem_test`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::Cmp;
    /// let flag = shmem.alloc_slice(1, 0u64)?;
    /// assert!(!flag.test(0, Cmp::Ne, 0)?);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test(&self, at: usize, cmp: Cmp, value: T) -> Result<bool> {
        let p = self.checked_elem(at, "shmem_test")?;
        // SAFETY: p is an aligned element of this live object.
        Ok(cmp.holds(unsafe { T::load_acquire(p) }, value))
    }

    fn checked_elem(&self, at: usize, func: &'static str) -> Result<*const T> {
        let rt = rt(func)?;
        self.range(rt, at, 1, func)?;
        // SAFETY: at < len.
        Ok(unsafe { self.as_ptr().add(at) })
    }

    /// Blocks until every element whose `status` entry is 0 (all, when `None`) satisfies
    /// `cmp` against `values` (`shmem_wait_until_all[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(3, 1i32)?;
    /// flags.wait_until_all(None, Cmp::Eq, CmpValues::One(1))?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until_all(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<()> {
        // SAFETY: the object holds len live elements and is symmetric.
        unsafe { crate::wait::wait_until_all(self.as_ptr(), self.len, status, cmp, values) }
    }

    /// Blocks until some active element satisfies its comparison; returns its index, or
    /// `None` when `status` excludes every element (`shmem_wait_until_any[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(3, 0i32)?;
    /// flags.write(2, 1);
    /// assert_eq!(flags.wait_until_any(None, Cmp::Eq, CmpValues::One(1))?, Some(2));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until_any(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Option<usize>> {
        // SAFETY: as above.
        unsafe { crate::wait::wait_until_any(self.as_ptr(), self.len, status, cmp, values) }
    }

    /// Blocks until at least one active element satisfies its comparison; returns the indices
    /// of all that do (`shmem_wait_until_some[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(4, 0i32)?;
    /// flags.write(1, 1);
    /// flags.write(3, 1);
    /// assert_eq!(flags.wait_until_some(None, Cmp::Eq, CmpValues::One(1))?, vec![1, 3]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until_some(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Vec<usize>> {
        let mut out = vec![0; self.len];
        // SAFETY: as above.
        let k = unsafe { crate::wait::wait_until_some(self.as_ptr(), self.len, &mut out, status, cmp, values) }?;
        out.truncate(k);
        Ok(out)
    }

    /// Whether every active element satisfies its comparison (`shmem_test_all[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(2, 0i32)?;
    /// flags.write(0, 5);
    /// assert!(flags.test_all(Some(&[0, 1]), Cmp::Eq, CmpValues::One(5))?);
    /// assert!(!flags.test_all(None, Cmp::Eq, CmpValues::Each(&[5, 1]))?);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test_all(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<bool> {
        // SAFETY: as above.
        unsafe { crate::wait::test_all(self.as_ptr(), self.len, status, cmp, values) }
    }

    /// The index of an active element that satisfies its comparison now, if any
    /// (`shmem_test_any[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(2, 0i32)?;
    /// assert_eq!(flags.test_any(None, Cmp::Gt, CmpValues::One(0))?, None);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test_any(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Option<usize>> {
        // SAFETY: as above.
        unsafe { crate::wait::test_any(self.as_ptr(), self.len, status, cmp, values) }
    }

    /// The indices of every active element that satisfies its comparison now
    /// (`shmem_test_some[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(3, 2i64)?;
    /// assert_eq!(flags.test_some(None, Cmp::Ge, CmpValues::Each(&[2, 3, 1]))?, vec![0, 2]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test_some(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Vec<usize>> {
        let mut out = vec![0; self.len];
        // SAFETY: as above.
        let k = unsafe { crate::wait::test_some(self.as_ptr(), self.len, &mut out, status, cmp, values) }?;
        out.truncate(k);
        Ok(out)
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
pub struct SymBox<T: Pod>(SymSlice<T>);

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

impl<T: Pod + SyncType> SymBox<T> {
    /// Blocks until the local value satisfies `cmp value` (`shmem_wait_until`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc(1i32)?;
    /// x.wait(oxshmem::Cmp::Ge, 1)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait(&self, cmp: Cmp, value: T) -> Result<()> {
        self.0.wait_until(0, cmp, value)
    }
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
