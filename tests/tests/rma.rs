//! Remote memory access, across real jobs of 1, 2, 4 and 8 PEs (OpenSHMEM 1.5 §9.5).
//!
//! The PE program is `pe-rma`; each case checks every transfer against per-PE patterns that it
//! computes on its own, and fails its PE (and so the job) on the first difference.

use oxshmem_tests::{Job, PE_COUNTS, assert_each_pe_says, assert_job_ok, job_ok};

const PE_RMA: &str = env!("CARGO_BIN_EXE_pe-rma");

/// Blocking and `_nbi` put/get and p/g for every standard RMA type, a `Pod` struct, `[u8; 16]`
/// and `u128`, to both neighbours and to self; sizes from one element to 1 MiB.
#[test]
fn put_get_p_g_every_type_every_size() {
    for (n, sizes) in [(1, "1 3 1000 1048576"), (2, "1 3 1000 1048576"), (4, "1 1000 1048576"), (8, "1 1000 65536")] {
        let mut args = vec!["types"];
        args.extend(sizes.split(' '));
        let r = job_ok(n, PE_RMA, &args);
        let list = sizes.split(' ').collect::<Vec<_>>().join(", ");
        assert_each_pe_says(&r, n, |pe| format!("PE {pe} checked 15 types at sizes [{list}]"));
    }
}

/// `iput`/`iget` with strides above 1 (and equal to 1) for 1- to 24-byte elements.
#[test]
fn strided_iput_iget() {
    for n in PE_COUNTS {
        job_ok(n, PE_RMA, &["strided"]);
    }
}

/// The pointer API on `raw::malloc` memory: putmem/getmem (+ `_nbi`), p/g, iput/iget.
#[test]
fn raw_pointer_api() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_RMA, &["raw"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: raw RMA ok"));
    }
    // An odd size well past a page.
    job_ok(2, PE_RMA, &["raw", "1048573"]);
}

/// `shmem_ptr`: a plain store through the returned pointer is seen by the peer.
#[test]
fn shmem_ptr_store_is_seen_by_the_peer() {
    for n in PE_COUNTS {
        let r = Job::new(n, PE_RMA)
            .args(&["ptr"])
            .shm_only("shmem_ptr reaches only peers mapped here, and the forced network path maps none")
            .run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: shmem_ptr ok"));
    }
}

/// `pe_accessible` and `addr_accessible`, including PEs and addresses that are not.
#[test]
fn pe_and_addr_accessible() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_RMA, &["accessible"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: accessible ok"));
    }
}
