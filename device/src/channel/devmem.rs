//! Memory a device can reach: the allocator seam every shared structure (the proxy ring, the
//! IBGDA queues and their table) takes its memory from.
//!
//! The CPU back end uses the Rust heap ([`HostAlloc`]); a CUDA back end passes an allocator that
//! returns host-pinned, device-mapped memory (`cuMemHostAlloc`) instead, and the structures
//! are built in it unchanged. Each structure takes ONE allocation and carves its parts out of
//! it ([`Carve`]), so a back end maps or registers one range per structure.

use std::ptr::NonNull;
use std::sync::Arc;

/// Alignment of every allocation and of every part carved out of one (a cache line).
pub const DEVICE_ALIGN: usize = 64;
/// A page: the host allocator aligns allocations of at least this size to it, so parts carved at
/// page offsets ([`Carve::take_page`]) start on pages.
pub const PAGE: usize = 4096;

/// Where device-reachable memory comes from. A back end implements it over its own memory
/// (a CUDA back end: `cuMemHostAlloc(DEVICEMAP | PORTABLE)`, whose host address is also the
/// device address under unified addressing): the structures store the addresses `alloc`
/// returns and device code follows them.
pub trait DeviceAlloc: Send + Sync + std::fmt::Debug {
    /// What the memory is, for error messages (`"host heap"`, `"cuMemHostAlloc"`).
    fn name(&self) -> &str;

    /// `bytes` (> 0) bytes aligned to [`DEVICE_ALIGN`], zeroed; an error says why not.
    fn alloc(&self, bytes: usize) -> Result<*mut u8, String>;

    /// Gives back what [`alloc`](Self::alloc) returned.
    ///
    /// # Safety
    /// `ptr` came from `alloc(bytes)` on this allocator and is used no more.
    unsafe fn free(&self, ptr: *mut u8, bytes: usize);
}

/// The Rust heap (zeroed): what the CPU back end uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostAlloc;

/// The host allocator's alignment for `bytes`: a page from a page on, else [`DEVICE_ALIGN`].
fn host_align(bytes: usize) -> usize {
    if bytes >= PAGE { PAGE } else { DEVICE_ALIGN }
}

impl DeviceAlloc for HostAlloc {
    fn name(&self) -> &str {
        "host heap"
    }

    fn alloc(&self, bytes: usize) -> Result<*mut u8, String> {
        let l = std::alloc::Layout::from_size_align(bytes.max(1), host_align(bytes))
            .map_err(|_| format!("{bytes} bytes is too large an allocation"))?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(l) };
        if p.is_null() { Err(format!("out of memory allocating {bytes} bytes")) } else { Ok(p) }
    }

    /// # Safety
    /// `ptr` must come from this allocator's `alloc(bytes)` and not have been freed.
    unsafe fn free(&self, ptr: *mut u8, bytes: usize) {
        if let Ok(l) = std::alloc::Layout::from_size_align(bytes.max(1), host_align(bytes)) {
            // SAFETY: allocated by `alloc` with this layout (the caller's promise).
            unsafe { std::alloc::dealloc(ptr, l) }
        }
    }
}

/// The Rust heap, as a shared allocator.
pub fn host() -> Arc<dyn DeviceAlloc> {
    Arc::new(HostAlloc)
}

/// Whether this process's CPU can load and store the `len` bytes at `addr`: memory of this
/// process that need not be mapped for the CPU (a GPU's, which behind PCIe the CPU reaches only
/// through copies; on a coherent system, at its device address). Asked of the kernel, which
/// answers `EFAULT` where a load would fault: `process_vm_readv` of the bytes from this process
/// and `process_vm_writev` of the same bytes back. Nothing else may write them meanwhile.
pub fn cpu_reaches(addr: u64, len: usize) -> bool {
    let mut buf = vec![0u8; len];
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: len };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: len };
    // SAFETY: both vectors describe one valid range each (ours: `buf`); the kernel checks the
    // remote one, in this very process, and fails instead of faulting.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    // SAFETY: as above; the same bytes go back where they were read.
    read == len as isize && unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) } == len as isize
}

