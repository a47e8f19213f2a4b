//! NVSHMEM programs run on the CPU target (issue 30, items 2 to 4): the CUDA test programs of
//! `tests/cuda/` (written as NVSHMEM users write them, and until now only compiled) are built
//! unchanged with one line, `oshnvcc --target cpu prog.cu -o prog`, and run under `oshrun` at 2
//! and 4 PEs over each device channel (`OXSHMEM_DEVICE_CHANNEL=p2p|proxy|ibgda`). Their kernels
//! are host threads running the device library's own code (`libnvshmem_device.a` compiled for
//! the CPU target), over the GPU heap the host library maps through the emulated driver; every
//! program checks its results and prints one `ok` line per part and PE.
//!
//! The CPU target keeps a GPU's rules: the host proxy refuses a device thread's local memory.
//! Over the proxy, `nvshmem_g` and the fetching atomics used to hand it a stack slot for their
//! result (issue 31, item 2); the first runs here ended saying so, and since the result lands in
//! the request's own ring slot (`OXSHMEM_PROXY_HOLD`) they pass like the others.
//! `tests/cpu_breaks.rs` puts the stack slot back on purpose and checks that the rule catches it.
//!
//! Needs a C and C++ compiler; builds `liboxshmem.so`, `oshnvcc` and `oshrun` with cargo.

use oxshmem_tests::{have_cxx, profile_dir, repo_root as root, run_logged as run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Builds the host library and `oshnvcc` (and through it the CPU target's archive) once per
/// test process (`oxshmem_tests::oshnvcc`), and the programs into `target/<profile>/cpu-programs/` where they are older
/// than their sources or the archive (tests run as separate processes: each program is built
/// once for all of them; a build goes to a temporary name first, then is renamed).
fn programs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let oshnvcc = oxshmem_tests::oshnvcc();
        let dir = profile_dir().join("cpu-programs");
        std::fs::create_dir_all(&dir).expect("the programs' directory");
        let mtime = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
        for p in PROGRAMS {
            let exe = dir.join(p.name);
            let src = root().join(format!("tests/cuda/{}.cu", p.name));
            // The archive is rebuilt by oshnvcc when the library's sources change: build once
            // first (the first program), then compare with it.
            let archive = profile_dir().join("cuda-cpu/libnvshmem_device.a");
            let newest = [src.clone(), root().join("tests/cuda/cutest.h"), archive.clone()]
                .iter()
                .filter_map(|f| mtime(f))
                .max();
            let fresh =
                archive.exists() && mtime(&exe).zip(newest).is_some_and(|(e, n)| e > n) && oshnvcc_is_older_than(&exe);
            if fresh {
                continue;
            }
            let tmp = dir.join(format!("{}.tmp{}", p.name, std::process::id()));
            let mut c = Command::new(&oshnvcc);
            c.args(["--target", "cpu"]).arg(&src).arg("-o").arg(&tmp);
            let (ok, log) = run(&mut c, Duration::from_secs(900));
            assert!(ok && tmp.exists(), "oshnvcc --target cpu tests/cuda/{}.cu failed:\n{log}", p.name);
            std::fs::rename(&tmp, &exe).expect("renaming a built program");
        }
        dir
    })
}

/// Whether `exe` is newer than oshnvcc (whose rewrite made it).
fn oshnvcc_is_older_than(exe: &Path) -> bool {
    let m = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    m(&profile_dir().join("oshnvcc")).zip(m(exe)).is_some_and(|(o, e)| o < e)
}

/// A program and the number of `ok` lines each PE prints.
struct Program {
    name: &'static str,
    oks: usize,
}

const PROGRAMS: &[Program] = &[
    Program { name: "rma", oks: 3 },
    Program { name: "signal", oks: 3 },
    Program { name: "amo", oks: 4 },
    Program { name: "sync", oks: 3 },
    Program { name: "coll", oks: 2 },
    Program { name: "stream", oks: 5 },
    Program { name: "examples", oks: 7 },
];

