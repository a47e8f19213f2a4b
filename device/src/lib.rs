//! # oxshmem-device
//!
//! One-sided operations that a *device thread* starts by itself: the NVSHMEM device API
//! (`put`, `get`, `p`, `g`, `_nbi`, `put_signal`, `signal_op`, `signal_wait_until`, atomics,
//! `fence`, `quiet`, `barrier_all`, `sync_all`, and the `_warp`/`_block` collective-scope
//! forms), over per-peer *channels* chosen at init:
//!
//! - **P2P** — the peer's heap is mapped here: direct stores, loads and atomics;
//! - **proxy** — a request ring drained by a host proxy thread that calls the runtime's
//!   transport (NVSHMEM's IBRC path);
//! - **IBGDA** — the device thread writes mlx5 work requests into a send queue per peer and
//!   rings the doorbell itself; a software NIC consumes the queues ([`ibgda`]).
//!
//! Peers whose heap is mapped here use P2P, others `OXSHMEM_DEVICE_REMOTE` (`proxy` by default,
//! or `ibgda`); `OXSHMEM_DEVICE_CHANNEL=p2p|proxy|ibgda` overrides the choice for every peer. Device code runs on
//! the CPU kernel back end ([`Stream::launch`]); the device state is plain `#[repr(C)]` data
//! ([`state::DeviceState`]), so a CUDA back end can reuse it unchanged. This crate is a client
//! of the runtime: it asks the runtime for memory, peers and a host transport, never the other
//! way round.
//!
//! A whole program (`oshrun -n 4 ./ring`; run alone it is PE 0 of 1 and sends to itself):
//!
//! ```
//! use oxshmem_device::{DevPtr, Device, Grid};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let shmem = oxshmem::init()?;
//!     let dev = Device::init(&shmem)?;                   // collective
//!     let buf = shmem.alloc_slice(1024, 0u64)?;
//!     let dst = DevPtr::from_slice(&buf);
//!     let (me, n) = (shmem.my_pe(), shmem.n_pes());
//!     let right = (me + 1) % n;
//!     let stream = dev.stream();
//!     stream.launch(Grid::new(4, 256), move |t| {
//!         let i = t.global_idx();
//!         t.p(dst.offset(i), (1000 * me + i) as u64, right); // one store per device thread
//!         t.quiet();
//!     });
//!     stream.synchronize()?;                             // the kernel and its stores are done
//!     shmem.barrier_all()?;                              // … on every PE
//!     let left = (me + n - 1) % n;
//!     assert_eq!(buf.read(1023), (1000 * left + 1023) as u64);
//!     drop(stream);
//!     dev.finalize()?;                                   // collective: before the runtime's
//!     shmem.finalize()?;                                 // collective: the last call
//!     Ok(())
//! }
//! ```
//!
//! # Finalizing
//!
//! A program ends with [`Device::finalize`] and then `oxshmem::Shmem::finalize`, on every PE.
//! Nothing does it for you: `Shmem` is a `Copy` handle, so no drop of it can finalize the
//! runtime, and the Rust API installs no exit hook that would — finalizing is collective (it
//! waits for every PE), and a PE leaving on an error path must not block in it. A PE that
//! returns from `main` without `shmem.finalize()` is, to the launcher, a PE that died early
//! (its peers may be waiting for it), so `oshrun` ends the whole job with status 1 and prints
//!
//! ```text
//! oshrun: PE 0 (pid 12345) exited with status 0 without finalizing (no shmem_finalize / PMI finalize after init); ending the job
//! ```
//!
//! (run without a launcher, as PE 0 of 1, nobody checks). `Device::finalize` comes first: it
//! waits for every kernel launched on the device, completes their outstanding operations,
//! stops the proxy and the software NIC, frees the device's symmetric objects (collective,
//! which needs the runtime), and reports the first device error. A `Device` that is only
//! dropped stops its threads but leaves its symmetric objects allocated.

// Device routines mirror NVSHMEM's argument lists (put_signal takes eight).
#![allow(clippy::too_many_arguments)]

