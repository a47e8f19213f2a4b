//! Segments: where a symmetric address lives, and what reaches it.
//!
//! The runtime's own segments are the symmetric heap (segment 0) and, for C programs, the
//! executable's static data (segment 1): `Runtime::translate` finds an address in them with one
//! range check each, and the operations reach them through the peer table (a mapping, or the
//! network transport). A layer above the runtime may add segments of its own — the device
//! layer's GPU heap is one — by registering a [`ForeignSegment`] ([`register`]). The runtime
//! routes an address to such a segment in one place, the miss path of its translation
//! (`Runtime::route`): an address outside its own segments is looked up among the registered
//! ones before it is called "not symmetric". So every host operation that routes — put, get,
//! p, g, strided put and get, atomics, put with signal, signal fetch and wait, and the waits
//! and tests — reaches a registered segment through the same pointer-based entry points
//! ([`crate::raw`]) that reach the heap, from Rust and from the C library alike, and the
//! heap's fast path is unchanged (the registry is read only after the heap's check missed).
//!
//! A routine that does not route (locks, the deprecated active-set collectives, …) still
//! fails on such an address; its error then says what the segment says of itself
//! ([`ForeignSegment::explain`]) instead of "not symmetric".
//!
//! The waits and tests on a registered segment poll this PE's copy with [`ForeignSegment::get`]
//! under the runtime's back-off, so a segment needs no wait of its own.
//!
//! The team collectives (the pointer forms of `coll::api::raw`: broadcast, collect, fcollect,
//! alltoall and alltoalls, reductions, reducescatter) hand a call whose destination or source
//! lies in a registered segment to it whole ([`ForeignSegment::collective`], a [`Collective`]):
//! how the data moves is the segment's, and the runtime lends it the team and
//! [`team_words`](crate::coll::team_words), to agree on the arguments first.
//!
//! ```
//! use std::sync::Arc;
//! use oxshmem::segment::{self, ForeignSegment};
//! use oxshmem::transport::{AmoOp, LocalBytes, LocalBytesMut, Width};
//!
//! /// A segment nothing reaches (a real one copies or calls a driver).
//! #[derive(Debug)]
//! struct Nowhere(usize, usize);
//!
//! impl ForeignSegment for Nowhere {
//!     fn name(&self) -> &'static str { "nowhere" }
//!     fn range(&self) -> (usize, usize) { (self.0, self.1) }
//!     unsafe fn put(&self, func: &'static str, _: usize, _: usize, _: LocalBytes<'_>) -> oxshmem::Result<()> {
//!         Err(oxshmem::Error::new(0, func, oxshmem::ErrorKind::InvalidArgument("nowhere".into())))
//!     }
//!     unsafe fn get(&self, func: &'static str, _: usize, _: usize, _: LocalBytesMut<'_>) -> oxshmem::Result<()> {
//!         Err(oxshmem::Error::new(0, func, oxshmem::ErrorKind::InvalidArgument("nowhere".into())))
//!     }
//!     fn atomic(&self, func: &'static str, _: usize, _: usize, _: Width, _: AmoOp) -> oxshmem::Result<u64> {
//!         Err(oxshmem::Error::new(0, func, oxshmem::ErrorKind::InvalidArgument("nowhere".into())))
//!     }
//! }
//!
//! let seg: Arc<dyn ForeignSegment> = Arc::new(Nowhere(0x7000_0000_0000, 4096));
//! segment::register(seg.clone());
//! assert_eq!(segment::find(0x7000_0000_0010, 8).map(|s| s.name()), Some("nowhere"));
//! assert!(segment::find(0x7000_0000_0ffc, 8).is_none(), "the range must lie inside");
//! assert!(segment::unregister(&seg));
//! assert!(segment::find(0x7000_0000_0010, 8).is_none());
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;

use crate::error::{Error, ErrorKind, Result};
use crate::reduce_op::ReduceOp;
use crate::team::Team;
use crate::transport::{AmoOp, LocalBytes, LocalBytesMut, SymAddr, Width};
use crate::world::Runtime;

/// Memory a layer above the runtime makes symmetric, and how the host reaches it.
///
/// `range` is this PE's part of the segment; the segment is symmetric as the heap is: an
/// address at offset `k` of it names offset `k` of every PE's part. Every routine gets the
/// address in this PE's part and the world PE whose part it acts on, and returns an error
/// worded as the runtime's (`PE 0: shmem_putmem: …`) named by `func`. Operations are complete
/// when they return.
pub trait ForeignSegment: Send + Sync + std::fmt::Debug {
    /// What the segment is, for messages (`GPU heap`).
    fn name(&self) -> &'static str;

