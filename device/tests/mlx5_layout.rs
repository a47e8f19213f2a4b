//! Layouts are checked byte for byte against rdma-core's `infiniband/mlx5dv.h` (Debian
//! libibverbs-dev, installed here).
//!
//! The test writes a C program that includes the header and prints, one `name value` per line,
//! the size, alignment and every field offset of the send-WQE segments and of the send-side
//! CQE, every constant the Rust side mirrors (opcodes, control flags, CQE opcodes, every
//! `MLX5_CQE_SYNDROME_*` the header defines), and the bytes that `mlx5dv_set_ctrl_seg`,
//! `mlx5dv_set_data_seg` and hand-filled header structs produce for several argument sets;
//! each value is compared with `core::mem::offset_of!`/`size_of` on the `#[repr(C)]` types of
//! `oxshmem_device::ibgda::mlx5`, its constants, and the bytes `CtrlSeg::new`, `DataSeg` and
//! `Mlx5::encode`/`encode_cqe` write. The masked-atomic segments are not in mlx5dv.h: they are
//! checked against the table of the design reference (`docs/ibgda.md`, section 3).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::mem::{align_of, offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use bytemuck::bytes_of;
use oxshmem_device::ibgda::layout::{Completion, Mlx5, NicAtomic, NicLayout, Remote, Sge, WorkRequest, WqeFlags};
use oxshmem_device::ibgda::mlx5::{
    self, AtomicSeg, Be32, Be64, Cqe64, CtrlSeg, DataSeg, ErrCqe, InlineSeg, MaskedCs32Seg, MaskedCs64Seg,
    MaskedFa32Seg, MaskedFa64Seg, RaddrSeg, cqe_op, ctrl, opcode, opmod, syndrome,
};

/// Argument sets for `mlx5dv_set_ctrl_seg`: (pi, opcode, opmod, qpn, fm_ce_se, ds).
const CTRL_ARGS: [(u16, u8, u8, u32, u8, u8); 6] = [
    (0, 0, 0, 0, 0, 0),
    (0x1234, opcode::RDMA_WRITE, 0, 0x42, ctrl::CQ_UPDATE, 3),
    (0xffff, opcode::ATOMIC_MASKED_CS, opmod::EXT_ATOMIC_8B, 0x00ab_cdef, ctrl::CQ_UPDATE | ctrl::FENCE, 5),
    (0x8001, opcode::ATOMIC_MASKED_FA, opmod::EXT_ATOMIC_4B, 0x0001_0003, ctrl::INITIATOR_SMALL_FENCE, 4),
    (0x00ff, opcode::RDMA_READ, 0, 0x00ff_ffff, ctrl::SOLICITED | ctrl::CQ_UPDATE, 3),
    (0xffff, 0xff, 0xff, 0x00ff_ffff, 0xff, 0xff),
];

/// Argument sets for `mlx5dv_set_data_seg`: (length, lkey, address).
const DATA_ARGS: [(u32, u32, u64); 4] = [
    (0, 0, 0),
    (8, 0x0000_1001, 0x7f12_3456_7890),
    (0x8000_0000, 0xdead_beef, 0xffff_ffff_ffff_fff8),
    (1 << 30, 0x0010_0003, 0x0102_0304_0506_0708),
];

