//! The unique-id bootstrap's decoders (challenge, response, proof, welcome, frame, allgather
//! reply, both forms of the id) must never panic on what a stranger sends, and a response or
//! proof passes the MAC check only with the job's key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxshmem_bootstrap::uid::{
    Challenge, UniqueId, check_proof, check_response, decode_challenge, decode_frame, decode_gathered, decode_proof,
    decode_response, decode_welcome, encode_frame, respond,
};

const KEY: [u8; 32] = *b"0123456789abcdef0123456789abcdef";
const CHALLENGE: Challenge = Challenge { nonce: [7; 32] };

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(r)) = decode_response(data) {
        // Only the MAC the key makes passes.
        let ok = check_response(&KEY, &CHALLENGE, &r).is_ok();
        assert_eq!(ok, respond(&KEY, &CHALLENGE, r.nonce, r.rank, r.size).mac == r.mac);
    }
    let _ = decode_challenge(data);
    if let Ok(Some((p, _))) = decode_proof(data) {
        let r = respond(&KEY, &CHALLENGE, [1; 32], 1, 2);
        let good = check_response(&KEY, &CHALLENGE, &r).unwrap();
        assert_eq!(check_proof(&KEY, &CHALLENGE, &r, &p).is_ok(), p == good);
    }
    let _ = decode_welcome(data);
    if let Ok(Some((f, used))) = decode_frame(data) {
        assert_eq!(encode_frame(&f), &data[..used]);
        let _ = decode_gathered(&f.payload, f.arg as usize % 1024);
    }
    let _ = decode_gathered(data, data.len() % 8);
    let _ = String::from_utf8_lossy(data).parse::<UniqueId>();
    if let Ok(id) = UniqueId::from_bytes(data) {
        assert_eq!(&id.to_bytes()[..], data);
    }
});
