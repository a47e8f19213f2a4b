//! PE program for signals, contexts, locks and threads (OpenSHMEM 1.5 §9.8, §9.5, §9.10.3,
//! §9.2): `pe-sync <case> [args]`.
//!
//! Signals:
//! - `signal-ring ROUNDS LEN`: every PE sends its right neighbour LEN words and a signal per
//!   round (`put_signal`, `put_signal_nbi`, raw; `Set` and `Add` by turns) and waits for its
//!   left neighbour's: the data is complete whenever the signal is seen.
//! - `signal-add ITERS`: every PE adds into one signal word on PE 0: the total is exact, and
//!   the data sent with each add is there.
//! - `signal-cmp`: `signal_wait_until` with every comparison, `signal_fetch`, and errors.
//!
//! Contexts:
//! - `ctx-options`: `ctx_create` with each option and their combinations; unknown bits refused.
//! - `ctx-ops TEAM`: every operation family on a context of the world or of a split team
//!   (`START:STRIDE:SIZE`), addressed by team PE numbers; `quiet` and `fence`.
//! - `ctx-destroyed`: a destroyed context (and a context of a destroyed team) is refused.
//! - `ctx-private`: a `SHMEM_CTX_PRIVATE` context used from another thread is refused.
//! - `ctx-independent COUNT SIZE`: contexts complete independently (3 PEs or more). On PE 0,
//!   thread A puts COUNT blocks of SIZE bytes to PE 1 on its context; when PE 1 is reached over
//!   the network, PE 0 first stops PE 1 (SIGSTOP), so that they cannot complete. Thread B then
//!   puts to PE 2 on its own context and quiets: the quiet returns while A's operations are in
//!   flight (B's count is 0, A's is not). PE 1 continues (SIGCONT), A quiets, and PE 1 finds
//!   A's data, PE 2 B's.
//!
//! Locks:
//! - `lock-count ITERS`: every PE increments counters on PE 0 and the last PE with get + put
//!   under the lock (safe and raw forms): exact totals prove mutual exclusion.
//! - `lock-fair K`: every PE takes the lock K times and logs it on PE 0; first come, first
//!   served (see the case).
//! - `lock-test`: `test_lock` fails while another PE holds the lock, succeeds once it is free.
//! - `try-lock-held`: `SymLock::try_lock` on a lock another PE holds returns `None`.
//! - `lock-bad`: a lock that is not symmetric, or misaligned, is refused.
//! - `lock-clear-unheld`: `clear_lock` on a lock this PE does not hold (never taken, taken by
//!   another PE, already cleared) is an error naming the routine and the lock's address, at
//!   once; the lock still works afterwards.
//!
//! Threads:
//! - `threads T ITERS`: `init_thread(MULTIPLE)`; T threads per PE put, get, fetch_add, take
//!   the lock and use their own contexts at once; exact totals.

use std::fmt::Debug;

use oxshmem::ctx::{SHMEM_CTX_NOSTORE, SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED};
use oxshmem::lock::SymLock;
use oxshmem::{Cmp, ErrorKind, Shmem, SignalOp, Team, TeamConfig, ThreadLevel};
use oxshmem_tests::pe::{
    OrDie, arg, check, check_eq, check_slice, dispatch, expect_err, fail, finish, init, init_multiple,
};

fn main() {
    dispatch(
        "pe-sync",
        &[
            ("signal-ring", signal_ring),
            ("signal-add", signal_add),
            ("signal-cmp", signal_cmp),
            ("ctx-options", ctx_options),
            ("ctx-ops", ctx_ops),
            ("ctx-destroyed", ctx_destroyed),
            ("ctx-private", ctx_private),
            ("ctx-independent", ctx_independent),
            ("lock-count", lock_count),
            ("lock-fair", lock_fair),
            ("lock-test", lock_test),
            ("try-lock-held", try_lock_held),
            ("lock-bad", lock_bad),
            ("lock-clear-unheld", lock_clear_unheld),
            ("threads", threads),
        ],
    );
}

/// The word PE `from` sends at position `k` in round `r`.
fn word(from: usize, r: u64, k: usize) -> u64 {
    ((from as u64) << 48) ^ (r << 24) ^ k as u64
}

// ---------------------------------------------------------------------------------------------
// signals

fn signal_ring(args: &[String]) {
    let rounds: u64 = arg(args, 0, 50);
    let len: usize = arg(args, 1, 1000);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let data = shmem.alloc_slice(len, 0u64).or_die("alloc");
    let sig = shmem.alloc_slice(1, 0u64).or_die("alloc");
    // ack on a sender: the round its right neighbour has consumed.
    let ack = shmem.alloc_slice(1, 0u64).or_die("alloc");
    for r in 1..=rounds {
        // The previous round's data was read before it is overwritten.
        ack.signal_wait_until(0, Cmp::Ge, r - 1).or_die("shmem_signal_wait_until (ack)");
        let payload: Vec<u64> = (0..len).map(|k| word(me, r, k)).collect();
        // Set to r, or add 1 to r-1: the signal is r either way.
        let (op, value) = if r % 2 == 0 { (SignalOp::Set, r) } else { (SignalOp::Add, 1) };
        let how = match r % 3 {
            0 => "shmem_put_signal",
            1 => "shmem_put_signal_nbi",
            _ => "raw shmem_put_signal",
        };
        let what = format!("round {r}: {how} {op:?} of {len} words to PE {right}");
        match r % 3 {
            0 => data.put_signal(0, &payload, &sig, 0, value, op, right).or_die(&what),
            1 => {
                data.put_signal_nbi(0, &payload, &sig, 0, value, op, right).or_die(&what);
                shmem.quiet().or_die("shmem_quiet");
            }
            _ => {
                // SAFETY: payload holds len words; data and sig are symmetric objects.
                unsafe {
                    oxshmem::signal::raw::put_signal(
                        data.as_ptr().cast(),
                        payload.as_ptr().cast(),
                        len * 8,
                        sig.as_ptr(),
                        value,
                        op as i32,
                        right as i32,
                        "shmem_putmem_signal",
                    )
                }
                .or_die(&what)
            }
        }
        let seen = sig.signal_wait_until(0, Cmp::Ge, r).or_die("shmem_signal_wait_until");
        check_eq(format!("round {r}: signal from PE {left}"), r, seen);
        let expect: Vec<u64> = (0..len).map(|k| word(left, r, k)).collect();
        check_slice(format!("round {r}: data from PE {left} once its signal is seen"), &expect, &data.to_vec());
        ack.atomic_set(0, r, left).or_die("ack");
    }
    println!("PE {me}: {rounds} signalled rounds of {len} words ok");
    finish(shmem);
}

