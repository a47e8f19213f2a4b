//! Prefix sums over teams (`Team::sum_inscan`/`sum_exscan`, OpenSHMEM 1.6's
//! `shmem_sum_inscan`/`_exscan`, Sandia OpenSHMEM's `shmemx_TYPE_sum_inscan`/`_exscan`), across
//! real jobs of 1, 2, 3, 4 and 8 PEs, on the world and on teams split from it with strides 2
//! and 3, odd sizes and starts above 0.
//!
//! The PE program is `pe-scan`: every member computes its expected prefix from the world PE
//! numbers of the members before it, and checks that nothing past the end was written. Sizes
//! cover both paths: scans that ride in the checked exchange and the pipelined chain of
//! mailbox-sized chunks. Arguments that differ between members give every member an error —
//! never a hang — and leave the team usable.

use oxshmem_tests::job_ok;

const PE_SCAN: &str = env!("CARGO_BIN_EXE_pe-scan");

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

/// Runs `case` on every team of every PE count in `counts`; each member must print
/// `PE <pe>: <ok>`.
fn on_every_team(case: &str, counts: &[usize], ok: &str) {
    for &n in counts {
        for spec in teams(n) {
            let r = job_ok(n, PE_SCAN, &[case, spec]);
            for pe in members(spec, n) {
                let want = format!("PE {pe}: {ok}");
                assert!(r.stdout.lines().any(|l| l == want), "{n} PEs, team {spec}: expected {want:?}\n{}", r.report());
            }
        }
    }
}

/// Inclusive and exclusive scans of u64, i32, f64 and Complex<f64>, of 0 to 100 000 elements,
/// into another buffer and in place: member i gets the sum over members 0..=i (0..i).
#[test]
fn scans_sum_the_members_before_in_team_order() {
    on_every_team("scan", &[1, 2, 3, 4, 8], "scan ok");
}

/// Scans whose kind or count differ between members fail on every member; the next works.
#[test]
fn scans_that_disagree_fail_on_every_member() {
    on_every_team("mismatch", &[1, 2, 3, 4], "mismatch ok");
}

/// The pointer form the C ABI calls; a member whose destination is not symmetric gets that
/// error and every other member a collective error, none hangs.
#[test]
fn the_pointer_form_checks_its_buffers_on_every_member() {
    on_every_team("raw", &[1, 2, 3, 4], "raw ok");
}