    /// This PE's part: base address and length in bytes.
    fn range(&self) -> (usize, usize);

    /// Whether `len` bytes from `addr` lie in this PE's part (a zero-length range at an address
    /// of it does).
    #[inline]
    fn contains(&self, addr: usize, len: usize) -> bool {
        let (base, size) = self.range();
        let off = addr.wrapping_sub(base);
        off < size && len <= size - off
    }

    /// Writes `src` at `dest` (an address of this PE's part) on world PE `pe`.
    ///
    /// # Safety
    /// `src`'s contract ([`LocalBytes::new`]); `src` may itself be memory of the segment.
    unsafe fn put(&self, func: &'static str, pe: usize, dest: usize, src: LocalBytes<'_>) -> Result<()>;

    /// Reads `dst.len()` bytes at `src` (an address of this PE's part) on world PE `pe`.
    ///
    /// # Safety
    /// `dst`'s contract ([`LocalBytesMut::new`]).
    unsafe fn get(&self, func: &'static str, pe: usize, src: usize, dst: LocalBytesMut<'_>) -> Result<()>;

    /// A strided put: `n` elements of `elem` bytes, element `i` from `src + i * spitch` to
    /// `dest + i * dpitch` on `pe` (both pitches at least `elem`; the destination's extent is
    /// checked to lie in the segment). By default one [`put`](Self::put) per element.
    ///
    /// # Safety
    /// `src` is valid for the strided reads.
    unsafe fn put_strided(
        &self,
        func: &'static str,
        pe: usize,
        dest: usize,
        dpitch: usize,
        src: *const u8,
        spitch: usize,
        elem: usize,
        n: usize,
    ) -> Result<()> {
        (0..n).try_for_each(|i| {
            // SAFETY: element i of the strided source is readable per the caller.
            unsafe { self.put(func, pe, dest + i * dpitch, LocalBytes::new(src.wrapping_add(i * spitch), elem)) }
        })
    }

    /// A strided get: `n` elements of `elem` bytes, element `i` from `src + i * spitch` on `pe`
    /// to `dst + i * dpitch` (the source's extent is checked to lie in the segment). By default
    /// one [`get`](Self::get) per element.
    ///
    /// # Safety
    /// `dst` is valid for the strided writes.
    unsafe fn get_strided(
        &self,
        func: &'static str,
        pe: usize,
        dst: *mut u8,
        dpitch: usize,
        src: usize,
        spitch: usize,
        elem: usize,
        n: usize,
    ) -> Result<()> {
        (0..n).try_for_each(|i| {
            // SAFETY: element i of the strided destination is writable per the caller.
            unsafe { self.get(func, pe, src + i * spitch, LocalBytesMut::new(dst.wrapping_add(i * dpitch), elem)) }
        })
    }

