//! The libfabric (OFI) network transport: peers on other hosts — or every peer, with
//! `OXSHMEM_TRANSPORT=ofi` — reached through one reliable-datagram endpoint (`FI_EP_RDM`) per
//! PE with `FI_RMA | FI_ATOMIC`. It owns the libfabric objects of this PE, the peer table
//! (addresses, segment bases, keys) and completion tracking; it never calls into the rest of
//! the runtime.
//!
//! - **Provider**: the first `fi_getinfo` answer (libfabric honours `FI_PROVIDER` itself).
//!   Hints ask for a thread-safe domain and `FI_DELIVERY_COMPLETE`, and give each wish up in
//!   turn when no provider grants it.
//! - **Memory**: each symmetric segment is registered once for remote read/write. Every
//!   `FI_MR_*` bit is honoured: `VIRT_ADDR` — peers target the owner's virtual address (bases
//!   are exchanged), else an offset into the region; `PROV_KEY` — keys are the provider's and
//!   are exchanged, else we ask for `segment + 1`; `ENDPOINT` — regions are bound to the
//!   endpoint and enabled; `LOCAL` — local buffers need a descriptor: sources and destinations
//!   inside a symmetric segment use its region, anything else goes through a registered
//!   bounce buffer; `ALLOCATED` — the segments are mapped before they are registered (on a
//!   NIC that pins them: the whole heap).
//! - **Completion**: every operation asks for a completion; its context says whether a waiter
//!   or the per-peer counters own it. Puts up to `inject_size` are injected, up to one bounce
//!   slot (64 KiB) copied, so both return at once and are counted; longer ones go straight
//!   from the caller's buffer and wait for their own (local) completion. Gets and fetching
//!   atomics wait for theirs. **quiet** means remote completion: it waits until every counted
//!   operation completed — with `FI_DELIVERY_COMPLETE` (asked for, and granted by tcp, rxm,
//!   shm, sockets, rxd) that is delivery — and then does a read-back (an 8-byte `fi_read`,
//!   which `FI_ORDER_RMA_RAW` puts behind the writes) to every peer that got writes whose
//!   delivery nothing else proved: long puts (which wait only for `FI_TRANSMIT_COMPLETE`, so
//!   that consecutive ones pipeline) and, on a provider without delivery-complete, all writes.
//!   **fence** is deferred and per peer: it opens a new epoch, and the next operation to a
//!   peer with operations of an earlier epoch in flight first completes them as quiet would
//!   (no cost where nothing is in flight). A get or fetching atomic does the same for its
//!   peer, so it reads this PE's own earlier writes.
//! - **Progress**: `tcp`, `udp`, `shm` (and `ofi_rxm`) make data progress only when someone
//!   reads the completion queue — on the *target* too, which never learns of one-sided
//!   operations. Callers progress while they wait (blocking calls here, and the runtime's
//!   wait loops through [`Transport::progress`]); a progress thread per PE covers the rest: it
//!   stands back while a caller is inside a blocking call or has polled since it last looked
//!   (one libfabric call of a caller may take longer than any nap: a 1 MiB write's copy into
//!   the socket), polls while completions come, then naps (20–200 µs).
//!   The queue has no wait object: with one, `ofi_rxm` signals an fd per completion (a system
//!   call per operation).
//! - **Atomics**: 32/64-bit `FI_UINT32/64` with `FI_ATOMIC_READ/WRITE`, `FI_SUM`, `FI_BAND`,
//!   `FI_BOR`, `FI_BXOR`, `FI_CSWAP`, each checked with `fi_*atomicvalid` at init; a missing
//!   one is emulated with a compare-swap loop; without compare-swap init fails naming the
//!   provider and the operation.
//! - Every wait ends after `OXSHMEM_TIMEOUT` seconds with an error that names the peer and the
//!   step.

mod card;
mod fabric;
mod ffi;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use card::{Card, SegCard};
use fabric::{Choice, Fids, ProviderInfo};

use super::{AmoOp, MAX_SEGMENTS, SymAddr, Transport, Width};
use crate::error::{Error, ErrorKind, Result};

/// Bounce slots: registered memory for operands, results and copies of user buffers.
const SLOTS: usize = 64;
/// Bytes per bounce slot: puts up to this size are copied and return at once.
const SLOT_SIZE: usize = 64 << 10;

/// Completion context kinds (bits 0..4 of the context value; the libfabric call in bits 4..8,
/// slot + 1 in bits 8..24, the peer from bit 24). Contexts are plain values: we ask for
/// `mode = 0`, so providers never write through them.
const K_COUNTED: u64 = 1;
const K_WAITER: u64 = 2;

/// The libfabric calls that post operations, as error messages name them (the step that failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Write = 1,
    Read = 2,
    Atomic = 3,
    FetchAtomic = 4,
    CompareAtomic = 5,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Write => "fi_write",
            Call::Read => "fi_read",
            Call::Atomic => "fi_atomic",
            Call::FetchAtomic => "fi_fetch_atomic",
            Call::CompareAtomic => "fi_compare_atomic",
        }
    }

    fn from_bits(b: u64) -> Option<Call> {
        [Call::Write, Call::Read, Call::Atomic, Call::FetchAtomic, Call::CompareAtomic]
            .into_iter()
            .find(|c| *c as u64 == b)
    }
}

/// One operation as error messages describe it: the call, the peer, and what the caller asked
/// for — `fi_write to PE 3 (a put of 1048576 bytes at offset 0x1000 of segment 0)`.
struct Step<'a> {
    call: Call,
    pe: usize,
    what: &'a dyn Fn() -> String,
}

impl std::fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} to PE {} ({})", self.call.name(), self.pe, (self.what)())
    }
}

/// How long the progress thread naps when it finds that callers polled since it last looked
/// (or are inside a blocking call): it wakes rarely, so it seldom preempts the polling caller.
const STAND_BACK_NAP: Duration = Duration::from_millis(1);

/// Blocking calls look at the clock (for their timeout) once per this many polls: a poll is
/// about a microsecond, and two clock reads per poll were 5% of an 8-byte put's time.
const CLOCK_EVERY: u32 = 64;

/// A caller inside a blocking call; see `Inner::busy_callers`.
struct Busy<'a>(&'a AtomicU32);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn context(kind: u64, call: Call, pe: usize, slot: Option<usize>) -> *mut c_void {
    (kind | ((call as u64) << 4) | (slot.map_or(0, |s| s as u64 + 1) << 8) | ((pe as u64) << 24)) as *mut c_void
}

/// The fetching atomic operations, in the order of [`AmoTable::fetch`].
const FETCH_OPS: [(ffi::fi_op, &str); 6] = [
    (ffi::FI_ATOMIC_READ, "fetch (FI_ATOMIC_READ)"),
    (ffi::FI_ATOMIC_WRITE, "swap (FI_ATOMIC_WRITE)"),
    (ffi::FI_SUM, "fetch-add (FI_SUM)"),
    (ffi::FI_BAND, "fetch-and (FI_BAND)"),
    (ffi::FI_BOR, "fetch-or (FI_BOR)"),
    (ffi::FI_BXOR, "fetch-xor (FI_BXOR)"),
];

