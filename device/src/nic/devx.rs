//! mlx5 DEVX command buffers: the `*_in` layouts the host hands to `mlx5dv_devx_obj_create`,
//! `mlx5dv_devx_obj_modify` and `mlx5dv_devx_general_cmd`, and parsers of the `*_out` buffers
//! that come back.
//!
//! # Layout convention
//!
//! The layouts are the mlx5 PRM's, as rdma-core's `providers/mlx5/mlx5_ifc.h` (and NVSHMEM's
//! and DPDK's copies of it) write them down: every structure is a list of `u8 name[BITS]`
//! arrays, so a field's bit offset is the sum of the widths before it. Bit 0 is the most
//! significant bit of big-endian dword 0; a field of up to 32 bits lies inside one dword, and
//! the dword is stored big-endian. 64-bit fields (`dbr_addr`, `*_umem_offset`) are two such
//! dwords, high first, i.e. one big-endian `u64`; byte arrays (`rgid_rip`) are copied as is.
//!
//! Every offset here is a [`Field`] constant whose comment names its source structure and
//! field; the unit tests re-derive each offset from a transcription of the C structures and
//! check the constants, the encoded buffers and the sizes against it.
//!
//! # Which call takes which buffer
//!
//! | command | rdma-core call | output |
//! |---|---|---|
//! | [`QueryHcaCap`] | `mlx5dv_devx_general_cmd` | [`HcaCaps::parse`] |
//! | [`CreateCq`] | `mlx5dv_devx_obj_create` | [`CreateCqOut::parse`] |
//! | [`CreateQp`] | `mlx5dv_devx_obj_create` | [`CreateQpOut::parse`] |
//! | [`Rst2InitQp`], [`Init2RtrQp`], [`Rtr2RtsQp`] | `mlx5dv_devx_obj_modify` | [`check_modify_qp_out`] |
//!
//! The kernel fills in the `uid` of every DEVX command itself (and, for a DEVX `CREATE_CQ` /
//! `CREATE_QP`, forces the `*_umem_valid` bits), so the builders leave `uid` zero. UARs and
//! user memory (umem) come from `mlx5dv_devx_alloc_uar` and `mlx5dv_devx_umem_reg`; no command
//! here builds them.
//!
//! # Errors
//!
//! A value that does not fit its field is refused with [`DevxError::Range`] naming the field —
//! never truncated. A failed command's output gives [`DevxError::Status`]:
//! `CREATE_QP failed: status 0x3 syndrome 0x1a2b3c4d (bad parameter)`.

/// An error building a DEVX command or reading its output.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DevxError {
    /// A value does not fit the PRM field it is written to.
    #[error("{command}: {field} = {value:#x} does not fit in its {width} bits")]
    Range {
        /// The command being built (`CREATE_QP`, …).
        command: &'static str,
        /// The PRM field, as `struct_member.field` (`qpc.log_sq_size`).
        field: &'static str,
        /// The value that was refused.
        value: u64,
        /// The field's width in bits.
        width: usize,
    },
    /// A field's shape does not suit the access (a bug in a layout constant, or a buffer
    /// shorter than the field).
    #[error(
        "{command}: field {field} (bit {bit:#x}, {width} bits) cannot be accessed in a buffer of {len} bytes as {access}"
    )]
    Layout {
        /// The command being built or parsed.
        command: &'static str,
        /// The PRM field.
        field: &'static str,
        /// Its bit offset.
        bit: usize,
        /// Its width in bits.
        width: usize,
        /// The buffer's length in bytes.
        len: usize,
        /// What was attempted (`a scalar`, `bytes`).
        access: &'static str,
    },
    /// The device refused the command: the output's `status` is not 0.
    #[error("{command} failed: status {status:#x} syndrome {syndrome:#x} ({})", status_name(*.status))]
    Status {
        /// The command.
        command: &'static str,
        /// The PRM command status (`MLX5_CMD_STAT_*`).
        status: u8,
        /// The firmware's syndrome, which identifies the exact check that failed.
        syndrome: u32,
    },
    /// An output buffer is shorter than the command's `*_out` layout.
    #[error("{command}: output is {got} bytes, shorter than the {need} bytes of its PRM layout")]
    ShortOutput {
        /// The command.
        command: &'static str,
        /// The bytes given.
        got: usize,
        /// The bytes the layout needs.
        need: usize,
    },
}

/// The name of a PRM command status (`MLX5_CMD_STAT_*` in rdma-core's `mlx5_ifc.h`; the words
/// are the Linux driver's `cmd_status_str`).
pub fn status_name(status: u8) -> &'static str {
    match status {
        0x00 => "OK",
        0x01 => "internal error",
        0x02 => "bad operation",
        0x03 => "bad parameter",
        0x04 => "bad system state",
        0x05 => "bad resource",
        0x06 => "resource busy",
        0x08 => "limits exceeded",
        0x09 => "bad resource state",
        0x0a => "bad index",
        0x0f => "no resources",
        0x10 => "bad QP state",
        0x30 => "bad packet (discarded)",
        0x40 => "bad size too many outstanding CQEs",
        0x50 => "bad input length",
        0x51 => "bad output length",
        _ => "unknown status",
    }
}

// ---------------------------------------------------------------------------------------------
// Fields and the bit writer / reader
// ---------------------------------------------------------------------------------------------

/// One field of a PRM structure: its name, bit offset and width.
///
/// Offsets of a context structure's fields (`qpc`, `cqc`, `cmd_hca_cap`) are relative to the
/// context; [`Field::at`] moves one to where the context sits in a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The PRM name, `member.field` for a field of an embedded structure (`qpc.log_sq_size`).
    pub name: &'static str,
    /// Bit offset from the start of the structure (bit 0 = MSB of big-endian dword 0).
    pub bit: usize,
    /// Width in bits.
    pub width: usize,
}

impl Field {
    /// A field named `name`, `width` bits at bit offset `bit`.
    pub const fn new(name: &'static str, bit: usize, width: usize) -> Field {
        Field { name, bit, width }
    }

    /// The same field in a structure embedded at bit `base`.
    pub const fn at(self, base: usize) -> Field {
        Field { name: self.name, bit: self.bit + base, width: self.width }
    }
}

/// The access a field is checked for.
#[derive(Clone, Copy)]
enum Access {
    /// Up to 32 bits inside one dword, or 64 dword-aligned bits.
    Scalar,
    /// Whole bytes at a byte offset.
    Bytes,
}

fn check_shape(command: &'static str, f: Field, len: usize, access: Access) -> Result<(), DevxError> {
    let shape_ok = match access {
        Access::Scalar => {
            ((1..=32).contains(&f.width) && f.bit / 32 == (f.bit + f.width - 1) / 32)
                || (f.width == 64 && f.bit.is_multiple_of(32))
        }
        Access::Bytes => f.width > 0 && f.bit.is_multiple_of(8) && f.width.is_multiple_of(8),
    };
    if shape_ok && f.bit + f.width <= len * 8 {
        return Ok(());
    }
    let access = match access {
        Access::Scalar => "a scalar",
        Access::Bytes => "bytes",
    };
    Err(DevxError::Layout { command, field: f.name, bit: f.bit, width: f.width, len, access })
}

fn dword(buf: &[u8], byte: usize) -> u32 {
    let mut d = [0u8; 4];
    d.copy_from_slice(&buf[byte..byte + 4]);
    u32::from_be_bytes(d)
}

/// Writes PRM fields into a command buffer, refusing values that do not fit.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    command: &'static str,
}

