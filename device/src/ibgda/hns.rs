//! HiSilicon hns RoCE send and completion queues (HIP08, the "v2" hardware, and later), as
//! rdma-core's `providers/hns` writes and reads them: the second [`NicLayout`], beside
//! [`Mlx5`](super::layout::Mlx5).
//!
//! Sources (rdma-core, `providers/hns`):
//! - `hns_roce_u_hw_v2.h`: `struct hns_roce_rc_sq_wqe` and its `RCWQE_*` field locations,
//!   `struct hns_roce_v2_wqe_data_seg`, `struct hns_roce_wqe_atomic_seg`, the
//!   `HNS_ROCE_WQE_OP_*` opcodes, `struct hns_roce_db` with `DB_*` and `HNS_ROCE_V2_SQ_DB`,
//!   `struct hns_roce_v2_cqe` with `CQE_*`, and the `HNS_ROCE_V2_CQE_*` status codes. (Older
//!   releases spell the same fields as `RC_SQ_WQE_BYTE_4_OPCODE_S`/`_M` shift-and-mask macros;
//!   the current one as `FIELD_LOC(h, l)` bit ranges for `hr_reg_write`: bit `n` is bit
//!   `n % 32` of the structure's little-endian 32-bit word `n / 32`, and no field crosses a
//!   word. [`Field`] is that descriptor.)
//! - `hns_roce_u_hw_v2.c`: `set_rc_wqe`/`check_rc_opcode`/`set_rc_sge` (one data segment per
//!   SGE, `msg_len` the total), `set_atomic_seg` (the data segment, then the atomic segment;
//!   8 bytes the only standard length), `set_rc_inl` (up to 32 bytes inline right after the
//!   header), `enable_wqe` (the owner bit, `!(index & BIT(sq.shift))`),
//!   `hns_roce_update_sq_db` (the doorbell), the SQ record doorbell (`*qp->sdb = sq.head &
//!   0xffff`), `get_sw_cqe_v2` (a CQE is new when its owner bit differs from the lap's
//!   parity) and `get_wc_status`.
//! - `hns_roce_u.h`: `HNS_ROCE_SQWQE_SHIFT` (64-byte WQEs), `HNS_ROCE_SGE_SIZE`,
//!   `HNS_ROCE_SGE_IN_WQE`, `HNS_ROCE_MAX_RC_INL_INN_SZ`, `HNS_ROCE_V3_CQE_SIZE` (64-byte CQEs).
//! - The NOP opcode (0x13) is the Linux driver's (`drivers/infiniband/hw/hns/hns_roce_hw_v2.h`,
//!   `HNS_ROCE_V2_WQE_OP_NOP`); rdma-core's userspace provider does not post NOPs.
//!
//! Everything is little-endian, unlike mlx5. A send WQE is one 64-byte slot: the 32-byte RC
//! header, then two 16-byte data segments (or an atomic's data and atomic segments, or up to
//! 32 inline bytes); more SGEs or more inline data go to the queue's extended-SGE area, a
//! separate ring this project's queues do not have — so every hns WQE here is one slot. The WQE
//! carries no index and no QP number: the NIC knows a slot is new from its owner bit, which
//! flips each lap of the ring (hence the ring's size in [`NicLayout::encode`]).
//!
//! What hns cannot express (see [`Hns::supports`]): masked atomics (opcodes 8 and 9 exist, but
//! no driver posts them — the kernel's `set_rc_opcode` refuses them with `-EINVAL` — and no
//! segment layout for them is published), 4-byte atomics (hns's standard atomics are 8 bytes;
//! its 16- to 64-byte "extended" atomics live in the extended-SGE area), DUMP (mlx5's local
//! read) and inline payloads past 32 bytes. Encoded anyway, such a request becomes a WQE with
//! opcode `HNS_ROCE_WQE_OP_MASK` (what rdma-core's `to_hr_opcode` gives for an opcode hns does
//! not have), which the NIC fails with `LOCAL_QP_OP_ERR`.

use bytemuck::{Pod, Zeroable};

use super::layout::{
    Completion, DecodeError, Decoded, DecodedWqe, Failure, Layout, MAX_WQE_BYTES, NicAtomic, NicLayout, Remote, Sge,
    WorkRequest, WqeFlags, Wqebb, get, put,
};

/// Bytes of a send WQE, and of one slot (`1 << HNS_ROCE_SQWQE_SHIFT`).
pub const SQ_WQE_SIZE: usize = 64;
/// Bytes of a data segment (`HNS_ROCE_SGE_SIZE`).
pub const SGE_SIZE: usize = 16;
/// Data segments inside an RC WQE (`HNS_ROCE_SGE_IN_WQE`); more go to the extended-SGE area.
pub const SGE_IN_WQE: usize = 2;
/// Most inline bytes an RC WQE carries in itself (`HNS_ROCE_MAX_RC_INL_INN_SZ`): the 32 bytes
/// after the header. Longer payloads go to the extended-SGE area (`RCWQE_INLINE_TYPE` 1).
pub const MAX_RC_INL_INN_SZ: usize = 32;
/// Bytes of a completion entry (`HNS_ROCE_V3_CQE_SIZE`; v2 hardware also has 32-byte ones).
pub const CQE_SIZE: usize = 64;
/// Bytes of the RC header (`sizeof(struct hns_roce_rc_sq_wqe)`): where the data segments start.
pub const RC_HEADER_SIZE: usize = 32;

