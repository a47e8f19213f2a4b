//! The CUDA back end of the C library (feature `cuda`): the GPU symmetric heap that
//! `nvshmem_malloc` allocates from, host RMA on it, `nvshmem_ptr` into peers' GPU heaps, and
//! the device state handed to `libnvshmem_device.a` so that kernels can call NVSHMEM.
//!
//! At `nvshmem_init` (after the runtime and the teams), when the program links the device
//! library or `OXSHMEM_CUDA_HEAP=on` asks for it (`off`: never; `auto`, the default: when the
//! device library is linked), every PE:
//!
//! 1. opens its GPU (`OXSHMEM_CUDA_DEVICE`, else its rank on the node modulo the GPUs there,
//!    so several PEs share a GPU when a node has more PEs than GPUs);
//! 2. creates its GPU heap (CUDA VMM, `oxshmem_device::cuda::GpuHeap`), as large as the
//!    host heap (`NVSHMEM_SYMMETRIC_SIZE` / `SHMEM_SYMMETRIC_SIZE`) plus the back end's own
//!    area, and exports it as a file descriptor;
//! 3. passes the descriptor to every other PE of its node (an abstract Unix socket named after
//!    its pid, `pidfd_getfd` or `SCM_RIGHTS`) and maps theirs, so that a peer's GPU heap is a
//!    load or store away, from kernels and for host copies alike;
//! 4. places the device state (`oxshmem_device_state_t`: PE, heap, per-peer bases and channels,
//!    the device barrier's flags, the error slot) and the CUDA-side team table in pinned host
//!    memory the GPU reads, and calls the device library's `attach` with their addresses.
//!
//! The first [`RESERVED`] bytes of the GPU heap are the back end's: the world barrier's flags,
//! then a barrier-flags area and [`TEAM_SCRATCH`] bytes of collective scratch for each
//! predefined team (world, shared, node, same-PE-on-node). The rest is carved by the runtime's
//! deterministic allocator, so the same collective calls give the same offset on every PE.
//!
//! Host RMA on GPU memory (`nvshmem_putmem`, `_getmem`, `_p`, `_g` and their `shmem_` and typed
//! twins) reaches it through synchronous CUDA copies into the peer's mapping, host atomics
//! through the device library's AMO kernel ([`amo`]). The other host routines do not reach GPU
//! memory yet: they end the job with an error saying so (see
//! `docs/cuda.md`). Only peers of this node are reachable (a job spanning nodes fails at init
//! with a message): the device channel is P2P for each, or with `OXSHMEM_DEVICE_CHANNEL` the
//! proxy (a ring in pinned memory drained by the CPU back end's proxy thread, with a target
//! that copies into the peers' mappings) or IBGDA (the queues in pinned memory over the GPU
//! heap, executed by the software NIC through [`GpuNicMemory`]).

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use oxshmem_device::ChannelKind;
use oxshmem_device::channel::devmem::DeviceAlloc;
use oxshmem_device::channel::proxy::{Proxy, ProxyRingBox};
use oxshmem_device::cuda::{DevAddr, Gpu, GpuHeap, PeerMapping, PinnedAlloc, PinnedBuf};
use oxshmem_device::ibgda::softnic::SoftNic;
use oxshmem_device::ibgda::{Ibgda, IbgdaConfig, IbgdaHeap};
use oxshmem_device::state::{BARRIER_ROUNDS, DeviceState, ErrorSlot};
use oxshmem_rt::heap::alloc::{AllocError, Allocator};
use oxshmem_rt::{Error, ErrorKind, ReduceOp, Result, SymSlice, Team};
use parking_lot::Mutex;

use crate::error::invalid;

mod channels;
mod exchange;
mod host;

use channels::{GpuNicMemory, GpuTarget};
use exchange::{Card, exchange, nonce};
pub(crate) use host::{amo, explain, get, put, put_signal, test, wait_until};

/// Bytes of one barrier round's flag line (`FLAG_STRIDE` in `bindings/cuda/src/state.cuh`).
const FLAG_STRIDE: usize = 64;
/// Bytes of barrier flags at the start of a team's scratch (`TEAM_FLAG_BYTES` there).
const TEAM_FLAG_BYTES: usize = BARRIER_ROUNDS * FLAG_STRIDE;
/// Bytes of collective scratch after each predefined team's flags (`scratch_bytes`).
pub(crate) const TEAM_SCRATCH: usize = 64 << 10;
/// Predefined teams with scratch: world, shared, node, same-PE-on-node (NVSHMEM's 0..4).
const PREDEFINED: usize = 4;
/// The back end's area at the start of the GPU heap: the world barrier's flags, then each
/// predefined team's flags and scratch; rounded to 64 KiB.
pub(crate) const RESERVED: usize =
    (TEAM_FLAG_BYTES + (PREDEFINED + USER_SLOTS) * (TEAM_FLAG_BYTES + TEAM_SCRATCH)).next_multiple_of(MAX_ALIGN);
