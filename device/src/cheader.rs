//! The C view of the device state: a table of every `#[repr(C)]` structure a device thread
//! reads — its C name, its Rust type's size and alignment, and each field's C type, offset and
//! size taken from the Rust type with `offset_of!` — and the generator of the C header
//! `device/include/oxshmem/device_state.h` from that table; and the generator of
//! `device/include/oxshmem/device_protocol.h`, every number of the device protocols
//! ([`protocol_constants`]: channel ids, the proxy ring's kinds, flags and sizes, the IBGDA
//! queue's constants, the mlx5 format's opcodes, bits, shifts and field offsets), taken from
//! the Rust constants and types. The CUDA library (`bindings/cuda/src/*.cuh`) uses these
//! macros instead of literals of its own; docs/architecture.md lists the logic that is still
//! written in both languages and the tests that hold each pair equal.
//!
//! CUDA device code (and any C or C++ code) includes that header to read the very structures
//! the Rust side builds. The table cannot drift from the Rust types: offsets and sizes come
//! from the compiler, each struct's field list is checked to be complete (a struct pattern
//! without `..` over the Rust type), and the header asserts every size, alignment and offset
//! with `static_assert`. `tests/c_layout.rs` checks that the checked-in header is what
//! [`header`] writes now (`OXSHMEM_BLESS=1` rewrites it) and that a C compiler agrees with
//! Rust on every number.
//!
//! Atomics appear as plain `uint32_t`/`uint64_t` (C and CUDA code use atomic intrinsics on
//! them); big-endian mlx5 fields (`Be32`, `Be64`) as `uint32_t`/`uint64_t` holding the
//! big-endian bytes, `Be16` as `uint8_t[2]`.

use std::fmt::Write as _;
use std::mem::{align_of, offset_of, size_of};

use crate::channel::proxy::{Request, amo, kind};
use crate::channel::ring::{Ring, Slot};
use crate::ibgda::layout::Mlx5;
use crate::ibgda::mlx5;
use crate::ibgda::qp::{Counters, CqMode, Doorbell, Line, Qp, Ringing};
use crate::ibgda::{IbgdaDevice, LocalBuffer};
use crate::state::{BARRIER_ROUNDS, DeviceState, ErrorCode, ErrorSlot, op, slot_state};

/// Where the header lives, relative to the device crate's directory.
pub const HEADER_PATH: &str = "include/oxshmem/device_state.h";
/// Where the protocol header (constants only; the state header includes it) lives, relative
/// to the device crate's directory.
pub const PROTOCOL_HEADER_PATH: &str = "include/oxshmem/device_protocol.h";

/// A field's C type: `name` (`"uint64_t"`, `"oxshmem_qp_t *"`), and an array length (0: not
/// an array). An empty name is a zero-sized Rust-only marker (`PhantomData`), not emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CType {
    /// The C type (the element type for an array).
    pub name: &'static str,
    /// Array length (0: not an array).
    pub array: usize,
}

const fn t(name: &'static str) -> CType {
    CType { name, array: 0 }
}

const fn arr(name: &'static str, n: usize) -> CType {
    CType { name, array: n }
}

/// One field: its Rust (and C) name, C type, and offset, size and alignment from Rust.
#[derive(Debug, Clone)]
pub struct CField {
    /// The field's name (the same in Rust and C).
    pub name: &'static str,
    /// Its C type.
    pub ctype: CType,
    /// `offset_of!` in Rust.
    pub offset: usize,
    /// `size_of` of the Rust field's type.
    pub size: usize,
    /// `align_of` of the Rust field's type.
    pub align: usize,
}

/// One struct: its C name, what it is, its Rust size and alignment, its fields in order.
#[derive(Debug, Clone)]
pub struct CStruct {
    /// The C typedef name (`oxshmem_qp_t`); the struct tag is the same without `_t`.
    pub name: &'static str,
    /// The Rust type, as text.
    pub rust: &'static str,
    /// One line of description.
    pub doc: &'static str,
    /// `size_of` in Rust.
    pub size: usize,
    /// `align_of` in Rust.
    pub align: usize,
    /// Fields in declaration order.
    pub fields: Vec<CField>,
}

/// A constant device code needs.
#[derive(Debug, Clone)]
pub struct CConst {
    /// The C macro name (`OXSHMEM_CHANNEL_P2P`).
    pub name: String,
    /// Its value.
    pub value: u64,
    /// One line of description (empty: none).
    pub doc: &'static str,
}

fn size_of_field<T, F>(_: impl Fn(&T) -> &F) -> usize {
    size_of::<F>()
}

