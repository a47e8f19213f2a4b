//! PE program for point-to-point synchronization: `pe-wait <case>`.
//!
//! Cases:
//! - `cmp`: `wait_until` with each comparison (Eq, Ne, Gt, Ge, Lt, Le) on every 16-, 32- and
//!   64-bit integer type, woken by a remote `put`, `p` or raw `putmem`; `test` before the write
//!   is false; after the wake the value satisfies the comparison. Safe and raw forms alternate.
//! - `vector`: `wait_until_all/any/some` and their `_vector` forms, with and without a status
//!   mask, and `test_all/any/some`, on every wait type.
//!
//! Every PE waits on its own variables and its left neighbour writes them (a helper thread
//! plays the writer, so a one-PE job works the same way). Before writing, the writer waits for
//! the waiter's "ready" signal, so that every wake is a real wake-up by a remote store.
//!
//! "Ready" is not sent after a pause that a loaded machine may outlast: a watcher thread on
//! the waiter's PE sends it once it has *seen* the waiting thread blocked inside its wait
//! (`/proc/self/task/<tid>`: in `nanosleep`, where the runtime's waits nap once they have
//! waited a millisecond, and nowhere else between the round's barrier and the end of the wait),
//! having looked at its variables again since every store so far. A writer that stores in
//! steps (one element at a time, say) passes such a gate between steps, so that the waiter is
//! seen to have looked at each partial state and to wait on. A precondition that is never seen
//! fails the PE, naming the round; it never lets the round pass untested.

use std::cell::Cell;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use oxshmem::{Cmp, CmpValues, Shmem, SymBox, SymSlice, SyncType, raw};
use oxshmem_tests::pe::{OrDie, check, check_eq, check_slice, dispatch, fail, finish, init_multiple};

fn main() {
    dispatch("pe-wait", &[("cmp", cmp), ("vector", vector)]);
}

/// The wait types, with what the cases need to build values.
trait W: SyncType + Debug + Send + Sync + 'static {
    const NAME: &'static str;
    const MAX: Self;
    const SIGNED: bool;
    fn v(x: i64) -> Self;
}

macro_rules! w {
    ($($t:ty : $signed:expr),*) => {$(
        impl W for $t {
            const NAME: &'static str = stringify!($t);
            const MAX: Self = <$t>::MAX;
            const SIGNED: bool = $signed;
            fn v(x: i64) -> Self {
                <$t>::try_from(x).unwrap_or_else(|_| fail(format!("{x} does not fit {}", stringify!($t))))
            }
        }
    )*};
}
w!(i16: true, u16: false, i32: true, u32: false, i64: true, u64: false, isize: true, usize: false);

/// How long the watcher waits to see the waiter blocked, or the writer's stores: a hang guard
/// (each takes a few milliseconds), shorter than the job's timeout so that the failure names
/// the round.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Step `step` of round `round`, as `ready` and `stored` count them.
fn seq(round: u64, step: u64) -> u64 {
    round << 8 | step
}

/// The shared state of the ready handshake: `ready` on the writer's PE counts the steps its
/// waiter (the writer's right neighbour) is ready for, `stored` on the waiter's PE the steps
/// whose stores its writer (the left neighbour) has made.
struct Pair<'a> {
    shmem: &'a Shmem,
    ready: &'a SymBox<u64>,
    stored: &'a SymBox<u64>,
    round: u64,
}

/// The writer's side of the handshake within a round.
struct Gate<'a> {
    shmem: &'a Shmem,
    ready: &'a SymBox<u64>,
    stored: &'a SymBox<u64>,
    round: u64,
    right: usize,
    step: Cell<u64>,
}

impl Gate<'_> {
    /// Before the next store: waits until the waiter has been seen to look at its variables
    /// after every store made so far, and to wait on.
    fn pass(&self) {
        let step = self.step.get();
        self.shmem.fence().or_die("shmem_fence before the stored signal");
        self.stored.atomic_set(0, seq(self.round, step), self.right).or_die("stored signal to the waiter");
        self.step.set(step + 1);
        self.ready.wait(Cmp::Ge, seq(self.round, step + 1)).or_die("wait for the waiter's ready signal");
    }
}

