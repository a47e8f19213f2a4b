//! Team collectives (OpenSHMEM 1.5 §9.9), across real jobs of 1, 2, 3, 4 and 8 PEs, on the
//! world and on teams split from it with strides 2 and 3, odd sizes and starts above 0.
//!
//! The PE program is `pe-coll`: every member computes each expected result from the world PE
//! numbers of the members alone, and checks that nothing past the end of a result was written.
//! Sizes cover both paths: payloads that ride in the checked exchange (a mailbox holds up to
//! 32 KiB) and the direct and chunked paths beyond it. Arguments that differ between members
//! must give every member an error — never a hang — and leave the team usable.

use std::time::Duration;

use oxshmem_tests::{Job, JobResult, assert_job_ok, job_ok};

const PE_COLL: &str = env!("CARGO_BIN_EXE_pe-coll");

/// The PE counts of this area: odd counts exercise uneven teams.
const COUNTS: [usize; 5] = [1, 2, 3, 4, 8];

/// The teams each case runs on for `n` PEs: the world, then `START:STRIDE:SIZE` splits.
fn teams(n: usize) -> Vec<&'static str> {
    match n {
        1 => vec!["world"],
        2 => vec!["world", "1:1:1"],
        3 => vec!["world", "0:2:2"],
        4 => vec!["world", "1:2:2", "0:3:2"],
        _ => vec!["world", "1:2:3", "0:3:3"],
    }
}

/// Members of team `spec` on `n` PEs.
fn members(spec: &str, n: usize) -> Vec<usize> {
    if spec == "world" {
        return (0..n).collect();
    }
    let f: Vec<usize> = spec.split(':').map(|x| x.parse().unwrap()).collect();
    (0..f[2]).map(|i| f[0] + i * f[1]).collect()
}

/// Runs `case` on every team of every PE count; each member must print `PE <pe>: <ok>`.
fn on_every_team(case: &str, extra: &[&str], ok: &str, min_team: usize) {
    let mut total = 0;
    for n in COUNTS {
        let mut ran = 0;
        for spec in teams(n) {
            let m = members(spec, n);
            if m.len() < min_team {
                continue;
            }
            let mut args = vec![case, spec];
            args.extend_from_slice(extra);
            let r = job_ok(n, PE_COLL, &args);
            for pe in &m {
                let want = format!("PE {pe}: {ok}");
                assert!(r.stdout.lines().any(|l| l == want), "team {spec}: expected {want:?}\n{}", r.report());
            }
            ran += 1;
        }
        // The size filter may leave out small teams, never every team of a PE count the
        // world of which is big enough.
        assert!(ran > 0 || n < min_team, "{case}: no team of {n} PEs was run");
        total += ran;
    }
    assert!(total > 0, "{case}: no team of at least {min_team} PEs at any PE count: nothing was run");
}

/// Asserts that each PE in `pes` printed `ERR <label>: PE <pe>: ...` containing `text`.
#[track_caller]
fn erred(r: &JobResult, pes: &[usize], label: &str, text: &str) {
    for pe in pes {
        let want = format!("ERR {label}: PE {pe}: ");
        assert!(
            r.stdout.lines().any(|l| l.starts_with(&want) && l.contains(text)),
            "expected a line {want:?} containing {text:?}\n{}",
            r.report()
        );
    }
}

/// Both barrier patterns (`OXSHMEM_BARRIER`), forced, on every team of 3, 4 and 8 PEs: the
/// automatic choice takes the central one where the job crowds its host (as the suite's bigger
/// jobs do on small machines) and dissemination elsewhere, so each is run here whatever the
/// machine. Team syncs in rounds (a value put before the sync is there after it), broadcasts
/// from every root, and collective allocation, whose barrier carries the size check.
#[test]
fn both_barrier_patterns_sync_every_team() {
    for pattern in ["dissemination", "central"] {
        for n in [3, 4, 8] {
            for spec in teams(n) {
                for (args, ok) in
                    [(vec!["sync", spec, "50"], "50 rounds of team sync ok"), (vec!["bcast", spec], "broadcast ok")]
                {
                    let env = [("OXSHMEM_BARRIER", pattern), ("OXSHMEM_LOG", "init=debug")];
                    let r = oxshmem_tests::run_job(n, PE_COLL, &args, &env);
                    assert_job_ok(&r);
                    // Every PE took the pattern asked for.
                    let central = pattern == "central";
                    for pe in 0..n {
                        assert!(
                            r.stderr.lines().any(|l| l.starts_with(&format!("PE {pe} "))
                                && l.contains(&format!("barrier pattern central={central}"))),
                            "{pattern}: PE {pe}'s barrier\n{}",
                            r.report()
                        );
                    }
                    for pe in members(spec, n) {
                        let want = format!("PE {pe}: {ok}");
                        assert!(
                            r.stdout.lines().any(|l| l == want),
                            "{pattern}, {n} PEs, team {spec}: expected {want:?}\n{}",
                            r.report()
                        );
                    }
                }
            }
        }
    }
}

