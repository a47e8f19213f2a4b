//! Transports: how bytes and atomics reach a peer's symmetric segments.
//!
//! One trait, one implementation per family (`shm.rs` today; `ofi.rs` and `verbs.rs` plug in
//! beside it). Which transport serves which peer is decided once, at init, in the runtime's
//! peer table — never per call. The shared-memory path is also inlined by the runtime's RMA
//! code (a mapped peer is a `memcpy` away); the trait is how everything else — the network,
//! the device layer's proxy thread and software NIC — reaches any peer uniformly.

#[cfg(feature = "ofi")]
pub mod ofi;
pub mod shm;

use crate::error::Result;

/// The network transports this build has (`ofi`, the feature of that name): what reaches peers
/// on other nodes. Empty: such peers are unreachable, and init says so.
pub const NETWORK_TRANSPORTS: &[&str] = if cfg!(feature = "ofi") { &["ofi"] } else { &[] };

/// Most symmetric segments a job can have: 0 is the heap, 1 is the executable's static data
/// (C programs), the rest are reserved (device memory, user-registered buffers).
pub const MAX_SEGMENTS: usize = 4;

/// A symmetric location: segment number and byte offset inside it. The same on every PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SymAddr {
    /// Segment number (`0` = heap).
    pub seg: usize,
    /// Byte offset from the segment's start.
    pub offset: usize,
}

/// Operand width of an atomic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// 32-bit operand.
    W32,
    /// 64-bit operand.
    W64,
}

impl Width {
    /// Width in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }
}

/// An atomic operation. Operands are raw bits (the low 32 bits for [`Width::W32`]); every
/// operation returns the target's previous value, which non-fetching callers ignore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmoOp {
    /// Atomic read.
    Fetch,
    /// Atomic write.
    Set(u64),
    /// Exchange.
    Swap(u64),
    /// Write `value` if the target equals `cond`.
    CompareSwap {
        /// Expected value.
        cond: u64,
        /// Value to store.
        value: u64,
    },
    /// Wrapping add.
    FetchAdd(u64),
    /// Bitwise and.
    FetchAnd(u64),
    /// Bitwise or.
    FetchOr(u64),
    /// Bitwise xor.
    FetchXor(u64),
}

/// Moves bytes to and from peers' symmetric segments and performs atomics there.
///
/// Operations may complete after they return (non-blocking semantics): a put's source buffer
/// is reusable on return, but the data is only guaranteed delivered after [`quiet`]. Gets and
/// atomics are complete on return.
///
/// [`quiet`]: Transport::quiet
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// Short name (`shm`, `ofi`).
    fn name(&self) -> &'static str;
    /// What else a user may want to know about it, for diagnostics (`OXSHMEM_SHOW_PEERS`):
    /// the provider, the local address. Empty by default.
    fn detail(&self) -> String {
        String::new()
    }
    /// Whether this transport reaches `pe`.
    fn reaches(&self, pe: usize) -> bool;
    /// Writes `src` to `dst` on `pe`. `func` is the OpenSHMEM routine the caller runs
    /// (`shmem_putmem`), for errors, which also name the peer and the transport's step.
    fn put(&self, func: &'static str, pe: usize, dst: SymAddr, src: &[u8]) -> Result<()>;
    /// Reads `dst.len()` bytes at `src` on `pe`; `func` as for [`put`](Transport::put).
    fn get(&self, func: &'static str, pe: usize, src: SymAddr, dst: &mut [u8]) -> Result<()>;
    /// Performs `op` on the `width`-byte integer at `dst` on `pe`; returns its previous value.
    /// `func` as for [`put`](Transport::put).
    fn atomic(&self, func: &'static str, pe: usize, dst: SymAddr, width: Width, op: AmoOp) -> Result<u64>;
    /// Orders this PE's earlier puts and atomics to each peer before its later ones
    /// (errors are labelled `shmem_fence`).
    fn fence(&self) -> Result<()>;
    /// Completes every put and atomic this PE issued through the transport (errors are
    /// labelled `shmem_quiet`).
    fn quiet(&self) -> Result<()>;
    /// Makes progress once without blocking (reads a completion queue); the runtime's wait
    /// loops call it, so that a PE waiting for a peer also serves that peer's operations.
    fn progress(&self) {}
    /// Releases the transport's resources at finalize. The caller has quieted and then waited
    /// for every PE to do the same, so no peer still needs this PE; no operation follows.
    fn shutdown(&self) {}
}

/// Sets up the network transport for the peers `need` marks; collective over all PEs (it
/// exchanges endpoint addresses and memory keys through the bootstrap). `segments` are this
/// PE's symmetric segments (base, length), the heap's including the runtime's own objects.
/// `Ok(None)` when this build has no network transport.
pub(crate) fn network(
    boot: &dyn oxshmem_bootstrap::Bootstrap,
    me: usize,
    n: usize,
    segments: &[(usize, usize)],
    need: &[bool],
    config: &crate::config::Config,
) -> Result<Option<Box<dyn Transport>>> {
    #[cfg(feature = "ofi")]
    {
        let t = ofi::OfiTransport::new(boot, me, n, segments, need, config)?;
        Ok(Some(Box::new(t)))
    }
    #[cfg(not(feature = "ofi"))]
    {
        let _ = (boot, me, n, segments, need, config);
        Ok(None)
    }
}
