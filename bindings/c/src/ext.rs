//! The extensions of Sandia OpenSHMEM that its users call (`shmemx.h`), and the names under
//! which OpenSHMEM 1.6 standardized some of them.
//!
//! | extension | here |
//! | --- | --- |
//! | `shmemx_signal_add`/`_set`, `shmemx_ctx_signal_add`/`_set` | an atomic add/set of a remote signal word, as put-with-signal does it; OpenSHMEM 1.6: `shmem_[ctx_]signal_add`/`_set` |
//! | `shmemx_[ctx_]TYPE_ibput`/`_ibget`, `shmemx_[ctx_]ibput`/`ibgetSIZE` | blocked strided RMA ([`oxshmem_rt::raw::ibput`]); OpenSHMEM 1.6: `shmem_…` |
//! | `shmemx_TYPE_sum_inscan`/`_exscan` | prefix sums over a team ([`oxshmem_rt::coll::scan`]); OpenSHMEM 1.6: `shmem_TYPE_sum_inscan`/`_exscan` |
//! | `SHMEMX_TEAM_NODE` | the PEs of this node: the team of `SHMEM_TEAM_SHARED` (a node is the set of PEs that share memory) |
//! | `SHMEMX_MALLOC_NO_BARRIER` | a hint of `shmem_malloc_with_hints` (the constant lives in `shmemx.h`) |
//! | `shmemx_pcntr_*` | counters of the RMA, AMO and signal operations issued and completed, per context ([`counted_write`]) |
//! | `shmemx_register_gettid` | the function that tells which thread calls: private contexts belong to the thread it names ([`gettid_owner`]) |
//!
//! The typed routines are generated from `gen/ops.rs` like every other typed family; they call
//! [`ibput`], [`ibget`] and [`scan`] here. The prototypes of the untyped ones come from the
//! `API` table there, as for every hand-written routine.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use oxshmem_rt::{ArithReducible, Error, ErrorKind, Result, raw};

use crate::error::{bytes, invalid, ok, status};
use crate::handles::{self, ShmemCtx, ShmemTeam, TeamRec};
use crate::longdouble::LongDouble;
use crate::ops::{self, Amo};

// ---------------------------------------------------------------------------------------------
// Signals

/// `SHMEM_SIGNAL_ADD` (`add`) or `SHMEM_SIGNAL_SET` of `signal` into `sig_addr` on `pe`.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned.
unsafe fn signal(func: &'static str, ctx: ShmemCtx, sig_addr: *mut u64, signal: u64, add: bool, pe: c_int) {
    let op = if add { Amo::Add(signal) } else { Amo::Set(signal) };
    // SAFETY: forwarded from the caller; the runtime checks sig_addr. The update is the same
    // atomic a put-with-signal ends with.
    counted_write(ctx, move || unsafe { ops::amo(func, ctx, sig_addr, op, pe) });
}

/// `shmemx_signal_add`: adds `signal` to the signal word `sig_addr` on `pe`, atomically.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_signal_add(sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmemx_signal_add", handles::default_ctx(), sig_addr, signal, true, pe) }
}

/// `shmemx_signal_set`: sets the signal word `sig_addr` on `pe` to `signal`, atomically.
///
/// # Safety
/// As [`shmemx_signal_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_signal_set(sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmemx_signal_set", handles::default_ctx(), sig_addr, signal, false, pe) }
}

/// `shmemx_ctx_signal_add`: [`shmemx_signal_add`] on `ctx` (`pe` numbered in its team).
///
/// # Safety
/// As [`shmemx_signal_add`]; `ctx` is checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_ctx_signal_add(ctx: ShmemCtx, sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmemx_ctx_signal_add", ctx, sig_addr, signal, true, pe) }
}

/// `shmemx_ctx_signal_set`: [`shmemx_signal_set`] on `ctx`.
///
/// # Safety
/// As [`shmemx_ctx_signal_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_ctx_signal_set(ctx: ShmemCtx, sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmemx_ctx_signal_set", ctx, sig_addr, signal, false, pe) }
}

/// `shmem_signal_add` (OpenSHMEM 1.6): [`shmemx_signal_add`].
///
/// # Safety
/// As [`shmemx_signal_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_signal_add(sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmem_signal_add", handles::default_ctx(), sig_addr, signal, true, pe) }
}

