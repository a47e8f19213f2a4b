//! The NIC-layout trait: how a NIC-neutral work request becomes a NIC's work-queue entries
//! (producer side, on the device) and back (consumer side, in the software NIC), and what its
//! doorbell and completion entries look like.
//!
//! The device API builds a [`WorkRequest`]; the queue code ([`super::qp`]) reserves slots,
//! publishes and rings without knowing the format; only a [`NicLayout`] knows bytes. So a
//! second NIC's format is a second implementation of this trait beside [`Mlx5`] — HiSilicon's
//! hns RoCE ([`Hns`], in [`super::hns`]) is one — and the device API does not change, which
//! NVSHMEM's IBGDA, written against mlx5 only, cannot offer.
//!
//! Not every NIC expresses every request: hns has no masked atomics, no 4-byte atomics, no
//! DUMP and at most 32 inline bytes. [`NicLayout::supports`] says what a layout expresses; a
//! device side generic over the layout asks it before posting and falls back (a
//! compare-and-swap loop for an atomic, a write from a registered buffer for a long inline
//! payload) — the channel's device code, on mlx5 queues for now, posts only what mlx5
//! expresses. A request a layout refuses is never silently
//! changed into another: encoded anyway, it becomes a WQE its NIC fails with an error
//! completion where the format allows one (hns: an invalid opcode), so the queue stops with a
//! clear syndrome instead of doing something else.

use bytemuck::{Zeroable, bytes_of};

pub use super::hns::Hns;
use super::mlx5::{
    self, AtomicSeg, Be16, Be32, Be64, Cqe64, CtrlSeg, DataSeg, ErrCqe, INLINE_SEG, InlineSeg, MaskedCs32Seg,
    MaskedCs64Seg, MaskedFa32Seg, MaskedFa64Seg, RaddrSeg, SEND_WQE_BB, cqe_op, ctrl, opcode, opmod, syndrome, wqe,
};

/// One queue slot.
pub type Wqebb = [u8; SEND_WQE_BB];

/// Most bytes one WQE spans (four slots; DS at most 16).
pub const MAX_WQE_BYTES: usize = 4 * SEND_WQE_BB;

/// Most bytes an mlx5 inline write carries (four slots: 256 - 16 ctrl - 16 raddr - 4 header);
/// each layout's own limit is its [`NicLayout::MAX_INLINE`] (hns: 32).
pub const MAX_INLINE: usize = 4 * SEND_WQE_BB - 36;

/// A local buffer: address, length (mlx5: below 2^31 — the top bit of a data segment's byte
/// count is where an inline segment's flag sits) and the key of its registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sge {
    /// Local address.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
    /// Local key.
    pub lkey: u32,
}

/// A remote buffer: the target's address and its key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Remote {
    /// Remote address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// An atomic in the general form NICs execute: a masked fetch-and-add or a masked
/// compare-and-swap. Every OpenSHMEM atomic is one of these (see [`Amo::to_nic`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicAtomic {
    /// Fetch-and-add in fields: a set bit of `boundary` is the top bit of a field, past which
    /// no carry propagates (0: plain add; all ones: XOR).
    FetchAdd {
        /// Operand.
        add: u64,
        /// Field boundaries.
        boundary: u64,
    },
    /// Compare-and-swap under masks: if `old & compare_mask == compare & compare_mask`, the
    /// target becomes `old & !swap_mask | swap & swap_mask`.
    CompareSwap {
        /// Swap operand.
        swap: u64,
        /// Compare operand.
        compare: u64,
        /// Bits to swap.
        swap_mask: u64,
        /// Bits to compare.
        compare_mask: u64,
    },
}

impl NicAtomic {
    /// Whether this is a plain compare-and-swap (both masks all ones): what every RDMA NIC's
    /// standard 8-byte `ATOMIC_CMP_AND_SWP` does.
    pub fn is_plain_compare_swap(&self) -> bool {
        matches!(self, NicAtomic::CompareSwap { swap_mask: u64::MAX, compare_mask: u64::MAX, .. })
    }

    /// Whether this is a plain fetch-and-add (no field boundaries): what every RDMA NIC's
    /// standard 8-byte `ATOMIC_FETCH_AND_ADD` does.
    pub fn is_plain_fetch_add(&self) -> bool {
        matches!(self, NicAtomic::FetchAdd { boundary: 0, .. })
    }

    /// The new value of a target holding `old` (`width` 4 or 8 bytes), as the NIC computes it.
    pub fn apply(self, old: u64, width: u32) -> u64 {
        let m = if width == 4 { u64::from(u32::MAX) } else { u64::MAX };
        let old = old & m;
        match self {
            NicAtomic::FetchAdd { add, boundary } => {
                let (add, boundary) = (add & m, boundary & m);
                if boundary == 0 {
                    return old.wrapping_add(add) & m;
                }
                // Add field by field: a field ends at (and includes) each boundary bit.
                let mut out = 0u64;
                let mut lo = 0u32;
                let bits = width * 8;
                for b in 0..bits {
                    if boundary >> b & 1 == 1 || b == bits - 1 {
                        let fm = if b - lo + 1 == 64 { u64::MAX } else { ((1u64 << (b - lo + 1)) - 1) << lo };
                        out |= ((old & fm).wrapping_add(add & fm)) & fm;
                        lo = b + 1;
                    }
                }
                out
            }
            NicAtomic::CompareSwap { swap, compare, swap_mask, compare_mask } => {
                if old & compare_mask & m == compare & compare_mask & m {
                    (old & !swap_mask | swap & swap_mask) & m
                } else {
                    old
                }
            }
        }
    }
}