fn align_of_field<T, F>(_: impl Fn(&T) -> &F) -> usize {
    align_of::<F>()
}

/// `cstruct!(Alias, "oxshmem_x_t", "doc", { field: ctype, ... })`: the table entry of the Rust
/// type `Alias` (a plain name: an alias for a generic type). Compiles only if every field of
/// the Rust type is listed.
macro_rules! cstruct {
    ($ty:ident, $cname:literal, $doc:literal, { $( $f:ident : $c:expr ),* $(,)? }) => {{
        // Every field listed, none left out: a struct pattern without `..`.
        #[allow(dead_code)]
        fn all_fields(v: &$ty) {
            let $ty { $( $f: _ ),* } = v;
        }
        CStruct {
            name: $cname,
            rust: stringify!($ty),
            doc: $doc,
            size: size_of::<$ty>(),
            align: align_of::<$ty>(),
            fields: vec![$(CField {
                name: stringify!($f),
                ctype: $c,
                offset: offset_of!($ty, $f),
                size: size_of_field(|v: &$ty| &v.$f),
                align: align_of_field(|v: &$ty| &v.$f),
            }),*],
        }
    }};
}

type ProxySlot = Slot<Request>;
type ProxyRingHeader = Ring<Request>;
type QpLine = Line<crate::sync::atomic::AtomicU64>;
type QpMlx5 = Qp<Mlx5>;

const U8: CType = t("uint8_t");
const U16: CType = t("uint16_t");
const U32: CType = t("uint32_t");
const U64: CType = t("uint64_t");
const I64: CType = t("int64_t");

