//! PE program for the device layer (`oxshmem-device`): `pe-device <case> [args]`.
//!
//! Every case takes its channel from `OXSHMEM_DEVICE_CHANNEL` (`p2p` or `proxy`), passes it to
//! `Device::init_with` explicitly and checks that every peer got that channel. Device threads
//! run on the CPU kernel back end; a failed check inside a kernel ends the PE at once (`fail`
//! calls `_exit`, which works from any thread).
//!
//! Cases:
//! - `rma`: device `put`, `put_nbi`, `get`, `get_nbi`, `p`, `g` on u8, u16, u32, u64, i64, f32,
//!   f64 and a 3-byte `[u8; 3]`, 1 … 100 000 elements, split over several device threads, each
//!   compared with the host API doing the same transfer into a second buffer.
//! - `amo`: every integer atomic on u32, i32, u64, i64 and fetch/set/swap on f32, f64: the same
//!   sequence through the device API and the host API (`SymSlice`), every fetched value and the
//!   final state compared exactly.
//! - `signal`: `put_signal`, `put_signal_nbi` (Set, Add), `signal_op` and `signal_wait_until`
//!   with every comparison, against the host API.
//! - `stress [BLOCKS THREADS ITERS ROUNDS]`: many device threads issuing a burst of
//!   non-blocking atomics (enough to fill the proxy ring), then `p`, atomics and `fetch_add` to
//!   every PE: every slot written exactly once, exact counter totals, tickets unique and dense,
//!   puts read back with `g` after `quiet`; many times `PROXY_RING_SLOTS` requests per kernel.
//! - `order [ROUNDS]`: rounds of data + signal around the ring from several device threads
//!   (`put_signal`, `put_signal_nbi`, `put_nbi` + `fence` + `signal_op`); the receiver sees
//!   all the data once it sees the signal.
//! - `group [ROUNDS]`: the `_warp` and `_block` forms with a partial warp (80 threads per
//!   block), with new data every round.
//! - `barrier [ROUNDS]`: `barrier_all_block`, `barrier_all_warp` (a partial warp),
//!   `sync_all_block` and `barrier_all` from one thread per PE, with per-round counters that
//!   prove nobody leaves a barrier early.
//! - `err-pe`, `err-oob`, `err-stall`, `err-panic`: bad input and failures, each printing
//!   `ERR <label>: <text>` for the test to check; `nbi-end`: kernels that end with `_nbi`
//!   operations outstanding; `bogus`: an unknown channel name passed to `Device::init_with`
//!   (one in `OXSHMEM_DEVICE_CHANNEL`, like a malformed `OXSHMEM_DEVICE_BLOCKS`, already fails
//!   `shmem_init`: the test checks that without this program's cases).
//! - `err-wait` (2 PEs, run with `OXSHMEM_DEVICE_BLOCKS=1 OXSHMEM_TIMEOUT=2`): kernels that
//!   would deadlock — a block waiting (`signal_wait_until`, `wait_until`) for a block that only
//!   starts after it, a device barrier one PE never enters, a `sync_block` one thread skips,
//!   and a block stuck in ten waits — each end after the timeout with an error naming the
//!   launch, the block and thread, and what it waited for, using little CPU meanwhile.

use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use oxshmem::{AmoInt, AmoType, Cmp, Shmem, SignalOp, SymSlice};
use oxshmem_device::{DevPtr, Device, DeviceError, Grid, PROXY_RING_SLOTS, Stream, Thread, WARP_SIZE};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, check_slice, dispatch, fail, finish, init};

fn main() {
    dispatch(
        "pe-device",
        &[
            ("rma", rma),
            ("amo", amo),
            ("signal", signal),
            ("stress", stress),
            ("order", order),
            ("group", group),
            ("barrier", barrier),
            ("err-pe", err_pe),
            ("err-oob", err_oob),
            ("err-stall", err_stall),
            ("err-nic", err_nic),
            ("err-panic", err_panic),
            ("nbi-end", nbi_end),
            ("bogus", bogus),
            ("err-wait", err_wait),
        ],
    );
}

// ---- set-up ----------------------------------------------------------------------------

/// The channel this job tests.
fn channel() -> String {
    match std::env::var("OXSHMEM_DEVICE_CHANNEL") {
        Ok(c) if c == "p2p" || c == "proxy" || c == "ibgda" || c == "auto" => c,
        other => fail(format_args!("OXSHMEM_DEVICE_CHANNEL must be p2p, proxy, ibgda or auto, got {other:?}")),
    }
}

/// Unwraps a device result, failing the PE with the operation's name and the error.
#[track_caller]
fn dev_ok<T>(r: Result<T, DeviceError>, what: &str) -> T {
    r.unwrap_or_else(|e| fail(format_args!("{what}: unexpected device error: {e}")))
}

/// A device on the tested channel (collective); checks every peer's channel.
fn device(shmem: &Shmem) -> Device {
    let ch = channel();
    let dev = dev_ok(Device::init_with(shmem, Some(&ch)), "Device::init_with");
    for pe in 0..shmem.n_pes() {
        let want = if ch != "auto" {
            ch.clone()
        } else if oxshmem::raw::ptr(oxshmem::raw::heap_range().or_die("heap_range").0, pe as i32).is_null() {
            // Automatic: unmapped peers get OXSHMEM_DEVICE_REMOTE (proxy by default).
            std::env::var("OXSHMEM_DEVICE_REMOTE").unwrap_or_else(|_| "proxy".into())
        } else {
            "p2p".into()
        };
        check_eq(format!("channel of PE {pe}"), Some(want.as_str()), dev.channel_of(pe).map(|k| k.name()));
    }
    check_eq("channel of PE n_pes", None, dev.channel_of(shmem.n_pes()));
    dev
}

fn neighbours(shmem: &Shmem) -> (usize, usize, usize, usize) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    (me, n, (me + 1) % n, (me + n - 1) % n)
}

/// Elements `[lo, hi)` of `n` that part `k` of `parts` handles.
fn chunk(n: usize, k: usize, parts: usize) -> (usize, usize) {
    let share = n.div_ceil(parts);
    ((k * share).min(n), ((k + 1) * share).min(n))
}

/// Element types the RMA case moves, with a pattern that is never all-zero bits.
trait Elem: Pod + PartialEq + Debug + Send + Sync {
    const NAME: &'static str;
    fn pat(pe: usize, i: usize, salt: usize) -> Self;
}

fn mix(pe: usize, i: usize, salt: usize) -> u64 {
    (pe as u64).wrapping_mul(1_000_003) ^ (i as u64).wrapping_mul(2_654_435_761) ^ (salt as u64).wrapping_mul(97)
}

macro_rules! elem_int {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            fn pat(pe: usize, i: usize, salt: usize) -> Self {
                (mix(pe, i, salt) as $t) | 1
            }
        }
    )*};
}
elem_int!(u8, u16, u32, u64, i64);

macro_rules! elem_float {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            fn pat(pe: usize, i: usize, salt: usize) -> Self {
                (pe * 100_000 + i) as $t * 0.25 + salt as $t + 0.5
            }
        }
    )*};
}
elem_float!(f32, f64);

impl Elem for [u8; 3] {
    const NAME: &'static str = "[u8; 3]";
    fn pat(pe: usize, i: usize, salt: usize) -> Self {
        let m = mix(pe, i, salt);
        [m as u8 | 1, (m >> 8) as u8, (m >> 16) as u8]
    }
}

fn pattern<T: Elem>(pe: usize, salt: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| T::pat(pe, i, salt)).collect()
}

// ---- rma -------------------------------------------------------------------------------

const RMA_SIZES: [usize; 4] = [1, 3, 1000, 100_000];