/// An OpenSHMEM/NVSHMEM atomic, as the device API asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amo {
    /// Atomic read.
    Fetch,
    /// Set (and swap: the same WQE, the old value fetched or sunk).
    Set(u64),
    /// Compare-and-swap.
    CompareSwap {
        /// Compare operand.
        cond: u64,
        /// New value.
        value: u64,
    },
    /// Add (and inc: add 1).
    Add(u64),
    /// AND.
    And(u64),
    /// OR.
    Or(u64),
    /// XOR.
    Xor(u64),
}

impl Amo {
    /// The general form, as NVSHMEM's IBGDA encodes each op (see the reference's table).
    pub fn to_nic(self) -> NicAtomic {
        let all = u64::MAX;
        match self {
            Amo::Fetch => NicAtomic::FetchAdd { add: 0, boundary: 0 },
            Amo::Add(v) => NicAtomic::FetchAdd { add: v, boundary: 0 },
            Amo::Xor(v) => NicAtomic::FetchAdd { add: v, boundary: all },
            Amo::Set(v) => NicAtomic::CompareSwap { swap: v, compare: 0, swap_mask: all, compare_mask: 0 },
            Amo::And(v) => NicAtomic::CompareSwap { swap: v, compare: 0, swap_mask: !v, compare_mask: 0 },
            Amo::Or(v) => NicAtomic::CompareSwap { swap: v, compare: 0, swap_mask: v, compare_mask: 0 },
            Amo::CompareSwap { cond, value } => {
                NicAtomic::CompareSwap { swap: value, compare: cond, swap_mask: all, compare_mask: all }
            }
        }
    }
}

/// A NIC-neutral work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkRequest<'a> {
    /// RDMA write from a registered local buffer.
    Write {
        /// Source.
        local: Sge,
        /// Destination.
        remote: Remote,
    },
    /// RDMA write of bytes carried in the WQE itself (at most [`MAX_INLINE`]).
    WriteInline {
        /// Payload.
        data: &'a [u8],
        /// Destination.
        remote: Remote,
    },
    /// RDMA read into a registered local buffer.
    Read {
        /// Destination.
        local: Sge,
        /// Source.
        remote: Remote,
    },
    /// An atomic on 4 or 8 bytes; the prior value lands at `result`.
    Atomic {
        /// The operation.
        op: NicAtomic,
        /// 4 or 8.
        width: u32,
        /// Target.
        remote: Remote,
        /// Where the prior value goes (`len` = width).
        result: Sge,
    },
    /// Nothing (a completion point).
    Nop,
    /// Read one local byte (a consistency flush, with a fence).
    Dump {
        /// The byte.
        local: Sge,
    },
}

/// How a WQE is flagged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WqeFlags {
    /// Generate a completion entry.
    pub signal: bool,
    /// Do not start before every earlier WQE of the queue is complete.
    pub fence: bool,
}

/// A decoded work request; an inline payload is borrowed from the WQE's bytes (the decoder is
/// on the software NIC's per-WQE path: no copy of the payload, and a value of a few words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// See [`WorkRequest::Write`].
    Write {
        /// Source.
        local: Sge,
        /// Destination.
        remote: Remote,
    },
    /// See [`WorkRequest::WriteInline`].
    WriteInline {
        /// Payload.
        data: &'a [u8],
        /// Destination.
        remote: Remote,
    },
    /// See [`WorkRequest::Read`].
    Read {
        /// Destination.
        local: Sge,
        /// Source.
        remote: Remote,
    },
    /// See [`WorkRequest::Atomic`].
    Atomic {
        /// The operation.
        op: NicAtomic,
        /// 4 or 8.
        width: u32,
        /// Target.
        remote: Remote,
        /// Prior value's destination.
        result: Sge,
    },
    /// See [`WorkRequest::Nop`].
    Nop,
    /// See [`WorkRequest::Dump`].
    Dump {
        /// The byte.
        local: Sge,
    },
}

impl<'a> Decoded<'a> {
    /// The request this WQE stands for (what encoding it again starts from).
    pub fn as_request(&self) -> WorkRequest<'a> {
        match self {
            Decoded::Write { local, remote } => WorkRequest::Write { local: *local, remote: *remote },
            Decoded::WriteInline { data, remote } => WorkRequest::WriteInline { data, remote: *remote },
            Decoded::Read { local, remote } => WorkRequest::Read { local: *local, remote: *remote },
            Decoded::Atomic { op, width, remote, result } => {
                WorkRequest::Atomic { op: *op, width: *width, remote: *remote, result: *result }
            }
            Decoded::Nop => WorkRequest::Nop,
            Decoded::Dump { local } => WorkRequest::Dump { local: *local },
        }
    }
}

/// One decoded WQE and its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedWqe<'a> {
    /// What to do.
    pub op: Decoded<'a>,
    /// The NIC's opcode (for completion entries and errors).
    pub opcode: u8,
    /// Flags.
    pub flags: WqeFlags,
    /// Slots the WQE spans.
    pub wqebbs: usize,
}

/// Why a WQE cannot be decoded: a syndrome and the opcode seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    /// The NIC's error syndrome.
    pub syndrome: u8,
    /// The opcode (0 if unreadable).
    pub opcode: u8,
    /// Slots to skip (at least 1).
    pub wqebbs: usize,
}

