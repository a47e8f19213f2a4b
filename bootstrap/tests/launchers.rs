//! Whole jobs under real launchers: MPICH's Hydra (PMI-1 and PMI-2, on one and on two
//! "hosts"), Slurm's `srun --mpi=pmi2` and `--mpi=pmix` on a private one-node cluster
//! (`tests/slurm/up.sh`), OpenMPI's `mpirun` (PMIx) when it is installed, and the unique-id
//! bootstrap with processes this test starts itself.
//!
//! The PEs are a program of their own, `tests/pe/launchers.rs` (example `launchers-pe`), started
//! with `OXS_LAUNCH_TEST_PE=<scenario>`. A launcher that is not installed makes its test print
//! why and pass — unless the run requires it (`OXSHMEM_TEST_REQUIRE`, crate `oxshmem-test-require`; `.ci/run`
//! requires everything after installing it), which turns the skip into a failure.
//! Every job runs in its own
//! process group under a watchdog that kills the group, and every PE bootstrap wait is bounded
//! by `OXSHMEM_TIMEOUT`, so no test can hang.

mod common;

use common::{Out, connect_retrying, reader};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use oxshmem_bootstrap::uid::{CHALLENGE_LEN, UniqueId, decode_challenge};

const PE_VAR: &str = "OXS_LAUNCH_TEST_PE";
/// Upper bound for any one job here; they take well under a second when all is well.
const WATCHDOG: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- running jobs

/// Start `cmd` in its own process group with its output piped.
fn start(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"))
}

