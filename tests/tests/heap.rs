//! The symmetric heap, across real jobs (OpenSHMEM 1.5 §9.3): collective allocation at the same
//! offset on every PE, realloc, calloc, align, exhaustion, bad sizes, `SHMEM_SYMMETRIC_SIZE`
//! and the `SHMEM_DEBUG` collective checks.
//!
//! The PE program is `pe-heap`.

use oxshmem_tests::{
    Job, PE_COUNTS, assert_each_pe_says, assert_job_code, assert_job_ok, assert_stderr_has, assert_stdout_has, job_ok,
};

const PE_HEAP: &str = env!("CARGO_BIN_EXE_pe-heap");

/// malloc, align, calloc, malloc_with_hints, realloc, free and alloc_slice: same offsets from
/// the heap base on every PE, readable from every PE, contents kept across realloc.
#[test]
fn allocations_are_symmetric() {
    for n in PE_COUNTS {
        let r = job_ok(n, PE_HEAP, &["alloc"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: heap ok"));
        assert_stdout_has(&r, &format!("the same on {n} PEs"));
    }
}

/// Alignments above the page size must hold for the address, not only for the offset.
#[test]
fn alignment_beyond_the_page_size() {
    for n in [1, 2] {
        let r = job_ok(n, PE_HEAP, &["align-large"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: large alignments ok"));
    }
}

/// Asking for more than the heap holds is `OutOfMemory`, naming the size asked and the bytes
/// free; the job goes on.
#[test]
fn exhaustion_is_an_error_and_the_job_goes_on() {
    for n in [1, 2, 4] {
        let r = Job::new(n, PE_HEAP).args(&["oom"]).env("SHMEM_SYMMETRIC_SIZE", "2M").run();
        assert_job_ok(&r);
        assert_stdout_has(&r, "shmem_malloc: cannot allocate 3145728 bytes: symmetric heap has ");
        assert_stdout_has(&r, "raise SHMEM_SYMMETRIC_SIZE (now 2097152 bytes)");
        assert_stdout_has(&r, "cannot allocate 2400000 bytes");
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: continued after OutOfMemory"));
    }
}

/// Zero sizes, overflowing sizes, bad alignments, bad hints and bad frees are errors on every
/// PE alike, and the job goes on.
#[test]
fn zero_and_overflowing_sizes_are_errors() {
    for n in [1, 2, 4] {
        let r = job_ok(n, PE_HEAP, &["bad-sizes"]);
        assert_stdout_has(&r, "ERR shmem_malloc(0): PE 0: shmem_malloc: invalid size: zero bytes");
        assert_stdout_has(
            &r,
            &format!("ERR shmem_malloc(usize::MAX): PE 0: shmem_malloc: invalid size: {} bytes overflows", usize::MAX),
        );
        assert_stdout_has(&r, "ERR shmem_align(3, 64): PE 0: shmem_align: alignment 3 is not a power of two");
        assert_stdout_has(&r, "is not the start of a live symmetric allocation");
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: continued after bad sizes"));
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// `SHMEM_SYMMETRIC_SIZE` takes a byte count with an optional K/M/G suffix (powers of 1024),
/// rounded up to whole pages; the NVSHMEM_ and SMA_ spellings are aliases.
#[test]
fn symmetric_size_with_suffixes() {
    let page = page_size();
    let cases: [(&str, &str, usize); 9] = [
        ("SHMEM_SYMMETRIC_SIZE", "2097152", 2 << 20),
        ("SHMEM_SYMMETRIC_SIZE", "1536K", 1536 << 10),
        ("SHMEM_SYMMETRIC_SIZE", "3M", 3 << 20),
        ("SHMEM_SYMMETRIC_SIZE", "1G", 1 << 30),
        ("SHMEM_SYMMETRIC_SIZE", "2g", 2 << 30),
        ("SHMEM_SYMMETRIC_SIZE", "4MiB", 4 << 20),
        ("SHMEM_SYMMETRIC_SIZE", "1048577", (1048577usize).next_multiple_of(page)),
        ("NVSHMEM_SYMMETRIC_SIZE", "5M", 5 << 20),
        ("SMA_SYMMETRIC_SIZE", "6m", 6 << 20),
    ];
    for (var, value, bytes) in cases {
        let r = Job::new(2, PE_HEAP).args(&["size", &bytes.to_string()]).env(var, value).run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: heap_size {bytes}"));
    }
}

/// A bad `SHMEM_SYMMETRIC_SIZE` makes init fail with an error that names the variable, the
/// value and what is wrong with it.
#[test]
fn bad_symmetric_size_is_a_clear_init_error() {
    let cases = [
        (
            "SHMEM_SYMMETRIC_SIZE",
            "12Q",
            "environment variable SHMEM_SYMMETRIC_SIZE=\"12Q\": \"12Q\" is not a size (a number, possibly with a decimal \
             fraction, then an optional K, M, G or T and an optional B or iB, and nothing after them)",
        ),
        // One rule for every spelling: decimals are read (1.5G is a size), trailing junk is not.
        ("SHMEM_SYMMETRIC_SIZE", "1G1", "SHMEM_SYMMETRIC_SIZE=\"1G1\": \"1G1\" is not a size"),
        ("SHMEM_SYMMETRIC_SIZE", "512K", "SHMEM_SYMMETRIC_SIZE=\"512K\": must be at least 1048576 bytes"),
        ("SHMEM_SYMMETRIC_SIZE", "99999999999T", "SHMEM_SYMMETRIC_SIZE=\"99999999999T\": \"99999999999T\" overflows"),
        ("NVSHMEM_SYMMETRIC_SIZE", "lots", "environment variable NVSHMEM_SYMMETRIC_SIZE=\"lots\""),
    ];
    for (var, value, text) in cases {
        for n in [1, 2] {
            let r = Job::new(n, PE_HEAP).args(&["init-fails"]).env(var, value).run();
            assert_job_code(&r, 3);
            assert_stderr_has(&r, ": shmem_init: ");
            assert_stderr_has(&r, text);
        }
    }
}

/// With `SHMEM_DEBUG=1`, PEs that call shmem_malloc with different sizes (or free different
/// objects) get `CollectiveMismatch`, naming both sides; the job goes on.
#[test]
fn debug_mode_catches_mismatched_collective_allocations() {
    for n in [2, 4, 8] {
        let r = Job::new(n, PE_HEAP).args(&["debug-mismatch"]).env("SHMEM_DEBUG", "1").run();
        assert_job_ok(&r);
        assert_stdout_has(
            &r,
            "PE 0: shmem_malloc: collective arguments differ between PEs: this PE called shmem_malloc with size 1024, PE 1 called shmem_malloc with size 2048",
        );
        assert_stdout_has(
            &r,
            "PE 1: shmem_malloc: collective arguments differ between PEs: this PE called shmem_malloc with size 2048, PE 0 called shmem_malloc with size 1024",
        );
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: CollectiveMismatch caught"));
    }
}

/// Without `SHMEM_DEBUG` too (the check is on by default, riding in the allocation's own
/// barrier): PEs that call shmem_malloc with different sizes all get `CollectiveMismatch`
/// naming both PEs and both sizes, instead of heaps silently out of step; the refused calls
/// leave every heap as it was, and the job goes on.
#[test]
fn mismatched_collective_allocations_are_caught_by_default() {
    for n in [2, 3, 4, 8] {
        let r = Job::new(n, PE_HEAP).args(&["mismatch"]).run();
        assert_job_ok(&r);
        assert_stdout_has(
            &r,
            "PE 0: shmem_malloc: collective arguments differ between PEs: this PE called shmem_malloc with size 1024, PE 1 called shmem_malloc with size 2048",
        );
        assert_stdout_has(
            &r,
            "PE 1: shmem_malloc: collective arguments differ between PEs: this PE called shmem_malloc with size 2048, PE 0 called shmem_malloc with size 1024",
        );
        assert_stdout_has(&r, "called shmem_free with offset");
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: CollectiveMismatch caught"));
    }
}
