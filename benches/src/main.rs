//! `shmem-bench`: the core micro-benchmarks, each beside a reference measured in the same run.
//!
//! Run under the launcher, e.g. `oshrun -n 2 target/release/shmem-bench all` (or one of
//! `put-lat get-lat put-bw msg-rate fadd-lat barrier coll`; `--help` lists them). With no
//! benchmark named it makes a quick run (`--quick`: 3 rounds, a tenth of the iterations) of
//! every benchmark the job's PE count allows (all of them at 2 PEs; the barrier and, from 2
//! PEs, the collectives at other counts). Every figure is measured in rounds that
//! alternate the reference and the subject (A B A B …), because on a shared 2-vCPU guest the
//! placement of the two processes flips every few seconds; each line gives min and median of
//! both and the ratio of the medians, under a header line naming the columns. Each reference
//! does the same work as its subject, with no runtime call on the path:
//! - `memcpy`: a single-process copy of the same size (data moved);
//! - `raw-store`: an 8-byte store into the peer's line through the shared mapping, then a
//!   store fence — what `put` + `quiet` of 8 bytes must do (it completes locally: no trip);
//! - `raw-load`: an 8-byte load of the peer's line through the mapping (what an 8-byte `get`
//!   must do);
//! - `raw-store rate`: back-to-back 8-byte stores into the peer's mapping over the same 64
//!   words, one fence at the end (what the `put_nbi` message rate must do);
//! - `raw-fadd`: a `lock xadd` on the peer's counter through the mapping;
//! - `raw-pp`: a raw cross-process store/flag ping-pong (its one-way time is what one
//!   cache-line transfer costs: the reference of operations that wait for another PE);
//! - `raw-barrier`: a raw dissemination barrier on plain stores through the mapping.
//!
//! `--csv FILE` also appends every line to FILE as CSV
//! (`table,operation,bytes,unit,min,median,reference,ref_min,ref_median,ratio,pes,machine,date`:
//! a [`Row`],
//! written by the `csv` crate through serde, with the header line when FILE is new or empty);
//! `benches/plot.py FILE` draws one SVG per table from it.

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use oxshmem::{Shmem, SymSlice};

/// Rounds of a full run (each alternates reference and subject).
const ROUNDS: usize = 7;
/// Rounds of a quick run.
const QUICK_ROUNDS: usize = 3;

/// Whether this is a quick run (`--quick`, or no benchmark named): [`QUICK_ROUNDS`] rounds and
/// a tenth of the iterations.
static QUICK: AtomicBool = AtomicBool::new(false);

fn rounds() -> usize {
    if QUICK.load(Ordering::Relaxed) { QUICK_ROUNDS } else { ROUNDS }
}

/// `n` iterations, or a tenth of them (at least `floor`) in a quick run.
fn scaled(n: usize, floor: usize) -> usize {
    if QUICK.load(Ordering::Relaxed) { (n / 10).max(floor).min(n) } else { n }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Prints the column-header line of a table of [`report`] lines, aligned with them: the
/// subject's min and median, the reference's min and median (both in the row's unit), and the
/// ratio of the medians.
fn header() {
    println!(
        "{:<28} {:>10} {:>10} {:<6} | {:<14} {:>10} {:>10} {:<6} | ratio of medians (subject / reference)",
        "operation", "min", "median", "unit", "reference", "min", "median", "unit"
    );
}

/// One line of the `--csv` file (the field names are its header line).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Row {
    /// The table's title up to its first `;`.
    table: String,
    operation: String,
    /// The operation's size: its last number followed by " B", if any (else an empty field).
    bytes: Option<usize>,
    unit: String,
    min: f64,
    median: f64,
    reference: String,
    ref_min: f64,
    ref_median: f64,
    /// Subject median / reference median.
    ratio: f64,
    /// PEs in the job.
    pes: usize,
    /// The machine ([`oxshmem_benches::machine`]).
    machine: String,
    /// The day of the run, UTC ([`oxshmem_benches::utc_date`]).
    date: String,
}

impl Row {
    /// The row of one [`report`] line of table `table`: (min, median) of the subject and of
    /// the reference, rounded to 6 decimals, and their ratio to 4.
    fn new(table: &str, what: &str, unit: &str, subj: (f64, f64), refname: &str, refv: (f64, f64)) -> Row {
        let round = |v: f64, digits: i32| {
            let scale = 10f64.powi(digits);
            (v * scale).round() / scale
        };
        Row {
            table: table.to_string(),
            operation: what.to_string(),
            bytes: what.strip_suffix(" B").and_then(|w| w.rsplit(' ').next()).and_then(|b| b.parse().ok()),
            unit: unit.to_string(),
            min: round(subj.0, 6),
            median: round(subj.1, 6),
            reference: refname.to_string(),
            ref_min: round(refv.0, 6),
            ref_median: round(refv.1, 6),
            ratio: round(subj.1 / refv.1, 4),
            pes: 0,
            machine: String::new(),
            date: String::new(),
        }
    }
}

