//! The runtime's one error type.
//!
//! Every error names the PE that detected it and the OpenSHMEM function it was detected in,
//! and displays as `PE n: function: reason` — the form the C ABI prints before ending the job.
//! Only the function that first detects an error builds it; callers pass it on unchanged.

use std::fmt;

/// An error of the oxshmem runtime: who (`pe`), where (`func`) and what (`kind`).
///
/// ```
/// let e = oxshmem::Error::new(3, "shmem_putmem", oxshmem::ErrorKind::PeOutOfRange { pe: 9, n_pes: 4 });
/// assert_eq!(e.to_string(), "PE 3: shmem_putmem: PE 9 is out of range (0..4)");
/// ```
///
/// `Debug` shows the same text (with the kind's fields after it), so that the error a
/// `fn main() -> Result<(), oxshmem::Error>` returns is printed readably:
///
/// ```
/// let e = oxshmem::Error::new(0, "shmem_p", oxshmem::ErrorKind::PeOutOfRange { pe: 2, n_pes: 2 });
/// assert!(format!("{e:?}").starts_with("PE 0: shmem_p: PE 2 is out of range (0..2)"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    /// The PE that detected the error ([`UNKNOWN_PE`] before this process knows it).
    pub pe: usize,
    /// The OpenSHMEM routine in which it was detected (e.g. `shmem_putmem`).
    pub func: &'static str,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// Builds an error, and logs it (target `error`, level debug: `OXSHMEM_LOG=error=debug`
    /// shows every error as it is built, including those a caller handles).
    pub fn new(pe: usize, func: &'static str, kind: ErrorKind) -> Self {
        let e = Error { pe, func, kind };
        tracing::debug!(target: "error", "{e}");
        e
    }
}

/// The `pe` of an error raised before this process knew its PE number (and no launcher said
/// it): displayed as `PE ?`.
pub const UNKNOWN_PE: usize = usize::MAX;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pe == UNKNOWN_PE {
            write!(f, "PE ?: {}: {}", self.func, self.kind)
        } else {
            write!(f, "PE {}: {}: {}", self.pe, self.func, self.kind)
        }
    }
}

impl fmt::Debug for Error {
    /// The message, then the structured kind on its own line (`{:#?}` pretty-prints it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")?;
        if f.alternate() { write!(f, "\n\n{:#?}", self.kind) } else { write!(f, "\n\n({:?})", self.kind) }
    }
}

impl std::error::Error for Error {}

/// What went wrong, with what the user needs to act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A layer above the runtime (the device layer) failed; its message says where and why.
    #[error("{reason}")]
    Layer {
        /// Which layer (`device`).
        layer: &'static str,
        /// Its message.
        reason: String,
    },
    /// The runtime is not initialized (or already finalized).
    #[error("oxshmem is not initialized (call shmem_init first)")]
    NotInitialized,
    /// `init` was called on an initialized runtime.
    #[error("oxshmem is already initialized")]
    AlreadyInitialized,
    /// The runtime was finalized; nothing but process exit may follow.
    #[error("oxshmem has been finalized (shmem_finalize was called)")]
    Finalized,
    /// A PE number outside `0..n_pes`.
    #[error("PE {pe} is out of range (0..{n_pes})")]
    PeOutOfRange {
        /// The PE asked for (wide enough for any C `int` and any Rust `usize`).
        pe: i128,
        /// Number of PEs in the job (or team).
        n_pes: usize,
    },
    /// An address range that lies outside every symmetric segment.
    #[error(
        "{what} {addr:#x} (+{len} bytes) is not symmetric (not inside the symmetric heap or any other symmetric segment)"
    )]
    NotSymmetric {
        /// Which argument (`destination`, `source`, `ivar`, ...).
        what: &'static str,
        /// The address.
        addr: usize,
        /// Length of the access in bytes.
        len: usize,
    },
    /// An index/length pair outside a symmetric object.
    #[error("index range {start}..{end} is outside the symmetric object of {len} elements")]
    OutOfBounds {
        /// First element.
        start: usize,
        /// One past the last element.
        end: usize,
        /// Length of the object.
        len: usize,
    },
    /// Two lengths that must agree do not.
    #[error("size mismatch: {what}")]
    SizeMismatch {
        /// Description of the mismatch.
        what: String,
    },
    /// A size whose byte count overflows, or that is zero where zero is not allowed.
    #[error("invalid size: {what}")]
    InvalidSize {
        /// Description.
        what: String,
    },
    /// The symmetric heap cannot satisfy a request.
    #[error(
        "cannot allocate {asked} bytes: symmetric heap has {free} bytes free (largest free block {largest}); raise SHMEM_SYMMETRIC_SIZE (now {total} bytes)"
    )]
    OutOfMemory {
        /// Bytes asked for (after alignment).
        asked: usize,
        /// Bytes free in total.
        free: usize,
        /// Largest contiguous free block.
        largest: usize,
        /// Heap size.
        total: usize,
    },
    /// A pointer passed to free/realloc that was not returned by the allocator.
    #[error("{addr:#x} is not the start of a live symmetric allocation")]
    BadFree {
        /// The address.
        addr: usize,
    },
    /// An atomic target that is not naturally aligned.
    #[error("atomic target {addr:#x} is not aligned to {width} bytes")]
    Misaligned {
        /// The address.
        addr: usize,
        /// The operand width.
        width: usize,
    },
    /// An alignment that is not a power of two, or larger than the heap's base alignment.
    #[error("alignment {align} is not a power of two of at most 1 GiB")]
    BadAlignment {
        /// The alignment asked for.
        align: usize,
    },
    /// An invalid argument value (bad comparison operator, bad hints, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// No transport reaches the peer.
    #[error(
        "no transport reaches PE {pe} (host {host}): it is on another host and this build has no network transport (rebuild with --features ofi)"
    )]
    Unreachable {
        /// The peer.
        pe: usize,
        /// Its host name.
        host: String,
    },
    /// The network transport failed: setup, a peer that cannot be reached or did not answer in
    /// time, or an operation that completed with an error. The text names the peer and the step.
    #[error("{0}")]
    Transport(String),
    /// A configuration variable has a bad value.
    #[error("environment variable {var}={value:?}: {reason}")]
    Config {
        /// Variable name.
        var: &'static str,
        /// Its value.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// A collective was called with arguments that differ between PEs.
    #[error("collective arguments differ between PEs: {0}")]
    CollectiveMismatch(String),
    /// PEs of a team are in different collectives: another routine (a barrier against a
    /// reduction, a sync against a barrier), or another collective of the team's sequence (a
    /// PE skipped one). The text names the team and both calls with their numbers on it;
    /// the team takes no collective any more on this PE.
    #[error("collective mismatch on {0}")]
    CollectiveSequence(String),
    /// The bootstrap (launcher connection) failed.
    #[error("{0}")]
    Bootstrap(String),
    /// An operating-system call failed (`errno` empty: `call` says it all).
    #[error("{}", os_text(call, errno))]
    Os {
        /// The call, with its subject (`mmap of PE 2's heap`).
        call: String,
        /// The OS error text.
        errno: String,
    },
}

/// Result alias of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn os_text(call: &str, errno: &str) -> String {
    if errno.is_empty() { call.to_string() } else { format!("{call} failed: {errno}") }
}
