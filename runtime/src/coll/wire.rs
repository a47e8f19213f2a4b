//! What the collectives' files share about a message, so that none of them imports another
//! for it: the size of the header (`header.rs`) that opens a message, what a receiver holds of
//! a message or a signal (`mailbox.rs`), and the names of the element types a header carries
//! (defined by `reduce.rs`; its operations are named by `oxshmem_bootstrap::status::op_name`).

/// Bytes of the header at the start of a message (the mailbox's 16 bytes of sequence words
/// precede it, so a header and 8 bytes of payload share one 64-byte cache line).
pub(crate) const HDR: usize = 40;

/// A received message: where its data lies in our copy of the slot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mail {
    pub(crate) ptr: *const u8,
}

/// The next item of a peer's stream: a message, or a signal (see `Runtime::sig_send_tagged`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Item {
    Mail(Mail),
    /// A signal with this tag (its words: `Runtime::signal_words`).
    Signal(u64),
}

/// The payload bytes that follow a message's header.
pub(crate) fn payload_of(mail: &Mail) -> *const u8 {
    // SAFETY: a message is at least HDR bytes long.
    unsafe { mail.ptr.add(HDR) }
}

/// The name of reduction element type `id` (`Reducible::TYPE_ID`).
pub(crate) fn type_name(id: u32) -> &'static str {
    match id {
        1 => "i8",
        2 => "u8",
        3 => "i16",
        4 => "u16",
        5 => "i32",
        6 => "u32",
        7 => "i64",
        8 => "u64",
        9 => "isize",
        10 => "usize",
        11 => "f32",
        12 => "f64",
        13 => "Complex<f32>",
        14 => "Complex<f64>",
        15 => "f16",
        16 => "bf16",
        _ => "(other)",
    }
}