impl<'a> Writer<'a> {
    /// A writer over `buf`, naming `command` in its errors.
    pub fn new(buf: &'a mut [u8], command: &'static str) -> Writer<'a> {
        Writer { buf, command }
    }

    /// Sets a field of up to 32 bits (inside one dword) or a dword-aligned 64-bit field to
    /// `value`; a value wider than the field is [`DevxError::Range`].
    pub fn set(&mut self, f: Field, value: u64) -> Result<(), DevxError> {
        check_shape(self.command, f, self.buf.len(), Access::Scalar)?;
        if f.width < 64 && value >> f.width != 0 {
            return Err(DevxError::Range { command: self.command, field: f.name, value, width: f.width });
        }
        let byte = f.bit / 8;
        if f.width == 64 {
            self.buf[byte..byte + 8].copy_from_slice(&value.to_be_bytes());
            return Ok(());
        }
        let dw = f.bit / 32 * 4;
        let shift = 32 - f.bit % 32 - f.width;
        let mask = (((1u64 << f.width) - 1) as u32) << shift;
        let new = (dword(self.buf, dw) & !mask) | ((value as u32) << shift);
        self.buf[dw..dw + 4].copy_from_slice(&new.to_be_bytes());
        Ok(())
    }

    /// Sets a one-bit field.
    pub fn set_bool(&mut self, f: Field, value: bool) -> Result<(), DevxError> {
        self.set(f, u64::from(value))
    }

    /// Copies `bytes` into a byte-aligned field of exactly their size.
    pub fn set_bytes(&mut self, f: Field, bytes: &[u8]) -> Result<(), DevxError> {
        check_shape(self.command, f, self.buf.len(), Access::Bytes)?;
        if bytes.len() * 8 != f.width {
            return Err(DevxError::Layout {
                command: self.command,
                field: f.name,
                bit: f.bit,
                width: f.width,
                len: bytes.len(),
                access: "bytes of a different size",
            });
        }
        let byte = f.bit / 8;
        self.buf[byte..byte + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }
}

/// Reads a field of up to 32 bits (inside one dword) or a dword-aligned 64-bit field.
pub fn get(command: &'static str, buf: &[u8], f: Field) -> Result<u64, DevxError> {
    check_shape(command, f, buf.len(), Access::Scalar)?;
    let byte = f.bit / 8;
    if f.width == 64 {
        let mut q = [0u8; 8];
        q.copy_from_slice(&buf[byte..byte + 8]);
        return Ok(u64::from_be_bytes(q));
    }
    let shift = 32 - f.bit % 32 - f.width;
    let mask = (1u64 << f.width) - 1;
    Ok(u64::from(dword(buf, f.bit / 32 * 4) >> shift) & mask)
}

/// Reads a byte-aligned field as bytes.
pub fn get_bytes<'b>(command: &'static str, buf: &'b [u8], f: Field) -> Result<&'b [u8], DevxError> {
    check_shape(command, f, buf.len(), Access::Bytes)?;
    let byte = f.bit / 8;
    Ok(&buf[byte..byte + f.width / 8])
}

// ---------------------------------------------------------------------------------------------
// Layout constants
// ---------------------------------------------------------------------------------------------

/// Command opcodes (`MLX5_CMD_OP_*`, rdma-core `providers/mlx5/mlx5_ifc.h`).
pub mod opcode {
    /// `QUERY_HCA_CAP`.
    pub const QUERY_HCA_CAP: u16 = 0x100;
    /// `CREATE_CQ`.
    pub const CREATE_CQ: u16 = 0x400;
    /// `CREATE_QP`.
    pub const CREATE_QP: u16 = 0x500;
    /// `RST2INIT_QP`.
    pub const RST2INIT_QP: u16 = 0x502;
    /// `INIT2RTR_QP`.
    pub const INIT2RTR_QP: u16 = 0x503;
    /// `RTR2RTS_QP`.
    pub const RTR2RTS_QP: u16 = 0x504;
}

/// `opcode` of every `*_in` command (`mlx5_ifc_*_in_bits.opcode`).
pub const CMD_OPCODE: Field = Field::new("opcode", 0x00, 0x10);
/// `op_mod` of every `*_in` command (`mlx5_ifc_*_in_bits.op_mod`).
pub const CMD_OP_MOD: Field = Field::new("op_mod", 0x30, 0x10);
/// `status` of every `*_out` command (`mlx5_ifc_*_out_bits.status`).
pub const OUT_STATUS: Field = Field::new("status", 0x00, 0x08);
/// `syndrome` of every `*_out` command (`mlx5_ifc_*_out_bits.syndrome`).
pub const OUT_SYNDROME: Field = Field::new("syndrome", 0x20, 0x20);

/// Size of `mlx5_ifc_query_hca_cap_in_bits` (0x80 bits).
pub const QUERY_HCA_CAP_IN_BYTES: usize = 0x10;
/// Size of `mlx5_ifc_query_hca_cap_out_bits` (0x80 + the 0x8000-bit capability union).
pub const QUERY_HCA_CAP_OUT_BYTES: usize = 0x1010;
/// Size of `mlx5_ifc_cmd_hca_cap_bits` (0x800 bits).
pub const CMD_HCA_CAP_BYTES: usize = 0x100;
/// Bit offset of `capability` in `mlx5_ifc_query_hca_cap_out_bits`.
pub const QUERY_HCA_CAP_OUT_CAPABILITY: usize = 0x80;

/// `op_mod` of `QUERY_HCA_CAP`: the capability type, shifted left by one (`MLX5_CAP_GENERAL` =
/// 0 is the general device capabilities, `mlx5_ifc_cmd_hca_cap_bits`).
pub const HCA_CAP_TYPE_GENERAL: u16 = 0;
/// `op_mod` bit 0 of `QUERY_HCA_CAP`: the current values (`HCA_CAP_OPMOD_GET_CUR`); 0 asks for
/// the maximum ones (`HCA_CAP_OPMOD_GET_MAX`).
pub const HCA_CAP_OPMOD_GET_CUR: u16 = 1;

/// `cmd_hca_cap.port_type` of an InfiniBand port (`MLX5_CAP_PORT_TYPE_IB`).
pub const PORT_TYPE_IB: u8 = 0;
/// `cmd_hca_cap.port_type` of an Ethernet (RoCE) port (`MLX5_CAP_PORT_TYPE_ETH`).
pub const PORT_TYPE_ETH: u8 = 1;

// `mlx5_ifc_cmd_hca_cap_bits` (rdma-core providers/mlx5/mlx5_ifc.h), relative to the structure.
/// `cmd_hca_cap.log_max_qp_sz`: log2 of the largest QP (WQEs in one work queue).
pub const CAP_LOG_MAX_QP_SZ: Field = Field::new("cmd_hca_cap.log_max_qp_sz", 0x88, 0x08);
/// `cmd_hca_cap.log_max_qp`: log2 of the number of QPs.
pub const CAP_LOG_MAX_QP: Field = Field::new("cmd_hca_cap.log_max_qp", 0x9b, 0x05);
/// `cmd_hca_cap.log_max_cq_sz`: log2 of the largest CQ (CQEs).
pub const CAP_LOG_MAX_CQ_SZ: Field = Field::new("cmd_hca_cap.log_max_cq_sz", 0xc8, 0x08);
/// `cmd_hca_cap.log_max_cq`: log2 of the number of CQs.
pub const CAP_LOG_MAX_CQ: Field = Field::new("cmd_hca_cap.log_max_cq", 0xdb, 0x05);
/// `cmd_hca_cap.log_max_ra_req_qp`: log2 of the outstanding RDMA reads / atomics a QP may
/// initiate (the bound on `qpc.log_sra_max`).
pub const CAP_LOG_MAX_RA_REQ_QP: Field = Field::new("cmd_hca_cap.log_max_ra_req_qp", 0x14a, 0x06);
/// `cmd_hca_cap.log_max_ra_res_qp`: log2 of the RDMA reads / atomics a QP may have in flight
/// as responder (the bound on `qpc.log_rra_max`).
pub const CAP_LOG_MAX_RA_RES_QP: Field = Field::new("cmd_hca_cap.log_max_ra_res_qp", 0x15a, 0x06);
/// `cmd_hca_cap.port_type`: [`PORT_TYPE_IB`] or [`PORT_TYPE_ETH`].
pub const CAP_PORT_TYPE: Field = Field::new("cmd_hca_cap.port_type", 0x1b6, 0x02);
/// `cmd_hca_cap.log_max_msg`: log2 of the largest message (bound on `qpc.log_msg_max`).
pub const CAP_LOG_MAX_MSG: Field = Field::new("cmd_hca_cap.log_max_msg", 0x1c3, 0x05);
/// `cmd_hca_cap.roce`: RoCE is supported.
pub const CAP_ROCE: Field = Field::new("cmd_hca_cap.roce", 0x21d, 0x01);
/// `cmd_hca_cap.atomic`: atomic operations are supported.
pub const CAP_ATOMIC: Field = Field::new("cmd_hca_cap.atomic", 0x21e, 0x01);
/// `cmd_hca_cap.umem_uid_0`: user memory may be registered with uid 0.
pub const CAP_UMEM_UID_0: Field = Field::new("cmd_hca_cap.umem_uid_0", 0x252, 0x01);

