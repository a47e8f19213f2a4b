//! `ctx-bench`: a context's quiet against the PE's quiet, with another thread streaming puts on
//! a context of its own, over the libfabric transport.
//!
//! Run it with no launcher: `cargo run --release -p oxshmem-benches --features ofi --bin
//! ctx-bench [ROUNDS]`. Each round is a job of 3 PEs under `oshrun` with
//! `OXSHMEM_TRANSPORT=ofi` (`FI_PROVIDER`, default `tcp;ofi_rxm`, on the loopback interface).
//! On PE 0, thread A streams puts to PE 1 on its own context (16 × 64 KiB, then its context's
//! quiet, over and over) while thread B, on another context, measures an 8-byte put and a
//! quiet: its context's quiet (`shmem_ctx_quiet`, which waits for B's put only) and, as the
//! reference in the same job, the PE's quiet (`shmem_quiet`, which also waits for A's stream),
//! by turns; first to PE 2 (another peer than A's), then to PE 1 (A's peer, where B's put
//! queues behind A's data on the one connection of the PE's endpoint, whichever quiet it
//! waits with). It prints min and median of each over all rounds and the ratios of the medians
//! (context / PE quiet: below 1 is the gain), beside B's latency with A idle.
//!
//! Under a launcher (PMI in the environment) it is the PE program of those rounds and prints
//! `RESULT <name> <value>` lines from PE 0.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use oxshmem::ThreadLevel;
use oxshmem::ctx::SHMEM_CTX_PRIVATE;

/// Latency iterations of thread B per measurement, and measurements of each kind per job.
const ITERS: usize = 300;
const TURNS: usize = 3;
/// Thread A's stream: this many puts of this size, then its context's quiet.
const STREAM_PUTS: usize = 16;
const STREAM_SIZE: usize = 64 << 10;
/// (key, label).
const ROWS: [(&str, &str); 5] = [
    ("alone_us", "B alone, to PE 2: ctx quiet"),
    ("ctx_other_us", "B beside A, to PE 2: ctx quiet"),
    ("pe_other_us", "B beside A, to PE 2: shmem_quiet"),
    ("ctx_same_us", "B beside A, to PE 1: ctx quiet"),
    ("pe_same_us", "B beside A, to PE 1: shmem_quiet"),
];

const USAGE: &str = "\
Usage: ctx-bench [ROUNDS]    (no launcher; built with --features ofi)

A context's quiet against the PE's quiet over the libfabric transport: on PE 0 of a 3-PE job,
thread A streams 64 KiB puts to PE 1 on its own context while thread B times an 8-byte put
(to PE 2, then to PE 1) plus shmem_ctx_quiet on another context, and, by turns in the same
job, plus shmem_quiet (which also waits for A's stream). ROUNDS jobs (default 5); prints min
and median of each and the ratios of the medians. FI_PROVIDER chooses the provider (default
tcp;ofi_rxm, loopback).

  -h, --help   print this text
";

fn main() {
    if std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some() {
        pe();
    } else if let Some(rounds) = oxshmem_benches::rounds_arg("ctx-bench", USAGE, 5) {
        driver(rounds);
    }
}

/// One job: PE 0's two threads against PEs 1 and 2.
fn pe() {
    let (shmem, level) = oxshmem::init_thread(ThreadLevel::Multiple).expect("shmem_init_thread");
    assert_eq!(level, ThreadLevel::Multiple, "needs SHMEM_THREAD_MULTIPLE");
    let me = shmem.my_pe();
    let stream = shmem.alloc_slice(STREAM_PUTS * STREAM_SIZE, 0u8).expect("alloc");
    let word = shmem.alloc_slice(1, 0u64).expect("alloc");
    shmem.barrier_all().unwrap();
    if me == 0 {
        let streaming = AtomicBool::new(false);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE).expect("ctx_create A");
                let src = vec![7u8; STREAM_SIZE];
                while !streaming.load(Ordering::Acquire) && !stop.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                while !stop.load(Ordering::Acquire) {
                    for i in 0..STREAM_PUTS {
                        ctx.put_nbi(&stream, i * STREAM_SIZE, &src, 1).unwrap();
                    }
                    ctx.quiet().unwrap();
                }
                ctx.destroy().unwrap();
            });
            let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE).expect("ctx_create B");
            let mut v = 0u64;
            let mut lat = |to: usize, pe_quiet: bool| {
                let mut one = || {
                    v += 1;
                    ctx.p(&word, 0, v, to).unwrap();
                    if pe_quiet { shmem.quiet().unwrap() } else { ctx.quiet().unwrap() }
                };
                for _ in 0..ITERS / 10 + 10 {
                    one();
                }
                let t = Instant::now();
                for _ in 0..ITERS {
                    one();
                }
                t.elapsed().as_secs_f64() / ITERS as f64 * 1e6
            };
            println!("RESULT alone_us {:.3}", lat(2, false));
            streaming.store(true, Ordering::Release);
            for _ in 0..TURNS {
                println!("RESULT ctx_other_us {:.3}", lat(2, false));
                println!("RESULT pe_other_us {:.3}", lat(2, true));
            }
            for _ in 0..TURNS {
                println!("RESULT ctx_same_us {:.3}", lat(1, false));
                println!("RESULT pe_same_us {:.3}", lat(1, true));
            }
            stop.store(true, Ordering::Release);
            ctx.destroy().unwrap();
        });
    }
    shmem.barrier_all().unwrap();
    shmem.finalize().unwrap();
}