fn signal_add(args: &[String]) {
    let iters: u64 = arg(args, 0, 1000);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let data = shmem.alloc_slice(n, 0u64).or_die("alloc");
    let sig = shmem.alloc_slice(2, 0u64).or_die("alloc");
    let add = me as u64 + 1;
    for i in 1..=iters {
        if i % 2 == 0 {
            data.put_signal(me, &[i], &sig, 1, add, SignalOp::Add, 0).or_die("shmem_put_signal Add to PE 0");
        } else {
            data.put_signal_nbi(me, &[i], &sig, 1, add, SignalOp::Add, 0).or_die("shmem_put_signal_nbi Add to PE 0");
        }
    }
    shmem.quiet().or_die("shmem_quiet");
    if me == 0 {
        let total = iters * (n * (n + 1) / 2) as u64;
        let seen = sig.signal_wait_until(1, Cmp::Eq, total).or_die("shmem_signal_wait_until");
        check_eq("total of every PE's adds", total, seen);
        check_eq("shmem_signal_fetch of the total", total, sig.signal_fetch(1).or_die("shmem_signal_fetch"));
        check_eq("the last word from each PE", vec![iters; n], data.to_vec());
        check_eq("the other signal word", 0, sig.signal_fetch(0).or_die("fetch"));
        println!("signal total exact: {total}");
    }
    finish(shmem);
}

fn signal_cmp(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let sig = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let ack = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let dummy = shmem.alloc_slice(1, 0u8).or_die("alloc");
    // Each step: the sender updates its right neighbour's signal; the receiver waits for a
    // condition that only the new value meets, then acknowledges.
    let steps: [(SignalOp, u64, Cmp, u64, u64); 7] = [
        (SignalOp::Set, 5, Cmp::Eq, 5, 5),
        (SignalOp::Set, 7, Cmp::Ne, 5, 7),
        (SignalOp::Add, 3, Cmp::Gt, 7, 10),
        (SignalOp::Set, 11, Cmp::Ge, 11, 11),
        (SignalOp::Set, 2, Cmp::Lt, 11, 2),
        (SignalOp::Set, 1, Cmp::Le, 1, 1),
        (SignalOp::Add, u64::MAX, Cmp::Eq, 0, 0), // wraps: 1 + (2^64 - 1) = 0
    ];
    for (s, &(op, value, cmp, against, result)) in steps.iter().enumerate() {
        let s = s as u64 + 1;
        ack.signal_wait_until(0, Cmp::Ge, s - 1).or_die("wait for ack");
        dummy
            .put_signal(0, &[s as u8], &sig, 0, value, op, right)
            .or_die(format!("step {s}: put_signal {op:?} {value}"));
        let got =
            sig.signal_wait_until(0, cmp, against).or_die(format!("step {s}: signal_wait_until {cmp:?} {against}"));
        check_eq(format!("step {s}: signal_wait_until({cmp:?}, {against}) returns the signal"), result, got);
        check_eq(format!("step {s}: shmem_signal_fetch"), result, sig.signal_fetch(0).or_die("shmem_signal_fetch"));
        check_eq(format!("step {s}: data with the signal"), s as u8, dummy.read(0));
        ack.atomic_set(0, s, left).or_die("ack");
    }
    // Conditions that already hold return at once.
    check_eq("wait_until(Ge, 0) on a zero signal", 0, sig.signal_wait_until(0, Cmp::Ge, 0).or_die("wait"));
    // Errors.
    let e = expect_err(
        "signal_wait_until past the end",
        sig.signal_wait_until(1, Cmp::Eq, 0),
        &["index range 1..2 is outside the symmetric object of 1 elements"],
    );
    check(matches!(e.kind, ErrorKind::OutOfBounds { .. }), format!("expected OutOfBounds, got {:?}", e.kind));
    expect_err(
        "put_signal to PE n",
        dummy.put_signal(0, &[1], &sig, 0, 1, SignalOp::Set, n),
        &[&format!("PE {n} is out of range")],
    );
    expect_err(
        "put_signal with a signal index past the end",
        dummy.put_signal(0, &[1], &sig, 1, 1, SignalOp::Set, me),
        &["outside the symmetric object"],
    );
    let mut local = 0u64;
    // SAFETY: the runtime checks the addresses before any access.
    let r = unsafe {
        oxshmem::signal::raw::put_signal(
            dummy.as_ptr(),
            [1u8].as_ptr(),
            1,
            &mut local,
            1,
            SignalOp::Set as i32,
            me as i32,
            "shmem_putmem_signal",
        )
    };
    expect_err("raw put_signal to a stack signal", r, &["signal 0x", "is not symmetric"]);
    // SAFETY: as above.
    let r = unsafe {
        oxshmem::signal::raw::put_signal(
            dummy.as_ptr(),
            [1u8].as_ptr(),
            1,
            sig.as_ptr(),
            1,
            7,
            me as i32,
            "shmem_putmem_signal",
        )
    };
    expect_err("raw put_signal with sig_op 7", r, &["sig_op 7 is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD"]);
    // SAFETY: as above.
    let r = unsafe { oxshmem::signal::raw::signal_fetch(&local) };
    expect_err("raw signal_fetch of a stack word", r, &["is not symmetric"]);
    check_eq(
        "raw signal_fetch",
        0,
        // SAFETY: sig is a symmetric u64.
        unsafe { oxshmem::signal::raw::signal_fetch(sig.as_ptr()) }.or_die("raw signal_fetch"),
    );
    println!("PE {me}: signal comparisons ok");
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// contexts

fn ctx_options(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = (me + 1) % n;
    let x = shmem.alloc_slice(n, 0u64).or_die("alloc");
    let all = [
        0,
        SHMEM_CTX_SERIALIZED,
        SHMEM_CTX_PRIVATE,
        SHMEM_CTX_NOSTORE,
        SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE,
        SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE,
        SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE,
    ];
    for (i, &opts) in all.iter().enumerate() {
        let what = format!("ctx_create({opts:#x})");
        let ctx = shmem.ctx_create(opts).or_die(&what);
        check_eq(format!("{what}: options"), opts, ctx.options());
        check_eq(
            format!("{what}: its team is the world"),
            (0..n).collect::<Vec<_>>(),
            ctx.team().or_die("shmem_ctx_get_team").members().or_die("members"),
        );
        let v = (me * 100 + i) as u64;
        if opts & SHMEM_CTX_NOSTORE == 0 {
            ctx.p(&x, me, v, right).or_die(format!("{what}: p"));
            ctx.quiet().or_die(format!("{what}: quiet"));
            check_eq(format!("{what}: g of what p wrote"), v, ctx.g(&x, me, right).or_die(format!("{what}: g")));
        } else {
            ctx.g(&x, me, right).or_die(format!("{what}: g"));
        }
        ctx.fence().or_die(format!("{what}: fence"));
        ctx.destroy().or_die(format!("{what}: destroy"));
    }
    let shared =
        shmem.team_shared().create_ctx(SHMEM_CTX_SERIALIZED).or_die("shmem_team_create_ctx on SHMEM_TEAM_SHARED");
    check_eq(
        "context on SHMEM_TEAM_SHARED: team size",
        shmem.team_shared().n_pes().or_die("n_pes"),
        shared.team().or_die("team").n_pes().or_die("n_pes"),
    );
    shared.destroy().or_die("destroy");
    let e = expect_err(
        "ctx_create with an unknown option",
        shmem.ctx_create(1 << 5).map(drop),
        &["unknown context options 0x20"],
    );
    check(matches!(e.kind, ErrorKind::InvalidArgument(_)), format!("expected InvalidArgument, got {:?}", e.kind));
    shmem.barrier_all().or_die("barrier");
    let left = (me + n - 1) % n;
    check_eq("the last value the left neighbour's contexts wrote", (left * 100 + 4) as u64, x.read(left));
    println!("PE {me}: context options ok");
    finish(shmem);
}

/// Joins the team named by `spec` (`world` or `START:STRIDE:SIZE`); `None` on non-members.
fn join(shmem: &Shmem, spec: &str) -> Option<(Team, Vec<usize>, bool)> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    if spec == "world" {
        return Some((shmem.team_world(), (0..n).collect(), false));
    }
    let f: Vec<usize> =
        spec.split(':').map(|x| x.parse().unwrap_or_else(|_| fail(format!("bad team spec {spec:?}")))).collect();
    check(f.len() == 3, format!("team spec {spec:?} is not START:STRIDE:SIZE"));
    let members: Vec<usize> = (0..f[2]).map(|i| f[0] + i * f[1]).collect();
    let t = shmem.team_world().split_strided(f[0], f[1], f[2], TeamConfig::default()).or_die("split_strided");
    check_eq("membership", members.contains(&me), t.is_some());
    t.map(|t| (t, members, true))
}

