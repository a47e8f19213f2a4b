//! The device layer on a GPU, from Rust ([`GpuDevice`]): the GPU symmetric heap
//! ([`GpuBuf`]), CUDA modules that use NVSHMEM's device API ([`GpuModule`], built by nvcc
//! against `libnvshmem_device.a`), and kernel launches whose arguments are checked against
//! the kernel's parameters ([`Kernel::launch`]).
//!
//! The CPU back end ([`Device`](crate::Device)) stays the default: a program asks for the GPU
//! with [`GpuDevice::init`]. Device code is CUDA C++ calling `nvshmem_*` (the same source an
//! NVSHMEM program has), compiled to a module that the driver loads, for example:
//!
//! ```text
//! nvcc -rdc=true -arch=sm_90 -I $PREFIX/include -c ring.cu -o ring.o
//! nvcc -dlink -fatbin -arch=sm_90 ring.o $PREFIX/lib/libnvshmem_device.a -o ring.fatbin
//! ```
//!
//! ```no_run
//! use oxshmem_device::cuda::{GpuDevice, KernelArg, LaunchConfig};
//! let shmem = oxshmem::init()?;
//! let dev = GpuDevice::init(&shmem)?;                           // collective
//! let buf = dev.alloc::<u64>(&shmem, shmem.n_pes())?;            // collective, zeroed
//! let module = dev.load_module(&std::fs::read("ring.fatbin")?)?;
//! let ring = module.kernel("ring_put")?;
//! let (me, n) = (shmem.my_pe() as i32, shmem.n_pes() as i32);
//! ring.launch(LaunchConfig::threads(1), &[buf.arg(), KernelArg::I32(me), KernelArg::I32(n)])?;
//! dev.synchronize()?;                                            // a device error shows here
//! shmem.barrier_all()?;
//! println!("{:?}", buf.to_vec()?);
//! dev.finalize(&shmem)?;
//! shmem.finalize()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Kernels reach peers over the channel `OXSHMEM_DEVICE_CHANNEL` (or NVSHMEM's variables)
//! names, as the C library's do: P2P (the peers' GPU heaps are mapped here, as `nvshmem_ptr`
//! gives them; the default), the proxy (a host thread of this PE executes the requests kernels
//! write into a ring) or IBGDA (kernels write work requests into queues that a NIC consumes:
//! with no IBGDA-capable NIC, the software NIC, a host thread). A job on one node. The proxy's
//! and the software NIC's atomics on GPU memory (kernels' atomics and signals over those
//! channels, and host atomics on `GpuBuf` memory) run the device library's own one-thread
//! atomic kernel, `oxshmemi_amo_kernel`, which every module linked with `libnvshmem_device.a`
//! holds: [`GpuDevice::load_module`] takes it from the first such module (until then, such an
//! atomic fails saying so).

use std::ffi::{CString, c_void};
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::sys;

use super::error::check;
use super::{CudaError, DevAddr, Gpu, GpuPe, SetupError};
use crate::{ChannelKind, DeviceError};

/// The device library's globals a module's device code reads (`bindings/cuda/src/host.cu`).
const STATE_GLOBAL: &str = "oxshmemi_state_d";
const CUDA_STATE_GLOBAL: &str = "oxshmemi_cuda_d";
/// The device library's constant-memory copy of the device state's head, which the inline fast
/// paths read (`host.cu`, `device_host/oxshmem_fast_path.cuh`): 64 bytes, the state's first 56
/// and the atomics table's address.
const FAST_GLOBAL: &str = "oxshmemi_fast_d";
/// The device library's empty peer table, which an unbound `oxshmemi_fast_d` points at.
const FAST_NONE_GLOBAL: &str = "oxshmemi_fast_none";
const FAST_BYTES: usize = 64;
const _: () = assert!(size_of::<crate::state::DeviceState>() >= 56);

/// The GPU side of this PE, from Rust: see the [`cuda`](crate::cuda) module and `docs/cuda.md`.
#[derive(Debug, Clone)]
pub struct GpuDevice(Arc<GpuPe>, Arc<Agents>);

/// The host threads that carry kernels' operations out over the proxy or IBGDA channel: the
/// proxy thread and the software NIC. They hold the PE's GPU side (whose ring and queues they
/// read) until they have stopped: dropping this stops them first.
#[derive(Debug)]
struct Agents {
    proxy: parking_lot::Mutex<Option<crate::channel::proxy::Proxy>>,
    nic: parking_lot::Mutex<Option<crate::ibgda::softnic::SoftNic>>,
    _pe: Arc<GpuPe>,
}

impl Agents {
    /// Stops them (each finishes what was issued first).
    fn stop(&self) {
        if let Some(mut p) = self.proxy.lock().take() {
            p.stop();
        }
        if let Some(mut n) = self.nic.lock().take() {
            n.stop();
        }
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.stop();
    }
}

// SAFETY: the software NIC's handle holds a pointer to the IBGDA queues, which live in the
// `GpuPe` this struct keeps alive; the handle is only joined (from any thread) through the lock.
unsafe impl Send for Agents {}
// SAFETY: as above: every access goes through the locks.
unsafe impl Sync for Agents {}

/// Whether the proxy thread spins (`OXSHMEM_PROXY_SPIN`; by default where this host has a CPU
/// for every PE of the node and its proxy), as the C library decides.
fn proxy_spin(shmem: &oxshmem::Shmem) -> Result<bool, String> {
    Ok(match crate::config::proxy_spin()? {
        Some(s) => s,
        None => oxshmem::config::job_cpus() >= 2 * shmem.team_shared().n_pes().map_err(|e| e.to_string())?,
    })
}