/// Send opcodes (`HNS_ROCE_WQE_OP_*`, `RCWQE_OPCODE`; the same values are the
/// `HNS_ROCE_SQ_OP_*` of a send CQE's `CQE_OPCODE`).
pub mod opcode {
    /// Send.
    pub const SEND: u8 = 0x0;
    /// Send with invalidate.
    pub const SEND_WITH_INV: u8 = 0x1;
    /// Send with immediate.
    pub const SEND_WITH_IMM: u8 = 0x2;
    /// RDMA write (inline when `RCWQE_INLINE` is set).
    pub const RDMA_WRITE: u8 = 0x3;
    /// RDMA write with immediate.
    pub const RDMA_WRITE_WITH_IMM: u8 = 0x4;
    /// RDMA read.
    pub const RDMA_READ: u8 = 0x5;
    /// Standard 8-byte compare-and-swap.
    pub const ATOMIC_COM_AND_SWAP: u8 = 0x6;
    /// Standard 8-byte fetch-and-add.
    pub const ATOMIC_FETCH_AND_ADD: u8 = 0x7;
    /// Masked compare-and-swap (defined; posted by no driver).
    pub const ATOMIC_MASK_COMP_AND_SWAP: u8 = 0x8;
    /// Masked fetch-and-add (defined; posted by no driver).
    pub const ATOMIC_MASK_FETCH_AND_ADD: u8 = 0x9;
    /// Fast register (physical MR).
    pub const FAST_REG_PMR: u8 = 0xa;
    /// Local invalidate.
    pub const LOCAL_INV: u8 = 0xb;
    /// Bind a memory window.
    pub const BIND_MW_TYPE: u8 = 0xc;
    /// No operation (the Linux driver's `HNS_ROCE_V2_WQE_OP_NOP`).
    pub const NOP: u8 = 0x13;
    /// The opcode field's mask, and rdma-core's "no such opcode" (`to_hr_opcode`'s answer for
    /// an opcode hns lacks): what a request hns cannot express is encoded with.
    pub const MASK: u8 = 0x1f;

    /// The opcode's name, for errors.
    pub fn name(op: u8) -> &'static str {
        match op {
            SEND => "SEND",
            SEND_WITH_INV => "SEND_WITH_INV",
            SEND_WITH_IMM => "SEND_WITH_IMM",
            RDMA_WRITE => "RDMA_WRITE",
            RDMA_WRITE_WITH_IMM => "RDMA_WRITE_WITH_IMM",
            RDMA_READ => "RDMA_READ",
            ATOMIC_COM_AND_SWAP => "ATOMIC_COM_AND_SWAP",
            ATOMIC_FETCH_AND_ADD => "ATOMIC_FETCH_AND_ADD",
            ATOMIC_MASK_COMP_AND_SWAP => "ATOMIC_MASK_COMP_AND_SWAP",
            ATOMIC_MASK_FETCH_AND_ADD => "ATOMIC_MASK_FETCH_AND_ADD",
            FAST_REG_PMR => "FAST_REG_PMR",
            LOCAL_INV => "LOCAL_INV",
            BIND_MW_TYPE => "BIND_MW_TYPE",
            NOP => "NOP",
            MASK => "MASK (no such opcode)",
            _ => "unknown opcode",
        }
    }
}

/// Completion status codes (`HNS_ROCE_V2_CQE_*`, `CQE_STATUS`): the syndromes of error CQEs.
/// (Numerically the same as mlx5's syndromes, which hns follows.)
pub mod status {
    /// Success.
    pub const SUCCESS: u8 = 0x00;
    /// A length is wrong.
    pub const LOCAL_LENGTH_ERR: u8 = 0x01;
    /// The WQE is malformed or asks for what the NIC does not do.
    pub const LOCAL_QP_OP_ERR: u8 = 0x02;
    /// A local key or address is not registered.
    pub const LOCAL_PROT_ERR: u8 = 0x04;
    /// Flushed: the queue was already in error.
    pub const WR_FLUSH_ERR: u8 = 0x05;
    /// Memory-window bind error (the header's spelling: `MEM_MANAGERENT_OP_ERR`).
    pub const MEM_MANAGERENT_OP_ERR: u8 = 0x06;
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
    /// General error.
    pub const GENERAL_ERR: u8 = 0x23;
    /// XRC violation.
    pub const XRC_VIOLATION_ERR: u8 = 0x24;

    /// The status's name, for errors.
    pub fn name(s: u8) -> &'static str {
        match s {
            SUCCESS => "SUCCESS",
            LOCAL_LENGTH_ERR => "LOCAL_LENGTH_ERR",
            LOCAL_QP_OP_ERR => "LOCAL_QP_OP_ERR",
            LOCAL_PROT_ERR => "LOCAL_PROT_ERR",
            WR_FLUSH_ERR => "WR_FLUSH_ERR",
            MEM_MANAGERENT_OP_ERR => "MEM_MANAGERENT_OP_ERR",
            BAD_RESP_ERR => "BAD_RESP_ERR",
            LOCAL_ACCESS_ERR => "LOCAL_ACCESS_ERR",
            REMOTE_INVAL_REQ_ERR => "REMOTE_INVAL_REQ_ERR",
            REMOTE_ACCESS_ERR => "REMOTE_ACCESS_ERR",
            REMOTE_OP_ERR => "REMOTE_OP_ERR",
            TRANSPORT_RETRY_EXC_ERR => "TRANSPORT_RETRY_EXC_ERR",
            RNR_RETRY_EXC_ERR => "RNR_RETRY_EXC_ERR",
            REMOTE_ABORTED_ERR => "REMOTE_ABORTED_ERR",
            GENERAL_ERR => "GENERAL_ERR",
            XRC_VIOLATION_ERR => "XRC_VIOLATION_ERR",
            _ => "unknown status",
        }
    }
}

