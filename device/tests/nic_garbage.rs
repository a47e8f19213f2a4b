//! The software NIC's decoders fed many random, mutated and well-formed work-queue and
//! completion entries, for both layouts (`Mlx5`, `Hns`): `decode` and `decode_cqe` must never
//! panic; a WQE that decodes must re-encode (through `encode` of the equivalent `WorkRequest`)
//! to a WQE that decodes to the same request and flags; every well-formed request must
//! round-trip; a request a layout does not support must come back as an error, not as another
//! request.
//!
//! This is the deterministic stand-in for the cargo-fuzz target `fuzz/fuzz_targets/wqe_decode.rs`
//! (which needs nightly): a small xorshift generator with fixed seeds, so a failure reproduces
//! exactly; the seed, the case and the input bytes are in every assertion message.

use oxshmem_device::ibgda::hns::{self, Hns};
use oxshmem_device::ibgda::layout::{
    Completion, Decoded, DecodedWqe, MAX_INLINE, MAX_WQE_BYTES, Mlx5, NicAtomic, NicLayout, Remote, Sge, WorkRequest,
    WqeFlags, Wqebb,
};
use oxshmem_device::ibgda::mlx5::{INLINE_SEG, SEND_WQE_BB, cqe_op, ctrl, opcode, opmod, syndrome};

/// The ring size the mlx5 cases use (mlx5 WQEs carry their index: it does not matter to them).
const NWQES: u64 = 1 << 15;

/// xorshift64*: tiny, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    /// A value biased towards the edges: 0, all ones, single bits, small numbers.
    fn edgy(&mut self) -> u64 {
        match self.below(6) {
            0 => 0,
            1 => u64::MAX,
            2 => 1 << self.below(64),
            3 => self.below(300) as u64,
            4 => u64::from(u32::MAX) >> self.below(32),
            _ => self.next(),
        }
    }
}

const OPCODES: [u8; 12] = [
    opcode::NOP,
    opcode::RDMA_WRITE,
    opcode::RDMA_WRITE_IMM,
    opcode::SEND,
    opcode::RDMA_READ,
    opcode::ATOMIC_CS,
    opcode::ATOMIC_FA,
    opcode::ATOMIC_MASKED_CS,
    opcode::ATOMIC_MASKED_FA,
    opcode::DUMP,
    0x01,
    0xff,
];

/// A random well-formed request (its inline payload in `buf`).
fn random_wr<'a>(r: &mut Rng, buf: &'a mut [u8; MAX_INLINE]) -> WorkRequest<'a> {
    // mlx5 byte counts are below 2^31 (the top bit is an inline segment's flag).
    let sge = |r: &mut Rng| Sge { addr: r.edgy(), len: r.edgy() as u32 & 0x7fff_ffff, lkey: r.edgy() as u32 };
    let remote = |r: &mut Rng| Remote { addr: r.edgy(), rkey: r.edgy() as u32 };
    match r.below(6) {
        0 => WorkRequest::Write { local: sge(r), remote: remote(r) },
        1 => {
            let len = if r.chance(4) { MAX_INLINE - r.below(3) } else { r.below(MAX_INLINE + 1) };
            for b in buf.iter_mut() {
                *b = r.next() as u8;
            }
            WorkRequest::WriteInline { data: &buf[..len], remote: remote(r) }
        }
        2 => WorkRequest::Read { local: sge(r), remote: remote(r) },
        3 => {
            let width = if r.chance(2) { 4 } else { 8 };
            let op = match r.below(4) {
                0 => NicAtomic::FetchAdd { add: r.edgy(), boundary: r.edgy() },
                1 => NicAtomic::FetchAdd { add: r.edgy(), boundary: 0 },
                2 => NicAtomic::CompareSwap { swap: r.edgy(), compare: r.edgy(), swap_mask: !0, compare_mask: !0 },
                _ => NicAtomic::CompareSwap {
                    swap: r.edgy(),
                    compare: r.edgy(),
                    swap_mask: r.edgy(),
                    compare_mask: r.edgy(),
                },
            };
            // The result buffer holds the prior value (or is absent: length 0).
            let mut result = sge(r);
            result.len = if r.chance(5) { 0 } else { width };
            WorkRequest::Atomic { op, width, remote: remote(r), result }
        }
        4 => WorkRequest::Nop,
        _ => WorkRequest::Dump { local: sge(r) },
    }
}

