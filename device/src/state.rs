//! The device state: plain `#[repr(C)]` data in memory a device can reach.
//!
//! Everything a device thread needs is here — its PE number, the heap's base and size, one
//! base address and one channel byte per peer, the proxy ring, the device barrier's flags —
//! with no Rust-only machinery, so that a CUDA back end can place the same structure in GPU
//! or host-pinned memory and read it from device code unchanged. Errors found on the device
//! path are recorded in an error slot (first error wins) instead of unwinding: device code
//! cannot return errors through a kernel, so the host reads the slot when it synchronizes.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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
}

/// The first error a device thread hit, for the host to report.
#[repr(C)]
#[derive(Debug, Default)]
pub struct ErrorSlot {
    /// 0 = none, 1 = being written, 2 = set.
    pub state: AtomicU32,
    /// An [`ErrorCode`].
    pub code: u32,
    /// An operation code (see [`op_name`]).
    pub op: u32,
    /// Block and thread of the device thread (`u32::MAX` when the host proxy found it).
    pub block: u32,
    /// Thread index within the block.
    pub thread: u32,
    /// Target PE as given.
    pub pe: i64,
    /// Address involved.
    pub addr: u64,
    /// Length involved.
    pub len: u64,
}

impl ErrorSlot {
    /// Records an error unless one is already recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn record(&self, code: ErrorCode, op: u32, pe: i64, addr: u64, len: u64, block: u32, thread: u32) {
        if self.state.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return;
        }
        let me = self as *const ErrorSlot as *mut ErrorSlot;
        // SAFETY: state 1 gives this thread exclusive write access to the plain fields; the
        // release store of 2 publishes them.
        unsafe {
            (*me).code = code as u32;
            (*me).op = op;
            (*me).pe = pe;
            (*me).addr = addr;
            (*me).len = len;
            (*me).block = block;
            (*me).thread = thread;
        }
        self.state.store(2, Ordering::Release);
    }

    /// Whether an error is recorded.
    pub fn is_set(&self) -> bool {
        self.state.load(Ordering::Acquire) == 2
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
    /// The proxy request ring (null when no peer uses the proxy).
    pub ring: *const core::ffi::c_void,
    /// The IBGDA queues (null when no peer uses IBGDA).
    pub ibgda: *const core::ffi::c_void,
    /// Symmetric address of the device barrier's flags (`BARRIER_ROUNDS` lines).
    pub barrier_flags: u64,
    /// Device barriers this PE has entered.
    pub barrier_epoch: AtomicU64,
    /// How long a device thread waits for the proxy before reporting a stall (ns).
    pub timeout_ns: u64,
    /// 1 while the proxy thread runs (0 once it has exited, or when there is none).
    pub proxy_alive: AtomicU32,
    /// The first error.
    pub error: ErrorSlot,
}

// SAFETY: the raw pointers name memory owned by the `Device` that owns this state, which
// outlives every kernel and the proxy; all shared mutation is atomic.
unsafe impl Send for DeviceState {}
// SAFETY: as above.
unsafe impl Sync for DeviceState {}
