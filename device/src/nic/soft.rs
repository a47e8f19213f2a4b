//! The software NIC's provider: the same set-up calls a hardware NIC answers (registration
//! with keys, queue pairs with numbers, the QP state machine, the peer's address at RTR), kept
//! in tables here, so that the whole IBGDA set-up (key and QPN exchange through the bootstrap,
//! the transitions, publishing the device state) runs on every machine. The queues it creates
//! are executed by the software NIC's engine (`ibgda::softnic`), which checks the keys WQEs
//! carry against these registrations.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;

use crate::ibgda::layout::Layout;

use super::provider::{
    DoorbellPath, LinkLayer, MemRegion, MemoryKind, NicDescription, NicError, NicProvider, PortInfo, QpPeer, QpState,
    QueueMemory, check_transition,
};

/// One queue pair of the software NIC.
#[derive(Debug, Clone, Copy)]
struct SoftQp {
    /// Its doorbell register's address (0: none, the record is watched).
    register: u64,
    state: QpState,
    peer: Option<QpPeer>,
    mem: QueueMemory,
}

/// The software NIC's provider for one PE.
#[derive(Debug)]
pub struct SoftProvider {
    port: PortInfo,
    /// The queue format it reads (the vendor it stands in for).
    layout: Layout,
    /// Whether it stands in for a NIC that learns of new work from a doorbell register
    /// written after the record (mlx5's UAR): each queue pair then has a register word here
    /// (its doorbell path is `Mapped`), and the software NIC reads the producer index from it.
    registers: bool,
    /// The register words, one per queue pair in creation order (boxed: their addresses are
    /// handed out and must not move).
    #[allow(clippy::vec_box)] // boxed so that a growing Vec does not move them
    register_words: Mutex<Vec<Box<std::sync::atomic::AtomicU64>>>,
    /// The next key to hand out (keys are unpredictable per process, never 0).
    next_key: AtomicU32,
    /// The next QP number (24 bits, as a NIC's).
    next_qpn: AtomicU32,
    regions: Mutex<Vec<MemRegion>>,
    qps: Mutex<HashMap<u32, SoftQp>>,
}

/// A random 32-bit number (std's per-process hash keys, the pid and `salt`).
fn random(salt: u64) -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(salt);
    h.finish() as u32
}

impl SoftProvider {
    /// The provider of PE `pe`: port 1 with LID `pe + 1` and a link-local GID naming the PE,
    /// reading mlx5 queues.
    pub fn new(pe: usize) -> SoftProvider {
        Self::with_layout(pe, Layout::Mlx5)
    }

    /// As [`new`](Self::new), reading queues in `layout`'s format.
    pub fn with_layout(pe: usize, layout: Layout) -> SoftProvider {
        Self::with(pe, layout, false)
    }

    /// As [`with_layout`](Self::with_layout); with `registers`, every queue pair has a
    /// doorbell register that producers (or a CPU thread for them) write after the record,
    /// and only what a register announces is executed.
    pub fn with(pe: usize, layout: Layout, registers: bool) -> SoftProvider {
        let mut gid = [0u8; 16];
        gid[0] = 0xfe;
        gid[1] = 0x80;
        gid[8..].copy_from_slice(&(pe as u64).to_be_bytes());
        SoftProvider {
            layout,
            registers,
            register_words: Mutex::new(Vec::new()),
            port: PortInfo {
                port: 1,
                lid: (pe as u16).wrapping_add(1),
                gid,
                gid_index: 0,
                link_layer: LinkLayer::InfiniBand,
                mtu: 4096,
                mac: [0; 6],
            },
            next_key: AtomicU32::new(random(pe as u64) | 1),
            next_qpn: AtomicU32::new((random(!(pe as u64)) & 0x00ff_f000) | 0x100),
            regions: Mutex::new(Vec::new()),
            qps: Mutex::new(HashMap::new()),
        }
    }

    fn key(&self) -> u32 {
        loop {
            let k = self.next_key.fetch_add(0x101, Ordering::Relaxed);
            if k != 0 {
                return k;
            }
        }
    }

    /// The registration `lkey` names, if any.
    pub fn region(&self, lkey: u32) -> Option<MemRegion> {
        self.regions.lock().iter().copied().find(|r| r.lkey == lkey)
    }
}

impl NicProvider for SoftProvider {
    fn describe(&self) -> NicDescription {
        NicDescription { name: "soft".into(), provider: "soft", gpu_memory: true, dmabuf: true, layout: self.layout }
    }

    fn port(&self) -> PortInfo {
        self.port
    }

    fn register(&self, addr: u64, len: u64, _kind: MemoryKind) -> Result<MemRegion, NicError> {
        if len == 0 || addr.checked_add(len).is_none() {
            return Err(NicError::refused(format!("register({addr:#x}, {len})"), "an empty or wrapping range"));
        }
        let k = self.key();
        let r = MemRegion { addr, len, lkey: k, rkey: k };
        self.regions.lock().push(r);
        Ok(r)
    }