/// The `--csv` file: rows are appended, after a header line if the file is empty.
struct CsvOut {
    w: csv::Writer<std::fs::File>,
    /// The current table's name.
    table: String,
    /// What every row says of the run: PEs, machine, date.
    run: (usize, String, String),
}

impl CsvOut {
    fn open(path: &std::path::Path, pes: usize) -> std::io::Result<CsvOut> {
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let empty = f.metadata()?.len() == 0;
        Ok(CsvOut {
            w: csv::WriterBuilder::new().has_headers(empty).from_writer(f),
            table: String::new(),
            run: (pes, oxshmem_benches::machine(), oxshmem_benches::utc_date()),
        })
    }

    /// Appends `row`, with the run's PEs, machine and date, and flushes it (the writer is a
    /// static's, never dropped, and a benchmark may exit early).
    fn write(&mut self, row: &Row) -> csv::Result<()> {
        let mut row = row.clone();
        (row.pes, row.machine, row.date) = self.run.clone();
        self.w.serialize(row)?;
        Ok(self.w.flush()?)
    }
}

/// `--csv FILE`: where every [`report`] line also goes.
static CSV: Mutex<Option<CsvOut>> = Mutex::new(None);

/// Starts a table: prints its title line (`# ...`) and names it for the CSV.
fn table(title: &str) {
    println!("# {title}");
    if let Some(c) = CSV.lock().unwrap().as_mut() {
        c.table = title.split(';').next().unwrap_or(title).trim().to_string();
    }
}

/// Prints one line: subject and reference, min/median, ratio of medians.
fn report(what: &str, unit: &str, subj: &mut [f64], refname: &str, refv: &mut [f64], lower_is_better: bool) {
    let (sm, rm) = (median(subj), median(refv));
    let ratio = sm / rm;
    if let Some(c) = CSV.lock().unwrap().as_mut() {
        let row = Row::new(&c.table, what, unit, (min(subj), sm), refname, (min(refv), rm));
        c.write(&row).expect("writing the CSV file");
    }
    println!(
        "{what:<28} {:>10.4} {:>10.4} {unit:<6} | {refname:<14} {:>10.4} {:>10.4} {unit:<6} | ratio {:>6.2}{}",
        min(subj),
        sm,
        min(refv),
        rm,
        ratio,
        if lower_is_better { " (lower is better)" } else { " (higher is better)" }
    );
}

/// Both PEs run `f` in lock step; returns seconds per iteration on this PE.
fn timed(shmem: &Shmem, iters: usize, mut f: impl FnMut(usize)) -> f64 {
    shmem.barrier_all().unwrap();
    let t = Instant::now();
    for i in 0..iters {
        f(i);
    }
    let s = t.elapsed().as_secs_f64() / iters as f64;
    shmem.barrier_all().unwrap();
    s
}

fn iters_for(size: usize) -> usize {
    scaled((20_000_000 / (size + 256)).clamp(20, 200_000), 20)
}

const SIZES: &[usize] = &[8, 64, 512, 4096, 32768, 262144, 1 << 20];

/// Raw cross-process ping-pong through the mapping: PE 0 stores i into PE 1's flag, PE 1
/// waits for it and stores i back. Returns one-way seconds.
fn raw_pingpong(shmem: &Shmem, flags: &SymSlice<u64>, iters: usize) -> f64 {
    let me = shmem.my_pe();
    if me > 1 {
        // Only PEs 0 and 1 play; the others keep the barriers in step.
        shmem.barrier_all().unwrap();
        shmem.barrier_all().unwrap();
        return f64::NAN;
    }
    let peer = 1 - me;
    let theirs = flags.remote_ptr(peer).unwrap();
    // SAFETY: both pointers are to live, aligned u64 elements of a symmetric object, accessed
    // only atomically by both PEs.
    let (mine, theirs) = unsafe { (AtomicU64::from_ptr(flags.as_ptr()), AtomicU64::from_ptr(theirs)) };
    let base = mine.load(Ordering::Acquire).max(theirs.load(Ordering::Acquire));
    shmem.barrier_all().unwrap();
    let t = Instant::now();
    for i in 1..=iters as u64 {
        let v = base + i;
        if me == 0 {
            theirs.store(v, Ordering::Release);
            while mine.load(Ordering::Acquire) < v {
                std::hint::spin_loop();
            }
        } else {
            while mine.load(Ordering::Acquire) < v {
                std::hint::spin_loop();
            }
            theirs.store(v, Ordering::Release);
        }
    }
    let s = t.elapsed().as_secs_f64() / iters as f64 / 2.0;
    shmem.barrier_all().unwrap();
    s
}

