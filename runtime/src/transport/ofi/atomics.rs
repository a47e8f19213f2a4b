//! Atomics: which the provider does natively (probed with `fi_*atomicvalid` at init), and
//! [`Transport::atomic`](crate::transport::Transport::atomic) over them — a non-fetching set
//! is counted like a put, fetching operations wait for their result, and any operation the
//! provider lacks is emulated with a compare-swap loop.

use super::progress::{Call, OpLabel};
use super::{Inner, ffi};
use crate::error::Result;
use crate::transport::{AmoOp, CtxId, SymAddr, Width};

/// The fetching atomic operations, in the order of [`AmoTable::fetch`].
const FETCH_OPS: [(ffi::fi_op, &str); 6] = [
    (ffi::FI_ATOMIC_READ, "fetch (FI_ATOMIC_READ)"),
    (ffi::FI_ATOMIC_WRITE, "swap (FI_ATOMIC_WRITE)"),
    (ffi::FI_SUM, "fetch-add (FI_SUM)"),
    (ffi::FI_BAND, "fetch-and (FI_BAND)"),
    (ffi::FI_BOR, "fetch-or (FI_BOR)"),
    (ffi::FI_BXOR, "fetch-xor (FI_BXOR)"),
];

/// Which atomics the provider does natively, per width (index 0: 32-bit, 1: 64-bit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct AmoTable {
    /// Non-fetching `FI_ATOMIC_WRITE` (set).
    pub(super) write: [bool; 2],
    /// Fetching operations of [`FETCH_OPS`].
    pub(super) fetch: [[bool; 6]; 2],
    /// `FI_CSWAP`.
    pub(super) cswap: [bool; 2],
}

/// Which atomics the provider does on `ep` (`fi_atomicvalid(3)`); fails when it cannot even
/// compare-swap, which every other operation could be emulated with.
pub(super) fn probe_atomics(ep: *mut ffi::fid_ep) -> std::result::Result<AmoTable, String> {
    let valid = |kind: i32, dt: ffi::fi_datatype, op: ffi::fi_op| {
        let mut count = 0usize;
        // SAFETY: ep is an enabled endpoint; count is a valid out-pointer.
        let rc = unsafe { ffi::oxs_atomic_valid(ep, kind, dt as i32, op as i32, &mut count) };
        rc == 0 && count >= 1
    };
    let mut t = AmoTable::default();
    for (w, dt) in [ffi::FI_UINT32, ffi::FI_UINT64].into_iter().enumerate() {
        t.write[w] = valid(0, dt, ffi::FI_ATOMIC_WRITE);
        for (i, (op, _)) in FETCH_OPS.iter().enumerate() {
            t.fetch[w][i] = valid(1, dt, *op);
        }
        t.cswap[w] = valid(2, dt, ffi::FI_CSWAP);
        if !t.cswap[w] {
            return Err(format!(
                "the provider cannot do {}-bit compare-swap (fi_compare_atomicvalid(FI_UINT{}, FI_CSWAP) failed), \
                 which oxshmem needs for its atomics; choose another provider with FI_PROVIDER",
                if w == 0 { 32 } else { 64 },
                if w == 0 { 32 } else { 64 }
            ));
        }
    }
    Ok(t)
}

/// Where an atomic goes, and for which routine.
struct Target {
    func: &'static str,
    pe: usize,
    fa: u64,
    ra: u64,
    key: u64,
    w: usize,
    dt: ffi::fi_datatype,
}