/// One type, one size: device transfers into one set of buffers, host transfers into another.
fn rma_one<T: Elem>(shmem: &Shmem, dev: &Device, n: usize) {
    let (me, _, right, left) = neighbours(shmem);
    let what = |op: &str| format!("{op}::<{}> of {n} elements", T::NAME);
    let alloc = || shmem.alloc_slice(n, T::zeroed()).or_die("alloc_slice");
    let src = alloc();
    src.copy_from_slice(&pattern::<T>(me, 0, n));
    let (dput, hput, dnbi, hnbi, dgetnbi, dp, hp) = (alloc(), alloc(), alloc(), alloc(), alloc(), alloc(), alloc());
    let with_pg = n <= 1000; // p and g one element at a time
    let data: Arc<Vec<T>> = Arc::new(pattern(me, 1, n));
    let got = Arc::new(Mutex::new(vec![T::zeroed(); n]));
    shmem.barrier_all().or_die("barrier");

    let (ps, pput, pnbi, pgn, pp) = (
        DevPtr::from_slice(&src),
        DevPtr::from_slice(&dput),
        DevPtr::from_slice(&dnbi),
        DevPtr::from_slice(&dgetnbi),
        DevPtr::from_slice(&dp),
    );
    let (d2, g2) = (data.clone(), got.clone());
    let stream = dev.stream();
    stream.launch(Grid::new(2, 4), move |t| {
        let (lo, hi) = chunk(n, t.global_idx(), t.grid_dim() * t.block_dim());
        if lo >= hi {
            return;
        }
        t.put(pput.offset(lo), &d2[lo..hi], right);
        t.put_nbi(pnbi.offset(lo), ps.offset(lo), hi - lo, right);
        let mut v = vec![T::zeroed(); hi - lo];
        t.get(&mut v, ps.offset(lo), left);
        g2.lock().unwrap_or_else(|e| e.into_inner())[lo..hi].copy_from_slice(&v);
        t.get_nbi(pgn.offset(lo), ps.offset(lo), hi - lo, left);
        if with_pg {
            for (i, &x) in d2.iter().enumerate().take(hi).skip(lo) {
                t.p(pp.offset(i), x, right);
            }
        }
        t.quiet();
        // After quiet the get_nbi data is here and the p values are at the target.
        for i in lo..hi {
            check_eq(
                format!("device get_nbi::<{}> element {i} after quiet", T::NAME),
                T::pat(left, i, 0),
                pgn.read_local(i),
            );
        }
        if with_pg {
            for (i, &x) in d2.iter().enumerate().take(hi).skip(lo) {
                check_eq(
                    format!("device g::<{}> of element {i} after p + quiet", T::NAME),
                    x,
                    t.g(pp.offset(i), right),
                );
            }
        }
    });
    dev_ok(stream.synchronize(), "synchronize");

    // The host API, the same transfers.
    hput.put(0, &data, right).or_die(what("shmem_put"));
    hnbi.put_nbi(0, &src.to_vec(), right).or_die(what("shmem_put_nbi"));
    let mut hget = vec![T::zeroed(); n];
    src.get(0, &mut hget, left).or_die(what("shmem_get"));
    if with_pg {
        for (i, &x) in data.iter().enumerate() {
            hp.p(i, x, right).or_die(what("shmem_p"));
        }
    }
    shmem.quiet().or_die("shmem_quiet");
    shmem.barrier_all().or_die("barrier");

    let from_left_data: Vec<T> = pattern(left, 1, n);
    let from_left_src: Vec<T> = pattern(left, 0, n);
    check_slice(what("host put (reference)"), &from_left_data, &hput.to_vec());
    check_slice(what("device put vs host put"), &hput.to_vec(), &dput.to_vec());
    check_slice(what("host put_nbi (reference)"), &from_left_src, &hnbi.to_vec());
    check_slice(what("device put_nbi vs host put_nbi"), &hnbi.to_vec(), &dnbi.to_vec());
    check_slice(what("host get (reference)"), &from_left_src, &hget);
    check_slice(what("device get vs host get"), &hget, &got.lock().unwrap_or_else(|e| e.into_inner()));
    check_slice(what("device get_nbi vs host get"), &hget, &dgetnbi.to_vec());
    if with_pg {
        check_slice(what("host p (reference)"), &from_left_data, &hp.to_vec());
        check_slice(what("device p vs host p"), &hp.to_vec(), &dp.to_vec());
    }
    shmem.barrier_all().or_die("barrier");
    for s in [src, dput, hput, dnbi, hnbi, dgetnbi, dp, hp] {
        s.free().or_die("shmem_free");
    }
}

fn rma(_: &[String]) {
    let shmem = init();
    let dev = device(&shmem);
    for n in RMA_SIZES {
        rma_one::<u8>(&shmem, &dev, n);
        rma_one::<u16>(&shmem, &dev, n);
        rma_one::<u32>(&shmem, &dev, n);
        rma_one::<u64>(&shmem, &dev, n);
        rma_one::<i64>(&shmem, &dev, n);
        rma_one::<f32>(&shmem, &dev, n);
        rma_one::<f64>(&shmem, &dev, n);
        rma_one::<[u8; 3]>(&shmem, &dev, n);
    }
    dev_ok(dev.finalize(), "Device::finalize");
    println!("PE {}: device rma matches host ({})", shmem.my_pe(), channel());
    finish(shmem);
}

// ---- amo -------------------------------------------------------------------------------

/// The atomics both APIs offer, on one element of one PE.
trait Amo<T> {
    fn fetch(&self) -> T;
    fn set(&self, v: T);
    fn swap(&self, v: T) -> T;
}

/// The integer-only atomics.
trait IntAmo<T>: Amo<T> {
    fn cswap(&self, cond: T, v: T) -> T;
    fn finc(&self) -> T;
    fn inc(&self);
    fn fadd(&self, v: T) -> T;
    fn add(&self, v: T);
    fn fand(&self, v: T) -> T;
    fn f_or(&self, v: T) -> T;
    fn fxor(&self, v: T) -> T;
    fn and(&self, v: T);
    fn or(&self, v: T);
    fn xor(&self, v: T);
}

/// The device API on element `p` of PE `pe`.
struct DevAmo<'a, 'b, T> {
    t: &'a Thread<'b>,
    p: DevPtr<T>,
    pe: usize,
}

impl<T: AmoType> Amo<T> for DevAmo<'_, '_, T> {
    fn fetch(&self) -> T {
        self.t.atomic_fetch(self.p, self.pe)
    }
    fn set(&self, v: T) {
        self.t.atomic_set(self.p, v, self.pe)
    }
    fn swap(&self, v: T) -> T {
        self.t.atomic_swap(self.p, v, self.pe)
    }
}

impl<T: AmoInt> IntAmo<T> for DevAmo<'_, '_, T> {
    fn cswap(&self, cond: T, v: T) -> T {
        self.t.atomic_compare_swap(self.p, cond, v, self.pe)
    }
    fn finc(&self) -> T {
        self.t.atomic_fetch_inc(self.p, self.pe)
    }
    fn inc(&self) {
        self.t.atomic_inc(self.p, self.pe)
    }
    fn fadd(&self, v: T) -> T {
        self.t.atomic_fetch_add(self.p, v, self.pe)
    }
    fn add(&self, v: T) {
        self.t.atomic_add(self.p, v, self.pe)
    }
    fn fand(&self, v: T) -> T {
        self.t.atomic_fetch_and(self.p, v, self.pe)
    }
    fn f_or(&self, v: T) -> T {
        self.t.atomic_fetch_or(self.p, v, self.pe)
    }
    fn fxor(&self, v: T) -> T {
        self.t.atomic_fetch_xor(self.p, v, self.pe)
    }
    fn and(&self, v: T) {
        self.t.atomic_and(self.p, v, self.pe)
    }
    fn or(&self, v: T) {
        self.t.atomic_or(self.p, v, self.pe)
    }
    fn xor(&self, v: T) {
        self.t.atomic_xor(self.p, v, self.pe)
    }
}

/// The host API on element `at` of PE `pe`.
struct HostAmo<'a, T: Pod> {
    s: &'a SymSlice<T>,
    at: usize,
    pe: usize,
}

impl<T: AmoType> Amo<T> for HostAmo<'_, T> {
    fn fetch(&self) -> T {
        self.s.atomic_fetch(self.at, self.pe).or_die("shmem_atomic_fetch")
    }
    fn set(&self, v: T) {
        self.s.atomic_set(self.at, v, self.pe).or_die("shmem_atomic_set")
    }
    fn swap(&self, v: T) -> T {
        self.s.atomic_swap(self.at, v, self.pe).or_die("shmem_atomic_swap")
    }
}

impl<T: AmoInt> IntAmo<T> for HostAmo<'_, T> {
    fn cswap(&self, cond: T, v: T) -> T {
        self.s.atomic_compare_swap(self.at, cond, v, self.pe).or_die("shmem_atomic_compare_swap")
    }
    fn finc(&self) -> T {
        self.s.atomic_fetch_inc(self.at, self.pe).or_die("shmem_atomic_fetch_inc")
    }
    fn inc(&self) {
        self.s.atomic_inc(self.at, self.pe).or_die("shmem_atomic_inc")
    }
    fn fadd(&self, v: T) -> T {
        self.s.atomic_fetch_add(self.at, v, self.pe).or_die("shmem_atomic_fetch_add")
    }
    fn add(&self, v: T) {
        self.s.atomic_add(self.at, v, self.pe).or_die("shmem_atomic_add")
    }
    fn fand(&self, v: T) -> T {
        self.s.atomic_fetch_and(self.at, v, self.pe).or_die("shmem_atomic_fetch_and")
    }
    fn f_or(&self, v: T) -> T {
        self.s.atomic_fetch_or(self.at, v, self.pe).or_die("shmem_atomic_fetch_or")
    }
    fn fxor(&self, v: T) -> T {
        self.s.atomic_fetch_xor(self.at, v, self.pe).or_die("shmem_atomic_fetch_xor")
    }
    fn and(&self, v: T) {
        self.s.atomic_and(self.at, v, self.pe).or_die("shmem_atomic_and")
    }
    fn or(&self, v: T) {
        self.s.atomic_or(self.at, v, self.pe).or_die("shmem_atomic_or")
    }
    fn xor(&self, v: T) {
        self.s.atomic_xor(self.at, v, self.pe).or_die("shmem_atomic_xor")
    }
}

/// Every integer atomic once; returns every fetched value. `o[0] != o[1]`.
fn int_seq<T: Copy, A: IntAmo<T>>(a: &A, o: &[T; 11]) -> Vec<T> {
    a.set(o[0]);
    let mut r = vec![a.fetch(), a.swap(o[1]), a.cswap(o[0], o[2]), a.cswap(o[1], o[2]), a.finc()];
    a.inc();
    r.push(a.fadd(o[3]));
    a.add(o[4]);
    r.extend([a.fetch(), a.fand(o[5]), a.f_or(o[6]), a.fxor(o[7])]);
    a.and(o[8]);
    a.or(o[9]);
    a.xor(o[10]);
    r.push(a.fetch());
    r
}

/// fetch, set and swap; returns every fetched value.
fn float_seq<T: Copy, A: Amo<T>>(a: &A, o: &[T; 3]) -> Vec<T> {
    a.set(o[0]);
    vec![a.fetch(), a.swap(o[1]), a.fetch(), a.swap(o[2]), a.fetch()]
}

/// Device threads per PE in the atomics case, each on its own element.
const AMO_THREADS: usize = 6;

