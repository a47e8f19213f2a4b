//! The software NIC: one host thread per PE that consumes the IBGDA queues exactly as a NIC
//! would — it watches each queue's doorbell record, decodes every WQE between the last index
//! it consumed and the announced one (wrapping the ring), executes it, and writes completion
//! entries for signalled WQEs.
//!
//! Execution: local addresses are translated through the memory-region table (the heap, each
//! queue's scratch buffer, the implicit whole-process region) and remote ones through the peer's
//! remote key and heap base. A peer whose heap is mapped on this host is written with plain
//! copies and CPU atomics (as the NIC's DMA engine would); any other peer through the runtime's
//! transport (`ofi`), whose writes are completed remotely (the runtime's `quiet`) before a
//! fenced WQE, a read, an atomic, and before a completion is written — so data is visible
//! before any later operation of the queue and before its CQE, as RC ordering requires.
//!
//! Errors: a WQE that cannot be decoded, a bad key, an address outside its region or a transport
//! failure produce an error CQE (mlx5: opcode 13, the syndrome at byte 55; hns: the status in
//! `byte_4`) at that WQE, and the queue enters the error state: nothing after it executes.
//!
//! The engine (`Engine`) works on any [`NicLayout`]: it decodes each WQE with the queue's
//! layout, executes the NIC-neutral request, and writes that layout's completion entries with
//! its syndromes — so an hns queue (`Qp<Hns>`) is consumed exactly as an mlx5 one. What it
//! executes against (the registrations, every peer's heap) is a `NicCtx`: the channel's
//! ([`Ibgda`], whose queues are mlx5's for now), or a test's around a bare queue.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use oxshmem::transport::AmoOp;

use super::layout::{Completion, Decoded, Failure, NicAtomic, NicLayout, Remote, Sge};
use super::qp::Qp;
use super::{Ibgda, NicMemory};

/// What device threads and the NIC thread share.
#[derive(Debug, Default)]
pub struct NicShared {
    /// 1 while the NIC thread runs.
    pub(crate) alive: AtomicU32,
    /// 1 while the NIC thread sleeps (ringers then drive their queues themselves).
    sleeping: AtomicU32,
    stop: AtomicBool,
    thread: OnceLock<std::thread::Thread>,
    /// How long a full normal-mode CQ is waited for once stopping (ns).
    timeout_ns: AtomicU64,
}

impl NicShared {
    /// Wakes the NIC thread if it sleeps.
    pub(crate) fn wake(&self) {
        if self.sleeping.load(Ordering::SeqCst) != 0
            && let Some(t) = self.thread.get()
        {
            t.unpark();
        }
    }

    /// Whether the NIC thread sleeps.
    #[inline]
    pub(crate) fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::SeqCst) != 0
    }

    /// Whether the NIC thread runs.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire) != 0
    }
}

/// The NIC thread's handle.
#[derive(Debug)]
pub struct SoftNic {
    handle: Option<std::thread::JoinHandle<()>>,
    ib: *const Ibgda,
}

// SAFETY: `ib` points into the Device that owns both and joins the thread before freeing it.
unsafe impl Send for SoftNic {}

struct Ptr(*const Ibgda);
// SAFETY: as for SoftNic.
unsafe impl Send for Ptr {}

/// The consumer state of one queue (kept in the queue's NIC-side words between passes, see
/// `Qp::nic_seen`).
#[derive(Debug, Clone, Copy, Default)]
struct QState {
    consumed: u64,
    pcqe: u64,
    failed: bool,
}

/// What the NIC executes WQEs against: the local registrations (heap, scratch buffers, the
/// implicit region) and every peer's heap key, base and mapping here. The channel's
/// ([`ctx`]), or a test's around a bare queue.
#[derive(Clone, Copy)]
pub(crate) struct NicCtx<'a> {
    /// Local key of the heap.
    pub(crate) heap_lkey: u32,
    /// Local key of the implicit (whole-process) region.
    pub(crate) implicit_lkey: u32,
    /// Local key of the scratch buffers' registration.
    pub(crate) ibuf_lkey: u32,
    /// The range registered under `ibuf_lkey`: (base, bytes).
    pub(crate) ibuf_region: (u64, u64),
    /// This PE's heap base.
    pub(crate) heap_base: u64,
    /// Heap bytes (the same on every PE).
    pub(crate) heap_size: u64,
    /// Per PE: its heap's remote key.
    pub(crate) rkeys: &'a [u32],
    /// Per PE: its heap's base (remote addresses are virtual addresses there).
    pub(crate) rbases: &'a [u64],
    /// Per PE: its heap as mapped here (0: through the transport).
    pub(crate) mapped: &'a [u64],
    /// How the NIC reaches a heap the CPU cannot touch (`None`: the CPU and the transport).
    pub(crate) memory: Option<&'a dyn NicMemory>,
    /// The local buffers registered since set-up (`nvshmemx_buffer_register`), each under its
    /// own key (`None`: none can be).
    pub(crate) local: Option<&'a parking_lot::RwLock<Vec<super::LocalRegion>>>,
    /// Set once the NIC is asked to stop (a full CQ is then waited for `timeout_ns` at most).
    pub(crate) stop: &'a AtomicBool,
    /// See `stop`.
    pub(crate) timeout_ns: &'a AtomicU64,
}

/// The channel's NIC context.
pub(crate) fn ctx(ib: &Ibgda) -> NicCtx<'_> {
    NicCtx {
        heap_lkey: ib.heap_lkey,
        implicit_lkey: ib.implicit_lkey,
        ibuf_lkey: ib.ibuf_lkey,
        // The channel's allocation, one registration, holds every queue's scratch buffer.
        ibuf_region: (ib.mem.as_ptr() as u64, ib.mem.len() as u64),
        heap_base: ib.heap_base,
        heap_size: ib.heap_size,
        rkeys: &ib.rkeys,
        rbases: &ib.rbases,
        mapped: &ib.mapped,
        memory: ib.memory.as_deref(),
        local: Some(&ib.local),
        stop: &ib.nic.stop,
        timeout_ns: &ib.nic.timeout_ns,
    }
}