fn init_err(pe: usize, e: SetupError) -> DeviceError {
    match e {
        SetupError::Runtime(e) => DeviceError::Runtime(e),
        e => DeviceError::Init { pe, reason: e.to_string() },
    }
}

impl GpuDevice {
    /// Sets this PE's GPU side up (collective over the job): opens its GPU
    /// (`OXSHMEM_CUDA_DEVICE`, else its rank on the node modulo the GPUs), creates its GPU
    /// heap (the host heap's size, `SHMEM_SYMMETRIC_SIZE`, plus the layer's own area), maps
    /// every peer's, writes the device state the device library reads, and starts the host
    /// thread of the channel kernels use (`OXSHMEM_DEVICE_CHANNEL`: `p2p`, the default, needs
    /// none, but the proxy thread where a peer's GPU has no native P2P atomics with this one;
    /// `proxy` the proxy thread; `ibgda` the software NIC where no NIC takes the queues).
    /// Several PEs may share one GPU.
    ///
    /// # Errors
    /// `PE 0: device init: no CUDA driver: libcuda.so.1 not found` and the like without a GPU;
    /// a job spanning nodes; an unknown channel.
    pub fn init(shmem: &oxshmem::Shmem) -> Result<GpuDevice, DeviceError> {
        let me = shmem.my_pe();
        let bad = |reason: String| DeviceError::Init { pe: me, reason };
        let (channel, var) = crate::config::device_channel().map_err(bad)?;
        let kind = match channel.trim() {
            "" | "auto" | "p2p" => ChannelKind::P2p,
            "proxy" => ChannelKind::Proxy,
            "ibgda" => ChannelKind::Ibgda,
            other => return Err(bad(format!("{var}={other:?}: expected p2p, proxy, ibgda or auto"))),
        };
        let predefined = [Some(shmem.team_world()), Some(shmem.team_shared()), None, None];
        let nic_memory = |gpu: &Gpu| -> Arc<dyn crate::ibgda::NicMemory> {
            Arc::new(super::channels::GpuNicMemory::new(gpu.clone()))
        };
        let pe = GpuPe::new(shmem, kind, Some(&nic_memory), &predefined).map_err(|e| init_err(me, e))?;
        tracing::info!(
            target: "cuda",
            gpu = ?pe.gpu,
            heap = pe.heap().size(),
            ?kind,
            amo_via_proxy = ?pe.amo_proxied(),
            "Rust GPU device up"
        );
        // The proxy serves the proxy channel, and over P2P the atomics of peers without native
        // P2P atomics.
        let spin = if pe.ring().is_some() { proxy_spin(shmem).map_err(bad)? } else { false };
        let pe = Arc::new(pe);
        let agents = Arc::new(Agents { proxy: Default::default(), nic: Default::default(), _pe: pe.clone() });
        if let Some(ib) = pe.ibgda().filter(|i| i.needs_software_nic()) {
            // SAFETY: the queues live in `pe`, which `agents` keeps alive until the NIC stops.
            *agents.nic.lock() = Some(unsafe { crate::ibgda::softnic::SoftNic::start_for(ib, pe.timeout_ns()) });
        }
        if let Some(ring) = pe.ring() {
            let state = std::ptr::from_ref(pe.state());
            // SAFETY: the state and the ring live in `pe`, which `agents` keeps alive until the
            // proxy stops.
            *agents.proxy.lock() = Some(unsafe {
                crate::channel::proxy::Proxy::start_with(
                    state,
                    ring.as_ptr().cast_const(),
                    spin,
                    Arc::new(super::channels::GpuTarget),
                )
            });
        }
        // The runtime's host routines reach the GPU heap from now on (`segment.rs`).
        super::segment::register(pe.clone());
        Ok(GpuDevice(pe, agents))
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.0.gpu
    }

    /// The PE's GPU side (heap, mappings, device state).
    pub fn pe(&self) -> &GpuPe {
        &self.0
    }

