//! Host routines on the GPU heap: RMA by copies, atomics through the device library's AMO
//! kernel, signals, single-word waits, and the note for the routines that do not reach it.

use std::time::Duration;

use oxshmem_device::channel::proxy::amo_flags as proxy_amo_flags;
use oxshmem_device::cuda::DevAddr;
use oxshmem_rt::raw::AmoOp;
use oxshmem_rt::{Cmp, Result};

use super::{Backend, backend, cuda_err, invalid, owns};

/// A put of `len` bytes from `src` to `dest` (in the GPU heap) on world PE `pe`: `None` when
/// `dest` is not GPU memory of the back end.
///
/// # Safety
/// `src` is valid for `len` bytes (host or GPU memory).
pub(crate) unsafe fn put(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(dest as usize) {
        return None;
    }
    let b = backend()?;
    Some(b.remote(func, dest as usize, len, pe).and_then(|d| {
        // SAFETY: `d` is inside pe's mapped heap for len bytes; src per the caller.
        unsafe { b.copy(func, d, src as DevAddr, len) }
    }))
}

/// A get of `len` bytes at `src` (in the GPU heap) on world PE `pe` into `dest`: `None` when
/// `src` is not GPU memory of the back end.
///
/// # Safety
/// `dest` is valid for writes of `len` bytes (host or GPU memory).
pub(crate) unsafe fn get(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(src as usize) {
        return None;
    }
    let b = backend()?;
    Some(b.remote(func, src as usize, len, pe).and_then(|s| {
        // SAFETY: `s` is inside pe's mapped heap for len bytes; dest per the caller.
        unsafe { b.copy(func, dest as DevAddr, s, len) }
    }))
}

/// Reads the `T` at `addr` in this PE's GPU heap (a copy, complete when it returns).
fn read_word<T: bytemuck::Pod>(func: &'static str, b: &Backend, addr: usize) -> Result<T> {
    let mut v = T::zeroed();
    let src = b.remote(func, addr, size_of::<T>(), b.me)?;
    // SAFETY: `src` is inside this PE's heap for size_of::<T>() bytes; `v` is a live local.
    unsafe { b.copy(func, (&raw mut v) as DevAddr, src, size_of::<T>()) }?;
    Ok(v)
}

/// Whether the `T` at `ivar` (in the GPU heap) satisfies `cmp value` now: `None` when `ivar` is
/// not GPU memory of the back end.
pub(crate) fn test<T: bytemuck::Pod + PartialOrd>(
    func: &'static str,
    ivar: usize,
    cmp: Cmp,
    value: T,
) -> Option<Result<bool>> {
    if !owns(ivar) {
        return None;
    }
    let b = backend()?;
    Some(read_word::<T>(func, &b, ivar).map(|v| cmp.holds(v, value)))
}

/// Waits until the `T` at `ivar` (in the GPU heap) satisfies `cmp value`, and returns it: `None`
/// when `ivar` is not GPU memory of the back end. The host polls the word with copies, backing
/// off from yields to naps of up to a millisecond; the launcher's timeout ends a wait that
/// never ends.
pub(crate) fn wait_until<T: bytemuck::Pod + PartialOrd>(
    func: &'static str,
    ivar: usize,
    cmp: Cmp,
    value: T,
) -> Option<Result<T>> {
    if !owns(ivar) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        let mut polls = 0u32;
        loop {
            let v = read_word::<T>(func, &b, ivar)?;
            if cmp.holds(v, value) {
                return Ok(v);
            }
            polls += 1;
            if polls < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(u64::from(polls.min(1000))));
            }
        }
    })())
}

/// A put with signal to `pe` whose data or signal word is in the GPU heap: the data, then the
/// signal (`op` 0: set, else add), each on the heap it is in (a copy or the AMO kernel for the
/// GPU heap, the runtime for the host heap; data put through the runtime is completed with a
/// quiet before the signal). `None` when neither is GPU memory.
///
/// # Safety
/// `src` is valid for reads of `len` bytes.
pub(crate) unsafe fn put_signal(
    func: &'static str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    sig: *mut u64,
    signal: u64,
    op: i32,
    pe: usize,
) -> Option<Result<()>> {
    if !owns(dest as usize) && !owns(sig as usize) {
        return None;
    }
    Some((|| {
        if len > 0 {
            // SAFETY: the caller's.
            match unsafe { put(func, dest, src, len, pe) } {
                Some(r) => r?,
                None => {
                    // SAFETY: the caller's; the runtime checks dest.
                    unsafe { oxshmem_rt::raw::putmem(dest, src, len, pe as i32) }?;
                    oxshmem_rt::raw::quiet()?;
                }
            }
        }
        let sop = if op == 0 { AmoOp::Set(signal) } else { AmoOp::FetchAdd(signal) };
        match amo(func, sig as usize, 8, sop, pe) {
            Some(r) => r.map(drop),
            // SAFETY: the runtime checks the signal word (symmetric, aligned).
            None => unsafe { oxshmem_rt::raw::atomic(sig, sop, pe as i32, func) }.map(drop),
        }
    })())
}

/// A host atomic on the `width`-byte word at `dest` (in the GPU heap) of world PE `pe`, through
/// the device library's one-thread kernel (the host cannot reach GPU memory atomically): the
/// prior value. `None` when `dest` is not GPU memory of the back end.
pub(crate) fn amo(func: &'static str, dest: usize, width: usize, op: AmoOp, pe: usize) -> Option<Result<u64>> {
    if !owns(dest) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        if !dest.is_multiple_of(width) || !matches!(width, 4 | 8) {
            return Err(invalid(func, format!("{dest:#x} is not a naturally aligned 4- or 8-byte word")));
        }
        let target = b.remote(func, dest, width, pe)?;
        amo_at(func, target, width, op)
    })())
}

/// An atomic `op` on the naturally aligned `width`-byte word at `target` (a GPU heap as mapped
/// here), through the device library's AMO kernel: the prior value.
pub(super) fn amo_at(func: &'static str, target: u64, width: usize, op: AmoOp) -> Result<u64> {
    let kernel = super::super::device_lib::amo().ok_or_else(|| {
        invalid(
            func,
            format!(
                "{target:#x} is GPU memory, and an atomic there from the host needs libnvshmem_device.a's AMO \
                 kernel, which this program did not register (link the device library)"
            ),
        )
    })?;
    if let Some(b) = backend() {
        // The callback makes the PE's device current itself; this also covers a device library
        // built before it did.
        b.gpu.make_current().map_err(|e| cuda_err(func, e))?;
    }
    let (flags, value, cond) = proxy_amo_flags(op, width == 8);
    let flags = u32::from(flags);
    let mut old = 0u64;
    // SAFETY: `target` is a naturally aligned word of a GPU heap mapped here; the callback
    // writes the prior value to `old`, a live local.
    let rc = unsafe { kernel(target, flags, value, cond, &mut old) };
    if rc != 0 {
        return Err(cuda_err(func, format!("the device library's atomic kernel returned CUDA error {rc}")));
    }
    Ok(old)
}

/// What to say of `addr`, instead of "is not symmetric", when it is GPU memory: the routine
/// does not reach the GPU heap from the host yet.
pub(crate) fn explain(addr: usize) -> Option<String> {
    owns(addr).then(|| {
        "is in the GPU symmetric heap (nvshmem_malloc), which this host routine does not reach yet in oxshmem's \
         CUDA back end: host put, get, p, g, atomics, signals, single-word waits, reduce, broadcast, fcollect \
         and alltoall do; for the rest, call the routine from a kernel or use a host buffer (shmem_malloc)"
            .to_string()
    })
}
