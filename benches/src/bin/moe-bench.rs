//! `moe-bench`: MoE dispatch + combine (`oxshmem_moe`) in both modes over each device
//! channel, and the MPI baseline (`benches/c/moe_mpi.c`: `MPI_Alltoall` of counts and
//! `MPI_Alltoallv` of the rows, both ways) on the same workload.
//!
//! Workload: T = 128 tokens per PE of H = 7168 bytes (1792 f32), top-8 of 32 experts in the
//! whole job (16 per PE at 2 PEs, 8 at 4), routing of `moe::reference` (`random`, seed 1), the
//! expert `y = x (e + 1) + e`. One iteration = barrier, dispatch (timed), experts (not timed),
//! barrier, combine (timed); its time is the maximum over PEs of dispatch + combine. Tokens
//! are dispatched in place from the buffer's symmetric token array (`dispatch_in_place`); MPI
//! packs them per destination, as `MPI_Alltoallv` needs. Times are taken on the host around
//! the library calls, so they include handing the kernel to the device threads and waiting
//! for it: on the buffer's resident kernel (`launch resident`), and once, for comparison, with
//! a kernel launch per call (`per-call`: the CPU back end spawns its device threads per launch).
//!
//! Two ways to run it:
//!
//! - `oshrun -n N target/release/moe-bench [OPTIONS]`: oxshmem only. Rounds interleave the
//!   configurations, each round with a fresh device on that channel, and the table gives
//!   the median and minimum over all rounds, the medians of dispatch and combine alone, and
//!   the median of an empty kernel launch + synchronize for scale.
//! - `target/release/moe-bench compare [-n 2,4] [OPTIONS]` (no launcher): builds `moe_mpi.c`
//!   with MPICH's `mpicc.mpich` and Open MPI's `mpicc.openmpi` (whichever are installed), then
//!   per PE count runs rounds of `oshrun -n N moe-bench`, `mpiexec.hydra -n N moe_mpi` and
//!   `mpirun.openmpi --bind-to core -n N moe_mpi` (`none` when oversubscribed) in an order
//!   that rotates every round (the placement of the two vCPUs flips every few seconds), and
//!   prints each (mode, channel) with the ratio oxshmem / MPI of the medians against each MPI,
//!   and against the faster one per round and of the minimums (the least disturbed
//!   iterations, when the machine is busy). It also checks that oxshmem's and every MPI's
//!   outputs have the same digest.
//!
//! OPTIONS: `--rounds R` (5), `--iters I` timed iterations per round (200), `--warmup W` (20),
//! `--channels p2p,proxy,ibgda`, `--modes throughput,low-latency`,
//! `--threads N` device threads per kernel (0: the library's default), `--no-per-call`, `--tokens T`
//! (`compare`: a list, by default 8,32,128 — decode-sized batches and the prefill-sized 128),
//! `--hidden-bytes H`, `--topk K`, `--experts E`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use oxshmem::Shmem;
use oxshmem_device::{Device, Grid};
use oxshmem_moe::{Buffer, Mode, MoeConfig, reference};

/// The tokens per PE `compare` measures unless `--tokens` says otherwise: decode-sized batches,
/// where low-latency mode is meant to win, and the prefill-sized default of a run.
const COMPARE_TOKENS: &[usize] = &[8, 32, 128];

/// The channels measured unless `--channels` says otherwise.
const CHANNELS: &[&str] = &["p2p", "proxy", "ibgda"];

#[derive(Debug, Clone)]
struct Opts {
    rounds: usize,
    iters: usize,
    warmup: usize,
    channels: Vec<String>,
    modes: Vec<Mode>,
    threads: usize,
    /// Also measure the first mode and channel with a kernel launch per call.
    per_call: bool,
    tokens: usize,
    /// `--tokens` as given: one T for a run, the list of T that `compare` measures (`None`:
    /// 128 for a run, [`COMPARE_TOKENS`] for `compare`).
    token_list: Option<Vec<usize>>,
    hidden_bytes: usize,
    topk: usize,
    experts: usize,
    npes: Vec<usize>,
    /// Print machine-readable lines only (for `compare`).
    machine: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            rounds: 5,
            iters: 200,
            warmup: 20,
            channels: CHANNELS.iter().map(|s| s.to_string()).collect(),
            modes: Mode::ALL.to_vec(),
            threads: 0,
            per_call: true,
            tokens: 128,
            token_list: None,
            hidden_bytes: 7168,
            topk: 8,
            experts: 32,
            npes: vec![2, 4],
            machine: false,
        }
    }
}