/// Runs every program at 2 and 4 PEs over `channel`.
fn every_program_over(channel: &str) {
    if !have_cxx() {
        return;
    }
    let dir = programs();
    let oshrun = oxshmem_tests::oshrun();
    let mut failures = Vec::new();
    for p in PROGRAMS {
        for n in [2usize, 4] {
            let mut c = Command::new(&oshrun);
            c.arg("-n").arg(n.to_string()).arg(dir.join(p.name)).current_dir(dir);
            c.env("OXSHMEM_DEVICE_CHANNEL", channel).env("CUTEST_TIMEOUT", "90").env("SHMEM_SYMMETRIC_SIZE", "64M");
            let start = Instant::now();
            let (ok, out) = run(&mut c, Duration::from_secs(240));
            let oks = out.lines().filter(|l| l.contains(&format!(": ok {}: ", p.name))).count();
            if !ok || oks != p.oks * n {
                failures.push(format!(
                    "{} over {channel} at {n} PEs: {} ({oks} of {} ok lines):\n{out}",
                    p.name,
                    if ok { "ran" } else { "failed" },
                    p.oks * n
                ));
            } else {
                eprintln!("{channel}: {} at {n} PEs: {oks} ok lines in {:.2?}", p.name, start.elapsed());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn nvshmem_programs_run_on_the_cpu_target_over_p2p() {
    every_program_over("p2p");
}

#[test]
fn nvshmem_programs_run_on_the_cpu_target_over_the_proxy() {
    every_program_over("proxy");
}

#[test]
fn nvshmem_programs_run_on_the_cpu_target_over_ibgda() {
    every_program_over("ibgda");
}

/// The GPU check's own plumbing (`scripts/gpu-check.sh`: unpacking a bundle, the driver search,
/// every program at each PE count over every channel, the result table) runs here on the bundle
/// `--prepare-cpu` makes of the CPU-target builds, so that the one run on a lent GPU is not the
/// first run of the script.
#[test]
fn the_gpu_check_runs_its_cpu_target_bundle() {
    if !have_cxx() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("oxshmem-gpu-check-cpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let target = profile_dir().parent().expect("target/<profile> has a parent").to_path_buf();
    let mut prep = Command::new("bash");
    prep.arg(root().join("scripts/gpu-check.sh"))
        .arg("--prepare-cpu")
        .arg(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .env("GPU_CHECK_CPU_PROGRAMS", programs());
    let (ok, log) = run(&mut prep, Duration::from_secs(1800));
    assert!(ok, "gpu-check.sh --prepare-cpu failed:\n{log}");
    let mut check = Command::new("bash");
    check
        .arg(root().join("scripts/gpu-check.sh"))
        .arg(&dir)
        .env("GPU_CHECK_LIBCUDA", dir.join("libcuda.so"))
        .env("GPU_CHECK_NVSHMEM", "0")
        .env("GPU_CHECK_BENCH", "0")
        .env("GPU_CHECK_RUST", "0")
        .env("GPU_CHECK_PES", "2")
        .env("GPU_CHECK_CHANNELS", "p2p ibgda");
    let (ok, out) = run(&mut check, Duration::from_secs(900));
    assert!(ok, "gpu-check.sh on the CPU-target bundle failed:\n{out}");
    assert!(out.contains("program | ox-p2p n=2 | ox-ibgda n=2"), "no result table:\n{out}");
    for p in PROGRAMS {
        let row = format!("{} | ok | ok", p.name);
        assert!(out.lines().any(|l| l == row), "no row `{row}`:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The programs whose ordering is the device library's and the CPU runtime's own (not the host
/// library's stream operations, `stream.cu`, nor its proxy and software NIC threads: the host
/// library is Rust, not instrumented, so ThreadSanitizer cannot see its synchronization) run at
/// 2 PEs over P2P with the program, the device library, the CPU runtime and the emulated driver
/// built with `-fsanitize=thread`: a plain access another agent orders by a fence alone (x86
/// hides a missing one) is a reported race, and a report fails the test.
#[test]
fn nvshmem_programs_under_threadsanitizer_over_p2p() {
    if !have_cxx() {
        return;
    }
    let oshnvcc = oxshmem_tests::oshnvcc();
    let lib = profile_dir().join("cuda-cpu-tsan");
    let mut b = Command::new("bash");
    b.arg(root().join("bindings/cuda/build-cpu.sh"))
        .arg(&lib)
        .env("CXXFLAGS", "-fsanitize=thread -g -Wno-tsan")
        .env("CFLAGS", "-fsanitize=thread -g");
    let (ok, log) = run(&mut b, Duration::from_secs(1800));
    assert!(ok, "build-cpu.sh with ThreadSanitizer failed:\n{log}");
    let dir = profile_dir().join("cpu-programs-tsan");
    std::fs::create_dir_all(&dir).expect("a folder for the programs");
    let mut failures = Vec::new();
    for p in PROGRAMS.iter().filter(|p| p.name != "stream") {
        let exe = dir.join(p.name);
        let mut c = Command::new(&oshnvcc);
        c.args(["--target", "cpu", "-fsanitize=thread", "-g"])
            .arg(root().join(format!("tests/cuda/{}.cu", p.name)))
            .arg("-o")
            .arg(&exe)
            .env("OXSHMEM_CPU_TARGET", lib.join("libnvshmem_device.a"));
        let (ok, log) = run(&mut c, Duration::from_secs(900));
        assert!(ok, "oshnvcc -fsanitize=thread tests/cuda/{}.cu failed:\n{log}", p.name);
        let mut j = Command::new(oxshmem_tests::oshrun());
        j.args(["-n", "2"]).arg(&exe);
        j.env("OXSHMEM_DEVICE_CHANNEL", "p2p")
            .env("OXSHMEM_CPU_DRIVER", lib.join("emucuda/libcuda.so"))
            .env("TSAN_OPTIONS", "halt_on_error=1 exitcode=66")
            .env("CUTEST_TIMEOUT", "120");
        let (ok, out) = run(&mut j, Duration::from_secs(300));
        let oks = out.lines().filter(|l| l.contains(&format!(": ok {}: ", p.name))).count();
        if !ok || out.contains("ThreadSanitizer") || oks != p.oks * 2 {
            failures.push(format!("{} under ThreadSanitizer ({oks} ok lines):\n{out}", p.name));
        } else {
            eprintln!("{}: no report, {oks} ok lines", p.name);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