fn ctx_ops(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let on = join(&shmem, spec);
    // Objects (world-allocated): member t of the team owns region t of each.
    const W: usize = 16;
    let buf = shmem.alloc_slice(n * W, 0u64).or_die("alloc");
    let amo = shmem.alloc_slice(n, 0u64).or_die("alloc");
    let amo32 = shmem.alloc_slice(n, 0i32).or_die("alloc");
    let sig = shmem.alloc_slice(n, 0u64).or_die("alloc");
    if let Some((team, members, _)) = &on {
        let tn = members.len();
        let t = team.my_pe().or_die("my_pe");
        let (right, left) = ((t + 1) % tn, (t + tn - 1) % tn);
        let ctx = team.create_ctx(SHMEM_CTX_PRIVATE).or_die("create_ctx");
        let base = t * W; // my region on every PE
        let op = |s: &str| format!("shmem_ctx_{s} to team PE {right} (world PE {})", members[right]);
        // RMA: put, put_nbi, p, iput; then read back with get, get_nbi, g, iget.
        let mine: Vec<u64> = (0..W as u64).map(|k| ((me as u64) << 32) | k).collect();
        ctx.put(&buf, base, &mine[..4], right).or_die(op("put"));
        ctx.put_nbi(&buf, base + 4, &mine[4..8], right).or_die(op("put_nbi"));
        ctx.p(&buf, base + 8, mine[8], right).or_die(op("p"));
        // iput: elements 9, 11, 13 from mine[9], mine[11], mine[13]; 10, 12, 14 by p.
        ctx.iput(&buf, base + 9, 2, &mine[9..], 2, 3, right).or_die(op("iput"));
        for k in [10, 12, 14, 15] {
            ctx.p(&buf, base + k, mine[k], right).or_die(op("p"));
        }
        ctx.quiet().or_die("shmem_ctx_quiet");
        let mut back = vec![0u64; W];
        ctx.get(&buf, base, &mut back[..8], right).or_die(op("get"));
        ctx.get_nbi(&buf, base + 8, &mut back[8..12], right).or_die(op("get_nbi"));
        ctx.quiet().or_die("shmem_ctx_quiet");
        back[12] = ctx.g(&buf, base + 12, right).or_die(op("g"));
        let mut odd = [0u64; 2];
        ctx.iget(&buf, base + 13, 2, &mut odd, 1, 2, right).or_die(op("iget"));
        back[13] = odd[0];
        back[15] = odd[1];
        back[14] = ctx.g(&buf, base + 14, right).or_die(op("g"));
        check_slice(op("get/get_nbi/g/iget of what was put"), &mine, &back);

        // Atomics on my element of the right neighbour's `amo` and `amo32`.
        ctx.atomic_set(&amo, t, 10, right).or_die(op("atomic_set"));
        check_eq(op("atomic_fetch"), 10, ctx.atomic_fetch(&amo, t, right).or_die(op("atomic_fetch")));
        check_eq(op("atomic_swap"), 10, ctx.atomic_swap(&amo, t, 20, right).or_die(op("atomic_swap")));
        check_eq(
            op("atomic_compare_swap"),
            20,
            ctx.atomic_compare_swap(&amo, t, 20, 30, right).or_die(op("atomic_compare_swap")),
        );
        check_eq(op("atomic_fetch_inc"), 30, ctx.atomic_fetch_inc(&amo, t, right).or_die(op("fetch_inc")));
        ctx.atomic_inc(&amo, t, right).or_die(op("atomic_inc"));
        check_eq(op("atomic_fetch_add"), 32, ctx.atomic_fetch_add(&amo, t, 8, right).or_die(op("fetch_add")));
        ctx.atomic_add(&amo, t, 60, right).or_die(op("atomic_add"));
        check_eq(
            op("atomic_fetch_and"),
            100,
            ctx.atomic_fetch_and(&amo, t, 0b1110_0111, right).or_die(op("fetch_and")),
        );
        check_eq(
            op("atomic_fetch_or"),
            100 & 0b1110_0111,
            ctx.atomic_fetch_or(&amo, t, 0x100, right).or_die(op("fetch_or")),
        );
        check_eq(
            op("atomic_fetch_xor"),
            (100 & 0b1110_0111) | 0x100,
            ctx.atomic_fetch_xor(&amo, t, 0x3, right).or_die(op("fetch_xor")),
        );
        ctx.atomic_and(&amo, t, !0x1, right).or_die(op("atomic_and"));
        ctx.atomic_or(&amo, t, 0x1000, right).or_die(op("atomic_or"));
        ctx.atomic_xor(&amo, t, 0x10, right).or_die(op("atomic_xor"));
        let v = (((((100 & 0b1110_0111) | 0x100) ^ 0x3) & !0x1) | 0x1000) ^ 0x10;
        let mut f = 0u64;
        ctx.atomic_fetch_nbi(&amo, &mut f, t, right).or_die(op("atomic_fetch_nbi"));
        ctx.quiet().or_die("shmem_ctx_quiet");
        check_eq(op("atomic_fetch_nbi after and/or/xor"), v, f);
        ctx.atomic_swap_nbi(&amo, &mut f, t, 1, right).or_die(op("swap_nbi"));
        ctx.quiet().or_die("quiet");
        check_eq(op("atomic_swap_nbi"), v, f);
        ctx.atomic_compare_swap_nbi(&amo, &mut f, t, 1, 2, right).or_die(op("compare_swap_nbi"));
        ctx.quiet().or_die("quiet");
        check_eq(op("atomic_compare_swap_nbi"), 1, f);
        ctx.atomic_fetch_inc_nbi(&amo, &mut f, t, right).or_die(op("fetch_inc_nbi"));
        ctx.quiet().or_die("quiet");
        check_eq(op("atomic_fetch_inc_nbi"), 2, f);
        ctx.atomic_fetch_add_nbi(&amo, &mut f, t, 5, right).or_die(op("fetch_add_nbi"));
        ctx.quiet().or_die("quiet");
        check_eq(op("atomic_fetch_add_nbi"), 3, f);
        ctx.atomic_fetch_and_nbi(&amo, &mut f, t, 0xC, right).or_die(op("fetch_and_nbi"));
        ctx.quiet().or_die("quiet");
        check_eq(op("atomic_fetch_and_nbi"), 8, f);
        ctx.atomic_fetch_or_nbi(&amo, &mut f, t, 0x30, right).or_die(op("fetch_or_nbi"));
        ctx.quiet().or_die("quiet");
        check_eq(op("atomic_fetch_or_nbi"), 8, f);
        ctx.atomic_fetch_xor_nbi(&amo, &mut f, t, me as u64, right).or_die(op("fetch_xor_nbi"));
        ctx.quiet().or_die("quiet");
        check_eq(op("atomic_fetch_xor_nbi"), 0x38, f);
        check_eq(
            op("atomic_fetch_add::<i32>"),
            0,
            ctx.atomic_fetch_add(&amo32, t, -(me as i32) - 1, right).or_die(op("fetch_add i32")),
        );
        ctx.fence().or_die("shmem_ctx_fence");
        // A signal: my world PE number into my element of the right neighbour's `buf` row,
        // then a signal that carries the team PE number + 1.
        ctx.put_signal(&buf, base, &[me as u64], &sig, t, t as u64 + 1, SignalOp::Set, right).or_die(op("put_signal"));
        ctx.put_signal_nbi(&buf, base + 1, &[me as u64 + 1], &sig, t, 100, SignalOp::Add, right)
            .or_die(op("put_signal_nbi"));
        ctx.quiet().or_die("quiet");
        sig.signal_wait_until(left, Cmp::Eq, left as u64 + 101).or_die("signal from the left team neighbour");
        // Team PE numbers: the signal from team PE `left` came from its world PE.
        check_eq(format!("world PE that signalled from team PE {left}"), members[left] as u64, buf.read(left * W));
        check_eq("data of put_signal_nbi", members[left] as u64 + 1, buf.read(left * W + 1));
        // A team PE number past the team is refused, in the team's terms.
        let e =
            expect_err("ctx p to team PE n", ctx.p(&buf, 0, 0, tn), &[&format!("PE {tn} is out of range (0..{tn})")]);
        check(matches!(e.kind, ErrorKind::PeOutOfRange { .. }), format!("expected PeOutOfRange, got {:?}", e.kind));
        team.sync().or_die("team sync");
        // What the left team neighbour's atomics left in my copies.
        check_eq(format!("amo from team PE {left}"), 0x38 ^ members[left] as u64, amo.read(left));
        check_eq(format!("i32 amo from team PE {left}"), -(members[left] as i32) - 1, amo32.read(left));
        ctx.destroy().or_die("ctx destroy");
        println!("PE {me}: context operations ok on team {spec} as team PE {t}");
    }
    if let Some((team, _, true)) = on {
        team.destroy().or_die("team destroy");
    }
    finish(shmem);
}