/// Which atomics the provider does natively, per width (index 0: 32-bit, 1: 64-bit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct AmoTable {
    /// Non-fetching `FI_ATOMIC_WRITE` (set).
    write: [bool; 2],
    /// Fetching operations of [`FETCH_OPS`].
    fetch: [[bool; 6]; 2],
    /// `FI_CSWAP`.
    cswap: [bool; 2],
}

/// How to build the transport; [`OfiTransport::new`] reads it from the environment, tests set it.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    choice: Choice,
    /// `OXSHMEM_TIMEOUT`.
    timeout: Duration,
    /// `OXSHMEM_OFI_TEST_BAD_PEER`: corrupt this peer's address before inserting it.
    bad_peer: Option<usize>,
    /// Treat the provider as if it asked for these `FI_MR_*` bits too (tests: `FI_MR_LOCAL`
    /// exercises the bounce paths, `FI_MR_PROV_KEY` the key exchange, on any provider).
    extra_mr_mode: u32,
    /// Reach this PE itself through the network too (tests of a single process).
    self_loop: bool,
    /// Use no native atomic but compare-swap (tests of the emulation).
    emulate_atomics: bool,
    /// How long the progress thread polls after the last traffic before it naps.
    spin: Duration,
    /// `OXSHMEM_SPIN`: polls a blocking call makes before it starts yielding.
    spin_polls: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            choice: Choice::default(),
            timeout: Duration::from_secs(60),
            bad_peer: None,
            extra_mr_mode: 0,
            self_loop: false,
            emulate_atomics: false,
            spin: Duration::from_millis(1),
            spin_polls: 1000,
        }
    }
}

fn env_var(name: &'static str) -> (&'static str, String) {
    match crate::config::VARS.iter().find(|v| v.name == name) {
        Some(v) => (v.name, crate::config::lookup(v).0),
        None => (name, std::env::var(name).unwrap_or_default()),
    }
}

impl Options {
    /// `OXSHMEM_TIMEOUT`, `OXSHMEM_OFI_SRC_ADDR`, `OXSHMEM_OFI_TEST_BAD_PEER`.
    fn from_env(pe: usize) -> Result<Options> {
        let bad = |var: &'static str, value: String, reason: &str| {
            Error::new(pe, "shmem_init", ErrorKind::Config { var, value, reason: reason.into() })
        };
        let (n, v) = env_var("OXSHMEM_TIMEOUT");
        let secs: f64 = v.trim().parse().map_err(|_| bad(n, v.clone(), "expected a number of seconds"))?;
        if !(secs > 0.0 && secs < 1e9) {
            return Err(bad(n, v, "must be a positive number of seconds"));
        }
        let (_, src) = env_var("OXSHMEM_OFI_SRC_ADDR");
        let src_addr = Some(src.trim().to_string()).filter(|s| !s.is_empty()).or_else(hydra_loopback_host);
        let (n, bp) = env_var("OXSHMEM_OFI_TEST_BAD_PEER");
        let bad_peer = match bp.trim() {
            "" => None,
            t => Some(t.parse().map_err(|_| bad(n, bp.clone(), "expected a PE number"))?),
        };
        Ok(Options {
            choice: Choice { provider: None, src_addr },
            timeout: Duration::from_secs_f64(secs),
            bad_peer,
            ..Options::default()
        })
    }
}

/// The host MPICH's Hydra placed this PE on (`MPIR_CVAR_CH3_INTERFACE_HOSTNAME`), when it is a
/// loopback address: `-hosts 127.0.0.2,127.0.0.3` runs several "hosts" on one machine, and
/// each one's endpoints bind to its own address, so that traffic between them really crosses
/// from one address to the other. Real host names are left to the provider.
fn hydra_loopback_host() -> Option<String> {
    let h = std::env::var("MPIR_CVAR_CH3_INTERFACE_HOSTNAME").ok()?;
    let ip: std::net::Ipv4Addr = h.trim().parse().ok()?;
    ip.is_loopback().then(|| ip.to_string())
}

/// A peer as this PE addresses it.
#[derive(Debug, Clone, Copy, Default)]
struct Peer {
    /// Its `fi_addr_t` in our address vector.
    fi_addr: u64,
    /// Whether this transport reaches it.
    reach: bool,
    /// Its segments: `base` is what offsets are added to (its virtual address under
    /// `FI_MR_VIRT_ADDR`, else 0).
    segs: [SegCard; MAX_SEGMENTS],
}

/// A registered local range: its descriptor for `FI_MR_LOCAL` providers.
#[derive(Debug, Clone, Copy)]
struct Local {
    base: usize,
    len: usize,
    desc: *mut c_void,
}

