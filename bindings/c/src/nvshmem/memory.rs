//! NVSHMEM's memory routines: the symmetric heap (the same one `shmem_malloc` allocates from,
//! so NVSHMEM and OpenSHMEM routines may use each other's memory), `nvshmem_ptr`, and buffer
//! registration.
//!
//! With the CUDA back end (`nvshmem/gpu/`: a program that links `libnvshmem_device.a`, or
//! `OXSHMEM_CUDA_HEAP=on`) `nvshmem_malloc`, `_calloc`, `_align` and `_free` work on the GPU
//! symmetric heap and `nvshmem_ptr` gives peers' GPU heap addresses; `shmem_malloc` keeps
//! giving host memory. Without it the heap is host memory. `nvshmemx_buffer_register` exists so that
//! a NIC may use a local buffer as the source or target of RMA: it checks that the range is memory
//! of this process (host memory mapped readable over the whole range, or GPU memory where the CUDA
//! back end runs) and records it (a second registration of an overlapping range, or unregistering
//! what was never registered, is an error, as in NVSHMEM). Over the IBGDA device channel it also
//! registers the range with the NIC and enters it in the table the device library looks a local
//! buffer's key up in (`oxshmem_device::ibgda::Ibgda::register_local`): a kernel's put from (or
//! get into) `cudaMalloc` or pinned host memory outside the heap needs it there, as on NVSHMEM,
//! and without it records an error naming the buffer. The host transports and the P2P and proxy
//! channels reach any local memory, so there the registration is only recorded.
//! `nvshmemx_buffer_register_symmetric` turns a buffer made with CUDA's VMM API into symmetric
//! memory; it needs the CUDA back end and says so. There is no multicast: `nvshmemx_mc_ptr`
//! returns NULL.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use parking_lot::Mutex;

use super::{NvTeam, code};
use crate::error::{invalid, report};
use crate::memory;

/// `nvshmem_malloc`: collective.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_malloc(size: usize) -> *mut c_void {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_malloc");
    #[cfg(feature = "cuda")]
    if let Some(r) = super::gpu::malloc("nvshmem_malloc", size, 1, false) {
        return crate::error::ok("nvshmem_malloc", r);
    }
    memory::malloc("nvshmem_malloc", size)
}

/// `nvshmem_calloc`: collective; zeroed.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_calloc(count: usize, size: usize) -> *mut c_void {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_calloc");
    #[cfg(feature = "cuda")]
    if super::gpu::active() {
        const F: &str = "nvshmem_calloc";
        let r = count
            .checked_mul(size)
            .ok_or_else(|| invalid(F, format!("{count} elements of {size} bytes overflow")))
            .and_then(|bytes| super::gpu::malloc(F, bytes, 1, true).expect("the back end is active"));
        return crate::error::ok(F, r);
    }
    memory::calloc("nvshmem_calloc", count, size)
}

/// `nvshmem_align`: collective.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_align(alignment: usize, size: usize) -> *mut c_void {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_align");
    #[cfg(feature = "cuda")]
    if super::gpu::active() {
        const F: &str = "nvshmem_align";
        let r = if alignment.is_power_of_two() {
            super::gpu::malloc(F, size, alignment, false).expect("the back end is active")
        } else {
            Err(invalid(F, format!("alignment {alignment} is not a power of two")))
        };
        return crate::error::ok(F, r);
    }
    memory::align("nvshmem_align", alignment, size)
}

/// `nvshmem_free`: collective.
///
/// # Safety
/// `ptr` must be NULL or a live symmetric allocation, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_free(ptr: *mut c_void) {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_free");
    #[cfg(feature = "cuda")]
    if let Some(r) = super::gpu::free("nvshmem_free", ptr) {
        return crate::error::ok("nvshmem_free", r);
    }
    // SAFETY: forwarded from the caller.
    unsafe { memory::free("nvshmem_free", ptr) }
}

/// `nvshmem_ptr`: a local address of `ptr` on `pe`, or NULL when `pe`'s memory is not mapped
/// here.
///
/// # Safety
/// None: `ptr` is only translated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_ptr(ptr: *const c_void, pe: c_int) -> *mut c_void {
    // An address of the GPU heap is routed by the runtime to its segment, which gives the
    // peer's heap as mapped here.
    oxshmem_rt::raw::ptr(ptr.cast(), pe).cast()
}

