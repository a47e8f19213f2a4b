//! Init and finalize, both collective.
//!
//! Init connects to the launcher, creates this PE's heap (and, for C programs, captures its
//! static data), deals every PE's card (`card.rs`), works out the nodes (`layout.rs`) and the
//! peer table (`peers.rs`), and publishes the runtime (`state.rs`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use oxshmem_bootstrap::Bootstrap;

use super::card::{self, PeCard};
use super::peers::{self, OwnSegments};
use super::state::{self, Phase};
use super::{HEAP_ALIGN, Runtime, ThreadLevel, layout};
use crate::config::{Config, TransportChoice};
use crate::error::{Error, ErrorKind, Result};
use crate::heap::Heap;
use crate::heap::segment::Mapping;
use crate::team::{SlotLayout, Teams};

const F: &str = "shmem_init";

/// Initializes the runtime; collective. See [`crate::init`]. `boot`: the bootstrap to use (one
/// the caller connected itself, like NVSHMEM's unique-id and MPI-communicator inits), else the
/// one the environment names.
pub(crate) fn init_runtime_checked(
    requested: ThreadLevel,
    with_static: bool,
    boot: Option<Box<dyn Bootstrap>>,
) -> Result<ThreadLevel> {
    // Logging, when the environment asks (the C library has installed it already, with its
    // default; a Rust program's own subscriber is kept).
    oxshmem_bootstrap::logging::install(None);
    let start = std::time::Instant::now();
    if let Err(phase) = state::begin_init() {
        let kind = match phase {
            Phase::Initializing => {
                ErrorKind::InvalidArgument("shmem_init called while another thread is initializing".into())
            }
            Phase::Running => ErrorKind::AlreadyInitialized,
            Phase::Uninitialized | Phase::Finalized => {
                ErrorKind::InvalidArgument("cannot initialize again after shmem_finalize".into())
            }
        };
        return Err(Error::new(state::pe_for_errors(), F, kind));
    }
    let rt = match init_runtime(requested, with_static, boot) {
        Ok(rt) => rt,
        Err(e) => {
            state::abandon_init();
            return Err(e);
        }
    };
    state::release_init_boot();
    let rt = state::publish(rt);
    // What this PE printed reaches the launcher even when another PE ends the job (flush.rs).
    super::flush::install_teardown_flush();
    rt.barrier_all_internal(F)?;
    tracing::info!(
        target: "init",
        n_pes = rt.n,
        nodes = rt.layout.n_nodes(),
        thread_level = ?rt.thread_level,
        took_us = start.elapsed().as_micros() as u64,
        "ready"
    );
    if rt.me == 0 && (rt.config.info || rt.config.print_version) {
        crate::config::print_info(rt.config.info);
    }
    Ok(rt.thread_level)
}

/// Finalizes the runtime; collective. See [`crate::Shmem::finalize`].
pub(crate) fn finalize_runtime() -> Result<()> {
    const F: &str = "shmem_finalize";
    let rt = state::running(F)?;
    tracing::debug!(target: "init", "finalize");
    rt.barrier_all_internal(F)?;
    if !state::finalize() {
        return Err(Error::new(rt.me, F, ErrorKind::Finalized));
    }
    // A network transport may close only when no peer needs it any more: complete this PE's
    // last operations (the barrier's own signals), wait for every PE to have done so, then close.
    if let Some(net) = &rt.net {
        net.quiet().map_err(|e| Error { func: F, ..e })?;
        rt.boot.barrier().map_err(|e| Error::new(rt.me, F, ErrorKind::Bootstrap(e.to_string())))?;
        net.shutdown();
    }
    // The registered segments go with the runtime (their layers should have removed them).
    crate::segment::clear();
    // Mappings stay: a thread racing with finalize must not fault; the process is ending.
    rt.boot.finalize().map_err(|e| Error::new(rt.me, F, ErrorKind::Bootstrap(e.to_string())))
}

/// The launcher connection: the one given, else the one the environment names
/// (`OXSHMEM_BOOTSTRAP` and the launcher's variables, or `NVSHMEM_BOOTSTRAP`'s choice). It is
/// kept if init fails (see `state::keep_init_boot`), and this PE's number is known from here on.
fn connect(given: Option<Box<dyn Bootstrap>>, requested: ThreadLevel) -> Result<Arc<dyn Bootstrap>> {
    let boot: Arc<dyn Bootstrap> = match given {
        Some(b) => b.into(),
        None => crate::config::bootstrap_from_env()
            .map_err(|e| Error::new(state::pe_for_errors(), F, ErrorKind::Bootstrap(e)))?
            .into(),
    };
    state::keep_init_boot(boot.clone());
    let (me, n) = (boot.rank(), boot.size());
    state::set_my_pe(me);
    oxshmem_bootstrap::logging::set_pe(me);
    tracing::debug!(target: "init", bootstrap = boot.name(), rank = me, size = n, "bootstrap connected");
    // oshrun's status table for its hang report, where there is one.
    oxshmem_bootstrap::status::attach(me, n, requested == ThreadLevel::Multiple);
    if me == 0 {
        // Unknown OXSHMEM_/SHMEM_/NVSHMEM_ variables, named once for the job.
        crate::config::print_env_warnings();
    }
    Ok(boot)
}

