//! The harness of oxshmem's multi-PE integration tests.
//!
//! Two halves live here. The *launcher side* ([`run_job`], [`Job`], [`assert_job_ok`], ...)
//! is used by the integration tests in `tests/`: it finds `oshrun` (building it once if
//! needed), starts a real job of one of the PE programs in `src/bin/`, and collects its exit
//! status, output and duration. Every job has two limits: `oshrun --timeout` (60 s unless a
//! test asks otherwise) and a hard wall-clock limit on the `oshrun` process itself, past which
//! the harness kills the launcher and every process that carries the job's token, so that no
//! test can hang.
//!
//! The *PE side* ([`pe`]) is used by the PE programs: a dispatcher for their sub-commands and
//! checks that end the PE with a message naming the PE, the operation, and the expected and
//! actual values.
//!
//! This crate never touches the runtime's internals: PE programs use only `oxshmem`'s public
//! API, exactly as a user would.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub mod pe;
pub mod wqe;

/// The `--timeout` every job gets unless it asks for another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The default `--timeout` of a job on the network path that [`TEST_TRANSPORT_VAR`] forces:
/// every operation between PEs then needs the target's progress, and 8 PEs with their progress
/// threads on 2 shared cores take several times longer than over shared memory.
pub const FORCED_TRANSPORT_TIMEOUT: Duration = Duration::from_secs(180);

/// How much longer than its `--timeout` a job may run before the harness kills `oshrun`.
pub const HARD_LIMIT_SLACK: Duration = Duration::from_secs(30);

/// Name of the environment variable that marks every process of one job (see [`JobResult::token`]).
pub const TOKEN_VAR: &str = "OXSHMEM_TESTS_JOB";

/// Set to a path to run the jobs under that launcher instead of the workspace's own `oshrun`.
pub const OSHRUN_VAR: &str = "OXSHMEM_TESTS_OSHRUN";

/// Set to `ofi` to force the network path in every job the harness starts (see
/// [`forced_transport_env`]): the same tests then check the libfabric transport. The PE
/// programs must be built with it (`cargo test -p oxshmem-tests --features ofi ...`).
pub const TEST_TRANSPORT_VAR: &str = "OXSHMEM_TEST_TRANSPORT";

/// The environment [`TEST_TRANSPORT_VAR`] adds to every job that does not opt out
/// ([`Job::shm_only`]) or choose `OXSHMEM_TRANSPORT` itself: `OXSHMEM_TRANSPORT=ofi` (no peer
/// mapped, every operation through libfabric) over `tcp;ofi_rxm` on the loopback interface,
/// the one provider of this libfabric that runs every case (`udp;ofi_rxd` crashes inside
/// libfabric). A variable already set in the test runner's environment (`FI_PROVIDER`, ...)
/// wins over these defaults, so another provider can be tried without editing anything.
/// Empty when the variable is unset or `shm`/`auto`.
///
/// # Panics
/// If the variable names a transport the harness does not know.
pub fn forced_transport_env() -> Vec<(String, String)> {
    let v = std::env::var(TEST_TRANSPORT_VAR).unwrap_or_default();
    match v.trim() {
        "" | "auto" | "shm" => Vec::new(),
        "ofi" => {
            if !oxshmem::transport::NETWORK_TRANSPORTS.contains(&"ofi") {
                panic!(
                    "{TEST_TRANSPORT_VAR}=ofi needs PE programs with the ofi transport: \
                     cargo test -p oxshmem-tests --features ofi"
                );
            }
            let mut env = vec![("OXSHMEM_TRANSPORT".to_string(), "ofi".to_string())];
            for (k, default) in [
                ("FI_PROVIDER", "tcp;ofi_rxm"),
                ("FI_TCP_IFACE", "lo"),
                ("FI_SOCKETS_IFACE", "lo"),
                ("OXSHMEM_TIMEOUT", "30"),
            ] {
                let value = std::env::var(k).unwrap_or_else(|_| default.to_string());
                env.push((k.to_string(), value));
            }
            env
        }
        other => panic!("{TEST_TRANSPORT_VAR}={other:?}: expected ofi, shm or auto"),
    }
}