    /// Performs `op` on the naturally aligned word of `width` at `dest` on `pe` (the runtime
    /// checked the alignment); the prior value.
    fn atomic(&self, func: &'static str, pe: usize, dest: usize, width: Width, op: AmoOp) -> Result<u64>;

    /// A pointer this process may use for `pe`'s copy of `addr` (`shmem_ptr`), if there is one.
    fn ptr(&self, addr: usize, pe: usize) -> Option<*mut u8> {
        let _ = (addr, pe);
        None
    }

    /// Completes what other agents of this PE issued into the segment and have not completed:
    /// a GPU's device threads whose operations a host proxy or a NIC's queues still carry.
    /// The runtime's quiet calls it (and so every barrier), after its own. By default nothing.
    fn quiet(&self, func: &'static str) -> Result<()> {
        let _ = func;
        Ok(())
    }

    /// What a routine that does not reach the segment says of an address in it, in place of
    /// "is not symmetric" (`is in the GPU symmetric heap, which this host routine does not
    /// reach …`); `None`: just that.
    fn explain(&self) -> Option<String> {
        None
    }

    /// Runs the team collective `c` on `team`, whose destination or source lies in the segment
    /// (the runtime's collective entry points route such a call here, `coll::foreign`; the
    /// other buffer may be memory of the runtime's own segments). Returns the bytes collected
    /// for [`Collective::Collect`], else 0. Collective over `team`: every member calls it with
    /// its own arguments, and members whose arguments disagree should all fail alike (exchange
    /// them first, [`team_words`](crate::coll::team_words)). The error names `func`. By default,
    /// the error that the segment's collectives are not reached (every member gets it: no data
    /// moves).
    ///
    /// # Safety
    /// The buffers of `c` are valid for the extents the collective names (the contract of the
    /// routine that routed it).
    unsafe fn collective(&self, team: &Team, func: &'static str, c: Collective<'_>) -> Result<usize> {
        let _ = (team, c);
        let why = self.explain().unwrap_or_else(|| format!("is in the {}, which has no team collectives", self.name()));
        Err(Error::new(crate::world::pe_for_errors(), func, ErrorKind::InvalidArgument(format!("a buffer {why}"))))
    }
}

/// `acc[i] = acc[i] op x[i]` over whole elements of a reduction, given as bytes: both slices
/// hold the same number of elements and start at addresses aligned to 16 bytes (a segment's
/// reduction keeps its buffers so).
pub type Combine<'a> = dyn Fn(&mut [u8], &[u8]) -> Result<()> + 'a;

/// A team collective with a buffer in a registered segment, as the runtime hands it to
/// [`ForeignSegment::collective`]. Addresses are this PE's (symmetric: each names the same
/// offset of every member's copy, in the segment or in the runtime's segments); lengths are
/// bytes unless named otherwise; `esize` is the element size the caller gave.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Collective<'a> {
    /// `broadcast`: `len` bytes of team member `root`'s `source` into every member's `dest` (the
    /// root's too).
    Broadcast {
        /// Where the bytes land, on every member.
        dest: *mut u8,
        /// What the root sends.
        source: *const u8,
        /// Bytes.
        len: usize,
        /// The root's number in the team, as the caller gave it (unchecked).
        root: i32,
        /// Bytes of an element.
        esize: usize,
    },
    /// `collect` (`fixed`: `fcollect`, where every member passes the same `len`): member `i`'s
    /// `len` bytes land at the sum of the lengths before it in every member's `dest`.
    Collect {
        /// Every member's contribution, in team order.
        dest: *mut u8,
        /// This member's contribution.
        source: *const u8,
        /// Bytes of this member's contribution.
        len: usize,
        /// Whether every member contributes as many bytes (`fcollect`).
        fixed: bool,
        /// Bytes of an element.
        esize: usize,
    },
    /// `alltoall[s]`: block `j` of member `i`'s `source` to block `i` of member `j`'s `dest`.
    Alltoalls {
        /// Blocks from every member, in team order.
        dest: *mut u8,
        /// Blocks for every member, in team order.
        source: *const u8,
        /// Elements between two of `dest`'s elements, as the caller gave it (unchecked).
        dst: isize,
        /// Elements between two of `source`'s elements, as the caller gave it (unchecked).
        sst: isize,
        /// Elements of a block.
        nelems: usize,
        /// Bytes of an element.
        esize: usize,
    },
    /// A reduction over the team into every member's `dest` (which may be `source`).
    Reduce {
        /// The result, on every member.
        dest: *mut u8,
        /// This member's operand.
        source: *const u8,
        /// Elements of each.
        nelems: usize,
        /// Bytes of an element.
        esize: usize,
        /// The operation (defined for the type: checked).
        op: ReduceOp,
        /// How two runs of elements combine.
        combine: &'a Combine<'a>,
    },
    /// NVSHMEM's `reducescatter`: member `i` gets in `dest` block `i` (of `nreduce` elements)
    /// of the reduction over the members' `source`s (`nreduce` elements per member each).
    ReduceScatter {
        /// This member's block of the result.
        dest: *mut u8,
        /// This member's operand: a block for every member.
        source: *const u8,
        /// Elements of a block.
        nreduce: usize,
        /// Bytes of an element.
        esize: usize,
        /// The operation (defined for the type: checked).
        op: ReduceOp,
        /// How two runs of elements combine.
        combine: &'a Combine<'a>,
    },
}

impl std::fmt::Debug for Collective<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Collective::Broadcast { dest, source, len, root, .. } => {
                write!(f, "Broadcast({dest:?} <- {source:?}, {len} bytes, root {root})")
            }
            Collective::Collect { dest, source, len, fixed, .. } => {
                write!(f, "Collect({dest:?} <- {source:?}, {len} bytes, fixed {fixed})")
            }
            Collective::Alltoalls { dest, source, dst, sst, nelems, esize } => {
                write!(f, "Alltoalls({dest:?} <- {source:?}, {nelems} x {esize} bytes, strides {dst}/{sst})")
            }
            Collective::Reduce { dest, source, nelems, esize, op, .. } => {
                write!(f, "Reduce({dest:?} <- {source:?}, {nelems} x {esize} bytes, {op:?})")
            }
            Collective::ReduceScatter { dest, source, nreduce, esize, op, .. } => {
                write!(f, "ReduceScatter({dest:?} <- {source:?}, {nreduce} x {esize} bytes, {op:?})")
            }
        }
    }
}