/// This PE's segments as init creates them: the heap's file and mapping, and the captured
/// static data (file, base, length).
struct Segments {
    heap_fd: OwnedFd,
    heap_map: Mapping,
    static_data: Option<(OwnedFd, usize, usize)>,
}

/// Creates the heap's file, `seg_len` bytes, and — for C programs — captures the static data,
/// first thing after the heap, before anything else runs.
fn create_segments(me: usize, seg_len: usize, with_static: bool) -> Result<Segments> {
    let oserr = |e: crate::heap::segment::OsFailure| Error::new(me, F, e.into());
    let (heap_fd, heap_map) = Mapping::create(seg_len, "oxshmem-heap", HEAP_ALIGN).map_err(oserr)?;
    let static_data = if with_static { Some(crate::heap::static_data::capture().map_err(oserr)?) } else { None };
    Ok(Segments { heap_fd, heap_map, static_data })
}

/// More PEs than cores on this host: a waiter that spins only delays the PE it waits for,
/// which needs its core. Unless the user chose, waiters then yield at once. (Not when the
/// launcher bound each PE to a core of its own: yielding there hands the core to any other
/// process for a whole scheduler tick, 1,000 µs a barrier beside one busy process.)
fn adjust_spin(config: &mut Config, pes_on_this_host: usize) {
    config.crowded = pes_on_this_host > crate::config::job_cpus();
    if config.crowded
        && crate::config::lookup(crate::config::var_named("OXSHMEM_SPIN")).1 == crate::config::Source::Default
    {
        config.spin = 0;
    }
}

fn init_runtime(requested: ThreadLevel, with_static: bool, given: Option<Box<dyn Bootstrap>>) -> Result<Runtime> {
    let boot = connect(given, requested)?;
    let (me, n) = (boot.rank(), boot.size());
    let mut config = Config::from_env(me)?;
    // The heap's file holds the user's SHMEM_SYMMETRIC_SIZE bytes and, after them, the
    // runtime's own symmetric objects, so those never take space the user asked for.
    let slots = SlotLayout::new(config.symmetric_size, n);
    let seg_len = config.symmetric_size + slots.total_bytes();
    let segs = create_segments(me, seg_len, with_static)?;
    tracing::debug!(
        target: "heap",
        user_bytes = config.symmetric_size,
        runtime_bytes = slots.total_bytes(),
        static_data_bytes = segs.static_data.as_ref().map_or(0, |s| s.2),
        "segments created"
    );
    let own = OwnSegments {
        heap: (segs.heap_map.addr(), segs.heap_map.len()),
        static_data: segs.static_data.as_ref().map(|s| (s.1, s.2)),
    };

    let (host, host_key) = layout::host_key();
    let mine = PeCard {
        host,
        host_key,
        pid: std::process::id(),
        heap_fd: segs.heap_fd.as_raw_fd(),
        heap_len: seg_len,
        static_fd: segs.static_data.as_ref().map_or(-1, |s| s.0.as_raw_fd()),
        static_len: own.static_data.map_or(0, |s| s.1),
        cpus: crate::config::host_cpus(),
        barrier: config.barrier,
    };
    let t = std::time::Instant::now();
    let cards = card::exchange(&*boot, me, &mine)?;
    card::check_heap_sizes(me, &cards, slots.total_bytes())?;
    tracing::debug!(target: "init", took_us = t.elapsed().as_micros() as u64, "cards exchanged");

    let layout = layout::node_layout(me, &cards, &config, &*boot);
    adjust_spin(&mut config, layout::pes_on_my_host(me, &cards));
    // Decided from PE 0's card, which every PE has alike: every PE takes the same barrier.
    config.central_barrier = cards[0].barrier.unwrap_or_else(|| layout.hosts.len() == 1 && n > cards[0].cpus);
    tracing::debug!(target: "init", central = config.central_barrier, "barrier pattern");
    // Forcing the network path (OXSHMEM_TRANSPORT=ofi) maps no peer.
    let map_peers = config.transport != TransportChoice::Ofi;
    let shm = peers::shm_table(me, &layout, &cards, own, segs.heap_map, map_peers)?;
    let net = peers::network(&*boot, me, &layout, own, map_peers, &config)?;
    tracing::debug!(
        target: "init",
        transport = ?config.transport,
        local_pes = layout.local_pes.len(),
        network = net.as_ref().map(|_| "ofi"),
        spin = config.spin,
        "transports chosen"
    );
    if config.show_peers {
        // One write, so that the lines of PEs sharing a pipe do not interleave.
        let line = format!("{}\n", peers::peer_table_line(me, &layout, &shm, net.as_deref()));
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }

    let user_len = config.symmetric_size;
    let heap_base = own.heap.0;
    let teams = Teams::new(n, me, &layout.local_pes);
    Ok(Runtime {
        me,
        n,
        boot,
        config,
        thread_level: requested.min(ThreadLevel::Multiple),
        layout,
        heap: Heap::new(heap_base, user_len),
        segs: std::iter::once((heap_base, user_len)).chain(own.static_data).collect(),
        shm,
        net,
        slots,
        teams,
        _heap_fd: segs.heap_fd,
        _static_fd: segs.static_data.map(|s| s.0),
    })
}
