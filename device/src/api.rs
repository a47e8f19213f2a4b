//! The device API: what a device thread calls (NVSHMEM's device-side routines).
//!
//! Every operation checks its target — PE in range, range inside the symmetric heap, length
//! inside the device pointer's object — and on failure records the error in the device
//! state's error slot (first one wins) and does nothing, as device code cannot unwind; the
//! host reports it at [`Stream::synchronize`](crate::Stream::synchronize). Then it dispatches
//! on the peer's channel byte: P2P operations are loads, stores and atomics on the mapped
//! heap; proxy operations are requests in the ring.
//!
//! Ordering and completion, per thread: operations of one thread to one PE are delivered in
//! order around `fence` (P2P: a release fence; proxy: the ring executes in order anyway);
//! `quiet` completes every operation the thread issued (P2P: a full fence; proxy: wait until
//! the ring's completed count passes the thread's last ticket). The `_warp` and `_block`
//! forms are called by every thread of the group with the same arguments; the group shares
//! the transfer and returns together, after which every member's `quiet` covers it.

use std::marker::PhantomData;
use std::sync::atomic::{Ordering, fence};

use bytemuck::Pod;
use oxshmem::transport::{AmoOp, Width};
use oxshmem::{AmoInt, AmoType, Cmp, SignalOp, SymSlice, SyncType};

use crate::channel::proxy::{self, ProxyRing, Request, amo_flags, kind};
use crate::channel::{ChannelKind, p2p};
use crate::cpu::{Thread, WARP_SIZE, Waiter};
use crate::state::{BARRIER_ROUNDS, ErrorCode, op, wait_cmp};

/// A device pointer to a symmetric object: its local address and element count. Plain
/// `#[repr(C)]` data, `Copy`, made only from a symmetric allocation — so device code cannot
/// name a non-symmetric address by accident. The same address names the object on every PE:
/// the device API translates it for the target PE.
///
/// ```
/// use oxshmem_device::{DevPtr, Device, Grid};
/// let shmem = oxshmem::init()?;
/// let dev = Device::init(&shmem)?;
/// let table = shmem.alloc_slice(256, 0u16)?;
/// let t = DevPtr::from_slice(&table);            // copied into the kernel: it is `Copy`
/// assert_eq!(t.len(), 256);
/// assert_eq!(t.offset(250).len(), 6);            // the rest of the object from element 250
/// let me = shmem.my_pe();
/// let stream = dev.stream();
/// stream.launch(Grid::new(2, 128), move |th| {
///     let i = th.global_idx();
///     th.p(t.offset(i), i as u16 * 3, me);       // element i of `table` on PE `me`
///     th.quiet();
///     assert_eq!(t.read_local(i), i as u16 * 3);
/// });
/// stream.synchronize()?;
/// assert_eq!(table.read(255), 765);
/// drop(stream);
/// dev.finalize()?;
/// shmem.finalize()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct DevPtr<T> {
    addr: u64,
    len: u64,
    _t: PhantomData<*const T>,
}

impl<T> Clone for DevPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevPtr<T> {}
// SAFETY: a DevPtr is an address and a length; all access goes through the device API.
unsafe impl<T> Send for DevPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for DevPtr<T> {}

impl<T: Pod> DevPtr<T> {
    /// The device pointer of a symmetric object.
    pub fn from_slice(s: &SymSlice<T>) -> DevPtr<T> {
        DevPtr { addr: s.as_ptr() as u64, len: s.len() as u64, _t: PhantomData }
    }

    /// The pointer `i` elements further (its length shrinks accordingly; past the end it is
    /// empty, and using it is an out-of-bounds error).
    pub fn offset(self, i: usize) -> DevPtr<T> {
        let i = i as u64;
        DevPtr { addr: self.addr + i * size_of::<T>() as u64, len: self.len.saturating_sub(i), _t: PhantomData }
    }

    /// Elements from here to the end of the object.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no element remains.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The local address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Reads element `i` of this PE's copy: relaxed atomic, as `SymSlice::read` (see the memory
    /// model of [`oxshmem::transport::relaxed`]), so it may race the host's accessors and other
    /// device threads, which the CPU target runs as threads of this process.
    pub fn read_local(&self, i: usize) -> T {
        assert!((i as u64) < self.len, "index {i} out of range for a device pointer of {} elements", self.len);
        // SAFETY: in bounds of a live symmetric object, aligned for T (made from a SymSlice);
        // the host accessors, `p` and the AMOs access its elements atomically, of this width.
        unsafe { oxshmem::transport::relaxed::load((self.addr as *const T).add(i)) }
    }
}

/// Where an operation goes, once checked.
#[derive(Clone, Copy)]
enum Route {
    /// The peer's copy of the target, mapped here.
    P2p(*mut u8),
    Proxy,
    Ibgda,
}

