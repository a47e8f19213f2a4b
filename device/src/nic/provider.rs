//! The seam between the IBGDA channel and a NIC: what the channel's set-up asks of whoever
//! executes its queues ([`NicProvider`]). The channel code above it does not know which provider
//! it has: the software NIC ([`soft`](crate::nic::soft)) fills it in every build, a hardware
//! provider (mlx5 through DEVX) where a capable NIC is present.
//!
//! The set-up follows what a verbs program (and NVSHMEM's IBGDA) does, in order: open the
//! device and a port and read its address ([`PortInfo`]: LID, GID, link layer); register
//! memory ([`NicProvider::register`]: the symmetric heap, the queues' scratch, an implicit
//! region for any other local address), each registration giving a local and a remote key;
//! create a completion queue and a queue pair over memory the producer (a GPU thread, or a
//! CPU thread standing in for one) writes; then move every queue pair through
//! RESET → INIT → RTR → RTS ([`NicProvider::modify_qp`]) with the address and QP number of the
//! peer's matching queue pair, exchanged through the bootstrap.

use std::fmt;

/// Why a NIC call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NicError {
    /// No RDMA device can serve (none present, or none with what IBGDA needs).
    #[error("no RDMA device: {0}")]
    NoDevice(String),
    /// A call the NIC (or the provider's rules) refused.
    #[error("{call}: {reason}")]
    Refused {
        /// The call, with its main argument (`modify_qp(0x1a2b, RTR)`).
        call: String,
        /// Why.
        reason: String,
    },
}

impl NicError {
    /// A refusal of `call`.
    pub fn refused(call: impl Into<String>, reason: impl Into<String>) -> NicError {
        NicError::Refused { call: call.into(), reason: reason.into() }
    }
}

/// How a port's packets are addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand: peers are named by LID (and GID across subnets).
    InfiniBand,
    /// RoCE (Ethernet): peers are named by GID (an IP address), with a MAC the NIC resolves.
    Ethernet,
}

impl fmt::Display for LinkLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkLayer::InfiniBand => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
        })
    }
}

/// The address of a port, as the peers' queue pairs need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortInfo {
    /// Port number (from 1).
    pub port: u8,
    /// Local identifier (InfiniBand; 0 on Ethernet).
    pub lid: u16,
    /// The GID the queue pairs use.
    pub gid: [u8; 16],
    /// Its index in the port's GID table.
    pub gid_index: u8,
    /// InfiniBand or Ethernet.
    pub link_layer: LinkLayer,
    /// The active MTU in bytes (256 … 4096).
    pub mtu: u32,
    /// The MAC address of the GID's network device (Ethernet; zero on InfiniBand).
    pub mac: [u8; 6],
}

/// What memory a registration covers (it decides how a hardware provider registers it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Host memory (`ibv_reg_mr`).
    Host,
    /// GPU memory (dma-buf, or peer memory where `nvidia_peermem` is loaded).
    Gpu,
}

/// A registration: the keys WQEs name it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemRegion {
    /// Start address (0 for the implicit region).
    pub addr: u64,
    /// Bytes (`u64::MAX` for the implicit region).
    pub len: u64,
    /// The key local gather/scatter entries carry.
    pub lkey: u32,
    /// The key remote address segments carry.
    pub rkey: u32,
}

/// The queue pair states a provider moves a QP through (the verbs state machine, restricted to
/// the transitions IBGDA makes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpState {
    /// Created: nothing is executed.
    Reset,
    /// Port and access rights set; posts are accepted but not executed.
    Init,
    /// Ready to receive: the peer's QP number and address are set.
    Rtr,
    /// Ready to send: WQEs execute.
    Rts,
    /// An error completion moved it here: nothing further executes.
    Error,
}

impl fmt::Display for QpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QpState::Reset => "RESET",
            QpState::Init => "INIT",
            QpState::Rtr => "RTR",
            QpState::Rts => "RTS",
            QpState::Error => "ERR",
        })
    }
}

