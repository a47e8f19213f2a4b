//! The hns layouts, field by field, against rdma-core's `providers/hns/hns_roce_u_hw_v2.h`
//! (and `hns_roce_u.h` for the sizes): `struct hns_roce_rc_sq_wqe` with its `RCWQE_*` field
//! locations, `struct hns_roce_v2_wqe_data_seg`, `struct hns_roce_wqe_atomic_seg`,
//! `struct hns_roce_v2_cqe` with `CQE_*`, `struct hns_roce_db` with `DB_*`, the
//! `HNS_ROCE_WQE_OP_*` opcodes, the `HNS_ROCE_V2_CQE_*` status codes and `HNS_ROCE_V2_SQ_DB`.
//!
//! Those provider headers are rdma-core's internals (no distribution installs them), so there
//! is no C probe as for mlx5dv.h (`tests/mlx5_layout.rs`): the definitions are transcribed
//! below — `FIELD_LOC(h, l)` bit ranges of the current header, and the `_S`/`_M` shift and
//! mask macros of older releases, which name the same bits — and
//! - every Rust constant is checked against the transcription;
//! - every field the encoder writes is checked on its own: one field of a request set to a
//!   distinctive value changes exactly the bits of the transcribed range(s), which then read
//!   that value; bits are located from the transcription alone (bit `n` of a little-endian
//!   structure is bit `n % 8` of byte `n / 8`), not through the Rust `Field` helper.

use std::mem::{offset_of, size_of};

use oxshmem_device::ibgda::hns::{self, AtomicSeg, Cqe, DataSeg, Db, Field, Hns, RcSqWqe, db_cmd, opcode, status};
use oxshmem_device::ibgda::layout::{Completion, Failure, NicAtomic, NicLayout, Remote, Sge, WorkRequest, WqeFlags};

/// `RCWQE_FIELD_LOC(h, l)` (struct hns_roce_rc_sq_wqe plus its two data segments), as the
/// header defines them.
const RCWQE: &[(&str, u32, u32)] = &[
    ("RCWQE_OPCODE", 4, 0),
    ("RCWQE_DB_SL_L", 6, 5),
    ("RCWQE_OWNER", 7, 7),
    ("RCWQE_CQE", 8, 8),
    ("RCWQE_FENCE", 9, 9),
    ("RCWQE_SO", 10, 10),
    ("RCWQE_SE", 11, 11),
    ("RCWQE_INLINE", 12, 12),
    ("RCWQE_DB_SL_H", 14, 13),
    ("RCWQE_WQE_IDX", 30, 15),
    ("RCWQE_FLAG", 31, 31),
    ("RCWQE_MSG_LEN", 63, 32),
    ("RCWQE_INV_KEY_IMMTDATA", 95, 64),
    ("RCWQE_XRC_SRQN", 119, 96),
    ("RCWQE_SGE_NUM", 127, 120),
    ("RCWQE_MSG_START_SGE_IDX", 151, 128),
    ("RCWQE_REDUCE_CODE", 158, 152),
    ("RCWQE_INLINE_TYPE", 159, 159),
    ("RCWQE_RKEY", 191, 160),
    ("RCWQE_VA_L", 223, 192),
    ("RCWQE_VA_H", 255, 224),
    ("RCWQE_LEN0", 287, 256),
    ("RCWQE_LKEY0", 319, 288),
    ("RCWQE_VA0_L", 351, 320),
    ("RCWQE_VA0_H", 383, 352),
    ("RCWQE_LEN1", 415, 384),
    ("RCWQE_LKEY1", 447, 416),
    ("RCWQE_VA1_L", 479, 448),
    ("RCWQE_VA1_H", 511, 480),
];

/// `CQE_FIELD_LOC(h, l)` (struct hns_roce_v2_cqe).
const CQE: &[(&str, u32, u32)] = &[
    ("CQE_OPCODE", 4, 0),
    ("CQE_RQ_INLINE", 5, 5),
    ("CQE_S_R", 6, 6),
    ("CQE_OWNER", 7, 7),
    ("CQE_STATUS", 15, 8),
    ("CQE_WQE_IDX", 31, 16),
    ("CQE_RKEY_IMMTDATA", 63, 32),
    ("CQE_XRC_SRQN", 87, 64),
    ("CQE_CQE_INLINE", 89, 88),
    ("CQE_LCL_QPN", 119, 96),
    ("CQE_SUB_STATUS", 127, 120),
    ("CQE_BYTE_CNT", 159, 128),
    ("CQE_RMT_QPN", 247, 224),
];

