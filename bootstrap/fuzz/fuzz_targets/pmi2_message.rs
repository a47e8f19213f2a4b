//! PMI-2 replies: the length-prefixed frame decoder must never panic, never claim more bytes
//! than it was given, and what it decodes must round-trip through `encode`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxshmem_bootstrap::mapping::parse_process_mapping;
use oxshmem_bootstrap::pmi2::Message;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some((m, used))) = Message::parse_frame(rest) {
        assert!(used <= rest.len());
        if let Ok(w) = m.encode() {
            assert_eq!(Message::parse_frame(w.as_bytes()), Ok(Some((m.clone(), w.len()))));
        }
        if let Some(v) = m.get("value") {
            let _ = parse_process_mapping(v, 1 + data.len() % 64);
        }
        rest = &rest[used..];
    }
});
