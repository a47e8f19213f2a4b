//! One IBGDA queue pair: the send queue of 64-byte slots, its counters, the doorbell record and
//! register, the completion queue and the scratch buffer — and the protocol on them.
//!
//! Producer (a device thread), for `n` slots:
//! 1. reserve: `base = resv_head.fetch_add(n)` — once `n` more slots look free
//!    (`resv_head + n - nwqes <= cons_idx`): NVSHMEM reserves first and then waits for room,
//!    but a CPU device thread that waits yields its core while holding a reservation nobody
//!    can publish past (see `Qp::wait_room`);
//! 2. flow control: wait until `cons_idx >= base + n - nwqes`, so that no slot is reused before
//!    its completion has been seen (producers that raced for the last free slots);
//! 3. write the slots (relaxed word stores — plain stores on a GPU);
//! 4. publish: batches become ready strictly in reservation order (`ready_head` only ever
//!    covers contiguous, fully written batches). NVSHMEM's producer spins on
//!    `CAS(ready_head, base, base + n)` until every earlier batch is ready; a GPU warp is never
//!    descheduled between reserving and publishing, but a CPU device thread is, and then every
//!    later producer of the queue would wait for the scheduler. So here a producer marks its
//!    batch as written (`marks[base % nwqes] = end`) and then *advances* `ready_head` over every
//!    marked batch it finds at the head — its own and any later ones — and leaves if the head
//!    batch is not written yet: that batch's owner advances over ours when it publishes. No
//!    producer waits for another (Disruptor-style combining publish);
//! 5. ring unless a later reservation will (no one reserved after the new ready head, no batch
//!    boundary crossed): under the doorbell lock, `prod_idx.fetch_max(ready)`, then the doorbell
//!    record (the low 16 bits of the producer index in the layout's byte order — big-endian
//!    for mlx5, little-endian for hns —, release) and the doorbell register.
//!    NVSHMEM's producer spins for that lock; here the request is recorded (`ring_req`) and
//!    whoever holds the lock rings it before letting go — a CPU device thread descheduled while
//!    holding the lock would otherwise keep every other ringer spinning for a time slice.
//!
//! A waiter that needs a completion whose slots are published but not yet announced rings
//! itself (step 5 is idempotent): the thread that skipped ringing left that to a later
//! reserver, and that reserver may itself be waiting in flow control.
//!
//! Completions: the NIC writes a CQE only for signalled WQEs (the last of each call), in order.
//! In *collapsed* mode it always overwrites entry 0 and the device reads `wqe_counter`; the
//! 16-bit counter is widened against `cons_idx` read before and after the entry (a seqlock):
//! while `cons_idx` stands still, producers cannot get more than `nwqes` ahead of it, so the
//! entry is within 2^15 of it. In *normal* mode entries form a ring with an owner bit that
//! flips each lap; one poller at a time consumes them and writes the CQ's consumer index, which
//! the NIC reads so it never overwrites an entry not yet consumed.
//!
//! Layout: [`Qp`] is plain `#[repr(C)]` data — the descriptor: counters and ring words on
//! their own cache lines, raw pointers to the doorbell words, send queue, marks, CQ and scratch
//! buffer, sizes and modes — shared with CUDA device code through the generated header
//! `device/include/oxshmem/device_state.h` (`oxshmem_qp_t`, `oxshmem_qp_counters_t`,
//! `oxshmem_qp_ring_t`, `oxshmem_qp_doorbell_t`); `tests/c_layout.rs` checks that both
//! compilers agree on it. What the producers read-modify-write is the descriptor and the marks;
//! what the NIC and the host read is the [`Doorbell`] words and the arrays: two allocations
//! from a [`DeviceAlloc`] for the IBGDA channel (GPU memory for the first where the producers
//! are GPU threads), one for a [`QpBox`], which owns a queue alone.
//!
//! Its atomics come from `crate::sync`: std's, or loom's when the crate is built with
//! `--cfg loom`, as `tests/loom_ibgda.rs` builds it to model-check this protocol.

use std::marker::PhantomData;

use std::sync::Arc;

use super::devmem::{Carve, DeviceAlloc, DeviceMem, host};
use super::layout::{Completion, NicLayout, WorkRequest, WqeFlags, Wqebb};
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A value on its own cache line (C: `oxshmem_qp_line_t`).
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Line<T> {
    /// The value.
    pub(crate) value: T,
}

/// Producers' and pollers' words: reservation, publication, completion (and in normal CQ mode
/// the CQ's consumer index, read by the NIC — 64-bit like the NIC's own CQE count, so that
/// `pcqe - cq_ci` stays right past 2^32 completions — and the lock of the one poller that
/// consumes entries). One line: a device thread's post and its quiet touch all of them.
/// (C: `oxshmem_qp_counters_t`.)
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Counters {
    pub(crate) resv_head: AtomicU64,
    pub(crate) ready_head: AtomicU64,
    pub(crate) cons_idx: AtomicU64,
    pub(crate) cq_ci: AtomicU64,
    pub(crate) poll_lock: AtomicU32,
}

/// The ringers' words: the doorbell lock, the producer index announced so far, the highest
/// index some thread asked to ring (see [`Qp::ring`]), and the NIC's doorbell register as the
/// producers address it. The producers read-modify-write them and nobody else touches them, so
/// they stay with the queue's descriptor, in the producers' own memory (GPU memory for GPU
/// producers). (C: `oxshmem_qp_ring_t`.)
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Ringing {
    pub(crate) db_lock: AtomicU32,
    pub(crate) prod_idx: AtomicU64,
    pub(crate) ring_req: AtomicU64,
    /// A hardware NIC's doorbell register as the producers here address it (the UAR page's
    /// register, mapped), which a ring writes after the doorbell record; 0 for the software NIC,
    /// which watches [`Doorbell::db`].
    pub(crate) uar: AtomicU64,
}