/// The largest alignment `nvshmem_align` gives on the GPU heap: the heap's base is aligned to
/// the VMM granularity (2 MiB on current GPUs), and the allocator's range starts `RESERVED`
/// (a multiple of this) after it.
pub(crate) const MAX_ALIGN: usize = 2 << 20;
/// Team slots (flags and scratch) for teams the program splits off: as many such teams as this
/// can have device barriers and collectives at once.
const USER_SLOTS: usize = 16;

/// Offset in the GPU heap of team slot `i` (0..PREDEFINED: the predefined teams; then the
/// program's teams).
const fn slot_offset(i: usize) -> usize {
    TEAM_FLAG_BYTES + i * (TEAM_FLAG_BYTES + TEAM_SCRATCH)
}
/// Entries of the device team table: every `nvshmem_team_t` the host library hands out.
const DEVICE_TEAMS: usize = super::teams::MAX_TEAMS;
/// Alignment of `nvshmem_malloc` (as `cudaMalloc`'s).
const MALLOC_ALIGN: usize = 256;
/// The device library's ABI (`oxshmemi::ABI_VERSION`).
const ABI_VERSION: u32 = super::device_lib::DEVICE_ABI_VERSION as u32;
/// The variable that switches the back end: `auto` (default), `on`, `off`.
pub(crate) const MODE_VAR: &str = "OXSHMEM_CUDA_HEAP";

/// One team of the device-side team table: `oxshmem_cuda_team_t` of
/// `bindings/cuda/src/state.cuh` (whose `static_assert`s pin the same size and offsets).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CudaTeam {
    /// World PE of the team's PE 0 (-1: the slot is unused).
    start: i32,
    /// World-PE distance between consecutive team PEs.
    stride: i32,
    /// Number of PEs.
    size: i32,
    /// This PE's index in the team, -1 when not a member.
    my_pe: i32,
    /// Symmetric address of the team's barrier flags, then its scratch (0: none).
    scratch: u64,
    /// This PE's barrier epoch for the team (device-written).
    epoch: u64,
}

/// `oxshmem_cuda_state_t` of `bindings/cuda/src/state.cuh`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CudaState {
    abi_version: u32,
    n_teams: u32,
    /// Device address of the team table.
    teams: u64,
    /// Bytes of each team's scratch after its barrier flags.
    scratch_bytes: u64,
}

const _: () = assert!(size_of::<CudaTeam>() == 32 && std::mem::offset_of!(CudaTeam, scratch) == 16);
const _: () = assert!(std::mem::offset_of!(CudaTeam, epoch) == 24);
const _: () = assert!(size_of::<CudaState>() == 24 && std::mem::offset_of!(CudaState, teams) == 8);
const _: () = assert!(std::mem::offset_of!(CudaState, scratch_bytes) == 16);

/// Where each part lives in the pinned block.
#[derive(Debug, Clone, Copy)]
struct PinnedLayout {
    peer_base: usize,
    channel: usize,
    cuda_state: usize,
    teams: usize,
    total: usize,
}

impl PinnedLayout {
    fn new(n: usize) -> PinnedLayout {
        let peer_base = size_of::<DeviceState>().next_multiple_of(64);
        let channel = peer_base + 8 * n;
        let cuda_state = (channel + n).next_multiple_of(64);
        let teams = (cuda_state + size_of::<CudaState>()).next_multiple_of(64);
        let total = teams + DEVICE_TEAMS * size_of::<CudaTeam>();
        PinnedLayout { peer_base, channel, cuda_state, teams, total }
    }
}