/// `shmem_team_sync`: a value put (and quieted) before the sync is there after it.
#[test]
fn team_sync_orders_rounds() {
    on_every_team("sync", &["200"], "200 rounds of team sync ok", 1);
}

/// Broadcast from every root of 0, 1, 7, 1000 and 100 000 elements of 1, 6 and 8 bytes; the
/// root's destination is written too, nothing past `nelems` is; in place from the root.
#[test]
fn broadcast_from_every_root_small_and_large() {
    on_every_team("bcast", &[], "broadcast ok", 1);
}

/// fcollect of 0, 1, 7, 1000 and 20 000 elements per member, in team order.
#[test]
fn fcollect_concatenates_in_team_order() {
    on_every_team("fcollect", &[], "fcollect ok", 1);
}

/// collect with counts that differ between members (0 and more than a mailbox included);
/// the returned total and the layout are exact.
#[test]
fn collect_with_different_counts() {
    on_every_team("collect", &[], "collect ok", 1);
}

/// alltoall of 0, 1, 5 and ~36 KB per pair, of 3-, 4- and 8-byte elements.
#[test]
fn alltoall_exchanges_blocks() {
    on_every_team("alltoall", &[], "alltoall ok", 1);
}

/// alltoalls with strides (1,1), (2,1), (1,3) and (3,2): strided elements land where they
/// should and the gaps of the destination are not written.
#[test]
fn alltoalls_with_strides() {
    on_every_team("alltoalls", &[], "alltoalls ok", 1);
}

/// and/or/xor/max/min/sum/prod on i8, u8, i16, u16, i32, u32, i64, u64, isize and usize, with
/// 1, 100 and 20 000 elements, into another buffer and in place.
#[test]
fn integer_reductions_every_op() {
    on_every_team("reduce", &["int"], "int reductions ok", 1);
}

/// max/min/sum/prod on f32 and f64 with exactly representable results.
#[test]
fn float_reductions() {
    on_every_team("reduce", &["float"], "float reductions ok", 1);
}

/// sum/prod on `Complex<f32>` and `Complex<f64>` (Gaussian integers: exact products).
#[test]
fn complex_reductions() {
    on_every_team("reduce", &["complex"], "complex reductions ok", 1);
}

/// The named forms `and_reduce` … `prod_reduce`.
#[test]
fn named_reduction_methods() {
    on_every_team("reduce", &["named"], "named reductions ok", 1);
}

/// A reduction has one result: with inexact float sums every member must still get the same
/// bits.
#[test]
fn float_reduction_results_agree_between_pes() {
    on_every_team("reduce", &["agree"], "agree reductions ok", 2);
}

/// The pointer forms in `coll::api::raw` on `raw::malloc` memory, with their errors (a
/// negative root everywhere; a stack buffer on one member).
#[test]
fn raw_pointer_collectives() {
    on_every_team("raw", &[], "raw collectives ok", 1);
}

/// nelems, root, op, element type, kind or strides that differ between members:
/// `CollectiveMismatch` on every member, then a correct collective works.
#[test]
fn mismatched_arguments_fail_on_every_member() {
    on_every_team("mismatch", &[], "mismatched collectives refused", 2);
    let r = job_ok(3, PE_COLL, &["mismatch", "world"]);
    // Broadcast: the member that disagrees with the root fails; the root of a large one
    // too; the root of a small one says so at its next collective.
    erred(&r, &[2], "broadcast with another nelems", "collective arguments differ between PEs");
    assert!(r.stderr.contains("does not wait for the members"), "the root's late word\n{}", r.report());
    erred(&r, &[0, 2], "large broadcast with another nelems", "collective arguments differ between PEs");
    for label in [
        "reduction with another op",
        "reduction with another element type",
        "reduction with another count",
        "collect against fcollect",
        "alltoalls with another dst stride",
    ] {
        erred(&r, &[0, 1, 2], label, "collective arguments differ between PEs");
    }
}