static SEGMENTS: RwLock<Vec<Arc<dyn ForeignSegment>>> = RwLock::new(Vec::new());
/// Whether any segment is registered: the miss path of a program without any takes no lock.
static ANY: AtomicBool = AtomicBool::new(false);

/// Registers `seg`: from now on the runtime's routines route addresses in its range to it.
/// Segments registered later are looked up first.
pub fn register(seg: Arc<dyn ForeignSegment>) {
    let mut all = SEGMENTS.write();
    all.insert(0, seg);
    ANY.store(true, Ordering::Release);
}

/// Removes `seg` (the same `Arc`): whether it was registered.
pub fn unregister(seg: &Arc<dyn ForeignSegment>) -> bool {
    let mut all = SEGMENTS.write();
    let before = all.len();
    all.retain(|s| !Arc::ptr_eq(s, seg));
    ANY.store(!all.is_empty(), Ordering::Release);
    all.len() != before
}

/// Removes every segment (at finalize: their addresses mean nothing to the next runtime).
pub(crate) fn clear() {
    SEGMENTS.write().clear();
    ANY.store(false, Ordering::Release);
}

/// The registered segment whose part on this PE holds `len` bytes from `addr`.
#[inline]
pub fn find(addr: usize, len: usize) -> Option<Arc<dyn ForeignSegment>> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    SEGMENTS.read().iter().find(|s| s.contains(addr, len)).cloned()
}

/// Agent threads alive in this process ([`agent_thread`]).
static AGENTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// This thread's mark as an agent; it leaves the count of [`AGENTS`] when the thread ends.
struct AgentMark(std::cell::Cell<bool>);

