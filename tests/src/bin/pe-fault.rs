//! PE program for peer failure: `pe-fault MODE WHEN [VICTIM]`, after UCX's `test_peer_failure`.
//!
//! PE `VICTIM` (default: the last PE) dies by `MODE` — `panic`, `abort` (`std::process::abort`)
//! or `sigkill` (it sends itself SIGKILL) — at the moment `WHEN`:
//! - `start`: first thing in `main`, before `shmem_init` (the others are inside init);
//! - `init`: right after init, before the first barrier (the others are in that barrier);
//! - `putloop`: in the middle of a long loop of puts (the others keep putting, forever);
//! - `barrier`: while every other PE sits in `barrier_all`.
//!
//! Just before dying the victim prints `pe-fault: PE v dies by MODE WHEN at unix_ms=T` to
//! standard error, so that the test can measure how long the launcher took to end the job. The
//! survivors never finish on their own: only the launcher can end the job. (As a guard they give
//! up with status 1 after 120 s.)

use std::time::{Duration, Instant};

use oxshmem_tests::pe::{OrDie, arg, dispatch, fail};

fn main() {
    dispatch(
        "pe-fault",
        &[("panic", |a| run(Mode::Panic, a)), ("abort", |a| run(Mode::Abort, a)), ("sigkill", |a| run(Mode::Kill, a))],
    );
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Panic,
    Abort,
    Kill,
}

const GUARD: Duration = Duration::from_secs(120);

fn die(mode: Mode, pe: usize, when: &str) -> ! {
    let name = match mode {
        Mode::Panic => "panic",
        Mode::Abort => "abort",
        Mode::Kill => "sigkill",
    };
    eprintln!("pe-fault: PE {pe} dies by {name} {when} at unix_ms={}", oxshmem_tests::unix_ms());
    match mode {
        Mode::Panic => panic!("PE {pe} panics on purpose ({when})"),
        Mode::Abort => std::process::abort(),
        Mode::Kill => {
            // SAFETY: kill(2) on our own pid has no memory effects.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            // SIGKILL cannot be caught; this is never reached.
            std::thread::sleep(Duration::from_secs(3600));
            fail("survived SIGKILL")
        }
    }
}

fn run(mode: Mode, args: &[String]) {
    let when = args.first().map(String::as_str).unwrap_or("barrier");
    // Before init, the launcher's environment tells who we are.
    let rank: usize = std::env::var("PMI_RANK").ok().and_then(|r| r.parse().ok()).unwrap_or(0);
    let size: usize = std::env::var("PMI_SIZE").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let victim: usize = arg(args, 1, size - 1);
    if when == "start" && rank == victim {
        die(mode, rank, "before shmem_init");
    }
    let shmem = oxshmem::init().or_die("shmem_init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    if me == victim && when == "init" {
        die(mode, me, "after shmem_init, before the first barrier");
    }
    shmem.barrier_all().or_die("first barrier");
    match when {
        "init" | "start" => fail("passed the first barrier although a PE is dead"),
        "putloop" => {
            let buf = shmem.alloc_slice(1 << 16, 0u8).or_die("alloc_slice");
            shmem.barrier_all().or_die("barrier");
            let block = vec![me as u8; 1 << 16];
            let mut back = vec![0u8; 1 << 16];
            let start = Instant::now();
            let right = (me + 1) % n;
            let left = (me + n - 1) % n;
            for i in 0u64.. {
                buf.put(0, &block, right).or_die("shmem_put in the loop");
                buf.get(0, &mut back, left).or_die("shmem_get in the loop");
                if me == victim && i == 2000 {
                    die(mode, me, "in the middle of a put loop");
                }
                if start.elapsed() > GUARD {
                    fail("nobody ended the job");
                }
            }
        }
        "barrier" => {
            if me == victim {
                // Let the others get inside the barrier first.
                std::thread::sleep(Duration::from_millis(300));
                die(mode, me, "while the others wait in barrier_all");
            }
            shmem.barrier_all().or_die("barrier_all");
            fail("passed barrier_all although a PE is dead");
        }
        other => fail(format!("unknown moment {other:?} (start, init, putloop, barrier)")),
    }
}
