//! The mlx5 send-queue and completion-queue layouts, as rdma-core's `infiniband/mlx5dv.h`
//! defines them (plus the masked-atomic segments and the DUMP opcode NVSHMEM's IBGDA uses,
//! which mlx5dv.h does not carry).
//!
//! These `#[repr(C)]` types are the single source of truth for the layout: the producer side
//! ([`Mlx5`](super::layout::Mlx5)) encodes work requests with them, the software NIC decodes
//! with them, `tests/mlx5_layout.rs` checks every offset, size, opcode and flag bit against the
//! C header byte for byte, and a CUDA header is to be generated from them. Every multi-byte
//! field is big-endian on the wire: [`Be16`], [`Be32`] and [`Be64`] hold the wire bytes, and
//! their `get`/`new` convert.

use bytemuck::{Pod, Zeroable};

/// One send-queue slot ("WQE basic block"): 64 bytes.
pub const SEND_WQE_BB: usize = 64;
/// A WQE's size unit (the DS field counts these).
pub const WQE_DS_BYTES: usize = 16;
/// `byte_count` flag of an inline-data segment.
pub const INLINE_SEG: u32 = 0x8000_0000;
/// The bits of the producer index the doorbell record holds.
pub const DBR_PROD_MASK: u32 = 0xffff;

/// Bit positions inside the control segment's words and the CQE's `op_own`.
pub mod shift {
    /// `opmod_idx_opcode`: the opcode modifier in bits 31:24.
    pub const OPMOD: u32 = 24;
    /// `opmod_idx_opcode`: the WQE index in bits 23:8.
    pub const WQE_INDEX: u32 = 8;
    /// `qpn_ds`: the QP number in bits 31:8 (DS in 7:0).
    pub const QPN: u32 = 8;
    /// `op_own`: the CQE opcode in bits 7:4.
    pub const CQE_OPCODE: u32 = 4;
}

/// Where the producer puts each segment in a WQE (byte offsets from its first slot): the
/// control segment, then the remote-address segment, then the payload (a data segment, an
/// inline header and its bytes, or an atomic segment followed by the result's data segment).
pub mod wqe {
    use super::{CtrlSeg, InlineSeg, RaddrSeg};
    /// The control segment.
    pub const CTRL: usize = 0;
    /// The remote-address segment (and a DUMP's data segment).
    pub const RADDR: usize = CTRL + size_of::<CtrlSeg>();
    /// The payload: data segment, inline header or atomic segment.
    pub const PAYLOAD: usize = RADDR + size_of::<RaddrSeg>();
    /// An inline write's bytes, after the inline header.
    pub const INLINE_DATA: usize = PAYLOAD + size_of::<InlineSeg>();
}

/// Send opcodes (`opmod_idx_opcode` bits 7:0).
pub mod opcode {
    /// No operation (still completes, in order).
    pub const NOP: u8 = 0x00;
    /// RDMA write.
    pub const RDMA_WRITE: u8 = 0x08;
    /// RDMA write with immediate.
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    /// Send.
    pub const SEND: u8 = 0x0a;
    /// RDMA read.
    pub const RDMA_READ: u8 = 0x10;
    /// Standard 8-byte compare-and-swap.
    pub const ATOMIC_CS: u8 = 0x11;
    /// Standard 8-byte fetch-and-add.
    pub const ATOMIC_FA: u8 = 0x12;
    /// Extended (masked) compare-and-swap, 4 or 8 bytes.
    pub const ATOMIC_MASKED_CS: u8 = 0x14;
    /// Extended (masked) fetch-and-add, 4 or 8 bytes.
    pub const ATOMIC_MASKED_FA: u8 = 0x15;
    /// Local read of one byte (NVSHMEM's consistency flush; not in mlx5dv.h).
    pub const DUMP: u8 = 0x23;

    /// The opcode's name, for errors.
    pub fn name(op: u8) -> &'static str {
        match op {
            NOP => "NOP",
            RDMA_WRITE => "RDMA_WRITE",
            RDMA_WRITE_IMM => "RDMA_WRITE_IMM",
            SEND => "SEND",
            RDMA_READ => "RDMA_READ",
            ATOMIC_CS => "ATOMIC_CS",
            ATOMIC_FA => "ATOMIC_FA",
            ATOMIC_MASKED_CS => "ATOMIC_MASKED_CS",
            ATOMIC_MASKED_FA => "ATOMIC_MASKED_FA",
            DUMP => "DUMP",
            _ => "unknown opcode",
        }
    }
}

