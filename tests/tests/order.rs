//! Ordering, completion and the barrier, across real jobs of 1, 2, 4 and 8 PEs
//! (OpenSHMEM 1.5 §9.9 and §9.8.1).
//!
//! The PE program is `pe-order`.

use oxshmem_tests::{PE_COUNTS, assert_each_pe_says, job_ok};

const PE_ORDER: &str = env!("CARGO_BIN_EXE_pe-order");

/// Data put before `shmem_fence` is there when the flag put after it arrives.
#[test]
fn fence_orders_data_before_flag() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_ORDER, &["fence", "2000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 2000 shmem_fence iterations ok"));
    }
}

/// Non-blocking puts completed by `shmem_quiet` are there when the flag arrives.
#[test]
fn quiet_completes_data_before_flag() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_ORDER, &["quiet", "2000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 2000 shmem_quiet iterations ok"));
    }
}

/// `shmem_barrier_all` completes every PE's puts.
#[test]
fn barrier_all_completes_puts() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_ORDER, &["barrier-puts", "1000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 1000 barrier_all iterations ok"));
    }
}

/// Nobody passes `barrier_all` or `sync_all` before every PE has arrived.
#[test]
fn nobody_passes_a_barrier_early() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_ORDER, &["barrier-count", "2000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 2000 barriers, none passed early"));
    }
}