/// One allocation from a [`DeviceAlloc`], freed on drop. It holds raw bytes: whoever places
/// values in it drops them (if they need it) before the allocation goes.
#[derive(Debug)]
pub struct DeviceMem {
    ptr: NonNull<u8>,
    bytes: usize,
    from: Arc<dyn DeviceAlloc>,
}

// SAFETY: raw memory; what is placed in it decides its own sharing.
unsafe impl Send for DeviceMem {}
// SAFETY: as above.
unsafe impl Sync for DeviceMem {}

impl DeviceMem {
    /// `bytes` bytes (at least 1) aligned to 64, zeroed, from `from`.
    pub fn new(bytes: usize, from: &Arc<dyn DeviceAlloc>) -> Result<DeviceMem, String> {
        let bytes = bytes.max(1);
        let p = from.alloc(bytes).map_err(|e| format!("{}: {e}", from.name()))?;
        let ptr = NonNull::new(p).ok_or_else(|| format!("{}: returned null for {bytes} bytes", from.name()))?;
        if !(p as usize).is_multiple_of(DEVICE_ALIGN) {
            // SAFETY: just allocated by `from` with this size.
            unsafe { from.free(p, bytes) };
            return Err(format!("{}: returned {p:p}, not aligned to {DEVICE_ALIGN} bytes", from.name()));
        }
        Ok(DeviceMem { ptr, bytes, from: from.clone() })
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes allocated.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Never empty (at least one byte is allocated).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The allocator it came from.
    pub fn allocator(&self) -> &Arc<dyn DeviceAlloc> {
        &self.from
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: allocated by `from` with this size, freed once.
        unsafe { self.from.free(self.ptr.as_ptr(), self.bytes) }
    }
}

/// Lays parts out in one allocation: each part starts on a 64-byte boundary.
#[derive(Debug, Default, Clone, Copy)]
pub struct Carve {
    end: usize,
}

impl Carve {
    /// Reserves room for `n` values of `T`; returns the part's offset.
    pub fn take<T>(&mut self, n: usize) -> usize {
        assert!(std::mem::align_of::<T>() <= DEVICE_ALIGN, "a part aligned beyond 64 bytes");
        let off = self.end.next_multiple_of(DEVICE_ALIGN);
        self.end = off + n * std::mem::size_of::<T>();
        off
    }

    /// Reserves room for `n` values of `T` at an offset that is a multiple of [`PAGE`] (what a
    /// NIC registering the allocation by pages needs of a queue's start); the part's offset.
    pub fn take_page<T>(&mut self, n: usize) -> usize {
        self.end = self.end.next_multiple_of(PAGE);
        self.take::<T>(n)
    }

    /// Bytes the parts take.
    pub fn bytes(&self) -> usize {
        self.end.next_multiple_of(DEVICE_ALIGN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU reaches ordinary memory and not a page it may not touch.
    #[test]
    #[cfg_attr(miri, ignore = "process_vm_readv and mmap are foreign functions")]
    fn the_cpu_reach_is_asked_of_the_kernel() {
        let mem = DeviceMem::new(4096, &host()).expect("memory");
        // SAFETY: our own allocation, 8 bytes of it.
        unsafe { mem.as_ptr().cast::<u64>().write(0x1234) };
        assert!(cpu_reaches(mem.as_ptr() as u64, 8));
        // SAFETY: as above; the value survived the probe's write-back.
        assert_eq!(unsafe { mem.as_ptr().cast::<u64>().read() }, 0x1234);
        // SAFETY: a fresh anonymous page with no access, unmapped below.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        assert_ne!(p, libc::MAP_FAILED);
        assert!(!cpu_reaches(p as u64, 8));
        // A read-only page is not reached either: the NIC writes its queues.
        // SAFETY: the page is ours; it is unmapped below.
        unsafe { libc::mprotect(p, 4096, libc::PROT_READ) };
        assert!(!cpu_reaches(p as u64, 8));
        // SAFETY: mapped above.
        unsafe { libc::munmap(p, 4096) };
    }
}