/// Doorbell commands (`DB_CMD`: the anonymous enum `HNS_ROCE_V2_SQ_DB, ...`).
pub mod db_cmd {
    /// Send-queue doorbell.
    pub const SQ_DB: u32 = 0;
    /// Receive-queue doorbell.
    pub const RQ_DB: u32 = 1;
    /// Shared-receive-queue doorbell.
    pub const SRQ_DB: u32 = 2;
    /// CQ consumer-index update.
    pub const CQ_DB_PTR: u32 = 3;
    /// CQ arm (notify).
    pub const CQ_DB_NTR: u32 = 4;
}

/// A bit field of a little-endian structure, as rdma-core's `FIELD_LOC(type, h, l)` names it:
/// bits `l..=h` counted from the structure's start, bit `n` being bit `n % 32` of its 32-bit
/// word `n / 32` — so, the structure being little-endian, bit `n % 8` of byte `n / 8`. Like
/// rdma-core's (which checks it at build time), no field here crosses a 32-bit word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Highest bit.
    pub h: u32,
    /// Lowest bit.
    pub l: u32,
}

impl Field {
    /// Bits `l..=h` (panics, at compile time for constants, if they cross a 32-bit word).
    pub const fn new(h: u32, l: u32) -> Field {
        assert!(h >= l && h / 32 == l / 32, "a field within one 32-bit word");
        Field { h, l }
    }

    /// Width in bits.
    pub const fn bits(self) -> u32 {
        self.h - self.l + 1
    }

    /// The field's mask within its 32-bit word.
    pub const fn mask(self) -> u32 {
        (u32::MAX >> (32 - self.bits())) << (self.l % 32)
    }

    /// Byte offset of the field's 32-bit word.
    pub const fn word_offset(self) -> usize {
        (self.l / 32 * 4) as usize
    }

    /// The field's value in `buf` (a structure's bytes).
    pub fn get(self, buf: &[u8]) -> u32 {
        let at = self.word_offset();
        let w = u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
        (w & self.mask()) >> (self.l % 32)
    }

    /// Sets the field in `buf` to `v` (its low `bits()` bits), as `hr_reg_write` does.
    pub fn set(self, buf: &mut [u8], v: u32) {
        let at = self.word_offset();
        let w = u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
        let w = (w & !self.mask()) | ((v << (self.l % 32)) & self.mask());
        buf[at..at + 4].copy_from_slice(&w.to_le_bytes());
    }
}

// `struct hns_roce_rc_sq_wqe` (`RCWQE_FIELD_LOC`).
/// Opcode (`HNS_ROCE_WQE_OP_*`).
pub const RCWQE_OPCODE: Field = Field::new(4, 0);
/// Service level, low bits (direct WQE only).
pub const RCWQE_DB_SL_L: Field = Field::new(6, 5);
/// Owner bit: 1 on even laps of the ring (`enable_wqe`).
pub const RCWQE_OWNER: Field = Field::new(7, 7);
/// Generate a completion (`IBV_SEND_SIGNALED`).
pub const RCWQE_CQE: Field = Field::new(8, 8);
/// Fence (`IBV_SEND_FENCE`).
pub const RCWQE_FENCE: Field = Field::new(9, 9);
/// Strong order.
pub const RCWQE_SO: Field = Field::new(10, 10);
/// Solicited event.
pub const RCWQE_SE: Field = Field::new(11, 11);
/// Inline data (`IBV_SEND_INLINE`).
pub const RCWQE_INLINE: Field = Field::new(12, 12);
/// Service level, high bits (direct WQE only).
pub const RCWQE_DB_SL_H: Field = Field::new(14, 13);
/// The WQE's index (direct WQE only: written with the doorbell flag).
pub const RCWQE_WQE_IDX: Field = Field::new(30, 15);
/// Direct-WQE flag (the WQE is also the doorbell).
pub const RCWQE_FLAG: Field = Field::new(31, 31);
/// Message length: the bytes the SGEs (or the inline data) hold.
pub const RCWQE_MSG_LEN: Field = Field::new(63, 32);
/// Invalidate key or immediate data.
pub const RCWQE_INV_KEY_IMMTDATA: Field = Field::new(95, 64);
/// XRC target SRQ.
pub const RCWQE_XRC_SRQN: Field = Field::new(119, 96);
/// Valid SGEs (data segments).
pub const RCWQE_SGE_NUM: Field = Field::new(127, 120);
/// First extended SGE (past the two in the WQE).
pub const RCWQE_MSG_START_SGE_IDX: Field = Field::new(151, 128);
/// Reduce code.
pub const RCWQE_REDUCE_CODE: Field = Field::new(158, 152);
/// Inline type: 0 in the WQE, 1 in the extended-SGE area.
pub const RCWQE_INLINE_TYPE: Field = Field::new(159, 159);
/// Remote key.
pub const RCWQE_RKEY: Field = Field::new(191, 160);
/// Remote address, low half.
pub const RCWQE_VA_L: Field = Field::new(223, 192);
/// Remote address, high half.
pub const RCWQE_VA_H: Field = Field::new(255, 224);
/// Data segment 0: length.
pub const RCWQE_LEN0: Field = Field::new(287, 256);
/// Data segment 0: local key.
pub const RCWQE_LKEY0: Field = Field::new(319, 288);
/// Data segment 0: address, low half.
pub const RCWQE_VA0_L: Field = Field::new(351, 320);
/// Data segment 0: address, high half.
pub const RCWQE_VA0_H: Field = Field::new(383, 352);
/// Data segment 1: length.
pub const RCWQE_LEN1: Field = Field::new(415, 384);
/// Data segment 1: local key.
pub const RCWQE_LKEY1: Field = Field::new(447, 416);
/// Data segment 1: address, low half.
pub const RCWQE_VA1_L: Field = Field::new(479, 448);
/// Data segment 1: address, high half.
pub const RCWQE_VA1_H: Field = Field::new(511, 480);