/// The bounce buffer's memory.
struct Bounce {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Bounce {
    fn new(len: usize) -> Option<Bounce> {
        let layout = std::alloc::Layout::from_size_align(len, 4096).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(Bounce { ptr, layout })
    }
}

impl Drop for Bounce {
    fn drop(&mut self) {
        // SAFETY: allocated in Bounce::new with this layout, freed once, after the memory
        // region over it was closed (Inner drops `fids` before `bounce`).
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Everything the operations and the progress thread share.
struct Inner {
    /// The libfabric objects; `None` after [`Transport::shutdown`]. Declared before `bounce`:
    /// the regions close before their memory is freed.
    fids: Mutex<Option<Fids>>,
    bounce: Bounce,
    ep: *mut ffi::fid_ep,
    cq: *mut ffi::fid_cq,
    bounce_desc: *mut c_void,
    prov: ProviderInfo,
    /// This PE's endpoint address, for messages.
    addr_text: String,
    me: usize,
    peers: Box<[Peer]>,
    local: Vec<Local>,
    mr_local: bool,
    amo: AmoTable,
    /// Flags for counted writes and atomics: `FI_COMPLETION`, plus `FI_DELIVERY_COMPLETE`.
    wflags: u64,
    slot_free: AtomicU64,
    slot_done: [AtomicU32; SLOTS],
    slot_err: [AtomicI32; SLOTS],
    slot_msg: [Mutex<String>; SLOTS],
    /// Counted (non-blocking) operations in flight, per peer and in all.
    pending: Box<[AtomicU64]>,
    total: AtomicU64,
    /// Peers with writes whose delivery only a read-back proves (long puts, and every write on
    /// providers without delivery-complete), and whether there is any.
    dirty: Box<[AtomicBool]>,
    any_dirty: AtomicBool,
    /// The provider orders RMA reads after writes (`FI_ORDER_RMA_RAW`): a read-back proves
    /// delivery.
    read_after_write: bool,
    fence_epoch: AtomicU64,
    fence_seen: Box<[AtomicU64]>,
    /// The first counted operation that failed; reported by the next fence or quiet.
    failure: Mutex<Option<String>>,
    timeout: Duration,
    /// Serializes libfabric calls when the domain is not `FI_THREAD_SAFE`.
    serial: Option<Mutex<()>>,
    /// Polls of the queue by callers (a count, not a time: no clock read per poll): the
    /// progress thread stands back while it changes.
    caller_polls: AtomicU64,
    /// Callers inside a blocking call (posting or waiting), which progress by themselves:
    /// the progress thread stands back however long one of their libfabric calls takes (a
    /// 1 MiB write's copy into the socket takes longer than a nap, and a progress
    /// thread that then polls takes the caller's CPU and its lock).
    busy_callers: AtomicU32,
    /// How long the progress thread keeps polling after the last sign of traffic.
    spin: Duration,
    /// Polls a blocking call makes before it yields between polls (`OXSHMEM_SPIN`).
    spin_polls: u32,
    stop: AtomicBool,
    closed: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

// SAFETY: the raw pointers are libfabric objects of a domain opened FI_THREAD_SAFE, or whose
// every call is serialized by `serial`; the bounce memory is shared by slot ownership (a slot
// is touched only by the thread that acquired it until its completion is observed).
unsafe impl Send for Inner {}
// SAFETY: as for Send; every other field is an atomic or a mutex.
unsafe impl Sync for Inner {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The libfabric transport of one PE. See the module documentation.
pub struct OfiTransport {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OfiTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.inner;
        f.debug_struct("OfiTransport")
            .field("pe", &i.me)
            .field("provider", &i.prov.name)
            .field("domain", &i.prov.domain)
            .field("mr_mode", &format_args!("{:#x}", i.prov.mr_mode))
            .field("delivery_complete", &i.prov.delivery_complete)
            .field("msg_order", &format_args!("{:#x}", i.prov.msg_order))
            .field("peers", &i.peers.iter().filter(|p| p.reach).count())
            .finish()
    }
}

/// Progress threads to stop before the process exits, so that none is inside libfabric when
/// its destructors run (a PE may exit without finalize).
static LIVE: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());
static EXIT_HOOK: std::sync::Once = std::sync::Once::new();

extern "C" fn stop_progress_at_exit() {
    let live: Vec<Weak<Inner>> = std::mem::take(&mut *lock(&LIVE));
    for i in live.iter().filter_map(Weak::upgrade) {
        i.stop_progress();
    }
}

/// `sockaddr_in` as `a.b.c.d:port`, anything else as hex (for messages).
fn show_addr(a: &[u8]) -> String {
    if a.len() == 16 && u16::from_ne_bytes([a[0], a[1]]) == libc::AF_INET as u16 {
        return format!("{}.{}.{}.{}:{}", a[4], a[5], a[6], a[7], u16::from_be_bytes([a[2], a[3]]));
    }
    a.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes an address point nowhere: a `sockaddr_in` gets port 1 (nothing listens there), any
/// other format has its bytes inverted.
fn corrupt(a: &mut [u8]) {
    if a.len() == 16 && u16::from_ne_bytes([a[0], a[1]]) == libc::AF_INET as u16 {
        a[2..4].copy_from_slice(&1u16.to_be_bytes());
    } else {
        a.iter_mut().for_each(|b| *b = !*b);
    }
}

impl OfiTransport {
    /// Sets up this PE's endpoint, registers `segments` and exchanges addresses and keys with
    /// every PE through `boot` (collective); peers marked in `need` become reachable.
    pub fn new(
        boot: &dyn oxshmem_bootstrap::Bootstrap,
        me: usize,
        n: usize,
        segments: &[(usize, usize)],
        need: &[bool],
        config: &crate::config::Config,
    ) -> Result<OfiTransport> {
        let opts = Options { spin_polls: config.spin, ..Options::from_env(me)? };
        OfiTransport::with_options(boot, me, n, segments, need, opts)
    }

    /// [`OfiTransport::new`] with explicit options.
    pub(crate) fn with_options(
        boot: &dyn oxshmem_bootstrap::Bootstrap,
        me: usize,
        n: usize,
        segments: &[(usize, usize)],
        need: &[bool],
        opts: Options,
    ) -> Result<OfiTransport> {
        const F: &str = "shmem_init";
        let fail = |m: String| Error::new(me, F, ErrorKind::Transport(format!("ofi: {m}")));
        if segments.len() > MAX_SEGMENTS {
            return Err(fail(format!("{} segments, at most {MAX_SEGMENTS}", segments.len())));
        }
        let (list, mut prov) = fabric::getinfo(&opts.choice).map_err(fail)?;
        // After fi_getinfo: providers may load their libraries then.
        fabric::undo_foreign_crash_handlers();
        prov.mr_mode |= opts.extra_mr_mode;
        let pname = prov.name.clone();
        let fail_p = |m: String| fail(format!("{m} (provider {pname})"));
        let mr = |bit: u32| prov.mr_mode & bit != 0;
        let (virt, prov_key, mr_local) = (mr(ffi::FI_MR_VIRT_ADDR), mr(ffi::FI_MR_PROV_KEY), mr(ffi::FI_MR_LOCAL));
        let mut fids = Fids::new(list, mr(ffi::FI_MR_ENDPOINT));
        fids.open(n).map_err(fail_p)?;

        // One region per symmetric segment, for remote access (and local use under FI_MR_LOCAL).
        let local_access = u64::from(ffi::FI_READ | ffi::FI_WRITE);
        let access = u64::from(ffi::FI_REMOTE_READ | ffi::FI_REMOTE_WRITE) | if mr_local { local_access } else { 0 };
        let mut local = Vec::new();
        let mut mine = Vec::new();
        for (i, &(base, len)) in segments.iter().enumerate() {
            if len == 0 {
                mine.push(SegCard::default());
                continue;
            }
            let (key, desc) = fids
                .register(base, len, access, i as u64 + 1)
                .map_err(|e| fail_p(format!("registering segment {i} ({len} bytes at {base:#x}): {e}")))?;
            local.push(Local { base, len, desc });
            mine.push(SegCard { base: base as u64, len: len as u64, key: if prov_key { key } else { i as u64 + 1 } });
        }
        let bounce = Bounce::new(SLOTS * SLOT_SIZE).ok_or_else(|| fail("cannot allocate the bounce buffer".into()))?;
        let (_, bounce_desc) = fids
            .register(bounce.ptr as usize, SLOTS * SLOT_SIZE, local_access, MAX_SEGMENTS as u64 + 1)
            .map_err(|e| fail_p(format!("registering the bounce buffer: {e}")))?;

        let mut amo = probe_atomics(fids.ep).map_err(fail_p)?;
        if opts.emulate_atomics {
            amo = AmoTable { cswap: amo.cswap, ..AmoTable::default() };
        }

        // Exchange: endpoint address, segment bases and keys.
        let card = Card { provider: prov.name.clone(), addr: fabric::getname(fids.ep).map_err(fail_p)?, segs: mine };
        let addr_text = show_addr(&card.addr);
        let all = boot
            .allgather(&card.encode())
            .map_err(|e| Error::new(me, F, ErrorKind::Bootstrap(format!("ofi address exchange: {e}"))))?;
        let mut peers = vec![Peer::default(); n].into_boxed_slice();
        for pe in 0..n {
            let wanted = if pe == me { opts.self_loop } else { need.get(pe).copied().unwrap_or(false) };
            if !wanted {
                continue;
            }
            let c = all
                .get(pe)
                .and_then(|b| Card::decode(b))
                .ok_or_else(|| fail(format!("PE {pe} sent a malformed address record")))?;
            if c.provider != prov.name {
                return Err(fail(format!(
                    "PE {pe} uses libfabric provider {:?} and this PE {:?}: every PE must use the same (set FI_PROVIDER)",
                    c.provider, prov.name
                )));
            }
            let mut addr = c.addr.clone();
            if opts.bad_peer == Some(pe) {
                corrupt(&mut addr);
            }
            let mut fi_addr = 0u64;
            // SAFETY: the address vector is open; addr holds a whole address of the provider's
            // format (as fi_getname wrote it on the peer, possibly corrupted by the test hook).
            let rc = unsafe { ffi::oxs_av_insert(fids.av, addr.as_ptr().cast(), &mut fi_addr) };
            if rc != 1 {
                return Err(fail_p(format!(
                    "PE {pe}'s endpoint address {} cannot be used: fi_av_insert: {}",
                    show_addr(&addr),
                    if rc < 0 { ffi::strerror(rc as isize) } else { "not inserted".into() }
                )));
            }
            let mut segs = [SegCard::default(); MAX_SEGMENTS];
            for (s, sc) in c.segs.iter().enumerate() {
                segs[s] = SegCard { base: if virt { sc.base } else { 0 }, ..*sc };
            }
            peers[pe] = Peer { fi_addr, reach: true, segs };
        }

        let delivery = prov.delivery_complete;
        let inner = Arc::new(Inner {
            ep: fids.ep,
            cq: fids.cq,
            fids: Mutex::new(Some(fids)),
            bounce,
            bounce_desc,
            addr_text,
            me,
            peers,
            local,
            mr_local,
            amo,
            wflags: u64::from(ffi::FI_COMPLETION) | if delivery { u64::from(ffi::FI_DELIVERY_COMPLETE) } else { 0 },
            slot_free: AtomicU64::new(u64::MAX),
            slot_done: std::array::from_fn(|_| AtomicU32::new(0)),
            slot_err: std::array::from_fn(|_| AtomicI32::new(0)),
            slot_msg: std::array::from_fn(|_| Mutex::new(String::new())),
            pending: (0..n).map(|_| AtomicU64::new(0)).collect(),
            total: AtomicU64::new(0),
            dirty: (0..n).map(|_| AtomicBool::new(false)).collect(),
            any_dirty: AtomicBool::new(false),
            read_after_write: prov.msg_order & ffi::FI_ORDER_RMA_RAW != 0,
            fence_epoch: AtomicU64::new(0),
            fence_seen: (0..n).map(|_| AtomicU64::new(0)).collect(),
            failure: Mutex::new(None),
            timeout: opts.timeout,
            serial: (!prov.thread_safe).then(|| Mutex::new(())),
            caller_polls: AtomicU64::new(0),
            busy_callers: AtomicU32::new(0),
            spin: opts.spin,
            spin_polls: opts.spin_polls,
            stop: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            thread: Mutex::new(None),
            prov,
        });
        if inner.prov.manual_progress {
            let i = Arc::clone(&inner);
            let t = std::thread::Builder::new()
                .name("oxshmem-ofi-progress".into())
                .spawn(move || i.progress_loop())
                .map_err(|e| fail(format!("cannot start the progress thread: {e}")))?;
            *lock(&inner.thread) = Some(t);
            lock(&LIVE).push(Arc::downgrade(&inner));
            // SAFETY: atexit with a valid extern "C" fn that takes no arguments.
            EXIT_HOOK.call_once(|| unsafe {
                libc::atexit(stop_progress_at_exit);
            });
        }
        Ok(OfiTransport { inner })
    }

    /// The provider in use (`tcp;ofi_rxm`).
    pub fn provider(&self) -> &str {
        &self.inner.prov.name
    }
}

/// Which atomics the provider does on `ep` (`fi_atomicvalid(3)`); fails when it cannot even
/// compare-swap, which every other operation could be emulated with.
fn probe_atomics(ep: *mut ffi::fid_ep) -> std::result::Result<AmoTable, String> {
    let valid = |kind: i32, dt: ffi::fi_datatype, op: ffi::fi_op| {
        let mut count = 0usize;
        // SAFETY: ep is an enabled endpoint; count is a valid out-pointer.
        let rc = unsafe { ffi::oxs_atomic_valid(ep, kind, dt as i32, op as i32, &mut count) };
        rc == 0 && count >= 1
    };
    let mut t = AmoTable::default();
    for (w, dt) in [ffi::FI_UINT32, ffi::FI_UINT64].into_iter().enumerate() {
        t.write[w] = valid(0, dt, ffi::FI_ATOMIC_WRITE);
        for (i, (op, _)) in FETCH_OPS.iter().enumerate() {
            t.fetch[w][i] = valid(1, dt, *op);
        }
        t.cswap[w] = valid(2, dt, ffi::FI_CSWAP);
        if !t.cswap[w] {
            return Err(format!(
                "the provider cannot do {}-bit compare-swap (fi_compare_atomicvalid(FI_UINT{}, FI_CSWAP) failed), \
                 which oxshmem needs for its atomics; choose another provider with FI_PROVIDER",
                if w == 0 { 32 } else { 64 },
                if w == 0 { 32 } else { 64 }
            ));
        }
    }
    Ok(t)
}

impl Inner {
    fn error(&self, func: &'static str, msg: String) -> Error {
        Error::new(self.me, func, ErrorKind::Transport(msg))
    }

    /// `what` (which names the peer `pe`) did not complete in time.
    fn timed_out(&self, func: &'static str, pe: usize, what: &str) -> Error {
        self.late(func, pe, &format!("{what} did not complete within"))
    }

    /// `clause` ("... did not complete within") the timeout: the error names `pe` as the culprit.
    fn late(&self, func: &'static str, pe: usize, clause: &str) -> Error {
        self.error(
            func,
            format!(
                "{clause} {:?} (OXSHMEM_TIMEOUT): PE {pe} is unreachable, dead or not making progress \
                 (provider {})",
                self.timeout, self.prov.name
            ),
        )
    }

    fn guard(&self) -> Option<MutexGuard<'_, ()>> {
        self.serial.as_ref().map(lock)
    }

    /// Reads the completion queue once on behalf of a caller (not the progress thread);
    /// returns how many entries it handled.
    fn progress(&self) -> usize {
        self.caller_polls.fetch_add(1, Ordering::Relaxed);
        self.poll_cq()
    }

    /// Reads the completion queue once; returns how many entries it handled.
    fn poll_cq(&self) -> usize {
        let mut ctx = [null_mut::<c_void>(); 32];
        let n = {
            let _g = self.guard();
            // SAFETY: the queue is open (operations stop before shutdown closes it); ctx has
            // room for ctx.len() contexts.
            unsafe { ffi::oxs_cq_read(self.cq, ctx.as_mut_ptr(), ctx.len()) }
        };
        self.handle(n, &ctx)
    }

    fn handle(&self, n: isize, ctx: &[*mut c_void]) -> usize {
        if n > 0 {
            for &c in &ctx[..n as usize] {
                self.complete(c as u64, None);
            }
            return n as usize;
        }
        if n == -(ffi::FI_EAVAIL as isize) {
            self.read_error();
            return 1;
        }
        0
    }

    fn read_error(&self) {
        let mut ctx = null_mut::<c_void>();
        let (mut err, mut perr) = (0i32, 0i32);
        let mut msg = [0 as std::os::raw::c_char; 256];
        let rc = {
            let _g = self.guard();
            // SAFETY: the queue is open; every out-pointer is valid; msg has msg.len() bytes.
            unsafe { ffi::oxs_cq_readerr(self.cq, &mut ctx, &mut err, &mut perr, msg.as_mut_ptr(), msg.len()) }
        };
        if rc > 0 {
            // SAFETY: oxs_cq_readerr NUL-terminated msg (snprintf).
            let text = unsafe { ffi::cstr(msg.as_ptr()) };
            self.complete(ctx as u64, Some((err.max(1), text)));
        }
    }

    /// Records the completion of the operation whose context is `c`.
    fn complete(&self, c: u64, err: Option<(i32, String)>) {
        let kind = c & 0xf;
        let call = Call::from_bits((c >> 4) & 0xf).map_or("an operation", Call::name);
        let slot = ((c >> 8) & 0xffff) as usize;
        let pe = (c >> 24) as usize;
        match kind {
            K_COUNTED => {
                if let Some((_, m)) = &err {
                    lock(&self.failure).get_or_insert_with(|| format!("an earlier {call} to PE {pe} failed: {m}"));
                }
                if (1..=SLOTS).contains(&slot) {
                    self.release(slot - 1);
                }
                if let Some(p) = self.pending.get(pe) {
                    p.fetch_sub(1, Ordering::Release);
                }
                self.total.fetch_sub(1, Ordering::Release);
            }
            K_WAITER if (1..=SLOTS).contains(&slot) => {
                let s = slot - 1;
                if let Some((e, m)) = err {
                    *lock(&self.slot_msg[s]) = m;
                    self.slot_err[s].store(e, Ordering::Relaxed);
                }
                self.slot_done[s].store(1, Ordering::Release);
            }
            _ => {}
        }
    }

    /// The progress thread: polls the completion queue while there are completions, then
    /// naps in growing steps (20 µs to 200 µs), and stands back while a caller polls (a
    /// blocking call, or the runtime's wait loops through [`Transport::progress`]).
    ///
    /// The queue has no wait object on purpose: with one, `ofi_rxm` signals an fd on every
    /// completion (a system call per operation, 1-2 µs here), `fi_cq_sread` crashes on
    /// `udp;ofi_rxd` 1.17 and ignores its timeout on `shm`. The price is that a PE busy outside
    /// the runtime serves one-sided operations aimed at it once per nap.
    fn progress_loop(&self) {
        let mut last = Instant::now();
        let mut naps = 0u32;
        let mut seen = self.caller_polls.load(Ordering::Relaxed);
        while !self.stop.load(Ordering::Acquire) {
            let polls = self.caller_polls.load(Ordering::Relaxed);
            if self.busy_callers.load(Ordering::Relaxed) > 0 || polls != seen {
                seen = polls;
                std::thread::sleep(STAND_BACK_NAP);
                last = Instant::now();
                continue;
            }
            if self.poll_cq() > 0 {
                last = Instant::now();
                naps = 0;
                continue;
            }
            if last.elapsed() < self.spin {
                std::hint::spin_loop();
                continue;
            }
            naps = naps.saturating_add(1);
            std::thread::sleep(Duration::from_micros(if naps < 50 { 20 } else { 200 }));
        }
    }

    /// Counts this caller in [`Self::busy_callers`] until the guard drops.
    fn busy(&self) -> Busy<'_> {
        self.busy_callers.fetch_add(1, Ordering::Relaxed);
        Busy(&self.busy_callers)
    }

    fn stop_progress(&self) {
        self.stop.store(true, Ordering::Release);
        let t = lock(&self.thread).take();
        if let Some(t) = t
            && t.thread().id() != std::thread::current().id()
        {
            let _ = t.join();
        }
    }

    /// Posts with `f` until it does not answer `-FI_EAGAIN` (progressing meanwhile).
    fn post(&self, func: &'static str, step: &Step<'_>, mut f: impl FnMut() -> isize) -> Result<()> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(self.error(func, "the transport has been shut down (shmem_finalize)".into()));
        }
        // A caller is active: the progress thread stands back (it would take this
        // operation's completion from under the caller, and contend for the queue's lock).
        self.caller_polls.fetch_add(1, Ordering::Relaxed);
        let _busy = self.busy();
        let start = Instant::now();
        loop {
            let rc = {
                let _g = self.guard();
                f()
            };
            if rc == 0 {
                return Ok(());
            }
            if rc != -(ffi::FI_EAGAIN as isize) {
                return Err(self.error(func, format!("{step} failed: {}", ffi::strerror(rc))));
            }
            self.progress();
            if start.elapsed() > self.timeout {
                return Err(self.late(func, step.pe, &format!("{step} was refused (FI_EAGAIN) for")));
            }
            std::thread::yield_now();
        }
    }

