//! Completion tracking and progress. Every operation is posted with a completion context that
//! says who owns its completion: the in-flight counters (per peer and in all, which quiet
//! and fence wait on) or a caller blocked on it (through its bounce slot). Posting retries
//! while the provider answers `-FI_EAGAIN`; waiting polls the completion queue itself. The
//! progress thread polls for everyone else, and stands back while a caller polls.

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::track::MAX_CTXS;
use super::{Inner, SLOT_SIZE, SLOTS, ffi};
use crate::error::Result;
use crate::spin::SpinPolicy;
use crate::transport::CtxId;

/// Completion context kinds: who owns an operation's completion (bits 0..4 of the context
/// value; the libfabric call in bits 4..8, slot + 1 in bits 8..16, the transport context's
/// number (`CtxId`) in bits 16..32, the peer from bit 32).
/// Contexts are plain values: we ask for `mode = 0`, so providers never write through them.
///
/// The in-flight counters own it ([`Inner::post_counted`]): its completion decrements the
/// peer's and the total count that fence and quiet wait on (the default context's, and its own
/// context's), records a failure for them to report, and frees the bounce slot, if any.
const CTX_OWNED_BY_COUNTERS: u64 = 1;
/// A caller blocked on it owns it ([`Inner::blocking`]): its completion marks the caller's
/// bounce slot done (with the error, if any), and the caller frees the slot.
const CTX_OWNED_BY_WAITER: u64 = 2;

/// The libfabric calls that post operations, as error messages name them (the call that failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    Write = 1,
    Read = 2,
    Atomic = 3,
    FetchAtomic = 4,
    CompareAtomic = 5,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Write => "fi_write",
            Call::Read => "fi_read",
            Call::Atomic => "fi_atomic",
            Call::FetchAtomic => "fi_fetch_atomic",
            Call::CompareAtomic => "fi_compare_atomic",
        }
    }

    fn from_bits(b: u64) -> Option<Call> {
        [Call::Write, Call::Read, Call::Atomic, Call::FetchAtomic, Call::CompareAtomic]
            .into_iter()
            .find(|c| *c as u64 == b)
    }
}

/// One operation as its completion context and error messages label it: the call, the peer,
/// and what the caller asked for — displayed as
/// `fi_write to PE 3 (a put of 1048576 bytes at offset 0x1000 of segment 0)`.
pub(super) struct OpLabel<'a> {
    pub(super) call: Call,
    pub(super) pe: usize,
    /// What the caller asked for; called only when a message needs it.
    pub(super) what: &'a dyn Fn() -> String,
}

impl std::fmt::Display for OpLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} to PE {} ({})", self.call.name(), self.pe, (self.what)())
    }
}

/// How long the progress thread naps when it finds that callers polled since it last looked
/// (or are inside a blocking call): it wakes rarely, so it seldom preempts the polling caller.
const STAND_BACK_NAP: Duration = Duration::from_millis(1);

/// Blocking calls look at the clock (for their timeout) once per this many polls: a poll is
/// about a microsecond, and two clock reads per poll were 5% of an 8-byte put's time.
const CLOCK_EVERY: u32 = 64;

/// A caller inside a blocking call, counted in `Inner::busy_callers` until this guard drops.
struct BusyCallerGuard<'a>(&'a AtomicU32);

impl Drop for BusyCallerGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The completion context of an operation of `kind` (`CTX_OWNED_BY_*`) in transport context
/// `ctx`, as [`Inner::complete`] decodes it.
fn context(kind: u64, call: Call, ctx: CtxId, pe: usize, slot: Option<usize>) -> *mut c_void {
    const _: () = assert!(SLOTS < 0xff && MAX_CTXS <= 0x1_0000);
    (kind
        | ((call as u64) << 4)
        | (slot.map_or(0, |s| s as u64 + 1) << 8)
        | ((ctx.index() as u64) << 16)
        | ((pe as u64) << 32)) as *mut c_void
}

/// Progress threads to stop before the process exits, so that none is inside libfabric when
/// its destructors run (a PE may exit without finalize).
static LIVE: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());
static EXIT_HOOK: std::sync::Once = std::sync::Once::new();

