//! Whole jobs launched with the real `oshrun` binary.
//!
//! The PEs are this test binary itself, re-executed as `--exact pe_child` with
//! `OXS_OSHRUN_TEST_PE=<scenario>`; trivial fault cases use `sh -c`. Every job runs with
//! `--timeout`, and every `oshrun` is watched by a deadline here too, so no test can hang.
//! Elapsed-time checks are generous upper bounds: they catch hangs, not slowness.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const PE_VAR: &str = "OXS_OSHRUN_TEST_PE";
/// Upper bound for any `oshrun` run here; jobs themselves use `--timeout 30` or less.
const WATCHDOG: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- the PE side

/// Not a test of its own: the entry point of a PE when this binary runs under `oshrun`.
#[test]
fn pe_child() {
    let Ok(scenario) = std::env::var(PE_VAR) else {
        return;
    };
    let code = pe_main(&scenario);
    std::process::exit(code);
}

/// Rank `rank`'s contribution to allgather number `epoch`: sizes include 0 and 10 KiB.
fn blob(rank: usize, epoch: usize) -> Vec<u8> {
    let len = [0, 10 * 1024, 1, 1000, 3, 0, 4096, 777][rank % 8];
    (0..len).map(|i| (i * 31 + rank * 7 + epoch * 13) as u8).collect()
}

fn pe_main(scenario: &str) -> i32 {
    let pmi = oxshmem_bootstrap::from_env().expect("bootstrap from the environment");
    let (rank, size) = (pmi.rank(), pmi.size());
    assert_eq!(pmi.name(), "pmi1");
    assert_eq!(std::env::var("OSHRUN_NPES").unwrap(), size.to_string());
    match scenario {
        "collectives" => {
            // oshrun publishes PMI_process_mapping: every PE on one node.
            assert_eq!(pmi.node_mapping(), Some(vec![0; size]));
            for epoch in 0..3 {
                let all = pmi.allgather(&blob(rank, epoch)).unwrap();
                assert_eq!(all.len(), size);
                for (r, got) in all.iter().enumerate() {
                    assert_eq!(got, &blob(r, epoch), "PE {rank}: blob of rank {r}, epoch {epoch}");
                }
            }
            pmi.barrier().unwrap();
            let root = size - 1;
            let msg = b"from the root".as_slice();
            assert_eq!(pmi.broadcast(root, (rank == root).then_some(msg)).unwrap(), msg);
            let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
            assert_eq!(pmi.broadcast(0, (rank == 0).then_some(&big[..])).unwrap(), big);
            assert_eq!(pmi.broadcast(0, Some(&[])).unwrap(), b"");
            pmi.barrier().unwrap();
            println!("PE {rank} of {size}: collectives ok");
            pmi.finalize().unwrap();
        }
        "big" => {
            let mine: Vec<u8> = (0..100 * 1024).map(|i: usize| (i * 7 + rank) as u8).collect();
            let all = pmi.allgather(&mine).unwrap();
            for (r, got) in all.iter().enumerate() {
                let want: Vec<u8> = (0..100 * 1024).map(|i: usize| (i * 7 + r) as u8).collect();
                assert!(got == &want, "PE {rank}: 100 KiB blob of rank {r} differs");
            }
            println!("PE {rank}: big ok");
            pmi.finalize().unwrap();
        }
        "exit3" => {
            if rank == 1 {
                return 3;
            }
            pmi.barrier().unwrap();
        }
        "sigkill" => {
            if rank == 1 {
                std::thread::sleep(Duration::from_millis(100));
                // SAFETY: signalling ourselves; no memory is involved.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            pmi.barrier().unwrap();
        }
        "abort" => {
            if rank == size - 1 {
                pmi.abort(5, "PE gave up: test abort");
            }
            pmi.barrier().unwrap();
        }
        "no_finalize" => {
            pmi.barrier().unwrap();
            if rank == 0 {
                return 0;
            }
            pmi.barrier().unwrap();
        }
        "finalize_early" => {
            if rank == 0 {
                pmi.finalize().unwrap();
                return 0;
            }
            pmi.barrier().unwrap();
        }
        "busy" => {
            pmi.barrier().unwrap();
            if rank == 1 {
                std::thread::sleep(Duration::from_millis(100));
                return 3;
            }
            // Ignore SIGTERM and spin: only the SIGKILL that follows can end us.
            // SAFETY: setting a signal disposition to SIG_IGN has no memory effects.
            unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            loop {
                std::hint::spin_loop();
            }
        }
        "hang" => {
            pmi.barrier().unwrap();
            println!("PE {rank} ready pid {}", std::process::id());
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        other => panic!("unknown scenario {other}"),
    }
    0
}

// ---------------------------------------------------------------- the test side

struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

fn oshrun() -> Command {
    Command::new(env!("CARGO_BIN_EXE_oshrun"))
}

/// `oshrun --timeout 30 [opts] -n N <this binary as PE>` for `scenario`.
fn pe_job(n: usize, scenario: &str, opts: &[&str]) -> Command {
    let mut c = oshrun();
    c.args(["--timeout", "30"])
        .args(opts)
        .args(["-n", &n.to_string()])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "pe_child", "--nocapture", "--test-threads=1"])
        .env(PE_VAR, scenario);
    c
}

fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start oshrun")
}

fn reader(r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(r).read_to_string(&mut s);
        s
    })
}

/// Wait for `child` at most [`WATCHDOG`]; kill it and fail the test past that.
fn finish(mut child: Child, start: Instant, stdout: std::thread::JoinHandle<String>) -> Run {
    let stderr = reader(child.stderr.take().unwrap());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > WATCHDOG {
            let _ = child.kill();
            panic!("oshrun still running after {WATCHDOG:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    Run { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap(), elapsed }
}

fn run(cmd: &mut Command) -> Run {
    let start = Instant::now();
    let mut child = spawn_piped(cmd);
    let stdout = reader(child.stdout.take().unwrap());
    finish(child, start, stdout)
}

fn assert_ok(r: &Run) {
    assert_eq!(r.code(), Some(0), "{r:?}");
}

fn collectives(n: usize, opts: &[&str]) {
    let r = run(&mut pe_job(n, "collectives", opts));
    assert_ok(&r);
    for rank in 0..n {
        assert!(r.stdout.contains(&format!("PE {rank} of {n}: collectives ok")), "{r:?}");
    }
    assert!(!r.stderr.contains("oshrun:"), "{r:?}");
}

#[test]
fn collectives_1_pe() {
    collectives(1, &[]);
}

#[test]
fn collectives_2_pes() {
    collectives(2, &[]);
}

#[test]
fn collectives_4_pes() {
    collectives(4, &[]);
}

#[test]
fn collectives_8_pes() {
    collectives(8, &[]);
}

#[test]
fn collectives_over_pmi_port() {
    collectives(4, &["--pmi-port"]);
}

#[test]
fn allgather_of_100_kib_blobs() {
    let r = run(&mut pe_job(2, "big", &[]));
    assert_ok(&r);
    assert!(r.stdout.contains("PE 0: big ok") && r.stdout.contains("PE 1: big ok"), "{r:?}");
}

#[test]
fn pe_exit_status_ends_the_job() {
    let r = run(&mut pe_job(4, "exit3", &[]));
    assert_eq!(r.code(), Some(3), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 1 (pid "), "{r:?}");
    assert!(r.stderr.contains(") exited with status 3; ending the job"), "{r:?}");
    assert_eq!(r.stderr.matches("ending the job").count(), 1, "{r:?}");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

#[test]
fn shell_pe_exit_status() {
    let r = run(oshrun().args(["--timeout", "30", "-n", "2", "sh", "-c", "exit 3"]));
    assert_eq!(r.code(), Some(3), "{r:?}");
    assert!(r.stderr.contains("exited with status 3; ending the job"), "{r:?}");
}

#[test]
fn sigkilled_pe_ends_a_job_blocked_in_a_barrier() {
    let r = run(&mut pe_job(4, "sigkill", &[]));
    assert_eq!(r.code(), Some(128 + 9), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 1 (pid "), "{r:?}");
    assert!(r.stderr.contains("was killed by signal 9 (SIGKILL); ending the job"), "{r:?}");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

#[test]
fn shell_pe_killed_by_signal() {
    let r = run(oshrun().args(["--timeout", "30", "-n", "1", "sh", "-c", "kill -SEGV $$"]));
    assert_eq!(r.code(), Some(128 + 11), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 0 (pid ") && r.stderr.contains("signal 11 (SIGSEGV)"), "{r:?}");
}

#[test]
fn pmi_abort_ends_the_job() {
    let r = run(&mut pe_job(3, "abort", &[]));
    assert_eq!(r.code(), Some(5), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 2 called abort (exit code 5): PE gave up: test abort"), "{r:?}");
    // The PE's own message, printed before it aborted, is forwarded too.
    assert!(r.stderr.lines().any(|l| l == "PE gave up: test abort"), "{r:?}");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

#[test]
fn exit_zero_without_finalize_is_a_failure() {
    let r = run(&mut pe_job(2, "no_finalize", &[]));
    assert_eq!(r.code(), Some(1), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 0 (pid "), "{r:?}");
    assert!(r.stderr.contains("exited with status 0 without finalizing"), "{r:?}");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

#[test]
fn barrier_that_can_never_complete_ends_the_job() {
    let r = run(&mut pe_job(3, "finalize_early", &[]));
    assert_eq!(r.code(), Some(1), "{r:?}");
    assert!(
        r.stderr
            .contains("oshrun: PEs 1, 2 wait in a PMI barrier that PE 0 can no longer enter (exited); ending the job"),
        "{r:?}"
    );
}

#[test]
fn pes_that_ignore_sigterm_are_killed() {
    let r = run(&mut pe_job(3, "busy", &[]));
    assert_eq!(r.code(), Some(3), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 1 (pid ") && r.stderr.contains("exited with status 3"), "{r:?}");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

#[test]
fn timeout_kills_a_hung_job() {
    let r = run(&mut pe_job(2, "hang", &["--timeout", "1"]));
    assert_eq!(r.code(), Some(124), "{r:?}");
    assert!(r.stderr.contains("oshrun: job timed out after 1 s; killing 2 PEs"), "{r:?}");
    assert!(r.stdout.contains("PE 0 ready") && r.stdout.contains("PE 1 ready"), "{r:?}");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

#[test]
fn timeout_from_the_environment() {
    let r = run(oshrun().args(["-n", "1", "sleep", "30"]).env("OSHRUN_TIMEOUT", "0.5"));
    assert_eq!(r.code(), Some(124), "{r:?}");
    assert!(r.stderr.contains("timed out after 0.5 s; killing 1 PEs"), "{r:?}");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

/// Start a "hang" job and wait until every PE printed `ready`; returns the child, the PE
/// pids, the start time, and the thread that reads the rest of stdout.
fn start_hung_job(n: usize) -> (Child, Vec<i32>, Instant, std::thread::JoinHandle<String>) {
    let start = Instant::now();
    let mut child = spawn_piped(&mut pe_job(n, "hang", &[]));
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    let mut line = String::new();
    while pids.len() < n {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "oshrun closed its stdout early");
        assert!(start.elapsed() < WATCHDOG);
        if let Some(pid) = line.split("ready pid ").nth(1) {
            pids.push(pid.trim().parse().unwrap());
        }
    }
    (child, pids, start, reader(out))
}

fn gone(pid: i32) -> bool {
    // A zombie waiting for its new parent to reap it counts as gone.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn sigint_to_oshrun_ends_the_job() {
    let (child, pids, start, out) = start_hung_job(2);
    // SAFETY: signalling the oshrun we started; no memory is involved.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let r = finish(child, start, out);
    assert_eq!(r.code(), Some(130), "{r:?}");
    assert!(r.stderr.contains("oshrun: caught SIGINT; killing 2 PEs"), "{r:?}");
    assert!(pids.iter().all(|&p| gone(p)), "PEs {pids:?} survived");
}

#[test]
fn pes_die_with_a_killed_oshrun() {
    let (mut child, pids, _, _out) = start_hung_job(2);
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pids.iter().all(|&p| gone(p)) {
        assert!(Instant::now() < deadline, "PEs {pids:?} outlived oshrun");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn output_is_forwarded_whole_and_tagged() {
    let script = "echo out line; echo err line >&2; printf partial";
    let r = run(oshrun().args(["--timeout", "30", "--tag-output", "-n", "2", "sh", "-c", script]));
    assert_ok(&r);
    for pe in 0..2 {
        assert!(r.stdout.contains(&format!("[PE {pe}] out line\n")), "{r:?}");
        assert!(r.stdout.contains(&format!("[PE {pe}] partial\n")), "{r:?}");
        assert!(r.stderr.contains(&format!("[PE {pe}] err line\n")), "{r:?}");
    }
    assert_eq!(r.stdout.lines().count(), 4, "{r:?}");
    let r = run(oshrun().args(["--timeout", "30", "-l", "-n", "1", "sh", "-c", "echo a"]));
    assert_eq!(r.stdout, "[PE 0] a\n", "{r:?}");
}

#[test]
fn output_untagged_and_env() {
    let r = run(oshrun().args([
        "--timeout",
        "30",
        "-x",
        "OXS_TEST_X=exported",
        "-n",
        "3",
        "sh",
        "-c",
        "echo $OXS_TEST_X $OSHRUN_NPES ${PMI_FD:+fd} $PMI_SIZE",
    ]));
    assert_ok(&r);
    assert_eq!(r.stdout, "exported 3 fd 3\n".repeat(3), "{r:?}");
    let r = run(oshrun().args([
        "--timeout",
        "30",
        "--pmi-port",
        "-n",
        "1",
        "sh",
        "-c",
        "echo ${PMI_PORT%:*} $PMI_ID ${PMI_FD:-nofd}",
    ]));
    assert_eq!(r.stdout, "127.0.0.1 0 nofd\n", "{r:?}");
}

#[test]
fn grandchildren_do_not_hold_the_job_open() {
    // The PE exits at once, leaving a background child holding its stdout.
    let r = run(oshrun().args(["--timeout", "30", "-n", "1", "sh", "-c", "sleep 20 & echo started"]));
    assert_ok(&r);
    assert_eq!(r.stdout, "started\n");
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
}

#[test]
fn program_not_found() {
    let r = run(oshrun().args(["--timeout", "30", "-n", "2", "oxshmem-no-such-program", "x"]));
    assert_eq!(r.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("\"oxshmem-no-such-program\"") && r.stderr.contains("not found"), "{r:?}");
    let r = run(oshrun().args(["-n", "1", "./no/such/path"]));
    assert_eq!(r.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("./no/such/path"), "{r:?}");
}

#[test]
fn bad_arguments() {
    for (args, want) in [
        (&["sh"][..], "missing -n"),
        (&["-n", "0", "sh"], "at least 1"),
        (&["-n", "two", "sh"], "-n needs a positive number"),
        (&["--frobnicate", "-n", "1", "sh"], "unknown option --frobnicate"),
        (&["-n", "1"], "missing the program"),
        (&["--timeout", "soon", "-n", "1", "sh"], "--timeout"),
    ] {
        let r = run(oshrun().args(args));
        assert_eq!(r.code(), Some(2), "{args:?}: {r:?}");
        assert!(r.stderr.contains(want) && r.stderr.contains("oshrun --help"), "{args:?}: {r:?}");
        assert!(r.stdout.is_empty());
    }
    let r = run(oshrun().arg("--help"));
    assert_ok(&r);
    assert!(r.stdout.starts_with("Usage: oshrun -n N"), "{r:?}");
    let r = run(oshrun().arg("--version"));
    assert_ok(&r);
    assert!(r.stdout.starts_with("oshrun (oxshmem) "), "{r:?}");
}

#[test]
fn misspelled_option_suggests_the_nearest() {
    let r = run(oshrun().args(["--timout", "5", "-n", "2", "sh", "-c", "exit 0"]));
    assert_eq!(r.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("oshrun: unknown option --timout (did you mean --timeout?)"), "{r:?}");
    assert!(r.stderr.contains("oshrun --help") && r.stdout.is_empty(), "{r:?}");
    let r = run(oshrun().args(["--tag-ouptut", "-n", "1", "sh", "-c", "exit 0"]));
    assert_eq!(r.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("unknown option --tag-ouptut (did you mean --tag-output?)"), "{r:?}");
    // Nothing close: the plain message.
    let r = run(oshrun().args(["--frobnicate", "-n", "1", "sh"]));
    assert_eq!(r.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("unknown option --frobnicate\n") && !r.stderr.contains("did you mean"), "{r:?}");
}

#[test]
fn help_explains_multi_host_launching() {
    let r = run(oshrun().arg("--help"));
    assert_ok(&r);
    assert!(r.stdout.contains("on this one host"), "{r:?}");
    assert!(r.stdout.contains("mpiexec.hydra -n 8 -hosts a,b"), "{r:?}");
    assert!(r.stdout.contains("srun --mpi=pmi2 -n 8"), "{r:?}");
    assert!(r.stdout.contains("PMI-1") && r.stdout.contains("PMI-2"), "{r:?}");
}

#[test]
fn nothing_left_in_dev_shm() {
    let list = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let before = list();
    let r = run(&mut pe_job(2, "exit3", &[]));
    assert_eq!(r.code(), Some(3), "{r:?}");
    collectives(2, &[]);
    // Only what a job could have made counts: the runtime's own names and libfabric's
    // shared-memory provider's. Other programs on the host (an OpenMPI job's vader segments,
    // UCX's) come and go meanwhile.
    let ours = |f: &String| ["oxshmem", "sem.oxshmem", "fi_", "fi-", "shm_ep", "psm"].iter().any(|p| f.starts_with(p));
    let new: Vec<String> = list().into_iter().filter(|f| !before.contains(f) && ours(f)).collect();
    assert!(new.is_empty(), "left in /dev/shm: {new:?}");
}