/// `DB_FIELD_LOC(h, l)` (struct hns_roce_db).
const DB: &[(&str, u32, u32)] =
    &[("DB_TAG", 23, 0), ("DB_CMD", 27, 24), ("DB_FLAG", 31, 31), ("DB_PI", 47, 32), ("DB_SL", 50, 48)];

/// The older header's shift/mask macros: (name, the `__le32` member's byte offset, shift,
/// mask), and the field location they name in the current header.
const SHIFT_MASK: &[(&str, usize, u32, u32, &str)] = &[
    ("RC_SQ_WQE_BYTE_4_OPCODE", 0, 0, 0x1f, "RCWQE_OPCODE"),
    ("RC_SQ_WQE_BYTE_4_OWNER", 0, 7, 1 << 7, "RCWQE_OWNER"),
    ("RC_SQ_WQE_BYTE_4_CQE", 0, 8, 1 << 8, "RCWQE_CQE"),
    ("RC_SQ_WQE_BYTE_4_FENCE", 0, 9, 1 << 9, "RCWQE_FENCE"),
    ("RC_SQ_WQE_BYTE_4_SO", 0, 10, 1 << 10, "RCWQE_SO"),
    ("RC_SQ_WQE_BYTE_4_SE", 0, 11, 1 << 11, "RCWQE_SE"),
    ("RC_SQ_WQE_BYTE_4_INLINE", 0, 12, 1 << 12, "RCWQE_INLINE"),
    ("RC_SQ_WQE_BYTE_16_XRC_SRQN", 12, 0, (1 << 24) - 1, "RCWQE_XRC_SRQN"),
    ("RC_SQ_WQE_BYTE_16_SGE_NUM", 12, 24, 0xff << 24, "RCWQE_SGE_NUM"),
    ("RC_SQ_WQE_BYTE_20_MSG_START_SGE_IDX", 16, 0, (1 << 24) - 1, "RCWQE_MSG_START_SGE_IDX"),
    ("CQE_BYTE_4_OPCODE", 0, 0, 0x1f, "CQE_OPCODE"),
    ("CQE_BYTE_4_RQ_INLINE", 0, 5, 1 << 5, "CQE_RQ_INLINE"),
    ("CQE_BYTE_4_S_R", 0, 6, 1 << 6, "CQE_S_R"),
    ("CQE_BYTE_4_OWNER", 0, 7, 1 << 7, "CQE_OWNER"),
    ("CQE_BYTE_4_STATUS", 0, 8, 0xff << 8, "CQE_STATUS"),
    ("CQE_BYTE_4_WQE_IDX", 0, 16, 0xffff << 16, "CQE_WQE_IDX"),
    ("CQE_BYTE_12_XRC_SRQN", 8, 0, (1 << 24) - 1, "CQE_XRC_SRQN"),
    ("CQE_BYTE_16_LCL_QPN", 12, 0, (1 << 24) - 1, "CQE_LCL_QPN"),
    ("CQE_BYTE_32_RMT_QPN", 28, 0, (1 << 24) - 1, "CQE_RMT_QPN"),
    ("DB_BYTE_4_CMD", 0, 24, 0xf << 24, "DB_CMD"),
    ("DB_PARAM_SQ_PRODUCER_IDX", 4, 0, 0xffff, "DB_PI"),
    ("DB_PARAM_SL", 4, 16, 0x7 << 16, "DB_SL"),
];