/// What `/proc` says of thread `tid` of this process: whether it sleeps in `nanosleep` (in
/// `S` state, when the kernel does not show the system call) and how many times it has
/// blocked so far.
fn nap_state(tid: i32) -> (bool, u64) {
    let napping = match std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")) {
        Ok(call) => call
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<libc::c_long>().ok())
            .is_some_and(|n| n == libc::SYS_nanosleep || n == libc::SYS_clock_nanosleep),
        Err(_) => {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()))
                == Some('S')
        }
    };
    let blocked = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("voluntary_ctxt_switches:")?.trim().parse().ok()))
        .unwrap_or_else(|| fail(format_args!("no voluntary_ctxt_switches for thread {tid} in /proc")));
    (napping, blocked)
}

/// Waits until the waiting thread `tid` is seen napping inside its wait, having blocked three
/// times since this was called — so it has polled its variables since then (between two naps
/// of a wait comes a poll; a network transport's progress may block once more per poll) —
/// and has not yet left its wait (`done`). Returns false when `done` came first.
fn seen_waiting(tid: i32, done: &AtomicBool, what: &dyn Fn() -> String) -> bool {
    let deadline = Instant::now() + HANG_GUARD;
    let (_, base) = nap_state(tid);
    loop {
        if done.load(Ordering::SeqCst) {
            return false;
        }
        let (napping, blocked) = nap_state(tid);
        if napping && blocked >= base + 3 && !done.load(Ordering::SeqCst) {
            return true;
        }
        if Instant::now() > deadline {
            fail(format_args!(
                "{}: the waiting thread (tid {tid}) was not seen blocked in its wait within {HANG_GUARD:?} \
                 (napping {napping}, blocked {blocked} times, {base} at the start); the round would not \
                 test a wake-up by a store",
                what()
            ));
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

impl Pair<'_> {
    fn me(&self) -> usize {
        self.shmem.my_pe()
    }
    fn right(&self) -> usize {
        (self.me() + 1) % self.shmem.n_pes()
    }
    fn left(&self) -> usize {
        (self.me() + self.shmem.n_pes() - 1) % self.shmem.n_pes()
    }

    /// One round: `setup` runs locally before everyone is released (checks that must see no
    /// write yet belong there), `waiter` then runs on this PE, while `writer` runs on a helper
    /// thread and writes into the right neighbour's variables once the right neighbour's
    /// watcher has seen its waiter blocked in its wait (and again at each [`Gate::pass`]).
    fn round(&mut self, setup: impl FnOnce(), waiter: impl FnOnce(), writer: impl FnOnce(usize, &Gate<'_>) + Send) {
        self.round += 1;
        let round = self.round;
        setup();
        self.shmem.barrier_all().or_die("barrier before a wait round");
        let (me, left, right) = (self.me(), self.left(), self.right());
        let (shmem, ready, stored) = (self.shmem, self.ready, self.stored);
        let done = AtomicBool::new(false);
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        std::thread::scope(|s| {
            let done = &done;
            // The watcher: tells the writer when this thread waits (step 0), and again each
            // time the writer's stores of a step are here and this thread has looked at them
            // and waits on, until the wait is over.
            s.spawn(move || {
                for step in 0.. {
                    let what = || format!("PE {me}, round {round}, step {step}");
                    if step > 0 {
                        let deadline = Instant::now() + HANG_GUARD;
                        while !stored.test(0, Cmp::Ge, seq(round, step - 1)).or_die("shmem_test") {
                            if done.load(Ordering::SeqCst) {
                                return;
                            }
                            if Instant::now() > deadline {
                                fail(format_args!(
                                    "{}: neither the writer's stores of step {} nor the end of the wait came within \
                                     {HANG_GUARD:?}",
                                    what(),
                                    step - 1
                                ));
                            }
                            std::thread::sleep(Duration::from_micros(50));
                        }
                    }
                    if !seen_waiting(tid, done, &what) {
                        if step == 0 {
                            fail(format_args!("{}: the wait returned before anything was stored", what()));
                        }
                        return;
                    }
                    ready.atomic_set(0, seq(round, step), left).or_die("ready signal to the writer");
                }
            });
            s.spawn(move || {
                let gate = Gate { shmem, ready, stored, round, right, step: Cell::new(0) };
                ready.wait(Cmp::Ge, seq(round, 0)).or_die("wait for the waiter's ready signal");
                writer(right, &gate);
            });
            waiter();
            done.store(true, Ordering::SeqCst);
        });
        self.shmem.barrier_all().or_die("barrier after a wait round");
    }
}

fn cmp(_: &[String]) {
    let shmem = init_multiple();
    let ready = shmem.alloc(0u64).or_die("alloc");
    let stored = shmem.alloc(0u64).or_die("alloc");
    let mut pair = Pair { shmem: &shmem, ready: &ready, stored: &stored, round: 0 };
    cmp_type::<i16>(&mut pair);
    cmp_type::<u16>(&mut pair);
    cmp_type::<i32>(&mut pair);
    cmp_type::<u32>(&mut pair);
    cmp_type::<i64>(&mut pair);
    cmp_type::<u64>(&mut pair);
    cmp_type::<isize>(&mut pair);
    cmp_type::<usize>(&mut pair);
    println!("PE {}: {} wait_until rounds ok", shmem.my_pe(), pair.round);
    drop((ready, stored));
    finish(shmem);
}

fn cmp_type<T: W>(pair: &mut Pair<'_>) {
    // (comparison, initial value, value compared with, value the writer stores)
    let mut cases: Vec<(Cmp, T, T, T)> = vec![
        (Cmp::Eq, T::v(0), T::v(42), T::v(42)),
        (Cmp::Ne, T::v(5), T::v(5), T::v(6)),
        (Cmp::Gt, T::v(10), T::v(10), T::v(11)),
        (Cmp::Ge, T::v(9), T::v(10), T::v(10)),
        (Cmp::Lt, T::v(10), T::v(10), T::v(9)),
        (Cmp::Le, T::v(11), T::v(10), T::v(10)),
        (Cmp::Gt, T::v(1000), T::v(1000), T::MAX),
    ];
    if T::SIGNED {
        cases.push((Cmp::Lt, T::v(-3), T::v(-3), T::v(-4)));
        cases.push((Cmp::Ge, T::v(-300), T::v(-5), T::v(-5)));
        cases.push((Cmp::Gt, T::v(-2), T::v(-1), T::v(0)));
    }
    let ivar: SymSlice<T> = pair.shmem.alloc_slice(2, T::v(0)).or_die("alloc_slice");
    for (k, &(c, init, value, wake)) in cases.iter().enumerate() {
        let left = pair.left();
        let what = format!(
            "{}: wait_until(ivar {c:?} {value:?}) with initial {init:?}, woken by PE {left} storing {wake:?}",
            T::NAME
        );
        let how = k % 3;
        pair.round(
            || {
                ivar.write(0, init);
                ivar.write(1, init);
                // Checked here, before this PE tells its writer to go: after that, a waiter
                // that the scheduler holds back longer than the writer's pause may already see
                // the write.
                check(
                    !ivar.test(0, c, value).or_die("shmem_test"),
                    format!("{what}: shmem_test is true before the write"),
                );
                // SAFETY: element 0 of a live symmetric object.
                let raw_test = unsafe { raw::test(ivar.as_ptr(), c, value) }.or_die("raw shmem_test");
                check(!raw_test, format!("{what}: raw shmem_test is true before the write"));
            },
            || {
                if k % 2 == 0 {
                    ivar.wait_until(0, c, value).or_die("shmem_wait_until");
                } else {
                    // SAFETY: as above.
                    unsafe { raw::wait_until(ivar.as_ptr(), c, value) }.or_die("raw shmem_wait_until");
                }
                let seen = ivar.read(0);
                check_eq(format!("{what}: value after the wake"), wake, seen);
                check(
                    c.holds(seen, value),
                    format!("{what}: woke with {seen:?}, which does not satisfy the comparison"),
                );
                check(
                    ivar.test(0, c, value).or_die("shmem_test"),
                    format!("{what}: shmem_test is false after the wake"),
                );
                check_eq(format!("{what}: the element next to the ivar"), init, ivar.read(1));
            },
            |right, _| match how {
                0 => ivar.put(0, &[wake], right).or_die("shmem_put"),
                1 => ivar.p(0, wake, right).or_die("shmem_p"),
                _ => {
                    // SAFETY: `wake` is a live local of size_of::<T>() bytes; ivar is symmetric.
                    unsafe { raw::putmem(ivar.as_ptr().cast(), (&raw const wake).cast(), size_of::<T>(), right as i32) }
                        .or_die("shmem_putmem")
                }
            },
        );
    }
    ivar.free().or_die("shmem_free");
}

fn vector(_: &[String]) {
    let shmem = init_multiple();
    let ready = shmem.alloc(0u64).or_die("alloc");
    let stored = shmem.alloc(0u64).or_die("alloc");
    let mut pair = Pair { shmem: &shmem, ready: &ready, stored: &stored, round: 0 };
    vector_type::<i16>(&mut pair);
    vector_type::<u16>(&mut pair);
    vector_type::<i32>(&mut pair);
    vector_type::<u32>(&mut pair);
    vector_type::<i64>(&mut pair);
    vector_type::<u64>(&mut pair);
    vector_type::<isize>(&mut pair);
    vector_type::<usize>(&mut pair);
    println!("PE {}: {} vector wait rounds ok", shmem.my_pe(), pair.round);
    drop((ready, stored));
    finish(shmem);
}

const K: usize = 8;

fn vector_type<T: W>(pair: &mut Pair<'_>) {
    let ty = T::NAME;
    let iv: SymSlice<T> = pair.shmem.alloc_slice(K, T::v(0)).or_die("alloc_slice");
    let zero = || iv.fill(T::v(0));
    let store = |i: usize, x: i64, pe: usize| iv.p(i, T::v(x), pe).or_die("shmem_p");
    let local = || iv.to_vec();
    let ones = vec![T::v(1); K];

    // wait_until_all: every element, set one at a time; the waiter is seen to wait on after
    // each but the last.
    pair.round(
        || {
            zero();
            check(
                !iv.test_all(None, Cmp::Eq, CmpValues::One(T::v(1))).or_die("test_all"),
                format!("{ty}: test_all true before any write"),
            );
        },
        || {
            iv.wait_until_all(None, Cmp::Eq, CmpValues::One(T::v(1))).or_die("shmem_wait_until_all");
            check_slice(format!("{ty}: wait_until_all(== 1) returned with"), &ones, &local());
        },
        |right, gate| {
            for (j, i) in (0..K).rev().enumerate() {
                if j > 0 {
                    gate.pass();
                }
                store(i, 1, right);
            }
        },
    );

    // wait_until_all with a status mask: the masked elements are never written.
    let mask = [0, 0, 1, 0, 0, 1, 0, 0];
    pair.round(
        zero,
        || {
            // SAFETY: iv holds K live elements.
            unsafe { raw::wait_until_all(iv.as_ptr(), K, Some(&mask), Cmp::Ne, CmpValues::One(T::v(0))) }
                .or_die("raw shmem_wait_until_all");
            let expect: Vec<T> = (0..K).map(|i| T::v(if mask[i] == 0 { 7 } else { 0 })).collect();
            check_slice(format!("{ty}: wait_until_all(!= 0, status {mask:?}) returned with"), &expect, &local());
            check(
                !iv.test_all(None, Cmp::Ne, CmpValues::One(T::v(0))).or_die("test_all"),
                format!("{ty}: test_all without the mask"),
            );
            check(
                iv.test_all(Some(&mask), Cmp::Ne, CmpValues::One(T::v(0))).or_die("test_all"),
                format!("{ty}: test_all with the mask"),
            );
        },
        |right, gate| {
            for (j, i) in (0..K).filter(|&i| mask[i] == 0).enumerate() {
                if j > 0 {
                    gate.pass();
                }
                store(i, 7, right);
            }
        },
    );

    // wait_until_any with element 5 masked: the writer sets 5 first, then — once the waiter has
    // been seen to look at it and wait on — 3; the answer is 3.
    let mask5 = [0, 0, 0, 0, 0, 1, 0, 0];
    pair.round(
        || {
            zero();
            check_eq(
                format!("{ty}: test_any before any write"),
                None,
                iv.test_any(None, Cmp::Eq, CmpValues::One(T::v(1))).or_die("test_any"),
            );
        },
        || {
            let got = iv.wait_until_any(Some(&mask5), Cmp::Eq, CmpValues::One(T::v(1))).or_die("shmem_wait_until_any");
            check_eq(format!("{ty}: wait_until_any(== 1, status {mask5:?})"), Some(3), got);
            check_eq(format!("{ty}: element 3 after wait_until_any"), T::v(1), iv.read(3));
            let all_masked = [1; K];
            check_eq(
                format!("{ty}: wait_until_any with every element masked"),
                None,
                iv.wait_until_any(Some(&all_masked), Cmp::Eq, CmpValues::One(T::v(1))).or_die("shmem_wait_until_any"),
            );
        },
        |right, gate| {
            store(5, 1, right);
            gate.pass();
            store(3, 1, right);
        },
    );

    // wait_until_some_vector: per-element thresholds; only elements 1 and 6 reach theirs. No
    // gate between the two stores: the wait may return after either (the check allows both).
    let thresholds: Vec<T> = (0..K).map(|i| T::v(10 + i as i64)).collect();
    let below: Vec<T> = (0..K).map(|i| T::v(9 + i as i64)).collect();
    pair.round(
        || {
            iv.copy_from_slice(&below);
            check(
                iv.test_some(None, Cmp::Ge, CmpValues::Each(&thresholds)).or_die("test_some").is_empty(),
                format!("{ty}: test_some before any write"),
            );
        },
        || {
            let mut out = [usize::MAX; K];
            // SAFETY: iv holds K live elements.
            let k =
                unsafe { raw::wait_until_some(iv.as_ptr(), K, &mut out, None, Cmp::Ge, CmpValues::Each(&thresholds)) }
                    .or_die("raw shmem_wait_until_some_vector");
            check((1..=2).contains(&k), format!("{ty}: wait_until_some_vector returned {k} indices"));
            for &i in &out[..k] {
                check(
                    i == 1 || i == 6,
                    format!("{ty}: wait_until_some_vector returned index {i}, which was not written"),
                );
                check(iv.read(i) >= thresholds[i], format!("{ty}: index {i} returned before it reached its threshold"));
            }
            // Both writes are done once the writer's last store is visible.
            iv.wait_until(1, Cmp::Ge, thresholds[1]).or_die("shmem_wait_until");
            iv.wait_until(6, Cmp::Ge, thresholds[6]).or_die("shmem_wait_until");
            check_eq(
                format!("{ty}: test_some_vector(>= thresholds)"),
                vec![1, 6],
                iv.test_some(None, Cmp::Ge, CmpValues::Each(&thresholds)).or_die("test_some"),
            );
            let no1 = [0, 1, 0, 0, 0, 0, 0, 0];
            check_eq(
                format!("{ty}: test_some_vector with element 1 masked"),
                vec![6],
                iv.test_some(Some(&no1), Cmp::Ge, CmpValues::Each(&thresholds)).or_die("test_some"),
            );
            check_eq(
                format!("{ty}: wait_until_some_vector with element 1 masked"),
                vec![6],
                iv.wait_until_some(Some(&no1), Cmp::Ge, CmpValues::Each(&thresholds)).or_die("shmem_wait_until_some"),
            );
            let any = iv.test_any(None, Cmp::Ge, CmpValues::Each(&thresholds)).or_die("test_any");
            check(any == Some(1) || any == Some(6), format!("{ty}: test_any_vector returned {any:?}"));
            check(
                !iv.test_all(None, Cmp::Ge, CmpValues::Each(&thresholds)).or_die("test_all"),
                format!("{ty}: test_all_vector"),
            );
            let only16 = [1, 0, 1, 1, 1, 1, 0, 1];
            check(
                iv.test_all(Some(&only16), Cmp::Ge, CmpValues::Each(&thresholds)).or_die("test_all"),
                format!("{ty}: test_all_vector, mask {only16:?}"),
            );
            let only6 = [1, 1, 1, 1, 1, 1, 0, 1];
            // SAFETY: iv holds K live elements.
            let raw_any = unsafe { raw::test_any(iv.as_ptr(), K, Some(&only6), Cmp::Ge, CmpValues::Each(&thresholds)) }
                .or_die("raw test_any");
            check_eq(format!("{ty}: raw test_any_vector, mask {only6:?}"), Some(6), raw_any);
        },
        |right, _| {
            store(6, 16, right);
            store(1, 11, right);
        },
    );

    // wait_until_all_vector and wait_until_any_vector: each element its own value, written
    // with one put of the whole array.
    let target: Vec<T> = (0..K).map(|i| T::v(100 + 3 * i as i64)).collect();
    pair.round(
        zero,
        || {
            iv.wait_until_all(None, Cmp::Eq, CmpValues::Each(&target)).or_die("shmem_wait_until_all_vector");
            check_slice(format!("{ty}: wait_until_all_vector returned with"), &target, &local());
            check(
                iv.test_all(None, Cmp::Le, CmpValues::Each(&target)).or_die("test_all"),
                format!("{ty}: test_all_vector(<=)"),
            );
            check_eq(
                format!("{ty}: test_any_vector(<), nothing below"),
                None,
                iv.test_any(None, Cmp::Lt, CmpValues::Each(&target)).or_die("test_any"),
            );
            // SAFETY: iv holds K live elements.
            let all = unsafe { raw::test_all(iv.as_ptr(), K, None, Cmp::Eq, CmpValues::Each(&target)) }
                .or_die("raw test_all");
            check(all, format!("{ty}: raw test_all_vector"));
            let mut out = [0usize; K];
            // SAFETY: as above.
            let k =
                unsafe { raw::test_some(iv.as_ptr(), K, &mut out, Some(&mask), Cmp::Gt, CmpValues::One(T::v(105))) }
                    .or_die("raw test_some");
            // Elements 2..8 exceed 105 (106, 109, ...); 2 and 5 are masked.
            check_slice(format!("{ty}: raw test_some(> 105, mask {mask:?})"), &[3, 4, 6, 7], &out[..k]);
        },
        |right, _| iv.put(0, &target, right).or_die("shmem_put"),
    );
    pair.round(
        zero,
        || {
            // SAFETY: iv holds K live elements.
            let got = unsafe { raw::wait_until_any(iv.as_ptr(), K, None, Cmp::Eq, CmpValues::Each(&target)) }
                .or_die("raw shmem_wait_until_any_vector");
            check_eq(format!("{ty}: wait_until_any_vector (only element 4 is written)"), Some(4), got);
            check_eq(format!("{ty}: element 4"), target[4], iv.read(4));
        },
        |right, _| iv.p(4, target[4], right).or_die("shmem_p"),
    );
    iv.free().or_die("shmem_free");
}