/// Every struct of the header, in the order it defines them.
pub fn structs() -> Vec<CStruct> {
    use mlx5::{AtomicSeg, Cqe64, CtrlSeg, DataSeg, ErrCqe, InlineSeg, MaskedCs32Seg, MaskedCs64Seg};
    use mlx5::{MaskedFa32Seg, MaskedFa64Seg, RaddrSeg};
    vec![
        cstruct!(CtrlSeg, "oxshmem_mlx5_ctrl_seg_t", "mlx5 control segment (big-endian fields).", {
            opmod_idx_opcode: U32, qpn_ds: U32, signature: U8, dci_stream_channel_id: arr("uint8_t", 2),
            fm_ce_se: U8, imm: U32,
        }),
        cstruct!(RaddrSeg, "oxshmem_mlx5_raddr_seg_t", "mlx5 remote-address segment.", {
            raddr: U64, rkey: U32, reserved: U32,
        }),
        cstruct!(DataSeg, "oxshmem_mlx5_data_seg_t", "mlx5 data (scatter/gather) segment.", {
            byte_count: U32, lkey: U32, addr: U64,
        }),
        cstruct!(InlineSeg, "oxshmem_mlx5_inline_seg_t", "mlx5 inline-data segment header (data follows).", {
            byte_count: U32,
        }),
        cstruct!(AtomicSeg, "oxshmem_mlx5_atomic_seg_t", "mlx5 atomic segment (compare-and-swap, fetch-and-add).", {
            swap_add: U64, compare: U64,
        }),
        cstruct!(MaskedFa32Seg, "oxshmem_mlx5_masked_fa32_seg_t", "mlx5 extended (masked) 4-byte fetch-and-add.", {
            add: U32, field_boundary: U32, reserved: U64,
        }),
        cstruct!(MaskedFa64Seg, "oxshmem_mlx5_masked_fa64_seg_t", "mlx5 extended (masked) 8-byte fetch-and-add.", {
            add: U64, field_boundary: U64,
        }),
        cstruct!(MaskedCs32Seg, "oxshmem_mlx5_masked_cs32_seg_t", "mlx5 extended (masked) 4-byte compare-and-swap.", {
            swap: U32, compare: U32, swap_mask: U32, compare_mask: U32,
        }),
        cstruct!(MaskedCs64Seg, "oxshmem_mlx5_masked_cs64_seg_t", "mlx5 extended (masked) 8-byte compare-and-swap.", {
            swap: U64, compare: U64, swap_mask: U64, compare_mask: U64,
        }),
        cstruct!(Cqe64, "oxshmem_mlx5_cqe64_t", "mlx5 64-byte completion queue entry.", {
            rsvd0: arr("uint8_t", 32), srqn_uidx: U32, imm_inval_pkey: U32, app: U8, app_op: U8,
            app_info: arr("uint8_t", 2), byte_cnt: U32, timestamp: U64, sop_drop_qpn: U32,
            wqe_counter: arr("uint8_t", 2), signature: U8, op_own: U8,
        }),
        cstruct!(ErrCqe, "oxshmem_mlx5_err_cqe_t", "mlx5 error completion queue entry.", {
            rsvd0: arr("uint8_t", 32), srqn: U32, rsvd1: arr("uint8_t", 18), vendor_err_synd: U8,
            syndrome: U8, s_wqe_opcode_qpn: U32, wqe_counter: arr("uint8_t", 2), signature: U8, op_own: U8,
        }),
        cstruct!(ErrorSlot, "oxshmem_error_slot_t", "The first error a device thread hit (state: 0 none, 1 being written, 2 set).", {
            state: U32, code: U32, op: U32, block: U32, thread: U32, pe: I64, addr: U64, len: U64,
            launch: U64, value: U64, cmp: U32,
        }),
        cstruct!(Request, "oxshmem_proxy_request_t", "A proxy request (OXSHMEM_PROXY_*; 56 bytes).", {
            kind: U16, flags: U16, pe: U32, len: U64, dest: U64, local: U64, value: U64, cond: U64, sig: U64,
        }),
        cstruct!(ProxySlot, "oxshmem_ring_slot_t", "A ring slot: seq = ticket + 1 once published (64 bytes).", {
            seq: U64, body: t("oxshmem_proxy_request_t"),
        }),
        cstruct!(ProxyRingHeader, "oxshmem_ring_t", "The proxy ring: ticket t owns slots[t % capacity].", {
            issue: U64, completed: U64, capacity: U64, slots: t("oxshmem_ring_slot_t *"),
        }),
        cstruct!(QpLine, "oxshmem_qp_line_t", "A 64-bit word on its own cache line.", {
            value: U64,
        }),
        cstruct!(Counters, "oxshmem_qp_counters_t", "A queue's producer and poller counters (one line).", {
            resv_head: U64, ready_head: U64, cons_idx: U64, cq_ci: U64, poll_lock: U32,
        }),
        cstruct!(Ringing, "oxshmem_qp_ring_t", "A queue's ringers' words: doorbell lock, producer index, pending ring requests, the doorbell register as the producers address it (one line, with the descriptor).", {
            db_lock: U32, prod_idx: U64, ring_req: U64, uar: U64,
        }),
        cstruct!(Doorbell, "oxshmem_qp_doorbell_t", "The words of a queue the NIC and the host read, in the queue's memory: the software NIC's lock, the doorbell record and the last doorbell value, the NIC's progress, the software NIC's register, a normal CQ's consumer index (one line).", {
            drive: U32, dbr: arr("uint32_t", 2), db: U64, seen: arr("uint64_t", 2), soft_reg: U64, cq_ci: U64,
        }),
        cstruct!(QpMlx5, "oxshmem_qp_t", "One IBGDA queue pair's descriptor (mlx5 format); nic: its doorbell words; sq: nwqes * 8 words, marks: nwqes, cq: ncqes * 8, ibuf: OXSHMEM_IBUF_WORDS.", {
            prod: t("oxshmem_qp_counters_t"), ring: t("oxshmem_qp_ring_t"), error: t("oxshmem_qp_line_t"),
            ibuf_busy: t("oxshmem_qp_line_t"), nic: t("oxshmem_qp_doorbell_t *"), sq: t("uint64_t *"),
            marks: t("uint64_t *"), cq: t("uint64_t *"), ibuf: t("uint64_t *"), nwqes: U64, ncqes: U64, batch: U64,
            mode: U32, qpn: U32, peer: U32, _l: t(""),
        }),
        cstruct!(LocalBuffer, "oxshmem_ibgda_lbuf_t", "A local buffer registered with the NIC (nvshmemx_buffer_register): [base, base + len) under lkey; len 0: free (written last, cleared to free).", {
            base: U64, len: U64, lkey: U32, _pad: U32,
        }),
        cstruct!(IbgdaDevice, "oxshmem_ibgda_t", "The IBGDA channel: queue rc to pe is qps[(rc % num_rc) * n_pes + pe]; a local buffer outside the heap is looked up in lbufs[0..nlbufs).", {
            n_pes: U32, num_rc: U32, nwqes: U32, ncqes: U32, batch: U32, cq_mode: U32, heap_lkey: U32,
            implicit_lkey: U32, ibuf_lkey: U32, nqps: U32, nlbufs: U32, max_lbufs: U32, heap_base: U64,
            heap_size: U64, qps: t("oxshmem_qp_t *"), rkeys: t("uint32_t *"), rbases: t("uint64_t *"),
            mapped: t("uint64_t *"), lbufs: t("oxshmem_ibgda_lbuf_t *"),
        }),
        cstruct!(DeviceState, "oxshmem_device_state_t", "What a device thread reads to do its work.", {
            my_pe: U32, n_pes: U32, heap_base: U64, heap_size: U64, peer_base: t("const uint64_t *"),
            channel: t("const uint8_t *"), ring: t("oxshmem_ring_t *"), ibgda: t("oxshmem_ibgda_t *"),
            barrier_flags: U64, barrier_epoch: U64, timeout_ns: U64, proxy_alive: U32,
            proxy_sleeping: U32, error: t("oxshmem_error_slot_t"), host_error: t("oxshmem_error_slot_t"),
        }),
    ]
}

