//! MoE dispatch/combine (`oxshmem_moe`) in real jobs of 2 and 4 PEs, in both modes,
//! over every device channel in [`CHANNELS`], against two references:
//!
//! - the serial computation of `moe::reference` — inside each PE (`pe-moe` checks that every
//!   expert received exactly its (source, token) pairs with their exact values, and every bit
//!   of the combined output), and here, where each PE's printed digest is compared with the
//!   digest of the serial output;
//! - MPI: `benches/c/moe_mpi.c`, compiled with `mpicc.mpich` and run under `mpiexec.hydra`,
//!   must print the same digest for every spec, round and rank — so oxshmem's output equals
//!   MPI's bit for bit. Without MPICH that test says why and passes, unless
//!   the run requires MPICH (`OXSHMEM_TEST_REQUIRE`), which makes it fail.
//!
//! The specs cover the edge cases: top-1, hidden sizes that are no power of two, token counts
//! that divide nothing and differ per PE (with a PE that sends nothing at 4 PEs), every token
//! sent twice to one PE, a PE that receives nothing, masked choices (tokens that go nowhere),
//! and the benchmark's shape (T=128, 7168 bytes, top-8 of 32). Each job reuses one buffer for
//! several rounds, through `dispatch` (copying) and `dispatch_in_place`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxshmem_moe::{Mode, reference};
use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_ok};

const PE_MOE: &str = env!("CARGO_BIN_EXE_pe-moe");

/// The device channels every case runs on.
const CHANNELS: &[&str] = &["p2p", "proxy", "ibgda"];

const PE_COUNTS: [usize; 2] = [2, 4];

/// Every job and MPI run ends within this (the jobs take a few seconds).
const TIMEOUT: Duration = Duration::from_secs(120);

/// `T:E:K:H:SEED:SCENARIO:RAGGED:ITERS` (see `pe-moe.rs`) for `n` PEs.
fn specs(n: usize) -> Vec<String> {
    vec![
        "64:8:4:256:11:random:0:3".into(),
        // top-1; 33 floats per token.
        "50:8:1:132:12:random:0:2".into(),
        // Two experts per PE, the second choice on the first one's PE; 37, 12 (, 25, 0) tokens.
        format!("37:{}:2:100:13:same-pe:1:2", 2 * n),
        // The last PE receives nothing.
        "40:8:3:64:14:zero-pe:0:2".into(),
        // A quarter of the choices masked with -1.
        "33:8:4:36:15:masked:0:2".into(),
        // The benchmark's shape.
        "128:32:8:7168:16:random:0:1".into(),
    ]
}

/// Parses a spec into its problem and round count.
fn problem(spec: &str, n: usize) -> (reference::Problem, usize) {
    let f: Vec<&str> = spec.split(':').collect();
    let num = |i: usize| f[i].parse::<u64>().unwrap();
    let p = reference::Problem {
        seed: num(4),
        tokens: num(0) as usize,
        hidden: num(3) as usize / 4,
        topk: num(2) as usize,
        experts: num(1) as usize,
        npes: n,
        scenario: reference::Scenario::from_name(f[5]).unwrap(),
        ragged: num(6) != 0,
    };
    (p, num(7) as usize)
}

/// (spec, round, PE) → the digest of the serial combined output.
fn serial_digests(n: usize) -> BTreeMap<(usize, usize, usize), u64> {
    let mut m = BTreeMap::new();
    for (si, spec) in specs(n).iter().enumerate() {
        let (p, iters) = problem(spec, n);
        for it in 0..iters {
            let q = reference::Problem { seed: p.seed + it as u64, ..p };
            for pe in 0..n {
                m.insert((si, it, pe), reference::digest(&q.expected_output(pe)));
            }
        }
    }
    m
}

/// Digests in lines `<who> P spec S iter I digest D`, keyed (S, I, P).
fn parse_digests(out: &str, who: &str) -> BTreeMap<(usize, usize, usize), u64> {
    let mut m = BTreeMap::new();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() == 8 && w[0] == who && w[2] == "spec" && w[4] == "iter" && w[6] == "digest" {
            let pe = w[1].trim_end_matches(':').parse().unwrap();
            let key = (w[3].parse().unwrap(), w[5].parse().unwrap(), pe);
            let d = u64::from_str_radix(w[7], 16).unwrap();
            assert!(m.insert(key, d).is_none(), "digest {key:?} printed twice:\n{out}");
        }
    }
    m
}

fn run_moe(n: usize, ch: &str, mode: Mode, threads: usize, launch: &str) -> JobResult {
    let mut args = vec!["run".to_string(), mode.name().to_string(), threads.to_string(), launch.to_string()];
    args.extend(specs(n));
    let r = Job::new(n, PE_MOE).args(&args).env("OXSHMEM_DEVICE_CHANNEL", ch).timeout(TIMEOUT).run();
    assert_job_ok(&r);
    assert_each_pe_says(&r, n, |pe| format!("PE {pe}: moe ok ({}, {ch})", mode.name()));
    r
}

