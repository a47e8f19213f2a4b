//! The device state: plain `#[repr(C)]` data in memory a device can reach.
//!
//! Everything a device thread needs is here — its PE number, the heap's base and size, one
//! base address and one channel byte per peer, the proxy ring, the device barrier's flags —
//! with no Rust-only machinery, so that a CUDA back end can place the same structure in GPU
//! or host-pinned memory and read it from device code unchanged. Errors found on the device
//! path are recorded in an error slot (first error wins) instead of unwinding: device code
//! cannot return errors through a kernel, so the host reads the slot when it synchronizes.
//!
//! The layout is shared with CUDA (and C) through the generated header
//! `device/include/oxshmem/device_state.h`: [`DeviceState`] is `oxshmem_device_state_t`,
//! [`ErrorSlot`] `oxshmem_error_slot_t`; the ring it points to is `oxshmem_ring_t`
//! ([`ProxyRing`](crate::channel::proxy::ProxyRing)), the IBGDA table `oxshmem_ibgda_t`
//! ([`IbgdaDevice`](crate::ibgda::IbgdaDevice)); the error, operation and channel codes are
//! `OXSHMEM_ERR_*`, `OXSHMEM_OP_*`, `OXSHMEM_CHANNEL_*`. The header is written from these types
//! by [`cheader`](crate::cheader), and `tests/c_layout.rs` checks that it is current and that a
//! C compiler agrees with Rust on every size, alignment and offset: change a field here, then
//! run `OXSHMEM_BLESS=1 cargo test -p oxshmem-device --test c_layout` and the table in
//! `cheader.rs` (it does not compile until every field is listed).

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

/// Why a device operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ErrorCode {
    /// The target PE is not in `0..n_pes`.
    PeOutOfRange = 1,
    /// The address range is not inside the symmetric heap.
    NotSymmetric = 2,
    /// A length or index exceeds the device pointer's object.
    OutOfBounds = 3,
    /// The proxy stopped draining the request ring.
    RingStalled = 4,
    /// The host transport reported an error executing a proxied request.
    Transport = 5,
    /// An atomic target is not naturally aligned.
    Misaligned = 6,
    /// A kernel thread panicked.
    KernelPanic = 7,
    /// A kernel was launched after the device was finalized.
    Finalized = 8,
    /// The NIC completed a WQE with an error (`addr`: the WQE's index; `len`: syndrome << 8 |
    /// opcode).
    Nic = 9,
    /// The NIC did not complete WQEs within the timeout (`addr`: index needed; `len`: reached).
    NicStalled = 10,
    /// A device thread's wait on this PE's symmetric memory (`signal_wait_until`,
    /// `wait_until`, a round of the device barrier) did not end within the timeout. `addr`:
    /// the word waited on; `len`: the value it held at the end; `value`: the value compared
    /// with; `cmp`: the comparison ([`wait_cmp`]); `pe`: the PE expected to write it (-1:
    /// unknown).
    WaitTimeout = 11,
    /// A block or warp barrier (`sync_block`, `sync_warp`) did not complete within twice the
    /// timeout. `addr`: threads that had arrived; `len`: threads of the group.
    BarrierTimeout = 12,
    /// A local buffer of an IBGDA operation (a put's source, a get's destination) lies
    /// neither in the symmetric heap nor in a buffer registered with
    /// `nvshmemx_buffer_register`, so no NIC key covers it. `addr`, `len`: the buffer; `pe`:
    /// the target PE.
    Unregistered = 13,
}

/// The values of [`ErrorSlot`]'s `state` (C: `OXSHMEM_ERROR_SLOT_*`).
pub mod slot_state {
    /// No error recorded.
    pub const EMPTY: u32 = 0;
    /// A thread claimed the slot and is writing its fields.
    pub const WRITING: u32 = 1;
    /// The fields are published.
    pub const SET: u32 = 2;
}

