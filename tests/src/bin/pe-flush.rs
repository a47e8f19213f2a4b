//! PE program of `tests/exit_flush.rs`: what PEs printed reaches the launcher when the job
//! ends on an error path. `EXIT_FLUSH_ROLE` says what to do: `global_exit` or `abort` (every PE
//! prints text that stays buffered, then PE 0 ends the job that way and the others wait to be
//! ended), or `fork` (a PE forks a child and sends it SIGTERM).

use std::io::Write;
use std::time::Duration;

const ROLE: &str = "EXIT_FLUSH_ROLE";

/// The PE side: every PE prints text that stays buffered, then PE 0 ends the job (by
/// `global_exit` or `abort`, as the role says) and the others wait to be ended.
fn main() {
    let role = std::env::var(ROLE).unwrap_or_else(|_| panic!("{ROLE} is not set: this is a PE of tests/exit_flush.rs"));
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