/// `opmod` of the extended atomics: the operand width.
pub mod opmod {
    /// 4-byte operands.
    pub const EXT_ATOMIC_4B: u8 = 0x08;
    /// 8-byte operands.
    pub const EXT_ATOMIC_8B: u8 = 0x09;
}

/// Bits of the control segment's `fm_ce_se` byte.
pub mod ctrl {
    /// CE = 2: always generate a CQE (`MLX5_WQE_CTRL_CQ_UPDATE`).
    pub const CQ_UPDATE: u8 = 2 << 2;
    /// Solicited event.
    pub const SOLICITED: u8 = 1 << 1;
    /// Fence mode 1: initiator small fence.
    pub const INITIATOR_SMALL_FENCE: u8 = 1 << 5;
    /// Fence mode 2: wait for earlier reads and atomics of the queue.
    pub const FENCE_MODE_FENCE: u8 = 2 << 5;
    /// Fence mode 3: strong ordering.
    pub const STRONG_ORDERING: u8 = 3 << 5;
    /// Fence mode 4: fence and small fence (`MLX5_WQE_CTRL_FENCE`).
    pub const FENCE: u8 = 4 << 5;
    /// The fence-mode field.
    pub const FENCE_MASK: u8 = 7 << 5;
    /// The CE field.
    pub const CE_MASK: u8 = 3 << 2;
}

/// CQE opcodes (`op_own` bits 7:4).
pub mod cqe_op {
    /// A send-queue completion.
    pub const REQ: u8 = 0;
    /// A send-queue completion with error.
    pub const REQ_ERR: u8 = 13;
    /// A receive-queue completion with error.
    pub const RESP_ERR: u8 = 14;
    /// Not yet written.
    pub const INVALID: u8 = 15;
}

/// The owner bit of `op_own`.
pub const CQE_OWNER_MASK: u8 = 1;

/// Error-CQE syndromes (`mlx5_err_cqe.syndrome`).
pub mod syndrome {
    /// A length is wrong (e.g. a WQE's DS does not fit its opcode).
    pub const LOCAL_LENGTH_ERR: u8 = 0x01;
    /// The WQE is malformed (unknown opcode, wrong QPN or index).
    pub const LOCAL_QP_OP_ERR: u8 = 0x02;
    /// A local key or address is not registered.
    pub const LOCAL_PROT_ERR: u8 = 0x04;
    /// Flushed: the queue was already in error.
    pub const WR_FLUSH_ERR: u8 = 0x05;
    /// Memory-window bind error.
    pub const MW_BIND_ERR: u8 = 0x06;
    /// Bad response.
    pub const BAD_RESP_ERR: u8 = 0x10;
    /// Local access error.
    pub const LOCAL_ACCESS_ERR: u8 = 0x11;
    /// The responder rejected the request.
    pub const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
    /// A remote key or address is not registered at the target.
    pub const REMOTE_ACCESS_ERR: u8 = 0x13;
    /// The target failed the operation.
    pub const REMOTE_OP_ERR: u8 = 0x14;
    /// Transport retries exhausted.
    pub const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
    /// RNR retries exhausted.
    pub const RNR_RETRY_EXC_ERR: u8 = 0x16;
    /// The remote aborted.
    pub const REMOTE_ABORTED_ERR: u8 = 0x22;

    /// The syndrome's name, for errors.
    pub fn name(s: u8) -> &'static str {
        match s {
            LOCAL_LENGTH_ERR => "LOCAL_LENGTH_ERR",
            LOCAL_QP_OP_ERR => "LOCAL_QP_OP_ERR",
            LOCAL_PROT_ERR => "LOCAL_PROT_ERR",
            WR_FLUSH_ERR => "WR_FLUSH_ERR",
            MW_BIND_ERR => "MW_BIND_ERR",
            BAD_RESP_ERR => "BAD_RESP_ERR",
            LOCAL_ACCESS_ERR => "LOCAL_ACCESS_ERR",
            REMOTE_INVAL_REQ_ERR => "REMOTE_INVAL_REQ_ERR",
            REMOTE_ACCESS_ERR => "REMOTE_ACCESS_ERR",
            REMOTE_OP_ERR => "REMOTE_OP_ERR",
            TRANSPORT_RETRY_EXC_ERR => "TRANSPORT_RETRY_EXC_ERR",
            RNR_RETRY_EXC_ERR => "RNR_RETRY_EXC_ERR",
            REMOTE_ABORTED_ERR => "REMOTE_ABORTED_ERR",
            _ => "unknown syndrome",
        }
    }
}

