//! `device-bench`: device-initiated operations over the direct P2P channel, the proxy ring
//! (NVSHMEM's IBRC path) and the IBGDA queues consumed by the software NIC, measured in the
//! same run.
//!
//! Run under the launcher: `oshrun -n 2 target/release/device-bench [all|rate|lat|a2a|moe]`, and
//! `oshrun -n 4 target/release/device-bench a2a` for the 4-PE all-to-all (`--help` says more).
//! With no benchmark named it makes a quick run of all four (`--quick`: 3 rounds and a tenth
//! of the work, under a minute); a named benchmark (`all` for the four) makes the full run of
//! 7 rounds, with a progress line per round on stderr. `--csv FILE` appends every channel's
//! figures to FILE as CSV (a [`Row`] each); `--csv -` prints them on stdout instead, and the
//! tables go to stderr. Rounds alternate the channels (P2P, proxy, IBGDA, P2P, …) because the
//! placement of the two vCPUs flips every few seconds (see BENCHMARKING.md); each round
//! initializes a fresh device on that channel and finalizes it, so no idle proxy or NIC thread
//! runs during another channel's round. Each line gives the best, median and worst round of
//! every channel (the worst: the min of a rate, the max of a time) and the ratios of the
//! medians to the proxy's, the reference, with the targets: P2P and IBGDA-via-softnic at least
//! 2× the proxy's small-message rate and at most 0.5× its all-to-all latency. Times are taken inside the kernel (kernel launch, which
//! spawns the CPU back end's threads, is not counted).
//!
//! - `rate`: 4 blocks × 64 device threads each do N 8-byte `p` to the next PE, then `quiet`;
//!   Mops/s of this PE from the first thread's start to the last thread's end. A third line
//!   repeats P2P with an idle proxy device alive in the same process (its proxy thread polls).
//! - `lat`: one device thread on PE 0, `put` + `quiet` and blocking `get` to PE 1, 8 B … 1 MiB,
//!   after a warm-up of 200 ms per round (`DEVICE_BENCH_WARMUP_MS`).
//! - `a2a`: every PE's kernel sends 7 KiB to every other PE (`put_signal_nbi`, one device
//!   thread per peer), then waits for the signal of every peer; µs per all-to-all.
//! - `moe`: MoE dispatch + combine of `oxshmem_moe` (moe-bench's workload: 7 KiB tokens, top-8
//!   of 32 experts), low-latency mode at 32 tokens per PE and throughput mode at 128; PE 0's
//!   median iteration. At the end of a run, one table puts IBGDA against the proxy at its best
//!   (per column the better of the sleeping and the spinning proxy) for the p rate, the 8 B
//!   put + quiet, the all-to-all and MoE.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

use oxshmem::{Cmp, Shmem, SignalOp, SymSlice};
use oxshmem_device::{DevPtr, Device, Grid};
use oxshmem_moe::{Buffer, Mode, MoeConfig, reference};

const ROUNDS: usize = 7;
/// Rounds of a quick run.
const QUICK_ROUNDS: usize = 3;

/// Whether this is a quick run (`--quick`, or no benchmark named): [`QUICK_ROUNDS`] rounds and
/// a tenth of the work per round.
static QUICK: AtomicBool = AtomicBool::new(false);

fn rounds() -> usize {
    if QUICK.load(Ordering::Relaxed) { QUICK_ROUNDS } else { ROUNDS }
}

/// `n`, or a tenth of it (at least `floor`) in a quick run.
fn scaled<T: Into<u64> + TryFrom<u64> + Copy>(n: T, floor: T) -> T {
    if !QUICK.load(Ordering::Relaxed) {
        return n;
    }
    let v = (n.into() / 10).max(floor.into()).min(n.into());
    T::try_from(v).unwrap_or(n)
}

/// Whether the tables go to stderr (`--csv -`: stdout carries the CSV rows).
static TABLES_ON_STDERR: AtomicBool = AtomicBool::new(false);

/// Prints a line of a table: on stdout, or on stderr when the CSV rows take stdout.
macro_rules! say {
    ($($t:tt)*) => {
        if TABLES_ON_STDERR.load(Ordering::Relaxed) { eprintln!($($t)*) } else { println!($($t)*) }
    };
}

/// A progress line on stderr (PE 0; the tables go to stdout, or [`say!`]'s way), for runs long enough to need one.
fn progress(shmem: &Shmem, what: &str, round: usize, start: Instant) {
    if shmem.my_pe() == 0 {
        eprintln!(
            "device-bench: {what}: round {}/{} done ({:.0} s so far)",
            round + 1,
            rounds(),
            start.elapsed().as_secs_f64()
        );
    }
}

