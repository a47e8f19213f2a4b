//! A tiny launcher for NVSHMEM's unique-id init: `uid-launch -n N [--timeout S] [--id-file PATH]
//! [--no-kill] [--] program args...`.
//!
//! It starts `N` copies of `program` with `OXS_TEST_RANK` (0..N), `OXS_TEST_NRANKS` (N) and
//! `OXS_TEST_ID_FILE` (a fresh path in a new temporary directory, or `PATH`) in their
//! environment — the file through which rank 0 hands its `nvshmemx_uniqueid_t` to the others
//! (see `tests/nvshmem/uid.c`). No PMI is involved: every `PMI_*` and `PMIX_*` variable is
//! removed from the children's environment, so nothing but the unique id can bring them
//! together.
//!
//! The children write straight to the launcher's standard output and error, so the launcher
//! writes each of its own lines in one `write` (see `say!`). When one fails
//! (non-zero status or a signal), the launcher says so and ends the others (SIGTERM, then
//! SIGKILL after 2 s) — unless `--no-kill` is given: then it waits for every rank to end on its
//! own (a test of how the ranks of a broken job give up), reporting each failure. Past
//! `--timeout` (60 s by default) it ends them all. Each child also gets
//! SIGKILL if the launcher itself dies. Exit status: 0 when every rank exited 0; else the first
//! failure's status (128 + the signal for a killed rank); 124 on timeout; 125 for bad usage or a
//! program that cannot be started.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// `eprintln!`, but the whole line in one write: the children share this standard error, and
/// `eprintln!` writes a formatted line piece by piece, between which a child's line can land
/// ("uid-launch: rank 1 " + "uid: rank 2: init returned 7" + "exited with status 2").
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = std::io::stderr().lock().write_all(format!("{}\n", format_args!($($arg)*)).as_bytes());
    }};
}

struct Args {
    n: usize,
    timeout: Duration,
    id_file: Option<PathBuf>,
    no_kill: bool,
    program: String,
    args: Vec<String>,
}

fn usage(msg: &str) -> ! {
    say!("uid-launch: {msg}");
    say!("usage: uid-launch -n N [--timeout SECONDS] [--id-file PATH] [--no-kill] [--] program [args...]");
    std::process::exit(125)
}

fn parse() -> Args {
    let mut it = std::env::args().skip(1);
    let mut n = None;
    let mut timeout = Duration::from_secs(60);
    let mut id_file = None;
    let mut no_kill = false;
    let program = loop {
        let Some(a) = it.next() else { usage("no program given") };
        match a.as_str() {
            "-n" | "--np" => {
                let v = it.next().unwrap_or_else(|| usage("-n needs a number"));
                n = Some(v.parse::<usize>().ok().filter(|&n| n > 0).unwrap_or_else(|| usage(&format!("bad -n {v:?}"))));
            }
            "--timeout" => {
                let v = it.next().unwrap_or_else(|| usage("--timeout needs seconds"));
                let s = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0)
                    .unwrap_or_else(|| usage(&format!("bad --timeout {v:?}")));
                timeout = Duration::from_secs_f64(s);
            }
            "--id-file" => id_file = Some(PathBuf::from(it.next().unwrap_or_else(|| usage("--id-file needs a path")))),
            "--no-kill" => no_kill = true,
            "--" => break it.next().unwrap_or_else(|| usage("no program after --")),
            "-h" | "--help" => usage("help"),
            s if s.starts_with('-') => usage(&format!("unknown option {s}")),
            _ => break a,
        }
    };
    let n = n.unwrap_or_else(|| usage("-n N is required"));
    Args { n, timeout, id_file, no_kill, program, args: it.collect() }
}

/// A new, empty directory for the id file.
fn fresh_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("uid-launch-{}-{nanos}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&dir) {
        say!("uid-launch: cannot create {}: {e}", dir.display());
        std::process::exit(125);
    }
    dir
}

fn code_of(s: ExitStatus) -> i32 {
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

fn describe(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended ({s})"),
    }
}

/// Ends every child still running: SIGTERM, then SIGKILL for those still there after 2 s.
fn end_all(children: &mut [(usize, Child, Option<ExitStatus>)]) {
    for (_, c, st) in children.iter_mut() {
        if st.is_none() {
            // SAFETY: kill(2) on our own child's pid; no memory is involved.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        }
    }
    let grace = Instant::now();
    loop {
        let mut running = false;
        for (_, c, st) in children.iter_mut() {
            if st.is_none() {
                *st = c.try_wait().ok().flatten();
                running |= st.is_none();
            }
        }
        if !running {
            return;
        }
        if grace.elapsed() > Duration::from_secs(2) {
            for (_, c, st) in children.iter_mut() {
                if st.is_none() {
                    let _ = c.kill();
                    *st = c.wait().ok();
                }
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn main() {
    let args = parse();
    let (dir, id_file) = match &args.id_file {
        Some(p) => (None, p.clone()),
        None => {
            let d = fresh_dir();
            let f = d.join("uniqueid");
            (Some(d), f)
        }
    };
    // A file left by an earlier job would hand the ranks a stale id.
    let _ = std::fs::remove_file(&id_file);

    let start = Instant::now();
    let mut children: Vec<(usize, Child, Option<ExitStatus>)> = Vec::with_capacity(args.n);
    let mut result = 0;
    for rank in 0..args.n {
        let mut cmd = Command::new(&args.program);
        cmd.args(&args.args);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("PMI_") || k.starts_with("PMIX_") {
                cmd.env_remove(k.as_ref());
            }
        }
        cmd.env("OXS_TEST_RANK", rank.to_string())
            .env("OXS_TEST_NRANKS", args.n.to_string())
            .env("OXS_TEST_ID_FILE", &id_file);
        // SAFETY: prctl is async-signal-safe and touches no memory of this process; it runs in
        // the child between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(c) => children.push((rank, c, None)),
            Err(e) => {
                say!("uid-launch: cannot start {} (rank {rank}): {e}", args.program);
                result = 125;
                break;
            }
        }
    }

    if result == 0 {
        let mut first_failure: Option<i32> = None;
        loop {
            let mut running = 0;
            let mut failed = Vec::new();
            for (rank, c, st) in children.iter_mut() {
                if st.is_some() {
                    continue;
                }
                let s = match c.try_wait() {
                    Ok(Some(s)) => s,
                    Ok(None) => {
                        running += 1;
                        continue;
                    }
                    Err(e) => {
                        say!("uid-launch: waiting for rank {rank}: {e}");
                        let _ = c.kill();
                        c.wait().unwrap_or(ExitStatus::from_raw(125 << 8))
                    }
                };
                *st = Some(s);
                if !s.success() {
                    failed.push((*rank, s));
                }
            }
            if let Some(&(_, s)) = failed.first() {
                first_failure.get_or_insert(code_of(s));
            }
            if !failed.is_empty() && running > 0 && !args.no_kill {
                let (rank, s) = failed[0];
                say!("uid-launch: rank {rank} {}; ending the other ranks", describe(s));
                end_all(&mut children);
                break;
            }
            for (rank, s) in failed {
                say!("uid-launch: rank {rank} {}", describe(s));
            }
            if running == 0 {
                break;
            }
            if start.elapsed() > args.timeout {
                say!(
                    "uid-launch: timed out after {:.1} s with {running} of {} ranks still running; ending them",
                    args.timeout.as_secs_f64(),
                    args.n
                );
                end_all(&mut children);
                first_failure = Some(124);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        result = first_failure.unwrap_or(0);
    } else {
        end_all(&mut children);
    }

    let _ = std::fs::remove_file(&id_file);
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
    std::process::exit(result);
}
