//! PE program for MoE dispatch/combine (`oxshmem_moe`):
//! `pe-moe run <throughput|low-latency> <threads> <resident|per-call> <spec>...` (device
//! threads per kernel, 0 for the default; kernels on the buffer's resident kernel or one
//! launch per call).
//!
//! A spec is `T:E:K:H:SEED:SCENARIO:RAGGED:ITERS` — at most T tokens per PE of H bytes, E
//! experts, top-K, the routing scenario of `moe::reference` (`random`, `same-pe`, `zero-pe`,
//! `masked`), RAGGED 1 for uneven token counts per PE, and ITERS dispatch/combine rounds on one
//! buffer (round i uses seed SEED + i). The channel comes from `OXSHMEM_DEVICE_CHANNEL`, and
//! every peer is checked to use it.
//!
//! Each round checks, on every PE: that each local expert received exactly the (source,
//! token) pairs the routing of all PEs sends it, each with the source's exact values; the
//! per-expert and per-source counts; and every bit of the combined output against the serial
//! computation (`Problem::expected_output`). It prints `PE p: spec s iter i digest D` (the
//! digest the MPI reference prints for the same round) and, at the end, `PE p: moe ok`.
//!
//! `pe-moe errors`: bad configurations and bad routing are errors naming the PE and the
//! problem, returned before anything is sent (every PE makes the same bad call, so nobody is
//! left waiting); the buffer still works afterwards. Prints `PE p: moe errors ok`.

use std::collections::BTreeSet;

use oxshmem_device::Device;
use oxshmem_moe::{Buffer, Dispatched, Mode, MoeConfig, reference};
use oxshmem_tests::pe::{check_eq, dispatch, fail, finish, init};

fn main() {
    dispatch("pe-moe", &[("run", run), ("errors", errors)]);
}

/// A parsed spec.
struct Spec {
    problem: reference::Problem,
    hidden_bytes: usize,
    iters: usize,
}

fn parse_spec(s: &str, npes: usize) -> Spec {
    let f: Vec<&str> = s.split(':').collect();
    if f.len() != 8 {
        fail(format_args!("spec {s:?}: expected T:E:K:H:SEED:SCENARIO:RAGGED:ITERS"));
    }
    let num = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| fail(format_args!("spec {s:?}: field {i}"))) };
    let scenario = reference::Scenario::from_name(f[5]).unwrap_or_else(|| fail(format_args!("spec {s:?}: scenario")));
    let hidden_bytes = num(3) as usize;
    Spec {
        problem: reference::Problem {
            seed: num(4),
            tokens: num(0) as usize,
            hidden: hidden_bytes / 4,
            topk: num(2) as usize,
            experts: num(1) as usize,
            npes,
            scenario,
            ragged: num(6) != 0,
        },
        hidden_bytes,
        iters: num(7) as usize,
    }
}

fn run(args: &[String]) {
    if args.len() < 4 {
        fail("usage: pe-moe run <mode> <threads> <resident|per-call> <spec>...");
    }
    let mode = Mode::from_name(&args[0]).unwrap_or_else(|| fail(format_args!("unknown mode {:?}", args[0])));
    let threads: usize = args[1].parse().unwrap_or_else(|_| fail("threads"));
    let launch_per_call = match args[2].as_str() {
        "resident" => false,
        "per-call" => true,
        other => fail(format_args!("launch {other:?}: resident or per-call")),
    };
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let ch = std::env::var("OXSHMEM_DEVICE_CHANNEL").unwrap_or_default();
    let dev = Device::init(&shmem).unwrap_or_else(|e| fail(format_args!("Device::init: {e}")));
    for pe in 0..n {
        check_eq(format!("channel of PE {pe}"), Some(ch.as_str()), dev.channel_of(pe).map(|k| k.name()));
    }
    for (si, spec) in args[3..].iter().enumerate() {
        let Spec { problem, hidden_bytes, iters } = parse_spec(spec, n);
        let cfg = MoeConfig {
            tokens: problem.tokens,
            hidden_bytes,
            topk: problem.topk,
            experts: problem.experts,
            mode,
            threads,
            launch_per_call,
        };
        let mut buf = Buffer::new(&shmem, &dev, cfg).unwrap_or_else(|e| fail(format_args!("Buffer::new: {e}")));
        for it in 0..iters {
            let p = reference::Problem { seed: problem.seed + it as u64, ..problem };
            let what = format!("spec {si} ({spec}) iter {it}, {} {ch}", mode.name());
            round(&p, me, mode, &mut buf, &what);
            let out = last_output(&p, me, mode, &mut buf, &what);
            println!("PE {me}: spec {si} iter {it} digest {:016x}", reference::digest(&out));
        }
        buf.free().unwrap_or_else(|e| fail(format_args!("Buffer::free: {e}")));
    }
    dev.finalize().unwrap_or_else(|e| fail(format_args!("Device::finalize: {e}")));
    println!("PE {me}: moe ok ({}, {ch})", mode.name());
    finish(shmem);
}