/// What a request should decode to: 4-byte atomics keep the low halves of their operands.
fn expected<'a>(wr: &WorkRequest<'a>) -> Decoded<'a> {
    match *wr {
        WorkRequest::Write { local, remote } => Decoded::Write { local, remote },
        WorkRequest::WriteInline { data, remote } => Decoded::WriteInline { data, remote },
        WorkRequest::Read { local, remote } => Decoded::Read { local, remote },
        WorkRequest::Atomic { op, width, remote, result } => {
            let m = if width == 4 { u64::from(u32::MAX) } else { u64::MAX };
            let op = match op {
                NicAtomic::FetchAdd { add, boundary } => NicAtomic::FetchAdd { add: add & m, boundary: boundary & m },
                NicAtomic::CompareSwap { swap, compare, swap_mask, compare_mask } => NicAtomic::CompareSwap {
                    swap: swap & m,
                    compare: compare & m,
                    swap_mask: swap_mask & m,
                    compare_mask: compare_mask & m,
                },
            };
            Decoded::Atomic { op, width, remote, result }
        }
        WorkRequest::Nop => Decoded::Nop,
        WorkRequest::Dump { local } => Decoded::Dump { local },
    }
}

/// Decodes `slots[0]` as layout `L` in a ring of `nwqes` slots (following slots from the rest,
/// zeros past the end; gathered in `g`).
fn decode_in<'a, L: NicLayout>(
    slots: &'a [Wqebb],
    idx: u64,
    nwqes: u64,
    qpn: u32,
    g: &'a mut [u8; MAX_WQE_BYTES],
) -> Result<DecodedWqe<'a>, oxshmem_device::ibgda::layout::DecodeError> {
    L::decode(&slots[0], idx, nwqes, qpn, &|i| slots.get(i).copied().unwrap_or([0u8; SEND_WQE_BB]), g)
}

fn encode_in<L: NicLayout>(wr: &WorkRequest<'_>, idx: u64, nwqes: u64, qpn: u32, flags: WqeFlags) -> Vec<Wqebb> {
    let mut s = vec![[0x5au8; SEND_WQE_BB]; L::wqebbs(wr)];
    L::encode(wr, idx, nwqes, qpn, flags, &mut s);
    s
}

/// [`decode_in`] for mlx5.
fn decode<'a>(
    slots: &'a [Wqebb],
    idx: u64,
    qpn: u32,
    g: &'a mut [u8; MAX_WQE_BYTES],
) -> Result<DecodedWqe<'a>, oxshmem_device::ibgda::layout::DecodeError> {
    decode_in::<Mlx5>(slots, idx, NWQES, qpn, g)
}

/// [`encode_in`] for mlx5.
fn encode(wr: &WorkRequest<'_>, idx: u64, qpn: u32, flags: WqeFlags) -> Vec<Wqebb> {
    encode_in::<Mlx5>(wr, idx, NWQES, qpn, flags)
}

/// What the generic checks need to know of a layout beyond the trait: where its opcode is,
/// and its syndromes' names.
trait Named: NicLayout {
    /// The opcode as the first slot holds it.
    fn opcode_in(slot: &Wqebb) -> u8;
    /// A syndrome's name ("unknown ..." for values the NIC does not define).
    fn syndrome_name(s: u8) -> &'static str;
}

impl Named for Mlx5 {
    fn opcode_in(slot: &Wqebb) -> u8 {
        slot[3]
    }
    fn syndrome_name(s: u8) -> &'static str {
        syndrome::name(s)
    }
}

impl Named for Hns {
    fn opcode_in(slot: &Wqebb) -> u8 {
        slot[0] & 0x1f
    }
    fn syndrome_name(s: u8) -> &'static str {
        hns::status::name(s)
    }
}