/// `nvshmemx_mc_ptr`: NULL — no multicast object exists here (NVSHMEM returns NULL too where
/// the team has none).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_mc_ptr(team: NvTeam, _ptr: *const c_void) -> *mut c_void {
    const F: &str = "nvshmemx_mc_ptr";
    if let Err(e) = super::teams::resolve(F, team) {
        report(F, e);
    }
    null_mut()
}

/// The registered local buffers: (start, length, whether the IBGDA channel's NIC holds it too).
static REGISTERED: Mutex<Vec<(usize, usize, bool)>> = Mutex::new(Vec::new());

/// `nvshmemx_buffer_register`: 0, or an error code after saying why.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_register(addr: *mut c_void, length: usize) -> c_int {
    const F: &str = "nvshmemx_buffer_register";
    if let Err(e) = oxshmem_rt::raw::my_pe() {
        return super::fail(F, code::INTERNAL, e);
    }
    let start = addr as usize;
    if addr.is_null() || length == 0 {
        return super::fail(F, code::INVALID_VALUE, invalid(F, format!("cannot register {length} bytes at {addr:p}")));
    }
    let Some(end) = start.checked_add(length) else {
        return super::fail(F, code::INVALID_VALUE, invalid(F, format!("{addr:p} + {length} bytes overflows")));
    };
    let gpu = match check_mapped(start, end) {
        Ok(gpu) => gpu,
        Err(why) => {
            return super::fail(F, code::INVALID_VALUE, invalid(F, format!("{addr:p} (+{length} bytes) {why}")));
        }
    };
    let mut regs = REGISTERED.lock();
    if let Some(&(s, l, _)) = regs.iter().find(|&&(s, l, _)| start < s + l && s < end) {
        return super::fail(
            F,
            code::INVALID_VALUE,
            invalid(F, format!("{addr:p} (+{length} bytes) overlaps the registered buffer {s:#x} (+{l} bytes)")),
        );
    }
    let nic = match register_with_nic(start, length, gpu) {
        Ok(nic) => nic,
        Err(why) => {
            return super::fail(
                F,
                code::INTERNAL,
                invalid(F, format!("{addr:p} (+{length} bytes): the IBGDA channel's NIC: {why}")),
            );
        }
    };
    regs.push((start, length, nic));
    code::SUCCESS
}

/// Registers a local buffer with the IBGDA channel's NIC where the CUDA back end runs over it
/// (see the module documentation); whether it did.
#[allow(unused_variables)] // without the CUDA back end there is no NIC to tell
fn register_with_nic(start: usize, length: usize, gpu: bool) -> Result<bool, String> {
    #[cfg(feature = "cuda")]
    if let Some(b) = oxshmem_device::cuda::segment::current() {
        return b.register_local(start as u64, length as u64, gpu).map_err(|e| e.to_string());
    }
    Ok(false)
}

/// Undoes [`register_with_nic`] for the buffer at `start`.
#[allow(unused_variables)]
fn unregister_with_nic(start: usize) -> Result<(), String> {
    #[cfg(feature = "cuda")]
    if let Some(b) = oxshmem_device::cuda::segment::current() {
        return b.unregister_local(start as u64).map_err(|e| e.to_string());
    }
    Ok(())
}

/// Whether `[start, end)` is memory of this process that RMA may use: GPU memory, where the
/// CUDA back end runs and the driver says both ends are device memory (`Ok(true)`); else host
/// memory mapped readable over the whole range (`/proc/self/maps`, `Ok(false)`). `Err` says
/// what is wrong.
fn check_mapped(start: usize, end: usize) -> Result<bool, String> {
    #[cfg(feature = "cuda")]
    if super::gpu::active() {
        let dev = |a: usize| oxshmem_device::cuda::pointer_is_device(a as *const c_void).unwrap_or(false);
        match (dev(start), dev(end - 1)) {
            (true, true) => return Ok(true),
            (true, false) | (false, true) => {
                return Err("is partly GPU memory and partly not (one buffer must be one kind of memory)".into());
            }
            (false, false) => {}
        }
    }
    let maps =
        std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("cannot be checked: /proc/self/maps: {e}"))?;
    host_mapped(&maps, start, end).map(|()| false)
}

