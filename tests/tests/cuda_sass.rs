//! The P2P fast path against NVIDIA NVSHMEM 3.8 (issue 31 item 11): the small kernels of
//! `bindings/cuda/tests/sass_kernels.cu` (one public NVSHMEM call each), compiled for sm_90
//! against oxshmem's headers and `libnvshmem_device.a` and against NVSHMEM 3.8's from its wheel,
//! device-linked (`nvcc -dlink -cubin`, so that out-of-line calls are resolved) and disassembled
//! (`nvdisasm`). For each kernel it counts, over the kernel and every function it calls
//! (CALL targets followed transitively, each callee counted once), the SASS instructions (NOPs
//! left out), the local-memory accesses (LDL/STL) and the membars (MEMBAR/FENCE). Calls into the
//! cold paths (the proxy ring, IBGDA, the error slot; NVSHMEM's `nvshmemi_transfer_*`) are not
//! followed: [`COLD`], except the one such call on NVSHMEM's hot path ([`HOT`]). The whole
//! kernel is counted for both libraries, the non-P2P branches of its own body included, since
//! NVSHMEM inlines nearly everything into it.
//!
//! It prints the table (docs/cuda.md "The P2P fast path against NVSHMEM 3.8" has a copy) and
//! asserts item 11's thresholds for the kernels in [`LEAN`]: at most 1.25× NVSHMEM's
//! instructions, no local memory where NVSHMEM has none, no more membars than NVSHMEM. The other
//! kernels are printed, not asserted.
//!
//! Needs nvcc (`OXSHMEM_NVCC`; `oxshmem_test_require` skips or fails without it). NVSHMEM's side
//! is measured when `OXSHMEM_NVSHMEM_INCLUDE` and `OXSHMEM_NVSHMEM_LIB` are set (`eval "$(bash
//! scripts/cuda-toolchain.sh --nvshmem --env)"`); otherwise its counts recorded in [`NVSHMEM_38`]
//! (NVSHMEM 3.8.0 from the nvidia-nvshmem-cu13 wheel, nvcc 13, sm_90) stand in. No GPU is needed.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The kernels whose thresholds are asserted (made lean so far).
const LEAN: &[&str] = &[
    "sass_int_p",
    "sass_int_g",
    "sass_signal_set",
    "sass_int_fetch_add",
    "sass_putmem_warp_64",
    "sass_putmem_block_4k",
    "sass_getmem_warp_64",
    "sass_signal_add",
    "sass_put_signal_nbi",
    "sass_quiet",
    "sass_fence",
    "sass_wait_until",
    "sass_barrier_all_block",
];

/// Call targets not followed (cold paths), by substring of the mangled name.
const COLD: &[&str] = &[
    // NVSHMEM: the proxy and network transports
    "nvshmemi_transfer_",
    "nvshmemi_proxy",
    "ibgda",
    // oxshmem: the proxy ring, IBGDA, the error slot, and the cold paths of the inline fast
    // paths (oxshmemi_cold_*, core.cu)
    "oxshmemi12proxy_submit",
    "oxshmemi10proxy_wait",
    "oxshmemi11proxy_fetch",
    "oxshmemi6ib_",
    "oxshmemi7ib_",
    "oxshmemi8ib_",
    "oxshmemi9ib_",
    "oxshmemi10ib_",
    "oxshmemi11ib_",
    "oxshmemi12ib_",
    "oxshmemi13ib_",
    "oxshmemi9record_in",
    "oxshmemi_cold_",
];

/// Calls followed although [`COLD`] matches them: they are on the hot path. NVSHMEM's wait_until
/// calls `nvshmemi_transfer_syncapi_update_mem` on every return, satisfied at first look or not:
/// it is the wait's acquire (a `__threadfence`, then, only with a proxy configured, a call into
/// the transport, which stays cold).
const HOT: &[&str] = &["nvshmemi_transfer_syncapi_update_mem"];