/// The `oshrun` launcher beside the test executable (`target/<profile>/oshrun`), built once with
/// `cargo build -p oxshmem-bootstrap --bin oshrun` if it is not there yet, or if a source file
/// of the bootstrap crate is newer than it (`cargo test -p oxshmem-tests` does not build other
/// packages' binaries, and a stale launcher would test yesterday's code). [`OSHRUN_VAR`]
/// overrides the choice.
///
/// # Panics
/// If the launcher cannot be found or built.
pub fn oshrun() -> PathBuf {
    static OSHRUN: OnceLock<PathBuf> = OnceLock::new();
    OSHRUN
        .get_or_init(|| {
            if let Some(p) = std::env::var_os(OSHRUN_VAR) {
                return PathBuf::from(p);
            }
            let profile_dir = profile_dir();
            let path = profile_dir.join("oshrun");
            if !path.exists() || launcher_sources_newer_than(&path) {
                build_oshrun(&profile_dir);
            }
            assert!(path.exists(), "oshrun not found at {} even after building it", path.display());
            path
        })
        .clone()
}

/// Whether any file of the bootstrap crate (which holds `oshrun`) changed after `bin` was built.
fn launcher_sources_newer_than(bin: &Path) -> bool {
    fn newest(p: &Path) -> Option<SystemTime> {
        let meta = std::fs::metadata(p).ok()?;
        if meta.is_dir() {
            std::fs::read_dir(p).ok()?.filter_map(|e| e.ok()).filter_map(|e| newest(&e.path())).max()
        } else {
            meta.modified().ok()
        }
    }
    let built = std::fs::metadata(bin).and_then(|m| m.modified()).ok();
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bootstrap");
    let src = [crate_dir.join("src"), crate_dir.join("Cargo.toml")].iter().filter_map(|p| newest(p)).max();
    matches!((built, src), (Some(b), Some(s)) if s > b)
}

/// `target/<profile>`: the directory above the test executable's `deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("the test executable has a directory").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