    /// Progresses until `cond` holds, or fails naming `pe` and `what` after the timeout.
    fn wait_until(
        &self,
        func: &'static str,
        pe: usize,
        what: &dyn Fn() -> String,
        cond: impl Fn() -> bool,
    ) -> Result<()> {
        if cond() {
            return Ok(());
        }
        let _busy = self.busy();
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            self.progress();
            if cond() {
                return Ok(());
            }
            // Poll as the runtime's waiters do (OXSHMEM_SPIN polls, 0 when the host runs
            // more PEs than cores), then let other processes run between polls.
            spins = spins.saturating_add(1);
            if spins > self.spin_polls {
                std::thread::yield_now();
            }
            if spins.is_multiple_of(CLOCK_EVERY) && start.elapsed() > self.timeout {
                return Err(self.timed_out(func, pe, &what()));
            }
        }
    }

    fn acquire(&self, func: &'static str, pe: usize) -> Result<usize> {
        let start = Instant::now();
        loop {
            let m = self.slot_free.load(Ordering::Acquire);
            if m != 0 {
                let b = m.trailing_zeros() as usize;
                if self.slot_free.compare_exchange_weak(m, m & !(1 << b), Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                    return Ok(b);
                }
                continue;
            }
            self.progress();
            if start.elapsed() > self.timeout {
                return Err(self.late(
                    func,
                    pe,
                    &format!("an operation to PE {pe} found every bounce buffer held by earlier operations for"),
                ));
            }
            std::thread::yield_now();
        }
    }

    fn release(&self, s: usize) {
        self.slot_free.fetch_or(1 << s, Ordering::Release);
    }

    fn slot_ptr(&self, s: usize) -> *mut u8 {
        // SAFETY: s < SLOTS, so the offset stays inside the bounce allocation.
        unsafe { self.bounce.ptr.add(s * SLOT_SIZE) }
    }

    /// Posts one counted operation to `pe` (completed by quiet); `slot` is released when it
    /// completes.
    fn post_counted(
        &self,
        func: &'static str,
        step: &Step<'_>,
        slot: Option<usize>,
        mut f: impl FnMut(*mut c_void) -> isize,
    ) -> Result<()> {
        let pe = step.pe;
        // Counted before posting: the completion may be read by another thread at once.
        self.pending[pe].fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
        let c = context(K_COUNTED, step.call, pe, slot);
        if let Err(e) = self.post(func, step, || f(c)) {
            self.pending[pe].fetch_sub(1, Ordering::Relaxed);
            self.total.fetch_sub(1, Ordering::Relaxed);
            if let Some(s) = slot {
                self.release(s);
            }
            return Err(e);
        }
        if !self.prov.delivery_complete {
            self.mark_dirty(pe);
        }
        Ok(())
    }

    /// `pe` has writes whose delivery only a read-back proves.
    fn mark_dirty(&self, pe: usize) {
        self.dirty[pe].store(true, Ordering::Relaxed);
        self.any_dirty.store(true, Ordering::Release);
    }

    /// Posts one operation to `pe` and waits for its completion; `post` gets the context and
    /// a bounce slot it may use, `read` reads the result from the slot afterwards.
    fn blocking<R>(
        &self,
        func: &'static str,
        step: &Step<'_>,
        mut post: impl FnMut(*mut c_void, usize) -> isize,
        read: impl FnOnce(usize) -> R,
    ) -> Result<R> {
        let pe = step.pe;
        let s = self.acquire(func, pe)?;
        self.slot_done[s].store(0, Ordering::Relaxed);
        self.slot_err[s].store(0, Ordering::Relaxed);
        let c = context(K_WAITER, step.call, pe, Some(s));
        if let Err(e) = self.post(func, step, || post(c, s)) {
            self.release(s);
            return Err(e);
        }
        // On a timeout the slot stays taken: the operation may still complete into it.
        let text = || step.to_string();
        self.wait_until(func, pe, &text, || self.slot_done[s].load(Ordering::Acquire) != 0)?;
        let r = match self.slot_err[s].load(Ordering::Relaxed) {
            0 => Ok(read(s)),
            _ => Err(self.error(func, format!("{step} failed: {}", lock(&self.slot_msg[s])))),
        };
        self.release(s);
        r
    }

    /// Completes every operation in flight to `pe` (remotely).
    fn settle(&self, func: &'static str, pe: usize) -> Result<()> {
        if self.pending[pe].load(Ordering::Acquire) != 0 {
            let what = || {
                format!(
                    "the {} earlier fi_write/fi_atomic to PE {pe} still in flight (waiting for their remote completion)",
                    self.pending[pe].load(Ordering::Relaxed)
                )
            };
            self.wait_until(func, pe, &what, || self.pending[pe].load(Ordering::Acquire) == 0)?;
        }
        if self.dirty[pe].swap(false, Ordering::AcqRel) {
            self.read_back(func, pe)?;
        }
        Ok(())
    }

    /// An 8-byte read of `pe`'s heap, ordered behind this PE's writes to it by the provider's
    /// read-after-write ordering: when it returns, they have been delivered.
    fn read_back(&self, func: &'static str, pe: usize) -> Result<()> {
        let (fa, ra, key) = self.remote(func, pe, SymAddr { seg: 0, offset: 0 }, 8)?;
        let what = || "an 8-byte read-back proving delivery of earlier writes".to_string();
        self.blocking(
            func,
            &Step { call: Call::Read, pe, what: &what },
            // SAFETY: the slot is ours and registered (bounce_desc); 8 bytes fit.
            |c, s| unsafe { ffi::oxs_read(self.ep, self.slot_ptr(s).cast(), 8, self.bounce_desc, fa, ra, key, c, 0) },
            |_| (),
        )
    }

    /// The deferred fence: the first operation to `pe` after a fence waits for the
    /// operations to `pe` still in flight from before it.
    fn fence_point(&self, func: &'static str, pe: usize) -> Result<()> {
        let e = self.fence_epoch.load(Ordering::Acquire);
        if self.fence_seen[pe].load(Ordering::Relaxed) != e {
            self.settle(func, pe)?;
            self.fence_seen[pe].store(e, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `pe`'s address, the remote address of `a` and the key, after checking `len` bytes fit.
    fn remote(&self, func: &'static str, pe: usize, a: SymAddr, len: usize) -> Result<(u64, u64, u64)> {
        let p = self
            .peers
            .get(pe)
            .filter(|p| p.reach)
            .ok_or_else(|| self.error(func, format!("PE {pe} is not reached through this transport")))?;
        let s = p
            .segs
            .get(a.seg)
            .filter(|s| s.len > 0)
            .ok_or_else(|| self.error(func, format!("PE {pe} has no symmetric segment {}", a.seg)))?;
        if (a.offset as u64).checked_add(len as u64).is_none_or(|e| e > s.len) {
            return Err(self.error(
                func,
                format!(
                    "offset {:#x} (+{len} bytes) lies outside PE {pe}'s segment {} ({} bytes)",
                    a.offset, a.seg, s.len
                ),
            ));
        }
        Ok((p.fi_addr, s.base + a.offset as u64, s.key))
    }

    /// The descriptor of the registered segment holding `[p, p+len)`, if any.
    fn local_desc(&self, p: usize, len: usize) -> Option<*mut c_void> {
        self.local.iter().find(|l| p >= l.base && p - l.base <= l.len && len <= l.len - (p - l.base)).map(|l| l.desc)
    }

    fn put(&self, func: &'static str, pe: usize, dst: SymAddr, src: &[u8]) -> Result<()> {
        let len = src.len();
        if len == 0 {
            return Ok(());
        }
        let (fa, ra, key) = self.remote(func, pe, dst, len)?;
        self.fence_point(func, pe)?;
        let what = || format!("a put of {len} bytes to offset {:#x} of segment {}", dst.offset, dst.seg);
        let step = Step { call: Call::Write, pe, what: &what };
        let mut off = 0;
        while off < len {
            let rest = len - off;
            let p = src[off..].as_ptr();
            let at = ra + off as u64;
            if rest <= self.prov.inject_size {
                let flags = self.wflags | u64::from(ffi::FI_INJECT);
                // SAFETY: p is valid for rest bytes; injected data is copied before the call
                // returns, so the source may be reused at once and needs no descriptor.
                self.post_counted(func, &step, None, |c| unsafe {
                    ffi::oxs_write(self.ep, p.cast(), rest, null_mut(), fa, at, key, c, flags)
                })?;
                off += rest;
            } else if rest <= SLOT_SIZE || (self.mr_local && self.local_desc(p as usize, rest).is_none()) {
                let chunk = rest.min(SLOT_SIZE);
                let s = self.acquire(func, pe)?;
                // SAFETY: the slot is ours until the completion releases it; p is valid for
                // chunk bytes and does not overlap the bounce buffer.
                unsafe { std::ptr::copy_nonoverlapping(p, self.slot_ptr(s), chunk) };
                // SAFETY: the slot holds the data until the completion; bounce_desc covers it.
                self.post_counted(func, &step, Some(s), |c| unsafe {
                    ffi::oxs_write(
                        self.ep,
                        self.slot_ptr(s).cast(),
                        chunk,
                        self.bounce_desc,
                        fa,
                        at,
                        key,
                        c,
                        self.wflags,
                    )
                })?;
                off += chunk;
            } else {
                // Long: straight from the caller's buffer, which must stay untouched until the
                // write completes — so wait for it. Only for its local completion where the
                // provider orders reads after writes: the kernel or NIC then pipelines
                // consecutive puts, and the next quiet or fence proves delivery by a read-back.
                let chunk = rest.min(self.prov.max_msg_size);
                let desc = self.local_desc(p as usize, chunk).unwrap_or(null_mut());
                let flags = if self.read_after_write {
                    u64::from(ffi::FI_COMPLETION | ffi::FI_TRANSMIT_COMPLETE)
                } else {
                    self.wflags
                };
                self.blocking(
                    func,
                    &step,
                    // SAFETY: p is valid for chunk bytes until we return, after completion.
                    |c, _| unsafe { ffi::oxs_write(self.ep, p.cast(), chunk, desc, fa, at, key, c, flags) },
                    |_| (),
                )?;
                if self.read_after_write || !self.prov.delivery_complete {
                    self.mark_dirty(pe);
                }
                off += chunk;
            }
        }
        Ok(())
    }

    fn get(&self, func: &'static str, pe: usize, src: SymAddr, dst: &mut [u8]) -> Result<()> {
        let len = dst.len();
        if len == 0 {
            return Ok(());
        }
        let (fa, ra, key) = self.remote(func, pe, src, len)?;
        self.settle(func, pe)?;
        let what = || format!("a get of {len} bytes from offset {:#x} of segment {}", src.offset, src.seg);
        let step = Step { call: Call::Read, pe, what: &what };
        let mut off = 0;
        while off < len {
            let rest = len - off;
            let p = dst[off..].as_mut_ptr();
            let at = ra + off as u64;
            let desc = if self.mr_local { self.local_desc(p as usize, rest) } else { Some(null_mut()) };
            match desc {
                Some(desc) => {
                    let chunk = rest.min(self.prov.max_msg_size);
                    self.blocking(
                        func,
                        &step,
                        // SAFETY: p is valid for chunk bytes and not otherwise accessed until
                        // the read completed, before we return.
                        |c, _| unsafe { ffi::oxs_read(self.ep, p.cast(), chunk, desc, fa, at, key, c, 0) },
                        |_| (),
                    )?;
                    off += chunk;
                }
                None => {
                    let chunk = rest.min(SLOT_SIZE);
                    self.blocking(
                        func,
                        &step,
                        // SAFETY: the slot is ours and registered; chunk <= SLOT_SIZE.
                        |c, s| unsafe {
                            ffi::oxs_read(self.ep, self.slot_ptr(s).cast(), chunk, self.bounce_desc, fa, at, key, c, 0)
                        },
                        // SAFETY: the read completed into the slot; p is valid for chunk bytes.
                        |s| unsafe { std::ptr::copy_nonoverlapping(self.slot_ptr(s), p, chunk) },
                    )?;
                    off += chunk;
                }
            }
        }
        Ok(())
    }

    fn atomic(&self, func: &'static str, pe: usize, dst: SymAddr, width: Width, op: AmoOp) -> Result<u64> {
        let bytes = width.bytes();
        let (w, dt, mask) = match width {
            Width::W32 => (0, ffi::FI_UINT32, u64::from(u32::MAX)),
            Width::W64 => (1, ffi::FI_UINT64, u64::MAX),
        };
        let (fa, ra, key) = self.remote(func, pe, dst, bytes)?;
        self.fence_point(func, pe)?;
        let what = || format!("a {}-bit atomic {op:?} at offset {:#x} of segment {}", bytes * 8, dst.offset, dst.seg);

        if let AmoOp::Set(v) = op
            && self.amo.write[w]
        {
            // Not FI_INJECT: ofi_rxm 1.17 writes no completion for an injected atomic, and
            // quiet counts on one. The operand rides in a bounce slot instead.
            let operand = (v & mask).to_ne_bytes();
            let s = self.acquire(func, pe)?;
            // SAFETY: the slot is ours until the completion releases it.
            unsafe { std::ptr::copy_nonoverlapping(operand.as_ptr(), self.slot_ptr(s), bytes) };
            let step = Step { call: Call::Atomic, pe, what: &what };
            // SAFETY: the slot holds the operand until the completion; it is registered.
            self.post_counted(func, &step, Some(s), |c| unsafe {
                ffi::oxs_atomic(
                    self.ep,
                    self.slot_ptr(s).cast(),
                    self.bounce_desc,
                    fa,
                    ra,
                    key,
                    dt as i32,
                    ffi::FI_ATOMIC_WRITE as i32,
                    c,
                    self.wflags,
                )
            })?;
            return Ok(0);
        }

        // A fetching operation reads this PE's own earlier writes to the peer.
        self.settle(func, pe)?;
        let target = Target { func, pe, fa, ra, key, w, dt };
        let (i, operand) = match op {
            AmoOp::CompareSwap { cond, value } => return self.cswap(&target, cond & mask, value & mask, &what),
            AmoOp::Fetch => (0, 0),
            AmoOp::Set(x) | AmoOp::Swap(x) => (1, x),
            AmoOp::FetchAdd(x) => (2, x),
            AmoOp::FetchAnd(x) => (3, x),
            AmoOp::FetchOr(x) => (4, x),
            AmoOp::FetchXor(x) => (5, x),
        };
        if self.amo.fetch[w][i] {
            return self.fetch_amo(&target, FETCH_OPS[i].0, operand & mask, &what);
        }
        // Emulated with compare-swap: read, compute, swap in if unchanged, else retry.
        let mut cur = if self.amo.fetch[w][0] {
            self.fetch_amo(&target, ffi::FI_ATOMIC_READ, 0, &what)?
        } else {
            // Compare-swap 0 for 0 reads without changing anything.
            self.cswap(&target, 0, 0, &what)?
        };
        if matches!(op, AmoOp::Fetch) {
            return Ok(cur);
        }
        loop {
            let new = match op {
                AmoOp::Set(x) | AmoOp::Swap(x) => x,
                AmoOp::FetchAdd(x) => cur.wrapping_add(x),
                AmoOp::FetchAnd(x) => cur & x,
                AmoOp::FetchOr(x) => cur | x,
                AmoOp::FetchXor(x) => cur ^ x,
                AmoOp::Fetch | AmoOp::CompareSwap { .. } => unreachable!("handled above"),
            } & mask;
            let old = self.cswap(&target, cur, new, &what)?;
            if old == cur {
                return Ok(old);
            }
            cur = old;
        }
    }

    fn fetch_amo(&self, t: &Target, op: ffi::fi_op, operand: u64, what: &dyn Fn() -> String) -> Result<u64> {
        let bytes = if t.w == 0 { 4 } else { 8 };
        self.blocking(
            t.func,
            &Step { call: Call::FetchAtomic, pe: t.pe, what },
            |c, s| {
                let p = self.slot_ptr(s);
                // SAFETY: the slot is ours; operand at +0, result at +16, both registered.
                unsafe {
                    std::ptr::copy_nonoverlapping(operand.to_ne_bytes().as_ptr(), p, bytes);
                    ffi::oxs_fetch_atomic(
                        self.ep,
                        p.cast(),
                        self.bounce_desc,
                        p.add(16).cast(),
                        self.bounce_desc,
                        t.fa,
                        t.ra,
                        t.key,
                        t.dt as i32,
                        op as i32,
                        c,
                        0,
                    )
                }
            },
            |s| self.read_result(s, bytes),
        )
    }

    fn cswap(&self, t: &Target, cond: u64, value: u64, what: &dyn Fn() -> String) -> Result<u64> {
        let bytes = if t.w == 0 { 4 } else { 8 };
        self.blocking(
            t.func,
            &Step { call: Call::CompareAtomic, pe: t.pe, what },
            |c, s| {
                let p = self.slot_ptr(s);
                // SAFETY: the slot is ours; operand at +0, compare at +8, result at +16.
                unsafe {
                    std::ptr::copy_nonoverlapping(value.to_ne_bytes().as_ptr(), p, bytes);
                    std::ptr::copy_nonoverlapping(cond.to_ne_bytes().as_ptr(), p.add(8), bytes);
                    ffi::oxs_compare_atomic(
                        self.ep,
                        p.cast(),
                        self.bounce_desc,
                        p.add(8).cast(),
                        self.bounce_desc,
                        p.add(16).cast(),
                        self.bounce_desc,
                        t.fa,
                        t.ra,
                        t.key,
                        t.dt as i32,
                        ffi::FI_CSWAP as i32,
                        c,
                        0,
                    )
                }
            },
            |s| self.read_result(s, bytes),
        )
    }

    fn read_result(&self, s: usize, bytes: usize) -> u64 {
        let mut b = [0u8; 8];
        // SAFETY: the operation completed into the slot's result field (+16).
        unsafe { std::ptr::copy_nonoverlapping(self.slot_ptr(s).add(16), b.as_mut_ptr(), bytes) };
        if bytes == 4 { u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])) } else { u64::from_ne_bytes(b) }
    }

    fn take_failure(&self, func: &'static str) -> Result<()> {
        match lock(&self.failure).take() {
            Some(m) => Err(self.error(func, m)),
            None => Ok(()),
        }
    }

    fn quiet(&self) -> Result<()> {
        const F: &str = "shmem_quiet";
        if self.total.load(Ordering::Acquire) != 0 {
            let what = || format!("the {} fi_write/fi_atomic in flight (quiet)", self.total.load(Ordering::Relaxed));
            let start = Instant::now();
            let cond = || self.total.load(Ordering::Acquire) == 0;
            // Name the first peer still owing completions when the wait times out.
            if let Err(e) = self.wait_until(F, self.me, &what, cond) {
                let stuck = self.pending.iter().position(|p| p.load(Ordering::Relaxed) != 0);
                return Err(match stuck {
                    Some(pe) => self.timed_out(
                        F,
                        pe,
                        &format!(
                            "the {} fi_write/fi_atomic to PE {pe} in flight (quiet, after {:?})",
                            self.pending[pe].load(Ordering::Relaxed),
                            start.elapsed()
                        ),
                    ),
                    None => e,
                });
            }
        }
        if self.any_dirty.swap(false, Ordering::AcqRel) {
            for pe in 0..self.dirty.len() {
                if self.dirty[pe].swap(false, Ordering::AcqRel) {
                    self.read_back(F, pe)?;
                }
            }
        }
        self.take_failure(F)
    }
}

