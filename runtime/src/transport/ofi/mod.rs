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
//!   operation (the libfabric call and what the caller asked for).
//!
//! This file holds the shared state ([`OfiTransport`] and what its operations and progress
//! thread share); the rest is split along its seams: `settings.rs` (what to build: provider
//! choice, timeout, test hooks — from the environment or set by tests), `init.rs` (opening
//! the endpoint, registering memory, exchanging addresses and keys), `progress.rs`
//! (completion contexts, posting and waiting, bounce slots, the in-flight counters and the
//! progress thread), `ops.rs` (put, get, fence, quiet and the `Transport` impl) and
//! `atomics.rs` (which atomics are native, and the compare-swap emulation of the others).
//! Below them: `fabric.rs` (the libfabric objects), `card.rs` (what PEs exchange at init),
//! `ffi.rs` (the bindings) and `shim.c` (libfabric's inline calls as functions).
//!
//! [`Transport::progress`]: super::Transport::progress

mod atomics;
mod card;
mod fabric;
mod ffi;
mod init;
mod ops;
mod progress;
mod settings;
mod track;

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use atomics::AmoTable;
use card::SegCard;
use fabric::{Fids, ProviderInfo};
use track::{CtxTable, Track};

use super::MAX_SEGMENTS;
use crate::error::{Error, ErrorKind};

/// Bounce slots: registered memory for operands, results and copies of user buffers.
const SLOTS: usize = 64;
/// Bytes per bounce slot: puts up to this size are copied and return at once.
const SLOT_SIZE: usize = 64 << 10;

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
    ///
    /// [`Transport::shutdown`]: super::Transport::shutdown
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
    /// The default context's completion state, which counts every context's operations.
    all: Track,
    /// The created contexts' own.
    ctxs: CtxTable,
    /// The provider orders RMA reads after writes (`FI_ORDER_RMA_RAW`): a read-back proves
    /// delivery.
    read_after_write: bool,
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

impl Drop for OfiTransport {
    fn drop(&mut self) {
        // The progress thread holds the other reference; once it has stopped, the last
        // reference closes the libfabric objects (Fids::drop) and frees the bounce buffer.
        self.inner.stop_progress();
        self.inner.closed.store(true, Ordering::Release);
    }
}

impl Inner {
    fn error(&self, func: &'static str, msg: String) -> Error {
        Error::new(self.me, func, ErrorKind::Transport(msg))
    }

    /// `what` (which names the peer `pe`) did not complete in time.
    fn timed_out(&self, func: &'static str, pe: usize, what: &str) -> Error {
        self.timeout_error(func, pe, &format!("{what} did not complete within"))
    }

    /// The error for an operation that outlasted the timeout: `clause` ("... did not complete
    /// within", "... was refused (FI_EAGAIN) for"), then the timeout; it names `pe` as the culprit.
    fn timeout_error(&self, func: &'static str, pe: usize, clause: &str) -> Error {
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
        self.serial.as_ref().map(Mutex::lock)
    }
}

#[cfg(test)]
mod tests;