fn results(out: &str) -> BTreeMap<String, Vec<f64>> {
    let mut r: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for l in out.lines().filter_map(|l| l.strip_prefix("RESULT ")) {
        if let Some((k, v)) = l.split_once(' ')
            && let Ok(v) = v.trim().parse()
        {
            r.entry(k.to_string()).or_default().push(v);
        }
    }
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
    let launcher = oshrun(exe.parent().expect("exe dir"));
    let provider = std::env::var("FI_PROVIDER").unwrap_or_else(|_| "tcp;ofi_rxm".into());
    let mut all: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for round in 0..rounds {
        let out = Command::new(&launcher)
            .args(["-n", "3", "--timeout", "120", "--"])
            .arg(&exe)
            .envs([("FI_PROVIDER", provider.as_str()), ("FI_TCP_IFACE", "lo"), ("FI_SOCKETS_IFACE", "lo")])
            .env("OXSHMEM_TRANSPORT", "ofi")
            .env("SHMEM_SYMMETRIC_SIZE", "64M")
            .output()
            .unwrap_or_else(|e| panic!("cannot run oshrun: {e}"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "oshrun -n 3 ctx-bench failed ({}):\n{text}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let r = results(&text);
        assert_eq!(r.len(), ROWS.len(), "the job printed {r:?}:\n{text}");
        for (k, v) in r {
            all.entry(k).or_default().extend(v);
        }
        eprintln!("round {}/{rounds} done", round + 1);
    }
    println!(
        "# thread B's put 8 B + quiet on its own context while thread A streams {STREAM_PUTS} x {} KiB puts + \
         ctx quiet on another; provider {provider}, {rounds} jobs x {TURNS} turns",
        STREAM_SIZE >> 10
    );
    println!("{:<36} {:>10} {:>10} unit", "thread B: put 8 B + quiet", "min", "median");
    let mut med = BTreeMap::new();
    for (key, label) in ROWS {
        let mut v = all.remove(key).unwrap_or_default();
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let m = median(&mut v);
        med.insert(key, m);
        println!("{label:<36} {min:>10.3} {m:>10.3} us");
    }
    println!(
        "ratio ctx quiet / shmem_quiet (medians, same jobs): to another peer than A's {:.3}, to A's peer {:.3}",
        med["ctx_other_us"] / med["pe_other_us"],
        med["ctx_same_us"] / med["pe_same_us"]
    );
    println!("ctx quiet beside A / alone, to another peer: {:.2}", med["ctx_other_us"] / med["alone_us"]);
}
