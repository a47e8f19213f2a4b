//! Remote memory access: put, get, p, g, strided iput/iget, blocking and `_nbi`.
//!
//! Every routine resolves its target once: the symmetric location (segment, offset) and the
//! peer's route from the peer table built at init. A peer on this host is mapped here, so a put
//! is a `memcpy` into its segment and completes at once; `_nbi` forms are therefore the same
//! code on the shared-memory path, and differ only on a network transport.

use crate::error::{Error, ErrorKind, Result};
use crate::segment::Route;
use crate::transport::{LocalBytes, LocalBytesMut, SymAddr};
use crate::world::{Runtime, running};

/// Copies at least this long may be done by the C library with non-temporal stores, which
/// are not ordered by the processor's normal store ordering; a store fence after them keeps
/// "data before flag" true for everything that follows a put.
const NT_THRESHOLD: usize = 64 * 1024;

#[inline(always)]
fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
}

impl Runtime {
    /// Writes `len` bytes from `src` to `dst` on `pe`.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes.
    #[inline(always)]
    pub(crate) unsafe fn put_raw(
        &self,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
        func: &'static str,
    ) -> Result<()> {
        match self.shm.ptr(pe, dst, len) {
            // SAFETY: ptr() checked the range lies in pe's live mapping; src is valid per the
            // caller. `copy` is a memmove: a put to oneself may overlap its source.
            Some(p) => unsafe { std::ptr::copy(src, p, len) },
            None => {
                let net = self.net_for(pe, dst, len, func)?;
                // SAFETY: src is valid for reads of len bytes per the caller, for the whole call;
                // it may be symmetric memory, so it stays a raw range, never a slice.
                return net.put(func, pe, dst, unsafe { LocalBytes::new(src, len) });
            }
        }
        if len >= NT_THRESHOLD {
            store_fence();
        }
        Ok(())
    }

    /// Reads `len` bytes at `src` on `pe` into `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes.
    #[inline(always)]
    pub(crate) unsafe fn get_raw(
        &self,
        pe: usize,
        src: SymAddr,
        dst: *mut u8,
        len: usize,
        func: &'static str,
    ) -> Result<()> {
        match self.shm.ptr(pe, src, len) {
            // SAFETY: as in put_raw.
            Some(p) => unsafe { std::ptr::copy(p, dst, len) },
            None => {
                let net = self.net_for(pe, src, len, func)?;
                // SAFETY: dst is valid for writes of len bytes per the caller, for the whole
                // call; it may be symmetric memory, so it stays a raw range, never a slice.
                return net.get(func, pe, src, unsafe { LocalBytesMut::new(dst, len) });
            }
        }
        Ok(())
    }

    /// Stores one naturally aligned element of 1, 2, 4 or 8 bytes as a single store, so that a
    /// waiting peer never sees a torn value; other sizes are copied.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes.
    #[inline(always)]
    pub(crate) unsafe fn p_raw(
        &self,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
        func: &'static str,
    ) -> Result<()> {
        use std::sync::atomic::*;
        let Some(p) = self.shm.ptr(pe, dst, len) else {
            let net = self.net_for(pe, dst, len, func)?;
            // SAFETY: src is valid for reads of len bytes per the caller, for the whole call.
            return net.put(func, pe, dst, unsafe { LocalBytes::new(src, len) });
        };
        let aligned = (p as usize).is_multiple_of(len.max(1));
        // SAFETY: p is in a live mapping for len bytes; when `aligned`, it is aligned for the
        // atomic type of that width; src is valid per the caller (read unaligned).
        unsafe {
            match (len, aligned) {
                (1, _) => AtomicU8::from_ptr(p).store(src.read(), Ordering::Relaxed),
                (2, true) => AtomicU16::from_ptr(p.cast()).store(src.cast::<u16>().read_unaligned(), Ordering::Relaxed),
                (4, true) => AtomicU32::from_ptr(p.cast()).store(src.cast::<u32>().read_unaligned(), Ordering::Relaxed),
                (8, true) => AtomicU64::from_ptr(p.cast()).store(src.cast::<u64>().read_unaligned(), Ordering::Relaxed),
                _ => std::ptr::copy(src, p, len),
            }
        }
        Ok(())
    }

