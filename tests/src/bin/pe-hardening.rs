//! PE program for issue 32, "Hardening, round 2": `pe-hardening <case>`.
//!
//! Allocation mismatches (item 3): PE 0 makes a collective allocation call that the others do
//! not make; every PE must get an error — never a hang, with or without `SHMEM_DEBUG` — and
//! prints `ERR <case>: <error>`. The PEs then meet on a spare team, split before the mismatch,
//! so that none exits before every PE has printed, and exit with status 3.
//! - `malloc-vs-barrier`: PE 0 in `shmem_malloc(64)`, the others in `shmem_barrier_all`.
//! - `two-mallocs-vs-one`: every PE calls `shmem_malloc(64)`, then PE 0 calls it again while the
//!   others call `shmem_barrier_all`.
//! - `malloc-vs-split`: PE 0 in `shmem_malloc(64)`, the others in `shmem_team_split_strided`.

use oxshmem::raw;
use oxshmem_tests::pe::{OrDie, check, dispatch, exit_now, init};

fn main() {
    dispatch(
        "pe-hardening",
        &[
            ("malloc-vs-barrier", |_| alloc_mismatch("malloc-vs-barrier")),
            ("two-mallocs-vs-one", |_| alloc_mismatch("two-mallocs-vs-one")),
            ("malloc-vs-split", |_| alloc_mismatch("malloc-vs-split")),
        ],
    );
}

fn report<T: std::fmt::Debug>(case: &str, r: oxshmem::Result<T>) {
    match r {
        Ok(v) => oxshmem_tests::pe::fail(format!("{case}: expected an error, got Ok({v:?})")),
        Err(e) => println!("ERR {case}: {e}"),
    }
}

fn alloc_mismatch(case: &str) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n >= 2, format!("{case} needs 2 PEs or more"));
    let world = shmem.team_world();
    let spare = world.split_strided(0, 1, n, Default::default()).or_die("split").expect("every PE is in it");
    shmem.barrier_all().or_die("barrier before the case");
    match (case, me == 0) {
        ("malloc-vs-barrier", true) => report(case, raw::malloc(64)),
        ("malloc-vs-barrier", false) => report(case, shmem.barrier_all()),
        ("two-mallocs-vs-one", odd) => {
            let _first = raw::malloc(64).or_die("the first shmem_malloc(64), on every PE");
            if odd { report(case, raw::malloc(64)) } else { report(case, shmem.barrier_all()) }
        }
        ("malloc-vs-split", true) => report(case, raw::malloc(64)),
        ("malloc-vs-split", false) => {
            report(case, world.split_strided(0, 1, n, Default::default()).map(|t| t.is_some()))
        }
        _ => unreachable!("dispatch only passes known cases"),
    }
    spare.sync().or_die("meeting on the spare team");
    println!("PE {me}: {case} failed everywhere, nothing hung");
    spare.sync().or_die("second meeting on the spare team");
    exit_now(3);
}
