//! The world: init, finalize, who the PEs are and where they live.
//!
//! Init runs the bootstrap exchange once — host key, pid and heap descriptor of every PE —
//! builds the node layout and the peer table (which transport reaches which PE), maps every
//! node peer's heap, and publishes the runtime through one atomic pointer that every
//! operation loads first. Nothing here is on a data path after init.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, Ordering};

use crate::team::{SlotLayout, Teams};

use oxshmem_bootstrap::Bootstrap;

use crate::config::{Config, NodeGrouping, TransportChoice};
use crate::error::{Error, ErrorKind, Result};
use crate::heap::Heap;
use crate::heap::segment::Mapping;
use crate::transport::SymAddr;
use crate::transport::shm::{PeerSegment, ShmTransport};

/// Thread support levels (OpenSHMEM 1.5 §9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum ThreadLevel {
    /// One thread only.
    Single = 0,
    /// Several threads, only the main one calls OpenSHMEM.
    Funneled = 1,
    /// Several threads call OpenSHMEM, never at the same time.
    Serialized = 2,
    /// Any thread calls anything at any time.
    Multiple = 3,
}

impl ThreadLevel {
    /// From the C constant (`SHMEM_THREAD_*`).
    pub fn from_c(v: i32) -> Option<ThreadLevel> {
        Some(match v {
            0 => ThreadLevel::Single,
            1 => ThreadLevel::Funneled,
            2 => ThreadLevel::Serialized,
            3 => ThreadLevel::Multiple,
            _ => return None,
        })
    }
}

/// Where the PEs of the job live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLayout {
    /// Node index of every PE (nodes numbered in order of their first PE).
    pub node_of: Vec<usize>,
    /// Host name of every node (and, where the launcher splits one host into several nodes,
    /// which of the launcher's nodes it is).
    pub hosts: Vec<String>,
    /// The PEs on this PE's node, ascending.
    pub local_pes: Vec<usize>,
}

impl NodeLayout {
    /// Number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.hosts.len()
    }
}

/// Everything a running PE knows.
#[derive(Debug)]
pub(crate) struct Runtime {
    pub(crate) me: usize,
    pub(crate) n: usize,
    pub(crate) boot: Arc<dyn Bootstrap>,
    pub(crate) config: Config,
    pub(crate) thread_level: ThreadLevel,
    pub(crate) layout: NodeLayout,
    pub(crate) heap: Heap,
    /// Local segments: `(base, len)` of segment `i` in this process.
    pub(crate) segs: Vec<(usize, usize)>,
    pub(crate) shm: ShmTransport,
    /// The network transport, for peers this process has not mapped.
    pub(crate) net: Option<Box<dyn crate::transport::Transport>>,
    /// Where each team slot's internal symmetric objects live.
    pub(crate) slots: SlotLayout,
    /// The teams of this PE: world, shared, and the free-slot mask.
    pub(crate) teams: Teams,
    _heap_fd: OwnedFd,
    _static_fd: Option<OwnedFd>,
}

/// The heap's base address is aligned to this, so that `shmem_align` can honour any alignment
/// up to it with the same offset on every PE.
pub(crate) const HEAP_ALIGN: usize = 1 << 30;

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const RUNNING: u8 = 2;
const FINALIZED: u8 = 3;

static PHASE: AtomicU8 = AtomicU8::new(UNINIT);
static RT: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static EVER: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
/// This PE's number, readable for error messages even before init finishes.
/// This PE's number once the bootstrap said it; `u64::MAX` before.
static MY_PE: AtomicU64 = AtomicU64::new(u64::MAX);

