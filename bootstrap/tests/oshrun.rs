//! Whole jobs launched with the real `oshrun` binary.
//!
//! The PEs are a program of their own, `tests/pe/oshrun.rs` (example `oshrun-pe`), started with
//! `OXS_OSHRUN_TEST_PE=<scenario>`; trivial fault cases use `sh -c`. Every job runs with
//! `--timeout`, and every `oshrun` is watched by a deadline here too, so no test can hang.
//!
//! No test asserts how fast anything happened: CI runs these beside jobs of up to 16 PEs on 2
//! cores, where any wall-clock figure can be inflated without a bug. Deadlines here are hang
//! guards (generous, and failing loudly), and what a test checks instead is *why* the job
//! ended — oshrun's exit status and message say whether a PE's death, an abort or the job's
//! `--timeout` ended it, so "the death ended the job, not the 30 s timeout nor the watchdog"
//! needs no clock. A test whose precondition needs time to set up (PEs ready before a short
//! `--timeout`) checks that it held and retries with a longer timeout when it did not, rather
//! than passing without having tested anything. What `oshrun` promises about latency (a dead PE
//! ends the job within 2 s) rests on its event-driven design and constants (`SIGCHLD` wakes it,
//! [`KILL_GRACE`] later comes SIGKILL): see [`death_watch_bounds`].

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use oxshmem_bootstrap::launcher::job::{CLOSE_GRACE, DRAIN, KILL_GRACE};

const PE_VAR: &str = "OXS_OSHRUN_TEST_PE";
/// A folder the PEs of one job share (for the stranger scenarios' hand-over).
const DIR_VAR: &str = "OXS_OSHRUN_TEST_DIR";
/// Set to a fresh value on one `oshrun`: its PEs and whatever they start inherit it, so that
/// the job's processes can be found in `/proc` (see [`processes_with_token`]).
const TOKEN_VAR: &str = "OXS_OSHRUN_TEST_JOB";
/// Upper bound for any `oshrun` run here; jobs themselves use `--timeout 30` or less.
const WATCHDOG: Duration = Duration::from_secs(60);

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
        .arg(common::pe_program("oshrun-pe"))
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

/// The job was ended by what oshrun's message names (a PE's death, an abort), not by its
/// `--timeout` (exit status 124, "timed out", a hang report) nor by [`WATCHDOG`] (which
/// [`finish`] turns into a panic): evidence that needs no clock that the death watch, not a
/// timer, ended it.
#[track_caller]
fn ended_by_the_death_watch(r: &Run) {
    assert_ne!(r.code(), Some(124), "the job ran into its --timeout: {r:?}");
    assert!(!r.stderr.contains("timed out") && !r.stderr.contains("hang report"), "{r:?}");
}

/// The 2 s within which a dead PE ends its job (README), as oshrun's design makes it: the death
/// wakes oshrun at once (`SIGCHLD` on its self-pipe, with a 250 ms tick as the safety net), the
/// other PEs get SIGTERM then and SIGKILL [`KILL_GRACE`] later, and output is drained for at
/// most [`DRAIN`] once they are gone. This checks the constants, not a measurement: on a loaded
/// machine any wall-clock figure may come out late without a bug, so the tests below check
/// *what* ended each job instead ([`ended_by_the_death_watch`]).
#[test]
fn death_watch_bounds() {
    // job.rs's TICK, which is private.
    let tick = Duration::from_millis(250);
    assert!(tick + KILL_GRACE + DRAIN < Duration::from_secs(2), "{KILL_GRACE:?} + {DRAIN:?}");
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
    ended_by_the_death_watch(&r);
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
    ended_by_the_death_watch(&r);
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
    ended_by_the_death_watch(&r);
}