impl Inner {
    pub(super) fn atomic(
        &self,
        func: &'static str,
        ctx: CtxId,
        pe: usize,
        dst: SymAddr,
        width: Width,
        op: AmoOp,
    ) -> Result<u64> {
        let bytes = width.bytes();
        let (w, dt, mask) = match width {
            Width::W32 => (0, ffi::FI_UINT32, u64::from(u32::MAX)),
            Width::W64 => (1, ffi::FI_UINT64, u64::MAX),
        };
        let (fa, ra, key) = self.remote(func, pe, dst, bytes)?;
        self.fence_point(func, ctx, pe)?;
        let what = || format!("a {}-bit atomic {op:?} at offset {:#x} of segment {}", bytes * 8, dst.offset, dst.seg);

        if let AmoOp::Set(v) = op
            && self.amo.write[w]
        {
            // Not FI_INJECT: ofi_rxm 1.17 writes no completion for an injected atomic, and
            // quiet counts on one. The operand rides in a bounce slot instead.
            let operand = (v & mask).to_ne_bytes();
            let s = self.acquire(func, pe)?;
            // SAFETY: the slot is ours until the completion releases it.
            unsafe { std::ptr::copy_nonoverlapping(operand.as_ptr(), self.slot_ptr(s), bytes) };
            let label = OpLabel { call: Call::Atomic, pe, what: &what };
            // SAFETY: the slot holds the operand until the completion; it is registered.
            self.post_counted(func, ctx, &label, Some(s), |c| unsafe {
                ffi::oxs_atomic(
                    self.ep,
                    self.slot_ptr(s).cast(),
                    self.bounce_desc,
                    fa,
                    ra,
                    key,
                    dt as i32,
                    ffi::FI_ATOMIC_WRITE as i32,
                    c,
                    self.wflags,
                )
            })?;
            return Ok(0);
        }

        // A fetching operation reads this PE's own earlier writes to the peer.
        self.settle(func, ctx, pe)?;
        let target = Target { func, pe, fa, ra, key, w, dt };
        let (i, operand) = match op {
            AmoOp::CompareSwap { cond, value } => return self.cswap(&target, cond & mask, value & mask, &what),
            AmoOp::Fetch => (0, 0),
            AmoOp::Set(x) | AmoOp::Swap(x) => (1, x),
            AmoOp::FetchAdd(x) => (2, x),
            AmoOp::FetchAnd(x) => (3, x),
            AmoOp::FetchOr(x) => (4, x),
            AmoOp::FetchXor(x) => (5, x),
        };
        if self.amo.fetch[w][i] {
            return self.fetch_amo(&target, FETCH_OPS[i].0, operand & mask, &what);
        }
        // Emulated with compare-swap: read, compute, swap in if unchanged, else retry.
        let mut cur = if self.amo.fetch[w][0] {
            self.fetch_amo(&target, ffi::FI_ATOMIC_READ, 0, &what)?
        } else {
            // Compare-swap 0 for 0 reads without changing anything.
            self.cswap(&target, 0, 0, &what)?
        };
        if matches!(op, AmoOp::Fetch) {
            return Ok(cur);
        }
        loop {
            let new = match op {
                AmoOp::Set(x) | AmoOp::Swap(x) => x,
                AmoOp::FetchAdd(x) => cur.wrapping_add(x),
                AmoOp::FetchAnd(x) => cur & x,
                AmoOp::FetchOr(x) => cur | x,
                AmoOp::FetchXor(x) => cur ^ x,
                AmoOp::Fetch | AmoOp::CompareSwap { .. } => unreachable!("handled above"),
            } & mask;
            let old = self.cswap(&target, cur, new, &what)?;
            if old == cur {
                return Ok(old);
            }
            cur = old;
        }
    }

    fn fetch_amo(&self, t: &Target, op: ffi::fi_op, operand: u64, what: &dyn Fn() -> String) -> Result<u64> {
        let bytes = if t.w == 0 { 4 } else { 8 };
        self.blocking(
            t.func,
            &OpLabel { call: Call::FetchAtomic, pe: t.pe, what },
            |c, s| {
                let p = self.slot_ptr(s);
                // SAFETY: the slot is ours; operand at +0, result at +16, both registered.
                unsafe {
                    std::ptr::copy_nonoverlapping(operand.to_ne_bytes().as_ptr(), p, bytes);
                    ffi::oxs_fetch_atomic(
                        self.ep,
                        p.cast(),
                        self.bounce_desc,
                        p.add(16).cast(),
                        self.bounce_desc,
                        t.fa,
                        t.ra,
                        t.key,
                        t.dt as i32,
                        op as i32,
                        c,
                        0,
                    )
                }
            },
            |s| self.read_result(s, bytes),
        )
    }

    fn cswap(&self, t: &Target, cond: u64, value: u64, what: &dyn Fn() -> String) -> Result<u64> {
        let bytes = if t.w == 0 { 4 } else { 8 };
        self.blocking(
            t.func,
            &OpLabel { call: Call::CompareAtomic, pe: t.pe, what },
            |c, s| {
                let p = self.slot_ptr(s);
                // SAFETY: the slot is ours; operand at +0, compare at +8, result at +16.
                unsafe {
                    std::ptr::copy_nonoverlapping(value.to_ne_bytes().as_ptr(), p, bytes);
                    std::ptr::copy_nonoverlapping(cond.to_ne_bytes().as_ptr(), p.add(8), bytes);
                    ffi::oxs_compare_atomic(
                        self.ep,
                        p.cast(),
                        self.bounce_desc,
                        p.add(8).cast(),
                        self.bounce_desc,
                        p.add(16).cast(),
                        self.bounce_desc,
                        t.fa,
                        t.ra,
                        t.key,
                        t.dt as i32,
                        ffi::FI_CSWAP as i32,
                        c,
                        0,
                    )
                }
            },
            |s| self.read_result(s, bytes),
        )
    }

    fn read_result(&self, s: usize, bytes: usize) -> u64 {
        let mut b = [0u8; 8];
        // SAFETY: the operation completed into the slot's result field (+16).
        unsafe { std::ptr::copy_nonoverlapping(self.slot_ptr(s).add(16), b.as_mut_ptr(), bytes) };
        if bytes == 4 { u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])) } else { u64::from_ne_bytes(b) }
    }
}