/// Every constant of the state header ([`HEADER_PATH`]), in order: what the state's fields
/// hold (error codes, operation codes, the error slot's states, the barrier's rounds).
pub fn constants() -> Vec<CConst> {
    let mut v = Vec::new();
    let mut c =
        |name: &str, value: u64, doc: &'static str| v.push(CConst { name: format!("OXSHMEM_{name}"), value, doc });
    for (name, e, doc) in [
        ("PE_OUT_OF_RANGE", ErrorCode::PeOutOfRange, "Error codes (oxshmem_error_slot_t::code)."),
        ("NOT_SYMMETRIC", ErrorCode::NotSymmetric, ""),
        ("OUT_OF_BOUNDS", ErrorCode::OutOfBounds, ""),
        ("RING_STALLED", ErrorCode::RingStalled, ""),
        ("TRANSPORT", ErrorCode::Transport, ""),
        ("MISALIGNED", ErrorCode::Misaligned, ""),
        ("KERNEL_PANIC", ErrorCode::KernelPanic, ""),
        ("FINALIZED", ErrorCode::Finalized, ""),
        ("NIC", ErrorCode::Nic, ""),
        ("NIC_STALLED", ErrorCode::NicStalled, ""),
        ("WAIT_TIMEOUT", ErrorCode::WaitTimeout, ""),
        ("BARRIER_TIMEOUT", ErrorCode::BarrierTimeout, ""),
        ("UNREGISTERED", ErrorCode::Unregistered, ""),
    ] {
        c(&format!("ERR_{name}"), e as u64, doc);
    }
    for (name, o, doc) in [
        ("PUT", op::PUT, "Operation codes (oxshmem_error_slot_t::op)."),
        ("GET", op::GET, ""),
        ("P", op::P, ""),
        ("G", op::G, ""),
        ("AMO", op::AMO, ""),
        ("PUT_SIGNAL", op::PUT_SIGNAL, ""),
        ("SIGNAL_OP", op::SIGNAL_OP, ""),
        ("SIGNAL_WAIT", op::SIGNAL_WAIT, ""),
        ("QUIET", op::QUIET, ""),
        ("BARRIER", op::BARRIER, ""),
        ("KERNEL", op::KERNEL, ""),
        ("WAIT_UNTIL", op::WAIT_UNTIL, ""),
        ("SYNC_ALL", op::SYNC_ALL, ""),
        ("SYNC_BLOCK", op::SYNC_BLOCK, ""),
        ("SYNC_WARP", op::SYNC_WARP, ""),
    ] {
        c(&format!("OP_{name}"), u64::from(o), doc);
    }
    c(
        "ERROR_SLOT_EMPTY",
        u64::from(slot_state::EMPTY),
        "States of oxshmem_error_slot_t::state (claim 0 -> 1, publish 2).",
    );
    c("ERROR_SLOT_WRITING", u64::from(slot_state::WRITING), "");
    c("ERROR_SLOT_SET", u64::from(slot_state::SET), "");
    c("BARRIER_ROUNDS", BARRIER_ROUNDS as u64, "Rounds (flag lines) of the device barrier.");
    v
}

/// The C prefix of an mlx5 struct's offset macros: `oxshmem_mlx5_ctrl_seg_t` ->
/// `OXSHMEM_MLX5_CTRL_SEG`.
fn macro_prefix(cname: &str) -> String {
    cname.strip_suffix("_t").unwrap_or(cname).to_uppercase()
}