/// One line of the `--csv` file: one channel's figures of one table line.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Row {
    /// The table (`rate`, `rate beside an idle proxy`, `lat`, `a2a`).
    table: String,
    operation: String,
    /// Bytes per operation: 8 for the rate, the size for a latency, the bytes sent to each peer
    /// for the all-to-all.
    bytes: usize,
    unit: String,
    /// `p2p`, `proxy`, `proxy-spin`, `ibgda` (or, in the idle-proxy table, `p2p with idle
    /// proxy` and `p2p alone`).
    channel: String,
    pes: usize,
    rounds: usize,
    /// The best round: the max of a rate, the min of a time.
    best: f64,
    median: f64,
    /// The worst round: the min of a rate, the max of a time.
    worst: f64,
    /// This channel's median over the proxy's (empty in the idle-proxy table).
    vs_proxy: Option<f64>,
    /// This channel's median over the spinning proxy's (empty in the idle-proxy table).
    vs_proxy_spin: Option<f64>,
    /// The machine ([`oxshmem_benches::machine`]).
    machine: String,
    /// The day of the run, UTC ([`oxshmem_benches::utc_date`]).
    date: String,
}

/// The machine and the date, once per run.
fn run_facts() -> &'static (String, String) {
    static FACTS: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    FACTS.get_or_init(|| (oxshmem_benches::machine(), oxshmem_benches::utc_date()))
}

/// Where the `--csv` rows go.
type CsvWriter = csv::Writer<Box<dyn Write + Send>>;

/// `--csv FILE`: where PE 0 appends every row (after a header line when the file is empty);
/// `--csv -`: stdout, after a header line.
static CSV: Mutex<Option<CsvWriter>> = Mutex::new(None);

fn open_csv(path: &str) -> std::io::Result<CsvWriter> {
    if path == "-" {
        return Ok(csv::WriterBuilder::new().has_headers(true).from_writer(Box::new(std::io::stdout())));
    }
    let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let empty = f.metadata()?.len() == 0;
    Ok(csv::WriterBuilder::new().has_headers(empty).from_writer(Box::new(f)))
}

fn csv_row(row: &Row) {
    if let Some(w) = CSV.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        w.serialize(row).and_then(|()| Ok(w.flush()?)).expect("writing the CSV file");
    }
}

fn round6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}
/// The channels; the proxy twice: sleeping when idle and spinning (NVSHMEM's dedicated
/// proxy thread, which holds a core: the better one depends on whether a core is free).
const CHANNELS: [&str; 4] = ["p2p", "proxy", "proxy-spin", "ibgda"];
/// Indices of the reference channels (the two proxies) and of IBGDA in `CHANNELS`.
const PROXY: usize = 1;
const PROXY_SPIN: usize = 2;
const IBGDA: usize = 3;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// The column-header line of a table of [`report`] lines, aligned with them: per channel the
/// best round (the max where higher is better, else the min), the median and the worst round,
/// the unit, each other channel's ratio of medians to the proxy's, and the IBGDA/proxy ratio of
/// each round.
fn header() {
    let mut line = format!("{:<18}", "operation");
    for ch in CHANNELS {
        line += &format!(" | {ch} {:>9} {:>9} {:>9}", "best", "median", "worst");
    }
    line += &format!(" {:<6}", "unit");
    for (c, ch) in CHANNELS.iter().enumerate() {
        if c != PROXY && c != PROXY_SPIN {
            line += &format!(" | {ch}/proxy {:>6} {ch}/proxy-spin {:>6}", "ratio", "ratio");
        }
    }
    say!("{line} (target) ibgda/(better proxy) ratio per round");
}

/// What a [`report`] line measured.
struct Line<'a> {
    /// The table (`rate`, `lat`, `a2a`).
    table: &'a str,
    what: String,
    /// Bytes per operation ([`Row::bytes`]).
    bytes: usize,
    unit: &'a str,
    higher_is_better: bool,
    /// What the ratios should be, for the line's end.
    target: &'a str,
    /// The line joins the IBGDA/proxy table at the end ([`glance`]).
    glance: bool,
}