fn build_oshrun(profile_dir: &Path) {
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_string(),
        Some(other) => other.to_string(),
    };
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let status = Command::new(cargo)
        .args(["build", "-p", "oxshmem-bootstrap", "--bin", "oshrun", "--profile", &profile, "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null())
        .status()
        .expect("running cargo to build oshrun");
    assert!(status.success(), "cargo build of oshrun failed: {status}");
}

/// What a finished job left behind.
#[derive(Debug)]
pub struct JobResult {
    /// `oshrun`'s exit status (or the status of the program itself, for [`Job::direct`]).
    pub status: ExitStatus,
    /// Everything the job wrote to standard output.
    pub stdout: String,
    /// Everything the job wrote to standard error.
    pub stderr: String,
    /// From the start of `oshrun` to its exit.
    pub elapsed: Duration,
    /// Wall-clock time at which `oshrun` was seen to exit.
    pub ended: SystemTime,
    /// Whether the harness had to kill `oshrun` at the hard limit (always a test failure).
    pub hard_killed: bool,
    /// The value of [`TOKEN_VAR`] in every process of the job.
    pub token: String,
    /// The pid of `oshrun` (or of the program itself, for [`Job::direct`]).
    pub launcher_pid: u32,
    /// The command line, for messages.
    pub command: String,
}

impl JobResult {
    /// The exit code, if the launcher exited rather than being killed.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// A report of the whole job, for assertion messages.
    pub fn report(&self) -> String {
        format!(
            "job: {}\nstatus: {} (after {:.2?}{})\n--- stdout ---\n{}--- stderr ---\n{}--------------",
            self.command,
            self.status,
            self.elapsed,
            if self.hard_killed { ", KILLED BY THE HARNESS at its hard limit" } else { "" },
            self.stdout,
            self.stderr
        )
    }

    /// Lines of standard output that start with `prefix`, with the prefix removed.
    pub fn stdout_lines_with(&self, prefix: &str) -> Vec<&str> {
        self.stdout.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
    }
}

/// A job to run: `oshrun -n N --timeout T -- program args...`.
#[derive(Debug, Clone)]
pub struct Job {
    npes: usize,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// `None`: [`DEFAULT_TIMEOUT`], or [`FORCED_TRANSPORT_TIMEOUT`] on a forced network path.
    timeout: Option<Duration>,
    slack: Duration,
    launcher_args: Vec<String>,
    direct: bool,
    /// Why this job must keep the shared-memory path when [`TEST_TRANSPORT_VAR`] forces another.
    shm_only: Option<&'static str>,
    /// A PE to stop (SIGSTOP) once this long has passed since the start.
    freeze: Option<(usize, Duration)>,
}

impl Job {
    /// `npes` copies of `program` under `oshrun`.
    pub fn new(npes: usize, program: impl AsRef<Path>) -> Job {
        Job {
            npes,
            program: program.as_ref().to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            timeout: None,
            slack: HARD_LIMIT_SLACK,
            launcher_args: Vec::new(),
            direct: false,
            shm_only: None,
            freeze: None,
        }
    }

    /// `program` started on its own, without a launcher (a singleton: PE 0 of 1).
    pub fn direct(program: impl AsRef<Path>) -> Job {
        Job { direct: true, ..Job::new(1, program) }
    }

    /// Appends arguments for the program.
    pub fn args<S: AsRef<str>>(mut self, args: &[S]) -> Job {
        self.args.extend(args.iter().map(|s| s.as_ref().to_string()));
        self
    }

    /// Sets an environment variable in every PE.
    pub fn env(mut self, key: &str, value: &str) -> Job {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Sets each of `vars` in the job's environment, as [`env`](Self::env) does.
    pub fn envs(self, vars: &[(&str, &str)]) -> Job {
        vars.iter().fold(self, |job, (k, v)| job.env(k, v))
    }

    /// Replaces the default `--timeout` (60 s, or 180 s on a forced network path).
    pub fn timeout(mut self, t: Duration) -> Job {
        self.timeout = Some(t);
        self
    }

    /// Replaces [`HARD_LIMIT_SLACK`]: how long past its timeout the job may run before the
    /// harness kills it.
    pub fn hard_limit_slack(mut self, slack: Duration) -> Job {
        self.slack = slack;
        self
    }

    /// Extra `oshrun` options (before the program), e.g. `--tag-output`.
    pub fn launcher_arg(mut self, a: &str) -> Job {
        self.launcher_args.push(a.to_string());
        self
    }

    /// Keeps this job on the default transports when [`TEST_TRANSPORT_VAR`] forces the network
    /// path: its point holds only for shared memory (`reason` says why, for the reader).
    pub fn shm_only(mut self, reason: &'static str) -> Job {
        self.shm_only = Some(reason);
        self
    }

    /// Stops PE `pe` (the process whose `PMI_RANK` is `pe`) with SIGSTOP once `after` has passed
    /// since the job started: it then neither runs nor serves its peers, like a hung host, and
    /// the test sees what its peers report. The harness kills it when the job ends.
    pub fn freeze_pe(mut self, pe: usize, after: Duration) -> Job {
        self.freeze = Some((pe, after));
        self
    }

    /// The environment the job's processes get on top of the runner's: what
    /// [`TEST_TRANSPORT_VAR`] forces (unless the job opted out or set `OXSHMEM_TRANSPORT`),
    /// then the job's own variables.
    pub fn environment(&self) -> Vec<(String, String)> {
        let chose = self.env.iter().any(|(k, _)| k == "OXSHMEM_TRANSPORT");
        let mut env = if self.shm_only.is_some() || chose || self.direct { Vec::new() } else { forced_transport_env() };
        // The job's own settings win (a test that sets OXSHMEM_TIMEOUT keeps it).
        env.retain(|(k, _)| !self.env.iter().any(|(j, _)| j == k));
        env.extend(self.env.iter().cloned());
        env
    }

    /// Runs the job to its end (or to the hard limit) and returns what happened.
    pub fn run(&self) -> JobResult {
        let token = new_token();
        let env = self.environment();
        let forced = env.iter().any(|(k, _)| k == "OXSHMEM_TRANSPORT")
            && !self.env.iter().any(|(k, _)| k == "OXSHMEM_TRANSPORT");
        let timeout = self.timeout.unwrap_or(if forced { FORCED_TRANSPORT_TIMEOUT } else { DEFAULT_TIMEOUT });
        let mut cmd = if self.direct {
            let mut c = Command::new(&self.program);
            c.args(&self.args);
            c
        } else {
            let mut c = Command::new(oshrun());
            c.arg("-n")
                .arg(self.npes.to_string())
                .arg("--timeout")
                .arg(format!("{}", timeout.as_secs_f64()))
                .args(&self.launcher_args)
                .arg("--")
                .arg(&self.program)
                .args(&self.args);
            c
        };
        // Nothing of the test runner's own environment may change how the runtime behaves:
        // each test states the configuration it needs.
        for var in oxshmem::config::VARS.iter().chain(oxshmem_device::config::VARS) {
            cmd.env_remove(var.name);
            for a in var.aliases {
                cmd.env_remove(a);
            }
        }
        for var in ["PMI_FD", "PMI_PORT", "PMI_ID", "PMI_RANK", "PMI_SIZE", "OSHRUN_TIMEOUT"] {
            cmd.env_remove(var);
        }
        cmd.env(TOKEN_VAR, &token);
        for (k, v) in &env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let command = format!(
            "{}{} {}{}",
            if self.direct { String::new() } else { format!("oshrun -n {} -- ", self.npes) },
            self.program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            self.args.join(" "),
            if env.is_empty() {
                String::new()
            } else {
                format!("  [env: {}]", env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))
            }
        );

        let start = Instant::now();
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
        let launcher_pid = child.id();
        let out = reader(child.stdout.take().expect("piped stdout"));
        let err = reader(child.stderr.take().expect("piped stderr"));
        let hard_limit = timeout + self.slack;
        let mut hard_killed = false;
        let mut to_freeze = self.freeze;
        let status = loop {
            if let Some(s) = child.try_wait().expect("waiting for oshrun") {
                break s;
            }
            if let Some((pe, after)) = to_freeze
                && start.elapsed() >= after
                && let Some(pid) = pe_pid(&token, pe)
            {
                // SAFETY: kill(2) has no memory effects; the pid carries our job's token.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                to_freeze = None;
            }
            if start.elapsed() > hard_limit {
                hard_killed = true;
                // Ask politely first: oshrun ends its PEs on SIGTERM.
                // SAFETY: kill(2) on our own child's pid has no memory effects.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                let grace = Instant::now();
                while grace.elapsed() < Duration::from_secs(3) {
                    if child.try_wait().expect("waiting for oshrun").is_some() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
                break child.wait().expect("reaping oshrun");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let ended = SystemTime::now();
        let elapsed = start.elapsed();
        if hard_killed || self.freeze.is_some() {
            kill_leftovers(&token);
        }
        // The pipes close when the last process holding them ends; a leaked PE must not hang
        // the test, so wait a bounded time for the output.
        let stdout = out.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| "<stdout still open>\n".into());
        let stderr = err.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| "<stderr still open>\n".into());
        JobResult { status, stdout, stderr, elapsed, ended, hard_killed, token, launcher_pid, command }
    }
}

fn reader(mut pipe: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), unix_ms())
}