impl SoftNic {
    /// Starts the NIC thread for `ib` (which must outlive it: call [`stop`](Self::stop)).
    pub(crate) fn start(ib: *const Ibgda, timeout_ns: u64) -> SoftNic {
        // SAFETY: the caller's promise, as documented.
        unsafe { Self::start_for(ib, timeout_ns) }
    }

    /// Starts the NIC thread for `ib`, which gives up waiting on a full CQ `timeout_ns` after
    /// it was asked to stop.
    ///
    /// # Safety
    /// `ib` stays valid (and in place) until [`stop`](Self::stop) has returned or the value is
    /// dropped.
    pub unsafe fn start_for(ib: *const Ibgda, timeout_ns: u64) -> SoftNic {
        // SAFETY: the caller keeps `ib` alive until stop() has joined the thread.
        let shared = unsafe { &(*ib).nic };
        shared.timeout_ns.store(timeout_ns, Ordering::Relaxed);
        shared.alive.store(1, Ordering::Release);
        let p = Ptr(ib);
        let handle = std::thread::Builder::new()
            .name("oxshmem-softnic".into())
            .spawn(move || {
                oxshmem::segment::agent_thread();
                crate::unbind_helper_thread();
                let p = p;
                // SAFETY: see start().
                let ib = unsafe { &*p.0 };
                let _ = ib.nic.thread.set(std::thread::current());
                tracing::debug!(target: "softnic", nap_ms = ib.config.nic_nap_ms, "started");
                run(ib);
                ib.nic.alive.store(0, Ordering::Release);
                tracing::debug!(target: "softnic", consumed = consumed(ib), "stopped");
            })
            .expect("spawn the software NIC thread");
        SoftNic { handle: Some(handle), ib }
    }

    /// Stops the thread once every announced WQE is consumed.
    pub fn stop(&mut self) {
        if let Some(h) = self.handle.take() {
            // SAFETY: see start().
            let shared = unsafe { &(*self.ib).nic };
            shared.stop.store(true, Ordering::Release);
            if let Some(t) = shared.thread.get() {
                t.unpark();
            }
            let _ = h.join();
        }
    }
}

impl Drop for SoftNic {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Empty polls of the NIC thread before it sleeps (a few microseconds).
const IDLE_SPINS: u32 = 32;

/// Slots executed by ringers during one idle stretch of the NIC thread past which it stays up
/// (if they also came at one per microsecond or faster): a stream of work, not a few
/// operations now and then.
const STREAM_SLOTS: u64 = 64;

/// Passes over one queue a driver makes for WQEs announced while it drove, before it leaves
/// the rest to the NIC thread.
const DRIVE_ROUNDS: usize = 4;

/// Drives the NIC from a device thread (or the host): one pass over every queue with work
/// announced, skipping queues another thread is consuming right now. Returns whether any WQE
/// was consumed.
///
/// On a GPU the NIC is hardware and never waits for a core; on the CPU back end its thread
/// competes with every device thread for the cores. So a thread that waits for a completion,
/// or rings while the NIC thread sleeps ([`progress_queue`]), does the NIC's work itself
/// instead of waking that thread (a futex wake-up, then a scheduler's hand-off) and yielding to
/// it — as libfabric's software providers make progress inside their callers. Each queue has
/// its own lock (`Qp::nic_try_drive`), so threads on different queues never wait for each
/// other.
pub(crate) fn progress(ib: &Ibgda) -> bool {
    if !ib.nic.is_alive() {
        return false;
    }
    pass(ib)
}

/// Executes queue `i`'s announced WQEs after its doorbell, the NIC thread sleeping — or
/// leaves them to the thread consuming that queue right now (see [`drive`]).
pub(crate) fn progress_queue(ib: &Ibgda, i: usize) {
    if !ib.nic.is_alive() {
        return;
    }
    // Orders the caller's doorbell before the try-lock (the other half of `drive`'s check).
    std::sync::atomic::fence(Ordering::SeqCst);
    drive(ib, i);
}

/// Consumes queue `i` unless another thread is consuming it (None). A driver looks at the
/// doorbell record again after letting the queue go, and goes on while work is announced: a
/// ringer that found the queue taken left its WQEs to it (SeqCst on both sides: either the
/// driver's second look sees the doorbell, or the ringer's try-lock finds the queue free).
/// After a few rounds it wakes the NIC thread for the rest.
fn drive(ib: &Ibgda, i: usize) -> Option<bool> {
    crate::with_layout!(ib.layout, L => drive_on::<L>(ib, i))
}

/// [`drive`] on a queue in format `L`.
fn drive_on<L: NicLayout>(ib: &Ibgda, i: usize) -> Option<bool> {
    let qp = &ib.nic_queues::<L>()[i];
    let mut did = false;
    for round in 0..DRIVE_ROUNDS {
        if !qp.nic_try_drive() {
            // Its holder looks again after letting go.
            return (round > 0).then_some(did);
        }
        {
            // Lets the queue go even if the drain unwinds (a device thread's panic is caught
            // and reported; the queue must stay usable for the rest of the job).
            struct Held<'q, L: NicLayout>(&'q Qp<L>);
            impl<L: NicLayout> Drop for Held<'_, L> {
                fn drop(&mut self) {
                    self.0.nic_end_drive();
                }
            }
            let _held = Held(qp);
            let mut e = Engine::new(ctx(ib));
            did |= e.drain(qp);
            e.settle();
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        if !qp.nic_pending() {
            return Some(did);
        }
    }
    ib.nic.wake();
    Some(did)
}