/// The peer's flag word 1 (not the ping-pong's word 0) through the mapping, as an atomic.
fn peer_word(flags: &SymSlice<u64>, peer: usize) -> &AtomicU64 {
    let p = flags.remote_ptr(peer).unwrap();
    // SAFETY: element 1 of a live symmetric slice of 264 u64 (aligned), accessed only
    // atomically, and only by these raw references.
    unsafe { AtomicU64::from_ptr(p.add(1)) }
}

/// `raw-store`: PE 0 stores 8 bytes into PE 1's line through the mapping and fences, as
/// `put` + `quiet` of 8 bytes must. Seconds per store (NaN on other PEs).
fn raw_store(shmem: &Shmem, flags: &SymSlice<u64>, iters: usize) -> f64 {
    let me = shmem.my_pe();
    let w = peer_word(flags, 1 - me.min(1));
    timed(shmem, iters, |i| {
        if me == 0 {
            w.store(i as u64, Ordering::Relaxed);
            std::sync::atomic::fence(Ordering::SeqCst);
        }
    })
}

/// `raw-load`: PE 0 loads 8 bytes of PE 1's line through the mapping, as an 8-byte `get` must.
fn raw_load(shmem: &Shmem, flags: &SymSlice<u64>, iters: usize) -> f64 {
    let me = shmem.my_pe();
    let w = peer_word(flags, 1 - me.min(1));
    timed(shmem, iters, |_| {
        if me == 0 {
            black_box(w.load(Ordering::Acquire));
        }
    })
}

/// `raw-store rate`: PE 0's back-to-back 8-byte stores over 64 words of PE 1's mapping, one
/// fence at the end; stores per second.
fn raw_store_rate(shmem: &Shmem, words: &SymSlice<u64>, iters: usize) -> f64 {
    let me = shmem.my_pe();
    let base = words.remote_ptr(1 - me.min(1)).unwrap();
    let s = timed(shmem, 1, |_| {
        if me == 0 {
            for i in 0..iters {
                // SAFETY: element i % 64 of a live symmetric slice of 64 u64 (aligned),
                // written only by this PE during the measurement.
                unsafe { base.add(i & 63).write_volatile(i as u64) };
            }
            std::sync::atomic::fence(Ordering::SeqCst);
        }
    });
    iters as f64 / s
}

/// `raw-fadd`: PE 0's `fetch_add` on PE 1's counter through the mapping.
fn raw_fadd(shmem: &Shmem, flags: &SymSlice<u64>, iters: usize) -> f64 {
    let me = shmem.my_pe();
    let w = peer_word(flags, 1 - me.min(1));
    timed(shmem, iters, |_| {
        if me == 0 {
            black_box(w.fetch_add(1, Ordering::AcqRel));
        }
    })
}

/// A single-process copy of `size` bytes: the reference for data moved between PEs. Source
/// and destination are placed half a page apart modulo 4 KiB: buffers that sit a few bytes past
/// a 4 KiB multiple from each other make every load wait on a store to an aliasing address, and
/// memcpy then runs 13-32x slower here (what the reference measured between 4 and 256 KiB).
fn memcpy_time(size: usize, iters: usize) -> f64 {
    const PAGE: usize = 4096;
    let span = size.next_multiple_of(PAGE);
    let mut arena = vec![0u8; 2 * span + 3 * PAGE];
    let src_off = arena.as_ptr().align_offset(PAGE);
    let dst_off = src_off + span + PAGE / 2;
    assert!(dst_off + size <= arena.len(), "the arena holds both buffers");
    assert_eq!((dst_off - src_off) % PAGE, PAGE / 2, "source and destination do not alias");
    arena[src_off..src_off + size].fill(1);
    // Both pointers come from one raw pointer to the whole arena.
    let base = arena.as_mut_ptr();
    // SAFETY: both offsets are inside the arena (asserted above).
    let (src, dst) = unsafe { (base.add(src_off).cast_const(), base.add(dst_off)) };
    let copy = || {
        // SAFETY: both ranges lie inside `arena` (asserted above) and do not overlap (the
        // destination starts a page and a half past the source's rounded-up end).
        unsafe { std::ptr::copy_nonoverlapping(black_box(src), black_box(dst), size) }
    };
    // Touch the destination first, as the subject's destination is touched by earlier rounds.
    copy();
    let t = Instant::now();
    for _ in 0..iters {
        copy();
    }
    black_box(&mut arena);
    t.elapsed().as_secs_f64() / iters as f64
}