/// The fuzz target's property on one input: decoding never panics (the caller runs it), and
/// what decodes re-encodes to a WQE that decodes to the same request and flags. Returns
/// whether it decoded.
fn check_slots_in<L: Named>(slots: &[Wqebb], idx: u64, nwqes: u64, qpn: u32, ctx: &dyn Fn() -> String) -> bool {
    let (g, g2) = (&mut [0u8; MAX_WQE_BYTES], &mut [0u8; MAX_WQE_BYTES]);
    let Ok(d) = decode_in::<L>(slots, idx, nwqes, qpn, g) else {
        let e = decode_in::<L>(slots, idx, nwqes, qpn, g2).unwrap_err();
        assert!(e.wqebbs >= 1 && e.wqebbs <= 4, "{}: error skips {} slots", ctx(), e.wqebbs);
        assert!(!L::syndrome_name(e.syndrome).starts_with("unknown"), "{}: syndrome {:#x}", ctx(), e.syndrome);
        assert_ne!(e.syndrome, 0, "{}: an error with syndrome 0 reads as a success", ctx());
        return false;
    };
    assert!((1..=4).contains(&d.wqebbs), "{}: {} slots", ctx(), d.wqebbs);
    assert_eq!(d.opcode, L::opcode_in(&slots[0]), "{}: the opcode", ctx());
    let wr = d.op.as_request();
    assert!(L::supports(&wr), "{}: decoded {wr:?}, which {} does not support", ctx(), L::NAME);
    let again = encode_in::<L>(&wr, idx, nwqes, qpn, d.flags);
    let d2 = decode_in::<L>(&again, idx, nwqes, qpn, g2)
        .unwrap_or_else(|e| panic!("{}: re-encoded {wr:?} does not decode: {e:?}", ctx()));
    assert_eq!((&d2.op, d2.flags), (&d.op, d.flags), "{}: re-encoded {wr:?}", ctx());
    true
}

/// [`check_slots_in`] for mlx5.
fn check_slots(slots: &[Wqebb], idx: u64, qpn: u32, ctx: &dyn Fn() -> String) -> bool {
    check_slots_in::<Mlx5>(slots, idx, NWQES, qpn, ctx)
}

fn hex(slots: &[Wqebb]) -> String {
    slots.iter().flatten().map(|b| format!("{b:02x}")).collect()
}

/// Every well-formed request, at random indices and QP numbers, round-trips exactly.
#[test]
fn well_formed_requests_round_trip() {
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..5_000 {
            let mut buf = [0u8; MAX_INLINE];
            let wr = random_wr(&mut r, &mut buf);
            let (idx, qpn) = (r.edgy(), r.edgy() as u32 & 0x00ff_ffff);
            let flags = WqeFlags { signal: r.chance(2), fence: r.chance(2) };
            let s = encode(&wr, idx, qpn, flags);
            let g = &mut [0u8; MAX_WQE_BYTES];
            let d = decode(&s, idx, qpn, g).unwrap_or_else(|e| panic!("seed {seed} case {case}: {wr:?}: {e:?}"));
            assert_eq!((&d.op, d.flags, d.wqebbs), (&expected(&wr), flags, s.len()), "seed {seed} case {case}: {wr:?}");
            // The NIC checks the index (16 bits) and the QP number.
            let e = decode(&s, idx.wrapping_add(1), qpn, g).unwrap_err();
            assert_eq!(e.syndrome, syndrome::LOCAL_QP_OP_ERR, "seed {seed} case {case}: wrong index");
            assert!(
                decode(&s, idx.wrapping_add(0x1_0000), qpn, g).is_ok(),
                "seed {seed} case {case}: index is 16 bits"
            );
            let e = decode(&s, idx, qpn ^ 1, g).unwrap_err();
            assert_eq!(e.syndrome, syndrome::LOCAL_QP_OP_ERR, "seed {seed} case {case}: wrong QPN");
            check_slots(&s, idx, qpn, &|| format!("seed {seed} case {case}"));
        }
    }
}

/// Random bytes, random and matching (index, QPN): never a panic; what decodes round-trips.
#[test]
fn random_slots_never_panic() {
    let mut decoded = 0;
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..20_000 {
            let n = 1 + r.below(4);
            let mut slots = vec![[0u8; SEND_WQE_BB]; n];
            for b in slots.iter_mut().flatten() {
                *b = r.next() as u8;
            }
            // Make the header plausible most of the time, so decoding gets past it.
            if !r.chance(4) {
                slots[0][3] = OPCODES[r.below(OPCODES.len())];
                slots[0][7] = r.below(18) as u8;
                slots[0][0] = [0, opmod::EXT_ATOMIC_4B, opmod::EXT_ATOMIC_8B, r.next() as u8][r.below(4)];
                if r.chance(2) {
                    let len = r.below(MAX_INLINE + 8) as u32;
                    slots[0][32..36].copy_from_slice(&(len | INLINE_SEG).to_be_bytes());
                }
            }
            let c = u32::from_be_bytes(slots[0][0..4].try_into().unwrap());
            let q = u32::from_be_bytes(slots[0][4..8].try_into().unwrap());
            let (idx, qpn) =
                if r.chance(5) { (r.next(), r.next() as u32) } else { (u64::from(c >> 8 & 0xffff), q >> 8) };
            decoded += usize::from(check_slots(&slots, idx, qpn, &|| {
                format!("seed {seed} case {case}: idx {idx:#x} qpn {qpn:#x} slots {}", hex(&slots))
            }));
        }
    }
    // The generator reaches the decoders' success paths, not only their error paths.
    assert!(decoded > 2_000, "only {decoded} random WQEs decoded");
}

