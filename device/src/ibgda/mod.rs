//! The IBGDA channel: device threads write NIC work requests themselves — mlx5 WQEs in a send
//! queue per peer, a doorbell record and a doorbell ring — and poll the NIC's completion queue
//! for `quiet`, with no CPU thread forwarding each request (NVSHMEM's InfiniBand GPUDirect
//! Async; see `docs/ibgda.md` for the protocol this follows).
//!
//! - [`mlx5`] — the WQE and CQE layouts (`#[repr(C)]`, checked against rdma-core's header);
//! - [`layout`] — the NIC-layout trait and the NIC-neutral work request; [`layout::Mlx5`];
//! - [`hns`] — HiSilicon hns RoCE's send-WQE, doorbell and CQE formats (from rdma-core's
//!   `providers/hns`) and [`hns::Hns`], the second layout: the channel's queues are in the format
//!   its NIC reads ([`NicDescription::layout`](crate::nic::provider::NicDescription)), and the
//!   device side is generic over it, falling back where a format lacks an operation;
//! - [`qp`] — one queue pair and the posting / doorbell / completion protocol;
//! - [`softnic`] — the software NIC: consumes exactly these queues and executes each WQE against
//!   the target PE's symmetric heap (mapped memory on this host, the runtime's network
//!   transport elsewhere), writing CQEs — so the device side is the real thing on any machine.
//!
//! Queues: `OXSHMEM_IBGDA_NUM_RC_PER_PE` (default 8) queues per peer, a device thread using
//! queue `warp % num_rc` for every peer, so threads of different warps rarely share a
//! reservation counter. The set-up drives a NIC through the provider seam
//! ([`crate::nic::provider`]): it registers the heap, the channel's allocation (which holds
//! every queue's scratch buffer) and an implicit on-demand-paging region for the rest of the
//! process (what mlx5's implicit ODP MR gives: the blocking put/get of a local, unregistered
//! buffer), creates each queue pair, exchanges every PE's heap key and base, port address and
//! QP numbers through the bootstrap, and connects queue `rc` to `pe` with queue `rc` to this
//! PE on `pe` (RESET → INIT → RTR → RTS).
//!
//! Layout: what a device thread reads is the plain `#[repr(C)]` table [`IbgdaDevice`] (C:
//! `oxshmem_ibgda_t`, in the generated header `device/include/oxshmem/device_state.h`) — sizes,
//! keys, and pointers to the queues ([`Qp`]) and the per-PE key, base and mapping arrays — all
//! carved out of ONE allocation from a [`DeviceAlloc`], which [`Ibgda`]
//! owns beside the host-only parts (configuration, software NIC).

pub(crate) mod device;
pub mod hns;
pub mod layout;
pub mod mlx5;
pub mod qp;
mod ringer;
pub mod softnic;

pub(crate) use crate::channel::devmem;

use devmem::{Carve, DeviceAlloc, DeviceMem};
use layout::{Layout, Mlx5, NicLayout};
use qp::{CqMode, Qp};

use crate::nic::provider::{DoorbellPath, FIRST_PSN, MemoryKind, NicError, NicProvider, QpPeer, QueueMemory, connect};

/// Memory the software NIC reaches only through a back end (a GPU's heap, which the CPU cannot
/// load or store): how it copies and updates atomically there. Without one, the NIC uses the
/// CPU on mapped heaps and the runtime's transport elsewhere.
pub trait NicMemory: Send + Sync + std::fmt::Debug {
    /// Copies `len` bytes from `src` to `dst` (addresses of this process: a local buffer, the
    /// heap, a peer's heap as mapped here), complete when it returns.
    ///
    /// # Safety
    /// Both ranges are valid for `len` bytes (the NIC checked them against their regions).
    ///
    /// # Errors
    /// Why the copy failed.
    unsafe fn copy(&self, dst: u64, src: u64, len: usize) -> Result<(), String>;

    /// An atomic `op` on the naturally aligned `width`-byte word at `addr` (a heap as mapped
    /// here); the prior value.
    ///
    /// # Errors
    /// Why it failed.
    fn atomic(&self, addr: u64, width: u32, op: oxshmem::transport::AmoOp) -> Result<u64, String>;

    /// The address at which the producers behind this memory (GPU threads) reach a hardware
    /// NIC's doorbell register, mapped at `addr` in this process (the UAR page); the mapping
    /// lives as long as this memory.
    ///
    /// # Errors
    /// The register cannot be mapped for them.
    fn map_doorbell(&self, addr: u64) -> Result<u64, String> {
        Err(format!("the doorbell register at {addr:#x} cannot be mapped for these producers"))
    }

    /// A dma-buf of the `len` bytes at `addr` (this memory's, host-page aligned), whose byte 0
    /// is `addr`: how a NIC registers it without a peer-memory module.
    ///
    /// # Errors
    /// This memory cannot be exported so.
    fn export_dmabuf(&self, addr: u64, len: u64) -> Result<std::os::fd::OwnedFd, String> {
        Err(format!("the {len} bytes at {addr:#x} cannot be exported as a dma-buf"))
    }
}

/// The symmetric heap the queues reach when it is not the runtime's (the CUDA back end's GPU
/// heap): its base and size here, where every PE's copy is mapped here (0: not mapped), and how
/// the NIC reaches that memory.
#[derive(Debug, Clone)]
pub struct IbgdaHeap {
    /// This PE's heap.
    pub base: u64,
    /// Its size (the same on every PE).
    pub size: u64,
    /// Per PE: its heap as mapped in this process (0: not mapped).
    pub mapped: Vec<u64>,
    /// How the NIC copies and updates atomically there.
    pub memory: std::sync::Arc<dyn NicMemory>,
    /// The producers' GPU memory (`None`: there is none): the queues' descriptors always go
    /// there (what the producers read-modify-write), and the queues too with
    /// `OXSHMEM_IBGDA_QUEUE_MEM=gpu` (NVSHMEM's NIC buffers in GPU memory): the producers then
    /// write their queues in their own memory instead of across PCIe, and the NIC reads them
    /// through a dma-buf (or `nvidia_peermem`). Each allocation must start a dma-buf
    /// ([`NicMemory::export_dmabuf`]); the CPU need not reach it.
    pub queue_alloc: Option<std::sync::Arc<dyn DeviceAlloc>>,
}

/// Where the IBGDA queues live (`OXSHMEM_IBGDA_QUEUE_MEM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMem {
    /// Host memory (pinned where a GPU writes it).
    #[default]
    Host,
    /// GPU memory (the CUDA back end's queues only).
    Gpu,
}

