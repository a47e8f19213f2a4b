//! What PEs printed reaches the launcher when the job ends on an error path: the PE that ends
//! it (`shmem_global_exit`, `shmem_abort`) flushes before asking the launcher, and the PEs the
//! launcher's teardown then ends with SIGTERM flush in the runtime's handler before they die —
//! a Rust line without its newline (held by Rust's line-buffered stdout) and C stdio text
//! (held in full by C's stdout on a pipe) alike.
//!
//! The PE program is this test binary itself, run under oshrun with `--exact pe_side` and
//! `EXIT_FLUSH_ROLE` saying what to do; in an ordinary test run `pe_side` does nothing.

use std::io::Write;
use std::time::Duration;

use oxshmem_tests::{Job, assert_job_code, assert_stdout_has};

const ROLE: &str = "EXIT_FLUSH_ROLE";

/// The PE side: every PE prints text that stays buffered, then PE 0 ends the job (by
/// `global_exit` or `abort`, as the role says) and the others wait to be ended.
#[test]
fn pe_side() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let shmem = oxshmem::init().expect("init");
    let me = shmem.my_pe();
    if role == "fork" {
        return fork_side(shmem);
    }
    print!("PE {me}: a Rust line without its newline");
    let c_text = std::ffi::CString::new(format!("PE {me}: C stdio text\n")).unwrap();
    // SAFETY: printf with a format of no conversions, a live NUL-terminated string.
    unsafe { libc::printf(c_text.as_ptr()) };
    shmem.barrier_all().expect("barrier");
    if me == 0 {
        match role.as_str() {
            "global_exit" => shmem.global_exit(7),
            "abort" => oxshmem::raw::abort(9, "PE 0: ending the job on purpose (exit_flush test)"),
            other => panic!("unknown {ROLE} {other:?}"),
        }
    }
    // The others wait until the launcher ends them.
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let _ = std::io::stderr().flush();
    }
}

/// A child the PE forks (without exec) inherits the SIGTERM handler and its pipe, but not the
/// flushing thread: SIGTERM must end the child as by default, and must not reach the parent.
fn fork_side(shmem: oxshmem::Shmem) {
    let me = shmem.my_pe();
    // SAFETY: the child calls only async-signal-safe functions (pause, _exit) before it dies.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "PE {me}: fork failed");
    if child == 0 {
        loop {
            // SAFETY: pause(2) waits for a signal; nothing else happens in the child.
            unsafe { libc::pause() };
        }
    }
    let mut status = 0;
    // SAFETY: kill and waitpid on our own child.
    unsafe {
        libc::kill(child, libc::SIGTERM);
        assert_eq!(libc::waitpid(child, &mut status, 0), child);
    }
    assert!(
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGTERM,
        "PE {me}: the forked child did not die of SIGTERM (status {status:#x})"
    );
    // Had the child's SIGTERM woken this process's flushing thread, it would end this PE by
    // SIGTERM now; give it the time it would need, then go on as a healthy PE.
    std::thread::sleep(Duration::from_millis(300));
    shmem.barrier_all().expect("barrier");
    println!("PE {me}: alive after its forked child's SIGTERM");
    shmem.finalize().expect("finalize");
}

#[test]
fn a_forked_childs_sigterm_ends_the_child_only() {
    let r = run("fork", 2);
    oxshmem_tests::assert_job_ok(&r);
    for pe in 0..2 {
        assert_stdout_has(&r, &format!("PE {pe}: alive after its forked child's SIGTERM"));
    }
}

fn run(role: &str, n: usize) -> oxshmem_tests::JobResult {
    let me = std::env::current_exe().expect("current_exe");
    Job::new(n, me)
        .args(&["--exact", "pe_side", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .timeout(Duration::from_secs(60))
        .run()
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
