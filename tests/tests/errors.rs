//! Bad input gets a clear error, never silent corruption (the project's DESIGN, "Errors"):
//! PEs out of range, non-symmetric addresses, indices out of bounds, overflowing sizes,
//! misaligned atomics, use before init, a second init and use after finalize.
//!
//! The PE program is `pe-misc`; each case checks the error kind and text itself and prints
//! `ERR <what>: <error text>`, which the tests here check again.

use oxshmem_tests::{Job, JobResult, assert_stdout_has, job_ok};

const PE_MISC: &str = env!("CARGO_BIN_EXE_pe-misc");

fn err_line(r: &JobResult, what: &str) -> String {
    let prefix = format!("ERR {what}: ");
    r.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?}\n{}", r.report()))
}

/// A PE out of range: negative (raw API) or `n_pes` and beyond (both APIs).
#[test]
fn pe_out_of_range() {
    for n in [1, 2, 4] {
        let r = job_ok(n, PE_MISC, &["bad-pe"]);
        assert_stdout_has(&r, &format!("ERR raw putmem to PE -1: PE 0: shmem_putmem: PE -1 is out of range (0..{n})"));
        assert_stdout_has(&r, &format!("ERR raw putmem to PE n: PE 0: shmem_putmem: PE {n} is out of range (0..{n})"));
        assert_stdout_has(&r, &format!("ERR put to PE n: PE 0: shmem_put: PE {n} is out of range (0..{n})"));
        assert_stdout_has(
            &r,
            &format!("ERR atomic_fetch_add on PE n: PE 0: shmem_atomic_fetch_add: PE {n} is out of range (0..{n})"),
        );
        assert_stdout_has(
            &r,
            &format!("ERR raw atomic_nbi on PE -7: PE 0: shmem_atomic_swap_nbi: PE -7 is out of range (0..{n})"),
        );
    }
}

/// PE numbers above `i64::MAX` in the safe API must be reported as they are.
#[test]
fn huge_pe_numbers_are_reported_as_given() {
    job_ok(2, PE_MISC, &["bad-pe-huge"]);
}

/// Addresses outside every symmetric segment: a stack variable as destination of
/// `raw::putmem`, a `Box`.
#[test]
fn address_not_symmetric() {
    for n in [1, 2] {
        let r = Job::new(n, PE_MISC).args(&["not-symmetric"]).env("SHMEM_SYMMETRIC_SIZE", "2M").run();
        oxshmem_tests::assert_job_ok(&r);
        let e = err_line(&r, "raw putmem to a stack variable");
        assert!(e.starts_with("PE ") && e.contains(": shmem_putmem: destination 0x"), "{e}");
        assert!(
            e.ends_with("(+8 bytes) is not symmetric (not inside the symmetric heap or any other symmetric segment)"),
            "{e}"
        );
        assert!(err_line(&r, "raw getmem from a stack variable").contains("shmem_getmem: source 0x"));
        assert!(err_line(&r, "raw wait_until on a stack variable").contains("shmem_wait_until: ivars 0x"));
    }
}

/// Addresses at the end of the user's heap, and ranges that cross it, are not symmetric: the
/// runtime's own objects that follow the heap in its segment must be out of the user's reach.
#[test]
fn nothing_past_the_end_of_the_heap_is_reachable() {
    for n in [1, 2] {
        let r = Job::new(n, PE_MISC)
            .args(&["past-heap-end"])
            .env("SHMEM_SYMMETRIC_SIZE", "2M")
            .timeout(std::time::Duration::from_secs(20))
            .run();
        oxshmem_tests::assert_job_ok(&r);
        assert!(err_line(&r, "raw putmem running past the heap's end").contains("(+2097152 bytes) is not symmetric"));
    }
}