/// Queue sizing and modes (from the environment at init).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbgdaConfig {
    /// Slots per send queue (`OXSHMEM_IBGDA_NWQES`, power of two, default 2048).
    pub nwqes: usize,
    /// CQ mode (`OXSHMEM_IBGDA_CQ_MODE=collapsed|normal`, default collapsed).
    pub cq_mode: CqMode,
    /// Entries of a normal-mode CQ (`OXSHMEM_IBGDA_NCQES`, default = nwqes).
    pub ncqes: usize,
    /// Queues per peer (`OXSHMEM_IBGDA_NUM_RC_PER_PE`, default 8).
    pub num_rc: usize,
    /// Ring at least every this many slots (`OXSHMEM_IBGDA_BATCH`, default 32).
    pub batch: usize,
    /// How long the software NIC's thread sleeps when idle before it looks at the doorbells
    /// again, in milliseconds (`OXSHMEM_SOFTNIC_NAP_MS`, default 50). Doorbells rung while it
    /// sleeps are served by the ringing threads themselves; the nap's end is a safety net, and
    /// a test sets it to minutes to show that nothing relies on it.
    pub nic_nap_ms: u64,
    /// The queue format the software NIC reads (`OXSHMEM_SOFTNIC_LAYOUT`; `None`: unset, mlx5).
    pub soft_layout: Option<Layout>,
    /// The software NIC learns of new work from a doorbell register per queue, as a hardware
    /// NIC does (`OXSHMEM_SOFTNIC_DOORBELL=register`), instead of watching the records.
    pub soft_registers: bool,
    /// Who writes a NIC's doorbell register for GPU producers (`OXSHMEM_IBGDA_NIC_HANDLER`).
    pub nic_handler: NicHandler,
    /// Where the queues live (`OXSHMEM_IBGDA_QUEUE_MEM`).
    pub queue_mem: QueueMem,
}

/// Who rings a NIC's doorbell register (NVSHMEM's `NVSHMEM_IBGDA_NIC_HANDLER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NicHandler {
    /// The producers write it themselves — GPU threads through the register's page mapped
    /// for the GPU — and a CPU thread rings for them where the GPU cannot map it.
    #[default]
    Auto,
    /// The producers write it themselves; a GPU that cannot map it stops init.
    Gpu,
    /// A CPU thread of this PE rings for every producer: it watches the queues' doorbell
    /// words and writes the register when one moves.
    Cpu,
}

impl Default for IbgdaConfig {
    fn default() -> Self {
        IbgdaConfig {
            nwqes: 2048,
            cq_mode: CqMode::Collapsed,
            ncqes: 2048,
            num_rc: 8,
            batch: 32,
            nic_nap_ms: 50,
            soft_layout: None,
            soft_registers: false,
            nic_handler: NicHandler::Auto,
            queue_mem: QueueMem::Host,
        }
    }
}

impl IbgdaConfig {
    /// From `OXSHMEM_IBGDA_*` and `OXSHMEM_SOFTNIC_NAP_MS` (declared, with their defaults, in
    /// `crate::config::VARS`); a malformed value is an error naming the variable.
    pub fn from_env() -> Result<IbgdaConfig, String> {
        let mut c = IbgdaConfig::default();
        // An empty value (OXSHMEM_IBGDA_NCQES's default: "the same as NWQES") means `d`.
        let num = |k: &str, d: usize| -> Result<usize, String> {
            let (v, name) = crate::config::value_of(k);
            match v.trim() {
                "" => Ok(d),
                t => t.parse::<usize>().map_err(|_| format!("{name}={v:?}: expected a number")),
            }
        };
        c.nwqes = num("OXSHMEM_IBGDA_NWQES", c.nwqes)?;
        if !c.nwqes.is_power_of_two() || !(8..=32768).contains(&c.nwqes) {
            let name = crate::config::value_of("OXSHMEM_IBGDA_NWQES").1;
            return Err(format!("{name}={}: expected a power of two from 8 to 32768", c.nwqes));
        }
        c.ncqes = num("OXSHMEM_IBGDA_NCQES", c.nwqes)?.max(1);
        c.num_rc = num("OXSHMEM_IBGDA_NUM_RC_PER_PE", c.num_rc)?.clamp(1, 64);
        c.batch = num("OXSHMEM_IBGDA_BATCH", c.batch)?.max(1);
        c.nic_nap_ms = num("OXSHMEM_SOFTNIC_NAP_MS", c.nic_nap_ms as usize)?.max(1) as u64;
        let (mode, name) = crate::config::value_of("OXSHMEM_IBGDA_CQ_MODE");
        c.cq_mode = match mode.trim() {
            "" | "collapsed" => CqMode::Collapsed,
            "normal" => CqMode::Normal,
            o => return Err(format!("{name}={o:?}: expected collapsed or normal")),
        };
        let (v, name) = crate::config::value_of("OXSHMEM_SOFTNIC_DOORBELL");
        c.soft_registers = match v.trim() {
            "" | "record" => false,
            "register" => true,
            o => return Err(format!("{name}={o:?}: expected record or register")),
        };
        let (v, name) = crate::config::value_of("OXSHMEM_IBGDA_NIC_HANDLER");
        c.nic_handler = match v.trim() {
            "" | "auto" => NicHandler::Auto,
            "gpu" => NicHandler::Gpu,
            "cpu" => NicHandler::Cpu,
            o => return Err(format!("{name}={o:?}: expected auto, gpu or cpu")),
        };
        let (v, name) = crate::config::value_of("OXSHMEM_IBGDA_QUEUE_MEM");
        c.queue_mem = match v.trim() {
            // NVSHMEM's `auto` chooses by what the system can do; here the queues stay in host
            // memory unless asked (nothing has placed them in GPU memory on hardware yet).
            "" | "host" | "hostmem" | "auto" => QueueMem::Host,
            "gpu" | "gpumem" => QueueMem::Gpu,
            o => return Err(format!("{name}={o:?}: expected host (hostmem, auto) or gpu (gpumem)")),
        };
        let (layout, name) = crate::config::value_of("OXSHMEM_SOFTNIC_LAYOUT");
        c.soft_layout =
            match layout.trim() {
                "" => None,
                l => Some(Layout::from_name(l).ok_or_else(|| {
                    format!("{name}={l:?}: expected {} or {}", Layout::Mlx5.name(), Layout::Hns.name())
                })?),
            };
        Ok(c)
    }
}

/// The IBGDA channel as device code reads it (C: `oxshmem_ibgda_t`): plain data, pointing
/// into the allocation the [`Ibgda`] owns.
#[repr(C)]
#[derive(Debug)]
pub struct IbgdaDevice {
    /// PEs in the job.
    pub n_pes: u32,
    /// Queues per peer; a thread uses queue group `warp % num_rc`.
    pub num_rc: u32,
    /// Slots per send queue (a power of two).
    pub nwqes: u32,
    /// Entries per CQ (1 in collapsed mode).
    pub ncqes: u32,
    /// Ring at least every this many slots.
    pub batch: u32,
    /// A [`CqMode`] (`OXSHMEM_CQ_MODE_*`).
    pub cq_mode: u32,
    /// Local key of this PE's heap.
    pub heap_lkey: u32,
    /// Local key of any other local address (the implicit, on-demand-paging region).
    pub implicit_lkey: u32,
    /// Local key of every queue's scratch buffer (the channel's allocation is one registration).
    pub ibuf_lkey: u32,
    /// Queues in `qps` (`num_rc * n_pes`).
    pub nqps: u32,
    /// Entries of `lbufs` in use or once used (a high-water mark: an entry whose `len` is 0
    /// is free); at most `max_lbufs`.
    pub nlbufs: u32,
    /// Entries `lbufs` has room for ([`MAX_LOCAL_BUFFERS`]).
    pub max_lbufs: u32,
    /// This PE's heap base address.
    pub heap_base: u64,
    /// Bytes of this PE's heap.
    pub heap_size: u64,
    /// `nqps` queues: queue `rc` to `pe` is `qps[(rc % num_rc) * n_pes + pe]`.
    pub qps: *mut Qp<Mlx5>,
    /// `n_pes` entries: remote key of each PE's heap.
    pub rkeys: *mut u32,
    /// `n_pes` entries: heap base address of each PE (remote addresses are virtual addresses
    /// there).
    pub rbases: *mut u64,
    /// `n_pes` entries: where each PE's heap is mapped in this process (0: not mapped).
    pub mapped: *mut u64,
    /// `max_lbufs` entries: the local buffers registered with the NIC
    /// (`nvshmemx_buffer_register`), which device code looks a local address outside the heap
    /// up in for its key.
    pub lbufs: *mut LocalBuffer,
}

