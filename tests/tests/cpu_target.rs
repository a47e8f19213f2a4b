//! The device library's CPU target (issue 30, item 1's first step): the same files as the CUDA
//! build compile with the ordinary C++ compiler against `bindings/cuda/src/arch/cpu.cuh`, and
//! the library's own code runs on host threads:
//!
//! - `bindings/cuda/build-cpu.sh` compiles `src/core.cu` and every `src/generated/*.cu` into an
//!   archive (with `-Wall`; a warning fails the test);
//! - `bindings/cuda/tests/cpu_simt.cpp` runs the library's scopes, shuffles, barriers, atomics
//!   and P2P paths on blocks of host threads, plain and under ThreadSanitizer (a report fails);
//!   among them issue 31's items 1, 5 and 6: IBGDA quiet and barrier complete every warp's queue
//!   set (against a fake NIC in the test that completes queue set 1 late), a successful test or
//!   wait acquires the payload written before the flag (ThreadSanitizer reports the read
//!   otherwise), and warp and block put/get/put_signal sync the group on entry;
//! - `bindings/cuda/tests/wqe_dump.cu`, compiled for the CPU target, writes the Rust IBGDA
//!   producer's bytes (the sequence of `tests/cuda_device.rs`, which checks the nvcc build).
//!
//! Needs only a C++ compiler (`CXX`, default `c++`) with ThreadSanitizer (GCC or clang).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cxx() -> String {
    std::env::var("CXX").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| "c++".into())
}

/// Whether the C++ compiler runs; if not, the test is skipped with the reason, or fails where the
/// run requires it (`oxshmem_test_require`).
fn have_cxx() -> bool {
    let ok = Command::new(cxx()).arg("--version").output().is_ok_and(|o| o.status.success());
    oxshmem_test_require::need("c++", ok, &format!("`{} --version` does not run (apt-get install g++)", cxx()))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxshmem-cpu-target-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("creating a scratch directory");
    d
}

/// Runs `cmd`; its stdout, or a failure with everything it printed.
fn output(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{so}\n{se}", out.status);
    so.into_owned() + &se
}

/// `c++ -x c++ -std=c++17 -DOXSHMEMI_TARGET_CPU` of one test source into `exe`.
fn compile(src: &str, exe: &Path, extra: &[&str]) {
    let mut c = Command::new(cxx());
    c.args(["-x", "c++", "-std=c++17", "-O1", "-g", "-DOXSHMEMI_TARGET_CPU", "-I"])
        .arg(root().join("bindings/c/include"))
        .arg("-I")
        .arg(root().join("device/include"))
        .args(extra)
        .arg(root().join(src))
        .arg("-o")
        .arg(exe)
        .arg("-lpthread");
    output(&mut c);
}

#[test]
fn the_library_sources_compile_for_the_cpu_target() {
    if !have_cxx() {
        return;
    }
    let dir = scratch("archive");
    let mut c = Command::new("bash");
    c.arg(root().join("bindings/cuda/build-cpu.sh")).arg(&dir).args(["--jobs", "2"]).env("CXX", cxx());
    let log = output(&mut c);
    assert!(!log.contains("warning:"), "the CPU target's build warns:\n{log}");
    assert!(dir.join("libnvshmem_device.a").exists(), "build-cpu.sh made no archive:\n{log}");
    let syms = output(Command::new("nm").arg("--defined-only").arg(dir.join("libnvshmem_device.a")));
    for name in ["nvshmem_int_p", "nvshmemx_putmem_block", "nvshmem_quiet", "nvshmem_signal_wait_until"] {
        assert!(syms.lines().any(|l| l.ends_with(&format!(" T {name}"))), "the CPU archive does not define {name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_library_runs_on_host_threads_and_threadsanitizer_finds_no_race() {
    if !have_cxx() {
        return;
    }
    let dir = scratch("simt");
    for (exe, extra) in [("cpu_simt", &[][..]), ("cpu_simt_tsan", &["-fsanitize=thread", "-Wno-tsan"][..])] {
        let exe = dir.join(exe);
        compile("bindings/cuda/tests/cpu_simt.cpp", &exe, extra);
        let mut run = Command::new(&exe);
        // a report is a failure, not a warning
        run.env("TSAN_OPTIONS", "halt_on_error=1 exitcode=66");
        let out = output(&mut run);
        assert!(out.contains("cpu_simt: all checks passed"), "{}:\n{out}", exe.display());
        assert!(!out.contains("ThreadSanitizer"), "{}:\n{out}", exe.display());
        // issue 31's checks ran (items 1, 5, 6)
        for what in [
            "ok: IBGDA: quiet<Thread> after __syncthreads, quiet<Block>, barrier_all<Block> complete every warp's",
            "ok: test, test_all, test_any, test_some, wait_until, wait_until_any acquire the payload",
            "ok: put<Block>, put<Warp>, put_signal<Block> of a source the group fills just before the call",
        ] {
            assert!(out.lines().any(|l| l.starts_with(what)), "{}: no line `{what}…`:\n{out}", exe.display());
        }
        println!("{}: {} checks passed", exe.display(), out.lines().filter(|l| l.starts_with("ok: ")).count());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cpu_targets_queue_producer_writes_the_rust_producers_bytes() {
    if !have_cxx() {
        return;
    }
    let dir = scratch("wqe");
    let exe = dir.join("wqe_dump");
    compile("bindings/cuda/tests/wqe_dump.cu", &exe, &[]);
    let cpu = output(&mut Command::new(&exe));
    let rust = oxshmem_tests::wqe::rust_wqe_dump();
    for (i, (c, r)) in cpu.lines().zip(rust.lines()).enumerate() {
        assert_eq!(c, r, "line {i}: the CPU target's producer (first) and the Rust one (second) differ");
    }
    assert_eq!(cpu.lines().count(), rust.lines().count(), "the two dumps have different lengths");
    assert!(cpu.lines().count() > 20, "the dump is too short:\n{cpu}");
    let _ = std::fs::remove_dir_all(&dir);
}