/// Well-formed WQEs with a few bytes flipped, inserted or zeroed: never a panic; what still
/// decodes round-trips.
#[test]
fn mutated_wqes_never_panic() {
    let (mut decoded, mut rejected) = (0, 0);
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..20_000 {
            let mut buf = [0u8; MAX_INLINE];
            let wr = random_wr(&mut r, &mut buf);
            let (idx, qpn) = (r.next(), r.next() as u32 & 0x00ff_ffff);
            let flags = WqeFlags { signal: r.chance(2), fence: r.chance(2) };
            let mut s = encode(&wr, idx, qpn, flags);
            for _ in 0..=r.below(3) {
                let at = r.below(s.len() * SEND_WQE_BB);
                let (slot, byte) = (at / SEND_WQE_BB, at % SEND_WQE_BB);
                match r.below(4) {
                    0 => s[slot][byte] ^= 1 << r.below(8),
                    1 => s[slot][byte] = r.next() as u8,
                    2 => s[slot][byte] = 0,
                    // The fields the decoder dispatches on: opcode, opmod, DS, fence/CE bits.
                    _ => {
                        let f = [3usize, 0, 7, 11][r.below(4)];
                        s[0][f] = r.next() as u8;
                    }
                }
            }
            if r.chance(8) {
                s.truncate(1 + r.below(s.len()));
            }
            let ok = check_slots(&s, idx, qpn, &|| format!("seed {seed} case {case}: from {wr:?}: {}", hex(&s)));
            decoded += usize::from(ok);
            rejected += usize::from(!ok);
        }
    }
    assert!(decoded > 10_000 && rejected > 10_000, "decoded {decoded}, rejected {rejected}");
}

/// Specific malformations get the syndrome a ConnectX gives them.
#[test]
fn malformed_wqes_get_their_syndromes() {
    let r = Remote { addr: 0x1000, rkey: 7 };
    let l = Sge { addr: 0x2000, len: 8, lkey: 9 };
    let w = encode(&WorkRequest::Write { local: l, remote: r }, 5, 3, WqeFlags::default());
    let syn = |s: &[Wqebb]| decode(s, 5, 3, &mut [0u8; MAX_WQE_BYTES]).map(|_| ()).unwrap_err().syndrome;
    let mut bad = w.clone();
    bad[0][3] = 0x3e;
    assert_eq!(syn(&bad), syndrome::LOCAL_QP_OP_ERR, "unknown opcode");
    for ds in [0u8, 2, 4, 17, 0xff] {
        let mut bad = w.clone();
        bad[0][7] = ds;
        assert_eq!(syn(&bad), syndrome::LOCAL_LENGTH_ERR, "RDMA_WRITE with DS {ds}");
    }
    // An inline length that does not match DS, or longer than four slots can carry.
    let mut bad = encode(&WorkRequest::WriteInline { data: &[1; 12], remote: r }, 5, 3, WqeFlags::default());
    bad[0][32..36].copy_from_slice(&(13 | INLINE_SEG).to_be_bytes());
    assert_eq!(syn(&bad), syndrome::LOCAL_LENGTH_ERR, "inline 13 bytes in DS 3");
    bad[0][32..36].copy_from_slice(&((MAX_INLINE as u32 + 1) | INLINE_SEG).to_be_bytes());
    bad[0][7] = 16;
    assert_eq!(syn(&[bad[0], [0; 64], [0; 64], [0; 64]]), syndrome::LOCAL_LENGTH_ERR, "inline past 4 slots");
    // An extended atomic with an opmod that is neither 4 nor 8 bytes.
    let fa = WorkRequest::Atomic { op: NicAtomic::FetchAdd { add: 1, boundary: 1 }, width: 4, remote: r, result: l };
    let mut bad = encode(&fa, 5, 3, WqeFlags::default());
    bad[0][0] = 0x0a;
    assert_eq!(syn(&bad), syndrome::LOCAL_QP_OP_ERR, "masked FA with opmod 0x0a");
    // A result buffer shorter than the operand.
    let mut short = l;
    short.len = 2;
    let wr =
        WorkRequest::Atomic { op: NicAtomic::FetchAdd { add: 1, boundary: 0 }, width: 8, remote: r, result: short };
    assert_eq!(
        syn(&encode(&wr, 5, 3, WqeFlags::default())),
        syndrome::LOCAL_LENGTH_ERR,
        "4-byte result of an 8-byte FA"
    );
    // Fence modes 2, 3 and 4 fence; 0 and 1 (small fence) do not. CE 2 signals; 0, 1, 3 do not.
    for (fm, fence) in [(0u8, false), (1, false), (2, true), (3, true), (4, true)] {
        for (ce, signal) in [(0u8, false), (1, false), (2, true), (3, false)] {
            let mut s = w.clone();
            s[0][11] = fm << 5 | ce << 2;
            let g = &mut [0u8; MAX_WQE_BYTES];
            let d = decode(&s, 5, 3, g).unwrap();
            assert_eq!((d.flags.fence, d.flags.signal), (fence, signal), "fm {fm} ce {ce}");
        }
    }
    assert_eq!(ctrl::FENCE >> 5, 4);
}

