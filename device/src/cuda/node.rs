//! One PE's GPU side ([`GpuPe`]): its GPU symmetric heap, the mappings of the heaps of the
//! other PEs of its node, and the state the device library's kernels read, in pinned memory.
//! Both faces build on it: the C library's CUDA back end (`nvshmem_init` in a program that
//! links `libnvshmem_device.a`) and the Rust one ([`GpuDevice`](crate::cuda::GpuDevice)).
//!
//! Set-up ([`GpuPe::new`], collective over the job), on every PE:
//!
//! 1. opens its GPU (`OXSHMEM_CUDA_DEVICE`, else its rank on the node modulo the GPUs there,
//!    so several PEs share a GPU when a node has more PEs than GPUs);
//! 2. creates its GPU heap (CUDA VMM, [`GpuHeap`]) of the host heap's size plus
//!    [`RESERVED`] bytes of the layer's own, and exports it as a file descriptor;
//! 3. passes the descriptor to every other PE of its node (an abstract Unix socket named after
//!    its pid and a nonce, served to the same user only; `pidfd_getfd` or `SCM_RIGHTS`) and
//!    maps theirs, so that a peer's GPU heap is a load or store away, from kernels and for host
//!    copies alike;
//! 4. places the device state (`oxshmem_device_state_t`: PE, heap, per-peer bases and
//!    channels, the device barrier's flags, the error slot) and the CUDA-side team table
//!    (`oxshmem_cuda_state_t`, `bindings/cuda/src/state.cuh`) in pinned host memory the GPU
//!    reads; the face then hands their device addresses to the device library.
//!
//! Over P2P, atomics (AMOs and signal adds) go straight to a peer's mapped heap only where its
//! GPU and this one have native P2P atomics (`CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`;
//! always on one GPU). To the other peers (PCIe-only pairs) they take the proxy, as NVSHMEM's do:
//! the per-PE `amo_base` table (the CUDA-side state's) is the peer's base where atomics may go
//! P2P and 0 where they may not, and with such a peer the proxy ring is made beside P2P.
//! Stores and loads (signal sets included) stay P2P.
//!
//! The first [`RESERVED`] bytes of the GPU heap are the layer's: the world barrier's flags,
//! then a barrier-flags area and [`TEAM_SCRATCH`] bytes of collective scratch for each
//! predefined team (world, shared, node, same-PE-on-node) and for [`USER_SLOTS`] teams the
//! program splits off. The rest is carved by the runtime's deterministic allocator, so the
//! same collective calls give the same offset on every PE.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use oxshmem::Team;
use oxshmem::heap::alloc::{AllocError, Allocator};
use parking_lot::Mutex;

use super::exchange::{Card, exchange, nonce};
use super::{CudaError, DevAddr, Gpu, GpuHeap, PeerMapping, PinnedAlloc, PinnedBuf};
use crate::ChannelKind;
use crate::channel::devmem::DeviceAlloc;
use crate::channel::proxy::ProxyRingBox;
use crate::ibgda::{Ibgda, IbgdaConfig, IbgdaHeap, NicMemory};
use crate::state::{BARRIER_ROUNDS, DeviceState, ErrorSlot};

/// Bytes of one barrier round's flag line (`FLAG_STRIDE` in `bindings/cuda/src/state.cuh`).
const FLAG_STRIDE: usize = 64;
/// Bytes of barrier flags at the start of a team's scratch (`TEAM_FLAG_BYTES` there).
pub const TEAM_FLAG_BYTES: usize = BARRIER_ROUNDS * FLAG_STRIDE;
/// Offset in the GPU heap of this PE's world barrier epoch (`WORLD_EPOCH_OFFSET` in
/// `bindings/cuda/src/state.cuh`): the flag line of the world barrier's last round, which only
/// a job of more than 2^31 PEs would signal. GPU memory, which the GPU's threads fetch-add (the
/// device state's `barrier_epoch`, in pinned host memory, serves the CPU back end only); zeroed
/// with the reserved area at set-up.
pub const WORLD_EPOCH_OFFSET: usize = (BARRIER_ROUNDS - 1) * FLAG_STRIDE;
/// Offset in the GPU heap of the proxy ring's ticket counter (`RING_ISSUE_OFFSET` in
/// `bindings/cuda/src/state.cuh`, `OXSHMEMI_RING_ISSUE_OFFSET` in the public fast-path header):
/// the flag line of the world barrier's round 30. GPU memory, which the GPU's threads
/// fetch-add; the ring header's own `issue` (pinned) stays 0 on the GPU.
pub const RING_ISSUE_OFFSET: usize = (BARRIER_ROUNDS - 2) * FLAG_STRIDE;
/// Bytes of collective scratch after each team slot's flags (`scratch_bytes`).
pub const TEAM_SCRATCH: usize = 64 << 10;
/// Predefined teams with scratch: world, shared, node, same-PE-on-node (NVSHMEM's 0..4).
pub const PREDEFINED: usize = 4;
/// Team slots (flags and scratch) for teams the program splits off: as many such teams as this
/// can have device barriers and collectives at once.
pub const USER_SLOTS: usize = 16;
/// The largest alignment the GPU heap gives: its base is aligned to the VMM granularity
/// (2 MiB on current GPUs), and the allocator's range starts [`RESERVED`] (a multiple of
/// this) after it.
pub const MAX_ALIGN: usize = 2 << 20;
/// The layer's area at the start of the GPU heap: the world barrier's flags, then every team
/// slot's flags and scratch; rounded to [`MAX_ALIGN`].
pub const RESERVED: usize =
    (TEAM_FLAG_BYTES + (PREDEFINED + USER_SLOTS) * (TEAM_FLAG_BYTES + TEAM_SCRATCH)).next_multiple_of(MAX_ALIGN);