mod api;
pub mod channel;
pub mod cheader;
/// The device layer's variables, their rules, and the channel choice; registered into the runtime's one table.
pub mod config;
mod cpu;
/// The CUDA driver layer (feature `cuda`): the GPU, its symmetric heap, fd passing on a node.
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod ibgda;
/// NICs for the IBGDA channel: the provider seam, the software NIC's provider, mlx5 DEVX commands.
pub mod nic;
pub mod state;
/// The queue code's atomics: std's, or loom's under `--cfg loom` (the loom models).
#[doc(hidden)]
pub mod sync;

use std::sync::Arc;

use bytemuck::Pod;
use parking_lot::{Condvar, Mutex};

pub use api::DevPtr;
pub use channel::ChannelKind;
use channel::proxy::{Proxy, ProxyRing, ProxyRingBox};
use cpu::LaunchInfo;
pub use cpu::{Grid, Stream, Thread, WARP_SIZE};
use state::{BARRIER_ROUNDS, DeviceState, ErrorCode, ErrorSlot, op, op_name, wait_cmp};

/// An error of the device layer, naming the PE, the operation and the device thread.
///
/// `Debug` prints the message (as [`oxshmem::Error`] does), so that `fn main() -> Result<(),
/// DeviceError>` shows it readably, and `?` turns it into an [`oxshmem::Error`], so that one
/// `main` can return either:
///
/// ```
/// fn main() -> Result<(), oxshmem::Error> {
///     let shmem = oxshmem::init()?;
///     let dev = oxshmem_device::Device::init(&shmem)?; // a DeviceError converts
///     dev.finalize()?;
///     shmem.finalize()
/// }
/// # main().unwrap();
/// ```
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// A device operation failed.
    #[error("PE {pe}: device {op} ({where_}): {reason}")]
    Op {
        /// The PE on which the device thread ran.
        pe: usize,
        /// The operation (NVSHMEM name).
        op: &'static str,
        /// Which device thread (or the proxy).
        where_: String,
        /// What went wrong.
        reason: String,
    },
    /// Setting the device layer up failed.
    #[error("PE {pe}: device init: {reason}")]
    Init {
        /// This PE.
        pe: usize,
        /// Why.
        reason: String,
    },
    /// The runtime reported an error.
    #[error(transparent)]
    Runtime(#[from] oxshmem::Error),
}

impl std::fmt::Debug for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl From<DeviceError> for oxshmem::Error {
    fn from(e: DeviceError) -> oxshmem::Error {
        match e {
            DeviceError::Runtime(e) => e,
            DeviceError::Op { pe, op, ref where_, ref reason } => oxshmem::Error::new(
                pe,
                op,
                oxshmem::ErrorKind::Layer { layer: "device", reason: format!("({where_}): {reason}") },
            ),
            DeviceError::Init { pe, ref reason } => oxshmem::Error::new(
                pe,
                "device init",
                oxshmem::ErrorKind::Layer { layer: "device", reason: reason.clone() },
            ),
        }
    }
}

struct Inner {
    state: Box<DeviceState>,
    _peer_base: Box<[u64]>,
    _channel: Box<[u8]>,
    ring: Option<ProxyRingBox>,
    proxy: Mutex<Option<Proxy>>,
    ibgda: Option<Box<ibgda::Ibgda>>,
    softnic: Mutex<Option<ibgda::softnic::SoftNic>>,
    barrier: Mutex<Option<oxshmem::SymSlice<u64>>>,
    concurrent_blocks: usize,
    launches: Mutex<Launches>,
    launches_done: Condvar,
}

/// Kernels launched and not yet finished, and whether the device is finalized.
#[derive(Debug, Default)]
struct Launches {
    inflight: u64,
    finalized: bool,
    /// Launches so far (the last launch's number).
    count: u64,
    /// The launches not yet finished.
    running: Vec<LaunchInfo>,
    /// The finished launch whose device thread recorded the device's error, if any.
    failed: Option<LaunchInfo>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("my_pe", &self.state.my_pe).field("n_pes", &self.state.n_pes).finish()
    }
}