/// Random completion entries: never a panic; what decodes re-encodes to the same completion.
#[test]
fn random_cqes_never_panic() {
    let mut seen = [0usize; 3];
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..20_000 {
            let mut cqe = [0u8; 64];
            for b in cqe.iter_mut() {
                *b = r.next() as u8;
            }
            if r.chance(2) {
                cqe[63] = [cqe_op::REQ, cqe_op::REQ_ERR, cqe_op::RESP_ERR, cqe_op::INVALID][r.below(4)] << 4
                    | (r.next() as u8 & 1);
            }
            let c = Mlx5::decode_cqe(&cqe);
            let qpn = r.next() as u32 & 0x00ff_ffff;
            let again = Mlx5::decode_cqe(&Mlx5::encode_cqe(c, qpn));
            assert_eq!(again, c, "seed {seed} case {case}: {}", hex(&[cqe[..].try_into().unwrap_or([0; 64])]));
            match c {
                Completion::None => seen[0] += 1,
                Completion::Ok { wqe_counter, owner } => {
                    assert_eq!((wqe_counter, owner), (u16::from_be_bytes([cqe[60], cqe[61]]), cqe[63] & 1));
                    seen[1] += 1;
                }
                Completion::Err { wqe_counter, syndrome: s, opcode: o, owner } => {
                    assert_eq!(
                        (wqe_counter, s, o, owner),
                        (u16::from_be_bytes([cqe[60], cqe[61]]), cqe[55], cqe[56], cqe[63] & 1)
                    );
                    seen[2] += 1;
                }
            }
        }
    }
    assert!(seen.iter().all(|&n| n > 1000), "None / Ok / Err seen {seen:?}");
}

// ---- hns ------------------------------------------------------------------------------

/// hns opcodes the random slots are given: what it executes, what it defines but these queues
/// refuse, and undefined ones.
const HNS_OPCODES: [u8; 12] = [
    hns::opcode::NOP,
    hns::opcode::RDMA_WRITE,
    hns::opcode::RDMA_WRITE_WITH_IMM,
    hns::opcode::SEND,
    hns::opcode::RDMA_READ,
    hns::opcode::ATOMIC_COM_AND_SWAP,
    hns::opcode::ATOMIC_FETCH_AND_ADD,
    hns::opcode::ATOMIC_MASK_COMP_AND_SWAP,
    hns::opcode::ATOMIC_MASK_FETCH_AND_ADD,
    hns::opcode::MASK,
    0x0d,
    0x1e,
];

/// A random ring size: a power of two from 2 to 32768.
fn ring(r: &mut Rng) -> u64 {
    1 << (1 + r.below(15))
}

