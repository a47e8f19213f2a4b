//! The device side of the IBGDA channel: what a device thread does for each operation —
//! build work requests, post them on its queue to the target PE, and wait for completions
//! when the operation must be complete before it returns.
//!
//! Queue choice: a thread uses queue `warp % num_rc` to every PE, so its operations to one PE
//! are on one queue and execute in order (a `fence` then only marks the next WQE fenced, which
//! the NIC honours for transports that do not order writes). Blocking operations that lend
//! local memory (a put from, or a get into, a local buffer; a fetched value in the scratch
//! buffer) wait for their completion; `_nbi` operations, `p` (inline) and non-fetching atomics
//! return once posted. `quiet` completes everything published on the thread's queues (on every
//! queue after a `_warp`/`_block` operation led by another thread).

use std::time::{Duration, Instant};

use oxshmem::SignalOp;
use oxshmem::transport::AmoOp;
use oxshmem::wait::SpinPolicy;

use super::Ibgda;
use super::layout::{Amo, Mlx5, NicAtomic, NicLayout, Remote, Sge, WorkRequest};
use super::qp::{IBUF_SLOT_BYTES, Qp, QpError};
use crate::cpu::{Thread, WARP_SIZE};
use crate::state::ErrorCode;

/// Largest single RDMA transfer (bytes); longer ones are split.
pub(crate) const MAX_XFER: usize = 1 << 30;

/// How a device thread waits for the NIC or for another thread: spin only briefly before
/// giving the core away, as device threads usually outnumber cores.
const IB_WAIT: SpinPolicy = SpinPolicy::spin_then_yield(16);