/// Every constant of the protocol header ([`PROTOCOL_HEADER_PATH`]), in order: the numbers of
/// the protocols device code speaks with the host and the NIC — channel ids, the proxy ring's
/// request kinds, flags and sizes, the IBGDA queue's limits and error word, and the whole mlx5
/// format (sizes, opcodes, flag bits, shifts, masks, where each segment sits in a WQE, and
/// each segment's and CQE's field offsets, from the Rust `#[repr(C)]` types).
pub fn protocol_constants() -> Vec<CConst> {
    use crate::ChannelKind;
    use crate::ibgda::layout::{MAX_INLINE, MAX_WQE_BYTES};
    use crate::ibgda::qp::{IBUF_SLOT_BYTES, IBUF_SLOTS, IBUF_WORDS, latch};
    use mlx5::{cqe_op, ctrl, opcode, opmod, shift, wqe};
    let mut v = Vec::new();
    let mut c =
        |name: &str, value: u64, doc: &'static str| v.push(CConst { name: format!("OXSHMEM_{name}"), value, doc });
    c("CHANNEL_P2P", ChannelKind::P2p as u64, "Channel bytes (DeviceState::channel[pe]; Rust: ChannelKind).");
    c("CHANNEL_PROXY", ChannelKind::Proxy as u64, "");
    c("CHANNEL_IBGDA", ChannelKind::Ibgda as u64, "");
    for (name, k, doc) in [
        ("PUT", kind::PUT, "Proxy request kinds (oxshmem_proxy_request_t::kind; Rust: channel::proxy::kind)."),
        ("GET", kind::GET, ""),
        ("P", kind::P, ""),
        ("AMO", kind::AMO, ""),
        ("PUT_SIGNAL", kind::PUT_SIGNAL, ""),
        ("SIGNAL_OP", kind::SIGNAL_OP, ""),
    ] {
        c(&format!("PROXY_{name}"), u64::from(k), doc);
    }
    for (name, f, doc) in [
        ("FETCH", amo::FETCH, "AMO request flags: the operation in the low 4 bits, OXSHMEM_AMO_W64 for 64-bit words."),
        ("SET", amo::SET, ""),
        ("SWAP", amo::SWAP, ""),
        ("COMPARE_SWAP", amo::COMPARE_SWAP, ""),
        ("FETCH_ADD", amo::FETCH_ADD, ""),
        ("FETCH_AND", amo::FETCH_AND, ""),
        ("FETCH_OR", amo::FETCH_OR, ""),
        ("FETCH_XOR", amo::FETCH_XOR, ""),
        ("OP_MASK", amo::OP_MASK, ""),
        ("W64", amo::W64, ""),
    ] {
        c(&format!("AMO_{name}"), u64::from(f), doc);
    }
    c(
        "PROXY_REQUEST_BYTES",
        size_of::<Request>() as u64,
        "Proxy ring: bytes of a request and of a slot (seq = ticket + 1 once published).",
    );
    c("RING_SLOT_BYTES", size_of::<Slot<Request>>() as u64, "");
    c(
        "PROXY_HOLD",
        u64::from(crate::channel::proxy::flag::HOLD),
        "A request flag: the result lands in the request's own slot, held (seq = OXSHMEM_RING_HELD) until released.",
    );
    c("RING_HELD", crate::channel::ring::HELD, "");
    c("CQ_MODE_COLLAPSED", CqMode::Collapsed as u64, "CQ modes (oxshmem_qp_t::mode, oxshmem_ibgda_t::cq_mode).");
    c("CQ_MODE_NORMAL", CqMode::Normal as u64, "");
    c("IBUF_SLOTS", IBUF_SLOTS as u64, "A queue's scratch buffer: slots, bytes per slot, words.");
    c("IBUF_SLOT_BYTES", IBUF_SLOT_BYTES as u64, "");
    c("IBUF_WORDS", IBUF_WORDS as u64, "");
    c(
        "IBGDA_MAX_INLINE",
        MAX_INLINE as u64,
        "IBGDA (ibgda/layout.rs, device.rs): most bytes of an inline write, of one WQE, of one RDMA transfer.",
    );
    c("IBGDA_MAX_WQE_BYTES", MAX_WQE_BYTES as u64, "");
    c("IBGDA_MAX_XFER", crate::ibgda::device::MAX_XFER as u64, "");
    c(
        "QP_ERR_LATCHED",
        latch::LATCHED,
        "A queue's latched error word (oxshmem_qp_t::error; Rust: qp::latch): LATCHED | counter << COUNTER_SHIFT | syndrome << SYNDROME_SHIFT | opcode.",
    );
    c("QP_ERR_COUNTER_SHIFT", u64::from(latch::COUNTER_SHIFT), "");
    c("QP_ERR_SYNDROME_SHIFT", u64::from(latch::SYNDROME_SHIFT), "");
    c(
        "MLX5_SEND_WQE_BB",
        mlx5::SEND_WQE_BB as u64,
        "mlx5 (ibgda/mlx5.rs): bytes of a send-queue slot, of a DS unit; the inline segment's flag; the doorbell record's bits.",
    );
    c("MLX5_WQE_DS_BYTES", mlx5::WQE_DS_BYTES as u64, "");
    c("MLX5_INLINE_SEG", u64::from(mlx5::INLINE_SEG), "");
    c("MLX5_DBR_PROD_MASK", u64::from(mlx5::DBR_PROD_MASK), "");
    for (name, o, doc) in [
        ("NOP", opcode::NOP, "mlx5 send opcodes (opmod_idx_opcode bits 7:0)."),
        ("RDMA_WRITE", opcode::RDMA_WRITE, ""),
        ("RDMA_WRITE_IMM", opcode::RDMA_WRITE_IMM, ""),
        ("SEND", opcode::SEND, ""),
        ("RDMA_READ", opcode::RDMA_READ, ""),
        ("ATOMIC_CS", opcode::ATOMIC_CS, ""),
        ("ATOMIC_FA", opcode::ATOMIC_FA, ""),
        ("ATOMIC_MASKED_CS", opcode::ATOMIC_MASKED_CS, ""),
        ("ATOMIC_MASKED_FA", opcode::ATOMIC_MASKED_FA, ""),
        ("DUMP", opcode::DUMP, ""),
    ] {
        c(&format!("MLX5_OPCODE_{name}"), u64::from(o), doc);
    }
    c("MLX5_OPMOD_EXT_ATOMIC_4B", u64::from(opmod::EXT_ATOMIC_4B), "mlx5 opcode modifiers of the extended atomics.");
    c("MLX5_OPMOD_EXT_ATOMIC_8B", u64::from(opmod::EXT_ATOMIC_8B), "");
    for (name, b, doc) in [
        ("CQ_UPDATE", ctrl::CQ_UPDATE, "mlx5 control segment fm_ce_se bits."),
        ("SOLICITED", ctrl::SOLICITED, ""),
        ("INITIATOR_SMALL_FENCE", ctrl::INITIATOR_SMALL_FENCE, ""),
        ("FENCE_MODE_FENCE", ctrl::FENCE_MODE_FENCE, ""),
        ("STRONG_ORDERING", ctrl::STRONG_ORDERING, ""),
        ("FENCE", ctrl::FENCE, ""),
        ("FENCE_MASK", ctrl::FENCE_MASK, ""),
        ("CE_MASK", ctrl::CE_MASK, ""),
    ] {
        c(&format!("MLX5_CTRL_{name}"), u64::from(b), doc);
    }
    c(
        "MLX5_SHIFT_OPMOD",
        u64::from(shift::OPMOD),
        "mlx5 bit positions: opmod and WQE index in opmod_idx_opcode, QPN in qpn_ds, CQE opcode in op_own.",
    );
    c("MLX5_SHIFT_WQE_INDEX", u64::from(shift::WQE_INDEX), "");
    c("MLX5_SHIFT_QPN", u64::from(shift::QPN), "");
    c("MLX5_SHIFT_CQE_OPCODE", u64::from(shift::CQE_OPCODE), "");
    c(
        "MLX5_CQE_REQ",
        u64::from(cqe_op::REQ),
        "mlx5 CQE opcodes (op_own >> OXSHMEM_MLX5_SHIFT_CQE_OPCODE) and the owner bit.",
    );
    c("MLX5_CQE_REQ_ERR", u64::from(cqe_op::REQ_ERR), "");
    c("MLX5_CQE_RESP_ERR", u64::from(cqe_op::RESP_ERR), "");
    c("MLX5_CQE_INVALID", u64::from(cqe_op::INVALID), "");
    c("MLX5_CQE_OWNER_MASK", u64::from(mlx5::CQE_OWNER_MASK), "");
    c("MLX5_WQE_CTRL", wqe::CTRL as u64, "Where the producer puts each segment in a WQE (bytes from its first slot).");
    c("MLX5_WQE_RADDR", wqe::RADDR as u64, "");
    c("MLX5_WQE_PAYLOAD", wqe::PAYLOAD as u64, "");
    c("MLX5_WQE_INLINE_DATA", wqe::INLINE_DATA as u64, "");
    let mut first = true;
    for s in structs().into_iter().filter(|s| s.name.starts_with("oxshmem_mlx5_")) {
        let p = macro_prefix(s.name);
        let doc = if first {
            "Size and field offsets of each mlx5 segment and CQE (the structs of device_state.h)."
        } else {
            ""
        };
        first = false;
        v.push(CConst { name: format!("{p}_SIZE"), value: s.size as u64, doc });
        for f in &s.fields {
            v.push(CConst { name: format!("{p}_OFF_{}", f.name.to_uppercase()), value: f.offset as u64, doc: "" });
        }
    }
    v
}