/// Size of `mlx5_ifc_cqc_bits` (0x200 bits).
pub const CQC_BYTES: usize = 0x40;
/// Size of `mlx5_ifc_create_cq_in_bits` without its trailing `pas[]` (0x880 bits).
pub const CREATE_CQ_IN_BYTES: usize = 0x110;
/// Size of `mlx5_ifc_create_cq_out_bits` (0x80 bits).
pub const CREATE_CQ_OUT_BYTES: usize = 0x10;
/// Bit offset of `cq_context` in `mlx5_ifc_create_cq_in_bits`.
pub const CREATE_CQ_IN_CQ_CONTEXT: usize = 0x80;

/// `cq_context.cqe_sz` of 64-byte CQEs (`MLX5_CQE_SIZE_64B`).
pub const CQE_SZ_64: u8 = 0;
/// `cq_context.cqe_sz` of 128-byte CQEs (`MLX5_CQE_SIZE_128B`).
pub const CQE_SZ_128: u8 = 1;

// `mlx5_ifc_cqc_bits` (DPDK drivers/common/mlx5/mlx5_prm.h), relative to the structure.
/// `cqc.dbr_umem_valid`: `dbr_addr` is an offset in the umem `dbr_umem_id`.
pub const CQC_DBR_UMEM_VALID: Field = Field::new("cq_context.dbr_umem_valid", 0x06, 0x01);
/// `cqc.cqe_sz`: [`CQE_SZ_64`] or [`CQE_SZ_128`].
pub const CQC_CQE_SZ: Field = Field::new("cq_context.cqe_sz", 0x08, 0x03);
/// `cqc.cc`: collapsed CQ (every CQE is written to entry 0).
pub const CQC_CC: Field = Field::new("cq_context.cc", 0x0b, 0x01);
/// `cqc.oi`: overrun ignore (no CQ error when the consumer falls behind).
pub const CQC_OI: Field = Field::new("cq_context.oi", 0x0e, 0x01);
/// `cqc.dbr_umem_id`: the umem holding the doorbell record.
pub const CQC_DBR_UMEM_ID: Field = Field::new("cq_context.dbr_umem_id", 0x20, 0x20);
/// `cqc.log_cq_size`: log2 of the number of CQEs.
pub const CQC_LOG_CQ_SIZE: Field = Field::new("cq_context.log_cq_size", 0x63, 0x05);
/// `cqc.uar_page`: the UAR page whose doorbells arm this CQ.
pub const CQC_UAR_PAGE: Field = Field::new("cq_context.uar_page", 0x68, 0x18);
/// `cqc.c_eqn`: the event queue the CQ reports to.
pub const CQC_C_EQN: Field = Field::new("cq_context.c_eqn", 0xb8, 0x08);
/// `cqc.log_page_size`: log2 of the CQ buffer's page size in 4 KiB units.
pub const CQC_LOG_PAGE_SIZE: Field = Field::new("cq_context.log_page_size", 0xc3, 0x05);
/// `cqc.dbr_addr`: the doorbell record's address (its offset in the umem when
/// `dbr_umem_valid`).
pub const CQC_DBR_ADDR: Field = Field::new("cq_context.dbr_addr", 0x1c0, 0x40);

// `mlx5_ifc_create_cq_in_bits` / `_out_bits` (DPDK drivers/common/mlx5/mlx5_prm.h).
/// `create_cq_in.cq_umem_offset`: where the CQ buffer starts in its umem.
pub const CREATE_CQ_IN_CQ_UMEM_OFFSET: Field = Field::new("cq_umem_offset", 0x280, 0x40);
/// `create_cq_in.cq_umem_id`: the umem holding the CQ buffer.
pub const CREATE_CQ_IN_CQ_UMEM_ID: Field = Field::new("cq_umem_id", 0x2c0, 0x20);
/// `create_cq_in.cq_umem_valid`: the CQ buffer is the umem `cq_umem_id` (no `pas`).
pub const CREATE_CQ_IN_CQ_UMEM_VALID: Field = Field::new("cq_umem_valid", 0x2e0, 0x01);
/// `create_cq_out.cqn`: the new CQ's number.
pub const CREATE_CQ_OUT_CQN: Field = Field::new("cqn", 0x48, 0x18);

/// Size of `mlx5_ifc_qpc_bits` (0x740 bits).
pub const QPC_BYTES: usize = 0xe8;
/// Size of `mlx5_ifc_ads_bits` (0x160 bits).
pub const ADS_BYTES: usize = 0x2c;
/// Size of `mlx5_ifc_create_qp_in_bits` without its trailing `pas[]` (0x880 bits).
pub const CREATE_QP_IN_BYTES: usize = 0x110;
/// Size of `mlx5_ifc_create_qp_out_bits` (0x80 bits).
pub const CREATE_QP_OUT_BYTES: usize = 0x10;
/// Size of `mlx5_ifc_rst2init_qp_in_bits`, `_init2rtr_` and `_rtr2rts_` (0x880 bits each).
pub const MODIFY_QP_IN_BYTES: usize = 0x110;
/// Size of `mlx5_ifc_rst2init_qp_out_bits`, `_init2rtr_` and `_rtr2rts_` (0x80 bits each).
pub const MODIFY_QP_OUT_BYTES: usize = 0x10;
/// Bit offset of `qpc` in `mlx5_ifc_create_qp_in_bits`.
pub const CREATE_QP_IN_QPC: usize = 0xc0;
/// Bit offset of `qpc` in `mlx5_ifc_{rst2init,init2rtr,rtr2rts}_qp_in_bits`.
pub const MODIFY_QP_IN_QPC: usize = 0xc0;
/// Bit offset of `primary_address_path` (an `mlx5_ifc_ads_bits`) in `mlx5_ifc_qpc_bits`.
pub const QPC_PRIMARY_ADDRESS_PATH: usize = 0xc0;

/// `qpc.st` of a reliable-connected QP (`MLX5_QPC_ST_RC`).
pub const QPC_ST_RC: u8 = 0x0;
/// `qpc.pm_state` "migrated": no alternate path (`MLX5_QPC_PM_STATE_MIGRATED`).
pub const QPC_PM_STATE_MIGRATED: u8 = 0x3;
/// `qpc.rq_type` of a regular receive queue.
pub const QPC_RQ_TYPE_REGULAR: u8 = 0x0;
/// `qpc.rq_type` of a QP whose receives come from `srqn_rmpn_xrqn`.
pub const QPC_RQ_TYPE_SRQ: u8 = 0x1;
/// `qpc.rq_type` of a QP without a receive queue (send-only).
pub const QPC_RQ_TYPE_ZERO_SIZE_RQ: u8 = 0x3;
/// `qpc.ts_format`: free-running timestamps (`MLX5_QPC_TIMESTAMP_FORMAT_FREE_RUNNING`).
pub const QPC_TS_FORMAT_FREE_RUNNING: u8 = 0x0;
/// `qpc.ts_format`: the device's default (`MLX5_QPC_TIMESTAMP_FORMAT_DEFAULT`).
pub const QPC_TS_FORMAT_DEFAULT: u8 = 0x1;
/// `qpc.ts_format`: real-time timestamps (`MLX5_QPC_TIMESTAMP_FORMAT_REAL_TIME`).
pub const QPC_TS_FORMAT_REAL_TIME: u8 = 0x2;
/// `qpc.mtu` of 256 bytes (`MLX5_QPC_MTU_256_BYTES`; 512 B … 4 KiB are 2 … 5).
pub const QPC_MTU_256: u8 = 0x1;
/// `qpc.mtu` of 1 KiB.
pub const QPC_MTU_1K: u8 = 0x3;
/// `qpc.mtu` of 4 KiB (`MLX5_QPC_MTU_4K_BYTES`).
pub const QPC_MTU_4K: u8 = 0x5;
/// `qpc.atomic_mode`: InfiniBand-spec 8-byte atomics (`MLX5_QPC_ATOMIC_MODE_IB_SPEC`).
pub const QPC_ATOMIC_MODE_IB_SPEC: u8 = 0x1;
/// `qpc.atomic_mode`: atomics of up to 8 bytes, including the masked ones
/// (`MLX5_QPC_ATOMIC_MODE_UP_TO_8B`).
pub const QPC_ATOMIC_MODE_UP_TO_8B: u8 = 0x3;

