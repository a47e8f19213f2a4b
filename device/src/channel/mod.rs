//! Channels: how a device thread's operation reaches a peer.
//!
//! - `p2p.rs` — the peer's heap is mapped here: plain loads, stores and CPU atomics.
//! - `proxy.rs` — a request ring in memory the device writes, drained by a host proxy thread
//!   that calls the runtime's transport (NVSHMEM's IBRC path).
//! - `crate::ibgda` — NIC work queues the device thread writes and rings itself (IBGDA).
//! - [`devmem`] — where the memory of the shared structures comes from (the allocator seam a
//!   CUDA back end fills with host-pinned memory).
//!
//! The channel of each peer is chosen once at init and stored as one byte per PE in the
//! device state, so the device path dispatches with one load and one branch.

pub mod devmem;
pub(crate) mod p2p;
pub mod proxy;
pub mod ring;
pub(crate) mod sync;

/// The channel that serves a peer (stored as one byte per PE in the device state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ChannelKind {
    /// Direct loads, stores and atomics on the peer's mapped heap.
    P2p = 1,
    /// Requests to a host proxy thread.
    Proxy = 2,
    /// NIC work requests the device thread writes and rings itself (IBGDA).
    Ibgda = 3,
}

impl ChannelKind {
    /// From the stored byte.
    pub fn from_u8(v: u8) -> Option<ChannelKind> {
        match v {
            1 => Some(ChannelKind::P2p),
            2 => Some(ChannelKind::Proxy),
            3 => Some(ChannelKind::Ibgda),
            _ => None,
        }
    }

    /// Name as `OXSHMEM_DEVICE_CHANNEL` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ChannelKind::P2p => "p2p",
            ChannelKind::Proxy => "proxy",
            ChannelKind::Ibgda => "ibgda",
        }
    }
}
