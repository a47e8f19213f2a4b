//! The proxy channel (NVSHMEM's IBRC path): device threads write fixed-size requests into a
//! ring in memory the device can reach, and one host proxy thread per PE drains it in order,
//! executing each request through the host runtime (whatever transport reaches the peer), and
//! advancing the ring's `completed` count, which device threads read to implement `quiet` and
//! to collect the results of fetching operations.
//!
//! The proxy executes requests strictly in ticket order, so requests of one thread to one PE
//! stay ordered (`fence` costs nothing) and a put followed by its signal lands in that order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::ring::{Ring, RingBox, Stalled};
use super::sync::Pacing;
use crate::state::{DeviceState, ErrorCode, op};
use oxshmem::transport::AmoOp;

/// Request kinds ([`Request::kind`]).
pub mod kind {
    /// A put: `len` bytes from `local` to `dest` on `pe`.
    pub const PUT: u16 = 1;
    /// A get: `len` bytes from `dest` on `pe` to `local`.
    pub const GET: u16 = 2;
    /// A single store of `len` bytes of `value` at `dest` on `pe`.
    pub const P: u16 = 3;
    /// An atomic on `dest` on `pe` ([`amo`](super::amo) flags; the old value to `local`).
    pub const AMO: u16 = 4;
    /// A put followed by a signal update (`sig`, `value`; `flags`: the signal op).
    pub const PUT_SIGNAL: u16 = 5;
    /// A signal update alone (`flags`: 0 set, else add).
    pub const SIGNAL_OP: u16 = 6;
}

/// Request flags that any kind may carry beside its own.
pub mod flag {
    /// The result (a get of at most 8 bytes, a fetching AMO's old value) lands in the request's
    /// own ring slot: the producer sets `local` to the slot's `body.value` when it publishes
    /// (so the result lives in the ring's host-visible memory, never in a device thread's
    /// local memory, which a host proxy cannot reach on a GPU), and the consumer completes the
    /// ticket holding the slot ([`HELD`](super::super::ring::HELD)) until the producer has read
    /// the value and released it.
    pub const HOLD: u16 = 0x8000;
}

/// How an AMO request's `flags` encode the operation: the operation in the low 4 bits
/// ([`OP_MASK`](amo::OP_MASK)), [`W64`](amo::W64) set for a 64-bit word (else 32-bit).
pub mod amo {
    /// Fetch (atomic read).
    pub const FETCH: u16 = 0;
    /// Set (`value`).
    pub const SET: u16 = 1;
    /// Swap (`value`).
    pub const SWAP: u16 = 2;
    /// Compare-and-swap (`cond`, `value`).
    pub const COMPARE_SWAP: u16 = 3;
    /// Fetch-and-add (`value`).
    pub const FETCH_ADD: u16 = 4;
    /// Fetch-and-and (`value`).
    pub const FETCH_AND: u16 = 5;
    /// Fetch-and-or (`value`).
    pub const FETCH_OR: u16 = 6;
    /// Fetch-and-xor (`value`).
    pub const FETCH_XOR: u16 = 7;
    /// The bits that hold the operation.
    pub const OP_MASK: u16 = 0xf;
    /// Set for a 64-bit target word.
    pub const W64: u16 = 0x10;
}

/// A request: 56 bytes, so that with its sequence word a slot is one 64-byte line
/// (C: `oxshmem_proxy_request_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Request {
    /// A [`kind`] constant.
    pub kind: u16,
    /// AMO: operation (low 4 bits) and 64-bit width (bit 4), see [`amo`]; signals: the
    /// signal op.
    pub flags: u16,
    /// Target PE.
    pub pe: u32,
    /// Bytes.
    pub len: u64,
    /// Symmetric address on the target (local address of the same object).
    pub dest: u64,
    /// Local address: put source, get destination, fetched-value destination (0: none).
    pub local: u64,
    /// Inline value (p), AMO operand, signal value.
    pub value: u64,
    /// Compare operand.
    pub cond: u64,
    /// Symmetric address of the signal word.
    pub sig: u64,
}