/// The back end of one PE.
struct Backend {
    me: usize,
    gpu: Gpu,
    heap: GpuHeap,
    /// Per PE: where its GPU heap is mapped here (this PE's own heap for itself; 0: not mapped).
    peer_base: Vec<u64>,
    _maps: Vec<PeerMapping>,
    alloc: Mutex<Allocator>,
    pinned: PinnedBuf,
    layout: PinnedLayout,
    /// The channel of every peer (P2P, or the proxy when `OXSHMEM_DEVICE_CHANNEL=proxy`).
    kind: ChannelKind,
    /// The proxy's request ring, in pinned memory (with the proxy channel).
    ring: Option<ProxyRingBox>,
    /// The IBGDA queues and key tables, in pinned memory (with the IBGDA channel).
    ibgda: Option<Box<Ibgda>>,
    /// The program's teams' slots: bit `i` set while user slot `i` is free here, and which
    /// team index holds which slot.
    slots: Mutex<(u64, Vec<(i32, usize)>)>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend").field("me", &self.me).field("heap", &self.heap).finish_non_exhaustive()
    }
}

static BACKEND: Mutex<Option<Arc<Backend>>> = Mutex::new(None);
/// The proxy thread (with the proxy channel); stopped before the back end goes.
static PROXY: Mutex<Option<Proxy>> = Mutex::new(None);
/// The software NIC's thread (with the IBGDA channel); stopped before the back end goes.
static NIC: Mutex<Option<SoftNic>> = Mutex::new(None);

/// Bytes of each of the two host staging buffers of host collectives on GPU memory.
pub(crate) const STAGE_BYTES: usize = 256 << 10;

/// Symmetric host buffers (source and destination) through which host collectives on GPU
/// memory run: the runtime's collective on host memory, chunk by chunk, with copies in and out.
struct Stage {
    src: SymSlice<u8>,
    dst: SymSlice<u8>,
}

static STAGE: Mutex<Option<Stage>> = Mutex::new(None);

/// Runs `f` with the staging buffers (source, destination, bytes of each), one caller at a
/// time: `None` without the back end.
pub(crate) fn with_stage<R>(f: impl FnOnce(*mut u8, *mut u8, usize) -> R) -> Option<R> {
    let stage = STAGE.lock();
    let s = stage.as_ref()?;
    Some(f(s.src.as_ptr(), s.dst.as_ptr(), STAGE_BYTES))
}

/// A copy of `len` bytes between any two addresses of this process (host or GPU memory),
/// complete when it returns.
///
/// # Safety
/// Both ranges are valid for `len` bytes.
pub(crate) unsafe fn copy_any(func: &'static str, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
    let b = backend().ok_or_else(|| invalid(func, "the CUDA back end is not up"))?;
    // SAFETY: the caller's.
    unsafe { b.copy(func, dst as DevAddr, src as DevAddr, len) }
}
/// `[HEAP_LO, HEAP_HI)`: this PE's GPU heap (both 0 without the back end), for the cheap
/// "is this GPU memory" test the RMA fallbacks make.
static HEAP_LO: AtomicUsize = AtomicUsize::new(0);
static HEAP_HI: AtomicUsize = AtomicUsize::new(0);

fn backend() -> Option<Arc<Backend>> {
    BACKEND.lock().clone()
}

/// Whether `addr` lies in this PE's GPU heap.
#[inline]
pub(crate) fn owns(addr: usize) -> bool {
    addr >= HEAP_LO.load(Ordering::Relaxed) && addr < HEAP_HI.load(Ordering::Relaxed)
}

/// Whether the back end is up.
pub(crate) fn active() -> bool {
    HEAP_HI.load(Ordering::Relaxed) != 0
}

/// A CUDA driver error of `func` (`PE 0: nvshmem_init: no CUDA driver: libcuda.so.1 not found`).
fn cuda_err(func: &'static str, e: impl std::fmt::Display) -> Error {
    Error::new(crate::error::me(), func, ErrorKind::Layer { layer: "cuda", reason: e.to_string() })
}

/// What `OXSHMEM_CUDA_HEAP` asks for, given whether the device library is linked.
fn wanted(func: &'static str, device_lib: bool) -> Result<bool> {
    let v = std::env::var(MODE_VAR).unwrap_or_default();
    match v.trim() {
        "" | "auto" => Ok(device_lib),
        "on" | "1" | "yes" => Ok(true),
        "off" | "0" | "no" if device_lib => Err(invalid(
            func,
            format!("{MODE_VAR}=off, but this program links libnvshmem_device.a, whose kernels need the GPU heap"),
        )),
        "off" | "0" | "no" => Ok(false),
        other => Err(invalid(func, format!("{MODE_VAR}={other:?}: expected auto, on or off"))),
    }
}