/// `shmem_signal_set` (OpenSHMEM 1.6): [`shmemx_signal_set`].
///
/// # Safety
/// As [`shmemx_signal_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_signal_set(sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmem_signal_set", handles::default_ctx(), sig_addr, signal, false, pe) }
}

/// `shmem_ctx_signal_add` (OpenSHMEM 1.6): [`shmemx_ctx_signal_add`].
///
/// # Safety
/// As [`shmemx_ctx_signal_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_signal_add(ctx: ShmemCtx, sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmem_ctx_signal_add", ctx, sig_addr, signal, true, pe) }
}

/// `shmem_ctx_signal_set` (OpenSHMEM 1.6): [`shmemx_ctx_signal_set`].
///
/// # Safety
/// As [`shmemx_ctx_signal_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_signal_set(ctx: ShmemCtx, sig_addr: *mut u64, signal: u64, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { self::signal("shmem_ctx_signal_set", ctx, sig_addr, signal, false, pe) }
}

// ---------------------------------------------------------------------------------------------
// Blocked strided RMA (the generated `shmem[x]_[ctx_]TYPE_ibput`/`_ibget` call these)

/// `shmem[x]_[ctx_]TYPE_ibput`, `shmem[x]_[ctx_]ibputSIZE`.
///
/// # Safety
/// The blocked strided source must be readable; the runtime checks `dest`.
pub(crate) unsafe fn ibput(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    esize: usize,
    pe: c_int,
) {
    let r = counted_write(ctx, move || {
        handles::ctx_pe(func, ctx, pe).and_then(|pe| {
            // SAFETY: forwarded from the caller.
            unsafe { raw::ibput(dest.cast(), source.cast(), dst, sst, bsize, nblocks, esize, pe) }
        })
    });
    ok(func, r)
}

/// `shmem[x]_[ctx_]TYPE_ibget`, `shmem[x]_[ctx_]ibgetSIZE`.
///
/// # Safety
/// The blocked strided destination must be writable; the runtime checks `source`.
pub(crate) unsafe fn ibget(
    func: &'static str,
    ctx: ShmemCtx,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    esize: usize,
    pe: c_int,
) {
    let r = counted_read(ctx, move || {
        handles::ctx_pe(func, ctx, pe).and_then(|pe| {
            // SAFETY: forwarded from the caller.
            unsafe { raw::ibget(dest.cast(), source.cast(), dst, sst, bsize, nblocks, esize, pe) }
        })
    });
    ok(func, r)
}

// ---------------------------------------------------------------------------------------------
// Prefix sums (the generated `shmem[x]_TYPE_sum_inscan`/`_exscan` call `scan`)

/// A type the scans take: the runtime's arithmetic types, and `long double`, which the runtime
/// cannot add (see [`crate::longdouble`]).
pub(crate) trait CScan: Sized {
    /// Inclusive or exclusive prefix sum over `t`.
    ///
    /// # Safety
    /// `dest` and `source` must hold `n` elements (checked symmetric).
    unsafe fn team_scan(t: &TeamRec, dest: *mut Self, source: *const Self, n: usize, exclusive: bool) -> Result<()>;
}

impl<T: ArithReducible> CScan for T {
    /// The runtime's scan.
    ///
    /// # Safety
    /// As [`CScan::team_scan`].
    unsafe fn team_scan(t: &TeamRec, dest: *mut T, source: *const T, n: usize, exclusive: bool) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { oxshmem_rt::coll::scan::raw::sum_scan(&t.team, dest, source, n, exclusive) }
    }
}

unsafe extern "C" {
    /// `acc[i] = acc[i] op x[i]` in C's `long double` (`csrc/longdouble.c`; 2 is the sum).
    fn oxshmem_ld_combine(op: c_int, acc: *mut LongDouble, x: *const LongDouble, n: usize);
}

