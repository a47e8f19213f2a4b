//! Atomic memory operations, across real jobs of 1, 2, 4 and 8 PEs (OpenSHMEM 1.5 §9.7).
//!
//! The PE program is `pe-amo`. Uncontended cases check every fetched value against a local
//! model; contended cases check exact totals, unique tickets and bit masks.

use oxshmem_tests::{PE_COUNTS, assert_each_pe_says, assert_stdout_has, job_ok};

const PE_AMO: &str = env!("CARGO_BIN_EXE_pe-amo");

/// Every integer AMO (fetch, set, swap, compare_swap, fetch_inc/inc, fetch_add/add,
/// fetch_and/or/xor, and/or/xor, the `_nbi` fetching forms, the raw form) on i32, u32, i64,
/// u64, isize and usize.
#[test]
fn integer_amos_return_the_old_value() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_AMO, &["ops"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: integer AMOs ok"));
    }
}

/// fetch, set and swap (and their `_nbi` forms) on f32 and f64.
#[test]
fn float_fetch_set_swap() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_AMO, &["float"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: float AMOs ok"));
    }
}

/// All PEs hammer counters on PE 0 with add, inc and fetch_add: the totals are exact.
#[test]
fn contended_adds_give_exact_totals() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_AMO, &["add", "5000"]);
        assert_stdout_has(&r, &format!("totals exact: {}", 3 * 5000 * n));
    }
}

/// fetch_add tickets are unique across PEs (gathered on PE 0) and increase on each PE.
#[test]
fn fetch_add_tickets_are_unique() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_AMO, &["tickets", "2000"]);
        assert_stdout_has(&r, &format!("{} unique tickets", 2000 * n));
    }
}

/// A compare_swap increment loop from every PE: the total is exact.
#[test]
fn compare_swap_loop_gives_exact_total() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_AMO, &["cas", "2000"]);
        // Every PE ran its loop to the end (PE 0 checked the total of all of them).
        for pe in 0..n {
            let head = format!("PE {pe}: ");
            let said =
                r.stdout.lines().filter(|l| l.starts_with(&head) && l.ends_with(" compare_swap retries")).count();
            assert_eq!(said, 1, "PE {pe} did not finish its compare_swap loop\n{}", r.report());
        }
    }
}

/// and/or/xor bit-setting from every PE yields the expected masks.
#[test]
fn bitwise_amos_from_every_pe() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_AMO, &["bits"]);
        assert_stdout_has(&r, "masks ok");
    }
}