/// Every Rust field constant, by its header name.
fn rust_fields() -> Vec<(&'static str, Field)> {
    vec![
        ("RCWQE_OPCODE", hns::RCWQE_OPCODE),
        ("RCWQE_DB_SL_L", hns::RCWQE_DB_SL_L),
        ("RCWQE_OWNER", hns::RCWQE_OWNER),
        ("RCWQE_CQE", hns::RCWQE_CQE),
        ("RCWQE_FENCE", hns::RCWQE_FENCE),
        ("RCWQE_SO", hns::RCWQE_SO),
        ("RCWQE_SE", hns::RCWQE_SE),
        ("RCWQE_INLINE", hns::RCWQE_INLINE),
        ("RCWQE_DB_SL_H", hns::RCWQE_DB_SL_H),
        ("RCWQE_WQE_IDX", hns::RCWQE_WQE_IDX),
        ("RCWQE_FLAG", hns::RCWQE_FLAG),
        ("RCWQE_MSG_LEN", hns::RCWQE_MSG_LEN),
        ("RCWQE_INV_KEY_IMMTDATA", hns::RCWQE_INV_KEY_IMMTDATA),
        ("RCWQE_XRC_SRQN", hns::RCWQE_XRC_SRQN),
        ("RCWQE_SGE_NUM", hns::RCWQE_SGE_NUM),
        ("RCWQE_MSG_START_SGE_IDX", hns::RCWQE_MSG_START_SGE_IDX),
        ("RCWQE_REDUCE_CODE", hns::RCWQE_REDUCE_CODE),
        ("RCWQE_INLINE_TYPE", hns::RCWQE_INLINE_TYPE),
        ("RCWQE_RKEY", hns::RCWQE_RKEY),
        ("RCWQE_VA_L", hns::RCWQE_VA_L),
        ("RCWQE_VA_H", hns::RCWQE_VA_H),
        ("RCWQE_LEN0", hns::RCWQE_LEN0),
        ("RCWQE_LKEY0", hns::RCWQE_LKEY0),
        ("RCWQE_VA0_L", hns::RCWQE_VA0_L),
        ("RCWQE_VA0_H", hns::RCWQE_VA0_H),
        ("RCWQE_LEN1", hns::RCWQE_LEN1),
        ("RCWQE_LKEY1", hns::RCWQE_LKEY1),
        ("RCWQE_VA1_L", hns::RCWQE_VA1_L),
        ("RCWQE_VA1_H", hns::RCWQE_VA1_H),
        ("CQE_OPCODE", hns::CQE_OPCODE),
        ("CQE_RQ_INLINE", hns::CQE_RQ_INLINE),
        ("CQE_S_R", hns::CQE_S_R),
        ("CQE_OWNER", hns::CQE_OWNER),
        ("CQE_STATUS", hns::CQE_STATUS),
        ("CQE_WQE_IDX", hns::CQE_WQE_IDX),
        ("CQE_RKEY_IMMTDATA", hns::CQE_RKEY_IMMTDATA),
        ("CQE_XRC_SRQN", hns::CQE_XRC_SRQN),
        ("CQE_CQE_INLINE", hns::CQE_CQE_INLINE),
        ("CQE_LCL_QPN", hns::CQE_LCL_QPN),
        ("CQE_SUB_STATUS", hns::CQE_SUB_STATUS),
        ("CQE_BYTE_CNT", hns::CQE_BYTE_CNT),
        ("CQE_RMT_QPN", hns::CQE_RMT_QPN),
        ("DB_TAG", hns::DB_TAG),
        ("DB_CMD", hns::DB_CMD),
        ("DB_FLAG", hns::DB_FLAG),
        ("DB_PI", hns::DB_PI),
        ("DB_SL", hns::DB_SL),
    ]
}

/// The transcribed location of `name`.
fn loc(name: &str) -> (u32, u32) {
    RCWQE.iter().chain(CQE).chain(DB).find(|e| e.0 == name).map(|e| (e.1, e.2)).unwrap_or_else(|| panic!("{name}"))
}

/// Bits `l..=h` of little-endian bytes `b`, located from the bit numbers alone.
fn bits(b: &[u8], h: u32, l: u32) -> u64 {
    (l..=h).rev().fold(0u64, |v, n| v << 1 | u64::from(b[(n / 8) as usize] >> (n % 8) & 1))
}

/// The bit numbers where `a` and `b` differ.
fn diff(a: &[u8], b: &[u8]) -> Vec<u32> {
    (0..a.len() as u32 * 8).filter(|&n| (a[(n / 8) as usize] ^ b[(n / 8) as usize]) >> (n % 8) & 1 == 1).collect()
}

/// Asserts that `changed` lies within the ranges `fields` (of the transcription) and that each
/// range reads its expected value in `b`.
fn only_in(what: &str, changed: &[u32], b: &[u8], fields: &[(&str, u64)]) {
    assert!(!changed.is_empty(), "{what}: nothing changed");
    for &n in changed {
        assert!(
            fields.iter().any(|&(f, _)| {
                let (h, l) = loc(f);
                (l..=h).contains(&n)
            }),
            "{what}: bit {n} changed, outside {:?}",
            fields.iter().map(|f| f.0).collect::<Vec<_>>()
        );
    }
    for &(f, want) in fields {
        let (h, l) = loc(f);
        assert_eq!(bits(b, h, l), want, "{what}: {f} (bits {h}..{l})");
    }
}