    /// Whether `len` bytes from `a` stay inside the user part of `a`'s segment.
    pub(crate) fn extent_ok(&self, a: SymAddr, len: usize) -> std::result::Result<(), ()> {
        match self.segs.get(a.seg) {
            Some(&(_, slen)) if a.offset.checked_add(len).is_some_and(|e| e <= slen) => Ok(()),
            _ => Err(()),
        }
    }

    /// The network transport, when it reaches `pe` (a peer this process has not mapped).
    #[inline]
    pub(crate) fn net_for(
        &self,
        pe: usize,
        a: SymAddr,
        len: usize,
        func: &'static str,
    ) -> Result<&dyn crate::transport::Transport> {
        match &self.net {
            Some(net) if pe < self.n && pe != self.me && net.reaches(pe) && self.extent_or_internal(a, len) => {
                Ok(net.as_ref())
            }
            _ => Err(self.route_error(pe, a, len, func)),
        }
    }

    /// Whether `len` bytes from `a` lie inside `a`'s whole segment (the heap's includes the
    /// runtime's internal objects after the user's part).
    fn extent_or_internal(&self, a: SymAddr, len: usize) -> bool {
        let whole = if a.seg == 0 { self.shm.len(self.me, 0) } else { self.segs.get(a.seg).map_or(0, |s| s.1) };
        a.offset.checked_add(len).is_some_and(|e| e <= whole)
    }

    #[cold]
    pub(crate) fn route_error(&self, pe: usize, a: SymAddr, len: usize, func: &'static str) -> Error {
        if pe >= self.n {
            return self.pe_error(pe as i128, func);
        }
        if let Some(e) = self.shm.map_error(pe, a.seg) {
            return Error::new(self.me, func, e.into());
        }
        if self.shm.base(pe, a.seg) != 0 {
            return Error::new(
                self.me,
                func,
                ErrorKind::NotSymmetric { what: "remote range", addr: self.local_addr(a), len },
            );
        }
        self.unreachable(pe, func)
    }
}

#[inline(always)]
fn pe_of(rt: &Runtime, pe: i32, func: &'static str) -> Result<usize> {
    if pe >= 0 && (pe as usize) < rt.n { Ok(pe as usize) } else { Err(rt.pe_error(i128::from(pe), func)) }
}

/// Raw `shmem_putmem`: copies `len` bytes from local `src` to symmetric `dest` on `pe`.
///
/// # Safety
/// `src` must be valid for reads of `len` bytes. `dest` is checked to be symmetric.
#[inline]
pub unsafe fn putmem(dest: *mut u8, src: *const u8, len: usize, pe: i32) -> Result<()> {
    const F: &str = "shmem_putmem";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    if len == 0 {
        return Ok(());
    }
    match rt.route(dest as usize, len, "destination", F)? {
        // SAFETY: forwarded from the caller.
        Route::Sym(d) => unsafe { rt.put_raw(pe, d, src, len, F) },
        // SAFETY: src is valid for reads of len bytes per the caller.
        Route::Foreign(s) => unsafe { s.put(F, pe, dest as usize, LocalBytes::new(src, len)) },
    }
}

/// Raw `shmem_putmem_nbi`: as [`putmem`]; the data is delivered by the next quiet.
///
/// # Safety
/// As [`putmem`].
#[inline]
pub unsafe fn putmem_nbi(dest: *mut u8, src: *const u8, len: usize, pe: i32) -> Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { putmem(dest, src, len, pe) }
}