/// Sets the back end up if wanted (collective: every PE decides alike, from the same
/// environment and program).
pub(crate) fn init(func: &'static str) -> Result<()> {
    let registered = super::device_lib::registered();
    if !wanted(func, registered.is_some())? {
        return Ok(());
    }
    let (channel, var) = oxshmem_rt::config::device_channel().map_err(|m| invalid(func, m))?;
    let kind = match channel.trim() {
        "" | "auto" | "p2p" => ChannelKind::P2p,
        "proxy" => ChannelKind::Proxy,
        "ibgda" => ChannelKind::Ibgda,
        other => return Err(invalid(func, format!("{var}={other:?}: expected p2p, proxy, ibgda or auto"))),
    };
    let b = Arc::new(setup(func, kind)?);
    if let Some(r) = registered {
        let state = b.pinned.device_ptr() as *const c_void;
        let cuda_state = (b.pinned.device_ptr() + b.layout.cuda_state as u64) as *const c_void;
        // SAFETY: the device library's attach copies two pointers into its __device__
        // globals; both point into `b.pinned`, which lives until finalize.
        let rc = unsafe { (r.attach)(state, cuda_state) };
        if rc != 0 {
            return Err(invalid(
                func,
                format!(
                    "libnvshmem_device.a's attach (cudaMemcpyToSymbol of the device state) returned CUDA error {rc}"
                ),
            ));
        }
    }
    // The *_on_stream routines become stream operations (a process initializes once, so the
    // executor is installed once).
    let streams = super::gpu_stream::CudaStreams::new(&b.gpu).map_err(|m| invalid(func, m))?;
    super::stream::set_stream_executor(Box::new(streams));
    let shmem = oxshmem_rt::current()?;
    *STAGE.lock() =
        Some(Stage { src: shmem.alloc_slice(STAGE_BYTES, 0u8)?, dst: shmem.alloc_slice(STAGE_BYTES, 0u8)? });
    HEAP_LO.store(b.heap.base() as usize, Ordering::Relaxed);
    HEAP_HI.store(b.heap.base() as usize + b.heap.size(), Ordering::Relaxed);
    tracing::info!(
        target: "cuda",
        gpu = ?b.gpu,
        heap = b.heap.size(),
        peers_mapped = b.peer_base.iter().filter(|&&p| p != 0).count(),
        attached = registered.is_some(),
        "CUDA back end up"
    );
    let ring = b.ring.as_ref().map(|r| r.as_ptr().cast_const());
    let state = b.pinned.host_ptr().cast_const().cast::<DeviceState>();
    let ib = b.ibgda.as_deref().map(|i| i as *const Ibgda);
    let timeout = timeout_ns();
    *BACKEND.lock() = Some(b);
    if let Some(ib) = ib {
        // SAFETY: the queues live in the back end until finalize, which stops the NIC first.
        *NIC.lock() = Some(unsafe { SoftNic::start_for(ib, timeout) });
    }
    if let Some(ring) = ring {
        // SAFETY: the state and the ring live in the back end until finalize, which stops
        // the proxy before it lets the back end go.
        let proxy = unsafe { Proxy::start_with(state, ring, proxy_spin(func)?, Arc::new(GpuTarget)) };
        *PROXY.lock() = Some(proxy);
    }
    Ok(())
}

/// Whether the proxy thread spins (`OXSHMEM_PROXY_SPIN`; by default where this host has a CPU
/// for every PE and its proxy, as on the CPU back end).
fn proxy_spin(func: &'static str) -> Result<bool> {
    Ok(match oxshmem_rt::config::proxy_spin().map_err(|m| invalid(func, m))? {
        Some(s) => s,
        None => {
            let node = oxshmem_rt::current()?.team_shared().n_pes()?;
            oxshmem_rt::config::job_cpus() >= 2 * node
        }
    })
}