/// An AMO as request flags (an [`amo`] operation, `| amo::W64` for a 64-bit word), its operand
/// and its compare value.
pub fn amo_flags(op: AmoOp, w64: bool) -> (u16, u64, u64) {
    let (k, v, c) = match op {
        AmoOp::Fetch => (amo::FETCH, 0, 0),
        AmoOp::Set(v) => (amo::SET, v, 0),
        AmoOp::Swap(v) => (amo::SWAP, v, 0),
        AmoOp::CompareSwap { cond, value } => (amo::COMPARE_SWAP, value, cond),
        AmoOp::FetchAdd(v) => (amo::FETCH_ADD, v, 0),
        AmoOp::FetchAnd(v) => (amo::FETCH_AND, v, 0),
        AmoOp::FetchOr(v) => (amo::FETCH_OR, v, 0),
        AmoOp::FetchXor(v) => (amo::FETCH_XOR, v, 0),
    };
    (k | if w64 { amo::W64 } else { 0 }, v, c)
}

/// The AMO a request's flags, operand and compare value describe.
pub fn amo_of(r: &Request) -> AmoOp {
    match r.flags & amo::OP_MASK {
        amo::FETCH => AmoOp::Fetch,
        amo::SET => AmoOp::Set(r.value),
        amo::SWAP => AmoOp::Swap(r.value),
        amo::COMPARE_SWAP => AmoOp::CompareSwap { cond: r.cond, value: r.value },
        amo::FETCH_ADD => AmoOp::FetchAdd(r.value),
        amo::FETCH_AND => AmoOp::FetchAnd(r.value),
        amo::FETCH_OR => AmoOp::FetchOr(r.value),
        _ => AmoOp::FetchXor(r.value),
    }
}

/// The proxy ring's header, as device code sees it (C: `oxshmem_ring_t`).
pub type ProxyRing = Ring<Request>;

/// The owner of a proxy ring (header and slots in one allocation).
pub type ProxyRingBox = RingBox<Request>;

/// Submits a request, waiting while the ring is full; gives up (recording a stall) after
/// the device timeout.
pub(crate) fn submit(state: &DeviceState, ring: &ProxyRing, r: Request, block: u32, thread: u32) -> Option<u64> {
    // The clock is read only once the ring is full, not once per request.
    let mut deadline = None;
    let mut pacing = Pacing::new();
    match ring.submit(r, || {
        pacing.pause();
        pacing.spinning()
            || Instant::now() < *deadline.get_or_insert_with(|| Instant::now() + Duration::from_nanos(state.timeout_ns))
    }) {
        Ok(t) => {
            // Published; a sleeping proxy would only see it at its next look. The fences pair
            // with the proxy's (it sets the flag, fences, then polls the ring): one of the two
            // sees the other's store.
            std::sync::atomic::fence(Ordering::SeqCst);
            if state.proxy_sleeping.load(Ordering::Relaxed) != 0 {
                futex_wake(&state.proxy_sleeping);
            }
            Some(t)
        }
        Err(Stalled { ticket, completed }) => {
            state.error.record(
                ErrorCode::RingStalled,
                op_of(r.kind),
                i64::from(r.pe),
                ticket,
                completed,
                block,
                thread,
            );
            None
        }
    }
}