// `mlx5_ifc_qpc_bits` (rdma-core providers/mlx5/mlx5_ifc.h), relative to the structure.
/// `qpc.st`: service type ([`QPC_ST_RC`]).
pub const QPC_ST: Field = Field::new("qpc.st", 0x08, 0x08);
/// `qpc.pm_state`: path-migration state ([`QPC_PM_STATE_MIGRATED`]).
pub const QPC_PM_STATE: Field = Field::new("qpc.pm_state", 0x13, 0x02);
/// `qpc.pd`: protection domain.
pub const QPC_PD: Field = Field::new("qpc.pd", 0x28, 0x18);
/// `qpc.mtu`: path MTU ([`QPC_MTU_4K`], …).
pub const QPC_MTU: Field = Field::new("qpc.mtu", 0x40, 0x03);
/// `qpc.log_msg_max`: log2 of the largest message.
pub const QPC_LOG_MSG_MAX: Field = Field::new("qpc.log_msg_max", 0x43, 0x05);
/// `qpc.log_rq_size`: log2 of the receive queue's WQEs.
pub const QPC_LOG_RQ_SIZE: Field = Field::new("qpc.log_rq_size", 0x49, 0x04);
/// `qpc.log_rq_stride`: log2 of the receive WQE size in 16-byte units.
pub const QPC_LOG_RQ_STRIDE: Field = Field::new("qpc.log_rq_stride", 0x4d, 0x03);
/// `qpc.no_sq`: the QP has no send queue.
pub const QPC_NO_SQ: Field = Field::new("qpc.no_sq", 0x50, 0x01);
/// `qpc.log_sq_size`: log2 of the send queue's 64-byte WQE basic blocks.
pub const QPC_LOG_SQ_SIZE: Field = Field::new("qpc.log_sq_size", 0x51, 0x04);
/// `qpc.ts_format`: CQE timestamp format ([`QPC_TS_FORMAT_DEFAULT`], …).
pub const QPC_TS_FORMAT: Field = Field::new("qpc.ts_format", 0x58, 0x02);
/// `qpc.uar_page`: the UAR page whose doorbell the QP's sender rings.
pub const QPC_UAR_PAGE: Field = Field::new("qpc.uar_page", 0x68, 0x18);
/// `qpc.log_page_size`: log2 of the work queue buffer's page size in 4 KiB units.
pub const QPC_LOG_PAGE_SIZE: Field = Field::new("qpc.log_page_size", 0xa3, 0x05);
/// `qpc.remote_qpn`: the peer QP's number.
pub const QPC_REMOTE_QPN: Field = Field::new("qpc.remote_qpn", 0xa8, 0x18);
/// `qpc.primary_address_path.pkey_index` (`ads` bit 0x10).
pub const QPC_PAP_PKEY_INDEX: Field =
    Field::new("qpc.primary_address_path.pkey_index", QPC_PRIMARY_ADDRESS_PATH + 0x10, 0x10);
/// `qpc.primary_address_path.grh`: a global route header is sent (always for RoCE).
pub const QPC_PAP_GRH: Field = Field::new("qpc.primary_address_path.grh", QPC_PRIMARY_ADDRESS_PATH + 0x28, 0x01);
/// `qpc.primary_address_path.rlid`: the peer's InfiniBand LID.
pub const QPC_PAP_RLID: Field = Field::new("qpc.primary_address_path.rlid", QPC_PRIMARY_ADDRESS_PATH + 0x30, 0x10);
/// `qpc.primary_address_path.ack_timeout`: local ACK timeout, 4.096 µs × 2^value.
pub const QPC_PAP_ACK_TIMEOUT: Field =
    Field::new("qpc.primary_address_path.ack_timeout", QPC_PRIMARY_ADDRESS_PATH + 0x40, 0x05);
/// `qpc.primary_address_path.src_addr_index`: the local GID table index.
pub const QPC_PAP_SRC_ADDR_INDEX: Field =
    Field::new("qpc.primary_address_path.src_addr_index", QPC_PRIMARY_ADDRESS_PATH + 0x48, 0x08);
/// `qpc.primary_address_path.hop_limit`: GRH hop limit (IPv6 hop limit / IPv4 TTL).
pub const QPC_PAP_HOP_LIMIT: Field =
    Field::new("qpc.primary_address_path.hop_limit", QPC_PRIMARY_ADDRESS_PATH + 0x58, 0x08);
/// `qpc.primary_address_path.tclass`: GRH traffic class.
pub const QPC_PAP_TCLASS: Field = Field::new("qpc.primary_address_path.tclass", QPC_PRIMARY_ADDRESS_PATH + 0x64, 0x08);
/// `qpc.primary_address_path.rgid_rip`: the peer's GID (RoCE: its IP address), 16 bytes.
pub const QPC_PAP_RGID_RIP: Field =
    Field::new("qpc.primary_address_path.rgid_rip", QPC_PRIMARY_ADDRESS_PATH + 0x80, 0x80);
/// `qpc.primary_address_path.udp_sport`: RoCE v2 UDP source port.
pub const QPC_PAP_UDP_SPORT: Field =
    Field::new("qpc.primary_address_path.udp_sport", QPC_PRIMARY_ADDRESS_PATH + 0x110, 0x10);
/// `qpc.primary_address_path.eth_prio`: RoCE 802.1p priority.
pub const QPC_PAP_ETH_PRIO: Field =
    Field::new("qpc.primary_address_path.eth_prio", QPC_PRIMARY_ADDRESS_PATH + 0x121, 0x03);
/// `qpc.primary_address_path.sl`: InfiniBand service level.
pub const QPC_PAP_SL: Field = Field::new("qpc.primary_address_path.sl", QPC_PRIMARY_ADDRESS_PATH + 0x124, 0x04);
/// `qpc.primary_address_path.vhca_port_num`: the local port (1-based).
pub const QPC_PAP_VHCA_PORT_NUM: Field =
    Field::new("qpc.primary_address_path.vhca_port_num", QPC_PRIMARY_ADDRESS_PATH + 0x128, 0x08);
/// `qpc.primary_address_path.rmac_47_32`: the peer's MAC, bytes 0–1.
pub const QPC_PAP_RMAC_47_32: Field =
    Field::new("qpc.primary_address_path.rmac_47_32", QPC_PRIMARY_ADDRESS_PATH + 0x130, 0x10);
/// `qpc.primary_address_path.rmac_31_0`: the peer's MAC, bytes 2–5.
pub const QPC_PAP_RMAC_31_0: Field =
    Field::new("qpc.primary_address_path.rmac_31_0", QPC_PRIMARY_ADDRESS_PATH + 0x140, 0x20);