#[test]
fn exit_zero_without_finalize_is_a_failure() {
    let r = run(&mut pe_job(2, "no_finalize", &[]));
    assert_eq!(r.code(), Some(1), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 0 (pid "), "{r:?}");
    assert!(r.stderr.contains("exited with status 0 without finalizing"), "{r:?}");
    ended_by_the_death_watch(&r);
}

#[test]
fn barrier_that_can_never_complete_ends_the_job() {
    let r = run(&mut pe_job(3, "finalize_early", &[]));
    assert_eq!(r.code(), Some(1), "{r:?}");
    ended_by_the_death_watch(&r);
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
    ended_by_the_death_watch(&r);
}

/// Runs `attempt` with `--timeout` values from `first` seconds, doubling up to 32 s, until
/// one run could establish its precondition (`attempt` returns `Some`): a short timeout keeps
/// the test quick, but on a loaded machine the PEs may not even be ready before it. Fails
/// when no timeout was long enough, showing the last run; never passes without a run that
/// tested something.
fn with_growing_timeout<T>(first: f64, mut attempt: impl FnMut(&str) -> Result<T, Run>) -> T {
    let mut t = first;
    loop {
        let text = t.to_string();
        match attempt(&text) {
            Ok(v) => return v,
            Err(r) if t * 2.0 <= 32.0 => {
                eprintln!("--timeout {text} was too short for the precondition here; retrying: {r:?}");
                t *= 2.0;
            }
            Err(r) => panic!("not even --timeout {text} was long enough for the precondition: {r:?}"),
        }
    }
}

/// A timeout the job's own clock started counting before this test's: what `oshrun` reports
/// can come late on a loaded machine, never early.
#[track_caller]
fn lasted_at_least(r: &Run, secs: &str) {
    let t = Duration::from_secs_f64(secs.parse().unwrap());
    assert!(r.elapsed >= t, "the job ended before its --timeout {secs}: {r:?}");
}

/// The timeout ends a job whose PEs all started and hang (the precondition: both said `ready`
/// before the timeout; with a longer one otherwise).
#[test]
fn timeout_kills_a_hung_job() {
    with_growing_timeout(1.0, |t| {
        let r = run(&mut pe_job(2, "hang", &["--timeout", t]));
        assert_eq!(r.code(), Some(124), "{r:?}");
        assert!(r.stderr.contains(&format!("oshrun: job timed out after {t} s")), "{r:?}");
        lasted_at_least(&r, t);
        if !(r.stdout.contains("PE 0 ready") && r.stdout.contains("PE 1 ready")) {
            return Err(r);
        }
        assert!(r.stderr.contains(&format!("oshrun: job timed out after {t} s; killing 2 PEs")), "{r:?}");
        Ok(())
    });
}

/// `OSHRUN_TIMEOUT` is the default `--timeout` (whether the timeout found the PE started or
/// still starting: either message names the timeout).
#[test]
fn timeout_from_the_environment() {
    let r = run(oshrun().args(["-n", "1", "sleep", "30"]).env("OSHRUN_TIMEOUT", "0.5"));
    assert_eq!(r.code(), Some(124), "{r:?}");
    assert!(r.stderr.contains("oshrun: job timed out after 0.5 s"), "{r:?}");
    lasted_at_least(&r, "0.5");
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

/// A started job whose PEs all said they are ready: the child, the PE pids, the start time,
/// and the thread that reads the rest of stdout.
type Ready = (Child, Vec<i32>, Instant, std::thread::JoinHandle<String>);

/// Start a job of `scenario` (as [`start_hung_job`]); `Err` with the finished run when the job
/// ended before every PE was ready (its `--timeout` came first, say).
fn start_job_until_ready(n: usize, scenario: &str, opts: &[&str]) -> Result<Ready, Run> {
    let start = Instant::now();
    let mut child = spawn_piped(&mut pe_job(n, scenario, opts));
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut pids = vec![0; n];
    let mut line = String::new();
    let mut seen = String::new();
    while pids.contains(&0) {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            let rest = reader(out);
            let mut r = finish(child, start, rest);
            r.stdout.insert_str(0, &seen);
            return Err(r);
        }
        seen += &line;
        assert!(start.elapsed() < WATCHDOG);
        if let Some((head, pid)) = line.split_once(" ready pid ") {
            let rank: usize = head.rsplit("PE ").next().unwrap().parse().unwrap();
            pids[rank] = pid.trim().parse().unwrap();
        }
    }
    Ok((child, pids, start, reader(out)))
}

/// The hang report's lines (after `oshrun:   PE n: `) that follow the heading for `why`.
fn report_lines(stderr: &str, why: &str, n: usize) -> Vec<String> {
    let head = format!("oshrun: hang report ({why}, ");
    let at = stderr.find(&head).unwrap_or_else(|| panic!("no hang report ({why}) in {stderr:?}"));
    stderr[at..]
        .lines()
        .skip(1)
        .take(n)
        .enumerate()
        .map(|(pe, l)| {
            let p = format!("oshrun:   PE {pe}: ");
            l.strip_prefix(&p).unwrap_or_else(|| panic!("{l:?} is not PE {pe}'s line in {stderr:?}")).to_string()
        })
        .collect()
}

/// What the PEs wrote into the status table, and the state of a stopped one, on SIGQUIT (the
/// job goes on) and on the timeout (before the PEs are killed). The precondition — every PE
/// ready, one stopped and the SIGQUIT report printed, all before the timeout — is checked,
/// with a longer timeout when it did not hold.
#[test]
fn hang_report_on_sigquit_and_on_timeout() {
    let (r, pids, t) = with_growing_timeout(4.0, |t| {
        let (child, pids, start, out) = start_job_until_ready(5, "status", &["--timeout", t]).map_err(|r| {
            assert_eq!(r.code(), Some(124), "the job ended before its PEs were ready: {r:?}");
            r
        })?;
        // SAFETY: stopping one of our job's PEs; no memory is involved.
        unsafe { libc::kill(pids[4], libc::SIGSTOP) };
        let stopping = Instant::now();
        while std::fs::read_to_string(format!("/proc/{}/stat", pids[4])).is_ok_and(|s| !s.contains(") T")) {
            assert!(stopping.elapsed() < WATCHDOG, "PE 4 (pid {}) never stopped", pids[4]);
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: signalling the oshrun we started.
        unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
        let r = finish(child, start, out);
        assert_eq!(r.code(), Some(124), "the job went on to its timeout: {r:?}");
        let timeout = r.stderr.find(&format!("oshrun: job timed out after {t} s")).expect("timed out");
        match r.stderr.find("hang report (SIGQUIT") {
            Some(quit) if quit < timeout => Ok((r, pids, t.to_string())),
            // The timeout came before oshrun got to the SIGQUIT.
            _ => Err(r),
        }
    });
    for why in ["SIGQUIT", "timeout"] {
        let l = report_lines(&r.stderr, why, 5);
        assert!(l[0].starts_with("in shmem_barrier_all (world, collective #7) for "), "{r:?}");
        assert!(l[0].ends_with(" s, waiting for PE 1"), "{r:?}");
        assert!(l[1].starts_with("in shmem_wait_until (on 0x1000) for "), "{r:?}");
        assert!(l[2].starts_with("running (last: shmem_long_sum_reduce (world, collective #6), left "), "{r:?}");
        assert!(l[2].ends_with(" s ago)"), "{r:?}");
        assert_eq!(l[3], "running (no blocking oxshmem call seen)", "{r:?}");
        assert!(l[4].starts_with("stopped (SIGSTOP)"), "{r:?}");
    }
    let quit = r.stderr.find("hang report (SIGQUIT").unwrap();
    let timeout = r.stderr.find(&format!("oshrun: job timed out after {t} s")).expect("timed out");
    assert!(quit < timeout && timeout < r.stderr.find("hang report (timeout").unwrap(), "{r:?}");
    assert!(pids.iter().all(|&p| gone(p)), "PEs {pids:?} survived");
}

/// A program that is not an oxshmem program, under oshrun: the report says what it can. (A
/// timeout that comes while the PEs are still being started prints no report: then again,
/// longer.)
#[test]
fn hang_report_without_status() {
    with_growing_timeout(0.5, |t| {
        let r = run(oshrun().args(["--timeout", t, "-n", "2", "sleep", "30"]));
        assert_eq!(r.code(), Some(124), "{r:?}");
        if r.stderr.contains("while starting PEs") {
            return Err(r);
        }
        let l = report_lines(&r.stderr, "timeout", 2);
        assert_eq!(l, ["running (not initialized: no PMI init yet)"; 2], "{r:?}");
        Ok(())
    });
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
    // A hang guard: the kernel delivers the PEs' parent-death signal at once, but they need
    // a core to die on.
    let deadline = Instant::now() + WATCHDOG;
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

/// The PE exits at once, leaving a background child holding its stdout: oshrun ends without
/// waiting for that child (which it leaves alone, the job having succeeded). The evidence
/// needs no clock: the child is still there after oshrun has exited.
#[test]
fn grandchildren_do_not_hold_the_job_open() {
    let token = unique("job");
    let r = run(oshrun()
        .args(["--timeout", "30", "-n", "1", "sh", "-c", "sleep 1000 & echo started"])
        .env(TOKEN_VAR, &token));
    let left = processes_with_token(&token);
    for &pid in &left {
        // SAFETY: kill(2) has no memory effects; the pid carries our job's token.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_ok(&r);
    assert_eq!(r.stdout, "started\n");
    assert_eq!(left.len(), 1, "the PE's child holding its stdout, alive when oshrun ended: {r:?}");
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

// ---------------------------------------------------------------- PMI port strangers

static UNIQUE: AtomicUsize = AtomicUsize::new(0);

/// A name no other test or test run uses.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("oxs-oshrun-{what}-{}-{}-{nanos}", std::process::id(), UNIQUE.fetch_add(1, Ordering::Relaxed))
}

/// A fresh folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let p = std::env::temp_dir().join(unique("dir"));
        std::fs::create_dir(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stranger_job(scenario: &str) {
    let dir = TempDir::new();
    let r = run(pe_job(2, scenario, &["--pmi-port"]).env(DIR_VAR, &dir.0));
    assert_ok(&r);
    assert!(r.stdout.contains("PE 0: ok") && r.stdout.contains("PE 1: ok"), "{r:?}");
    assert_eq!(r.stderr.matches("oshrun: refusing a PMI connection from 127.0.0.1:").count(), 3, "{r:?}");
    assert!(r.stderr.contains("did not present this job's token"), "{r:?}");
    assert!(!r.stderr.contains("abort") && !r.stderr.contains("ending the job"), "{r:?}");
}

/// Anyone on the host may connect to `--pmi-port`'s port: one that claims a PE's id and
/// calls abort (without the job's token) is refused, and the job goes on to succeed.
#[test]
fn a_stranger_on_the_pmi_port_cannot_abort_the_job() {
    stranger_job("stranger_abort");
}

/// A stranger that claims a PE's id first does not take it from the real PE.
#[test]
fn a_stranger_on_the_pmi_port_cannot_claim_a_pe() {
    stranger_job("stranger_claim");
}

/// Each `--pmi-port` job has its own token, 256 random bits in hex, in every PE's
/// environment; an inherited one is replaced, and the `PMI_FD` mode has none.
#[test]
fn pmi_port_token_is_per_job_and_only_for_the_port() {
    let show = "echo ${#OXSHMEM_PMI_TOKEN} ${OXSHMEM_PMI_TOKEN:-none}";
    let job = |opts: &[&str]| {
        let r = run(oshrun()
            .args(["--timeout", "30"])
            .args(opts)
            .args(["-n", "2", "sh", "-c", show])
            .env("OXSHMEM_PMI_TOKEN", "outer"));
        assert_ok(&r);
        let lines: Vec<String> = r.stdout.lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 2, "{r:?}");
        assert_eq!(lines[0], lines[1], "both PEs of a job share its token: {r:?}");
        lines[0].clone()
    };
    let a = job(&["--pmi-port"]);
    let b = job(&["--pmi-port"]);
    let (len, token) = a.split_once(' ').unwrap();
    assert_eq!(len, "64", "{a}");
    assert!(token.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b, "two jobs got the same token");
    assert_eq!(job(&[]), "0 none");
}

// ---------------------------------------------------------------- absurd -n, failed starts

#[test]
fn absurd_npes_is_a_usage_error() {
    // Only values whose allocation fails at once: a launcher without the check must not go on to
    // start a million processes here (the cap itself is tested in `args`).
    for n in ["99999999999", "99999999999999999999999999"] {
        let r = run(oshrun().args(["--timeout", "30", "-n", n, "true"]));
        assert_eq!(r.code(), Some(2), "-n {n}: {r:?}");
        assert!(r.stderr.contains(&format!("oshrun: -n {n}: too many PEs; oshrun starts at most 1048576")), "{r:?}");
        assert!(!r.stderr.contains("memory allocation"), "{r:?}");
    }
}

/// The pids of the live (not zombie) processes whose environment has `TOKEN_VAR=token`.
fn processes_with_token(token: &str) -> Vec<i32> {
    let needle = format!("{TOKEN_VAR}={token}");
    let mut pids = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in dir.filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) && !gone(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// Wait up to `within` (a bound on a hang, not a speed requirement: it only runs out when the
/// test fails) for every process of the job to be gone; returns those still there, after
/// killing them so they do not linger.
fn survivors(token: &str, within: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let left = processes_with_token(token);
        if left.is_empty() {
            return left;
        }
        if start.elapsed() > within {
            for &pid in &left {
                // SAFETY: kill(2) has no memory effects; the pid carries our job's token.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `oshrun -n 100000 sleep 100` with at most 64 open files for oshrun: it cannot start
/// more than a handful of PEs (3 descriptors each), so it never starts 100000 processes.
/// `pending_sigterm` starts it with a SIGTERM already pending (blocked, then raised): it
/// arrives as soon as oshrun unblocks it, while the first PEs are being started.
fn failing_start(extra: &[&str], pending_sigterm: bool) -> (Run, String) {
    let token = unique("job");
    let mut cmd = oshrun();
    cmd.args(["--timeout", "30"]).args(extra).args(["-n", "100000", "sleep", "100"]).env(TOKEN_VAR, &token);
    // SAFETY: between fork and exec only async-signal-safe calls (setrlimit, sigprocmask,
    // kill, getpid) on stack values.
    unsafe {
        cmd.pre_exec(move || {
            let rl = libc::rlimit { rlim_cur: 64, rlim_max: 64 };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if pending_sigterm {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGTERM);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                libc::kill(libc::getpid(), libc::SIGTERM);
            }
            Ok(())
        })
    };
    let r = run(&mut cmd);
    let left = survivors(&token, WATCHDOG);
    assert!(left.is_empty(), "processes {left:?} of the job outlived oshrun: {r:?}");
    (r, token)
}

#[test]
fn a_failed_start_ends_the_pes_already_started() {
    let (r, _) = failing_start(&[], false);
    assert_eq!(r.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("oshrun: cannot start PE ") && r.stderr.contains("Too many open files"), "{r:?}");
    assert!(r.stderr.contains("PEs already started"), "{r:?}");
}

#[test]
fn sigterm_while_starting_pes_is_heeded() {
    let (r, _) = failing_start(&[], true);
    assert_eq!(r.code(), Some(128 + libc::SIGTERM), "{r:?}");
    assert!(r.stderr.contains("oshrun: caught SIGTERM while starting PEs ("), "{r:?}");
    assert!(!r.stderr.contains("cannot start PE"), "{r:?}");
}

#[test]
fn timeout_while_starting_pes_is_heeded() {
    // A timeout of one nanosecond has passed before the first PE could start.
    let (r, _) = failing_start(&["--timeout", "0.000000001"], false);
    assert_eq!(r.code(), Some(124), "{r:?}");
    assert!(
        r.stderr.contains("oshrun: job timed out after 0.000000001 s while starting PEs (0 of 100000 started)"),
        "{r:?}"
    );
    assert!(!r.stderr.contains("cannot start PE"), "{r:?}");
}

// ---------------------------------------------------------------- what a dead PE leaves

/// PE 1 starts a background child (in its own process group) and is the first PE to fail:
/// its child is killed with the job, like the other PEs' groups.
#[test]
fn children_of_the_first_pe_to_die_are_killed() {
    let token = unique("job");
    let script = r#"if [ "$PMI_RANK" = 1 ]; then sleep 1000 & echo "child $!"; exit 3; fi; exec sleep 1000"#;
    let r = run(oshrun().args(["--timeout", "30", "-n", "3", "sh", "-c", script]).env(TOKEN_VAR, &token));
    assert_eq!(r.code(), Some(3), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 1 (pid ") && r.stderr.contains("exited with status 3"), "{r:?}");
    assert!(r.stdout.contains("child "), "{r:?}");
    let left = survivors(&token, WATCHDOG);
    assert!(left.is_empty(), "processes {left:?} of the job outlived it: {r:?}");
}

/// A PE that exited 0 keeps its children when the job succeeds (a daemon it started is its
/// business), but not when the job fails later. PE 1 fails only once PE 0 has exited (a
/// zombie, or gone): a fixed pause could end first on a loaded machine, and then PE 0 would
/// not yet be a PE that exited ok.
#[test]
fn children_of_a_pe_that_exited_ok_die_when_the_job_fails() {
    let token = unique("job");
    let dir = TempDir::new();
    let script = r#"case "$PMI_RANK" in
        0) sleep 1000 & echo $$ > "$D/pe0.tmp" && mv "$D/pe0.tmp" "$D/pe0"; exit 0;;
        1) while [ ! -s "$D/pe0" ]; do sleep 0.01; done; p=$(cat "$D/pe0")
           while [ -e /proc/$p ] && [ "$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)" != Z ]; do sleep 0.01; done
           exit 4;;
        esac; exec sleep 1000"#;
    let r =
        run(oshrun().args(["--timeout", "30", "-n", "3", "sh", "-c", script]).env(TOKEN_VAR, &token).env("D", &dir.0));
    assert_eq!(r.code(), Some(4), "{r:?}");
    ended_by_the_death_watch(&r);
    let left = survivors(&token, WATCHDOG);
    assert!(left.is_empty(), "processes {left:?} of the job outlived it: {r:?}");
}

// ---------------------------------------------------------------- closed PMI connections

fn closed_connection(opts: &[&str]) {
    let mut all = vec!["--timeout", "15"];
    all.extend_from_slice(opts);
    let r = run(&mut pe_job(3, "close_pmi", &all));
    assert_eq!(r.code(), Some(1), "{r:?}");
    assert!(r.stdout.contains("PE 1 closed its connection"), "{r:?}");
    assert!(r.stderr.contains("oshrun: PE 1 closed its PMI connection without finalizing (pid "), "{r:?}");
    assert_eq!(r.stderr.matches("ending the job").count(), 1, "{r:?}");
}

/// A PE that closes its PMI connection without finalizing and runs on ends the job (before,
/// the others waited in their barrier until the timeout).
#[test]
fn a_pe_that_closes_its_pmi_connection_ends_the_job() {
    closed_connection(&[]);
}

#[test]
fn a_pe_that_closes_its_pmi_port_connection_ends_the_job() {
    closed_connection(&["--pmi-port"]);
}

/// Closing after finalize is fine, in both modes.
#[test]
fn a_pe_may_close_its_pmi_connection_after_finalize() {
    for opts in [&[][..], &["--pmi-port"]] {
        let r = run(&mut pe_job(2, "finalize_then_close", opts));
        assert_ok(&r);
        assert!(r.stdout.contains("PE 0: still fine") && r.stdout.contains("PE 1: still fine"), "{r:?}");
    }
}

/// A program that never speaks PMI may close the inherited socket and run on.
#[test]
fn a_pe_that_never_spoke_pmi_may_close_its_socket() {
    // Closed for longer than oshrun's grace for a closed connection.
    let script = format!(r#"eval "exec $PMI_FD>&-"; sleep {}; echo done"#, CLOSE_GRACE.as_secs() + 1);
    let r = run(oshrun().args(["--timeout", "30", "-n", "2", "sh", "-c", &script]));
    assert_ok(&r);
    assert_eq!(r.stdout, "done\ndone\n", "{r:?}");
}

/// Each PE's `Cpus_allowed_list`, as `PE <rank> <list>` lines of a shell job's output.
fn bound_cpus(r: &Run, n: usize) -> Vec<String> {
    (0..n)
        .map(|pe| {
            let want = format!("PE {pe} ");
            let line =
                r.stdout.lines().find(|l| l.starts_with(&want)).unwrap_or_else(|| panic!("no line for PE {pe}: {r:?}"));
            line[want.len()..].trim().to_string()
        })
        .collect()
}

fn cpus_job(n: usize, opts: &[&str], taskset: Option<&str>) -> Run {
    let script = "echo \"PE $PMI_RANK $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status) $OSHRUN_CPUS $OSHRUN_CPU_LIST\"";
    let mut c = match taskset {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus]).arg(env!("CARGO_BIN_EXE_oshrun"));
            c
        }
        None => oshrun(),
    };
    c.args(["--timeout", "30"]).args(opts).args(["-n", &n.to_string(), "sh", "-c", script]);
    let r = run(&mut c);
    assert_ok(&r);
    r
}

/// The CPUs this test may use (its affinity), as `taskset -c` lists them.
fn my_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// PEs that fit are bound one per CPU of oshrun's own set by default (on machines whose
/// CPUs are each a core, as here; `bind::plan`'s unit tests cover hardware threads), each PE
/// told which CPUs the job has (`OSHRUN_CPUS`, `OSHRUN_CPU_LIST`); more PEs than CPUs stay unbound; `--bind-to none` binds
/// nothing; an inherited set (`taskset`) is what the PEs are bound within.
#[test]
fn pes_are_bound_to_cores_when_they_fit() {
    let cpus = my_cpus();
    let all = if cpus.len() == 1 { cpus[0].to_string() } else { format!("{}-{}", cpus[0], cpus[cpus.len() - 1]) };
    let contiguous = cpus.windows(2).all(|w| w[1] == w[0] + 1);
    let n = cpus.len().min(2);
    let r = cpus_job(n, &["--report-bindings"], None);
    let got = bound_cpus(&r, n);
    for (pe, line) in got.iter().enumerate() {
        let (list, job) = line.split_once(' ').unwrap();
        let (count, job_list) = job.split_once(' ').unwrap();
        assert_eq!(count, cpus.len().to_string(), "PE {pe}'s OSHRUN_CPUS: {r:?}");
        if contiguous {
            assert_eq!(job_list, all, "PE {pe}'s OSHRUN_CPU_LIST: {r:?}");
        }
        let sibling_free =
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{}/topology/thread_siblings_list", cpus[pe]))
                .map(|s| s.trim() == cpus[pe].to_string())
                .unwrap_or(true);
        if sibling_free {
            assert_eq!(list, cpus[pe].to_string(), "PE {pe} bound to its own CPU: {r:?}");
        }
        assert!(r.stderr.contains(&format!("oshrun: PE {pe} bound to CPUs")), "{r:?}");
    }
    if contiguous {
        // Unbound: the whole set.
        let r = cpus_job(cpus.len() + 1, &[], None);
        assert!(bound_cpus(&r, cpus.len() + 1).iter().all(|l| l.starts_with(&format!("{all} "))), "{r:?}");
        let r = cpus_job(1, &["--bind-to", "none"], None);
        assert!(bound_cpus(&r, 1)[0].starts_with(&format!("{all} ")), "{r:?}");
    }
    // Within an inherited set: the last CPU only.
    let last = cpus[cpus.len() - 1].to_string();
    let r = cpus_job(1, &[], Some(&last));
    assert_eq!(bound_cpus(&r, 1)[0], format!("{last} 1 {last}"), "{r:?}");
    // A bad policy is a usage error.
    let r = run(oshrun().args(["--bind-to", "hwthread", "-n", "1", "true"]));
    assert_eq!(r.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("expected none, core or socket"), "{r:?}");
}
