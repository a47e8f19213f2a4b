//! `ofi-bench`: the libfabric transport against raw libfabric, measured in the same run.
//!
//! Run it with no launcher: `cargo run --release -p oxshmem-benches --features ofi --bin
//! ofi-bench [ROUNDS]`. It compiles `benches/ofi/raw_ofi.c` with `cc` (libfabric alone: two
//! forked processes, one RDM endpoint each, the target polling its completion queue), then
//! alternates rounds of that program and of itself under `oshrun -n 2` with
//! `OXSHMEM_TRANSPORT=ofi` (A B A B …, because the placement of the processes on a shared
//! 2-vCPU guest flips every few seconds), and prints min and median of both and the ratio of
//! the medians. Both use `FI_PROVIDER` (default `tcp;ofi_rxm`) on the loopback interface.
//!
//! Operations (PE 0 → PE 1): put 8 B + quiet (remote completion), blocking get 8 B, 64-bit
//! fetch-add, and 1 MiB put bandwidth (N puts from a private buffer, then quiet). Targets:
//! latency ≤ 1.2× raw, bandwidth ≥ 0.9× raw.
//!
//! Under a launcher (PMI in the environment) it is the PE program of those rounds and prints
//! `RESULT <name> <value>` lines from PE 0.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const LAT_ITERS: usize = 3000;
const BW_ITERS: usize = 200;
const BW_SIZE: usize = 1 << 20;
/// (key, label, unit, lower is better, target ratio).
const ROWS: [(&str, &str, &str, bool, f64); 4] = [
    ("put_lat_us", "put 8 B + quiet", "us", true, 1.2),
    ("get_lat_us", "get 8 B", "us", true, 1.2),
    ("fadd_lat_us", "fetch-add 64-bit", "us", true, 1.2),
    ("put_bw_gbs", "put 1 MiB bandwidth", "GB/s", false, 0.9),
];

const USAGE: &str = "\
Usage: ofi-bench [ROUNDS]    (no launcher; built with --features ofi)

The libfabric transport against raw libfabric, measured in the same run: compiles
benches/ofi/raw_ofi.c with cc, then alternates ROUNDS (default 5) rounds of it and of
`oshrun -n 2 ofi-bench` with OXSHMEM_TRANSPORT=ofi, and prints min and median of both and the
ratio of the medians: put 8 B + quiet, get 8 B, 64-bit fetch-add, 1 MiB put bandwidth.
FI_PROVIDER chooses the provider (default tcp;ofi_rxm, on the loopback interface).

  -h, --help   print this text
";

fn main() {
    if std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some() {
        pe();
    } else if let Some(rounds) = oxshmem_benches::rounds_arg("ofi-bench", USAGE, 5) {
        driver(rounds);
    }
}