impl CScan for LongDouble {
    /// Every member waits for all (a team sync: every source is ready), reads the sources of
    /// the members before it (and its own) in team order and adds them with C's arithmetic,
    /// then syncs again before writing `dest`, which may be a source others still read. Both
    /// syncs happen on every member whatever its arguments, so none is left waiting.
    ///
    /// # Safety
    /// As [`CScan::team_scan`]. Symmetry is checked here (first and last byte of each array),
    /// and `dest` is written locally: it must be aligned for `LongDouble`, as C's are.
    unsafe fn team_scan(
        t: &TeamRec,
        dest: *mut LongDouble,
        source: *const LongDouble,
        n: usize,
        exclusive: bool,
    ) -> Result<()> {
        const F: &str = "shmem_longdouble_sum_scan";
        let me = t.team.my_pe()?;
        let pe = oxshmem_rt::raw::my_pe()? as c_int;
        let args = bytes(F, n, size_of::<LongDouble>()).and_then(|len| {
            for (what, p) in [("source", source), ("dest", dest.cast_const())] {
                let last = (p as usize).wrapping_add(len.saturating_sub(1)) as *const u8;
                if len > 0 && !(raw::addr_accessible(p.cast(), pe) && raw::addr_accessible(last, pe)) {
                    return Err(Error::new(pe as usize, F, ErrorKind::NotSymmetric { what, addr: p as usize, len }));
                }
            }
            Ok(len)
        });
        t.team.sync()?;
        let mut acc = vec![LongDouble::default(); n];
        let r = args.and_then(|len| {
            let mut next = vec![LongDouble::default(); n];
            let last = if exclusive { me } else { me + 1 };
            for (k, &from) in t.members[..last].iter().enumerate() {
                let buf = if k == 0 { &mut acc } else { &mut next };
                // SAFETY: buf holds n elements; the runtime checks source on that PE.
                unsafe { raw::getmem(buf.as_mut_ptr().cast(), source.cast(), len, from as c_int)? };
                if k > 0 {
                    // SAFETY: both buffers hold n elements.
                    unsafe { oxshmem_ld_combine(2, acc.as_mut_ptr(), next.as_ptr(), n) };
                }
            }
            Ok(())
        });
        // Every member has read every source it needs before any member writes a destination.
        t.team.sync()?;
        r?;
        // SAFETY: dest holds n elements (checked symmetric above); acc is a separate buffer of
        // n elements (zeros on member 0 of an exclusive scan).
        unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dest, n) };
        Ok(())
    }
}

/// `shmem[x]_TYPE_sum_inscan` (`exclusive == false`) and `shmem[x]_TYPE_sum_exscan`: 0, or -1
/// after printing the error.
///
/// # Safety
/// `dest` and `source` must hold `nelems` elements (checked symmetric).
pub(crate) unsafe fn scan<T: CScan>(
    func: &'static str,
    team: ShmemTeam,
    dest: *mut T,
    source: *const T,
    nelems: usize,
    exclusive: bool,
) -> c_int {
    let r = handles::team(func, team).and_then(|t| {
        // SAFETY: forwarded from the caller.
        unsafe { T::team_scan(t.get(), dest, source, nelems, exclusive) }
    });
    status(func, r)
}

// ---------------------------------------------------------------------------------------------
// SHMEMX_TEAM_NODE

// `SHMEMX_TEAM_NODE` (the PEs of this node, set by `shmem_init`) lives beside the other
// predefined team handles, in `handles`.

// ---------------------------------------------------------------------------------------------
// Performance counters

/// `shmemx_pcntr_t`, Sandia OpenSHMEM's layout and names: `pending_put`/`pending_get` hold the
/// writes/reads *issued* (as its `shmemx_pcntr_get_all` fills them), `completed_put`/
/// `completed_get` those completed, `target` the operations other PEs completed on this one.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pcntr {
    /// Write operations issued (puts, non-fetching AMOs, signals).
    pub pending_put: u64,
    /// Read operations issued (gets, fetching AMOs).
    pub pending_get: u64,
    /// Write operations completed.
    pub completed_put: u64,
    /// Read operations completed.
    pub completed_get: u64,
    /// Operations of other PEs completed on this PE: always 0 here (see [`shmemx_pcntr_get_completed_target`]).
    pub target: u64,
}

/// Indices in [`Counts::v`]: writes, reads. An operation is counted once its call returned, by
/// which time this library has completed it, so each count is both the operations issued and
/// those completed (see [`counted_write`]).
const WRITES: usize = 0;
const READS: usize = 1;