/// Runs `npes` PEs of `program` with `args` and extra environment `env` under
/// `oshrun --timeout 60`.
pub fn run_job(npes: usize, program: impl AsRef<Path>, args: &[&str], env: &[(&str, &str)]) -> JobResult {
    let job = Job::new(npes, program).args(args).envs(env);
    job.run()
}

/// Asserts that the job succeeded (exit status 0, not killed), printing its output otherwise.
#[track_caller]
pub fn assert_job_ok(r: &JobResult) {
    assert!(r.status.success() && !r.hard_killed, "the job failed\n{}", r.report());
}

/// Asserts that the job ended with exit code `code`, printing its output otherwise.
#[track_caller]
pub fn assert_job_code(r: &JobResult, code: i32) {
    assert!(r.code() == Some(code) && !r.hard_killed, "expected exit status {code}\n{}", r.report());
}

/// Asserts that `text` occurs in the job's standard output.
#[track_caller]
pub fn assert_stdout_has(r: &JobResult, text: &str) {
    assert!(r.stdout.contains(text), "expected {text:?} in stdout\n{}", r.report());
}

/// Asserts that `text` occurs in the job's standard error.
#[track_caller]
pub fn assert_stderr_has(r: &JobResult, text: &str) {
    assert!(r.stderr.contains(text), "expected {text:?} in stderr\n{}", r.report());
}

/// Runs the job and asserts that it succeeded; returns the result for further checks.
#[track_caller]
pub fn job_ok(npes: usize, program: impl AsRef<Path>, args: &[&str]) -> JobResult {
    let r = run_job(npes, program, args, &[]);
    assert_job_ok(&r);
    r
}

