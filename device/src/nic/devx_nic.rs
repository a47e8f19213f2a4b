//! The hardware provider: an mlx5 NIC driven through DEVX (feature `verbs`), as NVSHMEM's IBGDA
//! host side drives it — the device opened with `MLX5DV_CONTEXT_FLAGS_DEVX`, a protection
//! domain, the HCA's capabilities (`QUERY_HCA_CAP`), a non-cached UAR page for doorbells, the
//! queue memory registered as DEVX user memory, each CQ and QP created with raw commands
//! ([`super::devx`]) over it, and the QP moved RST → INIT → RTR → RTS with `modify` commands.
//! Memory regions are ordinary verbs registrations (`ibv_reg_mr`; an implicit on-demand-paging
//! region for any other local address).
//!
//! Nothing here can run on a machine without an mlx5 NIC: [`DevxNic::open`] fails first, with
//! the reason (`no RDMA device: …`, `device mlx5_0 cannot create DEVX objects …`).

use std::collections::HashMap;
use std::ffi::c_void;

use parking_lot::Mutex;
use rdma_sys::{
    ibv_access_flags, ibv_alloc_pd, ibv_close_device, ibv_context, ibv_dealloc_pd, ibv_dereg_mr, ibv_free_device_list,
    ibv_get_device_list, ibv_get_device_name, ibv_gid, ibv_mr, ibv_pd, ibv_port_attr, ibv_query_gid,
};

use super::devx::{
    AddressPath, Command, CreateCq, CreateCqOut, CreateQp, CreateQpOut, HcaCaps, Init2RtrQp, QueryHcaCap, Rst2InitQp,
    Rtr2RtsQp, check_modify_qp_out,
};
use super::provider::{
    DoorbellPath, LinkLayer, MemRegion, MemoryKind, NicDescription, NicError, NicProvider, PortInfo, QpPeer, QpState,
    QueueMemory, check_transition,
};
use super::verbs::{self, mlx5dv};

/// `MLX5DV_OBJ_PD` (`enum mlx5dv_obj_type`).
const OBJ_PD: u64 = 1 << 6;
/// `MLX5DV_UAR_ALLOC_TYPE_NC`: a non-cached doorbell page (what NVSHMEM asks first).
const UAR_ALLOC_NC: u32 = 1;
/// The access every registration gets: local write, remote read, write and atomics.
fn access() -> u32 {
    (ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_READ
        | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC)
        .0
}

/// A DEVX object (CQ or QP), destroyed on drop.
struct Obj(*mut mlx5dv::mlx5dv_devx_obj);

impl Drop for Obj {
    fn drop(&mut self) {
        // SAFETY: created by mlx5dv_devx_obj_create and not used after this.
        unsafe { mlx5dv::mlx5dv_devx_obj_destroy(self.0) };
    }
}

/// One queue pair and its completion queue.
struct DevxQp {
    // Field order is drop order: the QP before the CQ it reports to.
    qp: Obj,
    _cq: Obj,
    state: QpState,
    peer: Option<QpPeer>,
}

/// The hardware provider of one PE.
pub struct DevxNic {
    name: String,
    ctx: *mut ibv_context,
    pd: *mut ibv_pd,
    pdn: u32,
    caps: HcaCaps,
    port: PortInfo,
    uar: *mut mlx5dv::mlx5dv_devx_uar,
    eqn: u32,
    /// How GPU memory registers with this host's NICs (read once, at open).
    gpu: verbs::GpuRegistration,
    mrs: Mutex<Vec<*mut ibv_mr>>,
    /// DEVX user memory per registered queue region (its address).
    umems: Mutex<HashMap<u64, *mut mlx5dv::mlx5dv_devx_umem>>,
    qps: Mutex<HashMap<u32, DevxQp>>,
}

// SAFETY: the handles are the driver's, used under the locks above or read-only after open;
// verbs and DEVX calls are thread-safe.
unsafe impl Send for DevxNic {}
// SAFETY: as above.
unsafe impl Sync for DevxNic {}

impl std::fmt::Debug for DevxNic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevxNic").field("name", &self.name).field("port", &self.port).finish_non_exhaustive()
    }
}