/// Checks that `r` is the error of a destroyed context (or team).
#[track_caller]
fn refused<T: Debug>(label: &str, r: oxshmem::Result<T>, why: &str) {
    let e = expect_err(label, r, &[why]);
    check(
        matches!(e.kind, ErrorKind::InvalidArgument(_)),
        format!("{label}: expected InvalidArgument, got {:?}", e.kind),
    );
}

fn ctx_destroyed(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let x = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let ctx = shmem.ctx_create(0).or_die("ctx_create");
    let other = ctx.clone();
    ctx.destroy().or_die("destroy");
    const GONE: &str = "context was destroyed";
    refused("put on a destroyed context", other.put(&x, 0, &[1], me), GONE);
    refused("g on a destroyed context", other.g(&x, 0, me), GONE);
    refused("atomic_add on a destroyed context", other.atomic_add(&x, 0, 1, me), GONE);
    refused("put_signal on a destroyed context", other.put_signal(&x, 0, &[1], &x, 0, 1, SignalOp::Set, me), GONE);
    refused("quiet on a destroyed context", other.quiet(), GONE);
    refused("fence on a destroyed context", other.fence(), GONE);
    refused("team of a destroyed context", other.team().map(drop), GONE);
    refused("destroy again", other.destroy(), GONE);
    // A context of a destroyed team.
    let t = shmem.team_world().split_strided(0, 1, n, TeamConfig::default()).or_die("split").expect("member");
    let tctx = t.create_ctx(0).or_die("create_ctx");
    let handle = t.clone();
    t.destroy().or_die("team destroy");
    refused("p on a context of a destroyed team", tctx.p(&x, 0, 1, 0), "was destroyed");
    refused("create_ctx on a destroyed team", handle.create_ctx(0).map(drop), "was destroyed");
    // Others still work.
    let c = shmem.ctx_create(0).or_die("ctx_create after destroys");
    c.p(&x, 0, 7, me).or_die("p");
    check_eq("p on a new context", 7, x.read(0));
    c.destroy().or_die("destroy");
    println!("PE {me}: destroyed contexts refused");
    finish(shmem);
}