/// The words the NIC and the host read, in the queue's memory beside its send queue (host
/// memory by default, which the NIC and the host reach; a descriptor in GPU memory points at
/// them): the doorbell record (word 1 is the send counter, as [`NicLayout::dbr_value`] writes
/// it: mlx5's big-endian send counter, hns's little-endian SQ record) and the doorbell value
/// of the last ring (a UAR word, as [`NicLayout::doorbell`] writes it: mlx5's first 8 bytes of
/// a control segment, hns's `struct hns_roce_db`), both stored by the producers; a normal-mode
/// CQ's consumer index as its one poller last stored it; and the software NIC's own words. Each
/// has one writer: no side read-modify-writes a word the other side writes. One line: a ring
/// and a software-NIC pass touch it. (C: `oxshmem_qp_doorbell_t`.)
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Doorbell {
    /// The software NIC's lock on this queue (not part of the mlx5 queue): whoever holds it
    /// consumes the queue. Only the software NIC's threads take it.
    pub(crate) drive: AtomicU32,
    pub(crate) dbr: [AtomicU32; 2],
    pub(crate) db: AtomicU64,
    /// The NIC's consumed index (`u64::MAX` once the queue failed) and its completions
    /// written, as of its last pass — what a thread reads to see whether work is pending.
    pub(crate) seen: [AtomicU64; 2],
    /// For the software NIC standing in for a NIC that reads its doorbell register (the soft
    /// provider's `OXSHMEM_SOFTNIC_DOORBELL=register`): that register's address here, from
    /// which it learns the producer index instead of from the record; 0: the record.
    pub(crate) soft_reg: AtomicU64,
    /// A normal-mode CQ's consumer index as its poller last stored it (the poller's own copy
    /// is [`Counters::cq_ci`]): how far the NIC may write entries, and where the host's
    /// observing quiet starts reading them.
    pub(crate) cq_ci: AtomicU64,
}

/// Completion-queue mode (stored as a `u32` in [`Qp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum CqMode {
    /// One entry, always overwritten (what NVSHMEM's IBGDA creates).
    Collapsed = 0,
    /// A ring of entries with an owner bit and a consumer index.
    Normal = 1,
}

/// Why a producer or poller gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpError {
    /// The NIC reported an error completion (the queue is now in error).
    Nic {
        /// Index of the failed WQE's first slot (low 16 bits).
        wqe_counter: u16,
        /// Syndrome.
        syndrome: u8,
        /// The failed WQE's opcode.
        opcode: u8,
    },
    /// The caller's wait gave up (timeout) with `cons_idx` short of `needed`.
    Stalled {
        /// The index waited for.
        needed: u64,
        /// The completion index reached.
        reached: u64,
    },
}

/// Slots of the scratch buffer each queue has.
pub const IBUF_SLOTS: usize = 64;
/// Bytes of one scratch slot (32 lanes × 8 bytes).
pub const IBUF_SLOT_BYTES: usize = 256;

/// Words of a queue's scratch buffer.
pub const IBUF_WORDS: usize = IBUF_SLOTS * IBUF_SLOT_BYTES / 8;

/// The word a queue latches its first NIC error in ([`Qp`]'s `error`): 0 none, else
/// `LATCHED | counter << COUNTER_SHIFT | syndrome << SYNDROME_SHIFT | opcode`.
pub mod latch {
    /// Set in every latched error (so that an error of all-zero fields is not 0).
    pub const LATCHED: u64 = 1 << 63;
    /// The failed WQE's 16-bit counter.
    pub const COUNTER_SHIFT: u32 = 16;
    /// The error CQE's syndrome (8 bits); the WQE's opcode is in the low 8 bits.
    pub const SYNDROME_SHIFT: u32 = 8;
}

/// One queue pair's descriptor (C: `oxshmem_qp_t`). `L` is the NIC's format. Plain data: the
/// arrays and the doorbell words it points to live in memory its owner ([`QpBox`], or the
/// IBGDA channel) keeps alive.
///
/// What the producers read-modify-write (the counters, the ring's lock and indices, the error
/// latch, the scratch bitmap, the marks) is the descriptor and the marks, which the IBGDA
/// channel of GPU producers places in GPU memory (NVSHMEM's device QP and its management
/// variables); what the NIC or the host reads (the send queue, the CQ, the scratch buffer,
/// the [`Doorbell`] words) is the queue's memory, host memory by default.
#[repr(C)]
#[derive(Debug)]
pub struct Qp<L: NicLayout> {
    // The counters in two cache lines: a device thread's post and quiet touch few lines
    // (they are cold whenever the scheduler has moved it to another core since its last one).
    pub(crate) prod: Counters,
    pub(crate) ring: Ringing,
    /// The error latched from an error CQE (0: none; else 1 << 63 | counter << 16 | syndrome << 8 | opcode).
    pub(crate) error: Line<AtomicU64>,
    /// Scratch slots in use (bit 0, the sink, always).
    pub(crate) ibuf_busy: Line<AtomicU64>,
    /// The words the NIC and the host read ([`Doorbell`]), in the queue's memory.
    pub(crate) nic: *mut Doorbell,
    /// `nwqes * 8` words: the send queue's 64-byte slots.
    pub(crate) sq: *mut AtomicU64,
    /// `nwqes` words. Per slot: the end index of the written batch that starts there (stale
    /// values from an earlier lap are ≤ the slot's index).
    pub(crate) marks: *mut AtomicU64,
    /// `ncqes * 8` words: the CQ's 64-byte entries.
    pub(crate) cq: *mut AtomicU64,
    /// [`IBUF_WORDS`] words: the scratch buffer.
    pub(crate) ibuf: *mut AtomicU64,
    pub(crate) nwqes: u64,
    pub(crate) ncqes: u64,
    pub(crate) batch: u64,
    pub(crate) mode: CqMode,
    pub(crate) qpn: u32,
    pub(crate) peer: u32,
    pub(crate) _l: PhantomData<L>,
}

// SAFETY: the arrays live as long as the queue (its owner keeps them) and are only accessed
// through atomics.
unsafe impl<L: NicLayout> Send for Qp<L> {}
// SAFETY: as above.
unsafe impl<L: NicLayout> Sync for Qp<L> {}

/// What the host's observing quiet reads of a queue's descriptor ([`Qp::observe`]): the
/// reservation and completion indices and the latched error word.
#[derive(Debug, Clone, Copy, Default)]
pub struct Observed {
    /// `resv_head`.
    pub resv_head: u64,
    /// `cons_idx`.
    pub cons_idx: u64,
    /// The error latch (0: none; see [`latch`]).
    pub error: u64,
}

/// The result of a post: the index just past the last slot written.
pub type PostEnd = u64;

/// Where a queue's arrays lie (byte offsets, see [`Qp::carve`]): the doorbell words, send
/// queue, CQ and scratch buffer in the queue's memory; the marks (which only producers touch)
/// in the descriptor's.
#[derive(Debug, Clone, Copy)]
pub struct QpParts {
    nic: usize,
    sq: usize,
    cq: usize,
    ibuf: usize,
    marks: usize,
}

impl QpParts {
    /// The send queue's byte offset in the allocation (page-aligned: a NIC maps it by pages).
    pub fn sq_offset(&self) -> usize {
        self.sq
    }