/// A big-endian 16-bit field (its wire bytes).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Be16(pub [u8; 2]);
/// A big-endian 32-bit field (its wire bytes).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Be32(pub u32);
/// A big-endian 64-bit field (its wire bytes).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Be64(pub u64);

impl Be16 {
    /// From a host value.
    pub const fn new(v: u16) -> Self {
        Be16(v.to_be_bytes())
    }
    /// The host value.
    pub const fn get(self) -> u16 {
        u16::from_be_bytes(self.0)
    }
}
impl Be32 {
    /// From a host value.
    pub const fn new(v: u32) -> Self {
        Be32(v.to_be())
    }
    /// The host value.
    pub const fn get(self) -> u32 {
        u32::from_be(self.0)
    }
}
impl Be64 {
    /// From a host value.
    pub const fn new(v: u64) -> Self {
        Be64(v.to_be())
    }
    /// The host value.
    pub const fn get(self) -> u64 {
        u64::from_be(self.0)
    }
}

/// `struct mlx5_wqe_ctrl_seg` (16 bytes, 4-byte aligned; always first in a WQE).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct CtrlSeg {
    /// \[31:24\] opmod, \[23:8\] WQE index (low 16 bits of the producer index), \[7:0\] opcode.
    pub opmod_idx_opcode: Be32,
    /// \[31:8\] QP number, \[7:0\] DS: the WQE's size in 16-byte units, this segment included.
    pub qpn_ds: Be32,
    /// Signature (0).
    pub signature: u8,
    /// DCI stream channel (0).
    pub dci_stream_channel_id: Be16,
    /// \[7:5\] fence mode, \[3:2\] CE, \[1\] solicited.
    pub fm_ce_se: u8,
    /// Immediate data.
    pub imm: Be32,
}

impl CtrlSeg {
    /// As `mlx5dv_set_ctrl_seg` fills it.
    pub fn new(idx: u16, opcode: u8, opmod: u8, qpn: u32, fm_ce_se: u8, ds: u8) -> Self {
        CtrlSeg {
            opmod_idx_opcode: Be32::new(
                (u32::from(opmod) << shift::OPMOD) | (u32::from(idx) << shift::WQE_INDEX) | u32::from(opcode),
            ),
            qpn_ds: Be32::new((qpn << shift::QPN) | u32::from(ds)),
            signature: 0,
            dci_stream_channel_id: Be16::new(0),
            fm_ce_se,
            imm: Be32::new(0),
        }
    }
    /// The opcode.
    pub fn opcode(&self) -> u8 {
        self.opmod_idx_opcode.get() as u8
    }
    /// The opcode modifier.
    pub fn opmod(&self) -> u8 {
        (self.opmod_idx_opcode.get() >> shift::OPMOD) as u8
    }
    /// The WQE index.
    pub fn wqe_index(&self) -> u16 {
        (self.opmod_idx_opcode.get() >> shift::WQE_INDEX) as u16
    }
    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn_ds.get() >> shift::QPN
    }
    /// The size in 16-byte units.
    pub fn ds(&self) -> u8 {
        self.qpn_ds.get() as u8
    }
}

/// `struct mlx5_wqe_raddr_seg`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct RaddrSeg {
    /// Remote virtual address.
    pub raddr: Be64,
    /// Remote key.
    pub rkey: Be32,
    /// Reserved.
    pub reserved: Be32,
}

/// `struct mlx5_wqe_data_seg` (a gather or scatter entry).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct DataSeg {
    /// Bytes.
    pub byte_count: Be32,
    /// Local key.
    pub lkey: Be32,
    /// Local address.
    pub addr: Be64,
}

/// `struct mlx5_wqe_inl_data_seg`: the header of inline data (`byte_count | INLINE_SEG`,
/// written big-endian), followed by the payload, padded to 16 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct InlineSeg {
    /// Payload bytes, with [`INLINE_SEG`] set.
    pub byte_count: Be32,
}