/// The running runtime, or the error `func` must report.
#[inline(always)]
pub(crate) fn rt(func: &'static str) -> Result<&'static Runtime> {
    let p = RT.load(Ordering::Acquire);
    if p.is_null() {
        return Err(not_running(func));
    }
    // SAFETY: RT only ever holds null or a pointer from Box::leak that is never freed.
    Ok(unsafe { &*p })
}

/// The runtime even after finalize (handles such as teams stay valid objects; operations on
/// them then fail through [`rt`]). `None` only before the first successful init.
pub(crate) fn rt_any() -> Option<&'static Runtime> {
    let p = EVER.load(Ordering::Acquire);
    // SAFETY: EVER only ever holds null or a pointer from Box::leak that is never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

#[cold]
fn not_running(func: &'static str) -> Error {
    let kind = match PHASE.load(Ordering::Acquire) {
        FINALIZED => ErrorKind::Finalized,
        _ => ErrorKind::NotInitialized,
    };
    Error::new(pe_for_errors(), func, kind)
}

/// The PE number to put in an error message: this PE's once the bootstrap said it, else the
/// rank the launcher put in the environment (`PMI_RANK`, `PMIX_RANK`, `OXSHMEM_UID_RANK`),
/// else [`crate::error::UNKNOWN_PE`] (`PE ?`): a process that fails before it knows its rank
/// must not claim to be PE 0.
pub fn pe_for_errors() -> usize {
    match MY_PE.load(Ordering::Relaxed) {
        u64::MAX => ["PMI_RANK", "PMIX_RANK", "OXSHMEM_UID_RANK"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok())
            .unwrap_or(crate::error::UNKNOWN_PE),
        pe => pe as usize,
    }
}

/// Whether the runtime is initialized and not finalized.
pub fn initialized() -> bool {
    !RT.load(Ordering::Acquire).is_null()
}

fn host_key() -> (String, String) {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its whole length; gethostname NUL-terminates within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let host = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "localhost".to_string()
    };
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let key = format!("{host}/{}", boot_id.trim());
    (host, key)
}

/// The launcher connection of an init in progress, kept when init fails. Dropping it would
/// close the connection, and a launcher takes a PMI connection closed before `finalize` for a
/// dead PE: Hydra kills the whole job at once, before any PE has printed why its init failed.
/// Kept, the PE reports its error and exits (or aborts through it, [`crate::raw::abort`]).
static INIT_BOOT: std::sync::Mutex<Option<Arc<dyn Bootstrap>>> = std::sync::Mutex::new(None);

/// The launcher connection of a failed init, if any (for [`crate::raw::abort`]).
pub(crate) fn failed_init_boot() -> Option<Arc<dyn Bootstrap>> {
    INIT_BOOT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// What every PE tells every other at init.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PeCard {
    host: String,
    host_key: String,
    pid: u32,
    heap_fd: i32,
    heap_len: usize,
    /// The static-data segment's descriptor and length (-1 and 0 when there is none).
    static_fd: i32,
    static_len: usize,
}

impl PeCard {
    fn encode(&self) -> Vec<u8> {
        format!(
            "{}\n{}\n{}\n{}\n{}\n{}\n{}",
            self.host, self.host_key, self.pid, self.heap_fd, self.heap_len, self.static_fd, self.static_len
        )
        .into_bytes()
    }

    fn decode(b: &[u8]) -> Option<PeCard> {
        let s = std::str::from_utf8(b).ok()?;
        let mut it = s.split('\n');
        Some(PeCard {
            host: it.next()?.to_string(),
            host_key: it.next()?.to_string(),
            pid: it.next()?.parse().ok()?,
            heap_fd: it.next()?.parse().ok()?,
            heap_len: it.next()?.parse().ok()?,
            static_fd: it.next()?.parse().ok()?,
            static_len: it.next()?.parse().ok()?,
        })
    }
}

