//! The GPU symmetric heap: physical GPU memory this PE creates and exports as a POSIX file
//! descriptor, and the mappings of the heaps the other PEs of the node export.
//!
//! Both are built with CUDA's virtual memory management, in this order (and torn down in the
//! reverse): reserve a VA range (`cuMemAddressReserve`), create or import the physical memory
//! (`cuMemCreate` / `cuMemImportFromShareableHandle`), map it (`cuMemMap`), grant this device
//! read/write access (`cuMemSetAccess`). A failure at any step undoes the steps before it.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use cudarc::driver::sys;

use super::error::check;
use super::{CudaError, DevAddr, Gpu, attribute};

/// The reserved, mapped range common to the heap and a peer mapping; releases what it holds.
struct Vmm {
    gpu: Gpu,
    base: DevAddr,
    size: usize,
    handle: Option<sys::CUmemGenericAllocationHandle>,
    mapped: bool,
}

impl Vmm {
    /// Reserves `size` bytes of VA, aligned to `align`.
    fn reserve(gpu: &Gpu, size: usize, align: usize) -> Result<Vmm, CudaError> {
        let mut base: DevAddr = 0;
        // SAFETY: `base` is a valid out-pointer; the context is current (callers).
        let r = unsafe { sys::cuMemAddressReserve(&mut base, size, align, 0, 0) };
        check(|| format!("cuMemAddressReserve of {size} bytes"), r)?;
        Ok(Vmm { gpu: gpu.clone(), base, size, handle: None, mapped: false })
    }

    /// Maps the physical memory `handle` (owned from here on) over the range and grants this
    /// device read/write access.
    fn map(&mut self, handle: sys::CUmemGenericAllocationHandle) -> Result<(), CudaError> {
        self.handle = Some(handle);
        let (base, size) = (self.base, self.size);
        // SAFETY: the range was reserved with this size; `handle` holds at least `size` bytes.
        check(|| format!("cuMemMap of {size} bytes at {base:#x}"), unsafe { sys::cuMemMap(base, size, 0, handle, 0) })?;
        self.mapped = true;
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: self.gpu.ordinal(),
            },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range is mapped; one access descriptor is passed, with count 1.
        let r = unsafe { sys::cuMemSetAccess(base, size, &access, 1) };
        check(
            || format!("cuMemSetAccess (read/write for device {}) of {size} bytes at {base:#x}", self.gpu.ordinal()),
            r,
        )
    }
}

impl Drop for Vmm {
    fn drop(&mut self) {
        // Errors here leave nothing to undo; each step still runs so as to free what it can.
        let _ = self.gpu.make_current();
        if self.mapped {
            // SAFETY: the range was mapped by `map` and is unmapped once, here.
            unsafe { sys::cuMemUnmap(self.base, self.size) };
        }
        if let Some(h) = self.handle {
            // SAFETY: the handle came from cuMemCreate or an import and is released once; the
            // memory itself goes when the last mapping (here or in a peer) goes.
            unsafe { sys::cuMemRelease(h) };
        }
        // SAFETY: the range was reserved by `reserve` and is freed once, after its unmap.
        unsafe { sys::cuMemAddressFree(self.base, self.size) };
    }
}

/// The allocation properties of the heap: pinned device memory on `gpu`, exportable as a POSIX
/// file descriptor, GPUDirect-RDMA capable where the device supports it on VMM memory.
fn alloc_prop(gpu: &Gpu) -> Result<sys::CUmemAllocationProp, CudaError> {
    // SAFETY: a plain C struct for which all zeroes is valid (0 fields, null pointer).
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location =
        sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: gpu.ordinal() };
    let gdr =
        attribute(gpu.dev(), sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)?;
    prop.allocFlags.gpuDirectRDMACapable = u8::from(gdr != 0);
    Ok(prop)
}

/// Fails unless `gpu` supports VMM and POSIX-fd handles (what the heap needs).
fn require_vmm(gpu: &Gpu) -> Result<(), CudaError> {
    use sys::CUdevice_attribute as A;
    for (attr, name, what) in [
        (
            A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            "VIRTUAL_MEMORY_MANAGEMENT",
            "virtual memory management",
        ),
        (
            A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
            "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR",
            "POSIX file descriptor handles",
        ),
    ] {
        if attribute(gpu.dev(), attr)? == 0 {
            return Err(CudaError::Unsupported {
                ordinal: gpu.ordinal(),
                device: gpu.name().to_string(),
                what: format!("{what} (CU_DEVICE_ATTRIBUTE_{name}_SUPPORTED is 0)"),
            });
        }
    }
    Ok(())
}

