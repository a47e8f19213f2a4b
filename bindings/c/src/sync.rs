//! Ordering, barriers, the untyped point-to-point and signal routines, locks, and the
//! deprecated cache routines (no-ops: this runtime keeps no cache that needs managing).

use std::ffi::{c_int, c_long};

use oxshmem_rt::raw;

use crate::error::ok;
use crate::handles;
use crate::ops::{self, Amo};

/// `shmem_fence`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_fence() {
    ok("shmem_fence", raw::fence());
}

/// `shmem_quiet`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_quiet() {
    ok("shmem_quiet", raw::quiet());
}

/// `shmem_barrier_all`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_barrier_all() {
    ok("shmem_barrier_all", raw::barrier_all());
}

/// `shmem_sync_all`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_sync_all() {
    ok("shmem_sync_all", raw::sync_all());
}

/// `shmem_sync` over an active set (`PE_start`, `logPE_stride`, `PE_size`).
///
/// # Safety
/// `p_sync` is checked to be symmetric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_sync(pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, p_sync: *mut c_long) {
    // SAFETY: the runtime checks the active set and pSync.
    ok("shmem_sync", unsafe { oxshmem_rt::coll::active_set::sync(pe_start, log_pe_stride, pe_size, p_sync) });
}

/// `shmem_wait_until` on a `long` (the untyped form of OpenSHMEM 1.3).
///
/// # Safety
/// `ivar` is checked to be symmetric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_wait_until(ivar: *mut c_long, cmp: c_int, cmp_value: c_long) {
    // SAFETY: forwarded from the caller.
    unsafe { ops::wait_until("shmem_wait_until", ivar, cmp, cmp_value) }
}

/// `shmem_wait` (deprecated): waits until `*ivar` differs from `cmp_value`.
///
/// # Safety
/// `ivar` is checked to be symmetric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_wait(ivar: *mut c_long, cmp_value: c_long) {
    // SAFETY: forwarded from the caller.
    unsafe { ops::wait_until("shmem_wait", ivar, ops::CMP_NE, cmp_value) }
}

/// `shmem_swap` on a `long` (the untyped form of OpenSHMEM 1.2).
///
/// # Safety
/// `dest` is checked to be symmetric and aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_swap(dest: *mut c_long, value: c_long, pe: c_int) -> c_long {
    // SAFETY: forwarded from the caller.
    unsafe { ops::amo("shmem_swap", handles::default_ctx(), dest, Amo::Swap(value), pe) }
}

/// `shmem_signal_fetch`.
///
/// # Safety
/// `sig_addr` is checked to be symmetric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    // SAFETY: checked there.
    ok("shmem_signal_fetch", unsafe { crate::ops::signal_fetch("shmem_signal_fetch", sig_addr) })
}

/// `shmem_signal_wait_until`: returns the signal's value once `value cmp cmp_value` holds.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, cmp_value: u64) -> u64 {
    const F: &str = "shmem_signal_wait_until";
    let r = oxshmem_rt::Cmp::from_c(cmp)
        .ok_or_else(|| crate::error::invalid(F, format!("cmp {cmp} is not a SHMEM_CMP_ constant (0..=5)")))
        // SAFETY: checked there.
        .and_then(|c| unsafe { crate::ops::signal_wait_until(F, sig_addr, c, cmp_value) });
    ok(F, r)
}

/// `shmem_set_lock`.
///
/// # Safety
/// `lock` is checked to be symmetric; it must be used only through the lock routines.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_set_lock(lock: *mut c_long) {
    // SAFETY: forwarded from the caller.
    ok("shmem_set_lock", unsafe { oxshmem_rt::lock::set_lock(lock) });
}

/// `shmem_clear_lock`.
///
/// # Safety
/// As [`shmem_set_lock`]; this PE must hold the lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_clear_lock(lock: *mut c_long) {
    // SAFETY: forwarded from the caller.
    ok("shmem_clear_lock", unsafe { oxshmem_rt::lock::clear_lock(lock) });
}

/// `shmem_test_lock`: 0 when this PE took the lock, 1 when another holds it.
///
/// # Safety
/// As [`shmem_set_lock`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_test_lock(lock: *mut c_long) -> c_int {
    // SAFETY: forwarded from the caller.
    let took = ok("shmem_test_lock", unsafe { oxshmem_rt::lock::test_lock(lock) });
    c_int::from(!took)
}

/// `shmem_set_cache_inv` (deprecated): no operation.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_set_cache_inv() {}

/// `shmem_set_cache_line_inv` (deprecated): no operation.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_set_cache_line_inv(_dest: *mut std::ffi::c_void) {}

/// `shmem_clear_cache_inv` (deprecated): no operation.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_clear_cache_inv() {}

/// `shmem_clear_cache_line_inv` (deprecated): no operation.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_clear_cache_line_inv(_dest: *mut std::ffi::c_void) {}

/// `shmem_udcflush` (deprecated): no operation.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_udcflush() {}

/// `shmem_udcflush_line` (deprecated): no operation.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_udcflush_line(_dest: *mut std::ffi::c_void) {}