// `struct hns_roce_v2_cqe` (`CQE_FIELD_LOC`).
/// Opcode of the completed WQE (`HNS_ROCE_SQ_OP_*` for a send CQE).
pub const CQE_OPCODE: Field = Field::new(4, 0);
/// Receive inline.
pub const CQE_RQ_INLINE: Field = Field::new(5, 5);
/// 0: a send-queue CQE (`CQE_FOR_SQ`); 1: a receive-queue one.
pub const CQE_S_R: Field = Field::new(6, 6);
/// Owner bit: differs from the lap's parity when the entry is new (`get_sw_cqe_v2`).
pub const CQE_OWNER: Field = Field::new(7, 7);
/// Status (`HNS_ROCE_V2_CQE_*`).
pub const CQE_STATUS: Field = Field::new(15, 8);
/// Index of the completed WQE.
pub const CQE_WQE_IDX: Field = Field::new(31, 16);
/// Remote key or immediate data.
pub const CQE_RKEY_IMMTDATA: Field = Field::new(63, 32);
/// XRC SRQ number.
pub const CQE_XRC_SRQN: Field = Field::new(87, 64);
/// CQE inline.
pub const CQE_CQE_INLINE: Field = Field::new(89, 88);
/// The local QP number.
pub const CQE_LCL_QPN: Field = Field::new(119, 96);
/// Sub-status (vendor error).
pub const CQE_SUB_STATUS: Field = Field::new(127, 120);
/// Bytes transferred.
pub const CQE_BYTE_CNT: Field = Field::new(159, 128);
/// The remote QP number.
pub const CQE_RMT_QPN: Field = Field::new(247, 224);

// `struct hns_roce_db` (`DB_FIELD_LOC`).
/// Tag: the QP (or CQ) number.
pub const DB_TAG: Field = Field::new(23, 0);
/// Command (`HNS_ROCE_V2_SQ_DB`, ...).
pub const DB_CMD: Field = Field::new(27, 24);
/// Flag.
pub const DB_FLAG: Field = Field::new(31, 31);
/// Producer index (low 16 bits of the SQ head).
pub const DB_PI: Field = Field::new(47, 32);
/// Service level.
pub const DB_SL: Field = Field::new(50, 48);

/// A little-endian 32-bit field (its wire bytes).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Le32(pub u32);

impl Le32 {
    /// From a host value.
    pub fn new(v: u32) -> Self {
        Le32(v.to_le())
    }
    /// The host value.
    pub fn get(self) -> u32 {
        u32::from_le(self.0)
    }
}

/// A little-endian 64-bit field (its wire bytes).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Le64(pub u64);

impl Le64 {
    /// From a host value.
    pub fn new(v: u64) -> Self {
        Le64(v.to_le())
    }
    /// The host value.
    pub fn get(self) -> u64 {
        u64::from_le(self.0)
    }
}

/// `struct hns_roce_rc_sq_wqe`: the RC send WQE's header (32 bytes; bit fields in
/// [`RCWQE_OPCODE`] and the other `RCWQE_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct RcSqWqe {
    /// Opcode, owner, CQE, fence, SO, SE, inline; the direct-WQE fields.
    pub byte_4: Le32,
    /// Message length.
    pub msg_len: Le32,
    /// `inv_key` / `immtdata` / `new_rkey` (a union).
    pub inv_key: Le32,
    /// XRC SRQ number, SGE count.
    pub byte_16: Le32,
    /// First extended SGE, reduce code, inline type.
    pub byte_20: Le32,
    /// Remote key.
    pub rkey: Le32,
    /// Remote address.
    pub va: Le64,
}

/// `struct hns_roce_v2_wqe_data_seg`: a local buffer (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct DataSeg {
    /// Bytes.
    pub len: Le32,
    /// Local key.
    pub lkey: Le32,
    /// Address.
    pub addr: Le64,
}

/// `struct hns_roce_wqe_atomic_seg`: a standard atomic's operands (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct AtomicSeg {
    /// The swap value (CAS) or the addend (FAA).
    pub fetchadd_swap_data: Le64,
    /// The compare value (CAS; 0 for FAA).
    pub cmp_data: Le64,
}