/// The device layer of one PE: the channels to every peer, the proxy thread and the software
/// NIC when a peer needs them, and the device's error slot. Made by [`Device::init`]
/// (collective), used through [`Stream`]s, ended by [`Device::finalize`] (collective). Clones
/// are handles to the same device.
///
/// ```
/// use oxshmem_device::{DevPtr, Device, Grid};
/// let shmem = oxshmem::init()?;
/// let dev = Device::init(&shmem)?;                       // collective
/// let me = shmem.my_pe();
/// println!("PE {me} reaches PE 0 through {:?}", dev.channel_of(0).map(|c| c.name()));
/// let buf = shmem.alloc_slice(4, 0u32)?;
/// let p = DevPtr::from_slice(&buf);
/// let stream = dev.stream();
/// stream.launch(Grid::new(1, 4), move |t| t.p(p.offset(t.thread_idx()), 7, me));
/// stream.synchronize()?;
/// assert_eq!(buf.to_vec(), [7; 4]);
/// // A device thread cannot return an error: the host reports it, naming the thread.
/// stream.launch(Grid::new(1, 1), move |t| t.p(p, 1, 1000));
/// let err = stream.synchronize().unwrap_err().to_string();
/// assert!(err.contains("device nvshmem_p (block 0, thread 0): PE 1000 is out of range"));
/// drop(stream);
/// assert!(dev.finalize().is_err());                      // the error stays recorded
/// shmem.finalize()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Device(Arc<Inner>);

/// Requests in the proxy ring.
pub const PROXY_RING_SLOTS: usize = 4096;

/// `OXSHMEM_TIMEOUT` in nanoseconds (seconds in the environment, fractions allowed, as the
/// runtime reads it; the runtime's init refuses a value that is not a positive number).
pub(crate) fn env_timeout() -> u64 {
    let secs = oxshmem::config::value_of("OXSHMEM_TIMEOUT").0.trim().parse::<f64>().unwrap_or(60.0);
    (secs.clamp(1e-3, 1e9) * 1e9) as u64
}

/// `OXSHMEM_DEVICE_BLOCKS`: blocks of a kernel that run at once (a whole number, at least 1).
fn env_blocks(pe: usize) -> Result<usize, DeviceError> {
    let (v, name) = config::value_of("OXSHMEM_DEVICE_BLOCKS");
    let text = match v.trim() {
        "" => config::var("OXSHMEM_DEVICE_BLOCKS").default,
        t => t,
    };
    match text.parse::<usize>() {
        Ok(b) if b >= 1 => Ok(b),
        _ => Err(DeviceError::Init {
            pe,
            reason: format!(
                "{name}={v:?}: expected how many blocks of a kernel run at once, a whole number of at least 1"
            ),
        }),
    }
}

impl Device {
    /// Sets up the device layer (`nvshmem_init`'s device half); collective over all PEs.
    /// Chooses each peer's channel: P2P when its heap is mapped here, else
    /// `OXSHMEM_DEVICE_REMOTE` (`proxy`, the default, or `ibgda`);
    /// `OXSHMEM_DEVICE_CHANNEL=p2p|proxy|ibgda` forces one for every peer (forcing P2P to an
    /// unmapped peer is an error). Reads `OXSHMEM_DEVICE_BLOCKS` (blocks of a kernel that run
    /// at once, see [`Stream::launch`]) and `OXSHMEM_TIMEOUT` (how long a device-side wait may
    /// last); a malformed value is an error naming the variable and the value. Where
    /// `OXSHMEM_DEVICE_CHANNEL` and `OXSHMEM_DEVICE_REMOTE` are unset, NVSHMEM's
    /// `NVSHMEM_DISABLE_P2P`, `NVSHMEM_IB_ENABLE_IBGDA` and `NVSHMEM_REMOTE_TRANSPORT` decide
    /// ([`config::device_channel`], [`config::device_remote`]).
    pub fn init(shmem: &oxshmem::Shmem) -> Result<Device, DeviceError> {
        // OXSHMEM_DEVICE_CHANNEL, or NVSHMEM_DISABLE_P2P's "the remote channel for every peer".
        let (channel, _) =
            config::device_channel().map_err(|reason| DeviceError::Init { pe: shmem.my_pe(), reason })?;
        Self::init_with(shmem, Some(&channel))
    }

