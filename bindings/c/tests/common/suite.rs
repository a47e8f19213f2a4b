//! Building and running the C and C++ programs of `tests/c/` (at the repository root) the way a
//! user does: compiled with `oshcc`/`oshc++`, started with `oshrun`. Each program is compiled
//! at most once per test run, whichever test asks first; every job runs under a timeout.
//!
//! This file is included by `c_suite.rs` with `#[path]`; it adds to `common/mod.rs` and
//! changes nothing there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{crate_dir, lib_dir_with_soname, profile_dir, workspace_bin};

/// How long one job may take: oshrun's own limit, and a little more for this process to give
/// up on oshrun itself.
pub(crate) const JOB_TIMEOUT_S: u64 = 60;
const HARD_TIMEOUT: Duration = Duration::from_secs(JOB_TIMEOUT_S + 30);

/// One program of `tests/c/`.
pub(crate) struct Program {
    /// Its name (the executable's, and what it prints in "PE n: <name>: OK").
    pub(crate) name: &'static str,
    /// Its sources, relative to `tests/c/`.
    pub(crate) sources: &'static [&'static str],
    /// C++ (oshc++) rather than C (oshcc).
    pub(crate) cxx: bool,
    /// Compiler flags beyond the common `-Wall -Wextra -Werror`.
    pub(crate) flags: &'static [&'static str],
}

/// `tests/c/` at the repository root.
pub(crate) fn sources_dir() -> PathBuf {
    crate_dir().join("../../tests/c")
}

/// The launcher.
pub(crate) fn oshrun() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| workspace_bin("oshrun")).clone()
}

/// The compiler wrapper for C or C++ (`oshc++` is a link to `oshcxx` that the tools' build
/// script makes; `oshcxx` is the same program).
fn compiler(cxx: bool) -> PathBuf {
    static P: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    let (cc, cxxc) = P.get_or_init(|| {
        let cc = workspace_bin("oshcc");
        let linked = profile_dir().join("oshc++");
        let cxx = if linked.exists() { linked } else { workspace_bin("oshcxx") };
        (cc, cxx)
    });
    if cxx { cxxc.clone() } else { cc.clone() }
}

/// Where this test process puts its executables: `target/<profile>/c-suite/<pid>`. Folders
/// of processes that are gone are removed first.
fn build_dir() -> &'static Path {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let root = profile_dir().join("c-suite");
        if let Ok(entries) = std::fs::read_dir(&root) {
            for e in entries.flatten() {
                let gone = e
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                    .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
                if gone {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = root.join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).expect("creating the build folder");
        dir
    })
}

/// Compiles `p` (once per test run) and returns its executable; a compile error fails every
/// test of the program with the compiler's message.
pub(crate) fn build(p: &Program, cell: &OnceLock<Result<PathBuf, String>>) -> PathBuf {
    let r = cell.get_or_init(|| {
        // The SONAME link next to the library, which the executables load.
        lib_dir_with_soname();
        let exe = build_dir().join(p.name);
        let mut cmd = Command::new(compiler(p.cxx));
        cmd.args(["-Wall", "-Wextra", "-Werror"]).args(p.flags);
        for s in p.sources {
            cmd.arg(sources_dir().join(s));
        }
        cmd.arg("-o").arg(&exe).stdin(Stdio::null());
        let started = Instant::now();
        let out = cmd.output().map_err(|e| format!("running {:?}: {e}", cmd.get_program()))?;
        if !out.status.success() {
            return Err(format!(
                "compiling {} failed ({})\n{:?}\n{}{}",
                p.name,
                out.status,
                cmd,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        eprintln!("compiled {} in {:.1} s", p.name, started.elapsed().as_secs_f64());
        Ok(exe)
    });
    match r {
        Ok(exe) => exe.clone(),
        Err(e) => panic!("{e}"),
    }
}

/// What a job did.
pub(crate) struct Job {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

impl Job {
    /// The whole record, for assertion messages.
    pub(crate) fn report(&self) -> String {
        format!(
            "exit code {:?} after {:.2} s\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            self.elapsed.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }
}

/// Runs `exe args` as a job of `n` PEs under `oshrun --timeout`, with `env` added to the
/// environment; kills oshrun if even that does not end in time.
pub(crate) fn run_job(exe: &Path, n: usize, args: &[&str], env: &[(&str, &str)]) -> Job {
    let mut cmd = Command::new(oshrun());
    cmd.args(["-n", &n.to_string(), "--timeout", &JOB_TIMEOUT_S.to_string(), "--"]).arg(exe).args(args);
    cmd.envs(env.iter().copied()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("starting oshrun");
    // Read both pipes on threads so that a chatty job cannot block on a full pipe.
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let to = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut s);
        s
    });
    let te = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for oshrun") {
            break Some(st);
        }
        if started.elapsed() > HARD_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = Output {
        status: status.unwrap_or_else(|| {
            panic!("oshrun did not end within {} s (its own --timeout is {JOB_TIMEOUT_S} s)", HARD_TIMEOUT.as_secs())
        }),
        stdout: to.join().unwrap_or_default(),
        stderr: te.join().unwrap_or_default(),
    };
    Job {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Asserts that every PE of a job of `n` reported "PE k: <name>: OK" and that it exited 0.
pub(crate) fn assert_all_ok(name: &str, n: usize, job: &Job) {
    assert_eq!(job.code, Some(0), "{name} on {n} PEs failed\n{}", job.report());
    for k in 0..n {
        let line = format!("PE {k}: {name}: OK (");
        assert!(job.stdout.contains(&line), "PE {k} did not report OK for {name} on {n} PEs\n{}", job.report());
    }
    assert!(!job.stderr.contains(": expected "), "a check failed but the job passed\n{}", job.report());
}

/// The names called (an identifier followed by `(`) in the code of `p`'s own sources after
/// preprocessing, so that what the X-macros generate counts and what the headers declare does
/// not (lines are attributed to files by the preprocessor's line markers).
pub(crate) fn called_names(p: &Program) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for src in p.sources {
        let path = sources_dir().join(src);
        let mut cmd = Command::new(compiler(p.cxx));
        cmd.args(p.flags.iter().filter(|f| f.starts_with("-std") || f.starts_with("-D")));
        cmd.arg("-E").arg(&path).stdin(Stdio::null());
        let out = cmd.output().expect("running the preprocessor");
        assert!(out.status.success(), "preprocessing {src}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        let dir = sources_dir();
        let ours = |file: &str| Path::new(file).parent().is_some_and(|d| same_dir(d, &dir));
        let mut in_ours = false;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# ") {
                // # <line> "<file>" <flags>
                if let Some(file) = rest.split('"').nth(1) {
                    in_ours = ours(file);
                }
                continue;
            }
            if in_ours {
                collect_calls(line, &mut names);
            }
        }
    }
    names
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Every `identifier (` in `line`.
fn collect_calls(line: &str, names: &mut BTreeSet<String>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let mut j = i;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j < b.len() && b[j] == b'(' {
                names.insert(line[start..i].to_string());
            }
        } else if b[i].is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
}