    /// The buffer must be a file at least `offset + len` bytes long (a dma-buf's size is its
    /// buffer's); the region is `iova`, which the software NIC reaches as its memory's.
    fn register_dmabuf(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: u64,
        iova: u64,
    ) -> Result<MemRegion, NicError> {
        use std::os::fd::AsRawFd;
        let call = || format!("register_dmabuf(fd {}, offset {offset}, {len} bytes at {iova:#x})", fd.as_raw_fd());
        covers(fd.as_raw_fd(), offset, len).map_err(|why| NicError::refused(call(), why))?;
        self.register(iova, len, MemoryKind::Gpu)
    }

    fn deregister(&self, region: &MemRegion) -> Result<(), NicError> {
        let mut regions = self.regions.lock();
        match regions.iter().position(|r| r == region) {
            Some(i) => {
                regions.swap_remove(i);
                Ok(())
            }
            None => Err(NicError::refused(
                format!("deregister({:#x}, {}, lkey {:#x})", region.addr, region.len, region.lkey),
                "not a registration of this NIC",
            )),
        }
    }

    fn register_implicit(&self) -> Result<MemRegion, NicError> {
        let k = self.key();
        let r = MemRegion { addr: 0, len: u64::MAX, lkey: k, rkey: k };
        self.regions.lock().push(r);
        Ok(r)
    }

    fn create_qp(&self, mem: &QueueMemory) -> Result<u32, NicError> {
        if !mem.nwqes.is_power_of_two() || mem.ncqes == 0 {
            return Err(NicError::refused(
                "create_qp",
                format!("{} send queue slots (a power of two), {} CQ entries", mem.nwqes, mem.ncqes),
            ));
        }
        // Queues in GPU memory come with a dma-buf of their region, as a hardware NIC registers
        // them: it must hold the region.
        if let Some(fd) = mem.dmabuf {
            covers(fd, 0, mem.region.1).map_err(|why| {
                NicError::refused(format!("create_qp: the queues' dma-buf (fd {fd}) for {} bytes", mem.region.1), why)
            })?;
        }
        if mem.kind == MemoryKind::Gpu {
            let how = if mem.dmabuf.is_some() { "through a dma-buf" } else { "by address" };
            tracing::debug!(target: "nic", "queue pair over GPU memory, its user memory {how}");
        }
        let qpn = self.next_qpn.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff;
        let register = if self.registers {
            let word = Box::new(std::sync::atomic::AtomicU64::new(0));
            let at = &raw const *word as u64;
            self.register_words.lock().push(word);
            at
        } else {
            0
        };
        // The descriptor is the caller's, open only during this call.
        let mem = QueueMemory { dmabuf: None, ..*mem };
        self.qps.lock().insert(qpn, SoftQp { register, state: QpState::Reset, peer: None, mem });
        Ok(qpn)
    }

    fn modify_qp(&self, qpn: u32, to: QpState, peer: Option<&QpPeer>) -> Result<(), NicError> {
        let mut qps = self.qps.lock();
        let Some(q) = qps.get_mut(&qpn) else {
            return Err(NicError::refused(format!("modify_qp({qpn:#x}, {to})"), "no such queue pair"));
        };
        check_transition(qpn, q.state, to, peer)?;
        if to == QpState::Rtr {
            q.peer = peer.copied();
        }
        if to == QpState::Reset {
            q.peer = None;
        }
        q.state = to;
        Ok(())
    }

    fn qp_state(&self, qpn: u32) -> Option<QpState> {
        self.qps.lock().get(&qpn).map(|q| q.state)
    }

    fn qp_peer(&self, qpn: u32) -> Option<QpPeer> {
        self.qps.lock().get(&qpn).and_then(|q| q.peer)
    }

    fn doorbell(&self, qpn: u32) -> DoorbellPath {
        match self.qps.lock().get(&qpn).map_or(0, |q| q.register) {
            0 => DoorbellPath::Watched,
            at => DoorbellPath::Mapped(at),
        }
    }
}

/// Whether the file `fd` (a dma-buf, whose size is its buffer's) holds `len` bytes from
/// `offset`; else why not.
fn covers(fd: std::os::fd::RawFd, offset: u64, len: u64) -> Result<(), String> {
    // SAFETY: `stat` is plain data, valid when zeroed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor the caller keeps open, and a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    if offset.checked_add(len).is_none_or(|end| end > st.st_size as u64) {
        return Err(format!("the buffer has {} bytes", st.st_size));
    }
    Ok(())
}

impl SoftProvider {
    /// The memory QP `qpn` was created over.
    pub fn queue_memory(&self, qpn: u32) -> Option<QueueMemory> {
        self.qps.lock().get(&qpn).map(|q| q.mem)
    }
}

