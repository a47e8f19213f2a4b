//! Transports: how bytes and atomics reach a peer's symmetric segments.
//!
//! One trait, one implementation per family (`shm.rs` today; `ofi.rs` and `verbs.rs` plug in
//! beside it). Which transport serves which peer is decided once, at init, in the runtime's
//! peer table — never per call. The shared-memory path is also inlined by the runtime's RMA
//! code (a mapped peer is a `memcpy` away); the trait is how everything else — the network,
//! the device layer's proxy thread and software NIC — reaches any peer uniformly.

#[cfg(feature = "ofi")]
pub mod ofi;
pub mod relaxed;
pub mod shm;

use std::cell::Cell;
use std::marker::PhantomData;

use crate::error::Result;

/// The network transports this build has (`ofi`, the feature of that name): what reaches peers
/// on other nodes. Empty: such peers are unreachable, and init says so.
pub const NETWORK_TRANSPORTS: &[&str] = if cfg!(feature = "ofi") { &["ofi"] } else { &[] };

/// Most symmetric segments a job can have: 0 is the heap, 1 is the executable's static data
/// (C programs), the rest are reserved (device memory, user-registered buffers).
pub const MAX_SEGMENTS: usize = 4;

/// A symmetric location: segment number and byte offset inside it. The same on every PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SymAddr {
    /// Segment number (`0` = heap).
    pub seg: usize,
    /// Byte offset from the segment's start.
    pub offset: usize,
}

/// The local bytes a [`put`](Transport::put) reads: a raw range, not a slice, because the
/// source may be symmetric memory that other agents (peers' puts, device threads, the NIC)
/// write at the same time, and such memory is never behind a Rust `&` (the symmetric memory
/// access rule, `crate::sym`). Transports read it only through raw pointers.
///
/// It is neither `Send` nor `Sync` (it holds a raw pointer): it is made and used on the
/// thread that calls the transport.
#[derive(Debug, Clone, Copy)]
pub struct LocalBytes<'a> {
    ptr: *const u8,
    len: usize,
    _borrow: PhantomData<&'a [u8]>,
}

impl<'a> LocalBytes<'a> {
    /// The `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `len` bytes for `'a` — at least for the whole of every
    /// transport call the value is passed to — and nothing may free or unmap that memory
    /// meanwhile. Other agents may write it concurrently (it may be symmetric memory): the
    /// transport only copies it through raw pointers, and ordering those writes against the
    /// copy is the program's synchronisation, as for any OpenSHMEM put. `len` may be 0.
    #[inline]
    pub const unsafe fn new(ptr: *const u8, len: usize) -> Self {
        Self { ptr, len, _borrow: PhantomData }
    }

    /// The bytes of a buffer the caller owns as ordinary Rust memory.
    #[inline]
    pub const fn from_slice(s: &'a [u8]) -> Self {
        Self { ptr: s.as_ptr(), len: s.len(), _borrow: PhantomData }
    }

    /// The first byte's address.
    #[inline]
    pub const fn as_ptr(self) -> *const u8 {
        self.ptr
    }

    /// The length in bytes.
    #[inline]
    pub const fn len(self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// The local bytes a [`get`](Transport::get) writes: a raw range, not a `&mut` slice, because
/// the destination may be symmetric memory other agents access at the same time (see
/// [`LocalBytes`]). Transports write it only through raw pointers.
///
/// It is neither `Send` nor `Sync` (it holds a raw pointer): it is made and used on the
/// thread that calls the transport.
#[derive(Debug, Clone, Copy)]
pub struct LocalBytesMut<'a> {
    ptr: *mut u8,
    len: usize,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> LocalBytesMut<'a> {
    /// The `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr` must be valid for writes of `len` bytes for `'a` — at least for the whole of
    /// every transport call the value is passed to — and nothing may free or unmap that memory
    /// meanwhile, nor hold a Rust reference to any of it. Other agents may access it
    /// concurrently (it may be symmetric memory): the transport only writes it through raw
    /// pointers, and ordering those accesses against the get is the program's
    /// synchronisation, as for any OpenSHMEM get. `len` may be 0.
    #[inline]
    pub const unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        Self { ptr, len, _borrow: PhantomData }
    }