fn setup(func: &'static str, kind: ChannelKind) -> Result<Backend> {
    let shmem = oxshmem_rt::current()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let node = shmem.team_shared().members()?;
    if node.len() != n {
        return Err(invalid(
            func,
            format!(
                "the job spans several nodes ({} of its {n} PEs on this one): the CUDA back end of this library \
                 reaches GPU heaps on this node only so far",
                node.len()
            ),
        ));
    }
    let local_rank = node.iter().position(|&p| p == me).unwrap_or(0);
    let gpu = Gpu::select(local_rank).map_err(|e| cuda_err(func, e))?;
    let want = oxshmem_rt::raw::heap_size()? + RESERVED;
    let (heap, fd) = GpuHeap::create(&gpu, want).map_err(|e| cuda_err(func, e))?;
    let size = heap.size();

    // Every PE's pid, heap size and socket nonce, through the host heap.
    let mine = shmem.alloc_slice(3, 0u64)?;
    let all = shmem.alloc_slice(3 * n, 0u64)?;
    mine.write(0, u64::from(std::process::id()));
    mine.write(1, size as u64);
    mine.write(2, nonce());
    shmem.team_world().fcollect(&all, &mine, 3)?;
    let cards: Vec<Card> = (0..n)
        .map(|pe| Card {
            pid: all.read(3 * pe) as u32,
            size: all.read(3 * pe + 1) as usize,
            nonce: all.read(3 * pe + 2),
        })
        .collect();
    mine.free()?;
    all.free()?;
    if let Some(pe) = (0..n).find(|&pe| cards[pe].size != size) {
        return Err(invalid(
            func,
            format!(
                "PE {pe}'s GPU heap is {} bytes and this PE's {size}: every PE needs the same \
                 NVSHMEM_SYMMETRIC_SIZE",
                cards[pe].size
            ),
        ));
    }

    let maps = exchange(func, &shmem, me, &node, &cards, &gpu, &fd)?;
    drop(fd);
    let mut peer_base = vec![0u64; n];
    let mut kept = Vec::with_capacity(maps.len());
    for (pe, m) in maps {
        peer_base[pe] = m.base();
        kept.push(m);
    }
    peer_base[me] = heap.base();

    // The heap starts zeroed for the back end's area (flags and epochs count from 0).
    // SAFETY: the first RESERVED bytes are this PE's own heap memory, nothing uses them yet.
    unsafe { gpu.memset(heap.base(), 0, RESERVED) }.map_err(|e| cuda_err(func, e))?;

    let layout = PinnedLayout::new(n);
    let pinned = PinnedBuf::new(&gpu, layout.total).map_err(|e| cuda_err(func, e))?;
    let pinned_alloc: Arc<dyn DeviceAlloc> = Arc::new(PinnedAlloc::new(&gpu));
    let ring = match kind {
        ChannelKind::Proxy => {
            Some(ProxyRingBox::new_in(oxshmem_device::PROXY_RING_SLOTS, &pinned_alloc).map_err(|m| invalid(func, m))?)
        }
        _ => None,
    };
    let ibgda = match kind {
        ChannelKind::Ibgda => {
            let config = IbgdaConfig::from_env().map_err(|m| invalid(func, m))?;
            let on = IbgdaHeap {
                base: heap.base(),
                size: heap.size() as u64,
                mapped: peer_base.clone(),
                memory: Arc::new(GpuNicMemory { gpu: gpu.clone() }),
            };
            Some(Box::new(Ibgda::new_on(&shmem, config, &pinned_alloc, Some(on))?))
        }
        _ => None,
    };
    let b = Backend {
        me,
        gpu,
        heap,
        peer_base,
        _maps: kept,
        alloc: Mutex::new(Allocator::new(size - RESERVED)),
        pinned,
        layout,
        kind,
        ring,
        ibgda,
        slots: Mutex::new(((1u64 << USER_SLOTS) - 1, Vec::new())),
    };
    b.write_state(n);
    b.write_teams(func)?;
    shmem.barrier_all()?;
    Ok(b)
}

impl Backend {
    fn pinned_at<T>(&self, off: usize) -> *mut T {
        // SAFETY: every offset of the layout is inside the pinned block.
        unsafe { self.pinned.host_ptr().add(off).cast() }
    }

    fn dev_at(&self, off: usize) -> u64 {
        self.pinned.device_ptr() + off as u64
    }

