//! NVSHMEM programs, written as NVSHMEM users write them (`tests/nvshmem/*.c`, `mixed.cc`), built
//! with plain `cc`/`c++` (MPICH's `mpicc` for `mpi.c`) against an installed prefix
//! (`-lnvshmem_host`, `-Wall -Wextra -Werror`), and run under every way NVSHMEM's host library
//! can be started here:
//!
//! - `oshrun -n 2` and `-n 4`: every program (`uid.c` too, with the ranks oshrun gives);
//! - `mpiexec.hydra -n 2` and `-n 4` (MPICH's Hydra, PMI-1): `rma`, `coll`, `mixed`, and `mpi.c`
//!   initialized with `NVSHMEMX_INIT_WITH_MPI_COMM` on three communicators;
//! - `uid-launch -n 2` and `-n 4` (`tests/src/bin/uid-launch.rs`, no PMI at all):
//!   `NVSHMEMX_INIT_WITH_UNIQUEID`, the id handed over in a file;
//!
//! and the ways it must fail: a non-zero CUDA stream, a cut, zeroed or corrupted unique id, a
//! rank outside the job, ranks that disagree on its size, a second init, a root that vanished —
//! each ends the whole job, in bounded time, with the library's message naming the routine. A
//! stranger that connects to rank 0's port without the id does not disturb the job.
//!
//! The prefix is installed once per test process (`oxshmem-install --no-build` after a nested
//! `cargo build` of the C library, the launchers and the tools, in this test's profile) under
//! `target/tmp/`, and removed when the process exits. Every job runs in its own process group
//! under a watchdog. A missing `mpiexec.hydra` or `mpicc` makes its test print why and pass,
//! unless the run requires them (`OXSHMEM_TEST_REQUIRE`, crate `oxshmem-test-require`).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const UID_LAUNCH: &str = env!("CARGO_BIN_EXE_uid-launch");
/// The limit every launcher gets (`oshrun --timeout`, `uid-launch --timeout`, Hydra's
/// `MPIEXEC_TIMEOUT`).
const JOB_TIMEOUT: Duration = Duration::from_secs(60);
/// How long past its own limit a job may run before the watchdog kills its process group.
const WATCHDOG_SLACK: Duration = Duration::from_secs(30);
/// The bootstrap's waits in the jobs that should succeed.
const BOOT_TIMEOUT: &str = "30";

// ---------------------------------------------------------------- the installed prefix

/// `target/<profile>`: the directory above the test executable's `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("the test executable has a directory").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// The cargo profile of `target/<profile>` (`debug` is `dev`).
fn profile_name() -> String {
    match profile_dir().file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_string(),
        Some(p) => p.to_string(),
    }
}

