//! Teams (OpenSHMEM 1.5 §9.4), across real jobs of 1, 2, 3, 4 and 8 PEs.
//!
//! The PE program is `pe-team`: it derives each team's members from the split arguments alone
//! and checks membership, team-relative numbering and `translate_pe` in every direction, then
//! runs a collective on the team. Failures (mismatched or oversized splits, too many teams, a
//! destroyed team) must reach every PE as an error, never as a hang.

use oxshmem_tests::{JobResult, assert_each_pe_says, job_ok};

const PE_TEAM: &str = env!("CARGO_BIN_EXE_pe-team");

/// The PE counts of this area: odd counts exercise uneven splits.
const COUNTS: [usize; 5] = [1, 2, 3, 4, 8];

/// Asserts that every PE printed `ERR <label>: PE <pe>: ...` exactly once.
#[track_caller]
fn each_pe_erred(r: &JobResult, n: usize, label: &str) {
    for pe in 0..n {
        let want = format!("ERR {label}: PE {pe}: ");
        let count = r.stdout.lines().filter(|l| l.starts_with(&want)).count();
        assert_eq!(count, 1, "expected one line {want:?}\n{}", r.report());
    }
}

/// `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED`: sizes, numbers, members, translation between
/// them, a refused destroy.
#[test]
fn world_and_shared_teams() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["props"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: world and shared ok"));
        each_pe_erred(&r, n, "destroy SHMEM_TEAM_WORLD");
        each_pe_erred(&r, n, "destroy SHMEM_TEAM_SHARED");
    }
}

/// `split_strided` with strides 1, 2, 3, starts above 0, odd and single-PE sizes.
#[test]
fn split_strided_membership_and_numbering() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["strided"]);
        assert_eq!(
            r.stdout_lines_with("PE ").iter().filter(|l| l.ends_with("strided splits ok")).count(),
            n,
            "{}",
            r.report()
        );
        // Each PE 0..n said so once, after at least one split (one PE has one: the world).
        for pe in 0..n {
            let head = format!("PE {pe}: ");
            let said: Vec<usize> = r
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix(&head)?.strip_suffix(" strided splits ok")?.parse().ok())
                .collect();
            assert!(said.len() == 1 && said[0] >= 1, "PE {pe}: splits checked {said:?}\n{}", r.report());
        }
    }
}

/// A split of a split of a split: each level's arguments and numbers are relative to its
/// parent, and translation reaches every enclosing level.
#[test]
fn split_of_a_split_is_relative_to_its_parent() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["nested"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: nested splits ok"));
    }
    // On 8 PEs the chain is world → 1..8 → parent indices 1,3,5 → indices 0,2: world 2 and 6.
    let r = job_ok(8, PE_TEAM, &["nested"]);
    assert!(
        r.stdout.contains("PE 6: level 3: split_strided(start 0, stride 2, size 2): members [2, 6]"),
        "{}",
        r.report()
    );
}

/// `split_2d` with 1, 2 and 3 columns (8 PEs in 3 columns: a short last row) and more columns
/// than PEs, on the world and on a stride-2 team; the configs reach the new teams.
#[test]
fn split_2d_rows_and_columns() {
    for xrange in ["1", "2", "3", "10"] {
        for n in COUNTS {
            let r = job_ok(n, PE_TEAM, &["split-2d", xrange]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: split_2d ok"));
        }
    }
    let r = job_ok(8, PE_TEAM, &["split-2d", "3"]);
    assert!(r.stdout.contains("PE 7: split_2d(xrange 3) of the world team: x [6, 7] y [1, 4, 7]"), "{}", r.report());
    assert!(r.stdout.contains("PE 6: split_2d(xrange 3) of the evens team: x [6] y [0, 6]"), "{}", r.report());
}

/// `get_config` returns the `num_contexts` a team was made with.
#[test]
fn team_config_is_kept() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["config"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: team configs ok"));
    }
}

/// Teams created and destroyed far more often than there are slots (one at a time, and in
/// batches of 24 live teams destroyed out of order); every recycled team's collectives work.
#[test]
fn destroyed_team_slots_are_recycled() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["recycle", "100"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: created and destroyed 196 teams"));
    }
}

/// Every operation on a handle of a destroyed team is an error on every PE.
#[test]
fn destroyed_team_cannot_be_used() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["destroyed"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: destroyed team refused"));
        for label in ["sync", "broadcast", "sum_reduce", "split_strided", "create_ctx"] {
            each_pe_erred(&r, n, label);
        }
    }
}

/// Split arguments that differ between PEs: `CollectiveMismatch` on every PE, no hang, and
/// the next split works.
#[test]
fn mismatched_split_arguments_fail_on_every_pe() {
    for n in [2, 3, 4, 8] {
        let r = job_ok(n, PE_TEAM, &["mismatch"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: mismatched splits refused"));
        for label in [
            "split_strided with another size",
            "split_strided with another start",
            "split_strided with another stride",
            "split_strided with another num_contexts",
            "split_2d with another xrange",
            "split of a split with another size",
        ] {
            each_pe_erred(&r, n, label);
        }
    }
}

/// Splits that reach past the parent team are refused on every PE.
#[test]
fn split_past_the_parent_fails_on_every_pe() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["too-big"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: oversized splits refused"));
        each_pe_erred(&r, n, "split_strided one past the end");
        each_pe_erred(&r, n, "split_strided size 0");
    }
}

/// More live teams than slots: a clear error on every PE; destroying one frees its slot.
#[test]
fn too_many_live_teams_is_a_clear_error() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["too-many"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 61 live teams, then a clear error"));
        each_pe_erred(&r, n, "too many teams");
    }
}

/// Negative strides (OpenSHMEM 1.6, as Sandia OpenSHMEM does): team PE `i` is parent PE
/// `start + i*stride`; membership, numbering, translation and collectives follow that order,
/// splits of a reversed team are relative to it, and leaving the parent is refused everywhere.
#[test]
fn split_strided_with_negative_strides() {
    for n in COUNTS {
        let r = job_ok(n, PE_TEAM, &["negative"]);
        for pe in 0..n {
            assert!(
                r.stdout
                    .lines()
                    .any(|l| l.starts_with(&format!("PE {pe}: ")) && l.ends_with("negative-stride splits ok")),
                "PE {pe} did not finish\n{}",
                r.report()
            );
        }
        for label in ["negative one past the start", "negative from 0 with 2 PEs", "negative huge stride"] {
            each_pe_erred(&r, n, &format!("split_strided {label}"));
        }
    }
}

/// Only the options selected by `config_mask` apply: with mask 0 the team has the defaults,
/// whatever `config` holds (and PEs may disagree on the ignored values).
#[test]
fn config_applies_only_under_its_mask() {
    for n in [1, 2, 3] {
        let r = job_ok(n, PE_TEAM, &["config-mask"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: config masks ok"));
    }
}