fn ctx_private(_: &[String]) {
    let shmem = init_multiple();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = (me + 1) % n;
    let x = shmem.alloc_slice(2, 0u64).or_die("alloc");
    let private = shmem.ctx_create(SHMEM_CTX_PRIVATE).or_die("ctx_create PRIVATE");
    let shared = shmem.ctx_create(SHMEM_CTX_SERIALIZED).or_die("ctx_create");
    std::thread::scope(|s| {
        s.spawn(|| {
            const WHY: &str = "a SHMEM_CTX_PRIVATE context is used by a thread other than its creator";
            refused("p on another thread's private context", private.p(&x, 0, 1, right), WHY);
            refused("g on another thread's private context", private.g(&x, 0, right), WHY);
            refused(
                "atomic_fetch_add on another thread's private context",
                private.atomic_fetch_add(&x, 0, 1, right),
                WHY,
            );
            // A context that is not private may be used from any thread.
            shared.p(&x, 1, me as u64 + 1, right).or_die("p on a shared context from a thread");
            shared.quiet().or_die("quiet");
        });
    });
    // Its creator may use it.
    private.p(&x, 0, me as u64 + 10, right).or_die("p on my private context");
    private.quiet().or_die("quiet");
    shmem.barrier_all().or_die("barrier");
    let left = (me + n - 1) % n;
    check_eq("value from the left neighbour's private context", left as u64 + 10, x.read(0));
    check_eq("value from the left neighbour's helper thread", left as u64 + 1, x.read(1));
    private.destroy().or_die("destroy");
    shared.destroy().or_die("destroy");
    println!("PE {me}: private contexts stay private");
    finish(shmem);
}