fn refused(call: impl Into<String>) -> NicError {
    NicError::refused(call, std::io::Error::last_os_error().to_string())
}

/// Runs a DEVX general command, returning its output.
fn general<C: Command>(ctx: *mut ibv_context, cmd: &C) -> Result<Vec<u8>, NicError> {
    let bytes = cmd.to_bytes().map_err(devx_err)?;
    let mut out = vec![0u8; C::OUT_BYTES];
    // SAFETY: an open DEVX context; the buffers are valid for their lengths.
    let rc = unsafe {
        mlx5dv::mlx5dv_devx_general_cmd(ctx, bytes.as_ptr().cast(), bytes.len(), out.as_mut_ptr().cast(), out.len())
    };
    if rc != 0 {
        return Err(NicError::refused(C::NAME, std::io::Error::from_raw_os_error(rc.abs()).to_string()));
    }
    Ok(out)
}

fn devx_err(e: super::devx::DevxError) -> NicError {
    NicError::refused("devx", e.to_string())
}

/// The GID index this port's queue pairs use: `OXSHMEM_NIC_GID_INDEX` when set, else 0 on
/// InfiniBand and, on Ethernet, the first RoCE v2 GID (from the kernel's GID attributes).
fn gid_index(dev: &str, port: u8, link: LinkLayer) -> Result<u8, NicError> {
    let (v, name) = crate::config::value_of("OXSHMEM_NIC_GID_INDEX");
    if !v.trim().is_empty() {
        return v.trim().parse::<u8>().map_err(|_| NicError::refused(name, format!("{v:?}: expected a GID index")));
    }
    if link == LinkLayer::InfiniBand {
        return Ok(0);
    }
    for i in 0..16u8 {
        let t = std::fs::read_to_string(format!("/sys/class/infiniband/{dev}/ports/{port}/gid_attrs/types/{i}"));
        if t.is_ok_and(|t| t.trim().eq_ignore_ascii_case("RoCE v2")) {
            return Ok(i);
        }
    }
    Err(NicError::NoDevice(format!("{dev} port {port} has no RoCE v2 GID (set OXSHMEM_NIC_GID_INDEX)")))
}

/// The MAC address of the network device behind a GID (Ethernet).
fn gid_mac(dev: &str, port: u8, index: u8) -> [u8; 6] {
    let ndev = std::fs::read_to_string(format!("/sys/class/infiniband/{dev}/ports/{port}/gid_attrs/ndevs/{index}"));
    let text = ndev.ok().and_then(|n| std::fs::read_to_string(format!("/sys/class/net/{}/address", n.trim())).ok());
    let mut mac = [0u8; 6];
    if let Some(t) = text {
        for (m, part) in mac.iter_mut().zip(t.trim().split(':')) {
            *m = u8::from_str_radix(part, 16).unwrap_or(0);
        }
    }
    mac
}