/// `qpc.log_sra_max`: log2 of the RDMA reads / atomics this QP may have outstanding.
pub const QPC_LOG_SRA_MAX: Field = Field::new("qpc.log_sra_max", 0x388, 0x03);
/// `qpc.retry_count`: transport retries before an error (7 at most).
pub const QPC_RETRY_COUNT: Field = Field::new("qpc.retry_count", 0x38d, 0x03);
/// `qpc.rnr_retry`: receiver-not-ready retries (7 = forever).
pub const QPC_RNR_RETRY: Field = Field::new("qpc.rnr_retry", 0x390, 0x03);
/// `qpc.next_send_psn`: the first send packet sequence number.
pub const QPC_NEXT_SEND_PSN: Field = Field::new("qpc.next_send_psn", 0x3c8, 0x18);
/// `qpc.cqn_snd`: the CQ of send completions.
pub const QPC_CQN_SND: Field = Field::new("qpc.cqn_snd", 0x3e8, 0x18);
/// `qpc.log_rra_max`: log2 of the RDMA reads / atomics this QP serves at once as responder.
pub const QPC_LOG_RRA_MAX: Field = Field::new("qpc.log_rra_max", 0x488, 0x03);
/// `qpc.atomic_mode`: which atomics the responder executes ([`QPC_ATOMIC_MODE_UP_TO_8B`], …).
pub const QPC_ATOMIC_MODE: Field = Field::new("qpc.atomic_mode", 0x48c, 0x04);
/// `qpc.rre`: remote reads enabled.
pub const QPC_RRE: Field = Field::new("qpc.rre", 0x490, 0x01);
/// `qpc.rwe`: remote writes enabled.
pub const QPC_RWE: Field = Field::new("qpc.rwe", 0x491, 0x01);
/// `qpc.rae`: remote atomics enabled.
pub const QPC_RAE: Field = Field::new("qpc.rae", 0x492, 0x01);
/// `qpc.min_rnr_nak`: the RNR NAK timer the responder advertises (encoded, 5 bits).
pub const QPC_MIN_RNR_NAK: Field = Field::new("qpc.min_rnr_nak", 0x4a3, 0x05);
/// `qpc.next_rcv_psn`: the first expected receive packet sequence number.
pub const QPC_NEXT_RCV_PSN: Field = Field::new("qpc.next_rcv_psn", 0x4a8, 0x18);
/// `qpc.cqn_rcv`: the CQ of receive completions.
pub const QPC_CQN_RCV: Field = Field::new("qpc.cqn_rcv", 0x4e8, 0x18);
/// `qpc.dbr_addr`: the doorbell record's address (its offset in the umem when
/// `dbr_umem_valid`).
pub const QPC_DBR_ADDR: Field = Field::new("qpc.dbr_addr", 0x500, 0x40);
/// `qpc.rq_type`: [`QPC_RQ_TYPE_REGULAR`], [`QPC_RQ_TYPE_SRQ`] or [`QPC_RQ_TYPE_ZERO_SIZE_RQ`].
pub const QPC_RQ_TYPE: Field = Field::new("qpc.rq_type", 0x565, 0x03);
/// `qpc.srqn_rmpn_xrqn`: the shared receive queue, with [`QPC_RQ_TYPE_SRQ`].
pub const QPC_SRQN_RMPN_XRQN: Field = Field::new("qpc.srqn_rmpn_xrqn", 0x568, 0x18);
/// `qpc.dbr_umem_valid`: `dbr_addr` is an offset in the umem `dbr_umem_id`.
pub const QPC_DBR_UMEM_VALID: Field = Field::new("qpc.dbr_umem_valid", 0x683, 0x01);
/// `qpc.dbr_umem_id`: the umem holding the doorbell record.
pub const QPC_DBR_UMEM_ID: Field = Field::new("qpc.dbr_umem_id", 0x720, 0x20);

// `mlx5_ifc_create_qp_in_bits` (NVSHMEM src/modules/transport/common/mlx5_ifc.h, which names
// the `wq_umem_offset` that rdma-core leaves as `reserved_at_800`) and `_out_bits`.
/// `create_qp_in.wq_umem_offset`: where the work queue buffer starts in its umem.
pub const CREATE_QP_IN_WQ_UMEM_OFFSET: Field = Field::new("wq_umem_offset", 0x800, 0x40);
/// `create_qp_in.wq_umem_id`: the umem holding the work queue buffer.
pub const CREATE_QP_IN_WQ_UMEM_ID: Field = Field::new("wq_umem_id", 0x840, 0x20);
/// `create_qp_in.wq_umem_valid`: the work queue is the umem `wq_umem_id` (no `pas`).
pub const CREATE_QP_IN_WQ_UMEM_VALID: Field = Field::new("wq_umem_valid", 0x860, 0x01);
/// `create_qp_out.qpn`: the new QP's number.
pub const CREATE_QP_OUT_QPN: Field = Field::new("qpn", 0x48, 0x18);

// `mlx5_ifc_{rst2init,init2rtr,rtr2rts}_qp_in_bits` (rdma-core providers/mlx5/mlx5_ifc.h).
/// `*2*_qp_in.qpn`: the QP to move.
pub const MODIFY_QP_IN_QPN: Field = Field::new("qpn", 0x48, 0x18);
/// `*2*_qp_in.opt_param_mask`: which optional `qpc` fields of the transition are valid.
pub const MODIFY_QP_IN_OPT_PARAM_MASK: Field = Field::new("opt_param_mask", 0x80, 0x20);

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// A DEVX command: its name, opcode, buffer sizes and encoding.
pub trait Command {
    /// The PRM command name, used in errors (`CREATE_QP`).
    const NAME: &'static str;
    /// The command opcode ([`opcode`]).
    const OPCODE: u16;
    /// Size of the `*_in` buffer [`to_bytes`](Command::to_bytes) produces.
    const IN_BYTES: usize;
    /// Size of the `*_out` buffer to give the device.
    const OUT_BYTES: usize;

    /// The complete `*_in` buffer of [`IN_BYTES`](Command::IN_BYTES) bytes.
    fn to_bytes(&self) -> Result<Vec<u8>, DevxError>;
}

/// A zeroed `*_in` buffer with the opcode (and `op_mod`) set, handed to `fill`.
fn encode<C: Command>(
    op_mod: u16,
    fill: impl FnOnce(&mut Writer<'_>) -> Result<(), DevxError>,
) -> Result<Vec<u8>, DevxError> {
    let mut buf = vec![0u8; C::IN_BYTES];
    let mut w = Writer::new(&mut buf, C::NAME);
    w.set(CMD_OPCODE, u64::from(C::OPCODE))?;
    w.set(CMD_OP_MOD, u64::from(op_mod))?;
    fill(&mut w)?;
    Ok(buf)
}

/// Checks a command's output: at least `status` and `syndrome`, and `status` 0.
pub fn check_status(command: &'static str, out: &[u8]) -> Result<(), DevxError> {
    if out.len() < 8 {
        return Err(DevxError::ShortOutput { command, got: out.len(), need: 8 });
    }
    let status = get(command, out, OUT_STATUS)? as u8;
    if status != 0 {
        let syndrome = get(command, out, OUT_SYNDROME)? as u32;
        return Err(DevxError::Status { command, status, syndrome });
    }
    Ok(())
}

/// Checks the output of a successful command is as long as its layout.
fn check_out(command: &'static str, out: &[u8], need: usize) -> Result<(), DevxError> {
    check_status(command, out)?;
    if out.len() < need {
        return Err(DevxError::ShortOutput { command, got: out.len(), need });
    }
    Ok(())
}

/// `QUERY_HCA_CAP` (`mlx5_ifc_query_hca_cap_in_bits`), through `mlx5dv_devx_general_cmd`;
/// [`HcaCaps::parse`] reads the general capabilities from its output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryHcaCap {
    /// `op_mod`: the capability type shifted left by one, OR [`HCA_CAP_OPMOD_GET_CUR`] for the
    /// current values (else the maximum ones).
    pub op_mod: u16,
}

impl QueryHcaCap {
    /// The general device capabilities (`cmd_hca_cap`): current ones, or the maximum ones.
    pub const fn general(current: bool) -> QueryHcaCap {
        QueryHcaCap { op_mod: (HCA_CAP_TYPE_GENERAL << 1) | if current { HCA_CAP_OPMOD_GET_CUR } else { 0 } }
    }
}

impl Command for QueryHcaCap {
    const NAME: &'static str = "QUERY_HCA_CAP";
    const OPCODE: u16 = opcode::QUERY_HCA_CAP;
    const IN_BYTES: usize = QUERY_HCA_CAP_IN_BYTES;
    const OUT_BYTES: usize = QUERY_HCA_CAP_OUT_BYTES;

    fn to_bytes(&self) -> Result<Vec<u8>, DevxError> {
        encode::<Self>(self.op_mod, |_| Ok(()))
    }
}

