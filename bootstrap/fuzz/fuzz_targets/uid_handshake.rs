//! The unique-id bootstrap's decoders (hello, welcome, frame, allgather reply) must never
//! panic on what a stranger sends, and a hello is accepted only with the job's secret.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxshmem_bootstrap::uid::{
    decode_frame, decode_gathered, decode_hello, decode_welcome, encode_frame,
};

const SECRET: [u8; 16] = *b"0123456789abcdef";

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(h)) = decode_hello(data, &SECRET, 4) {
        assert_eq!(&data[8..24], &SECRET);
        assert!(h.rank < 4);
    }
    let _ = decode_welcome(data);
    if let Ok(Some((f, used))) = decode_frame(data) {
        assert_eq!(encode_frame(&f), &data[..used]);
        let _ = decode_gathered(&f.payload, f.arg as usize % 1024);
    }
    let _ = decode_gathered(data, data.len() % 8);
    let _ = String::from_utf8_lossy(data).parse::<oxshmem_bootstrap::uid::UniqueId>();
});