    /// Writes the device state, the per-peer bases and channels.
    fn write_state(&self, n: usize) {
        let peer_base: *mut u64 = self.pinned_at(self.layout.peer_base);
        let channel: *mut u8 = self.pinned_at(self.layout.channel);
        for pe in 0..n {
            // SAFETY: n entries of each array are inside the pinned block; no GPU reads it yet.
            unsafe {
                peer_base.add(pe).write(self.peer_base[pe]);
                channel.add(pe).write(self.kind as u8);
            }
        }
        let state = DeviceState {
            my_pe: self.me as u32,
            n_pes: n as u32,
            heap_base: self.heap.base(),
            heap_size: self.heap.size() as u64,
            peer_base: self.dev_at(self.layout.peer_base) as *const u64,
            channel: self.dev_at(self.layout.channel) as *const u8,
            ring: self.ring.as_ref().map_or(std::ptr::null_mut(), |r| r.as_ptr()),
            ibgda: self.ibgda.as_deref().map_or(std::ptr::null_mut(), Ibgda::device_table),
            barrier_flags: self.heap.base(),
            barrier_epoch: AtomicU64::new(0),
            timeout_ns: timeout_ns(),
            proxy_alive: Default::default(),
            proxy_sleeping: Default::default(),
            error: ErrorSlot::default(),
        };
        // SAFETY: the block starts with room for a DeviceState, 64-byte aligned (pinned
        // allocations are page-aligned); nothing reads it yet.
        unsafe { self.pinned_at::<DeviceState>(0).write(state) };
        let cs = CudaState {
            abi_version: ABI_VERSION,
            n_teams: DEVICE_TEAMS as u32,
            teams: self.dev_at(self.layout.teams),
            scratch_bytes: TEAM_SCRATCH as u64,
        };
        // SAFETY: as above.
        unsafe { self.pinned_at::<CudaState>(self.layout.cuda_state).write(cs) };
        for t in 0..DEVICE_TEAMS {
            self.set_team(t, None);
        }
    }

    /// Writes slot `index` of the device team table: `team` with `scratch` (0: none), or unused.
    fn set_team_with(&self, index: usize, team: Option<(&Team, u64)>) -> Result<()> {
        let entry = match team {
            None => CudaTeam { start: -1, stride: 0, size: 0, my_pe: -1, scratch: 0, epoch: 0 },
            Some((t, scratch)) => {
                let members = t.members()?;
                let Some((start, stride)) = strided(&members) else {
                    // A team that is not a stride of world PEs cannot be described to the
                    // device: its slot stays unused, and device code naming it fails.
                    tracing::debug!(target: "cuda", index, "team is not strided; no device entry");
                    return Ok(());
                };
                CudaTeam {
                    start: start as i32,
                    stride: stride as i32,
                    size: members.len() as i32,
                    my_pe: members.iter().position(|&p| p == self.me).map_or(-1, |i| i as i32),
                    scratch,
                    epoch: 0,
                }
            }
        };
        // SAFETY: `index < DEVICE_TEAMS` (callers); the slot is inside the pinned block. A
        // kernel reading the slot while the host rewrites it would race, as it would with a
        // team being created under it in NVSHMEM: teams are made and destroyed between kernels.
        unsafe { self.pinned_at::<CudaTeam>(self.layout.teams).add(index).write_volatile(entry) };
        Ok(())
    }

    fn set_team(&self, index: usize, team: Option<&Team>) {
        let _ = self.set_team_with(index, team.map(|t| (t, 0)));
    }

    /// The predefined teams, each with its flags and scratch in the reserved area.
    fn write_teams(&self, func: &'static str) -> Result<()> {
        for index in 0..PREDEFINED {
            let Ok(h) = super::teams::resolve(func, index as i32) else { continue };
            let t = crate::handles::team(func, h)?.get().team.clone();
            let scratch = self.heap.base() + slot_offset(index) as u64;
            self.set_team_with(index, Some((&t, scratch)))?;
        }
        Ok(())
    }

    /// The device address of `pe`'s copy of the `len` bytes at `addr` (in this PE's GPU heap).
    fn remote(&self, func: &'static str, addr: usize, len: usize, pe: usize) -> Result<DevAddr> {
        let off = addr - self.heap.base() as usize;
        if off.checked_add(len).is_none_or(|e| e > self.heap.size()) {
            return Err(invalid(
                func,
                format!(
                    "{addr:#x} (+{len} bytes) runs past the end of the GPU symmetric heap ({:#x} +{} bytes)",
                    self.heap.base(),
                    self.heap.size()
                ),
            ));
        }
        match self.peer_base.get(pe) {
            Some(&b) if b != 0 => Ok(b + off as u64),
            _ => Err(invalid(func, format!("PE {pe}'s GPU heap is not mapped here"))),
        }
    }

    /// A copy on unified addresses (either side host or GPU memory), complete (also for the
    /// GPU) when it returns. It waits for its own copy only: never for the context (a
    /// `cuCtxSynchronize` here would wait for a program stream that waits for this very copy,
    /// when it runs as a stream operation).
    ///
    /// # Safety
    /// Both ranges are valid for `len` bytes.
    unsafe fn copy(&self, func: &'static str, dst: DevAddr, src: DevAddr, len: usize) -> Result<()> {
        // SAFETY: the caller's; with unified addressing the copy reaches pageable host memory,
        // pinned memory, this GPU's heap and peer mappings alike.
        unsafe { self.gpu.copy_dtod(dst, src, len) }.map_err(|e| cuda_err(func, e))
    }
}

