//! Memory management: `shmem_malloc` and friends, their deprecated names, and the heap
//! queries of `shmemx.h`.
//!
//! The allocation routines report failure as the specification says, by returning NULL (after
//! printing why: the runtime names the size asked and what is free). A size of zero returns
//! NULL without error or communication, as the specification allows.

use std::ffi::{c_long, c_void};
use std::ptr::null_mut;

use oxshmem_rt::{Result, raw};

use crate::error::{bytes, ok, report};

pub(crate) fn alloc(func: &'static str, r: Result<*mut u8>) -> *mut c_void {
    match r {
        Ok(p) => p.cast(),
        Err(e) => {
            report(func, e);
            null_mut()
        }
    }
}

pub(crate) fn malloc(func: &'static str, size: usize) -> *mut c_void {
    if size == 0 { null_mut() } else { alloc(func, raw::malloc(size)) }
}

pub(crate) fn align(func: &'static str, alignment: usize, size: usize) -> *mut c_void {
    if size == 0 { null_mut() } else { alloc(func, raw::align(alignment, size)) }
}

/// # Safety
/// `ptr` must be NULL or a live symmetric allocation, not used after this call.
unsafe fn realloc(func: &'static str, ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        return malloc(func, size);
    }
    if size == 0 {
        // SAFETY: forwarded from the caller.
        unsafe { free(func, ptr) };
        return null_mut();
    }
    // SAFETY: forwarded from the caller.
    alloc(func, unsafe { raw::realloc(ptr.cast(), size) })
}

/// # Safety
/// `ptr` must be NULL or a live symmetric allocation, not used afterwards.
pub(crate) unsafe fn free(func: &'static str, ptr: *mut c_void) {
    if !ptr.is_null() {
        // SAFETY: forwarded from the caller; the runtime checks ptr is an allocation.
        ok(func, unsafe { raw::free(ptr.cast()) });
    }
}

/// `shmem_malloc`: collective.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    malloc("shmem_malloc", size)
}

/// `count` zeroed elements of `size` bytes (NULL for zero bytes), naming `func`.
pub(crate) fn calloc(func: &'static str, count: usize, size: usize) -> *mut c_void {
    match bytes(func, count, size) {
        Ok(0) => null_mut(),
        Ok(_) => alloc(func, raw::calloc(count, size)),
        Err(e) => alloc(func, Err(e)),
    }
}

/// `shmem_calloc`: collective; zeroed.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    calloc("shmem_calloc", count, size)
}

/// `shmem_align`: collective.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    align("shmem_align", alignment, size)
}

/// `shmem_malloc_with_hints`: collective; the hints only advise, and bits this library does
/// not know are ignored like the others (under `SHMEM_DEBUG` a PE says so once).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_malloc_with_hints(size: usize, hints: c_long) -> *mut c_void {
    const F: &str = "shmem_malloc_with_hints";
    if size == 0 { null_mut() } else { alloc(F, oxshmem_rt::heap::malloc_with_hints(size, hints as u64)) }
}

/// `shmem_realloc`: collective. A NULL `ptr` allocates; a zero `size` frees.
///
/// # Safety
/// `ptr` must be NULL or a live symmetric allocation, not used after a successful call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: forwarded from the caller.
    unsafe { realloc("shmem_realloc", ptr, size) }
}

/// `shmem_free`: collective; NULL is ignored.
///
/// # Safety
/// `ptr` must be NULL or a live symmetric allocation, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_free(ptr: *mut c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free("shmem_free", ptr) }
}

/// `shmalloc` (deprecated `shmem_malloc`).
#[unsafe(no_mangle)]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    malloc("shmalloc", size)
}

/// `shmemalign` (deprecated `shmem_align`).
#[unsafe(no_mangle)]
pub extern "C" fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
    align("shmemalign", alignment, size)
}

/// `shrealloc` (deprecated `shmem_realloc`).
///
/// # Safety
/// As [`shmem_realloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: forwarded from the caller.
    unsafe { realloc("shrealloc", ptr, size) }
}

/// `shfree` (deprecated `shmem_free`).
///
/// # Safety
/// As [`shmem_free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shfree(ptr: *mut c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free("shfree", ptr) }
}

/// `shmemx_heap_free`: bytes free in this PE's symmetric heap.
#[unsafe(no_mangle)]
pub extern "C" fn shmemx_heap_free() -> usize {
    ok("shmemx_heap_free", raw::heap_free())
}

/// `shmemx_heap_size`: bytes the symmetric heap manages.
#[unsafe(no_mangle)]
pub extern "C" fn shmemx_heap_size() -> usize {
    ok("shmemx_heap_size", raw::heap_size())
}