/// `wr` made into what hns expresses (inline payloads of at most 32 bytes, plain 8-byte
/// atomics returning into 8 bytes, a read for a DUMP); unchanged if it already is.
fn to_hns<'a>(wr: WorkRequest<'a>, r: &mut Rng) -> WorkRequest<'a> {
    let hwr = match wr {
        WorkRequest::WriteInline { data, remote } => {
            WorkRequest::WriteInline { data: &data[..data.len().min(hns::MAX_RC_INL_INN_SZ)], remote }
        }
        WorkRequest::Atomic { op, remote, mut result, .. } => {
            result.len = 8;
            let op = match op {
                NicAtomic::FetchAdd { add, .. } => NicAtomic::FetchAdd { add, boundary: 0 },
                NicAtomic::CompareSwap { swap, compare, .. } => {
                    NicAtomic::CompareSwap { swap, compare, swap_mask: u64::MAX, compare_mask: u64::MAX }
                }
            };
            WorkRequest::Atomic { op, width: 8, remote, result }
        }
        WorkRequest::Dump { local } => {
            WorkRequest::Read { local, remote: Remote { addr: r.edgy(), rkey: r.next() as u32 } }
        }
        other => other,
    };
    assert!(Hns::supports(&hwr), "{hwr:?}");
    hwr
}

/// Every request hns expresses, at random indices and ring sizes, round-trips exactly; the
/// owner bit catches a slot of the other lap (the WQE names neither index nor QP); what hns
/// cannot express comes back as an invalid-opcode error, never as another request.
#[test]
fn hns_well_formed_requests_round_trip() {
    let (mut refused, mut kept) = (0, 0);
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..5_000 {
            let mut buf = [0u8; MAX_INLINE];
            let raw = random_wr(&mut r, &mut buf);
            let (idx, nwqes, qpn) = (r.edgy() >> 1, ring(&mut r), r.edgy() as u32 & 0x00ff_ffff);
            let flags = WqeFlags { signal: r.chance(2), fence: r.chance(2) };
            let g = &mut [0u8; MAX_WQE_BYTES];
            if !Hns::supports(&raw) {
                // Encoded anyway: an error at the NIC.
                refused += 1;
                let s = encode_in::<Hns>(&raw, idx, nwqes, qpn, flags);
                assert_eq!(s.len(), 1, "seed {seed} case {case}: {raw:?}");
                let e = decode_in::<Hns>(&s, idx, nwqes, qpn, g).unwrap_err();
                assert_eq!(
                    (e.syndrome, e.opcode, e.wqebbs),
                    (hns::status::LOCAL_QP_OP_ERR, hns::opcode::MASK, 1),
                    "seed {seed} case {case}: {raw:?}"
                );
            } else {
                kept += 1;
            }
            let wr = to_hns(raw, &mut r);
            let s = encode_in::<Hns>(&wr, idx, nwqes, qpn, flags);
            let d = decode_in::<Hns>(&s, idx, nwqes, qpn, g)
                .unwrap_or_else(|e| panic!("seed {seed} case {case}: {wr:?}: {e:?}"));
            assert_eq!((&d.op, d.flags, d.wqebbs), (&expected(&wr), flags, 1), "seed {seed} case {case}: {wr:?}");
            assert_eq!(d.opcode, Hns::opcode_of(&wr).unwrap(), "seed {seed} case {case}");
            // The other lap: owner bit wrong. Two laps on: the same bit (hns cannot tell).
            let e = decode_in::<Hns>(&s, idx + nwqes, nwqes, qpn, g).unwrap_err();
            assert_eq!(e.syndrome, hns::status::LOCAL_QP_OP_ERR, "seed {seed} case {case}: other lap");
            assert!(decode_in::<Hns>(&s, idx + 2 * nwqes, nwqes, qpn, g).is_ok(), "seed {seed} case {case}");
            // Any QP number: the WQE does not carry it.
            assert!(decode_in::<Hns>(&s, idx, nwqes, qpn ^ 1, g).is_ok(), "seed {seed} case {case}");
            check_slots_in::<Hns>(&s, idx, nwqes, qpn, &|| format!("seed {seed} case {case}"));
        }
    }
    assert!(refused > 1_000 && kept > 10_000, "refused {refused}, kept {kept}");
}