fn init_runtime(
    requested: ThreadLevel,
    with_static: bool,
    given: Option<Box<dyn Bootstrap>>,
) -> Result<&'static Runtime> {
    const F: &str = "shmem_init";
    let boot: Arc<dyn Bootstrap> = match given {
        Some(b) => b.into(),
        // OXSHMEM_BOOTSTRAP and the launcher's variables, or NVSHMEM_BOOTSTRAP's choice.
        None => crate::config::bootstrap_from_env()
            .map_err(|e| Error::new(pe_for_errors(), F, ErrorKind::Bootstrap(e)))?
            .into(),
    };
    *INIT_BOOT.lock().unwrap_or_else(|p| p.into_inner()) = Some(boot.clone());
    let (me, n) = (boot.rank(), boot.size());
    MY_PE.store(me as u64, Ordering::Relaxed);
    // oshrun's status table for its hang report, where there is one.
    oxshmem_bootstrap::status::attach(me, n, requested == ThreadLevel::Multiple);
    if me == 0 {
        // Unknown OXSHMEM_/SHMEM_/NVSHMEM_ variables, named once for the job.
        crate::config::print_env_warnings();
    }
    let berr = |e: oxshmem_bootstrap::BootstrapError| Error::new(me, F, ErrorKind::Bootstrap(e.to_string()));
    let oserr = |e: String| Error::new(me, F, ErrorKind::Os { call: e, errno: String::new() });

    let config = Config::from_env(me)?;
    // The heap's file holds the user's SHMEM_SYMMETRIC_SIZE bytes and, after them, the
    // runtime's own symmetric objects, so those never take space the user asked for.
    let slots = SlotLayout::new(config.symmetric_size, n);
    let seg_len = config.symmetric_size + slots.total_bytes();
    let (heap_fd, heap_map) = Mapping::create(seg_len, "oxshmem-heap", HEAP_ALIGN).map_err(oserr)?;
    // Static data is captured first thing after the heap, before anything else runs.
    let stat = if with_static { Some(crate::heap::static_data::capture().map_err(oserr)?) } else { None };
    let (host, key) = host_key();
    let card = PeCard {
        host,
        host_key: key,
        pid: std::process::id(),
        heap_fd: heap_fd.as_raw_fd(),
        heap_len: seg_len,
        static_fd: stat.as_ref().map_or(-1, |s| s.0.as_raw_fd()),
        static_len: stat.as_ref().map_or(0, |s| s.2),
    };
    let all = boot.allgather(&card.encode()).map_err(berr)?;
    let cards: Vec<PeCard> = all
        .iter()
        .enumerate()
        .map(|(pe, b)| {
            PeCard::decode(b)
                .ok_or_else(|| Error::new(me, F, ErrorKind::Bootstrap(format!("PE {pe} sent a malformed init record"))))
        })
        .collect::<Result<_>>()?;
    if let Some((pe, c)) = cards.iter().enumerate().find(|(_, c)| c.heap_len != card.heap_len) {
        return Err(Error::new(
            me,
            F,
            ErrorKind::CollectiveMismatch(format!(
                "SHMEM_SYMMETRIC_SIZE differs: this PE has {} bytes, PE {pe} has {} bytes",
                card.heap_len - slots.total_bytes(),
                c.heap_len.saturating_sub(slots.total_bytes())
            )),
        ));
    }

    // Nodes, numbered in order of their first PE: by host key, or by the launcher's placement
    // split further by host key (OXSHMEM_NODES).
    let host_keys: Vec<&str> = cards.iter().map(|c| c.host_key.as_str()).collect();
    let by_host = group_by_host(&host_keys);
    let launcher = match config.nodes {
        NodeGrouping::Host => None,
        NodeGrouping::Launcher => boot.node_mapping(),
        // Shared memory only (OXSHMEM_TRANSPORT=shm), or no network transport in this build:
        // a split that only the launcher sees would make peers on this very host unreachable.
        NodeGrouping::Auto if cfg!(feature = "ofi") && config.transport != TransportChoice::Shm => boot.node_mapping(),
        NodeGrouping::Auto => None,
    };
    let launcher = launcher.filter(|m| m.len() == n);
    let node_of = match &launcher {
        Some(m) => refine(&by_host, m),
        None => by_host.clone(),
    };
    let n_nodes = node_of.iter().max().map_or(0, |&k| k + 1);
    let hosts: Vec<String> = (0..n_nodes)
        .map(|k| {
            let first = node_of.iter().position(|&x| x == k).expect("every node has a PE");
            let host = &cards[first].host;
            match &launcher {
                // Several nodes on one host: say which of the launcher's nodes this is.
                Some(m) if node_of.iter().zip(&by_host).any(|(&x, &h)| x != k && h == by_host[first]) => {
                    format!("{host} (launcher node {})", m[first])
                }
                _ => host.clone(),
            }
        })
        .collect();
    let my_node = node_of[me];
    let local_pes: Vec<usize> = (0..n).filter(|&p| node_of[p] == my_node).collect();
    // More PEs than cores on this host: a waiter that spins only delays the PE it waits for,
    // which needs its core. Unless the user chose, waiters then yield at once. (Not when
    // the launcher bound each PE to a core of its own: yielding there hands the core to any
    // other process for a whole scheduler tick, 1,000 µs a barrier beside one busy process.)
    let mut config = config;
    let cores = crate::config::job_cpus();
    let on_this_host = by_host.iter().filter(|&&h| h == by_host[me]).count();
    if on_this_host > cores
        && crate::config::lookup(crate::config::var_named("OXSHMEM_SPIN")).1 == crate::config::Source::Default
    {
        config.spin = 0;
    }

    // The peer table: every node peer's heap, mapped on first use (see transport/shm.rs);
    // the next PE of the node now, so that a host where mapping fails says so at init.
    let mut shm = ShmTransport::new(n);
    let heap_base = heap_map.addr();
    let heap_len = heap_map.len();
    // Forcing the network path (OXSHMEM_TRANSPORT=ofi) maps no peer: every peer but this PE
    // itself is then reached through the network transport.
    let map_peers = config.transport != TransportChoice::Ofi;
    for &pe in local_pes.iter().filter(|&&p| map_peers || p == me) {
        if pe == me {
            shm.set(pe, 0, heap_base, heap_len);
        } else {
            let c = &cards[pe];
            let what = format!("heap of PE {pe}");
            shm.set_lazy(pe, 0, c.heap_len, PeerSegment { pid: c.pid, fd: c.heap_fd, what });
        }
    }
    shm.keep(heap_map);
    if map_peers && local_pes.len() > 1 {
        let at = local_pes.iter().position(|&p| p == me).expect("this PE is on its node");
        let next = local_pes[(at + 1) % local_pes.len()];
        shm.map_now(next, 0).map_err(|e| Error::new(me, F, ErrorKind::Os { call: e, errno: String::new() }))?;
    }
    if let Some((_, sbase, slen)) = &stat {
        if let Some((pe, c)) = cards.iter().enumerate().find(|(_, c)| c.static_len != *slen) {
            return Err(Error::new(
                me,
                F,
                ErrorKind::CollectiveMismatch(format!(
                    "static data segment differs: this PE's executable has {slen} bytes of writable data, PE {pe}'s has {} (every PE must run the same executable)",
                    c.static_len
                )),
            ));
        }
        for &pe in local_pes.iter().filter(|&&p| map_peers || p == me) {
            if pe == me {
                shm.set(pe, 1, *sbase, *slen);
            } else {
                let c = &cards[pe];
                let what = format!("static data of PE {pe}");
                shm.set_lazy(pe, 1, c.static_len, PeerSegment { pid: c.pid, fd: c.static_fd, what });
            }
        }
    }
    // The peers only a network transport reaches. Whether a network transport is needed at
    // all is the same decision on every PE (it depends on the layout and the environment), as
    // its setup is collective.
    let need: Vec<bool> = (0..n).map(|p| p != me && (node_of[p] != my_node || !map_peers)).collect();
    let net = if n_nodes > 1 || !map_peers {
        let mut segs_net = vec![(heap_base, heap_len)];
        if let Some((_, sb, sl)) = &stat {
            segs_net.push((*sb, *sl));
        }
        match crate::transport::network(&*boot, me, n, &segs_net, &need, &config)? {
            Some(t) => Some(t),
            None => {
                let pe = need.iter().position(|&x| x).unwrap_or(me);
                return Err(Error::new(me, F, ErrorKind::Unreachable { pe, host: hosts[node_of[pe]].clone() }));
            }
        }
    } else {
        None
    };

    if config.show_peers {
        // One write, so that the lines of PEs sharing a pipe do not interleave.
        let line = format!("{}\n", peer_table_line(me, &node_of, &hosts, &shm, net.as_deref()));
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }

    let user_len = config.symmetric_size;
    let heap = Heap::new(heap_base, user_len);
    let teams = Teams::new(n, me, &local_pes);
    let rt = Runtime {
        me,
        n,
        boot,
        config,
        thread_level: requested.min(ThreadLevel::Multiple),
        layout: NodeLayout { node_of, hosts, local_pes },
        heap,
        segs: std::iter::once((heap_base, user_len)).chain(stat.as_ref().map(|s| (s.1, s.2))).collect(),
        shm,
        net,
        slots,
        teams,
        _heap_fd: heap_fd,
        _static_fd: stat.map(|s| s.0),
    };
    Ok(Box::leak(Box::new(rt)))
}