/// One thread's counts on one context. Only that thread writes them (a plain load and store of
/// each word: no read-modify-write on the operation's path); any thread may read them. Below
/// `SHMEM_THREAD_MULTIPLE` the default context's counts are one block for all threads
/// ([`SERIAL_DEFAULT`]), which the program's own ordering of its calls keeps exact. Every block
/// is a [`CachePadded`] one (cache lines of its own, two on x86-64 and aarch64, whose
/// prefetchers pull lines in pairs), so that one thread's counting never moves another's line.
///
/// A thread's blocks live as long as the thread: its [`Owned`] list, a thread-local, folds them
/// into [`Registry::ended`] and frees them when the thread ends, so a program that churns
/// threads holds one block per live (thread, context) pair, not one per thread it ever ran.
#[derive(Debug)]
struct Counts {
    ctx: usize,
    v: [AtomicU64; 2],
}

impl Counts {
    #[inline(always)]
    fn bump(&self, i: usize) {
        let c = &self.v[i];
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

/// Every block the queries sum, under one lock: a block moves from `live` to its context's
/// `ended` block (its counts added there) and is freed only under it, so a query sees each
/// count exactly once.
#[derive(Debug)]
struct Registry {
    /// The blocks of live threads, each owned by its thread's [`Owned`].
    live: Vec<*const Counts>,
    /// Per context, the counts of threads that ended (and of operations a thread made after its
    /// blocks were reclaimed, from another thread-local's destructor): one block per context the
    /// program counted on, never freed — bounded by the contexts, not by the threads.
    ended: Vec<&'static Counts>,
}

// SAFETY: the pointers in `live` are to heap blocks of atomics, which any thread may read; they
// are freed only after being removed under the lock.
unsafe impl Send for Registry {}

impl Registry {
    /// The block of counts ended on `ctx`, made on first use.
    fn ended(&mut self, ctx: usize) -> &'static Counts {
        if let Some(c) = self.ended.iter().find(|c| c.ctx == ctx) {
            return c;
        }
        let c: &'static Counts = Box::leak(Box::new(CachePadded::new(Counts { ctx, v: Default::default() })));
        self.ended.push(c);
        c
    }
}

/// Every thread's counts, for the queries.
static ALL: Mutex<Registry> = Mutex::new(Registry { live: Vec::new(), ended: Vec::new() });

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    ALL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The counts on the default context while the program runs below `SHMEM_THREAD_MULTIPLE`:
/// then no two threads call the library at once (the program orders its calls), so plain
/// loads and stores of one block are exact, and cheaper than finding a thread-local one.
static SERIAL_DEFAULT: CachePadded<Counts> = CachePadded::new(Counts { ctx: 0, v: [const { AtomicU64::new(0) }; 2] });

/// Whether the thread level is below `SHMEM_THREAD_MULTIPLE`: 0 not known yet, 1 below, 2 not.
static SERIAL: AtomicU8 = AtomicU8::new(0);

/// Learns the thread level (once the library is initialized); whether it is below
/// `SHMEM_THREAD_MULTIPLE`.
#[cold]
fn learn_serial() -> bool {
    let level = oxshmem_rt::current().and_then(|s| s.query_thread());
    match level {
        Ok(l) if l < oxshmem_rt::ThreadLevel::Multiple => {
            SERIAL.store(1, Ordering::Relaxed);
            true
        }
        Ok(_) => {
            SERIAL.store(2, Ordering::Relaxed);
            false
        }
        // Not initialized: the operation fails anyway; count it in this thread's block.
        Err(_) => false,
    }
}

/// The thread pointer: one machine register (or the word the x86-64 ABI keeps at `%fs:0`,
/// which points to itself), different for every live thread, and the key of its blocks. It is
/// read instead of a thread-local, whose address a shared library can only get by calling
/// `__tls_get_addr` — which costs more than the rest of a small put.
#[inline(always)]
fn thread_pointer() -> usize {
    let tp: usize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the x86-64 TLS ABI keeps the thread control block's own address at %fs:0 on
    // every thread; reading it has no other effect.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags, pure))
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: reading the thread pointer register has no effect.
    unsafe {
        std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags, pure))
    };
    tp
}

/// Which block each (thread, context) pair counts in: an open-addressing table keyed by the
/// thread pointer and the context handle. An entry is claimed by a thread with one
/// compare-exchange of its key and then written and read by that thread alone; other threads
/// only compare its key with theirs. A thread that ends releases its entries (the key becomes
/// [`GONE`], which later claims reuse) before freeing their blocks, so no key can lead to a
/// freed block: only the thread itself compares equal to its key, and a thread that reuses its
/// thread pointer (the C library reuses thread control blocks) starts after the release.
const SLOTS: usize = 1 << 12;