/// One dispatch/combine round with every check; the tokens go through `dispatch` (a copy).
fn round(p: &reference::Problem, me: usize, mode: Mode, buf: &mut Buffer, what: &str) {
    let x = p.tokens_of(me);
    let (idx, w) = p.routing(me);
    let d = buf.dispatch(&x, &idx, &w).unwrap_or_else(|e| fail(format_args!("{what}: dispatch: {e}")));
    check_received(p, me, mode, &d, what);
    let out = d
        .apply_experts(|row, x, y| reference::expert(row.expert, x, y))
        .combine()
        .unwrap_or_else(|e| fail(format_args!("{what}: combine: {e}")));
    check_output(p, me, out, what);
}

/// The same round again, with the tokens written in place (`dispatch_in_place`); returns the
/// output for the digest.
fn last_output(p: &reference::Problem, me: usize, mode: Mode, buf: &mut Buffer, what: &str) -> Vec<f32> {
    let x = p.tokens_of(me);
    let (idx, w) = p.routing(me);
    buf.tokens_mut()[..x.len()].copy_from_slice(&x);
    let d = buf
        .dispatch_in_place(p.tokens_on(me), &idx, &w)
        .unwrap_or_else(|e| fail(format_args!("{what}: dispatch_in_place: {e}")));
    check_received(p, me, mode, &d, what);
    let out = d
        .apply_experts(|row, x, y| reference::expert(row.expert, x, y))
        .combine()
        .unwrap_or_else(|e| fail(format_args!("{what}: combine (in place): {e}")));
    check_output(p, me, out, what);
    out.to_vec()
}

/// Every local expert got exactly its (source, token) pairs, with the source's values.
fn check_received(p: &reference::Problem, me: usize, mode: Mode, d: &Dispatched<'_>, what: &str) {
    let mut got = Vec::new();
    let mut want_x = vec![0.0f32; p.hidden];
    d.for_each_row(|row, x| {
        if !d.local_experts().contains(&row.expert) {
            fail(format_args!("{what}: received a row for expert {} on PE {me}", row.expert));
        }
        p.token(row.src_pe, row.src_token, &mut want_x);
        if let Some(h) = (0..p.hidden).find(|&h| x[h].to_bits() != want_x[h].to_bits()) {
            fail(format_args!(
                "{what}: token {} of PE {} at expert {}: value {h} is {}, expected {}",
                row.src_token, row.src_pe, row.expert, x[h], want_x[h]
            ));
        }
        got.push((row.expert, row.src_pe, row.src_token));
    });
    got.sort_unstable();
    let want = p.expected_rows(me);
    if got != want {
        let first = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)).unwrap_or(0);
        fail(format_args!(
            "{what}: received (expert, source, token) pairs differ at #{first}: got {:?}, expected {:?} ({} vs {} pairs)",
            got.get(first),
            want.get(first),
            got.len(),
            want.len()
        ));
    }
    let epp = p.experts_per_pe();
    let per_expert: Vec<usize> = (0..epp).map(|l| want.iter().filter(|r| r.0 == me * epp + l).count()).collect();
    check_eq(format!("{what}: tokens_per_expert"), per_expert, d.tokens_per_expert());
    let from = d.rows_from();
    check_eq(format!("{what}: rows_from has one entry per PE"), p.npes, from.len());
    for (src, &rows) in from.iter().enumerate() {
        let from_src = want.iter().filter(|r| r.1 == src);
        // Throughput mode sends a token once per PE; low latency once per expert.
        let expected = match mode {
            Mode::Throughput => from_src.map(|r| r.2).collect::<BTreeSet<_>>().len(),
            Mode::LowLatency => from_src.count(),
        };
        check_eq(format!("{what}: rows from PE {src}"), expected, rows);
    }
}