/// How many local buffers may be registered at once ([`Ibgda::register_local`]).
pub const MAX_LOCAL_BUFFERS: usize = 64;

/// A local buffer registered with the NIC (C: `oxshmem_ibgda_lbuf_t`): `[base, base + len)`
/// under local key `lkey`. `len` 0: a free entry. The host writes `base` and `lkey` before
/// `len`, and clears `len` alone to free it, so a device thread that reads `len` first (with
/// acquire) sees a whole entry or none.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalBuffer {
    /// First byte.
    pub base: u64,
    /// Bytes (0: the entry is free).
    pub len: u64,
    /// The registration's local key.
    pub lkey: u32,
    /// Unused (the entry is 24 bytes, 8-aligned).
    pub _pad: u32,
}

/// A registered local buffer as the host keeps it: its entry, its slot in the device table,
/// and the NIC's registration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalRegion {
    pub(crate) slot: usize,
    pub(crate) base: u64,
    pub(crate) region: crate::nic::provider::MemRegion,
}

/// The IBGDA channel of one PE: its queues, the key tables and the software NIC.
#[derive(Debug)]
pub struct Ibgda {
    /// The queues' format (their type: `Qp<L>` with `L::LAYOUT == layout`).
    pub(crate) layout: Layout,
    /// The queues' descriptors, `Qp<L>` for `layout`'s `L` (see [`queues`](Self::queues)).
    qps: *mut u8,
    /// Whether the descriptors at `qps` (and the table) are host memory, which this CPU reads
    /// and writes in place; else GPU memory, which the host reaches only through copies (even
    /// where the CPU could: one path, the one PCIe leaves), and `view` holds their image.
    host_ctl: bool,
    /// Whether this CPU may read and write the queues' memory (their doorbell words, send
    /// queues, CQs; not so in GPU memory behind PCIe).
    host_queues: bool,
    nqps: usize,
    pub(crate) num_rc: usize,
    pub(crate) n_pes: usize,
    /// Remote key of each PE's heap.
    pub(crate) rkeys: Box<[u32]>,
    /// Heap base address of each PE (remote addresses are virtual addresses there).
    pub(crate) rbases: Box<[u64]>,
    pub(crate) heap_base: u64,
    pub(crate) heap_size: u64,
    /// Where each PE's heap is mapped in this process (0: not mapped: through the transport).
    pub(crate) mapped: Box<[u64]>,
    /// How the NIC reaches a heap the CPU cannot touch (`None`: the CPU and the transport).
    pub(crate) memory: Option<std::sync::Arc<dyn NicMemory>>,
    pub(crate) config: IbgdaConfig,
    /// The local keys of the heap, the implicit region and the channel's allocation.
    pub(crate) heap_lkey: u32,
    pub(crate) implicit_lkey: u32,
    pub(crate) ibuf_lkey: u32,
    /// The local buffers registered with the NIC (`nvshmemx_buffer_register`), which the
    /// software NIC checks keys other than the three above against; the device table's
    /// `lbufs` mirrors them.
    pub(crate) local: parking_lot::RwLock<Vec<LocalRegion>>,
    /// Where the device table's `lbufs` entries are (device addresses, in `mem`).
    lbufs: *mut LocalBuffer,
    /// The CPU thread that rings the NIC for producers that cannot (none: they all can).
    /// Stopped before the registers (the provider's) and the queues' memory go: fields drop
    /// in order.
    ringer: Option<ringer::CpuRinger>,
    /// The NIC that set the queues up (and, for the software NIC, executes them).
    pub(crate) provider: std::sync::Arc<dyn NicProvider>,
    /// Whether the software NIC executes the queues (else a hardware NIC does, and nobody here
    /// consumes them).
    pub(crate) soft: bool,
    /// The software NIC thread's shared state (shared with the CPU ringer, which wakes it).
    pub(crate) nic: std::sync::Arc<softnic::NicShared>,
    /// The device table, in `ctl`.
    table: *mut IbgdaDevice,
    /// The image of `ctl` the set-up wrote when `ctl` is GPU memory: the descriptors the
    /// software NIC reads their fixed fields in.
    view: Option<DeviceMem>,
    /// The table, the per-PE arrays, the descriptors and their marks (GPU memory for GPU
    /// producers).
    ctl: DeviceMem,
    /// The queues' doorbell words, send queues, CQs and scratch buffers, and the CQs' doorbell
    /// records (dropped last).
    mem: DeviceMem,
}

// SAFETY: the raw pointers name `mem`, which the channel owns; shared mutation is atomic.
unsafe impl Send for Ibgda {}
// SAFETY: as above.
unsafe impl Sync for Ibgda {}

// Nothing placed in the channel's memory needs dropping (std atomics and plain data), so
// freeing the memory is enough. (Not under `--cfg loom`: there the atomics are loom's, which own
// model state; the models build only `QpBox`es, which drop their words.)
#[cfg(not(loom))]
const _: () = assert!(!std::mem::needs_drop::<Qp<Mlx5>>() && !std::mem::needs_drop::<IbgdaDevice>());
// `Ibgda::observe` copies a descriptor's counters through its error word into 24 words.
const _: () = assert!(std::mem::offset_of!(Qp<Mlx5>, error) + 8 - std::mem::offset_of!(Qp<Mlx5>, prod) <= 24 * 8);
// The channel carves its queues before it knows their format: every layout's queue has the
// same size, alignment and fields (the format is a type marker).
const _: () =
    assert!(size_of::<Qp<Mlx5>>() == size_of::<Qp<hns::Hns>>() && align_of::<Qp<Mlx5>>() == align_of::<Qp<hns::Hns>>());

/// A NIC error at set-up, as the runtime's error of `nvshmem_init`.
fn nic_err(me: usize, e: NicError) -> oxshmem::Error {
    oxshmem::Error::new(me, "nvshmem_init", oxshmem::ErrorKind::Layer { layer: "nic", reason: e.to_string() })
}

