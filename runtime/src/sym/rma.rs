//! One-sided access to a symmetric object on any PE: put, get, p, g, their strided forms, and
//! `shmem_ptr`.

use bytemuck::Pod;

use super::SymSlice;
use crate::error::{Error, ErrorKind, Result};
use crate::world::{Runtime, running};

impl<T: Pod> SymSlice<T> {
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
        let rt = running(F)?;
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
        let rt = running(F)?;
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
        let rt = running("shmem_ptr").ok()?;
        if pe >= rt.n {
            return None;
        }
        rt.shm.ptr(pe, self.sym(), self.len() * size_of::<T>()).map(|p| p.cast())
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