fn put_lat(shmem: &Shmem, flags: &SymSlice<u64>) {
    let me = shmem.my_pe();
    let buf = shmem.alloc_slice(1 << 20, 0u8).unwrap();
    let src = vec![7u8; 1 << 20];
    if me == 0 {
        table(
            "put latency (put + quiet, PE 0 -> PE 1), us; reference: raw-store = an 8 B store into the peer's mapping + fence (8 B), memcpy of the size (others)",
        );
        header();
    }
    for &size in SIZES {
        let iters = iters_for(size);
        let (mut s, mut r) = (Vec::new(), Vec::new());
        for _ in 0..rounds() {
            let rv = if size == 8 { raw_store(shmem, flags, iters) } else { memcpy_time(size, iters) };
            r.push(rv * 1e6);
            let sv = timed(shmem, iters, |_| {
                if me == 0 {
                    buf.put(0, &src[..size], 1).unwrap();
                    shmem.quiet().unwrap();
                }
            });
            s.push(sv * 1e6);
        }
        if me == 0 {
            report(
                &format!("put {size} B"),
                "us",
                &mut s,
                if size == 8 { "raw-store" } else { "memcpy" },
                &mut r,
                true,
            );
        }
    }
}

fn get_lat(shmem: &Shmem, flags: &SymSlice<u64>) {
    let me = shmem.my_pe();
    let buf = shmem.alloc_slice(1 << 20, 3u8).unwrap();
    let mut dst = vec![0u8; 1 << 20];
    if me == 0 {
        table(
            "get latency (PE 0 <- PE 1), us; reference: raw-load = an 8 B load from the peer's mapping (8 B), memcpy of the size (others)",
        );
        header();
    }
    for &size in SIZES {
        let iters = iters_for(size);
        let (mut s, mut r) = (Vec::new(), Vec::new());
        for _ in 0..rounds() {
            let rv = if size == 8 { raw_load(shmem, flags, iters) } else { memcpy_time(size, iters) };
            r.push(rv * 1e6);
            let sv = timed(shmem, iters, |_| {
                if me == 0 {
                    buf.get(0, &mut dst[..size], 1).unwrap();
                    black_box(&mut dst);
                }
            });
            s.push(sv * 1e6);
        }
        if me == 0 {
            report(&format!("get {size} B"), "us", &mut s, if size == 8 { "raw-load" } else { "memcpy" }, &mut r, true);
        }
    }
}

fn put_bw(shmem: &Shmem) {
    let me = shmem.my_pe();
    let buf = shmem.alloc_slice(1 << 20, 0u8).unwrap();
    let src = vec![7u8; 1 << 20];
    if me == 0 {
        table("put bandwidth (put_nbi x N + quiet, PE 0 -> PE 1), GB/s; reference: memcpy of the same size");
        header();
    }
    for &size in SIZES {
        let iters = iters_for(size);
        let (mut s, mut r) = (Vec::new(), Vec::new());
        for _ in 0..rounds() {
            r.push(size as f64 / memcpy_time(size, iters) / 1e9);
            let sv = timed(shmem, 1, |_| {
                if me == 0 {
                    for _ in 0..iters {
                        buf.put_nbi(0, &src[..size], 1).unwrap();
                    }
                    shmem.quiet().unwrap();
                }
            });
            s.push(size as f64 / (sv / iters as f64) / 1e9);
        }
        if me == 0 {
            report(&format!("put bw {size} B"), "GB/s", &mut s, "memcpy", &mut r, false);
        }
    }
}

