//! PE program for collectives that PEs call out of order, and for the hang report:
//! `pe-mismatch <case> [ODD]`.
//!
//! Mismatch cases: PE `ODD` (default 0) calls one collective on the world team while every
//! other PE calls another, as the same collective of the team's sequence. Every PE must get an
//! error — never a hang — and prints `ERR <case>: <error>`; a later collective on the world
//! team (`shmem_finalize` included) must fail at once too (`ERR <case> after: ...`). The PEs
//! then meet on a spare team, split before the mismatch (whose streams it does not touch), so
//! that none exits before every PE has printed, and exit with status 3 (the launcher then ends
//! the job with it).
//! - `barrier-vs-reduce`: `ODD` in `shmem_barrier_all`, the others in a sum reduction of
//!   `i64` (`shmem_long_sum_reduce`).
//! - `skip-reduce`: `ODD` skips a reduction that the others make before a barrier, so its
//!   barrier meets their reduction.
//! - `extra-barrier`: `ODD` calls one more `shmem_barrier_all` at the end, while the others
//!   call `shmem_finalize`.
//! - `sync-vs-barrier`: `ODD` in `shmem_sync_all`, the others in `shmem_barrier_all`.
//!
//! Hang cases, which the launcher's `--timeout` ends (the test reads its hang report):
//! - `hang`: PE 1 waits (`shmem_wait_until`) on a variable nobody sets; every other PE waits in
//!   `shmem_barrier_all`, which PE 1 never enters.
//! - `hang-quit`: the same, and PE 1 sends `SIGQUIT` to its launcher once PE 0 is about to
//!   enter its barrier, so that the launcher reports while the job hangs, then goes on.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use oxshmem::{Cmp, ErrorKind, Shmem, SymSlice, Team, raw};
use oxshmem_tests::pe::{OrDie, arg, check, dispatch, exit_now, expect_err, init};

fn main() {
    dispatch(
        "pe-mismatch",
        &[
            ("barrier-vs-reduce", |a| mismatch("barrier-vs-reduce", a)),
            ("skip-reduce", |a| mismatch("skip-reduce", a)),
            ("extra-barrier", |a| mismatch("extra-barrier", a)),
            ("sync-vs-barrier", |a| mismatch("sync-vs-barrier", a)),
            ("hang", |_| hang(false)),
            ("hang-quit", |_| hang(true)),
        ],
    );
}

/// Checks that `r` failed with a collective mismatch, and prints it.
fn expect_mismatch<T: std::fmt::Debug>(label: &str, r: oxshmem::Result<T>) {
    let e = expect_err(label, r, &["collective mismatch on the world team: "]);
    check(
        matches!(e.kind, ErrorKind::CollectiveSequence(_)),
        format!("{label}: expected CollectiveSequence, got {e:?}"),
    );
}

fn mismatch(case: &str, args: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let odd: usize = arg(args, 0, 0);
    check(n >= 2 && odd < n, format!("{case} needs 2 PEs or more and ODD < {n}"));
    let world = shmem.team_world();
    // The spare team: another slot, so that the meeting at the end does not depend on the
    // world team's streams.
    let spare = world.split_strided(0, 1, n, Default::default()).or_die("split").expect("every PE is in it");
    let src: SymSlice<i64> = shmem.alloc_slice(4, me as i64 + 1).or_die("alloc");
    let dst: SymSlice<i64> = shmem.alloc_slice(4, 0).or_die("alloc");
    shmem.barrier_all().or_die("barrier before the case");
    let reduce = |world: &Team| world.sum_reduce(&dst, &src, 4);
    match (case, me == odd) {
        ("barrier-vs-reduce", true) => expect_mismatch(case, shmem.barrier_all()),
        ("barrier-vs-reduce", false) => expect_mismatch(case, reduce(&world)),
        ("skip-reduce", true) => expect_mismatch(case, shmem.barrier_all()),
        ("skip-reduce", false) => {
            expect_mismatch(case, reduce(&world));
            expect_mismatch(&format!("{case} after"), shmem.barrier_all());
        }
        ("extra-barrier", true) => expect_mismatch(case, shmem.barrier_all()),
        ("extra-barrier", false) => {}
        ("sync-vs-barrier", true) => expect_mismatch(case, shmem.sync_all()),
        ("sync-vs-barrier", false) => expect_mismatch(case, shmem.barrier_all()),
        _ => unreachable!("dispatch only passes known cases"),
    }
    // shmem_finalize is collective: after the mismatch it must fail at once, not wait.
    let label = if case == "extra-barrier" && me != odd { case.to_string() } else { format!("{case} finalize") };
    let r = oxshmem::raw::finalize();
    expect_mismatch(&label, r);
    if case == "extra-barrier" && me != odd {
        // Their finalize was the mismatch: the next call is the one refused at once.
        expect_mismatch(&format!("{case} after"), shmem.barrier_all());
    }
    spare.sync().or_die("meeting on the spare team");
    println!("PE {me}: {case} failed everywhere, nothing hung");
    // Nobody ends the job (which the first exit does) before every PE has said so.
    spare.sync().or_die("second meeting on the spare team");
    exit_now(3);
}

fn hang(quit: bool) {
    let shmem = init();
    let me = shmem.my_pe();
    let flag: SymSlice<i64> = shmem.alloc_slice(2, 0).or_die("alloc");
    shmem.barrier_all().or_die("barrier before the hang");
    if me == 1 {
        if quit {
            // Element 1: PE 0 sets it just before it enters its barrier.
            let ready = flag.as_ptr() as usize + size_of::<i64>();
            std::thread::spawn(move || {
                // SAFETY: an aligned i64 of the symmetric heap, alive until the process ends.
                let ready = unsafe { AtomicI64::from_ptr(ready as *mut i64) };
                while ready.load(Ordering::Acquire) == 0 {
                    std::thread::sleep(Duration::from_millis(10));
                }
                // Time for PE 0 to get from the put into its barrier's wait.
                std::thread::sleep(Duration::from_millis(500));
                // SAFETY: kill(2) on our own launcher, which handles SIGQUIT.
                unsafe { libc::kill(libc::getppid(), libc::SIGQUIT) };
            });
        }
        println!("PE 1: waiting for ever");
        // SAFETY: element 0 of a live symmetric array of i64.
        unsafe { raw::wait_until(flag.as_ptr(), Cmp::Eq, 1) }.or_die("wait_until");
    } else {
        if me == 0 {
            flag.p(1, 1, 1).or_die("put to PE 1");
            raw::quiet().or_die("quiet");
        }
        println!("PE {me}: in the barrier");
        shmem.barrier_all().or_die("barrier");
    }
    wrong(&shmem)
}

fn wrong(_: &Shmem) -> ! {
    oxshmem_tests::pe::fail("the hang ended")
}