/// The general device capabilities IBGDA needs, from a `QUERY_HCA_CAP` output
/// (`mlx5_ifc_cmd_hca_cap_bits`; each field keeps its PRM name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HcaCaps {
    /// log2 of the largest work queue (WQEs).
    pub log_max_qp_sz: u8,
    /// log2 of the number of QPs.
    pub log_max_qp: u8,
    /// log2 of the largest CQ (CQEs).
    pub log_max_cq_sz: u8,
    /// log2 of the number of CQs.
    pub log_max_cq: u8,
    /// log2 of the outstanding reads / atomics a QP may initiate (bound on `log_sra_max`).
    pub log_max_ra_req_qp: u8,
    /// log2 of the reads / atomics a QP may serve at once (bound on `log_rra_max`).
    pub log_max_ra_res_qp: u8,
    /// [`PORT_TYPE_IB`] or [`PORT_TYPE_ETH`].
    pub port_type: u8,
    /// log2 of the largest message (bound on `log_msg_max`).
    pub log_max_msg: u8,
    /// RoCE is supported.
    pub roce: bool,
    /// Atomic operations are supported.
    pub atomic: bool,
    /// User memory may be registered with uid 0.
    pub umem_uid_0: bool,
}

impl HcaCaps {
    /// Parses a `QUERY_HCA_CAP` output of the general capabilities; a failed command is
    /// [`DevxError::Status`].
    pub fn parse(out: &[u8]) -> Result<HcaCaps, DevxError> {
        const C: &str = QueryHcaCap::NAME;
        check_out(C, out, QUERY_HCA_CAP_OUT_BYTES)?;
        let cap = |f: Field| get(C, out, f.at(QUERY_HCA_CAP_OUT_CAPABILITY));
        Ok(HcaCaps {
            log_max_qp_sz: cap(CAP_LOG_MAX_QP_SZ)? as u8,
            log_max_qp: cap(CAP_LOG_MAX_QP)? as u8,
            log_max_cq_sz: cap(CAP_LOG_MAX_CQ_SZ)? as u8,
            log_max_cq: cap(CAP_LOG_MAX_CQ)? as u8,
            log_max_ra_req_qp: cap(CAP_LOG_MAX_RA_REQ_QP)? as u8,
            log_max_ra_res_qp: cap(CAP_LOG_MAX_RA_RES_QP)? as u8,
            port_type: cap(CAP_PORT_TYPE)? as u8,
            log_max_msg: cap(CAP_LOG_MAX_MSG)? as u8,
            roce: cap(CAP_ROCE)? != 0,
            atomic: cap(CAP_ATOMIC)? != 0,
            umem_uid_0: cap(CAP_UMEM_UID_0)? != 0,
        })
    }

    /// The port is Ethernet (RoCE addressing), not InfiniBand.
    pub fn is_ethernet(&self) -> bool {
        self.port_type == PORT_TYPE_ETH
    }
}

/// `CREATE_CQ` (`mlx5_ifc_create_cq_in_bits` with its `cqc`), through
/// `mlx5dv_devx_obj_create`; the CQ buffer and doorbell record live in umems.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateCq {
    /// `cqc.cqe_sz`: [`CQE_SZ_64`] (what IBGDA polls) or [`CQE_SZ_128`].
    pub cqe_sz: u8,
    /// `cqc.cc`: collapsed CQ — every completion overwrites entry 0.
    pub cc: bool,
    /// `cqc.oi`: overrun ignore — no CQ error when the consumer falls behind.
    pub oi: bool,
    /// `cqc.log_cq_size`: log2 of the number of CQEs.
    pub log_cq_size: u8,
    /// `cqc.uar_page`: the UAR page index (`mlx5dv_devx_uar::page_id`).
    pub uar_page: u32,
    /// `cqc.c_eqn`: the completion event queue (`mlx5dv_devx_query_eqn`).
    pub c_eqn: u32,
    /// `cqc.log_page_size`: log2 of the buffer's page size in 4 KiB units (page shift − 12).
    pub log_page_size: u8,
    /// `cqc.dbr_umem_valid`: `dbr_addr` is an offset in `dbr_umem_id`.
    pub dbr_umem_valid: bool,
    /// `cqc.dbr_umem_id`: the umem holding the doorbell record.
    pub dbr_umem_id: u32,
    /// `cqc.dbr_addr`: the doorbell record (an offset in its umem when `dbr_umem_valid`).
    pub dbr_addr: u64,
    /// `create_cq_in.cq_umem_valid`: the CQ buffer is the umem `cq_umem_id`.
    pub cq_umem_valid: bool,
    /// `create_cq_in.cq_umem_id`: the umem holding the CQ buffer.
    pub cq_umem_id: u32,
    /// `create_cq_in.cq_umem_offset`: where the CQ buffer starts in that umem.
    pub cq_umem_offset: u64,
}

impl Command for CreateCq {
    const NAME: &'static str = "CREATE_CQ";
    const OPCODE: u16 = opcode::CREATE_CQ;
    const IN_BYTES: usize = CREATE_CQ_IN_BYTES;
    const OUT_BYTES: usize = CREATE_CQ_OUT_BYTES;

    fn to_bytes(&self) -> Result<Vec<u8>, DevxError> {
        encode::<Self>(0, |w| {
            let c = CREATE_CQ_IN_CQ_CONTEXT;
            w.set(CQC_CQE_SZ.at(c), self.cqe_sz.into())?;
            w.set_bool(CQC_CC.at(c), self.cc)?;
            w.set_bool(CQC_OI.at(c), self.oi)?;
            w.set(CQC_LOG_CQ_SIZE.at(c), self.log_cq_size.into())?;
            w.set(CQC_UAR_PAGE.at(c), self.uar_page.into())?;
            w.set(CQC_C_EQN.at(c), self.c_eqn.into())?;
            w.set(CQC_LOG_PAGE_SIZE.at(c), self.log_page_size.into())?;
            w.set_bool(CQC_DBR_UMEM_VALID.at(c), self.dbr_umem_valid)?;
            w.set(CQC_DBR_UMEM_ID.at(c), self.dbr_umem_id.into())?;
            w.set(CQC_DBR_ADDR.at(c), self.dbr_addr)?;
            w.set_bool(CREATE_CQ_IN_CQ_UMEM_VALID, self.cq_umem_valid)?;
            w.set(CREATE_CQ_IN_CQ_UMEM_ID, self.cq_umem_id.into())?;
            w.set(CREATE_CQ_IN_CQ_UMEM_OFFSET, self.cq_umem_offset)
        })
    }
}

/// A `CREATE_CQ` output (`mlx5_ifc_create_cq_out_bits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreateCqOut {
    /// `cqn`: the new CQ's number.
    pub cqn: u32,
}

impl CreateCqOut {
    /// Parses a `CREATE_CQ` output; a failed command is [`DevxError::Status`].
    pub fn parse(out: &[u8]) -> Result<CreateCqOut, DevxError> {
        check_out(CreateCq::NAME, out, CREATE_CQ_OUT_BYTES)?;
        Ok(CreateCqOut { cqn: get(CreateCq::NAME, out, CREATE_CQ_OUT_CQN)? as u32 })
    }
}