const USAGE: &str = "\
Usage: oshrun -n N moe-bench [OPTIONS]        MoE dispatch + combine in both modes over each
                                              device channel (about 15 s at 2 PEs)
       moe-bench compare [-n 2,4] [OPTIONS]   (no launcher) the same beside MPICH's and Open
                                              MPI's MPI_Alltoall(v) on the same workload

Options:
  --rounds R            rounds, interleaving the configurations (default 5)
  --iters I             timed iterations per round (200)
  --warmup W            untimed iterations before them (20)
  --channels LIST       device channels (p2p,proxy,ibgda)
  --modes LIST          throughput,low-latency
  --threads N           device threads per kernel (0: the library's default)
  --no-per-call         leave out the kernel-launch-per-call comparison
  --tokens T            tokens per PE (128); compare: a list (8,32,128)
  --hidden-bytes H      bytes per token (7168)
  --topk K              experts per token (8)
  --experts E           experts in the whole job (32)
  -n, --npes LIST       compare: the PE counts (2,4)
  --machine             one RESULT line per configuration and round (what compare reads)
  -h, --help            print this text

benches/src/bin/moe-bench.rs says more (what is timed, the MPI baseline).
";

/// A command-line error: says what was wrong and where the options are described, and exits 2.
fn usage(what: &str) -> ! {
    eprintln!("moe-bench: {what} (moe-bench --help lists the options)");
    std::process::exit(2)
}

fn parse_opts(args: &[String]) -> Opts {
    let mut o = Opts::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let v = args.get(i + 1).cloned().unwrap_or_default();
        let num = || v.parse::<usize>().unwrap_or_else(|_| usage(&format!("{a} needs a number, got {v:?}")));
        // A comma-separated list of numbers, such as `example`.
        let list = |example: &str| -> Vec<usize> {
            v.split(',')
                .map(|x| x.parse().unwrap_or_else(|_| usage(&format!("{a} needs {example}, got {v:?}"))))
                .collect()
        };
        match a {
            "--rounds" => o.rounds = num(),
            "--iters" => o.iters = num(),
            "--warmup" => o.warmup = num(),
            "--threads" => o.threads = num(),
            "--tokens" => {
                let ts = list("token counts such as 8,32,128");
                o.tokens = ts[0];
                o.token_list = Some(ts);
            }
            "--hidden-bytes" => o.hidden_bytes = num(),
            "--topk" => o.topk = num(),
            "--experts" => o.experts = num(),
            "--channels" => o.channels = v.split(',').map(str::to_string).collect(),
            "--modes" => {
                o.modes = v
                    .split(',')
                    .map(|m| Mode::from_name(m).unwrap_or_else(|| usage(&format!("unknown mode {m:?}"))))
                    .collect()
            }
            "-n" | "--npes" => o.npes = list("PE counts such as 2,4"),
            "--machine" => {
                o.machine = true;
                i += 1;
                continue;
            }
            "--no-per-call" => {
                o.per_call = false;
                i += 1;
                continue;
            }
            other => usage(&format!("unknown option {other:?}")),
        }
        i += 2;
    }
    o.iters = o.iters.max(1);
    o
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn problem(o: &Opts, npes: usize) -> reference::Problem {
    reference::Problem {
        seed: 1,
        tokens: o.tokens,
        hidden: o.hidden_bytes / 4,
        topk: o.topk,
        experts: o.experts,
        npes,
        scenario: reference::Scenario::Random,
        ragged: false,
    }
}

/// One round of one (mode, channel): per timed iteration, the maximum over PEs of
/// (dispatch + combine, dispatch, combine) in µs; and the digest of this PE's output.
fn measure(shmem: &Shmem, o: &Opts, pair: &Pair) -> (Vec<[f64; 3]>, u64) {
    let (mode, ch) = (pair.mode, pair.channel.as_str());
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let p = problem(o, n);
    let dev = Device::init_with(shmem, Some(ch)).unwrap_or_else(|e| panic!("device init ({ch}): {e}"));
    let cfg = MoeConfig {
        tokens: o.tokens,
        hidden_bytes: o.hidden_bytes,
        topk: o.topk,
        experts: o.experts,
        mode,
        threads: o.threads,
        launch_per_call: pair.per_call,
    };
    let mut buf = Buffer::new(shmem, &dev, cfg).expect("moe buffer");
    let x = p.tokens_of(me);
    let (idx, w) = p.routing(me);
    buf.tokens_mut()[..x.len()].copy_from_slice(&x);
    let total = o.warmup + o.iters;
    let times = shmem.alloc_slice(3 * o.iters, 0.0f64).expect("alloc");
    let maxed = shmem.alloc_slice(3 * o.iters, 0.0f64).expect("alloc");
    let mut digest = 0;
    let want = p.expected_output(me);
    let what = format!("{} {ch}", mode.name());
    for i in 0..total {
        let check = (i == 0).then_some((&want[..], what.as_str()));
        let (td, tc, out) = oxshmem_benches::moe_iteration(shmem, &mut buf, o.tokens, &idx, &w, check);
        if i == 0 {
            digest = reference::digest(out);
        }
        if i >= o.warmup {
            let j = i - o.warmup;
            times.write(j, td + tc);
            times.write(o.iters + j, td);
            times.write(2 * o.iters + j, tc);
        }
    }
    shmem.team_world().max_reduce(&maxed, &times, 3 * o.iters).expect("max_reduce");
    let r = (0..o.iters).map(|j| [maxed.read(j), maxed.read(o.iters + j), maxed.read(2 * o.iters + j)]).collect();
    maxed.free().expect("free");
    times.free().expect("free");
    buf.free().expect("free");
    dev.finalize().expect("device finalize");
    (r, digest)
}

/// Median µs of an empty one-thread kernel launch + synchronize on `ch`.
fn launch_cost(shmem: &Shmem, ch: &str) -> f64 {
    let dev = Device::init_with(shmem, Some(ch)).unwrap_or_else(|e| panic!("device init ({ch}): {e}"));
    let stream = dev.stream();
    let mut v = Vec::new();
    for _ in 0..200 {
        let t0 = Instant::now();
        stream.launch(Grid::new(1, 1), |_| {});
        stream.synchronize().expect("synchronize");
        v.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    drop(stream);
    dev.finalize().expect("device finalize");
    median(&v)
}

/// One configuration measured.
#[derive(Debug, Clone)]
struct Pair {
    mode: Mode,
    channel: String,
    per_call: bool,
}

impl Pair {
    fn launch(&self) -> &'static str {
        if self.per_call { "per-call" } else { "resident" }
    }
}

/// Under oshrun: every round measures every configuration; PE 0 prints the table (or, with
/// `--machine`, one `RESULT` line per configuration and round).
fn run(o: &Opts) {
    let shmem = oxshmem::init().expect("shmem init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let mut pairs: Vec<Pair> = o
        .modes
        .iter()
        .flat_map(|&mode| o.channels.iter().map(move |c| Pair { mode, channel: c.clone(), per_call: false }))
        .collect();
    if o.per_call && !pairs.is_empty() {
        pairs.push(Pair { per_call: true, ..pairs[0].clone() });
    }
    let mut all: BTreeMap<usize, Vec<[f64; 3]>> = BTreeMap::new();
    let mut digests = BTreeMap::new();
    for r in 0..o.rounds {
        for (i, pair) in pairs.iter().enumerate() {
            let (v, d) = measure(&shmem, o, pair);
            digests.insert(i, d);
            if me == 0 && o.machine {
                let col = |c: usize| v.iter().map(|x| x[c]).collect::<Vec<_>>();
                println!(
                    "RESULT {} {} {} round {r} median {:.1} min {:.1} dispatch {:.1} combine {:.1}",
                    pair.mode.name(),
                    pair.channel,
                    pair.launch(),
                    median(&col(0)),
                    min(&col(0)),
                    median(&col(1)),
                    median(&col(2))
                );
            }
            all.entry(i).or_default().extend(v);
        }
    }
    let launch: Vec<(String, f64)> = o.channels.iter().map(|c| (c.clone(), launch_cost(&shmem, c))).collect();
    if me == 0 {
        if o.machine {
            for (i, d) in &digests {
                let p = &pairs[*i];
                println!("DIGEST {} {} {} {d:016x}", p.mode.name(), p.channel, p.launch());
            }
            for (c, us) in &launch {
                println!("LAUNCH {c} {us:.1}");
            }
        } else {
            println!(
                "# moe-bench: {n} PEs, T={} tokens/PE, H={} B, top-{} of {} experts ({} per PE); {} rounds x {} iterations",
                o.tokens,
                o.hidden_bytes,
                o.topk,
                o.experts,
                o.experts / n,
                o.rounds,
                o.iters
            );
            println!(
                "# dispatch+combine per iteration = max over PEs; us; device threads per kernel: {}",
                if o.threads == 0 { "default".to_string() } else { o.threads.to_string() }
            );
            println!(
                "{:<12} {:<7} {:<9} {:>10} {:>10} {:>12} {:>12}",
                "mode", "channel", "launch", "median", "min", "dispatch md", "combine md"
            );
            for (i, p) in pairs.iter().enumerate() {
                let v = &all[&i];
                let col = |c: usize| v.iter().map(|x| x[c]).collect::<Vec<_>>();
                println!(
                    "{:<12} {:<7} {:<9} {:>10.1} {:>10.1} {:>12.1} {:>12.1}",
                    p.mode.name(),
                    p.channel,
                    p.launch(),
                    median(&col(0)),
                    min(&col(0)),
                    median(&col(1)),
                    median(&col(2))
                );
            }
            for (c, us) in &launch {
                println!("# empty kernel launch + synchronize ({c}): {us:.1} us median");
            }
        }
    }
    shmem.barrier_all().expect("barrier");
    shmem.finalize().expect("finalize");
}

// ---- compare: oxshmem jobs and the MPI baseline, interleaved ------------------------------

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(tool)).find(|p| p.is_file())
}