/// The C literal of a constant (unsigned, `ULL` past 32 bits).
fn literal(v: u64) -> String {
    if v <= u64::from(u32::MAX) { format!("{v}u") } else { format!("{v}ull") }
}

/// The C declaration of a field (`uint64_t *sq`, `uint32_t dbr[2]`).
fn declaration(f: &CField) -> String {
    let sep = if f.ctype.name.ends_with('*') { "" } else { " " };
    let arr = if f.ctype.array > 0 { format!("[{}]", f.ctype.array) } else { String::new() };
    format!("{}{sep}{}{arr}", f.ctype.name, f.name)
}

/// The header, as [`HEADER_PATH`] must hold it.
pub fn header() -> String {
    let mut h = String::new();
    h.push_str(
        "/* Generated by oxshmem-device (device/src/cheader.rs) from the Rust types; do not edit.\n \
         * Regenerate: OXSHMEM_BLESS=1 cargo test -p oxshmem-device --test c_layout\n \
         *\n \
         * The device state, proxy ring and IBGDA queues exactly as the Rust side lays them out,\n \
         * for CUDA device code (and C/C++). Atomic words appear as plain uint32_t/uint64_t: use\n \
         * atomic intrinsics on them. mlx5 segment fields hold big-endian bytes. */\n\
         #ifndef OXSHMEM_DEVICE_STATE_H\n#define OXSHMEM_DEVICE_STATE_H\n\n\
         #include <stddef.h>\n#include <stdint.h>\n\n\
         #include \"device_protocol.h\"\n\n\
         #ifdef __cplusplus\n\
         #define OXSHMEM_STATIC_ASSERT(c, m) static_assert(c, m)\n\
         #define OXSHMEM_ALIGNOF(t) alignof(t)\n\
         #define OXSHMEM_ALIGNAS(n) alignas(n)\n\
         extern \"C\" {\n\
         #else\n\
         #define OXSHMEM_STATIC_ASSERT(c, m) _Static_assert(c, m)\n\
         #define OXSHMEM_ALIGNOF(t) _Alignof(t)\n\
         #define OXSHMEM_ALIGNAS(n) _Alignas(n)\n\
         #endif\n\
         #define OXSHMEM_FIELD_SIZE(t, f) sizeof(((t *)0)->f)\n",
    );
    defines(&mut h, &constants());
    for s in structs() {
        let tag = s.name.strip_suffix("_t").unwrap_or(s.name);
        let natural = s.fields.iter().map(|f| f.align).max().unwrap_or(1);
        let _ = writeln!(h, "\n/* {} (Rust: {}) */\ntypedef struct {tag} {{", s.doc, s.rust);
        let mut first = true;
        for f in s.fields.iter().filter(|f| !f.ctype.name.is_empty()) {
            let align =
                if first && s.align > natural { format!("OXSHMEM_ALIGNAS({}) ", s.align) } else { String::new() };
            first = false;
            let _ = writeln!(h, "    {align}{};", declaration(f));
        }
        let _ = writeln!(h, "}} {};", s.name);
        let n = s.name;
        let _ = writeln!(h, "OXSHMEM_STATIC_ASSERT(sizeof({n}) == {}, \"size of {n}\");", s.size);
        let _ = writeln!(h, "OXSHMEM_STATIC_ASSERT(OXSHMEM_ALIGNOF({n}) == {}, \"alignment of {n}\");", s.align);
        for f in s.fields.iter().filter(|f| !f.ctype.name.is_empty()) {
            let fname = f.name;
            let _ = writeln!(
                h,
                "OXSHMEM_STATIC_ASSERT(offsetof({n}, {fname}) == {} && OXSHMEM_FIELD_SIZE({n}, {fname}) == {}, \"{n}.{fname}\");",
                f.offset, f.size
            );
        }
    }
    h.push_str("\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* OXSHMEM_DEVICE_STATE_H */\n");
    h
}