/// Every bit of the combined output equals the serial computation.
fn check_output(p: &reference::Problem, me: usize, out: &[f32], what: &str) {
    let want = p.expected_output(me);
    check_eq(format!("{what}: combined values"), want.len(), out.len());
    if let Some(i) = (0..want.len()).find(|&i| out[i].to_bits() != want[i].to_bits()) {
        fail(format_args!(
            "{what}: combined token {} value {}: got {} ({:#010x}), expected {} ({:#010x})",
            i / p.hidden.max(1),
            i % p.hidden.max(1),
            out[i],
            out[i].to_bits(),
            want[i],
            want[i].to_bits()
        ));
    }
}

/// Expects `r` to be an error whose text contains `needle`; prints it.
#[track_caller]
fn expect_moe_err<T>(label: &str, r: Result<T, oxshmem_moe::MoeError>, needle: &str) {
    match r {
        Ok(_) => fail(format_args!("{label}: expected an error")),
        Err(e) => {
            let text = e.to_string();
            if !text.contains(needle) {
                fail(format_args!("{label}: error {text:?} does not contain {needle:?}"));
            }
            println!("ERR {label}: {text}");
        }
    }
}

fn errors(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let dev = Device::init(&shmem).unwrap_or_else(|e| fail(format_args!("Device::init: {e}")));
    let good = MoeConfig { tokens: 8, hidden_bytes: 64, topk: 2, experts: 2 * n, ..Default::default() };
    expect_moe_err("odd hidden", Buffer::new(&shmem, &dev, MoeConfig { hidden_bytes: 62, ..good }), "multiple of 4");
    expect_moe_err("uneven experts", Buffer::new(&shmem, &dev, MoeConfig { experts: 2 * n + 1, ..good }), "evenly");
    expect_moe_err("topk > experts", Buffer::new(&shmem, &dev, MoeConfig { topk: 2 * n + 1, ..good }), "exceeds");
    expect_moe_err("no tokens", Buffer::new(&shmem, &dev, MoeConfig { tokens: 0, ..good }), "positive");
    for mode in Mode::ALL {
        let mut buf = Buffer::new(&shmem, &dev, MoeConfig { mode, ..good })
            .unwrap_or_else(|e| fail(format_args!("Buffer::new: {e}")));
        let x = vec![1.0f32; 2 * 16];
        let w = vec![0.5f32; 4];
        let e = (2 * n) as i32;
        expect_moe_err("expert out of range", buf.dispatch(&x, &[0, e, 1, 0], &w).map(drop), "out of range");
        expect_moe_err("expert below -1", buf.dispatch(&x, &[0, -2, 1, 0], &w).map(drop), "out of range");
        expect_moe_err("chosen twice", buf.dispatch(&x, &[0, 1, 1, 1], &w).map(drop), "chosen twice");
        expect_moe_err("short routing", buf.dispatch(&x, &[0, 1, 1], &w).map(drop), "needs 4");
        expect_moe_err("ragged tokens", buf.dispatch(&x[..31], &[0, 1, 1, 0], &w).map(drop), "whole number");
        expect_moe_err("too many tokens", buf.dispatch_in_place(9, &[0; 18], &[0.0; 18]).map(drop), "exceed");
        // The buffer still works: token t of value t + 1 to experts (0, 1) and (1, 0).
        let x: Vec<f32> = (0..32).map(|i| (i / 16 + 1) as f32).collect();
        let out = buf
            .dispatch(&x, &[0, 1, 1, -1], &w)
            .unwrap_or_else(|e| fail(format_args!("dispatch after errors: {e}")))
            .apply_experts(|row, x, y| reference::expert(row.expert, x, y))
            .combine()
            .unwrap_or_else(|e| fail(format_args!("combine after errors: {e}")));
        // Token 0 (value 1): 0 + (0 + 0.5·(1·1 + 0) + 0.5·(1·2 + 1)) = 2 (both experts on PE 0
        // when n == 1 or epp == 2); token 1 (value 2): 0.5·(2·2 + 1) = 2.5.
        let want: Vec<f32> = [2.0f32; 16].into_iter().chain([2.5f32; 16]).collect();
        check_eq(format!("combined after errors ({})", mode.name()), want, out.to_vec());
        buf.free().unwrap_or_else(|e| fail(format_args!("Buffer::free: {e}")));
    }
    dev.finalize().unwrap_or_else(|e| fail(format_args!("Device::finalize: {e}")));
    println!("PE {me}: moe errors ok");
    finish(shmem);
}