impl Thread<'_> {
    fn fail(&self, code: ErrorCode, opc: u32, pe: i64, addr: u64, len: u64) {
        self.state.error.record_in(self.launch, code, opc, pe, addr, len, self.block as u32, self.thread as u32);
    }

    /// Waits until the `T` at `addr` (checked: this PE's heap, aligned) satisfies `cmp value`
    /// and returns it; past the device timeout records the wait (`from`: the PE expected to
    /// write the word, -1 when unknown) and returns `Err` with the value last seen.
    fn wait_word<T: SyncType>(&self, opc: u32, from: i64, addr: u64, cmp: Cmp, value: T) -> Result<T, T> {
        let mut w = Waiter::new(self.state);
        loop {
            // SAFETY: the caller checked the address: an aligned T of this PE's heap, which
            // every PE accesses atomically.
            let v = unsafe { T::load_acquire(addr as *const T) };
            if cmp.holds(v, value) {
                return Ok(v);
            }
            if !w.pause() {
                let how = wait_cmp::pack(cmp as u32, size_of::<T>() as u32, is_signed::<T>());
                let (b, t) = (self.block as u32, self.thread as u32);
                self.state.error.record_wait(self.launch, opc, from, addr, bits(v), how, bits(value), b, t);
                return Err(v);
            }
        }
    }

    /// Checks the target and picks the route.
    #[inline]
    fn route<T>(&self, opc: u32, dst: DevPtr<T>, n: usize, pe: usize) -> Option<Route> {
        let st = self.state;
        if pe >= st.n_pes as usize {
            self.fail(ErrorCode::PeOutOfRange, opc, pe as i64, dst.addr, n as u64);
            return None;
        }
        if n as u64 > dst.len {
            self.fail(ErrorCode::OutOfBounds, opc, pe as i64, dst.addr, n as u64);
            return None;
        }
        let bytes = (n * size_of::<T>()) as u64;
        if dst.addr < st.heap_base || dst.addr + bytes > st.heap_base + st.heap_size {
            self.fail(ErrorCode::NotSymmetric, opc, pe as i64, dst.addr, bytes);
            return None;
        }
        // SAFETY: pe < n_pes, the length of both tables.
        let (ch, base) = unsafe { (*st.channel.add(pe), *st.peer_base.add(pe)) };
        if ch == ChannelKind::P2p as u8 {
            Some(Route::P2p((base + (dst.addr - st.heap_base)) as *mut u8))
        } else if ch == ChannelKind::Ibgda as u8 {
            Some(Route::Ibgda)
        } else {
            Some(Route::Proxy)
        }
    }

    fn ring(&self) -> &ProxyRing {
        self.dev.ring().expect("a proxy route exists only with a ring")
    }

    /// Submits a proxy request; returns its ticket.
    fn submit(&self, r: Request) -> Option<u64> {
        let t = proxy::submit(self.state, self.ring(), r, self.block as u32, self.thread as u32)?;
        self.last_ticket.set(self.last_ticket.get().max(t + 1));
        Some(t)
    }

    fn wait(&self, t: u64, opc: u32) -> bool {
        proxy::wait_done(self.state, self.ring(), t, opc, self.block as u32, self.thread as u32)
    }

    // ---- RMA ------------------------------------------------------------------------

    /// `nvshmem_put`: copies `src` to `dst` on `pe`; returns when `src` may be reused.
    pub fn put<T: Pod>(&self, dst: DevPtr<T>, src: &[T], pe: usize) {
        match self.route(op::PUT, dst, src.len(), pe) {
            // SAFETY: route() checked the whole range against the peer's mapped heap.
            Some(Route::P2p(p)) => unsafe { p2p::put(p, src.as_ptr().cast(), size_of_val(src)) },
            Some(Route::Ibgda) => {
                crate::with_layout!(self.ib().layout, L => self.ib_put_local::<L>(op::PUT, pe, dst.addr, bytemuck::cast_slice(src)))
            }
            Some(Route::Proxy) => {
                let r = Request {
                    kind: kind::PUT,
                    pe: pe as u32,
                    len: size_of_val(src) as u64,
                    dest: dst.addr,
                    local: src.as_ptr() as u64,
                    ..Default::default()
                };
                // Blocking: the proxy reads src, so wait until it has.
                if let Some(t) = self.submit(r) {
                    self.wait(t, op::PUT);
                }
            }
            None => {}
        }
    }

    /// `nvshmem_put_nbi`: copies `n` elements of the symmetric `src` (this PE's copy) to
    /// `dst` on `pe`; complete at the next `quiet`. `src` must not change until then.
    pub fn put_nbi<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize) {
        if n as u64 > src.len {
            self.fail(ErrorCode::OutOfBounds, op::PUT, pe as i64, src.addr, n as u64);
            return;
        }
        match self.route(op::PUT, dst, n, pe) {
            // SAFETY: as in put; src is n elements of a live local symmetric object.
            Some(Route::P2p(p)) => unsafe { p2p::put(p, src.addr as *const u8, n * size_of::<T>()) },
            Some(Route::Ibgda) => {
                crate::with_layout!(self.ib().layout, L => self.ib_put_sym::<L>(op::PUT, pe, dst.addr, src.addr, n * size_of::<T>()))
            }
            Some(Route::Proxy) => {
                let r = Request {
                    kind: kind::PUT,
                    pe: pe as u32,
                    len: (n * size_of::<T>()) as u64,
                    dest: dst.addr,
                    local: src.addr,
                    ..Default::default()
                };
                self.submit(r);
            }
            None => {}
        }
    }

    /// `nvshmem_get`: copies `dst.len()` elements of `src` on `pe` into `dst`.
    pub fn get<T: Pod>(&self, dst: &mut [T], src: DevPtr<T>, pe: usize) {
        match self.route(op::GET, src, dst.len(), pe) {
            // SAFETY: route() checked the source range; dst is a valid local slice.
            Some(Route::P2p(p)) => unsafe { p2p::get(dst.as_mut_ptr().cast(), p, size_of_val(dst)) },
            Some(Route::Ibgda) => {
                crate::with_layout!(self.ib().layout, L => self.ib_get_local::<L>(op::GET, pe, bytemuck::cast_slice_mut(dst), src.addr))
            }
            Some(Route::Proxy) => {
                let r = Request {
                    kind: kind::GET,
                    pe: pe as u32,
                    len: size_of_val(dst) as u64,
                    dest: src.addr,
                    local: dst.as_mut_ptr() as u64,
                    ..Default::default()
                };
                if let Some(t) = self.submit(r) {
                    self.wait(t, op::GET);
                }
            }
            None => {}
        }
    }

    /// `nvshmem_get_nbi`: copies `n` elements of `src` on `pe` into this PE's symmetric
    /// `dst`; valid after the next `quiet`.
    pub fn get_nbi<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize) {
        if n as u64 > dst.len {
            self.fail(ErrorCode::OutOfBounds, op::GET, pe as i64, dst.addr, n as u64);
            return;
        }
        match self.route(op::GET, src, n, pe) {
            // SAFETY: as in get; dst is n elements of a live local symmetric object.
            Some(Route::P2p(p)) => unsafe { p2p::get(dst.addr as *mut u8, p, n * size_of::<T>()) },
            Some(Route::Ibgda) => {
                crate::with_layout!(self.ib().layout, L => self.ib_get_sym::<L>(op::GET, pe, dst.addr, src.addr, n * size_of::<T>()))
            }
            Some(Route::Proxy) => {
                let r = Request {
                    kind: kind::GET,
                    pe: pe as u32,
                    len: (n * size_of::<T>()) as u64,
                    dest: src.addr,
                    local: dst.addr,
                    ..Default::default()
                };
                self.submit(r);
            }
            None => {}
        }
    }

    /// `nvshmem_p`: stores one element (a single store for 1, 2, 4 and 8-byte types).
    pub fn p<T: Pod>(&self, dst: DevPtr<T>, value: T, pe: usize) {
        let w = size_of::<T>();
        if !matches!(w, 1 | 2 | 4 | 8) {
            return self.put(dst, &[value], pe);
        }
        let mut bits = 0u64;
        // SAFETY: copies the w bytes of value into the low bytes of bits.
        unsafe { std::ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), (&raw mut bits).cast::<u8>(), w) };
        match self.route(op::P, dst, 1, pe) {
            // SAFETY: route() checked the element; symmetric objects are aligned for T.
            Some(Route::P2p(p)) => unsafe { p2p::p(p, bits, w) },
            Some(Route::Ibgda) => {
                crate::with_layout!(self.ib().layout, L => self.ib_put_local::<L>(op::P, pe, dst.addr, &bits.to_ne_bytes()[..w]))
            }
            Some(Route::Proxy) => {
                self.submit(Request {
                    kind: kind::P,
                    pe: pe as u32,
                    len: w as u64,
                    dest: dst.addr,
                    value: bits,
                    ..Default::default()
                });
            }
            None => {}
        }
    }

    /// `nvshmem_g`: loads one element from `pe` (zero after an error).
    pub fn g<T: Pod>(&self, src: DevPtr<T>, pe: usize) -> T {
        let mut v = [T::zeroed()];
        self.get(&mut v, src, pe);
        v[0]
    }

    // ---- signals --------------------------------------------------------------------

    fn sig_check(&self, sig: DevPtr<u64>, pe: usize) -> Option<Route> {
        self.route(op::SIGNAL_OP, sig, 1, pe)
    }

    /// `nvshmem_put_signal`: puts `src` into `dst` on `pe`, then updates the signal word
    /// `sig` there (`op`: set or add); a PE that sees the signal sees the data.
    pub fn put_signal<T: Pod>(
        &self,
        dst: DevPtr<T>,
        src: &[T],
        sig: DevPtr<u64>,
        value: u64,
        sop: SignalOp,
        pe: usize,
    ) {
        let (Some(rd), Some(rs)) = (self.route(op::PUT_SIGNAL, dst, src.len(), pe), self.sig_check(sig, pe)) else {
            return;
        };
        match (rd, rs) {
            (Route::P2p(p), Route::P2p(s)) => {
                // SAFETY: both ranges checked; the SeqCst atomic on the signal orders the data
                // stores before it.
                unsafe {
                    p2p::put(p, src.as_ptr().cast(), size_of_val(src));
                    p2p::atomic(s, Width::W64, sig_amo(sop, value));
                }
            }
            (Route::Ibgda, _) => crate::with_layout!(self.ib().layout, L => self.ib_put_signal::<L>(
                op::PUT_SIGNAL,
                pe,
                dst.addr,
                Some(bytemuck::cast_slice(src)),
                0,
                size_of_val(src),
                sig.addr,
                value,
                sop,
            )),
            _ => {
                let r = Request {
                    kind: kind::PUT_SIGNAL,
                    flags: sop as u16,
                    pe: pe as u32,
                    len: size_of_val(src) as u64,
                    dest: dst.addr,
                    local: src.as_ptr() as u64,
                    value,
                    sig: sig.addr,
                    ..Default::default()
                };
                if let Some(t) = self.submit(r) {
                    self.wait(t, op::PUT_SIGNAL);
                }
            }
        }
    }

    /// `nvshmem_put_signal_nbi`: as [`put_signal`](Self::put_signal) from the symmetric
    /// `src` (this PE's copy, `n` elements); complete at the next `quiet`.
    pub fn put_signal_nbi<T: Pod>(
        &self,
        dst: DevPtr<T>,
        src: DevPtr<T>,
        n: usize,
        sig: DevPtr<u64>,
        value: u64,
        sop: SignalOp,
        pe: usize,
    ) {
        if n as u64 > src.len {
            self.fail(ErrorCode::OutOfBounds, op::PUT_SIGNAL, pe as i64, src.addr, n as u64);
            return;
        }
        let (Some(rd), Some(rs)) = (self.route(op::PUT_SIGNAL, dst, n, pe), self.sig_check(sig, pe)) else { return };
        match (rd, rs) {
            (Route::P2p(p), Route::P2p(s)) => {
                // SAFETY: as in put_signal.
                unsafe {
                    p2p::put(p, src.addr as *const u8, n * size_of::<T>());
                    p2p::atomic(s, Width::W64, sig_amo(sop, value));
                }
            }
            (Route::Ibgda, _) => crate::with_layout!(self.ib().layout, L => self.ib_put_signal::<L>(
                op::PUT_SIGNAL,
                pe,
                dst.addr,
                None,
                src.addr,
                n * size_of::<T>(),
                sig.addr,
                value,
                sop,
            )),
            _ => {
                let r = Request {
                    kind: kind::PUT_SIGNAL,
                    flags: sop as u16,
                    pe: pe as u32,
                    len: (n * size_of::<T>()) as u64,
                    dest: dst.addr,
                    local: src.addr,
                    value,
                    sig: sig.addr,
                    ..Default::default()
                };
                self.submit(r);
            }
        }
    }

    /// `nvshmemx_signal_op`: updates the signal word `sig` on `pe`.
    pub fn signal_op(&self, sig: DevPtr<u64>, value: u64, sop: SignalOp, pe: usize) {
        match self.sig_check(sig, pe) {
            // SAFETY: checked, aligned u64 in the peer's mapped heap.
            Some(Route::P2p(s)) => unsafe {
                p2p::atomic(s, Width::W64, sig_amo(sop, value));
            },
            Some(Route::Ibgda) => {
                crate::with_layout!(self.ib().layout, L => self.ib_signal_op::<L>(op::SIGNAL_OP, pe, sig.addr, value, sop))
            }
            Some(Route::Proxy) => {
                self.submit(Request {
                    kind: kind::SIGNAL_OP,
                    flags: sop as u16,
                    pe: pe as u32,
                    value,
                    sig: sig.addr,
                    ..Default::default()
                });
            }
            None => {}
        }
    }

    /// `nvshmem_signal_wait_until`: waits until this PE's signal word satisfies `cmp value`;
    /// returns its value then.
    ///
    /// The wait yields the CPU while it lasts and ends after `OXSHMEM_TIMEOUT`: it then
    /// records an error (the kernel launch, this thread, the address, the condition and the
    /// value seen; [`Stream::synchronize`](crate::Stream::synchronize) reports it) and returns
    /// the value it last saw, which does not satisfy the condition. Once a wait of the device
    /// has timed out, later waits give up at once.
    pub fn signal_wait_until(&self, sig: DevPtr<u64>, cmp: Cmp, value: u64) -> u64 {
        if self.route(op::SIGNAL_WAIT, sig, 1, self.my_pe()).is_none() {
            return 0;
        }
        self.wait_word(op::SIGNAL_WAIT, -1, sig.addr, cmp, value).unwrap_or_else(|seen| seen)
    }

    /// `nvshmem_wait_until`: waits until this PE's `ivar` (a 16-, 32- or 64-bit integer)
    /// satisfies `cmp value`; returns its value then. Times out as
    /// [`signal_wait_until`](Self::signal_wait_until) does.
    ///
    /// ```
    /// use oxshmem::Cmp;
    /// use oxshmem_device::{DevPtr, Device, Grid};
    /// let shmem = oxshmem::init()?;
    /// let dev = Device::init(&shmem)?;
    /// let ivar = shmem.alloc_slice(1, 0i32)?;
    /// let v = DevPtr::from_slice(&ivar);
    /// let me = shmem.my_pe();
    /// let stream = dev.stream();
    /// stream.launch(Grid::new(1, 2), move |t| {
    ///     if t.thread_idx() == 0 {
    ///         t.wait_until(v, Cmp::Lt, 0);          // until thread 1 stores -7
    ///     } else {
    ///         t.atomic_set(v, -7, me);
    ///     }
    /// });
    /// stream.synchronize()?;
    /// drop(stream);
    /// dev.finalize()?;
    /// shmem.finalize()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_until<T: SyncType>(&self, ivar: DevPtr<T>, cmp: Cmp, value: T) -> T {
        if self.route(op::WAIT_UNTIL, ivar, 1, self.my_pe()).is_none() {
            return T::zeroed();
        }
        if !ivar.addr.is_multiple_of(size_of::<T>() as u64) {
            self.fail(ErrorCode::Misaligned, op::WAIT_UNTIL, self.my_pe() as i64, ivar.addr, size_of::<T>() as u64);
            return T::zeroed();
        }
        self.wait_word(op::WAIT_UNTIL, -1, ivar.addr, cmp, value).unwrap_or_else(|seen| seen)
    }

    // ---- atomics --------------------------------------------------------------------

    fn amo<T: AmoType>(&self, dst: DevPtr<T>, aop: AmoOp, pe: usize, fetch: bool) -> T {
        let w = T::WIDTH;
        match self.route(op::AMO, dst, 1, pe) {
            Some(Route::P2p(p)) => {
                if !(p as usize).is_multiple_of(w.bytes()) {
                    self.fail(ErrorCode::Misaligned, op::AMO, pe as i64, dst.addr, w.bytes() as u64);
                    return T::zeroed();
                }
                // SAFETY: checked and aligned, in the peer's mapped heap.
                T::from_bits(unsafe { p2p::atomic(p, w, aop) })
            }
            Some(Route::Ibgda) => {
                if !dst.addr.is_multiple_of(w.bytes() as u64) {
                    self.fail(ErrorCode::Misaligned, op::AMO, pe as i64, dst.addr, w.bytes() as u64);
                    return T::zeroed();
                }
                T::from_bits(
                    crate::with_layout!(self.ib().layout, L => self.ib_amo::<L>(op::AMO, pe, dst.addr, w.bytes() as u32, aop, fetch)),
                )
            }
            Some(Route::Proxy) => {
                let mut out = 0u64;
                let (flags, value, cond) = amo_flags(aop, w == Width::W64);
                let r = Request {
                    kind: kind::AMO,
                    flags,
                    pe: pe as u32,
                    len: w.bytes() as u64,
                    dest: dst.addr,
                    local: if fetch { (&raw mut out) as u64 } else { 0 },
                    value,
                    cond,
                    sig: 0,
                };
                if let Some(t) = self.submit(r)
                    && fetch
                    && self.wait(t, op::AMO)
                {
                    // SAFETY: the proxy wrote `out` before completing the ticket (acquire).
                    return T::from_bits(unsafe { (&raw const out).read_volatile() });
                }
                T::zeroed()
            }
            None => T::zeroed(),
        }
    }

    /// `nvshmem_atomic_fetch`.
    pub fn atomic_fetch<T: AmoType>(&self, dst: DevPtr<T>, pe: usize) -> T {
        self.amo(dst, AmoOp::Fetch, pe, true)
    }
    /// `nvshmem_atomic_set`.
    pub fn atomic_set<T: AmoType>(&self, dst: DevPtr<T>, value: T, pe: usize) {
        self.amo(dst, AmoOp::Set(value.to_bits()), pe, false);
    }
    /// `nvshmem_atomic_swap`.
    pub fn atomic_swap<T: AmoType>(&self, dst: DevPtr<T>, value: T, pe: usize) -> T {
        self.amo(dst, AmoOp::Swap(value.to_bits()), pe, true)
    }
    /// `nvshmem_atomic_compare_swap`.
    pub fn atomic_compare_swap<T: AmoInt>(&self, dst: DevPtr<T>, cond: T, value: T, pe: usize) -> T {
        self.amo(dst, AmoOp::CompareSwap { cond: cond.to_bits(), value: value.to_bits() }, pe, true)
    }
    /// `nvshmem_atomic_fetch_add`.
    pub fn atomic_fetch_add<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) -> T {
        self.amo(dst, AmoOp::FetchAdd(value.to_bits()), pe, true)
    }
    /// `nvshmem_atomic_add`.
    pub fn atomic_add<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) {
        self.amo(dst, AmoOp::FetchAdd(value.to_bits()), pe, false);
    }
    /// `nvshmem_atomic_fetch_inc`.
    pub fn atomic_fetch_inc<T: AmoInt>(&self, dst: DevPtr<T>, pe: usize) -> T {
        self.amo(dst, AmoOp::FetchAdd(T::ONE.to_bits()), pe, true)
    }
    /// `nvshmem_atomic_inc`.
    pub fn atomic_inc<T: AmoInt>(&self, dst: DevPtr<T>, pe: usize) {
        self.amo(dst, AmoOp::FetchAdd(T::ONE.to_bits()), pe, false);
    }
    /// `nvshmem_atomic_fetch_and`.
    pub fn atomic_fetch_and<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) -> T {
        self.amo(dst, AmoOp::FetchAnd(value.to_bits()), pe, true)
    }
    /// `nvshmem_atomic_fetch_or`.
    pub fn atomic_fetch_or<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) -> T {
        self.amo(dst, AmoOp::FetchOr(value.to_bits()), pe, true)
    }
    /// `nvshmem_atomic_fetch_xor`.
    pub fn atomic_fetch_xor<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) -> T {
        self.amo(dst, AmoOp::FetchXor(value.to_bits()), pe, true)
    }
    /// `nvshmem_atomic_and`.
    pub fn atomic_and<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) {
        self.amo(dst, AmoOp::FetchAnd(value.to_bits()), pe, false);
    }
    /// `nvshmem_atomic_or`.
    pub fn atomic_or<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) {
        self.amo(dst, AmoOp::FetchOr(value.to_bits()), pe, false);
    }
    /// `nvshmem_atomic_xor`.
    pub fn atomic_xor<T: AmoInt>(&self, dst: DevPtr<T>, value: T, pe: usize) {
        self.amo(dst, AmoOp::FetchXor(value.to_bits()), pe, false);
    }

    // ---- ordering -------------------------------------------------------------------

    /// `nvshmem_fence`: this thread's operations to each PE are delivered in order around it.
    pub fn fence(&self) {
        // P2P stores are ordered by the release fence; the proxy executes in ring order; an
        // IBGDA queue executes in order too, and the next WQE is fenced for the NIC's sake.
        fence(Ordering::Release);
        if self.dev.ibgda().is_some() {
            self.fence_pending.set(true);
        }
    }

    /// `nvshmem_quiet`: every operation this thread issued is complete and visible.
    pub fn quiet(&self) {
        fence(Ordering::SeqCst);
        let last = self.last_ticket.get();
        if last > 0 {
            self.wait(last - 1, op::QUIET);
        }
        if self.dev.ibgda().is_some() {
            crate::with_layout!(self.ib().layout, L => self.ib_quiet::<L>(op::QUIET));
        }
    }

    // ---- PE-wide synchronization (one thread per PE) --------------------------------

    /// `nvshmem_barrier_all` from one device thread per PE: quiet, then wait for every PE.
    /// A PE that does not arrive within `OXSHMEM_TIMEOUT` makes it fail (see
    /// [`sync_all`](Self::sync_all)).
    pub fn barrier_all(&self) {
        self.quiet();
        self.sync_all_as(op::BARRIER);
    }

    /// `nvshmem_sync_all` from one device thread per PE: wait for every PE (no quiet).
    /// A dissemination barrier over the device's own symmetric flags, through each peer's
    /// channel, so it never interferes with the host runtime's barriers. Each round waits for
    /// one PE's flag; when it does not come within `OXSHMEM_TIMEOUT`, the barrier records an
    /// error naming that PE, the flag and the values, and returns.
    pub fn sync_all(&self) {
        self.sync_all_as(op::SYNC_ALL);
    }

    fn sync_all_as(&self, opc: u32) {
        let st = self.state;
        let n = st.n_pes as usize;
        let me = st.my_pe as usize;
        let epoch = st.barrier_epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let flags = DevPtr::<u64> { addr: st.barrier_flags, len: (BARRIER_ROUNDS * 8) as u64, _t: PhantomData };
        let mut dist = 1;
        let mut round = 0;
        while dist < n {
            let f = flags.offset(round * 8);
            self.signal_op(f, epoch, SignalOp::Set, (me + dist) % n);
            // The flag is in this PE's copy of the device's own flags; the PE `dist` to the left
            // sets it.
            let from = ((me + n - dist) % n) as i64;
            if self.wait_word(opc, from, f.addr, Cmp::Ge, epoch).is_err() {
                return;
            }
            dist <<= 1;
            round += 1;
        }
    }

    // ---- collective-scope forms -----------------------------------------------------

    /// The group (warp or block) of this thread: (rank in group, group size).
    fn group(&self, block: bool) -> (usize, usize) {
        if block { (self.thread, self.grid.threads) } else { (self.lane_idx(), self.warp_len()) }
    }

    fn group_sync(&self, block: bool) {
        if block { self.sync_block() } else { self.sync_warp() }
    }

    fn put_group<T: Pod>(&self, dst: DevPtr<T>, src: &[T], pe: usize, block: bool) {
        let (r, g) = self.group(block);
        match self.route(op::PUT, dst, src.len(), pe) {
            Some(Route::P2p(_)) => {
                // Every member copies its share.
                let share = src.len().div_ceil(g);
                let lo = (r * share).min(src.len());
                let hi = ((r + 1) * share).min(src.len());
                if lo < hi {
                    self.put(dst.offset(lo), &src[lo..hi], pe);
                }
            }
            Some(Route::Proxy | Route::Ibgda) if r == 0 => self.put(dst, src, pe),
            _ => {}
        }
        self.group_sync(block);
    }

    /// `nvshmemx_put_warp`: every thread of the warp calls with the same arguments.
    pub fn put_warp<T: Pod>(&self, dst: DevPtr<T>, src: &[T], pe: usize) {
        self.put_group(dst, src, pe, false)
    }

    /// `nvshmemx_put_block`: every thread of the block calls with the same arguments.
    pub fn put_block<T: Pod>(&self, dst: DevPtr<T>, src: &[T], pe: usize) {
        self.put_group(dst, src, pe, true)
    }

    fn put_nbi_group<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize, block: bool) {
        let (r, g) = self.group(block);
        match self.route(op::PUT, dst, n, pe) {
            Some(Route::P2p(_)) => {
                let share = n.div_ceil(g);
                let lo = (r * share).min(n);
                let hi = ((r + 1) * share).min(n);
                if lo < hi {
                    self.put_nbi(dst.offset(lo), src.offset(lo), hi - lo, pe);
                }
            }
            Some(Route::Proxy | Route::Ibgda) if r == 0 => self.put_nbi(dst, src, n, pe),
            _ => {}
        }
        self.group_sync(block);
        self.adopt_group_tickets();
    }

    /// After a group operation through the proxy, every member's `quiet` must cover the
    /// leader's request: adopt every ticket issued so far (conservative and cheap).
    fn adopt_group_tickets(&self) {
        if let Some(ring) = self.dev.ring() {
            self.last_ticket.set(self.last_ticket.get().max(ring.issued()));
        }
        self.ib_quiet_all.set(true);
    }

    /// `nvshmemx_put_nbi_warp`.
    pub fn put_nbi_warp<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize) {
        self.put_nbi_group(dst, src, n, pe, false)
    }

    /// `nvshmemx_put_nbi_block`.
    pub fn put_nbi_block<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize) {
        self.put_nbi_group(dst, src, n, pe, true)
    }

    fn get_group<T: Pod>(&self, dst: &mut [T], src: DevPtr<T>, pe: usize, block: bool) {
        // `dst` is this thread's own buffer (Rust gives each thread its own &mut): every
        // member fetches the whole object into its buffer, sharing nothing but the wait.
        self.get(dst, src, pe);
        self.group_sync(block);
    }

    /// `nvshmemx_get_warp` (each thread receives the data into its own `dst`).
    pub fn get_warp<T: Pod>(&self, dst: &mut [T], src: DevPtr<T>, pe: usize) {
        self.get_group(dst, src, pe, false)
    }

    /// `nvshmemx_get_block` (each thread receives the data into its own `dst`).
    pub fn get_block<T: Pod>(&self, dst: &mut [T], src: DevPtr<T>, pe: usize) {
        self.get_group(dst, src, pe, true)
    }

    fn get_nbi_group<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize, block: bool) {
        let (r, g) = self.group(block);
        let share = n.div_ceil(g);
        let lo = (r * share).min(n);
        let hi = ((r + 1) * share).min(n);
        if lo < hi {
            self.get_nbi(dst.offset(lo), src.offset(lo), hi - lo, pe);
        }
        self.group_sync(block);
        self.adopt_group_tickets();
    }

    /// `nvshmemx_get_nbi_warp`: the warp shares fetching `n` elements into this PE's symmetric
    /// `dst`.
    pub fn get_nbi_warp<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize) {
        self.get_nbi_group(dst, src, n, pe, false)
    }

    /// `nvshmemx_get_nbi_block`.
    pub fn get_nbi_block<T: Pod>(&self, dst: DevPtr<T>, src: DevPtr<T>, n: usize, pe: usize) {
        self.get_nbi_group(dst, src, n, pe, true)
    }

    fn put_signal_group<T: Pod>(
        &self,
        dst: DevPtr<T>,
        src: &[T],
        sig: DevPtr<u64>,
        value: u64,
        sop: SignalOp,
        pe: usize,
        block: bool,
    ) {
        let (r, _) = self.group(block);
        match self.route(op::PUT_SIGNAL, dst, src.len(), pe) {
            Some(Route::P2p(_)) => {
                // Share the data, then one member signals once all shares are written.
                self.put_group(dst, src, pe, block);
                if r == 0 {
                    self.fence();
                    self.signal_op(sig, value, sop, pe);
                }
            }
            Some(Route::Proxy | Route::Ibgda) if r == 0 => self.put_signal(dst, src, sig, value, sop, pe),
            _ => {}
        }
        self.group_sync(block);
    }

    /// `nvshmemx_put_signal_warp`.
    pub fn put_signal_warp<T: Pod>(
        &self,
        dst: DevPtr<T>,
        src: &[T],
        sig: DevPtr<u64>,
        value: u64,
        sop: SignalOp,
        pe: usize,
    ) {
        self.put_signal_group(dst, src, sig, value, sop, pe, false)
    }

    /// `nvshmemx_put_signal_block`.
    pub fn put_signal_block<T: Pod>(
        &self,
        dst: DevPtr<T>,
        src: &[T],
        sig: DevPtr<u64>,
        value: u64,
        sop: SignalOp,
        pe: usize,
    ) {
        self.put_signal_group(dst, src, sig, value, sop, pe, true)
    }

    /// `nvshmemx_quiet_block`-style: every thread quiets, then the block synchronizes.
    pub fn quiet_block(&self) {
        self.quiet();
        self.sync_block();
    }

    /// `nvshmemx_barrier_all_block`: every thread of the block calls; one PE-wide barrier.
    pub fn barrier_all_block(&self) {
        self.quiet();
        self.adopt_group_tickets();
        self.sync_block();
        if self.thread == 0 {
            self.barrier_all();
        }
        self.sync_block();
    }

    /// `nvshmemx_barrier_all_warp`: every thread of one warp calls; one PE-wide barrier.
    pub fn barrier_all_warp(&self) {
        self.quiet();
        self.sync_warp();
        if self.lane_idx() == 0 {
            self.barrier_all();
        }
        self.sync_warp();
    }

    /// `nvshmemx_sync_all_block`.
    pub fn sync_all_block(&self) {
        self.sync_block();
        if self.thread == 0 {
            self.sync_all();
        }
        self.sync_block();
    }
}

