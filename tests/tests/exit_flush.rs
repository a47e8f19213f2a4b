//! What PEs printed reaches the launcher when the job ends on an error path: the PE that ends
//! it (`shmem_global_exit`, `shmem_abort`) flushes before asking the launcher, and the PEs the
//! launcher's teardown then ends with SIGTERM flush in the runtime's handler before they die —
//! a Rust line without its newline (held by Rust's line-buffered stdout) and C stdio text
//! (held in full by C's stdout on a pipe) alike.
//!
//! The PE program is `pe-flush` (tests/src/bin/pe-flush.rs), run under oshrun with
//! `EXIT_FLUSH_ROLE` saying what to do.

use std::time::Duration;

use oxshmem_tests::{Job, assert_job_code, assert_stdout_has};

const ROLE: &str = "EXIT_FLUSH_ROLE";
const PE_FLUSH: &str = env!("CARGO_BIN_EXE_pe-flush");

#[test]
fn a_forked_childs_sigterm_ends_the_child_only() {
    let r = run("fork", 2);
    oxshmem_tests::assert_job_ok(&r);
    for pe in 0..2 {
        assert_stdout_has(&r, &format!("PE {pe}: alive after its forked child's SIGTERM"));
    }
}

fn run(role: &str, n: usize) -> oxshmem_tests::JobResult {
    Job::new(n, PE_FLUSH).env(ROLE, role).timeout(Duration::from_secs(60)).run()
}

#[test]
fn global_exit_leaves_every_pes_buffered_output_printed() {
    for n in [2, 4] {
        let r = run("global_exit", n);
        assert_job_code(&r, 7);
        for pe in 0..n {
            assert_stdout_has(&r, &format!("PE {pe}: a Rust line without its newline"));
            assert_stdout_has(&r, &format!("PE {pe}: C stdio text"));
        }
    }
}

#[test]
fn abort_leaves_every_pes_buffered_output_printed() {
    let r = run("abort", 3);
    assert_job_code(&r, 9);
    for pe in 0..3 {
        assert_stdout_has(&r, &format!("PE {pe}: a Rust line without its newline"));
        assert_stdout_has(&r, &format!("PE {pe}: C stdio text"));
    }
}