    /// Allocates `len` zeroed `T`s in the GPU symmetric heap (collective: every PE makes the
    /// same calls in the same order, and the call returns once every PE has allocated).
    ///
    /// # Errors
    /// The heap is exhausted (`cannot allocate … raise NVSHMEM_SYMMETRIC_SIZE`), or a
    /// collective failed.
    pub fn alloc<T: bytemuck::Pod>(&self, shmem: &oxshmem::Shmem, len: usize) -> Result<GpuBuf<T>, DeviceError> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| DeviceError::Init { pe: self.0.me, reason: format!("{len} elements is too many") })?;
        let addr = self
            .0
            .alloc(bytes.max(1), align_of::<T>().next_power_of_two(), true)
            .map_err(|e| op_err(self.0.me, "nvshmem_malloc", e))?;
        shmem.barrier_all()?;
        Ok(GpuBuf { dev: self.clone(), addr, len, _t: PhantomData })
    }

    /// Loads a CUDA module (a cubin, fatbin or NUL-terminated PTX image: what
    /// `cuModuleLoadData` takes) and, when it holds the device library, points the library's
    /// globals at this PE's device state, so its kernels can call NVSHMEM.
    ///
    /// # Errors
    /// The driver's (`CUDA_ERROR_INVALID_IMAGE`, `CUDA_ERROR_NO_BINARY_FOR_GPU`: build for this
    /// GPU's architecture), or a device library of another ABI.
    pub fn load_module(&self, image: &[u8]) -> Result<GpuModule, DeviceError> {
        let me = self.0.me;
        let err = |e: CudaError| DeviceError::Init { pe: me, reason: format!("loading a CUDA module: {e}") };
        // A module's routines, for its whole life (kernels, globals, launches, unload).
        super::need(&[
            "cuModuleLoadData",
            "cuModuleGetFunction",
            "cuModuleGetGlobal_v2",
            "cuModuleUnload",
            "cuLaunchKernel",
        ])
        .map_err(err)?;
        self.0.gpu.make_current().map_err(err)?;
        // PTX is text the driver reads up to its NUL: make sure there is one.
        let mut owned = image.to_vec();
        owned.push(0);
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `module` is a valid out-pointer; the image is readable and NUL-terminated; the
        // context is current.
        check(|| "cuModuleLoadData".into(), unsafe { sys::cuModuleLoadData(&mut module, owned.as_ptr().cast()) })
            .map_err(err)?;
        let mut m = GpuModule { dev: self.clone(), module, uses_nvshmem: false };
        // SAFETY: the module was just loaded in this GPU's context, which is current.
        let uses_nvshmem = unsafe { self.0.bind_code(LoadedCode::Module(module)) }.map_err(|e| match e {
            SetupError::Cuda(e) => err(e),
            e => init_err(me, e),
        })?;
        tracing::debug!(target: "cuda", uses_nvshmem, bytes = image.len(), "module loaded");
        m.uses_nvshmem = uses_nvshmem;
        if uses_nvshmem {
            ModuleAmo::offer(&self.0.gpu, module, &owned).map_err(err)?;
            // Its kernel loaded in the atomic contexts now, before a kernel may wait on one.
            if let Some(seg) = super::segment::current() {
                seg.warm_atomics("GpuDevice::load_module")
                    .map_err(|e| DeviceError::Init { pe: me, reason: e.to_string() })?;
            }
        }
        Ok(m)
    }

    /// Waits for all work of the GPU, then reports the first error a kernel recorded (device
    /// code cannot return one): `PE 0: device nvshmem_p (block 0, thread 0): PE 9 is out of
    /// range (0..2)`. The error stays recorded.
    ///
    /// # Errors
    /// The driver's (a kernel that faulted), or the recorded device error.
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        let me = self.0.me;
        self.0.gpu.synchronize().map_err(|e| DeviceError::Op {
            pe: me,
            op: "kernel",
            where_: "host".into(),
            reason: e.to_string(),
        })?;
        match self.error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The first error device code recorded, if any.
    pub fn error(&self) -> Option<DeviceError> {
        let state = self.0.state();
        let s = state.first_error()?;
        let where_ =
            if s.block == u32::MAX { "host".to_string() } else { format!("block {}, thread {}", s.block, s.thread) };
        Some(DeviceError::Op {
            pe: self.0.me,
            op: crate::state::op_name(s.op),
            where_,
            reason: crate::error_reason(state, &s, String::new),
        })
    }

    /// Ends the GPU side (collective): waits for the GPU, then, once every PE has stopped
    /// using the peers' heaps, unmaps them and frees this PE's. Buffers and modules still
    /// held keep the heap alive until they go.
    ///
    /// # Errors
    /// A device error recorded by a kernel (as [`synchronize`](Self::synchronize)) or a failed
    /// barrier.
    pub fn finalize(self, shmem: &oxshmem::Shmem) -> Result<(), DeviceError> {
        let r = self.synchronize();
        // The proxy and the software NIC finish what kernels issued, then stop.
        self.1.stop();
        shmem.barrier_all()?;
        super::segment::unregister(&self.0);
        drop(self);
        r
    }
}

fn op_err(pe: usize, op: &'static str, e: SetupError) -> DeviceError {
    match e {
        SetupError::Runtime(e) => DeviceError::Runtime(e),
        e => DeviceError::Op { pe, op, where_: "host".into(), reason: e.to_string() },
    }
}

/// `len` elements of `T` in the GPU symmetric heap, at the same offset on every PE
/// ([`GpuDevice::alloc`]). The host reaches any PE's copy with [`put`](Self::put) and
/// [`get`](Self::get) (CUDA copies into the peer's mapping); kernels get its address with
/// [`arg`](Self::arg). Dropping it does not free it (freeing is collective): call
/// [`free`](Self::free).
#[derive(Debug)]
pub struct GpuBuf<T> {
    dev: GpuDevice,
    addr: DevAddr,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: bytemuck::Pod> GpuBuf<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its device address on this PE (what `nvshmem_malloc` would have returned).
    pub fn addr(&self) -> DevAddr {
        self.addr
    }

    /// Its address as the runtime's pointer-based routines take it: `oxshmem::raw::putmem`,
    /// `getmem`, `p`, `g`, `iput`, `iget`, `atomic`, `wait_until`, `test` and the signal
    /// routines reach every PE's copy (the GPU heap is a segment of the runtime: `segment.rs`).
    /// The host must not dereference it.
    pub fn as_mut_ptr(&self) -> *mut T {
        self.addr as usize as *mut T
    }

    /// Its address as a kernel argument (a `T *` parameter).
    pub fn arg(&self) -> KernelArg {
        KernelArg::Ptr(self.addr)
    }