impl Thread<'_> {
    pub(crate) fn ib(&self) -> &Ibgda {
        self.dev.ibgda().expect("an IBGDA route exists only with the IBGDA channel")
    }

    /// This thread's queue group (`warp % num_rc`).
    fn ib_rc(&self) -> usize {
        self.block * self.grid.threads.div_ceil(WARP_SIZE) + self.thread / WARP_SIZE
    }

    /// Where this thread starts looking for a free scratch slot.
    fn ib_hint(&self) -> usize {
        self.block * self.grid.threads + self.thread
    }

    fn ib_fail(&self, opc: u32, pe: usize, e: QpError) {
        match e {
            QpError::Nic { wqe_counter, syndrome, opcode } => self.state.error.record(
                ErrorCode::Nic,
                opc,
                pe as i64,
                u64::from(wqe_counter),
                u64::from(syndrome) << 8 | u64::from(opcode),
                self.block as u32,
                self.thread as u32,
            ),
            QpError::Stalled { needed, reached } => self.state.error.record(
                ErrorCode::NicStalled,
                opc,
                pe as i64,
                needed,
                reached,
                self.block as u32,
                self.thread as u32,
            ),
        }
    }

    /// A wait callback: spins, then yields; past the device timeout it gives up — unless
    /// `lent` (the NIC may still touch memory this thread lent it) and the NIC thread lives.
    /// With the NIC thread gone it gives up at once: nothing will complete any more.
    fn ib_waiter(&self, lent: bool) -> impl FnMut() -> bool + '_ {
        let timeout = Duration::from_nanos(self.state.timeout_ns);
        let mut spins = 0u32;
        let mut deadline: Option<Instant> = None;
        let ib = self.ib();
        let nic = &ib.nic;
        move || {
            // Waits here depend on another thread (the NIC, or the thread that reserved the
            // slots before ours).
            if IB_WAIT.spin(&mut spins) {
                return true;
            }
            // Drive the NIC ourselves unless another thread does (see `softnic::progress`,
            // which also serves a doorbell rung while helping inside the queue code); else
            // yield.
            if !super::softnic::progress(ib) {
                IB_WAIT.pause(&mut spins);
            }
            // A stopped NIC completes nothing more (and touches no lent memory): give up now.
            if !nic.is_alive() {
                return false;
            }
            let d = *deadline.get_or_insert_with(|| Instant::now() + timeout);
            if Instant::now() < d {
                return true;
            }
            if lent && nic.is_alive() {
                std::thread::sleep(Duration::from_millis(1));
                return true;
            }
            false
        }
    }

    fn ib_remote(&self, pe: usize, addr: u64) -> Remote {
        let ib = self.ib();
        Remote { addr: ib.rbases[pe] + (addr - ib.heap_base), rkey: ib.rkeys[pe] }
    }

    /// Posts `wrs` on this thread's queue to `pe`; returns the queue and the batch's end.
    fn ib_post<L: NicLayout>(&self, opc: u32, pe: usize, wrs: &[WorkRequest<'_>]) -> Option<(&Qp<L>, u64)> {
        let ib = self.ib();
        let qp = ib.qp::<L>(self.ib_rc(), pe);
        let fence = self.fence_pending.replace(false);
        self.ib_posted.set(self.ib_posted.get() | 1 << pe.min(63));
        let mut w = self.ib_waiter(false);
        match qp.post(wrs, true, fence, &mut w) {
            Ok(end) => {
                ib.kick(ib.qp_index(self.ib_rc(), pe));
                Some((qp, end))
            }
            Err(e) => {
                self.ib_fail(opc, pe, e);
                None
            }
        }
    }

    /// Waits until `qp` has completed everything below `end`.
    fn ib_wait<L: NicLayout>(&self, opc: u32, qp: &Qp<L>, end: u64, lent: bool) -> bool {
        let mut w = self.ib_waiter(lent);
        match qp.wait_complete(end, &mut w) {
            Ok(()) => true,
            Err(e) => {
                self.ib_fail(opc, qp.peer() as usize, e);
                false
            }
        }
    }

    fn ibuf_key(&self, _pe: usize) -> u32 {
        self.ib().ibuf_lkey
    }

    /// Blocking put from a local buffer: inline when it fits, else from the implicit region,
    /// waiting for completion (the NIC reads `src`).
    pub(crate) fn ib_put_local<L: NicLayout>(&self, opc: u32, pe: usize, dst: u64, src: &[u8]) {
        if src.len() <= L::MAX_INLINE {
            self.ib_post::<L>(opc, pe, &[WorkRequest::WriteInline { data: src, remote: self.ib_remote(pe, dst) }]);
            return;
        }
        let mut last = None;
        for (k, chunk) in src.chunks(MAX_XFER).enumerate() {
            let local = Sge { addr: chunk.as_ptr() as u64, len: chunk.len() as u32, lkey: self.ib().implicit_lkey };
            let remote = self.ib_remote(pe, dst + (k * MAX_XFER) as u64);
            match self.ib_post::<L>(opc, pe, &[WorkRequest::Write { local, remote }]) {
                Some(p) => last = Some(p),
                None => return,
            }
        }
        if let Some((qp, end)) = last {
            self.ib_wait(opc, qp, end, true);
        }
    }

    /// Non-blocking put from this PE's symmetric heap.
    pub(crate) fn ib_put_sym<L: NicLayout>(&self, opc: u32, pe: usize, dst: u64, src: u64, len: usize) {
        let mut off = 0;
        while off < len {
            let n = (len - off).min(MAX_XFER);
            let local = Sge { addr: src + off as u64, len: n as u32, lkey: self.ib().heap_lkey };
            let remote = self.ib_remote(pe, dst + off as u64);
            if self.ib_post::<L>(opc, pe, &[WorkRequest::Write { local, remote }]).is_none() {
                return;
            }
            off += n;
        }
    }

    /// Blocking get into a local buffer: small ones through the scratch buffer, larger ones
    /// straight into `dst` through the implicit region.
    pub(crate) fn ib_get_local<L: NicLayout>(&self, opc: u32, pe: usize, dst: &mut [u8], src: u64) {
        if dst.is_empty() {
            return;
        }
        let ib = self.ib();
        if dst.len() <= IBUF_SLOT_BYTES {
            let qp = ib.qp::<L>(self.ib_rc(), pe);
            let mut w = self.ib_waiter(false);
            let Some(t) = qp.ibuf_acquire(self.ib_hint(), &mut w) else {
                self.ib_fail(opc, pe, QpError::Stalled { needed: 0, reached: 0 });
                return;
            };
            let local = Sge { addr: qp.ibuf_addr(t), len: dst.len() as u32, lkey: self.ibuf_key(pe) };
            if let Some((qp, end)) =
                self.ib_post::<L>(opc, pe, &[WorkRequest::Read { local, remote: self.ib_remote(pe, src) }])
                && self.ib_wait(opc, qp, end, true)
            {
                qp.ibuf_copy_out(t, dst);
            }
            qp.ibuf_release(t);
            return;
        }
        let mut last = None;
        for (k, chunk) in dst.chunks_mut(MAX_XFER).enumerate() {
            let local = Sge { addr: chunk.as_mut_ptr() as u64, len: chunk.len() as u32, lkey: self.ib().implicit_lkey };
            let remote = self.ib_remote(pe, src + (k * MAX_XFER) as u64);
            match self.ib_post::<L>(opc, pe, &[WorkRequest::Read { local, remote }]) {
                Some(p) => last = Some(p),
                None => return,
            }
        }
        if let Some((qp, end)) = last {
            self.ib_wait(opc, qp, end, true);
        }
    }

    /// Non-blocking get into this PE's symmetric heap.
    pub(crate) fn ib_get_sym<L: NicLayout>(&self, opc: u32, pe: usize, dst: u64, src: u64, len: usize) {
        let mut off = 0;
        while off < len {
            let n = (len - off).min(MAX_XFER);
            let local = Sge { addr: dst + off as u64, len: n as u32, lkey: self.ib().heap_lkey };
            let remote = self.ib_remote(pe, src + off as u64);
            if self.ib_post::<L>(opc, pe, &[WorkRequest::Read { local, remote }]).is_none() {
                return;
            }
            off += n;
        }
    }

    /// An atomic on `width` bytes at `dst` on `pe`; fetching ones wait and return the prior
    /// value (through the scratch buffer), others return 0 once posted. An atomic the NIC's
    /// format cannot express (hns: 8-byte plain fetch-add and compare-swap only) becomes a
    /// compare-and-swap loop ([`ib_amo_emulated`](Self::ib_amo_emulated)), which waits.
    pub(crate) fn ib_amo<L: NicLayout>(
        &self,
        opc: u32,
        pe: usize,
        dst: u64,
        width: u32,
        op: AmoOp,
        fetch: bool,
    ) -> u64 {
        let amo = match op {
            AmoOp::Fetch => Amo::Fetch,
            AmoOp::Set(v) | AmoOp::Swap(v) => Amo::Set(v),
            AmoOp::CompareSwap { cond, value } => Amo::CompareSwap { cond, value },
            AmoOp::FetchAdd(v) => Amo::Add(v),
            AmoOp::FetchAnd(v) => Amo::And(v),
            AmoOp::FetchOr(v) => Amo::Or(v),
            AmoOp::FetchXor(v) => Amo::Xor(v),
        };
        self.ib_nic_atomic::<L>(opc, pe, dst, width, amo.to_nic(), fetch).unwrap_or(0)
    }

    /// `op` on `width` bytes at `dst` on `pe`, as [`ib_amo`](Self::ib_amo) does it: the prior
    /// value (0 when not fetching), or `None` when it failed (the failure is recorded).
    fn ib_nic_atomic<L: NicLayout>(
        &self,
        opc: u32,
        pe: usize,
        dst: u64,
        width: u32,
        op: NicAtomic,
        fetch: bool,
    ) -> Option<u64> {
        let qp = self.ib().qp::<L>(self.ib_rc(), pe);
        let remote = self.ib_remote(pe, dst);
        let key = self.ibuf_key(pe);
        let sink = Sge { addr: qp.ibuf_addr(0), len: width, lkey: key };
        if !L::supports(&WorkRequest::Atomic { op, width, remote, result: sink }) {
            return self.ib_amo_emulated::<L>(opc, pe, dst, width, op);
        }
        if !fetch {
            return self.ib_post::<L>(opc, pe, &[WorkRequest::Atomic { op, width, remote, result: sink }]).map(|_| 0);
        }
        let mut w = self.ib_waiter(false);
        let Some(t) = qp.ibuf_acquire(self.ib_hint(), &mut w) else {
            self.ib_fail(opc, pe, QpError::Stalled { needed: 0, reached: 0 });
            return None;
        };
        let result = Sge { addr: qp.ibuf_addr(t), len: width, lkey: key };
        let mut out = None;
        if let Some((qp, end)) = self.ib_post::<L>(opc, pe, &[WorkRequest::Atomic { op, width, remote, result }])
            && self.ib_wait(opc, qp, end, true)
        {
            let raw = qp.ibuf_read(t);
            // 4-byte results arrive big-endian; 8-byte ones in host order.
            out = Some(if width == 4 { u64::from(u32::from_be_bytes((raw as u32).to_ne_bytes())) } else { raw });
        }
        qp.ibuf_release(t);
        out
    }

    /// An atomic the NIC's format cannot express, from the two every RDMA NIC has: read the
    /// naturally aligned 8-byte word holding the target with a fetch-and-add of 0, then
    /// compare-and-swap the word with the op applied to the target's bytes until no other
    /// update came between (the NIC's answer is the word it saw: the next try's start). Every
    /// NIC atomic on the word is atomic with respect to this one; the other bytes of the word
    /// are written back as they were. Returns the prior value (`None`: a step failed, which is
    /// recorded); waits for the NIC.
    fn ib_amo_emulated<L: NicLayout>(&self, opc: u32, pe: usize, dst: u64, width: u32, op: NicAtomic) -> Option<u64> {
        const READ: NicAtomic = NicAtomic::FetchAdd { add: 0, boundary: 0 };
        let cas = |swap, compare| NicAtomic::CompareSwap { swap, compare, swap_mask: u64::MAX, compare_mask: u64::MAX };
        // Built from what every layout has; a layout lacking either would recurse for ever.
        debug_assert!(
            [READ, cas(0, 0)].into_iter().all(|op| L::supports(&WorkRequest::Atomic {
                op,
                width: 8,
                remote: Remote { addr: 0, rkey: 0 },
                result: Sge { addr: 0, len: 8, lkey: 0 },
            })),
            "{}: no plain 8-byte atomics",
            L::NAME
        );
        let word = dst & !7;
        // The target's place in the word (little-endian memory).
        let shift = (dst - word) * 8;
        let mask = if width == 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
        let mut seen = self.ib_nic_atomic::<L>(opc, pe, word, 8, READ, true)?;
        loop {
            let old = seen >> shift & mask;
            let new = op.apply(old, width) & mask;
            if new == old {
                return Some(old);
            }
            let want = seen & !(mask << shift) | new << shift;
            let was = self.ib_nic_atomic::<L>(opc, pe, word, 8, cas(want, seen), true)?;
            if was == seen {
                return Some(old);
            }
            seen = was;
        }
    }

    /// The signal update of put_signal / signal_op.
    fn ib_signal_amo(value: u64, sop: SignalOp) -> NicAtomic {
        match sop {
            SignalOp::Set => Amo::Set(value),
            SignalOp::Add => Amo::Add(value),
        }
        .to_nic()
    }

    /// The signal update of put_signal / signal_op as a work request, if the NIC's format
    /// expresses it.
    fn ib_signal_wr<L: NicLayout>(
        &self,
        pe: usize,
        sig: u64,
        value: u64,
        sop: SignalOp,
    ) -> Option<WorkRequest<'static>> {
        let qp = self.ib().qp::<L>(self.ib_rc(), pe);
        let wr = WorkRequest::Atomic {
            op: Self::ib_signal_amo(value, sop),
            width: 8,
            remote: self.ib_remote(pe, sig),
            result: Sge { addr: qp.ibuf_addr(0), len: 8, lkey: self.ibuf_key(pe) },
        };
        L::supports(&wr).then_some(wr)
    }

    /// put_signal: the write and the signal in one batch on one queue (RC executes them in
    /// order, so the signal lands after the data). `src` is local (blocking: inline, or wait)
    /// or symmetric at `sym_src` (non-blocking). When the NIC's format cannot express the
    /// signal update (hns: a set), the data goes first and the update follows on the same
    /// queue as [`ib_amo_emulated`](Self::ib_amo_emulated)'s loop, whose first read the NIC
    /// executes after the data.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn ib_put_signal<L: NicLayout>(
        &self,
        opc: u32,
        pe: usize,
        dst: u64,
        src: Option<&[u8]>,
        sym_src: u64,
        len: usize,
        sig: u64,
        value: u64,
        sop: SignalOp,
    ) {
        let Some(sigwr) = self.ib_signal_wr::<L>(pe, sig, value, sop) else {
            match src {
                Some(s) => self.ib_put_local::<L>(opc, pe, dst, s),
                None => self.ib_put_sym::<L>(opc, pe, dst, sym_src, len),
            }
            self.ib_signal_op::<L>(opc, pe, sig, value, sop);
            return;
        };
        let remote = self.ib_remote(pe, dst);
        match src {
            Some(s) if s.len() <= L::MAX_INLINE => {
                self.ib_post::<L>(opc, pe, &[WorkRequest::WriteInline { data: s, remote }, sigwr]);
            }
            Some(s) if s.len() <= MAX_XFER => {
                let local = Sge { addr: s.as_ptr() as u64, len: s.len() as u32, lkey: self.ib().implicit_lkey };
                if let Some((qp, end)) = self.ib_post::<L>(opc, pe, &[WorkRequest::Write { local, remote }, sigwr]) {
                    self.ib_wait(opc, qp, end, true);
                }
            }
            Some(s) => {
                self.ib_put_local::<L>(opc, pe, dst, s);
                self.ib_post::<L>(opc, pe, &[sigwr]);
            }
            None if len <= MAX_XFER => {
                let local = Sge { addr: sym_src, len: len as u32, lkey: self.ib().heap_lkey };
                self.ib_post::<L>(opc, pe, &[WorkRequest::Write { local, remote }, sigwr]);
            }
            None => {
                self.ib_put_sym::<L>(opc, pe, dst, sym_src, len);
                self.ib_post::<L>(opc, pe, &[sigwr]);
            }
        }
    }

    /// signal_op: one atomic, posted (or emulated, see [`ib_put_signal`](Self::ib_put_signal)).
    pub(crate) fn ib_signal_op<L: NicLayout>(&self, opc: u32, pe: usize, sig: u64, value: u64, sop: SignalOp) {
        match self.ib_signal_wr::<L>(pe, sig, value, sop) {
            Some(wr) => {
                self.ib_post::<L>(opc, pe, &[wr]);
            }
            None => {
                self.ib_amo_emulated::<L>(opc, pe, sig, 8, Self::ib_signal_amo(value, sop));
            }
        }
    }

    /// quiet over this thread's queues (every queue after a group operation).
    pub(crate) fn ib_quiet<L: NicLayout>(&self, opc: u32) {
        let ib = self.ib();
        let all = self.ib_quiet_all.replace(false);
        let posted = if all { u64::MAX } else { self.ib_posted.get() };
        self.ib_posted.set(0);
        let rcs = if all { 0..ib.num_rc } else { self.ib_rc() % ib.num_rc..self.ib_rc() % ib.num_rc + 1 };
        for rc in rcs {
            for pe in (0..ib.n_pes).filter(|&pe| posted & 1 << pe.min(63) != 0) {
                let qp = ib.qp::<L>(rc, pe);
                let mut w = self.ib_waiter(false);
                if let Err(e) = qp.quiet(&mut w) {
                    self.ib_fail(opc, pe, e);
                }
            }
        }
    }
}