/// Random bytes, mostly with a plausible header: never a panic; what decodes round-trips.
#[test]
fn hns_random_slots_never_panic() {
    let mut decoded = 0;
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..20_000 {
            let mut slot = [0u8; SEND_WQE_BB];
            for b in slot.iter_mut() {
                *b = r.next() as u8;
            }
            let (idx, nwqes) = (r.next() >> 1, ring(&mut r));
            if !r.chance(4) {
                // Opcode, owner bit of the right lap, inline bit now and then, a small SGE count
                // and a message length that matches segment 0 (or an inline length) often.
                slot[0] = HNS_OPCODES[r.below(HNS_OPCODES.len())]
                    | u8::from(Hns::owner(idx, nwqes)) << 7
                    | (r.next() as u8 & 0x60);
                slot[1] = if r.chance(3) { r.next() as u8 & 0x1f } else { r.next() as u8 & 0x0e };
                slot[15] = r.below(4) as u8;
                if r.chance(2) {
                    slot[19] &= 0x7f;
                }
                let len = if r.chance(2) { [8u32, 0, 1, 32, 33][r.below(5)] } else { r.next() as u32 };
                slot[4..8].copy_from_slice(&len.to_le_bytes());
                if r.chance(2) {
                    slot[32..36].copy_from_slice(&len.to_le_bytes());
                }
            }
            decoded += usize::from(check_slots_in::<Hns>(&[slot], idx, nwqes, r.next() as u32, &|| {
                format!("seed {seed} case {case}: idx {idx:#x} nwqes {nwqes} slot {}", hex(&[slot]))
            }));
        }
    }
    assert!(decoded > 5_000, "only {decoded} random WQEs decoded");
}

/// Well-formed hns WQEs with a few bytes flipped or zeroed: never a panic; what still decodes
/// round-trips.
#[test]
fn hns_mutated_wqes_never_panic() {
    let (mut decoded, mut rejected) = (0, 0);
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..20_000 {
            let mut buf = [0u8; MAX_INLINE];
            let raw = random_wr(&mut r, &mut buf);
            let wr = to_hns(raw, &mut r);
            let (idx, nwqes, qpn) = (r.next() >> 1, ring(&mut r), r.next() as u32);
            let flags = WqeFlags { signal: r.chance(2), fence: r.chance(2) };
            let mut s = encode_in::<Hns>(&wr, idx, nwqes, qpn, flags);
            for _ in 0..=r.below(3) {
                let at = r.below(SEND_WQE_BB);
                match r.below(4) {
                    0 => s[0][at] ^= 1 << r.below(8),
                    1 => s[0][at] = r.next() as u8,
                    2 => s[0][at] = 0,
                    // The bytes the decoder dispatches on: opcode/owner, flags, SGE count,
                    // message length, inline type, segment 0's length.
                    _ => {
                        let f = [0usize, 1, 15, 4, 19, 32][r.below(6)];
                        s[0][f] = r.next() as u8;
                    }
                }
            }
            let ok = check_slots_in::<Hns>(&s, idx, nwqes, qpn, &|| {
                format!("seed {seed} case {case}: from {wr:?}: {}", hex(&s))
            });
            decoded += usize::from(ok);
            rejected += usize::from(!ok);
        }
    }
    assert!(decoded > 10_000 && rejected > 10_000, "decoded {decoded}, rejected {rejected}");
}