fn ctx_independent(args: &[String]) {
    use std::sync::mpsc::channel;
    use std::time::Duration;
    let count: usize = arg(args, 0, 16);
    let size: usize = arg(args, 1, 1024);
    let shmem = init_multiple();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n >= 3, "ctx-independent needs 3 PEs or more");
    let data = shmem.alloc_slice(count * size, 0u8).or_die("alloc");
    let word = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let pid = shmem.alloc_slice(1, u64::from(std::process::id())).or_die("alloc");
    let block = |i: usize| vec![(i * 7 + 1) as u8; size];
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        // Connections to both peers exist before PE 1 stops (a first operation needs the peer).
        data.put(0, &[0], 1).or_die("warm-up put to PE 1");
        word.put(0, &[0], 2).or_die("warm-up put to PE 2");
        shmem.quiet().or_die("quiet");
        let network = data.remote_ptr(1).is_none();
        let victim = pid.g(0, 1).or_die("g of PE 1's pid") as libc::pid_t;
        let signal = |sig: libc::c_int| {
            if network {
                // SAFETY: kill(2) has no memory effects; the pid is PE 1's, of this job.
                check(unsafe { libc::kill(victim, sig) } == 0, format!("kill({victim}, {sig})"));
            }
        };
        signal(libc::SIGSTOP);
        let (a_done, a_issued) = channel::<oxshmem::Ctx>();
        let (go_quiet, a_go) = channel::<()>();
        let (a_in_flight, b_in_flight) = std::thread::scope(|s| {
            let (shmem, data) = (&shmem, &data);
            let a = s.spawn(move || {
                let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE).or_die("ctx_create A");
                for i in 0..count {
                    ctx.put_nbi(data, i * size, &block(i), 1).or_die("put_nbi on context A");
                }
                a_done.send(ctx.clone()).unwrap_or_else(|_| fail("send"));
                a_go.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| fail("waiting for PE 1 to continue"));
                ctx.quiet().or_die("quiet of context A");
                check_eq("context A's operations in flight after its quiet", 0, ctx.in_flight());
                ctx.destroy().or_die("destroy A");
            });
            let a_ctx = match a_issued.recv_timeout(Duration::from_secs(20)) {
                Ok(c) => c,
                Err(_) => {
                    signal(libc::SIGCONT);
                    fail("thread A did not issue its puts while PE 1 was stopped");
                }
            };
            let word = &word;
            let b = s.spawn(move || {
                let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE).or_die("ctx_create B");
                ctx.p(word, 0, 42, 2).or_die("p on context B");
                ctx.quiet().or_die("quiet of context B");
                let r = (a_ctx.in_flight(), ctx.in_flight());
                ctx.destroy().or_die("destroy B");
                r
            });
            let r = b.join().unwrap_or_else(|_| fail("thread B panicked"));
            signal(libc::SIGCONT);
            go_quiet.send(()).unwrap_or_else(|_| fail("send"));
            a.join().unwrap_or_else(|_| fail("thread A panicked"));
            r
        });
        check_eq("context B's operations in flight after its quiet", 0, b_in_flight);
        if network {
            check(
                a_in_flight > 0,
                "context B's quiet returned, but context A's puts to the stopped PE 1 were not in flight: \
                 nothing was tested",
            );
        }
        println!(
            "PE 0: context B's quiet returned with {a_in_flight} of context A's operations in flight{}",
            if network { " (PE 1 stopped)" } else { "" }
        );
    }
    shmem.barrier_all().or_die("barrier");
    if me == 1 {
        let got = data.to_vec();
        for i in 0..count {
            check_slice(format!("context A's block {i}"), &block(i), &got[i * size..(i + 1) * size]);
        }
        println!("PE 1: context A's {count} blocks arrived");
    }
    if me == 2 {
        check_eq("context B's word", 42, word.read(0));
    }
    println!("PE {me}: contexts completed independently");
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// locks

fn lock_count(args: &[String]) {
    let iters: u64 = arg(args, 0, 200);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let last = n - 1;
    let lock = SymLock::new(&shmem).or_die("SymLock::new");
    let raw_lock = shmem.alloc(0i64).or_die("alloc");
    let a = shmem.alloc(0u64).or_die("alloc");
    let b = shmem.alloc(0u64).or_die("alloc");
    for i in 0..iters {
        {
            let _held = lock.lock().or_die("shmem_set_lock");
            // Read, yield, write: without mutual exclusion increments would be lost.
            let v = a.get_value(0).or_die("shmem_g");
            if i % 8 == 0 {
                std::thread::yield_now();
            }
            a.put_value(v + 1, 0).or_die("shmem_p");
        }
        // SAFETY: raw_lock is a symmetric long used only as a lock.
        unsafe { oxshmem::lock::set_lock(raw_lock.as_ptr()) }.or_die("raw shmem_set_lock");
        let v = b.get_value(last).or_die("shmem_g");
        b.put_value(v + 2, last).or_die("shmem_p");
        // SAFETY: this PE holds the lock.
        unsafe { oxshmem::lock::clear_lock(raw_lock.as_ptr()) }.or_die("raw shmem_clear_lock");
    }
    shmem.barrier_all().or_die("barrier");
    let total = n as u64 * iters;
    if me == 0 {
        check_eq(format!("counter on PE 0 after {n} PEs x {iters} locked increments"), total, a.value());
    }
    if me == last {
        check_eq(format!("counter on PE {last} after raw-locked increments"), 2 * total, b.value());
    }
    println!("PE {me}: locked counters exact");
    finish(shmem);
}

fn lock_fair(args: &[String]) {
    let k: usize = arg(args, 0, 5);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n <= 64, "lock-fair keeps waiters in a 64-bit mask");
    // The lock through the C-style routines on a symmetric long, so that its words can be
    // read: each PE's copy names the PE that queued behind it (bits 24-47, PE + 1; see
    // oxshmem::lock), which is how the holder sees who waits, with no clock involved.
    let word = shmem.alloc_slice(1, 0i64).or_die("alloc");
    let l = word.as_ptr();
    // On PE 0: how often each PE has had the lock, and the log.
    let done = shmem.alloc_slice(n, 0u64).or_die("alloc");
    let log_pe = shmem.alloc_slice(n * k, u64::MAX).or_die("alloc");
    let log_waiting = shmem.alloc_slice(n * k, 0u64).or_die("alloc");
    let len = shmem.alloc(0u64).or_die("alloc");
    // The PEs queued behind this one (which holds the lock), in the lock's own links.
    let queued_behind = || {
        let (mut set, mut at) = (0u64, me);
        loop {
            let next = (word.atomic_fetch(0, at).or_die("fetch lock word") as u64 >> 24) & 0xff_ffff;
            if next == 0 || next as usize > n {
                return set;
            }
            at = next as usize - 1;
            check(set & 1 << at == 0 && at != me, format!("the lock's queue loops at PE {at}"));
            set |= 1 << at;
        }
    };
    for round in 0..k {
        // SAFETY: `word` is a symmetric long used only as this lock.
        unsafe { oxshmem::lock::set_lock(l) }.or_die("shmem_set_lock");
        // Every other PE with turns left asks again while this PE holds the lock (`done`
        // changes only under it): wait until each has queued, as the links show. Then first
        // come, first served means each gets the lock before this PE gets it again.
        let left = (0..n)
            .filter(|&p| p != me && done.atomic_fetch(p, 0).or_die("fetch") < k as u64)
            .fold(0u64, |m, p| m | 1 << p);
        let waiting = loop {
            let q = queued_behind();
            if q & left == left {
                break q;
            }
            std::thread::yield_now();
        };
        let i = len.get_value(0).or_die("shmem_g");
        log_pe.p(i as usize, me as u64, 0).or_die("shmem_p");
        log_waiting.p(i as usize, waiting, 0).or_die("shmem_p");
        len.put_value(i + 1, 0).or_die("shmem_p");
        done.atomic_set(me, round as u64 + 1, 0).or_die("count");
        // SAFETY: as above; this PE holds the lock.
        unsafe { oxshmem::lock::clear_lock(l) }.or_die("shmem_clear_lock");
    }
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        let log = log_pe.to_vec();
        let waiting = log_waiting.to_vec();
        check_eq("acquisitions logged", (n * k) as u64, len.value());
        for p in 0..n {
            check_eq(format!("times PE {p} got the lock"), k, log.iter().filter(|&&x| x == p as u64).count());
        }
        // First come, first served: a PE that was waiting when PE a took the lock gets it
        // before a gets it again.
        for (i, &a) in log.iter().enumerate() {
            let next_a = (i + 1..log.len()).find(|&j| log[j] == a).unwrap_or(log.len());
            for b in (0..n as u64).filter(|&b| waiting[i] & (1 << b) != 0) {
                check(
                    log[i + 1..next_a].contains(&b),
                    format!(
                        "PE {a} got the lock at turns {i} and {next_a} while PE {b} waited \
                         from turn {i} on; order: {log:?}"
                    ),
                );
            }
        }
        println!("lock order: {log:?}");
    }
    println!("PE {me}: lock taken {k} times in turn");
    finish(shmem);
}