/// Asserts that for every PE `0..npes` the line `line(pe)` appears in standard output exactly
/// once: each PE ran its case to the end.
#[track_caller]
pub fn assert_each_pe_says(r: &JobResult, npes: usize, line: impl Fn(usize) -> String) {
    // A check over no PE at all would pass whatever the job printed.
    assert!(npes > 0, "assert_each_pe_says over 0 PEs checks nothing\n{}", r.report());
    for pe in 0..npes {
        let want = line(pe);
        let count = r.stdout.lines().filter(|l| *l == want).count();
        assert!(count == 1, "expected the line {want:?} once in stdout, found it {count} times\n{}", r.report());
    }
}

/// Milliseconds since the Unix epoch (PE programs print it when they are about to die, so that
/// a test can tell how long the launcher took to end the job).
pub fn unix_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// Name prefixes of the `/dev/shm` entries that a job's own software could create: oxshmem
/// (whose heaps are memfds, so nothing, unless a bug), libfabric's shared-memory provider and
/// the PSM libraries it may load. Entries of other programs on the host (an OpenMPI job's
/// `vader_segment.*`, UCX's `ucx_shm_posix_*`) are none of a job's business.
pub const JOB_SHM_PREFIXES: &[&str] = &["oxshmem", "sem.oxshmem", "fi_", "fi-", "shm_ep", "psm2", "psm_"];

/// The entries of `after` that are not in `before` and that the job could have created: a name
/// with one of [`JOB_SHM_PREFIXES`], or one that carries one of `pids` as a number of its own
/// (the launcher's pid, [`JobResult::launcher_pid`], and any PE pids a test knows). Other programs come and go in
/// `/dev/shm` while a test runs; only these say the job left something behind.
pub fn job_shm_leftovers(before: &BTreeSet<String>, after: &BTreeSet<String>, pids: &[u32]) -> Vec<String> {
    let mentions_pid = |name: &str| {
        pids.iter().any(|pid| {
            let p = pid.to_string();
            name.match_indices(&p).any(|(i, _)| {
                let b = name.as_bytes();
                let before_ok = i == 0 || !b[i - 1].is_ascii_digit();
                let after_ok = i + p.len() == b.len() || !b[i + p.len()].is_ascii_digit();
                before_ok && after_ok
            })
        })
    };
    after
        .difference(before)
        .filter(|n| JOB_SHM_PREFIXES.iter().any(|p| n.starts_with(p)) || mentions_pid(n))
        .cloned()
        .collect()
}

/// The names in `/dev/shm` (empty if there is no such directory).
pub fn dev_shm() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// The pid of PE `pe` (`PMI_RANK`) of the job with token `token`, once it runs.
fn pe_pid(token: &str, pe: usize) -> Option<i32> {
    let rank = format!("PMI_RANK={pe}");
    processes_with_token(token).into_iter().find(|pid| {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == rank.as_bytes()))
    })
}