/// This process's work directory under `target/tmp/`, removed at exit.
static WORK: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_work_dir() {
    if let Some(d) = WORK.get() {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `target/tmp/nvshmem/<pid>/`: made once, after removing the directories of earlier test
/// processes that are gone.
fn work_dir() -> &'static Path {
    WORK.get_or_init(|| {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvshmem");
        std::fs::create_dir_all(&base).expect("creating target/tmp/nvshmem");
        for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let stale = e
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
                .is_some_and(|pid| pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists());
            if stale {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let dir = base.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the work directory");
        // SAFETY: atexit with a plain extern "C" function that only removes a directory.
        unsafe { libc::atexit(remove_work_dir) };
        dir
    })
}

/// The prefix: built with nested cargo (as the other tests build what they need), then
/// installed with `oxshmem-install --no-build`, once per test process.
fn prefix() -> &'static Path {
    // A failure is kept: every test that needs the prefix reports it, none builds again.
    static PREFIX: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = PREFIX.get_or_init(|| {
        let profile = profile_name();
        let target = profile_dir().parent().expect("target/<profile> has a parent").to_path_buf();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let t = Instant::now();
        let out = Command::new(cargo)
            .args(["build", "-p", "oxshmem-c", "-p", "oxshmem-bootstrap", "-p", "oxshmem-tools", "--profile", &profile])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cargo build of the C library, the launchers and the tools failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let p = work_dir().join("prefix");
        let out = Command::new(profile_dir().join("oxshmem-install"))
            .arg("--prefix")
            .arg(&p)
            .args(["--no-build", "--profile", &profile])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run oxshmem-install: {e}"))?;
        if !out.status.success() {
            return Err(format!("oxshmem-install failed: {}", describe_output(&out)));
        }
        for f in [
            "bin/oshrun",
            "include/nvshmem.h",
            "include/nvshmemx.h",
            "lib/libnvshmem_host.so",
            "lib/libnvshmem_host.so.3",
        ] {
            if !p.join(f).exists() {
                return Err(format!("the prefix has no {f}: {}", describe_output(&out)));
            }
        }
        eprintln!("prefix built and installed in {:.1?}: {}", t.elapsed(), p.display());
        Ok(p)
    });
    match r {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn describe_output(out: &std::process::Output) -> String {
    format!(
        "status {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

// ---------------------------------------------------------------- building the programs

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compiler {
    Cc,
    Cxx,
    MpiCc,
    /// NVIDIA's nvcc (`OXSHMEM_NVCC`, from `scripts/cuda-toolchain.sh`), compiling the C source
    /// as CUDA C++: NVSHMEM's own build line.
    Nvcc,
    /// nvcc on a `.cu` source that uses the device library's `__host__ __device__` code on the
    /// host (`gpu_ibgda.cu`).
    NvccCu,
}

/// `tests/nvshmem/<name>.c` (or `.cc`) compiled against the prefix, once per test process.
fn program(name: &str, compiler: Compiler) -> PathBuf {
    type Slot = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILT: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    let slot = {
        let mut map = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        map.entry(format!("{name}/{}", compiler as u8)).or_default().clone()
    };
    let r = slot.get_or_init(|| {
        let p = prefix();
        let nvcc = std::env::var("OXSHMEM_NVCC").unwrap_or_default();
        let (tool, src, std) = match compiler {
            Compiler::Cc => ("cc", format!("{name}.c"), "-std=c11"),
            Compiler::Cxx => ("c++", format!("{name}.cc"), "-std=c++17"),
            Compiler::MpiCc => (mpich_mpicc_name(), format!("{name}.c"), "-std=c11"),
            Compiler::Nvcc => (nvcc.as_str(), format!("{name}.c"), "-std=c++17"),
            Compiler::NvccCu => (nvcc.as_str(), format!("{name}.cu"), "-std=c++17"),
        };
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("nvshmem").join(src);
        let out_dir = work_dir().join("bin");
        std::fs::create_dir_all(&out_dir).expect("creating the programs' directory");
        let exe = out_dir.join(if compiler == Compiler::Nvcc { format!("{name}-nvcc") } else { name.to_string() });
        let t = Instant::now();
        let mut cmd = Command::new(tool);
        if matches!(compiler, Compiler::Nvcc | Compiler::NvccCu) {
            // nvcc's host pass sees CUDA's headers (nvshmem.h includes them, as NVSHMEM's
            // does) and CCCL; link flags go through -Xlinker.
            let cuda = PathBuf::from(std::env::var_os("OXSHMEM_CUDA_INCLUDE").unwrap_or_default());
            cmd.args(["-x", "cu", std, "-O1", "-Xcompiler", "-Wall,-Wextra"])
                .arg(format!("-I{}", cuda.join("cccl").display()))
                .arg(&src)
                .arg(format!("-I{}", p.join("include").display()))
                .arg(format!("-L{}", p.join("lib").display()))
                .arg("-lnvshmem_host")
                .arg(format!("-Xlinker=-rpath,{}", p.join("lib").display()));
            if compiler == Compiler::NvccCu {
                // oxshmem/device_state.h, which the device library's headers include.
                let state = Path::new(env!("CARGO_MANIFEST_DIR")).join("../device/include");
                cmd.arg(format!("-I{}", state.display())).args(["-diag-suppress", "20044"]);
            }
        } else {
            cmd.args([std, "-O1", "-Wall", "-Wextra", "-Werror"])
                .arg(&src)
                .arg(format!("-I{}", p.join("include").display()))
                // oxshmem/device_state.h, for gpu_heap.c, which stands in for the device library.
                .arg(format!("-I{}", Path::new(env!("CARGO_MANIFEST_DIR")).join("../device/include").display()))
                .arg(format!("-L{}", p.join("lib").display()))
                .arg("-lnvshmem_host")
                .arg(format!("-Wl,-rpath,{}", p.join("lib").display()));
            if name == "gpu_stream" || name == "gpu_module" {
                // It makes its stream, or loads its modules, with the (emulated) driver API itself.
                let d = emulated_driver();
                cmd.arg(format!("-L{}", d.display())).arg("-lcuda").arg(format!("-Wl,-rpath,{}", d.display()));
            }
        }
        let out =
            cmd.arg("-o").arg(&exe).stdin(Stdio::null()).output().map_err(|e| format!("cannot run {tool}: {e}"))?;
        if !out.status.success() {
            return Err(format!("{tool} {} failed: {}", src.display(), describe_output(&out)));
        }
        eprintln!("built {name} with {tool} in {:.1?}", t.elapsed());
        Ok(exe)
    });
    match r {
        Ok(p) => p.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn c_program(name: &str) -> PathBuf {
    program(name, Compiler::Cc)
}

// ---------------------------------------------------------------- running jobs

struct Out {
    command: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    killed: bool,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "job: {}\nstatus: {} after {:.2?}{}\n--- stdout\n{}--- stderr\n{}---",
            self.command,
            self.status,
            self.elapsed,
            if self.killed { ", KILLED BY THE WATCHDOG" } else { "" },
            self.stdout,
            self.stderr
        )
    }
}

/// A command with none of the runner's settings that could change how a job behaves (the
/// library's, the launchers', the test programs'), and the bootstrap wait of a good job.
fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if ["OXSHMEM_", "OXS_", "PMI", "NVSHMEM_", "SHMEM_", "OSHRUN_", "MPIEXEC_", "HYDRA_", "SLURM_", "OMPI_"]
            .iter()
            .any(|p| k.starts_with(p))
        {
            c.env_remove(k);
        }
    }
    c.env("OXSHMEM_TIMEOUT", BOOT_TIMEOUT);
    c
}

fn reader(mut r: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

/// Runs `cmd` in a process group of its own; past `limit` the watchdog SIGKILLs the group.
fn run(cmd: &mut Command, limit: Duration) -> Out {
    let command = format!("{cmd:?}");
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
    let pgid = child.id() as libc::pid_t;
    let out = reader(child.stdout.take().expect("piped stdout"));
    let err = reader(child.stderr.take().expect("piped stderr"));
    let mut killed = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for the job") {
            break s;
        }
        if start.elapsed() > limit {
            killed = true;
            // SAFETY: kill(2) on the process group of our own child; no memory is involved.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            break child.wait().expect("reaping the job");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    // Whatever the launcher left in its group goes too (nothing, when all is well).
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let stdout = out.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| "<stdout still open>\n".into());
    let stderr = err.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| "<stderr still open>\n".into());
    Out { command, status, stdout, stderr, elapsed, killed }
}

fn oshrun(n: usize, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = command(prefix().join("bin/oshrun"));
    c.args(["-n", &n.to_string(), "--timeout", &JOB_TIMEOUT.as_secs().to_string(), "--"]).arg(prog).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    run(&mut c, JOB_TIMEOUT + WATCHDOG_SLACK)
}

fn hydra_job(h: &Path, n: usize, prog: &Path, args: &[&str]) -> Out {
    let mut c = command(h);
    c.env("MPIEXEC_TIMEOUT", JOB_TIMEOUT.as_secs().to_string()).args(["-n", &n.to_string()]).arg(prog).args(args);
    run(&mut c, JOB_TIMEOUT + WATCHDOG_SLACK)
}

/// `uid-launch -n N [opts] -- prog args`; `opts` without `--timeout` get [`JOB_TIMEOUT`].
fn uid_launch(n: usize, opts: &[&str], prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = command(UID_LAUNCH);
    c.args(["-n", &n.to_string()]);
    if !opts.contains(&"--timeout") {
        c.args(["--timeout", &JOB_TIMEOUT.as_secs().to_string()]);
    }
    c.args(opts).arg("--").arg(prog).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    run(&mut c, JOB_TIMEOUT + WATCHDOG_SLACK)
}

/// The job succeeded and each PE `0..n` said `PE i: OK` exactly `times` times.
#[track_caller]
fn assert_ok_times(out: &Out, n: usize, times: usize) {
    assert!(out.status.success() && !out.killed, "the job failed\n{out:?}");
    for pe in 0..n {
        let want = format!("PE {pe}: OK");
        let count = out.stdout.lines().filter(|l| l.trim_end() == want).count();
        assert_eq!(count, times, "expected {want:?} {times} time(s) in stdout\n{out:?}");
    }
}

#[track_caller]
fn assert_all_ok(out: &Out, n: usize) {
    assert_ok_times(out, n, 1)
}

/// The job failed by itself (not the watchdog's doing, nor a launcher's timeout), within
/// `within`, and its standard error holds every one of `texts`.
#[track_caller]
fn assert_failed_saying(out: &Out, within: Duration, texts: &[&str]) {
    assert!(!out.status.success(), "the job should have failed\n{out:?}");
    assert!(!out.killed, "the job had to be killed by the watchdog\n{out:?}");
    assert_ne!(out.status.code(), Some(124), "the launcher timed out instead of the job ending\n{out:?}");
    assert!(out.elapsed < within, "the job took {:.1?}, more than {within:?}\n{out:?}", out.elapsed);
    for t in texts {
        assert!(out.stderr.contains(t), "expected {t:?} in stderr\n{out:?}");
    }
    assert!(!out.stdout.lines().any(|l| l.ends_with(": OK")), "a PE finished although the job failed\n{out:?}");
}

// ---------------------------------------------------------------- skipping

/// Says why a test does not run, or fails it where the run requires MPICH
/// (`oxshmem_test_require`).
fn skip(why: &str) {
    oxshmem_test_require::skip("mpich", why);
}

fn hydra() -> Option<PathBuf> {
    let h = oxshmem_test_require::which("mpiexec.hydra");
    if h.is_none() {
        skip("mpiexec.hydra not found (apt-get install mpich)");
    }
    h
}

/// The name of MPICH's C wrapper: its own `mpicc.mpich` where there is one (`mpicc` is Open
/// MPI's where both are installed, as after benches/c/run.sh, which installs Open MPI), else
/// `mpicc`.
fn mpich_mpicc_name() -> &'static str {
    if oxshmem_test_require::which("mpicc.mpich").is_some() { "mpicc.mpich" } else { "mpicc" }
}

/// MPICH's `mpicc` (the one whose programs Hydra starts), or a skip.
fn mpich_mpicc() -> Option<PathBuf> {
    let Some(m) = oxshmem_test_require::which(mpich_mpicc_name()) else {
        skip("mpicc not found (apt-get install libmpich-dev)");
        return None;
    };
    let show = Command::new(&m).arg("-show").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    match show {
        Ok(s) if s.contains("mpich") => Some(m),
        Ok(s) => {
            skip(&format!("{} is not MPICH's (mpicc -show: {})", m.display(), s.trim()));
            None
        }
        Err(e) => {
            skip(&format!("{} -show failed: {e}", m.display()));
            None
        }
    }
}

/// Every program of `tests/nvshmem/` is one the tests here build and run (the list below is
/// theirs), so that one added to the folder cannot go unrun, and a folder that reads as empty
/// fails.
#[test]
fn every_program_of_the_folder_is_run() {
    let mut files: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("nvshmem"))
        .expect("reading tests/nvshmem")
        .map(|e| e.expect("an entry of tests/nvshmem").file_name().to_string_lossy().into_owned())
        .filter(|f| [".c", ".cc", ".cu"].iter().any(|x| f.ends_with(x)))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "amo.c",
            "coll.c",
            "gpu_heap.c",
            "gpu_host_more.c",
            "gpu_ibgda.cu",
            "gpu_module.c",
            "gpu_stream.c",
            "mixed.cc",
            "mpi.c",
            "rma.c",
            "stream.c",
            "uid.c"
        ]
    );
}