/// Wait for every child at most [`WATCHDOG`]; past that, SIGKILL their process groups and
/// fail the test with what they printed.
fn finish_all(children: Vec<Child>, start: Instant) -> Vec<Out> {
    let mut slots: Vec<_> = children
        .into_iter()
        .map(|mut c| {
            let out = reader(c.stdout.take().unwrap());
            let err = reader(c.stderr.take().unwrap());
            (c, out, err, None::<ExitStatus>)
        })
        .collect();
    loop {
        for s in slots.iter_mut().filter(|s| s.3.is_none()) {
            s.3 = s.0.try_wait().unwrap();
        }
        if slots.iter().all(|s| s.3.is_some()) {
            break;
        }
        if start.elapsed() > WATCHDOG {
            for s in &slots {
                // SAFETY: signalling the process group of a child we started; no memory.
                unsafe { libc::kill(-(s.0.id() as i32), libc::SIGKILL) };
            }
            let outs: Vec<String> = slots
                .into_iter()
                .map(|mut s| {
                    let _ = s.0.wait();
                    format!("{}{}", s.1.join().unwrap(), s.2.join().unwrap())
                })
                .collect();
            panic!("job still running after {WATCHDOG:?}; killed. Output:\n{outs:#?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = start.elapsed();
    slots
        .into_iter()
        .map(|s| Out { status: s.3.unwrap(), stdout: s.1.join().unwrap(), stderr: s.2.join().unwrap(), elapsed })
        .collect()
}

fn run(cmd: &mut Command) -> Out {
    let t = Instant::now();
    let child = start(cmd);
    finish_all(vec![child], t).pop().unwrap()
}

/// Clear the bootstrap variables this test process may have inherited.
fn clean_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("OXSHMEM_") || k.starts_with("OXS_EXPECT") {
            cmd.env_remove(k);
        }
    }
    cmd
}

fn assert_collectives_ok(out: &Out, n: usize, name: &str, nodes: &str) {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for rank in 0..n {
        let line = format!("PE {rank} of {n}: ok {name} nodes={nodes}");
        assert!(out.stdout.contains(&line), "missing {line:?}: {out:?}");
    }
}

// ---------------------------------------------------------------- skipping

use oxshmem_test_require::which;

fn hydra() -> Option<PathBuf> {
    let h = which("mpiexec.hydra");
    if h.is_none() {
        oxshmem_test_require::skip("mpich", "mpiexec.hydra not found (apt-get install mpich)");
    }
    h
}

// ---------------------------------------------------------------- Hydra

/// `mpiexec.hydra [opts] -n N <PE>` running `scenario`, expecting `name`.
fn hydra_job(h: &Path, n: usize, opts: &[&str], scenario: &str, name: &str) -> Command {
    let mut c = Command::new(h);
    clean_env(&mut c)
        .args(opts)
        .args(["-n", &n.to_string()])
        .arg(common::pe_program("launchers-pe"))
        .env(PE_VAR, scenario)
        .env("OXS_EXPECT_NAME", name)
        .env("OXSHMEM_TIMEOUT", "30");
    c
}

#[test]
fn hydra_pmi1_is_the_default() {
    let Some(h) = hydra() else { return };
    let out = run(hydra_job(&h, 4, &[], "collectives", "pmi1").env("OXS_EXPECT_NODES", "0,0,0,0"));
    assert_collectives_ok(&out, 4, "pmi1", "0,0,0,0");
}

#[test]
fn hydra_pmi2_forced_and_hinted() {
    let Some(h) = hydra() else { return };
    // Hydra 4.0 has no -pmi-version option: it serves whichever version the client asks for.
    let out = run(hydra_job(&h, 4, &[], "collectives", "pmi2")
        .env("OXSHMEM_BOOTSTRAP", "pmi2")
        .env("OXS_EXPECT_NODES", "0,0,0,0"));
    assert_collectives_ok(&out, 4, "pmi2", "0,0,0,0");
    let out = run(hydra_job(&h, 3, &[], "collectives", "pmi2").env("PMI_VERSION", "2"));
    assert_collectives_ok(&out, 3, "pmi2", "0,0,0");
}

#[test]
fn hydra_pmi_port_both_versions() {
    let Some(h) = hydra() else { return };
    let out = run(&mut hydra_job(&h, 3, &["-pmi-port"], "collectives", "pmi1"));
    assert_collectives_ok(&out, 3, "pmi1", "0,0,0");
    let out = run(hydra_job(&h, 3, &["-pmi-port"], "collectives", "pmi2").env("OXSHMEM_BOOTSTRAP", "pmi2"));
    assert_collectives_ok(&out, 3, "pmi2", "0,0,0");
}

#[test]
fn hydra_two_hosts_report_two_nodes() {
    let Some(h) = hydra() else { return };
    // Two "hosts" that are both this machine: the launcher's mapping says two nodes,
    // round-robin.
    let opts = ["-launcher", "fork", "-hosts", "127.0.0.2,127.0.0.3"];
    for name in ["pmi1", "pmi2"] {
        let out = run(hydra_job(&h, 4, &opts, "collectives", name)
            .env("OXSHMEM_BOOTSTRAP", name)
            .env("OXS_EXPECT_NODES", "0,1,0,1"));
        assert_collectives_ok(&out, 4, name, "0,1,0,1");
    }
    // Blocks of two per host.
    let opts = ["-launcher", "fork", "-hosts", "127.0.0.2:2,127.0.0.3:2"];
    let out = run(hydra_job(&h, 4, &opts, "collectives", "pmi2").env("OXSHMEM_BOOTSTRAP", "pmi2"));
    assert_collectives_ok(&out, 4, "pmi2", "0,0,1,1");
}

#[test]
fn hydra_abort_ends_the_job() {
    let Some(h) = hydra() else { return };
    for name in ["pmi1", "pmi2"] {
        let out = run(hydra_job(&h, 3, &[], "abort", name).env("OXSHMEM_BOOTSTRAP", name));
        // Hydra ends the job at once, often before it forwarded the PE's last words, so only
        // the status tells: PMI-1's abort carries the exit code; PMI-2's has none.
        eprintln!("{name}: {out:?}");
        if name == "pmi1" {
            // 7, or 9 when Hydra reaps a PE it killed before the one that aborted.
            assert!(matches!(out.status.code(), Some(7) | Some(9)), "{name}: {out:?}");
        } else {
            assert_ne!(out.status.code(), Some(0), "{name}: {out:?}");
        }
        assert!(!out.stdout.contains("completed"), "{name}: {out:?}");
        assert!(out.elapsed < Duration::from_secs(20), "{name}: {out:?}");
    }
}

// ---------------------------------------------------------------- Slurm

/// A private one-node Slurm cluster, stopped (every daemon) when dropped.
struct Slurm {
    dir: PathBuf,
    conf: String,
}

impl Slurm {
    fn script(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm").join(name)
    }

    fn up() -> Slurm {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let dir = std::env::temp_dir().join(format!("oxs-slurm-{}-{nanos}", std::process::id()));
        let t = Instant::now();
        let out = run(Command::new(Self::script("up.sh")).arg(&dir));
        // Whatever happened, the guard stops what may have started.
        let mut s = Slurm { dir, conf: String::new() };
        assert_eq!(out.status.code(), Some(0), "up.sh failed: {out:?}");
        s.conf = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("SLURM_CONF="))
            .unwrap_or_else(|| panic!("up.sh printed no SLURM_CONF: {out:?}"))
            .to_string();
        eprintln!("slurm cluster up in {:?}", t.elapsed());
        s
    }

    fn srun(&self, mpi: &str, n: usize, scenario: &str) -> Command {
        let mut c = Command::new("srun");
        clean_env(&mut c)
            .env("SLURM_CONF", &self.conf)
            .args([&format!("--mpi={mpi}"), "-n", &n.to_string(), "--time=1", "--kill-on-bad-exit=1"])
            .arg(common::pe_program("launchers-pe"))
            .env(PE_VAR, scenario)
            .env("OXSHMEM_TIMEOUT", "30");
        c
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let out = run(Command::new(Self::script("down.sh")).arg(&self.dir));
        if out.status.code() != Some(0) {
            eprintln!("down.sh: {out:?}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn slurm_available() -> bool {
    for tool in ["slurmctld", "slurmd", "srun", "scontrol"] {
        if which(tool).is_none() {
            oxshmem_test_require::skip("slurm", &format!("{tool} not found (apt-get install slurm-wlm)"));
            return false;
        }
    }
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        oxshmem_test_require::skip("slurm", "the private Slurm cluster needs root (slurmd)");
        return false;
    }
    true
}

#[test]
fn srun_pmi2_and_pmix() {
    if !slurm_available() {
        return;
    }
    let slurm = Slurm::up();

    // --mpi=pmi2 sets PMI_JOBID: auto-detection picks PMI-2.
    let out =
        run(slurm.srun("pmi2", 4, "collectives").env("OXS_EXPECT_NAME", "pmi2").env("OXS_EXPECT_NODES", "0,0,0,0"));
    assert_collectives_ok(&out, 4, "pmi2", "0,0,0,0");
    eprintln!("srun --mpi=pmi2 -n 4: {:?}", out.elapsed);

    // The pmi2 plugin serves PMI-1 on the same socket.
    let out = run(slurm.srun("pmi2", 2, "collectives").env("OXSHMEM_BOOTSTRAP", "pmi1").env("OXS_EXPECT_NAME", "pmi1"));
    assert_collectives_ok(&out, 2, "pmi1", "0,0");

    let out = run(&mut slurm.srun("pmix", 4, "collectives"));
    if cfg!(feature = "pmix") {
        assert_collectives_ok(&out, 4, "pmix", "0,0,0,0");
        eprintln!("srun --mpi=pmix -n 4: {:?}", out.elapsed);
    } else {
        assert_ne!(out.status.code(), Some(0), "{out:?}");
        assert!(
            out.stderr.contains("PE init failed") && out.stderr.contains("rebuild with `--features pmix`"),
            "{out:?}"
        );
    }
}

// ---------------------------------------------------------------- OpenMPI

#[test]
fn openmpi_mpirun_pmix() {
    // Debian's openmpi-bin installs mpirun.openmpi whatever `mpirun` points to.
    let Some(mpirun) = which("mpirun.openmpi") else {
        oxshmem_test_require::skip("openmpi", "mpirun.openmpi not found (apt-get install openmpi-bin)");
        return;
    };
    let mut c = Command::new(mpirun);
    clean_env(&mut c)
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "4"])
        .arg(common::pe_program("launchers-pe"))
        .env(PE_VAR, "collectives")
        .env("OXS_EXPECT_NAME", "pmix")
        .env("OXSHMEM_TIMEOUT", "30");
    let out = run(&mut c);
    if cfg!(feature = "pmix") {
        assert_collectives_ok(&out, 4, "pmix", "0,0,0,0");
    } else {
        // OpenMPI's mpirun speaks PMIx only: without the feature the PEs say what to rebuild.
        assert_ne!(out.status.code(), Some(0), "{out:?}");
        assert!(out.stderr.contains("rebuild with `--features pmix`"), "{out:?}");
    }
}