/// Runs `seq` from AMO_THREADS device threads (thread k on element `me*K + k` of the right
/// neighbour) and from the host on a second buffer; compares fetched values and final states.
fn amo_compare<T, O>(
    shmem: &Shmem,
    dev: &Device,
    name: &str,
    ops: fn(usize, usize) -> O,
    seq_dev: SeqDev<T, O>,
    seq_host: SeqHost<T, O>,
) where
    T: AmoType + PartialEq + Debug + Send + Sync,
    O: Send + Sync + 'static,
{
    let (me, n, right, _) = neighbours(shmem);
    let dbuf = shmem.alloc_slice(n * AMO_THREADS, T::zeroed()).or_die("alloc_slice");
    let hbuf = shmem.alloc_slice(n * AMO_THREADS, T::zeroed()).or_die("alloc_slice");
    let results: Arc<Mutex<Vec<Vec<T>>>> = Arc::new(Mutex::new(vec![Vec::new(); AMO_THREADS]));
    shmem.barrier_all().or_die("barrier");
    let p = DevPtr::from_slice(&dbuf);
    let r2 = results.clone();
    let stream = dev.stream();
    stream.launch(Grid::new(1, AMO_THREADS), move |t| {
        let k = t.thread_idx();
        let a = DevAmo { t, p: p.offset(me * AMO_THREADS + k), pe: right };
        let got = seq_dev(&a, &ops(me, k));
        r2.lock().unwrap_or_else(|e| e.into_inner())[k] = got;
    });
    dev_ok(stream.synchronize(), "synchronize");
    for k in 0..AMO_THREADS {
        let a = HostAmo { s: &hbuf, at: me * AMO_THREADS + k, pe: right };
        let host = seq_host(&a, &ops(me, k));
        let devr = results.lock().unwrap_or_else(|e| e.into_inner())[k].clone();
        check_slice(format!("{name}: values fetched by device thread {k} vs the host API"), &host, &devr);
    }
    shmem.barrier_all().or_die("barrier");
    check_slice(format!("{name}: final state, device vs host API"), &hbuf.to_vec(), &dbuf.to_vec());
    check(hbuf.to_vec().iter().any(|x| *x != T::zeroed()), format!("{name}: the host sequence left all zeros"));
    shmem.barrier_all().or_die("barrier");
    dbuf.free().or_die("shmem_free");
    hbuf.free().or_die("shmem_free");
}

type SeqDev<T, O> = for<'a, 'b, 'c> fn(&'a DevAmo<'b, 'c, T>, &O) -> Vec<T>;
type SeqHost<T, O> = for<'a, 'b> fn(&'a HostAmo<'b, T>, &O) -> Vec<T>;

macro_rules! int_amo {
    ($shmem:expr, $dev:expr, $t:ty, $start:expr) => {{
        fn ops(me: usize, k: usize) -> [$t; 11] {
            let s: $t = $start;
            let b = s.wrapping_add((me * 1000 + k * 10) as $t);
            [
                b,
                b ^ (0x5555 as $t),
                b.wrapping_mul(3),
                (0 as $t).wrapping_sub(5),
                12 as $t,
                0x5A5A_5A5A_u64 as $t,
                0x0F0F_00F0 as $t,
                (0x3C3C_3C3C as $t) | ((me as $t) << 2),
                !(0x11 as $t),
                0x300 as $t,
                (0x4001 as $t) ^ (k as $t),
            ]
        }
        amo_compare::<$t, [$t; 11]>(
            $shmem,
            $dev,
            concat!("integer atomics on ", stringify!($t)),
            ops,
            |a, o| int_seq(a, o),
            |a, o| int_seq(a, o),
        );
    }};
}

macro_rules! float_amo {
    ($shmem:expr, $dev:expr, $t:ty) => {{
        fn ops(me: usize, k: usize) -> [$t; 3] {
            [-1.5 - me as $t - k as $t, 1.0e-3 * (me as $t + 1.0) + k as $t, <$t>::MAX]
        }
        amo_compare::<$t, [$t; 3]>(
            $shmem,
            $dev,
            concat!("fetch/set/swap on ", stringify!($t)),
            ops,
            |a, o| float_seq(a, o),
            |a, o| float_seq(a, o),
        );
    }};
}

fn amo(_: &[String]) {
    let shmem = init();
    let dev = device(&shmem);
    int_amo!(&shmem, &dev, u32, 0xFFFF_FF00);
    int_amo!(&shmem, &dev, i32, -2_000_000_000);
    int_amo!(&shmem, &dev, u64, u64::MAX - 3);
    int_amo!(&shmem, &dev, i64, i64::MIN + 5);
    float_amo!(&shmem, &dev, f32);
    float_amo!(&shmem, &dev, f64);
    dev_ok(dev.finalize(), "Device::finalize");
    println!("PE {}: device atomics match host ({})", shmem.my_pe(), channel());
    finish(shmem);
}

// ---- signals ---------------------------------------------------------------------------

fn signal(args: &[String]) {
    let n_el: usize = arg(args, 0, 100_000);
    let shmem = init();
    let dev = device(&shmem);
    let (me, _, right, left) = neighbours(&shmem);
    let alloc = || shmem.alloc_slice(n_el, 0u32).or_die("alloc_slice");
    let (src, d0, d1, d2, d3, h0, h1, h2, h3) =
        (alloc(), alloc(), alloc(), alloc(), alloc(), alloc(), alloc(), alloc(), alloc());
    src.copy_from_slice(&pattern::<u32>(me, 0, n_el));
    let dsig = shmem.alloc_slice(8, 0u64).or_die("alloc_slice");
    let hsig = shmem.alloc_slice(8, 0u64).or_die("alloc_slice");
    dsig.write(5, 100);
    hsig.write(5, 100);
    let data: Arc<Vec<u32>> = Arc::new(pattern(me, 1, n_el));
    shmem.barrier_all().or_die("barrier");

    let (ps, p0, p1, p2, p3, sig) = (
        DevPtr::from_slice(&src),
        DevPtr::from_slice(&d0),
        DevPtr::from_slice(&d1),
        DevPtr::from_slice(&d2),
        DevPtr::from_slice(&d3),
        DevPtr::from_slice(&dsig),
    );
    let dd = data.clone();
    let stream = dev.stream();
    stream.launch(Grid::new(1, 2), move |t| {
        let half = n_el / 2;
        if t.thread_idx() == 0 {
            t.put_signal(p0, &dd, sig.offset(0), 7, SignalOp::Set, right);
            t.put_signal(p1, &dd[..half], sig.offset(1), 5, SignalOp::Add, right);
            t.put_signal(p1.offset(half), &dd[half..], sig.offset(1), 5, SignalOp::Add, right);
            t.put_signal_nbi(p2, ps, n_el, sig.offset(2), 3, SignalOp::Add, right);
            t.put_signal_nbi(p2, ps, n_el, sig.offset(2), 3, SignalOp::Add, right);
            t.put_signal_nbi(p3, ps, n_el, sig.offset(6), 11, SignalOp::Set, right);
            t.quiet();
            t.signal_op(sig.offset(3), 42, SignalOp::Set, right);
            t.signal_op(sig.offset(3), 8, SignalOp::Add, right);
            for _ in 0..3 {
                t.signal_op(sig.offset(4), 1, SignalOp::Add, right);
            }
            t.signal_op(sig.offset(5), 3, SignalOp::Set, right);
            t.quiet();
        } else {
            let from_left_data: Vec<u32> = pattern(left, 1, n_el);
            let from_left_src: Vec<u32> = pattern(left, 0, n_el);
            let local = |p: DevPtr<u32>| (0..n_el).map(|i| p.read_local(i)).collect::<Vec<_>>();
            check_eq("device signal_wait_until(Eq 7) after put_signal Set", 7, t.signal_wait_until(sig, Cmp::Eq, 7));
            check_slice("data seen after the put_signal (Set) signal", &from_left_data, &local(p0));
            check_eq(
                "signal_wait_until(Eq 10) after two put_signal Add 5",
                10,
                t.signal_wait_until(sig.offset(1), Cmp::Eq, 10),
            );
            check_slice("data seen after two put_signal (Add)", &from_left_data, &local(p1));
            check_eq(
                "signal_wait_until(Ge 6) after two put_signal_nbi Add 3",
                6,
                t.signal_wait_until(sig.offset(2), Cmp::Ge, 6),
            );
            check_slice("data seen after put_signal_nbi (Add)", &from_left_src, &local(p2));
            check_eq(
                "signal_wait_until(Ne 0) after put_signal_nbi Set 11",
                11,
                t.signal_wait_until(sig.offset(6), Cmp::Ne, 0),
            );
            check_slice("data seen after put_signal_nbi (Set)", &from_left_src, &local(p3));
            check_eq(
                "signal_wait_until(Gt 49) after signal_op Set 42 + Add 8",
                50,
                t.signal_wait_until(sig.offset(3), Cmp::Gt, 49),
            );
            check_eq(
                "signal_wait_until(Ge 3) after three signal_op Add 1",
                3,
                t.signal_wait_until(sig.offset(4), Cmp::Ge, 3),
            );
            check_eq(
                "signal_wait_until(Lt 50) after signal_op Set 3 on 100",
                3,
                t.signal_wait_until(sig.offset(5), Cmp::Lt, 50),
            );
            check_eq("signal_wait_until(Le 3)", 3, t.signal_wait_until(sig.offset(5), Cmp::Le, 3));
        }
    });
    dev_ok(stream.synchronize(), "synchronize");

    // The host API, the same sequence.
    let half = n_el / 2;
    let srcv = src.to_vec();
    let f = "host signal sequence";
    h0.put_signal(0, &data, &hsig, 0, 7, SignalOp::Set, right).or_die(f);
    h1.put_signal(0, &data[..half], &hsig, 1, 5, SignalOp::Add, right).or_die(f);
    h1.put_signal(half, &data[half..], &hsig, 1, 5, SignalOp::Add, right).or_die(f);
    h2.put_signal_nbi(0, &srcv, &hsig, 2, 3, SignalOp::Add, right).or_die(f);
    h2.put_signal_nbi(0, &srcv, &hsig, 2, 3, SignalOp::Add, right).or_die(f);
    h3.put_signal_nbi(0, &srcv, &hsig, 6, 11, SignalOp::Set, right).or_die(f);
    shmem.quiet().or_die("shmem_quiet");
    // The host API has no signal_op: a signal update is a 64-bit atomic set or add.
    for (at, v, op) in [
        (3, 42, SignalOp::Set),
        (3, 8, SignalOp::Add),
        (4, 1, SignalOp::Add),
        (4, 1, SignalOp::Add),
        (4, 1, SignalOp::Add),
        (5, 3, SignalOp::Set),
    ] {
        match op {
            SignalOp::Set => hsig.atomic_set(at, v, right).or_die("shmem_atomic_set on a signal"),
            SignalOp::Add => hsig.atomic_add(at, v, right).or_die("shmem_atomic_add on a signal"),
        }
    }
    shmem.quiet().or_die("shmem_quiet");
    for (at, cmp, v) in [
        (0, Cmp::Eq, 7),
        (1, Cmp::Eq, 10),
        (2, Cmp::Ge, 6),
        (6, Cmp::Ne, 0),
        (3, Cmp::Gt, 49),
        (4, Cmp::Ge, 3),
        (5, Cmp::Lt, 50),
    ] {
        hsig.signal_wait_until(at, cmp, v).or_die("shmem_signal_wait_until");
    }
    shmem.barrier_all().or_die("barrier");
    check_slice("signal words, device vs host API", &hsig.to_vec(), &dsig.to_vec());
    check_eq("signal words (reference)", vec![7, 10, 6, 50, 3, 3, 11, 0], hsig.to_vec());
    for (name, d, h) in [
        ("put_signal Set", &d0, &h0),
        ("put_signal Add", &d1, &h1),
        ("put_signal_nbi Add", &d2, &h2),
        ("put_signal_nbi Set", &d3, &h3),
    ] {
        check_slice(format!("{name} data, device vs host API"), &h.to_vec(), &d.to_vec());
    }
    check_slice("put_signal data (reference)", &pattern::<u32>(left, 1, n_el), &h0.to_vec());
    shmem.barrier_all().or_die("barrier");
    dev_ok(dev.finalize(), "Device::finalize");
    println!("PE {me}: device signals match host ({})", channel());
    finish(shmem);
}