    /// The address of `pe`'s copy of elements `at .. at + n`, checked.
    fn remote(&self, op: &'static str, at: usize, n: usize, pe: usize) -> Result<DevAddr, DeviceError> {
        let me = self.dev.0.me;
        if at.checked_add(n).is_none_or(|e| e > self.len) {
            return Err(DeviceError::Op {
                pe: me,
                op,
                where_: "host".into(),
                reason: format!("elements {at}..{} are outside the buffer of {}", at.saturating_add(n), self.len),
            });
        }
        let addr = self.addr as usize + at * size_of::<T>();
        self.dev.0.remote(addr, n * size_of::<T>(), pe).map_err(|e| op_err(me, op, e))
    }

    /// Writes `src` into `pe`'s copy from element `at` (a host put, complete when it returns).
    ///
    /// # Errors
    /// Out of range, or the copy failed.
    pub fn put(&self, pe: usize, at: usize, src: &[T]) -> Result<(), DeviceError> {
        let dst = self.remote("nvshmem_putmem", at, src.len(), pe)?;
        // SAFETY: `dst` is inside pe's heap mapping for the slice's bytes.
        unsafe { self.dev.0.gpu.copy_htod(dst, bytemuck::cast_slice(src)) }
            .map_err(|e| op_err(self.dev.0.me, "nvshmem_putmem", e.into()))
    }

    /// Reads `pe`'s copy from element `at` into `dst` (a host get, complete when it returns).
    ///
    /// # Errors
    /// Out of range, or the copy failed.
    pub fn get(&self, pe: usize, at: usize, dst: &mut [T]) -> Result<(), DeviceError> {
        let src = self.remote("nvshmem_getmem", at, dst.len(), pe)?;
        // SAFETY: `src` is inside pe's heap mapping for the slice's bytes.
        unsafe { self.dev.0.gpu.copy_dtoh(bytemuck::cast_slice_mut(dst), src) }
            .map_err(|e| op_err(self.dev.0.me, "nvshmem_getmem", e.into()))
    }

    /// This PE's copy, read into a vector.
    ///
    /// # Errors
    /// The copy failed.
    pub fn to_vec(&self) -> Result<Vec<T>, DeviceError> {
        let mut v = vec![T::zeroed(); self.len];
        self.get(self.dev.0.me, 0, &mut v)?;
        Ok(v)
    }

    /// Frees it (collective, as `nvshmem_free`).
    ///
    /// # Errors
    /// A failed barrier.
    pub fn free(self, shmem: &oxshmem::Shmem) -> Result<(), DeviceError> {
        shmem.barrier_all()?;
        self.dev.0.free(self.addr).map_err(|e| op_err(self.dev.0.me, "nvshmem_free", e))
    }
}

/// A loaded CUDA module ([`GpuDevice::load_module`]); unloaded when dropped.
#[derive(Debug)]
pub struct GpuModule {
    dev: GpuDevice,
    module: sys::CUmodule,
    uses_nvshmem: bool,
}

// SAFETY: a module handle may be used from any thread with its context current (every call
// here makes it current first).
unsafe impl Send for GpuModule {}
// SAFETY: as above; the driver's module calls are thread-safe.
unsafe impl Sync for GpuModule {}

impl Drop for GpuModule {
    fn drop(&mut self) {
        ModuleAmo::withdraw(self.module);
        if self.dev.0.gpu.make_current().is_ok() {
            // SAFETY: the module was loaded by this struct and no kernel handle outlives it
            // (a Kernel borrows it).
            let r = unsafe { sys::cuModuleUnload(self.module) };
            if r != sys::CUresult::CUDA_SUCCESS {
                tracing::debug!(target: "cuda", ?r, "cuModuleUnload failed");
            }
        }
    }
}

impl GpuModule {
    /// Whether the module holds the device library (its kernels may call NVSHMEM).
    pub fn uses_nvshmem(&self) -> bool {
        self.uses_nvshmem
    }

    /// The kernel `name` (an `extern "C" __global__` function, or a mangled C++ name).
    ///
    /// # Errors
    /// `cuModuleGetFunction(ring_put) failed: CUDA_ERROR_NOT_FOUND (500)`.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>, DeviceError> {
        let me = self.dev.0.me;
        let err = |e: CudaError| DeviceError::Op { pe: me, op: "kernel", where_: "host".into(), reason: e.to_string() };
        self.dev.0.gpu.make_current().map_err(err)?;
        let c = CString::new(name)
            .map_err(|_| err(CudaError::driver("a kernel name with a NUL", sys::CUresult::CUDA_ERROR_INVALID_VALUE)))?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, a live module, a NUL-terminated name.
        check(|| format!("cuModuleGetFunction({name})"), unsafe {
            sys::cuModuleGetFunction(&mut f, self.module, c.as_ptr())
        })
        .map_err(err)?;
        let params = param_sizes(f).map_err(err)?;
        Ok(Kernel { module: self, f, name: name.to_string(), params })
    }
}

/// CUDA code the program loaded itself, whose copy of the device library (linked in with
/// `libnvshmem_device.a`) has its own globals to point at the device state: what
/// `nvshmemx_cumodule_init` and `nvshmemx_culibrary_init` take, and what
/// [`GpuDevice::load_module`] binds.
#[derive(Debug, Clone, Copy)]
pub enum LoadedCode {
    /// A module (`cuModuleLoadData` and the like).
    Module(sys::CUmodule),
    /// A library (`cuLibraryLoadData`, CUDA 12.0 and later).
    Library(sys::CUlibrary),
}