extern "C" fn stop_progress_at_exit() {
    let live: Vec<Weak<Inner>> = std::mem::take(&mut *LIVE.lock());
    for i in live.iter().filter_map(Weak::upgrade) {
        i.stop_progress();
    }
}

/// Starts `inner`'s progress thread ([`Inner::progress_loop`]), and has it stopped at exit.
pub(super) fn start_progress_thread(inner: &Arc<Inner>) -> std::io::Result<()> {
    let i = Arc::clone(inner);
    let t = std::thread::Builder::new().name("oxshmem-ofi-progress".into()).spawn(move || i.progress_loop())?;
    *inner.thread.lock() = Some(t);
    LIVE.lock().push(Arc::downgrade(inner));
    // SAFETY: atexit with a valid extern "C" fn that takes no arguments.
    EXIT_HOOK.call_once(|| unsafe {
        libc::atexit(stop_progress_at_exit);
    });
    Ok(())
}

impl Inner {
    /// Reads the completion queue once on behalf of a caller (not the progress thread);
    /// returns how many entries it handled.
    pub(super) fn progress(&self) -> usize {
        self.caller_polls.fetch_add(1, Ordering::Relaxed);
        self.poll_cq()
    }

    /// Reads the completion queue once; returns how many entries it handled.
    fn poll_cq(&self) -> usize {
        let mut ctx = [null_mut::<c_void>(); 32];
        let n = {
            let _g = self.guard();
            // SAFETY: the queue is open (operations stop before shutdown closes it); ctx has
            // room for ctx.len() contexts.
            unsafe { ffi::oxs_cq_read(self.cq, ctx.as_mut_ptr(), ctx.len()) }
        };
        self.handle(n, &ctx)
    }

    fn handle(&self, n: isize, ctx: &[*mut c_void]) -> usize {
        if n > 0 {
            for &c in &ctx[..n as usize] {
                self.complete(c as u64, None);
            }
            return n as usize;
        }
        if n == -(ffi::FI_EAVAIL as isize) {
            self.read_error();
            return 1;
        }
        0
    }

    fn read_error(&self) {
        let mut ctx = null_mut::<c_void>();
        let (mut err, mut perr) = (0i32, 0i32);
        let mut msg = [0 as std::os::raw::c_char; 256];
        let rc = {
            let _g = self.guard();
            // SAFETY: the queue is open; every out-pointer is valid; msg has msg.len() bytes.
            unsafe { ffi::oxs_cq_readerr(self.cq, &mut ctx, &mut err, &mut perr, msg.as_mut_ptr(), msg.len()) }
        };
        if rc > 0 {
            // SAFETY: oxs_cq_readerr NUL-terminated msg (snprintf).
            let text = unsafe { ffi::cstr(msg.as_ptr()) };
            self.complete(ctx as u64, Some((err.max(1), text)));
        }
    }

    /// Records the completion of the operation whose context is `c`.
    fn complete(&self, c: u64, err: Option<(i32, String)>) {
        let kind = c & 0xf;
        let call = Call::from_bits((c >> 4) & 0xf).map_or("an operation", Call::name);
        let slot = ((c >> 8) & 0xff) as usize;
        let own = self.ctxs.by_slot(((c >> 16) & 0xffff) as usize);
        let pe = (c >> 32) as usize;
        match kind {
            CTX_OWNED_BY_COUNTERS => {
                if let Some((_, m)) = &err {
                    let msg = || format!("an earlier {call} to PE {pe} failed: {m}");
                    self.all.fail(msg);
                    if let Some(t) = own {
                        t.fail(msg);
                    }
                }
                if (1..=SLOTS).contains(&slot) {
                    self.release(slot - 1);
                }
                // The context's count first: the default context's count reaching zero then
                // also means every context's did.
                if let Some(t) = own {
                    t.retire(pe);
                }
                self.all.retire(pe);
            }
            CTX_OWNED_BY_WAITER if (1..=SLOTS).contains(&slot) => {
                let s = slot - 1;
                if let Some((e, m)) = err {
                    *self.slot_msg[s].lock() = m;
                    self.slot_err[s].store(e, Ordering::Relaxed);
                }
                self.slot_done[s].store(1, Ordering::Release);
            }
            _ => {}
        }
    }