/// Writes `#define`s of `consts`, a comment line before each that has a doc.
fn defines(h: &mut String, consts: &[CConst]) {
    for k in consts {
        if !k.doc.is_empty() {
            let _ = writeln!(h, "\n/* {} */", k.doc);
        }
        let _ = writeln!(h, "#define {} {}", k.name, literal(k.value));
    }
}

/// The protocol header, as [`PROTOCOL_HEADER_PATH`] must hold it: [`protocol_constants`] as
/// macros (no types: C, C++, CUDA and HIP code can include it anywhere).
pub fn protocol_header() -> String {
    let mut h = String::from(
        "/* Generated by oxshmem-device (device/src/cheader.rs) from the Rust definitions; do not edit.\n \
         * Regenerate: OXSHMEM_BLESS=1 cargo test -p oxshmem-device --test c_layout\n \
         *\n \
         * The numbers of the device protocols, one source for Rust and CUDA: channel ids, the\n \
         * proxy ring's kinds, flags and sizes, the IBGDA queue's limits and error word, and the\n \
         * mlx5 work-queue format (opcodes, flag bits, shifts, masks, segment places, field\n \
         * offsets). device_state.h includes it. */\n\
         #ifndef OXSHMEM_DEVICE_PROTOCOL_H\n#define OXSHMEM_DEVICE_PROTOCOL_H\n",
    );
    defines(&mut h, &protocol_constants());
    h.push_str("\n#endif /* OXSHMEM_DEVICE_PROTOCOL_H */\n");
    h
}