/// Registers `what` (the GPU heap, or the queues in GPU memory) at `base` with the NIC as
/// NVSHMEM does: through a dma-buf the CUDA driver exports (`ibv_reg_dmabuf_mr`) where the NIC
/// takes one, else as plain addresses, which a hardware NIC reaches only through the
/// peer-memory module (`nvidia_peermem`).
fn register_gpu_range(
    what: &str,
    nic: &dyn NicProvider,
    described: &crate::nic::provider::NicDescription,
    memory: &dyn NicMemory,
    base: u64,
    size: u64,
) -> Result<crate::nic::provider::MemRegion, NicError> {
    use std::os::fd::AsFd;
    let why_not_dmabuf = if described.dmabuf {
        match memory.export_dmabuf(base, size) {
            Ok(fd) => match nic.register_dmabuf(fd.as_fd(), 0, size, base) {
                Ok(mr) => {
                    tracing::debug!(target: "nic", base, size, "{what} is registered through a dma-buf");
                    return Ok(mr);
                }
                Err(e) => e.to_string(),
            },
            Err(e) => e,
        }
    } else {
        format!("{} cannot register dma-bufs", described.name)
    };
    if !described.gpu_memory {
        return Err(NicError::refused(
            format!("registering {what} ({size} bytes at {base:#x}) with {}", described.name),
            format!("{why_not_dmabuf}; and GPU addresses need nvidia_peermem, which is not loaded"),
        ));
    }
    let mr = nic.register(base, size, MemoryKind::Gpu).map_err(|e| {
        NicError::refused(
            format!("registering {what} ({size} bytes at {base:#x}) with {}", described.name),
            format!("{e}; and not through a dma-buf: {why_not_dmabuf}"),
        )
    })?;
    tracing::debug!(target: "nic", base, size, why_not_dmabuf, "{what} is registered by address");
    Ok(mr)
}

/// What every PE told this one (collective): this PE tells PE `pe` the `k` values `row(pe)` (the
/// same `k` on every PE), and gets back what PE `p` told it at `[k * p, k * p + k)` — an
/// allgather when every row is the same, the set-up's exchanges through the bootstrap's heap.
///
/// # Errors
/// The runtime's (allocation, puts, barrier).
fn exchange<T: oxshmem::Pod + Default>(
    shmem: &oxshmem::Shmem,
    k: usize,
    row: impl Fn(usize) -> Vec<T>,
) -> oxshmem::Result<Vec<T>> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let table = shmem.alloc_slice(k * n, T::default())?;
    for pe in 0..n {
        let mine = row(pe);
        assert_eq!(mine.len(), k, "a row of the exchange holds k values");
        // SAFETY: a symmetric table of `k` values per PE; this PE writes only its own row.
        unsafe {
            oxshmem::raw::putmem(
                table.as_ptr().add(k * me) as *mut u8,
                mine.as_ptr().cast(),
                size_of::<T>() * k,
                pe as i32,
            )?;
        }
    }
    shmem.barrier_all()?;
    let all = table.to_vec();
    table.free()?;
    Ok(all)
}

/// `OXSHMEM_IBGDA_QUEUE_MEM` as set (`NAME=value`, in the spelling the user chose), for messages.
pub(crate) fn queue_mem_setting() -> String {
    let (v, name) = crate::config::value_of("OXSHMEM_IBGDA_QUEUE_MEM");
    format!("{name}={}", v.trim())
}

/// The allocator of the GPU memory the queues are built in (`None`: host memory), as
/// `OXSHMEM_IBGDA_QUEUE_MEM` asks.
///
/// # Errors
/// GPU memory asked where there is none.
fn queue_memory(
    me: usize,
    want: QueueMem,
    heap: Option<&IbgdaHeap>,
) -> oxshmem::Result<Option<std::sync::Arc<dyn DeviceAlloc>>> {
    if want == QueueMem::Host {
        return Ok(None);
    }
    match heap.and_then(|h| h.queue_alloc.clone()) {
        None => Err(nic_err(
            me,
            NicError::refused(
                queue_mem_setting(),
                "this back end has no GPU memory for the queues (the CUDA back end has)",
            ),
        )),
        Some(a) => Ok(Some(a)),
    }
}

impl Ibgda {
    /// Builds the queues to every PE (collective: exchanges remote keys and heap bases).
    pub(crate) fn new(shmem: &oxshmem::Shmem, config: IbgdaConfig) -> oxshmem::Result<Ibgda> {
        Self::new_in(shmem, config, &devmem::host())
    }

    /// As [`new`](Self::new), with every structure device code reads in memory from `from`.
    pub(crate) fn new_in(
        shmem: &oxshmem::Shmem,
        config: IbgdaConfig,
        from: &std::sync::Arc<dyn DeviceAlloc>,
    ) -> oxshmem::Result<Ibgda> {
        Self::new_on(shmem, config, from, None)
    }