/// The first error a device thread hit, for the host to report.
///
/// Every field is an atomic of the plain integer's size and alignment (the layout device code
/// shares, `oxshmem_error_slot_t`, is unchanged): the slot is written through a shared
/// reference by whichever thread fails first, and read by others. `state` orders them: the
/// writer claims the slot (0 -> 1), stores the fields relaxed, and publishes them with a
/// release store of 2; a reader that acquires 2 sees them all ([`ErrorSlot::get`]).
#[repr(C)]
#[derive(Debug, Default)]
pub struct ErrorSlot {
    /// [`slot_state`]: 0 = none, 1 = being written, 2 = set.
    pub state: AtomicU32,
    /// An [`ErrorCode`].
    pub code: AtomicU32,
    /// An operation code (see [`op_name`]).
    pub op: AtomicU32,
    /// Block and thread of the device thread (`u32::MAX` when the host proxy found it).
    pub block: AtomicU32,
    /// Thread index within the block.
    pub thread: AtomicU32,
    /// Target PE as given.
    pub pe: AtomicI64,
    /// Address involved.
    pub addr: AtomicU64,
    /// Length involved.
    pub len: AtomicU64,
    /// The kernel launch the device thread belongs to (numbered from 1 per device; 0: none).
    pub launch: AtomicU64,
    /// [`ErrorCode::WaitTimeout`]: the value the wait compared with.
    pub value: AtomicU64,
    /// [`ErrorCode::WaitTimeout`]: the comparison and the type of the word ([`wait_cmp`]).
    pub cmp: AtomicU32,
}

/// A recorded error, read out of an [`ErrorSlot`] (its fields, as plain values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorRecord {
    /// An [`ErrorCode`].
    pub code: u32,
    /// An operation code.
    pub op: u32,
    /// Block (`u32::MAX`: the host).
    pub block: u32,
    /// Thread index within the block.
    pub thread: u32,
    /// Target PE as given.
    pub pe: i64,
    /// Address involved.
    pub addr: u64,
    /// Length involved.
    pub len: u64,
    /// The kernel launch (0: none).
    pub launch: u64,
    /// The value a timed-out wait compared with.
    pub value: u64,
    /// The comparison of a timed-out wait.
    pub cmp: u32,
}

/// How [`ErrorSlot::cmp`] describes a wait: the comparison (an `oxshmem::Cmp` as `u32`) in
/// bits 0..8, the waited-on word's size in bytes in bits 8..16, and bit 16 set when it is
/// signed.
pub mod wait_cmp {
    /// Packs a comparison, a word size and its signedness.
    pub const fn pack(cmp: u32, bytes: u32, signed: bool) -> u32 {
        (cmp & 0xff) | (bytes & 0xff) << 8 | (signed as u32) << 16
    }

    /// The comparison's operator (`==`, `!=`, `>`, `>=`, `<`, `<=`).
    pub fn operator(packed: u32) -> &'static str {
        match packed & 0xff {
            0 => "==",
            1 => "!=",
            2 => ">",
            3 => ">=",
            4 => "<",
            _ => "<=",
        }
    }

    /// A value of the packed word type, as text (sign-extended when the type is signed).
    pub fn show(packed: u32, bits: u64) -> String {
        let bytes = (packed >> 8 & 0xff).clamp(1, 8);
        let shift = 64 - 8 * bytes;
        if packed & 1 << 16 != 0 {
            (((bits << shift) as i64) >> shift).to_string()
        } else {
            ((bits << shift) >> shift).to_string()
        }
    }
}

impl ErrorSlot {
    /// Records an error unless one is already recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn record(&self, code: ErrorCode, op: u32, pe: i64, addr: u64, len: u64, block: u32, thread: u32) {
        self.record_in(0, code, op, pe, addr, len, block, thread);
    }

    /// As [`record`](Self::record), for a device thread of kernel launch `launch`.
    #[allow(clippy::too_many_arguments)]
    pub fn record_in(
        &self,
        launch: u64,
        code: ErrorCode,
        op: u32,
        pe: i64,
        addr: u64,
        len: u64,
        block: u32,
        thread: u32,
    ) {
        self.write(ErrorRecord { code: code as u32, op, block, thread, pe, addr, len, launch, value: 0, cmp: 0 });
    }

    /// Records a wait that timed out ([`ErrorCode::WaitTimeout`]): the word at `addr` held
    /// `seen` and never came to satisfy `cmp` ([`wait_cmp`]) against `value`.
    #[allow(clippy::too_many_arguments)]
    pub fn record_wait(
        &self,
        launch: u64,
        op: u32,
        pe: i64,
        addr: u64,
        seen: u64,
        cmp: u32,
        value: u64,
        block: u32,
        thread: u32,
    ) {
        let code = ErrorCode::WaitTimeout as u32;
        self.write(ErrorRecord { code, op, block, thread, pe, addr, len: seen, launch, value, cmp });
    }

    /// Claims the slot (first error wins), stores `r`'s fields and publishes them (`state` 2,
    /// release).
    fn write(&self, r: ErrorRecord) {
        if self
            .state
            .compare_exchange(slot_state::EMPTY, slot_state::WRITING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let o = Ordering::Relaxed;
        self.code.store(r.code, o);
        self.op.store(r.op, o);
        self.block.store(r.block, o);
        self.thread.store(r.thread, o);
        self.pe.store(r.pe, o);
        self.addr.store(r.addr, o);
        self.len.store(r.len, o);
        self.launch.store(r.launch, o);
        self.value.store(r.value, o);
        self.cmp.store(r.cmp, o);
        self.state.store(slot_state::SET, Ordering::Release);
    }

    /// The recorded error, if one is set.
    pub fn get(&self) -> Option<ErrorRecord> {
        if !self.is_set() {
            return None;
        }
        let r = Ordering::Relaxed;
        Some(ErrorRecord {
            code: self.code.load(r),
            op: self.op.load(r),
            block: self.block.load(r),
            thread: self.thread.load(r),
            pe: self.pe.load(r),
            addr: self.addr.load(r),
            len: self.len.load(r),
            launch: self.launch.load(r),
            value: self.value.load(r),
            cmp: self.cmp.load(r),
        })
    }

    /// Whether the recorded error is a wait that timed out ([`ErrorCode::WaitTimeout`],
    /// [`ErrorCode::BarrierTimeout`]): the device is then stuck in error, and every later
    /// device-side wait gives up at once instead of waiting out its own timeout.
    pub fn is_timeout(&self) -> bool {
        self.get()
            .is_some_and(|e| e.code == ErrorCode::WaitTimeout as u32 || e.code == ErrorCode::BarrierTimeout as u32)
    }

    /// Whether an error is recorded.
    pub fn is_set(&self) -> bool {
        self.state.load(Ordering::Acquire) == slot_state::SET
    }
}