impl DevxNic {
    /// Opens the DEVX-capable device `name` (or the first with an active port).
    ///
    /// # Errors
    /// `no RDMA device: …` without one; the verbs or DEVX call that failed.
    pub fn open(name: Option<&str>) -> Result<DevxNic, NicError> {
        let want = verbs::open_devx(name)?;
        let mut n = 0;
        // SAFETY: `n` is a valid out-pointer; the list is freed below.
        let list = unsafe { ibv_get_device_list(&mut n) };
        if list.is_null() {
            return Err(NicError::NoDevice("ibv_get_device_list found none on this host".into()));
        }
        let mut ctx: *mut ibv_context = std::ptr::null_mut();
        for i in 0..n.max(0) as usize {
            // SAFETY: the list holds `n` devices; their names are NUL-terminated strings.
            let dev = unsafe { *list.add(i) };
            // SAFETY: as above.
            let dname = unsafe { std::ffi::CStr::from_ptr(ibv_get_device_name(dev)) };
            if dname.to_string_lossy() == want.name {
                let mut attr = mlx5dv::mlx5dv_context_attr { flags: 1, comp_mask: 0 };
                // SAFETY: a device of the list and a valid attribute struct.
                ctx = unsafe { mlx5dv::mlx5dv_open_device(dev.cast(), &mut attr) }.cast();
            }
        }
        // SAFETY: from ibv_get_device_list; the open context does not depend on it.
        unsafe { ibv_free_device_list(list) };
        if ctx.is_null() {
            return Err(refused(format!("mlx5dv_open_device({}, DEVX)", want.name)));
        }
        let mut nic = DevxNic {
            name: want.name.clone(),
            ctx,
            pd: std::ptr::null_mut(),
            pdn: 0,
            caps: HcaCaps::default(),
            port: PortInfo {
                port: 1,
                lid: 0,
                gid: [0; 16],
                gid_index: 0,
                link_layer: LinkLayer::InfiniBand,
                mtu: 0,
                mac: [0; 6],
            },
            uar: std::ptr::null_mut(),
            eqn: 0,
            gpu: verbs::gpu_registration(),
            mrs: Mutex::new(Vec::new()),
            umems: Mutex::new(HashMap::new()),
            qps: Mutex::new(HashMap::new()),
        };
        // From here on, `nic`'s drop releases whatever was set up.
        // SAFETY: an open context.
        nic.pd = unsafe { ibv_alloc_pd(ctx) };
        if nic.pd.is_null() {
            return Err(refused("ibv_alloc_pd"));
        }
        let mut dv_pd = mlx5dv::mlx5dv_pd::default();
        let mut obj = mlx5dv::mlx5dv_obj::default();
        obj.pd.in_ = nic.pd.cast();
        obj.pd.out = &mut dv_pd;
        // SAFETY: `obj` names the PD and a valid output struct.
        if unsafe { mlx5dv::mlx5dv_init_obj(&mut obj, OBJ_PD) } != 0 {
            return Err(refused("mlx5dv_init_obj(PD)"));
        }
        nic.pdn = dv_pd.pdn;
        let out = general(ctx, &QueryHcaCap::general(true))?;
        nic.caps = HcaCaps::parse(&out).map_err(devx_err)?;
        if !nic.caps.atomic {
            return Err(NicError::NoDevice(format!("{} has no remote atomics (QUERY_HCA_CAP.atomic = 0)", nic.name)));
        }
        let port = want
            .ports
            .iter()
            .find(|p| p.active)
            .ok_or_else(|| NicError::NoDevice(format!("{} has no active port", nic.name)))?;
        // SAFETY: ibv_port_attr is plain data; zero is valid.
        let mut pa: ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: an open context, a port of the device, a valid out-pointer.
        if unsafe { rdma_sys::___ibv_query_port(ctx, port.num, &mut pa) } != 0 {
            return Err(refused(format!("ibv_query_port({}, {})", nic.name, port.num)));
        }
        let link = port.link_layer.unwrap_or(LinkLayer::InfiniBand);
        let index = gid_index(&nic.name, port.num, link)?;
        let mut gid = ibv_gid { raw: [0; 16] };
        // SAFETY: an open context, a port, an index and a valid out-pointer.
        if unsafe { ibv_query_gid(ctx, port.num, i32::from(index), &mut gid) } != 0 {
            return Err(refused(format!("ibv_query_gid({}, {}, {index})", nic.name, port.num)));
        }
        nic.port = PortInfo {
            port: port.num,
            lid: pa.lid,
            // SAFETY: every bit pattern is a valid byte array.
            gid: unsafe { gid.raw },
            gid_index: index,
            link_layer: link,
            mtu: port.mtu,
            mac: if link == LinkLayer::Ethernet { gid_mac(&nic.name, port.num, index) } else { [0; 6] },
        };
        // SAFETY: an open DEVX context.
        nic.uar = unsafe { mlx5dv::mlx5dv_devx_alloc_uar(ctx, UAR_ALLOC_NC) };
        if nic.uar.is_null() {
            return Err(refused("mlx5dv_devx_alloc_uar(NC)"));
        }
        // SAFETY: an open DEVX context and a valid out-pointer.
        if unsafe { mlx5dv::mlx5dv_devx_query_eqn(ctx, 0, &mut nic.eqn) } != 0 {
            return Err(refused("mlx5dv_devx_query_eqn(0)"));
        }
        tracing::info!(target: "nic", device = %nic.name, port = nic.port.port, link = %link, "IBGDA queues: mlx5 DEVX");
        Ok(nic)
    }