/// Work requests encoded both ways: (name, C code filling `unsigned char w[256]`, the request).
/// Every C fragment starts from zeroed bytes and uses only the header's types and setters.
fn wqe_cases() -> Vec<(&'static str, String, WorkRequest<'static>, u64, u32, WqeFlags)> {
    let r = Remote { addr: 0x7f00_dead_beef, rkey: 0x1234_abcd };
    let l = Sge { addr: 0x5555_0000_1000, len: 4096, lkey: 0x0000_1001 };
    let res = Sge { addr: 0x5555_0000_2000, len: 8, lkey: 0x0010_0002 };
    let sig = WqeFlags { signal: true, fence: false };
    let fenced = WqeFlags { signal: false, fence: true };
    let raddr = |at: usize| {
        format!(
            "{{ struct mlx5_wqe_raddr_seg *r = (void *)(w + {at}); r->raddr = htobe64(0x{:x}ULL); r->rkey = htobe32(0x{:x}U); r->reserved = 0; }}",
            r.addr, r.rkey
        )
    };
    let data = |at: usize, s: Sge| {
        format!(
            "mlx5dv_set_data_seg((void *)(w + {at}), 0x{:x}U, 0x{:x}U, (uintptr_t)0x{:x}ULL);",
            s.len, s.lkey, s.addr
        )
    };
    let ctrl = |idx: u16, op: &str, opm: u8, qpn: u32, fm: &str, ds: u8| {
        format!("mlx5dv_set_ctrl_seg((void *)w, 0x{idx:x}, {op}, 0x{opm:x}, 0x{qpn:x}U, {fm}, {ds}, 0, 0);")
    };
    let inline: &'static [u8] = b"twelve bytes";
    vec![
        (
            "write",
            [ctrl(0x0102, "MLX5_OPCODE_RDMA_WRITE", 0, 0x10005, "MLX5_WQE_CTRL_CQ_UPDATE", 3), raddr(16), data(32, l)]
                .concat(),
            WorkRequest::Write { local: l, remote: r },
            0x1_0102,
            0x10005,
            sig,
        ),
        (
            "read",
            [ctrl(0xfffe, "MLX5_OPCODE_RDMA_READ", 0, 0x7, "MLX5_WQE_CTRL_FENCE", 3), raddr(16), data(32, l)].concat(),
            WorkRequest::Read { local: l, remote: r },
            0xfffe,
            0x7,
            fenced,
        ),
        (
            "atomic_fa",
            [
                ctrl(3, "MLX5_OPCODE_ATOMIC_FA", 0, 0x42, "MLX5_WQE_CTRL_CQ_UPDATE", 4),
                raddr(16),
                "{ struct mlx5_wqe_atomic_seg *a = (void *)(w + 32); a->swap_add = htobe64(0x1122334455667788ULL); a->compare = 0; }".into(),
                data(48, res),
            ]
            .concat(),
            WorkRequest::Atomic {
                op: NicAtomic::FetchAdd { add: 0x1122_3344_5566_7788, boundary: 0 },
                width: 8,
                remote: r,
                result: res,
            },
            3,
            0x42,
            sig,
        ),
        (
            "atomic_cs",
            [
                ctrl(4, "MLX5_OPCODE_ATOMIC_CS", 0, 0x42, "MLX5_WQE_CTRL_CQ_UPDATE", 4),
                raddr(16),
                "{ struct mlx5_wqe_atomic_seg *a = (void *)(w + 32); a->swap_add = htobe64(0xa5ULL); a->compare = htobe64(0x8000000000000001ULL); }".into(),
                data(48, res),
            ]
            .concat(),
            WorkRequest::Atomic {
                op: NicAtomic::CompareSwap { swap: 0xa5, compare: 0x8000_0000_0000_0001, swap_mask: !0, compare_mask: !0 },
                width: 8,
                remote: r,
                result: res,
            },
            4,
            0x42,
            sig,
        ),
        (
            "inline",
            [
                ctrl(9, "MLX5_OPCODE_RDMA_WRITE", 0, 0x42, "0", 3),
                raddr(16),
                format!(
                    "{{ struct mlx5_wqe_inl_data_seg *s = (void *)(w + 32); s->byte_count = htobe32({} | MLX5_INLINE_SEG); memcpy(w + 32 + sizeof(*s), \"twelve bytes\", {}); }}",
                    inline.len(),
                    inline.len()
                ),
            ]
            .concat(),
            WorkRequest::WriteInline { data: inline, remote: r },
            9,
            0x42,
            WqeFlags::default(),
        ),
        ("nop", ctrl(0x77, "MLX5_OPCODE_NOP", 0, 0x42, "MLX5_WQE_CTRL_CQ_UPDATE", 1), WorkRequest::Nop, 0x77, 0x42, sig),
    ]
}

