//! Point-to-point synchronization, across real jobs of 1, 2, 4 and 8 PEs (OpenSHMEM 1.5 §9.10).
//!
//! The PE program is `pe-wait`: each PE waits on its own variables and its left neighbour
//! writes them after a ready handshake, so every wait is ended by a store from another PE (in a
//! one-PE job, from a second thread).

use oxshmem_tests::{PE_COUNTS, assert_each_pe_says, job_ok};

const PE_WAIT: &str = env!("CARGO_BIN_EXE_pe-wait");

/// wait_until with Eq, Ne, Gt, Ge, Lt and Le on every 16-, 32- and 64-bit type, woken by a
/// remote put, p or putmem; test is false before the store and true after it.
#[test]
fn wait_until_each_comparison_every_type() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_WAIT, &["cmp"]);
        // 8 types: 7 cases each, plus 3 more for each of the 4 signed types.
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 68 wait_until rounds ok"));
    }
}

/// wait_until_all/any/some, their `_vector` forms and test_all/any/some, with and without a
/// status mask, on every wait type.
#[test]
fn wait_all_any_some_and_vectors() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_WAIT, &["vector"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 48 vector wait rounds ok"));
    }
}
