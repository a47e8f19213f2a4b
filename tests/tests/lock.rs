//! Distributed locks (OpenSHMEM 1.5 §9.10.3: `set_lock`, `test_lock`, `clear_lock`), across
//! real jobs of 1, 2, 3, 4 and 8 PEs.
//!
//! The PE program is `pe-sync`. Mutual exclusion shows as exact totals of non-atomic
//! read-modify-writes; fairness as the order in which PEs got the lock.

use std::time::Duration;

use oxshmem_tests::{Job, assert_each_pe_says, assert_job_ok, assert_stdout_has, job_ok};

const PE_SYNC: &str = env!("CARGO_BIN_EXE_pe-sync");

const COUNTS: [usize; 5] = [1, 2, 3, 4, 8];

/// Every PE increments counters on PE 0 and on the last PE with get + put under a lock
/// (`SymLock` and the raw routines): no increment is lost.
#[test]
fn lock_gives_mutual_exclusion() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["lock-count", "300"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: locked counters exact"));
    }
}

/// Every PE takes the lock 5 times: each gets it exactly 5 times, and a PE that was waiting
/// when another took the lock gets it before that PE gets it again (first come, first
/// served).
#[test]
fn lock_is_first_come_first_served() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["lock-fair", "5"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: lock taken 5 times in turn"));
        assert_stdout_has(&r, "lock order: ");
    }
}

/// `test_lock` fails while another PE holds the lock and succeeds once it is free.
#[test]
fn test_lock_fails_while_held() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["lock-test"]);
        for pe in 0..n {
            assert_stdout_has(&r, &format!("PE {pe}: test_lock ok ("));
        }
    }
}

/// The safe form: `SymLock::try_lock` on a lock another PE holds returns `None`.
#[test]
fn sym_lock_try_lock_fails_while_held() {
    let r = Job::new(2, PE_SYNC).args(&["try-lock-held"]).timeout(Duration::from_secs(10)).run();
    assert_job_ok(&r);
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: try_lock on a held lock ok"));
}

/// A lock that is not symmetric (a stack variable) or misaligned is an error.
#[test]
fn lock_on_a_bad_address_is_refused() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["lock-bad"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: bad locks refused"));
        assert_stdout_has(&r, "ERR set_lock on a stack variable: PE 0: shmem_set_lock: lock 0x");
    }
}

/// `clear_lock` on a lock this PE does not hold — never taken, held by another PE, cleared
/// twice — is an error naming the routine and the lock's address, at once (it used to wait
/// forever for a successor that would never come); the lock keeps working.
#[test]
fn clear_lock_of_a_lock_not_held_is_an_error() {
    for n in COUNTS {
        let r = Job::new(n, PE_SYNC).args(&["lock-clear-unheld"]).timeout(Duration::from_secs(30)).run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: clear_lock of a lock not held refused"));
        assert_stdout_has(&r, "ERR clear_lock of a lock never taken: PE 0: shmem_clear_lock: ");
    }
}
