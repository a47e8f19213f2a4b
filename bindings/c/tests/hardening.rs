//! Issue 32, "Hardening, round 2", through the C ABI: `tests/c/hardening.c` built against
//! `include/` and `liboxshmem.so` and run as real 2-PE jobs under `oshrun` (each with
//! `oshrun --timeout`, and a wall-clock limit of this test's own on top). Needs gcc; without it
//! the tests fail saying what to install.

mod common;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{arg, crate_dir, include_dir, run_ok};

/// Where this test process builds its program.
fn work_dir() -> PathBuf {
    std::env::temp_dir().join(format!("oxshmem-c-hardening-{}", std::process::id()))
}

extern "C" fn remove_work_dir() {
    let _ = std::fs::remove_dir_all(work_dir());
}

/// The C program, built once per test process.
fn program() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        assert!(
            Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success()),
            "these tests need gcc: install it (apt-get install gcc)"
        );
        let dir = work_dir();
        std::fs::create_dir_all(&dir).expect("temp dir");
        // SAFETY: registers a plain function that only removes our own directory.
        unsafe { libc::atexit(remove_work_dir) };
        let exe = dir.join("hardening");
        let lib_dir = common::lib_dir_with_soname();
        let rpath = format!("-Wl,-rpath,{}", arg(&lib_dir));
        let src = crate_dir().join("tests/c/hardening.c");
        let include = include_dir();
        run_ok(
            "gcc",
            &[
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-I",
                arg(&include),
                arg(&src),
                "-o",
                arg(&exe),
                "-L",
                arg(&lib_dir),
                "-loxshmem",
                &rpath,
            ],
        );
        exe
    })
    .clone()
}

struct Out {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "status {}\n--- stdout\n{}--- stderr\n{}", self.status, self.stdout, self.stderr)
    }
}

/// `oshrun -n 2 --timeout T -- hardening args…` with `env`, killed (with its process group)
/// if it outlives the launcher's timeout by 30 s.
fn job(timeout_s: u32, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(common::workspace_bin("oshrun"));
    cmd.args(["-n", "2", "--timeout", &timeout_s.to_string(), "--"]).arg(program()).args(args);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("SHMEM_") || k.starts_with("OXSHMEM_") || k.starts_with("NVSHMEM_") || k.starts_with("PMI") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child: Child =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("running oshrun");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let limit = Duration::from_secs(u64::from(timeout_s) + 30);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            // SAFETY: signalling the process group of a child we started; no memory.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Out { status, stdout: o.join().unwrap(), stderr: e.join().unwrap() }
}

fn assert_ok(out: &Out, case: &str) {
    assert!(out.status.success(), "{out:?}");
    for pe in 0..2 {
        assert!(out.stdout.contains(&format!("PE {pe} {case} ok")), "{out:?}");
    }
}

/// Item 14: `shmemx_ibput`/`shmemx_ibget` and their OpenSHMEM 1.6 names `shmem_ibput`/
/// `shmem_ibget` have C11 generic forms (with and without a context) that pick the typed
/// routine, and the data lands where the strides say.
#[test]
fn c11_generic_blocked_strided_rma() {
    assert_ok(&job(60, &["ibput"], &[]), "ibput");
}

/// Item 13: `SHPALLOC`/`SHPDEALLC` with `abort = 0` return their error code and print nothing
/// (the caller checks the code); under `SHMEM_DEBUG` they say why on standard error.
#[test]
fn shpalloc_without_abort_is_silent() {
    let out = job(60, &["shpalloc"], &[]);
    assert_ok(&out, "shpalloc");
    assert!(!out.stderr.contains("SHPALLOC") && !out.stderr.contains("SHPDEALLC"), "{out:?}");
    let out = job(60, &["shpalloc"], &[("SHMEM_DEBUG", "1")]);
    assert_ok(&out, "shpalloc");
    assert!(out.stderr.contains("SHPALLOC: invalid argument: length 0"), "{out:?}");
    assert!(out.stderr.contains(": SHPDEALLC: "), "{out:?}");
}

/// Item 8: 20,000 contexts created and destroyed one after the other (the old limit was
/// 16,384 over a program's life), and as many teams.
#[test]
fn destroyed_contexts_and_teams_are_reusable() {
    assert_ok(&job(300, &["churn", "ctx", "20000"], &[]), "churn");
    assert_ok(&job(300, &["churn", "team", "17000"], &[]), "churn");
}