    /// Builds the queues to every PE (collective: exchanges remote keys and heap bases), with
    /// every structure device code reads in memory from `from`, over `heap` instead of the
    /// runtime's symmetric heap when given (the CUDA back end's GPU heap).
    ///
    /// # Errors
    /// The runtime's (the key exchange); the allocator's.
    pub fn new_on(
        shmem: &oxshmem::Shmem,
        config: IbgdaConfig,
        from: &std::sync::Arc<dyn DeviceAlloc>,
        heap: Option<IbgdaHeap>,
    ) -> oxshmem::Result<Ibgda> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let (base, size) = match &heap {
            Some(h) => (h.base as usize, h.size as usize),
            None => {
                let (b, s) = oxshmem::raw::heap_range()?;
                (b as usize, s)
            }
        };
        // Two allocations. The control one holds what device code reads and its producers
        // read-modify-write: the table, the per-PE arrays, the queues' descriptors (counters,
        // ring lock and indices, error latch, scratch bitmap) and their marks — GPU memory for
        // GPU producers, as NVSHMEM keeps its device QPs and their management variables, so that
        // no atomic of theirs crosses PCIe. The queue one holds what the NIC reads and writes
        // (and the host reads): each queue's doorbell words, send queue, CQ and scratch buffer,
        // and a line per queue for its CQ's doorbell record. Both are made before the NIC is
        // opened, so that on every error below the NIC (with the queue pairs and registrations
        // over it) is dropped first.
        let nq = config.num_rc * n;
        let mut k = Carve::default();
        let t_off = k.take::<IbgdaDevice>(1);
        let rk_off = k.take::<u32>(n);
        let rb_off = k.take::<u64>(n);
        let mp_off = k.take::<u64>(n);
        let lb_off = k.take::<LocalBuffer>(MAX_LOCAL_BUFFERS);
        let q_off = k.take::<Qp<Mlx5>>(nq);
        let mut c = Carve::default();
        // (A NIC needs a CQ doorbell record; the collapsed CQ never updates it.)
        let cq_dbr_off = c.take::<[u64; 8]>(nq);
        let parts: Vec<qp::QpParts> = (0..nq)
            .map(|_| {
                let marks = Qp::<Mlx5>::carve_marks(&mut k, config.nwqes);
                Qp::<Mlx5>::carve(&mut c, marks, config.nwqes, config.cq_mode, config.ncqes)
            })
            .collect();
        // The queues are host memory (pinned where a GPU writes them), which a GPU reaches over
        // PCIe, or with `OXSHMEM_IBGDA_QUEUE_MEM=gpu` the GPU's own.
        let in_gpu = queue_memory(me, config.queue_mem, heap.as_ref())?;
        // The control memory: the GPU's where the producers are GPU threads.
        let ctl_gpu = heap.as_ref().and_then(|h| h.queue_alloc.clone());
        let alloc_err = |e: String| {
            oxshmem::Error::new(
                me,
                "nvshmem_init",
                oxshmem::ErrorKind::Layer { layer: "device", reason: format!("the IBGDA queues: {e}") },
            )
        };
        let ctl = DeviceMem::new(k.bytes(), ctl_gpu.as_ref().unwrap_or(from)).map_err(alloc_err)?;
        let mem = DeviceMem::new(c.bytes(), in_gpu.as_ref().unwrap_or(from)).map_err(alloc_err)?;
        // `m` and `mk`: where the structures are and what their pointers say; `w` and `wk`:
        // where this set-up writes them — in place, or for GPU memory an image in host memory,
        // copied there once complete (the CPU may not reach GPU memory).
        let m = mem.as_ptr();
        let mk = ctl.as_ptr();
        // Whether this CPU may read and write the queues where they are: host memory, or GPU
        // memory on a system where the CPU reaches it (asked of the kernel: it is not so
        // behind PCIe). The software NIC and the CPU ringer read the queues with the CPU.
        let cpu_reaches = in_gpu.is_none() || devmem::cpu_reaches(m as u64, 8);
        // The automatic choice is the same on every PE: each says whether it could use a
        // hardware NIC, and all take one only if all could.
        let agree = |capable: bool| -> Result<Option<usize>, NicError> {
            let all = exchange(shmem, 1, |_| vec![u8::from(capable)])
                .map_err(|e| NicError::refused("agreeing on the NIC", e.to_string()))?;
            Ok(all.iter().position(|&f| f == 0))
        };
        let nic = crate::nic::open(me, config.soft_layout, config.soft_registers, heap.is_some(), &agree)
            .map_err(|e| nic_err(me, e))?;
        // A hardware NIC executes the queues itself: no software NIC then, and the producers
        // ring its doorbell register (GPU producers through the page mapped for the GPU, which
        // the heap's memory does: `NicMemory::map_doorbell`).
        let described = nic.describe();
        let soft = described.provider == "soft";
        let layout = described.layout;
        let gpu = heap.is_some();
        if gpu && layout != Layout::Mlx5 {
            return Err(nic_err(
                me,
                NicError::refused(
                    format!("IBGDA queues in {} format", layout.name()),
                    "the CUDA device library writes mlx5 work requests; this format serves CPU device threads",
                ),
            ));
        }
        if soft && !cpu_reaches {
            return Err(nic_err(
                me,
                NicError::refused(
                    queue_mem_setting(),
                    "the software NIC reads its queues with the CPU, which cannot reach this GPU's memory \
                     (behind PCIe it reaches it only through copies); use host queues, or a hardware NIC",
                ),
            ));
        }
        let kind = if gpu { MemoryKind::Gpu } else { MemoryKind::Host };
        let heap_mr = match &heap {
            Some(h) => register_gpu_range("the GPU heap", &*nic, &described, &*h.memory, base as u64, size as u64),
            None => nic.register(base as u64, size as u64, kind),
        }
        .map_err(|e| nic_err(me, e))?;
        let implicit = nic.register_implicit().map_err(|e| nic_err(me, e))?;

        let image = match in_gpu {
            Some(_) => Some(DeviceMem::new(c.bytes(), &devmem::host()).map_err(alloc_err)?),
            None => None,
        };
        let w = image.as_ref().map_or(m, DeviceMem::as_ptr);
        // The control image stays: the software NIC reads the descriptors' fixed fields (the
        // arrays' and doorbell words' addresses, sizes, QP number) there, and never the words
        // the producers change.
        let view = match ctl_gpu {
            Some(_) => Some(DeviceMem::new(k.bytes(), &devmem::host()).map_err(alloc_err)?),
            None => None,
        };
        let wk = view.as_ref().map_or(mk, DeviceMem::as_ptr);
        let (queue_kind, queues_mr, queue_fd) = match (&in_gpu, &heap) {
            (Some(_), Some(h)) => {
                // Whole host pages, as a dma-buf is (the allocation is whole GPU pages, larger).
                let page = oxshmem::config::page_size().max(devmem::PAGE);
                let len = c.bytes().next_multiple_of(page) as u64;
                let what = "the IBGDA queues (GPU memory)";
                let mr = register_gpu_range(what, &*nic, &described, &*h.memory, m as u64, len)
                    .map_err(|e| nic_err(me, e))?;
                // The queue pairs' user memory: through a dma-buf too where the NIC takes one
                // (else by address, which a hardware NIC reaches through nvidia_peermem).
                let fd = if described.dmabuf {
                    match h.memory.export_dmabuf(m as u64, len) {
                        Ok(fd) => Some(fd),
                        Err(e) => {
                            tracing::debug!(target: "nic", "the IBGDA queues' user memory goes by address: {e}");
                            None
                        }
                    }
                } else {
                    None
                };
                (MemoryKind::Gpu, mr, fd)
            }
            _ => {
                let mr = nic.register(m as u64, c.bytes() as u64, MemoryKind::Host).map_err(|e| nic_err(me, e))?;
                (MemoryKind::Host, mr, None)
            }
        };
        // A queue pair per (queue group, peer), over its part of the allocation.
        let ncq = qp::cq_entries(config.cq_mode, config.ncqes);
        let mut qpns = Vec::with_capacity(nq);
        let dbr_in_nic = std::mem::offset_of!(qp::Doorbell, dbr);
        for (i, p) in parts.iter().enumerate() {
            let q = QueueMemory {
                region: (m as u64, c.bytes() as u64),
                sq_dbr: (m as usize + p.doorbell_offset() + dbr_in_nic) as u64,
                cq_dbr: (m as usize + cq_dbr_off + i * 64) as u64,
                sq: m as u64 + p.sq_offset() as u64,
                nwqes: config.nwqes as u32,
                cq: m as u64 + p.cq_offset() as u64,
                ncqes: ncq as u32,
                kind: queue_kind,
                dmabuf: queue_fd.as_ref().map(std::os::fd::AsRawFd::as_raw_fd),
            };
            qpns.push(nic.create_qp(&q).map_err(|e| nic_err(me, e))?);
        }