/// Node of every PE by host key, numbered in order of their first PE.
fn group_by_host(keys: &[&str]) -> Vec<usize> {
    let mut seen: Vec<&str> = Vec::new();
    keys.iter()
        .map(|k| match seen.iter().position(|s| s == k) {
            Some(i) => i,
            None => {
                seen.push(k);
                seen.len() - 1
            }
        })
        .collect()
}

/// The groups of PEs that agree on both `a` and `b` (two node numberings), numbered in order
/// of their first PE: the launcher's nodes, split where host keys differ.
fn refine(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut seen: Vec<(usize, usize)> = Vec::new();
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match seen.iter().position(|&s| s == (x, y)) {
            Some(i) => i,
            None => {
                seen.push((x, y));
                seen.len() - 1
            }
        })
        .collect()
}

/// Comma-separated PE numbers, `-` for none.
fn pe_list(pes: impl Iterator<Item = usize>) -> String {
    let v: Vec<String> = pes.map(|p| p.to_string()).collect();
    if v.is_empty() { "-".into() } else { v.join(",") }
}

/// `OXSHMEM_SHOW_PEERS`: this PE's node and which transport reaches each PE, one line:
/// `oxshmem: PE 1: node 1 of 2 (host): shm 1,3; ofi 0,2 (tcp;ofi_rxm ...); unreachable -`.
fn peer_table_line(
    me: usize,
    node_of: &[usize],
    hosts: &[String],
    shm: &ShmTransport,
    net: Option<&dyn crate::transport::Transport>,
) -> String {
    let n = node_of.len();
    let mapped = |p: usize| shm.base(p, 0) != 0;
    let by_net = |p: usize| !mapped(p) && net.is_some_and(|t| t.reaches(p));
    let (net_name, detail) = net.map_or(("net", String::new()), |t| (t.name(), t.detail()));
    format!(
        "oxshmem: PE {me}: node {} of {} ({}): shm {}; {net_name} {}{}; unreachable {}",
        node_of[me],
        hosts.len(),
        hosts[node_of[me]],
        pe_list((0..n).filter(|&p| mapped(p))),
        pe_list((0..n).filter(|&p| by_net(p))),
        if detail.is_empty() { String::new() } else { format!(" ({detail})") },
        pe_list((0..n).filter(|&p| !mapped(p) && !by_net(p))),
    )
}