/// Completion entries encoded both ways: (name, C code filling `unsigned char c[64]`, entry, qpn).
fn cqe_cases() -> Vec<(&'static str, &'static str, Completion, u32)> {
    vec![
        (
            "ok",
            "{ struct mlx5_cqe64 *q = (void *)c; q->sop_drop_qpn = htobe32(0x00abcdef); q->wqe_counter = htobe16(0xfffe); q->op_own = (MLX5_CQE_REQ << 4) | 1; }",
            Completion::Ok { wqe_counter: 0xfffe, owner: 1 },
            0x00ab_cdef,
        ),
        (
            "err",
            "{ struct mlx5_err_cqe *q = (void *)c; q->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR; q->s_wqe_opcode_qpn = htobe32((MLX5_OPCODE_RDMA_WRITE << 24) | 0x42); q->wqe_counter = htobe16(17); q->op_own = MLX5_CQE_REQ_ERR << 4; }",
            Completion::Err {
                wqe_counter: 17,
                owner: 0,
                syndrome: syndrome::REMOTE_ACCESS_ERR,
                opcode: opcode::RDMA_WRITE,
            },
            0x42,
        ),
        ("none", "{ struct mlx5_cqe64 *q = (void *)c; q->op_own = MLX5_CQE_INVALID << 4; }", Completion::None, 0x42),
    ]
}