/// Every channel, 2 and 4 PEs, 1 to 3 device threads per kernel, on the resident kernel and
/// with a launch per call: exact results.
fn mode_is_exact(mode: Mode) {
    for (i, ch) in CHANNELS.iter().enumerate() {
        for (j, n) in PE_COUNTS.into_iter().enumerate() {
            let job = i * PE_COUNTS.len() + j;
            let threads = 1 + job % 3;
            let launch = if job.is_multiple_of(2) { "resident" } else { "per-call" };
            let t = Instant::now();
            let r = run_moe(n, ch, mode, threads, launch);
            eprintln!("{} {ch} {n} PEs, {threads} device threads, {launch}: {:.2?}", mode.name(), t.elapsed());
            let want = serial_digests(n);
            let got = parse_digests(&r.stdout, "PE");
            assert_eq!(got, want, "digests differ from the serial computation\n{}", r.report());
        }
    }
}

#[test]
fn throughput_mode_is_exact_on_every_channel() {
    mode_is_exact(Mode::Throughput);
}

#[test]
fn low_latency_mode_is_exact_on_every_channel() {
    mode_is_exact(Mode::LowLatency);
}

/// Bad arguments are errors naming the PE and the problem, before anything is sent.
#[test]
fn bad_arguments_are_reported() {
    let r = Job::new(2, PE_MOE).args(&["errors"]).env("OXSHMEM_DEVICE_CHANNEL", "p2p").timeout(TIMEOUT).run();
    assert_job_ok(&r);
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: moe errors ok"));
}

// ---- the MPI reference ----------------------------------------------------------------

/// Says why the test does not run, or fails it where the run requires MPICH
/// (`oxshmem_test_require`).
fn skip(why: &str) {
    oxshmem_test_require::skip("mpich", &format!("{why} (apt-get install mpich)"));
}

/// Runs `cmd` to its end, killing it past [`TIMEOUT`]; returns (success, stdout + stderr).
fn run_bounded(cmd: &mut Command) -> (bool, String) {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut pipes = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipes.0.read_to_string(&mut s);
        let _ = pipes.1.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            // SAFETY: signals the process group of a child we started; no memory effects.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("{cmd:?} still running after {TIMEOUT:?}; killed. Output:\n{}", out.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (status.success(), out.join().unwrap())
}

/// Compiles `moe_mpi.c` with `mpicc.mpich` into a fresh directory; None (after [`skip`]) when
/// MPICH is not installed.
fn build_mpi_reference() -> Option<(PathBuf, PathBuf)> {
    let (Some(cc), Some(run)) =
        (oxshmem_test_require::which("mpicc.mpich"), oxshmem_test_require::which("mpiexec.hydra"))
    else {
        skip("mpicc.mpich or mpiexec.hydra not found");
        return None;
    };
    let dir = std::env::temp_dir().join(format!("oxshmem-moe-mpi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("moe_mpi");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/c/moe_mpi.c");
    let (ok, out) = run_bounded(
        Command::new(cc).args(["-O2", "-ffp-contract=off", "-std=gnu99", "-Wall", "-Wextra", "-o"]).arg(&exe).arg(&src),
    );
    assert!(ok, "mpicc.mpich {} failed:\n{out}", src.display());
    Some((run, exe))
}

/// The MPI reference prints, for every spec, round and rank, the digest of the serial
/// computation — which every oxshmem job above prints too — so MPI and oxshmem agree bit for
/// bit. A throughput-mode P2P job of the same specs is compared with MPI directly as well.
#[test]
fn mpi_reference_gives_the_same_digests() {
    let Some((mpiexec, exe)) = build_mpi_reference() else { return };
    for n in PE_COUNTS {
        let mut cmd = Command::new(&mpiexec);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if k.starts_with("PMI") || k.starts_with("OXSHMEM_") {
                cmd.env_remove(k);
            }
        }
        let t = Instant::now();
        let (ok, out) = run_bounded(cmd.args(["-n", &n.to_string()]).arg(&exe).args(specs(n)));
        eprintln!("moe_mpi, {n} ranks: {:.2?}", t.elapsed());
        assert!(ok, "moe_mpi on {n} ranks failed:\n{out}");
        let mpi = parse_digests(&out, "rank");
        assert_eq!(mpi, serial_digests(n), "MPI digests differ from the serial computation:\n{out}");
        let ox = parse_digests(&run_moe(n, "p2p", Mode::Throughput, 0, "resident").stdout, "PE");
        assert_eq!(ox, mpi, "oxshmem and MPI digests differ");
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}