impl LoadedCode {
    /// `module` or `library`, for messages.
    pub fn what(&self) -> &'static str {
        match self {
            LoadedCode::Module(_) => "module",
            LoadedCode::Library(_) => "library",
        }
    }

    /// The device address and size of global `name`, `None` when the code has none.
    fn global(&self, name: &str) -> Result<Option<(DevAddr, usize)>, CudaError> {
        let c = CString::new(name).expect("global names have no NUL");
        let (mut at, mut bytes): (sys::CUdeviceptr, usize) = (0, 0);
        let (call, r) = match *self {
            LoadedCode::Module(m) => {
                super::need(&["cuModuleGetGlobal_v2"])?;
                // SAFETY: valid out-pointers, a NUL-terminated name; the handle is the caller's
                // (`bind_code`'s contract: a live module).
                ("cuModuleGetGlobal", unsafe { sys::cuModuleGetGlobal_v2(&mut at, &mut bytes, m, c.as_ptr()) })
            }
            LoadedCode::Library(l) => {
                super::need(&["cuLibraryGetGlobal"])?;
                // SAFETY: as above, a live library.
                ("cuLibraryGetGlobal", unsafe { sys::cuLibraryGetGlobal(&mut at, &mut bytes, l, c.as_ptr()) })
            }
        };
        match r {
            sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            r => check(|| format!("{call}({name})"), r).map(|()| Some((at, bytes))),
        }
    }
}

impl GpuPe {
    /// Points the device library's globals in `code` (`oxshmemi_state_d`, `oxshmemi_cuda_d`)
    /// at this PE's device state, so that its kernels can call NVSHMEM: `Ok(true)`; `Ok(false)`
    /// when `code` holds no device library (neither global), and nothing is written. What
    /// `nvshmemx_cumodule_init` does, and [`GpuDevice::load_module`] for the modules it loads.
    ///
    /// # Safety
    /// `code` is a live module or library handle, loaded in this PE's GPU's primary context
    /// (which this makes current on the calling thread).
    ///
    /// # Errors
    /// The driver's (`cuModuleGetGlobal(oxshmemi_state_d) failed: CUDA_ERROR_INVALID_HANDLE`),
    /// a driver without `cuLibraryGetGlobal` (CUDA 12.0) for a library, or globals that are
    /// not the device library's of this ABI (rebuild against this oxshmem's
    /// `libnvshmem_device.a`).
    pub unsafe fn bind_code(&self, code: LoadedCode) -> Result<bool, SetupError> {
        // SAFETY: the caller's.
        unsafe { self.set_code_globals(code, [self.state_device_ptr(), self.cuda_state_device_ptr()]) }
    }

    /// Sets the device library's globals in `code` back to null, as before
    /// [`bind_code`](Self::bind_code) (what `nvshmemx_cumodule_finalize` does): `Ok(false)`
    /// when `code` holds no device library.
    ///
    /// # Safety
    /// As [`bind_code`](Self::bind_code); no kernel of `code` that uses NVSHMEM runs meanwhile.
    ///
    /// # Errors
    /// As [`bind_code`](Self::bind_code).
    pub unsafe fn unbind_code(&self, code: LoadedCode) -> Result<bool, SetupError> {
        // SAFETY: the caller's.
        unsafe { self.set_code_globals(code, [0, 0]) }
    }

    /// Writes `values` into `code`'s two globals (see [`bind_code`](Self::bind_code)), and
    /// the state's head into its constant copy for the inline fast paths (zeros with null
    /// values; a device library from before the copy has none).
    ///
    /// # Safety
    /// As [`bind_code`](Self::bind_code).
    unsafe fn set_code_globals(&self, code: LoadedCode, values: [DevAddr; 2]) -> Result<bool, SetupError> {
        self.gpu.make_current()?;
        let state = code.global(STATE_GLOBAL)?;
        let cuda_state = code.global(CUDA_STATE_GLOBAL)?;
        match (state, cuda_state) {
            (Some((s, 8)), Some((c, 8))) => {
                for (at, value) in [(s, values[0]), (c, values[1])] {
                    // SAFETY: `at` is an 8-byte global of a live module or library, in GPU memory.
                    unsafe { self.gpu.copy_htod(at, &value.to_ne_bytes()) }?;
                }
                if let Some((at, FAST_BYTES)) = code.global(FAST_GLOBAL)? {
                    let head = if values[0] != 0 {
                        fast_head(self.state(), self.amo_base_device_ptr())
                    } else {
                        // Unbound: every fast path to its cold path, and never a null table.
                        let mut h = [0u8; FAST_BYTES];
                        let none = code.global(FAST_NONE_GLOBAL)?.map_or(0, |(a, _)| a);
                        h[24..32].copy_from_slice(&none.to_ne_bytes());
                        h[56..64].copy_from_slice(&none.to_ne_bytes());
                        h
                    };
                    // SAFETY: `at` is the 64-byte constant of a live module or library.
                    unsafe { self.gpu.copy_htod(at, &head) }?;
                }
                Ok(true)
            }
            (None, None) => Ok(false),
            (s, c) => Err(SetupError::Invalid(format!(
                "the {what}'s {STATE_GLOBAL} / {CUDA_STATE_GLOBAL} ({}, {}) are not the device library's (ABI {}): \
                 rebuild it against this oxshmem's libnvshmem_device.a",
                describe(s),
                describe(c),
                super::node::DEVICE_ABI_VERSION,
                what = code.what(),
            ))),
        }
    }
}