/// Pids of the live processes whose environment carries the job token `token`.
pub fn processes_with_token(token: &str) -> Vec<i32> {
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
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) && !is_zombie(pid) {
            pids.push(pid);
        }
    }
    pids
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// SIGKILLs every process of the job with token `token`; returns how many there were.
pub fn kill_leftovers(token: &str) -> usize {
    let pids = processes_with_token(token);
    for &pid in &pids {
        // SAFETY: kill(2) has no memory effects; the pid carries our job's token.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    pids.len()
}

/// Waits up to `within` for every process of the job to be gone; returns the pids still alive
/// then (and kills them, so that one failed test does not disturb the next).
pub fn survivors(token: &str, within: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let left = processes_with_token(token);
        if left.is_empty() || start.elapsed() > within {
            kill_leftovers(token);
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The PE counts every area runs at.
pub const PE_COUNTS: [usize; 4] = [1, 2, 4, 8];

/// Compiles C source `src` (relative to this crate) into shared object `out`, with `include`
/// directories (relative to the repository root), by `cc`; the error holds cc's output.
pub fn build_shared_object(src: &str, out: &Path, include: &[&str]) -> Result<(), String> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"]);
    for dir in include {
        cc.arg("-I").arg(here.join("..").join(dir));
    }
    let o = cc.arg("-o").arg(out).arg(here.join(src)).stdin(Stdio::null()).output();
    let o = o.map_err(|e| format!("cannot run cc: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "cc {src} failed ({}):\n{}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(())
}

/// Builds the emulated CUDA driver (`tests/emucuda/libcuda.c`) into `dir` as `libcuda.so.1`
/// and `libcuda.so`: with `dir` on `LD_LIBRARY_PATH`, CUDA code finds it in the place of
/// NVIDIA's driver (device memory is host memory; see `tests/emucuda/README.md`).
pub fn build_emulated_driver(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let lib = dir.join("libcuda.so.1");
    build_shared_object("emucuda/libcuda.c", &lib, &[])?;
    std::fs::copy(&lib, dir.join("libcuda.so")).map(|_| ()).map_err(|e| e.to_string())
}

/// `oshnvcc` of this build (`target/<profile>/oshnvcc`) with `liboxshmem.so` beside it, built
/// once per process with cargo (`cargo test -p oxshmem-tests` builds no other package's
/// binaries). `oshnvcc --target cpu` builds the CPU target's device library on first use.
///
/// # Panics
/// If cargo fails.
pub fn oshnvcc() -> PathBuf {
    static DONE: OnceLock<PathBuf> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = profile_dir();
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let target_dir = dir.parent().expect("target/<profile> has a parent");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let out = Command::new(cargo)
            // --lib too: with a --bin filter alone, cargo would build no library (liboxshmem.so)
            .args([
                "build",
                "-p",
                "oxshmem-c",
                "-p",
                "oxshmem-tools",
                "--lib",
                "--bin",
                "oshnvcc",
                "--profile",
                &profile,
            ])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(target_dir)
            .output()
            .expect("running cargo");
        assert!(
            out.status.success(),
            "cargo build of liboxshmem.so and oshnvcc failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir.join("oshnvcc")
    })
    .clone()
}

// ---- programs built for the CPU target (cpu_programs.rs, cpu_buffer_register.rs, cpu_p2p_atomics.rs,
// cpu_persistent.rs)

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether the C++ compiler (`CXX`, else `c++`) runs; required unless `OXSHMEM_TEST_REQUIRE`
/// lets it be missing.
pub fn have_cxx() -> bool {
    let ok = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    oxshmem_test_require::need("c++", ok, "`c++ --version` does not run (apt-get install g++)")
}

/// `tests/cuda/NAME.cu` built for the CPU target by `oshnvcc --target cpu` into
/// `target/<profile>/DIR/NAME` (a temporary name first, then renamed, so that concurrent test
/// processes never run a half-written program); panics with the build's log on failure.
/// Callers keep the path in a `OnceLock`, so each test process builds it once.
pub fn build_cpu_program(name: &str, dir: &str) -> PathBuf {
    let oshnvcc = oshnvcc();
    let dir = profile_dir().join(dir);
    std::fs::create_dir_all(&dir).expect("the program's directory");
    let exe = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp{}", std::process::id()));
    let mut c = Command::new(&oshnvcc);
    c.args(["--target", "cpu"]).arg(repo_root().join(format!("tests/cuda/{name}.cu"))).arg("-o").arg(&tmp);
    let (ok, log) = run_logged(&mut c, Duration::from_secs(900));
    assert!(ok && tmp.exists(), "oshnvcc --target cpu tests/cuda/{name}.cu failed:\n{log}");
    std::fs::rename(&tmp, &exe).expect("renaming the built program");
    exe
}

/// Runs `cmd` to the end within `limit`, its stdout and stderr into one log; (success,
/// everything it printed). Past the limit it is killed, and the text says so.
pub fn run_logged(cmd: &mut Command, limit: Duration) -> (bool, String) {
    let out_path = std::env::temp_dir().join(format!(
        "oxshmem-test-run-{}-{:?}.log",
        std::process::id(),
        std::thread::current().id()
    ));
    let file = std::fs::File::create(&out_path).expect("a log file");
    let mut child = cmd
        .stdout(file.try_clone().expect("a log file"))
        .stderr(file)
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for a child") {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    match status {
        Some(s) => (s.success(), text),
        None => (false, format!("{text}\n(killed after {limit:?})")),
    }
}