/// Device operation codes, as recorded in errors and proxy requests.
pub mod op {
    /// `nvshmem_put` family.
    pub const PUT: u32 = 1;
    /// `nvshmem_get` family.
    pub const GET: u32 = 2;
    /// `nvshmem_p`.
    pub const P: u32 = 3;
    /// `nvshmem_g`.
    pub const G: u32 = 4;
    /// Atomic memory operations.
    pub const AMO: u32 = 5;
    /// `nvshmem_put_signal`.
    pub const PUT_SIGNAL: u32 = 6;
    /// `nvshmemx_signal_op`.
    pub const SIGNAL_OP: u32 = 7;
    /// `nvshmem_signal_wait_until`.
    pub const SIGNAL_WAIT: u32 = 8;
    /// `nvshmem_quiet`.
    pub const QUIET: u32 = 9;
    /// `nvshmem_barrier_all`.
    pub const BARRIER: u32 = 10;
    /// A kernel as a whole.
    pub const KERNEL: u32 = 11;
    /// `nvshmem_wait_until`.
    pub const WAIT_UNTIL: u32 = 12;
    /// `nvshmem_sync_all`.
    pub const SYNC_ALL: u32 = 13;
    /// `__syncthreads()` ([`Thread::sync_block`](crate::Thread::sync_block)).
    pub const SYNC_BLOCK: u32 = 14;
    /// `__syncwarp()` ([`Thread::sync_warp`](crate::Thread::sync_warp)).
    pub const SYNC_WARP: u32 = 15;
}

/// The NVSHMEM name of an operation code.
pub fn op_name(op: u32) -> &'static str {
    match op {
        op::PUT => "nvshmem_put",
        op::GET => "nvshmem_get",
        op::P => "nvshmem_p",
        op::G => "nvshmem_g",
        op::AMO => "nvshmem_atomic",
        op::PUT_SIGNAL => "nvshmem_put_signal",
        op::SIGNAL_OP => "nvshmemx_signal_op",
        op::SIGNAL_WAIT => "nvshmem_signal_wait_until",
        op::QUIET => "nvshmem_quiet",
        op::BARRIER => "nvshmem_barrier_all",
        op::KERNEL => "kernel",
        op::WAIT_UNTIL => "nvshmem_wait_until",
        op::SYNC_ALL => "nvshmem_sync_all",
        op::SYNC_BLOCK => "__syncthreads",
        op::SYNC_WARP => "__syncwarp",
        _ => "device operation",
    }
}

/// Rounds of the device barrier (enough for 2^32 PEs); each round's flag has its own line.
pub const BARRIER_ROUNDS: usize = 32;