// ---- stress ----------------------------------------------------------------------------

/// Non-blocking atomics per device thread per stress iteration, issued in one burst.
const FLOOD: usize = 2;

/// The value device thread `gid` of PE `src` stores in slot `k` in round `round`.
fn slot_val(round: usize, src: usize, gid: usize, k: usize) -> u64 {
    ((round as u64 + 1) << 48) | ((src as u64) << 40) | ((gid as u64) << 16) | k as u64
}

fn stress(args: &[String]) {
    let blocks: usize = arg(args, 0, 4);
    let threads: usize = arg(args, 1, 64);
    let iters: usize = arg(args, 2, 24);
    let rounds: usize = arg(args, 3, 2);
    let shmem = init();
    let dev = device(&shmem);
    let (me, n, _, _) = neighbours(&shmem);
    let nt = blocks * threads;
    let total = n * nt * iters;
    let slots = shmem.alloc_slice(total, 0u64).or_die("alloc_slice");
    let hits = shmem.alloc_slice(total, 0u32).or_die("alloc_slice");
    let tickets = shmem.alloc_slice(total, -1i64).or_die("alloc_slice");
    let cnt = shmem.alloc_slice(1, 0u64).or_die("alloc_slice");
    let cnt32 = shmem.alloc_slice(1, 0i32).or_die("alloc_slice");
    let tick = shmem.alloc_slice(1, 0i64).or_die("alloc_slice");
    let flood = shmem.alloc_slice(1, 0u64).or_die("alloc_slice");
    let pfl = DevPtr::from_slice(&flood);
    shmem.barrier_all().or_die("barrier");
    let (ps, ph, pt, pc, pc32, ptk) = (
        DevPtr::from_slice(&slots),
        DevPtr::from_slice(&hits),
        DevPtr::from_slice(&tickets),
        DevPtr::from_slice(&cnt),
        DevPtr::from_slice(&cnt32),
        DevPtr::from_slice(&tick),
    );
    let target = move |src: usize, gid: usize, k: usize| (src + gid + k) % n;
    let requests = nt * ((5 + FLOOD) * iters + iters.div_ceil(3) + 1);
    let stream = dev.stream();
    for round in 0..rounds {
        stream.launch(Grid::new(blocks, threads), move |t| {
            let gid = t.global_idx();
            // A burst of non-blocking atomics first: with nothing blocking, the device threads
            // get far ahead of the proxy and fill the ring (back-pressure, not just wrap-around).
            for k in 0..FLOOD * iters {
                t.atomic_add(pfl, 1u64, target(me, gid, k));
            }
            let mut mine = Vec::with_capacity(iters);
            for k in 0..iters {
                let pe = target(me, gid, k);
                let idx = (me * nt + gid) * iters + k;
                t.p(ps.offset(idx), slot_val(round, me, gid, k), pe);
                t.atomic_inc(ph.offset(idx), pe);
                t.atomic_add(pc, 1u64, pe);
                t.atomic_add(pc32, -2i32, pe);
                let tk = t.atomic_fetch_add(ptk, 1i64, 0);
                if let Some(&prev) = mine.last() {
                    check(tk > prev, format!("fetch_add tickets of one device thread must increase: {prev} then {tk}"));
                }
                mine.push(tk);
            }
            t.quiet();
            // quiet completed every p: read them back from their targets.
            for k in (0..iters).step_by(3) {
                let idx = (me * nt + gid) * iters + k;
                check_eq(
                    format!("g of slot {idx} on PE {} after p + quiet (device thread {gid})", target(me, gid, k)),
                    slot_val(round, me, gid, k),
                    t.g(ps.offset(idx), target(me, gid, k)),
                );
            }
            t.put(pt.offset((me * nt + gid) * iters), &mine, 0);
        });
        dev_ok(stream.synchronize(), "synchronize");
        shmem.barrier_all().or_die("barrier");

        let mut expect_adds = 0u64;
        let (sv, hv) = (slots.to_vec(), hits.to_vec());
        for src in 0..n {
            for gid in 0..nt {
                for k in 0..iters {
                    let idx = (src * nt + gid) * iters + k;
                    let mine = target(src, gid, k) == me;
                    let (want_v, want_h) = if mine { (slot_val(round, src, gid, k), 1) } else { (0, 0) };
                    if sv[idx] != want_v || hv[idx] != want_h {
                        fail(format_args!(
                            "round {round}: slot {idx} (from PE {src}, device thread {gid}, op {k}): expected value {want_v:#x} written {want_h} times, got {:#x} written {} times",
                            sv[idx], hv[idx]
                        ));
                    }
                    expect_adds += u64::from(mine);
                }
            }
        }
        check_eq(format!("round {round}: u64 add counter"), expect_adds, cnt.read(0));
        let expect_flood = (0..n)
            .flat_map(|src| (0..nt).flat_map(move |gid| (0..FLOOD * iters).map(move |k| (src, gid, k))))
            .filter(|&(src, gid, k)| target(src, gid, k) == me)
            .count() as u64;
        check_eq(format!("round {round}: counter of the non-blocking burst"), expect_flood, flood.read(0));
        check_eq(format!("round {round}: i32 add(-2) counter"), -2 * expect_adds as i32, cnt32.read(0));
        if me == 0 {
            let mut all = tickets.to_vec();
            all.sort_unstable();
            if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
                fail(format_args!("round {round}: fetch_add ticket {} was handed out twice", w[0]));
            }
            let base = (round * total) as i64;
            let want: Vec<i64> = (base..base + total as i64).collect();
            check_slice(format!("round {round}: all fetch_add tickets, sorted"), &want, &all);
            check_eq(format!("round {round}: ticket counter"), base + total as i64, tick.read(0));
        }
        shmem.barrier_all().or_die("barrier");
        slots.fill(0);
        hits.fill(0);
        tickets.fill(-1);
        cnt.write(0, 0);
        cnt32.write(0, 0);
        flood.write(0, 0);
        shmem.barrier_all().or_die("barrier");
    }
    // IBGDA: how many times the send queues went round (slot reuse under flow control).
    let laps: u64 = dev.ibgda().map_or(0, |ib| ib.laps());
    dev_ok(dev.finalize(), "Device::finalize");
    let ring = match (channel().as_str(), requests > PROXY_RING_SLOTS) {
        ("proxy", true) => format!("{:.1} x the proxy ring: ring wrapped", requests as f64 / PROXY_RING_SLOTS as f64),
        ("proxy", false) => "RING DID NOT WRAP".to_string(),
        ("ibgda", _) if laps > 0 => format!("IBGDA send queues wrapped {laps} times in all"),
        ("ibgda", _) => "QUEUES DID NOT WRAP".to_string(),
        _ => "no ring with p2p".to_string(),
    };
    println!(
        "PE {me}: stress ok: {rounds} rounds of {nt} device threads, {requests} requests per kernel ({ring}) ({})",
        channel()
    );
    finish(shmem);
}

// ---- order: data before signal ---------------------------------------------------------

const ORDER_WORDS: usize = 256;

fn order_val(pe: usize, lane: usize, round: u64, i: usize) -> u64 {
    (round << 32) ^ ((pe as u64) << 24) ^ ((lane as u64) << 16) ^ i as u64
}

