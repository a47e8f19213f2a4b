//! Communication contexts (OpenSHMEM 1.5 §9.5), across real jobs of 1, 2, 3, 4 and 8 PEs.
//!
//! The PE program is `pe-sync`. A context belongs to a team and its operations take that
//! team's PE numbers: a context on a stride-2 team that puts to team PE 1 reaches world PE 2.

use oxshmem_tests::{assert_each_pe_says, assert_stdout_has, job_ok};

const PE_SYNC: &str = env!("CARGO_BIN_EXE_pe-sync");

const COUNTS: [usize; 5] = [1, 2, 3, 4, 8];

/// `ctx_create` with each option and their combinations; an unknown option bit is refused.
#[test]
fn create_with_each_option() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["ctx-options"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: context options ok"));
        assert_stdout_has(
            &r,
            "ERR ctx_create with an unknown option: PE 0: shmem_team_create_ctx: invalid argument: unknown context options 0x20",
        );
    }
}

/// Every operation family (put, put_nbi, get, get_nbi, p, g, iput, iget, the atomics and
/// their `_nbi` forms, put_signal and put_signal_nbi, quiet, fence) on a world context.
#[test]
fn every_operation_on_a_world_context() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["ctx-ops", "world"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: context operations ok on team world as team PE {pe}"));
    }
}

/// The same on contexts of split teams: PE numbers are the team's (on 8 PEs, team `1:2:3` is
/// world PEs 1, 3, 5; team PE 1 is world PE 3).
#[test]
fn team_context_uses_team_pe_numbers() {
    for (n, spec, members) in [
        (2, "1:1:1", &[1][..]),
        (3, "0:2:2", &[0, 2]),
        (4, "0:2:2", &[0, 2]),
        (8, "1:2:3", &[1, 3, 5]),
        (8, "0:3:3", &[0, 3, 6]),
    ] {
        let r = job_ok(n, PE_SYNC, &["ctx-ops", spec]);
        for (t, pe) in members.iter().enumerate() {
            assert_stdout_has(&r, &format!("PE {pe}: context operations ok on team {spec} as team PE {t}"));
        }
        let tn = members.len();
        assert_stdout_has(
            &r,
            &format!("ERR ctx p to team PE n: PE {}: shmem_ctx_p: PE {tn} is out of range (0..{tn})", members[0]),
        );
    }
}

/// A destroyed context, and a context whose team was destroyed, are refused.
#[test]
fn destroyed_context_is_refused() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["ctx-destroyed"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: destroyed contexts refused"));
        assert_stdout_has(
            &r,
            "ERR put on a destroyed context: PE 0: shmem_ctx_put: invalid argument: context was destroyed",
        );
    }
}

/// A `SHMEM_CTX_PRIVATE` context used by another thread is refused; its creator and other
/// threads' use of a shared context work.
#[test]
fn private_context_is_refused_on_another_thread() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["ctx-private"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: private contexts stay private"));
    }
}

/// Contexts complete independently: on PE 0, thread A's puts to PE 1 on its context are in
/// flight (over the network PE 1 is stopped meanwhile) while thread B's context quiets and
/// returns; after A's own quiet its data is at PE 1. Over shared memory every put is complete
/// on return, so only the data is checked; `ofi.rs` runs it over the network.
#[test]
fn contexts_complete_independently() {
    for n in [3, 4] {
        let r = job_ok(n, PE_SYNC, &["ctx-independent", "16", "1024"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: contexts completed independently"));
        assert_stdout_has(&r, "PE 1: context A's 16 blocks arrived");
    }
}