/// The allocation granularity of the heap on `gpu` (`CU_MEM_ALLOC_GRANULARITY_MINIMUM`;
/// 2 MiB on current GPUs).
///
/// # Errors
/// The driver's.
pub fn granularity(gpu: &Gpu) -> Result<usize, CudaError> {
    let prop = alloc_prop(gpu)?;
    let mut g: usize = 0;
    // SAFETY: `g` and `prop` are valid pointers.
    let r = unsafe {
        sys::cuMemGetAllocationGranularity(
            &mut g,
            &prop,
            sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
        )
    };
    check(|| "cuMemGetAllocationGranularity".into(), r)?;
    Ok(g.max(1))
}

/// `size` rounded up to the granularity of `gpu`, checked.
fn rounded(gpu: &Gpu, routine: &'static str, size: usize) -> Result<(usize, usize), CudaError> {
    if size == 0 {
        return Err(CudaError::InvalidArgument {
            routine,
            why: "size 0 bytes; the heap holds at least one byte".into(),
        });
    }
    let g = granularity(gpu)?;
    let size = size.checked_next_multiple_of(g).ok_or_else(|| CudaError::InvalidArgument {
        routine,
        why: format!("size {size} bytes does not round up to the granularity {g}"),
    })?;
    Ok((size, g))
}

/// This PE's GPU symmetric heap: `size` bytes of device memory (rounded up to the allocation
/// granularity), mapped at [`GpuHeap::base`] in this process, which the other PEs of the node
/// map from the file descriptor [`GpuHeap::create`] returns. Dropping it unmaps, releases the
/// handle and frees the range; the memory lives on while a peer still maps it.
pub struct GpuHeap {
    vmm: Vmm,
    handle: sys::CUmemGenericAllocationHandle,
}