    /// The completion queue's byte offset in the allocation.
    pub fn cq_offset(&self) -> usize {
        self.cq
    }

    /// The doorbell words' byte offset in the allocation (the doorbell record is their
    /// `dbr` field).
    pub fn doorbell_offset(&self) -> usize {
        self.nic
    }
}

/// CQ entries a queue has: 1 in collapsed mode.
pub fn cq_entries(mode: CqMode, ncqes: usize) -> usize {
    if mode == CqMode::Collapsed { 1 } else { ncqes.max(1) }
}

/// Owns one queue: the [`Qp`] and its arrays in one allocation. Dereferences to the queue.
#[derive(Debug)]
pub struct QpBox<L: NicLayout> {
    qp: *mut Qp<L>,
    mem: DeviceMem,
}

// SAFETY: as for `Qp`.
unsafe impl<L: NicLayout> Send for QpBox<L> {}
// SAFETY: as above.
unsafe impl<L: NicLayout> Sync for QpBox<L> {}

impl<L: NicLayout> QpBox<L> {
    /// A queue of `nwqes` slots (a power of two, 2..=32768) to PE `peer`, QP number `qpn`,
    /// ringing the doorbell at least every `batch` slots, on the Rust heap.
    ///
    /// # Panics
    /// When `nwqes` is not such a power of two, or the heap cannot supply the memory.
    pub fn new(nwqes: usize, mode: CqMode, ncqes: usize, batch: usize, qpn: u32, peer: u32) -> Self {
        Self::new_in(nwqes, mode, ncqes, batch, qpn, peer, &host()).unwrap_or_else(|e| panic!("QpBox::new: {e}"))
    }

    /// As [`new`](Self::new), in memory from `from`.
    #[allow(clippy::too_many_arguments)]
    pub fn new_in(
        nwqes: usize,
        mode: CqMode,
        ncqes: usize,
        batch: usize,
        qpn: u32,
        peer: u32,
        from: &Arc<dyn DeviceAlloc>,
    ) -> Result<Self, String> {
        if !nwqes.is_power_of_two() || !(2..=32768).contains(&nwqes) {
            return Err(format!("nwqes {nwqes}: expected a power of two from 2 to 32768"));
        }
        let mut c = Carve::default();
        let at = c.take::<Qp<L>>(1);
        let marks = Qp::<L>::carve_marks(&mut c, nwqes);
        let parts = Qp::<L>::carve(&mut c, marks, nwqes, mode, ncqes);
        let mem = DeviceMem::new(c.bytes(), from).map_err(|e| format!("queue {qpn:#x}: {e}"))?;
        // SAFETY: the parts lie inside the fresh allocation, aligned (Carve); one allocation
        // holds both the descriptor's and the queue's parts.
        let qp = unsafe {
            let qp = mem.as_ptr().add(at).cast::<Qp<L>>();
            Qp::init_at(qp, mem.as_ptr(), mem.as_ptr(), parts, nwqes, mode, ncqes, batch, qpn, peer);
            qp
        };
        Ok(QpBox { qp, mem })
    }

    /// The allocation the queue lives in.
    pub fn memory(&self) -> &DeviceMem {
        &self.mem
    }
}

impl<L: NicLayout> std::ops::Deref for QpBox<L> {
    type Target = Qp<L>;
    fn deref(&self) -> &Qp<L> {
        // SAFETY: placed in `new_in`, alive as long as `mem`.
        unsafe { &*self.qp }
    }
}

impl<L: NicLayout> Drop for QpBox<L> {
    fn drop(&mut self) {
        // SAFETY: placed in `new_in`, dropped once, before `mem` is freed.
        unsafe { Qp::drop_at(self.qp) }
    }
}

impl<L: NicLayout> Qp<L> {
    /// Lays out the marks of a queue of `nwqes` slots in `c`, the memory of its descriptor
    /// (only producers touch them); pass the offset to [`carve`](Self::carve).
    pub fn carve_marks(c: &mut Carve, nwqes: usize) -> usize {
        c.take::<AtomicU64>(nwqes)
    }

    /// Lays out a queue's doorbell words and arrays (`nwqes` slots, `ncqes` CQ entries in
    /// normal mode) in `c`, the queue's memory, beside `marks` from
    /// [`carve_marks`](Self::carve_marks).
    pub fn carve(c: &mut Carve, marks: usize, nwqes: usize, mode: CqMode, ncqes: usize) -> QpParts {
        QpParts {
            nic: c.take::<Doorbell>(1),
            sq: c.take_page::<AtomicU64>(nwqes * 8),
            cq: c.take_page::<AtomicU64>(cq_entries(mode, ncqes) * 8),
            ibuf: c.take::<AtomicU64>(IBUF_WORDS),
            marks,
        }
    }

