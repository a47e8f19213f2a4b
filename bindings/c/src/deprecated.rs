//! The deprecated collectives over active sets (`PE_start`, `logPE_stride`, `PE_size`, `pSync`):
//! `shmem_barrier`, `shmem_broadcast32/64`, `shmem_[f]collect32/64`, `shmem_alltoall[s]32/64`.
//! They map to the runtime's active-set collectives, which check the set and `pSync` and never
//! write `pSync` (see `oxshmem::coll::active_set`). The typed `_to_all` reductions are
//! generated (`gen/ops.rs`).

use std::ffi::{c_int, c_long, c_void};

use oxshmem_rt::coll::active_set;

use crate::error::ok;

/// `shmem_barrier` (deprecated): quiet, then a barrier of the active set.
///
/// # Safety
/// `p_sync` is checked to be symmetric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_barrier(pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, p_sync: *mut c_long) {
    // SAFETY: the runtime checks the active set and pSync.
    ok("shmem_barrier", unsafe { active_set::barrier(pe_start, log_pe_stride, pe_size, p_sync) });
}

/// # Safety
/// `dest` and `source` must hold `nelems` elements of `esize` bytes (checked symmetric).
unsafe fn broadcast(
    func: &'static str,
    esize: usize,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    pe_root: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    p_sync: *mut c_long,
) {
    // SAFETY: forwarded from the caller.
    let r = unsafe {
        active_set::broadcast(
            dest.cast(),
            source.cast(),
            nelems,
            esize,
            pe_root,
            pe_start,
            log_pe_stride,
            pe_size,
            p_sync,
        )
    };
    ok(func, r);
}

/// `shmem_broadcast32` (deprecated).
///
/// # Safety
/// `dest` and `source` must hold `nelems` 32-bit elements (checked symmetric).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_broadcast32(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    pe_root: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    p_sync: *mut c_long,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        broadcast("shmem_broadcast32", 4, dest, source, nelems, pe_root, pe_start, log_pe_stride, pe_size, p_sync)
    }
}

/// `shmem_broadcast64` (deprecated).
///
/// # Safety
/// `dest` and `source` must hold `nelems` 64-bit elements (checked symmetric).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_broadcast64(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    pe_root: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    p_sync: *mut c_long,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        broadcast("shmem_broadcast64", 8, dest, source, nelems, pe_root, pe_start, log_pe_stride, pe_size, p_sync)
    }
}

/// # Safety
/// `source` must hold `nelems` elements and `dest` the set's total (checked symmetric).
unsafe fn collect(
    func: &'static str,
    esize: usize,
    fixed: bool,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    p_sync: *mut c_long,
) {
    // SAFETY: forwarded from the caller.
    let r = unsafe {
        active_set::collect(dest.cast(), source.cast(), nelems, esize, fixed, pe_start, log_pe_stride, pe_size, p_sync)
    };
    ok(func, r);
}

macro_rules! collect_fn {
    ($($name:ident, $esize:expr, $fixed:expr, $doc:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (deprecated): ", $doc, ".")]
        ///
        /// # Safety
        /// `source` must hold `nelems` elements and `dest` the active set's total (checked
        /// symmetric).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            dest: *mut c_void,
            source: *const c_void,
            nelems: usize,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            p_sync: *mut c_long,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe {
                collect(stringify!($name), $esize, $fixed, dest, source, nelems, pe_start, log_pe_stride, pe_size, p_sync)
            }
        }
    )*};
}

collect_fn! {
    shmem_collect32, 4, false, "concatenation of every member's 32-bit elements, counts may differ";
    shmem_collect64, 8, false, "concatenation of every member's 64-bit elements, counts may differ";
    shmem_fcollect32, 4, true, "concatenation of the same count of 32-bit elements from every member";
    shmem_fcollect64, 8, true, "concatenation of the same count of 64-bit elements from every member";
}

/// # Safety
/// `dest` and `source` must hold every member's strided blocks (checked symmetric).
unsafe fn alltoalls(
    func: &'static str,
    esize: usize,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    p_sync: *mut c_long,
) {
    // SAFETY: forwarded from the caller.
    let r = unsafe {
        active_set::alltoalls(
            dest.cast(),
            source.cast(),
            dst,
            sst,
            nelems,
            esize,
            pe_start,
            log_pe_stride,
            pe_size,
            p_sync,
        )
    };
    ok(func, r);
}

macro_rules! alltoall_fn {
    ($($name:ident, $esize:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (deprecated): block `j` of every member goes to member `j`.")]
        ///
        /// # Safety
        /// `dest` and `source` must hold a block for every member (checked symmetric).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            dest: *mut c_void,
            source: *const c_void,
            nelems: usize,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            p_sync: *mut c_long,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { alltoalls(stringify!($name), $esize, dest, source, 1, 1, nelems, pe_start, log_pe_stride, pe_size, p_sync) }
        }
    )*};
}

alltoall_fn! {
    shmem_alltoall32, 4;
    shmem_alltoall64, 8;
}

macro_rules! alltoalls_fn {
    ($($name:ident, $esize:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (deprecated): strided alltoall.")]
        ///
        /// # Safety
        /// `dest` and `source` must hold every member's strided blocks (checked symmetric).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            dest: *mut c_void,
            source: *const c_void,
            dst: isize,
            sst: isize,
            nelems: usize,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            p_sync: *mut c_long,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { alltoalls(stringify!($name), $esize, dest, source, dst, sst, nelems, pe_start, log_pe_stride, pe_size, p_sync) }
        }
    )*};
}

alltoalls_fn! {
    shmem_alltoalls32, 4;
    shmem_alltoalls64, 8;
}