/// The device library's `oxshmemi_fast_state_t` (`state.cuh`) for `state`: its head, with
/// `limit` (heap_size - 8) in place of the channel array, then the atomics table `amo_base`
/// (the CUDA-side state's), as `host.cu`'s attach writes it.
fn fast_head(state: &crate::state::DeviceState, amo_base: DevAddr) -> [u8; FAST_BYTES] {
    let mut b = [0u8; FAST_BYTES];
    b[0..4].copy_from_slice(&state.my_pe.to_ne_bytes());
    b[4..8].copy_from_slice(&state.n_pes.to_ne_bytes());
    b[8..16].copy_from_slice(&state.heap_base.to_ne_bytes());
    b[16..24].copy_from_slice(&state.heap_size.to_ne_bytes());
    b[24..32].copy_from_slice(&(state.peer_base as u64).to_ne_bytes());
    b[32..40].copy_from_slice(&state.heap_size.saturating_sub(8).to_ne_bytes());
    b[40..48].copy_from_slice(&(state.ring as u64).to_ne_bytes());
    b[48..56].copy_from_slice(&(state.ibgda as u64).to_ne_bytes());
    b[56..64].copy_from_slice(&amo_base.to_ne_bytes());
    b
}

/// A global as [`LoadedCode::global`] found it, for messages.
fn describe(g: Option<(DevAddr, usize)>) -> String {
    match g {
        Some((_, bytes)) => format!("{bytes} bytes"),
        None => "missing".into(),
    }
}

/// The sizes of `f`'s parameters (`cuFuncGetParamInfo`, CUDA 12.4 and later), or `None`
/// where the driver cannot say.
fn param_sizes(f: sys::CUfunction) -> Result<Option<Vec<usize>>, CudaError> {
    // cuFuncGetParamInfo came with CUDA 12.4 (cudarc's loader panics on a missing symbol).
    if super::driver_version()? < 12040 {
        return Ok(None);
    }
    let mut sizes = Vec::new();
    loop {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: valid out-pointers and a live function handle.
        let r = unsafe { sys::cuFuncGetParamInfo(f, sizes.len(), &mut offset, &mut size) };
        match r {
            sys::CUresult::CUDA_SUCCESS => sizes.push(size),
            // Past the last parameter.
            sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Ok(Some(sizes)),
            sys::CUresult::CUDA_ERROR_NOT_SUPPORTED => return Ok(None),
            r => return check(|| "cuFuncGetParamInfo".into(), r).map(|()| None),
        }
    }
}

/// A kernel's argument: a scalar, or a device address (a pointer parameter).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelArg {
    /// `int`
    I32(i32),
    /// `unsigned int`
    U32(u32),
    /// `long long`, `int64_t`
    I64(i64),
    /// `unsigned long long`, `uint64_t`, `size_t`
    U64(u64),
    /// `float`
    F32(f32),
    /// `double`
    F64(f64),
    /// A pointer (`T *`): a device address, e.g. [`GpuBuf::arg`].
    Ptr(DevAddr),
}

impl KernelArg {
    fn bytes(&self) -> ([u8; 8], usize) {
        let mut b = [0u8; 8];
        let n = match *self {
            KernelArg::I32(v) => write(&mut b, &v.to_ne_bytes()),
            KernelArg::U32(v) => write(&mut b, &v.to_ne_bytes()),
            KernelArg::F32(v) => write(&mut b, &v.to_ne_bytes()),
            KernelArg::I64(v) => write(&mut b, &v.to_ne_bytes()),
            KernelArg::U64(v) | KernelArg::Ptr(v) => write(&mut b, &v.to_ne_bytes()),
            KernelArg::F64(v) => write(&mut b, &v.to_ne_bytes()),
        };
        (b, n)
    }
}

fn write(dst: &mut [u8; 8], src: &[u8]) -> usize {
    dst[..src.len()].copy_from_slice(src);
    src.len()
}

/// How a kernel is launched: blocks and threads per block in up to three dimensions, and
/// dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads per block in x, y, z.
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// One block of `threads` threads.
    pub fn threads(threads: u32) -> LaunchConfig {
        LaunchConfig { grid: (1, 1, 1), block: (threads, 1, 1), shared_bytes: 0 }
    }

    /// `blocks` blocks of `threads` threads.
    pub fn blocks(blocks: u32, threads: u32) -> LaunchConfig {
        LaunchConfig { grid: (blocks, 1, 1), block: (threads, 1, 1), shared_bytes: 0 }
    }
}

/// The device library's one-thread atomic kernel (`oxshmemi_amo_kernel`, `host.cu`) in a
/// module this program loaded: what the proxy, the software NIC and host atomics on GPU memory
/// run for a Rust program (a C program's `libnvshmem_device.a` registers its own at load time).
/// The first module that holds it provides it until it is unloaded. Host atomics run in a
/// context of their own per device (`segment::amo_at` makes it current), so the module's image
/// is loaded again in each such context at its first atomic there, with a stream (a lane).
struct ModuleAmo {
    /// The program's module (in the primary context), by which it is withdrawn.
    module: sys::CUmodule,
    /// Its image, NUL-terminated, for the atomic contexts.
    image: Vec<u8>,
    /// One 8-byte result slot of portable pinned memory, which every context reaches.
    slot: super::PinnedBuf,
    lanes: Vec<AmoLane>,
}

/// The kernel and a stream of ModuleAmo in one context.
struct AmoLane {
    ctx: sys::CUcontext,
    module: sys::CUmodule,
    f: sys::CUfunction,
    stream: sys::CUstream,
}

// SAFETY: the handles may be used from any thread with their context current (every use is
// made so), and only under MODULE_AMO's lock.
unsafe impl Send for ModuleAmo {}

