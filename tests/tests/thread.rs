//! Threads (OpenSHMEM 1.5 §9.2: `shmem_init_thread`, `SHMEM_THREAD_MULTIPLE`), across real
//! jobs of 1 to 8 PEs.
//!
//! The PE program is `pe-sync threads T ITERS`: T threads per PE put, get, fetch_add, quiet,
//! take the lock and use their own private contexts at the same time; totals are exact.

use oxshmem_tests::{assert_each_pe_says, job_ok};

const PE_SYNC: &str = env!("CARGO_BIN_EXE_pe-sync");

/// `init_thread(MULTIPLE)` provides MULTIPLE; 4 threads per PE on 1, 2, 3 and 4 PEs.
#[test]
fn four_threads_per_pe() {
    for n in [1, 2, 3, 4] {
        let r = job_ok(n, PE_SYNC, &["threads", "4", "2000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 4 threads x 2000 ok"));
    }
}

/// More threads than cores on 8 PEs: 3 threads each, 24 threads on the machine.
#[test]
fn threads_on_eight_pes() {
    let r = job_ok(8, PE_SYNC, &["threads", "3", "500"]);
    assert_each_pe_says(&r, 8, |pe| format!("PE {pe}: 3 threads x 500 ok"));
}