/// The key of an entry never claimed: a probe for a missing pair stops here.
const FREE: usize = 0;
/// The key of an entry released by a thread that ended: probes go on past it; claims reuse it.
/// No thread pointer is 1 (it points at an aligned thread control block).
const GONE: usize = 1;

#[derive(Debug)]
struct Slot {
    tp: AtomicUsize,
    ctx: AtomicUsize,
    counts: AtomicPtr<Counts>,
}

static TABLE: [Slot; SLOTS] =
    [const { Slot { tp: AtomicUsize::new(FREE), ctx: AtomicUsize::new(0), counts: AtomicPtr::new(null_mut()) } };
        SLOTS];

#[inline(always)]
fn slot_of(tp: usize, ctx: usize) -> usize {
    ((tp >> 6) ^ ctx.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - 12)
}

/// One block a thread made: where it is, and its table entry (`None`: the table was full).
#[derive(Debug)]
struct Own {
    block: *mut CachePadded<Counts>,
    slot: Option<usize>,
}

/// This thread's blocks. When the thread ends, its destructor releases their table entries,
/// adds their counts to their contexts' ended blocks and frees them.
#[derive(Debug, Default)]
struct Owned(Vec<Own>);

impl Drop for Owned {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        // First the entries: from here on this thread's operations (from another thread-local's
        // destructor) miss the table and count in the ended blocks.
        for o in &self.0 {
            if let Some(i) = o.slot {
                TABLE[i].counts.store(null_mut(), Ordering::Relaxed);
                TABLE[i].tp.store(GONE, Ordering::Release);
            }
        }
        let mut all = registry();
        for o in &self.0 {
            let p = o.block.cast_const().cast::<Counts>();
            // SAFETY: a block of this thread, allocated by `register` and not freed yet.
            let c = unsafe { &*p };
            let e = all.ended(c.ctx);
            for (d, v) in e.v.iter().zip(&c.v) {
                d.fetch_add(v.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            all.live.retain(|&q| q != p);
        }
        drop(all);
        for o in self.0.drain(..) {
            // SAFETY: made by Box::into_raw in `register`; no longer in the table (released
            // above, and only this thread could follow its entry) nor in the registry, so no
            // reference to it remains.
            drop(unsafe { Box::from_raw(o.block) });
        }
    }
}

thread_local! {
    /// The blocks this thread made, freed when it ends. Only the cold path touches it: the
    /// operation's path finds the block through [`TABLE`], with no thread-local access.
    static OWNED: RefCell<Owned> = const { RefCell::new(Owned(Vec::new())) };
}

/// A new block of counts for `ctx`, registered for the queries, owned by the caller's
/// [`Owned`].
#[cold]
fn register(ctx: usize) -> *mut CachePadded<Counts> {
    let c = Box::into_raw(Box::new(CachePadded::new(Counts { ctx, v: Default::default() })));
    registry().live.push(c.cast_const().cast());
    c
}

/// Counts one operation of `kind` on `ctx` after its thread's blocks were reclaimed (an
/// operation from a thread-local's destructor that runs after [`OWNED`]'s): straight into the
/// context's ended block, under the lock (a read-modify-write, as several such threads may).
#[cold]
fn count_late(ctx: usize, kind: usize) {
    registry().ended(ctx).v[kind].fetch_add(1, Ordering::Relaxed);
}

/// The rest of the probe from `i`, claiming an entry when the pair has none; `None` when this
/// thread is ending and can no longer own a block.
#[cold]
#[inline(never)]
fn counts_probe(tp: usize, ctx: usize, i: usize) -> Option<&'static Counts> {
    if ctx == handles::default_ctx() as usize && SERIAL.load(Ordering::Relaxed) == 0 && learn_serial() {
        return Some(&SERIAL_DEFAULT);
    }
    let found = OWNED.try_with(|owned| {
        // The first entry a claim may take: the first released one, or the free one that ends
        // the probe.
        let mut claim = None;
        let mut i = i;
        for _ in 0..SLOTS {
            let s = &TABLE[i];
            let owner = s.tp.load(Ordering::Relaxed);
            if owner == tp && s.ctx.load(Ordering::Relaxed) == ctx {
                // SAFETY: this thread's own entry: its block lives until this thread ends.
                return unsafe { &*s.counts.load(Ordering::Relaxed) };
            }
            if owner == FREE || owner == GONE {
                claim.get_or_insert(i);
                if owner == FREE {
                    break;
                }
            }
            i = (i + 1) % SLOTS;
        }
        let mut owned = owned.borrow_mut();
        if let Some(o) = owned.0.iter().filter(|o| o.slot.is_none()).find(|o| {
            // SAFETY: a block of this thread, live until it ends.
            unsafe { &*o.block }.ctx == ctx
        }) {
            // SAFETY: as above.
            return unsafe { &**o.block };
        }
        let block = register(ctx);
        let mut slot = None;
        // Claim the first free or released entry from `claim` on; one another thread takes
        // first is no longer free, so the probe sequence stays unbroken past it.
        if let Some(mut j) = claim {
            for _ in 0..SLOTS {
                let s = &TABLE[j];
                let owner = s.tp.load(Ordering::Relaxed);
                if (owner == FREE || owner == GONE)
                    && s.tp.compare_exchange(owner, tp, Ordering::Relaxed, Ordering::Relaxed).is_ok()
                {
                    s.ctx.store(ctx, Ordering::Relaxed);
                    s.counts.store(block.cast(), Ordering::Relaxed);
                    slot = Some(j);
                    break;
                }
                j = (j + 1) % SLOTS;
            }
        }
        owned.0.push(Own { block, slot });
        // SAFETY: just made; freed only when this thread ends.
        unsafe { &**block }
    });
    found.ok()
}