#[test]
fn field_constants_match_the_header() {
    let rust = rust_fields();
    assert_eq!(rust.len(), RCWQE.len() + CQE.len() + DB.len(), "every transcribed field has a constant");
    for (name, f) in &rust {
        let (h, l) = loc(name);
        assert_eq!((f.h, f.l), (h, l), "{name}");
        // As the header's FIELD_LOC asserts: within one 32-bit word.
        assert_eq!(h / 32, l / 32, "{name} crosses a word");
    }
    // The older shift/mask macros name the same bits.
    for &(name, member, shift, mask, now) in SHIFT_MASK {
        let (h, l) = loc(now);
        assert_eq!(l, member as u32 * 8 + shift, "{name}_S vs {now}");
        assert_eq!(mask, (u32::MAX >> (31 - (h - l))) << shift, "{name}_M vs {now}");
    }
    // One difference: the older DB_BYTE_4_TAG_M is 23 bits wide, the current DB_TAG 24 (we
    // follow the current header; QP numbers here are below 2^23 either way).
    let old_tag_mask = (1u32 << 23) - 1;
    assert_eq!(hns::DB_TAG.mask() & old_tag_mask, old_tag_mask);
}

#[test]
fn structures_match_the_header() {
    // struct hns_roce_rc_sq_wqe.
    assert_eq!(size_of::<RcSqWqe>(), 32);
    assert_eq!(
        [
            offset_of!(RcSqWqe, byte_4),
            offset_of!(RcSqWqe, msg_len),
            offset_of!(RcSqWqe, inv_key),
            offset_of!(RcSqWqe, byte_16),
            offset_of!(RcSqWqe, byte_20),
            offset_of!(RcSqWqe, rkey),
            offset_of!(RcSqWqe, va)
        ],
        [0, 4, 8, 12, 16, 20, 24]
    );
    // struct hns_roce_v2_wqe_data_seg.
    assert_eq!(size_of::<DataSeg>(), 16);
    assert_eq!([offset_of!(DataSeg, len), offset_of!(DataSeg, lkey), offset_of!(DataSeg, addr)], [0, 4, 8]);
    // struct hns_roce_wqe_atomic_seg.
    assert_eq!(size_of::<AtomicSeg>(), 16);
    assert_eq!([offset_of!(AtomicSeg, fetchadd_swap_data), offset_of!(AtomicSeg, cmp_data)], [0, 8]);
    // struct hns_roce_v2_cqe (with payload[8]: 64 bytes).
    assert_eq!(size_of::<Cqe>(), 64);
    assert_eq!(
        [
            offset_of!(Cqe, byte_4),
            offset_of!(Cqe, rkey),
            offset_of!(Cqe, byte_12),
            offset_of!(Cqe, byte_16),
            offset_of!(Cqe, byte_cnt),
            offset_of!(Cqe, smac),
            offset_of!(Cqe, byte_28),
            offset_of!(Cqe, byte_32),
            offset_of!(Cqe, payload)
        ],
        [0, 4, 8, 12, 16, 20, 24, 28, 32]
    );
    // struct hns_roce_db.
    assert_eq!((size_of::<Db>(), offset_of!(Db, byte_4), offset_of!(Db, parameter)), (8, 0, 4));
    // The field locations agree with the members: RCWQE_MSG_LEN is msg_len, RCWQE_RKEY is
    // rkey, RCWQE_VA_L/H is va, RCWQE_LEN0.. is the first data segment after the header.
    assert_eq!(loc("RCWQE_MSG_LEN").1 / 8, offset_of!(RcSqWqe, msg_len) as u32);
    assert_eq!(loc("RCWQE_RKEY").1 / 8, offset_of!(RcSqWqe, rkey) as u32);
    assert_eq!(loc("RCWQE_VA_L").1 / 8, offset_of!(RcSqWqe, va) as u32);
    assert_eq!(loc("RCWQE_LEN0").1 / 8, size_of::<RcSqWqe>() as u32);
    assert_eq!(loc("RCWQE_LEN1").1 / 8, (size_of::<RcSqWqe>() + size_of::<DataSeg>()) as u32);
    assert_eq!(loc("CQE_LCL_QPN").1 / 8, offset_of!(Cqe, byte_16) as u32);
    assert_eq!(loc("DB_PI").1 / 8, offset_of!(Db, parameter) as u32);
}