/// One line: every channel's best/median/worst (the best is the max where higher is better),
/// then each other channel's ratio of medians to the proxy's, and the IBGDA/proxy ratio of
/// each round.
fn report(pes: usize, l: &Line, r: &[Vec<f64>]) {
    let Line { table, ref what, bytes, unit, higher_is_better, target, .. } = *l;
    let best = |v: &[f64]| if higher_is_better { max(v) } else { min(v) };
    let worst = |v: &[f64]| if higher_is_better { min(v) } else { max(v) };
    for (c, ch) in CHANNELS.iter().enumerate() {
        csv_row(&Row {
            table: table.to_string(),
            operation: what.to_string(),
            bytes,
            unit: unit.to_string(),
            channel: ch.to_string(),
            pes,
            rounds: r[c].len(),
            best: round6(best(&r[c])),
            median: round6(median(&r[c])),
            worst: round6(worst(&r[c])),
            vs_proxy: Some(round6(median(&r[c]) / median(&r[PROXY]))),
            vs_proxy_spin: Some(round6(median(&r[c]) / median(&r[PROXY_SPIN]))),
            machine: run_facts().0.clone(),
            date: run_facts().1.clone(),
        });
    }
    let mut line = format!("{what:<18}");
    for (c, ch) in CHANNELS.iter().enumerate() {
        line += &format!(" | {ch} {:>9.3} {:>9.3} {:>9.3}", best(&r[c]), median(&r[c]), worst(&r[c]));
    }
    line += &format!(" {unit:<6}");
    let (proxy, spin) = (median(&r[PROXY]), median(&r[PROXY_SPIN]));
    for (c, ch) in CHANNELS.iter().enumerate() {
        if c != PROXY && c != PROXY_SPIN {
            line +=
                &format!(" | {ch}/proxy {:>6.2} {ch}/proxy-spin {:>6.2}", median(&r[c]) / proxy, median(&r[c]) / spin);
        }
    }
    // Against the better proxy of each round.
    let better = |a: f64, b: f64| if higher_is_better { a.max(b) } else { a.min(b) };
    let per_round: Vec<String> = r[IBGDA]
        .iter()
        .zip(r[PROXY].iter().zip(&r[PROXY_SPIN]))
        .map(|(a, (p, q))| format!("{:.2}", a / better(*p, *q)))
        .collect();
    say!("{line} ({target}) ibgda/(better proxy) rounds [{}]", per_round.join(" "));
    if l.glance {
        GLANCE.lock().unwrap_or_else(|e| e.into_inner()).push(Glance {
            what: if table == "lat" { format!("{what} + quiet") } else { what.clone() },
            unit: unit.to_string(),
            higher_is_better,
            ibgda: (best(&r[IBGDA]), median(&r[IBGDA])),
            proxy: (best(&r[PROXY]), median(&r[PROXY])),
            spin: (best(&r[PROXY_SPIN]), median(&r[PROXY_SPIN])),
        });
    }
}

/// A line of the IBGDA/proxy table ([`glance`]): the best round and the median of IBGDA and of
/// each proxy.
struct Glance {
    what: String,
    unit: String,
    higher_is_better: bool,
    ibgda: (f64, f64),
    proxy: (f64, f64),
    spin: (f64, f64),
}

/// The lines of this run's IBGDA/proxy table, as [`report`] made them.
static GLANCE: Mutex<Vec<Glance>> = Mutex::new(Vec::new());

/// The IBGDA/proxy table (PE 0, at the end): per headline line (p rate, put 8 B + quiet, the
/// all-to-all, MoE), IBGDA and the proxy each at its best — the better of the sleeping and the
/// spinning proxy, for the best round and for the median alike — and their ratios.
fn glance(pes: usize) {
    let lines = std::mem::take(&mut *GLANCE.lock().unwrap_or_else(|e| e.into_inner()));
    if lines.is_empty() {
        return;
    }
    say!(
        "# IBGDA against the proxy, {pes} PEs, each at its best (proxy: the better of proxy and proxy-spin, per column); the headline claims IBGDA at >= 2x the proxy's rate and <= 0.5x its times"
    );
    say!(
        "{:<22} | {:>11} {:>11} | {:>11} {:>11} | {:>6} | {:>17} {:>17} | headline",
        "operation",
        "ibgda best",
        "median",
        "proxy best",
        "median",
        "unit",
        "ibgda/proxy best",
        "ibgda/proxy median"
    );
    for g in lines {
        let better = |a: f64, b: f64| if g.higher_is_better { a.max(b) } else { a.min(b) };
        let (pb, pm) = (better(g.proxy.0, g.spin.0), better(g.proxy.1, g.spin.1));
        let (rb, rm) = (g.ibgda.0 / pb, g.ibgda.1 / pm);
        let met = if g.higher_is_better { rm >= 2.0 } else { rm <= 0.5 };
        say!(
            "{:<22} | {:>11.3} {:>11.3} | {:>11.3} {:>11.3} | {:>6} | {:>17.2} {:>17.2} | {} {}",
            g.what,
            g.ibgda.0,
            g.ibgda.1,
            pb,
            pm,
            g.unit,
            rb,
            rm,
            if g.higher_is_better { ">= 2" } else { "<= 0.5" },
            if met { "does hold" } else { "does not hold" }
        );
    }
}

fn device(shmem: &Shmem, ch: &str) -> Device {
    let (force, spin) = match ch {
        "proxy" => ("proxy", Some(false)),
        "proxy-spin" => ("proxy", Some(true)),
        other => (other, None),
    };
    Device::init_opts(shmem, Some(force), spin).unwrap_or_else(|e| panic!("device init ({ch}): {e}"))
}

fn done(dev: Device) {
    dev.finalize().expect("device finalize");
}

// ---- (a) 8-byte put rate from many device threads ---------------------------------------

const RATE_GRID: Grid = Grid { blocks: 4, threads: 64 };

/// The rate test's grid: `DEVICE_BENCH_GRID=blocks,threads` (default 4,64).
fn rate_grid() -> Grid {
    std::env::var("DEVICE_BENCH_GRID")
        .ok()
        .and_then(|v| {
            let (b, t) = v.split_once(',')?;
            Some(Grid::new(b.trim().parse().ok()?, t.trim().parse().ok()?))
        })
        .unwrap_or(RATE_GRID)
}