fn output(cmd: &mut Command) -> String {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") {
            cmd.env_remove(k);
        }
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{text}{}", out.status, String::from_utf8_lossy(&out.stderr));
    text
}

fn field(line: &str, name: &str) -> f64 {
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| *x == name).unwrap_or_else(|| panic!("no {name} in {line:?}"));
    w[i + 1].parse().unwrap_or_else(|_| panic!("bad {name} in {line:?}"))
}

/// An MPI baseline: its compiler wrapper, launcher (with options), version and our build of
/// `moe_mpi.c` with it.
struct Mpi {
    name: &'static str,
    cc: PathBuf,
    run: PathBuf,
    args: Vec<String>,
    version: String,
    exe: PathBuf,
}

fn compare(o: &Opts) {
    let exe = std::env::current_exe().expect("current_exe");
    let bin_dir = exe.parent().expect("exe dir");
    let oshrun = bin_dir.join("oshrun");
    assert!(oshrun.exists(), "{} not found: cargo build --release -p oxshmem-bootstrap --bin oshrun", oshrun.display());
    // The MPI baselines: MPICH (Hydra) and Open MPI, each with the launcher's usual placement
    // (Open MPI binds ranks to cores when they fit, as oshrun does; never when oversubscribed).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("c/moe_mpi.c");
    let mut mpis: Vec<Mpi> = Vec::new();
    if let (Some(cc), Some(run)) = (which("mpicc.mpich"), which("mpiexec.hydra")) {
        let version = output(&mut Command::new(which("mpichversion").unwrap_or_else(|| "mpichversion".into())))
            .lines()
            .find_map(|l| l.strip_prefix("MPICH Version:"))
            .map(str::trim)
            .unwrap_or("?")
            .to_string();
        mpis.push(Mpi { name: "mpich", cc, run, args: vec![], version, exe: bin_dir.join("moe_mpi.mpich") });
    }
    if let (Some(cc), Some(run)) = (which("mpicc.openmpi"), which("mpirun.openmpi")) {
        // "mpirun.openmpi (OpenRTE) 4.1.4", then a blank line and "Report bugs to ...".
        let text = output(Command::new(&run).arg("--version"));
        let version = text.lines().next().and_then(|l| l.split_whitespace().last()).unwrap_or("?").to_string();
        let args = ["--allow-run-as-root", "--oversubscribe"].map(String::from).to_vec();
        mpis.push(Mpi { name: "openmpi", cc, run, args, version, exe: bin_dir.join("moe_mpi.openmpi") });
    }
    assert!(
        !mpis.is_empty(),
        "an MPI is needed for the baseline: apt-get install mpich (mpicc.mpich, mpiexec.hydra) and/or \
         openmpi-bin libopenmpi-dev (mpicc.openmpi, mpirun.openmpi)"
    );
    for m in &mpis {
        output(Command::new(&m.cc).args(["-O2", "-ffp-contract=off", "-std=gnu99", "-o"]).arg(&m.exe).arg(&src));
    }
    for &t in o.token_list.as_deref().unwrap_or(COMPARE_TOKENS) {
        compare_at(&Opts { tokens: t, ..o.clone() }, &mpis, &exe, &oshrun);
    }
}