/// Drives every queue with work announced once; returns whether any WQE was consumed.
fn pass(ib: &Ibgda) -> bool {
    crate::with_layout!(ib.layout, L => {
        let mut did = false;
        for (i, qp) in ib.nic_queues::<L>().iter().enumerate() {
            if qp.nic_pending() {
                did |= drive_on::<L>(ib, i).unwrap_or(false);
            }
        }
        did
    })
}

/// Slots consumed on every queue that has not failed (by anyone, as of each queue's last
/// pass).
fn consumed(ib: &Ibgda) -> u64 {
    crate::with_layout!(ib.layout, L => {
        ib.nic_queues::<L>().iter().map(|qp| qp.nic_seen().0).filter(|&c| c != u64::MAX).fold(0, u64::wrapping_add)
    })
}

/// Whether some queue has announced WQEs that the NIC can consume.
fn pending(ib: &Ibgda) -> bool {
    crate::with_layout!(ib.layout, L => ib.nic_queues::<L>().iter().any(Qp::nic_pending))
}

/// The NIC thread.
fn run(ib: &Ibgda) {
    let mut spins = 0u32;
    // Slots consumed by anyone when this idle stretch began, and when it began.
    let mut window = (0u64, Instant::now());
    // Slots consumed when the thread last fell asleep (for the log: one line per nap that
    // follows work, not one per idle nap).
    let mut at_last_nap = 0u64;
    loop {
        if pass(ib) {
            spins = 0;
            continue;
        }
        if ib.nic.stop.load(Ordering::Acquire) {
            // Past the stop flag: nothing announced before it is left behind (a queue another
            // thread is consuming is that thread's to finish).
            if pending(ib) {
                std::thread::yield_now();
                continue;
            }
            break;
        }
        // Idle: spin briefly, then sleep. While the NIC thread sleeps, ringers and waiters
        // drive the queues themselves (see `progress`); the nap's end is a safety net only.
        if spins == 0 {
            window = (consumed(ib), Instant::now());
        }
        if spins < IDLE_SPINS {
            spins += 1;
            std::hint::spin_loop();
            continue;
        }
        spins = 0;
        // Nothing for us, but the ringers have been executing a stream of work themselves
        // (each paying for its own pass): stay up, so that they leave it to this thread, and
        // give them the core meanwhile. A stream: at least STREAM_SLOTS, and one per
        // microsecond (the stretch may have lasted a time slice of another thread: a few
        // operations now and then add up to many slots then).
        let slots = consumed(ib).wrapping_sub(window.0);
        if slots >= STREAM_SLOTS && u128::from(slots) >= window.1.elapsed().as_micros() {
            std::thread::yield_now();
            continue;
        }
        let now = consumed(ib);
        if now != at_last_nap {
            tracing::trace!(target: "softnic", consumed_since = now.wrapping_sub(at_last_nap), "idle: napping");
            at_last_nap = now;
        }
        ib.nic.sleeping.store(1, Ordering::SeqCst);
        // Pairs with the full barrier after a ringer's doorbell record: either it sees
        // `sleeping` and drives its queue itself, or we see its doorbell record here.
        std::sync::atomic::fence(Ordering::SeqCst);
        if !pending(ib) && !ib.nic.stop.load(Ordering::Acquire) {
            std::thread::park_timeout(Duration::from_millis(ib.config.nic_nap_ms));
        }
        ib.nic.sleeping.store(0, Ordering::SeqCst);
    }
}

/// One driver's work on queues of any layout: decodes, executes, completes.
pub(crate) struct Engine<'a> {
    cx: NicCtx<'a>,
    /// Non-blocking transport writes not yet completed.
    dirty: bool,
}

impl<'a> Engine<'a> {
    /// An engine executing against `cx`.
    pub(crate) fn new(cx: NicCtx<'a>) -> Self {
        Engine { cx, dirty: false }
    }

    /// Consumes every announced WQE of `qp`; returns whether there was any.
    pub(crate) fn drain<L: NicLayout>(&mut self, qp: &Qp<L>) -> bool {
        let (consumed, pcqe) = qp.nic_seen();
        if consumed == u64::MAX {
            // Failed: nothing after the error CQE executes.
            return false;
        }
        let mut st = QState { consumed, pcqe, failed: false };
        let ann = qp.nic_announced(st.consumed);
        if ann == st.consumed {
            return false;
        }
        // Collapsed CQ: the device only ever sees the latest entry, so of the signalled WQEs
        // of this pass only the last needs its CQE written (after everything before it).
        let collapsed = qp.cq_mode() == super::qp::CqMode::Collapsed;
        let mut last_signalled: Option<u64> = None;
        // Normal CQ: never consume a WQE whose completion could not be written (the CQ's
        // consumer may be the very thread driving this pass); stop at a full CQ and resume
        // once entries are consumed. Each WQE needs at most one entry, its error CQE included.
        let mut room = qp.nic_cq_room(st.pcqe);
        let start = st.consumed;
        let mut gather = [0u8; super::layout::MAX_WQE_BYTES];
        while st.consumed < ann && room > 0 {
            let idx = st.consumed;
            let first = qp.nic_slot(idx);
            let next = |k: usize| qp.nic_slot(idx + k as u64);
            let decoded = L::decode(&first, idx, qp.nwqes(), qp.qpn(), &next, &mut gather);
            let (opcode, res, wqebbs, signal) = match decoded {
                Err(e) => (e.opcode, Err(e.syndrome), e.wqebbs, true),
                Ok(w) if idx + w.wqebbs as u64 > ann => {
                    (w.opcode, Err(L::syndrome(Failure::LocalLength)), w.wqebbs, true)
                }
                Ok(w) => {
                    if w.flags.fence {
                        self.settle();
                    }
                    let r = self.execute(qp, &w.op).map_err(L::syndrome);
                    (w.opcode, r, w.wqebbs, w.flags.signal)
                }
            };
            match res {
                Ok(()) => {
                    if signal && collapsed {
                        last_signalled = Some(idx);
                    } else if signal {
                        self.settle();
                        self.complete(qp, &mut st, Completion::Ok { wqe_counter: idx as u16, owner: 0 });
                        room -= 1;
                    }
                    st.consumed += wqebbs as u64;
                }
                Err(s) => {
                    self.settle();
                    if let Some(l) = last_signalled.take() {
                        self.complete(qp, &mut st, Completion::Ok { wqe_counter: l as u16, owner: 0 });
                    }
                    let c = Completion::Err { wqe_counter: idx as u16, owner: 0, syndrome: s, opcode };
                    self.complete(qp, &mut st, c);
                    st.failed = true;
                    st.consumed = ann;
                    break;
                }
            }
        }
        if let Some(l) = last_signalled {
            self.settle();
            self.complete(qp, &mut st, Completion::Ok { wqe_counter: l as u16, owner: 0 });
        }
        qp.nic_set_seen(if st.failed { u64::MAX } else { st.consumed }, st.pcqe);
        st.consumed != start
    }