/// The local keys of this PE's IBGDA registrations (what its NIC gave at set-up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbgdaKeys {
    /// The symmetric heap's.
    pub heap: u32,
    /// The implicit region's: any other local address.
    pub implicit: u32,
    /// The channel's allocation's, which holds every queue's scratch buffer.
    pub ibuf: u32,
    /// That allocation: its address and length.
    pub ibuf_region: (u64, u64),
}

impl Thread<'_> {
    /// The local keys of this PE's IBGDA registrations. For tests of the NIC itself.
    #[doc(hidden)]
    pub fn ibgda_keys(&self) -> IbgdaKeys {
        let ib = self.ib();
        let region = (ib.memory().as_ptr() as u64, ib.memory().len() as u64);
        IbgdaKeys { heap: ib.heap_lkey, implicit: ib.implicit_lkey, ibuf: ib.ibuf_lkey, ibuf_region: region }
    }

    /// The queue this thread uses to `pe`, and its index among the channel's queues. For tests
    /// of the NIC itself.
    #[doc(hidden)]
    ///
    /// # Panics
    /// When the queues are not mlx5's.
    pub fn ibgda_queue(&self, pe: usize) -> (&Qp<Mlx5>, usize) {
        let ib = self.ib();
        (ib.qp::<Mlx5>(self.ib_rc(), pe), ib.qp_index(self.ib_rc(), pe))
    }

    /// The remote address and key of the symmetric address `addr` on `pe`, as WQEs carry them.
    #[doc(hidden)]
    pub fn ibgda_remote(&self, pe: usize, addr: u64) -> Remote {
        self.ib_remote(pe, addr)
    }

    /// Posts `wr` unchecked on this thread's queue to `pe` (signalled), and waits for its
    /// completion: the NIC's own checks are what is under test. Errors are recorded like any
    /// device error.
    #[doc(hidden)]
    pub fn ibgda_post_unchecked(&self, pe: usize, wr: WorkRequest<'_>) {
        crate::with_layout!(self.ib().layout, L => {
            if let Some((qp, end)) = self.ib_post::<L>(crate::state::op::KERNEL, pe, &[wr]) {
                self.ib_wait(crate::state::op::KERNEL, qp, end, true);
            }
        })
    }

    /// Posts raw slots (possibly malformed) on this thread's queue to `pe` and waits for them.
    ///
    /// # Panics
    /// When the queues are not mlx5's.
    #[doc(hidden)]
    pub fn ibgda_post_slots(&self, pe: usize, slots: &[super::layout::Wqebb]) {
        let qp = self.ib().qp::<Mlx5>(self.ib_rc(), pe);
        let mut w = self.ib_waiter(false);
        match qp.post_raw_slots(slots, &mut w) {
            Ok(end) => {
                self.ib().kick(self.ib().qp_index(self.ib_rc(), pe));
                self.ib_wait(crate::state::op::KERNEL, qp, end, true);
            }
            Err(e) => self.ib_fail(crate::state::op::KERNEL, pe, e),
        }
    }
}

/// Host-side quiet over every queue (`Device::quiet`); returns the first failure.
pub(crate) fn host_quiet(ib: &Ibgda, timeout_ns: u64) -> Result<(), (usize, QpError)> {
    crate::with_layout!(ib.layout, L => host_quiet_on::<L>(ib, timeout_ns))
}

fn host_quiet_on<L: NicLayout>(ib: &Ibgda, timeout_ns: u64) -> Result<(), (usize, QpError)> {
    let deadline = Instant::now() + Duration::from_nanos(timeout_ns);
    let mut pacing = crate::channel::sync::Pacing::new();
    for qp in ib.queues::<L>() {
        let mut w = || {
            if !super::softnic::progress(ib) {
                pacing.pause();
            }
            Instant::now() < deadline
        };
        qp.quiet(&mut w).map_err(|e| (qp.peer() as usize, e))?;
    }
    Ok(())
}
