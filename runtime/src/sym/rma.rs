//! One-sided access to a symmetric object on any PE: put, get, p, g, their strided forms, and
//! `shmem_ptr`.
//!
//! A transfer to or from this PE's own copy is a copy inside this process, which another
//! thread may be accessing at the same time through the safe accessors (`read`, `write`,
//! `to_vec`, ...) or a transfer of its own: with a plain `memcpy` that would be a data race,
//! undefined behaviour reachable from safe code. So the local case goes element-wise relaxed
//! atomic, exactly as the accessors do ([`relaxed`], the `*_local` helpers below), and
//! completes before return as the `memcpy` did; only other PEs' copies, memory of another
//! process, take the transport's bulk path.

use bytemuck::Pod;

use super::SymSlice;
use crate::error::{Error, ErrorKind, Result};
use crate::transport::relaxed;
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
        if pe == rt.me {
            self.put_local(at, src);
            return Ok(());
        }
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
        if pe == rt.me {
            self.put_local(at, src);
            return Ok(());
        }
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
        if pe == rt.me {
            self.get_local(at, dst);
            return Ok(());
        }
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
        if pe == rt.me {
            self.get_local(at, dst);
            return Ok(());
        }
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
        if pe == rt.me {
            self.put_local(at, std::slice::from_ref(&value));
            return Ok(());
        }
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
        if pe == rt.me {
            self.get_local(at, std::slice::from_mut(&mut v));
            return Ok(v);
        }
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
        if pe == rt.me {
            for i in 0..n {
                self.put_local(at + i * dst, std::slice::from_ref(&src[i * sst]));
            }
            return Ok(());
        }
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
        if pe == rt.me {
            for i in 0..n {
                self.get_local(at + i * sst, std::slice::from_mut(&mut dst[i * dst_stride]));
            }
            return Ok(());
        }
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

    /// A put to this PE: copies `src` into the local elements `at..at+src.len()` (panics
    /// outside the object), element-wise relaxed atomic as
    /// [`copy_from_slice`](Self::copy_from_slice), so that it races no other thread's access.
    /// Complete on return.
    #[inline]
    pub(crate) fn put_local(&self, at: usize, src: &[T]) {
        let p = self.local_range(at, src.len());
        // SAFETY: local_range bounds the range, aligned for T; every safe access that may race
        // is atomic of the same width (relaxed::width: the object's address and T decide it).
        // `src` is not this object's memory: a view of it (`as_slice`) forbids writes to it
        // while it lives.
        unsafe { relaxed::copy_in(src.as_ptr(), p, src.len()) }
    }

    /// A get from this PE: copies the local elements `at..at+dst.len()` into `dst` (panics
    /// outside the object), element-wise relaxed atomic as [`to_vec`](Self::to_vec).
    #[inline]
    pub(crate) fn get_local(&self, at: usize, dst: &mut [T]) {
        let p = self.local_range(at, dst.len());
        // SAFETY: as in put_local; `dst` is a unique reference, so it is not this object's
        // memory (no safe `&mut` to it exists while `self` is shared).
        unsafe { relaxed::copy_out(p, dst.as_mut_ptr(), dst.len()) }
    }

    /// The local address of element `at`, asserting that `at..at+n` lies inside the object.
    #[inline(always)]
    fn local_range(&self, at: usize, n: usize) -> *mut T {
        assert!(
            at.checked_add(n).is_some_and(|end| end <= self.len()),
            "elements {at}..{at}+{n} out of range for a symmetric object of {} elements",
            self.len()
        );
        // SAFETY: at <= len, inside (or one past the end of) the allocation.
        unsafe { self.as_ptr().add(at) }
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

/// A put or get to this PE (`put_local` and `get_local`, what `put`, `get`, `p`, `g`, `iput`
/// and `iget` do when `pe` is this PE) against a second thread's safe accessors and puts on the
/// same elements, the case that was a data race while they went through the `memcpy` of
/// `put_raw`; run under Miri (`scripts/miri.sh`), which reports any race (non-atomic, or
/// atomic of mixed sizes) as undefined behaviour. The runtime itself cannot run under Miri, so
/// the objects are local buffers (`slice::tests::local`).
#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::super::slice::tests::local;

    const ROUNDS: u64 = 24;

    #[test]
    fn put_to_self_races_accessors_and_another_put() {
        let s = local(8, 0u64);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for r in 1..=ROUNDS {
                    s.put_local(0, &[r; 8]); // put
                    s.put_local((r % 8) as usize, &[r]); // p
                }
            });
            let mut buf = [0u64; 8];
            for r in 1..=ROUNDS {
                assert!(s.to_vec().iter().all(|&x| x <= ROUNDS));
                assert!(s.read(3) <= ROUNDS);
                s.get_local(0, &mut buf); // get
                assert!(buf.iter().all(|&x| x <= ROUNDS));
                s.write(5, r);
                s.put_local(6, &[r, r]);
            }
        });
        s.put_local(0, &[ROUNDS; 8]);
        let mut buf = [0u64; 8];
        s.get_local(0, &mut buf);
        assert_eq!(buf, [ROUNDS; 8]);
    }

    #[test]
    fn get_from_self_races_writes_for_bytes_and_wide_elements() {
        let b = local(13, 0u8);
        let w = local(5, [0u32; 3]);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for r in 1..=ROUNDS as u8 {
                    b.copy_from_slice(&[r; 13]);
                    w.fill([u32::from(r); 3]);
                    b.put_local(3, &[r; 7]);
                    w.put_local(1, &[[u32::from(r); 3]; 3]);
                }
            });
            let (mut bb, mut ww) = ([0u8; 13], [[0u32; 3]; 4]);
            for _ in 0..ROUNDS {
                b.get_local(0, &mut bb);
                assert!(bb.iter().all(|&x| u64::from(x) <= ROUNDS));
                // Each 4-byte word is atomic; a 12-byte element may mix rounds.
                w.get_local(1, &mut ww);
                assert!(ww.iter().flatten().all(|&x| u64::from(x) <= ROUNDS));
            }
        });
        assert_eq!(b.to_vec(), [ROUNDS as u8; 13]);
        assert_eq!(w.to_vec(), [[ROUNDS as u32; 3]; 5]);
    }

    /// An AMO on this PE is one atomic of the element's size; a put to self of a 1, 2, 4 or
    /// 8-byte element uses that same size, so the two do not race.
    #[test]
    fn put_to_self_races_element_sized_atomics() {
        let s = local(2, 0u64);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for _ in 0..ROUNDS {
                    // SAFETY: element 1 of the live buffer, 8-byte aligned.
                    unsafe { AtomicU64::from_ptr(s.as_ptr().add(1)) }.fetch_add(1, Ordering::Relaxed);
                }
            });
            let mut buf = [0u64; 2];
            for r in 1..=ROUNDS {
                s.put_local(0, &[r]);
                s.get_local(0, &mut buf);
                assert!(buf[0] == r && buf[1] <= ROUNDS);
            }
        });
        assert_eq!(s.to_vec(), [ROUNDS, ROUNDS]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn put_local_checks_its_range() {
        local(4, 0u8).put_local(3, &[1, 2]);
    }
}