/// Indices out of bounds in the safe API: errors for remote operations, a panic for local
/// accessors (like slice indexing).
#[test]
fn index_out_of_bounds() {
    for n in [1, 2] {
        let r = job_ok(n, PE_MISC, &["out-of-bounds"]);
        assert_stdout_has(
            &r,
            "ERR put of 2 at 3: PE 0: shmem_put: index range 3..5 is outside the symmetric object of 4 elements",
        );
        assert_stdout_has(
            &r,
            "ERR g at 10: PE 0: shmem_g: index range 10..11 is outside the symmetric object of 4 elements",
        );
        assert_stdout_has(&r, "ERR atomic_fetch_add at 4: PE 0: shmem_atomic_fetch_add: index range 4..5 is outside");
        assert_stdout_has(&r, "ERR wait_until at 4: PE 0: shmem_wait_until: index range 4..5 is outside");
        assert_stdout_has(&r, "ERR read(4): index 4 out of range for a symmetric object of 4 elements");
    }
}

/// Sizes and strides whose byte counts overflow, zero strides, short status/value arrays.
#[test]
fn size_overflow() {
    for n in [1, 2] {
        let r = job_ok(n, PE_MISC, &["size-overflow"]);
        assert_stdout_has(
            &r,
            &format!("shmem_iput: invalid size: 2 elements of 8 bytes at stride {} overflows", isize::MAX),
        );
        assert_stdout_has(&r, "shmem_iput: invalid argument: stride 0 must be at least 1");
        assert_stdout_has(&r, &format!("shmem_malloc: invalid size: {} elements of 8 bytes overflows", usize::MAX / 2));
        assert_stdout_has(&r, &format!("shmem_calloc: invalid size: {} x 4 bytes overflows", usize::MAX / 2));
        assert_stdout_has(&r, "shmem_test_all: size mismatch: status has 2 entries for 4 ivars");
    }
}

/// A raw atomic at heap pointer + 1 (and other misaligned targets) is refused.
#[test]
fn misaligned_atomic_target() {
    for n in [1, 2] {
        let r = job_ok(n, PE_MISC, &["misaligned"]);
        let e = err_line(&r, "u64 fetch_add at heap + 1");
        assert!(
            e.contains(": shmem_atomic_fetch_add: atomic target 0x") && e.ends_with("1 is not aligned to 8 bytes"),
            "{e}"
        );
        let e = err_line(&r, "u32 compare_swap at heap + 2");
        assert!(
            e.contains(": shmem_atomic_compare_swap: atomic target 0x") && e.ends_with("2 is not aligned to 4 bytes"),
            "{e}"
        );
    }
}

/// `raw::putmem` (and anything else) before `raw::init` is `NotInitialized`, labelled with the
/// launcher's rank; init works after.
#[test]
fn use_before_init() {
    for n in [1, 2] {
        let r = job_ok(n, PE_MISC, &["before-init"]);
        assert_stdout_has(
            &r,
            "ERR raw putmem before init: PE 0: shmem_putmem: oxshmem is not initialized (call shmem_init first)",
        );
        assert_stdout_has(&r, "ERR raw barrier_all before init: PE 0: shmem_barrier_all: oxshmem is not initialized");
        if n == 2 {
            assert_stdout_has(
                &r,
                "ERR raw barrier_all before init: PE 1: shmem_barrier_all: oxshmem is not initialized",
            );
        }
    }
}

/// A second init is `AlreadyInitialized` and leaves the runtime working.
#[test]
fn init_twice() {
    for n in [1, 2] {
        let r = job_ok(n, PE_MISC, &["init-twice"]);
        assert_stdout_has(&r, "ERR second raw init: PE 0: shmem_init: oxshmem is already initialized");
        oxshmem_tests::assert_each_pe_says(&r, n, |pe| format!("PE {pe}: still running after a second init"));
    }
}

/// After finalize every operation, a second finalize and a new init are `Finalized`.
#[test]
fn use_after_finalize() {
    for n in [1, 2] {
        let r = job_ok(n, PE_MISC, &["after-finalize"]);
        assert_stdout_has(&r, "ERR raw putmem after finalize: PE 0: shmem_putmem: oxshmem has been finalized");
        assert_stdout_has(
            &r,
            "ERR init after finalize: PE 0: shmem_init: invalid argument: cannot initialize again after shmem_finalize",
        );
        oxshmem_tests::assert_each_pe_says(&r, n, |pe| format!("PE {pe}: errors after finalize ok"));
        assert!(
            !r.stderr.contains("shmem_free"),
            "dropping an object after finalize must print nothing\n{}",
            r.report()
        );
    }
}