    /// The bytes of a buffer the caller owns as ordinary Rust memory; it stays mutably
    /// borrowed while the value lives.
    #[inline]
    pub const fn from_mut_slice(s: &'a mut [u8]) -> Self {
        Self { ptr: s.as_mut_ptr(), len: s.len(), _borrow: PhantomData }
    }

    /// The first byte's address.
    #[inline]
    pub const fn as_mut_ptr(self) -> *mut u8 {
        self.ptr
    }

    /// The length in bytes.
    #[inline]
    pub const fn len(self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// Operand width of an atomic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// 32-bit operand.
    W32,
    /// 64-bit operand.
    W64,
}

impl Width {
    /// Width in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }
}

/// An atomic operation. Operands are raw bits (the low 32 bits for [`Width::W32`]); every
/// operation returns the target's previous value, which non-fetching callers ignore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmoOp {
    /// Atomic read.
    Fetch,
    /// Atomic write.
    Set(u64),
    /// Exchange.
    Swap(u64),
    /// Write `value` if the target equals `cond`.
    CompareSwap {
        /// Expected value.
        cond: u64,
        /// Value to store.
        value: u64,
    },
    /// Wrapping add.
    FetchAdd(u64),
    /// Bitwise and.
    FetchAnd(u64),
    /// Bitwise or.
    FetchOr(u64),
    /// Bitwise xor.
    FetchXor(u64),
}

/// A transport context: the completion and ordering domain an operation belongs to, as
/// Sandia OpenSHMEM's transports get the `shmem_ctx_t` of each operation. [`CtxId::DEFAULT`]
/// is the default context, whose [`quiet`](Transport::quiet) and [`fence`](Transport::fence)
/// are the PE's: the quiet completes every context's operations. Others come from
/// [`Transport::ctx_create`] (one per [`Ctx`](crate::Ctx)); [`Transport::ctx_quiet`] waits for
/// that context's operations only, and [`Transport::ctx_fence`] orders only them.
///
/// The operation paths (`put`, `get`, `atomic`) take it from the calling thread's scope
/// ([`CtxId::enter`], [`CtxId::current`]) rather than as an argument: `Ctx` enters its context
/// around each operation, and the layers between (`SymSlice`, the runtime's routing) stay as
/// they are. Everything else — collectives, the C library's default context, the device
/// layer's proxy — runs in the default context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CtxId(u32);

thread_local! {
    /// The context the calling thread's transport operations belong to.
    static CURRENT: Cell<CtxId> = const { Cell::new(CtxId::DEFAULT) };
}

impl CtxId {
    /// The default context.
    pub const DEFAULT: CtxId = CtxId(0);

    /// Context number `index` of a transport (0 is the default context).
    pub const fn new(index: u32) -> CtxId {
        CtxId(index)
    }

    /// Its number.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The context of the calling thread's transport operations.
    #[inline]
    pub fn current() -> CtxId {
        CURRENT.with(Cell::get)
    }

    /// Makes this the calling thread's context until the guard drops (which restores the
    /// previous one).
    #[inline]
    pub fn enter(self) -> CtxScope {
        CtxScope { prev: CURRENT.with(|c| c.replace(self)), _thread: PhantomData }
    }
}

/// The scope of a [`CtxId::enter`]; it restores the thread's previous context when dropped.
/// It is not `Send`: it belongs to the thread that entered.
#[derive(Debug)]
#[must_use = "the context is the thread's only while the scope lives"]
pub struct CtxScope {
    prev: CtxId,
    _thread: PhantomData<*const ()>,
}