    /// The progress thread: polls the completion queue while there are completions, then
    /// naps in growing steps (20 µs to 200 µs), and stands back while a caller polls (a
    /// blocking call, or the runtime's wait loops through [`Transport::progress`]).
    ///
    /// The queue has no wait object on purpose: with one, `ofi_rxm` signals an fd on every
    /// completion (a system call per operation, 1-2 µs here), `fi_cq_sread` crashes on
    /// `udp;ofi_rxd` 1.17 and ignores its timeout on `shm`. The price is that a PE busy outside
    /// the runtime serves one-sided operations aimed at it once per nap.
    ///
    /// Its back-off is not a [`SpinPolicy`]: it spins for a time since the last traffic (not
    /// a number of polls), never yields, sleeps in two steps, and starts over on any
    /// completion or caller.
    ///
    /// [`Transport::progress`]: crate::transport::Transport::progress
    fn progress_loop(&self) {
        let mut last = Instant::now();
        let mut naps = 0u32;
        let mut seen = self.caller_polls.load(Ordering::Relaxed);
        while !self.stop.load(Ordering::Acquire) {
            let polls = self.caller_polls.load(Ordering::Relaxed);
            if self.busy_callers.load(Ordering::Relaxed) > 0 || polls != seen {
                seen = polls;
                std::thread::sleep(STAND_BACK_NAP);
                last = Instant::now();
                continue;
            }
            if self.poll_cq() > 0 {
                last = Instant::now();
                naps = 0;
                continue;
            }
            if last.elapsed() < self.spin {
                std::hint::spin_loop();
                continue;
            }
            naps = naps.saturating_add(1);
            std::thread::sleep(Duration::from_micros(if naps < 50 { 20 } else { 200 }));
        }
    }