fn order(args: &[String]) {
    let rounds: u64 = arg(args, 0, 100);
    let shmem = init();
    let dev = device(&shmem);
    let (me, _, right, left) = neighbours(&shmem);
    let grid = Grid::new(2, 4);
    let lanes = grid.blocks * grid.threads;
    let data = shmem.alloc_slice(lanes * ORDER_WORDS, 0u64).or_die("alloc_slice");
    let stage = shmem.alloc_slice(lanes * ORDER_WORDS, 0u64).or_die("alloc_slice");
    let sig = shmem.alloc_slice(lanes, 0u64).or_die("alloc_slice");
    let ack = shmem.alloc_slice(lanes, 0u64).or_die("alloc_slice");
    shmem.barrier_all().or_die("barrier");
    let (pd, pst, psig, pack) =
        (DevPtr::from_slice(&data), DevPtr::from_slice(&stage), DevPtr::from_slice(&sig), DevPtr::from_slice(&ack));
    let stream = dev.stream();
    stream.launch(grid, move |t| {
        let l = t.global_idx();
        let (dl, sl, sg, ak) = (pd.offset(l * ORDER_WORDS), pst.offset(l * ORDER_WORDS), psig.offset(l), pack.offset(l));
        for r in 1..=rounds {
            let vals: Vec<u64> = (0..ORDER_WORDS).map(|i| order_val(me, l, r, i)).collect();
            match r % 3 {
                0 => t.put_signal(dl, &vals, sg, r, SignalOp::Set, right),
                1 => {
                    t.put(sl, &vals, me);
                    t.put_signal_nbi(dl, sl, ORDER_WORDS, sg, 1, SignalOp::Add, right);
                }
                _ => {
                    t.put(sl, &vals, me);
                    t.put_nbi(dl, sl, ORDER_WORDS, right);
                    t.fence();
                    t.signal_op(sg, r, SignalOp::Set, right);
                }
            }
            check_eq(format!("lane {l}: signal of round {r}"), r, t.signal_wait_until(sg, Cmp::Ge, r));
            for i in 0..ORDER_WORDS {
                let got = dl.read_local(i);
                if got != order_val(left, l, r, i) {
                    fail(format_args!(
                        "lane {l}, round {r}: word {i} seen after the signal is {got:#x}, expected {:#x} (data not visible before its signal)",
                        order_val(left, l, r, i)
                    ));
                }
            }
            t.signal_op(ak, r, SignalOp::Set, left);
            t.signal_wait_until(ak, Cmp::Ge, r);
            t.quiet();
        }
    });
    dev_ok(stream.synchronize(), "synchronize");
    shmem.barrier_all().or_die("barrier");
    dev_ok(dev.finalize(), "Device::finalize");
    println!("PE {me}: {rounds} signalled rounds on {lanes} device threads ok ({})", channel());
    finish(shmem);
}

// ---- warp and block forms --------------------------------------------------------------

/// Threads per block in the group cases: two whole warps and a partial one of 16.
const GROUP_THREADS: usize = 80;
const GROUP_BLOCKS: usize = 2;
const WARP_WORDS: usize = 100;
const BLOCK_WORDS: usize = 1000;

fn group(args: &[String]) {
    let rounds: usize = arg(args, 0, 10);
    let shmem = init();
    let dev = device(&shmem);
    let (me, _, right, left) = neighbours(&shmem);
    let wpb = GROUP_THREADS.div_ceil(WARP_SIZE);
    let nw = GROUP_BLOCKS * wpb;
    let wa = || shmem.alloc_slice(nw * WARP_WORDS, 0u32).or_die("alloc_slice");
    let ba = || shmem.alloc_slice(GROUP_BLOCKS * BLOCK_WORDS, 0u32).or_die("alloc_slice");
    let (wput, wnbi, wsrc, wgn, wsd) = (wa(), wa(), wa(), wa(), wa());
    let (bput, bnbi, bsrc, bgn, bsd) = (ba(), ba(), ba(), ba(), ba());
    let sig = shmem.alloc_slice(2, 0u64).or_die("alloc_slice");
    let p = |s: &SymSlice<u32>| DevPtr::from_slice(s);
    let (pwput, pwnbi, pwsrc, pwgn, pwsd) = (p(&wput), p(&wnbi), p(&wsrc), p(&wgn), p(&wsd));
    let (pbput, pbnbi, pbsrc, pbgn, pbsd) = (p(&bput), p(&bnbi), p(&bsrc), p(&bgn), p(&bsd));
    let psig = DevPtr::from_slice(&sig);
    let stream = dev.stream();
    for round in 0..rounds {
        let s = 1000 * round;
        // Round r: warp w's words are pattern(pe, s + 10 + w), block b's pattern(pe, s + 20 + b),
        // the sources' salt 100 more, with s = 1000 r; what get_nbi fetched last round is cleared.
        for w in 0..nw {
            wsrc.put(w * WARP_WORDS, &pattern::<u32>(me, s + 110 + w, WARP_WORDS), me).or_die("shmem_put");
        }
        for b in 0..GROUP_BLOCKS {
            bsrc.put(b * BLOCK_WORDS, &pattern::<u32>(me, s + 120 + b, BLOCK_WORDS), me).or_die("shmem_put");
        }
        wgn.fill(0);
        bgn.fill(0);
        shmem.barrier_all().or_die("barrier");
        stream.launch(Grid::new(GROUP_BLOCKS, GROUP_THREADS), move |t| {
            let b = t.block_idx();
            let w = b * wpb + t.warp_idx();
            let (wo, bo) = (w * WARP_WORDS, b * BLOCK_WORDS);
            let wv: Vec<u32> = pattern(me, s + 10 + w, WARP_WORDS);
            let bv: Vec<u32> = pattern(me, s + 20 + b, BLOCK_WORDS);
            t.put_warp(pwput.offset(wo), &wv, right);
            t.put_block(pbput.offset(bo), &bv, right);
            t.put_nbi_warp(pwnbi.offset(wo), pwsrc.offset(wo), WARP_WORDS, right);
            t.put_nbi_block(pbnbi.offset(bo), pbsrc.offset(bo), BLOCK_WORDS, right);
            let mut gw = vec![0u32; WARP_WORDS];
            t.get_warp(&mut gw, pwsrc.offset(wo), left);
            check_slice(
                format!("get_warp (warp {w}, lane {})", t.lane_idx()),
                &pattern::<u32>(left, s + 110 + w, WARP_WORDS),
                &gw,
            );
            let mut gb = vec![0u32; BLOCK_WORDS];
            t.get_block(&mut gb, pbsrc.offset(bo), left);
            check_slice(
                format!("get_block (block {b}, thread {})", t.thread_idx()),
                &pattern::<u32>(left, s + 120 + b, BLOCK_WORDS),
                &gb,
            );
            t.get_nbi_warp(pwgn.offset(wo), pwsrc.offset(wo), WARP_WORDS, left);
            t.get_nbi_block(pbgn.offset(bo), pbsrc.offset(bo), BLOCK_WORDS, left);
            // Every member's quiet covers what the group fetched: the whole share is here.
            t.quiet();
            let wl: Vec<u32> = (0..WARP_WORDS).map(|i| pwgn.read_local(wo + i)).collect();
            check_slice(
                format!("get_nbi_warp after quiet (warp {w}, lane {})", t.lane_idx()),
                &pattern::<u32>(left, s + 110 + w, WARP_WORDS),
                &wl,
            );
            let bl: Vec<u32> = (0..BLOCK_WORDS).map(|i| pbgn.read_local(bo + i)).collect();
            check_slice(
                format!("get_nbi_block after quiet (block {b}, thread {})", t.thread_idx()),
                &pattern::<u32>(left, s + 120 + b, BLOCK_WORDS),
                &bl,
            );
            t.put_signal_warp(pwsd.offset(wo), &wv, psig, 1, SignalOp::Add, right);
            t.put_signal_block(pbsd.offset(bo), &bv, psig.offset(1), 1, SignalOp::Add, right);
            if t.global_idx() == 0 {
                // Each group signalled once: every warp's and block's data is here then.
                let (ws, bs) = ((nw * (round + 1)) as u64, (GROUP_BLOCKS * (round + 1)) as u64);
                check_eq("put_signal_warp signal", ws, t.signal_wait_until(psig, Cmp::Eq, ws));
                check_eq("put_signal_block signal", bs, t.signal_wait_until(psig.offset(1), Cmp::Eq, bs));
                for w in 0..nw {
                    let got: Vec<u32> = (0..WARP_WORDS).map(|i| pwsd.read_local(w * WARP_WORDS + i)).collect();
                    check_slice(
                        format!("put_signal_warp data of warp {w}"),
                        &pattern::<u32>(left, s + 10 + w, WARP_WORDS),
                        &got,
                    );
                }
                for b in 0..GROUP_BLOCKS {
                    let got: Vec<u32> = (0..BLOCK_WORDS).map(|i| pbsd.read_local(b * BLOCK_WORDS + i)).collect();
                    check_slice(
                        format!("put_signal_block data of block {b}"),
                        &pattern::<u32>(left, s + 20 + b, BLOCK_WORDS),
                        &got,
                    );
                }
            }
        });
        dev_ok(stream.synchronize(), "synchronize");
        shmem.barrier_all().or_die("barrier");
        for w in 0..nw {
            let r = w * WARP_WORDS..(w + 1) * WARP_WORDS;
            check_slice(
                format!("put_warp data of warp {w}"),
                &pattern::<u32>(left, s + 10 + w, WARP_WORDS),
                &wput.to_vec()[r.clone()],
            );
            check_slice(
                format!("put_nbi_warp data of warp {w}"),
                &pattern::<u32>(left, s + 110 + w, WARP_WORDS),
                &wnbi.to_vec()[r],
            );
        }
        for b in 0..GROUP_BLOCKS {
            let r = b * BLOCK_WORDS..(b + 1) * BLOCK_WORDS;
            check_slice(
                format!("put_block data of block {b}"),
                &pattern::<u32>(left, s + 20 + b, BLOCK_WORDS),
                &bput.to_vec()[r.clone()],
            );
            check_slice(
                format!("put_nbi_block data of block {b}"),
                &pattern::<u32>(left, s + 120 + b, BLOCK_WORDS),
                &bnbi.to_vec()[r],
            );
        }
        shmem.barrier_all().or_die("barrier");
    }
    dev_ok(dev.finalize(), "Device::finalize");
    println!("PE {me}: {rounds} rounds of warp and block forms ok ({})", channel());
    finish(shmem);
}

