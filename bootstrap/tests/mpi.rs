//! The MPI-communicator bootstrap (`NVSHMEMX_INIT_WITH_MPI_COMM`, `oxshmem_bootstrap::mpi`)
//! in real MPI jobs: MPICH under its launcher `mpiexec.hydra`, and Open MPI under
//! `mpirun.openmpi` when it is installed.
//!
//! The PEs are a program of their own, `tests/pe/mpi.rs` (example `mpi-pe`), started with
//! `OXS_MPI_TEST_PE=<scenario>`. Like a program that links neither, a PE `dlopen`s the MPI
//! library named by `OXS_MPI_TEST_LIB` (MPICH's `libmpich.so.12`/`libmpi.so.12`, found the way
//! `mpicc -show` links it; Open MPI's `libmpi.so.40`) with `RTLD_GLOBAL`, calls `MPI_Init`
//! through `dlsym`, and hands the bootstrap the address of its `MPI_Comm` variable. No part of
//! the test links MPI.
//!
//! Missing MPICH (Hydra or its library) or Open MPI makes a test print why and pass — unless the run requires it (`OXSHMEM_TEST_REQUIRE`, crate `oxshmem-test-require`; `.ci/run`
//! requires everything after installing it), which turns the skip into a failure.
//! Every job runs in its own process
//! group under a watchdog that kills the group.

mod common;

use common::reader;
use std::fmt::Debug;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const PE_VAR: &str = "OXS_MPI_TEST_PE";
/// The MPI library a PE loads.
const LIB_VAR: &str = "OXS_MPI_TEST_LIB";
/// `mpich` or `openmpi`: the ABI of that library.
const FLAVOR_VAR: &str = "OXS_MPI_TEST_FLAVOR";
/// `local`: load it with `RTLD_LOCAL` instead of `RTLD_GLOBAL`.
const SCOPE_VAR: &str = "OXS_MPI_TEST_SCOPE";
/// Upper bound for any one job here; they take about a second when all is well.
const WATCHDOG: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- running jobs

struct Out {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// Run `cmd` in its own process group, at most [`WATCHDOG`]; past that, SIGKILL the group and
/// fail the test with what it printed.
fn run(cmd: &mut Command) -> Out {
    let t = Instant::now();
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
    let out = reader(child.stdout.take().unwrap());
    let err = reader(child.stderr.take().unwrap());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > WATCHDOG {
            // SAFETY: signalling the process group of a child we started; no memory.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "job still running after {WATCHDOG:?}; killed. Output:\n{}{}",
                out.join().unwrap(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out { status, stdout: out.join().unwrap(), stderr: err.join().unwrap(), elapsed: t.elapsed() }
}

/// Clear the launcher and bootstrap variables this test process may have inherited.
fn clean_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("OXSHMEM_") || k.starts_with("OXS_MPI_TEST") || k.starts_with("OMPI_")
        {
            cmd.env_remove(k);
        }
    }
    cmd
}

// ---------------------------------------------------------------- finding MPI

use oxshmem_test_require::which;

/// The `-L` folders and `-l` names a compiler wrapper's `flag` (`-show`, `-showme:link`)
/// prints.
fn wrapper_link(wrapper: &str, flag: &str) -> (Vec<PathBuf>, Vec<String>) {
    let Some(out) = Command::new(wrapper).arg(flag).stderr(Stdio::null()).output().ok().filter(|o| o.status.success())
    else {
        return (Vec::new(), Vec::new());
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let dirs = text.split_whitespace().filter_map(|w| w.strip_prefix("-L")).map(PathBuf::from).collect();
    let libs = text.split_whitespace().filter_map(|w| w.strip_prefix("-l")).map(str::to_string).collect();
    (dirs, libs)
}

const MULTIARCH: &[&str] = &["/usr/lib/x86_64-linux-gnu", "/usr/lib64/mpich/lib", "/usr/lib64", "/usr/lib"];

/// MPICH's shared library, soname version 12, as its `mpicc -show` links it (Debian:
/// `-L/usr/lib/x86_64-linux-gnu -lmpich`; upstream and Fedora: `-lmpi`).
fn mpich_lib() -> Option<PathBuf> {
    let mut dirs = Vec::new();
    let mut names = Vec::new();
    // mpicc may be Open MPI's where both are installed: MPICH's own wrapper first.
    for w in ["mpicc.mpich", "mpicc"] {
        let (d, l) = wrapper_link(w, "-show");
        dirs.extend(d);
        names.extend(l.into_iter().filter(|l| l == "mpich" || l == "mpi"));
    }
    names.extend(["mpich".to_string(), "mpi".to_string()]);
    dirs.extend(MULTIARCH.iter().map(PathBuf::from));
    dirs.iter().flat_map(|d| names.iter().map(move |n| d.join(format!("lib{n}.so.12")))).find(|p| p.exists())
}

fn hydra_and_mpich() -> Option<(PathBuf, PathBuf)> {
    let Some(h) = which("mpiexec.hydra") else {
        oxshmem_test_require::skip("mpich", "mpiexec.hydra not found (apt-get install mpich)");
        return None;
    };
    let Some(lib) = mpich_lib() else {
        oxshmem_test_require::skip(
            "mpich",
            "MPICH's libmpich.so.12 / libmpi.so.12 not found (apt-get install libmpich-dev)",
        );
        return None;
    };
    Some((h, lib))
}

/// `mpiexec.hydra -n N <PE>` running `scenario` over MPICH's `lib`.
fn hydra_job(h: &Path, lib: &Path, n: usize, scenario: &str) -> Command {
    let mut c = Command::new(h);
    clean_env(&mut c)
        .args(["-n", &n.to_string()])
        .arg(common::pe_program("mpi-pe"))
        .env(PE_VAR, scenario)
        .env(LIB_VAR, lib)
        .env(FLAVOR_VAR, "mpich");
    c
}

/// This binary as one PE without a launcher.
fn plain_pe(scenario: &str) -> Command {
    let mut c = Command::new(common::pe_program("mpi-pe"));
    clean_env(&mut c).env(PE_VAR, scenario);
    c
}

fn assert_lines(out: &Out, lines: impl IntoIterator<Item = String>) {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for line in lines {
        assert!(out.stdout.contains(&line), "missing {line:?}: {out:?}");
    }
}

// ---------------------------------------------------------------- MPICH

#[test]
fn mpich_world_2_and_4() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    for n in [2, 4] {
        let out = run(&mut hydra_job(&h, &lib, n, "world"));
        assert_lines(&out, (0..n).map(|r| format!("PE {r} of {n}: ok mpi mpich [MPICH Version: ")));
        eprintln!("mpiexec.hydra -n {n}: {:?}", out.elapsed);
    }
}

#[test]
fn mpich_split_evens_and_odds() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    for n in [4, 3] {
        let out = run(&mut hydra_job(&h, &lib, n, "split"));
        assert_lines(
            &out,
            (0..n).map(|r| format!("PE {r} of {n}: ok split color {}: {} of {}", r % 2, r / 2, (n + 1 - r % 2) / 2)),
        );
    }
}