impl GpuHeap {
    /// Reserves, creates, maps and exports the heap; returns it and the exported descriptor
    /// (the driver's own file, closed when dropped; send it to the peers with
    /// [`super::fdpass`]).
    ///
    /// # Errors
    /// A device without VMM or POSIX-fd handles; size 0; the first driver call that failed
    /// (`cuMemCreate of 2147483648 bytes failed: CUDA_ERROR_OUT_OF_MEMORY (2)`).
    pub fn create(gpu: &Gpu, size: usize) -> Result<(GpuHeap, OwnedFd), CudaError> {
        gpu.make_current()?;
        require_vmm(gpu)?;
        let (size, g) = rounded(gpu, "GpuHeap::create", size)?;
        let prop = alloc_prop(gpu)?;
        let mut vmm = Vmm::reserve(gpu, size, g)?;
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: `handle` and `prop` are valid pointers; flags 0.
        check(|| format!("cuMemCreate of {size} bytes"), unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) })?;
        vmm.map(handle)?;
        let heap = GpuHeap { vmm, handle };
        let fd = heap.export()?;
        Ok((heap, fd))
    }

    /// Another descriptor of the heap's memory (`cuMemExportToShareableHandle`).
    ///
    /// # Errors
    /// The driver's.
    pub fn export(&self) -> Result<OwnedFd, CudaError> {
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: for POSIX_FILE_DESCRIPTOR the driver writes an int through the pointer.
        let r = unsafe {
            sys::cuMemExportToShareableHandle(
                (&mut fd as *mut std::ffi::c_int).cast(),
                self.handle,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        };
        check(|| "cuMemExportToShareableHandle (POSIX file descriptor)".into(), r)?;
        // SAFETY: the driver returned a new descriptor that this process owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The heap's address in this process (device code and [`Gpu::copy_htod`] use it).
    pub fn base(&self) -> DevAddr {
        self.vmm.base
    }

    /// Its size in bytes (rounded up to the granularity): the size peers pass to
    /// [`GpuHeap::import_peer`].
    pub fn size(&self) -> usize {
        self.vmm.size
    }

    /// Maps the heap a peer of this node exported, from the descriptor `fd` received from it,
    /// into a range of `size` bytes (the peer's [`GpuHeap::size`]) reserved here, readable and
    /// writable by this process's device. `fd` is only read: drop it after the call. Works for
    /// a peer on the same GPU (several PEs per GPU) and, where the GPUs can reach each other
    /// (NVLink, PCIe P2P), for a peer on another.
    ///
    /// # Errors
    /// As [`GpuHeap::create`]; `cuMemImportFromShareableHandle` fails on a descriptor that is
    /// not a CUDA allocation, `cuMemMap` on a size larger than the peer's, `cuMemSetAccess` on a
    /// peer GPU this one cannot reach.
    pub fn import_peer(gpu: &Gpu, fd: impl AsFd, size: usize) -> Result<PeerMapping, CudaError> {
        gpu.make_current()?;
        require_vmm(gpu)?;
        let (size, g) = rounded(gpu, "GpuHeap::import_peer", size)?;
        let raw = fd.as_fd().as_raw_fd();
        let mut vmm = Vmm::reserve(gpu, size, g)?;
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: for POSIX_FILE_DESCRIPTOR the OS handle is the descriptor's value cast to a
        // pointer; the driver reads the file and does not take ownership of the descriptor.
        let r = unsafe {
            sys::cuMemImportFromShareableHandle(
                &mut handle,
                raw as usize as *mut std::ffi::c_void,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        };
        check(|| format!("cuMemImportFromShareableHandle (fd {raw})"), r)?;
        vmm.map(handle)?;
        Ok(PeerMapping { vmm })
    }
}

/// A peer's heap mapped into this process. Dropping it unmaps it and frees the range.
pub struct PeerMapping {
    vmm: Vmm,
}

impl PeerMapping {
    /// Grants device `ordinal` of this process read/write access to the mapping too (the GPU
    /// whose memory it is, so that atomics on it can run there: see `segment::amo_at`).
    ///
    /// # Errors
    /// The driver's: `cuMemSetAccess` on a device that cannot reach the memory.
    pub fn grant(&self, ordinal: i32) -> Result<(), CudaError> {
        self.vmm.gpu.make_current()?;
        let (base, size) = (self.vmm.base, self.vmm.size);
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: ordinal },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range is mapped; one access descriptor is passed, with count 1.
        let r = unsafe { sys::cuMemSetAccess(base, size, &access, 1) };
        check(|| format!("cuMemSetAccess (read/write for device {ordinal}) of {size} bytes at {base:#x}"), r)
    }

    /// The address of the peer's heap in this process.
    pub fn base(&self) -> DevAddr {
        self.vmm.base
    }

    /// The size of the mapping in bytes.
    pub fn size(&self) -> usize {
        self.vmm.size
    }
}

impl std::fmt::Debug for GpuHeap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuHeap({:#x}, {} bytes, {:?})", self.vmm.base, self.vmm.size, self.vmm.gpu)
    }
}

impl std::fmt::Debug for PeerMapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeerMapping({:#x}, {} bytes, {:?})", self.vmm.base, self.vmm.size, self.vmm.gpu)
    }
}

/// GPU memory as a [`DeviceAlloc`](crate::channel::devmem::DeviceAlloc): what the IBGDA queues
/// are built in with `OXSHMEM_IBGDA_QUEUE_MEM=gpu` (NVSHMEM's NIC buffers in GPU memory). Each
/// allocation is its own `cuMemCreate` (rounded up to the granularity), so that it starts a
/// dma-buf the NIC registers ([`Gpu::export_dmabuf`]). The host may not load or store it (a GPU
/// behind PCIe): whoever builds structures in it writes them through copies.
#[derive(Debug)]
pub struct GpuAlloc {
    gpu: Gpu,
    live: parking_lot::Mutex<std::collections::HashMap<usize, GpuHeap>>,
}

impl GpuAlloc {
    /// An allocator of `gpu`'s memory.
    pub fn new(gpu: &Gpu) -> GpuAlloc {
        GpuAlloc { gpu: gpu.clone(), live: Default::default() }
    }
}

impl crate::channel::devmem::DeviceAlloc for GpuAlloc {
    fn name(&self) -> &str {
        "cuMemCreate"
    }

    fn alloc(&self, bytes: usize) -> Result<*mut u8, String> {
        let (mem, _fd) = GpuHeap::create(&self.gpu, bytes).map_err(|e| e.to_string())?;
        // SAFETY: the fresh allocation, `size()` bytes of this GPU's memory, unused yet.
        unsafe { self.gpu.memset(mem.base(), 0, mem.size()) }.map_err(|e| e.to_string())?;
        let p = mem.base() as *mut u8;
        self.live.lock().insert(p as usize, mem);
        Ok(p)
    }

    /// Frees the allocation `alloc` returned at `ptr`.
    ///
    /// # Safety
    /// `ptr` came from this allocator's `alloc` and is used no more (by the GPU either).
    unsafe fn free(&self, ptr: *mut u8, _bytes: usize) {
        self.live.lock().remove(&(ptr as usize));
    }
}