/// Entries of the device team table (NVSHMEM team handles `0..DEVICE_TEAMS`).
pub const DEVICE_TEAMS: usize = 4096;
/// The smallest alignment of a GPU heap allocation (as `cudaMalloc`'s).
pub const MALLOC_ALIGN: usize = 256;
/// The device library's ABI (`oxshmemi::ABI_VERSION` in `bindings/cuda/src/state.cuh`): the
/// layout of what this module writes for it.
pub const DEVICE_ABI_VERSION: u32 = 5;

/// Offset in the GPU heap of team slot `i` (`0..PREDEFINED`: the predefined teams; then the
/// program's teams).
pub const fn slot_offset(i: usize) -> usize {
    TEAM_FLAG_BYTES + i * (TEAM_FLAG_BYTES + TEAM_SCRATCH)
}

/// Why setting up or using the GPU side failed; each face words it as its own error.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The CUDA driver refused a call.
    #[error("{0}")]
    Cuda(#[from] CudaError),
    /// The request cannot be met (a bad setting, a job this layer cannot serve, bad input).
    #[error("{0}")]
    Invalid(String),
    /// The runtime failed (a collective, an allocation of host memory).
    #[error(transparent)]
    Runtime(#[from] oxshmem::Error),
}

type Result<T> = std::result::Result<T, SetupError>;

/// How the software NIC reaches GPU heaps, made for this PE's GPU (see [`GpuPe::new`]).
pub type NicMemoryFor = dyn Fn(&Gpu) -> Arc<dyn NicMemory>;

/// One team of the device-side team table: `oxshmem_cuda_team_t` of
/// `bindings/cuda/src/state.cuh` (whose `static_assert`s pin the same size and offsets).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
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

impl CudaTeam {
    /// An unused entry: device code naming it fails.
    const UNUSED: CudaTeam = CudaTeam { start: -1, stride: 0, size: 0, my_pe: -1, scratch: 0, epoch: 0 };
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
    /// Device address of the per-PE atomics table (`n_pes + 1` entries): where a peer's heap
    /// is mapped for atomics (P2P with native P2P atomics), 0 where atomics take the proxy.
    amo_base: u64,
}

const _: () = assert!(size_of::<CudaTeam>() == 32 && std::mem::offset_of!(CudaTeam, scratch) == 16);
const _: () = assert!(std::mem::offset_of!(CudaTeam, epoch) == 24);
const _: () = assert!(size_of::<CudaState>() == 32 && std::mem::offset_of!(CudaState, teams) == 8);
const _: () =
    assert!(std::mem::offset_of!(CudaState, scratch_bytes) == 16 && std::mem::offset_of!(CudaState, amo_base) == 24);

/// Where each part lives in the pinned block.
#[derive(Debug, Clone, Copy)]
struct PinnedLayout {
    cuda_state: usize,
    total: usize,
}

impl PinnedLayout {
    fn new() -> PinnedLayout {
        let cuda_state = size_of::<DeviceState>().next_multiple_of(64);
        let total = cuda_state + size_of::<CudaState>();
        PinnedLayout { cuda_state, total }
    }
}

/// The offsets in the GPU-memory block of the tables device code reads on every operation
/// (the peers' bases for loads and stores and for atomics, the channels) and the team table
/// (whose barrier epochs device code read-modify-writes): in GPU memory, where the GPU caches
/// them, as NVSHMEM keeps its `peer_heap_base_p2p` and team structures (issue 31, item 4); in
/// pinned host memory every `nvshmem_p` read its peer's base across PCIe.
#[derive(Debug, Clone, Copy)]
struct TableLayout {
    peer_base: usize,
    amo_base: usize,
    channel: usize,
    teams: usize,
    total: usize,
}

impl TableLayout {
    fn new(n: usize) -> TableLayout {
        // n + 1 entries: the last, always 0, is where the inline fast paths look for a PE out
        // of range (min(pe, n_pes)), so that one branch serves both checks.
        let peer_base = 0;
        let amo_base = peer_base + 8 * (n + 1);
        let channel = amo_base + 8 * (n + 1);
        let teams = (channel + n).next_multiple_of(64);
        let total = teams + DEVICE_TEAMS * size_of::<CudaTeam>();
        TableLayout { peer_base, amo_base, channel, teams, total }
    }
}

/// One PE's GPU side: see the [module documentation](self).
pub struct GpuPe {
    /// This PE.
    pub me: usize,
    /// Its GPU.
    pub gpu: Gpu,
    /// The IBGDA queues and key tables, in pinned memory, or in GPU memory with
    /// `OXSHMEM_IBGDA_QUEUE_MEM=gpu` (with the IBGDA channel). Dropped before the heap: its NIC
    /// holds a registration of the heap, released with it.
    ibgda: Option<Box<Ibgda>>,
    heap: GpuHeap,
    /// Per PE: where its GPU heap is mapped here (this PE's own heap for itself; 0: not mapped).
    peer_base: Vec<u64>,
    /// Per PE: whether this GPU has native P2P atomics on its GPU's memory (this PE: yes).
    native_atomics: Vec<bool>,
    /// Per PE: the device (ordinal in this process) that host atomics on its heap run on: its
    /// own GPU where that GPU is visible here and was granted access to the mapping, else this
    /// PE's.
    amo_device: Vec<i32>,
    _maps: Vec<PeerMapping>,
    alloc: Mutex<Allocator>,
    pinned: PinnedBuf,
    layout: PinnedLayout,
    /// The tables device code reads on every operation, and the team table, in GPU memory
    /// ([`TableLayout`]).
    tables: GpuHeap,
    tables_at: TableLayout,
    /// The channel of every peer.
    kind: ChannelKind,
    /// The proxy's request ring, in pinned memory: with the proxy channel, and over P2P where a
    /// peer's atomics take the proxy (no native P2P atomics with its GPU).
    ring: Option<ProxyRingBox>,
    /// The program's teams' slots: bit `i` set while user slot `i` is free here, and which
    /// team index holds which slot.
    slots: Mutex<(u64, Vec<(i32, usize)>)>,
}

impl std::fmt::Debug for GpuPe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuPe").field("me", &self.me).field("heap", &self.heap).finish_non_exhaustive()
    }
}