/// `CREATE_QP` (`mlx5_ifc_create_qp_in_bits` with its `qpc`), through
/// `mlx5dv_devx_obj_create`: an RC QP whose work queue and doorbell record live in umems.
/// A send-only QP has `rq_type` [`QPC_RQ_TYPE_ZERO_SIZE_RQ`] and `log_rq_size` 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateQp {
    /// `qpc.st`: service type, [`QPC_ST_RC`].
    pub st: u8,
    /// `qpc.pm_state`: [`QPC_PM_STATE_MIGRATED`] for a QP without an alternate path.
    pub pm_state: u8,
    /// `qpc.pd`: protection domain number.
    pub pd: u32,
    /// `qpc.uar_page`: the UAR page index the QP's doorbells go to.
    pub uar_page: u32,
    /// `qpc.log_sq_size`: log2 of the send queue's 64-byte WQE basic blocks.
    pub log_sq_size: u8,
    /// `qpc.no_sq`: the QP has no send queue.
    pub no_sq: bool,
    /// `qpc.log_rq_size`: log2 of the receive queue's WQEs (0 without one).
    pub log_rq_size: u8,
    /// `qpc.log_rq_stride`: log2 of the receive WQE size in 16-byte units.
    pub log_rq_stride: u8,
    /// `qpc.rq_type`: [`QPC_RQ_TYPE_REGULAR`], [`QPC_RQ_TYPE_SRQ`] or
    /// [`QPC_RQ_TYPE_ZERO_SIZE_RQ`].
    pub rq_type: u8,
    /// `qpc.srqn_rmpn_xrqn`: the SRQ, with [`QPC_RQ_TYPE_SRQ`].
    pub srqn_rmpn_xrqn: u32,
    /// `qpc.ts_format`: CQE timestamp format ([`QPC_TS_FORMAT_DEFAULT`], or
    /// [`QPC_TS_FORMAT_REAL_TIME`] on a device that only has real-time timestamps).
    pub ts_format: u8,
    /// `qpc.cqn_snd`: the CQ of send completions.
    pub cqn_snd: u32,
    /// `qpc.cqn_rcv`: the CQ of receive completions.
    pub cqn_rcv: u32,
    /// `qpc.log_page_size`: log2 of the work queue's page size in 4 KiB units.
    pub log_page_size: u8,
    /// `qpc.dbr_umem_valid`: `dbr_addr` is an offset in `dbr_umem_id`.
    pub dbr_umem_valid: bool,
    /// `qpc.dbr_umem_id`: the umem holding the doorbell record.
    pub dbr_umem_id: u32,
    /// `qpc.dbr_addr`: the doorbell record (an offset in its umem when `dbr_umem_valid`).
    pub dbr_addr: u64,
    /// `create_qp_in.wq_umem_valid`: the work queue is the umem `wq_umem_id`.
    pub wq_umem_valid: bool,
    /// `create_qp_in.wq_umem_id`: the umem holding the work queue (RQ first, then SQ).
    pub wq_umem_id: u32,
    /// `create_qp_in.wq_umem_offset`: where the work queue starts in that umem.
    pub wq_umem_offset: u64,
}

impl Command for CreateQp {
    const NAME: &'static str = "CREATE_QP";
    const OPCODE: u16 = opcode::CREATE_QP;
    const IN_BYTES: usize = CREATE_QP_IN_BYTES;
    const OUT_BYTES: usize = CREATE_QP_OUT_BYTES;

    fn to_bytes(&self) -> Result<Vec<u8>, DevxError> {
        encode::<Self>(0, |w| {
            let q = CREATE_QP_IN_QPC;
            w.set(QPC_ST.at(q), self.st.into())?;
            w.set(QPC_PM_STATE.at(q), self.pm_state.into())?;
            w.set(QPC_PD.at(q), self.pd.into())?;
            w.set(QPC_UAR_PAGE.at(q), self.uar_page.into())?;
            w.set(QPC_LOG_SQ_SIZE.at(q), self.log_sq_size.into())?;
            w.set_bool(QPC_NO_SQ.at(q), self.no_sq)?;
            w.set(QPC_LOG_RQ_SIZE.at(q), self.log_rq_size.into())?;
            w.set(QPC_LOG_RQ_STRIDE.at(q), self.log_rq_stride.into())?;
            w.set(QPC_RQ_TYPE.at(q), self.rq_type.into())?;
            w.set(QPC_SRQN_RMPN_XRQN.at(q), self.srqn_rmpn_xrqn.into())?;
            w.set(QPC_TS_FORMAT.at(q), self.ts_format.into())?;
            w.set(QPC_CQN_SND.at(q), self.cqn_snd.into())?;
            w.set(QPC_CQN_RCV.at(q), self.cqn_rcv.into())?;
            w.set(QPC_LOG_PAGE_SIZE.at(q), self.log_page_size.into())?;
            w.set_bool(QPC_DBR_UMEM_VALID.at(q), self.dbr_umem_valid)?;
            w.set(QPC_DBR_UMEM_ID.at(q), self.dbr_umem_id.into())?;
            w.set(QPC_DBR_ADDR.at(q), self.dbr_addr)?;
            w.set_bool(CREATE_QP_IN_WQ_UMEM_VALID, self.wq_umem_valid)?;
            w.set(CREATE_QP_IN_WQ_UMEM_ID, self.wq_umem_id.into())?;
            w.set(CREATE_QP_IN_WQ_UMEM_OFFSET, self.wq_umem_offset)
        })
    }
}

/// A `CREATE_QP` output (`mlx5_ifc_create_qp_out_bits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreateQpOut {
    /// `qpn`: the new QP's number.
    pub qpn: u32,
}

impl CreateQpOut {
    /// Parses a `CREATE_QP` output; a failed command is [`DevxError::Status`]
    /// (`CREATE_QP failed: status 0x… syndrome 0x…`).
    pub fn parse(out: &[u8]) -> Result<CreateQpOut, DevxError> {
        check_out(CreateQp::NAME, out, CREATE_QP_OUT_BYTES)?;
        Ok(CreateQpOut { qpn: get(CreateQp::NAME, out, CREATE_QP_OUT_QPN)? as u32 })
    }
}

/// The remote end of an RC QP's primary address path (`qpc.primary_address_path`, an
/// `mlx5_ifc_ads_bits`), set at INIT2RTR. InfiniBand uses `rlid` and `sl`; RoCE uses `grh`,
/// `rgid_rip`, `rmac`, `src_addr_index`, `hop_limit`, `udp_sport` and `eth_prio`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressPath {
    /// `vhca_port_num`: the local port, 1-based.
    pub vhca_port_num: u8,
    /// `rlid`: the peer's LID (InfiniBand).
    pub rlid: u16,
    /// `sl`: the service level (InfiniBand; 4 bits).
    pub sl: u8,
    /// `grh`: send a global route header (RoCE always; InfiniBand across subnets).
    pub grh: bool,
    /// `src_addr_index`: the local GID index.
    pub src_addr_index: u8,
    /// `hop_limit`: GRH hop limit.
    pub hop_limit: u8,
    /// `tclass`: GRH traffic class.
    pub tclass: u8,
    /// `rgid_rip`: the peer's GID (RoCE: its IPv6 or IPv4-mapped address).
    pub rgid_rip: [u8; 16],
    /// `rmac_47_32` and `rmac_31_0`: the peer's (or gateway's) MAC, in wire order.
    pub rmac: [u8; 6],
    /// `udp_sport`: RoCE v2 UDP source port (0: the device picks one).
    pub udp_sport: u16,
    /// `eth_prio`: RoCE 802.1p priority (3 bits).
    pub eth_prio: u8,
}

impl AddressPath {
    /// An InfiniBand path to LID `rlid` at service level `sl` through local port `port`.
    pub fn infiniband(port: u8, rlid: u16, sl: u8) -> AddressPath {
        AddressPath { vhca_port_num: port, rlid, sl, ..AddressPath::default() }
    }

    /// A RoCE path (GRH on) to the peer with GID `rgid` and MAC `rmac`, from the local GID
    /// index `sgid_index` of port `port`.
    pub fn roce(
        port: u8,
        rgid: [u8; 16],
        rmac: [u8; 6],
        sgid_index: u8,
        hop_limit: u8,
        udp_sport: u16,
        eth_prio: u8,
    ) -> AddressPath {
        AddressPath {
            vhca_port_num: port,
            grh: true,
            src_addr_index: sgid_index,
            hop_limit,
            rgid_rip: rgid,
            rmac,
            udp_sport,
            eth_prio,
            ..AddressPath::default()
        }
    }

    /// Writes the path into the `qpc` at bit `qpc`.
    fn write(&self, w: &mut Writer<'_>, qpc: usize) -> Result<(), DevxError> {
        w.set(QPC_PAP_VHCA_PORT_NUM.at(qpc), self.vhca_port_num.into())?;
        w.set(QPC_PAP_RLID.at(qpc), self.rlid.into())?;
        w.set(QPC_PAP_SL.at(qpc), self.sl.into())?;
        w.set_bool(QPC_PAP_GRH.at(qpc), self.grh)?;
        w.set(QPC_PAP_SRC_ADDR_INDEX.at(qpc), self.src_addr_index.into())?;
        w.set(QPC_PAP_HOP_LIMIT.at(qpc), self.hop_limit.into())?;
        w.set(QPC_PAP_TCLASS.at(qpc), self.tclass.into())?;
        w.set_bytes(QPC_PAP_RGID_RIP.at(qpc), &self.rgid_rip)?;
        let [m0, m1, m2, m3, m4, m5] = self.rmac;
        w.set(QPC_PAP_RMAC_47_32.at(qpc), u16::from_be_bytes([m0, m1]).into())?;
        w.set(QPC_PAP_RMAC_31_0.at(qpc), u32::from_be_bytes([m2, m3, m4, m5]).into())?;
        w.set(QPC_PAP_UDP_SPORT.at(qpc), self.udp_sport.into())?;
        w.set(QPC_PAP_ETH_PRIO.at(qpc), self.eth_prio.into())
    }
}