/// What a device thread reads to do its work.
#[repr(C)]
#[derive(Debug)]
pub struct DeviceState {
    /// This PE.
    pub my_pe: u32,
    /// PEs in the job.
    pub n_pes: u32,
    /// This PE's heap base address.
    pub heap_base: u64,
    /// Bytes of the heap users can allocate.
    pub heap_size: u64,
    /// `n_pes` entries: where each PE's heap is mapped here (0: not mapped).
    pub peer_base: *const u64,
    /// `n_pes` entries: the [`ChannelKind`](crate::ChannelKind) byte of each PE.
    pub channel: *const u8,
    /// The proxy request ring's header (null when no peer uses the proxy).
    pub ring: *mut crate::channel::proxy::ProxyRing,
    /// The IBGDA channel's table: its queues and key tables (null when no peer uses IBGDA).
    pub ibgda: *mut crate::ibgda::IbgdaDevice,
    /// Symmetric address of the device barrier's flags (`BARRIER_ROUNDS` lines).
    pub barrier_flags: u64,
    /// Device barriers this PE has entered.
    pub barrier_epoch: AtomicU64,
    /// How long a device-side wait may last before it fails (ns): a wait for the proxy or
    /// the NIC, a wait on symmetric memory, a device barrier (`OXSHMEM_TIMEOUT`).
    pub timeout_ns: u64,
    /// 1 while the proxy thread runs (0 once it has exited, or when there is none).
    pub proxy_alive: AtomicU32,
    /// 1 while the proxy thread sleeps for want of requests (a futex word): a CPU producer
    /// that finds it set after publishing wakes it (`FUTEX_WAKE`); the proxy also looks at the
    /// ring every millisecond, for producers that cannot make system calls (a GPU).
    pub proxy_sleeping: AtomicU32,
    /// The first error a device thread recorded. Device code read-modify-writes its state word
    /// (on a GPU: GPU threads only).
    pub error: ErrorSlot,
    /// The first error the host recorded on the device's behalf (the proxy: a request it could
    /// not carry out, a stalled ring). A slot of its own, so that the host never
    /// read-modify-writes a word the GPU's threads do (defined only where the platform has
    /// host-native atomics with the GPU); device code only reads it.
    pub host_error: ErrorSlot,
}

impl DeviceState {
    /// The first recorded error: the device's, else the host's. It stays recorded.
    pub fn first_error(&self) -> Option<ErrorRecord> {
        self.error.get().or_else(|| self.host_error.get())
    }
}

// SAFETY: the raw pointers name memory owned by the `Device` that owns this state, which
// outlives every kernel and the proxy; all shared mutation is atomic.
unsafe impl Send for DeviceState {}
// SAFETY: as above.
unsafe impl Sync for DeviceState {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_cmp_shows_values_of_the_waited_type() {
        let i32_ge = wait_cmp::pack(3, 4, true);
        assert_eq!(wait_cmp::operator(i32_ge), ">=");
        assert_eq!(wait_cmp::show(i32_ge, u64::from((-5i32) as u32)), "-5");
        let u16_ne = wait_cmp::pack(1, 2, false);
        assert_eq!(wait_cmp::operator(u16_ne), "!=");
        assert_eq!(wait_cmp::show(u16_ne, 0xffff), "65535");
        let u64_eq = wait_cmp::pack(0, 8, false);
        assert_eq!(wait_cmp::show(u64_eq, u64::MAX), u64::MAX.to_string());
        assert_eq!(wait_cmp::show(wait_cmp::pack(5, 8, true), u64::MAX), "-1");
    }

    #[test]
    fn a_wait_timeout_is_recorded_once_and_marks_the_device() {
        let s = ErrorSlot::default();
        assert!(!s.is_timeout());
        s.record_wait(3, op::SIGNAL_WAIT, -1, 0x1000, 0, wait_cmp::pack(3, 8, false), 1, 0, 2);
        s.record(ErrorCode::PeOutOfRange, op::P, 9, 0, 0, 1, 1);
        assert!(s.is_set() && s.is_timeout());
        let e = s.get().expect("recorded");
        assert_eq!(
            (e.code, e.launch, e.addr, e.value, e.block, e.thread),
            (ErrorCode::WaitTimeout as u32, 3, 0x1000, 1, 0, 2)
        );
    }

    /// Threads racing to record: exactly one wins, and a reader sees all of its fields (no
    /// torn record mixing two errors).
    #[test]
    fn racing_recorders_leave_one_whole_record() {
        let s = std::sync::Arc::new(ErrorSlot::default());
        let hs: Vec<_> = (0..8u32)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let v = u64::from(t) + 1;
                    s.record_in(v, ErrorCode::OutOfBounds, t, t as i64, v, v, t, t);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let e = s.get().expect("recorded");
        let t = e.op;
        let v = u64::from(t) + 1;
        assert_eq!((e.launch, e.pe, e.addr, e.len, e.block, e.thread), (v, t as i64, v, v, t, t));
    }
}