/// Item 8: a handle kept after its destroy is refused with the library's error even once its
/// slot holds a live newer context or team (1,025 create/destroy cycles, then one more kept,
/// which the program checks took the first one's slot).
#[test]
fn a_stale_handle_is_refused_after_its_slot_was_reused() {
    let out = job(300, &["churn", "ctx", "1025", "stale"], &[]);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("shmem_ctx_quiet: invalid argument: context was destroyed"), "{out:?}");
    assert!(!out.stdout.contains("still running"), "{out:?}");
    let out = job(300, &["churn", "team", "1025", "stale"], &[]);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("shmem_team_my_pe: invalid argument: team was destroyed"), "{out:?}");
    assert!(!out.stdout.contains("still running"), "{out:?}");
}

/// Item 9: `nvshmemx_buffer_register` refuses an address that is not mapped (`0x10`) and a
/// length that runs past the mapping (2^62 bytes from a 4 KiB static buffer), naming the PE
/// and the routine; mapped host memory registers.
#[test]
fn buffer_register_checks_the_range_is_mapped() {
    let out = job(60, &["register"], &[]);
    assert_ok(&out, "register");
    for pe in 0..2 {
        let want = format!("PE {pe}: nvshmemx_buffer_register: invalid argument: 0x10 (+4096 bytes) is not memory");
        assert!(out.stderr.contains(&want), "{want:?} missing: {out:?}");
    }
    assert!(out.stderr.contains(&format!("(+{} bytes) is not", 1u64 << 62)), "{out:?}");
}

/// Item 12: the hang report names what an NVSHMEM program called. PE 0 waits in
/// `nvshmem_barrier_all`, PE 1 never comes; the launcher's `--timeout` report says
/// `nvshmem_barrier_all` (not its OpenSHMEM name) for PE 0, and `nvshmem_init` (not the team
/// splits init makes inside) for PE 1.
#[test]
fn the_hang_report_names_nvshmem_calls_as_called() {
    let out = job(5, &["nvhang"], &[]);
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    assert!(out.stderr.contains("PE 0: in nvshmem_barrier_all (world, collective #"), "{out:?}");
    assert!(out.stderr.contains("PE 1: running (last: nvshmem_init)"), "{out:?}");
    assert!(!out.stderr.contains(" shmem_"), "{out:?}");
}

/// A stand-in `libcuda.so.1` built into `dir` with every routine of the CUDA layer's list but
/// `omit` (stubs that report one device of a CUDA 11.4 driver).
fn stand_in_driver(dir: &std::path::Path, omit: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut c = String::from("#include <string.h>\n");
    for (name, _) in oxshmem_device::cuda::DRIVER_SYMBOLS.iter().filter(|(n, _)| !omit.contains(n)) {
        c.push_str(&match *name {
            "cuDriverGetVersion" => "int cuDriverGetVersion(int *v) { *v = 11040; return 0; }\n".to_string(),
            "cuDeviceGetCount" => "int cuDeviceGetCount(int *n) { *n = 1; return 0; }\n".to_string(),
            n => format!("int {n}(void) {{ return 0; }}\n"),
        });
    }
    let src = dir.join("libcuda.c");
    std::fs::write(&src, c).unwrap();
    run_ok("gcc", &["-shared", "-fPIC", "-w", "-o", arg(&dir.join("libcuda.so.1")), arg(&src)]);
    std::fs::copy(dir.join("libcuda.so.1"), dir.join("libcuda.so")).unwrap();
}

/// Item 5: `nvshmem_init` with the GPU heap asked for (`OXSHMEM_CUDA_HEAP=on`) over a driver that
/// lacks a routine the CUDA layer calls ends the job with the library's message naming the
/// routine and the CUDA release it came with — not with the loader's panic and an abort.
#[test]
fn nvshmem_init_over_a_driver_that_lacks_a_routine_says_which() {
    let dir = work_dir().join("old-driver");
    stand_in_driver(&dir, &["cuDeviceGetAttribute"]);
    let out = job(60, &["register"], &[("LD_LIBRARY_PATH", arg(&dir)), ("OXSHMEM_CUDA_HEAP", "on")]);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        out.stderr.contains("nvshmem_init")
            && out.stderr.contains("libcuda.so.1, a CUDA 11.4 driver, lacks cuDeviceGetAttribute (CUDA 2.0)"),
        "{out:?}"
    );
    for abort in ["panicked", "Missing symbol", "failed to initiate panic", "SIGABRT", "signal 6"] {
        assert!(!out.stderr.contains(abort), "{abort:?}: {out:?}");
    }
}