static MODULE_AMO: parking_lot::Mutex<Option<ModuleAmo>> = parking_lot::Mutex::new(None);
/// Whether the registered atomic is [`module_amo`] (else the program's own, or none).
static AMO_SET_HERE: AtomicBool = AtomicBool::new(false);

/// The kernel's name: C linkage, so every module linked with the device library has it.
const AMO_KERNEL: &str = "oxshmemi_amo_kernel";

impl ModuleAmo {
    /// Takes the atomic kernel of `module` (loaded from `image` in `gpu`'s context, which is
    /// current) when none is held, and makes it the one host atomics on GPU memory run.
    fn offer(gpu: &Gpu, module: sys::CUmodule, image: &[u8]) -> Result<(), CudaError> {
        let mut held = MODULE_AMO.lock();
        // One is held already, or the program registered its own.
        if held.is_some() || (super::segment::amo_kernel().is_some() && !AMO_SET_HERE.load(Ordering::Relaxed)) {
            return Ok(());
        }
        let name = CString::new(AMO_KERNEL).expect("no NUL");
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `f` is a valid out-pointer; the module is live and its context current.
        let r = unsafe { sys::cuModuleGetFunction(&mut f, module, name.as_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // A device library older than the kernel's C linkage: host atomics on GPU memory
            // then say that no atomic kernel was registered.
            tracing::debug!(target: "cuda", ?r, "the module has no {AMO_KERNEL}");
            return Ok(());
        }
        let slot = super::PinnedBuf::new(gpu, 8)?;
        *held = Some(ModuleAmo { module, image: image.to_vec(), slot, lanes: Vec::new() });
        drop(held);
        // SAFETY: `module_amo` performs the operation atomically on the GPU word (the device
        // library's kernel, system scope) and is a plain function, valid for the process.
        unsafe { super::segment::set_amo_kernel(module_amo) };
        AMO_SET_HERE.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `module` is being unloaded: its kernel is no longer the atomic kernel.
    fn withdraw(module: sys::CUmodule) {
        let mut held = MODULE_AMO.lock();
        if held.as_ref().is_some_and(|a| a.module == module) {
            *held = None;
        }
    }

    /// The lane of the current context, made at its first use.
    fn lane(&mut self) -> Result<&AmoLane, CudaError> {
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `ctx` is a valid out-pointer.
        check(|| "cuCtxGetCurrent".into(), unsafe { sys::cuCtxGetCurrent(&mut ctx) })?;
        if let Some(i) = self.lanes.iter().position(|l| l.ctx == ctx) {
            return Ok(&self.lanes[i]);
        }
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `module` is a valid out-pointer; the image is NUL-terminated; a context is current.
        check(|| "cuModuleLoadData (the atomic kernel's context)".into(), unsafe {
            sys::cuModuleLoadData(&mut module, self.image.as_ptr().cast())
        })?;
        let name = CString::new(AMO_KERNEL).expect("no NUL");
        let mut f: sys::CUfunction = std::ptr::null_mut();
        let mut stream: sys::CUstream = std::ptr::null_mut();
        // SAFETY: valid out-pointers; the module was just loaded in the current context.
        let r = check(|| format!("cuModuleGetFunction({AMO_KERNEL})"), unsafe {
            sys::cuModuleGetFunction(&mut f, module, name.as_ptr())
        })
        .and_then(|()| {
            // SAFETY: `stream` is a valid out-pointer; the context is current.
            check(|| "cuStreamCreate (the atomic kernel's stream)".into(), unsafe {
                sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
            })
        });
        if let Err(e) = r {
            // SAFETY: loaded above, used by nothing.
            unsafe { sys::cuModuleUnload(module) };
            return Err(e);
        }
        self.lanes.push(AmoLane { ctx, module, f, stream });
        Ok(self.lanes.last().expect("just pushed"))
    }
}

impl Drop for ModuleAmo {
    fn drop(&mut self) {
        for l in self.lanes.drain(..) {
            // SAFETY: the lane's context lives for the process; its stream and module were made
            // here and nothing uses them any more (the lock is held or the value is replaced).
            unsafe {
                if sys::cuCtxPushCurrent_v2(l.ctx) == sys::CUresult::CUDA_SUCCESS {
                    sys::cuStreamDestroy_v2(l.stream);
                    sys::cuModuleUnload(l.module);
                    let mut top: sys::CUcontext = std::ptr::null_mut();
                    sys::cuCtxPopCurrent_v2(&mut top);
                }
            }
        }
    }
}

/// The host-callable atomic ([`segment::AmoFn`](super::segment::AmoFn)) over the held module's
/// kernel, in the current context (the device's atomic context: `segment::amo_at`): a
/// one-thread launch on the lane's non-blocking stream, then a wait for it. 0, or a CUDA error
/// number (`CUDA_ERROR_NOT_READY`, 600, once the module is unloaded).
///
/// # Safety
/// `addr` is a naturally aligned word of a GPU heap mapped here; `old` is writable.
unsafe extern "C" fn module_amo(addr: u64, flags: u32, value: u64, cond: u64, old: *mut u64) -> i32 {
    let mut held = MODULE_AMO.lock();
    let Some(a) = held.as_mut() else { return sys::CUresult::CUDA_ERROR_NOT_READY as i32 };
    let mut slot = a.slot.device_ptr();
    let host = a.slot.host_ptr();
    let lane = match a.lane() {
        Ok(l) => l,
        Err(e) => {
            tracing::debug!(target: "cuda", %e, "the atomic kernel in this context");
            return match e {
                CudaError::Driver { code, .. } => code,
                _ => sys::CUresult::CUDA_ERROR_INVALID_CONTEXT as i32,
            };
        }
    };
    let (mut addr, mut flags, mut value, mut cond) = (addr, flags, value, cond);
    let mut args: [*mut c_void; 5] = [
        (&raw mut addr).cast(),
        (&raw mut flags).cast(),
        (&raw mut value).cast(),
        (&raw mut cond).cast(),
        (&raw mut slot).cast(),
    ];
    // SAFETY: `f` is the kernel (u64, u32, u64, u64, u64 *) of a live module (withdrawn under
    // this lock before its unload); `args` points at five live values of those types; the
    // stream is the lane's, in the current context.
    let r = unsafe {
        sys::cuLaunchKernel(lane.f, 1, 1, 1, 1, 1, 1, 0, lane.stream, args.as_mut_ptr(), std::ptr::null_mut())
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return r as i32;
    }
    // SAFETY: the stream is live.
    let r = unsafe { sys::cuStreamSynchronize(lane.stream) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return r as i32;
    }
    // SAFETY: the slot is 8 bytes of pinned memory the kernel wrote before the stream finished;
    // `old` is writable (the caller's promise).
    unsafe { *old = std::ptr::read_volatile(host.cast::<u64>()) };
    0
}

/// A kernel of a loaded module ([`GpuModule::kernel`]).
#[derive(Debug)]
pub struct Kernel<'m> {
    module: &'m GpuModule,
    f: sys::CUfunction,
    name: String,
    /// The parameters' sizes, where the driver can say.
    params: Option<Vec<usize>>,
}

impl Kernel<'_> {
    /// The sizes of its parameters in bytes, where the driver says (CUDA 12.4 and later).
    pub fn param_sizes(&self) -> Option<&[usize]> {
        self.params.as_deref()
    }