fn lock_test(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let lock = shmem.alloc(0i64).or_die("alloc");
    let l = lock.as_ptr();
    // SAFETY: `lock` is a symmetric long used only as a lock.
    let test = || unsafe { oxshmem::lock::test_lock(l) }.or_die("shmem_test_lock");
    // SAFETY: as above.
    let set = || unsafe { oxshmem::lock::set_lock(l) }.or_die("shmem_set_lock");
    // SAFETY: as above; every call below is made while this PE holds the lock.
    let clear = || unsafe { oxshmem::lock::clear_lock(l) }.or_die("shmem_clear_lock");
    // The last PE holds the lock (taken with set_lock); nobody else can take it.
    let holder = n - 1;
    if me == holder {
        set();
    }
    shmem.barrier_all().or_die("barrier");
    if me != holder {
        for _ in 0..20 {
            check(!test(), format!("shmem_test_lock succeeded while PE {holder} holds the lock"));
        }
    }
    shmem.barrier_all().or_die("barrier");
    if me == holder {
        clear();
    }
    shmem.barrier_all().or_die("barrier");
    // Free again: PE 0 takes it with test_lock; then the others fail.
    if me == 0 {
        check(test(), "shmem_test_lock failed on a free lock");
    }
    shmem.barrier_all().or_die("barrier");
    if me != 0 {
        check(!test(), "shmem_test_lock succeeded while PE 0 holds it");
    }
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        clear();
    }
    shmem.barrier_all().or_die("barrier");
    // Everyone takes it with test_lock (spinning until it is free), then with set_lock.
    let mut failed = 0u64;
    while !test() {
        failed += 1;
        std::thread::yield_now();
    }
    clear();
    set();
    clear();
    // The safe form, uncontended: a guard while free.
    let sym = SymLock::new(&shmem).or_die("SymLock::new");
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        let g = sym.try_lock().or_die("SymLock::try_lock");
        check(g.is_some(), "SymLock::try_lock failed on a free lock");
    }
    println!("PE {me}: test_lock ok ({failed} failed tries while others held it)");
    finish(shmem);
}

/// `SymLock::try_lock` while another PE holds the lock must return `None`.
fn try_lock_held(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n >= 2, "try-lock-held needs 2 PEs");
    let lock = SymLock::new(&shmem).or_die("SymLock::new");
    let held = if me == 0 { Some(lock.lock().or_die("shmem_set_lock")) } else { None };
    shmem.barrier_all().or_die("barrier");
    if me == 1 {
        check(
            lock.try_lock().or_die("SymLock::try_lock").is_none(),
            "SymLock::try_lock succeeded while PE 0 holds the lock",
        );
    }
    shmem.barrier_all().or_die("barrier");
    drop(held);
    println!("PE {me}: try_lock on a held lock ok");
    finish(shmem);
}

fn lock_bad(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    let mut on_stack = 0i64;
    let heap = shmem.alloc_slice(2, 0i64).or_die("alloc");
    // SAFETY: the runtime checks the address before any access.
    let r = unsafe { oxshmem::lock::set_lock(&mut on_stack) };
    let e = expect_err("set_lock on a stack variable", r, &["lock 0x", "is not symmetric"]);
    check(matches!(e.kind, ErrorKind::NotSymmetric { .. }), format!("expected NotSymmetric, got {:?}", e.kind));
    // SAFETY: as above.
    let r = unsafe { oxshmem::lock::test_lock(&mut on_stack) };
    expect_err("test_lock on a stack variable", r, &["is not symmetric"]);
    // SAFETY: as above.
    let r = unsafe { oxshmem::lock::clear_lock(&mut on_stack) };
    expect_err("clear_lock on a stack variable", r, &["is not symmetric"]);
    let odd = heap.as_ptr().cast::<u8>().wrapping_add(4).cast::<i64>();
    // SAFETY: as above.
    let r = unsafe { oxshmem::lock::set_lock(odd) };
    let e = expect_err("set_lock on a misaligned address", r, &["is not aligned to 8 bytes"]);
    check(matches!(e.kind, ErrorKind::Misaligned { .. }), format!("expected Misaligned, got {:?}", e.kind));
    // A refused lock call leaves nothing held: a real lock still works, from every PE.
    let lock = SymLock::new(&shmem).or_die("SymLock::new");
    drop(lock.lock().or_die("shmem_set_lock after errors"));
    // SAFETY: heap[0] is a symmetric long.
    unsafe { oxshmem::lock::set_lock(heap.as_ptr()) }.or_die("set_lock on a symmetric long");
    // SAFETY: held.
    unsafe { oxshmem::lock::clear_lock(heap.as_ptr()) }.or_die("clear_lock");
    println!("PE {me}: bad locks refused");
    finish(shmem);
}