    /// As [`init`](Self::init), with the channel override given explicitly (`None`: automatic).
    pub fn init_with(shmem: &oxshmem::Shmem, force: Option<&str>) -> Result<Device, DeviceError> {
        Self::init_opts(shmem, force, None)
    }

    /// As [`init_with`](Self::init_with), and with how the host proxy thread waits given
    /// explicitly (`Some(true)`: it spins, `Some(false)`: it sleeps when idle; `None`:
    /// `OXSHMEM_PROXY_SPIN`, by default spinning when this host has a CPU for every PE and
    /// its proxy).
    pub fn init_opts(
        shmem: &oxshmem::Shmem,
        force: Option<&str>,
        proxy_spin: Option<bool>,
    ) -> Result<Device, DeviceError> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        // The layer's variables join the runtime's table (SHMEM_INFO, oxshmem-info) and are
        // checked here, where the runtime's init did not know them yet.
        config::register().map_err(|reason| DeviceError::Init { pe: me, reason })?;
        let force = match force.map(str::trim) {
            None | Some("") | Some("auto") => None,
            Some("p2p") => Some(ChannelKind::P2p),
            Some("proxy") => Some(ChannelKind::Proxy),
            Some("ibgda") => Some(ChannelKind::Ibgda),
            Some(other) => {
                return Err(DeviceError::Init {
                    pe: me,
                    reason: format!("OXSHMEM_DEVICE_CHANNEL={other:?}: expected p2p, proxy, ibgda or auto"),
                });
            }
        };
        // In automatic mode, what reaches a peer whose heap is not mapped here.
        // OXSHMEM_DEVICE_REMOTE, or what NVSHMEM_IB_ENABLE_IBGDA / NVSHMEM_REMOTE_TRANSPORT ask for.
        let (remote, remote_var) = config::device_remote().map_err(|reason| DeviceError::Init { pe: me, reason })?;
        let remote = match remote.trim() {
            "" | "proxy" => ChannelKind::Proxy,
            "ibgda" => ChannelKind::Ibgda,
            other => {
                return Err(DeviceError::Init {
                    pe: me,
                    reason: format!("{remote_var}={other:?}: expected proxy or ibgda"),
                });
            }
        };
        let concurrent_blocks = env_blocks(me)?;
        let proxy_spin =
            match proxy_spin.or(config::proxy_spin().map_err(|reason| DeviceError::Init { pe: me, reason })?) {
                Some(s) => s,
                // A spinning proxy holds a core: only where every PE of this host and its proxy
                // have one each.
                None => oxshmem::config::job_cpus() >= 2 * shmem.team_shared().n_pes().unwrap_or(n),
            };
        let (base, size) = oxshmem::raw::heap_range()?;
        let mut peer_base = vec![0u64; n].into_boxed_slice();
        let mut channel = vec![0u8; n].into_boxed_slice();
        for pe in 0..n {
            let p = oxshmem::raw::ptr(base, pe as i32);
            peer_base[pe] = p as u64;
            let kind = match force {
                Some(ChannelKind::P2p) if p.is_null() => {
                    return Err(DeviceError::Init {
                        pe: me,
                        reason: format!("OXSHMEM_DEVICE_CHANNEL=p2p, but PE {pe}'s heap is not mapped here"),
                    });
                }
                Some(k) => k,
                None if p.is_null() => remote,
                None => ChannelKind::P2p,
            };
            channel[pe] = kind as u8;
        }
        tracing::debug!(
            target: "device",
            p2p = channel.iter().filter(|&&c| c == ChannelKind::P2p as u8).count(),
            proxy = channel.iter().filter(|&&c| c == ChannelKind::Proxy as u8).count(),
            ibgda = channel.iter().filter(|&&c| c == ChannelKind::Ibgda as u8).count(),
            forced = ?force,
            ?remote,
            proxy_spin,
            "channels chosen per peer"
        );
        let needs_proxy = channel.contains(&(ChannelKind::Proxy as u8));
        let ring = match needs_proxy {
            true => Some(
                ProxyRingBox::new_in(PROXY_RING_SLOTS, &channel::devmem::host())
                    .map_err(|reason| DeviceError::Init { pe: me, reason })?,
            ),
            false => None,
        };
        // Every PE takes part in the IBGDA set-up (it exchanges keys) when any PE may use it:
        // the choice comes from the environment, the same everywhere.
        let ibgda = if force == Some(ChannelKind::Ibgda) || (force.is_none() && remote == ChannelKind::Ibgda) {
            let cfg = ibgda::IbgdaConfig::from_env().map_err(|reason| DeviceError::Init { pe: me, reason })?;
            if cfg.queue_mem == ibgda::QueueMem::Gpu {
                let reason = format!(
                    "{}: CPU device threads' queues are host memory (GPU memory is for the CUDA back end's queues)",
                    ibgda::queue_mem_setting()
                );
                return Err(DeviceError::Init { pe: me, reason });
            }
            Some(Box::new(ibgda::Ibgda::new(shmem, cfg)?))
        } else {
            None
        };
        let flags = shmem.alloc_slice(BARRIER_ROUNDS * 8, 0u64)?;
        let state = Box::new(DeviceState {
            my_pe: me as u32,
            n_pes: n as u32,
            heap_base: base as u64,
            heap_size: size as u64,
            peer_base: peer_base.as_ptr(),
            channel: channel.as_ptr(),
            ring: ring.as_ref().map_or(std::ptr::null_mut(), |r| r.as_ptr()),
            ibgda: ibgda.as_deref().map_or(std::ptr::null_mut(), |r| r.device_table()),
            barrier_flags: flags.as_ptr() as u64,
            barrier_epoch: Default::default(),
            timeout_ns: env_timeout(),
            proxy_alive: Default::default(),
            proxy_sleeping: Default::default(),
            error: ErrorSlot::default(),
            host_error: ErrorSlot::default(),
        });
        let proxy = ring.as_deref().map(|r| Proxy::start(&*state, r, proxy_spin));
        let softnic = ibgda
            .as_deref()
            .filter(|ib| ib.needs_software_nic())
            .map(|ib| ibgda::softnic::SoftNic::start(ib, state.timeout_ns));
        shmem.barrier_all()?;
        Ok(Device(Arc::new(Inner {
            state,
            _peer_base: peer_base,
            _channel: channel,
            ring,
            proxy: Mutex::new(proxy),
            ibgda,
            softnic: Mutex::new(softnic),
            barrier: Mutex::new(Some(flags)),
            concurrent_blocks,
            launches: Mutex::new(Launches::default()),
            launches_done: Condvar::new(),
        })))
    }

    /// The device state (what device code reads).
    pub fn state(&self) -> &DeviceState {
        &self.0.state
    }

    pub(crate) fn ring(&self) -> Option<&ProxyRing> {
        self.0.ring.as_deref()
    }

    /// The IBGDA channel's queues, when any peer uses it.
    pub fn ibgda(&self) -> Option<&ibgda::Ibgda> {
        self.0.ibgda.as_deref()
    }

    pub(crate) fn concurrent_blocks(&self) -> usize {
        self.0.concurrent_blocks
    }

    /// Admits a kernel launch and numbers it; `None` once the device is finalized.
    pub(crate) fn begin_launch(&self, grid: Grid, site: &'static std::panic::Location<'static>) -> Option<LaunchInfo> {
        let mut g = self.0.launches.lock();
        if g.finalized {
            return None;
        }
        g.inflight += 1;
        g.count += 1;
        let info = LaunchInfo { id: g.count, site, grid };
        g.running.push(info);
        Some(info)
    }

    /// A launched kernel has finished (every thread of it has: any error it recorded is in the
    /// slot now, so its launch is kept for the report).
    pub(crate) fn end_launch(&self, info: LaunchInfo) {
        let mut g = self.0.launches.lock();
        g.inflight -= 1;
        g.running.retain(|l| l.id != info.id);
        if g.failed.is_none() && self.0.state.error.get().is_some_and(|e| e.launch == info.id) {
            g.failed = Some(info);
        }
        self.0.launches_done.notify_all();
    }

    /// The launch numbered `id`, if it runs or recorded the device's error.
    fn launch_info(&self, id: u64) -> Option<LaunchInfo> {
        let g = self.0.launches.lock();
        g.failed.iter().chain(g.running.iter()).find(|l| l.id == id).copied()
    }

    /// The channel that serves `pe`.
    pub fn channel_of(&self, pe: usize) -> Option<ChannelKind> {
        if pe >= self.0.state.n_pes as usize {
            return None;
        }
        // SAFETY: pe < n_pes, the length of the channel table.
        ChannelKind::from_u8(unsafe { *self.0.state.channel.add(pe) })
    }

    /// A new stream for kernel launches.
    pub fn stream(&self) -> Stream {
        Stream::new(self.clone())
    }

    /// Host side of `quiet` for device work: waits until every request device threads put in
    /// the proxy ring is complete, then reports the first device error.
    pub fn quiet(&self) -> Result<(), DeviceError> {
        if let Some(r) = self.ring() {
            let issued = r.issued();
            if issued > 0
                && !channel::proxy::wait_done(self.state(), r, issued - 1, state::op::QUIET, u32::MAX, u32::MAX)
            {
                return Err(self.error().expect("a stall was recorded"));
            }
        }
        if let Some(ib) = self.ibgda()
            && let Err((pe, e)) = ibgda::device::host_quiet(ib, self.0.state.timeout_ns)
        {
            let (code, addr, len) = match e {
                ibgda::qp::QpError::Nic { wqe_counter, syndrome, opcode } => {
                    (ErrorCode::Nic, u64::from(wqe_counter), u64::from(syndrome) << 8 | u64::from(opcode))
                }
                ibgda::qp::QpError::Stalled { needed, reached } => (ErrorCode::NicStalled, needed, reached),
            };
            self.0.state.error.record(code, state::op::QUIET, pe as i64, addr, len, u32::MAX, u32::MAX);
        }
        match self.error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Stops the proxy thread while the device stays up — what a dead or wedged proxy looks
    /// like to device threads. For tests of the stall path only.
    #[doc(hidden)]
    pub fn stop_proxy_for_tests(&self) {
        if let Some(mut p) = self.0.proxy.lock().take() {
            p.stop();
        }
        if let Some(mut n) = self.0.softnic.lock().take() {
            n.stop();
        }
    }

    /// The first device error, if any.
    pub fn error(&self) -> Option<DeviceError> {
        let s = self.0.state.first_error()?;
        let timed_out = s.code == ErrorCode::WaitTimeout as u32 || s.code == ErrorCode::BarrierTimeout as u32;
        let launch = if s.launch != 0 { self.launch_info(s.launch) } else { None };
        let where_ = if timed_out && s.block != u32::MAX {
            // A wait that never ended: name the kernel (where it was launched) as well.
            let kernel = match launch {
                Some(l) => {
                    format!("kernel launched at {}:{} (launch {} on this device)", l.site.file(), l.site.line(), l.id)
                }
                None => format!("kernel launch {}", s.launch),
            };
            format!("{kernel}, block {}, thread {}", s.block, s.thread)
        } else if s.block == u32::MAX {
            if s.code == ErrorCode::Nic as u32 || s.code == ErrorCode::NicStalled as u32 {
                "host".to_string()
            } else {
                "host proxy".to_string()
            }
        } else {
            format!("block {}, thread {}", s.block, s.thread)
        };
        let reason = error_reason(&self.0.state, &s, || self.waves_hint(launch));
        Some(DeviceError::Op { pe: self.0.state.my_pe as usize, op: op_name(s.op), where_, reason })
    }

    /// When the failed launch has more blocks than run at once: the likely cause of a wait
    /// that never ended.
    fn waves_hint(&self, launch: Option<LaunchInfo>) -> String {
        let at_once = self.0.concurrent_blocks;
        match launch {
            Some(l) if l.grid.blocks > at_once => format!(
                "; only {at_once} of the kernel's {} blocks run at once (OXSHMEM_DEVICE_BLOCKS={at_once}): does a block wait for a later one, which cannot start before it ends?",
                l.grid.blocks
            ),
            _ => String::new(),
        }
    }

    /// Ends the device layer: completes every outstanding device operation (a kernel may have
    /// ended with `_nbi` operations in flight), stops the proxy, frees the device's symmetric
    /// objects (collective), and reports the first device error.
    pub fn finalize(self) -> Result<(), DeviceError> {
        // Streams and clones share the device: no kernel may start after this point, and every
        // kernel launched before it runs to the end before the proxy and the barrier flags go.
        {
            let mut g = self.0.launches.lock();
            g.finalized = true;
            while g.inflight > 0 {
                self.0.launches_done.wait(&mut g);
            }
        }
        let q = self.quiet();
        if let Some(mut p) = self.0.proxy.lock().take() {
            p.stop();
        }
        if let Some(mut n) = self.0.softnic.lock().take() {
            n.stop();
        }
        if let Some(flags) = self.0.barrier.lock().take() {
            flags.free()?;
        }
        q
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(mut p) = self.proxy.lock().take() {
            p.stop();
        }
        if let Some(mut n) = self.softnic.lock().take() {
            n.stop();
        }
        // The barrier flags are symmetric: freeing them is collective, so a Device dropped
        // without finalize leaves them allocated rather than risk a hang.
        if let Some(f) = self.barrier.lock().take() {
            std::mem::forget(f);
        }
    }
}