/// Specific malformations get the status an hns CQE would carry for them.
#[test]
fn hns_malformed_wqes_get_their_syndromes() {
    let (idx, nwqes) = (5u64, 8u64);
    let r = Remote { addr: 0x1000, rkey: 7 };
    let l = Sge { addr: 0x2000, len: 8, lkey: 9 };
    let enc = |wr: &WorkRequest<'_>| encode_in::<Hns>(wr, idx, nwqes, 3, WqeFlags::default());
    let syn = |s: &[Wqebb]| decode_in::<Hns>(s, idx, nwqes, 3, &mut [0u8; MAX_WQE_BYTES]).map(|_| ()).unwrap_err();
    let w = enc(&WorkRequest::Write { local: l, remote: r });
    for op in [hns::opcode::SEND, hns::opcode::ATOMIC_MASK_COMP_AND_SWAP, hns::opcode::ATOMIC_MASK_FETCH_AND_ADD, 0x1f]
    {
        let mut bad = w.clone();
        bad[0][0] = bad[0][0] & 0xe0 | op;
        let e = syn(&bad);
        assert_eq!((e.syndrome, e.opcode), (hns::status::LOCAL_QP_OP_ERR, op), "opcode {op:#x}");
    }
    // The owner bit of the other lap.
    let mut bad = w.clone();
    bad[0][0] ^= 0x80;
    assert_eq!(syn(&bad).syndrome, hns::status::LOCAL_QP_OP_ERR, "owner bit");
    // SGE counts other than one; a message length that is not segment 0's.
    for n in [0u8, 2, 3, 0xff] {
        let mut bad = w.clone();
        bad[0][15] = n;
        assert_eq!(syn(&bad).syndrome, hns::status::LOCAL_LENGTH_ERR, "{n} SGEs");
    }
    let mut bad = w.clone();
    bad[0][4] = 9;
    assert_eq!(syn(&bad).syndrome, hns::status::LOCAL_LENGTH_ERR, "msg_len 9, segment 8");
    // Inline: longer than the WQE holds; in the extended-SGE area; on a read.
    let mut bad = enc(&WorkRequest::WriteInline { data: &[1; 32], remote: r });
    bad[0][4] = 33;
    assert_eq!(syn(&bad).syndrome, hns::status::LOCAL_LENGTH_ERR, "33 inline bytes");
    bad[0][4] = 32;
    bad[0][19] |= 0x80;
    assert_eq!(syn(&bad).syndrome, hns::status::LOCAL_QP_OP_ERR, "extended-SGE inline");
    let mut bad = enc(&WorkRequest::Read { local: l, remote: r });
    bad[0][1] |= 0x10;
    assert_eq!(syn(&bad).syndrome, hns::status::LOCAL_QP_OP_ERR, "inline read");
    // An atomic of 16 bytes (an extended atomic) or into a 4-byte buffer.
    let fa = WorkRequest::Atomic { op: NicAtomic::FetchAdd { add: 1, boundary: 0 }, width: 8, remote: r, result: l };
    for len in [16u32, 4] {
        let mut bad = enc(&fa);
        bad[0][4..8].copy_from_slice(&len.to_le_bytes());
        bad[0][32..36].copy_from_slice(&len.to_le_bytes());
        assert_eq!(syn(&bad).syndrome, hns::status::LOCAL_LENGTH_ERR, "{len}-byte atomic");
    }
    // Fence and strong order fence; CQE signals; SE and the direct-WQE fields change nothing.
    for (bits, fence, signal) in
        [(0u16, false, false), (1 << 9, true, false), (1 << 10, true, false), (1 << 8, false, true)]
    {
        for extra in [0u16, 1 << 11, 3 << 5, 3 << 13] {
            let mut s = w.clone();
            let b4 = u16::from_le_bytes([s[0][0], s[0][1]]) & !(0xf << 8) | bits | extra;
            s[0][..2].copy_from_slice(&b4.to_le_bytes());
            let g = &mut [0u8; MAX_WQE_BYTES];
            let d = decode_in::<Hns>(&s, idx, nwqes, 3, g).unwrap();
            assert_eq!((d.flags.fence, d.flags.signal), (fence, signal), "bits {bits:#x} extra {extra:#x}");
        }
    }
}

/// Random hns completion entries: never a panic; what decodes re-encodes to the same
/// completion; the fields are where `struct hns_roce_v2_cqe` has them.
#[test]
fn hns_random_cqes_never_panic() {
    let mut seen = [0usize; 3];
    for seed in 1..=4u64 {
        let mut r = Rng::new(seed);
        for case in 0..20_000 {
            let mut cqe = [0u8; 64];
            for b in cqe.iter_mut() {
                *b = r.next() as u8;
            }
            if r.chance(2) {
                cqe[0] &= !0x40; // a send CQE
                if r.chance(2) {
                    cqe[1] = 0; // success
                }
            }
            let c = Hns::decode_cqe(&cqe);
            let qpn = r.next() as u32 & 0x00ff_ffff;
            let again = Hns::decode_cqe(&Hns::encode_cqe(c, qpn));
            assert_eq!(again, c, "seed {seed} case {case}: {}", hex(&[cqe]));
            let idx = u16::from_le_bytes([cqe[2], cqe[3]]);
            let owner = 1 - (cqe[0] >> 7);
            match c {
                Completion::None => {
                    assert_eq!(cqe[0] & 0x40, 0x40, "seed {seed} case {case}");
                    seen[0] += 1;
                }
                Completion::Ok { wqe_counter, owner: o } => {
                    assert_eq!((wqe_counter, o, cqe[1]), (idx, owner, 0), "seed {seed} case {case}");
                    seen[1] += 1;
                }
                Completion::Err { wqe_counter, syndrome: s, opcode: op, owner: o } => {
                    assert_eq!((wqe_counter, s, op, o), (idx, cqe[1], cqe[0] & 0x1f, owner), "seed {seed} case {case}");
                    seen[2] += 1;
                }
            }
        }
    }
    assert!(seen.iter().all(|&n| n > 1000), "None / Ok / Err seen {seen:?}");
}
