//! P2P atomics between GPUs without native P2P atomics take the proxy (issue 31, item 7), as
//! NVSHMEM's do: `tests/cuda/p2p_atomics.cu` (NVSHMEM-style: integer and float adds, fetch_or,
//! signal adds and putmem_signal with a signal add, from every PE to every PE, and a ring of
//! signal adds waited for on the device) runs on the CPU target over P2P with two emulated GPUs
//! that have no native P2P atomics (`OXSHMEM_EMUCUDA_DEVICES=2 OXSHMEM_EMUCUDA_P2P_ATOMICS=0`:
//! `cuDeviceGetP2PAttribute(NATIVE_ATOMIC_SUPPORTED)` answers 0 between them). PEs alternate
//! between the two GPUs, so each PE's peers on the other GPU are the ones whose atomics go
//! through its proxy, and the program's results are checked.
//!
//! What shows that the proxy carried them: the host library's line at init names those peers
//! (`amo_via_proxy=[..]`), and each PE's proxy thread, which over P2P exists only for them, says
//! at finalize how many requests it executed, at least one per atomic to those peers (a float add
//! is a fetch and one or more compare-and-swaps). Before, atomics went P2P whatever the GPUs
//! could do, no proxy started over P2P, and neither line was there. With native P2P atomics (the
//! emulated driver's default) no proxy starts; over the proxy channel the program passes too (its
//! float adds are the proxy's compare-and-swap loops).
//!
//! Needs a C and C++ compiler; builds `liboxshmem.so`, `oshnvcc` and `oshrun` with cargo.

use oxshmem_tests::{have_cxx, run_logged as run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `THREADS` and `ITERS` of `p2p_atomics.cu`.
const THREADS: u64 = 32;
const ITERS: u64 = 4;
/// Proxy requests at least, per thread and iteration, for one peer: int fetch_add and add,
/// ulonglong fetch_add and add, fetch_or, signal add (one each), float fetch_add and double add
/// (a fetch and at least one compare-and-swap each).
const PER_THREAD_ITER: u64 = 6 + 2 * 2;

/// `tests/cuda/p2p_atomics.cu` built for the CPU target (once per test process).
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| oxshmem_tests::build_cpu_program("p2p_atomics", "cpu-p2p-atomics"))
}

/// Runs the program at `n` PEs over `channel` on two emulated GPUs, with native P2P atomics
/// between them or not, logging the CUDA back end's set-up and the proxy; checks its `ok` lines
/// and returns what it printed.
fn job(n: usize, channel: &str, native: bool) -> String {
    let exe = program();
    let mut c = Command::new(oxshmem_tests::oshrun());
    c.arg("-n").arg(n.to_string()).arg(exe).current_dir(exe.parent().expect("the program's folder"));
    c.env("OXSHMEM_DEVICE_CHANNEL", channel)
        .env("OXSHMEM_EMUCUDA_DEVICES", "2")
        .env("OXSHMEM_EMUCUDA_P2P_ATOMICS", if native { "1" } else { "0" })
        .env("OXSHMEM_LOG", "warn,cuda=info,proxy=debug")
        .env("CUTEST_TIMEOUT", "90")
        .env("SHMEM_SYMMETRIC_SIZE", "64M");
    let (ok, out) = run(&mut c, Duration::from_secs(240));
    let oks = out.lines().filter(|l| l.contains(": ok p2p_atomics: ")).count();
    assert!(ok && oks == 2 * n, "p2p_atomics at {n} PEs over {channel} ({oks} of {} ok lines):\n{out}", 2 * n);
    out
}

/// PE `pe`'s line of the log that contains `what`.
fn line_of<'a>(out: &'a str, pe: usize, what: &str) -> Option<&'a str> {
    out.lines().find(|l| l.starts_with(&format!("PE {pe} ")) && l.contains(what))
}

#[test]
fn p2p_atomics_without_native_p2p_atomics_take_the_proxy() {
    if !have_cxx() {
        return;
    }
    for n in [2usize, 4] {
        let start = Instant::now();
        let out = job(n, "p2p", false);
        for pe in 0..n {
            // PE p is on GPU p % 2: its peers on the other GPU.
            let others: Vec<String> = (0..n).filter(|q| q % 2 != pe % 2).map(|q| q.to_string()).collect();
            let want = format!("amo_via_proxy=[{}]", others.join(", "));
            let up =
                line_of(&out, pe, "CUDA back end up").unwrap_or_else(|| panic!("no set-up line of PE {pe}:\n{out}"));
            assert!(up.contains(&want), "PE {pe}: expected {want}:\n{up}");
            let stopped = line_of(&out, pe, "proxy: stopped")
                .unwrap_or_else(|| panic!("PE {pe}: no proxy over P2P, so nothing took the proxy:\n{out}"));
            let executed: u64 = stopped
                .split("executed=")
                .nth(1)
                .and_then(|t| t.split_whitespace().next())
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("PE {pe}: no count in {stopped:?}"));
            // Per peer on the other GPU: the adds of every thread and iteration, one put_signal
            // per iteration; and the ring's three signal adds to the right neighbour (on the
            // other GPU).
            let least = others.len() as u64 * (PER_THREAD_ITER * THREADS * ITERS + ITERS) + 3;
            assert!(
                executed >= least,
                "PE {pe}: the proxy executed {executed} requests, at least {least} expected:\n{out}"
            );
        }
        eprintln!("p2p without native P2P atomics at {n} PEs: ok in {:.2?}", start.elapsed());
    }
}

#[test]
fn with_native_p2p_atomics_no_proxy_starts() {
    if !have_cxx() {
        return;
    }
    let out = job(2, "p2p", true);
    for pe in 0..2 {
        let up = line_of(&out, pe, "CUDA back end up").unwrap_or_else(|| panic!("no set-up line of PE {pe}:\n{out}"));
        assert!(up.contains("amo_via_proxy=[]"), "PE {pe}: {up}");
        assert!(line_of(&out, pe, "proxy: started").is_none(), "PE {pe} started a proxy over P2P:\n{out}");
    }
}

#[test]
fn the_program_runs_over_the_proxy_channel() {
    if !have_cxx() {
        return;
    }
    job(2, "proxy", false);
}