/// `(start, stride)` when `members` are `start, start + stride, …` (stride 1 for one member).
fn strided(members: &[usize]) -> Option<(usize, usize)> {
    let start = *members.first()?;
    let stride = if members.len() > 1 { members[1].checked_sub(start)? } else { 1 };
    members.iter().enumerate().all(|(i, &p)| p == start + i * stride).then_some((start, stride))
}

fn timeout_ns() -> u64 {
    let secs = oxshmem_rt::config::value_of("OXSHMEM_TIMEOUT").0.trim().parse::<u64>().unwrap_or(60);
    secs.clamp(1, u64::MAX / 2_000_000_000) * 1_000_000_000
}

/// A team the program made got NVSHMEM index `index` (called on every member, collectively):
/// describe it to the device, with a slot of flags and scratch in the reserved area that every
/// member agrees on — the lowest slot free on all of them (an AND-reduction of the free masks
/// over the new team, through the staging buffers). The slot's flags are zeroed and the team
/// synchronized before it is used, so a slot a destroyed team left behind starts clean. Without
/// a free slot (or for a team that is not a stride of world PEs) the team has no device
/// collectives, and a kernel's barrier or collective on it records an error.
pub(crate) fn team_made(func: &'static str, index: i32, team: &Team) -> Result<()> {
    let Some(b) = backend() else { return Ok(()) };
    if index as usize >= DEVICE_TEAMS {
        return Ok(());
    }
    if strided(&team.members()?).is_none() {
        b.set_team(index as usize, None);
        return Ok(());
    }
    let mine = b.slots.lock().0;
    let common = with_stage(|sbuf, dbuf, _| -> Result<u64> {
        // SAFETY: the staging buffers are symmetric host memory of at least 8 bytes, used by
        // one caller at a time (with_stage's lock).
        unsafe {
            sbuf.cast::<u64>().write(mine);
            oxshmem_rt::coll::api::raw::reduce(team, ReduceOp::And, dbuf.cast::<u64>(), sbuf.cast::<u64>(), 1)?;
            Ok(dbuf.cast::<u64>().read())
        }
    })
    .unwrap_or(Ok(0))?;
    if common == 0 {
        tracing::debug!(target: "cuda", index, "no team slot free on every member: no device collectives");
        return b.set_team_with(index as usize, Some((team, 0)));
    }
    let slot = common.trailing_zeros() as usize;
    let at = b.heap.base() + slot_offset(PREDEFINED + slot) as u64;
    // SAFETY: the slot's flags are this PE's own heap memory; no kernel uses the new team yet.
    unsafe { b.gpu.memset(at, 0, TEAM_FLAG_BYTES) }.map_err(|e| cuda_err(func, e))?;
    team.sync()?;
    {
        let mut s = b.slots.lock();
        s.0 &= !(1u64 << slot);
        s.1.push((index, slot));
    }
    b.set_team_with(index as usize, Some((team, at)))
}

/// Team index `index` was destroyed: its slot is free again here.
pub(crate) fn team_gone(index: i32) {
    if let Some(b) = backend()
        && (index as usize) < DEVICE_TEAMS
    {
        let mut s = b.slots.lock();
        if let Some(k) = s.1.iter().position(|&(i, _)| i == index) {
            let (_, slot) = s.1.swap_remove(k);
            s.0 |= 1u64 << slot;
        }
        drop(s);
        b.set_team(index as usize, None);
    }
}

/// `nvshmem_malloc` and friends on the GPU heap: `None` without the back end. Collective.
pub(crate) fn malloc(func: &'static str, size: usize, align: usize, zero: bool) -> Option<Result<*mut c_void>> {
    let b = backend()?;
    Some((|| {
        let shmem = oxshmem_rt::current()?;
        if size == 0 {
            shmem.barrier_all()?;
            return Ok(std::ptr::null_mut());
        }
        if align > MAX_ALIGN || !(b.heap.base() as usize).is_multiple_of(align) {
            return Err(invalid(
                func,
                format!("alignment {align}: the GPU symmetric heap aligns allocations to at most {MAX_ALIGN} bytes"),
            ));
        }
        let off = b.alloc.lock().alloc(size, align.max(MALLOC_ALIGN)).map_err(|e| alloc_error(func, size, e))?;
        let addr = b.heap.base() + (RESERVED + off) as u64;
        if zero {
            // SAFETY: the block was just allocated in this PE's own heap.
            unsafe { b.gpu.memset(addr, 0, size) }.map_err(|e| cuda_err(func, e))?;
        }
        shmem.barrier_all()?;
        Ok(addr as *mut c_void)
    })())
}