/// Counts one operation of `kind` on `ctx` in this thread's block: one read of the thread
/// pointer and, in the common case, of one table entry, then the block's increment.
#[inline(always)]
fn count(ctx: ShmemCtx, kind: usize) {
    let (tp, ctx) = (thread_pointer(), ctx as usize);
    let i = slot_of(tp, ctx);
    let s = &TABLE[i];
    if s.tp.load(Ordering::Relaxed) == tp && s.ctx.load(Ordering::Relaxed) == ctx {
        // SAFETY: this thread's own entry (no other live thread has its thread pointer): its
        // block is freed only after the entry is released, when this thread ends.
        return unsafe { &*s.counts.load(Ordering::Relaxed) }.bump(kind);
    }
    count_slow(tp, ctx, i, kind)
}

#[cold]
#[inline(never)]
fn count_slow(tp: usize, ctx: usize, i: usize, kind: usize) {
    match counts_probe(tp, ctx, i) {
        Some(c) => c.bump(kind),
        None => count_late(ctx, kind),
    }
}

/// Runs `op`, a write (put, non-fetching AMO, signal) on `ctx`, and counts it once it
/// returned. An operation is then issued and complete: the shared-memory transport completes
/// every operation before its call returns, and so does the network transport as far as the
/// calling PE can tell (the source may be reused, a get's data has arrived); a put's remote
/// delivery there is finished by the next quiet, as always. So the issued and the completed
/// counts are one count here, and `issued - completed`, the operations in flight, is 0.
#[inline(always)]
pub(crate) fn counted_write<R>(ctx: ShmemCtx, op: impl FnOnce() -> R) -> R {
    counted(ctx, WRITES, op)
}

/// Runs `op`, a read (get, fetching AMO) on `ctx`, and counts it as [`counted_write`] does.
#[inline(always)]
pub(crate) fn counted_read<R>(ctx: ShmemCtx, op: impl FnOnce() -> R) -> R {
    counted(ctx, READS, op)
}

/// The path of every counted operation: the operation, then one increment of a static block
/// (the default context below `SHMEM_THREAD_MULTIPLE`) or of the thread's block. Nothing is
/// looked up before the operation or kept across it.
#[inline(always)]
fn counted<R>(ctx: ShmemCtx, kind: usize, op: impl FnOnce() -> R) -> R {
    let r = op();
    if ctx == handles::default_ctx() && SERIAL.load(Ordering::Relaxed) == 1 {
        SERIAL_DEFAULT.bump(kind);
    } else {
        count(ctx, kind);
    }
    r
}

/// The sums over every thread of the counts on `ctx`, after checking the library is
/// initialized and `ctx` is a live context.
fn totals(func: &'static str, ctx: ShmemCtx) -> Result<[u64; 2]> {
    oxshmem_rt::raw::my_pe()?;
    handles::ctx(func, ctx)?;
    Ok(sums(ctx))
}