// ---------------------------------------------------------------- oshrun

fn under_oshrun(name: &str, compiler: Compiler) {
    let prog = program(name, compiler);
    for n in [2, 4] {
        let out = oshrun(n, &prog, &[], &[]);
        assert_all_ok(&out, n);
        eprintln!("oshrun -n {n} {name}: {:.2?}", out.elapsed);
    }
}

/// p/g/put/get/iput/iget/nbi for the 25 types, the sized forms, nvshmem_ptr, fence/quiet order.
#[test]
fn rma_under_oshrun() {
    under_oshrun("rma", Compiler::Cc);
}

/// NVSHMEM's build line with nvcc (the pip toolchain of `scripts/cuda-toolchain.sh`; CI sets
/// `OXSHMEM_NVCC`): the RMA and collectives programs compiled as CUDA C++ against the prefix,
/// linked with `-lnvshmem_host`, run at 2 and 4 PEs (host code only: no GPU is needed).
/// How to get nvcc, for the tests that build with it.
const NVCC_HOW: &str = "eval \"$(bash scripts/cuda-toolchain.sh --env)\" sets it";

#[test]
fn nvcc_built_programs_under_oshrun() {
    if oxshmem_test_require::env("OXSHMEM_NVCC", NVCC_HOW).is_none() {
        return;
    }
    under_oshrun("rma", Compiler::Nvcc);
    under_oshrun("coll", Compiler::Nvcc);
}

/// Every atomic family under contention, with exact totals.
#[test]
fn amo_under_oshrun() {
    under_oshrun("amo", Compiler::Cc);
}

/// Barriers, broadcast/fcollect/alltoall, every reduction and reducescatter, on the world and
/// on split teams.
#[test]
fn coll_under_oshrun() {
    under_oshrun("coll", Compiler::Cc);
}

/// Every `*_on_stream` family with stream 0.
#[test]
fn stream_under_oshrun() {
    under_oshrun("stream", Compiler::Cc);
}

/// NVSHMEM and OpenSHMEM calls on the same memory, from C++.
#[test]
fn mixed_under_oshrun() {
    under_oshrun("mixed", Compiler::Cxx);
}