#[test]
fn constants_match_the_header() {
    // HNS_ROCE_WQE_OP_* (and the kernel's HNS_ROCE_V2_WQE_OP_NOP).
    let ops = [
        (opcode::SEND, 0x0),
        (opcode::SEND_WITH_INV, 0x1),
        (opcode::SEND_WITH_IMM, 0x2),
        (opcode::RDMA_WRITE, 0x3),
        (opcode::RDMA_WRITE_WITH_IMM, 0x4),
        (opcode::RDMA_READ, 0x5),
        (opcode::ATOMIC_COM_AND_SWAP, 0x6),
        (opcode::ATOMIC_FETCH_AND_ADD, 0x7),
        (opcode::ATOMIC_MASK_COMP_AND_SWAP, 0x8),
        (opcode::ATOMIC_MASK_FETCH_AND_ADD, 0x9),
        (opcode::FAST_REG_PMR, 0xa),
        (opcode::LOCAL_INV, 0xb),
        (opcode::BIND_MW_TYPE, 0xc),
        (opcode::NOP, 0x13),
        (opcode::MASK, 0x1f),
    ];
    for (rust, c) in ops {
        assert_eq!(rust, c, "{}", opcode::name(rust));
    }
    // HNS_ROCE_V2_CQE_*.
    let st = [
        (status::SUCCESS, 0x00),
        (status::LOCAL_LENGTH_ERR, 0x01),
        (status::LOCAL_QP_OP_ERR, 0x02),
        (status::LOCAL_PROT_ERR, 0x04),
        (status::WR_FLUSH_ERR, 0x05),
        (status::MEM_MANAGERENT_OP_ERR, 0x06),
        (status::BAD_RESP_ERR, 0x10),
        (status::LOCAL_ACCESS_ERR, 0x11),
        (status::REMOTE_INVAL_REQ_ERR, 0x12),
        (status::REMOTE_ACCESS_ERR, 0x13),
        (status::REMOTE_OP_ERR, 0x14),
        (status::TRANSPORT_RETRY_EXC_ERR, 0x15),
        (status::RNR_RETRY_EXC_ERR, 0x16),
        (status::REMOTE_ABORTED_ERR, 0x22),
        (status::GENERAL_ERR, 0x23),
        (status::XRC_VIOLATION_ERR, 0x24),
    ];
    for (rust, c) in st {
        assert_eq!(rust, c, "{}", status::name(rust));
        assert!(!status::name(rust).starts_with("unknown"));
    }
    // The enum HNS_ROCE_V2_SQ_DB, HNS_ROCE_V2_RQ_DB, ...
    assert_eq!([db_cmd::SQ_DB, db_cmd::RQ_DB, db_cmd::SRQ_DB, db_cmd::CQ_DB_PTR, db_cmd::CQ_DB_NTR], [0, 1, 2, 3, 4]);
    // hns_roce_u.h: HNS_ROCE_SQWQE_SHIFT 6, HNS_ROCE_SGE_SIZE 16, HNS_ROCE_SGE_IN_WQE 2,
    // HNS_ROCE_MAX_RC_INL_INN_SZ 32, HNS_ROCE_V3_CQE_SIZE 0x40.
    assert_eq!(
        (hns::SQ_WQE_SIZE, hns::SGE_SIZE, hns::SGE_IN_WQE, hns::MAX_RC_INL_INN_SZ, hns::CQE_SIZE),
        (1 << 6, 16, 2, 32, 0x40)
    );
    assert_eq!((Hns::MAX_INLINE, Hns::CQE_VALID_WORD), (32, 0));
    // The syndromes the software NIC reports, as hns statuses.
    assert_eq!(
        [
            Hns::syndrome(Failure::LocalLength),
            Hns::syndrome(Failure::LocalQpOp),
            Hns::syndrome(Failure::LocalProt),
            Hns::syndrome(Failure::RemoteAccess),
            Hns::syndrome(Failure::RemoteOp)
        ],
        [0x01, 0x02, 0x04, 0x13, 0x14]
    );
}

const NWQES: u64 = 64;
const IDX: u64 = 3;

fn wqe(wr: &WorkRequest<'_>, idx: u64, qpn: u32, flags: WqeFlags) -> [u8; 64] {
    let mut s = [[0xa5u8; 64]; 1];
    Hns::encode(wr, idx, NWQES, qpn, flags, &mut s);
    s[0]
}

