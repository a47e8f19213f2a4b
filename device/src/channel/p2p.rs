//! The P2P channel: the peer's heap is mapped in this process, so a device thread moves data
//! with plain copies and updates it with the CPU's own atomics — atomic against the host
//! runtime's shm path and every other PE, since they use the same instructions on the same
//! mapping. Completion is immediate; `quiet` and `fence` reduce to processor fences.

use oxshmem::transport::shm::{atomic_at, copy_to_peer};
use oxshmem::transport::{AmoOp, Width};

/// Copies `len` bytes to the peer.
///
/// # Safety
/// `dst` must be a mapped peer address valid for `len` bytes, `src` valid for reads.
#[inline(always)]
pub(crate) unsafe fn put(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded from the caller; memmove semantics for a put to oneself. Large puts
    // stream around this core's cache (see `copy_to_peer`).
    unsafe { copy_to_peer(dst, src, len) }
}

/// Stores one naturally aligned value of `width` bytes (1, 2, 4 or 8) as a single store.
///
/// # Safety
/// `dst` must be a mapped peer address valid and aligned for `width` bytes.
#[inline(always)]
pub(crate) unsafe fn p(dst: *mut u8, bits: u64, width: usize) {
    use std::sync::atomic::*;
    // SAFETY: forwarded from the caller.
    unsafe {
        match width {
            1 => AtomicU8::from_ptr(dst).store(bits as u8, Ordering::Relaxed),
            2 => AtomicU16::from_ptr(dst.cast()).store(bits as u16, Ordering::Relaxed),
            4 => AtomicU32::from_ptr(dst.cast()).store(bits as u32, Ordering::Relaxed),
            _ => AtomicU64::from_ptr(dst.cast()).store(bits, Ordering::Relaxed),
        }
    }
}

/// Copies `len` bytes from the peer.
///
/// # Safety
/// `src` must be a mapped peer address valid for `len` bytes, `dst` valid for writes.
#[inline(always)]
pub(crate) unsafe fn get(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { std::ptr::copy(src, dst, len) }
}

/// An atomic on the peer; returns the previous value.
///
/// # Safety
/// `dst` must be a mapped peer address aligned for `width`.
#[inline(always)]
pub(crate) unsafe fn atomic(dst: *mut u8, width: Width, op: AmoOp) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { atomic_at(dst, width, op) }
}