/// Raw `shmem_getmem`: copies `len` bytes from symmetric `src` on `pe` to local `dest`.
///
/// # Safety
/// `dest` must be valid for writes of `len` bytes. `src` is checked to be symmetric.
#[inline]
pub unsafe fn getmem(dest: *mut u8, src: *const u8, len: usize, pe: i32) -> Result<()> {
    const F: &str = "shmem_getmem";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    if len == 0 {
        return Ok(());
    }
    match rt.route(src as usize, len, "source", F)? {
        // SAFETY: forwarded from the caller.
        Route::Sym(s) => unsafe { rt.get_raw(pe, s, dest, len, F) },
        // SAFETY: dest is valid for writes of len bytes per the caller.
        Route::Foreign(seg) => unsafe { seg.get(F, pe, src as usize, LocalBytesMut::new(dest, len)) },
    }
}

/// Raw `shmem_getmem_nbi`: as [`getmem`]; `dest` is valid after the next quiet.
///
/// # Safety
/// As [`getmem`]; `dest` must stay valid until the next quiet.
#[inline]
pub unsafe fn getmem_nbi(dest: *mut u8, src: *const u8, len: usize, pe: i32) -> Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { getmem(dest, src, len, pe) }
}

/// Raw `shmem_TYPE_p`: stores one element at symmetric `dest` on `pe`.
///
/// # Safety
/// `dest` is checked to be symmetric; no other requirement.
#[inline]
pub unsafe fn p<T: bytemuck::Pod>(dest: *mut T, value: T, pe: i32) -> Result<()> {
    const F: &str = "shmem_p";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    let src = (&raw const value).cast::<u8>();
    match rt.route(dest as usize, size_of::<T>(), "destination", F)? {
        // SAFETY: value is a live local.
        Route::Sym(d) => unsafe { rt.p_raw(pe, d, src, size_of::<T>(), F) },
        // SAFETY: as above.
        Route::Foreign(s) => unsafe { s.put(F, pe, dest as usize, LocalBytes::new(src, size_of::<T>())) },
    }
}

/// Raw `shmem_TYPE_g`: loads one element at symmetric `src` on `pe`.
///
/// # Safety
/// `src` is checked to be symmetric; no other requirement.
#[inline]
pub unsafe fn g<T: bytemuck::Pod>(src: *const T, pe: i32) -> Result<T> {
    const F: &str = "shmem_g";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    let mut v = T::zeroed();
    let dst = (&raw mut v).cast::<u8>();
    match rt.route(src as usize, size_of::<T>(), "source", F)? {
        // SAFETY: v is a live local of the right size.
        Route::Sym(s) => unsafe { rt.get_raw(pe, s, dst, size_of::<T>(), F)? },
        // SAFETY: as above.
        Route::Foreign(seg) => unsafe { seg.get(F, pe, src as usize, LocalBytesMut::new(dst, size_of::<T>()))? },
    }
    Ok(v)
}

fn strided_extent(rt: &Runtime, func: &'static str, stride: isize, elem: usize, n: usize) -> Result<usize> {
    if stride < 1 {
        return Err(Error::new(rt.me, func, ErrorKind::InvalidArgument(format!("stride {stride} must be at least 1"))));
    }
    (n - 1).checked_mul(stride as usize).and_then(|x| x.checked_mul(elem)).and_then(|x| x.checked_add(elem)).ok_or_else(
        || {
            Error::new(
                rt.me,
                func,
                ErrorKind::InvalidSize { what: format!("{n} elements of {elem} bytes at stride {stride} overflows") },
            )
        },
    )
}