    fn complete<L: NicLayout>(&self, qp: &Qp<L>, st: &mut QState, c: Completion) {
        let timeout = Duration::from_nanos(self.cx.timeout_ns.load(Ordering::Relaxed));
        let stop = self.cx.stop;
        let mut pacing = crate::channel::sync::Pacing::new();
        let mut deadline: Option<Instant> = None;
        // A normal-mode CQ that nobody consumes: wait, but not past the timeout once stopping.
        // (The clock is read only then: this runs once per drained batch.)
        let ok = qp.nic_complete(c, st.pcqe, &mut || {
            pacing.pause();
            !stop.load(Ordering::Acquire) || Instant::now() <= *deadline.get_or_insert_with(|| Instant::now() + timeout)
        });
        if ok {
            st.pcqe += 1;
        }
    }

    /// Completes non-blocking transport writes.
    pub(crate) fn settle(&mut self) {
        if self.dirty {
            self.dirty = false;
            let _ = oxshmem::raw::quiet();
        }
    }

    /// The local address range `s` names, checked against its region.
    fn local(&self, s: &Sge, len: u64) -> Result<u64, Failure> {
        let ok = |base: u64, size: u64| s.addr >= base && s.addr.checked_add(len).is_some_and(|e| e <= base + size);
        let cx = &self.cx;
        let valid = match s.lkey {
            k if k == cx.heap_lkey => ok(cx.heap_base, cx.heap_size),
            k if k == cx.implicit_lkey => s.addr != 0 || len == 0,
            k if k == cx.ibuf_lkey => ok(cx.ibuf_region.0, cx.ibuf_region.1),
            // A registered buffer's key covers its registration only (taken for each WQE
            // that names one: registration is rare, and the lock is free but for it).
            k => {
                cx.local.is_some_and(|l| l.read().iter().any(|r| r.region.lkey == k && ok(r.region.addr, r.region.len)))
            }
        };
        if valid { Ok(s.addr) } else { Err(Failure::LocalProt) }
    }

    /// The target of `r` on queue `qp`'s peer: (the address of the same object in this PE's
    /// heap, the peer's mapped address or 0).
    fn remote<L: NicLayout>(&self, qp: &Qp<L>, r: &Remote, len: u64) -> Result<(u64, u64), Failure> {
        let pe = qp.peer() as usize;
        let cx = &self.cx;
        let (Some(&base), Some(&rkey)) = (cx.rbases.get(pe), cx.rkeys.get(pe)) else {
            return Err(Failure::RemoteAccess);
        };
        if r.rkey != rkey || r.addr < base || r.addr.checked_add(len).is_none_or(|e| e > base + cx.heap_size) {
            return Err(Failure::RemoteAccess);
        }
        let off = r.addr - base;
        let mapped = cx.mapped.get(pe).copied().unwrap_or(0);
        Ok((cx.heap_base + off, if mapped != 0 { mapped + off } else { 0 }))
    }