/// Whether a QP may go from `from` to `to` (RESET→INIT→RTR→RTS, any state to ERR, ERR or any
/// state back to RESET), and what the transition needs.
///
/// # Errors
/// The transition is not one a NIC accepts.
pub fn check_transition(qpn: u32, from: QpState, to: QpState, peer: Option<&QpPeer>) -> Result<(), NicError> {
    let call = || format!("modify_qp({qpn:#x}, {from}→{to})");
    let ok = matches!(
        (from, to),
        (QpState::Reset, QpState::Init)
            | (QpState::Init, QpState::Rtr)
            | (QpState::Rtr, QpState::Rts)
            | (_, QpState::Error)
            | (_, QpState::Reset)
    );
    if !ok {
        return Err(NicError::refused(call(), "not a transition of the QP state machine"));
    }
    if to == QpState::Rtr && peer.is_none() {
        return Err(NicError::refused(call(), "RTR needs the peer's QP number and address"));
    }
    Ok(())
}

/// The other end of a queue pair: what INIT→RTR sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpPeer {
    /// The peer's QP number.
    pub qpn: u32,
    /// Its port's LID (InfiniBand).
    pub lid: u16,
    /// Its port's GID.
    pub gid: [u8; 16],
    /// Its port's MAC address (Ethernet).
    pub mac: [u8; 6],
    /// The first packet sequence number it expects (and sends).
    pub psn: u32,
}

/// Where a queue pair's memory lies: the producer writes the send queue and the doorbell
/// record, the NIC writes the completion queue. Everything lies in `region`, one allocation a
/// hardware provider registers with the NIC once (DEVX user memory), naming each part by its
/// offset there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueMemory {
    /// The allocation holding every part: its address and length.
    pub region: (u64, u64),
    /// The send queue's doorbell record (8 bytes: receive and send counters, big-endian).
    pub sq_dbr: u64,
    /// The completion queue's doorbell record (8 bytes; the collapsed CQ never updates it).
    pub cq_dbr: u64,
    /// The send queue: `nwqes` slots of 64 bytes.
    pub sq: u64,
    /// Slots of the send queue (a power of two).
    pub nwqes: u32,
    /// The completion queue: `ncqes` entries of 64 bytes.
    pub cq: u64,
    /// Entries of the completion queue (1: collapsed, the NIC always overwrites entry 0).
    pub ncqes: u32,
    /// Memory kind of the queues (host-pinned or GPU).
    pub kind: MemoryKind,
    /// GPU memory: a dma-buf of `region` (byte 0 is the region's first byte), open during
    /// [`NicProvider::create_qp`] — how a hardware NIC registers it as its queues' user memory
    /// (`mlx5dv_devx_umem_reg_ex`) without `nvidia_peermem`. `None`: by address.
    pub dmabuf: Option<std::os::fd::RawFd>,
}

/// How the producer tells the NIC about new work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoorbellPath {
    /// A doorbell register, written after the record, at this address in this process (a UAR
    /// page's register). CPU producers write it there; GPU producers write it through a
    /// mapping of the page for the GPU, or a CPU thread rings for them where the GPU cannot
    /// map it (the channel's choice, `OXSHMEM_IBGDA_NIC_HANDLER`).
    Mapped(u64),
    /// The software NIC: it watches the queues' doorbell records, no register.
    Watched,
}

/// What a provider says about itself, for the info line and `oxshmem-info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicDescription {
    /// `soft`, or the device's name (`mlx5_0`).
    pub name: String,
    /// The provider kind: `soft` or `devx`.
    pub provider: &'static str,
    /// Whether it can register GPU memory.
    pub gpu_memory: bool,
    /// Whether it can register a dma-buf ([`NicProvider::register_dmabuf`]).
    pub dmabuf: bool,
    /// The format of its queues: what producers write and what it reads.
    pub layout: crate::ibgda::layout::Layout,
}

/// A NIC the IBGDA channel's set-up drives: see the [module documentation](self). Every call
/// is made on the host, at set-up, by one thread; execution of the queues is the NIC's (or the
/// software NIC's thread).
pub trait NicProvider: Send + Sync + fmt::Debug {
    /// What it is.
    fn describe(&self) -> NicDescription;

    /// The port the queue pairs use.
    fn port(&self) -> PortInfo;