/// `struct hns_roce_v2_cqe` with its 32-byte payload: a 64-byte completion entry (bit fields
/// in [`CQE_OPCODE`] and the other `CQE_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Cqe {
    /// Opcode, RQ inline, S/R, owner, status, WQE index.
    pub byte_4: Le32,
    /// `rkey` / `immtdata` (a union).
    pub rkey: Le32,
    /// XRC SRQ number, CQE inline.
    pub byte_12: Le32,
    /// Local QP number, sub-status.
    pub byte_16: Le32,
    /// Bytes transferred.
    pub byte_cnt: Le32,
    /// Source MAC, low bytes.
    pub smac: Le32,
    /// Source MAC, high bytes; port type; VLAN.
    pub byte_28: Le32,
    /// Remote QP number, SL, port, GRH, loopback.
    pub byte_32: Le32,
    /// Inline receive payload.
    pub payload: [Le32; 8],
}

/// `struct hns_roce_db`: the 8 bytes written to the doorbell register (fields [`DB_TAG`],
/// [`DB_CMD`], [`DB_FLAG`], [`DB_PI`], [`DB_SL`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Db {
    /// Tag and command.
    pub byte_4: Le32,
    /// Producer index and service level.
    pub parameter: Le32,
}

/// Byte offset of the first data segment (and of inline data) in a WQE.
const DSEG0: usize = RC_HEADER_SIZE;
/// Byte offset of an atomic's atomic segment (after its data segment).
const ASEG: usize = RC_HEADER_SIZE + SGE_SIZE;

/// HiSilicon hns RoCE queues (v2 hardware and later), RC send queues as rdma-core's
/// `hns_roce_u_v2_post_send` writes them. See the module docs for the sources and for what it
/// cannot express.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hns;

impl Hns {
    /// The owner bit of the WQE at producer index `idx` of a ring of `nwqes` slots (a power of
    /// two): set on even laps, clear on odd ones (`enable_wqe`: `!(index & BIT(sq.shift))`).
    pub fn owner(idx: u64, nwqes: u64) -> bool {
        debug_assert!(nwqes.is_power_of_two(), "a ring of {nwqes} slots");
        idx & nwqes == 0
    }

    /// The opcode `wr` is sent with (`None`: hns cannot express it).
    pub fn opcode_of(wr: &WorkRequest<'_>) -> Option<u8> {
        if !Self::supports(wr) {
            return None;
        }
        Some(match wr {
            WorkRequest::Write { .. } | WorkRequest::WriteInline { .. } => opcode::RDMA_WRITE,
            WorkRequest::Read { .. } => opcode::RDMA_READ,
            WorkRequest::Atomic { op: NicAtomic::CompareSwap { .. }, .. } => opcode::ATOMIC_COM_AND_SWAP,
            WorkRequest::Atomic { op: NicAtomic::FetchAdd { .. }, .. } => opcode::ATOMIC_FETCH_AND_ADD,
            WorkRequest::Nop => opcode::NOP,
            WorkRequest::Dump { .. } => return None,
        })
    }
}

fn data_seg(s: &Sge) -> DataSeg {
    DataSeg { len: Le32::new(s.len), lkey: Le32::new(s.lkey), addr: Le64::new(s.addr) }
}

impl NicLayout for Hns {
    const NAME: &'static str = "hns";
    const LAYOUT: Layout = Layout::Hns;
    const MAX_INLINE: usize = MAX_RC_INL_INN_SZ;
    /// `byte_4` (owner, status, WQE index) is bytes 0-3.
    const CQE_VALID_WORD: usize = 0;

    fn supports(wr: &WorkRequest<'_>) -> bool {
        match wr {
            WorkRequest::Write { .. } | WorkRequest::Read { .. } | WorkRequest::Nop => true,
            WorkRequest::WriteInline { data, .. } => data.len() <= MAX_RC_INL_INN_SZ,
            // The standard atomics only: 8 bytes, a plain CAS or FAA, the prior value returned
            // into an 8-byte buffer (`set_atomic_seg`: `msg_len` 8 is the one standard length).
            WorkRequest::Atomic { op, width: 8, result, .. } => {
                result.len == 8 && (op.is_plain_compare_swap() || op.is_plain_fetch_add())
            }
            WorkRequest::Atomic { .. } | WorkRequest::Dump { .. } => false,
        }
    }

    fn wqebbs(_wr: &WorkRequest<'_>) -> usize {
        1
    }