// ---------------------------------------------------------------- unique id

fn local_id() -> UniqueId {
    // A free port below the kernel's ephemeral range (32768 and up here): a port the kernel
    // handed out with bind(0) can be handed out again, to any outgoing connection, between
    // this probe and rank 0's bind ("Address already in use"); one below the range only
    // collides with another explicit bind.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seed = u64::from(std::process::id()) << 32 ^ now.as_nanos() as u64;
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = 20_000 + (x % 12_000) as u16;
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            let addr = l.local_addr().unwrap();
            drop(l);
            return UniqueId::new(addr).unwrap();
        }
    }
    panic!("no free port in 20000..32000 on 127.0.0.1");
}

/// One uid PE process: `rank` of `size` in job `id`.
fn uid_pe(id: &UniqueId, rank: usize, size: usize, scenario: &str, timeout: &str) -> Child {
    let mut c = Command::new(common::pe_program("launchers-pe"));
    clean_env(&mut c)
        .env(PE_VAR, scenario)
        .env("OXS_EXPECT_NAME", "uid")
        .env("OXSHMEM_UNIQUEID", id.to_string())
        .env("OXSHMEM_UID_RANK", rank.to_string())
        .env("OXSHMEM_UID_SIZE", size.to_string())
        .env("OXSHMEM_TIMEOUT", timeout)
        // Refused strangers are warnings on the `boot` target (logging).
        .env("OXSHMEM_LOG", "boot=warn");
    start(&mut c)
}