/// Initializes the runtime; collective. See [`crate::init`]. `boot`: the bootstrap to use (one
/// the caller connected itself, like NVSHMEM's unique-id and MPI-communicator inits), else the
/// one the environment names.
pub(crate) fn init_runtime_checked(
    requested: ThreadLevel,
    with_static: bool,
    boot: Option<Box<dyn Bootstrap>>,
) -> Result<ThreadLevel> {
    const F: &str = "shmem_init";
    match PHASE.compare_exchange(UNINIT, INITIALIZING, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {}
        Err(INITIALIZING) => {
            return Err(Error::new(
                pe_for_errors(),
                F,
                ErrorKind::InvalidArgument("shmem_init called while another thread is initializing".into()),
            ));
        }
        Err(RUNNING) => {
            return Err(Error::new(pe_for_errors(), F, ErrorKind::AlreadyInitialized));
        }
        Err(_) => {
            return Err(Error::new(
                pe_for_errors(),
                F,
                ErrorKind::InvalidArgument("cannot initialize again after shmem_finalize".into()),
            ));
        }
    }
    let rt = match init_runtime(requested, with_static, boot) {
        Ok(rt) => rt,
        Err(e) => {
            PHASE.store(UNINIT, Ordering::Release);
            return Err(e);
        }
    };
    // The runtime holds the connection now.
    INIT_BOOT.lock().unwrap_or_else(|p| p.into_inner()).take();
    EVER.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    RT.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    PHASE.store(RUNNING, Ordering::Release);
    rt.barrier_all_internal(F)?;
    if rt.me == 0 && (rt.config.info || rt.config.print_version) {
        crate::config::print_info(rt.config.info);
    }
    Ok(rt.thread_level)
}

