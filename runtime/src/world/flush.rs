//! Output on the way out: what a PE printed reaches the launcher when the job ends on an
//! error path, instead of dying in the PE's buffers.
//!
//! Rust's `stdout` holds a line until its newline, and C's `stdout` holds up to a page when it
//! is a pipe (as under a launcher). Two cases:
//!
//! - **This PE ends the job** (`shmem_global_exit`, `shmem_abort`, a fatal error the runtime
//!   or the C library reports): [`flush_output`] runs before the launcher is asked to end the
//!   job, since a bootstrap's abort may end the process without exit's own flushes (MPI's
//!   `MPI_Abort`), and the launcher starts killing the other PEs at once.
//! - **Another PE ended it**: the launcher sends this PE `SIGTERM` (and `SIGKILL` after a
//!   grace period). Init installs a handler ([`install_teardown_flush`]) that wakes a thread of
//!   ours, which flushes and then ends the process by `SIGTERM` as the default action would
//!   have, so the launcher sees the same death. The handler itself only writes a byte to a
//!   pipe (async-signal-safe); the flushing runs in an ordinary thread, which may take the
//!   output locks. It is installed only where `SIGTERM` has its default action: a program's own
//!   handler is left alone. A child the PE forks (without exec, which resets the handler) dies
//!   of `SIGTERM` as before: the handler acts only in the process that installed it.

use std::io::Write;
use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};

/// Flushes Rust's `stdout` and `stderr` and every C stdio stream of the process.
pub(crate) fn flush_output() {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: fflush(NULL) flushes every open output stream; it takes each stream's own lock.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// The write end of the pipe the `SIGTERM` handler writes to (-1: none).
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
/// The process that installed the handler: a child it forked without exec has the handler and
/// the pipe too, but not the flushing thread, and must not wake its parent's.
static OWNER: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_sigterm(sig: libc::c_int) {
    // SAFETY: getpid, signal and raise are async-signal-safe.
    if unsafe { libc::getpid() } != OWNER.load(Ordering::Relaxed) {
        // SAFETY: as above: the default action, then the signal again, in this (forked) process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return;
    }
    let fd = WAKE_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; one byte from a live local.
        unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
    }
}

/// Installs the `SIGTERM` handler and its flushing thread, once per process, where `SIGTERM`
/// has its default action. Returns whether the handler is (now or already) ours.
pub(crate) fn install_teardown_flush() -> bool {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: reading the current action into a zeroed sigaction, no change.
        let current = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old) != 0 {
                return;
            }
            old.sa_sigaction
        };
        if current != libc::SIG_DFL {
            tracing::debug!(target: "init", "SIGTERM has a handler of the program's: output is not flushed on teardown");
            return;
        }
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills the two descriptors of a fresh pipe.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        let read_fd = fds[0];
        let spawned = std::thread::Builder::new().name("oxshmem-sigterm".into()).spawn(move || {
            let mut byte = 0u8;
            loop {
                // SAFETY: read(2) of one byte into a live local from our own pipe.
                let n = unsafe { libc::read(read_fd, (&raw mut byte).cast(), 1) };
                if n == 1 {
                    break;
                }
                if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return; // the pipe is gone: nothing to wait for
            }
            flush_output();
            // End as the default action would have: by SIGTERM, which the launcher reports.
            // SAFETY: restoring the default action, then sending the signal to this process.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                libc::kill(libc::getpid(), libc::SIGTERM);
            }
        });
        if spawned.is_err() {
            // SAFETY: closing the two descriptors pipe2 gave us, which nothing else holds.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            return;
        }
        WAKE_FD.store(fds[1], Ordering::Relaxed);
        // SAFETY: getpid has no preconditions.
        OWNER.store(unsafe { libc::getpid() }, Ordering::Relaxed);
        // SAFETY: installing a handler that only loads an atomic and calls write(2).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigterm as extern "C" fn(libc::c_int) as libc::sighandler_t;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(libc::SIGTERM, &act, std::ptr::null_mut());
        }
    });
    WAKE_FD.load(Ordering::Relaxed) >= 0
}