/// Each field of an RDMA write, on its own.
#[test]
fn write_fields_one_by_one() {
    let l = Sge { addr: 0x0000_1111_2222_3330, len: 0x40, lkey: 0x0101 };
    let r = Remote { addr: 0x0000_4444_5555_6660, rkey: 0x0202 };
    let base_wr = WorkRequest::Write { local: l, remote: r };
    let f0 = WqeFlags::default();
    let base = wqe(&base_wr, IDX, 1, f0);
    // The baseline itself: opcode RDMA_WRITE, owner 1 (lap 0), one SGE, the lengths, keys and
    // addresses — and nothing else.
    only_in(
        "baseline write",
        &diff(&[0; 64], &base),
        &base,
        &[
            ("RCWQE_OPCODE", 3),
            ("RCWQE_OWNER", 1),
            ("RCWQE_MSG_LEN", 0x40),
            ("RCWQE_SGE_NUM", 1),
            ("RCWQE_RKEY", 0x0202),
            ("RCWQE_VA_L", 0x5555_6660),
            ("RCWQE_VA_H", 0x4444),
            ("RCWQE_LEN0", 0x40),
            ("RCWQE_LKEY0", 0x0101),
            ("RCWQE_VA0_L", 0x2222_3330),
            ("RCWQE_VA0_H", 0x1111),
        ],
    );
    let one = |what: &str, wr: WorkRequest<'_>, idx: u64, flags: WqeFlags, fields: &[(&str, u64)]| {
        let w = wqe(&wr, idx, 1, flags);
        only_in(what, &diff(&base, &w), &w, fields);
    };
    let l2 = |f: &dyn Fn(&mut Sge)| {
        let mut s = l;
        f(&mut s);
        WorkRequest::Write { local: s, remote: r }
    };
    let r2 = |f: &dyn Fn(&mut Remote)| {
        let mut x = r;
        f(&mut x);
        WorkRequest::Write { local: l, remote: x }
    };
    one(
        "local.len",
        l2(&|s| s.len = 0xdead_beef),
        IDX,
        f0,
        &[("RCWQE_MSG_LEN", 0xdead_beef), ("RCWQE_LEN0", 0xdead_beef)],
    );
    one("local.lkey", l2(&|s| s.lkey = 0xcafe_f00d), IDX, f0, &[("RCWQE_LKEY0", 0xcafe_f00d)]);
    one(
        "local.addr",
        l2(&|s| s.addr = 0xfedc_ba98_7654_3210),
        IDX,
        f0,
        &[("RCWQE_VA0_L", 0x7654_3210), ("RCWQE_VA0_H", 0xfedc_ba98)],
    );
    one("remote.rkey", r2(&|x| x.rkey = 0x8765_4321), IDX, f0, &[("RCWQE_RKEY", 0x8765_4321)]);
    one(
        "remote.addr",
        r2(&|x| x.addr = 0x8000_0001_0000_0002),
        IDX,
        f0,
        &[("RCWQE_VA_L", 2), ("RCWQE_VA_H", 0x8000_0001)],
    );
    one("signal", base_wr, IDX, WqeFlags { signal: true, fence: false }, &[("RCWQE_CQE", 1)]);
    one("fence", base_wr, IDX, WqeFlags { signal: false, fence: true }, &[("RCWQE_FENCE", 1)]);
    // The next lap: only the owner bit (the WQE carries no index).
    one("idx + nwqes", base_wr, IDX + NWQES, f0, &[("RCWQE_OWNER", 0)]);
    assert_eq!(wqe(&base_wr, IDX + 1, 1, f0), base, "another index of the same lap");
    assert_eq!(wqe(&base_wr, IDX + 2 * NWQES, 1, f0), base, "two laps on");
    // The QP number is not in the WQE (the doorbell carries it).
    assert_eq!(wqe(&base_wr, IDX, 0x00ab_cdef, f0), base, "QP number");
    // A read: the opcode only.
    one("read", WorkRequest::Read { local: l, remote: r }, IDX, f0, &[("RCWQE_OPCODE", 5)]);
}