        // Every PE's heap key and base and its port's address (allgather), and the QP numbers
        // of its queues to this PE.
        const CARD: usize = 6;
        let port = nic.port();
        let gid = port.gid;
        let mine = [
            u64::from(heap_mr.rkey),
            base as u64,
            u64::from(port.lid),
            u64::from_be_bytes(gid[..8].try_into().expect("8 bytes")),
            u64::from_be_bytes(gid[8..].try_into().expect("8 bytes")),
            port.mac.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)),
        ];
        let all = exchange(shmem, CARD, |_| mine.to_vec())?;
        let peer_qpns = exchange(shmem, config.num_rc, |pe| (0..config.num_rc).map(|rc| qpns[rc * n + pe]).collect())?;
        for (i, &qpn) in qpns.iter().enumerate() {
            let (rc, pe) = (i / n, i % n);
            let c = &all[CARD * pe..CARD * pe + CARD];
            let mut gid = [0u8; 16];
            gid[..8].copy_from_slice(&c[3].to_be_bytes());
            gid[8..].copy_from_slice(&c[4].to_be_bytes());
            let mac: [u8; 6] = c[5].to_be_bytes()[2..].try_into().expect("6 bytes");
            let peer = QpPeer { qpn: peer_qpns[config.num_rc * pe + rc], lid: c[2] as u16, gid, mac, psn: FIRST_PSN };
            connect(&*nic, qpn, &peer).map_err(|e| nic_err(me, e))?;
        }
        drop(queue_fd);
        tracing::debug!(target: "device", nic = ?described, queues = nq, memory = ?queue_kind, "IBGDA queues connected");

        // What the host keeps of the per-PE tables (the device reads its own copies).
        let rkeys: Box<[u32]> = (0..n).map(|pe| all[CARD * pe] as u32).collect();
        let rbases: Box<[u64]> = (0..n).map(|pe| all[CARD * pe + 1]).collect();
        let mapped: Box<[u64]> = (0..n)
            .map(|pe| match &heap {
                Some(h) => h.mapped[pe],
                None => oxshmem::raw::ptr(base as *const u8, pe as i32) as u64,
            })
            .collect();
        // SAFETY: every part lies inside `ctl` or `mem` (and the same offsets inside their
        // images), aligned for its type (Carve); each value is written once through `wk` or `w`
        // before anything reads it, and both allocations outlive the channel's pointers into
        // them (they are the channel's last fields).
        unsafe {
            let at = |off: usize| (mk.add(off), wk.add(off));
            let (rkeys_d, rkeys_w) = at(rk_off);
            let (rbases_d, rbases_w) = at(rb_off);
            let (mapped_d, mapped_w) = at(mp_off);
            let (lbufs_d, lbufs_w) = at(lb_off);
            for i in 0..MAX_LOCAL_BUFFERS {
                lbufs_w.cast::<LocalBuffer>().add(i).write(LocalBuffer::default());
            }
            for pe in 0..n {
                rkeys_w.cast::<u32>().add(pe).write(rkeys[pe]);
                rbases_w.cast::<u64>().add(pe).write(rbases[pe]);
                mapped_w.cast::<u64>().add(pe).write(mapped[pe]);
            }
            let (qps, qps_w) = at(q_off);
            // Per queue: the register as its producers address it (0: they write none), the
            // register here (for the software NIC that reads it, and the CPU ringer), and
            // whether a CPU thread rings for the producers.
            let mut rings = Vec::with_capacity(nq);
            let mut forwarded = Vec::new();
            for (i, &qpn) in qpns.iter().enumerate() {
                let DoorbellPath::Mapped(at) = nic.doorbell(qpn) else {
                    rings.push((0, 0));
                    continue;
                };
                let producers = match (config.nic_handler, &heap) {
                    (NicHandler::Cpu, _) => None,
                    (_, None) => Some(at),
                    // GPU producers: the register's page mapped for the GPU, if it can be.
                    (handler, Some(h)) => match h.memory.map_doorbell(at) {
                        Ok(dev) => Some(dev),
                        Err(e) if handler == NicHandler::Gpu => {
                            let what = format!("IBGDA queue {qpn:#x}: mapping the doorbell for the GPU");
                            return Err(nic_err(me, NicError::refused(what, e)));
                        }
                        Err(e) => {
                            if forwarded.is_empty() {
                                tracing::info!(target: "nic", "a CPU thread rings the NIC for the GPU ({e})");
                            }
                            None
                        }
                    },
                };
                if producers.is_none() {
                    if !cpu_reaches {
                        let instead = if config.nic_handler == NicHandler::Cpu {
                            "or let the GPU ring (OXSHMEM_IBGDA_NIC_HANDLER=auto)"
                        } else {
                            "or use a GPU that maps the NIC's doorbell page"
                        };
                        return Err(nic_err(
                            me,
                            NicError::refused(
                                format!("IBGDA queue {qpn:#x}"),
                                format!(
                                    "a CPU thread would ring the NIC for the GPU, and it reads each queue's doorbell \
                                     word, which this CPU cannot reach in GPU memory ({}): use host queues, {instead}",
                                    queue_mem_setting()
                                ),
                            ),
                        ));
                    }
                    forwarded.push((i, at));
                }
                rings.push((producers.unwrap_or(0), if soft { at } else { 0 }));
            }
            for (i, p) in parts.iter().enumerate() {
                let pe = i % n;
                crate::with_layout!(layout, L => {
                    let q = qps_w.cast::<Qp<L>>().add(i);
                    Qp::init_at(
                        q,
                        w,
                        wk,
                        *p,
                        config.nwqes,
                        config.cq_mode,
                        config.ncqes,
                        config.batch,
                        qpns[i],
                        pe as u32,
                    );
                    // Its pointers name the arrays where they will be.
                    Qp::relocate(q, m as usize as isize - w as usize as isize, mk as usize as isize - wk as usize as isize);
                    assert!(
                        (*q).arrays_within((m as u64, c.bytes() as u64), (mk as u64, k.bytes() as u64)),
                        "queue {i}'s arrays lie in the allocations"
                    );
                    (*q).ring.uar.store(rings[i].0, std::sync::atomic::Ordering::Relaxed);
                    // The doorbell words, through the queue image's pointer to them.
                    let nic = &*w.add(p.doorbell_offset()).cast::<qp::Doorbell>();
                    nic.soft_reg.store(rings[i].1, std::sync::atomic::Ordering::Relaxed);
                });
            }
            let (table, table_w) = at(t_off);
            let table = table.cast::<IbgdaDevice>();
            table_w.cast::<IbgdaDevice>().write(IbgdaDevice {
                n_pes: n as u32,
                num_rc: config.num_rc as u32,
                nwqes: config.nwqes as u32,
                ncqes: ncq.min(u32::MAX as usize) as u32,
                batch: config.batch.min(u32::MAX as usize) as u32,
                cq_mode: config.cq_mode as u32,
                heap_lkey: heap_mr.lkey,
                implicit_lkey: implicit.lkey,
                ibuf_lkey: queues_mr.lkey,
                nqps: nq as u32,
                nlbufs: 0,
                max_lbufs: MAX_LOCAL_BUFFERS as u32,
                heap_base: base as u64,
                heap_size: size as u64,
                // C reads mlx5 queues only (GPU producers with another format are refused above).
                qps: qps.cast(),
                rkeys: rkeys_d.cast(),
                rbases: rbases_d.cast(),
                mapped: mapped_d.cast(),
                lbufs: lbufs_d.cast(),
            });
            // The structures to where they live, before anything reads them there (the ringer
            // and the software NIC start below and after).
            for (what, done, img, to) in [
                ("the queues' descriptors", "IBGDA queue descriptors in GPU memory", &view, mk),
                ("the queues", "IBGDA queues in GPU memory", &image, m),
            ] {
                if let (Some(img), Some(h)) = (img, &heap) {
                    h.memory
                        .copy(to as u64, img.as_ptr() as u64, img.len())
                        .map_err(|e| alloc_err(format!("copying {what} into GPU memory: {e}")))?;
                    tracing::debug!(target: "nic", bytes = img.len(), "{done}");
                }
            }
            let shared = std::sync::Arc::new(softnic::NicShared::default());
            let ringer = if forwarded.is_empty() {
                None
            } else {
                let db_in_nic = std::mem::offset_of!(qp::Doorbell, db);
                let rungs = forwarded
                    .iter()
                    .map(|&(i, at)| ringer::Rung {
                        word: (m as usize + parts[i].doorbell_offset() + db_in_nic) as u64,
                        register: at,
                    })
                    .collect();
                // The words are in `mem` and the registers the provider's, both dropped after
                // the ringer (the channel's field order; the provider outlives the channel's
                // memory too).
                // The software NIC standing in for a register-reading NIC sleeps when idle: a
                // register write wakes it, as a doorbell wakes a hardware NIC's engine.
                let wake: Option<Box<dyn Fn() + Send>> = soft.then(|| {
                    let s = shared.clone();
                    Box::new(move || s.wake()) as Box<dyn Fn() + Send>
                });
                let r = ringer::CpuRinger::start(rungs, wake)
                    .map_err(|e| nic_err(me, NicError::refused("starting the CPU ringer thread", e.to_string())))?;
                tracing::debug!(target: "nic", queues = forwarded.len(), "a CPU thread rings the NIC for the producers");
                Some(r)
            };
            Ok(Ibgda {
                layout,
                qps,
                host_ctl: view.is_none(),
                host_queues: cpu_reaches,
                nqps: nq,
                num_rc: config.num_rc,
                n_pes: n,
                rkeys,
                rbases,
                heap_base: base as u64,
                heap_size: size as u64,
                mapped,
                memory: heap.map(|h| h.memory),
                config,
                heap_lkey: heap_mr.lkey,
                implicit_lkey: implicit.lkey,
                ibuf_lkey: queues_mr.lkey,
                local: parking_lot::RwLock::new(Vec::new()),
                lbufs: lbufs_d.cast(),
                provider: nic,
                soft,
                ringer,
                nic: shared,
                table,
                view,
                ctl,
                mem,
            })
        }
    }

    /// The NIC that set the queues up.
    pub fn provider(&self) -> &dyn NicProvider {
        &*self.provider
    }

    /// Whether the software NIC executes the queues (start its thread then); else a hardware
    /// NIC does.
    pub fn needs_software_nic(&self) -> bool {
        self.soft
    }

    /// Where the queues' descriptors are (GPU memory for GPU producers).
    pub fn descriptors(&self) -> u64 {
        self.qps as u64
    }

    /// The table device code reads (`DeviceState::ibgda`).
    pub fn device_table(&self) -> *mut IbgdaDevice {
        self.table
    }

    /// Registers the `len` bytes at `addr` (GPU memory when `gpu`, else host memory the GPU
    /// can reach) with the NIC as a local buffer (`nvshmemx_buffer_register`), and enters it
    /// into the device table's `lbufs`, where device code finds its key for a put's source or
    /// a get's destination outside the heap. GPU memory goes through a dma-buf where the NIC
    /// takes one (whole pages around the range), else by address, as the heap does. The
    /// local key.
    ///
    /// # Errors
    /// The table is full ([`MAX_LOCAL_BUFFERS`]), or the NIC refused the memory.
    pub fn register_local(&self, addr: u64, len: u64, gpu: bool) -> Result<u32, String> {
        let mut local = self.local.write();
        let Some(slot) = (0..MAX_LOCAL_BUFFERS).find(|i| local.iter().all(|r| r.slot != *i)) else {
            return Err(format!(
                "{MAX_LOCAL_BUFFERS} buffers are registered already, as many as the IBGDA channel holds: unregister \
                 one first"
            ));
        };
        let nic = &*self.provider;
        let region = match (&self.memory, gpu) {
            (Some(memory), true) => {
                let page = oxshmem::config::page_size().max(devmem::PAGE) as u64;
                let start = addr & !(page - 1);
                let end = (addr + len).next_multiple_of(page);
                register_gpu_range("a registered buffer", nic, &nic.describe(), &**memory, start, end - start)
            }
            _ => nic.register(addr, len, if gpu { MemoryKind::Gpu } else { MemoryKind::Host }),
        }
        .map_err(|e| e.to_string())?;
        // SAFETY: `slot` < MAX_LOCAL_BUFFERS entries at `lbufs`, in `mem`; the entry is free
        // (its len is 0), so no device thread matches it while base and key change.
        let entry = unsafe { self.lbufs.add(slot) }.cast::<u8>();
        let written = self
            .store(entry, std::mem::offset_of!(LocalBuffer, base), addr, 8)
            .and_then(|()| self.store(entry, std::mem::offset_of!(LocalBuffer, lkey), u64::from(region.lkey), 4))
            .and_then(|()| self.store(entry, std::mem::offset_of!(LocalBuffer, len), len, 8))
            .and_then(|()| {
                let used = local.iter().map(|r| r.slot + 1).max().unwrap_or(0).max(slot + 1);
                self.store(self.table.cast(), std::mem::offset_of!(IbgdaDevice, nlbufs), used as u64, 4)
            });
        if let Err(e) = written {
            let _ = nic.deregister(&region);
            return Err(format!("entering it into the device's table: {e}"));
        }
        local.push(LocalRegion { slot, base: addr, region });
        tracing::debug!(target: "nic", addr, len, gpu, slot, lkey = region.lkey, "local buffer registered");
        Ok(region.lkey)
    }

    /// Removes the local buffer registered at `addr` ([`register_local`](Self::register_local)):
    /// from the device table first, then from the NIC. Kernels that still use it fail with an
    /// error naming the buffer.
    ///
    /// # Errors
    /// No buffer was registered at `addr`; the table could not be written.
    pub fn unregister_local(&self, addr: u64) -> Result<(), String> {
        let mut local = self.local.write();
        let Some(i) = local.iter().position(|r| r.base == addr) else {
            return Err(format!("{addr:#x} is not a buffer registered with the IBGDA channel"));
        };
        let r = local[i];
        // SAFETY: as in register_local; clearing len frees the entry for device readers.
        let entry = unsafe { self.lbufs.add(r.slot) }.cast::<u8>();
        self.store(entry, std::mem::offset_of!(LocalBuffer, len), 0, 8)?;
        local.swap_remove(i);
        self.provider.deregister(&r.region).map_err(|e| e.to_string())
    }

    /// Stores the low `width` bytes (4 or 8) of `value` at `base + off` in the channel's
    /// memory: with a release store where this CPU reaches it, else through the memory back
    /// end (a copy, complete when it returns).
    fn store(&self, base: *mut u8, off: usize, value: u64, width: usize) -> Result<(), String> {
        // SAFETY: callers pass a field of the table or of an lbufs entry, inside `ctl`,
        // aligned for its width.
        let at = unsafe { base.add(off) };
        if self.host_ctl {
            // SAFETY: as above; the CPU reaches `ctl`, and device threads read the word
            // atomically.
            unsafe {
                match width {
                    4 => std::sync::atomic::AtomicU32::from_ptr(at.cast())
                        .store(value as u32, std::sync::atomic::Ordering::Release),
                    _ => std::sync::atomic::AtomicU64::from_ptr(at.cast())
                        .store(value, std::sync::atomic::Ordering::Release),
                }
            }
            return Ok(());
        }
        let bytes = value.to_le_bytes();
        // SAFETY: `at` is `width` bytes of the channel's memory; `bytes` a local.
        unsafe { self.ctl_copier()?.copy(at as u64, bytes.as_ptr() as u64, width) }
    }

    /// What copies into and out of `ctl` when it is GPU memory (`!host_ctl`).
    fn ctl_copier(&self) -> Result<&dyn NicMemory, String> {
        self.memory.as_deref().ok_or_else(|| {
            "the channel's tables are in memory this CPU cannot reach, and there is no back end to copy with".into()
        })
    }

    /// The queues' allocation (registered with the NIC; it holds every scratch buffer).
    pub fn memory(&self) -> &DeviceMem {
        &self.mem
    }

    /// Doorbell-register writes the CPU ringer made for the producers so far; `None` when no
    /// CPU thread rings (the producers write the registers themselves, or watch-only NIC).
    pub fn cpu_rings(&self) -> Option<u64> {
        self.ringer.as_ref().map(ringer::CpuRinger::rung)
    }

    /// The queues' format.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Queue `rc` to `pe`, in format `L` (the channel's, see [`queues`](Self::queues)).
    pub(crate) fn qp<L: NicLayout>(&self, rc: usize, pe: usize) -> &Qp<L> {
        &self.queues::<L>()[(rc % self.num_rc) * self.n_pes + pe]
    }

    /// The index of a queue in `qps`.
    pub(crate) fn qp_index(&self, rc: usize, pe: usize) -> usize {
        (rc % self.num_rc) * self.n_pes + pe
    }

    /// The configuration.
    pub fn config(&self) -> IbgdaConfig {
        self.config
    }

    /// Every queue, whose format is `L`.
    ///
    /// # Panics
    /// When the queues are in another format than `L` ([`layout`](Self::layout) says which;
    /// [`with_layout!`](crate::with_layout) chooses the type from it).
    pub fn queues<L: NicLayout>(&self) -> &[Qp<L>] {
        assert!(L::LAYOUT == self.layout, "the IBGDA queues are in {} format, not {}", self.layout.name(), L::NAME);
        assert!(self.host_ctl, "the IBGDA queues' descriptors are in GPU memory, which the host reads only by copies");
        // SAFETY: `nqps` queues built as `Qp<L>` (this layout's) at `qps` by `new_on`, alive as
        // long as `ctl`.
        unsafe { std::slice::from_raw_parts(self.qps.cast::<Qp<L>>(), self.nqps) }
    }

    /// Every queue as the NIC's side reads it, whose format is `L`: the descriptors, or where
    /// they are GPU memory their image, whose fixed fields (the addresses of the arrays and of
    /// the doorbell words, the sizes, the QP number) are the descriptors' — only the NIC's
    /// methods (`nic_*`) and the observing quiet read through them.
    ///
    /// # Panics
    /// As [`queues`](Self::queues); when this CPU cannot reach the queues' memory.
    pub(crate) fn nic_queues<L: NicLayout>(&self) -> &[Qp<L>] {
        assert!(L::LAYOUT == self.layout, "the IBGDA queues are in {} format, not {}", self.layout.name(), L::NAME);
        assert!(self.host_queues, "the IBGDA queues are in GPU memory, which this CPU cannot reach");
        let at = self.view.as_ref().map_or(self.qps, |v| {
            // SAFETY: the same offset in the image as in `ctl`.
            unsafe { v.as_ptr().add(self.qps as usize - self.ctl.as_ptr() as usize) }
        });
        // SAFETY: `nqps` queues built as `Qp<L>` at `at` (in `ctl` or its image) by `new_on`,
        // alive as long as the channel.
        unsafe { std::slice::from_raw_parts(at.cast::<Qp<L>>(), self.nqps) }
    }

    /// Queue `i`'s descriptor words the host's observing quiet reads: loaded in place, or
    /// copied out of GPU memory.
    fn observe<L: NicLayout>(&self, i: usize) -> Result<qp::Observed, String> {
        if self.host_ctl {
            return Ok(self.queues::<L>()[i].observe());
        }
        // One copy from the counters' line through the error word (the ring line between).
        let (from, to) = (std::mem::offset_of!(Qp<L>, prod), std::mem::offset_of!(Qp<L>, error) + 8);
        let mut words = [0u64; 24];
        let words = &mut words[..(to - from) / 8];
        let q = self.qps as u64 + (i * size_of::<Qp<L>>() + from) as u64;
        // SAFETY: bytes [from, to) of descriptor `i`, in `ctl`; a local destination of that size.
        unsafe { self.ctl_copier()?.copy(words.as_mut_ptr() as u64, q, to - from)? };
        let word = |off: usize| words[(off - from) / 8];
        Ok(qp::Observed {
            resv_head: word(std::mem::offset_of!(Qp<L>, prod) + std::mem::offset_of!(qp::Counters, resv_head)),
            cons_idx: word(std::mem::offset_of!(Qp<L>, prod) + std::mem::offset_of!(qp::Counters, cons_idx)),
            error: word(std::mem::offset_of!(Qp<L>, error)),
        })
    }

    /// The host's quiet of the queues device code drives (`GpuSegment::quiet`): waits, calling
    /// `wait`, until everything reserved on every queue so far has completed, observing only
    /// ([`Qp::quiet_observing`]): the descriptors' words copied out of GPU memory (or loaded,
    /// where they are host memory), the CQs read in the queues' memory.
    ///
    /// # Errors
    /// A queue's NIC error or stall (with the queue's peer), or a failed copy.
    pub fn quiet_observing(&self, wait: &mut dyn FnMut() -> bool) -> Result<(), String> {
        crate::with_layout!(self.layout, L => {
            for (i, q) in self.nic_queues::<L>().iter().enumerate() {
                let failed = std::cell::RefCell::new(None::<String>);
                let mut look = || {
                    self.observe::<L>(i).unwrap_or_else(|e| {
                        failed.borrow_mut().get_or_insert(e);
                        qp::Observed::default()
                    })
                };
                let mut go_on = || failed.borrow().is_none() && wait();
                let r = q.quiet_observing(&mut look, &mut go_on);
                if let Some(e) = failed.take() {
                    return Err(format!("reading queue {i}'s descriptor (to PE {}): {e}", q.peer()));
                }
                r.map_err(|e| format!("the queue to PE {}: {e:?}", q.peer()))?;
            }
            Ok(())
        })
    }

    /// How many times the send queues went round, summed (slot reuse under flow control).
    pub fn laps(&self) -> u64 {
        crate::with_layout!(self.layout, L => self.queues::<L>().iter().map(|q| q.prod_idx() / q.nwqes()).sum())
    }

    /// After a doorbell on queue `qi`: if the software NIC's thread sleeps, does the queue's
    /// work now (see [`softnic::progress_queue`]); if it runs, it sees the doorbell.
    #[inline]
    pub(crate) fn kick(&self, qi: usize) {
        if self.nic.is_sleeping() {
            softnic::progress_queue(self, qi);
        }
    }
}