    fn umem_for(&self, mem: &QueueMemory) -> Result<u32, NicError> {
        let mut umems = self.umems.lock();
        if let Some(u) = umems.get(&mem.region.0) {
            // SAFETY: a live registration of this provider.
            return Ok(unsafe { (**u).umem_id });
        }
        let (addr, size) = (mem.region.0 as *mut c_void, mem.region.1 as usize);
        // SAFETY: an open DEVX context; the region is memory the channel owns for as long as
        // its queue pairs (it destroys them first).
        let by_address = || unsafe { mlx5dv::mlx5dv_devx_umem_reg(self.ctx, addr, size, access()) };
        let u = match mem.dmabuf {
            None if mem.kind == MemoryKind::Gpu && !self.gpu.peermem => {
                return Err(NicError::refused(
                    format!("mlx5dv_devx_umem_reg({:#x}, {size})", mem.region.0),
                    "GPU memory by address needs nvidia_peermem, which is not loaded (and no dma-buf was given)",
                ));
            }
            None => by_address(),
            // GPU memory through its dma-buf (`MLX5DV_UMEM_MASK_DMABUF`): `addr` is then the
            // offset in the buffer (0: its byte 0 is the region's first byte), and any page
            // size from 4 KiB up will do (the kernel picks the largest the buffer allows).
            Some(fd) => {
                let mut umem_in = mlx5dv::mlx5dv_devx_umem_in {
                    addr: std::ptr::null_mut(),
                    size,
                    access: access(),
                    pgsz_bitmap: !0xfffu64,
                    comp_mask: 1,
                    dmabuf_fd: fd,
                };
                // SAFETY: an open DEVX context; a filled-in request; the kernel takes its own
                // reference to the buffer.
                let u = unsafe { mlx5dv::mlx5dv_devx_umem_reg_ex(self.ctx, &mut umem_in) };
                if u.is_null() {
                    let why = std::io::Error::last_os_error();
                    if !self.gpu.peermem {
                        return Err(NicError::refused(
                            format!("mlx5dv_devx_umem_reg_ex(dma-buf fd {fd}, {size} bytes)"),
                            format!("{why}; and by address GPU memory needs nvidia_peermem, which is not loaded"),
                        ));
                    }
                    tracing::debug!(target: "nic", "the queues' user memory by dma-buf failed ({why}): by address");
                    by_address()
                } else {
                    u
                }
            }
        };
        if u.is_null() {
            return Err(refused(format!("mlx5dv_devx_umem_reg({:#x}, {size})", mem.region.0)));
        }
        umems.insert(mem.region.0, u);
        // SAFETY: just registered.
        Ok(unsafe { (*u).umem_id })
    }

    fn create(&self, name: &str, bytes: Vec<u8>, out_bytes: usize) -> Result<(Obj, Vec<u8>), NicError> {
        let mut out = vec![0u8; out_bytes];
        // SAFETY: an open DEVX context; the buffers are valid for their lengths.
        let o = unsafe {
            mlx5dv::mlx5dv_devx_obj_create(
                self.ctx,
                bytes.as_ptr().cast(),
                bytes.len(),
                out.as_mut_ptr().cast(),
                out.len(),
            )
        };
        if o.is_null() {
            return Err(refused(format!("mlx5dv_devx_obj_create({name})")));
        }
        Ok((Obj(o), out))
    }

    fn modify(&self, obj: &Obj, name: &str, bytes: Vec<u8>, out_bytes: usize) -> Result<Vec<u8>, NicError> {
        let mut out = vec![0u8; out_bytes];
        // SAFETY: a live DEVX object; the buffers are valid for their lengths.
        let rc = unsafe {
            mlx5dv::mlx5dv_devx_obj_modify(
                obj.0,
                bytes.as_ptr().cast(),
                bytes.len(),
                out.as_mut_ptr().cast(),
                out.len(),
            )
        };
        if rc != 0 {
            return Err(NicError::refused(
                format!("mlx5dv_devx_obj_modify({name})"),
                std::io::Error::from_raw_os_error(rc.abs()).to_string(),
            ));
        }
        Ok(out)
    }
}

/// log2 of a power of two.
fn log2(x: u64) -> u8 {
    x.trailing_zeros() as u8
}