impl GpuPe {
    /// Sets this PE's GPU side up (collective over the job): see the
    /// [module documentation](self). `kind` is every peer's channel; with IBGDA, `nic_memory`
    /// is how the software NIC reaches the GPU heaps (it needs an atomic on GPU memory, which
    /// only the face that has a kernel for it can give). `predefined` are the teams of slots
    /// `0..PREDEFINED` (world, shared, node, same-PE-on-node; `None`: no such team).
    pub fn new(
        shmem: &oxshmem::Shmem,
        kind: ChannelKind,
        nic_memory: Option<&NicMemoryFor>,
        predefined: &[Option<Team>],
    ) -> Result<GpuPe> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let node = shmem.team_shared().members()?;
        if node.len() != n {
            return Err(SetupError::Invalid(format!(
                "the job spans several nodes ({} of its {n} PEs on this one): the CUDA back end reaches GPU heaps \
                 on this node only so far",
                node.len()
            )));
        }
        let local_rank = node.iter().position(|&p| p == me).unwrap_or(0);
        let gpu = Gpu::select(local_rank)?;
        let want = oxshmem::raw::heap_size()? + RESERVED;
        let (heap, fd) = GpuHeap::create(&gpu, want)?;
        let size = heap.size();

        // Every PE's pid, heap size, socket nonce and GPU ordinal, through the host heap.
        const CARD: usize = 4;
        let mine = shmem.alloc_slice(CARD, 0u64)?;
        let all = shmem.alloc_slice(CARD * n, 0u64)?;
        mine.write(0, u64::from(std::process::id()));
        mine.write(1, size as u64);
        mine.write(2, nonce());
        mine.write(3, gpu.ordinal() as u64);
        shmem.team_world().fcollect(&all, &mine, CARD)?;
        let cards: Vec<Card> = (0..n)
            .map(|pe| Card {
                pid: all.read(CARD * pe) as u32,
                size: all.read(CARD * pe + 1) as usize,
                nonce: all.read(CARD * pe + 2),
            })
            .collect();
        // Whether this GPU has native atomics on each PE's GPU over P2P (the ordinals are the
        // node's: every PE of a node sees its GPUs alike, as OXSHMEM_CUDA_DEVICE assumes).
        let ordinals: Vec<i32> = (0..n).map(|pe| all.read(CARD * pe + 3) as i32).collect();
        let native_atomics: Vec<bool> =
            (0..n).map(|pe| pe == me || super::p2p_native_atomics(gpu.dev(), ordinals[pe])).collect();
        mine.free()?;
        all.free()?;
        if let Some(pe) = (0..n).find(|&pe| cards[pe].size != size) {
            return Err(SetupError::Invalid(format!(
                "PE {pe}'s GPU heap is {} bytes and this PE's {size}: every PE needs the same \
                 NVSHMEM_SYMMETRIC_SIZE",
                cards[pe].size
            )));
        }