/// Mops/s of this PE: every device thread does `ops` 8-byte `p` to the next PE, then quiet.
fn rate_once(shmem: &Shmem, dev: &Device, dst: DevPtr<u64>, ops: usize) -> f64 {
    let grid = rate_grid();
    let nt = grid.blocks * grid.threads;
    let right = (shmem.my_pe() + 1) % shmem.n_pes();
    // All blocks run at once (4 ≤ the back end's concurrent blocks): start together.
    let go = Arc::new(Barrier::new(nt));
    let span: Arc<Mutex<(Option<Instant>, Option<Instant>)>> = Arc::new(Mutex::new((None, None)));
    let (go2, span2) = (go.clone(), span.clone());
    let stream = dev.stream();
    shmem.barrier_all().expect("barrier");
    stream.launch(grid, move |t| {
        let slot = dst.offset(t.global_idx() * 8); // a cache line per thread
        go2.wait();
        let t0 = Instant::now();
        for i in 0..ops {
            t.p(slot, i as u64, right);
        }
        t.quiet();
        let t1 = Instant::now();
        let mut s = span2.lock().unwrap_or_else(|e| e.into_inner());
        s.0 = Some(s.0.map_or(t0, |x| x.min(t0)));
        s.1 = Some(s.1.map_or(t1, |x| x.max(t1)));
    });
    stream.synchronize().expect("synchronize");
    shmem.barrier_all().expect("barrier");
    let s = *span.lock().unwrap_or_else(|e| e.into_inner());
    let secs = (s.1.expect("end") - s.0.expect("start")).as_secs_f64();
    (nt * ops) as f64 / secs / 1e6
}

fn rate(shmem: &Shmem) {
    let ops: usize =
        std::env::var("DEVICE_BENCH_OPS").ok().and_then(|v| v.parse().ok()).unwrap_or(scaled(10_000u64, 500) as usize);
    let start = Instant::now();
    let buf = shmem.alloc_slice(rate_grid().blocks * rate_grid().threads * 8, 0u64).expect("alloc");
    let dst = DevPtr::from_slice(&buf);
    let mut res = vec![vec![]; CHANNELS.len()];
    let (mut p2p_idle, mut idle_ref) = (vec![], vec![]);
    for round in 0..rounds() {
        for (c, ch) in CHANNELS.iter().enumerate() {
            let dev = device(shmem, ch);
            let r = rate_once(shmem, &dev, dst, ops);
            done(dev);
            res[c].push(r);
        }
        // P2P again, beside an idle proxy device of the same process, and P2P alone once more
        // as that line's reference.
        let idle = device(shmem, "proxy");
        let dev = device(shmem, "p2p");
        p2p_idle.push(rate_once(shmem, &dev, dst, ops));
        done(dev);
        done(idle);
        let dev = device(shmem, "p2p");
        idle_ref.push(rate_once(shmem, &dev, dst, ops));
        done(dev);
        progress(shmem, "rate", round, start);
    }
    if shmem.my_pe() == 0 {
        let nt = rate_grid().blocks * rate_grid().threads;
        say!("# (a) 8 B p rate, {nt} device threads x {ops} p + quiet to the next PE, {} PEs", shmem.n_pes());
        header();
        let line = Line {
            table: "rate",
            what: "p rate".into(),
            bytes: 8,
            unit: "Mops/s",
            higher_is_better: true,
            target: "target >= 2",
            glance: true,
        };
        report(shmem.n_pes(), &line, &res);
        let slow = median(&p2p_idle) / median(&idle_ref);
        for (channel, v) in [("p2p with idle proxy", &p2p_idle), ("p2p alone", &idle_ref)] {
            csv_row(&Row {
                table: "rate beside an idle proxy".into(),
                operation: "p rate, idle proxy".into(),
                bytes: 8,
                unit: "Mops/s".into(),
                channel: channel.into(),
                pes: shmem.n_pes(),
                rounds: v.len(),
                best: round6(max(v)),
                median: round6(median(v)),
                worst: round6(min(v)),
                vs_proxy: None,
                vs_proxy_spin: None,
                machine: run_facts().0.clone(),
                date: run_facts().1.clone(),
            });
        }
        let per: Vec<String> = p2p_idle.iter().zip(&idle_ref).map(|(a, b)| format!("{:.2}", a / b)).collect();
        say!("# p2p beside an idle proxy device of the same process, against p2p alone");
        say!(
            "{:<22} p2p {:>10} {:>10} {:>10} {:<7} | alone {:>10} {:>10} {:>10} {:<7} | with/alone {:>6} per round",
            "operation",
            "best",
            "median",
            "worst",
            "unit",
            "best",
            "median",
            "worst",
            "unit",
            "ratio"
        );
        say!(
            "{:<22} p2p {:>10.3} {:>10.3} {:>10.3} Mops/s  | alone {:>10.3} {:>10.3} {:>10.3} Mops/s  | with/alone {slow:>6.2} rounds [{}]",
            "p rate, idle proxy",
            max(&p2p_idle),
            median(&p2p_idle),
            min(&p2p_idle),
            max(&idle_ref),
            median(&idle_ref),
            min(&idle_ref),
            per.join(" ")
        );
    }
    shmem.barrier_all().expect("barrier");
    buf.free().expect("free");
}

// ---- (b) put and get latency from one device thread -------------------------------------