/// Marker for element types device operations move.
pub trait DeviceData: Pod {}
impl<T: Pod> DeviceData for T {}

/// Lets the calling thread, a helper of the device layer (the proxy, the software NIC, the
/// CPU back end's stream worker and so its kernel threads, which it starts), run on every CPU
/// of the job on this host (`OSHRUN_CPU_LIST`) instead of the one core `oshrun` bound the PE
/// to: they stand for a GPU and a NIC, which do not take the PE's core, and a spinning proxy
/// on that core would starve the threads it serves. Elsewhere it changes nothing.
pub(crate) fn unbind_helper_thread() {
    let Some(cpus) = oxshmem::config::job_cpu_list() else { return };
    // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in cpus.into_iter().filter(|&c| c < 8 * size_of::<libc::cpu_set_t>()) {
        // SAFETY: `c` is inside the mask.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a valid mask of the size passed; 0 is the calling thread. A failure
    // (a cpuset that shrank) leaves the thread where it was.
    unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
}

/// What the device error `s` recorded in `state` means, in words; `hint` adds to a wait's
/// timeout what the launch suggests.
pub(crate) fn error_reason(state: &DeviceState, s: &state::ErrorRecord, hint: impl FnOnce() -> String) -> String {
    let n = state.n_pes;
    match s.code {
        c if c == ErrorCode::PeOutOfRange as u32 => format!("PE {} is out of range (0..{n})", s.pe),
        c if c == ErrorCode::NotSymmetric as u32 => {
            format!("address {:#x} (+{} bytes) is not in the symmetric heap", s.addr, s.len)
        }
        c if c == ErrorCode::OutOfBounds as u32 => {
            format!("{} elements at {:#x} exceed the symmetric object", s.len, s.addr)
        }
        c if c == ErrorCode::RingStalled as u32 => format!(
            "the proxy ring stalled: request {} not done after the timeout ({} completed); is the proxy alive?",
            s.addr, s.len
        ),
        c if c == ErrorCode::Transport as u32 => {
            format!("the host transport failed a proxied request to PE {} at {:#x} ({} bytes)", s.pe, s.addr, s.len)
        }
        c if c == ErrorCode::Misaligned as u32 => {
            format!("atomic target {:#x} is not aligned to {} bytes", s.addr, s.len)
        }
        c if c == ErrorCode::Finalized as u32 => "a kernel was launched after the device was finalized".to_string(),
        c if c == ErrorCode::Nic as u32 => {
            let (syn, opc) = ((s.len >> 8) as u8, s.len as u8);
            format!(
                "the NIC failed WQE {} ({}) on the IBGDA queue to PE {}: {} (syndrome {syn:#04x}); the queue is in error",
                s.addr,
                ibgda::mlx5::opcode::name(opc),
                s.pe,
                ibgda::mlx5::syndrome::name(syn)
            )
        }
        c if c == ErrorCode::NicStalled as u32 => format!(
            "the IBGDA queue to PE {} stalled: WQE index {} not complete (completed up to {}) after the timeout or with the software NIC stopped",
            s.pe, s.addr, s.len
        ),
        c if c == ErrorCode::WaitTimeout as u32 => {
            let secs = state.timeout_ns as f64 / 1e9;
            let (cmp, want, seen) =
                (wait_cmp::operator(s.cmp), wait_cmp::show(s.cmp, s.value), wait_cmp::show(s.cmp, s.len));
            let mut r = if s.op == op::BARRIER || s.op == op::SYNC_ALL {
                format!(
                    "timed out after {secs} s (OXSHMEM_TIMEOUT) in the device barrier: PE {} never arrived (its flag at {:#x} was to become {cmp} {want}; it is {seen})",
                    s.pe, s.addr
                )
            } else {
                format!(
                    "timed out after {secs} s (OXSHMEM_TIMEOUT) waiting for the word at {:#x} to become {cmp} {want}; it is {seen}",
                    s.addr
                )
            };
            r.push_str(&hint());
            r
        }
        c if c == ErrorCode::BarrierTimeout as u32 => {
            let secs = 2.0 * state.timeout_ns as f64 / 1e9;
            let group = if s.op == op::SYNC_WARP { "warp" } else { "block" };
            format!(
                "timed out after {secs} s (twice OXSHMEM_TIMEOUT): {} of the {} threads of the {group} arrived; every thread of the {group} must call it",
                s.addr, s.len
            )
        }
        c if c == ErrorCode::Unregistered as u32 => format!(
            "the local buffer at {:#x} (+{} bytes) is neither in the symmetric heap nor registered, and the IBGDA \
             channel's NIC (to PE {}) reaches only registered memory: call nvshmemx_buffer_register(ptr, len) on it \
             (cudaMalloc or pinned host memory) before a kernel uses it",
            s.addr, s.len, s.pe
        ),
        _ => "the kernel panicked".to_string(),
    }
}

#[cfg(test)]
mod error_tests {
    use super::DeviceError;

    #[test]
    fn device_errors_convert_keeping_their_message() {
        let init = DeviceError::Init { pe: 1, reason: "OXSHMEM_DEVICE_BLOCKS=\"0\": bad".into() };
        let text = init.to_string();
        assert_eq!(format!("{init:?}"), text);
        let e: oxshmem::Error = init.into();
        assert_eq!(e.to_string(), text);
        let op = DeviceError::Op {
            pe: 0,
            op: "nvshmem_p",
            where_: "block 0, thread 3".into(),
            reason: "PE 9 is out of range".into(),
        };
        let e: oxshmem::Error = op.into();
        assert_eq!((e.pe, e.func), (0, "nvshmem_p"));
        assert_eq!(e.to_string(), "PE 0: nvshmem_p: (block 0, thread 3): PE 9 is out of range");
        let rt = oxshmem::Error::new(2, "shmem_p", oxshmem::ErrorKind::NotInitialized);
        assert_eq!(oxshmem::Error::from(DeviceError::Runtime(rt.clone())), rt);
    }
}