/// `enum ibv_mtu` of a size in bytes.
fn mtu_code(bytes: u32) -> u8 {
    match bytes {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        _ => 5,
    }
}

impl NicProvider for DevxNic {
    fn describe(&self) -> NicDescription {
        NicDescription {
            name: self.name.clone(),
            provider: "devx",
            gpu_memory: self.gpu.peermem,
            dmabuf: self.gpu.dmabuf,
            layout: crate::ibgda::layout::Layout::Mlx5,
        }
    }

    fn port(&self) -> PortInfo {
        self.port
    }

    fn register(&self, addr: u64, len: u64, kind: MemoryKind) -> Result<MemRegion, NicError> {
        if kind == MemoryKind::Gpu && !self.gpu.peermem {
            return Err(NicError::refused(
                format!("register({addr:#x}, {len}, GPU)"),
                "GPU memory by address needs nvidia_peermem loaded (without it, the IBGDA set-up registers \
                 the GPU heap through a dma-buf)",
            ));
        }
        // SAFETY: a PD of this context; the range is memory its owner keeps registered-live until
        // the provider goes.
        let mr = unsafe { rdma_sys::ibv_reg_mr(self.pd, addr as *mut c_void, len as usize, access() as i32) };
        if mr.is_null() {
            return Err(refused(format!("ibv_reg_mr({addr:#x}, {len})")));
        }
        self.mrs.lock().push(mr);
        // SAFETY: just registered.
        let (lkey, rkey) = unsafe { ((*mr).lkey, (*mr).rkey) };
        Ok(MemRegion { addr, len, lkey, rkey })
    }

    fn register_dmabuf(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: u64,
        iova: u64,
    ) -> Result<MemRegion, NicError> {
        use std::os::fd::AsRawFd;
        // SAFETY: a PD of this context; the kernel takes its own reference to the buffer.
        let mr = unsafe {
            rdma_sys::ibv_reg_dmabuf_mr(self.pd, offset, len as usize, iova, fd.as_raw_fd(), access() as i32)
        };
        if mr.is_null() {
            return Err(refused(format!("ibv_reg_dmabuf_mr(offset {offset}, {len} bytes at {iova:#x})")));
        }
        self.mrs.lock().push(mr);
        // SAFETY: just registered.
        let (lkey, rkey) = unsafe { ((*mr).lkey, (*mr).rkey) };
        Ok(MemRegion { addr: iova, len, lkey, rkey })
    }

    fn deregister(&self, region: &MemRegion) -> Result<(), NicError> {
        let call = || format!("ibv_dereg_mr({:#x}, {}, lkey {:#x})", region.addr, region.len, region.lkey);
        let mut mrs = self.mrs.lock();
        // SAFETY: every pointer in `mrs` is a live registration of this provider.
        let Some(i) = mrs.iter().position(|&mr| unsafe { (*mr).lkey == region.lkey && (*mr).rkey == region.rkey })
        else {
            return Err(NicError::refused(call(), "not a registration of this NIC"));
        };
        let mr = mrs.swap_remove(i);
        // SAFETY: registered by this provider; the caller no longer names its keys.
        if unsafe { ibv_dereg_mr(mr) } != 0 {
            return Err(refused(call()));
        }
        Ok(())
    }

    fn register_implicit(&self) -> Result<MemRegion, NicError> {
        let on_demand = access() | ibv_access_flags::IBV_ACCESS_ON_DEMAND.0;
        // SAFETY: the implicit ODP registration: a null address and SIZE_MAX, as verbs defines it.
        let mr = unsafe { rdma_sys::ibv_reg_mr(self.pd, std::ptr::null_mut(), usize::MAX, on_demand as i32) };
        if mr.is_null() {
            return Err(refused("ibv_reg_mr(implicit on-demand paging)"));
        }
        self.mrs.lock().push(mr);
        // SAFETY: just registered.
        let lkey = unsafe { (*mr).lkey };
        Ok(MemRegion { addr: 0, len: u64::MAX, lkey, rkey: lkey })
    }

