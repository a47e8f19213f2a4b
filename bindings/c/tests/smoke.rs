//! A C program built against `include/` and `liboxshmem.so`, run as a real two-PE job under
//! `oshrun`: puts into a peer's global variable, an atomic fetch-add on a heap int, reductions
//! over `SHMEM_TEAM_WORLD` and a split team, a context, `long double` by value and reduced, and
//! `shmem_barrier_all`. A second run checks that a destroyed team handle ends the job with the
//! library's message, as does a pointer that was never a handle. Needs gcc; without it the
//! tests say so and pass.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::{arg, crate_dir, have, include_dir, run_ok};

/// `oshrun` beside the library.
fn oshrun() -> PathBuf {
    common::workspace_bin("oshrun")
}

/// A temporary directory of one test, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles tests/c/smoke.c into a temporary directory of the test `tag`, linked with
/// `liboxshmem.so`.
fn build_smoke(tag: &str) -> (TempDir, PathBuf) {
    build_smoke_with(tag, false)
}

/// As [`build_smoke`]; with `static_lib`, linked with `liboxshmem.a` instead.
fn build_smoke_with(tag: &str, static_lib: bool) -> (TempDir, PathBuf) {
    let dir = std::env::temp_dir().join(format!("oxshmem-c-smoke-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let dir = TempDir(dir);
    let exe = dir.0.join("smoke");
    let lib_dir = common::lib_dir_with_soname();
    let rpath = format!("-Wl,-rpath,{}", arg(&lib_dir));
    let src = crate_dir().join("tests/c/smoke.c");
    let include = include_dir();
    let archive = lib_dir.join("liboxshmem.a");
    let mut args = vec![
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        // It calls deprecated routines on purpose.
        "-Wno-deprecated-declarations",
        "-I",
        arg(&include),
        arg(&src),
        "-o",
        arg(&exe),
    ];
    if static_lib {
        // The libraries Rust's standard library needs (rustc --print native-static-libs).
        args.extend([arg(&archive), "-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]);
    } else {
        args.extend(["-L", arg(&lib_dir), "-loxshmem", &rpath]);
    }
    run_ok("gcc", &args);
    (dir, exe)
}

fn run_job(exe: &PathBuf, args: &[&str]) -> Output {
    let mut cmd = Command::new(oshrun());
    cmd.args(["-n", "2", "--timeout", "30", "--"]).arg(exe).args(args).stdin(Stdio::null());
    cmd.output().expect("running oshrun")
}

fn report(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn c_program_runs_on_two_pes() {
    if !have("gcc") {
        return;
    }
    let (_dir, exe) = build_smoke("ok");
    let out = run_job(&exe, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the job failed\n{}", report(&out));
    for pe in 0..2 {
        assert!(stdout.contains(&format!("PE {pe} OK")), "PE {pe} did not report OK\n{}", report(&out));
    }
}

#[test]
fn a_destroyed_team_handle_ends_the_job_with_a_clear_error() {
    if !have("gcc") {
        return;
    }
    let (_dir, exe) = build_smoke("destroyed");
    let out = run_job(&exe, &["destroyed"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "the job should have failed\n{}", report(&out));
    assert!(
        stderr.contains(": shmem_team_my_pe: invalid argument: team was destroyed"),
        "no clear error\n{}",
        report(&out)
    );
    assert!(!stdout.contains("still running"), "a PE went on after the error\n{}", report(&out));
    // A clean end through the launcher, not a crash.
    assert!(!stderr.contains("SIGSEGV") && !stderr.contains("signal 11"), "{}", report(&out));
}

#[test]
fn a_pointer_that_was_never_a_handle_ends_the_job_with_a_clear_error() {
    if !have("gcc") {
        return;
    }
    let (_dir, exe) = build_smoke("garbage");
    let out = run_job(&exe, &["garbage"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the job should have failed\n{}", report(&out));
    assert!(
        stderr.contains(": shmem_team_n_pes: invalid argument: 0x") && stderr.contains("is not a team handle"),
        "no clear error\n{}",
        report(&out)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("still running"), "{}", report(&out));
}

#[test]
fn c_program_linked_with_the_static_library_runs() {
    if !have("gcc") {
        return;
    }
    let (_dir, exe) = build_smoke_with("static", true);
    let out = run_job(&exe, &[]);
    assert!(out.status.success(), "the job failed\n{}", report(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).matches(" OK").count(), 2, "{}", report(&out));
}