    fn encode(wr: &WorkRequest<'_>, idx: u64, nwqes: u64, _qpn: u32, flags: WqeFlags, out: &mut [Wqebb]) {
        let w = &mut out[0];
        w.fill(0);
        // What hns cannot express gets rdma-core's "no such opcode" and nothing else: the NIC
        // fails it (LOCAL_QP_OP_ERR) instead of doing something else.
        let op = Self::opcode_of(wr).unwrap_or(opcode::MASK);
        if op != opcode::MASK {
            let sge = |w: &mut Wqebb, s: &Sge| {
                RCWQE_MSG_LEN.set(w, s.len);
                RCWQE_SGE_NUM.set(w, 1);
                put(w, DSEG0, &data_seg(s));
            };
            let remote = |w: &mut Wqebb, r: &Remote| {
                RCWQE_RKEY.set(w, r.rkey);
                RCWQE_VA_L.set(w, r.addr as u32);
                RCWQE_VA_H.set(w, (r.addr >> 32) as u32);
            };
            match wr {
                // One SGE, in the WQE (kept when empty, unlike rdma-core's `set_rc_sge`: the
                // NIC-neutral request names a buffer, whose key the NIC checks either way).
                WorkRequest::Write { local, remote: r } | WorkRequest::Read { local, remote: r } => {
                    sge(w, local);
                    remote(w, r);
                }
                WorkRequest::WriteInline { data, remote: r } => {
                    // `set_rc_inl`: the payload right after the header, inline type 0; the SGE
                    // count is the source buffers' (one, when not empty).
                    RCWQE_INLINE.set(w, 1);
                    RCWQE_MSG_LEN.set(w, data.len() as u32);
                    RCWQE_SGE_NUM.set(w, u32::from(!data.is_empty()));
                    w[DSEG0..DSEG0 + data.len()].copy_from_slice(data);
                    remote(w, r);
                }
                WorkRequest::Atomic { op: a, remote: r, result, .. } => {
                    // `set_atomic_seg`: the result's data segment, then the operands.
                    sge(w, result);
                    remote(w, r);
                    let seg = match *a {
                        NicAtomic::CompareSwap { swap, compare, .. } => {
                            AtomicSeg { fetchadd_swap_data: Le64::new(swap), cmp_data: Le64::new(compare) }
                        }
                        NicAtomic::FetchAdd { add, .. } => {
                            AtomicSeg { fetchadd_swap_data: Le64::new(add), cmp_data: Le64::new(0) }
                        }
                    };
                    put(w, ASEG, &seg);
                }
                WorkRequest::Nop | WorkRequest::Dump { .. } => {}
            }
        }
        RCWQE_OPCODE.set(w, u32::from(op));
        RCWQE_CQE.set(w, u32::from(flags.signal));
        RCWQE_FENCE.set(w, u32::from(flags.fence));
        RCWQE_OWNER.set(w, u32::from(Self::owner(idx, nwqes)));
    }