/// Waits until ticket `t` is complete. After the device timeout it records a stall, but it
/// keeps waiting as long as the proxy thread lives: a blocking operation lent the proxy its
/// memory (a source, a destination, a fetched-value slot on its stack), and must not return
/// while the proxy may still touch it. Returns false when the request was not completed.
pub(crate) fn wait_done(state: &DeviceState, ring: &ProxyRing, t: u64, op: u32, block: u32, thread: u32) -> bool {
    let mut pacing = Pacing::new();
    let mut deadline = None;
    let mut stalled = false;
    while ring.completed() <= t {
        if stalled {
            if state.proxy_alive.load(Ordering::Acquire) == 0 {
                return ring.completed() > t;
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        pacing.pause();
        if !pacing.spinning() {
            let d = *deadline.get_or_insert_with(|| Instant::now() + Duration::from_nanos(state.timeout_ns));
            if Instant::now() > d {
                state.error.record(ErrorCode::RingStalled, op, -1, t, ring.completed(), block, thread);
                stalled = true;
            }
        }
    }
    !stalled || ring.completed() > t
}

fn op_of(kind: u16) -> u32 {
    match kind {
        kind::PUT => op::PUT,
        kind::GET => op::GET,
        kind::P => op::P,
        kind::AMO => op::AMO,
        kind::PUT_SIGNAL => op::PUT_SIGNAL,
        kind::SIGNAL_OP => op::SIGNAL_OP,
        _ => op::KERNEL,
    }
}

/// What carries out the proxy's requests: the host runtime ([`RuntimeTarget`], for symmetric
/// memory the runtime owns), or a back end's own executor (the C library's CUDA back end
/// copies into peers' GPU heaps). The proxy thread, the ring protocol and the error reporting
/// are the same for both.
pub trait ProxyTarget: Send + Sync + 'static {
    /// Executes `r` (its addresses are as the device thread gave them: `dest` and `sig` the
    /// local addresses of symmetric objects, `local` a buffer of the requesting device). An
    /// error is recorded in the device state's host error slot as a transport error.
    ///
    /// # Errors
    /// Why the request could not be carried out.
    fn execute(&self, r: &Request) -> Result<(), String>;
}

/// Requests executed by the host runtime (the CPU back end's target).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuntimeTarget;

impl ProxyTarget for RuntimeTarget {
    fn execute(&self, r: &Request) -> Result<(), String> {
        execute_on_runtime(r).map_err(|e| e.to_string())
    }
}

/// Executes one request through `target`, recording a failure in the device state's host
/// error slot (`DeviceState::host_error`: the GPU's threads read-modify-write the other).
fn execute(state: &DeviceState, target: &dyn ProxyTarget, r: &Request) {
    if let Err(why) = target.execute(r) {
        tracing::debug!(target: "proxy", kind = r.kind, pe = r.pe, %why, "request failed");
        state.host_error.record(
            ErrorCode::Transport,
            op_of(r.kind),
            i64::from(r.pe),
            r.dest,
            r.len,
            u32::MAX,
            u32::MAX,
        );
    }
}

/// Executes one request through the host runtime.
fn execute_on_runtime(r: &Request) -> oxshmem::Result<()> {
    let pe = r.pe as i32;
    (|| {
        // SAFETY: (all arms) the device thread that submitted the request checked the target
        // range against the symmetric heap and keeps `local` valid until the ticket completes
        // (blocking operations wait for it; `_nbi` ones hold their buffers until quiet).
        unsafe {
            match r.kind {
                kind::PUT => oxshmem::raw::putmem(r.dest as *mut u8, r.local as *const u8, r.len as usize, pe),
                kind::GET => oxshmem::raw::getmem(r.local as *mut u8, r.dest as *const u8, r.len as usize, pe),
                kind::P => oxshmem::raw::putmem(r.dest as *mut u8, (&raw const r.value).cast(), r.len as usize, pe),
                kind::AMO => {
                    let op = amo_of(r);
                    let old = if r.flags & amo::W64 != 0 {
                        oxshmem::raw::atomic(r.dest as *mut u64, op, pe, "nvshmem_atomic (proxy)")?
                    } else {
                        u64::from(oxshmem::raw::atomic(r.dest as *mut u32, op, pe, "nvshmem_atomic (proxy)")?)
                    };
                    if r.local != 0 {
                        (r.local as *mut u64).write_unaligned(old);
                    }
                    Ok(())
                }
                kind::PUT_SIGNAL => oxshmem::signal::raw::put_signal(
                    r.dest as *mut u8,
                    r.local as *const u8,
                    r.len as usize,
                    r.sig as *mut u64,
                    r.value,
                    i32::from(r.flags),
                    pe,
                    "nvshmem_put_signal (proxy)",
                ),
                kind::SIGNAL_OP => {
                    let op = if r.flags == 0 { AmoOp::Set(r.value) } else { AmoOp::FetchAdd(r.value) };
                    oxshmem::raw::atomic(r.sig as *mut u64, op, pe, "nvshmemx_signal_op (proxy)").map(drop)
                }
                _ => Ok(()),
            }
        }
    })()
}

/// The proxy thread of one PE.
#[derive(Debug)]
pub struct Proxy {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// How long the sleeping proxy polls with nothing to do before it sleeps.
const SLEEP_AFTER: Duration = Duration::from_millis(1);
/// How long the spinning proxy does.
const SPIN_SLEEP_AFTER: Duration = Duration::from_millis(10);

/// Pointers the proxy thread needs, owned by the `Device`, which stops the proxy before it
/// frees them.
struct Shared(*const DeviceState, *const ProxyRing, Arc<dyn ProxyTarget>);

// SAFETY: see the struct's doc; both targets are Sync.
unsafe impl Send for Shared {}

impl Proxy {
    /// Starts the proxy thread for `ring`; with `spin`, it polls through pauses of up to 10 ms
    /// (NVSHMEM's dedicated proxy thread), else it sleeps after 1 ms idle.
    pub(crate) fn start(state: *const DeviceState, ring: *const ProxyRing, spin: bool) -> Proxy {
        // SAFETY: the Device that calls this keeps both alive until it stops the proxy.
        unsafe { Proxy::start_with(state, ring, spin, Arc::new(RuntimeTarget)) }
    }

    /// Starts the proxy thread for `ring`, executing its requests through `target`; with
    /// `spin`, it polls through pauses of up to 10 ms (NVSHMEM's dedicated proxy thread),
    /// else it sleeps after 1 ms idle.
    ///
    /// # Safety
    /// `state` and `ring` stay valid (and in place) until [`Proxy::stop`] has returned or the
    /// proxy is dropped.
    pub unsafe fn start_with(
        state: *const DeviceState,
        ring: *const ProxyRing,
        spin: bool,
        target: Arc<dyn ProxyTarget>,
    ) -> Proxy {
        // SAFETY: the caller keeps `state` alive.
        unsafe { &*state }.proxy_alive.store(1, Ordering::Release);
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let shared = Shared(state, ring, target);
        let handle = std::thread::Builder::new()
            .name("oxshmem-proxy".into())
            .spawn(move || {
                oxshmem::segment::agent_thread();
                crate::unbind_helper_thread();
                let shared = shared;
                // SAFETY: the owner keeps both alive until it has joined this thread.
                let (state, ring) = unsafe { (&*shared.0, &*shared.1) };
                // SAFETY: this thread is the ring's one consumer: the device starts one proxy
                // per ring and joins it before another could start.
                let mut consumer = unsafe { ring.consumer_unchecked() };
                let target = &*shared.2;
                let mut stopping_since: Option<Instant> = None;
                // The current stretch with nothing to do: its pauses, and when it began (read
                // once the spin phase is over).
                let mut idle: Option<(Pacing, Option<Instant>)> = None;
                // Requests executed since the proxy last fell asleep (for the log).
                let mut since_nap = 0u64;
                tracing::debug!(target: "proxy", spin, "started");
                loop {
                    match consumer.peek() {
                        Some(r) => {
                            // Ends the idle stretch: its pacing learns whether spinning paid.
                            idle = None;
                            execute(state, target, &r);
                            if r.flags & flag::HOLD != 0 {
                                consumer.complete_held();
                            } else {
                                consumer.complete();
                            }
                            since_nap += 1;
                        }
                        None => {
                            if s2.load(Ordering::Acquire) {
                                if ring.issued() <= consumer.ticket() {
                                    break;
                                }
                                // A producer that gave up left a hole: do not wait forever.
                                let since = *stopping_since.get_or_insert_with(Instant::now);
                                if since.elapsed() > Duration::from_nanos(state.timeout_ns) {
                                    break;
                                }
                            }
                            // Spin (as long as spinning has paid lately: `Pacing`), then yield
                            // on every poll, spinning proxy or not: where threads outnumber
                            // cores, a proxy that spins on holds its core while the device
                            // thread it serves, or the PE, waits for it (a fixed spin of 200
                            // polls: 8-17 us per put + quiet, against 3 us yielding at once
                            // and 0.2 us on cores of their own). A yield with nothing else to
                            // run returns at once.
                            let (pacing, since) = idle.get_or_insert_with(|| (Pacing::new(), None));
                            if pacing.spin() {
                                continue;
                            }
                            // After a millisecond with nothing to do (the spinning proxy:
                            // ten), the proxy sleeps until a producer wakes it (or a
                            // millisecond passes: producers that cannot wake it, and the stop
                            // flag), so that an idle proxy holds no core and a request after a
                            // pause is not left waiting for a nap to end (it was: 50 us naps
                            // made the proxy's median 8 B put 42-50 us against a best of 3 us).
                            // Even the spinning proxy sleeps: where PEs and their proxies
                            // outnumber the cores, the idle proxies of 3 PEs yielding on every
                            // poll made PE 0's put + quiet 6 us, against 0.3 us beside
                            // sleeping proxies; where each has a core, a 10 ms pause is rare
                            // and a wake-up costs microseconds after it.
                            let sleep_after = if spin { SPIN_SLEEP_AFTER } else { SLEEP_AFTER };
                            if since.get_or_insert_with(Instant::now).elapsed() > sleep_after {
                                if since_nap > 0 {
                                    tracing::trace!(target: "proxy", executed = since_nap, ?sleep_after, "idle: napping");
                                    since_nap = 0;
                                }
                                state.proxy_sleeping.store(1, Ordering::Relaxed);
                                std::sync::atomic::fence(Ordering::SeqCst);
                                if consumer.peek().is_none() && !s2.load(Ordering::Acquire) {
                                    futex_wait(&state.proxy_sleeping, 1, Duration::from_millis(1));
                                }
                                state.proxy_sleeping.store(0, Ordering::Relaxed);
                            } else {
                                pacing.pause();
                            }
                        }
                    }
                }
                state.proxy_alive.store(0, Ordering::Release);
                tracing::debug!(target: "proxy", executed = consumer.ticket(), "stopped");
            })
            .expect("spawn the proxy thread");
        Proxy { stop, handle: Some(handle) }
    }

    /// Stops the thread once every issued request is done.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout` (Linux futex; spurious wakes are
/// fine: the caller looks at the ring again).
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts =
        libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: `word` is a live, aligned u32 for the duration of the call; the timeout is a
    // valid timespec; FUTEX_WAIT only reads the word.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, expected, &ts);
    }
}

/// Wakes the thread sleeping on `word`, if any.
fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE does not touch memory.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ErrorSlot;

    /// A target that carries nothing out.
    struct Refuses;
    impl ProxyTarget for Refuses {
        fn execute(&self, _: &Request) -> Result<(), String> {
            Err("refused".into())
        }
    }

    /// A request the proxy could not carry out is recorded in the host's own error slot, not in
    /// the device threads' (whose state word GPU threads compare-and-swap: the host must not
    /// read-modify-write it too), and reported as the first error when the device has none.
    #[test]
    fn a_failed_request_goes_to_the_hosts_error_slot() {
        let state = DeviceState {
            my_pe: 0,
            n_pes: 2,
            heap_base: 0,
            heap_size: 0,
            peer_base: std::ptr::null(),
            channel: std::ptr::null(),
            ring: std::ptr::null_mut(),
            ibgda: std::ptr::null_mut(),
            barrier_flags: 0,
            barrier_epoch: Default::default(),
            timeout_ns: 0,
            proxy_alive: Default::default(),
            proxy_sleeping: Default::default(),
            error: ErrorSlot::default(),
            host_error: ErrorSlot::default(),
        };
        let r = Request { kind: kind::PUT, pe: 1, dest: 0x1000, len: 8, ..Default::default() };
        execute(&state, &Refuses, &r);
        assert!(state.error.get().is_none(), "the device threads' slot was written");
        let e = state.host_error.get().expect("the host's slot holds the failure");
        assert_eq!((e.code, e.op, e.pe, e.addr), (ErrorCode::Transport as u32, op::PUT, 1, 0x1000));
        assert_eq!(state.first_error().map(|e| e.code), Some(ErrorCode::Transport as u32));
    }
}