/// Why the NIC fails a WQE it could read, NIC-neutral (the software NIC's execution errors);
/// each layout has its NIC's syndrome for each ([`NicLayout::syndrome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A length is wrong (a WQE running past the announced ones, a short result buffer).
    LocalLength,
    /// The WQE is malformed or asks for what the NIC does not do.
    LocalQpOp,
    /// A local key or address is not registered.
    LocalProt,
    /// A remote key or address is not registered at the target (or misaligned for an atomic).
    RemoteAccess,
    /// The target, or the way to it, failed the operation.
    RemoteOp,
}

/// A completion entry, as the device reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Nothing written yet.
    None,
    /// Done up to and including the WQE starting at slot index `wqe_counter` (16 bits).
    Ok {
        /// Index of the WQE's first slot.
        wqe_counter: u16,
        /// Owner bit (normal CQ mode), NIC-neutral: the parity of the CQ lap the entry was
        /// written in (0 on the first pass over the CQ). Each layout writes it as its NIC
        /// does: mlx5 as is, hns inverted (its hardware sets the bit on even laps).
        owner: u8,
    },
    /// The WQE at `wqe_counter` failed.
    Err {
        /// Index of the WQE's first slot.
        wqe_counter: u16,
        /// Owner bit (as for `Ok`).
        owner: u8,
        /// Syndrome.
        syndrome: u8,
        /// The failed WQE's opcode.
        opcode: u8,
    },
}

/// Which queue format a NIC reads: the value behind a channel whose queues are chosen at run
/// time (a provider's [`describe`](crate::nic::provider::NicProvider::describe)). Code generic
/// over [`NicLayout`] is instantiated for each by [`with_layout!`](crate::with_layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Mellanox/NVIDIA ConnectX ([`Mlx5`]).
    #[default]
    Mlx5,
    /// HiSilicon hns RoCE ([`Hns`]).
    Hns,
}

impl Layout {
    /// Its name (`OXSHMEM_SOFTNIC_LAYOUT`'s values).
    pub fn name(self) -> &'static str {
        match self {
            Layout::Mlx5 => Mlx5::NAME,
            Layout::Hns => super::hns::Hns::NAME,
        }
    }

    /// The layout named `name`, if any.
    pub fn from_name(name: &str) -> Option<Layout> {
        [Layout::Mlx5, Layout::Hns].into_iter().find(|l| l.name() == name)
    }
}

/// Evaluates `$body` with the type `$L` naming the [`NicLayout`] of the run-time [`Layout`]
/// `$layout`: one instantiation per layout, the choice made once per call.
#[macro_export]
macro_rules! with_layout {
    ($layout:expr, $L:ident => $body:expr) => {
        match $layout {
            $crate::ibgda::layout::Layout::Mlx5 => {
                type $L = $crate::ibgda::layout::Mlx5;
                $body
            }
            $crate::ibgda::layout::Layout::Hns => {
                type $L = $crate::ibgda::hns::Hns;
                $body
            }
        }
    };
}