    /// Counts this caller in [`Self::busy_callers`] until the guard drops.
    fn busy(&self) -> BusyCallerGuard<'_> {
        self.busy_callers.fetch_add(1, Ordering::Relaxed);
        BusyCallerGuard(&self.busy_callers)
    }

    pub(super) fn stop_progress(&self) {
        self.stop.store(true, Ordering::Release);
        let t = self.thread.lock().take();
        if let Some(t) = t
            && t.thread().id() != std::thread::current().id()
        {
            let _ = t.join();
            tracing::debug!(target: "ofi", "progress thread stopped");
        }
    }

    /// Posts with `f` until it does not answer `-FI_EAGAIN` (progressing meanwhile).
    fn post(&self, func: &'static str, label: &OpLabel<'_>, mut f: impl FnMut() -> isize) -> Result<()> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(self.error(func, "the transport has been shut down (shmem_finalize)".into()));
        }
        // A caller is active: the progress thread stands back (it would take this
        // operation's completion from under the caller, and contend for the queue's lock).
        self.caller_polls.fetch_add(1, Ordering::Relaxed);
        let _busy = self.busy();
        let start = Instant::now();
        let mut polls = 0;
        loop {
            let rc = {
                let _g = self.guard();
                f()
            };
            if rc == 0 {
                return Ok(());
            }
            if rc != -(ffi::FI_EAGAIN as isize) {
                return Err(self.error(func, format!("{label} failed: {}", ffi::strerror(rc))));
            }
            self.progress();
            if start.elapsed() > self.timeout {
                return Err(self.timeout_error(func, label.pe, &format!("{label} was refused (FI_EAGAIN) for")));
            }
            SpinPolicy::YIELD.pause(&mut polls);
        }
    }

    /// Progresses until `cond` holds, or fails naming `pe` and `what` after the timeout.
    pub(super) fn wait_until(
        &self,
        func: &'static str,
        pe: usize,
        what: &dyn Fn() -> String,
        cond: impl Fn() -> bool,
    ) -> Result<()> {
        if cond() {
            return Ok(());
        }
        let _busy = self.busy();
        let start = Instant::now();
        // Poll as the runtime's waiters do (OXSHMEM_SPIN polls, 0 when the host runs more PEs
        // than cores), then let other processes run between polls.
        let policy = SpinPolicy::spin_then_yield(self.spin_polls);
        let mut polls = 0;
        loop {
            self.progress();
            if cond() {
                return Ok(());
            }
            policy.pause(&mut polls);
            if polls.is_multiple_of(CLOCK_EVERY) && start.elapsed() > self.timeout {
                return Err(self.timed_out(func, pe, &what()));
            }
        }
    }

    pub(super) fn acquire(&self, func: &'static str, pe: usize) -> Result<usize> {
        let start = Instant::now();
        let mut polls = 0;
        loop {
            let m = self.slot_free.load(Ordering::Acquire);
            if m != 0 {
                let b = m.trailing_zeros() as usize;
                if self.slot_free.compare_exchange_weak(m, m & !(1 << b), Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                    return Ok(b);
                }
                continue;
            }
            self.progress();
            if start.elapsed() > self.timeout {
                return Err(self.timeout_error(
                    func,
                    pe,
                    &format!("an operation to PE {pe} found every bounce buffer held by earlier operations for"),
                ));
            }
            SpinPolicy::YIELD.pause(&mut polls);
        }
    }

    fn release(&self, s: usize) {
        self.slot_free.fetch_or(1 << s, Ordering::Release);
    }

    pub(super) fn slot_ptr(&self, s: usize) -> *mut u8 {
        // SAFETY: s < SLOTS, so the offset stays inside the bounce allocation.
        unsafe { self.bounce.ptr.add(s * SLOT_SIZE) }
    }

    /// Posts one counted operation of context `ctx` to `pe` (completed by quiet, and by
    /// `ctx`'s quiet); `slot` is released when it completes.
    pub(super) fn post_counted(
        &self,
        func: &'static str,
        ctx: CtxId,
        label: &OpLabel<'_>,
        slot: Option<usize>,
        mut f: impl FnMut(*mut c_void) -> isize,
    ) -> Result<()> {
        let pe = label.pe;
        let own = self.ctxs.get(ctx);
        // Counted before posting: the completion may be read by another thread at once.
        self.all.issue(pe);
        if let Some(t) = own {
            t.issue(pe);
        }
        let c = context(CTX_OWNED_BY_COUNTERS, label.call, ctx, pe, slot);
        if let Err(e) = self.post(func, label, || f(c)) {
            if let Some(t) = own {
                t.retire(pe);
            }
            self.all.retire(pe);
            if let Some(s) = slot {
                self.release(s);
            }
            return Err(e);
        }
        if !self.prov.delivery_complete {
            self.mark_dirty(ctx, pe);
        }
        Ok(())
    }

    /// `pe` has writes of context `ctx` whose delivery only a read-back proves.
    pub(super) fn mark_dirty(&self, ctx: CtxId, pe: usize) {
        self.all.mark_dirty(pe);
        if let Some(t) = self.ctxs.get(ctx) {
            t.mark_dirty(pe);
        }
    }

    /// Posts one operation to `pe` and waits for its completion; `post` gets the context and
    /// a bounce slot it may use, `read` reads the result from the slot afterwards.
    pub(super) fn blocking<R>(
        &self,
        func: &'static str,
        label: &OpLabel<'_>,
        mut post: impl FnMut(*mut c_void, usize) -> isize,
        read: impl FnOnce(usize) -> R,
    ) -> Result<R> {
        let pe = label.pe;
        let s = self.acquire(func, pe)?;
        self.slot_done[s].store(0, Ordering::Relaxed);
        self.slot_err[s].store(0, Ordering::Relaxed);
        let c = context(CTX_OWNED_BY_WAITER, label.call, CtxId::DEFAULT, pe, Some(s));
        if let Err(e) = self.post(func, label, || post(c, s)) {
            self.release(s);
            return Err(e);
        }
        // On a timeout the slot stays taken: the operation may still complete into it.
        let text = || label.to_string();
        self.wait_until(func, pe, &text, || self.slot_done[s].load(Ordering::Acquire) != 0)?;
        let r = match self.slot_err[s].load(Ordering::Relaxed) {
            0 => Ok(read(s)),
            _ => Err(self.error(func, format!("{label} failed: {}", self.slot_msg[s].lock()))),
        };
        self.release(s);
        r
    }
}