impl Drop for CtxScope {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

/// Moves bytes to and from peers' symmetric segments and performs atomics there.
///
/// Operations may complete after they return (non-blocking semantics): a put's source buffer
/// is reusable on return, but the data is only guaranteed delivered after [`quiet`]. Gets and
/// atomics are complete on return.
///
/// [`quiet`]: Transport::quiet
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// Short name (`shm`, `ofi`).
    fn name(&self) -> &'static str;
    /// What else a user may want to know about it, for diagnostics (`OXSHMEM_SHOW_PEERS`):
    /// the provider, the local address. Empty by default.
    fn detail(&self) -> String {
        String::new()
    }
    /// Whether this transport reaches `pe`.
    fn reaches(&self, pe: usize) -> bool;
    /// Writes the `src.len()` bytes at `src` to `dst` on `pe`. `func` is the OpenSHMEM
    /// routine the caller runs (`shmem_putmem`), for errors, which also name the peer and the
    /// transport's step. `src` is read through raw pointers only, and not after return.
    fn put(&self, func: &'static str, pe: usize, dst: SymAddr, src: LocalBytes<'_>) -> Result<()>;
    /// Reads `dst.len()` bytes at `src` on `pe` into `dst`; `func` as for
    /// [`put`](Transport::put). `dst` is written through raw pointers only, and not after
    /// return.
    fn get(&self, func: &'static str, pe: usize, src: SymAddr, dst: LocalBytesMut<'_>) -> Result<()>;
    /// Performs `op` on the `width`-byte integer at `dst` on `pe`; returns its previous value.
    /// `func` as for [`put`](Transport::put).
    fn atomic(&self, func: &'static str, pe: usize, dst: SymAddr, width: Width, op: AmoOp) -> Result<u64>;
    /// Orders this PE's earlier puts and atomics to each peer before its later ones
    /// (errors are labelled `shmem_fence`).
    fn fence(&self) -> Result<()>;
    /// Completes every put and atomic this PE issued through the transport (errors are
    /// labelled `shmem_quiet`).
    fn quiet(&self) -> Result<()>;
    /// A new context ([`CtxId`]), or [`CtxId::DEFAULT`] when the transport keeps no
    /// per-context state (shared memory, whose operations complete on return) or has no room
    /// for another: the default context's quiet and fence are then the context's, which waits
    /// for more than it must but never for less.
    fn ctx_create(&self) -> CtxId {
        CtxId::DEFAULT
    }
    /// Ends `ctx` (its operations were completed by a [`ctx_quiet`](Transport::ctx_quiet));
    /// its number may be given out again.
    fn ctx_destroy(&self, ctx: CtxId) {
        let _ = ctx;
    }
    /// Completes the puts and atomics issued in `ctx` (errors are labelled
    /// `shmem_ctx_quiet`); [`quiet`](Transport::quiet) for the default context.
    fn ctx_quiet(&self, ctx: CtxId) -> Result<()> {
        let _ = ctx;
        self.quiet()
    }
    /// Orders the puts and atomics issued in `ctx` to each peer before its later ones (errors
    /// are labelled `shmem_ctx_fence`); [`fence`](Transport::fence) for the default context.
    fn ctx_fence(&self, ctx: CtxId) -> Result<()> {
        let _ = ctx;
        self.fence()
    }
    /// How many operations of `ctx` are in flight (issued, not yet known complete); for the
    /// default context, those of every context. For diagnostics and tests.
    fn ctx_in_flight(&self, ctx: CtxId) -> u64 {
        let _ = ctx;
        0
    }
    /// Makes progress once without blocking (reads a completion queue); the runtime's wait
    /// loops call it, so that a PE waiting for a peer also serves that peer's operations.
    fn progress(&self) {}
    /// Releases the transport's resources at finalize. The caller has quieted and then waited
    /// for every PE to do the same, so no peer still needs this PE; no operation follows.
    fn shutdown(&self) {}
}

/// Sets up the network transport for the peers `need` marks; collective over all PEs (it
/// exchanges endpoint addresses and memory keys through the bootstrap). `segments` are this
/// PE's symmetric segments (base, length), the heap's including the runtime's own objects.
/// `Ok(None)` when this build has no network transport.
pub(crate) fn network(
    boot: &dyn oxshmem_bootstrap::Bootstrap,
    me: usize,
    n: usize,
    segments: &[(usize, usize)],
    need: &[bool],
    config: &crate::config::Config,
) -> Result<Option<Box<dyn Transport>>> {
    #[cfg(feature = "ofi")]
    {
        let t = ofi::OfiTransport::new(boot, me, n, segments, need, config)?;
        Ok(Some(Box::new(t)))
    }
    #[cfg(not(feature = "ofi"))]
    {
        let _ = (boot, me, n, segments, need, config);
        Ok(None)
    }
}