fn msg_rate(shmem: &Shmem) {
    let me = shmem.my_pe();
    let buf = shmem.alloc_slice(64, 0u64).unwrap();
    if me == 0 {
        table(
            "message rate (8 B put_nbi over 64 words + one quiet, PE 0 -> PE 1), Mmsg/s; reference: raw-store rate = the same stores through the mapping, one fence",
        );
        header();
    }
    let iters = scaled(1_000_000, 10_000);
    let (mut s, mut r) = (Vec::new(), Vec::new());
    for _ in 0..rounds() {
        r.push(raw_store_rate(shmem, &buf, iters) / 1e6);
        let sv = timed(shmem, 1, |_| {
            if me == 0 {
                for i in 0..iters {
                    buf.put_nbi(i & 63, &[i as u64], 1).unwrap();
                }
                shmem.quiet().unwrap();
            }
        });
        s.push(iters as f64 / sv / 1e6);
    }
    if me == 0 {
        report("put_nbi 8 B rate", "Mmsg/s", &mut s, "raw-store rate", &mut r, false);
    }
}

fn fadd_lat(shmem: &Shmem, flags: &SymSlice<u64>) {
    let me = shmem.my_pe();
    let ctr = shmem.alloc(0u64).unwrap();
    if me == 0 {
        table(
            "fetch-add latency (PE 0 on PE 1's counter), us; reference: raw-fadd = lock xadd on the peer's counter through the mapping",
        );
        header();
    }
    let iters = scaled(200_000, 1000);
    let (mut s, mut r) = (Vec::new(), Vec::new());
    for _ in 0..rounds() {
        r.push(raw_fadd(shmem, flags, iters) * 1e6);
        let sv = timed(shmem, iters, |_| {
            if me == 0 {
                black_box(ctr.fetch_add(1, 1).unwrap());
            }
        });
        s.push(sv * 1e6);
    }
    if me == 0 {
        report("fetch_add u64", "us", &mut s, "raw-fadd", &mut r, true);
    }
}