/// Where an atomic goes, and for which routine.
struct Target {
    func: &'static str,
    pe: usize,
    fa: u64,
    ra: u64,
    key: u64,
    w: usize,
    dt: ffi::fi_datatype,
}

impl Transport for OfiTransport {
    fn name(&self) -> &'static str {
        "ofi"
    }

    fn detail(&self) -> String {
        let i = &self.inner;
        format!("{}, domain {}, endpoint {}", i.prov.name, i.prov.domain, i.addr_text)
    }

    fn reaches(&self, pe: usize) -> bool {
        self.inner.peers.get(pe).is_some_and(|p| p.reach)
    }

    fn put(&self, func: &'static str, pe: usize, dst: SymAddr, src: &[u8]) -> Result<()> {
        self.inner.put(func, pe, dst, src)
    }

    fn get(&self, func: &'static str, pe: usize, src: SymAddr, dst: &mut [u8]) -> Result<()> {
        self.inner.get(func, pe, src, dst)
    }

    fn atomic(&self, func: &'static str, pe: usize, dst: SymAddr, width: Width, op: AmoOp) -> Result<u64> {
        self.inner.atomic(func, pe, dst, width, op)
    }

    fn fence(&self) -> Result<()> {
        self.inner.fence_epoch.fetch_add(1, Ordering::AcqRel);
        self.inner.take_failure("shmem_fence")
    }

    fn quiet(&self) -> Result<()> {
        self.inner.quiet()
    }

    fn progress(&self) {
        if !self.inner.closed.load(Ordering::Relaxed) {
            self.inner.progress();
        }
    }

    fn shutdown(&self) {
        self.inner.stop_progress();
        self.inner.closed.store(true, Ordering::Release);
        if let Some(mut f) = lock(&self.inner.fids).take() {
            f.close();
        }
    }
}

impl Drop for OfiTransport {
    fn drop(&mut self) {
        // The progress thread holds the other reference; once it has stopped, the last
        // reference closes the libfabric objects (Fids::drop) and frees the bounce buffer.
        self.inner.stop_progress();
        self.inner.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