const SIZES: [usize; 7] = [8, 64, 512, 4096, 32768, 262_144, 1 << 20];

fn iters_for(size: usize) -> usize {
    scaled((2_000_000 / (size + 256)).clamp(20, 5000) as u64, 10) as usize
}

/// Per size: (put + quiet, get) in µs, from one device thread of PE 0 to PE 1.
fn lat_once(shmem: &Shmem, dev: &Device, target: DevPtr<u64>) -> Vec<(f64, f64)> {
    let out: Arc<Mutex<Vec<(f64, f64)>>> = Arc::new(Mutex::new(Vec::new()));
    let o2 = out.clone();
    let stream = dev.stream();
    let warmup = std::time::Duration::from_millis(
        std::env::var("DEVICE_BENCH_WARMUP_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(scaled(200u64, 50)),
    );
    shmem.barrier_all().expect("barrier");
    if shmem.my_pe() == 0 {
        stream.launch(Grid::new(1, 1), move |t| {
            let src = vec![7u64; (1 << 20) / 8];
            let mut dst = vec![0u64; (1 << 20) / 8];
            let mut res = Vec::new();
            // Warm up first (200 ms; DEVICE_BENCH_WARMUP_MS): a fresh device's threads (this
            // one, the proxy, the NIC) start on the core of the thread that made them, and the
            // scheduler takes tens of milliseconds to spread them. Measured from the first
            // request, the first size (8 B put) paid it: after a 20 ms warm-up, the proxy's
            // 8 B put median was still 3-10x its best and 3-5x its 64 B median; after 200 ms
            // it is in line with the other small sizes. A real application's proxy has been
            // running for longer.
            let warm = Instant::now();
            while warm.elapsed() < warmup {
                t.put(target, &src[..1], 1);
                t.quiet();
                t.get(&mut dst[..1], target, 1);
            }
            for size in SIZES {
                let n = size / 8;
                let iters = iters_for(size);
                for _ in 0..iters.min(10) {
                    t.put(target, &src[..n], 1);
                    t.quiet();
                    t.get(&mut dst[..n], target, 1);
                }
                let t0 = Instant::now();
                for _ in 0..iters {
                    t.put(target, &src[..n], 1);
                    t.quiet();
                }
                let put = t0.elapsed().as_secs_f64() / iters as f64 * 1e6;
                let t0 = Instant::now();
                for _ in 0..iters {
                    t.get(&mut dst[..n], target, 1);
                }
                let get = t0.elapsed().as_secs_f64() / iters as f64 * 1e6;
                res.push((put, get));
            }
            *o2.lock().unwrap_or_else(|e| e.into_inner()) = res;
        });
    }
    stream.synchronize().expect("synchronize");
    shmem.barrier_all().expect("barrier");
    out.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn lat(shmem: &Shmem) {
    if shmem.n_pes() < 2 {
        if shmem.my_pe() == 0 {
            say!("# (b) latency needs 2 PEs");
        }
        return;
    }
    let buf = shmem.alloc_slice((1 << 20) / 8, 0u64).expect("alloc");
    let target = DevPtr::from_slice(&buf);
    // [channel][size] -> rounds of (put, get)
    let mut all = vec![vec![Vec::new(); SIZES.len()]; CHANNELS.len()];
    let start = Instant::now();
    for round in 0..rounds() {
        for (c, ch) in CHANNELS.iter().enumerate() {
            let dev = device(shmem, ch);
            let r = lat_once(shmem, &dev, target);
            done(dev);
            for (i, x) in r.into_iter().enumerate() {
                all[c][i].push(x);
            }
        }
        progress(shmem, "lat", round, start);
    }
    if shmem.my_pe() == 0 {
        say!("# (b) latency from one device thread, PE 0 -> PE 1 (put = put + quiet; get blocking)");
        header();
        for (i, size) in SIZES.iter().enumerate() {
            let put: Vec<Vec<f64>> = all.iter().map(|c| c[i].iter().map(|x: &(f64, f64)| x.0).collect()).collect();
            let get: Vec<Vec<f64>> = all.iter().map(|c| c[i].iter().map(|x: &(f64, f64)| x.1).collect()).collect();
            for (op, r) in [("put", &put), ("get", &get)] {
                let line = Line {
                    table: "lat",
                    what: format!("{op} {}", human(*size)),
                    bytes: *size,
                    unit: "us",
                    higher_is_better: false,
                    target: "lower is better",
                    glance: op == "put" && *size == 8,
                };
                report(shmem.n_pes(), &line, r);
            }
        }
    }
    shmem.barrier_all().expect("barrier");
    buf.free().expect("free");
}

fn human(size: usize) -> String {
    match size {
        s if s >= 1 << 20 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

// ---- (c) device-side all-to-all ---------------------------------------------------------

const A2A_WORDS: usize = 7 * 1024 / 8;
const A2A_WARMUP: u64 = 20;

/// µs per all-to-all on this PE: `iters` rounds, each device thread j sending 7 KiB to peer
/// `me + j + 1` and waiting for the signal of peer `me - j - 1`.
fn a2a_once(
    shmem: &Shmem,
    dev: &Device,
    bufs: &(SymSlice<u64>, SymSlice<u64>, SymSlice<u64>),
    base: u64,
    iters: u64,
) -> f64 {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (src, dst, sig) = (DevPtr::from_slice(&bufs.0), DevPtr::from_slice(&bufs.1), DevPtr::from_slice(&bufs.2));
    let out = Arc::new(Mutex::new(0.0f64));
    let o2 = out.clone();
    let stream = dev.stream();
    shmem.barrier_all().expect("barrier");
    stream.launch(Grid::new(1, n - 1), move |t| {
        let j = t.thread_idx();
        let (to, from) = ((me + j + 1) % n, (me + n - j - 1) % n);
        let mut t0 = Instant::now();
        for it in 1..=A2A_WARMUP + iters {
            if it == A2A_WARMUP + 1 {
                t0 = Instant::now();
            }
            t.put_signal_nbi(
                dst.offset(me * A2A_WORDS),
                src.offset(to * A2A_WORDS),
                A2A_WORDS,
                sig.offset(me),
                1,
                SignalOp::Add,
                to,
            );
            t.quiet();
            t.signal_wait_until(sig.offset(from), Cmp::Ge, base + it);
            t.sync_block();
        }
        if j == 0 {
            *o2.lock().unwrap_or_else(|e| e.into_inner()) = t0.elapsed().as_secs_f64() / iters as f64 * 1e6;
        }
    });
    stream.synchronize().expect("synchronize");
    shmem.barrier_all().expect("barrier");
    *out.lock().unwrap_or_else(|e| e.into_inner())
}

fn a2a(shmem: &Shmem) {
    let n = shmem.n_pes();
    if n < 2 {
        if shmem.my_pe() == 0 {
            say!("# (c) all-to-all needs 2 PEs or more");
        }
        return;
    }
    let iters: u64 = std::env::var("DEVICE_BENCH_A2A").ok().and_then(|v| v.parse().ok()).unwrap_or(scaled(2000u64, 50));
    let bufs = (
        shmem.alloc_slice(n * A2A_WORDS, 1u64).expect("alloc"),
        shmem.alloc_slice(n * A2A_WORDS, 0u64).expect("alloc"),
        shmem.alloc_slice(n, 0u64).expect("alloc"),
    );
    let mut res = vec![vec![]; CHANNELS.len()];
    let mut base = 0;
    let start = Instant::now();
    for round in 0..rounds() {
        for (c, ch) in CHANNELS.iter().enumerate() {
            let dev = device(shmem, ch);
            let r = a2a_once(shmem, &dev, &bufs, base, iters);
            done(dev);
            base += A2A_WARMUP + iters;
            res[c].push(r);
        }
        progress(shmem, "a2a", round, start);
    }
    if shmem.my_pe() == 0 {
        say!(
            "# (c) device all-to-all, 7 KiB to every other PE (put_signal_nbi + quiet, wait for every signal), {n} PEs"
        );
        header();
        let line = Line {
            table: "a2a",
            what: format!("all-to-all {n} PEs"),
            bytes: A2A_WORDS * 8,
            unit: "us",
            higher_is_better: false,
            target: "target <= 0.5",
            glance: true,
        };
        report(n, &line, &res);
    }
    shmem.barrier_all().expect("barrier");
    let (a, b, c) = bufs;
    for s in [a, b, c] {
        s.free().expect("free");
    }
}

// ---- (d) MoE dispatch + combine ---------------------------------------------------------

/// The MoE workload: moe-bench's tokens (7 KiB) and routing (top-8 of 32 experts, `random`,
/// seed 1), decode-sized in low-latency mode and prefill-sized in throughput mode.
const MOE_HIDDEN: usize = 7168;
const MOE_TOPK: usize = 8;
const MOE_EXPERTS: usize = 32;
const MOE_RUNS: [(Mode, usize); 2] = [(Mode::LowLatency, 32), (Mode::Throughput, 128)];
const MOE_WARMUP: usize = 10;

/// PE 0's median µs of dispatch + combine (each timed on the host around the call, a barrier
/// before each, the experts between them not timed) over `iters` iterations; the first
/// iteration's output is checked against the serial computation.
fn moe_once(shmem: &Shmem, dev: &Device, mode: Mode, tokens: usize, iters: usize) -> f64 {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let p = reference::Problem {
        seed: 1,
        tokens,
        hidden: MOE_HIDDEN / 4,
        topk: MOE_TOPK,
        experts: MOE_EXPERTS,
        npes: n,
        scenario: reference::Scenario::Random,
        ragged: false,
    };
    let cfg = MoeConfig {
        tokens,
        hidden_bytes: MOE_HIDDEN,
        topk: MOE_TOPK,
        experts: MOE_EXPERTS,
        mode,
        threads: 0,
        launch_per_call: false,
    };
    let mut buf = Buffer::new(shmem, dev, cfg).expect("moe buffer");
    let x = p.tokens_of(me);
    let (idx, w) = p.routing(me);
    buf.tokens_mut()[..x.len()].copy_from_slice(&x);
    let want = p.expected_output(me);
    let what = format!("moe {}", mode.name());
    let mut v = Vec::with_capacity(iters);
    for i in 0..MOE_WARMUP + iters {
        let check = (i == 0).then_some((&want[..], what.as_str()));
        let (td, tc, _) = oxshmem_benches::moe_iteration(shmem, &mut buf, tokens, &idx, &w, check);
        if i >= MOE_WARMUP {
            v.push(td + tc);
        }
    }
    buf.free().expect("free");
    median(&v)
}

fn moe(shmem: &Shmem) {
    let n = shmem.n_pes();
    if n < 2 || !MOE_EXPERTS.is_multiple_of(n) {
        if shmem.my_pe() == 0 {
            say!("# (d) MoE needs 2 PEs or more, a number that divides {MOE_EXPERTS} (its experts)");
        }
        return;
    }
    let iters = scaled(200u32, 20) as usize;
    let mut res = vec![vec![vec![]; CHANNELS.len()]; MOE_RUNS.len()];
    let start = Instant::now();
    for round in 0..rounds() {
        for (c, ch) in CHANNELS.iter().enumerate() {
            let dev = device(shmem, ch);
            for (k, &(mode, tokens)) in MOE_RUNS.iter().enumerate() {
                res[k][c].push(moe_once(shmem, &dev, mode, tokens, iters));
            }
            done(dev);
        }
        progress(shmem, "moe", round, start);
    }
    if shmem.my_pe() == 0 {
        say!(
            "# (d) MoE dispatch + combine (oxshmem_moe), {MOE_HIDDEN} B tokens, top-{MOE_TOPK} of {MOE_EXPERTS} experts, {n} PEs; PE 0's median iteration per round"
        );
        header();
        for (k, &(mode, tokens)) in MOE_RUNS.iter().enumerate() {
            let line = Line {
                table: "moe",
                what: format!("moe {} T={tokens}", mode.name()),
                bytes: MOE_HIDDEN,
                unit: "us",
                higher_is_better: false,
                target: "target <= 0.5",
                glance: true,
            };
            report(n, &line, &res[k]);
        }
    }
    shmem.barrier_all().expect("barrier");
}

const USAGE: &str = "\
Usage: oshrun -n N device-bench [BENCHMARK] [--quick] [--csv FILE|-]

Device-initiated operations on every channel side by side, in interleaved rounds (p2p, proxy,
proxy-spin, ibgda, p2p, ...), each round on a fresh device:
  p2p          the device thread stores into the peer's memory directly
  proxy        the reference: the proxy ring (NVSHMEM's IBRC path), a host thread of the PE
               does the transfer; it sleeps when idle
  proxy-spin   the same proxy, spinning when idle (NVSHMEM's dedicated proxy thread)
  ibgda        IBGDA: the device thread posts to a NIC queue, the software NIC does it
Each line gives, per channel, the best round (max of a rate, min of a time), the median and the
worst round (min of a rate, max of a time); then each other channel's median over the proxy's
and over the spinning proxy's (the targets: p2p and ibgda at least 2x the proxy's rate and at
most 0.5x its all-to-all time), and ibgda over the better proxy, round by round. At the end,
one table puts IBGDA against the proxy at its best (the better of proxy and proxy-spin) for
the p rate, the 8 B put + quiet, the all-to-all and MoE.

BENCHMARK (none: a quick run of all four, under a minute at 2 PEs):
  rate   p rate: 256 device threads (4 blocks x 64) each do 8 B p to the next PE, then quiet;
         Mops/s of this PE. Then p2p beside an idle proxy device of the same process, against
         p2p alone (the reference of that line)                        (any PE count)
  lat    put N, get N: one device thread of PE 0, put + quiet and a blocking get to PE 1,
         8 B to 1 MiB; us per operation                                (2 PEs or more)
  a2a    all-to-all N PEs: each PE sends 7 KiB to every other PE with put_signal_nbi + quiet
         and waits for every peer's signal; us per all-to-all          (2 PEs or more)
  moe    MoE dispatch + combine (oxshmem_moe, 7 KiB tokens, top-8 of 32 experts):
         low-latency mode at 32 tokens per PE, throughput mode at 128; PE 0's median
         iteration, us                                   (2 PEs or more, dividing 32)
  all    the four                                                      (several minutes: a
         progress line per round goes to stderr)
A named benchmark makes the full run (7 rounds, all the work) unless --quick is given.

Options:
  --quick      3 rounds instead of 7 and a tenth of the work per round (the default when no
               BENCHMARK is named)
  --csv FILE   also append every channel's figures to FILE as CSV, one row per channel and line,
               after a header line when FILE is new or empty:
               table,operation,bytes,unit,channel,pes,rounds,best,median,worst,vs_proxy,
               vs_proxy_spin,machine,date (bytes: per operation, or sent to each peer in a2a;
               vs_proxy*: this channel's median over the proxy's; python3 benches/plot.py FILE
               DIR draws it)
  --csv -      the same rows on stdout, after the header line; the tables go to stderr
  -h, --help   print this text

Environment: DEVICE_BENCH_OPS (p per thread in rate), DEVICE_BENCH_GRID=blocks,threads (rate),
DEVICE_BENCH_WARMUP_MS (lat's warm-up per round), DEVICE_BENCH_A2A (all-to-alls per round).

Examples:
  oshrun -n 2 target/release/device-bench
  oshrun -n 2 target/release/device-bench all --csv target/device.csv
  oshrun -n 4 target/release/device-bench a2a --quick --csv - > a2a.csv
";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Args {
    /// `rate`, `lat`, `a2a`, `moe` or `all` (`None`: a quick run of all four).
    which: Option<String>,
    quick: bool,
    csv: Option<String>,
    help: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-h" | "--help" | "help" => a.help = true,
            "--quick" => a.quick = true,
            "--csv" => a.csv = Some(it.next().ok_or("--csv needs a file name")?.clone()),
            o if o.starts_with('-') => return Err(format!("unknown option {o:?}")),
            name @ ("rate" | "lat" | "a2a" | "moe" | "all") => {
                if let Some(first) = &a.which {
                    return Err(format!("one benchmark at a time ({first:?}, then {name:?}); \"all\" runs the four"));
                }
                a.which = Some(name.to_string());
            }
            other => return Err(format!("unknown benchmark {other:?}")),
        }
    }
    Ok(a)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&args) {
        Ok(a) if a.help => {
            if oxshmem_benches::first_process() {
                print!("{USAGE}");
            }
            return;
        }
        Ok(a) => a,
        Err(e) => {
            if oxshmem_benches::first_process() {
                eprintln!("device-bench: {e}\n(device-bench --help lists the benchmarks and options)");
            }
            std::process::exit(2);
        }
    };
    QUICK.store(args.quick || args.which.is_none(), Ordering::Relaxed);
    let what = args.which.clone().unwrap_or_else(|| "all".to_string());
    TABLES_ON_STDERR.store(args.csv.as_deref() == Some("-"), Ordering::Relaxed);
    let shmem = oxshmem::init().expect("shmem init");
    if let Some(path) = &args.csv
        && shmem.my_pe() == 0
    {
        match open_csv(path) {
            Ok(w) => *CSV.lock().unwrap_or_else(|e| e.into_inner()) = Some(w),
            Err(e) => {
                eprintln!("device-bench: --csv {path}: {e}");
                std::process::exit(2);
            }
        }
    }
    if shmem.my_pe() == 0 {
        say!(
            "# device-bench: P2P vs proxy ring vs IBGDA (software NIC), {} PEs, {} interleaved rounds{}; columns: best (max of a rate, min of a time), median, worst (min of a rate, max of a time)",
            shmem.n_pes(),
            rounds(),
            if QUICK.load(Ordering::Relaxed) { " (quick run)" } else { "" }
        );
    }
    let start = Instant::now();
    match what.as_str() {
        "rate" => rate(&shmem),
        "lat" => lat(&shmem),
        "a2a" => a2a(&shmem),
        "moe" => moe(&shmem),
        "all" => {
            rate(&shmem);
            lat(&shmem);
            a2a(&shmem);
            moe(&shmem);
        }
        _ => unreachable!("checked before init"),
    }
    if shmem.my_pe() == 0 {
        glance(shmem.n_pes());
    }
    shmem.barrier_all().expect("barrier");
    if shmem.my_pe() == 0 {
        eprintln!("device-bench: done in {:.0} s", start.elapsed().as_secs_f64());
    }
    shmem.finalize().expect("finalize");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments() {
        assert_eq!(parse_args(&[]), Ok(Args::default()));
        let a = parse_args(&strings(&["a2a", "--quick", "--csv", "d.csv"])).unwrap();
        assert_eq!((a.which.as_deref(), a.quick, a.csv.as_deref()), (Some("a2a"), true, Some("d.csv")));
        assert!(parse_args(&strings(&["--help"])).unwrap().help);
        assert_eq!(parse_args(&strings(&["--nope"])), Err("unknown option \"--nope\"".into()));
        assert_eq!(parse_args(&strings(&["fast"])), Err("unknown benchmark \"fast\"".into()));
        assert!(parse_args(&strings(&["rate", "lat"])).is_err());
        assert!(parse_args(&strings(&["--csv"])).is_err());
        assert_eq!(parse_args(&strings(&["--csv", "-", "rate"])).unwrap().csv.as_deref(), Some("-"));
    }

    /// `--help` names every option, benchmark and variable the program reads.
    #[test]
    fn usage_names_everything() {
        for word in [
            "--quick",
            "--csv FILE",
            "--csv -",
            "--help",
            "rate",
            "lat",
            "a2a",
            "moe",
            "all",
            "worst",
            "DEVICE_BENCH_OPS",
            "DEVICE_BENCH_GRID",
            "DEVICE_BENCH_WARMUP_MS",
            "DEVICE_BENCH_A2A",
        ] {
            assert!(USAGE.contains(word), "{word}");
        }
        for ch in CHANNELS {
            assert!(USAGE.contains(&format!("  {ch} ")), "{ch}");
        }
    }
}