    #[inline]
    fn decode<'a>(
        first: &'a Wqebb,
        idx: u64,
        nwqes: u64,
        _qpn: u32,
        _next: &dyn Fn(usize) -> Wqebb,
        _gather: &'a mut [u8; MAX_WQE_BYTES],
    ) -> Result<DecodedWqe<'a>, DecodeError> {
        let op = RCWQE_OPCODE.get(first) as u8;
        let fail = |s: u8| Err(DecodeError { syndrome: s, opcode: op, wqebbs: 1 });
        // The WQE names neither its index nor its QP: a slot of the wrong lap (stale, or written
        // early) is what the owner bit shows.
        if RCWQE_OWNER.get(first) != u32::from(Self::owner(idx, nwqes)) {
            return fail(status::LOCAL_QP_OP_ERR);
        }
        // Not checked, as nothing here reads them: SE, the direct-WQE fields (service level,
        // index, flag: the doorbell register's business), the immediate, the XRC SRQ, the first
        // extended SGE (no extended SGE is used) and the reduce code.
        let flags = WqeFlags {
            signal: RCWQE_CQE.get(first) != 0,
            // Strong order orders at least as much as a fence.
            fence: RCWQE_FENCE.get(first) != 0 || RCWQE_SO.get(first) != 0,
        };
        let inline = RCWQE_INLINE.get(first) != 0;
        let msg_len = RCWQE_MSG_LEN.get(first);
        let remote = Remote {
            addr: u64::from(RCWQE_VA_H.get(first)) << 32 | u64::from(RCWQE_VA_L.get(first)),
            rkey: RCWQE_RKEY.get(first),
        };
        // The one SGE a NIC-neutral request has, in the WQE and covering the message. (More
        // SGEs, two in the WQE or extended ones, name several buffers, which no request does.)
        let sge = || -> Result<Sge, u8> {
            let d: DataSeg = get(first, DSEG0);
            if RCWQE_SGE_NUM.get(first) != 1 || d.len.get() != msg_len {
                return Err(status::LOCAL_LENGTH_ERR);
            }
            Ok(Sge { addr: d.addr.get(), len: d.len.get(), lkey: d.lkey.get() })
        };
        let decoded: Result<Decoded<'a>, u8> = (|| {
            if inline && op != opcode::RDMA_WRITE {
                // rdma-core's `set_rc_inl` refuses inline reads; nothing else carries data.
                return Err(status::LOCAL_QP_OP_ERR);
            }
            Ok(match op {
                opcode::NOP => Decoded::Nop,
                opcode::RDMA_WRITE if inline => {
                    if RCWQE_INLINE_TYPE.get(first) != 0 {
                        // Inline data in the extended-SGE area, which these queues do not have.
                        return Err(status::LOCAL_QP_OP_ERR);
                    }
                    let len = msg_len as usize;
                    if len > MAX_RC_INL_INN_SZ {
                        return Err(status::LOCAL_LENGTH_ERR);
                    }
                    Decoded::WriteInline { data: &first[DSEG0..DSEG0 + len], remote }
                }
                opcode::RDMA_WRITE => Decoded::Write { local: sge()?, remote },
                opcode::RDMA_READ => Decoded::Read { local: sge()?, remote },
                opcode::ATOMIC_COM_AND_SWAP | opcode::ATOMIC_FETCH_AND_ADD => {
                    // The standard length only (16 to 64 bytes are extended atomics, whose
                    // operands live in the extended-SGE area).
                    let result = sge()?;
                    if msg_len != 8 {
                        return Err(status::LOCAL_LENGTH_ERR);
                    }
                    let a: AtomicSeg = get(first, ASEG);
                    let nic = if op == opcode::ATOMIC_COM_AND_SWAP {
                        NicAtomic::CompareSwap {
                            swap: a.fetchadd_swap_data.get(),
                            compare: a.cmp_data.get(),
                            swap_mask: u64::MAX,
                            compare_mask: u64::MAX,
                        }
                    } else {
                        NicAtomic::FetchAdd { add: a.fetchadd_swap_data.get(), boundary: 0 }
                    };
                    Decoded::Atomic { op: nic, width: 8, remote, result }
                }
                // SEND and the memory-registration opcodes (no receive side, no MRs to manage
                // here), the masked atomics (no driver posts them, no layout is published),
                // MASK and the undefined ones.
                _ => return Err(status::LOCAL_QP_OP_ERR),
            })
        })();
        match decoded {
            Ok(d) => Ok(DecodedWqe { op: d, opcode: op, flags, wqebbs: 1 }),
            Err(s) => fail(s),
        }
    }

    fn syndrome(f: Failure) -> u8 {
        match f {
            Failure::LocalLength => status::LOCAL_LENGTH_ERR,
            Failure::LocalQpOp => status::LOCAL_QP_OP_ERR,
            Failure::LocalProt => status::LOCAL_PROT_ERR,
            Failure::RemoteAccess => status::REMOTE_ACCESS_ERR,
            Failure::RemoteOp => status::REMOTE_OP_ERR,
        }
    }

    fn dbr_value(prod: u64) -> u32 {
        // The SQ record doorbell: `*qp->sdb = qp->sq.head & 0xffff`, little-endian.
        (prod as u32 & 0xffff).to_le()
    }

    fn dbr_prod(dbr: u32) -> u16 {
        u32::from_le(dbr) as u16
    }

    fn doorbell(prod: u64, qpn: u32) -> u64 {
        // `hns_roce_update_sq_db`: tag = QPN, command = SQ doorbell, PI = the head (16 bits),
        // SL 0; written as one 64-bit store of the two little-endian words.
        let mut b = [0u8; 8];
        DB_TAG.set(&mut b, qpn);
        DB_CMD.set(&mut b, db_cmd::SQ_DB);
        DB_PI.set(&mut b, prod as u32);
        u64::from_ne_bytes(b)
    }

    fn doorbell_prod(value: u64) -> u16 {
        DB_PI.get(&value.to_ne_bytes()) as u16
    }

    fn encode_cqe(c: Completion, qpn: u32) -> [u8; 64] {
        let mut out = [0u8; 64];
        match c {
            // Nothing for this send queue: an entry marked as a receive-queue CQE (these queue
            // pairs have no receive queue), owner bit clear (not new on a first lap either).
            Completion::None => CQE_S_R.set(&mut out, 1),
            Completion::Ok { wqe_counter, owner } | Completion::Err { wqe_counter, owner, .. } => {
                CQE_LCL_QPN.set(&mut out, qpn);
                CQE_WQE_IDX.set(&mut out, u32::from(wqe_counter));
                // The hardware sets the bit on even laps: the inverse of the lap's parity.
                CQE_OWNER.set(&mut out, u32::from(owner & 1 == 0));
                if let Completion::Err { syndrome, opcode, .. } = c {
                    CQE_STATUS.set(&mut out, u32::from(syndrome));
                    CQE_OPCODE.set(&mut out, u32::from(opcode));
                }
                // A success names no opcode here (`Completion::Ok` carries none): 0.
            }
        }
        out
    }

    fn decode_cqe(cqe: &[u8; 64]) -> Completion {
        if CQE_S_R.get(cqe) != 0 {
            return Completion::None;
        }
        let wqe_counter = CQE_WQE_IDX.get(cqe) as u16;
        let owner = u8::from(CQE_OWNER.get(cqe) == 0);
        match CQE_STATUS.get(cqe) as u8 {
            status::SUCCESS => Completion::Ok { wqe_counter, owner },
            syndrome => Completion::Err { wqe_counter, owner, syndrome, opcode: CQE_OPCODE.get(cqe) as u8 },
        }
    }
}