fn lock_clear_unheld(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let locks = shmem.alloc_slice(2, 0i64).or_die("alloc");
    let (lock, other) = (locks.as_ptr(), locks.as_ptr().wrapping_add(1));
    let addr = format!("{:#x}", lock as usize);
    let not_held = |label: &str, r: oxshmem::Result<()>| {
        let e = expect_err(label, r, &["shmem_clear_lock", &addr, "not held by this PE"]);
        check(
            matches!(e.kind, ErrorKind::InvalidArgument(_)),
            format!("{label}: expected InvalidArgument, got {:?}", e.kind),
        );
    };
    // SAFETY: a symmetric long used only through the lock routines.
    not_held("clear_lock of a lock never taken", unsafe { oxshmem::lock::clear_lock(lock) });
    // Held by the last PE: clearing it from another PE is refused, and the holder keeps it.
    if me == n - 1 {
        // SAFETY: as above.
        unsafe { oxshmem::lock::set_lock(lock) }.or_die("set_lock on the last PE");
    }
    shmem.barrier_all().or_die("barrier");
    if me != n - 1 {
        // SAFETY: as above.
        not_held("clear_lock of a lock another PE holds", unsafe { oxshmem::lock::clear_lock(lock) });
        // SAFETY: as above.
        check_eq(
            "test_lock while the last PE holds it",
            false,
            unsafe { oxshmem::lock::test_lock(lock) }.or_die("test_lock"),
        );
    }
    shmem.barrier_all().or_die("barrier");
    if me == n - 1 {
        // SAFETY: held by this PE.
        unsafe { oxshmem::lock::clear_lock(lock) }.or_die("clear_lock by its holder");
        // SAFETY: as above.
        not_held("clear_lock twice", unsafe { oxshmem::lock::clear_lock(lock) });
    }
    // Holding one lock does not make another clearable.
    // SAFETY: as above.
    unsafe { oxshmem::lock::set_lock(other) }.or_die("set_lock(other)");
    // SAFETY: as above.
    not_held("clear_lock of a lock while holding another", unsafe { oxshmem::lock::clear_lock(lock) });
    // SAFETY: held.
    unsafe { oxshmem::lock::clear_lock(other) }.or_die("clear_lock(other)");
    // The refusals left the lock working for everyone: a count under it is exact.
    let count = shmem.alloc(0u64).or_die("alloc");
    for _ in 0..20 {
        // SAFETY: as above.
        unsafe { oxshmem::lock::set_lock(lock) }.or_die("set_lock");
        let v = count.get_value(0).or_die("get");
        count.put_value(v + 1, 0).or_die("put");
        // SAFETY: held.
        unsafe { oxshmem::lock::clear_lock(lock) }.or_die("clear_lock");
    }
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        check_eq("count under the lock after the refusals", 20 * n as u64, count.value());
    }
    println!("PE {me}: clear_lock of a lock not held refused");
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// threads

fn threads(args: &[String]) {
    let nthreads: usize = arg(args, 0, 4);
    let iters: u64 = arg(args, 1, 500);
    let shmem = init_multiple();
    check_eq("shmem_query_thread", ThreadLevel::Multiple, shmem.query_thread().or_die("shmem_query_thread"));
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    // On the right neighbour: one cell per (my thread), written only by that thread.
    let cells = shmem.alloc_slice(n * nthreads, 0u64).or_die("alloc");
    let on_zero = shmem.alloc(0u64).or_die("alloc");
    let per_thread = shmem.alloc_slice(nthreads, 0u64).or_die("alloc");
    let locked = shmem.alloc(0u64).or_die("alloc");
    let lock = SymLock::new(&shmem).or_die("SymLock::new");
    let lock_every: u64 = 8;
    std::thread::scope(|s| {
        for t in 0..nthreads {
            let (cells, on_zero, per_thread, locked, lock) = (&cells, &on_zero, &per_thread, &locked, &lock);
            s.spawn(move || {
                let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE).or_die("ctx_create in a thread");
                let cell = me * nthreads + t;
                for i in 0..iters {
                    let v = ((me as u64) << 48) | ((t as u64) << 32) | i;
                    cells.put(cell, &[v], right).or_die("shmem_put from a thread");
                    let mut back = [0u64];
                    cells.get(cell, &mut back, right).or_die("shmem_get from a thread");
                    check_eq(format!("thread {t}: get of what it put"), v, back[0]);
                    on_zero.fetch_add(1, 0).or_die("shmem_atomic_fetch_add from a thread");
                    ctx.atomic_add(per_thread, t, 1, right).or_die("ctx atomic_add from a thread");
                    ctx.p(cells, cell, v, right).or_die("ctx p from a thread");
                    if i % 16 == 0 {
                        shmem.quiet().or_die("shmem_quiet from a thread");
                        ctx.quiet().or_die("ctx quiet from a thread");
                    }
                    if i % lock_every == 0 {
                        let _held = lock.lock().or_die("shmem_set_lock from a thread");
                        let c = locked.get_value(0).or_die("shmem_g");
                        locked.put_value(c + 1, 0).or_die("shmem_p");
                    }
                }
                ctx.quiet().or_die("ctx quiet");
                ctx.destroy().or_die("ctx destroy");
            });
        }
    });
    shmem.barrier_all().or_die("barrier");
    let per_pe = nthreads as u64 * iters;
    if me == 0 {
        check_eq("fetch_adds from every thread of every PE", n as u64 * per_pe, on_zero.value());
        check_eq(
            "locked increments from every thread of every PE",
            n as u64 * nthreads as u64 * iters.div_ceil(lock_every),
            locked.value(),
        );
    }
    check_eq(format!("context adds from each thread of PE {left}"), vec![iters; nthreads], per_thread.to_vec());
    for t in 0..nthreads {
        check_eq(
            format!("last value from thread {t} of PE {left}"),
            ((left as u64) << 48) | ((t as u64) << 32) | (iters - 1),
            cells.read(left * nthreads + t),
        );
    }
    println!("PE {me}: {nthreads} threads x {iters} ok");
    finish(shmem);
}