#[test]
fn uid_four_processes() {
    let id = local_id();
    let t = Instant::now();
    let kids = (0..4).map(|r| uid_pe(&id, r, 4, "collectives", "30")).collect();
    let outs = finish_all(kids, t);
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(0), "rank {r}: {out:?}");
        assert!(out.stdout.contains(&format!("PE {r} of 4: ok uid nodes=none")), "rank {r}: {out:?}");
    }
}

#[test]
fn uid_stranger_is_refused_and_the_job_completes() {
    let id = local_id();
    let t = Instant::now();
    let mut kids: Vec<Child> = [0, 2, 3].iter().map(|&r| uid_pe(&id, r, 4, "collectives", "30")).collect();
    // Garbage while rank 1 has not arrived yet: it gets its challenge, and nothing after.
    let mut g = connect_retrying(id.addr(), WATCHDOG);
    g.write_all(b"SSH-2.0-OpenSSH_9.2\r\n").unwrap();
    g.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    let n = g.read_to_end(&mut got).map(|_| got.len());
    assert!(matches!(n, Ok(CHALLENGE_LEN)), "the stranger got {n:?}: {got:?}");
    assert!(decode_challenge(&got).unwrap().is_some());
    // A rank with another job's id at the same address: it fails at once, saying why; the
    // job goes on.
    let wrong = UniqueId::with_secret(id.addr(), [0x5a; 32]);
    let stray = finish_all(vec![uid_pe(&wrong, 1, 4, "collectives", "30")], Instant::now()).pop().unwrap();
    assert_eq!(stray.status.code(), Some(3), "{stray:?}");
    assert!(
        stray.stderr.contains(&format!("authenticate rank 0 at {}", id.addr()))
            && stray.stderr.contains("closed the connection instead of proving it holds this job's unique id"),
        "{stray:?}"
    );
    assert!(stray.elapsed < Duration::from_secs(10), "{stray:?}");
    kids.insert(1, uid_pe(&id, 1, 4, "collectives", "30"));
    let outs = finish_all(kids, t);
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(0), "rank {r}: {out:?}");
        assert!(out.stdout.contains(&format!("PE {r} of 4: ok uid")), "{out:?}");
    }
    let log = &outs[0].stderr;
    assert!(
        log.contains(" WARN ")
            && log.contains("boot: uid: refused the connection from 127.0.0.1:")
            && log.contains("does not hold this job's unique id")
            && log.contains("it sent \"SSH-2.0-OpenSSH_\""),
        "{log}"
    );
}

#[test]
fn uid_size_disagreement_fails_every_rank() {
    let id = local_id();
    let t = Instant::now();
    let mut kids: Vec<Child> = [(0, 3), (1, 3)].iter().map(|&(r, n)| uid_pe(&id, r, n, "collectives", "30")).collect();
    // Rank 2, which says 4, comes last, so that rank 1 has usually joined already; if not,
    // rank 0 still tells it when it comes.
    std::thread::sleep(Duration::from_millis(300));
    kids.push(uid_pe(&id, 2, 4, "collectives", "30"));
    let outs = finish_all(kids, t);
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(3), "rank {r}: {out:?}");
        assert!(out.stderr.contains("says the job has 4 ranks; rank 0 says 3"), "rank {r}: {out:?}");
        assert!(out.stderr.contains("rank 2 (connecting from 127.0.0.1:"), "rank {r}: {out:?}");
        assert!(out.elapsed < Duration::from_secs(20), "{out:?}");
    }
}

#[test]
fn uid_missing_rank_times_out_naming_it() {
    let id = local_id();
    let t = Instant::now();
    let kids = (0..3).map(|r| uid_pe(&id, r, 4, "collectives", "1")).collect();
    let outs = finish_all(kids, t);
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(3), "rank {r}: {out:?}");
        assert!(out.stderr.contains("rank 3"), "rank {r}: {out:?}");
        assert!(out.elapsed < Duration::from_secs(20), "{out:?}");
    }
    assert!(outs[0].stderr.contains("timed out after 1 s waiting for rank 3 to connect"), "{:?}", outs[0]);
    assert!(outs[1].stderr.contains("rank 0 refused to start the job"), "{:?}", outs[1]);
}

#[test]
fn uid_abort_reaches_every_rank() {
    let id = local_id();
    let t = Instant::now();
    let kids = (0..4).map(|r| uid_pe(&id, r, 4, "abort", "30")).collect();
    let outs = finish_all(kids, t);
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(7), "rank {r}: {out:?}");
        assert!(out.elapsed < Duration::from_secs(20), "{out:?}");
    }
    assert!(
        outs[0].stderr.contains("rank 1 aborted the job (exit code 7): PE 1 gives up: test abort"),
        "{:?}",
        outs[0]
    );
}