/// The header of the three QP transitions: `qpn` and `opt_param_mask`.
fn modify_header(w: &mut Writer<'_>, qpn: u32, opt_param_mask: u32) -> Result<(), DevxError> {
    w.set(MODIFY_QP_IN_QPN, qpn.into())?;
    w.set(MODIFY_QP_IN_OPT_PARAM_MASK, opt_param_mask.into())
}

/// `RST2INIT_QP` (`mlx5_ifc_rst2init_qp_in_bits`), through `mlx5dv_devx_obj_modify`: port,
/// partition key and the remote access the responder grants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rst2InitQp {
    /// `qpn`: the QP.
    pub qpn: u32,
    /// `opt_param_mask`: optional `qpc` fields of this transition that are valid.
    pub opt_param_mask: u32,
    /// `qpc.pm_state`: [`QPC_PM_STATE_MIGRATED`].
    pub pm_state: u8,
    /// `qpc.primary_address_path.vhca_port_num`: the local port, 1-based.
    pub vhca_port_num: u8,
    /// `qpc.primary_address_path.pkey_index`: the partition key index.
    pub pkey_index: u16,
    /// `qpc.rre`: remote reads enabled.
    pub rre: bool,
    /// `qpc.rwe`: remote writes enabled.
    pub rwe: bool,
    /// `qpc.rae`: remote atomics enabled.
    pub rae: bool,
    /// `qpc.atomic_mode`: [`QPC_ATOMIC_MODE_UP_TO_8B`] for NVSHMEM's 4- and 8-byte atomics.
    pub atomic_mode: u8,
}

impl Command for Rst2InitQp {
    const NAME: &'static str = "RST2INIT_QP";
    const OPCODE: u16 = opcode::RST2INIT_QP;
    const IN_BYTES: usize = MODIFY_QP_IN_BYTES;
    const OUT_BYTES: usize = MODIFY_QP_OUT_BYTES;

    fn to_bytes(&self) -> Result<Vec<u8>, DevxError> {
        encode::<Self>(0, |w| {
            let q = MODIFY_QP_IN_QPC;
            modify_header(w, self.qpn, self.opt_param_mask)?;
            w.set(QPC_PM_STATE.at(q), self.pm_state.into())?;
            w.set(QPC_PAP_VHCA_PORT_NUM.at(q), self.vhca_port_num.into())?;
            w.set(QPC_PAP_PKEY_INDEX.at(q), self.pkey_index.into())?;
            w.set_bool(QPC_RRE.at(q), self.rre)?;
            w.set_bool(QPC_RWE.at(q), self.rwe)?;
            w.set_bool(QPC_RAE.at(q), self.rae)?;
            w.set(QPC_ATOMIC_MODE.at(q), self.atomic_mode.into())
        })
    }
}

/// `INIT2RTR_QP` (`mlx5_ifc_init2rtr_qp_in_bits`), through `mlx5dv_devx_obj_modify`: the peer
/// QP, its address and the receive side's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Init2RtrQp {
    /// `qpn`: the QP.
    pub qpn: u32,
    /// `opt_param_mask`: optional `qpc` fields of this transition that are valid.
    pub opt_param_mask: u32,
    /// `qpc.mtu`: path MTU ([`QPC_MTU_4K`], …).
    pub mtu: u8,
    /// `qpc.log_msg_max`: log2 of the largest message (≤ `HcaCaps::log_max_msg`).
    pub log_msg_max: u8,
    /// `qpc.remote_qpn`: the peer QP.
    pub remote_qpn: u32,
    /// `qpc.next_rcv_psn`: the peer's first send PSN.
    pub next_rcv_psn: u32,
    /// `qpc.log_rra_max`: log2 of the reads / atomics served at once
    /// (≤ `HcaCaps::log_max_ra_res_qp`).
    pub log_rra_max: u8,
    /// `qpc.min_rnr_nak`: the RNR NAK timer advertised (encoded).
    pub min_rnr_nak: u8,
    /// `qpc.primary_address_path`: how to reach the peer.
    pub path: AddressPath,
}

impl Command for Init2RtrQp {
    const NAME: &'static str = "INIT2RTR_QP";
    const OPCODE: u16 = opcode::INIT2RTR_QP;
    const IN_BYTES: usize = MODIFY_QP_IN_BYTES;
    const OUT_BYTES: usize = MODIFY_QP_OUT_BYTES;

    fn to_bytes(&self) -> Result<Vec<u8>, DevxError> {
        encode::<Self>(0, |w| {
            let q = MODIFY_QP_IN_QPC;
            modify_header(w, self.qpn, self.opt_param_mask)?;
            w.set(QPC_MTU.at(q), self.mtu.into())?;
            w.set(QPC_LOG_MSG_MAX.at(q), self.log_msg_max.into())?;
            w.set(QPC_REMOTE_QPN.at(q), self.remote_qpn.into())?;
            w.set(QPC_NEXT_RCV_PSN.at(q), self.next_rcv_psn.into())?;
            w.set(QPC_LOG_RRA_MAX.at(q), self.log_rra_max.into())?;
            w.set(QPC_MIN_RNR_NAK.at(q), self.min_rnr_nak.into())?;
            self.path.write(w, q)
        })
    }
}

/// `RTR2RTS_QP` (`mlx5_ifc_rtr2rts_qp_in_bits`), through `mlx5dv_devx_obj_modify`: the send
/// side's PSN, retries and timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rtr2RtsQp {
    /// `qpn`: the QP.
    pub qpn: u32,
    /// `opt_param_mask`: optional `qpc` fields of this transition that are valid.
    pub opt_param_mask: u32,
    /// `qpc.next_send_psn`: the first send PSN (the peer's `next_rcv_psn`).
    pub next_send_psn: u32,
    /// `qpc.retry_count`: transport retries (≤ 7).
    pub retry_count: u8,
    /// `qpc.rnr_retry`: RNR retries (7 = forever).
    pub rnr_retry: u8,
    /// `qpc.log_sra_max`: log2 of the outstanding reads / atomics
    /// (≤ `HcaCaps::log_max_ra_req_qp`).
    pub log_sra_max: u8,
    /// `qpc.primary_address_path.ack_timeout`: 4.096 µs × 2^value.
    pub ack_timeout: u8,
}

impl Command for Rtr2RtsQp {
    const NAME: &'static str = "RTR2RTS_QP";
    const OPCODE: u16 = opcode::RTR2RTS_QP;
    const IN_BYTES: usize = MODIFY_QP_IN_BYTES;
    const OUT_BYTES: usize = MODIFY_QP_OUT_BYTES;

    fn to_bytes(&self) -> Result<Vec<u8>, DevxError> {
        encode::<Self>(0, |w| {
            let q = MODIFY_QP_IN_QPC;
            modify_header(w, self.qpn, self.opt_param_mask)?;
            w.set(QPC_NEXT_SEND_PSN.at(q), self.next_send_psn.into())?;
            w.set(QPC_RETRY_COUNT.at(q), self.retry_count.into())?;
            w.set(QPC_RNR_RETRY.at(q), self.rnr_retry.into())?;
            w.set(QPC_LOG_SRA_MAX.at(q), self.log_sra_max.into())?;
            w.set(QPC_PAP_ACK_TIMEOUT.at(q), self.ack_timeout.into())
        })
    }
}

/// Checks the output of one of the QP transitions (`mlx5_ifc_*2*_qp_out_bits`: only
/// `status` and `syndrome`).
pub fn check_modify_qp_out<C: Command>(out: &[u8]) -> Result<(), DevxError> {
    check_out(C::NAME, out, MODIFY_QP_OUT_BYTES)
}

#[cfg(test)]
mod tests;