    fn execute<L: NicLayout>(&mut self, qp: &Qp<L>, op: &Decoded<'_>) -> Result<(), Failure> {
        let pe = qp.peer() as i32;
        match op {
            Decoded::Nop => Ok(()),
            Decoded::Dump { local } => {
                let a = self.local(local, 1)?;
                if let Some(m) = self.cx.memory {
                    let mut b = 0u8;
                    // SAFETY: checked against its region (a live local byte); `b` is a local.
                    return unsafe { m.copy((&raw mut b) as u64, a, 1) }.map_err(|_| Failure::LocalProt);
                }
                // SAFETY: checked against its region (a live local byte).
                unsafe { std::ptr::read_volatile(a as *const u8) };
                Ok(())
            }
            Decoded::Write { local, remote } => {
                let len = u64::from(local.len);
                let src = self.local(local, len)?;
                let (equiv, mapped) = self.remote(qp, remote, len)?;
                self.write(pe, src as *const u8, equiv, mapped, len as usize)
            }
            Decoded::WriteInline { data, remote } => {
                let (equiv, mapped) = self.remote(qp, remote, data.len() as u64)?;
                // The transport's put returns once its source may be reused (the payload lives
                // in this frame); remote completion comes with the next settle.
                self.write(pe, data.as_ptr(), equiv, mapped, data.len())
            }
            Decoded::Read { local, remote } => {
                let len = u64::from(local.len);
                let dst = self.local(local, len)?;
                let (equiv, mapped) = self.remote(qp, remote, len)?;
                // Reads see this queue's earlier writes (RC order): complete them first.
                self.settle();
                if let Some(m) = self.cx.memory {
                    if mapped == 0 {
                        return Err(Failure::RemoteOp);
                    }
                    // SAFETY: both ranges checked.
                    return unsafe { m.copy(dst, mapped, len as usize) }.map_err(|_| Failure::RemoteOp);
                }
                if mapped != 0 {
                    // SAFETY: both ranges checked; distinct objects (local scratch or heap vs the
                    // peer's mapped heap), or the same bytes when a PE reads itself.
                    unsafe { std::ptr::copy(mapped as *const u8, dst as *mut u8, len as usize) };
                    Ok(())
                } else {
                    // SAFETY: checked ranges; `equiv` is symmetric.
                    unsafe { oxshmem::raw::getmem(dst as *mut u8, equiv as *const u8, len as usize, pe) }
                        .map_err(|_| Failure::RemoteOp)
                }
            }
            Decoded::Atomic { op, width, remote, result } => {
                let w = u64::from(*width);
                let (equiv, mapped) = self.remote(qp, remote, w)?;
                if !equiv.is_multiple_of(w) {
                    return Err(Failure::RemoteAccess);
                }
                let res = if result.len == 0 { None } else { Some(self.local(result, w)?) };
                self.settle();
                if let Some(m) = self.cx.memory {
                    if mapped == 0 {
                        return Err(Failure::RemoteOp);
                    }
                    let old = via_amo(*op, *width, |a| m.atomic(mapped, *width, a)).map_err(|_| Failure::RemoteOp)?;
                    if let Some(a) = res {
                        // As below: 4-byte results big-endian, 8-byte ones in host order.
                        let bytes = if *width == 4 { u64::from((old as u32).to_be()) } else { old };
                        // SAFETY: the result range was checked against its region, `w` bytes.
                        unsafe { m.copy(a, (&raw const bytes) as u64, w as usize) }.map_err(|_| Failure::LocalProt)?;
                    }
                    return Ok(());
                }
                let old = if mapped != 0 {
                    cpu_atomic(mapped, *width, *op)
                } else {
                    transport_atomic(equiv, *width, *op, pe).map_err(|_| Failure::RemoteOp)?
                };
                if let Some(a) = res {
                    // 4-byte results land big-endian (the device swaps them); 8-byte ones in host order.
                    // SAFETY: checked against its region, `w` bytes.
                    unsafe {
                        if *width == 4 {
                            (a as *mut [u8; 4]).write_unaligned((old as u32).to_be_bytes());
                        } else {
                            (a as *mut u64).write_unaligned(old);
                        }
                    }
                }
                Ok(())
            }
        }
    }

    fn write(&mut self, pe: i32, src: *const u8, equiv: u64, mapped: u64, len: usize) -> Result<(), Failure> {
        if let Some(m) = self.cx.memory {
            if mapped == 0 {
                return Err(Failure::RemoteOp);
            }
            // SAFETY: both ranges checked by the caller.
            return unsafe { m.copy(mapped, src as u64, len) }.map_err(|_| Failure::RemoteOp);
        }
        if mapped != 0 {
            // SAFETY: both ranges checked by the caller.
            unsafe { oxshmem::transport::shm::copy_to_peer(mapped as *mut u8, src, len) };
            Ok(())
        } else {
            self.dirty = true;
            // SAFETY: checked ranges; `equiv` is symmetric.
            unsafe { oxshmem::raw::putmem_nbi(equiv as *mut u8, src, len, pe) }.map_err(|_| Failure::RemoteOp)
        }
    }
}

/// Executes `op` with CPU atomics on a mapped, aligned target; returns the prior value.
fn cpu_atomic(addr: u64, width: u32, op: NicAtomic) -> u64 {
    macro_rules! run {
        ($A:ty, $T:ty) => {{
            // SAFETY: the caller checked the target (mapped heap, aligned, `width` bytes).
            let a = unsafe { <$A>::from_ptr(addr as *mut $T) };
            match op {
                NicAtomic::FetchAdd { add, boundary: 0 } => u64::from(a.fetch_add(add as $T, Ordering::SeqCst)),
                NicAtomic::FetchAdd { add, boundary } if boundary as $T == <$T>::MAX => {
                    u64::from(a.fetch_xor(add as $T, Ordering::SeqCst))
                }
                NicAtomic::CompareSwap { swap, compare, swap_mask, compare_mask }
                    if swap_mask as $T == <$T>::MAX && compare_mask as $T == <$T>::MAX =>
                {
                    u64::from(
                        a.compare_exchange(compare as $T, swap as $T, Ordering::SeqCst, Ordering::SeqCst)
                            .unwrap_or_else(|v| v),
                    )
                }
                NicAtomic::CompareSwap { swap, swap_mask, compare_mask: 0, .. } if swap_mask as $T == <$T>::MAX => {
                    u64::from(a.swap(swap as $T, Ordering::SeqCst))
                }
                NicAtomic::CompareSwap { swap, swap_mask, compare_mask: 0, .. } if swap_mask as $T == swap as $T => {
                    u64::from(a.fetch_or(swap as $T, Ordering::SeqCst))
                }
                NicAtomic::CompareSwap { swap, swap_mask, compare_mask: 0, .. } if swap_mask as $T == !(swap as $T) => {
                    u64::from(a.fetch_and(swap as $T, Ordering::SeqCst))
                }
                _ => {
                    let mut old = a.load(Ordering::SeqCst);
                    loop {
                        let new = op.apply(u64::from(old), width) as $T;
                        if new == old {
                            break u64::from(old);
                        }
                        match a.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst) {
                            Ok(v) => break u64::from(v),
                            Err(v) => old = v,
                        }
                    }
                }
            }
        }};
    }
    if width == 4 { run!(std::sync::atomic::AtomicU32, u32) } else { run!(std::sync::atomic::AtomicU64, u64) }
}