/// Inline writes: the inline bit, the message length, the SGE count, and the payload in the
/// bytes of the data segments (`set_rc_inl`, inline type 0).
#[test]
fn inline_fields() {
    let r = Remote { addr: 0x1000, rkey: 0x77 };
    let payload: Vec<u8> = (0..32u8).map(|i| 0xc0 ^ i).collect();
    for len in [0usize, 1, 7, 16, 31, 32] {
        let w = wqe(&WorkRequest::WriteInline { data: &payload[..len], remote: r }, IDX, 9, WqeFlags::default());
        let mut fields = vec![
            ("RCWQE_OPCODE", 3),
            ("RCWQE_OWNER", 1),
            ("RCWQE_INLINE", 1),
            ("RCWQE_INLINE_TYPE", 0),
            ("RCWQE_MSG_LEN", len as u64),
            ("RCWQE_SGE_NUM", u64::from(len > 0)),
            ("RCWQE_RKEY", 0x77),
            ("RCWQE_VA_L", 0x1000),
        ];
        // The payload's bytes, in the data segments' place.
        let (seg_l, seg_names) = (loc("RCWQE_LEN0").1, ["RCWQE_LEN0", "RCWQE_LKEY0", "RCWQE_VA0_L", "RCWQE_VA0_H"]);
        let seg_names: Vec<&str> =
            seg_names.iter().copied().chain(["RCWQE_LEN1", "RCWQE_LKEY1", "RCWQE_VA1_L", "RCWQE_VA1_H"]).collect();
        for (k, name) in seg_names.iter().enumerate() {
            let mut word = [0u8; 4];
            for (j, b) in word.iter_mut().enumerate() {
                let i = k * 4 + j;
                *b = if i < len { payload[i] } else { 0 };
            }
            fields.push((name, u64::from(u32::from_le_bytes(word))));
        }
        assert_eq!(seg_l, 256);
        only_in(&format!("inline {len}"), &diff(&[0; 64], &w), &w, &fields);
    }
}

/// Atomics (`set_atomic_seg`): the result's data segment (8 bytes), then the operands in the
/// second segment's place: `fetchadd_swap_data` (the swap value, or the addend), `cmp_data`.
#[test]
fn atomic_fields() {
    let r = Remote { addr: 0x2000, rkey: 0x31 };
    let res = Sge { addr: 0x3000, len: 8, lkey: 0x41 };
    let cs = |swap: u64, compare: u64| WorkRequest::Atomic {
        op: NicAtomic::CompareSwap { swap, compare, swap_mask: u64::MAX, compare_mask: u64::MAX },
        width: 8,
        remote: r,
        result: res,
    };
    let fa = |add: u64| WorkRequest::Atomic {
        op: NicAtomic::FetchAdd { add, boundary: 0 },
        width: 8,
        remote: r,
        result: res,
    };
    let f0 = WqeFlags::default();
    let base = wqe(&cs(0, 0), IDX, 1, f0);
    only_in(
        "baseline CAS",
        &diff(&[0; 64], &base),
        &base,
        &[
            ("RCWQE_OPCODE", 6),
            ("RCWQE_OWNER", 1),
            ("RCWQE_MSG_LEN", 8),
            ("RCWQE_SGE_NUM", 1),
            ("RCWQE_RKEY", 0x31),
            ("RCWQE_VA_L", 0x2000),
            ("RCWQE_LEN0", 8),
            ("RCWQE_LKEY0", 0x41),
            ("RCWQE_VA0_L", 0x3000),
        ],
    );
    let w = wqe(&cs(0x0123_4567_89ab_cdef, 0), IDX, 1, f0);
    only_in("CAS swap", &diff(&base, &w), &w, &[("RCWQE_LEN1", 0x89ab_cdef), ("RCWQE_LKEY1", 0x0123_4567)]);
    let w = wqe(&cs(0, 0xfeed_face_dead_beef), IDX, 1, f0);
    only_in("CAS compare", &diff(&base, &w), &w, &[("RCWQE_VA1_L", 0xdead_beef), ("RCWQE_VA1_H", 0xfeed_face)]);
    let w = wqe(&fa(0), IDX, 1, f0);
    only_in("FAA opcode", &diff(&base, &w), &w, &[("RCWQE_OPCODE", 7)]);
    let base = w;
    let w = wqe(&fa(0x1122_3344_5566_7788), IDX, 1, f0);
    only_in("FAA add", &diff(&base, &w), &w, &[("RCWQE_LEN1", 0x5566_7788), ("RCWQE_LKEY1", 0x1122_3344)]);
    // As the segment structures say.
    assert_eq!(loc("RCWQE_LEN1").1 / 8, 48);
    assert_eq!(offset_of!(AtomicSeg, cmp_data), 8);
}

