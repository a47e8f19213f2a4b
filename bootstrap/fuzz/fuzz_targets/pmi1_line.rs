//! PMI-1 replies: the line buffer and the `cmd=... key=value` parser must never panic, and a
//! parsed command that encodes must parse back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxshmem_bootstrap::wire::{Command, LineBuf};

fuzz_target!(|data: &[u8]| {
    let mut lb = LineBuf::new();
    // Feed in two pieces, split where the first byte says, to exercise reassembly.
    let cut = data.first().map_or(0, |&b| b as usize % (data.len() + 1));
    lb.feed(&data[..cut]);
    lb.feed(&data[cut..]);
    while let Ok(Some(line)) = lb.pop_line() {
        if let Ok(c) = Command::parse(&line)
            && let Ok(enc) = c.encode()
        {
            assert_eq!(Command::parse(&enc).as_ref(), Ok(&c));
        }
    }
    let _ = Command::parse(&String::from_utf8_lossy(data));
});