/// Epoch of the raw barrier; every PE runs the same number of raw barriers, so it is the same
/// on every PE.
static RAW_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Raw dissemination barrier among all PEs of the job on plain stores through the mapping (no
/// runtime call): what a barrier costs at the hardware's speed.
fn raw_barrier(shmem: &Shmem, flags: &SymSlice<u64>, iters: usize) -> f64 {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let rounds = n.next_power_of_two().trailing_zeros() as usize;
    shmem.barrier_all().unwrap();
    let t = Instant::now();
    for _ in 0..iters {
        let epoch = RAW_EPOCH.fetch_add(1, Ordering::Relaxed) + 1;
        for k in 0..rounds {
            let to = (me + (1 << k)) % n;
            let p = flags.remote_ptr(to).unwrap();
            // SAFETY: flags 8 + 8k are live, aligned u64 elements of a symmetric object (one
            // cache line per round), accessed only atomically.
            let (theirs, mine) =
                unsafe { (AtomicU64::from_ptr(p.add(8 + 8 * k)), AtomicU64::from_ptr(flags.as_ptr().add(8 + 8 * k))) };
            theirs.store(epoch, Ordering::Release);
            let mut spins = 0u32;
            while mine.load(Ordering::Acquire) < epoch {
                spins += 1;
                if spins > 1000 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
    let s = t.elapsed().as_secs_f64() / iters as f64;
    shmem.barrier_all().unwrap();
    s
}

fn barrier(shmem: &Shmem, flags: &SymSlice<u64>) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    if me == 0 {
        table(&format!("barrier_all latency, {n} PEs, us; reference: raw dissemination barrier on plain stores"));
        header();
    }
    let iters = scaled(if n <= 2 { 200_000 } else { 5_000 }, 200);
    let (mut s, mut r) = (Vec::new(), Vec::new());
    for _ in 0..rounds() {
        r.push(raw_barrier(shmem, flags, iters) * 1e6);
        s.push(timed(shmem, iters, |_| shmem.barrier_all().unwrap()) * 1e6);
    }
    if me == 0 {
        report(&format!("barrier_all {n} PEs"), "us", &mut s, "raw-barrier", &mut r, true);
    }
    if n == 2 {
        let mut pp: Vec<f64> = (0..rounds()).map(|_| raw_pingpong(shmem, flags, scaled(20000, 1000)) * 1e6).collect();
        if me == 0 {
            let one_way = median(&mut pp);
            println!(
                "barrier_all 2 PEs / raw one-way cache-line trip ({one_way:.3} us): {:.2}",
                median(&mut s) / one_way
            );
        }
    }
}

/// Collectives on the world team, 8 B to 1 MiB, each beside a same-run reference: the raw
/// one-way cache-line trip for messages up to 4 KiB, a memcpy of the message size above.
fn coll(shmem: &Shmem, flags: &SymSlice<u64>) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let max = 1 << 20;
    let src = shmem.alloc_slice(max * n / 8, 1u64).unwrap();
    let dst = shmem.alloc_slice(max * n / 8, 0u64).unwrap();
    if me == 0 {
        table(&format!(
            "collectives on {n} PEs, us per call (PE 0's view); reference: raw one-way cache-line trip (<= 4 KiB: a collective waits for its peers), or a memcpy of what each PE's destination receives (size; n*size for collect/fcollect, whose size is each PE's contribution)"
        ));
        header();
    }
    let sizes: &[usize] = &[8, 64, 512, 4096, 32768, 262144, 1 << 20];
    let ops: &[&str] = &["barrier", "broadcast", "reduce", "collect", "fcollect", "alltoall"];
    for &op in ops {
        for &size in sizes {
            if op == "barrier" && size > 8 {
                continue;
            }
            let elems = (size / 8).max(1);
            let iters = scaled((2_000_000 / (size * n + 2048)).clamp(10, 20_000), 10);
            let (mut s, mut r) = (Vec::new(), Vec::new());
            for _ in 0..rounds() {
                // collect/fcollect: every PE's destination receives n contributions of `size`.
                let moved = if matches!(op, "collect" | "fcollect") { size * n } else { size };
                let rv =
                    if size <= 4096 { raw_pingpong(shmem, flags, scaled(5000, 500)) } else { memcpy_time(moved, 20) };
                r.push(rv * 1e6);
                let sv = timed(shmem, iters, |_| match op {
                    "barrier" => shmem.barrier_all().unwrap(),
                    "broadcast" => world.broadcast(&dst, &src, elems, 0).unwrap(),
                    "reduce" => world.sum_reduce(&dst, &src, elems).unwrap(),
                    "collect" => {
                        world.collect(&dst, &src, elems).unwrap();
                    }
                    "fcollect" => world.fcollect(&dst, &src, elems).unwrap(),
                    "alltoall" => world.alltoall(&dst, &src, elems.div_ceil(n).max(1)).unwrap(),
                    _ => unreachable!(),
                });
                s.push(sv * 1e6);
            }
            if me == 0 {
                let refname = match (size <= 4096, op) {
                    (true, _) => "raw-pp 1-way",
                    (false, "collect" | "fcollect") => "memcpy n*size",
                    _ => "memcpy",
                };
                report(&format!("{op} {size} B"), "us", &mut s, refname, &mut r, true);
            }
        }
    }
}

const USAGE: &str = "\
Usage: oshrun -n N shmem-bench [BENCHMARK] [--quick] [--csv FILE]

oxshmem's micro-benchmarks: every line gives min and median of the subject and of a reference
doing the same work in the same run (each table's title names it), and the ratio of medians.

BENCHMARK (none: a quick run of every one the job's PE count allows, under a minute):
  put-lat, get-lat   put + quiet / get, 8 B to 1 MiB, PE 0 -> PE 1      (2 PEs)
  put-bw, msg-rate   put_nbi bandwidth and 8 B message rate             (2 PEs)
  fadd-lat           remote fetch-and-add                               (2 PEs)
  barrier            barrier_all                                        (any PE count)
  coll               barrier, broadcast, reduce, collect, fcollect,
                     alltoall, 8 B to 1 MiB                             (2 PEs or more)
  all                the five 2-PE benchmarks and barrier               (2 PEs)

Options:
  --quick      3 rounds instead of 7 and a tenth of the iterations
  --csv FILE   also append every line to FILE as CSV (python3 benches/plot.py FILE DIR draws it)
  -h, --help   print this text

Examples:
  oshrun -n 2 target/release/shmem-bench
  oshrun -n 2 target/release/shmem-bench all --csv target/bench.csv
  oshrun -n 4 target/release/shmem-bench coll --quick
";

/// The benchmarks, with the PE counts they run at.
const BENCHMARKS: &[(&str, Need)] = &[
    ("put-lat", Need::Two),
    ("get-lat", Need::Two),
    ("put-bw", Need::Two),
    ("msg-rate", Need::Two),
    ("fadd-lat", Need::Two),
    ("barrier", Need::Any),
    ("coll", Need::TwoOrMore),
];

/// The PE counts a benchmark runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Two,
    TwoOrMore,
    Any,
}

impl Need {
    fn fits(self, n: usize) -> bool {
        match self {
            Need::Two => n == 2,
            Need::TwoOrMore => n >= 2,
            Need::Any => true,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Need::Two => "exactly 2 PEs",
            Need::TwoOrMore => "2 PEs or more",
            Need::Any => "any number of PEs",
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Args {
    /// The benchmark named (`None`: the quick default).
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
            name if name == "all" || BENCHMARKS.iter().any(|(b, _)| *b == name) => {
                if let Some(first) = &a.which {
                    return Err(format!("one benchmark at a time ({first:?}, then {name:?}); \"all\" runs several"));
                }
                a.which = Some(name.to_string());
            }
            other => return Err(format!("unknown benchmark {other:?}")),
        }
    }
    Ok(a)
}

/// The benchmarks a run makes at `n` PEs: the one named, or `all`'s, or (none named) every one
/// that runs at `n` PEs.
fn plan(which: Option<&str>, n: usize) -> Result<Vec<&'static str>, String> {
    let all: Vec<&'static str> =
        BENCHMARKS.iter().filter(|(_, need)| *need != Need::TwoOrMore).map(|(b, _)| *b).collect();
    match which {
        None => Ok(BENCHMARKS.iter().filter(|(_, need)| need.fits(n)).map(|(b, _)| *b).collect()),
        Some("all") if n == 2 => Ok(all),
        Some("all") => Err(format!(
            "all needs exactly 2 PEs (this job has {n}): oshrun -n 2 shmem-bench all, or no benchmark named for what {n} PEs allow"
        )),
        Some(name) => {
            let (b, need) = BENCHMARKS.iter().find(|(b, _)| *b == name).ok_or(format!("unknown benchmark {name:?}"))?;
            if need.fits(n) {
                Ok(vec![*b])
            } else {
                Err(format!("{b} needs {} (this job has {n}): oshrun -n 2 shmem-bench {b}", need.text()))
            }
        }
    }
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
                eprintln!("shmem-bench: {e}\n(shmem-bench --help lists the benchmarks and options)");
            }
            std::process::exit(2);
        }
    };
    QUICK.store(args.quick || args.which.is_none(), Ordering::Relaxed);
    let shmem = oxshmem::init().expect("init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let plan = match plan(args.which.as_deref(), n) {
        Ok(p) => p,
        Err(e) => {
            if me == 0 {
                eprintln!("shmem-bench: {e}");
            }
            shmem.finalize().expect("finalize");
            std::process::exit(2);
        }
    };
    if let Some(path) = &args.csv
        && me == 0
    {
        let out = CsvOut::open(path.as_ref(), n).unwrap_or_else(|e| {
            eprintln!("--csv {path}: {e}");
            std::process::exit(2);
        });
        *CSV.lock().unwrap() = Some(out);
    }
    if me == 0 {
        let quick = if QUICK.load(Ordering::Relaxed) { "quick run" } else { "full run" };
        let skipped: Vec<String> = BENCHMARKS
            .iter()
            .filter(|(b, need)| args.which.is_none() && !plan.contains(b) && !need.fits(n))
            .map(|(b, need)| format!("{b} ({})", need.text()))
            .collect();
        eprintln!(
            "shmem-bench: {quick} ({} rounds) of {} on {n} PEs{}",
            rounds(),
            plan.join(", "),
            if skipped.is_empty() { String::new() } else { format!("; not at this PE count: {}", skipped.join(", ")) }
        );
    }
    // flags[0]: ping-pong flag; flags[8..]: raw barrier rounds (one cache line each).
    let flags = shmem.alloc_slice(8 + 8 * 32, 0u64).unwrap();
    let start = Instant::now();
    for (i, name) in plan.iter().enumerate() {
        if me == 0 && plan.len() > 1 {
            eprintln!("shmem-bench: [{}/{}] {name} ({:.0} s so far)", i + 1, plan.len(), start.elapsed().as_secs_f64());
        }
        match *name {
            "put-lat" => put_lat(&shmem, &flags),
            "get-lat" => get_lat(&shmem, &flags),
            "put-bw" => put_bw(&shmem),
            "msg-rate" => msg_rate(&shmem),
            "fadd-lat" => fadd_lat(&shmem, &flags),
            "barrier" => barrier(&shmem, &flags),
            "coll" => coll(&shmem, &flags),
            other => unreachable!("plan() names only known benchmarks, not {other}"),
        }
    }
    if me == 0 {
        eprintln!("shmem-bench: done in {:.0} s", start.elapsed().as_secs_f64());
    }
    drop(flags);
    shmem.finalize().unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("shmem-bench-{}-{tag}.csv", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments() {
        assert_eq!(parse_args(&[]), Ok(Args::default()));
        let a = parse_args(&strings(&["coll", "--quick", "--csv", "x.csv"])).unwrap();
        assert_eq!((a.which.as_deref(), a.quick, a.csv.as_deref()), (Some("coll"), true, Some("x.csv")));
        assert_eq!(parse_args(&strings(&["--csv", "x.csv", "put-lat"])).unwrap().which.as_deref(), Some("put-lat"));
        assert!(parse_args(&strings(&["--help"])).unwrap().help);
        assert!(parse_args(&strings(&["-h"])).unwrap().help);
        assert_eq!(parse_args(&strings(&["nope"])), Err("unknown benchmark \"nope\"".into()));
        assert_eq!(parse_args(&strings(&["--fast"])), Err("unknown option \"--fast\"".into()));
        assert!(parse_args(&strings(&["--csv"])).is_err());
        assert!(parse_args(&strings(&["barrier", "coll"])).is_err());
    }

    /// The default fits every PE count; a benchmark named at a count it cannot run at says
    /// which count it needs.
    #[test]
    fn plans() {
        let two = ["put-lat", "get-lat", "put-bw", "msg-rate", "fadd-lat", "barrier"];
        assert_eq!(plan(None, 1).unwrap(), ["barrier"]);
        assert_eq!(plan(None, 2).unwrap(), [&two[..], &["coll"]].concat());
        assert_eq!(plan(None, 4).unwrap(), ["barrier", "coll"]);
        assert_eq!(plan(Some("all"), 2).unwrap(), two);
        assert!(plan(Some("all"), 4).unwrap_err().contains("all needs exactly 2 PEs (this job has 4)"));
        assert!(plan(Some("put-lat"), 1).unwrap_err().contains("put-lat needs exactly 2 PEs"));
        assert!(plan(Some("coll"), 1).unwrap_err().contains("coll needs 2 PEs or more"));
        assert_eq!(plan(Some("coll"), 8).unwrap(), ["coll"]);
        assert_eq!(plan(Some("barrier"), 1).unwrap(), ["barrier"]);
    }

    #[test]
    fn row_fields() {
        let r = Row::new("Put latency", "put 4096 B", "us", (1.23456789, 2.0), "raw-store", (0.5, 1.0));
        assert_eq!(r.bytes, Some(4096));
        assert_eq!((r.min, r.median, r.ref_min, r.ref_median, r.ratio), (1.234568, 2.0, 0.5, 1.0, 2.0));
        assert_eq!(Row::new("t", "barrier", "us", (1.0, 1.0), "raw-barrier", (3.0, 3.0)).ratio, 0.3333);
        assert_eq!(Row::new("t", "barrier", "us", (1.0, 1.0), "raw-barrier", (1.0, 1.0)).bytes, None);
        assert_eq!(Row::new("t", "put 8 KiB", "us", (1.0, 1.0), "r", (1.0, 1.0)).bytes, None);
    }

    /// The header once, at the top of a new file; rows appended by a later run; fields with a
    /// comma quoted; read back as written.
    #[test]
    fn csv_file() {
        let path = temp("file");
        let rows = [
            Row::new("Put latency, 2 PEs", "put 8 B", "us", (0.25, 0.5), "raw-store", (0.125, 0.25)),
            Row::new("Barrier", "barrier", "us", (3.0, 4.0), "raw-barrier", (1.0, 2.0)),
        ];
        let mut out = CsvOut::open(&path, 2).unwrap();
        out.run = (2, "vm: AMD EPYC, 2 CPUs".into(), "2026-12-07".into());
        out.write(&rows[0]).unwrap();
        drop(out);
        let mut out = CsvOut::open(&path, 4).unwrap();
        out.run = (4, "vm: AMD EPYC, 2 CPUs".into(), "2026-12-08".into());
        out.write(&rows[1]).unwrap();
        drop(out);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "table,operation,bytes,unit,min,median,reference,ref_min,ref_median,ratio,pes,machine,date",
                "\"Put latency, 2 PEs\",put 8 B,8,us,0.25,0.5,raw-store,0.125,0.25,2.0,2,\"vm: AMD EPYC, 2 CPUs\",2026-12-07",
                "Barrier,barrier,,us,3.0,4.0,raw-barrier,1.0,2.0,2.0,4,\"vm: AMD EPYC, 2 CPUs\",2026-12-08",
            ]
        );
        let back: Vec<Row> = csv::Reader::from_path(&path).unwrap().deserialize().collect::<Result<_, _>>().unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].operation.as_str(), back[0].pes, back[0].date.as_str()), ("put 8 B", 2, "2026-12-07"));
        assert_eq!((back[1].median, back[1].pes, back[1].machine.as_str()), (4.0, 4, "vm: AMD EPYC, 2 CPUs"));
        let _ = std::fs::remove_file(&path);
    }
}