/// Finalizes the runtime; collective. See [`crate::Shmem::finalize`].
pub(crate) fn finalize_runtime() -> Result<()> {
    const F: &str = "shmem_finalize";
    let rt = rt(F)?;
    rt.barrier_all_internal(F)?;
    if PHASE.compare_exchange(RUNNING, FINALIZED, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return Err(Error::new(rt.me, F, ErrorKind::Finalized));
    }
    RT.store(std::ptr::null_mut(), Ordering::Release);
    // A network transport may close only when no peer needs it any more: complete this PE's
    // last operations (the barrier's own signals), wait for every PE to have done so, then close.
    if let Some(net) = &rt.net {
        net.quiet().map_err(|e| Error { func: F, ..e })?;
        rt.boot.barrier().map_err(|e| Error::new(rt.me, F, ErrorKind::Bootstrap(e.to_string())))?;
        net.shutdown();
    }
    // Mappings stay: a thread racing with finalize must not fault; the process is ending.
    rt.boot.finalize().map_err(|e| Error::new(rt.me, F, ErrorKind::Bootstrap(e.to_string())))
}

impl Runtime {
    /// Checks a PE number.
    #[inline(always)]
    pub(crate) fn check_pe(&self, pe: usize, func: &'static str) -> Result<usize> {
        if pe < self.n { Ok(pe) } else { Err(self.pe_error(pe as i128, func)) }
    }

    #[cold]
    pub(crate) fn pe_error(&self, pe: i128, func: &'static str) -> Error {
        Error::new(self.me, func, ErrorKind::PeOutOfRange { pe, n_pes: self.n })
    }

    /// Translates a local address range to its symmetric location.
    #[inline(always)]
    pub(crate) fn translate(&self, addr: usize, len: usize, what: &'static str, func: &'static str) -> Result<SymAddr> {
        for (seg, &(base, slen)) in self.segs.iter().enumerate() {
            let off = addr.wrapping_sub(base);
            if off < slen && len <= slen - off {
                return Ok(SymAddr { seg, offset: off });
            }
        }
        Err(self.not_symmetric(addr, len, what, func))
    }

    #[cold]
    fn not_symmetric(&self, addr: usize, len: usize, what: &'static str, func: &'static str) -> Error {
        Error::new(self.me, func, ErrorKind::NotSymmetric { what, addr, len })
    }

    /// The local address of a symmetric location.
    #[inline(always)]
    pub(crate) fn local_addr(&self, a: SymAddr) -> usize {
        self.segs[a.seg].0 + a.offset
    }

    /// Aborts the job with a message, through the launcher.
    pub(crate) fn abort(&self, code: i32, msg: &str) -> ! {
        ABORTING.store(true, Ordering::Release);
        self.boot.abort(code, msg)
    }
}

/// Set once this process is ending the job (`shmem_global_exit`, a fatal error).
static ABORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process is ending the job: exit handlers must then do nothing collective (an
/// implicit `shmem_finalize` at exit would wait in a barrier for PEs that are being killed,
/// and could let them past a barrier of their own first).
pub fn aborting() -> bool {
    ABORTING.load(Ordering::Acquire)
}

/// Ends the job from any PE with `status` (`shmem_global_exit`).
pub fn global_exit(status: i32) -> ! {
    ABORTING.store(true, Ordering::Release);
    match rt("shmem_global_exit") {
        Ok(rt) => {
            let msg = format!("PE {}: shmem_global_exit({status})", rt.me);
            rt.abort(status, &msg)
        }
        Err(_) => std::process::exit(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_group_in_order_of_first_pe() {
        assert_eq!(group_by_host(&["b", "a", "b", "c", "a"]), [0, 1, 0, 2, 1]);
        assert_eq!(group_by_host(&["x"]), [0]);
    }

    #[test]
    fn launcher_nodes_are_split_by_host() {
        let one_host = [0, 0, 0, 0];
        // Hydra's round-robin over two "hosts" on one machine: two nodes.
        assert_eq!(refine(&one_host, &[0, 1, 0, 1]), [0, 1, 0, 1]);
        assert_eq!(refine(&one_host, &[0, 0, 1, 1]), [0, 0, 1, 1]);
        // A launcher that puts two real hosts into one node cannot make them share memory.
        assert_eq!(refine(&[0, 1, 0, 1], &[0, 0, 0, 0]), [0, 1, 0, 1]);
        assert_eq!(refine(&[0, 0, 1, 1], &[0, 1, 1, 1]), [0, 1, 2, 2]);
    }
}