    fn create_qp(&self, mem: &QueueMemory) -> Result<u32, NicError> {
        let base = mem.region.0;
        let off = |a: u64, what: &str, align: u64| -> Result<u64, NicError> {
            let o = a.checked_sub(base).filter(|o| o + 8 <= mem.region.1).ok_or_else(|| {
                NicError::refused("create_qp", format!("the {what} ({a:#x}) is outside the queue region"))
            })?;
            if o % align != 0 {
                return Err(NicError::refused(
                    "create_qp",
                    format!("the {what} is not aligned to {align} bytes in its region"),
                ));
            }
            Ok(o)
        };
        let (sq, cq) = (off(mem.sq, "send queue", 4096)?, off(mem.cq, "completion queue", 4096)?);
        let (sq_dbr, cq_dbr) = (off(mem.sq_dbr, "send doorbell record", 8)?, off(mem.cq_dbr, "CQ doorbell record", 8)?);
        if u64::from(mem.nwqes) > 1 << self.caps.log_max_qp_sz || u64::from(mem.ncqes) > 1 << self.caps.log_max_cq_sz {
            return Err(NicError::refused(
                "create_qp",
                format!("{} slots / {} CQEs exceed {}'s limits", mem.nwqes, mem.ncqes, self.name),
            ));
        }
        let umem = self.umem_for(mem)?;
        // SAFETY: allocated at open.
        let uar_page = unsafe { (*self.uar).page_id };
        let cqc = CreateCq {
            cqe_sz: super::devx::CQE_SZ_64,
            cc: mem.ncqes == 1,
            oi: true,
            log_cq_size: log2(u64::from(mem.ncqes)),
            uar_page,
            c_eqn: self.eqn,
            log_page_size: 0,
            dbr_umem_valid: true,
            dbr_umem_id: umem,
            dbr_addr: cq_dbr,
            cq_umem_valid: true,
            cq_umem_id: umem,
            cq_umem_offset: cq,
        };
        let (cq_obj, out) = self.create("CREATE_CQ", cqc.to_bytes().map_err(devx_err)?, CreateCq::OUT_BYTES)?;
        let cqn = CreateCqOut::parse(&out).map_err(devx_err)?.cqn;
        let qpc = CreateQp {
            st: super::devx::QPC_ST_RC,
            pm_state: super::devx::QPC_PM_STATE_MIGRATED,
            pd: self.pdn,
            uar_page,
            log_sq_size: log2(u64::from(mem.nwqes)),
            no_sq: false,
            log_rq_size: 0,
            log_rq_stride: 0,
            rq_type: super::devx::QPC_RQ_TYPE_ZERO_SIZE_RQ,
            srqn_rmpn_xrqn: 0,
            ts_format: 0,
            cqn_snd: cqn,
            cqn_rcv: cqn,
            log_page_size: 0,
            dbr_umem_valid: true,
            dbr_umem_id: umem,
            dbr_addr: sq_dbr,
            wq_umem_valid: true,
            wq_umem_id: umem,
            wq_umem_offset: sq,
        };
        let (qp_obj, out) = self.create("CREATE_QP", qpc.to_bytes().map_err(devx_err)?, CreateQp::OUT_BYTES)?;
        let qpn = CreateQpOut::parse(&out).map_err(devx_err)?.qpn;
        self.qps.lock().insert(qpn, DevxQp { qp: qp_obj, _cq: cq_obj, state: QpState::Reset, peer: None });
        Ok(qpn)
    }