/// The bits of a 1-, 2-, 4- or 8-byte value, zero-extended.
fn bits<T: Pod>(v: T) -> u64 {
    let b = bytemuck::bytes_of(&v);
    match b.len() {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_ne_bytes([b[0], b[1]])),
        4 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        _ => {
            let mut w = [0u8; 8];
            let n = b.len().min(8);
            w[..n].copy_from_slice(&b[..n]);
            u64::from_ne_bytes(w)
        }
    }
}

/// Whether an integer type is signed: all ones is below zero.
fn is_signed<T: Pod + PartialOrd>() -> bool {
    let ones: T = bytemuck::pod_read_unaligned(&[0xffu8; 16][..size_of::<T>()]);
    ones < T::zeroed()
}

fn sig_amo(sop: SignalOp, value: u64) -> AmoOp {
    match sop {
        SignalOp::Set => AmoOp::Set(value),
        SignalOp::Add => AmoOp::FetchAdd(value),
    }
}

const _: () = assert!(WARP_SIZE == 32);

/// `read_local` against another thread storing the same elements the way the device API's `p`
/// and the host's `SymSlice::write` do (a data race while it was a volatile load); run under Miri
/// (`scripts/miri.sh`).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_local_races_a_device_threads_stores() {
        let mem = Vec::leak(vec![0u64; 4]).as_mut_ptr() as u64;
        let d = DevPtr::<u64> { addr: mem, len: 4, _t: PhantomData };
        let narrow = DevPtr::<u16> { addr: mem, len: 16, _t: PhantomData };
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for r in 1..=16u64 {
                    // SAFETY: element 1 of the leaked block, aligned; stored as the P2P `p` does.
                    unsafe { p2p::p((d.addr as *mut u64).add(1).cast(), r, 8) };
                    // SAFETY: element 8 of the u16 view (the first u16 of word 2), aligned.
                    unsafe { oxshmem::transport::relaxed::store((narrow.addr as *mut u16).add(8), r as u16) };
                }
            });
            for _ in 0..16 {
                assert!(d.read_local(1) <= 16);
                assert!(narrow.read_local(8) <= 16);
            }
        });
        assert_eq!((d.read_local(1), narrow.read_local(8)), (16, 16));
    }
}