/// Whether the mappings listed in `maps` (the text of `/proc/self/maps`) cover `[start, end)`
/// with readable memory; `Err` names the first byte that is not.
fn host_mapped(maps: &str, start: usize, end: usize) -> Result<(), String> {
    let mut at = start;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else { continue };
        let Some((lo, hi)) = range.split_once('-') else { continue };
        let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) else { continue };
        if hi <= at {
            continue;
        }
        if lo > at {
            break;
        }
        if !perms.starts_with('r') {
            return Err(format!("is not readable memory: {at:#x} lies in a mapping with permissions {perms}"));
        }
        at = hi;
        if at >= end {
            return Ok(());
        }
    }
    Err(format!(
        "is not memory of this process: {at:#x} is not mapped (host memory must be mapped over the whole range)"
    ))
}

/// `nvshmemx_buffer_unregister`: 0, or an error code when `addr` starts no registered buffer.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_unregister(addr: *mut c_void) -> c_int {
    const F: &str = "nvshmemx_buffer_unregister";
    let mut regs = REGISTERED.lock();
    match regs.iter().position(|&(s, _, _)| s == addr as usize) {
        Some(i) => {
            let (start, _, nic) = regs.swap_remove(i);
            if nic && let Err(why) = unregister_with_nic(start) {
                return super::fail(F, code::INTERNAL, invalid(F, format!("{addr:p}: the IBGDA channel's NIC: {why}")));
            }
            code::SUCCESS
        }
        None => super::fail(F, code::INVALID_VALUE, invalid(F, format!("{addr:p} is not a registered buffer"))),
    }
}

/// `nvshmemx_buffer_unregister_all`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_unregister_all() {
    const F: &str = "nvshmemx_buffer_unregister_all";
    for (start, _, nic) in REGISTERED.lock().drain(..) {
        if nic && let Err(why) = unregister_with_nic(start) {
            report(F, invalid(F, format!("{start:#x}: the IBGDA channel's NIC: {why}")));
        }
    }
}

/// `nvshmemx_buffer_register_symmetric`: needs a buffer from CUDA's VMM API and the CUDA back
/// end; without them NULL, after saying so.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_register_symmetric(buf_ptr: *mut c_void, size: usize, _flags: c_int) -> *mut c_void {
    const F: &str = "nvshmemx_buffer_register_symmetric";
    report(
        F,
        invalid(
            F,
            format!(
                "cannot make {buf_ptr:p} (+{size} bytes) symmetric: that needs GPU memory from CUDA's VMM API \
                 (cuMemCreate) and the CUDA back end, which this build does not have; allocate symmetric \
                 memory with nvshmem_malloc instead"
            ),
        ),
    );
    null_mut()
}

/// `nvshmemx_buffer_unregister_symmetric`: see [`nvshmemx_buffer_register_symmetric`].
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_unregister_symmetric(mmap_ptr: *mut c_void, _size: usize) -> c_int {
    const F: &str = "nvshmemx_buffer_unregister_symmetric";
    super::fail(F, code::INVALID_VALUE, invalid(F, format!("{mmap_ptr:p} was not registered as symmetric")))
}

#[cfg(test)]
mod tests {
    use super::host_mapped;

    #[test]
    fn a_range_must_be_mapped_readable_throughout() {
        let maps = "1000-3000 rw-p 00000000 00:00 0\n3000-4000 r--p 00000000 00:00 0\n5000-6000 ---p 0 00:00 0\n";
        assert!(host_mapped(maps, 0x1000, 0x4000).is_ok());
        assert!(host_mapped(maps, 0x2000, 0x2001).is_ok());
        assert!(host_mapped(maps, 0x10, 0x1010).unwrap_err().contains("0x10 is not mapped"));
        assert!(host_mapped(maps, 0x3000, 0x4001).unwrap_err().contains("0x4000 is not mapped"));
        assert!(host_mapped(maps, 0x5000, 0x5001).unwrap_err().contains("permissions ---p"));
        assert!(host_mapped(maps, 0x1000, 1 << 62).is_err());
    }
}