/// Names the header's enums define with this prefix (from the preprocessed header).
fn header_names(preprocessed: &str, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, _) in preprocessed.match_indices(prefix) {
        let before = preprocessed[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = preprocessed[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The C compiler (the `cc` command).
fn cc() -> &'static str {
    "cc"
}

fn work_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mlx5_layout-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("create a temporary directory");
    d
}

/// The header, preprocessed (to find every syndrome it names); fails clearly without it.
fn preprocess(dir: &std::path::Path) -> String {
    let src = dir.join("probe.c");
    std::fs::write(&src, "#include <infiniband/mlx5dv.h>\n").expect("write probe.c");
    let out = Command::new(cc())
        .arg("-E")
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running `{}` (a C compiler is needed for this test): {e}", cc()));
    assert!(
        out.status.success(),
        "cannot include <infiniband/mlx5dv.h>: install libibverbs-dev (apt-get install libibverbs-dev)\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("preprocessed header is UTF-8")
}

/// The C program: every line `name value`.
fn c_program(syndromes: &[String]) -> String {
    let mut c = String::from(
        r#"#include <infiniband/mlx5dv.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define SZ(s) printf("sizeof.%s %zu\nalignof.%s %zu\n", #s, sizeof(struct s), #s, _Alignof(struct s))
#define OFF(s, f) printf("offsetof.%s.%s %zu\n", #s, #f, offsetof(struct s, f))
#define K(k) printf("const.%s %llu\n", #k, (unsigned long long)(k))
static void hex(const char *name, const void *p, size_t n) {
    printf("%s ", name);
    for (size_t i = 0; i < n; i++) printf("%02x", ((const unsigned char *)p)[i]);
    printf("\n");
}

int main(void) {
    SZ(mlx5_wqe_ctrl_seg);
    OFF(mlx5_wqe_ctrl_seg, opmod_idx_opcode); OFF(mlx5_wqe_ctrl_seg, qpn_ds); OFF(mlx5_wqe_ctrl_seg, signature);
    OFF(mlx5_wqe_ctrl_seg, dci_stream_channel_id); OFF(mlx5_wqe_ctrl_seg, fm_ce_se); OFF(mlx5_wqe_ctrl_seg, imm);
    SZ(mlx5_wqe_raddr_seg);
    OFF(mlx5_wqe_raddr_seg, raddr); OFF(mlx5_wqe_raddr_seg, rkey); OFF(mlx5_wqe_raddr_seg, reserved);
    SZ(mlx5_wqe_data_seg);
    OFF(mlx5_wqe_data_seg, byte_count); OFF(mlx5_wqe_data_seg, lkey); OFF(mlx5_wqe_data_seg, addr);
    SZ(mlx5_wqe_inl_data_seg);
    OFF(mlx5_wqe_inl_data_seg, byte_count);
    SZ(mlx5_wqe_atomic_seg);
    OFF(mlx5_wqe_atomic_seg, swap_add); OFF(mlx5_wqe_atomic_seg, compare);
    SZ(mlx5_cqe64);
    OFF(mlx5_cqe64, srqn_uidx); OFF(mlx5_cqe64, imm_inval_pkey); OFF(mlx5_cqe64, app); OFF(mlx5_cqe64, app_op);
    OFF(mlx5_cqe64, app_info); OFF(mlx5_cqe64, byte_cnt); OFF(mlx5_cqe64, timestamp); OFF(mlx5_cqe64, sop_drop_qpn);
    OFF(mlx5_cqe64, wqe_counter); OFF(mlx5_cqe64, signature); OFF(mlx5_cqe64, op_own);
    SZ(mlx5_err_cqe);
    OFF(mlx5_err_cqe, rsvd0); OFF(mlx5_err_cqe, srqn); OFF(mlx5_err_cqe, rsvd1); OFF(mlx5_err_cqe, vendor_err_synd);
    OFF(mlx5_err_cqe, syndrome); OFF(mlx5_err_cqe, s_wqe_opcode_qpn); OFF(mlx5_err_cqe, wqe_counter);
    OFF(mlx5_err_cqe, signature); OFF(mlx5_err_cqe, op_own);
    K(MLX5_OPCODE_NOP); K(MLX5_OPCODE_RDMA_WRITE); K(MLX5_OPCODE_RDMA_WRITE_IMM); K(MLX5_OPCODE_SEND);
    K(MLX5_OPCODE_RDMA_READ); K(MLX5_OPCODE_ATOMIC_CS); K(MLX5_OPCODE_ATOMIC_FA); K(MLX5_OPCODE_ATOMIC_MASKED_CS);
    K(MLX5_OPCODE_ATOMIC_MASKED_FA);
    K(MLX5_WQE_CTRL_CQ_UPDATE); K(MLX5_WQE_CTRL_SOLICITED); K(MLX5_WQE_CTRL_FENCE);
    K(MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
    K(MLX5_SEND_WQE_BB); K(MLX5_INLINE_SEG);
    K(MLX5_CQE_REQ); K(MLX5_CQE_REQ_ERR); K(MLX5_CQE_RESP_ERR); K(MLX5_CQE_INVALID); K(MLX5_CQE_OWNER_MASK);
"#,
    );
    for s in syndromes {
        writeln!(c, "    K({s});").unwrap();
    }
    for (i, (pi, op, om, qpn, fm, ds)) in CTRL_ARGS.iter().enumerate() {
        writeln!(
            c,
            "    {{ struct mlx5_wqe_ctrl_seg s; memset(&s, 0, sizeof s); mlx5dv_set_ctrl_seg(&s, 0x{pi:x}, 0x{op:x}, 0x{om:x}, 0x{qpn:x}U, 0x{fm:x}, 0x{ds:x}, 0, 0); hex(\"bytes.ctrl.{i}\", &s, sizeof s); }}"
        )
        .unwrap();
    }
    for (i, (len, lkey, addr)) in DATA_ARGS.iter().enumerate() {
        writeln!(
            c,
            "    {{ struct mlx5_wqe_data_seg s; memset(&s, 0xa5, sizeof s); mlx5dv_set_data_seg(&s, 0x{len:x}U, 0x{lkey:x}U, (uintptr_t)0x{addr:x}ULL); hex(\"bytes.data.{i}\", &s, sizeof s); }}"
        )
        .unwrap();
    }
    for (name, code, ..) in wqe_cases() {
        writeln!(c, "    {{ unsigned char w[256]; memset(w, 0, sizeof w); {code} hex(\"bytes.wqe.{name}\", w, 64); }}")
            .unwrap();
    }
    for (name, code, ..) in cqe_cases() {
        writeln!(c, "    {{ unsigned char c[64]; memset(c, 0, sizeof c); {code} hex(\"bytes.cqe.{name}\", c, 64); }}")
            .unwrap();
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// Compiles and runs the program; returns its `name value` lines.
fn c_values() -> (BTreeMap<String, String>, Vec<String>) {
    let dir = work_dir();
    let syndromes = header_names(&preprocess(&dir), "MLX5_CQE_SYNDROME_");
    assert!(syndromes.len() >= 13, "expected the header's 13+ CQE syndromes, found {syndromes:?}");
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, c_program(&syndromes)).expect("write layout.c");
    let out = Command::new(cc())
        .args(["-std=gnu11", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running `{}`: {e}", cc()));
    assert!(
        out.status.success(),
        "compiling {} failed (is libibverbs-dev installed? install libibverbs-dev):\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the layout program");
    assert!(run.status.success(), "the layout program failed: {}", String::from_utf8_lossy(&run.stderr));
    let text = String::from_utf8(run.stdout).expect("UTF-8 output");
    let _ = std::fs::remove_dir_all(&dir);
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let (k, v) = line.split_once(' ').unwrap_or_else(|| panic!("malformed line {line:?}"));
        assert!(map.insert(k.to_string(), v.to_string()).is_none(), "{k} printed twice");
    }
    (map, syndromes)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Everything the Rust side says, under the C program's names.
fn rust_values(syndromes: &[String]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut put = |k: String, v: String| assert!(m.insert(k.clone(), v).is_none(), "{k} twice");
    macro_rules! sz {
        ($c:literal, $t:ty) => {
            put(format!("sizeof.{}", $c), size_of::<$t>().to_string());
            put(format!("alignof.{}", $c), align_of::<$t>().to_string());
        };
    }
    macro_rules! off {
        ($c:literal, $t:ty, $($f:ident => $cf:literal),* $(,)?) => {
            $( put(format!("offsetof.{}.{}", $c, $cf), offset_of!($t, $f).to_string()); )*
        };
    }
    sz!("mlx5_wqe_ctrl_seg", CtrlSeg);
    off!("mlx5_wqe_ctrl_seg", CtrlSeg, opmod_idx_opcode => "opmod_idx_opcode", qpn_ds => "qpn_ds",
        signature => "signature", dci_stream_channel_id => "dci_stream_channel_id", fm_ce_se => "fm_ce_se", imm => "imm");
    sz!("mlx5_wqe_raddr_seg", RaddrSeg);
    off!("mlx5_wqe_raddr_seg", RaddrSeg, raddr => "raddr", rkey => "rkey", reserved => "reserved");
    sz!("mlx5_wqe_data_seg", DataSeg);
    off!("mlx5_wqe_data_seg", DataSeg, byte_count => "byte_count", lkey => "lkey", addr => "addr");
    sz!("mlx5_wqe_inl_data_seg", InlineSeg);
    off!("mlx5_wqe_inl_data_seg", InlineSeg, byte_count => "byte_count");
    sz!("mlx5_wqe_atomic_seg", AtomicSeg);
    off!("mlx5_wqe_atomic_seg", AtomicSeg, swap_add => "swap_add", compare => "compare");
    sz!("mlx5_cqe64", Cqe64);
    off!("mlx5_cqe64", Cqe64, srqn_uidx => "srqn_uidx", imm_inval_pkey => "imm_inval_pkey", app => "app",
        app_op => "app_op", app_info => "app_info", byte_cnt => "byte_cnt", timestamp => "timestamp",
        sop_drop_qpn => "sop_drop_qpn", wqe_counter => "wqe_counter", signature => "signature", op_own => "op_own");
    sz!("mlx5_err_cqe", ErrCqe);
    off!("mlx5_err_cqe", ErrCqe, rsvd0 => "rsvd0", srqn => "srqn", rsvd1 => "rsvd1",
        vendor_err_synd => "vendor_err_synd", syndrome => "syndrome", s_wqe_opcode_qpn => "s_wqe_opcode_qpn",
        wqe_counter => "wqe_counter", signature => "signature", op_own => "op_own");

    let mut k = |name: &str, v: u64| put(format!("const.{name}"), v.to_string());
    for (name, op) in [
        ("NOP", opcode::NOP),
        ("RDMA_WRITE", opcode::RDMA_WRITE),
        ("RDMA_WRITE_IMM", opcode::RDMA_WRITE_IMM),
        ("SEND", opcode::SEND),
        ("RDMA_READ", opcode::RDMA_READ),
        ("ATOMIC_CS", opcode::ATOMIC_CS),
        ("ATOMIC_FA", opcode::ATOMIC_FA),
        ("ATOMIC_MASKED_CS", opcode::ATOMIC_MASKED_CS),
        ("ATOMIC_MASKED_FA", opcode::ATOMIC_MASKED_FA),
    ] {
        // The name errors print is the header's name without its prefix.
        assert_eq!(opcode::name(op), name, "opcode::name({op:#x})");
        k(&format!("MLX5_OPCODE_{name}"), u64::from(op));
    }
    k("MLX5_WQE_CTRL_CQ_UPDATE", u64::from(ctrl::CQ_UPDATE));
    k("MLX5_WQE_CTRL_SOLICITED", u64::from(ctrl::SOLICITED));
    k("MLX5_WQE_CTRL_FENCE", u64::from(ctrl::FENCE));
    k("MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE", u64::from(ctrl::INITIATOR_SMALL_FENCE));
    k("MLX5_SEND_WQE_BB", mlx5::SEND_WQE_BB as u64);
    k("MLX5_INLINE_SEG", u64::from(mlx5::INLINE_SEG));
    k("MLX5_CQE_REQ", u64::from(cqe_op::REQ));
    k("MLX5_CQE_REQ_ERR", u64::from(cqe_op::REQ_ERR));
    k("MLX5_CQE_RESP_ERR", u64::from(cqe_op::RESP_ERR));
    k("MLX5_CQE_INVALID", u64::from(cqe_op::INVALID));
    k("MLX5_CQE_OWNER_MASK", u64::from(mlx5::CQE_OWNER_MASK));
    // Every syndrome the header defines has a Rust constant: the value whose name() is the
    // header's name (so errors print the header's names, and none is "unknown syndrome").
    for s in syndromes {
        let short = s.strip_prefix("MLX5_CQE_SYNDROME_").expect("prefix");
        let v = (0..=255u8).find(|&v| syndrome::name(v) == short);
        let v = v.unwrap_or_else(|| panic!("{s}: no syndrome constant whose name is {short:?}"));
        k(s, u64::from(v));
    }

    for (i, &(pi, op, om, qpn, fm, ds)) in CTRL_ARGS.iter().enumerate() {
        let c = CtrlSeg::new(pi, op, om, qpn, fm, ds);
        assert_eq!((c.wqe_index(), c.opcode(), c.opmod(), c.qpn(), c.ds()), (pi, op, om, qpn, ds), "getters {i}");
        put(format!("bytes.ctrl.{i}"), hex(bytes_of(&c)));
    }
    for (i, &(len, lkey, addr)) in DATA_ARGS.iter().enumerate() {
        let d = DataSeg { byte_count: Be32::new(len), lkey: Be32::new(lkey), addr: Be64::new(addr) };
        put(format!("bytes.data.{i}"), hex(bytes_of(&d)));
    }
    for (name, _, wr, idx, qpn, flags) in wqe_cases() {
        assert_eq!(Mlx5::wqebbs(&wr), 1, "{name} fits one slot");
        let mut slot = [[0u8; 64]; 1];
        Mlx5::encode(&wr, idx, 1 << 15, qpn, flags, &mut slot);
        put(format!("bytes.wqe.{name}"), hex(&slot[0]));
    }
    for (name, _, c, qpn) in cqe_cases() {
        put(format!("bytes.cqe.{name}"), hex(&Mlx5::encode_cqe(c, qpn)));
    }
    m
}

#[test]
#[cfg_attr(miri, ignore = "Miri: compiles and runs a C program")]
fn layouts_match_rdma_core_mlx5dv_h() {
    let (c, syndromes) = c_values();
    let rust = rust_values(&syndromes);
    let mut bad = Vec::new();
    for (k, v) in &c {
        match rust.get(k) {
            Some(r) if r == v => {}
            Some(r) => bad.push(format!("{k}: mlx5dv.h {v}, Rust {r}")),
            None => bad.push(format!("{k}: printed by the C program but not checked on the Rust side")),
        }
    }
    for k in rust.keys().filter(|k| !c.contains_key(*k)) {
        bad.push(format!("{k}: checked on the Rust side but not printed by the C program"));
    }
    assert!(bad.is_empty(), "{} mismatches with mlx5dv.h:\n{}", bad.len(), bad.join("\n"));
    // Sanity: the comparison covered what it claims to.
    assert!(c.keys().filter(|k| k.starts_with("offsetof.")).count() == 35, "{c:?}");
    assert!(c.keys().filter(|k| k.starts_with("bytes.")).count() == 19, "{c:?}");
}

/// The doorbell register gets the first 8 bytes of a control segment with the producer index
/// and QP number (reference section 2, step 6): the same bytes `mlx5dv_set_ctrl_seg` writes
/// with opcode, opmod and DS 0 — checked here against `CtrlSeg::new`, itself checked above.
#[test]
fn doorbell_is_the_head_of_a_control_segment() {
    for (prod, qpn) in [(0u64, 0u32), (0x1_2345, 0x42), (0xffff, 0x00ff_ffff)] {
        let c = CtrlSeg::new(prod as u16, 0, 0, qpn, 0, 0);
        assert_eq!(Mlx5::doorbell(prod, qpn).to_ne_bytes(), bytes_of(&c)[..8], "prod {prod:#x} qpn {qpn:#x}");
        // The doorbell record's send counter: big-endian low 16 bits (section 1).
        assert_eq!(Mlx5::dbr_value(prod).to_ne_bytes(), [0, 0, (prod >> 8) as u8, prod as u8]);
    }
}

/// Masked-atomic segments are not in mlx5dv.h. The design reference's table (section 3,
/// "Other segments"): masked FA 32-bit = add 0-3, field_boundary 4-7, reserved 8-15; masked FA
/// 64-bit = add 0-7, field_boundary 8-15; masked CS 32-bit = swap 0-3, compare 4-7, swap_mask
/// 8-11, compare_mask 12-15; masked CS 64-bit = two segments, [swap, compare] then
/// [swap_mask, compare_mask]. Extended-atomic opmod: 0x08 = 4-byte, 0x09 = 8-byte operands.
#[test]
fn masked_atomic_segments_match_the_reference_table() {
    assert_eq!((size_of::<MaskedFa32Seg>(), offset_of!(MaskedFa32Seg, add)), (16, 0));
    assert_eq!((offset_of!(MaskedFa32Seg, field_boundary), offset_of!(MaskedFa32Seg, reserved)), (4, 8));
    assert_eq!((size_of::<MaskedFa64Seg>(), offset_of!(MaskedFa64Seg, add)), (16, 0));
    assert_eq!(offset_of!(MaskedFa64Seg, field_boundary), 8);
    assert_eq!(
        (size_of::<MaskedCs32Seg>(), offset_of!(MaskedCs32Seg, swap), offset_of!(MaskedCs32Seg, compare)),
        (16, 0, 4)
    );
    assert_eq!((offset_of!(MaskedCs32Seg, swap_mask), offset_of!(MaskedCs32Seg, compare_mask)), (8, 12));
    assert_eq!(
        (size_of::<MaskedCs64Seg>(), offset_of!(MaskedCs64Seg, swap), offset_of!(MaskedCs64Seg, compare)),
        (32, 0, 8)
    );
    assert_eq!((offset_of!(MaskedCs64Seg, swap_mask), offset_of!(MaskedCs64Seg, compare_mask)), (16, 24));
    assert_eq!((opmod::EXT_ATOMIC_4B, opmod::EXT_ATOMIC_8B), (0x08, 0x09));
    // And the encoder puts them there, big-endian, after ctrl (16 B) and raddr (16 B).
    let r = Remote { addr: 0x1000, rkey: 1 };
    let res = Sge { addr: 0x2000, len: 8, lkey: 2 };
    let cs = NicAtomic::CompareSwap { swap: 0x11, compare: 0x22, swap_mask: 0x33, compare_mask: 0x44 };
    let wr = WorkRequest::Atomic { op: cs, width: 8, remote: r, result: res };
    assert_eq!(Mlx5::wqebbs(&wr), 2, "a masked 64-bit CS (DS 5) spans two slots");
    let mut s = [[0u8; 64]; 2];
    Mlx5::encode(&wr, 0, 64, 1, WqeFlags::default(), &mut s);
    let w: Vec<u8> = s.concat();
    let be = |at: usize| u64::from_be_bytes(w[at..at + 8].try_into().unwrap());
    assert_eq!((be(32), be(40), be(48), be(56)), (0x11, 0x22, 0x33, 0x44));
    assert_eq!((w[0], w[3], w[7]), (opmod::EXT_ATOMIC_8B, opcode::ATOMIC_MASKED_CS, 5), "opmod, opcode, DS");
    let fa = NicAtomic::FetchAdd { add: 0x0001_0001, boundary: 0x8000 };
    let mut s = [[0u8; 64]; 1];
    Mlx5::encode(
        &WorkRequest::Atomic { op: fa, width: 4, remote: r, result: res },
        0,
        64,
        1,
        WqeFlags::default(),
        &mut s,
    );
    let be32 = |at: usize| u32::from_be_bytes(s[0][at..at + 4].try_into().unwrap());
    assert_eq!((be32(32), be32(36), be32(40), be32(44)), (0x0001_0001, 0x8000, 0, 0));
    assert_eq!((s[0][0], s[0][3], s[0][7]), (opmod::EXT_ATOMIC_4B, opcode::ATOMIC_MASKED_FA, 4));
}