/// The sums over every thread, live or ended, of the counts on `ctx`.
fn sums(ctx: ShmemCtx) -> [u64; 2] {
    let mut t = [0u64; 2];
    let serial = (ctx == handles::default_ctx()).then_some(&*SERIAL_DEFAULT);
    let all = registry();
    // SAFETY: a live block is freed only after leaving `live`, under the lock held here.
    let live = all.live.iter().map(|&p| unsafe { &*p });
    for c in live.chain(all.ended.iter().copied()).filter(|c| c.ctx == ctx as usize).chain(serial) {
        for (s, v) in t.iter_mut().zip(&c.v) {
            *s = s.wrapping_add(v.load(Ordering::Relaxed));
        }
    }
    t
}

/// Writes counter `i` of `ctx` to `out`.
///
/// # Safety
/// `out` must be NULL or valid for a write.
unsafe fn get(func: &'static str, ctx: ShmemCtx, i: usize, out: *mut u64) {
    let r = totals(func, ctx).and_then(|t| {
        if out.is_null() {
            return Err(invalid(func, "cntr_value is NULL"));
        }
        // SAFETY: non-null; valid per the caller.
        unsafe { out.write(t[i]) };
        Ok(())
    });
    ok(func, r)
}

/// `shmemx_pcntr_get_issued_write`: writes (puts, non-fetching AMOs, signals) issued on `ctx`
/// by every thread of this PE.
///
/// # Safety
/// `cntr_value` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_pcntr_get_issued_write(ctx: ShmemCtx, cntr_value: *mut u64) {
    // SAFETY: forwarded from the caller.
    unsafe { get("shmemx_pcntr_get_issued_write", ctx, WRITES, cntr_value) }
}

/// `shmemx_pcntr_get_issued_read`: reads (gets, fetching AMOs) issued on `ctx`.
///
/// # Safety
/// As [`shmemx_pcntr_get_issued_write`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_pcntr_get_issued_read(ctx: ShmemCtx, cntr_value: *mut u64) {
    // SAFETY: forwarded from the caller.
    unsafe { get("shmemx_pcntr_get_issued_read", ctx, READS, cntr_value) }
}

/// `shmemx_pcntr_get_completed_write`: writes completed on `ctx`.
///
/// # Safety
/// As [`shmemx_pcntr_get_issued_write`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_pcntr_get_completed_write(ctx: ShmemCtx, cntr_value: *mut u64) {
    // SAFETY: forwarded from the caller.
    unsafe { get("shmemx_pcntr_get_completed_write", ctx, WRITES, cntr_value) }
}

/// `shmemx_pcntr_get_completed_read`: reads completed on `ctx`.
///
/// # Safety
/// As [`shmemx_pcntr_get_issued_write`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_pcntr_get_completed_read(ctx: ShmemCtx, cntr_value: *mut u64) {
    // SAFETY: forwarded from the caller.
    unsafe { get("shmemx_pcntr_get_completed_read", ctx, READS, cntr_value) }
}

/// `shmemx_pcntr_get_completed_target`: operations of other PEs completed on this PE — always
/// 0: one-sided operations here are loads and stores of the origin PE (or its network
/// transport's), which the target PE takes no part in and does not see. Sandia OpenSHMEM
/// reports 0 too where its transport has no target counter.
///
/// # Safety
/// `cntr_value` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_pcntr_get_completed_target(cntr_value: *mut u64) {
    const F: &str = "shmemx_pcntr_get_completed_target";
    let r = oxshmem_rt::raw::my_pe().and_then(|_| {
        if cntr_value.is_null() {
            return Err(invalid(F, "cntr_value is NULL"));
        }
        // SAFETY: non-null; valid per the caller.
        unsafe { cntr_value.write(0) };
        Ok(())
    });
    ok(F, r)
}

/// `shmemx_pcntr_get_all`: every counter of `ctx` at once, in Sandia OpenSHMEM's layout (see
/// [`Pcntr`]).
///
/// # Safety
/// `pcntr` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmemx_pcntr_get_all(ctx: ShmemCtx, pcntr: *mut Pcntr) {
    const F: &str = "shmemx_pcntr_get_all";
    let r = totals(F, ctx).and_then(|t| {
        if pcntr.is_null() {
            return Err(invalid(F, "pcntr is NULL"));
        }
        let all = Pcntr {
            pending_put: t[WRITES],
            pending_get: t[READS],
            completed_put: t[WRITES],
            completed_get: t[READS],
            target: 0,
        };
        // SAFETY: non-null; valid per the caller.
        unsafe { pcntr.write(all) };
        Ok(())
    });
    ok(F, r)
}