/// `NVSHMEMX_INIT_WITH_UNIQUEID` in processes that oshrun started (their ranks from PMI_RANK,
/// the bootstrap from the id alone).
#[test]
fn uid_under_oshrun() {
    let prog = c_program("uid");
    for n in [2, 4] {
        let dir = work_dir().join(format!("uid-oshrun-{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("id");
        let out = oshrun(n, &prog, &[], &[("OXS_TEST_ID_FILE", file.to_str().unwrap())]);
        assert_all_ok(&out, n);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A non-zero stream (there is no CUDA to run it) ends the whole job with an error naming the
/// routine, whichever routine it is, while the other PEs wait in a collective or go on.
#[test]
fn a_nonzero_stream_ends_the_job_naming_the_routine() {
    let prog = c_program("stream");
    let cases = [
        ("put", "nvshmemx_int_put_on_stream", 2),
        ("g", "nvshmemx_int_g_on_stream", 2),
        ("barrier", "nvshmemx_barrier_all_on_stream", 4),
        ("reduce", "nvshmemx_int_sum_reduce_on_stream", 4),
        ("signal_wait", "nvshmemx_signal_wait_until_on_stream", 2),
        ("quiet", "nvshmemx_quiet_on_stream", 2),
        ("wait_until", "nvshmemx_int_wait_until_on_stream", 2),
    ];
    for (case, routine, n) in cases {
        let out = oshrun(n, &prog, &["badstream", case], &[]);
        let msg = format!("PE {}: {routine}: invalid argument: stream 0x1000 is not the default stream (0)", n - 1);
        assert_failed_saying(
            &out,
            Duration::from_secs(45),
            &[&msg, "the CUDA back end, which orders work on CUDA streams, is not active"],
        );
        assert!(!out.stderr.contains("returned although"), "{out:?}");
    }
}

// ---------------------------------------------------------------- Hydra

fn under_hydra(name: &str, compiler: Compiler) {
    let Some(h) = hydra() else { return };
    let prog = program(name, compiler);
    for n in [2, 4] {
        let out = hydra_job(&h, n, &prog, &[]);
        assert_all_ok(&out, n);
        eprintln!("mpiexec.hydra -n {n} {name}: {:.2?}", out.elapsed);
    }
}

#[test]
fn rma_under_hydra() {
    under_hydra("rma", Compiler::Cc);
}

#[test]
fn coll_under_hydra() {
    under_hydra("coll", Compiler::Cc);
}

#[test]
fn mixed_under_hydra() {
    under_hydra("mixed", Compiler::Cxx);
}

/// `NVSHMEMX_INIT_WITH_MPI_COMM` in a program built with MPICH's mpicc, on MPI_COMM_WORLD, on a
/// split communicator that reverses the ranks, and on one that splits the job in two NVSHMEM
/// jobs; the library itself links no MPI.
#[test]
fn mpi_comm_init_under_hydra() {
    let Some(h) = hydra() else { return };
    let Some(_) = mpich_mpicc() else { return };
    let prog = program("mpi", Compiler::MpiCc);
    for n in [2, 4] {
        for mode in ["world", "reversed"] {
            let out = hydra_job(&h, n, &prog, &[mode]);
            assert_all_ok(&out, n);
        }
        // two halves of n / 2 PEs each: every PE number twice
        let out = hydra_job(&h, n, &prog, &["halves"]);
        assert_ok_times(&out, n / 2, 2);
    }
    if oxshmem_test_require::tool("readelf", "apt-get install binutils").is_some() {
        for lib in ["lib/libnvshmem_host.so.3", "lib/liboxshmem.so"] {
            let o = Command::new("readelf").arg("-d").arg(prefix().join(lib)).output().expect("readelf");
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success() && text.contains("(NEEDED)"), "readelf -d {lib}: {}", describe_output(&o));
            let mpi: Vec<&str> =
                text.lines().filter(|l| l.contains("(NEEDED)") && l.to_lowercase().contains("mpi")).collect();
            assert!(mpi.is_empty(), "{lib} needs an MPI library at link time: {mpi:?}");
        }
    }
}

// ---------------------------------------------------------------- unique id

#[test]
fn uid_init_under_uid_launch() {
    let prog = c_program("uid");
    for n in [2, 4] {
        let out = uid_launch(n, &[], &prog, &[], &[]);
        assert_all_ok(&out, n);
        eprintln!("uid-launch -n {n} uid: {:.2?}", out.elapsed);
    }
}

/// Bad input ends the whole job quickly, with the library's message naming
/// `nvshmemx_init_attr` and the fault. The bootstrap's waits are 5 s (`OXSHMEM_TIMEOUT`), so a
/// rank left waiting for a dead root gives up.
#[test]
fn uid_bad_input_ends_the_job_naming_nvshmemx_init_attr() {
    let prog = c_program("uid");
    let cases: &[(&str, &[&str])] = &[
        (
            "truncated",
            &[
                "nvshmemx_init_attr: NVSHMEMX_INIT_WITH_UNIQUEID (rank ",
                "the unique id is not valid: checksum mismatch",
            ],
        ),
        ("zeroed", &["nvshmemx_init_attr: NVSHMEMX_INIT_WITH_UNIQUEID (rank ", "the unique id is not valid: all zero"]),
        (
            "corrupt",
            &[
                "nvshmemx_init_attr: NVSHMEMX_INIT_WITH_UNIQUEID (rank ",
                "the unique id is not valid: checksum mismatch",
            ],
        ),
        ("badrank", &["nvshmemx_init_attr: invalid argument: NVSHMEMX_INIT_WITH_UNIQUEID: rank 3 is outside 0..3"]),
        ("negrank", &["nvshmemx_init_attr: invalid argument: NVSHMEMX_INIT_WITH_UNIQUEID: rank -1 is outside 0..3"]),
        (
            "nranks",
            &["nvshmemx_init_attr: NVSHMEMX_INIT_WITH_UNIQUEID (rank ", "says the job has 4 ranks; rank 0 says 3"],
        ),
        ("twice", &["nvshmemx_init_attr: ", "already", "the second init returned"]),
        (
            "rootdies",
            &[
                "uid: rank 0 wrote the id and leaves",
                "nvshmemx_init_attr: NVSHMEMX_INIT_WITH_UNIQUEID (rank ",
                "timed out after 5 s: nothing accepts connections there",
            ],
        ),
    ];
    let outs: Vec<Out> = std::thread::scope(|s| {
        let hs: Vec<_> = cases
            .iter()
            .map(|(mode, _)| {
                let prog = &prog;
                // The others come late to a vanished root: nothing listens any more (had they
                // come at once, the kernel could have queued their connections to the root's
                // socket before it closed, a different failure).
                let late = if *mode == "rootdies" { "300" } else { "0" };
                s.spawn(move || {
                    uid_launch(
                        3,
                        &["--timeout", "30"],
                        prog,
                        &[mode],
                        &[("OXSHMEM_TIMEOUT", "5"), ("OXS_TEST_LATE_MS", late)],
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("a job thread panicked")).collect()
    });
    for ((mode, texts), out) in cases.iter().zip(&outs) {
        eprintln!("uid {mode}: ended after {:.2?}", out.elapsed);
        assert_failed_saying(out, Duration::from_secs(45), texts);
        assert!(out.stderr.contains("uid-launch: rank "), "{mode}: uid-launch did not say which rank failed\n{out:?}");
    }
}

/// A broken job ends without the launcher's help: with `uid-launch --no-kill` every rank must
/// give up by itself (at the latest when `OXSHMEM_TIMEOUT` passes) and say why.
#[test]
fn uid_ranks_of_a_broken_job_give_up_on_their_own() {
    let prog = c_program("uid");
    let cases: &[(&str, &[&str])] = &[
        // rank 1 and 2 fail at once; rank 0 waits for them, then gives up
        ("zeroed", &["rank 0 of 3", "timed out after 3 s", "uid-launch: rank 0 exited with status 2"]),
        // rank 2 fails at once; rank 0 gives up waiting for it, rank 1 with it
        (
            "badrank",
            &[
                "rank 3 is outside 0..3",
                "uid-launch: rank 0 exited with status 2",
                "uid-launch: rank 1 exited with status 2",
            ],
        ),
        // every rank hears that they disagree
        (
            "nranks",
            &[
                "says the job has 4 ranks; rank 0 says 3",
                "uid-launch: rank 0 exited",
                "uid-launch: rank 1 exited",
                "uid-launch: rank 2 exited",
            ],
        ),
        // nobody listens at the root's address any more
        (
            "rootdies",
            &[
                "timed out after 3 s: nothing accepts connections there",
                "uid-launch: rank 1 exited with status 2",
                "uid-launch: rank 2 exited with status 2",
            ],
        ),
    ];
    let outs: Vec<Out> = std::thread::scope(|s| {
        let hs: Vec<_> = cases
            .iter()
            .map(|(mode, _)| {
                let prog = &prog;
                let late = if *mode == "rootdies" { "300" } else { "0" };
                s.spawn(move || {
                    uid_launch(
                        3,
                        &["--no-kill", "--timeout", "40"],
                        prog,
                        &[mode],
                        &[("OXSHMEM_TIMEOUT", "3"), ("OXS_TEST_LATE_MS", late)],
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("a job thread panicked")).collect()
    });
    for ((mode, texts), out) in cases.iter().zip(&outs) {
        eprintln!("uid {mode} (--no-kill): every rank ended after {:.2?}", out.elapsed);
        assert_failed_saying(out, Duration::from_secs(45), texts);
        assert!(!out.stderr.contains("timed out after 40"), "{mode}: uid-launch had to end ranks\n{out:?}");
    }
}

/// A second init with a fresh unique id fails at once ("already initialized"), without first
/// waiting for a rendezvous that cannot happen.
#[test]
fn uid_second_init_with_a_fresh_id_fails_at_once() {
    let prog = c_program("uid");
    // A rendezvous would wait OXSHMEM_TIMEOUT (90 s) for the second rank; the check answers at once.
    let out = uid_launch(2, &["--no-kill", "--timeout", "120"], &prog, &["twicenew"], &[("OXSHMEM_TIMEOUT", "90")]);
    assert_failed_saying(&out, Duration::from_secs(45), &["nvshmemx_init_attr: ", "already initialized"]);
}

/// Rank 0's address, from the `nvshmemx_uniqueid_t` in `file` (layout: `bootstrap/src/uid/id.rs`;
/// the 124 `internal` bytes start at offset 4).
fn root_addr(file: &Path) -> SocketAddr {
    let b = std::fs::read(file).expect("reading the id file");
    assert_eq!(b.len(), 128, "the id file holds {} bytes", b.len());
    let i = &b[4..];
    assert_eq!(&i[..4], b"OXSU", "not an oxshmem unique id: {:02x?}", &i[..8]);
    let port = u16::from_le_bytes([i[6], i[7]]);
    let ip = match i[5] {
        4 => IpAddr::V4(Ipv4Addr::new(i[8], i[9], i[10], i[11])),
        6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&i[8..24]).unwrap())),
        f => panic!("address family {f} in the id"),
    };
    SocketAddr::new(ip, port)
}

/// Strangers connect to rank 0's port while the real ranks initialize — one sends garbage, one
/// sends nothing and stays, one sends a large blob, one hangs up at once — and the job still
/// succeeds.
#[test]
fn uid_strangers_on_the_root_port_do_not_disturb_the_job() {
    let prog = c_program("uid");
    let dir = work_dir().join("uid-stranger");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("id");
    let _ = std::fs::remove_file(&file);
    let n = 4;
    std::thread::scope(|s| {
        // The other ranks start their init 1.5 s after reading the id: the strangers come first.
        let job = s.spawn(|| {
            uid_launch(n, &["--id-file", file.to_str().unwrap()], &prog, &[], &[("OXS_TEST_LATE_MS", "1500")])
        });
        let t = Instant::now();
        while !file.exists() {
            assert!(t.elapsed() < Duration::from_secs(30), "rank 0 wrote no id file");
            std::thread::sleep(Duration::from_millis(5));
        }
        let addr = root_addr(&file);
        let connect = || {
            let t = Instant::now();
            loop {
                match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
                    Ok(c) => return c,
                    Err(e) if t.elapsed() > Duration::from_secs(10) => {
                        panic!("cannot connect to rank 0 at {addr}: {e}")
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        };
        let mut garbage = connect();
        let _ = garbage.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n\x00\xff\xfe garbage \x01\x02");
        let silent = connect();
        let mut blob = connect();
        let _ = blob.set_write_timeout(Some(Duration::from_secs(2)));
        let _ = blob.write_all(&vec![0xA5u8; 256 * 1024]);
        drop(connect());
        let out = job.join().expect("the job thread panicked");
        drop((garbage, silent, blob));
        assert_all_ok(&out, n);
        eprintln!("uid-launch -n {n} with strangers: {:.2?}\n{}", out.elapsed, out.stderr);
    });
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- the CUDA back end

/// `tests/emucuda/libcuda.c` built as `libcuda.so.1` (and `libcuda.so`) in a directory of its
/// own: the emulated driver, under which the GPU heap's set-up runs on host memory.
fn emulated_driver() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = work_dir().join("emucuda");
        oxshmem_tests::build_emulated_driver(&dir).unwrap_or_else(|e| panic!("{e}"));
        dir
    })
}

/// A job of `gpu_heap.c` under the emulated driver.
fn gpu_heap_job(n: usize, args: &[&str], env: &[(&str, &str)]) -> Out {
    let driver = emulated_driver().to_str().expect("a UTF-8 path").to_string();
    let mut all = vec![("LD_LIBRARY_PATH", driver.as_str()), ("SHMEM_SYMMETRIC_SIZE", "8M")];
    all.extend_from_slice(env);
    oshrun(n, &c_program("gpu_heap"), args, &all)
}

/// A program that links the device library (here `gpu_heap.c`, which registers as one) gets
/// the GPU heap at `nvshmem_init`: every PE's heap mapped by every other, `nvshmem_malloc`
/// from it at one offset everywhere, `nvshmem_ptr` into the peers' mappings, host put, get, p
/// and g on it, calloc and free, and a device state and team table that agree with all that.
#[test]
fn gpu_heap_under_the_emulated_driver() {
    for n in [2, 4] {
        assert_all_ok(&gpu_heap_job(n, &[], &[]), n);
    }
}

/// `OXSHMEM_DEVICE_CHANNEL=proxy`: the device state points at a request ring in pinned memory,
/// and the host library's proxy thread carries out what a kernel submits there (put, p, a
/// fetching AMO, put-signal, signal op, get) on the peers' GPU heaps.
#[test]
fn the_proxy_channel_over_the_gpu_heap() {
    for n in [2, 4] {
        assert_all_ok(&gpu_heap_job(n, &[], &[("OXSHMEM_DEVICE_CHANNEL", "proxy")]), n);
    }
}

/// A host routine the back end does not reach GPU memory with (a lock there) ends the job
/// saying so, instead of calling GPU memory not symmetric; so does a host atomic when the
/// device library registered no AMO kernel.
#[test]
fn host_routines_that_do_not_reach_gpu_memory_say_so() {
    let out = gpu_more_job(2, &["unreached"], &[]);
    assert_failed_saying(
        &out,
        Duration::from_secs(40),
        &[
            "shmem_set_lock",
            "is in the GPU symmetric heap (nvshmem_malloc)",
            "host RMA (strided too), atomics, signals, waits and tests and the team collectives do",
            "but not the deprecated active-set collectives",
        ],
    );
    let out = gpu_heap_job(2, &[], &[("OXSHMEM_TEST_NO_AMO_KERNEL", "1")]);
    assert_failed_saying(&out, Duration::from_secs(40), &["shmem_putmem_signal", "AMO kernel"]);
    let out = gpu_heap_job(2, &["align"], &[]);
    assert_failed_saying(&out, Duration::from_secs(40), &["nvshmem_align", "at most 2097152 bytes"]);
}

/// Without a driver, a program with device code stops at `nvshmem_init` with the reason (on a
/// machine with a real driver there is nothing to show).
#[test]
fn device_code_without_a_driver_stops_at_init() {
    let empty = work_dir().join("no-driver");
    std::fs::create_dir_all(&empty).unwrap();
    let out = oshrun(2, &c_program("gpu_heap"), &[], &[("LD_LIBRARY_PATH", empty.to_str().unwrap())]);
    if out.status.success() {
        oxshmem_test_require::skip(
            "no-cuda-driver",
            &format!("a CUDA driver is installed here, so init succeeds\n{out:?}"),
        );
        return;
    }
    assert_failed_saying(&out, Duration::from_secs(40), &["nvshmem_init", "no CUDA driver: libcuda.so.1 not found"]);
}

/// The `*_on_stream` routines are stream operations: asynchronous, after the stream's earlier
/// work, before its later work (`gpu_stream.c`, on a stream it makes with the driver API).
#[test]
fn on_stream_routines_are_ordered_stream_operations() {
    let driver = emulated_driver().to_str().expect("a UTF-8 path").to_string();
    for n in [2, 4] {
        let out = oshrun(n, &program("gpu_stream", Compiler::Cc), &[], &[("LD_LIBRARY_PATH", &driver)]);
        assert_all_ok(&out, n);
    }
}

/// `OXSHMEM_DEVICE_CHANNEL=ibgda`: the device library's queue-pair producer (compiled for the
/// host by nvcc) posts work requests into the queues `nvshmem_init` built in pinned memory, and
/// the host library's software NIC executes them on the peers' GPU heaps, each registered
/// with the NIC through a dma-buf the driver exports; with a NIC that reads doorbell registers,
/// the GPU threads write them through the mapped page or a CPU thread rings for them. The queues
/// also work in GPU memory (`OXSHMEM_IBGDA_QUEUE_MEM=gpu`). Queues in the hns format are refused
/// at init.
#[test]
fn the_ibgda_channel_over_the_gpu_heap() {
    if oxshmem_test_require::env("OXSHMEM_NVCC", NVCC_HOW).is_none() {
        return;
    }
    let driver = emulated_driver().to_str().expect("a UTF-8 path").to_string();
    let prog = program("gpu_ibgda", Compiler::NvccCu);
    // A job of `n` PEs over IBGDA under the emulated driver, with `extra` in its environment.
    let job = |n: usize, extra: &[(&str, &str)]| {
        let mut env = vec![
            ("LD_LIBRARY_PATH", driver.as_str()),
            ("SHMEM_SYMMETRIC_SIZE", "8M"),
            ("OXSHMEM_DEVICE_CHANNEL", "ibgda"),
        ];
        env.extend_from_slice(extra);
        oshrun(n, &prog, &[], &env)
    };
    for n in [2, 4] {
        let out = job(n, &[("OXSHMEM_LOG", "nic=debug")]);
        assert_all_ok(&out, n);
        // The GPU heap went to the NIC as a dma-buf the driver exported, as with a real NIC
        // and no nvidia_peermem.
        for pe in 0..n {
            assert!(
                out.stderr.lines().any(|l| l.starts_with(&format!("PE {pe} "))
                    && l.contains("the GPU heap is registered through a dma-buf")),
                "PE {pe} did not register its GPU heap through a dma-buf\n{}",
                out.stderr
            );
        }
    }
    // A NIC that reads its doorbell register (the software NIC in register mode): the GPU
    // threads write it through the register's page mapped for the GPU (auto), or a CPU thread
    // of the PE rings for them (cpu, as where the GPU cannot map the page).
    for handler in ["auto", "cpu"] {
        let out = job(
            2,
            &[
                ("OXSHMEM_SOFTNIC_DOORBELL", "register"),
                ("OXSHMEM_IBGDA_NIC_HANDLER", handler),
                ("OXSHMEM_LOG", "nic=debug"),
            ],
        );
        assert_all_ok(&out, 2);
        let ringer = out.stderr.contains("a CPU thread rings the NIC for the producers");
        assert_eq!(ringer, handler == "cpu", "{handler}: the CPU ringer\n{}", out.stderr);
    }
    // The queues in GPU memory (NVSHMEM's NIC buffers there): built as an image in host memory
    // and copied in, registered through a dma-buf of their own allocation, and executed as
    // before — with the software NIC reading records or registers, the producers or a CPU
    // thread ringing (the CPU reaches this emulated GPU's memory, as on a coherent system;
    // behind PCIe both refuse, `devmem::cpu_reaches`). The queue pairs were created over GPU
    // memory with its dma-buf. NVSHMEM's spelling of the variable works too.
    let gpu_queues = [
        vec![("OXSHMEM_IBGDA_QUEUE_MEM", "gpu")],
        vec![("NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE", "gpumem"), ("OXSHMEM_SOFTNIC_DOORBELL", "register")],
        vec![
            ("OXSHMEM_IBGDA_QUEUE_MEM", "gpu"),
            ("OXSHMEM_SOFTNIC_DOORBELL", "register"),
            ("OXSHMEM_IBGDA_NIC_HANDLER", "cpu"),
        ],
    ];
    for (case, extra) in gpu_queues.iter().enumerate() {
        let n = if case == 0 { 4 } else { 2 };
        let mut env = extra.clone();
        env.push(("OXSHMEM_LOG", "nic=debug"));
        let out = job(n, &env);
        assert_all_ok(&out, n);
        for pe in 0..n {
            for said in [
                "IBGDA queues in GPU memory",
                "the IBGDA queues (GPU memory) is registered through a dma-buf",
                "queue pair over GPU memory, its user memory through a dma-buf",
            ] {
                assert!(
                    out.stderr.lines().any(|l| l.starts_with(&format!("PE {pe} ")) && l.contains(said)),
                    "{extra:?}: PE {pe} did not log {said:?}\n{}",
                    out.stderr
                );
            }
        }
    }
    // hns queues: the device library writes mlx5 WQEs, so init refuses them, saying so.
    let out = job(2, &[("OXSHMEM_SOFTNIC_LAYOUT", "hns")]);
    assert_failed_saying(
        &out,
        Duration::from_secs(40),
        &["IBGDA queues in hns format", "the CUDA device library writes mlx5 work requests"],
    );
}

/// `tests/cuda/modules/gpu_ring.cu` built for the CPU target by the prefix's `oshnvcc`, as three
/// shared objects (in a process, one copy of a shared object is one set of globals):
/// `gpu_module.c` binds the first as a module, leaves the second unbound and loads the third as
/// a library.
fn gpu_ring_objects() -> &'static [String; 3] {
    static SO: OnceLock<[String; 3]> = OnceLock::new();
    SO.get_or_init(|| {
        let dir = work_dir().join("modules");
        std::fs::create_dir_all(&dir).expect("creating the modules' directory");
        let so = dir.join("gpu_ring.so");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda/modules/gpu_ring.cu");
        let out = Command::new(prefix().join("bin/oshnvcc"))
            .args(["--target", "cpu", "-shared", "-fPIC"])
            .arg(&src)
            .arg("-o")
            .arg(&so)
            .stdin(Stdio::null())
            .output()
            .expect("running oshnvcc");
        assert!(out.status.success() && so.exists(), "oshnvcc --target cpu -shared failed: {}", describe_output(&out));
        ["gpu_ring.so", "gpu_ring-unbound.so", "gpu_ring-library.so"].map(|name| {
            let p = dir.join(name);
            if name != "gpu_ring.so" {
                std::fs::copy(&so, &p).expect("copying the module");
            }
            p.to_str().expect("a UTF-8 path").to_string()
        })
    })
}

/// A job of `gpu_module.c` under the emulated driver.
fn gpu_module_job(n: usize, env: &[(&str, &str)]) -> Out {
    let driver = emulated_driver().to_str().expect("a UTF-8 path").to_string();
    let mut all = vec![("LD_LIBRARY_PATH", driver.as_str()), ("SHMEM_SYMMETRIC_SIZE", "8M")];
    all.extend_from_slice(env);
    let args: Vec<&str> = gpu_ring_objects().iter().map(String::as_str).collect();
    oshrun(n, &c_program("gpu_module"), &args, &all)
}

/// `nvshmemx_cumodule_init` and `nvshmemx_culibrary_init` give CUDA code the program loaded
/// itself (Triton's and nvshmem4py's way) the PE's device state: a module's and a library's
/// `ring_put` reach the next PE; a module nobody bound stores nothing (its device library has
/// no state: nothing reports it yet), nor does one after `nvshmemx_cumodule_finalize`; a NULL
/// handle is refused with a message.
#[test]
fn modules_and_libraries_the_program_loads_get_the_device_state() {
    for n in [2, 4] {
        let out = gpu_module_job(n, &[("OXSHMEM_CUDA_HEAP", "on")]);
        assert_all_ok(&out, n);
        for pe in 0..n {
            let left = (pe + n - 1) % n;
            for said in [
                format!("PE {pe}: module ring_put from PE {left} arrived (32 threads)"),
                format!("PE {pe}: an unbound module's kernel stored nothing (0 of 32 words; no error is reported)"),
                format!("PE {pe}: library ring_put from PE {left} arrived (32 threads)"),
            ] {
                assert!(out.stdout.lines().any(|l| l == said), "expected {said:?}\n{out:?}");
            }
        }
        for said in ["nvshmemx_cumodule_init", "a NULL module handle", "a NULL library handle"] {
            assert!(out.stderr.contains(said), "expected {said:?} in stderr\n{out:?}");
        }
        eprintln!("{}", out.stdout);
    }
    // Without the GPU back end (no device library linked, OXSHMEM_CUDA_HEAP not on) there is no
    // device state to give: the calls fail saying so.
    let out = gpu_module_job(2, &[]);
    assert_failed_saying(
        &out,
        Duration::from_secs(40),
        &["nvshmemx_cumodule_init", "the CUDA back end is not up", "OXSHMEM_CUDA_HEAP=on"],
    );
}

/// `OXSHMEM_CUDA_HEAP=off` cannot take the GPU heap from a program with device code.
#[test]
fn the_gpu_heap_cannot_be_switched_off_under_device_code() {
    let driver = emulated_driver().to_str().unwrap().to_string();
    let out = oshrun(2, &c_program("gpu_heap"), &[], &[("LD_LIBRARY_PATH", &driver), ("OXSHMEM_CUDA_HEAP", "off")]);
    assert_failed_saying(&out, Duration::from_secs(40), &["OXSHMEM_CUDA_HEAP=off", "links libnvshmem_device.a"]);
}

// ---------------------------------------------------------------- host routines on GPU memory

/// A job of `gpu_host_more.c` under the emulated driver (`args`: the part to run, or none for
/// all of it).
fn gpu_more_job(n: usize, args: &[&str], env: &[(&str, &str)]) -> Out {
    let driver = emulated_driver().to_str().expect("a UTF-8 path").to_string();
    let mut all = vec![("LD_LIBRARY_PATH", driver.as_str()), ("SHMEM_SYMMETRIC_SIZE", "32M")];
    all.extend_from_slice(env);
    oshrun(n, &c_program("gpu_host_more"), args, &all)
}

/// The 2D copies in the emulated driver's log (`OXSHMEM_EMUCUDA_LOG`): for each, its source
/// and destination pitches and whether the driver carried it out.
fn copies_2d(log: &Path) -> Vec<(usize, usize, bool)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("cuMemcpy2DAsync("))
        .map(|l| {
            // "[pid] cuMemcpy2DAsync(R rows of W bytes, pitch S to D) -> 0"
            let pitches = l.split("pitch ").nth(1).and_then(|r| r.split(')').next()).unwrap_or_else(|| panic!("{l:?}"));
            let (s, d) = pitches.split_once(" to ").unwrap_or_else(|| panic!("{l:?}"));
            (s.parse().unwrap(), d.parse().unwrap(), l.ends_with("-> 0"))
        })
        .collect()
}

/// Strided RMA, the multi-word waits and tests and the team collectives reach GPU memory from
/// the host (`gpu_host_more.c`, every value checked): iput/iget in typed, sized and context
/// forms with several strides and element sizes, both ways, each one 2D copy of the driver;
/// every `_all`/`_any`/`_some` wait and test and their `_vector` forms, "not yet" answers and
/// masks included; collect with unequal sizes, fcollect, alltoall(s), broadcast, reduce and
/// reducescatter, with either buffer in host memory, on the world and on split teams, and on
/// two teams from two threads at once (which the staged collectives could deadlock on).
/// Members that disagree on a collective's arguments all get the same error.
#[test]
fn strided_rma_waits_and_collectives_reach_gpu_memory() {
    for n in [2, 4] {
        let log = work_dir().join(format!("gpu-host-more-{n}.log"));
        let _ = std::fs::remove_file(&log);
        let out = gpu_more_job(n, &[], &[("OXSHMEM_EMUCUDA_LOG", log.to_str().expect("a UTF-8 path"))]);
        assert_all_ok(&out, n);
        let said = out.stderr.matches("the team's members called it with different arguments").count();
        assert_eq!(said, n, "every PE should have refused the mismatched fcollect\n{out:?}");
        let copies = copies_2d(&log);
        assert!(!copies.is_empty(), "no 2D copy in the driver's log\n{out:?}");
        assert!(copies.iter().all(|c| c.2), "a 2D copy was refused: {copies:?}");
        eprintln!("oshrun -n {n} gpu_host_more: {:.2?}, {} 2D copies", out.elapsed, copies.len());
    }
}

/// Where the driver takes no 2D copy of a pitch (an emulated `CU_DEVICE_ATTRIBUTE_MAX_PITCH` of
/// 64 bytes), strided RMA on GPU memory copies block by block instead, with the same results;
/// the pitches within the limit still go as 2D copies.
#[test]
fn strided_rma_on_gpu_memory_beyond_the_drivers_pitch() {
    for n in [2, 4] {
        let log = work_dir().join(format!("gpu-host-more-pitch-{n}.log"));
        let _ = std::fs::remove_file(&log);
        let env = [("OXSHMEM_EMUCUDA_MAX_PITCH", "64"), ("OXSHMEM_EMUCUDA_LOG", log.to_str().expect("a UTF-8 path"))];
        let out = gpu_more_job(n, &["strided"], &env);
        assert_all_ok(&out, n);
        let copies = copies_2d(&log);
        assert!(!copies.is_empty(), "no 2D copy in the driver's log\n{out:?}");
        assert!(copies.iter().all(|&(s, d, ok)| ok && s <= 64 && d <= 64), "{copies:?}");
    }
}

/// A host wait on GPU memory that never ends is ended by the launcher's timeout, and the hang
/// report names it, as it names the runtime's own waits.
#[test]
fn a_wait_on_gpu_memory_that_never_ends_shows_in_the_hang_report() {
    let driver = emulated_driver().to_str().expect("a UTF-8 path").to_string();
    let mut c = command(prefix().join("bin/oshrun"));
    c.args(["-n", "2", "--timeout", "5", "--"]).arg(c_program("gpu_host_more")).arg("hang");
    c.env("LD_LIBRARY_PATH", &driver).env("SHMEM_SYMMETRIC_SIZE", "32M");
    let out = run(&mut c, Duration::from_secs(5) + WATCHDOG_SLACK);
    assert!(!out.killed, "the launcher should have ended the job\n{out:?}");
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    assert!(out.stderr.contains("oshrun: job timed out after 5 s"), "{out:?}");
    assert!(out.stderr.contains("PE 0: in shmem_wait_until_all (on 0x"), "{out:?}");
    assert!(!out.stderr.contains("the wait that never ends returned"), "{out:?}");
}