/// Executes `op` through the runtime's transport; returns the prior value.
fn transport_atomic(equiv: u64, width: u32, op: NicAtomic, pe: i32) -> oxshmem::Result<u64> {
    const F: &str = "nvshmem_atomic (softnic)";
    via_amo(op, width, |a| {
        // SAFETY: `equiv` is a checked, aligned symmetric address of `width` bytes.
        unsafe {
            if width == 4 {
                oxshmem::raw::atomic(equiv as *mut u32, a, pe, F).map(u64::from)
            } else {
                oxshmem::raw::atomic(equiv as *mut u64, a, pe, F)
            }
        }
    })
}

/// Executes the NIC atomic `op` on a `width`-byte word through `call`, an executor of the
/// runtime's AMO operations: one call when `op` is one of them, else a compare-and-swap loop
/// (a general masked form). Returns the prior value.
fn via_amo<E>(op: NicAtomic, width: u32, mut call: impl FnMut(AmoOp) -> Result<u64, E>) -> Result<u64, E> {
    let m = if width == 4 { u64::from(u32::MAX) } else { u64::MAX };
    let amo = match op {
        NicAtomic::FetchAdd { add: 0, boundary: 0 } => Some(AmoOp::Fetch),
        NicAtomic::FetchAdd { add, boundary: 0 } => Some(AmoOp::FetchAdd(add & m)),
        NicAtomic::FetchAdd { add, boundary } if boundary & m == m => Some(AmoOp::FetchXor(add & m)),
        NicAtomic::CompareSwap { swap, compare, swap_mask, compare_mask }
            if swap_mask & m == m && compare_mask & m == m =>
        {
            Some(AmoOp::CompareSwap { cond: compare & m, value: swap & m })
        }
        NicAtomic::CompareSwap { swap, swap_mask, compare_mask, .. } if compare_mask & m == 0 && swap_mask & m == m => {
            Some(AmoOp::Swap(swap & m))
        }
        NicAtomic::CompareSwap { swap, swap_mask, compare_mask, .. }
            if compare_mask & m == 0 && swap_mask & m == swap & m =>
        {
            Some(AmoOp::FetchOr(swap & m))
        }
        NicAtomic::CompareSwap { swap, swap_mask, compare_mask, .. }
            if compare_mask & m == 0 && swap_mask & m == !swap & m =>
        {
            Some(AmoOp::FetchAnd(swap & m))
        }
        _ => None,
    };
    match amo {
        Some(a) => call(a),
        None => {
            // A general masked form: a compare-and-swap loop.
            let mut old = call(AmoOp::Fetch)?;
            loop {
                let new = op.apply(old, width);
                if new == old {
                    return Ok(old);
                }
                let seen = call(AmoOp::CompareSwap { cond: old, value: new })?;
                if seen == old {
                    return Ok(old);
                }
                old = seen;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ibgda::layout::{Amo, Hns, Mlx5, WorkRequest};
    use crate::ibgda::qp::{CqMode, QpBox, QpError};

    const QPN: u32 = 0x42;
    const PEER: u32 = 1;
    /// Keys: this PE's heap, the implicit region, the scratch buffers; the peers' heaps.
    const HEAP_LKEY: u32 = 0x11;
    const IMPLICIT_LKEY: u32 = 0x22;
    const IBUF_LKEY: u32 = 0x33;
    const RKEYS: [u32; 2] = [0x100, 0x101];
    /// The peers' heaps at their own addresses (what remote addresses name).
    const RBASES: [u64; 2] = [0xa000_0000, 0xb000_0000];
    const WORDS: usize = 64;

    /// A bare queue, this PE's heap and the peer's heap mapped here, and the engine's view of
    /// them — the software NIC without a channel.
    struct Bench<L: NicLayout> {
        q: QpBox<L>,
        mine: Vec<u64>,
        theirs: Vec<u64>,
        stop: AtomicBool,
        timeout_ns: AtomicU64,
        /// Local buffers registered after set-up (`nvshmemx_buffer_register`).
        local: parking_lot::RwLock<Vec<crate::ibgda::LocalRegion>>,
    }

    impl<L: NicLayout> Bench<L> {
        fn new(mode: CqMode) -> Self {
            Bench {
                q: QpBox::new(8, mode, 4, 1, QPN, PEER),
                mine: (0..WORDS as u64).map(|i| 0x1000 + i).collect(),
                theirs: (0..WORDS as u64).map(|i| 0x2000 + i).collect(),
                stop: AtomicBool::new(false),
                timeout_ns: AtomicU64::new(1_000_000),
                local: parking_lot::RwLock::new(Vec::new()),
            }
        }

        /// Drains the queue as the NIC, then polls it as the device.
        fn run(&mut self) -> Result<u64, QpError> {
            self.drain();
            self.q.poll()
        }

        /// Drains the queue as the NIC: executes and completes what was posted.
        fn drain(&mut self) {
            let mapped = [self.mine.as_mut_ptr() as u64, self.theirs.as_mut_ptr() as u64];
            let cx = NicCtx {
                heap_lkey: HEAP_LKEY,
                implicit_lkey: IMPLICIT_LKEY,
                ibuf_lkey: IBUF_LKEY,
                ibuf_region: self.q.ibuf_range(),
                heap_base: self.mine.as_ptr() as u64,
                heap_size: (WORDS * 8) as u64,
                rkeys: &RKEYS,
                rbases: &RBASES,
                mapped: &mapped,
                memory: None,
                local: Some(&self.local),
                stop: &self.stop,
                timeout_ns: &self.timeout_ns,
            };
            let mut e = Engine::new(cx);
            assert!(e.drain(&*self.q), "{}: nothing announced", L::NAME);
            e.settle();
        }

        fn post(&self, wr: WorkRequest<'_>) -> u64 {
            assert!(L::supports(&wr) || L::NAME == "hns", "{wr:?}");
            let end = self.q.post(&[wr], true, false, &mut || panic!("the queue is never full here")).expect("post");
            // The doorbell as the layout writes it, announcing everything posted.
            assert_eq!(self.q.nic_doorbell(), L::doorbell(end, QPN), "{}: doorbell", L::NAME);
            end
        }

        fn local(&self, word: usize) -> Sge {
            Sge { addr: self.mine.as_ptr() as u64 + 8 * word as u64, len: 8, lkey: HEAP_LKEY }
        }

        fn remote(word: usize) -> Remote {
            Remote { addr: RBASES[PEER as usize] + 8 * word as u64, rkey: RKEYS[PEER as usize] }
        }
    }

    /// Every kind of request the layout expresses, posted on a bare `QpBox<L>` of 8 slots, round
    /// after round (the ring wraps many times: mlx5's index and hns's owner bit of each lap),
    /// executed by the engine against mapped heaps, completed through the layout's CQEs.
    fn executes<L: NicLayout>(mode: CqMode) {
        let mut b = Bench::<L>::new(mode);
        for round in 0..40u64 {
            // A write of two words.
            let src = Sge { len: 16, ..b.local(0) };
            b.mine[0] = round << 8 | 1;
            b.mine[1] = round << 8 | 2;
            let end = b.post(WorkRequest::Write { local: src, remote: Bench::<L>::remote(4) });
            assert_eq!(b.run().expect("write"), end);
            assert_eq!(b.theirs[4..6], [round << 8 | 1, round << 8 | 2], "{} round {round}: write", L::NAME);
            // An inline write of 24 bytes.
            let payload: Vec<u8> = (0..24u8).map(|i| i ^ round as u8).collect();
            let end = b.post(WorkRequest::WriteInline { data: &payload, remote: Bench::<L>::remote(8) });
            assert_eq!(b.run().expect("inline"), end);
            let got: Vec<u8> = b.theirs[8..11].iter().flat_map(|w| w.to_ne_bytes()).collect();
            assert_eq!(got, payload, "{} round {round}: inline write", L::NAME);
            // A read.
            b.theirs[20] = 0xfeed_0000 + round;
            let end = b.post(WorkRequest::Read { local: b.local(30), remote: Bench::<L>::remote(20) });
            assert_eq!(b.run().expect("read"), end);
            assert_eq!(b.mine[30], 0xfeed_0000 + round, "{} round {round}: read", L::NAME);
            // Fetch-and-add and compare-and-swap, prior values into a scratch slot.
            let res = Sge { addr: b.q.ibuf_addr(1), len: 8, lkey: IBUF_LKEY };
            let before = b.theirs[40];
            let fa =
                WorkRequest::Atomic { op: Amo::Add(5).to_nic(), width: 8, remote: Bench::<L>::remote(40), result: res };
            let end = b.post(fa);
            assert_eq!(b.run().expect("fetch-add"), end);
            assert_eq!((b.theirs[40], b.q.ibuf_read(1)), (before + 5, before), "{} round {round}: FA", L::NAME);
            let old = b.theirs[41];
            let cond = if round % 2 == 0 { old } else { old ^ 1 };
            let cs = Amo::CompareSwap { cond, value: round }.to_nic();
            let end = b.post(WorkRequest::Atomic { op: cs, width: 8, remote: Bench::<L>::remote(41), result: res });
            assert_eq!(b.run().expect("compare-swap"), end);
            let want = if round % 2 == 0 { round } else { old };
            assert_eq!((b.theirs[41], b.q.ibuf_read(1)), (want, old), "{} round {round}: CS", L::NAME);
            // A NOP.
            let end = b.post(WorkRequest::Nop);
            assert_eq!(b.run().expect("nop"), end);
        }
        assert_eq!(b.q.cons_idx(), 240);
        assert!(b.q.error().is_none());
    }

    #[test]
    fn engine_executes_mlx5_queues() {
        executes::<Mlx5>(CqMode::Collapsed);
        executes::<Mlx5>(CqMode::Normal);
    }

    #[test]
    fn engine_executes_hns_queues() {
        executes::<Hns>(CqMode::Collapsed);
        executes::<Hns>(CqMode::Normal);
    }

    /// Errors come back as the layout's error CQEs, with its syndromes; the queue stops.
    fn errors<L: NicLayout>(mode: CqMode) {
        let syn = |f: Failure| L::syndrome(f);
        let nic = |e: Result<u64, QpError>| match e {
            Err(QpError::Nic { syndrome, opcode, wqe_counter }) => (syndrome, opcode, wqe_counter),
            other => panic!("{}: expected an error CQE, got {other:?}", L::NAME),
        };
        // A bad remote key, after a good write (the error names the second WQE).
        let mut b = Bench::<L>::new(mode);
        b.post(WorkRequest::Write { local: b.local(0), remote: Bench::<L>::remote(1) });
        b.run().expect("a good write");
        b.post(WorkRequest::Write { local: b.local(0), remote: Remote { rkey: 0x999, ..Bench::<L>::remote(1) } });
        let (s, _, idx) = nic(b.run());
        assert_eq!((s, idx), (syn(Failure::RemoteAccess), 1), "{}: bad rkey", L::NAME);
        assert!(b.q.error().is_some());
        // A bad local key.
        let mut b = Bench::<L>::new(mode);
        b.post(WorkRequest::Read { local: Sge { lkey: 0x998, ..b.local(0) }, remote: Bench::<L>::remote(1) });
        assert_eq!(nic(b.run()).0, syn(Failure::LocalProt), "{}: bad lkey", L::NAME);
        // An XOR: a masked fetch-and-add, which mlx5 executes and hns cannot express.
        let mut b = Bench::<L>::new(mode);
        let res = Sge { addr: b.q.ibuf_addr(2), len: 8, lkey: IBUF_LKEY };
        let before = b.theirs[7];
        let xor =
            WorkRequest::Atomic { op: Amo::Xor(0xff).to_nic(), width: 8, remote: Bench::<L>::remote(7), result: res };
        b.post(xor);
        if L::supports(&xor) {
            b.run().expect("xor");
            assert_eq!((b.theirs[7], b.q.ibuf_read(2)), (before ^ 0xff, before), "{}: xor", L::NAME);
        } else {
            let (s, op, _) = nic(b.run());
            assert_eq!((s, op), (syn(Failure::LocalQpOp), crate::ibgda::hns::opcode::MASK), "{}: xor", L::NAME);
            assert_eq!(b.theirs[7], before, "{}: a refused request does nothing", L::NAME);
        }
    }

    /// A registered local buffer's key covers its registration, and nothing once it is gone.
    fn registered_buffers<L: NicLayout>(mode: CqMode) {
        const KEY: u32 = 0x44;
        let syn = |f: Failure| L::syndrome(f);
        let refused = |e: Result<u64, QpError>| matches!(e, Err(QpError::Nic { syndrome, .. }) if syndrome == syn(Failure::LocalProt));
        let extra: Vec<u64> = vec![0xabcd_0001, 0xabcd_0002, 0xabcd_0003];
        let at = extra.as_ptr() as u64;
        let region = crate::nic::provider::MemRegion { addr: at, len: 16, lkey: KEY, rkey: KEY };
        let mut b = Bench::<L>::new(mode);
        b.local.write().push(crate::ibgda::LocalRegion { slot: 0, base: at, region });
        let end =
            b.post(WorkRequest::Write { local: Sge { addr: at, len: 16, lkey: KEY }, remote: Bench::<L>::remote(2) });
        assert_eq!(b.run().expect("a write from a registered buffer"), end);
        assert_eq!(b.theirs[2..4], [0xabcd_0001, 0xabcd_0002], "{}: registered write", L::NAME);
        // Past the registration's end.
        let mut b = Bench::<L>::new(mode);
        b.local.write().push(crate::ibgda::LocalRegion { slot: 0, base: at, region });
        b.post(WorkRequest::Write { local: Sge { addr: at, len: 24, lkey: KEY }, remote: Bench::<L>::remote(2) });
        assert!(refused(b.run()), "{}: a write past the registered buffer", L::NAME);
        // Unregistered.
        let mut b = Bench::<L>::new(mode);
        b.post(WorkRequest::Write { local: Sge { addr: at, len: 16, lkey: KEY }, remote: Bench::<L>::remote(2) });
        assert!(refused(b.run()), "{}: a write from a buffer no longer registered", L::NAME);
        assert_eq!(b.theirs[2], 0x2002, "{}: a refused write does nothing", L::NAME);
    }

    #[test]
    fn engine_takes_registered_buffers_keys() {
        registered_buffers::<Mlx5>(CqMode::Collapsed);
        registered_buffers::<Hns>(CqMode::Normal);
    }

    /// The host's quiet of queues device code drives (`Qp::quiet_observing`) sees completions
    /// in the CQ without consuming them, and a NIC error without latching it: it writes none of
    /// the words the GPU's threads read-modify-write.
    fn observing_quiet<L: NicLayout>(mode: CqMode) {
        let mut b = Bench::<L>::new(mode);
        for i in 0..3 {
            b.post(WorkRequest::Write { local: b.local(i), remote: Bench::<L>::remote(i) });
        }
        let stalled = b.q.quiet_observing(&mut || b.q.observe(), &mut || false);
        assert!(
            matches!(stalled, Err(QpError::Stalled { needed: 3, reached: 0 })),
            "{}: before the NIC ran: {stalled:?}",
            L::NAME
        );
        b.drain();
        b.q.quiet_observing(&mut || b.q.observe(), &mut || false).expect("complete once the NIC ran");
        assert_eq!(b.q.cons_idx(), 0, "{}: the observing quiet consumed completions", L::NAME);
        assert_eq!(b.q.poll().expect("the device's poll"), 3, "{}: the completions are still there", L::NAME);
        // A bad remote key: the error is seen, not latched.
        b.post(WorkRequest::Write { local: b.local(0), remote: Remote { rkey: 0x999, ..Bench::<L>::remote(1) } });
        b.drain();
        let seen = b.q.quiet_observing(&mut || b.q.observe(), &mut || false);
        assert!(matches!(seen, Err(QpError::Nic { wqe_counter: 3, .. })), "{}: {seen:?}", L::NAME);
        assert!(b.q.error().is_none(), "{}: the observing quiet latched the error", L::NAME);
        assert!(matches!(b.q.poll(), Err(QpError::Nic { .. })), "{}: the device's poll sees it", L::NAME);
    }

    #[test]
    fn the_hosts_quiet_of_device_driven_queues_only_observes() {
        observing_quiet::<Mlx5>(CqMode::Collapsed);
        observing_quiet::<Mlx5>(CqMode::Normal);
        observing_quiet::<Hns>(CqMode::Collapsed);
        observing_quiet::<Hns>(CqMode::Normal);
    }

    #[test]
    fn engine_errors_on_mlx5_queues() {
        errors::<Mlx5>(CqMode::Collapsed);
        errors::<Mlx5>(CqMode::Normal);
    }

    #[test]
    fn engine_errors_on_hns_queues() {
        errors::<Hns>(CqMode::Collapsed);
        errors::<Hns>(CqMode::Normal);
    }
}
