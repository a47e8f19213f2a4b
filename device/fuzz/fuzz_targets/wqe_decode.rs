//! The software NIC's WQE decoder and the device's CQE decoder on arbitrary bytes: never a
//! panic; a WQE that decodes re-encodes (through `Mlx5::encode` of the equivalent request) to
//! a WQE that decodes to the same request and flags; a CQE re-encodes to the same completion.
//!
//! Input: byte 0 picks the slot count (1-4, bits 0-1) and whether the expected index and QP
//! number come from the control segment itself (bit 2: then decoding gets past the framing
//! check), bytes 1-8 and 9-12 are the index and QP number otherwise, and the rest fills the
//! slots (zeros past the end), its first 64 bytes also being the CQE.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxshmem_device::ibgda::layout::{MAX_WQE_BYTES, Mlx5, NicLayout, Wqebb};

fuzz_target!(|data: &[u8]| {
    if data.len() < 13 {
        return;
    }
    let mode = data[0];
    let body = &data[13..];
    let n = 1 + usize::from(mode & 3);
    let mut slots: Vec<Wqebb> = vec![[0u8; 64]; n];
    for (i, b) in body.iter().take(n * 64).enumerate() {
        slots[i / 64][i % 64] = *b;
    }
    let (idx, qpn) = if mode & 4 != 0 {
        let c = u32::from_be_bytes(slots[0][0..4].try_into().unwrap());
        let q = u32::from_be_bytes(slots[0][4..8].try_into().unwrap());
        (u64::from(c >> 8 & 0xffff), q >> 8)
    } else {
        (u64::from_le_bytes(data[1..9].try_into().unwrap()), u32::from_le_bytes(data[9..13].try_into().unwrap()))
    };
    // mlx5 WQEs carry their index, not a lap bit: the ring's size does not matter to them.
    const NWQES: u64 = 1 << 15;
    let next = |i: usize| slots.get(i).copied().unwrap_or([0u8; 64]);
    let (g, g2) = (&mut [0u8; MAX_WQE_BYTES], &mut [0u8; MAX_WQE_BYTES]);
    match Mlx5::decode(&slots[0], idx, NWQES, qpn, &next, g) {
        Ok(d) => {
            assert!((1..=4).contains(&d.wqebbs));
            let wr = d.op.as_request();
            let mut again = vec![[0xa5u8; 64]; Mlx5::wqebbs(&wr)];
            Mlx5::encode(&wr, idx, NWQES, qpn, d.flags, &mut again);
            let a2 = again.clone();
            let d2 = Mlx5::decode(&again[0], idx, NWQES, qpn, &|i| a2.get(i).copied().unwrap_or([0u8; 64]), g2)
                .unwrap_or_else(|e| panic!("re-encoded {wr:?} does not decode: {e:?}"));
            assert_eq!((&d2.op, d2.flags), (&d.op, d.flags), "re-encoded {wr:?}");
        }
        Err(e) => assert!((1..=4).contains(&e.wqebbs)),
    }
    let mut cqe = [0u8; 64];
    for (c, b) in cqe.iter_mut().zip(body) {
        *c = *b;
    }
    let c = Mlx5::decode_cqe(&cqe);
    assert_eq!(Mlx5::decode_cqe(&Mlx5::encode_cqe(c, qpn & 0x00ff_ffff)), c);
});