    /// Builds a queue at `place` with its doorbell words and arrays at `base + parts` and its
    /// marks at `marks_base + parts` (see [`new`](QpBox::new)).
    ///
    /// # Safety
    /// `place` must be valid for writes and aligned for a `Qp`; `parts` must come from
    /// [`carve`](Self::carve) with the same `nwqes`, `mode` and `ncqes`, over an allocation at
    /// `base` (aligned to 64), and the marks' from [`carve_marks`](Self::carve_marks) over one
    /// at `marks_base` (possibly the same), both outliving the queue. Undo with
    /// [`drop_at`](Self::drop_at).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn init_at(
        place: *mut Qp<L>,
        base: *mut u8,
        marks_base: *mut u8,
        parts: QpParts,
        nwqes: usize,
        mode: CqMode,
        ncqes: usize,
        batch: usize,
        qpn: u32,
        peer: u32,
    ) {
        assert!(nwqes.is_power_of_two() && (2..=32768).contains(&nwqes), "nwqes {nwqes}: a power of two up to 32768");
        let ncqes = cq_entries(mode, ncqes);
        // SAFETY: (all) in bounds of the caller's allocations, aligned for u64.
        let zeros = |base: *mut u8, off: usize, n: usize| unsafe {
            let p = base.add(off).cast::<AtomicU64>();
            for i in 0..n {
                p.add(i).write(AtomicU64::new(0));
            }
            p
        };
        // SAFETY: in bounds, aligned for a Doorbell (Carve).
        let nic = unsafe {
            let p = base.add(parts.nic).cast::<Doorbell>();
            p.write(Doorbell::default());
            p
        };
        let q = Qp {
            prod: Counters::default(),
            ring: Ringing::default(),
            error: Line::default(),
            ibuf_busy: Line { value: AtomicU64::new(1) },
            nic,
            sq: zeros(base, parts.sq, nwqes * 8),
            marks: zeros(marks_base, parts.marks, nwqes),
            cq: zeros(base, parts.cq, ncqes * 8),
            ibuf: zeros(base, parts.ibuf, IBUF_WORDS),
            nwqes: nwqes as u64,
            ncqes: ncqes as u64,
            batch: batch.max(1) as u64,
            mode,
            qpn,
            peer,
            _l: PhantomData,
        };
        // SAFETY: the caller's place.
        unsafe { place.write(q) };
        // SAFETY: just written.
        let q = unsafe { &*place };
        let empty = L::encode_cqe(Completion::None, qpn);
        for e in 0..ncqes {
            q.store_cqe(e, &empty);
        }
    }

    /// Moves the queue's pointers into its memory by `delta` bytes and those to its marks by
    /// `marks_delta`: a queue built by [`init_at`](Self::init_at) in images of its allocations
    /// (host memory the set-up writes) then names its words where the images are copied to (GPU
    /// memory).
    ///
    /// # Safety
    /// `place` was built by `init_at`, and its allocations' copies lie `delta` and
    /// `marks_delta` bytes away; the queue's words are used only there from now on.
    pub unsafe fn relocate(place: *mut Qp<L>, delta: isize, marks_delta: isize) {
        // SAFETY: the caller's queue; the pointers are only stored, not followed.
        unsafe {
            let q = &mut *place;
            q.nic = q.nic.wrapping_byte_offset(delta);
            q.sq = q.sq.wrapping_byte_offset(delta);
            q.marks = q.marks.wrapping_byte_offset(marks_delta);
            q.cq = q.cq.wrapping_byte_offset(delta);
            q.ibuf = q.ibuf.wrapping_byte_offset(delta);
        }
    }

    /// Whether the queue's doorbell words and arrays lie in the `len` bytes at `base`, and its
    /// marks in the `marks_len` at `marks_base` (the set-up's check that
    /// [`relocate`](Self::relocate) moved them where they live).
    pub fn arrays_within(&self, (base, len): (u64, u64), (marks_base, marks_len): (u64, u64)) -> bool {
        let inside = |p: u64, bytes: u64, (base, len): (u64, u64)| {
            p >= base && p.checked_add(bytes).is_some_and(|end| end <= base + len)
        };
        let queue = (base, len);
        inside(self.nic as u64, size_of::<Doorbell>() as u64, queue)
            && inside(self.sq as u64, self.nwqes * 64, queue)
            && inside(self.marks as u64, self.nwqes * 8, (marks_base, marks_len))
            && inside(self.cq as u64, self.ncqes * 64, queue)
            && inside(self.ibuf as u64, IBUF_WORDS as u64 * 8, queue)
    }

    /// Drops the values [`init_at`](Self::init_at) placed (the memory stays).
    ///
    /// # Safety
    /// `place` must have been built by [`init_at`](Self::init_at), not dropped yet, and its
    /// allocation still live; neither the queue nor its arrays may be used afterwards.
    pub unsafe fn drop_at(place: *mut Qp<L>) {
        // SAFETY: the caller's promise; the arrays have the lengths init_at gave them.
        unsafe {
            let q = &*place;
            let drop_words =
                |p: *mut AtomicU64, n: usize| std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(p, n));
            drop_words(q.sq, q.nwqes as usize * 8);
            drop_words(q.marks, q.nwqes as usize);
            drop_words(q.cq, q.ncqes as usize * 8);
            drop_words(q.ibuf, IBUF_WORDS);
            std::ptr::drop_in_place(q.nic);
            std::ptr::drop_in_place(place);
        }
    }

    fn sq(&self) -> &[AtomicU64] {
        // SAFETY: `nwqes * 8` words placed by init_at, alive as long as the queue.
        unsafe { std::slice::from_raw_parts(self.sq, self.nwqes as usize * 8) }
    }

    fn marks(&self) -> &[AtomicU64] {
        // SAFETY: as for sq.
        unsafe { std::slice::from_raw_parts(self.marks, self.nwqes as usize) }
    }

    fn cq(&self) -> &[AtomicU64] {
        // SAFETY: as for sq.
        unsafe { std::slice::from_raw_parts(self.cq, self.ncqes as usize * 8) }
    }

    fn ibuf(&self) -> &[AtomicU64] {
        // SAFETY: as for sq.
        unsafe { std::slice::from_raw_parts(self.ibuf, IBUF_WORDS) }
    }

    /// The words the NIC and the host read.
    pub(crate) fn nic(&self) -> &Doorbell {
        // SAFETY: placed by init_at, alive as long as the queue.
        unsafe { &*self.nic }
    }

    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }
    /// The PE this queue reaches.
    pub fn peer(&self) -> u32 {
        self.peer
    }
    /// The CQ's mode.
    pub fn cq_mode(&self) -> CqMode {
        self.mode
    }
    /// Slots in the send queue.
    pub fn nwqes(&self) -> u64 {
        self.nwqes
    }
    /// Everything below this index is published.
    pub fn ready_head(&self) -> u64 {
        self.prod.ready_head.load(Ordering::Acquire)
    }
    /// Everything below this index is known complete.
    pub fn cons_idx(&self) -> u64 {
        self.prod.cons_idx.load(Ordering::Acquire)
    }
    /// The highest index announced to the NIC.
    pub fn prod_idx(&self) -> u64 {
        self.ring.prod_idx.load(Ordering::Acquire)
    }

    /// The latched error, if the queue is in error.
    pub fn error(&self) -> Option<QpError> {
        decode_error(self.error.value.load(Ordering::Acquire))
    }

    /// Slots `wrs` take, as posted (with the trailing NOP a signalled multi-slot WQE needs so
    /// that the completion's counter names the batch's last slot).
    pub fn slots_for(wrs: &[WorkRequest<'_>], signal: bool) -> u64 {
        let n: usize = wrs.iter().map(L::wqebbs).sum();
        let last = wrs.last().map_or(1, L::wqebbs);
        (n + usize::from(signal && last > 1)) as u64
    }

    /// Posts `wrs` as one batch: only the last WQE is signalled (when `signal`), the first one
    /// fenced (when `fence`). `wait` is called while waiting (for slots, or for the batch's
    /// turn to publish) and ends the wait by returning false. Returns the index past the batch.
    pub fn post(
        &self,
        wrs: &[WorkRequest<'_>],
        signal: bool,
        fence_first: bool,
        wait: &mut dyn FnMut() -> bool,
    ) -> Result<PostEnd, QpError> {
        if let Some(e) = self.error() {
            return Err(e);
        }
        let n = Self::slots_for(wrs, signal);
        assert!(n > 0 && n <= self.nwqes, "a batch of {n} slots does not fit a queue of {}", self.nwqes);
        self.wait_room(n, wait)?;
        let base = self.prod.resv_head.fetch_add(n, Ordering::AcqRel);
        let end = base + n;
        // Flow control: the slots [base, end) were last used by indices nwqes lower. (Read
        // `cons_idx` first: polling the CQ writes it, a line every producer shares.)
        if end > self.nwqes && self.cons_idx() < end - self.nwqes {
            self.wait_complete(end - self.nwqes, wait)?;
        }
        let mut idx = base;
        let mut buf: [Wqebb; 4] = [[0u8; 64]; 4];
        for (i, wr) in wrs.iter().enumerate() {
            let k = L::wqebbs(wr);
            let last = i + 1 == wrs.len();
            let flags = WqeFlags { signal: signal && last && k == 1, fence: fence_first && i == 0 };
            L::encode(wr, idx, self.nwqes, self.qpn, flags, &mut buf[..k]);
            for (j, b) in buf.iter().take(k).enumerate() {
                self.store_slot(idx + j as u64, b);
            }
            idx += k as u64;
        }
        if idx < end {
            // The trailing signalled NOP.
            let mut nop = [[0u8; 64]; 1];
            L::encode(&WorkRequest::Nop, idx, self.nwqes, self.qpn, WqeFlags { signal: true, fence: false }, &mut nop);
            self.store_slot(idx, &nop[0]);
        }
        self.publish(base, end);
        Ok(end)
    }

    /// Posts slots exactly as given (no encoding: a WQE that may be malformed), for tests of
    /// the NIC's error path. Same reservation, flow control and ordered publish as [`post`].
    ///
    /// [`post`]: Self::post
    pub fn post_raw_slots(&self, slots: &[Wqebb], wait: &mut dyn FnMut() -> bool) -> Result<PostEnd, QpError> {
        if let Some(e) = self.error() {
            return Err(e);
        }
        let n = slots.len() as u64;
        assert!(n > 0 && n <= self.nwqes, "a batch of {n} slots does not fit a queue of {}", self.nwqes);
        self.wait_room(n, wait)?;
        let base = self.prod.resv_head.fetch_add(n, Ordering::AcqRel);
        let end = base + n;
        if end > self.nwqes && self.cons_idx() < end - self.nwqes {
            self.wait_complete(end - self.nwqes, wait)?;
        }
        for (j, b) in slots.iter().enumerate() {
            self.store_slot(base + j as u64, b);
        }
        self.publish(base, end);
        self.help_ring();
        Ok(end)
    }

    /// Waits, before reserving, until `n` more slots would fit: a producer that reserves and
    /// then waits for room leaves a hole that stops the queue's ready head — every later
    /// producer's batch waits for it — and a CPU device thread waiting yields its core, so that
    /// hole lasts until the scheduler comes back to it. (Room can still run out between this
    /// check and the reservation when producers race; `post` then waits after reserving.)
    fn wait_room(&self, n: u64, wait: &mut dyn FnMut() -> bool) -> Result<(), QpError> {
        loop {
            let need = (self.resv_head() + n).saturating_sub(self.nwqes);
            if need == 0 || self.cons_idx() >= need || self.poll()? >= need {
                return Ok(());
            }
            if self.prod_idx() < need {
                self.help_ring();
            }
            if !wait() {
                return Err(QpError::Stalled { needed: need, reached: self.cons_idx() });
            }
        }
    }

    /// The index the next reservation gets.
    pub fn resv_head(&self) -> u64 {
        self.prod.resv_head.load(Ordering::Acquire)
    }

    /// Marks the written batch `[base, end)` and advances `ready_head` over every written batch
    /// at the head; then rings, unless a later reservation will.
    fn publish(&self, base: u64, end: u64) {
        // Fast path: our batch is at the head — advance over it without marking. (SeqCst: a
        // later batch's owner marks and then reads `ready_head`; we advance and then read its
        // mark — one of the two sees the other.)
        let mut advanced = self.prod.ready_head.load(Ordering::SeqCst) == base
            && self.prod.ready_head.compare_exchange(base, end, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if !advanced {
            // A SeqCst swap, for the same store-load order against the head batch's owner.
            self.marks()[(base & (self.nwqes - 1)) as usize].swap(end, Ordering::SeqCst);
        }
        loop {
            let r = self.prod.ready_head.load(Ordering::SeqCst);
            let m = self.marks()[(r & (self.nwqes - 1)) as usize].load(Ordering::SeqCst);
            if m <= r {
                // The head batch is not written yet (or everything written is published): its
                // owner will advance over ours.
                break;
            }
            if self.prod.ready_head.compare_exchange(r, m, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                advanced = true;
            }
        }
        if !advanced {
            return;
        }
        let ready = self.ready_head();
        let later = self.prod.resv_head.load(Ordering::Acquire) > ready;
        if !later || base / self.batch != ready / self.batch || ready.saturating_sub(base) >= self.batch {
            self.ring(ready);
        }
    }

    /// Announces every slot below `end` to the NIC — now, or by the thread that holds the
    /// doorbell lock, before it lets go (which then wakes the NIC as after its own ring).
    /// Nobody waits for the lock: a ringer that finds it taken publishes its request in
    /// `ring_req` and leaves if the lock is still taken; a holder reads `ring_req` again after
    /// unlocking. (SeqCst on both sides, Dekker-style: either the holder's read sees the
    /// request, or the requester's read of the lock sees it free and it tries again.)
    pub fn ring(&self, end: u64) {
        let mut end = end;
        loop {
            if self.ring.db_lock.compare_exchange(0, 1, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                // prod_idx only changes under the lock: a load and a store, no read-modify-write.
                let old = self.ring.prod_idx.load(Ordering::Relaxed);
                let want = end.max(self.ring.ring_req.load(Ordering::SeqCst));
                if want > old {
                    self.ring.prod_idx.store(want, Ordering::Release);
                    self.nic().dbr[1].store(L::dbr_value(want), Ordering::Release);
                    let value = L::doorbell(want, self.qpn);
                    self.nic().db.store(value, Ordering::Release);
                    let uar = self.ring.uar.load(Ordering::Relaxed);
                    if uar != 0 {
                        // The record before the register: the NIC reads the record when it
                        // sees the doorbell.
                        std::sync::atomic::fence(Ordering::SeqCst);
                        // SAFETY: a doorbell register mapped for this process for as long as
                        // the queue (set by the channel's set-up), written with one aligned
                        // 8-byte store — an atomic one, as the software NIC's register is read
                        // atomically (the same instruction on a device register).
                        unsafe {
                            std::sync::atomic::AtomicU64::from_ptr(uar as *mut u64)
                                .store(value, std::sync::atomic::Ordering::Relaxed)
                        };
                    }
                }
                // A full barrier (not only a release): a sleeping NIC is woken by the caller's
                // check of its `sleeping` flag, which must not be read before the doorbell
                // record is out.
                self.ring.db_lock.swap(0, Ordering::SeqCst);
                // A request made while we held the lock, after our read of `ring_req`.
                let req = self.ring.ring_req.load(Ordering::SeqCst);
                if req <= want.max(old) {
                    return;
                }
                end = req;
                continue;
            }
            // Taken: leave the request to the holder, unless it has let go meanwhile.
            self.ring.ring_req.fetch_max(end, Ordering::SeqCst);
            if self.prod_idx() >= end || self.ring.db_lock.load(Ordering::SeqCst) != 0 {
                return;
            }
        }
    }

    /// Rings up to the ready head if it is ahead of the producer index.
    pub fn help_ring(&self) {
        let r = self.ready_head();
        if r > self.prod_idx() {
            self.ring(r);
        }
    }

    /// Waits until every slot below `idx` is complete (polling the CQ, and ringing published
    /// slots nobody has announced yet).
    pub fn wait_complete(&self, idx: u64, wait: &mut dyn FnMut() -> bool) -> Result<(), QpError> {
        loop {
            let c = self.poll()?;
            if c >= idx {
                return Ok(());
            }
            if self.prod_idx() < idx {
                self.help_ring();
            }
            if !wait() {
                return Err(QpError::Stalled { needed: idx, reached: self.cons_idx() });
            }
        }
    }

    /// `quiet` for this queue: completes everything reserved so far — not only what is
    /// published: with the combining publish, a producer's own batch may still be waiting for
    /// an earlier one to be written when its `post` returns.
    pub fn quiet(&self, wait: &mut dyn FnMut() -> bool) -> Result<(), QpError> {
        let r = self.resv_head();
        if r == 0 || self.cons_idx() >= r {
            return match self.error() {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        self.wait_complete(r, wait)
    }

    /// The descriptor's words the host's observing quiet reads, read here (the descriptor is
    /// in memory this CPU reaches; the IBGDA channel copies them out of GPU memory instead).
    pub fn observe(&self) -> Observed {
        Observed {
            resv_head: self.resv_head(),
            cons_idx: self.cons_idx(),
            error: self.error.value.load(Ordering::Acquire),
        }
    }

    /// `quiet` for a queue that device code drives, from the host: waits until everything
    /// reserved so far has completed, reading the CQ and the descriptor's words as `look`
    /// reads them ([`observe`](Self::observe), or copies out of GPU memory). It takes no lock,
    /// advances no index, latches no error and rings nothing: the GPU's threads
    /// read-modify-write those words, and a CPU read-modify-write of the same words is defined
    /// only where the platform has host-native atomics with the GPU (`hostNativeAtomicSupported`,
    /// 0 on x86 with PCIe). A producer that reserved slots publishes and rings them itself.
    pub fn quiet_observing(
        &self,
        look: &mut dyn FnMut() -> Observed,
        wait: &mut dyn FnMut() -> bool,
    ) -> Result<(), QpError> {
        let mut at = look();
        let r = at.resv_head;
        loop {
            if let Some(e) = decode_error(at.error) {
                return Err(e);
            }
            let done = self.observed_completions(at.cons_idx)?;
            if done >= r {
                return Ok(());
            }
            if !wait() {
                return Err(QpError::Stalled { needed: r, reached: done });
            }
            at = look();
        }
    }

    /// How many WQEs have completed, as the CQ shows it past `c`, what the consumers took
    /// (`cons_idx`, read before), without consuming anything; a NIC error there is returned
    /// (not latched). Never more than have completed: a counter widened against a `c` that
    /// has fallen far behind comes out short.
    fn observed_completions(&self, c: u64) -> Result<u64, QpError> {
        let mut done = c;
        let mut seen = |cqe: &[u8; 64], lap: Option<u8>| -> Result<bool, QpError> {
            match L::decode_cqe(cqe) {
                Completion::Ok { wqe_counter, owner } if lap.is_none_or(|l| l == owner) => {
                    done = done.max(widen(c, wqe_counter.wrapping_add(1)));
                    Ok(true)
                }
                Completion::Err { wqe_counter, owner, syndrome, opcode } if lap.is_none_or(|l| l == owner) => {
                    Err(QpError::Nic { wqe_counter, syndrome, opcode })
                }
                _ => Ok(false),
            }
        };
        match self.mode {
            CqMode::Collapsed => {
                seen(&self.load_cqe(0), None)?;
            }
            CqMode::Normal => {
                let first = self.nic().cq_ci.load(Ordering::Acquire);
                for ci in first..first + self.ncqes {
                    let lap = ((ci / self.ncqes) & 1) as u8;
                    if !seen(&self.load_cqe((ci % self.ncqes) as usize), Some(lap))? {
                        break;
                    }
                }
            }
        }
        Ok(done)
    }

    /// Reads the CQ and advances `cons_idx`; returns it.
    pub fn poll(&self) -> Result<u64, QpError> {
        if let Some(e) = self.error() {
            return Err(e);
        }
        match self.mode {
            CqMode::Collapsed => loop {
                let c0 = self.prod.cons_idx.load(Ordering::Acquire);
                let cqe = self.load_cqe(0);
                let c1 = self.prod.cons_idx.load(Ordering::Acquire);
                if c0 != c1 {
                    continue;
                }
                return match L::decode_cqe(&cqe) {
                    Completion::None => Ok(c0),
                    Completion::Ok { wqe_counter, .. } => {
                        let c = widen(c0, wqe_counter.wrapping_add(1));
                        Ok(self.prod.cons_idx.fetch_max(c, Ordering::AcqRel).max(c))
                    }
                    Completion::Err { wqe_counter, syndrome, opcode, .. } => {
                        Err(self.latch(QpError::Nic { wqe_counter, syndrome, opcode }))
                    }
                };
            },
            CqMode::Normal => {
                if self.prod.poll_lock.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
                    // Someone else is consuming entries.
                    return Ok(self.cons_idx());
                }
                let mut ci = self.prod.cq_ci.load(Ordering::Relaxed);
                let res = loop {
                    let e = ci % self.ncqes;
                    let cqe = self.load_cqe(e as usize);
                    let lap = ((ci / self.ncqes) & 1) as u8;
                    match L::decode_cqe(&cqe) {
                        Completion::Ok { wqe_counter, owner } if owner == lap => {
                            let c0 = self.prod.cons_idx.load(Ordering::Acquire);
                            self.prod.cons_idx.fetch_max(widen(c0, wqe_counter.wrapping_add(1)), Ordering::AcqRel);
                            ci += 1;
                        }
                        Completion::Err { wqe_counter, owner, syndrome, opcode } if owner == lap => {
                            break Err(self.latch(QpError::Nic { wqe_counter, syndrome, opcode }));
                        }
                        _ => break Ok(self.cons_idx()),
                    }
                };
                self.prod.cq_ci.store(ci, Ordering::Release);
                // The NIC's (and the host's) copy: how far it may write entries.
                self.nic().cq_ci.store(ci, Ordering::Release);
                self.prod.poll_lock.store(0, Ordering::Release);
                res
            }
        }
    }

    fn latch(&self, e: QpError) -> QpError {
        if let QpError::Nic { wqe_counter, syndrome, opcode } = e {
            let v = latch::LATCHED
                | u64::from(wqe_counter) << latch::COUNTER_SHIFT
                | u64::from(syndrome) << latch::SYNDROME_SHIFT
                | u64::from(opcode);
            let _ = self.error.value.compare_exchange(0, v, Ordering::AcqRel, Ordering::Acquire);
        }
        e
    }

    // ---- scratch buffer -----------------------------------------------------------

    /// Address of scratch slot `slot` (slot 0 is the sink of non-fetching atomics).
    pub fn ibuf_addr(&self, slot: u64) -> u64 {
        let i = (slot % IBUF_SLOTS as u64) as usize * (IBUF_SLOT_BYTES / 8);
        self.ibuf()[i..].as_ptr() as u64
    }

    /// The scratch buffer's address range.
    pub fn ibuf_range(&self) -> (u64, u64) {
        (self.ibuf as u64, (IBUF_WORDS * 8) as u64)
    }

    /// Takes a free scratch slot (1..IBUF_SLOTS; slot 0 is the sink), waiting while all are in
    /// use. Slots are held independently (a bitmap), so a holder that is slow to finish delays
    /// nobody else's release — NVSHMEM's in-order ring would, and device threads on a CPU are
    /// often descheduled.
    pub fn ibuf_acquire(&self, hint: usize, wait: &mut dyn FnMut() -> bool) -> Option<u64> {
        let full = u64::MAX;
        loop {
            let m = self.ibuf_busy.value.load(Ordering::Acquire);
            if m != full {
                // Start the search at the hint so that threads spread over the slots.
                let rot = (hint % IBUF_SLOTS) as u32;
                let free = !m.rotate_right(rot);
                let bit = (free.trailing_zeros() + rot) % IBUF_SLOTS as u32;
                if self
                    .ibuf_busy
                    .value
                    .compare_exchange_weak(m, m | 1 << bit, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Some(u64::from(bit));
                }
                continue;
            }
            if !wait() {
                return None;
            }
        }
    }

    /// Reads the first 8 bytes of scratch slot `slot`.
    pub fn ibuf_read(&self, slot: u64) -> u64 {
        self.ibuf()[slot as usize * (IBUF_SLOT_BYTES / 8)].load(Ordering::Acquire)
    }

    /// Copies `out.len()` bytes out of scratch slot `slot`.
    pub fn ibuf_copy_out(&self, slot: u64, out: &mut [u8]) {
        let i = slot as usize * (IBUF_SLOT_BYTES / 8);
        for (k, chunk) in out.chunks_mut(8).enumerate() {
            let w = self.ibuf()[i + k].load(Ordering::Acquire).to_ne_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }

    /// Returns scratch slot `slot`.
    pub fn ibuf_release(&self, slot: u64) {
        self.ibuf_busy.value.fetch_and(!(1 << slot), Ordering::AcqRel);
    }

    // ---- the NIC's side ------------------------------------------------------------

    /// The producer index announced in the doorbell record, widened against `consumed`.
    pub fn nic_announced(&self, consumed: u64) -> u64 {
        let reg = self.nic().soft_reg.load(Ordering::Relaxed);
        let p = if reg == 0 {
            L::dbr_prod(self.nic().dbr[1].load(Ordering::Acquire))
        } else {
            // SAFETY: the provider's register word, alive as long as the queue (set at set-up).
            // (The producers store to it as to a device register: one aligned 8-byte store.)
            L::doorbell_prod(unsafe {
                (*(reg as *const std::sync::atomic::AtomicU64)).load(std::sync::atomic::Ordering::Acquire)
            })
        };
        consumed + u64::from(p.wrapping_sub(consumed as u16))
    }

    /// Records the NIC's consumed index (`u64::MAX`: failed) and completions written.
    pub fn nic_set_seen(&self, consumed: u64, pcqe: u64) {
        self.nic().seen[0].store(consumed, Ordering::Release);
        self.nic().seen[1].store(pcqe, Ordering::Release);
    }

    /// What [`nic_set_seen`](Self::nic_set_seen) recorded last.
    pub fn nic_seen(&self) -> (u64, u64) {
        (self.nic().seen[0].load(Ordering::Acquire), self.nic().seen[1].load(Ordering::Acquire))
    }

    /// Whether WQEs are announced that the NIC can consume now: not failed, not held back by
    /// a full CQ (as of the NIC's last pass over the queue).
    pub fn nic_pending(&self) -> bool {
        let (c, pcqe) = self.nic_seen();
        c != u64::MAX && self.nic_announced(c) > c && self.nic_cq_room(pcqe) > 0
    }

    /// Takes the software NIC's lock on this queue, if free.
    pub fn nic_try_drive(&self) -> bool {
        self.nic().drive.compare_exchange(0, 1, Ordering::SeqCst, Ordering::Relaxed).is_ok()
    }

    /// Lets the software NIC's lock on this queue go (a release: the caller's SeqCst fence
    /// after it orders it before its second look at the doorbell record).
    pub fn nic_end_drive(&self) {
        self.nic().drive.store(0, Ordering::Release);
    }

    /// The doorbell register's last value.
    pub fn nic_doorbell(&self) -> u64 {
        self.nic().db.load(Ordering::Acquire)
    }

    /// Reads slot `idx` (modulo the ring).
    pub fn nic_slot(&self, idx: u64) -> Wqebb {
        let base = (idx & (self.nwqes - 1)) as usize * 8;
        let mut out = [0u8; 64];
        for (k, w) in self.sq()[base..base + 8].iter().enumerate() {
            out[k * 8..k * 8 + 8].copy_from_slice(&w.load(Ordering::Relaxed).to_ne_bytes());
        }
        out
    }

    /// Test support: continue as if `n` completions had been written and consumed before,
    /// none of them moving `cons_idx` (the counters past 2^32 without 2^32 operations).
    #[doc(hidden)]
    pub fn nic_test_consumed_cqes(&self, n: u64) {
        self.prod.cq_ci.store(n, Ordering::Release);
        self.nic().cq_ci.store(n, Ordering::Release);
    }

    /// Entries the NIC may still write before the CQ is full, its `pcqe`-th being next
    /// (unbounded in collapsed mode). A `pcqe` read before `cq_ci` may be stale, and behind
    /// it: then the CQ is empty.
    pub fn nic_cq_room(&self, pcqe: u64) -> u64 {
        match self.mode {
            CqMode::Collapsed => u64::MAX,
            CqMode::Normal => self.ncqes.saturating_sub(pcqe.saturating_sub(self.nic().cq_ci.load(Ordering::Acquire))),
        }
    }

    /// Writes completion number `pcqe` (counted from 0). In normal mode waits (calling
    /// `wait`) while the CQ is full; returns false if `wait` gave up.
    pub fn nic_complete(&self, c: Completion, pcqe: u64, wait: &mut dyn FnMut() -> bool) -> bool {
        let (entry, c) = match self.mode {
            CqMode::Collapsed => (0, c),
            CqMode::Normal => {
                while pcqe - self.nic().cq_ci.load(Ordering::Acquire) >= self.ncqes {
                    if !wait() {
                        return false;
                    }
                }
                let owner = ((pcqe / self.ncqes) & 1) as u8;
                let c = match c {
                    Completion::Ok { wqe_counter, .. } => Completion::Ok { wqe_counter, owner },
                    Completion::Err { wqe_counter, syndrome, opcode, .. } => {
                        Completion::Err { wqe_counter, owner, syndrome, opcode }
                    }
                    Completion::None => Completion::None,
                };
                ((pcqe % self.ncqes) as usize, c)
            }
        };
        self.store_cqe(entry, &L::encode_cqe(c, self.qpn));
        true
    }

    // ---- words --------------------------------------------------------------------

    fn store_slot(&self, idx: u64, b: &Wqebb) {
        let base = (idx & (self.nwqes - 1)) as usize * 8;
        for (k, w) in self.sq()[base..base + 8].iter().enumerate() {
            w.store(u64::from_ne_bytes(b[k * 8..k * 8 + 8].try_into().expect("8 bytes")), Ordering::Relaxed);
        }
    }

    /// Stores a CQE: every word but the layout's valid word relaxed, then that word (owner
    /// and status: mlx5's word 7, hns's word 0) with release.
    fn store_cqe(&self, entry: usize, cqe: &[u8; 64]) {
        let w = &self.cq()[entry * 8..entry * 8 + 8];
        let word = |k: usize| u64::from_ne_bytes(cqe[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
        let valid = L::CQE_VALID_WORD;
        for (k, x) in w.iter().enumerate().filter(|&(k, _)| k != valid) {
            x.store(word(k), Ordering::Relaxed);
        }
        w[valid].store(word(valid), Ordering::Release);
    }

    /// Loads a CQE: the layout's valid word first, with acquire, then the others.
    fn load_cqe(&self, entry: usize) -> [u8; 64] {
        let w = &self.cq()[entry * 8..entry * 8 + 8];
        let mut out = [0u8; 64];
        let valid = L::CQE_VALID_WORD;
        let v = w[valid].load(Ordering::Acquire);
        for (k, x) in w.iter().enumerate().filter(|&(k, _)| k != valid) {
            out[k * 8..k * 8 + 8].copy_from_slice(&x.load(Ordering::Relaxed).to_ne_bytes());
        }
        out[valid * 8..valid * 8 + 8].copy_from_slice(&v.to_ne_bytes());
        out
    }
}

/// The full index of a 16-bit completion counter `c16` that is at most 2^15 ahead of `base`.
fn widen(base: u64, c16: u16) -> u64 {
    base + u64::from(c16.wrapping_sub(base as u16))
}

fn decode_error(v: u64) -> Option<QpError> {
    (v != 0).then_some(QpError::Nic {
        wqe_counter: (v >> latch::COUNTER_SHIFT) as u16,
        syndrome: (v >> latch::SYNDROME_SHIFT) as u8,
        opcode: v as u8,
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::ibgda::hns::Hns;
    use crate::ibgda::layout::{Mlx5, WorkRequest};

    /// A queue whose NIC reads a doorbell register (`soft_reg`): a ring that writes only the
    /// record announces nothing; the register's value, once written, announces exactly the
    /// index it carries (both layouts).
    fn register_announces<L: NicLayout>() {
        let q = QpBox::<L>::new(16, CqMode::Collapsed, 1, 4, 0x1234, 0);
        let register = std::sync::atomic::AtomicU64::new(0);
        q.nic().soft_reg.store(register.as_ptr() as u64, Ordering::Relaxed);
        let mut never = || false;
        let end = q.post(&[WorkRequest::Nop, WorkRequest::Nop, WorkRequest::Nop], true, false, &mut never).unwrap();
        assert!(end >= 3 && q.prod_idx() == end, "the post rang: the record says {end}");
        assert_eq!(q.nic_announced(0), 0, "{}: the record alone announces nothing", L::NAME);
        register.store(L::doorbell(2, 0x1234), std::sync::atomic::Ordering::Release);
        assert_eq!(q.nic_announced(0), 2, "{}: the register's index", L::NAME);
        register.store(q.nic().db.load(Ordering::Acquire), std::sync::atomic::Ordering::Release);
        assert_eq!(q.nic_announced(0), end, "{}: what the last ring carries", L::NAME);
        q.nic().soft_reg.store(0, Ordering::Relaxed);
        assert_eq!(q.nic_announced(0), end, "{}: without a register, the record", L::NAME);
    }

    #[test]
    fn a_register_reading_nic_sees_only_what_the_register_announces() {
        register_announces::<Mlx5>();
        register_announces::<Hns>();
    }
}