// ---- barriers --------------------------------------------------------------------------

fn barrier(args: &[String]) {
    let rounds: usize = arg(args, 0, 50);
    let shmem = init();
    let dev = device(&shmem);
    let (me, n, _, _) = neighbours(&shmem);
    let c = shmem.alloc_slice(4 * rounds, 0u64).or_die("alloc_slice");
    shmem.barrier_all().or_die("barrier");
    let pc = DevPtr::from_slice(&c);
    let stream = dev.stream();
    // Before barrier r every PE adds 1 to counter r on every PE; after it, counter r must be
    // exactly n here: a PE that left early would see less.
    let check_round = move |what: &str, p: DevPtr<u64>, r: usize, who: usize| {
        let v = p.read_local(r);
        if v != n as u64 {
            fail(format_args!(
                "{what}, round {r}: counter is {v} after the barrier, expected {n} (device thread {who} left early)"
            ));
        }
    };

    // barrier_all_block: thread i < n adds to PE i.
    let cb = pc;
    stream.launch(Grid::new(1, GROUP_THREADS), move |t| {
        for r in 0..rounds {
            if t.thread_idx() < n {
                t.atomic_inc(cb.offset(r), t.thread_idx());
            }
            t.barrier_all_block();
            check_round("barrier_all_block", cb, r, t.thread_idx());
        }
    });
    // barrier_all_warp from the partial warp (threads 64..80) only.
    let cw = pc.offset(rounds);
    stream.launch(Grid::new(1, GROUP_THREADS), move |t| {
        if t.warp_idx() != 2 {
            return;
        }
        check_eq("partial warp size", GROUP_THREADS - 2 * WARP_SIZE, t.warp_len());
        for r in 0..rounds {
            if t.lane_idx() < n {
                t.atomic_inc(cw.offset(r), t.lane_idx());
            }
            t.barrier_all_warp();
            check_round("barrier_all_warp", cw, r, t.thread_idx());
        }
    });
    // sync_all_block: no quiet inside, so each thread quiets first.
    let cs = pc.offset(2 * rounds);
    stream.launch(Grid::new(1, GROUP_THREADS), move |t| {
        for r in 0..rounds {
            if t.thread_idx() < n {
                t.atomic_inc(cs.offset(r), t.thread_idx());
                t.quiet();
            }
            t.sync_all_block();
            check_round("sync_all_block", cs, r, t.thread_idx());
        }
    });
    // barrier_all from one device thread per PE (the other threads of the grid idle).
    let co = pc.offset(3 * rounds);
    stream.launch(Grid::new(2, 3), move |t| {
        if t.global_idx() != 0 {
            return;
        }
        for r in 0..rounds {
            for pe in 0..n {
                t.atomic_add(co.offset(r), 1u64, pe);
            }
            t.barrier_all();
            check_round("barrier_all (one thread)", co, r, 0);
        }
    });
    dev_ok(stream.synchronize(), "synchronize");
    shmem.barrier_all().or_die("barrier");
    check_eq("every counter after all barriers", vec![n as u64; 4 * rounds], c.to_vec());
    dev_ok(dev.finalize(), "Device::finalize");
    println!("PE {me}: {rounds} rounds of each device barrier ok ({})", channel());
    finish(shmem);
}

// ---- errors ----------------------------------------------------------------------------

/// Checks that `r` is a device error whose text contains every one of `needles`; prints
/// `ERR <label>: <text>`.
#[track_caller]
fn expect_dev_err(label: &str, r: Result<(), DeviceError>, needles: &[&str]) {
    match r {
        Ok(()) => fail(format_args!("{label}: expected a device error, got Ok")),
        Err(e) => {
            let text = e.to_string();
            for n in needles {
                if !text.contains(n) {
                    fail(format_args!("{label}: error text {text:?} does not contain {n:?}"));
                }
            }
            println!("ERR {label}: {text}");
        }
    }
}