/// One round of the oxshmem side: PE 0 measures against PE 1.
fn pe() {
    let shmem = oxshmem::init().expect("shmem_init");
    let me = shmem.my_pe();
    let buf = shmem.alloc_slice(BW_SIZE, 0u8).expect("alloc");
    let ctr = shmem.alloc(0u64).expect("alloc");
    let src = vec![7u8; BW_SIZE];
    let mut dst = [0u8; 8];
    shmem.barrier_all().unwrap();
    if me == 0 {
        let warm = LAT_ITERS / 10 + 10;
        let lat = |f: &mut dyn FnMut()| {
            for _ in 0..warm {
                f();
            }
            let t = Instant::now();
            for _ in 0..LAT_ITERS {
                f();
            }
            t.elapsed().as_secs_f64() / LAT_ITERS as f64 * 1e6
        };
        let put = lat(&mut || {
            buf.put(0, &src[..8], 1).unwrap();
            shmem.quiet().unwrap();
        });
        println!("RESULT put_lat_us {put:.3}");
        let get = lat(&mut || buf.get(0, &mut dst, 1).unwrap());
        println!("RESULT get_lat_us {get:.3}");
        let fadd = lat(&mut || {
            ctr.fetch_add(1, 1).unwrap();
        });
        println!("RESULT fadd_lat_us {fadd:.3}");
        for _ in 0..BW_ITERS / 10 + 2 {
            buf.put(0, &src, 1).unwrap();
        }
        shmem.quiet().unwrap();
        let t = Instant::now();
        for _ in 0..BW_ITERS {
            buf.put(0, &src, 1).unwrap();
        }
        shmem.quiet().unwrap();
        println!("RESULT put_bw_gbs {:.3}", (BW_SIZE * BW_ITERS) as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    shmem.barrier_all().unwrap();
    shmem.finalize().unwrap();
}

fn results(out: &str) -> BTreeMap<String, f64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn run(c: &mut Command, what: &str) -> BTreeMap<String, f64> {
    let out = c.output().unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{what} failed ({}):\n{text}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let r = results(&text);
    assert_eq!(r.len(), ROWS.len(), "{what} printed {r:?}:\n{text}");
    r
}

fn oshrun(exe_dir: &Path) -> PathBuf {
    let p = exe_dir.join("oshrun");
    if !p.exists() {
        let profile = if exe_dir.ends_with("release") { "release" } else { "dev" };
        let st = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "-p", "oxshmem-bootstrap", "--bin", "oshrun", "--profile", profile])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build of oshrun");
        assert!(st.success() && p.exists(), "oshrun not found at {}", p.display());
    }
    p
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn driver(rounds: usize) {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("exe dir").to_path_buf();
    let raw = dir.join("raw_ofi");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("ofi/raw_ofi.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(["-O2", "-o"])
        .arg(&raw)
        .arg(&src)
        .arg("-lfabric")
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(st.success(), "{cc} {} -lfabric failed", src.display());
    let launcher = oshrun(&dir);
    let provider = std::env::var("FI_PROVIDER").unwrap_or_else(|_| "tcp;ofi_rxm".into());
    let env = [("FI_PROVIDER", provider.as_str()), ("FI_TCP_IFACE", "lo"), ("FI_SOCKETS_IFACE", "lo")];

    let mut raw_r: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut ox_r: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for round in 0..rounds {
        let r = run(Command::new(&raw).args([LAT_ITERS.to_string(), BW_ITERS.to_string()]).envs(env), "raw_ofi");
        for (k, v) in r {
            raw_r.entry(k).or_default().push(v);
        }
        let r = run(
            Command::new(&launcher)
                .args(["-n", "2", "--timeout", "120", "--"])
                .arg(&exe)
                .envs(env)
                .env("OXSHMEM_TRANSPORT", "ofi")
                .env_remove("SHMEM_SYMMETRIC_SIZE")
                .env("SHMEM_SYMMETRIC_SIZE", "64M"),
            "oshrun -n 2 ofi-bench",
        );
        for (k, v) in r {
            ox_r.entry(k).or_default().push(v);
        }
        eprintln!("round {}/{rounds} done", round + 1);
    }

    println!(
        "# ofi transport vs raw libfabric, provider {provider}, {rounds} alternating rounds; ratio = ox median / raw median"
    );
    println!(
        "{:<22} {:>10} {:>10} {:<5} | {:>10} {:>10} {:<5} | {:>6} target",
        "operation", "ox min", "ox median", "unit", "raw min", "raw median", "unit", "ratio"
    );
    for (key, label, unit, lower, target) in ROWS {
        let (mut o, mut r) = (ox_r.remove(key).unwrap_or_default(), raw_r.remove(key).unwrap_or_default());
        let omin = o.iter().copied().fold(f64::INFINITY, f64::min);
        let rmin = r.iter().copied().fold(f64::INFINITY, f64::min);
        let (om, rm) = (median(&mut o), median(&mut r));
        let ratio = om / rm;
        let met = if lower { ratio <= target } else { ratio >= target };
        println!(
            "{label:<22} {omin:>10.3} {om:>10.3} {unit:<5} | {rmin:>10.3} {rm:>10.3} {unit:<5} | {ratio:>6.2} {}{target} {}",
            if lower { "<=" } else { ">=" },
            if met { "met" } else { "MISSED" }
        );
    }
}