    fn modify_qp(&self, qpn: u32, to: QpState, peer: Option<&QpPeer>) -> Result<(), NicError> {
        let mut qps = self.qps.lock();
        let q = qps
            .get_mut(&qpn)
            .ok_or_else(|| NicError::refused(format!("modify_qp({qpn:#x}, {to})"), "no such queue pair"))?;
        check_transition(qpn, q.state, to, peer)?;
        let port = self.port;
        match (to, peer) {
            (QpState::Init, _) => {
                let c = Rst2InitQp {
                    qpn,
                    opt_param_mask: 0,
                    pm_state: super::devx::QPC_PM_STATE_MIGRATED,
                    vhca_port_num: port.port,
                    pkey_index: 0,
                    rre: true,
                    rwe: true,
                    rae: true,
                    atomic_mode: super::devx::QPC_ATOMIC_MODE_UP_TO_8B,
                };
                let out = self.modify(&q.qp, "RST2INIT_QP", c.to_bytes().map_err(devx_err)?, Rst2InitQp::OUT_BYTES)?;
                check_modify_qp_out::<Rst2InitQp>(&out).map_err(devx_err)?;
            }
            (QpState::Rtr, Some(p)) => {
                let path = match port.link_layer {
                    LinkLayer::InfiniBand => {
                        AddressPath { vhca_port_num: port.port, rlid: p.lid, ..AddressPath::default() }
                    }
                    LinkLayer::Ethernet => AddressPath {
                        vhca_port_num: port.port,
                        grh: true,
                        src_addr_index: port.gid_index,
                        hop_limit: 64,
                        rgid_rip: p.gid,
                        rmac: p.mac,
                        udp_sport: 0xc000 | (qpn as u16 & 0x3fff),
                        ..AddressPath::default()
                    },
                };
                let c = Init2RtrQp {
                    qpn,
                    opt_param_mask: 0,
                    mtu: mtu_code(port.mtu),
                    log_msg_max: self.caps.log_max_msg,
                    remote_qpn: p.qpn,
                    next_rcv_psn: p.psn,
                    log_rra_max: self.caps.log_max_ra_res_qp,
                    min_rnr_nak: 12,
                    path,
                };
                let out = self.modify(&q.qp, "INIT2RTR_QP", c.to_bytes().map_err(devx_err)?, Init2RtrQp::OUT_BYTES)?;
                check_modify_qp_out::<Init2RtrQp>(&out).map_err(devx_err)?;
                q.peer = Some(*p);
            }
            (QpState::Rts, _) => {
                let c = Rtr2RtsQp {
                    qpn,
                    opt_param_mask: 0,
                    next_send_psn: super::provider::FIRST_PSN,
                    retry_count: 7,
                    rnr_retry: 7,
                    log_sra_max: self.caps.log_max_ra_req_qp,
                    ack_timeout: 20,
                };
                let out = self.modify(&q.qp, "RTR2RTS_QP", c.to_bytes().map_err(devx_err)?, Rtr2RtsQp::OUT_BYTES)?;
                check_modify_qp_out::<Rtr2RtsQp>(&out).map_err(devx_err)?;
            }
            (other, _) => {
                return Err(NicError::refused(
                    format!("modify_qp({qpn:#x}, {other})"),
                    "this provider makes only the RST→INIT→RTR→RTS transitions",
                ));
            }
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

    fn doorbell(&self, _qpn: u32) -> DoorbellPath {
        // SAFETY: allocated at open, alive as long as the provider.
        DoorbellPath::Mapped(unsafe { (*self.uar).reg_addr } as u64)
    }
}

impl Drop for DevxNic {
    fn drop(&mut self) {
        // Queue pairs and CQs first, then what they use.
        self.qps.lock().clear();
        for (_, u) in self.umems.lock().drain() {
            // SAFETY: registered by this provider; no object uses it any more.
            unsafe { mlx5dv::mlx5dv_devx_umem_dereg(u) };
        }
        for mr in self.mrs.lock().drain(..) {
            // SAFETY: registered by this provider and not used after this.
            unsafe { ibv_dereg_mr(mr) };
        }
        if !self.uar.is_null() {
            // SAFETY: allocated by this provider.
            unsafe { mlx5dv::mlx5dv_devx_free_uar(self.uar) };
        }
        if !self.pd.is_null() {
            // SAFETY: allocated by this provider; its registrations are gone.
            unsafe { ibv_dealloc_pd(self.pd) };
        }
        // SAFETY: opened by this provider; everything made on it is gone.
        unsafe { ibv_close_device(self.ctx) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        assert_eq!(mtu_code(4096), 5);
        assert_eq!(mtu_code(1024), 3);
        assert_eq!(log2(2048), 11);
    }

    /// Without an mlx5 NIC (this host), opening fails with the reason, not a panic.
    #[test]
    fn open_without_a_device_says_why() {
        if verbs::open_devx(None).is_ok() {
            return; // a host with a capable NIC: nothing to check here
        }
        let e = DevxNic::open(None).unwrap_err().to_string();
        assert!(e.starts_with("no RDMA device: "), "{e}");
    }
}