fn alloc_error(func: &'static str, size: usize, e: AllocError) -> Error {
    invalid(
        func,
        match e {
            AllocError::Exhausted { free, largest, .. } => format!(
                "cannot allocate {size} bytes in the GPU symmetric heap: {free} bytes free, the largest free block \
                 {largest}; raise NVSHMEM_SYMMETRIC_SIZE"
            ),
            AllocError::Overflow => format!("{size} bytes is too large"),
            AllocError::NotLive => "not an allocation".into(),
        },
    )
}

/// `nvshmem_free` on the GPU heap: `None` when `ptr` is not in it. Collective.
pub(crate) fn free(func: &'static str, ptr: *mut c_void) -> Option<Result<()>> {
    if !owns(ptr as usize) {
        return None;
    }
    let b = backend()?;
    Some((|| {
        let shmem = oxshmem_rt::current()?;
        shmem.barrier_all()?;
        let off = (ptr as usize - b.heap.base() as usize).checked_sub(RESERVED);
        off.and_then(|o| b.alloc.lock().free(o).ok())
            .ok_or_else(|| invalid(func, format!("{ptr:p} is not an allocation of the GPU symmetric heap")))
    })())
}

/// `nvshmem_ptr` for an address in the GPU heap: `None` when it is not in it.
pub(crate) fn ptr(addr: usize, pe: i32) -> Option<*mut c_void> {
    if !owns(addr) {
        return None;
    }
    let b = backend()?;
    let base = *b.peer_base.get(usize::try_from(pe).ok()?)?;
    Some(if base == 0 {
        std::ptr::null_mut()
    } else {
        (base as usize + (addr - b.heap.base() as usize)) as *mut c_void
    })
}

/// Tears the back end down before the runtime finalizes: every PE stops using the peers'
/// heaps, then unmaps them and frees its own (collective).
pub(crate) fn finalize() -> Result<()> {
    let Some(b) = backend() else { return Ok(()) };
    // First the GPU's work, with everything still up: kernels still running may use the proxy
    // or the NIC, and stream operations still queued run on the lanes through the back end.
    let r = b.gpu.synchronize().map_err(|e| cuda_err("nvshmem_finalize", e));
    // Then the proxy and the NIC: they finish what was issued.
    if let Some(mut p) = PROXY.lock().take() {
        p.stop();
    }
    if let Some(mut nic) = NIC.lock().take() {
        nic.stop();
    }
    // The staging buffers are freed collectively, outside their lock.
    let stage = STAGE.lock().take();
    if let Some(s) = stage {
        s.src.free()?;
        s.dst.free()?;
    }
    HEAP_LO.store(0, Ordering::Relaxed);
    HEAP_HI.store(0, Ordering::Relaxed);
    BACKEND.lock().take();
    // Every PE has stopped using its peers' heaps before any of them unmaps its own.
    oxshmem_rt::raw::barrier_all()?;
    drop(b);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_teams() {
        assert_eq!(strided(&[0, 1, 2, 3]), Some((0, 1)));
        assert_eq!(strided(&[1, 3, 5]), Some((1, 2)));
        assert_eq!(strided(&[4]), Some((4, 1)));
        assert_eq!(strided(&[0, 1, 3]), None);
        assert_eq!(strided(&[]), None);
    }

    #[test]
    fn the_reserved_area_holds_every_predefined_team() {
        let end_of_last = slot_offset(PREDEFINED + USER_SLOTS);
        assert_eq!(slot_offset(0), TEAM_FLAG_BYTES);
        assert!(RESERVED >= end_of_last && RESERVED.is_multiple_of(MAX_ALIGN));
        let l = PinnedLayout::new(5);
        assert!(l.peer_base >= size_of::<DeviceState>() && l.channel == l.peer_base + 40);
        assert!(l.cuda_state >= l.channel + 5 && l.cuda_state.is_multiple_of(64));
        assert_eq!(l.total, l.teams + DEVICE_TEAMS * 32);
    }
}