/// One member's destination is too short: it gets `SizeMismatch`, every other member
/// `CollectiveMismatch`, and nothing hangs.
#[test]
fn short_destination_fails_on_every_member() {
    on_every_team("short-dest", &[], "short destinations refused", 1);
    let r = job_ok(4, PE_COLL, &["short-dest", "world"]);
    for label in ["fcollect of 4", "alltoall of 5000", "sum reduction of 4"] {
        erred(&r, &[3], label, "size mismatch: dest needs");
        erred(&r, &[0, 1, 2], label, "rejected its arguments");
    }
    // A broadcast's members hear only from the root: the root of a large one learns of it.
    for label in ["broadcast of 4", "broadcast of 5000"] {
        erred(&r, &[3], label, "size mismatch: dest needs");
    }
    erred(&r, &[0], "broadcast of 5000", "rejected its arguments");
}

/// Members that disagree on a broadcast's root must not wait for each other. With two PEs
/// each is a root: both return, and each says at its next collective that the other called
/// another broadcast. With more, the members that took another member for the root find the
/// root's message meant for them, fail, and tell every member, so each member fails in the
/// broadcast or the collective after it, and the job ends. The same when one member calls
/// alltoall where the others broadcast.
#[test]
fn broadcast_root_disagreement_never_hangs() {
    let r = job_ok(2, PE_COLL, &["bcast-root"]);
    for pe in 0..2 {
        for what in ["bcast OK", "sync OK"] {
            assert!(r.stdout.contains(&format!("PE {pe}: {what}")), "PE {pe}: {what}\n{}", r.report());
        }
    }
    assert_eq!(r.stderr.matches("does not wait for the members").count(), 2, "{}", r.report());
    for (n, args) in [
        (3, &["bcast-root"][..]),
        (4, &["bcast-root"]),
        (2, &["bcast-root", "kind"]),
        (3, &["bcast-root", "kind"]),
        (4, &["bcast-root", "kind"]),
    ] {
        let r = job_ok(n, PE_COLL, args);
        for pe in 0..n {
            let failed = r.stdout.lines().any(|l| l.starts_with(&format!("PE {pe}: ")) && l.contains(" ERR "));
            assert!(failed, "{n} PEs, {args:?}: PE {pe} failed in neither call\n{}", r.report());
        }
    }
}

fn collect_short(n: usize, args: &[&str]) -> JobResult {
    Job::new(n, PE_COLL).args(&[&["collect-short-dest"], args].concat()).timeout(Duration::from_secs(15)).run()
}

/// The same for `collect`, where only the short member can tell (its destination must hold
/// every member's count): the others must learn of it too.
#[test]
fn collect_short_destination_fails_on_every_member() {
    for n in [2, 3, 8] {
        for args in [&["4"][..], &["5000"], &["5000", "first"]] {
            let r = collect_short(n, args);
            assert_job_ok(&r);
        }
    }
}

/// Zero-length collectives whose buffers are NULL (or not symmetric: nothing is touched) are
/// silent successes in the team forms and in the deprecated active-set forms, on every team
/// and PE count; they stay matched between members, so real collectives around them work.
#[test]
fn zero_length_collectives_with_null_buffers() {
    for n in COUNTS {
        for team in teams(n) {
            let r = job_ok(n, PE_COLL, &["zero-null", team]);
            for pe in 0..n {
                let line = format!("PE {pe}: zero-length collectives with NULL buffers ok");
                assert!(r.stdout.lines().any(|l| l == line), "{line:?} missing\n{}", r.report());
            }
            assert!(!r.stderr.contains("not symmetric"), "a zero-length collective complained\n{}", r.report());
            // Only the deliberate collect into NULL with a non-zero total is an error.
            let errs: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("ERR ")).collect();
            let members = members(team, n).len();
            assert_eq!(errs.len(), usize::from(members > 1), "unexpected errors: {errs:?}\n{}", r.report());
        }
    }
}