#[cfg(test)]
mod tests {
    use super::super::provider::{FIRST_PSN, connect};
    use super::*;

    /// A dma-buf registration covers what the buffer holds, at the address given; past the
    /// buffer's end it is refused.
    #[test]
    #[cfg_attr(miri, ignore = "memfd_create is a foreign function")]
    fn dmabuf_registration_checks_the_buffer() {
        use std::os::fd::{AsFd, FromRawFd, OwnedFd};
        let p = SoftProvider::new(0);
        // SAFETY: a fresh memfd, owned here.
        let fd = unsafe {
            let fd = libc::memfd_create(c"oxshmem-dmabuf-test".as_ptr(), libc::MFD_CLOEXEC);
            assert!(fd >= 0);
            assert_eq!(libc::ftruncate(fd, 8192), 0);
            OwnedFd::from_raw_fd(fd)
        };
        let r = p.register_dmabuf(fd.as_fd(), 4096, 4096, 0x7000_0000).expect("within the buffer");
        assert_eq!((r.addr, r.len), (0x7000_0000, 4096));
        assert_ne!(r.lkey, 0);
        let e = p.register_dmabuf(fd.as_fd(), 4096, 8192, 0x7000_0000).unwrap_err().to_string();
        assert!(e.contains("the buffer has 8192 bytes"), "{e}");
        let e = p.register_dmabuf(fd.as_fd(), u64::MAX, 2, 0x7000_0000).unwrap_err().to_string();
        assert!(e.contains("the buffer has"), "{e}");
        // Queues in GPU memory: the queue pair's dma-buf must hold the whole region.
        use std::os::fd::AsRawFd;
        let gpu = |len: u64| QueueMemory {
            region: (0x7000_0000, len),
            kind: MemoryKind::Gpu,
            dmabuf: Some(fd.as_raw_fd()),
            ..mem()
        };
        assert!(p.create_qp(&gpu(8192)).is_ok());
        let e = p.create_qp(&gpu(8193)).unwrap_err().to_string();
        assert!(e.contains("the queues' dma-buf") && e.contains("the buffer has 8192 bytes"), "{e}");
    }

    fn mem() -> QueueMemory {
        QueueMemory {
            region: (0x1000, 0x2000),
            sq_dbr: 0x1c00,
            cq_dbr: 0x1c40,
            sq: 0x1000,
            nwqes: 64,
            cq: 0x2000,
            ncqes: 1,
            kind: MemoryKind::Host,
            dmabuf: None,
        }
    }

    #[test]
    fn registrations_have_distinct_nonzero_keys() {
        let p = SoftProvider::new(3);
        let a = p.register(0x1000, 4096, MemoryKind::Host).unwrap();
        let b = p.register(0x9000, 64, MemoryKind::Gpu).unwrap();
        let i = p.register_implicit().unwrap();
        assert!(a.lkey != 0 && b.lkey != 0 && i.lkey != 0);
        assert!(a.lkey != b.lkey && b.lkey != i.lkey && a.lkey != i.lkey);
        assert_eq!(p.region(b.lkey), Some(b));
        assert_eq!(p.region(i.lkey).map(|r| r.len), Some(u64::MAX));
        assert!(p.register(0x1000, 0, MemoryKind::Host).is_err());
        assert_eq!(p.port().lid, 4);
        assert_eq!(&p.port().gid[..2], &[0xfe, 0x80]);
        // Deregistered, a key names nothing; twice is refused.
        p.deregister(&b).unwrap();
        assert_eq!(p.region(b.lkey), None);
        assert!(p.deregister(&b).is_err());
        assert_eq!(p.region(a.lkey), Some(a));
    }

    #[test]
    fn a_queue_pair_goes_through_the_state_machine() {
        let p = SoftProvider::new(0);
        let q = p.create_qp(&mem()).unwrap();
        let r = p.create_qp(&mem()).unwrap();
        assert_ne!(q, r);
        assert!(q <= 0x00ff_ffff);
        assert_eq!(p.qp_state(q), Some(QpState::Reset));
        // RTS straight from RESET is refused, and leaves the QP as it was.
        assert!(p.modify_qp(q, QpState::Rts, None).is_err());
        assert_eq!(p.qp_state(q), Some(QpState::Reset));
        let peer = QpPeer { qpn: r, lid: 9, gid: [1; 16], mac: [2; 6], psn: FIRST_PSN };
        connect(&p, q, &peer).unwrap();
        assert_eq!(p.qp_state(q), Some(QpState::Rts));
        assert_eq!(p.qp_peer(q), Some(peer));
        assert!(p.modify_qp(0xabcdef, QpState::Init, None).unwrap_err().to_string().contains("no such queue pair"));
        assert!(p.create_qp(&QueueMemory { nwqes: 48, ..mem() }).is_err());
        assert_eq!(p.queue_memory(q), Some(mem()));
        assert_eq!(p.doorbell(q), DoorbellPath::Watched);
    }
}