        let maps = exchange(shmem, me, &node, &cards, &gpu, &fd)?;
        drop(fd);
        let mut peer_base = vec![0u64; n];
        let mut amo_device = vec![gpu.ordinal(); n];
        let mut kept = Vec::with_capacity(maps.len());
        for (pe, m) in maps {
            peer_base[pe] = m.base();
            // Host atomics on a peer's heap run on the peer's GPU (its own memory: atomic with
            // its kernels' atomics whatever the link between the GPUs), where that GPU is
            // visible here; else on this PE's, over the mapping.
            let owner = ordinals[pe];
            if owner != gpu.ordinal() {
                match m.grant(owner) {
                    Ok(()) => amo_device[pe] = owner,
                    Err(e) => tracing::debug!(target: "cuda", pe, owner, %e, "host atomics on the PE's heap run here"),
                }
            }
            kept.push(m);
        }
        peer_base[me] = heap.base();

        // The heap starts zeroed for the layer's area (flags and epochs count from 0).
        // SAFETY: the first RESERVED bytes are this PE's own heap memory, nothing uses them yet.
        unsafe { gpu.memset(heap.base(), 0, RESERVED) }?;

        let layout = PinnedLayout::new();
        let pinned = PinnedBuf::new(&gpu, layout.total)?;
        let tables_at = TableLayout::new(n);
        let (tables, _) = GpuHeap::create(&gpu, tables_at.total)?;
        let pinned_alloc: Arc<dyn DeviceAlloc> = Arc::new(PinnedAlloc::new(&gpu));
        // Over P2P, a mapped peer without native P2P atomics takes its atomics to the proxy.
        let amo_proxy = matches!(kind, ChannelKind::P2p) && (0..n).any(|pe| peer_base[pe] != 0 && !native_atomics[pe]);
        let ring = match kind {
            ChannelKind::Proxy => {
                Some(ProxyRingBox::new_in(crate::PROXY_RING_SLOTS, &pinned_alloc).map_err(SetupError::Invalid)?)
            }
            ChannelKind::P2p if amo_proxy => {
                Some(ProxyRingBox::new_in(crate::PROXY_RING_SLOTS, &pinned_alloc).map_err(SetupError::Invalid)?)
            }
            _ => None,
        };
        let ibgda = match kind {
            ChannelKind::Ibgda => {
                let Some(memory) = nic_memory else {
                    return Err(SetupError::Invalid(
                        "the IBGDA channel on the GPU heap needs an atomic on GPU memory for the software NIC, \
                         which this face does not give"
                            .into(),
                    ));
                };
                let config = IbgdaConfig::from_env().map_err(SetupError::Invalid)?;
                let on = IbgdaHeap {
                    base: heap.base(),
                    size: heap.size() as u64,
                    mapped: peer_base.clone(),
                    memory: memory(&gpu),
                    queue_alloc: Some(Arc::new(super::GpuAlloc::new(&gpu))),
                };
                Some(Box::new(Ibgda::new_on(shmem, config, &pinned_alloc, Some(on))?))
            }
            _ => None,
        };
        let pe = GpuPe {
            me,
            gpu,
            heap,
            peer_base,
            native_atomics,
            amo_device,
            _maps: kept,
            alloc: Mutex::new(Allocator::new(size - RESERVED)),
            pinned,
            layout,
            tables,
            tables_at,
            kind,
            ring,
            ibgda,
            slots: Mutex::new(((1u64 << USER_SLOTS) - 1, Vec::new())),
        };
        pe.write_state(n)?;
        for (index, t) in predefined.iter().enumerate().take(PREDEFINED) {
            if let Some(t) = t {
                let scratch = pe.heap.base() + slot_offset(index) as u64;
                pe.set_team(index, Some((t, scratch)))?;
            }
        }
        shmem.barrier_all()?;
        Ok(pe)
    }

    fn pinned_at<T>(&self, off: usize) -> *mut T {
        // SAFETY: every offset of the layout is inside the pinned block.
        unsafe { self.pinned.host_ptr().add(off).cast() }
    }

    fn dev_at(&self, off: usize) -> u64 {
        self.pinned.device_ptr() + off as u64
    }

    /// The device address of offset `off` of the GPU-memory tables.
    fn table_at(&self, off: usize) -> u64 {
        self.tables.base() + off as u64
    }

    /// Copies `bytes` into the GPU-memory tables at offset `off` (complete when it returns).
    fn write_table(&self, off: usize, bytes: &[u8]) -> Result<()> {
        debug_assert!(off + bytes.len() <= self.tables_at.total);
        // SAFETY: the destination is inside the tables' allocation; the source is `bytes`.
        unsafe { self.gpu.copy_dtod(self.table_at(off), bytes.as_ptr() as DevAddr, bytes.len()) }?;
        Ok(())
    }

    /// Where the tables device code reads live: for each (the device state, the peers' bases,
    /// the atomics' bases, the channels, the team table; with the IBGDA channel its queues'
    /// descriptors, its table and the queues), whether it is GPU memory.
    ///
    /// # Errors
    /// The driver's, looking an address up.
    pub fn placement(&self) -> Result<Vec<(&'static str, bool)>> {
        let at = |a: u64| self.gpu.pointer_is_device(a as *const std::ffi::c_void);
        let mut v = vec![
            ("device state", at(self.state_device_ptr())?),
            ("peer bases", at(self.table_at(self.tables_at.peer_base))?),
            ("atomics bases", at(self.table_at(self.tables_at.amo_base))?),
            ("channels", at(self.table_at(self.tables_at.channel))?),
            ("team table", at(self.table_at(self.tables_at.teams))?),
        ];
        if let Some(ib) = self.ibgda.as_deref() {
            // The descriptors (what the GPU's producers read-modify-write) and the queues
            // (what the NIC reads; GPU memory only with OXSHMEM_IBGDA_QUEUE_MEM=gpu).
            v.push(("IBGDA queue descriptors", at(ib.descriptors())?));
            v.push(("IBGDA channel table", at(ib.device_table() as u64)?));
            v.push(("IBGDA queues", at(ib.memory().as_ptr() as u64)?));
        }
        Ok(v)
    }

    /// Writes the device state, the per-peer bases (for loads and stores, and for atomics) and
    /// channels, and an empty team table.
    fn write_state(&self, n: usize) -> Result<()> {
        // A PE's base is 0 unless it is reached over P2P (as NVSHMEM's peer_heap_base_p2p): the
        // inline fast paths take a non-zero base for "P2P" without reading the channel. Entry
        // n of both tables is 0.
        let words = |f: &dyn Fn(usize) -> u64| -> Vec<u8> {
            (0..=n).flat_map(|pe| if pe < n { f(pe) } else { 0 }.to_ne_bytes()).collect()
        };
        self.write_table(self.tables_at.peer_base, &words(&|pe| self.p2p_base(pe)))?;
        self.write_table(self.tables_at.amo_base, &words(&|pe| self.amo_base(pe)))?;
        self.write_table(self.tables_at.channel, &vec![self.kind as u8; n])?;
        let state = DeviceState {
            my_pe: self.me as u32,
            n_pes: n as u32,
            heap_base: self.heap.base(),
            heap_size: self.heap.size() as u64,
            peer_base: self.table_at(self.tables_at.peer_base) as *const u64,
            channel: self.table_at(self.tables_at.channel) as *const u8,
            ring: self.ring.as_ref().map_or(std::ptr::null_mut(), |r| r.as_ptr()),
            ibgda: self.ibgda.as_deref().map_or(std::ptr::null_mut(), Ibgda::device_table),
            barrier_flags: self.heap.base(),
            barrier_epoch: AtomicU64::new(0),
            timeout_ns: crate::env_timeout(),
            proxy_alive: Default::default(),
            proxy_sleeping: Default::default(),
            error: ErrorSlot::default(),
            host_error: ErrorSlot::default(),
        };
        // SAFETY: the block starts with room for a DeviceState, 64-byte aligned (pinned
        // allocations are page-aligned); nothing reads it yet.
        unsafe { self.pinned_at::<DeviceState>(0).write(state) };
        let cs = CudaState {
            abi_version: DEVICE_ABI_VERSION,
            n_teams: DEVICE_TEAMS as u32,
            teams: self.table_at(self.tables_at.teams),
            scratch_bytes: TEAM_SCRATCH as u64,
            amo_base: self.table_at(self.tables_at.amo_base),
        };
        // SAFETY: as above.
        unsafe { self.pinned_at::<CudaState>(self.layout.cuda_state).write(cs) };
        // Every team entry unused, in one copy.
        self.write_table(self.tables_at.teams, &bytemuck::bytes_of(&CudaTeam::UNUSED).repeat(DEVICE_TEAMS))
    }

    /// Writes entry `index` of the device team table: `team` with the symmetric address of
    /// its flags and scratch (0: none). A team that is not a stride of world PEs cannot be
    /// described to the device: its entry stays unused, and device code naming it fails.
    /// Teams are made and destroyed between kernels (a kernel reading the entry while it is
    /// rewritten would race, as it would with a team made under it in NVSHMEM).
    pub fn set_team(&self, index: usize, team: Option<(&Team, u64)>) -> Result<()> {
        if index >= DEVICE_TEAMS {
            return Ok(());
        }
        let entry = match team {
            None => CudaTeam::UNUSED,
            Some((t, scratch)) => {
                let members = t.members()?;
                let Some((start, stride)) = strided(&members) else {
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
        self.write_table(self.tables_at.teams + index * size_of::<CudaTeam>(), bytemuck::bytes_of(&entry))
    }

    /// Marks entry `index` of the device team table unused.
    pub fn clear_team(&self, index: usize) {
        let _ = self.set_team(index, None);
    }

    /// The program's team slots free here (bit `i`: user slot `i`).
    pub fn free_slots(&self) -> u64 {
        self.slots.lock().0
    }

    /// Gives user slot `slot` (free on every member: the caller agreed on it) to the team of
    /// index `index`, with its barrier flags zeroed; returns the slot's symmetric address for
    /// [`set_team`](Self::set_team). The caller synchronizes the team before its first use.
    pub fn take_slot(&self, index: i32, slot: usize) -> Result<u64> {
        if slot >= USER_SLOTS {
            return Err(SetupError::Invalid(format!("team slot {slot}: there are {USER_SLOTS}")));
        }
        let at = self.heap.base() + slot_offset(PREDEFINED + slot) as u64;
        // SAFETY: the slot's flags are this PE's own heap memory; no kernel uses the new team yet.
        unsafe { self.gpu.memset(at, 0, TEAM_FLAG_BYTES) }?;
        let mut s = self.slots.lock();
        s.0 &= !(1u64 << slot);
        s.1.push((index, slot));
        Ok(at)
    }

    /// The team of index `index` is gone: its slot (if it had one) is free again here, and
    /// its entry unused.
    pub fn release_team(&self, index: i32) {
        let mut s = self.slots.lock();
        if let Some(k) = s.1.iter().position(|&(i, _)| i == index) {
            let (_, slot) = s.1.swap_remove(k);
            s.0 |= 1u64 << slot;
        }
        drop(s);
        if let Ok(i) = usize::try_from(index) {
            self.clear_team(i);
        }
    }

    /// This PE's GPU heap.
    pub fn heap(&self) -> &GpuHeap {
        &self.heap
    }

    /// The number of PEs.
    pub fn n_pes(&self) -> usize {
        self.peer_base.len()
    }

    /// Where `pe`'s GPU heap is mapped here (0: not mapped).
    pub fn peer_base(&self, pe: usize) -> u64 {
        self.peer_base.get(pe).copied().unwrap_or(0)
    }

    /// Where device code reaches `pe`'s GPU heap with loads and stores: its mapping when the
    /// channel is P2P, else 0 (the device state's `peer_base` entry).
    fn p2p_base(&self, pe: usize) -> u64 {
        if matches!(self.kind, ChannelKind::P2p) { self.peer_base(pe) } else { 0 }
    }

    /// Where device code does atomics on `pe`'s GPU heap: its mapping when the channel is P2P
    /// and this GPU has native P2P atomics on `pe`'s, else 0 (atomics take the proxy).
    pub fn amo_base(&self, pe: usize) -> u64 {
        if self.native_atomics.get(pe).copied().unwrap_or(false) { self.p2p_base(pe) } else { 0 }
    }

    /// The device (ordinal) host atomics on `pe`'s heap run on: `pe`'s GPU where it is visible
    /// here, else this PE's.
    pub fn amo_device(&self, pe: usize) -> i32 {
        self.amo_device.get(pe).copied().unwrap_or_else(|| self.gpu.ordinal())
    }

    /// [`amo_device`](Self::amo_device) of the PE whose heap, as mapped here, holds `addr`
    /// (this PE's device for any other address).
    pub fn amo_device_at(&self, addr: u64) -> i32 {
        let size = self.heap.size() as u64;
        (0..self.peer_base.len())
            .find(|&pe| self.peer_base[pe] != 0 && addr.wrapping_sub(self.peer_base[pe]) < size)
            .map_or_else(|| self.gpu.ordinal(), |pe| self.amo_device(pe))
    }

    /// The PEs reached over P2P whose atomics take the proxy (no native P2P atomics between
    /// their GPU and this one).
    pub fn amo_proxied(&self) -> Vec<usize> {
        (0..self.peer_base.len()).filter(|&pe| self.p2p_base(pe) != 0 && self.amo_base(pe) == 0).collect()
    }

    /// The device address of the atomics table ([`amo_base`](Self::amo_base) per PE, then 0),
    /// which the inline fast paths read in place of `peer_base` for atomics.
    pub fn amo_base_device_ptr(&self) -> DevAddr {
        self.table_at(self.tables_at.amo_base)
    }

    /// How long a device-side wait may last, in nanoseconds (`OXSHMEM_TIMEOUT`).
    pub fn timeout_ns(&self) -> u64 {
        self.state().timeout_ns
    }

    /// The channel every peer is reached through.
    pub fn kind(&self) -> ChannelKind {
        self.kind
    }

    /// The device state, in pinned memory (host address; the GPU reads it at
    /// [`state_device_ptr`](Self::state_device_ptr)).
    pub fn state(&self) -> &DeviceState {
        // SAFETY: written at set-up; its atomics are what device code and the host share.
        unsafe { &*self.pinned_at::<DeviceState>(0) }
    }

    /// The device address of the device state (`oxshmemi_state_d` of the device library).
    pub fn state_device_ptr(&self) -> DevAddr {
        self.pinned.device_ptr()
    }

    /// The device address of the CUDA-side state (`oxshmemi_cuda_d` of the device library).
    pub fn cuda_state_device_ptr(&self) -> DevAddr {
        self.dev_at(self.layout.cuda_state)
    }

    /// The proxy's request ring (with the proxy channel).
    pub fn ring(&self) -> Option<&ProxyRingBox> {
        self.ring.as_ref()
    }

    /// How many requests device code has submitted to the proxy ring: its ticket counter,
    /// read out of GPU memory with a copy ([`RING_ISSUE_OFFSET`]).
    ///
    /// # Errors
    /// The driver's.
    pub fn ring_issued(&self) -> Result<u64> {
        let mut v = 0u64;
        // SAFETY: the word is this PE's own heap memory; `v` is 8 writable bytes.
        unsafe { self.gpu.copy_dtod((&raw mut v) as DevAddr, self.heap.base() + RING_ISSUE_OFFSET as u64, 8) }?;
        Ok(v)
    }

    /// The IBGDA queues (with the IBGDA channel).
    pub fn ibgda(&self) -> Option<&Ibgda> {
        self.ibgda.as_deref()
    }

    /// `nvshmemx_buffer_register` on the GPU side: with the IBGDA channel, registers the `len`
    /// bytes at `addr` (GPU memory when `gpu`, else host memory the GPU reaches) with the NIC
    /// and enters them in the table device code finds a local buffer's key in
    /// ([`Ibgda::register_local`]); with P2P and the proxy nothing is needed (loads and stores,
    /// and a host thread, reach such memory). Whether it registered with a NIC.
    ///
    /// # Errors
    /// The NIC refused, or its table is full.
    pub fn register_local(&self, addr: u64, len: u64, gpu: bool) -> Result<bool> {
        match &self.ibgda {
            Some(ib) => ib.register_local(addr, len, gpu).map(|_| true).map_err(SetupError::Invalid),
            None => Ok(false),
        }
    }

    /// `nvshmemx_buffer_unregister` on the GPU side: undoes [`register_local`](Self::register_local)
    /// for the buffer registered at `addr` (nothing without the IBGDA channel).
    ///
    /// # Errors
    /// Nothing is registered at `addr` with the NIC.
    pub fn unregister_local(&self, addr: u64) -> Result<()> {
        match &self.ibgda {
            Some(ib) => ib.unregister_local(addr).map_err(SetupError::Invalid),
            None => Ok(()),
        }
    }

    /// The first error a kernel recorded in the device state (device code cannot return one),
    /// in words: `device nvshmem_put (block 0, thread 0): <why>`. The error stays recorded.
    pub fn recorded_error(&self) -> Option<String> {
        let state = self.state();
        let s = state.first_error()?;
        let where_ =
            if s.block == u32::MAX { "host".to_string() } else { format!("block {}, thread {}", s.block, s.thread) };
        Some(format!(
            "device {} ({where_}): {}",
            crate::state::op_name(s.op),
            crate::error_reason(state, &s, String::new)
        ))
    }

    /// Allocates `size` bytes of the GPU heap aligned to `align` (at least [`MALLOC_ALIGN`],
    /// at most [`MAX_ALIGN`]), zeroed when `zero`. Not collective by itself: every PE makes
    /// the same calls in the same order, so the offsets agree.
    pub fn alloc(&self, size: usize, align: usize, zero: bool) -> Result<DevAddr> {
        if !align.is_power_of_two() || align > MAX_ALIGN || !(self.heap.base() as usize).is_multiple_of(align) {
            return Err(SetupError::Invalid(format!(
                "alignment {align}: the GPU symmetric heap aligns allocations to a power of two of at most \
                 {MAX_ALIGN} bytes"
            )));
        }
        let off = self.alloc.lock().alloc(size, align.max(MALLOC_ALIGN)).map_err(|e| alloc_error(size, e))?;
        let addr = self.heap.base() + (RESERVED + off) as u64;
        if zero {
            // SAFETY: the block was just allocated in this PE's own heap.
            unsafe { self.gpu.memset(addr, 0, size) }?;
        }
        Ok(addr)
    }

    /// Frees the allocation at `addr` (what [`alloc`](Self::alloc) returned).
    pub fn free(&self, addr: DevAddr) -> Result<()> {
        let off = (addr.wrapping_sub(self.heap.base()) as usize).checked_sub(RESERVED);
        off.filter(|_| self.owns(addr as usize))
            .and_then(|o| self.alloc.lock().free(o).ok())
            .ok_or_else(|| SetupError::Invalid(format!("{addr:#x} is not an allocation of the GPU symmetric heap")))
    }

    /// Whether `addr` lies in this PE's GPU heap.
    pub fn owns(&self, addr: usize) -> bool {
        let base = self.heap.base() as usize;
        addr >= base && addr < base + self.heap.size()
    }

    /// The device address of `pe`'s copy of the `len` bytes at `addr` (in this PE's GPU heap).
    pub fn remote(&self, addr: usize, len: usize, pe: usize) -> Result<DevAddr> {
        let off = addr.wrapping_sub(self.heap.base() as usize);
        if !self.owns(addr) || off.checked_add(len).is_none_or(|e| e > self.heap.size()) {
            return Err(SetupError::Invalid(format!(
                "{addr:#x} (+{len} bytes) is not inside the GPU symmetric heap ({:#x} +{} bytes)",
                self.heap.base(),
                self.heap.size()
            )));
        }
        match self.peer_base.get(pe) {
            Some(&b) if b != 0 => Ok(b + off as u64),
            Some(_) => Err(SetupError::Invalid(format!("PE {pe}'s GPU heap is not mapped here"))),
            None => Err(SetupError::Invalid(format!("PE {pe} is out of range (0..{})", self.peer_base.len()))),
        }
    }
}

fn alloc_error(size: usize, e: AllocError) -> SetupError {
    SetupError::Invalid(match e {
        AllocError::Exhausted { free, largest, .. } => format!(
            "cannot allocate {size} bytes in the GPU symmetric heap: {free} bytes free, the largest free block \
             {largest}; raise NVSHMEM_SYMMETRIC_SIZE"
        ),
        AllocError::Overflow => format!("{size} bytes is too large"),
        AllocError::NotLive => "not an allocation".into(),
    })
}

/// `(start, stride)` when `members` are `start, start + stride, …` (stride 1 for one member).
pub fn strided(members: &[usize]) -> Option<(usize, usize)> {
    let start = *members.first()?;
    let stride = if members.len() > 1 { members[1].checked_sub(start)? } else { 1 };
    members.iter().enumerate().all(|(i, &p)| p == start + i * stride).then_some((start, stride))
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
    fn the_reserved_area_holds_every_team_slot() {
        let end_of_last = slot_offset(PREDEFINED + USER_SLOTS);
        assert_eq!(slot_offset(0), TEAM_FLAG_BYTES);
        assert!(RESERVED >= end_of_last && RESERVED.is_multiple_of(MAX_ALIGN));
        // The device library's words in the world flag area: lines no job signals.
        assert_eq!((RING_ISSUE_OFFSET, WORLD_EPOCH_OFFSET), (1920, 1984));
        const { assert!(WORLD_EPOCH_OFFSET + 8 <= TEAM_FLAG_BYTES) };
        let p = PinnedLayout::new();
        assert!(p.cuda_state >= size_of::<DeviceState>() && p.cuda_state.is_multiple_of(64));
        assert_eq!(p.total, p.cuda_state + size_of::<CudaState>());
        // Five PEs: six entries of each base table (the last one 0), five channel bytes.
        let l = TableLayout::new(5);
        assert_eq!((l.peer_base, l.amo_base, l.channel), (0, 48, 96));
        assert!(l.teams >= l.channel + 5 && l.teams.is_multiple_of(64));
        assert_eq!(l.total, l.teams + DEVICE_TEAMS * 32);
    }
}