/// Raw `shmem_iputSIZE` / `shmem_TYPE_iput`: puts `n` elements of `elem` bytes, taking every
/// `sst`-th element of `src` and writing every `dst`-th element of `dest` on `pe`.
///
/// # Safety
/// `src` must be valid for the strided reads. `dest` is checked to be symmetric.
pub unsafe fn iput(
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    elem: usize,
    n: usize,
    pe: i32,
) -> Result<()> {
    const F: &str = "shmem_iput";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    if n == 0 {
        return Ok(());
    }
    let dext = strided_extent(rt, F, dst, elem, n)?;
    strided_extent(rt, F, sst, elem, n)?;
    let d = match rt.route(dest as usize, dext, "destination", F)? {
        Route::Sym(d) => d,
        Route::Foreign(s) => {
            // SAFETY: the caller guarantees the strided source is readable; strided_extent
            // checked that neither side's extent overflows.
            return unsafe {
                s.put_strided(F, pe, dest as usize, dst as usize * elem, src, sst as usize * elem, elem, n)
            };
        }
    };
    for i in 0..n {
        let mut a = d;
        a.offset += i * dst as usize * elem;
        // SAFETY: the caller guarantees the strided source is readable; the destination range
        // was checked as a whole above.
        unsafe { rt.p_raw(pe, a, src.add(i * sst as usize * elem), elem, F)? };
    }
    Ok(())
}

/// Raw `shmem_igetSIZE` / `shmem_TYPE_iget`: gets `n` elements of `elem` bytes from every
/// `sst`-th element of `src` on `pe` into every `dst`-th element of local `dest`.
///
/// # Safety
/// `dest` must be valid for the strided writes. `src` is checked to be symmetric.
pub unsafe fn iget(
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    elem: usize,
    n: usize,
    pe: i32,
) -> Result<()> {
    const F: &str = "shmem_iget";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    if n == 0 {
        return Ok(());
    }
    strided_extent(rt, F, dst, elem, n)?;
    let sext = strided_extent(rt, F, sst, elem, n)?;
    let s = match rt.route(src as usize, sext, "source", F)? {
        Route::Sym(s) => s,
        Route::Foreign(seg) => {
            // SAFETY: as in iput, mirrored.
            return unsafe {
                seg.get_strided(F, pe, dest, dst as usize * elem, src as usize, sst as usize * elem, elem, n)
            };
        }
    };
    for i in 0..n {
        let mut a = s;
        a.offset += i * sst as usize * elem;
        // SAFETY: as in iput, mirrored.
        unsafe { rt.get_raw(pe, a, dest.add(i * dst as usize * elem), elem, F)? };
    }
    Ok(())
}

/// Raw `shmem_ptr`: a local pointer to `dest` on `pe`, or null when `pe`'s memory is not
/// mapped here (another host) or `dest` is not symmetric.
pub fn ptr(dest: *const u8, pe: i32) -> *mut u8 {
    let Ok(rt) = running("shmem_ptr") else {
        return std::ptr::null_mut();
    };
    if pe < 0 || pe as usize >= rt.n {
        return std::ptr::null_mut();
    }
    match rt.route(dest as usize, 1, "destination", "shmem_ptr") {
        Ok(Route::Sym(a)) => rt.shm.ptr(pe as usize, a, 1).unwrap_or(std::ptr::null_mut()),
        Ok(Route::Foreign(s)) => s.ptr(dest as usize, pe as usize).unwrap_or(std::ptr::null_mut()),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Raw `shmem_addr_accessible`: whether `addr` is symmetric and `pe` can be reached.
pub fn addr_accessible(addr: *const u8, pe: i32) -> bool {
    let Ok(rt) = running("shmem_addr_accessible") else {
        return false;
    };
    pe >= 0
        && (pe as usize) < rt.n
        && rt.route(addr as usize, 1, "address", "shmem_addr_accessible").is_ok()
        && pe_accessible(pe)
}

/// Raw `shmem_pe_accessible`: whether `pe` can be reached by this PE.
pub fn pe_accessible(pe: i32) -> bool {
    let Ok(rt) = running("shmem_pe_accessible") else {
        return false;
    };
    pe >= 0
        && (pe as usize) < rt.n
        && (rt.shm.base(pe as usize, 0) != 0 || rt.net.as_ref().is_some_and(|n| n.reaches(pe as usize)))
}