/// Runs `kernel` on a fresh device (errors are sticky per device) and checks the error that
/// `synchronize` and then `finalize` report.
fn on_fresh_device<F>(shmem: &Shmem, label: &str, grid: Grid, needles: &[&str], kernel: F)
where
    F: Fn(&Thread<'_>) + Send + Sync + 'static,
{
    let dev = device(shmem);
    let stream: Stream = dev.stream();
    stream.launch(grid, kernel);
    expect_dev_err(label, stream.synchronize(), needles);
    drop(stream);
    // The error stays recorded: finalize reports it again.
    expect_dev_err(&format!("{label} (finalize)"), dev.finalize(), needles);
}

fn err_pe(_: &[String]) {
    let shmem = init();
    let (me, n, right, _) = neighbours(&shmem);
    let buf = shmem.alloc_slice(8, 0u64).or_die("alloc_slice");
    let p = DevPtr::from_slice(&buf);
    let whole = format!("PE {me}: device nvshmem_p (block 1, thread 2): PE 9 is out of range (0..{n})");
    on_fresh_device(&shmem, "p to PE 9", Grid::new(2, 3), &[&whole], move |t| {
        if t.block_idx() == 1 && t.thread_idx() == 2 {
            t.p(p, 1, 9);
        }
    });
    on_fresh_device(
        &shmem,
        "put to PE 9",
        Grid::new(1, 1),
        &["device nvshmem_put (block 0, thread 0)", "PE 9 is out of range"],
        move |t| {
            t.put(p, &[1, 2], 9);
        },
    );
    on_fresh_device(
        &shmem,
        "get from PE 9",
        Grid::new(1, 1),
        &["device nvshmem_get", "PE 9 is out of range"],
        move |t| {
            let mut v = [0u64; 2];
            t.get(&mut v, p, 9);
            check_eq("get from PE 9 leaves the destination", [0, 0], v);
        },
    );
    on_fresh_device(
        &shmem,
        "fetch_add on PE 9",
        Grid::new(1, 1),
        &["device nvshmem_atomic", "PE 9 is out of range"],
        move |t| {
            check_eq("fetch_add on PE 9 returns zero", 0, t.atomic_fetch_add(p, 1u64, 9));
        },
    );
    on_fresh_device(
        &shmem,
        "signal_op to PE 9",
        Grid::new(1, 1),
        &["device nvshmemx_signal_op", "PE 9 is out of range"],
        move |t| {
            t.signal_op(p, 1, SignalOp::Set, 9);
        },
    );
    on_fresh_device(
        &shmem,
        "put_signal to PE 9",
        Grid::new(1, 1),
        &["device nvshmem_put_signal", "PE 9 is out of range"],
        move |t| {
            t.put_signal(p, &[1], p.offset(1), 1, SignalOp::Set, 9);
        },
    );
    // The failed operations did nothing, and a valid one still works on a new device.
    shmem.barrier_all().or_die("barrier");
    check_eq("buffer after failed device operations", vec![0u64; 8], buf.to_vec());
    let dev = device(&shmem);
    let s = dev.stream();
    s.launch(Grid::new(1, 1), move |t| t.p(p, 5, right));
    dev_ok(s.synchronize(), "synchronize after a good p");
    drop(s);
    dev_ok(dev.finalize(), "Device::finalize");
    shmem.barrier_all().or_die("barrier");
    check_eq("p after the errors", 5, buf.read(0));
    println!("PE {me}: out-of-range PEs reported ({})", channel());
    finish(shmem);
}

fn err_oob(_: &[String]) {
    let shmem = init();
    let (me, _, right, left) = neighbours(&shmem);
    let buf = shmem.alloc_slice(8, 0u64).or_die("alloc_slice");
    let small = shmem.alloc_slice(4, 0u64).or_die("alloc_slice");
    let p = DevPtr::from_slice(&buf);
    let q = DevPtr::from_slice(&small);
    let past = format!("{:#x}", p.addr() + 8 * 8);
    on_fresh_device(
        &shmem,
        "p past the end (offset(8) of 8)",
        Grid::new(1, 2),
        &[&format!("PE {me}: device nvshmem_p (block 0, thread 1): 1 elements at {past} exceed the symmetric object")],
        move |t| {
            if t.thread_idx() == 1 {
                t.p(p.offset(8), 1, right);
            }
        },
    );
    on_fresh_device(
        &shmem,
        "put of 9 into 8",
        Grid::new(1, 1),
        &["device nvshmem_put", "9 elements at", "exceed the symmetric object"],
        move |t| {
            t.put(p, &[7u64; 9], right);
        },
    );
    on_fresh_device(
        &shmem,
        "put at offset(5) of 4",
        Grid::new(1, 1),
        &["device nvshmem_put", "4 elements at", "exceed the symmetric object"],
        move |t| {
            t.put(p.offset(5), &[7u64; 4], right);
        },
    );
    on_fresh_device(
        &shmem,
        "get of 9 from 8",
        Grid::new(1, 1),
        &["device nvshmem_get", "9 elements at", "exceed"],
        move |t| {
            let mut v = [0u64; 9];
            t.get(&mut v, p, left);
        },
    );
    on_fresh_device(
        &shmem,
        "put_nbi from a 4-element source",
        Grid::new(1, 1),
        &["device nvshmem_put", "8 elements at", "exceed"],
        move |t| {
            t.put_nbi(p, q, 8, right);
            t.quiet();
        },
    );
    on_fresh_device(
        &shmem,
        "get_nbi into a 4-element destination",
        Grid::new(1, 1),
        &["device nvshmem_get", "8 elements at", "exceed"],
        move |t| {
            t.get_nbi(q, p, 8, left);
            t.quiet();
        },
    );
    on_fresh_device(
        &shmem,
        "atomic past the end",
        Grid::new(1, 1),
        &["device nvshmem_atomic", "1 elements at", "exceed"],
        move |t| {
            t.atomic_inc(p.offset(100), right);
        },
    );
    on_fresh_device(
        &shmem,
        "g past the end",
        Grid::new(1, 1),
        &["device nvshmem_get", "1 elements at", "exceed"],
        move |t| {
            check_eq("g past the end returns zero", 0u64, t.g(p.offset(8), right));
        },
    );
    on_fresh_device(
        &shmem,
        "put_signal with the signal past the end",
        Grid::new(1, 1),
        &["1 elements at", "exceed"],
        move |t| {
            t.put_signal(p, &[1], q.offset(4), 1, SignalOp::Set, right);
        },
    );
    // The first error wins: a second bad call does not replace it.
    on_fresh_device(&shmem, "first error wins", Grid::new(1, 1), &["device nvshmem_p", "1 elements at"], move |t| {
        t.p(p.offset(8), 1, right);
        t.put(p, &[1], 9);
    });
    shmem.barrier_all().or_die("barrier");
    check_eq("buffer after failed device operations", vec![0u64; 8], buf.to_vec());
    check_eq("small buffer after failed device operations", vec![0u64; 4], small.to_vec());
    println!("PE {me}: out-of-bounds device pointers reported ({})", channel());
    finish(shmem);
}

fn err_stall(_: &[String]) {
    let shmem = init();
    let (me, _, right, _) = neighbours(&shmem);
    let buf = shmem.alloc_slice(64, 0u64).or_die("alloc_slice");
    let p = DevPtr::from_slice(&buf);
    let ch = channel();

    // Stop the ring's consumer (a dead proxy, a dead software NIC) and keep using the device.
    let dev = device(&shmem);
    let stream = dev.stream();
    dev.stop_proxy_for_tests();
    // 512 bytes: too long to go inline through IBGDA, so the put waits for its completion.
    stream.launch(Grid::new(1, 1), move |t| t.put(p, &[7u64; 64], right));
    let r = stream.synchronize();
    if ch == "ibgda" {
        expect_dev_err(
            "blocking put with the software NIC stopped",
            r,
            &[&format!(
                "PE {me}: device nvshmem_put (block 0, thread 0): the IBGDA queue to PE {right} stalled: WQE index 1 not complete (completed up to 0)"
            )],
        );
    } else if ch == "proxy" {
        expect_dev_err(
            "blocking put with the proxy stopped",
            r,
            &[&format!(
                "PE {me}: device nvshmem_put (block 0, thread 0): the proxy ring stalled: request 0 not done after the timeout (0 completed)"
            )],
        );
    } else {
        dev_ok(r, "p2p put with no proxy (no ring to stall)");
        println!("NOTE p2p: no proxy ring, nothing to stall");
    }
    drop(stream);
    drop(dev);

    // A full ring: PROXY_RING_SLOTS requests fill it, the next one cannot get its slot.
    let dev = device(&shmem);
    let stream = dev.stream();
    dev.stop_proxy_for_tests();
    stream.launch(Grid::new(1, 1), move |t| {
        for _ in 0..=PROXY_RING_SLOTS {
            t.p(p, 1, right);
        }
    });
    let r = stream.synchronize();
    if ch == "ibgda" {
        // 2048 slots: the 2049th p finds no free slot (flow control), and nothing completes.
        expect_dev_err(
            "p into a full queue with the software NIC stopped",
            r,
            &[&format!(
                "device nvshmem_p (block 0, thread 0): the IBGDA queue to PE {right} stalled: WQE index 1 not complete (completed up to 0)"
            )],
        );
    } else if ch == "proxy" {
        expect_dev_err(
            "p into a full ring with the proxy stopped",
            r,
            &[&format!(
                "device nvshmem_p (block 0, thread 0): the proxy ring stalled: request {PROXY_RING_SLOTS} not done after the timeout (0 completed)"
            )],
        );
    } else {
        dev_ok(r, "p2p p with no proxy");
    }
    drop(stream);
    drop(dev);
    shmem.barrier_all().or_die("barrier");
    println!("PE {me}: stalled ring reported ({ch})");
    finish(shmem);
}

fn err_panic(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    let ok = Arc::new(AtomicUsize::new(0));
    let ok2 = ok.clone();
    on_fresh_device(
        &shmem,
        "a panicking kernel",
        Grid::new(2, 8),
        &[&format!("PE {me}: device kernel (block 1, thread 5): the kernel panicked")],
        move |t| {
            if t.block_idx() == 1 && t.thread_idx() == 5 {
                panic!("device thread (1, 5) gives up");
            }
            ok2.fetch_add(1, Ordering::Relaxed);
        },
    );
    check_eq("device threads that ran to the end beside the panicking one", 15, ok.load(Ordering::Relaxed));
    println!("PE {me}: kernel panic reported ({})", channel());
    finish(shmem);
}

fn nbi_end(_: &[String]) {
    let n_el = 50_000;
    let shmem = init();
    let (me, _, right, left) = neighbours(&shmem);
    let src = shmem.alloc_slice(n_el, 0u32).or_die("alloc_slice");
    src.copy_from_slice(&pattern::<u32>(me, 0, n_el));
    let a = shmem.alloc_slice(n_el, 0u32).or_die("alloc_slice");
    let b = shmem.alloc_slice(n_el, 0u32).or_die("alloc_slice");
    let ga = shmem.alloc_slice(n_el, 0u32).or_die("alloc_slice");
    let gb = shmem.alloc_slice(n_el, 0u32).or_die("alloc_slice");
    let sig = shmem.alloc_slice(2, 0u64).or_die("alloc_slice");
    shmem.barrier_all().or_die("barrier");
    let (ps, pa, pb, pga, pgb, psig) = (
        DevPtr::from_slice(&src),
        DevPtr::from_slice(&a),
        DevPtr::from_slice(&b),
        DevPtr::from_slice(&ga),
        DevPtr::from_slice(&gb),
        DevPtr::from_slice(&sig),
    );
    let kernel = move |dst: DevPtr<u32>, gdst: DevPtr<u32>, s: DevPtr<u64>| {
        move |t: &Thread<'_>| {
            let (lo, hi) = chunk(n_el, t.global_idx(), t.grid_dim() * t.block_dim());
            // Many small _nbi operations, no quiet before the kernel ends.
            for c in (lo..hi).step_by(500) {
                let e = (c + 500).min(hi);
                t.put_nbi(dst.offset(c), ps.offset(c), e - c, right);
                t.get_nbi(gdst.offset(c), ps.offset(c), e - c, left);
            }
            t.put_signal_nbi(dst, ps, 0, s, 1, SignalOp::Add, right);
        }
    };
    // 1. synchronize completes them.
    let dev = device(&shmem);
    let stream = dev.stream();
    stream.launch(Grid::new(2, 4), kernel(pa, pga, psig));
    dev_ok(stream.synchronize(), "synchronize after a kernel that ended with _nbi outstanding");
    check_slice("get_nbi data after synchronize", &pattern::<u32>(left, 0, n_el), &ga.to_vec());
    // 2. finalize completes them (the stream is dropped first: that waits for the kernel to
    //    end, but completes nothing).
    stream.launch(Grid::new(2, 4), kernel(pb, pgb, psig.offset(1)));
    drop(stream);
    dev_ok(dev.finalize(), "finalize after a kernel that ended with _nbi outstanding");
    check_slice("get_nbi data after finalize", &pattern::<u32>(left, 0, n_el), &gb.to_vec());
    shmem.barrier_all().or_die("barrier");
    check_slice("put_nbi data after synchronize", &pattern::<u32>(left, 0, n_el), &a.to_vec());
    check_slice("put_nbi data after finalize", &pattern::<u32>(left, 0, n_el), &b.to_vec());
    check_eq("put_signal_nbi signals", vec![8, 8], sig.to_vec());
    println!("PE {me}: _nbi operations completed by synchronize and finalize ({})", channel());
    finish(shmem);
}

/// CPU time this process has used (user + system).
fn cpu_time() -> std::time::Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    std::time::Duration::from_micros(us(ru.ru_utime) + us(ru.ru_stime))
}

/// Launches `kernel` on a fresh device, from the line that calls this (`#[track_caller]`
/// carries the call site into `Stream::launch`, which names it in errors); returns the
/// `synchronize` result, the wall time and the CPU time it took, then finalizes the device.
#[track_caller]
fn timed_launch<F>(shmem: &Shmem, grid: Grid, kernel: F) -> (Result<(), DeviceError>, f64, f64)
where
    F: Fn(&Thread<'_>) + Send + Sync + 'static,
{
    let dev = device(shmem);
    let stream = dev.stream();
    let (t0, c0) = (std::time::Instant::now(), cpu_time());
    stream.launch(grid, kernel);
    let r = stream.synchronize();
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), (cpu_time() - c0).as_secs_f64());
    drop(stream);
    let _ = dev.finalize();
    (r, wall, cpu)
}