/// A NIC's queue formats.
pub trait NicLayout: Send + Sync + 'static {
    /// The NIC family's name.
    const NAME: &'static str;

    /// This format as a run-time value.
    const LAYOUT: Layout;

    /// Most payload bytes a [`WorkRequest::WriteInline`] may carry in this format.
    const MAX_INLINE: usize;

    /// The 8-byte word of a completion entry that says whether and how it completed (mlx5:
    /// word 7, with `op_own`; hns: word 0, with owner, status and index). The queue stores it
    /// last, with release, and loads it first, with acquire: whoever sees a new entry there
    /// sees the rest of it, and everything the NIC did before writing it.
    const CQE_VALID_WORD: usize;

    /// Whether this format expresses `wr` — encodes it to WQEs that its NIC executes as `wr`
    /// (and that [`decode`](Self::decode) reads back as `wr`). Device code generic over the
    /// layout asks this before posting and falls back where a NIC lacks an operation (see the
    /// module docs).
    fn supports(wr: &WorkRequest<'_>) -> bool;

    /// Slots `wr` takes.
    fn wqebbs(wr: &WorkRequest<'_>) -> usize;

    /// Writes `wr` as the WQE at producer index `idx` of queue `qpn`, whose ring has `nwqes`
    /// slots (a power of two), into `out` (`wqebbs(wr)` slots, overwritten whole). The ring's
    /// size matters to formats with an owner bit that flips each lap (hns), not to those that
    /// carry the index itself (mlx5). A request [`supports`](Self::supports) refuses is the
    /// caller's error: a layout then writes a WQE its NIC fails with an error completion where
    /// its format allows (hns: an invalid opcode), or may panic (mlx5: an inline payload past
    /// four slots).
    fn encode(wr: &WorkRequest<'_>, idx: u64, nwqes: u64, qpn: u32, flags: WqeFlags, out: &mut [Wqebb]);

    /// Reads the WQE that starts in `first` and is expected at index `idx` of queue `qpn`, in a
    /// ring of `nwqes` slots; `next(i)` returns its `i`-th following slot (ring wrap is the
    /// caller's business). A WQE of several slots is gathered into `gather`; an inline payload
    /// is borrowed from there or from `first`.
    fn decode<'a>(
        first: &'a Wqebb,
        idx: u64,
        nwqes: u64,
        qpn: u32,
        next: &dyn Fn(usize) -> Wqebb,
        gather: &'a mut [u8; MAX_WQE_BYTES],
    ) -> Result<DecodedWqe<'a>, DecodeError>;

    /// The NIC's error syndrome for a NIC-neutral failure (what its error CQE carries).
    fn syndrome(f: Failure) -> u8;

    /// The doorbell record's value after producer index `prod` (host order; stored as is).
    fn dbr_value(prod: u64) -> u32;

    /// Producer index (low 16 bits) from a doorbell record.
    fn dbr_prod(dbr: u32) -> u16;

    /// The 8 bytes written to the doorbell register (as a native-endian word: its bytes in
    /// memory order are the register's).
    fn doorbell(prod: u64, qpn: u32) -> u64;

    /// The producer index (low 16 bits) a doorbell register write carries: what the NIC
    /// reads from the register ([`doorbell`](Self::doorbell)'s inverse).
    fn doorbell_prod(value: u64) -> u16;

    /// A completion entry.
    fn encode_cqe(c: Completion, qpn: u32) -> [u8; 64];

    /// Reads a completion entry.
    fn decode_cqe(cqe: &[u8; 64]) -> Completion;
}

/// Mellanox/NVIDIA ConnectX (mlx5) queues, as NVSHMEM's IBGDA writes them on RC queues.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mlx5;

fn ds_of(wr: &WorkRequest<'_>) -> usize {
    match wr {
        WorkRequest::Write { .. } | WorkRequest::Read { .. } => 3,
        WorkRequest::WriteInline { data, .. } => 2 + (4 + data.len()).div_ceil(16),
        WorkRequest::Atomic { op, width, .. } => match (op, width) {
            (NicAtomic::CompareSwap { .. }, 8) if !is_std_cs(op) => 5,
            _ => 4,
        },
        WorkRequest::Nop => 1,
        WorkRequest::Dump { .. } => 2,
    }
}

/// An 8-byte masked CS that is a plain CS (both masks all ones) uses the standard opcode.
fn is_std_cs(op: &NicAtomic) -> bool {
    op.is_plain_compare_swap()
}

/// An 8-byte masked FA with no boundaries is the standard fetch-and-add.
fn is_std_fa(op: &NicAtomic) -> bool {
    op.is_plain_fetch_add()
}

pub(crate) fn put<T: bytemuck::Pod>(buf: &mut [u8], at: usize, v: &T) {
    buf[at..at + size_of::<T>()].copy_from_slice(bytes_of(v));
}

pub(crate) fn get<T: bytemuck::Pod>(buf: &[u8], at: usize) -> T {
    bytemuck::pod_read_unaligned::<T>(&buf[at..at + size_of::<T>()])
}

impl NicLayout for Mlx5 {
    const NAME: &'static str = "mlx5";
    const LAYOUT: Layout = Layout::Mlx5;
    const MAX_INLINE: usize = MAX_INLINE;
    /// `op_own` is byte 63.
    const CQE_VALID_WORD: usize = 7;

    fn supports(wr: &WorkRequest<'_>) -> bool {
        match wr {
            // A data segment's byte count stays below 2^31: its top bit is an inline segment's flag.
            WorkRequest::Write { local, .. } => local.len & INLINE_SEG == 0,
            WorkRequest::Read { .. } | WorkRequest::Nop | WorkRequest::Dump { .. } => true,
            WorkRequest::WriteInline { data, .. } => data.len() <= MAX_INLINE,
            // Standard and extended atomics on 4 or 8 bytes; the result buffer, if any, holds
            // the prior value.
            WorkRequest::Atomic { op, width, result, .. } => {
                matches!(width, 4 | 8) && (result.len == 0 || result.len >= width_of(op_code_of(op, *width), *width))
            }
        }
    }

    fn syndrome(f: Failure) -> u8 {
        match f {
            Failure::LocalLength => syndrome::LOCAL_LENGTH_ERR,
            Failure::LocalQpOp => syndrome::LOCAL_QP_OP_ERR,
            Failure::LocalProt => syndrome::LOCAL_PROT_ERR,
            Failure::RemoteAccess => syndrome::REMOTE_ACCESS_ERR,
            Failure::RemoteOp => syndrome::REMOTE_OP_ERR,
        }
    }

    fn wqebbs(wr: &WorkRequest<'_>) -> usize {
        (ds_of(wr) * 16).div_ceil(SEND_WQE_BB)
    }

    fn encode(wr: &WorkRequest<'_>, idx: u64, _nwqes: u64, qpn: u32, flags: WqeFlags, out: &mut [Wqebb]) {
        let ds = ds_of(wr);
        let n = ds * 16;
        // Segments are built straight into the slots, which are contiguous bytes.
        let buf = &mut out.as_flattened_mut()[..n.div_ceil(SEND_WQE_BB) * SEND_WQE_BB];
        buf.fill(0);
        let fm_ce_se = if flags.signal { ctrl::CQ_UPDATE } else { 0 } | if flags.fence { ctrl::FENCE } else { 0 };
        let (op, om) = match wr {
            WorkRequest::Write { .. } | WorkRequest::WriteInline { .. } => (opcode::RDMA_WRITE, 0),
            WorkRequest::Read { .. } => (opcode::RDMA_READ, 0),
            WorkRequest::Nop => (opcode::NOP, 0),
            WorkRequest::Dump { .. } => (opcode::DUMP, 0),
            WorkRequest::Atomic { op, width: 8, .. } if is_std_cs(op) => (opcode::ATOMIC_CS, 0),
            WorkRequest::Atomic { op, width: 8, .. } if is_std_fa(op) => (opcode::ATOMIC_FA, 0),
            WorkRequest::Atomic { op: NicAtomic::CompareSwap { .. }, width, .. } => {
                (opcode::ATOMIC_MASKED_CS, if *width == 8 { opmod::EXT_ATOMIC_8B } else { opmod::EXT_ATOMIC_4B })
            }
            WorkRequest::Atomic { op: NicAtomic::FetchAdd { .. }, width, .. } => {
                (opcode::ATOMIC_MASKED_FA, if *width == 8 { opmod::EXT_ATOMIC_8B } else { opmod::EXT_ATOMIC_4B })
            }
        };
        put(buf, wqe::CTRL, &CtrlSeg::new(idx as u16, op, om, qpn, fm_ce_se, ds as u8));
        let raddr = |r: &Remote| RaddrSeg { raddr: Be64::new(r.addr), rkey: Be32::new(r.rkey), reserved: Be32(0) };
        let data = |s: &Sge| DataSeg { byte_count: Be32::new(s.len), lkey: Be32::new(s.lkey), addr: Be64::new(s.addr) };
        match wr {
            WorkRequest::Write { local, remote } | WorkRequest::Read { local, remote } => {
                put(buf, wqe::RADDR, &raddr(remote));
                put(buf, wqe::PAYLOAD, &data(local));
            }
            WorkRequest::WriteInline { data: d, remote } => {
                put(buf, wqe::RADDR, &raddr(remote));
                put(buf, wqe::PAYLOAD, &InlineSeg { byte_count: Be32::new(d.len() as u32 | INLINE_SEG) });
                buf[wqe::INLINE_DATA..wqe::INLINE_DATA + d.len()].copy_from_slice(d);
            }
            WorkRequest::Atomic { op: a, width, remote, result } => {
                put(buf, wqe::RADDR, &raddr(remote));
                let mut at = wqe::PAYLOAD;
                match (*a, *width) {
                    (NicAtomic::CompareSwap { swap, compare, .. }, 8) if is_std_cs(a) => {
                        put(buf, at, &AtomicSeg { swap_add: Be64::new(swap), compare: Be64::new(compare) });
                    }
                    (NicAtomic::FetchAdd { add, .. }, 8) if is_std_fa(a) => {
                        put(buf, at, &AtomicSeg { swap_add: Be64::new(add), compare: Be64(0) });
                    }
                    (NicAtomic::CompareSwap { swap, compare, swap_mask, compare_mask }, 8) => {
                        let s = MaskedCs64Seg {
                            swap: Be64::new(swap),
                            compare: Be64::new(compare),
                            swap_mask: Be64::new(swap_mask),
                            compare_mask: Be64::new(compare_mask),
                        };
                        put(buf, at, &s);
                        at += 16;
                    }
                    (NicAtomic::CompareSwap { swap, compare, swap_mask, compare_mask }, _) => {
                        let s = MaskedCs32Seg {
                            swap: Be32::new(swap as u32),
                            compare: Be32::new(compare as u32),
                            swap_mask: Be32::new(swap_mask as u32),
                            compare_mask: Be32::new(compare_mask as u32),
                        };
                        put(buf, at, &s);
                    }
                    (NicAtomic::FetchAdd { add, boundary }, 8) => {
                        put(buf, at, &MaskedFa64Seg { add: Be64::new(add), field_boundary: Be64::new(boundary) });
                    }
                    (NicAtomic::FetchAdd { add, boundary }, _) => {
                        let s = MaskedFa32Seg {
                            add: Be32::new(add as u32),
                            field_boundary: Be32::new(boundary as u32),
                            reserved: Be64(0),
                        };
                        put(buf, at, &s);
                    }
                }
                put(buf, at + 16, &data(result));
            }
            WorkRequest::Nop => {}
            WorkRequest::Dump { local } => put(buf, wqe::RADDR, &data(local)),
        }
    }

    #[inline]
    fn decode<'a>(
        first: &'a Wqebb,
        idx: u64,
        _nwqes: u64,
        qpn: u32,
        next: &dyn Fn(usize) -> Wqebb,
        gather: &'a mut [u8; MAX_WQE_BYTES],
    ) -> Result<DecodedWqe<'a>, DecodeError> {
        let c: CtrlSeg = get(first, 0);
        let (op, om, ds) = (c.opcode(), c.opmod(), c.ds() as usize);
        // A DS outside 1..=16 frames nothing: count the one slot read.
        let wqebbs = if ds == 0 || ds > 16 { 1 } else { (ds * 16).div_ceil(SEND_WQE_BB) };
        let fail = |s: u8| Err(DecodeError { syndrome: s, opcode: op, wqebbs });
        if ds == 0 || ds > 16 {
            return fail(syndrome::LOCAL_LENGTH_ERR);
        }
        if c.qpn() != qpn || c.wqe_index() != idx as u16 {
            return fail(syndrome::LOCAL_QP_OP_ERR);
        }
        // A one-slot WQE (most of them) is read in place; longer ones are gathered.
        let buf: &'a [u8] = if wqebbs == 1 {
            first
        } else {
            gather[..SEND_WQE_BB].copy_from_slice(first);
            for i in 1..wqebbs {
                gather[i * SEND_WQE_BB..(i + 1) * SEND_WQE_BB].copy_from_slice(&next(i));
            }
            &gather[..wqebbs * SEND_WQE_BB]
        };
        let fm = c.fm_ce_se;
        let flags = WqeFlags {
            signal: fm & ctrl::CE_MASK == ctrl::CQ_UPDATE,
            fence: matches!(fm & ctrl::FENCE_MASK, ctrl::FENCE_MODE_FENCE | ctrl::STRONG_ORDERING | ctrl::FENCE),
        };
        let raddr = |at: usize| {
            let r: RaddrSeg = get(buf, at);
            Remote { addr: r.raddr.get(), rkey: r.rkey.get() }
        };
        let sge = |at: usize| {
            let d: DataSeg = get(buf, at);
            Sge { addr: d.addr.get(), len: d.byte_count.get(), lkey: d.lkey.get() }
        };
        let width = match om {
            opmod::EXT_ATOMIC_4B => 4,
            opmod::EXT_ATOMIC_8B => 8,
            _ => 0,
        };
        let need = |n: usize| if ds == n { Ok(()) } else { Err(syndrome::LOCAL_LENGTH_ERR) };
        let decoded: Result<Decoded<'a>, u8> = (|| {
            Ok(match op {
                opcode::NOP => Decoded::Nop,
                opcode::DUMP => {
                    need(2)?;
                    Decoded::Dump { local: sge(16) }
                }
                opcode::RDMA_WRITE => {
                    let hdr = u32::from_be_bytes(buf[32..36].try_into().expect("4 bytes"));
                    if hdr & INLINE_SEG != 0 {
                        let len = (hdr & !INLINE_SEG) as usize;
                        if len > MAX_INLINE || ds != 2 + (4 + len).div_ceil(16) {
                            return Err(syndrome::LOCAL_LENGTH_ERR);
                        }
                        Decoded::WriteInline { data: &buf[36..36 + len], remote: raddr(16) }
                    } else {
                        need(3)?;
                        Decoded::Write { local: sge(32), remote: raddr(16) }
                    }
                }
                opcode::RDMA_READ => {
                    need(3)?;
                    Decoded::Read { local: sge(32), remote: raddr(16) }
                }
                opcode::ATOMIC_CS | opcode::ATOMIC_FA => {
                    need(4)?;
                    let a: AtomicSeg = get(buf, 32);
                    let nic = if op == opcode::ATOMIC_CS {
                        NicAtomic::CompareSwap {
                            swap: a.swap_add.get(),
                            compare: a.compare.get(),
                            swap_mask: u64::MAX,
                            compare_mask: u64::MAX,
                        }
                    } else {
                        NicAtomic::FetchAdd { add: a.swap_add.get(), boundary: 0 }
                    };
                    Decoded::Atomic { op: nic, width: 8, remote: raddr(16), result: sge(48) }
                }
                opcode::ATOMIC_MASKED_CS if width == 8 => {
                    need(5)?;
                    let s: MaskedCs64Seg = get(buf, 32);
                    let nic = NicAtomic::CompareSwap {
                        swap: s.swap.get(),
                        compare: s.compare.get(),
                        swap_mask: s.swap_mask.get(),
                        compare_mask: s.compare_mask.get(),
                    };
                    Decoded::Atomic { op: nic, width, remote: raddr(16), result: sge(64) }
                }
                opcode::ATOMIC_MASKED_CS if width == 4 => {
                    need(4)?;
                    let s: MaskedCs32Seg = get(buf, 32);
                    let nic = NicAtomic::CompareSwap {
                        swap: u64::from(s.swap.get()),
                        compare: u64::from(s.compare.get()),
                        swap_mask: u64::from(s.swap_mask.get()),
                        compare_mask: u64::from(s.compare_mask.get()),
                    };
                    Decoded::Atomic { op: nic, width, remote: raddr(16), result: sge(48) }
                }
                opcode::ATOMIC_MASKED_FA if width == 8 => {
                    need(4)?;
                    let s: MaskedFa64Seg = get(buf, 32);
                    let nic = NicAtomic::FetchAdd { add: s.add.get(), boundary: s.field_boundary.get() };
                    Decoded::Atomic { op: nic, width, remote: raddr(16), result: sge(48) }
                }
                opcode::ATOMIC_MASKED_FA if width == 4 => {
                    need(4)?;
                    let s: MaskedFa32Seg = get(buf, 32);
                    let nic = NicAtomic::FetchAdd {
                        add: u64::from(s.add.get()),
                        boundary: u64::from(s.field_boundary.get()),
                    };
                    Decoded::Atomic { op: nic, width, remote: raddr(16), result: sge(48) }
                }
                _ => return Err(syndrome::LOCAL_QP_OP_ERR),
            })
        })();
        match decoded {
            Ok(Decoded::Atomic { result, .. }) if result.len != 0 && result.len < width_of(op, width) => {
                fail(syndrome::LOCAL_LENGTH_ERR)
            }
            Ok(d) => Ok(DecodedWqe { op: d, opcode: op, flags, wqebbs }),
            Err(s) => fail(s),
        }
    }

    fn dbr_value(prod: u64) -> u32 {
        // The send counter is stored big-endian: keep the wire bytes in the host word.
        (prod as u32 & mlx5::DBR_PROD_MASK).to_be()
    }

    fn dbr_prod(dbr: u32) -> u16 {
        u32::from_be(dbr) as u16
    }

    fn doorbell(prod: u64, qpn: u32) -> u64 {
        // The first 8 bytes of a control segment: opmod_idx_opcode = prod << 8, qpn_ds = qpn << 8.
        let c = CtrlSeg::new(prod as u16, 0, 0, qpn, 0, 0);
        let b = bytes_of(&c);
        u64::from_ne_bytes(b[..8].try_into().expect("8 bytes"))
    }

    fn doorbell_prod(value: u64) -> u16 {
        // opmod_idx_opcode, big-endian: the index in bits 8..24.
        (u32::from_be_bytes(value.to_ne_bytes()[..4].try_into().expect("4 bytes")) >> 8) as u16
    }

    fn encode_cqe(c: Completion, qpn: u32) -> [u8; 64] {
        let mut out = [0u8; 64];
        match c {
            Completion::None => {
                let mut q = Cqe64::zeroed();
                q.op_own = cqe_op::INVALID << mlx5::shift::CQE_OPCODE;
                out.copy_from_slice(bytes_of(&q));
            }
            Completion::Ok { wqe_counter, owner } => {
                let mut q = Cqe64::zeroed();
                q.sop_drop_qpn = Be32::new(qpn & 0x00ff_ffff);
                q.wqe_counter = Be16::new(wqe_counter);
                q.op_own = (cqe_op::REQ << mlx5::shift::CQE_OPCODE) | (owner & mlx5::CQE_OWNER_MASK);
                out.copy_from_slice(bytes_of(&q));
            }
            Completion::Err { wqe_counter, owner, syndrome, opcode } => {
                let mut q = ErrCqe::zeroed();
                q.syndrome = syndrome;
                q.s_wqe_opcode_qpn = Be32::new((u32::from(opcode) << 24) | (qpn & 0x00ff_ffff));
                q.wqe_counter = Be16::new(wqe_counter);
                q.op_own = (cqe_op::REQ_ERR << mlx5::shift::CQE_OPCODE) | (owner & mlx5::CQE_OWNER_MASK);
                out.copy_from_slice(bytes_of(&q));
            }
        }
        out
    }

    fn decode_cqe(cqe: &[u8; 64]) -> Completion {
        let op_own = cqe[63];
        let owner = op_own & mlx5::CQE_OWNER_MASK;
        match op_own >> mlx5::shift::CQE_OPCODE {
            cqe_op::REQ => {
                let q: Cqe64 = get(cqe, 0);
                Completion::Ok { wqe_counter: q.wqe_counter.get(), owner }
            }
            cqe_op::REQ_ERR | cqe_op::RESP_ERR => {
                let q: ErrCqe = get(cqe, 0);
                Completion::Err {
                    wqe_counter: q.wqe_counter.get(),
                    owner,
                    syndrome: q.syndrome,
                    opcode: (q.s_wqe_opcode_qpn.get() >> 24) as u8,
                }
            }
            _ => Completion::None,
        }
    }
}