    /// Launches it on the legacy default stream with `args`, which must match its parameters
    /// in number and size (checked where the driver reports them: a mismatch would hand the
    /// kernel garbage). The launch is asynchronous: [`GpuDevice::synchronize`] waits for it
    /// and reports what it recorded. What the kernel then does with its arguments is its
    /// code's business, as for any kernel: give it symmetric buffers ([`GpuBuf::arg`]).
    ///
    /// # Errors
    /// `PE 0: device kernel (host): ring_put takes 3 parameters (8, 4, 4 bytes); 2 arguments
    /// were given (8, 4 bytes)`, an empty grid or block, or the driver's.
    pub fn launch(&self, cfg: LaunchConfig, args: &[KernelArg]) -> Result<(), DeviceError> {
        let me = self.module.dev.0.me;
        let fail = |reason: String| DeviceError::Op { pe: me, op: "kernel", where_: "host".into(), reason };
        let (g, b) = (cfg.grid, cfg.block);
        if [g.0, g.1, g.2, b.0, b.1, b.2].contains(&0) {
            return Err(fail(format!(
                "{}: a launch of {g:?} blocks of {b:?} threads has an empty dimension",
                self.name
            )));
        }
        let mut storage: Vec<([u8; 8], usize)> = args.iter().map(KernelArg::bytes).collect();
        if let Some(sizes) = &self.params {
            let given: Vec<usize> = storage.iter().map(|s| s.1).collect();
            if *sizes != given {
                let list = |v: &[usize]| match v.len() {
                    0 => "none".to_string(),
                    _ => v.iter().map(usize::to_string).collect::<Vec<_>>().join(", ") + " bytes",
                };
                return Err(fail(format!(
                    "{} takes {} parameters ({}); {} arguments were given ({})",
                    self.name,
                    sizes.len(),
                    list(sizes),
                    given.len(),
                    list(&given)
                )));
            }
        }
        self.module.dev.0.gpu.make_current().map_err(|e| fail(e.to_string()))?;
        let mut ptrs: Vec<*mut c_void> = storage.iter_mut().map(|s| s.0.as_mut_ptr().cast()).collect();
        // SAFETY: `f` is a kernel of a live module; `ptrs` holds one pointer per parameter (their
        // number and sizes checked above where the driver reports them), each to a value that
        // lives until the call returns (the driver copies them at launch); the null stream is
        // the legacy default stream of the current context.
        let r = unsafe {
            sys::cuLaunchKernel(
                self.f,
                g.0,
                g.1,
                g.2,
                b.0,
                b.1,
                b.2,
                cfg.shared_bytes,
                std::ptr::null_mut(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(|| format!("cuLaunchKernel({})", self.name), r).map_err(|e| fail(e.to_string()))
    }
}

// SAFETY: a function handle may be used from any thread with its context current.
unsafe impl Send for Kernel<'_> {}
// SAFETY: as above.
unsafe impl Sync for Kernel<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_have_their_c_sizes() {
        assert_eq!(KernelArg::I32(-1).bytes(), ([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0], 4));
        assert_eq!(KernelArg::F64(1.0).bytes().1, 8);
        assert_eq!(KernelArg::Ptr(0x1234).bytes(), (0x1234u64.to_ne_bytes(), 8));
        assert_eq!(
            KernelArg::F32(2.0).bytes(),
            (
                {
                    let mut b = [0; 8];
                    b[..4].copy_from_slice(&2f32.to_ne_bytes());
                    b
                },
                4
            )
        );
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(LaunchConfig::threads(32).block, (32, 1, 1));
        assert_eq!(LaunchConfig::blocks(4, 64).grid, (4, 1, 1));
    }
}