// The structures' sizes, as the header's.
const _: () = assert!(size_of::<RcSqWqe>() == RC_HEADER_SIZE && size_of::<DataSeg>() == SGE_SIZE);
const _: () = assert!(size_of::<AtomicSeg>() == 16 && size_of::<Cqe>() == CQE_SIZE && size_of::<Db>() == 8);
const _: () = assert!(RC_HEADER_SIZE + SGE_IN_WQE * SGE_SIZE == SQ_WQE_SIZE);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ibgda::layout::Amo;

    /// Encodes `wr` at `idx` of a ring of `nwqes` and decodes it again (the slot is leaked: the
    /// result borrows it).
    fn roundtrip(wr: WorkRequest<'_>, idx: u64, nwqes: u64, flags: WqeFlags) -> DecodedWqe<'static> {
        assert!(Hns::supports(&wr), "{wr:?}");
        assert_eq!(Hns::wqebbs(&wr), 1);
        let slots: &'static mut [Wqebb] = vec![[0x5au8; 64]; 1].leak();
        Hns::encode(&wr, idx, nwqes, 0x42, flags, slots);
        let slots: &'static [Wqebb] = slots;
        let gather = Box::leak(Box::new([0u8; MAX_WQE_BYTES]));
        let d = Hns::decode(&slots[0], idx, nwqes, 0x42, &|_| unreachable!("one slot"), gather).expect("decodes");
        assert_eq!((d.wqebbs, d.flags), (1, flags));
        assert_eq!(Some(d.opcode), Hns::opcode_of(&wr));
        d
    }

    #[test]
    fn every_request_round_trips() {
        let r = Remote { addr: 0x7f00_dead_beef, rkey: 0xabcd };
        let l = Sge { addr: 0x1000, len: 8, lkey: 7 };
        let flags = [
            WqeFlags::default(),
            WqeFlags { signal: true, fence: false },
            WqeFlags { signal: false, fence: true },
            WqeFlags { signal: true, fence: true },
        ];
        for nwqes in [2u64, 8, 1 << 15] {
            // Both laps' owner bits, and the index wrapping the 16-bit counters.
            for idx in [0, 1, nwqes - 1, nwqes, nwqes + 1, 3 * nwqes - 1, 0xffff, 0x1_0000, u64::MAX >> 1] {
                for f in flags {
                    let d = roundtrip(WorkRequest::Write { local: l, remote: r }, idx, nwqes, f);
                    assert_eq!(d.op, Decoded::Write { local: l, remote: r });
                    let big = Sge { addr: u64::MAX - 7, len: u32::MAX, lkey: u32::MAX };
                    let d = roundtrip(WorkRequest::Read { local: big, remote: r }, idx, nwqes, f);
                    assert_eq!(d.op, Decoded::Read { local: big, remote: r });
                    let empty = Sge { addr: 0x2000, len: 0, lkey: 3 };
                    let d = roundtrip(WorkRequest::Write { local: empty, remote: r }, idx, nwqes, f);
                    assert_eq!(d.op, Decoded::Write { local: empty, remote: r }, "an empty SGE keeps its key");
                    assert_eq!(roundtrip(WorkRequest::Nop, idx, nwqes, f).op, Decoded::Nop);
                }
            }
        }
        for len in 0..=MAX_RC_INL_INN_SZ {
            let data: Vec<u8> = (0..len).map(|i| i as u8 ^ 0xa5).collect();
            let d = roundtrip(WorkRequest::WriteInline { data: &data, remote: r }, 5, 8, WqeFlags::default());
            let Decoded::WriteInline { data: got, remote } = d.op else { panic!("inline") };
            assert_eq!((got, remote), (&data[..], r));
        }
        let res = Sge { addr: 0x3000, len: 8, lkey: 9 };
        for amo in [
            Amo::Fetch,
            Amo::Add(5),
            Amo::Add(u64::MAX),
            Amo::CompareSwap { cond: 3, value: 9 },
            Amo::CompareSwap { cond: u64::MAX, value: 0x8000_0000_0000_0001 },
        ] {
            let op = amo.to_nic();
            let d = roundtrip(WorkRequest::Atomic { op, width: 8, remote: r, result: res }, 9, 8, WqeFlags::default());
            assert_eq!(d.op, Decoded::Atomic { op, width: 8, remote: r, result: res }, "{amo:?}");
        }
    }

    /// What hns lacks: supports() says so, and encoding it anyway gives a WQE the NIC fails.
    #[test]
    fn refused_requests_fail_at_the_nic() {
        let r = Remote { addr: 0x1000, rkey: 1 };
        let res = Sge { addr: 0x3000, len: 8, lkey: 9 };
        let mut refused = vec![
            WorkRequest::Dump { local: res },
            WorkRequest::WriteInline { data: &[7; MAX_RC_INL_INN_SZ + 1], remote: r },
            WorkRequest::Atomic { op: Amo::Add(1).to_nic(), width: 8, remote: r, result: Sge { len: 0, ..res } },
            WorkRequest::Atomic { op: Amo::Add(1).to_nic(), width: 8, remote: r, result: Sge { len: 16, ..res } },
        ];
        for amo in [Amo::Set(1), Amo::And(1), Amo::Or(1), Amo::Xor(1)] {
            refused.push(WorkRequest::Atomic { op: amo.to_nic(), width: 8, remote: r, result: res });
        }
        for amo in [Amo::Fetch, Amo::Add(1), Amo::CompareSwap { cond: 1, value: 2 }] {
            refused.push(WorkRequest::Atomic { op: amo.to_nic(), width: 4, remote: r, result: Sge { len: 4, ..res } });
        }
        for wr in refused {
            assert!(!Hns::supports(&wr), "{wr:?}");
            assert_eq!(Hns::opcode_of(&wr), None);
            let mut s = [[0u8; 64]; 1];
            Hns::encode(&wr, 3, 4, 1, WqeFlags { signal: false, fence: true }, &mut s);
            let e = Hns::decode(&s[0], 3, 4, 1, &|_| unreachable!(), &mut [0u8; MAX_WQE_BYTES]).unwrap_err();
            assert_eq!((e.syndrome, e.opcode, e.wqebbs), (status::LOCAL_QP_OP_ERR, opcode::MASK, 1), "{wr:?}");
        }
    }

    #[test]
    fn fields_read_back() {
        let mut b = [0u8; 64];
        for f in [RCWQE_OPCODE, RCWQE_WQE_IDX, RCWQE_MSG_LEN, RCWQE_SGE_NUM, RCWQE_VA1_H, CQE_STATUS, DB_PI] {
            let v = 0xdead_beef & (u32::MAX >> (32 - f.bits()));
            f.set(&mut b, 0xdead_beef);
            assert_eq!(f.get(&b), v, "{f:?}");
            f.set(&mut b, 0);
            assert_eq!(b, [0; 64], "{f:?} cleared");
        }
    }
}