fn width_of(op: u8, width: u32) -> u32 {
    if matches!(op, opcode::ATOMIC_CS | opcode::ATOMIC_FA) { 8 } else { width }
}

/// The mlx5 opcode an atomic of `width` bytes is encoded with.
fn op_code_of(op: &NicAtomic, width: u32) -> u8 {
    match (op, width) {
        (a, 8) if is_std_cs(a) => opcode::ATOMIC_CS,
        (a, 8) if is_std_fa(a) => opcode::ATOMIC_FA,
        (NicAtomic::CompareSwap { .. }, _) => opcode::ATOMIC_MASKED_CS,
        (NicAtomic::FetchAdd { .. }, _) => opcode::ATOMIC_MASKED_FA,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes `wr` and decodes it again (the slots are leaked: the result borrows them).
    fn roundtrip(wr: WorkRequest<'_>, flags: WqeFlags) -> DecodedWqe<'static> {
        let n = Mlx5::wqebbs(&wr);
        let slots: &'static mut [Wqebb] = vec![[0u8; 64]; n].leak();
        Mlx5::encode(&wr, 0x1_2345, 64, 0x42, flags, slots);
        let slots: &'static [Wqebb] = slots;
        let gather = Box::leak(Box::new([0u8; MAX_WQE_BYTES]));
        let d = Mlx5::decode(&slots[0], 0x1_2345, 64, 0x42, &|i| slots[i], gather).expect("decodes");
        assert_eq!(d.wqebbs, n);
        assert_eq!(d.flags, flags);
        d
    }

    #[test]
    fn every_request_round_trips() {
        let r = Remote { addr: 0x7f00_dead_beef, rkey: 0xabcd };
        let l = Sge { addr: 0x1000, len: 8, lkey: 7 };
        let f = WqeFlags { signal: true, fence: false };
        assert_eq!(roundtrip(WorkRequest::Write { local: l, remote: r }, f).op, Decoded::Write { local: l, remote: r });
        assert_eq!(roundtrip(WorkRequest::Read { local: l, remote: r }, f).op, Decoded::Read { local: l, remote: r });
        assert_eq!(roundtrip(WorkRequest::Nop, WqeFlags::default()).op, Decoded::Nop);
        assert_eq!(roundtrip(WorkRequest::Dump { local: l }, f).op, Decoded::Dump { local: l });
        for len in [0usize, 1, 12, 13, 28, 29, 100, MAX_INLINE] {
            let data: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
            let d =
                roundtrip(WorkRequest::WriteInline { data: &data, remote: r }, WqeFlags { signal: false, fence: true });
            let Decoded::WriteInline { data: got, remote } = d.op else { panic!("inline") };
            assert_eq!((got, remote), (&data[..], r));
        }
        for width in [4u32, 8] {
            for amo in [
                Amo::Fetch,
                Amo::Set(0x1234_5678_9abc_def0),
                Amo::CompareSwap { cond: 3, value: 9 },
                Amo::Add(5),
                Amo::And(0xf0f0),
                Amo::Or(0x0f0f),
                Amo::Xor(0xffff),
            ] {
                let m = if width == 4 { u64::from(u32::MAX) } else { u64::MAX };
                let op = amo.to_nic();
                let d = roundtrip(WorkRequest::Atomic { op, width, remote: r, result: l }, f);
                let Decoded::Atomic { op: got, width: w, remote, result } = d.op else { panic!("atomic") };
                assert_eq!((w, remote, result), (width, r, l));
                // Same semantics on every old value tried (4-byte forms keep the low half).
                for old in [0u64, 1, 0xffff_ffff, 0x1234_5678_9abc_def0, u64::MAX] {
                    assert_eq!(got.apply(old, width), op.apply(old, width), "{amo:?} w{width} old {old:#x}");
                }
                let _ = m;
            }
        }
    }

    #[test]
    fn amo_semantics_match_openshmem() {
        for width in [4u32, 8] {
            let m = if width == 4 { u64::from(u32::MAX) } else { u64::MAX };
            for old in [0u64, 1, 7, 0x8000_0000, 0xffff_ffff, 0x1234_5678_9abc_def0 & m, m] {
                let old = old & m;
                let v = 0x0ff0_f00f_1234_4321 & m;
                assert_eq!(Amo::Fetch.to_nic().apply(old, width), old);
                assert_eq!(Amo::Set(v).to_nic().apply(old, width), v);
                assert_eq!(Amo::Add(v).to_nic().apply(old, width), old.wrapping_add(v) & m);
                assert_eq!(Amo::And(v).to_nic().apply(old, width), old & v);
                assert_eq!(Amo::Or(v).to_nic().apply(old, width), old | v);
                assert_eq!(Amo::Xor(v).to_nic().apply(old, width), old ^ v);
                let cs = Amo::CompareSwap { cond: old, value: v }.to_nic().apply(old, width);
                assert_eq!(cs, v);
                let miss = Amo::CompareSwap { cond: old ^ 1, value: v }.to_nic().apply(old, width);
                assert_eq!(miss, old);
            }
        }
        // A field boundary at bit 15: two 16-bit adds in a 32-bit word, no carry between them.
        let op = NicAtomic::FetchAdd { add: 0x0001_0001, boundary: 0x0000_8000 };
        assert_eq!(op.apply(0x0000_ffff, 4), 0x0001_0000);
    }

    #[test]
    fn malformed_wqes_get_syndromes() {
        let r = Remote { addr: 1, rkey: 2 };
        let l = Sge { addr: 3, len: 4, lkey: 5 };
        let mut s = [[0u8; 64]; 1];
        Mlx5::encode(&WorkRequest::Write { local: l, remote: r }, 9, 16, 3, WqeFlags::default(), &mut s);
        let no_next = |_: usize| [0u8; 64];
        let g = &mut [0u8; MAX_WQE_BYTES];
        // Wrong index, wrong QP.
        assert_eq!(Mlx5::decode(&s[0], 10, 16, 3, &no_next, g).unwrap_err().syndrome, syndrome::LOCAL_QP_OP_ERR);
        assert_eq!(Mlx5::decode(&s[0], 9, 16, 4, &no_next, g).unwrap_err().syndrome, syndrome::LOCAL_QP_OP_ERR);
        // Unknown opcode.
        let mut bad = s[0];
        bad[3] = 0x3f;
        let e = Mlx5::decode(&bad, 9, 16, 3, &no_next, g).unwrap_err();
        assert_eq!((e.syndrome, e.opcode), (syndrome::LOCAL_QP_OP_ERR, 0x3f));
        // DS 0 and a DS that does not fit the opcode.
        let mut bad = s[0];
        bad[7] = 0;
        assert_eq!(Mlx5::decode(&bad, 9, 16, 3, &no_next, g).unwrap_err().syndrome, syndrome::LOCAL_LENGTH_ERR);
        bad[7] = 5;
        assert_eq!(Mlx5::decode(&bad, 9, 16, 3, &no_next, g).unwrap_err().syndrome, syndrome::LOCAL_LENGTH_ERR);
    }

    #[test]
    fn doorbell_and_cqes() {
        assert_eq!(Mlx5::dbr_prod(Mlx5::dbr_value(0x1_0005)), 5);
        assert_eq!(Mlx5::dbr_value(0x0102).to_ne_bytes(), [0, 0, 1, 2]);
        let db = Mlx5::doorbell(0x0304, 0x0a0b0c).to_ne_bytes();
        assert_eq!(db, [0, 3, 4, 0, 0x0a, 0x0b, 0x0c, 0]);
        // The NIC reads the index back from the register, on both layouts.
        for prod in [0u64, 1, 0x0304, 0xffff, 0x1_0007] {
            assert_eq!(Mlx5::doorbell_prod(Mlx5::doorbell(prod, 0x0a0b0c)), prod as u16);
            assert_eq!(Hns::doorbell_prod(Hns::doorbell(prod, 0x0a0b0c)), prod as u16);
        }
        for c in [
            Completion::None,
            Completion::Ok { wqe_counter: 0xfffe, owner: 1 },
            Completion::Err { wqe_counter: 17, owner: 0, syndrome: syndrome::REMOTE_ACCESS_ERR, opcode: 8 },
        ] {
            let b = Mlx5::encode_cqe(c, 0x42);
            assert_eq!(Mlx5::decode_cqe(&b), c);
        }
        let e = Mlx5::encode_cqe(Completion::Err { wqe_counter: 1, owner: 0, syndrome: 0x13, opcode: 8 }, 7);
        assert_eq!((e[55], e[63] >> 4), (0x13, cqe_op::REQ_ERR));
    }
}