/// NVSHMEM 3.8.0's counts (instructions, LDL/STL, membars), measured by this test with the wheel
/// of scripts/cuda-toolchain.sh --nvshmem (nvcc 13, sm_90), for runs without the wheel.
const NVSHMEM_38: &[(&str, usize, usize, usize)] = &[
    ("sass_int_p", 28, 0, 0),
    ("sass_int_g", 28, 0, 0),
    ("sass_putmem_warp_64", 338, 0, 5),
    ("sass_putmem_block_4k", 452, 0, 5),
    ("sass_getmem_warp_64", 337, 0, 5),
    ("sass_signal_set", 31, 0, 0),
    ("sass_signal_add", 61, 0, 0),
    ("sass_put_signal_nbi", 163, 1, 2),
    ("sass_quiet", 80, 0, 2),
    ("sass_fence", 78, 0, 2),
    ("sass_wait_until", 36, 4, 2),
    ("sass_int_fetch_add", 42, 0, 0),
    ("sass_barrier_all_block", 2028, 52, 2),
];

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxshmem-cuda-sass-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("creating a scratch directory");
    d
}

fn run(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd.output().unwrap_or_else(|e| panic!("starting {shown}: {e}"));
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Compiles the kernels with `include`, device-links them with `archive`, and returns nvdisasm's
/// listing of the linked sm_90 cubin.
fn disassemble(nvcc: &str, dir: &Path, include: &Path, archive: &Path) -> String {
    let src = root().join("bindings/cuda/tests/sass_kernels.cu");
    let obj = dir.join("k.o");
    let cubin = dir.join("k.cubin");
    run(Command::new(nvcc)
        .args(["-rdc=true", "-arch=sm_90", "-std=c++17", "-O2", "-c"])
        .arg(&src)
        .arg("-I")
        .arg(include)
        .arg("-o")
        .arg(&obj));
    // -kernels-used keeps the kernels: without it nvlink's host-reference analysis may drop them.
    run(Command::new(nvcc)
        .args(["-dlink", "-arch=sm_90", "-cubin", "-Xnvlink", "-kernels-used=sass_"])
        .arg(&obj)
        .arg(archive)
        .arg("-o")
        .arg(&cubin));
    let nvdisasm = Path::new(nvcc).parent().expect("nvcc has a directory").join("nvdisasm");
    run(Command::new(nvdisasm).arg("-c").arg(&cubin))
}

/// The functions of an nvdisasm listing: name -> instructions (predicate kept).
fn functions(listing: &str) -> HashMap<String, Vec<String>> {
    let mut f: HashMap<String, Vec<String>> = HashMap::new();
    let mut cur: Option<String> = None;
    for line in listing.lines() {
        if let Some(rest) = line.strip_prefix(".text.")
            && let Some(name) = rest.strip_suffix(':')
        {
            cur = Some(name.to_string());
            f.entry(name.to_string()).or_default();
            continue;
        }
        let t = line.trim_start();
        if let (Some(name), Some(rest)) = (&cur, t.strip_prefix("/*"))
            && let Some((addr, ins)) = rest.split_once("*/")
            && addr.len() >= 4
            && addr.chars().all(|c| c.is_ascii_hexdigit())
        {
            let ins = ins.trim().trim_end_matches(';').trim().to_string();
            f.get_mut(name).expect("current function").push(ins);
        }
    }
    f
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Counts {
    instr: usize,
    local: usize,
    membar: usize,
}

/// The counts of `kernel` and everything it calls outside [`COLD`]; also the callees followed.
fn count(funcs: &HashMap<String, Vec<String>>, kernel: &str) -> (Counts, BTreeSet<String>) {
    let mut seen = BTreeSet::new();
    let mut todo = vec![kernel.to_string()];
    let mut c = Counts { instr: 0, local: 0, membar: 0 };
    while let Some(f) = todo.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        let body = funcs.get(&f).unwrap_or_else(|| panic!("{f} is not in the listing"));
        for ins in body {
            // drop a predicate (@P0, @!UP1, ...)
            let op = match ins.strip_prefix('@') {
                Some(r) => r.split_once(char::is_whitespace).map_or("", |(_, o)| o.trim_start()),
                None => ins.as_str(),
            };
            let mnemonic = op.split(|c: char| c.is_whitespace() || c == '.').next().unwrap_or("");
            if mnemonic == "NOP" {
                continue;
            }
            c.instr += 1;
            if mnemonic == "LDL" || mnemonic == "STL" {
                c.local += 1;
            }
            if mnemonic == "MEMBAR" || mnemonic == "FENCE" {
                c.membar += 1;
            }
            if mnemonic == "CALL"
                && let Some(target) = op.split_once("`(").and_then(|(_, r)| r.split_once(')')).map(|(t, _)| t)
                && !target.starts_with(".L")
                && (HOT.iter().any(|p| target.contains(p)) || !COLD.iter().any(|p| target.contains(p)))
            {
                todo.push(target.to_string());
            }
        }
    }
    seen.remove(kernel);
    (c, seen)
}

#[test]
fn the_p2p_fast_path_is_within_item_11_of_nvshmem() {
    let how = "eval \"$(bash scripts/cuda-toolchain.sh --nvshmem --env)\" sets it; without it the SASS is not counted";
    let Some(nvcc) = oxshmem_test_require::env("OXSHMEM_NVCC", how) else { return };

    // Our archive, for sm_90 only.
    let ar = scratch("archive");
    run(Command::new("bash")
        .arg(root().join("bindings/cuda/build.sh"))
        .arg(&ar)
        .args(["--arch", "90"])
        .env("OXSHMEM_NVCC", &nvcc));
    let ours_dir = scratch("ours");
    let ours =
        functions(&disassemble(&nvcc, &ours_dir, &root().join("bindings/c/include"), &ar.join("libnvshmem_device.a")));

    let nv_inc = std::env::var("OXSHMEM_NVSHMEM_INCLUDE").ok().filter(|s| !s.is_empty());
    let nv_lib = std::env::var("OXSHMEM_NVSHMEM_LIB").ok().filter(|s| !s.is_empty());
    let measured: Option<HashMap<String, Vec<String>>> = match (nv_inc, nv_lib) {
        (Some(inc), Some(lib)) => {
            let d = scratch("nvshmem");
            Some(functions(&disassemble(&nvcc, &d, Path::new(&inc), &Path::new(&lib).join("libnvshmem_device.a"))))
        }
        _ => {
            println!(
                "NVSHMEM 3.8 is not installed (OXSHMEM_NVSHMEM_INCLUDE/_LIB unset; scripts/cuda-toolchain.sh \
                 --nvshmem installs it): its recorded counts stand in"
            );
            None
        }
    };

    let kernels: Vec<&str> = NVSHMEM_38.iter().map(|r| r.0).collect();
    let mut table = String::from(
        "| kernel | ours instr / local / membar | NVSHMEM 3.8 instr / local / membar | ratio | item 11 |\n\
         |---|---|---|---|---|\n",
    );
    let mut failures = Vec::new();
    for k in &kernels {
        let (o, callees) = count(&ours, k);
        let n = match &measured {
            Some(f) => count(f, k).0,
            None => {
                let r = NVSHMEM_38.iter().find(|r| r.0 == *k).expect("recorded");
                Counts { instr: r.1, local: r.2, membar: r.3 }
            }
        };
        let ratio = o.instr as f64 / n.instr as f64;
        let ok = o.instr * 4 <= n.instr * 5 && (n.local > 0 || o.local == 0) && o.membar <= n.membar;
        let lean = LEAN.contains(k);
        let verdict = match (ok, lean) {
            (true, _) => "meets",
            (false, true) => "FAILS",
            (false, false) => "not yet",
        };
        table.push_str(&format!(
            "| {} | {} / {} / {} | {} / {} / {} | {:.2} | {} |\n",
            k.trim_start_matches("sass_"),
            o.instr,
            o.local,
            o.membar,
            n.instr,
            n.local,
            n.membar,
            ratio,
            verdict
        ));
        println!("{k}: ours calls {callees:?}");
        if lean && !ok {
            failures.push(format!("{k}: ours {o:?}, NVSHMEM {n:?}"));
        }
    }
    println!("\n{table}");
    assert!(failures.is_empty(), "kernels in LEAN miss item 11's thresholds:\n{}\n{table}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(&ar);
    let _ = std::fs::remove_dir_all(&ours_dir);
}