#[test]
fn mpich_loaded_privately() {
    // RTLD_LOCAL, as a Python extension module's libraries are: the bootstrap finds the
    // library that is already loaded by its soname (RTLD_NOLOAD).
    let Some((h, lib)) = hydra_and_mpich() else { return };
    let out = run(hydra_job(&h, &lib, 2, "world").env(SCOPE_VAR, "local"));
    assert_lines(&out, (0..2).map(|r| format!("PE {r} of 2: ok mpi mpich")));
}

#[test]
fn mpich_finalize_after_mpi_finalize() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    let out = run(&mut hydra_job(&h, &lib, 2, "mpi-finalized-first"));
    assert_lines(&out, (0..2).map(|r| format!("PE {r} of 2: ok finalize after MPI_Finalize")));
}

#[test]
fn mpich_abort_ends_the_job() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    let out = run(&mut hydra_job(&h, &lib, 3, "abort"));
    // Hydra passes on MPI_Abort's error code (7) or, when it reaps one of the PEs it killed
    // first, that PE's signal (9: seen in CI); either way the job ended, nonzero, promptly.
    assert!(matches!(out.status.code(), Some(7) | Some(9)), "{out:?}");
    assert!(out.stderr.contains("PE 1 gives up: test abort"), "{out:?}");
    assert!(!out.stderr.contains("completed although"), "{out:?}");
    assert!(out.elapsed < Duration::from_secs(20), "{out:?}");
}

#[test]
fn errors_without_mpi_and_before_mpi_init() {
    // No MPI library in the process at all.
    let out = run(&mut plain_pe("no-mpi"));
    assert_lines(&out, ["ok: no MPI".to_string()]);
    let Some((h, lib)) = hydra_and_mpich() else { return };
    // MPICH loaded, MPI_Init not called (MPI_Initialized is allowed before it).
    let out = run(plain_pe("not-initialized").env(LIB_VAR, &lib).env(FLAVOR_VAR, "mpich"));
    assert_lines(&out, ["ok: not initialized".to_string()]);
    // MPI_Init and MPI_Finalize both called already.
    let out = run(&mut hydra_job(&h, &lib, 1, "mpi-finalized-before-init"));
    assert_lines(&out, ["ok: finalized before init".to_string()]);
}

// ---------------------------------------------------------------- Open MPI

#[test]
fn openmpi_world_and_split() {
    // Debian's openmpi-bin installs mpirun.openmpi whatever `mpirun` points to.
    let Some(mpirun) = which("mpirun.openmpi") else {
        oxshmem_test_require::skip("openmpi", "mpirun.openmpi not found (apt-get install openmpi-bin libopenmpi-dev)");
        return;
    };
    let (mut dirs, _) = wrapper_link("mpicc.openmpi", "-showme:link");
    dirs.extend(MULTIARCH.iter().map(PathBuf::from));
    let Some(lib) = dirs.iter().map(|d| d.join("libmpi.so.40")).find(|p| p.exists()) else {
        oxshmem_test_require::skip("openmpi", "Open MPI's libmpi.so.40 not found (apt-get install libopenmpi-dev)");
        return;
    };
    let job = |n: usize, scenario: &str| {
        let mut c = Command::new(&mpirun);
        clean_env(&mut c)
            .args(["--allow-run-as-root", "--oversubscribe", "-n", &n.to_string()])
            .arg(common::pe_program("mpi-pe"))
            .env(PE_VAR, scenario)
            .env(LIB_VAR, &lib)
            .env(FLAVOR_VAR, "openmpi")
            // Containers often forbid the cross-memory attach of the shared-memory transport.
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
        c
    };
    for n in [2, 4] {
        let out = run(&mut job(n, "world"));
        assert_lines(&out, (0..n).map(|r| format!("PE {r} of {n}: ok mpi openmpi [Open MPI v")));
    }
    let out = run(&mut job(4, "split"));
    assert_lines(&out, (0..4).map(|r| format!("PE {r} of 4: ok split color {}: {} of 2", r % 2, r / 2)));
    let out = run(&mut job(2, "mpi-finalized-first"));
    assert_lines(&out, (0..2).map(|r| format!("PE {r} of 2: ok finalize after MPI_Finalize")));
    let out = run(plain_pe("not-initialized").env(LIB_VAR, &lib).env(FLAVOR_VAR, "openmpi"));
    assert_lines(&out, ["ok: not initialized".to_string()]);
}