    /// Registers `len` bytes at `addr` for local and remote access (read, write, atomics).
    ///
    /// # Errors
    /// The NIC refused (out of keys, memory it cannot pin or reach).
    fn register(&self, addr: u64, len: u64, kind: MemoryKind) -> Result<MemRegion, NicError>;

    /// Registers `len` bytes of the dma-buf `fd` from byte `offset`, addressed as `iova` in
    /// work requests (`ibv_reg_dmabuf_mr`): GPU memory without a peer-memory module. The
    /// registration holds its own reference to the buffer; the caller may close `fd`.
    ///
    /// # Errors
    /// The NIC refused, or cannot register dma-bufs (the default).
    fn register_dmabuf(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: u64,
        iova: u64,
    ) -> Result<MemRegion, NicError> {
        let _ = (fd, offset);
        Err(NicError::refused(format!("register_dmabuf({len} bytes at {iova:#x})"), "this NIC takes no dma-bufs"))
    }

    /// Releases `region` (what [`register`](Self::register) or
    /// [`register_dmabuf`](Self::register_dmabuf) gave): its keys name nothing afterwards.
    ///
    /// # Errors
    /// Not a registration of this NIC, or the NIC refused.
    fn deregister(&self, region: &MemRegion) -> Result<(), NicError>;

    /// The implicit region (on-demand paging): one local key for any address of the process,
    /// for sources and destinations of blocking operations that are not registered.
    ///
    /// # Errors
    /// The NIC cannot page on demand.
    fn register_implicit(&self) -> Result<MemRegion, NicError>;

    /// Creates a queue pair (and its completion queue) over `mem`; its QP number.
    ///
    /// # Errors
    /// The NIC refused (sizes beyond its limits, out of resources).
    fn create_qp(&self, mem: &QueueMemory) -> Result<u32, NicError>;

    /// Moves QP `qpn` to `to`; `peer` is the other end (needed for RTR).
    ///
    /// # Errors
    /// Not a transition the state machine allows, or the NIC refused.
    fn modify_qp(&self, qpn: u32, to: QpState, peer: Option<&QpPeer>) -> Result<(), NicError>;

    /// QP `qpn`'s state.
    fn qp_state(&self, qpn: u32) -> Option<QpState>;

    /// The peer QP `qpn` was connected to (at RTR).
    fn qp_peer(&self, qpn: u32) -> Option<QpPeer>;

    /// How the producer rings QP `qpn`'s doorbell.
    fn doorbell(&self, qpn: u32) -> DoorbellPath;
}

/// The first packet sequence number both ends of every queue pair use.
pub const FIRST_PSN: u32 = 0;

/// Moves QP `qpn` through RESET → INIT → RTR → RTS towards `peer`.
///
/// # Errors
/// The first transition that failed.
pub fn connect(nic: &dyn NicProvider, qpn: u32, peer: &QpPeer) -> Result<(), NicError> {
    nic.modify_qp(qpn, QpState::Init, None)?;
    nic.modify_qp(qpn, QpState::Rtr, Some(peer))?;
    nic.modify_qp(qpn, QpState::Rts, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> QpPeer {
        QpPeer { qpn: 7, lid: 1, gid: [0; 16], mac: [0; 6], psn: FIRST_PSN }
    }

    #[test]
    fn the_state_machine_allows_only_its_transitions() {
        use QpState::*;
        let p = peer();
        assert!(check_transition(1, Reset, Init, None).is_ok());
        assert!(check_transition(1, Init, Rtr, Some(&p)).is_ok());
        assert!(check_transition(1, Rtr, Rts, None).is_ok());
        assert!(check_transition(1, Rts, Error, None).is_ok());
        assert!(check_transition(1, Error, Reset, None).is_ok());
        let e = check_transition(0x1a, Reset, Rts, None).unwrap_err();
        assert_eq!(e.to_string(), "modify_qp(0x1a, RESET→RTS): not a transition of the QP state machine");
        assert!(check_transition(1, Init, Init, None).is_err());
        assert!(check_transition(1, Rts, Rtr, Some(&p)).is_err());
        let e = check_transition(2, Init, Rtr, None).unwrap_err();
        assert!(e.to_string().contains("RTR needs the peer's QP number"), "{e}");
    }
}