/// `struct mlx5_wqe_atomic_seg` (standard 8-byte CS and FA).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct AtomicSeg {
    /// Swap (CS) or add (FA) operand.
    pub swap_add: Be64,
    /// Compare operand (CS).
    pub compare: Be64,
}

/// Masked fetch-and-add, 4 bytes: the add is split into fields whose top bits are the set bits
/// of `field_boundary` (0: one 32-bit field; all ones: every bit its own field, i.e. XOR).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MaskedFa32Seg {
    /// Operand.
    pub add: Be32,
    /// Field boundaries.
    pub field_boundary: Be32,
    /// Reserved.
    pub reserved: Be64,
}

/// Masked fetch-and-add, 8 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MaskedFa64Seg {
    /// Operand.
    pub add: Be64,
    /// Field boundaries.
    pub field_boundary: Be64,
}

/// Masked compare-and-swap, 4 bytes: if `(old & compare_mask) == (compare & compare_mask)`,
/// the target becomes `(old & !swap_mask) | (swap & swap_mask)`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MaskedCs32Seg {
    /// Swap operand.
    pub swap: Be32,
    /// Compare operand.
    pub compare: Be32,
    /// Bits to swap.
    pub swap_mask: Be32,
    /// Bits to compare.
    pub compare_mask: Be32,
}

/// Masked compare-and-swap, 8 bytes: two segments, operands then masks.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MaskedCs64Seg {
    /// Swap operand.
    pub swap: Be64,
    /// Compare operand.
    pub compare: Be64,
    /// Bits to swap.
    pub swap_mask: Be64,
    /// Bits to compare.
    pub compare_mask: Be64,
}

/// `struct mlx5_cqe64`, as a send-queue completion uses it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct Cqe64 {
    /// The receive-side union (unused for send completions).
    pub rsvd0: [u8; 32],
    /// SRQ number / user index.
    pub srqn_uidx: Be32,
    /// Immediate / invalidated key / pkey.
    pub imm_inval_pkey: Be32,
    /// Application.
    pub app: u8,
    /// Application opcode.
    pub app_op: u8,
    /// Application info.
    pub app_info: Be16,
    /// Bytes transferred.
    pub byte_cnt: Be32,
    /// Timestamp.
    pub timestamp: Be64,
    /// \[31:24\] opcode of the WQE, \[23:0\] QP number.
    pub sop_drop_qpn: Be32,
    /// Index of the completed WQE's first WQEBB (low 16 bits).
    pub wqe_counter: Be16,
    /// Signature.
    pub signature: u8,
    /// \[7:4\] CQE opcode, \[0\] owner bit.
    pub op_own: u8,
}

/// `struct mlx5_err_cqe`: the same 64 bytes as [`Cqe64`] when the opcode is an error.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct ErrCqe {
    /// Reserved.
    pub rsvd0: [u8; 32],
    /// SRQ number.
    pub srqn: Be32,
    /// Reserved.
    pub rsvd1: [u8; 18],
    /// Vendor syndrome.
    pub vendor_err_synd: u8,
    /// Syndrome.
    pub syndrome: u8,
    /// \[31:24\] opcode of the failed WQE, \[23:0\] QP number.
    pub s_wqe_opcode_qpn: Be32,
    /// Index of the failed WQE.
    pub wqe_counter: Be16,
    /// Signature.
    pub signature: u8,
    /// \[7:4\] CQE opcode (13, REQ_ERR), \[0\] owner bit.
    pub op_own: u8,
}

const _: () = {
    assert!(size_of::<CtrlSeg>() == 16 && align_of::<CtrlSeg>() == 4);
    assert!(size_of::<RaddrSeg>() == 16);
    assert!(size_of::<DataSeg>() == 16);
    assert!(size_of::<InlineSeg>() == 4);
    assert!(size_of::<AtomicSeg>() == 16);
    assert!(size_of::<MaskedFa32Seg>() == 16);
    assert!(size_of::<MaskedFa64Seg>() == 16);
    assert!(size_of::<MaskedCs32Seg>() == 16);
    assert!(size_of::<MaskedCs64Seg>() == 32);
    assert!(size_of::<Cqe64>() == 64);
    assert!(size_of::<ErrCqe>() == 64);
};