/// Kernels that would deadlock end after `OXSHMEM_TIMEOUT` (2 s here) with an error that
/// names the kernel's launch site, the block and thread, and what it waited for.
fn err_wait(_: &[String]) {
    let shmem = init();
    let (me, n, _, _) = neighbours(&shmem);
    check_eq("PEs of the err-wait case", 2, n);
    check_eq("OXSHMEM_DEVICE_BLOCKS", Ok("1".to_string()), std::env::var("OXSHMEM_DEVICE_BLOCKS"));
    check_eq("OXSHMEM_TIMEOUT", Ok("2".to_string()), std::env::var("OXSHMEM_TIMEOUT"));
    let sig = shmem.alloc_slice(16, 0u64).or_die("alloc_slice");
    let ivar = shmem.alloc_slice(4, 0i32).or_die("alloc_slice");
    let (s, v) = (DevPtr::from_slice(&sig), DevPtr::from_slice(&ivar));
    let file = file!();
    let hint = "; only 1 of the kernel's 2 blocks run at once (OXSHMEM_DEVICE_BLOCKS=1): does a block wait for a later one, which cannot start before it ends?";

    // 1. Block 0 waits for a signal that block 1 sends: with one block at a time, block 1
    //    starts only when block 0 has ended.
    let line = line!() + 1;
    let (r, wall, cpu) = timed_launch(&shmem, Grid::new(2, 4), move |t| {
        if t.block_idx() == 0 {
            t.signal_wait_until(s, Cmp::Ge, 1);
        } else if t.thread_idx() == 0 {
            t.signal_op(s, 1, SignalOp::Set, t.my_pe());
        }
    });
    let head = format!(
        "PE {me}: device nvshmem_signal_wait_until (kernel launched at {file}:{line} (launch 1 on this device), block 0, thread "
    );
    let tail = format!(
        "): timed out after 2 s (OXSHMEM_TIMEOUT) waiting for the word at {:#x} to become >= 1; it is 0{hint}",
        s.addr()
    );
    expect_dev_err("signal_wait_until for a later block", r, &[&head, &tail]);
    check(wall < 30.0, format_args!("the timed-out signal wait took {wall:.1} s"));
    // Four threads waiting 2 s: spinning would burn 8 s of CPU (or all the cores there are).
    check(cpu < 1.5, format_args!("four device threads waiting 2 s used {cpu:.2} s of CPU"));
    println!("NOTE signal wait: {wall:.2} s, {cpu:.3} s of CPU");
    check_eq("the signal, set by block 1 after block 0 gave up", 1, sig.read(0));

    // 2. wait_until on an i32, the same way (a negative value, shown signed).
    let line = line!() + 1;
    let (r, _, _) = timed_launch(&shmem, Grid::new(2, 1), move |t| {
        if t.block_idx() == 0 {
            t.wait_until(v.offset(1), Cmp::Eq, -5);
        } else {
            t.atomic_set(v.offset(1), -5, t.my_pe());
        }
    });
    expect_dev_err(
        "wait_until for a later block",
        r,
        &[&format!(
            "PE {me}: device nvshmem_wait_until (kernel launched at {file}:{line} (launch 1 on this device), block 0, thread 0): timed out after 2 s (OXSHMEM_TIMEOUT) waiting for the word at {:#x} to become == -5; it is 0{hint}",
            v.offset(1).addr()
        )],
    );

    // 3. A device barrier that PE 1 never enters: PE 0's barrier names PE 1.
    let line = line!() + 1;
    let (r, _, _) = timed_launch(&shmem, Grid::new(1, 1), move |t| {
        if t.my_pe() == 0 {
            t.barrier_all();
        }
    });
    if me == 0 {
        expect_dev_err(
            "device barrier without PE 1",
            r,
            &[
                &format!(
                    "PE 0: device nvshmem_barrier_all (kernel launched at {file}:{line} (launch 1 on this device), block 0, thread 0): timed out after 2 s (OXSHMEM_TIMEOUT) in the device barrier: PE 1 never arrived (its flag at 0x"
                ),
                " was to become >= 1; it is 0)",
            ],
        );
    } else {
        dev_ok(r, "PE 1 stays out of the device barrier");
    }

    // 4. A block barrier that one thread of the block skips: the others give up after twice
    //    the timeout.
    let line = line!() + 1;
    let (r, _, _) = timed_launch(&shmem, Grid::new(1, 3), move |t| {
        if t.thread_idx() != 2 {
            t.sync_block();
        }
    });
    expect_dev_err(
        "sync_block that a thread skips",
        r,
        &[
            &format!(
                "PE {me}: device __syncthreads (kernel launched at {file}:{line} (launch 1 on this device), block 0, thread "
            ),
            "): timed out after 4 s (twice OXSHMEM_TIMEOUT): 2 of the 3 threads of the block arrived; every thread of the block must call it",
        ],
    );

    // 5. Ten waits in a row by four threads: once one has timed out the others give up at
    //    once (the device is in error), so the kernel ends after one timeout, not ten.
    let (r, wall, _) = timed_launch(&shmem, Grid::new(2, 4), move |t| {
        if t.block_idx() == 0 {
            for k in 2..12 {
                t.signal_wait_until(s.offset(k), Cmp::Ne, 0);
            }
        }
    });
    expect_dev_err("ten waits for nothing", r, &["device nvshmem_signal_wait_until", "timed out after 2 s"]);
    check(wall < 12.0, format_args!("ten timed-out waits took {wall:.1} s; the device should give up after the first"));
    println!("NOTE ten waits: {wall:.2} s");

    shmem.barrier_all().or_die("barrier");
    println!("PE {me}: device waits that would deadlock time out ({})", channel());
    finish(shmem);
}

/// `Device::init` with `OXSHMEM_DEVICE_BLOCKS` set to a value that is not a block count.
fn bogus(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    match Device::init_with(&shmem, Some("rdma")) {
        Ok(_) => fail("Device::init_with(\"rdma\"): expected an error"),
        Err(e) => {
            check(e.to_string().contains("expected p2p, proxy, ibgda or auto"), format!("init error {e}"));
            println!("ERR init_with rdma: {e}");
        }
    }
    // The failed inits left nothing behind that breaks a good one.
    let dev = dev_ok(Device::init_with(&shmem, Some("proxy")), "Device::init_with(proxy) after the errors");
    dev_ok(dev.finalize(), "Device::finalize");
    println!("PE {me}: bogus channel rejected");
    finish(shmem);
}

/// The software NIC's error path (IBGDA only): work requests the device API would never build,
/// posted unchecked from a device thread. Each case runs on a fresh device (a queue in error
/// stays in error) and must come back as an error CQE that the device side reports with the
/// target PE, the WQE's opcode and the syndrome; a later put on the same queue fails at once
/// with the same latched error; a good device works afterwards.
fn err_nic(_: &[String]) {
    use oxshmem_device::ibgda::layout::{Mlx5, NicLayout, Remote, Sge, WorkRequest, WqeFlags};
    let shmem = init();
    let (me, _, right, _) = neighbours(&shmem);
    let buf = shmem.alloc_slice(64, 0u64).or_die("alloc_slice");
    let p = DevPtr::from_slice(&buf);
    let (base, size) = oxshmem::raw::heap_range().or_die("heap_range");
    let (base, size) = (base as u64, size as u64);
    type Case = (&'static str, &'static str, &'static str);
    let cases: [Case; 6] = [
        ("bad rkey", "RDMA_WRITE", "REMOTE_ACCESS_ERR (syndrome 0x13)"),
        ("remote address past the heap", "RDMA_WRITE", "REMOTE_ACCESS_ERR (syndrome 0x13)"),
        ("bad lkey", "RDMA_WRITE", "LOCAL_PROT_ERR (syndrome 0x04)"),
        ("local range outside its region", "RDMA_READ", "LOCAL_PROT_ERR (syndrome 0x04)"),
        ("unknown opcode", "unknown opcode", "LOCAL_QP_OP_ERR (syndrome 0x02)"),
        ("DS that does not fit the opcode", "RDMA_READ", "LOCAL_LENGTH_ERR (syndrome 0x01)"),
    ];
    for (k, (label, opname, syn)) in cases.into_iter().enumerate() {
        let dev = device(&shmem);
        let stream = dev.stream();
        stream.launch(Grid::new(1, 1), move |t| {
            let good = t.ibgda_remote(right, p.addr());
            let local = Sge { addr: p.addr(), len: 8, lkey: t.ibgda_keys().heap };
            match k {
                0 => t.ibgda_post_unchecked(
                    right,
                    WorkRequest::Write { local, remote: Remote { addr: good.addr, rkey: good.rkey ^ 0x5a5a } },
                ),
                1 => t.ibgda_post_unchecked(
                    right,
                    WorkRequest::Write {
                        local,
                        remote: Remote { addr: good.addr - (p.addr() - base) + size - 4, rkey: good.rkey },
                    },
                ),
                2 => t.ibgda_post_unchecked(
                    right,
                    WorkRequest::Write { local: Sge { lkey: 0x777, ..local }, remote: good },
                ),
                3 => t.ibgda_post_unchecked(
                    right,
                    WorkRequest::Read { local: Sge { addr: base + size - 4, ..local }, remote: good },
                ),
                _ => {
                    // A well-formed read, then spoilt: opcode 0x3f, or a DS of 2.
                    let (qp, _) = t.ibgda_queue(right);
                    let idx = qp.resv_head();
                    let mut slots = [[0u8; 64]; 1];
                    let wr = WorkRequest::Read { local, remote: good };
                    Mlx5::encode(&wr, idx, qp.nwqes(), qp.qpn(), WqeFlags { signal: true, fence: false }, &mut slots);
                    if k == 4 {
                        slots[0][3] = 0x3f;
                    } else {
                        slots[0][7] = 2;
                    }
                    t.ibgda_post_slots(right, &slots);
                }
            }
            // The queue is in error now: an ordinary put on it fails at once (latched error).
            t.put(p, &[1u64; 64], right);
        });
        let r = stream.synchronize();
        expect_dev_err(
            &format!("NIC {label}"),
            r,
            &[
                &format!("PE {me}: device "),
                &format!("({opname}) on the IBGDA queue to PE {right}: {syn}"),
                "the queue is in error",
            ],
        );
        drop(stream);
        drop(dev);
        shmem.barrier_all().or_die("barrier");
    }
    // A good device afterwards: a put and a get through the NIC.
    let dev = device(&shmem);
    let stream = dev.stream();
    stream.launch(Grid::new(1, 1), move |t| {
        t.put(p, &[me as u64 + 40; 64], right);
        t.quiet();
    });
    dev_ok(stream.synchronize(), "a good device after the NIC errors");
    drop(stream);
    dev_ok(dev.finalize(), "Device::finalize");
    shmem.barrier_all().or_die("barrier");
    let left = (me + shmem.n_pes() - 1) % shmem.n_pes();
    check_eq("the good put after the errors", left as u64 + 40, buf.read(63));
    println!("PE {me}: NIC errors reported (ibgda)");
    finish(shmem);
}