/// `compare` at `o.tokens` tokens per PE.
fn compare_at(o: &Opts, mpis: &[Mpi], exe: &Path, oshrun: &Path) {
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    let spec = format!("{}:{}:{}:{}:1:random:0:1", o.tokens, o.experts, o.topk, o.hidden_bytes);
    let mut pass: Vec<String> = vec![
        "--iters".into(),
        o.iters.to_string(),
        "--warmup".into(),
        o.warmup.to_string(),
        "--rounds".into(),
        "1".into(),
        "--threads".into(),
        o.threads.to_string(),
        "--channels".into(),
        o.channels.join(","),
        "--modes".into(),
        o.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(","),
    ];
    for (k, v) in
        [("--tokens", o.tokens), ("--hidden-bytes", o.hidden_bytes), ("--topk", o.topk), ("--experts", o.experts)]
    {
        pass.push(k.into());
        pass.push(v.to_string());
    }
    pass.push("--machine".into());
    println!(
        "# moe-bench compare: T={} tokens/PE, H={} B, top-{} of {} experts; {} rounds x {} iterations (+{} warm-up); \
         dispatch+combine, max over PEs, us; MPI: {}; ratios against each MPI and against the faster one",
        o.tokens,
        o.hidden_bytes,
        o.topk,
        o.experts,
        o.rounds,
        o.iters,
        o.warmup,
        mpis.iter().map(|m| format!("{} {} ({})", m.name, m.version, m.run.display())).collect::<Vec<_>>().join(", ")
    );
    for &n in &o.npes {
        // Per (mode, channel): (median, min, dispatch, combine) per round; MPI the same.
        let mut ox: BTreeMap<(String, String, String), Vec<[f64; 4]>> = BTreeMap::new();
        let mut launch: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut mpi: Vec<Vec<[f64; 4]>> = vec![Vec::new(); mpis.len()];
        let mut digests_ok = true;
        for r in 0..o.rounds {
            let run_ox = |ox: &mut BTreeMap<(String, String, String), Vec<[f64; 4]>>,
                          digests: &mut BTreeMap<String, u64>,
                          launch: &mut BTreeMap<String, Vec<f64>>| {
                let text = output(Command::new(oshrun).args(["-n", &n.to_string(), "--"]).arg(exe).args(&pass));
                for l in text.lines() {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    if w.first() == Some(&"RESULT") {
                        let v = [field(l, "median"), field(l, "min"), field(l, "dispatch"), field(l, "combine")];
                        ox.entry((w[1].to_string(), w[2].to_string(), w[3].to_string())).or_default().push(v);
                    } else if w.first() == Some(&"DIGEST") {
                        digests.insert(format!("{} {} {}", w[1], w[2], w[3]), u64::from_str_radix(w[4], 16).unwrap());
                    } else if w.first() == Some(&"LAUNCH") {
                        launch.entry(w[1].to_string()).or_default().push(w[2].parse().unwrap());
                    }
                }
            };
            let run_mpi = |m: &Mpi, out: &mut Vec<[f64; 4]>| -> u64 {
                let mut cmd = Command::new(&m.run);
                cmd.args(&m.args);
                if m.name == "openmpi" {
                    cmd.args(["--bind-to", if n <= cpus { "core" } else { "none" }]);
                }
                let text = output(cmd.args(["-n", &n.to_string()]).arg(&m.exe).args([
                    "-t",
                    &o.iters.to_string(),
                    "-w",
                    &o.warmup.to_string(),
                    &spec,
                ]));
                let l = text.lines().find(|l| l.starts_with("moe_mpi spec")).expect("moe_mpi timing line");
                out.push([field(l, "median"), field(l, "min"), field(l, "dispatch"), field(l, "combine")]);
                let d = text.lines().find(|l| l.starts_with("rank 0 ")).expect("rank 0 digest");
                u64::from_str_radix(d.split_whitespace().last().unwrap(), 16).unwrap()
            };
            // oxshmem, then each MPI, in an order that rotates every round.
            let mut digests = BTreeMap::new();
            let mut mpi_digests = Vec::new();
            for k in 0..=mpis.len() {
                let which = (k + r) % (mpis.len() + 1);
                if which == mpis.len() {
                    run_ox(&mut ox, &mut digests, &mut launch);
                } else {
                    mpi_digests.push(run_mpi(&mpis[which], &mut mpi[which]));
                }
            }
            digests_ok &= mpi_digests.windows(2).all(|w| w[0] == w[1])
                && digests.values().all(|&d| mpi_digests.first().is_none_or(|&m| d == m));
        }
        println!(
            "\n## {n} PEs ({} experts per PE), T={}; PE 0's output digest equal to MPI's: {digests_ok}",
            o.experts / n,
            o.tokens
        );
        // The faster MPI by median is the baseline the targets are read against.
        let meds: Vec<f64> = mpi.iter().map(|v| median(&v.iter().map(|x| x[0]).collect::<Vec<_>>())).collect();
        let best = (0..mpis.len()).min_by(|&a, &b| meds[a].total_cmp(&meds[b])).expect("an MPI");
        let mut head = format!(
            "{:<12} {:<7} {:<9} {:>9} {:>9} {:>9} {:>9}",
            "mode", "channel", "launch", "median", "min", "disp md", "comb md"
        );
        for m in mpis {
            head += &format!(" | ox/{:<7}", m.name);
        }
        println!("{head} | ox/best MPI ({}) md, min/min, per round", mpis[best].name);
        let best_med = meds[best];
        let best_min = min(&mpi[best].iter().map(|x| x[1]).collect::<Vec<_>>());
        for ((mode, ch, how), v) in &ox {
            let col = |c: usize| v.iter().map(|x| x[c]).collect::<Vec<_>>();
            let med = median(&col(0));
            let mut line = format!(
                "{mode:<12} {ch:<7} {how:<9} {med:>9.1} {:>9.1} {:>9.1} {:>9.1}",
                min(&col(1)),
                median(&col(2)),
                median(&col(3))
            );
            for m in &meds {
                line += &format!(" | {:>10.2}", med / m);
            }
            let per: Vec<String> = v.iter().zip(&mpi[best]).map(|(a, b)| format!("{:.2}", a[0] / b[0])).collect();
            println!("{line} | {:.2}, {:.2}, [{}]", med / best_med, min(&col(1)) / best_min, per.join(" "));
        }
        for (k, m) in mpis.iter().enumerate() {
            let col = |c: usize| mpi[k].iter().map(|x| x[c]).collect::<Vec<_>>();
            println!(
                "{:<12} {:<7} {:<9} {:>9.1} {:>9.1} {:>9.1} {:>9.1}   (MPI_Alltoall + MPI_Alltoallv, both ways)",
                "MPI",
                m.name,
                "-",
                meds[k],
                min(&col(1)),
                median(&col(2)),
                median(&col(3))
            );
        }
        for (c, v) in &launch {
            println!("# empty kernel launch + synchronize ({c}): {:.1} us (median of the rounds' medians)", median(v));
        }
    }
}

/// A run measures one T.
fn one_t(o: Opts) -> Opts {
    if o.token_list.as_ref().is_some_and(|l| l.len() != 1) {
        usage("--tokens takes one T outside compare");
    }
    o
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| matches!(a.as_str(), "-h" | "--help" | "help")) {
        if oxshmem_benches::first_process() {
            print!("{USAGE}");
        }
        return;
    }
    match args.first().map(String::as_str) {
        Some("compare") => compare(&parse_opts(&args[1..])),
        Some("run") => run(&one_t(parse_opts(&args[1..]))),
        _ => run(&one_t(parse_opts(&args))),
    }
}