impl Drop for AgentMark {
    fn drop(&mut self) {
        if self.0.get() {
            AGENTS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

thread_local! {
    /// Whether this thread is one of a segment's own agents (see [`agent_thread`]).
    static AGENT: AgentMark = const { AgentMark(std::cell::Cell::new(false)) };
}

/// Marks the calling thread as one of a segment's agents (a proxy thread, a software NIC):
/// the runtime's quiet on it does not wait for the segments, whose outstanding work that very
/// thread carries (it would wait for itself); and while it lives, this process's waits nap
/// early, as on a crowded host (the agent competes with the PEs for the cores).
pub fn agent_thread() {
    AGENT.with(|a| {
        if !a.0.replace(true) {
            AGENTS.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// Whether agent threads ([`agent_thread`]) run in this process.
#[inline]
pub(crate) fn agents_running() -> bool {
    AGENTS.load(Ordering::Relaxed) > 0
}

/// Quiets every registered segment ([`ForeignSegment::quiet`]); one load when there is none.
#[inline]
pub(crate) fn quiet_all(func: &'static str) -> Result<()> {
    if !ANY.load(Ordering::Acquire) || AGENT.with(|a| a.0.get()) {
        return Ok(());
    }
    let all: Vec<Arc<dyn ForeignSegment>> = SEGMENTS.read().clone();
    all.iter().try_for_each(|s| s.quiet(func))
}

/// What the registered segment holding `addr` says of itself ([`ForeignSegment::explain`]).
pub fn explain(addr: usize) -> Option<String> {
    find(addr, 0)?.explain()
}

/// Where an address of an operation lives: one of the runtime's segments, or a registered one.
#[derive(Debug, Clone)]
pub(crate) enum Route {
    /// The heap or static data.
    Sym(SymAddr),
    /// A registered segment (the address stays the caller's).
    Foreign(Arc<dyn ForeignSegment>),
}

impl Runtime {
    /// Routes `len` bytes from `addr`: a symmetric location of the runtime's segments (one
    /// range check per segment, as [`translate`](Runtime::translate)), else the registered
    /// segment that holds them, else the error "not symmetric".
    #[inline(always)]
    pub(crate) fn route(&self, addr: usize, len: usize, what: &'static str, func: &'static str) -> Result<Route> {
        for (seg, &(base, slen)) in self.segs.iter().enumerate() {
            let off = addr.wrapping_sub(base);
            if off < slen && len <= slen - off {
                return Ok(Route::Sym(SymAddr { seg, offset: off }));
            }
        }
        self.route_foreign(addr, len, what, func)
    }

    /// The miss path of [`route`](Runtime::route): the one place where an address outside the
    /// runtime's segments meets the registered ones.
    #[cold]
    #[inline(never)]
    fn route_foreign(&self, addr: usize, len: usize, what: &'static str, func: &'static str) -> Result<Route> {
        match find(addr, len) {
            Some(s) => Ok(Route::Foreign(s)),
            None => Err(self.not_symmetric(addr, len, what, func)),
        }
    }

    /// The error for `len` bytes at `addr` outside every segment the routine reaches: "not
    /// symmetric", or, for an address of a registered segment, what that segment says of a
    /// routine that does not reach it.
    #[cold]
    pub(crate) fn not_symmetric(&self, addr: usize, len: usize, what: &'static str, func: &'static str) -> Error {
        if let Some(why) = find(addr, len).and_then(|s| s.explain()) {
            return Error::new(
                self.me,
                func,
                ErrorKind::InvalidArgument(format!("{what} {addr:#x} (+{len} bytes) {why}")),
            );
        }
        Error::new(self.me, func, ErrorKind::NotSymmetric { what, addr, len })
    }
}

/// The waits and tests on a registered segment: this PE's copy of the `n` words at `ivars`,
/// read with [`ForeignSegment::get`] once per poll under the runtime's back-off, until `done`
/// says what the call returns (`block`), or once (a test: `Ok(None)` when `done` has nothing yet).
pub(crate) fn poll_words<T: bytemuck::Pod, R>(
    rt: &Runtime,
    seg: &dyn ForeignSegment,
    func: &'static str,
    routine: u16,
    ivars: usize,
    n: usize,
    block: bool,
    mut done: impl FnMut(&[T]) -> Option<R>,
) -> Result<Option<R>> {
    use oxshmem_bootstrap::status::{Arg, Routine};
    let mut words = vec![T::zeroed(); n];
    let mut b = rt.backoff().routine(Routine::of(routine), Arg::Addr(ivars as u64));
    loop {
        let dst = bytemuck::cast_slice_mut::<T, u8>(&mut words);
        // SAFETY: `words` is a live local of exactly these bytes, borrowed for the call only.
        unsafe { seg.get(func, rt.me, ivars, LocalBytesMut::from_mut_slice(dst)) }?;
        if let Some(r) = done(&words) {
            return Ok(Some(r));
        }
        if !block {
            return Ok(None);
        }
        b.snooze();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fake(usize, usize);

    impl ForeignSegment for Fake {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn range(&self) -> (usize, usize) {
            (self.0, self.1)
        }
        /// Moves nothing.
        ///
        /// # Safety
        /// None beyond the trait's: it touches no memory.
        unsafe fn put(&self, _: &'static str, _: usize, _: usize, _: LocalBytes<'_>) -> Result<()> {
            Ok(())
        }
        /// Moves nothing.
        ///
        /// # Safety
        /// None beyond the trait's: it touches no memory.
        unsafe fn get(&self, _: &'static str, _: usize, _: usize, _: LocalBytesMut<'_>) -> Result<()> {
            Ok(())
        }
        fn atomic(&self, _: &'static str, _: usize, _: usize, _: Width, _: AmoOp) -> Result<u64> {
            Ok(0)
        }
        fn explain(&self) -> Option<String> {
            Some("is fake".into())
        }
    }

    #[test]
    fn segments_are_found_by_range_latest_first() {
        let a: Arc<dyn ForeignSegment> = Arc::new(Fake(0x10_0000_0000, 0x1000));
        let b: Arc<dyn ForeignSegment> = Arc::new(Fake(0x10_0000_0800, 0x1000));
        register(a.clone());
        register(b.clone());
        assert!(Arc::ptr_eq(&find(0x10_0000_0900, 8).unwrap(), &b), "the later one first");
        assert!(Arc::ptr_eq(&find(0x10_0000_0100, 8).unwrap(), &a));
        assert!(find(0x10_0000_0ffc, 8).is_some_and(|s| Arc::ptr_eq(&s, &b)));
        assert!(find(0x10_0000_17fc, 8).is_none(), "past both ends");
        assert_eq!(explain(0x10_0000_0000).as_deref(), Some("is fake"));
        assert!(unregister(&b) && !unregister(&b));
        assert!(find(0x10_0000_0900, 8).is_some_and(|s| Arc::ptr_eq(&s, &a)));
        assert!(unregister(&a));
        assert!(find(0x10_0000_0100, 8).is_none() && explain(0x10_0000_0100).is_none());
    }
}