// ---------------------------------------------------------------------------------------------
// Thread identification

/// The function of `shmemx_register_gettid`.
pub type GettidFn = unsafe extern "C" fn() -> u64;

/// `shmemx_register_gettid`: from now on the library asks `gettid_fn` which thread is calling,
/// instead of going by the operating system's thread. What depends on it here is the owner of
/// a `SHMEM_CTX_PRIVATE` context: a private context created while a function is registered
/// belongs to the thread the function names at creation, and may be used wherever the function
/// names that thread again — so user-level threads that migrate between system threads keep
/// their private contexts, and two of them on one system thread do not share theirs. NULL
/// unregisters. May be called before `shmem_init`, as Sandia OpenSHMEM allows. (The registry
/// of creators is `crate::ctx_owner`, which the context handles consult.)
#[unsafe(no_mangle)]
pub extern "C" fn shmemx_register_gettid(gettid_fn: Option<GettidFn>) {
    crate::ctx_owner::register(gettid_fn);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live (not yet reclaimed) blocks counting on `ctx`.
    fn live_blocks(ctx: usize) -> usize {
        // SAFETY: as in `sums`: live blocks are freed only after leaving `live`, under the lock.
        registry().live.iter().filter(|&&p| unsafe { (*p).ctx } == ctx).count()
    }

    /// A context handle no real context has (and not the default one), so that the other tests
    /// of this binary never count on it.
    fn fake_ctx(k: usize) -> usize {
        0x5eed_0000 + (k << 6)
    }

    /// Threads that count and end, round after round: every count stays in the sums, and no
    /// block outlives its thread — the number of live blocks is that of the threads running.
    #[test]
    fn ended_threads_keep_their_counts_and_free_their_blocks() {
        let (a, b) = (fake_ctx(1), fake_ctx(2));
        const ROUNDS: u64 = 25;
        const THREADS: u64 = 8;
        counted_write(a as ShmemCtx, || ());
        for _ in 0..ROUNDS {
            let ts: Vec<_> = (0..THREADS)
                .map(|_| {
                    std::thread::spawn(move || {
                        for _ in 0..3 {
                            counted_write(a as ShmemCtx, || ());
                        }
                        counted_read(a as ShmemCtx, || ());
                        counted_read(b as ShmemCtx, || ());
                        (live_blocks(a), live_blocks(b))
                    })
                })
                .collect();
            for t in ts {
                let (la, lb) = t.join().unwrap();
                // This thread's block, the main thread's and at most the other running threads'.
                assert!(la >= 2 && la as u64 <= THREADS + 1 && lb >= 1 && lb as u64 <= THREADS, "{la} {lb}");
            }
            // Joined threads have run their destructors: only the main thread's block is left.
            assert_eq!((live_blocks(a), live_blocks(b)), (1, 0));
        }
        assert_eq!(sums(a as ShmemCtx), [1 + ROUNDS * THREADS * 3, ROUNDS * THREADS]);
        assert_eq!(sums(b as ShmemCtx), [0, ROUNDS * THREADS]);
    }

    /// An operation from a thread-local destructor that runs after the thread's blocks were
    /// reclaimed still counts (in the context's ended block), and makes no block.
    #[test]
    fn operations_after_reclaim_count_in_the_ended_block() {
        let c = fake_ctx(3);
        struct Late(usize);
        impl Drop for Late {
            fn drop(&mut self) {
                counted_write(self.0 as ShmemCtx, || ());
            }
        }
        thread_local! {
            static LATE: RefCell<Option<Late>> = const { RefCell::new(None) };
        }
        std::thread::spawn(move || {
            // Registered before OWNED, so destroyed after it.
            LATE.with(|l| *l.borrow_mut() = Some(Late(c)));
            counted_read(c as ShmemCtx, || ());
        })
        .join()
        .unwrap();
        assert_eq!(sums(c as ShmemCtx), [1, 1]);
        assert_eq!(live_blocks(c), 0);
    }
}