/// NOP (the kernel's opcode 0x13) and what hns cannot express (opcode MASK, nothing else).
#[test]
fn nop_and_refused_fields() {
    let w = wqe(&WorkRequest::Nop, IDX, 1, WqeFlags { signal: true, fence: false });
    only_in("NOP", &diff(&[0; 64], &w), &w, &[("RCWQE_OPCODE", 0x13), ("RCWQE_OWNER", 1), ("RCWQE_CQE", 1)]);
    let r = Remote { addr: 0x2000, rkey: 0x31 };
    let res = Sge { addr: 0x3000, len: 8, lkey: 0x41 };
    let xor = NicAtomic::FetchAdd { add: 5, boundary: u64::MAX };
    for wr in [
        WorkRequest::Atomic { op: xor, width: 8, remote: r, result: res },
        WorkRequest::Atomic { op: NicAtomic::FetchAdd { add: 1, boundary: 0 }, width: 4, remote: r, result: res },
        WorkRequest::Dump { local: res },
        WorkRequest::WriteInline { data: &[0; 33], remote: r },
    ] {
        assert!(!Hns::supports(&wr), "{wr:?}");
        let w = wqe(&wr, IDX + NWQES, 1, WqeFlags { signal: false, fence: true });
        only_in(&format!("{wr:?}"), &diff(&[0; 64], &w), &w, &[("RCWQE_OPCODE", 0x1f), ("RCWQE_FENCE", 1)]);
    }
}

/// The doorbell (`hns_roce_update_sq_db`): tag = QPN, command = HNS_ROCE_V2_SQ_DB, PI = the
/// head's low 16 bits, SL 0; the SQ record doorbell: the head's low 16 bits, little-endian.
#[test]
fn doorbell_fields() {
    let db = |prod: u64, qpn: u32| Hns::doorbell(prod, qpn).to_ne_bytes();
    let base = db(0, 0);
    assert_eq!(base, [0; 8], "SQ_DB is command 0");
    let d = db(0x1_abcd, 0);
    only_in("prod", &diff(&base, &d), &d, &[("DB_PI", 0xabcd)]);
    let d = db(0, 0x00fe_dcba);
    only_in("qpn", &diff(&base, &d), &d, &[("DB_TAG", 0x00fe_dcba)]);
    for prod in [0u64, 1, 0xffff, 0x1_0005, u64::MAX] {
        assert_eq!(Hns::dbr_value(prod).to_ne_bytes(), [prod as u8, (prod >> 8) as u8, 0, 0], "record of {prod:#x}");
        assert_eq!(Hns::dbr_prod(Hns::dbr_value(prod)), prod as u16);
    }
}

/// Completion entries: index, owner (inverted lap parity), status, opcode, QP number; an entry
/// with nothing for the send queue is a receive-queue one (S_R).
#[test]
fn cqe_fields() {
    let e = |c: Completion, qpn: u32| Hns::encode_cqe(c, qpn);
    let none = e(Completion::None, 5);
    only_in("None", &diff(&[0; 64], &none), &none, &[("CQE_S_R", 1)]);
    let ok = |wqe_counter: u16, owner: u8, qpn: u32| e(Completion::Ok { wqe_counter, owner }, qpn);
    // Lap 0 (owner 0, NIC-neutral): the hardware's owner bit is set.
    let base = ok(0, 0, 0);
    only_in("Ok", &diff(&[0; 64], &base), &base, &[("CQE_OWNER", 1)]);
    let w = ok(0xbeef, 0, 0);
    only_in("wqe_counter", &diff(&base, &w), &w, &[("CQE_WQE_IDX", 0xbeef)]);
    let w = ok(0, 1, 0);
    only_in("owner 1", &diff(&base, &w), &w, &[("CQE_OWNER", 0)]);
    let w = ok(0, 0, 0x00ab_cdef);
    only_in("qpn", &diff(&base, &w), &w, &[("CQE_LCL_QPN", 0x00ab_cdef)]);
    let err = |syndrome: u8, opcode: u8| e(Completion::Err { wqe_counter: 0, owner: 0, syndrome, opcode }, 0);
    let w = err(0x13, 0);
    only_in("status", &diff(&base, &w), &w, &[("CQE_STATUS", 0x13)]);
    let base = w;
    let w = err(0x13, 0x07);
    only_in("opcode", &diff(&base, &w), &w, &[("CQE_OPCODE", 0x07)]);
    for c in [
        Completion::None,
        Completion::Ok { wqe_counter: 0xfffe, owner: 1 },
        Completion::Ok { wqe_counter: 3, owner: 0 },
        Completion::Err { wqe_counter: 17, owner: 0, syndrome: status::REMOTE_ACCESS_ERR, opcode: opcode::RDMA_READ },
    ] {
        assert_eq!(Hns::decode_cqe(&e(c, 0x42)), c);
    }
    // An all-zero entry (fresh hardware memory) is a success of the odd lap: not new on lap 0.
    assert_eq!(Hns::decode_cqe(&[0; 64]), Completion::Ok { wqe_counter: 0, owner: 1 });
}