/// What a C program compiled against the header must print, line for line: `name size align`
/// for each struct, `name.field offset size` for each field, `NAME value` for each constant
/// (see [`c_probe`]).
pub fn expected_probe_output() -> String {
    let mut out = String::new();
    for s in structs() {
        let _ = writeln!(out, "{} {} {}", s.name, s.size, s.align);
        for f in s.fields.iter().filter(|f| !f.ctype.name.is_empty()) {
            let _ = writeln!(out, "{}.{} {} {}", s.name, f.name, f.offset, f.size);
        }
    }
    for k in constants().into_iter().chain(protocol_constants()) {
        let _ = writeln!(out, "{} {}", k.name, k.value);
    }
    out
}

/// A C program that includes the header and prints, from the C compiler's own view, what
/// [`expected_probe_output`] says Rust sees.
pub fn c_probe() -> String {
    let mut p = String::from("#include <stdio.h>\n#include \"oxshmem/device_state.h\"\n\nint main(void) {\n");
    for s in structs() {
        let n = s.name;
        let _ = writeln!(p, "    printf(\"{n} %zu %zu\\n\", sizeof({n}), (size_t)OXSHMEM_ALIGNOF({n}));");
        for f in s.fields.iter().filter(|f| !f.ctype.name.is_empty()) {
            let fname = f.name;
            let _ = writeln!(
                p,
                "    printf(\"{n}.{fname} %zu %zu\\n\", offsetof({n}, {fname}), OXSHMEM_FIELD_SIZE({n}, {fname}));"
            );
        }
    }
    for k in constants().into_iter().chain(protocol_constants()) {
        let _ = writeln!(p, "    printf(\"{0} %llu\\n\", (unsigned long long)({0}));", k.name);
    }
    p.push_str("    return 0;\n}\n");
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_inside_its_struct_in_order_and_typed_to_size() {
        let mut sizes: std::collections::HashMap<&str, usize> =
            [("uint8_t", 1), ("uint16_t", 2), ("uint32_t", 4), ("uint64_t", 8), ("int64_t", 8)].into_iter().collect();
        for s in structs() {
            let mut end = 0;
            for f in &s.fields {
                assert!(f.offset >= end, "{}.{} overlaps the field before it", s.name, f.name);
                end = f.offset + f.size;
                let c = if f.ctype.name.is_empty() {
                    0
                } else if f.ctype.name.ends_with('*') {
                    size_of::<usize>()
                } else {
                    *sizes.get(f.ctype.name).unwrap_or_else(|| panic!("{}.{}: unknown C type", s.name, f.name))
                };
                assert_eq!(c * f.ctype.array.max(1), f.size, "{}.{}: the C type's size", s.name, f.name);
            }
            assert!(end <= s.size, "{} ends past its size", s.name);
            sizes.insert(s.name, s.size);
        }
    }

    #[test]
    fn every_macro_name_is_unique_across_both_headers() {
        let mut seen = std::collections::HashSet::new();
        for k in constants().into_iter().chain(protocol_constants()) {
            assert!(seen.insert(k.name.clone()), "{} is defined twice", k.name);
        }
    }

    #[test]
    fn a_ring_slot_is_one_line() {
        assert_eq!(size_of::<Slot<Request>>(), 64);
    }
}
