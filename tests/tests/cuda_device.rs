//! NVSHMEM's device API in CUDA C++ (`bindings/cuda`): `libnvshmem_device.a` builds, a
//! program that takes the address of every device-callable NVSHMEM function (and calls a few)
//! links against it and the host library with `nvcc -rdc=true`, and the headers compile under
//! nvcc, and the NVSHMEM-style CUDA programs of `tests/cuda` (and `benches/cuda/device_bench.cu`)
//! compile and link against an oxshmem prefix with NVSHMEM's build line.
//!
//! Needs nvcc: `OXSHMEM_NVCC` (`eval "$(bash scripts/cuda-toolchain.sh --env)"`); without it
//! every test is skipped with the reason, or fails where the run requires nvcc
//! (`oxshmem_test_require`, as `.ci/run` does). No GPU is needed: nothing is run on a device.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/<profile>`: above the test executable's `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("the test executable has a directory").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// nvcc, or None after [`oxshmem_test_require::skip`] says that `what` was not checked.
fn nvcc(what: &str) -> Option<String> {
    let how = format!("eval \"$(bash scripts/cuda-toolchain.sh --env)\" sets it; without it {what} is not checked");
    oxshmem_test_require::env("OXSHMEM_NVCC", &how)
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxshmem-cuda-device-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("creating a scratch directory");
    d
}

/// Runs `cmd` with a timeout, failing the test with its output unless it succeeds.
fn run(mut cmd: Command, timeout: Duration) {
    let shown = format!("{cmd:?}");
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let out_path = scratch("logs").join(format!("{}.log", RUNS.fetch_add(1, Ordering::Relaxed)));
    let log = std::fs::File::create(&out_path).expect("creating a log file");
    let mut child = cmd
        .stdout(Stdio::from(log.try_clone().expect("cloning the log file")))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap_or_else(|e| panic!("starting {shown}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for a child") {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{shown} ran past {}s:\n{}",
                timeout.as_secs(),
                std::fs::read_to_string(&out_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    assert!(status.success(), "{shown} failed ({status}):\n{text}");
}

/// Builds `liboxshmem.so` (the host library) once, as bindings/c/tests/common ensure_built does.
fn host_lib() -> PathBuf {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let profile = match profile_dir().file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(p) => p.to_string(),
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let target = profile_dir().parent().expect("target/<profile> has a parent").to_path_buf();
        let mut c = Command::new(cargo);
        c.args(["build", "-p", "oxshmem-c", "--profile", &profile, "--manifest-path"])
            .arg(root().join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target);
        run(c, Duration::from_secs(1800));
    });
    let lib = profile_dir().join("liboxshmem.so");
    assert!(lib.exists(), "{} not found even after cargo built oxshmem-c", lib.display());
    profile_dir()
}

/// The architectures the tests build the archive for: sm_75, what nvcc 13 compiles for without
/// `-arch` (and the oldest the default build ships), and sm_90.
const ARCHS: &str = "75,90";

/// Builds the archive for [`ARCHS`] once; returns its directory.
fn archive(nvcc: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = scratch("archive");
        let mut c = Command::new("bash");
        c.arg(root().join("bindings/cuda/build.sh")).arg(&out).args(["--arch", ARCHS]).env("OXSHMEM_NVCC", nvcc);
        run(c, Duration::from_secs(1200));
        assert!(out.join("libnvshmem_device.a").exists(), "build.sh made no libnvshmem_device.a");
        out
    })
    .clone()
}

/// The device-callable names (bindings/cuda/device_api.tsv).
fn device_names() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("bindings/cuda/device_api.tsv")).expect("reading device_api.tsv");
    let names: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    // NVSHMEM 3.4's device API has 2,700-odd names: a table read short would check next to none.
    assert!(names.len() >= 2_700, "device_api.tsv gave {} names", names.len());
    names
}

/// A program that takes the address of every device function in a kernel (so each must be
/// defined by the archive) and calls a few the ordinary way.
fn every_function_program() -> String {
    let mut s = String::from(
        "#include <nvshmem.h>\n#include <nvshmemx.h>\n\n__global__ void every(void **out) {\n    void *fns[] = {\n",
    );
    for n in device_names() {
        s.push_str(&format!("        (void *)&{n},\n"));
    }
    s.push_str(
        r#"    };
    for (unsigned i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) out[i] = fns[i];
}

__global__ void some(int *dest, uint64_t *sig, double *d) {
    int me = nvshmem_my_pe(), n = nvshmem_n_pes();
    nvshmem_int_p(dest, me, (me + 1) % n);
    nvshmemx_int_put_warp(dest, dest + 4, 4, (me + 1) % n);
    nvshmemx_putmem_signal_nbi_block(dest, dest + 8, 16, sig, 1, NVSHMEM_SIGNAL_ADD, (me + 1) % n);
    nvshmem_int_atomic_fetch_add(dest, 1, 0);
    nvshmem_quiet();
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, 1);
    nvshmem_barrier_all();
    nvshmem_double_sum_reduce(NVSHMEM_TEAM_WORLD, d, d + 8, 8);
    nvshmemx_int_max_reduce_block(NVSHMEM_TEAM_WORLD, dest, dest + 8, 4);
    nvshmemx_broadcastmem_warp(NVSHMEM_TEAM_WORLD, dest, dest + 16, 16, 0);
}

int main() {
    int dev = 0;
    (void)nvshmemx_collective_launch_query_gridsize((const void *)some, dim3(32), nullptr, 0, &dev);
    return 0;
}
"#,
    );
    s
}

#[test]
fn the_archive_links_every_device_function() {
    let Some(nvcc) = nvcc("libnvshmem_device.a") else { return };
    let lib = host_lib();
    let ar = archive(&nvcc);
    let dir = scratch("link");
    let src = dir.join("every.cu");
    std::fs::write(&src, every_function_program()).expect("writing every.cu");
    // Device code for both of the archive's architectures: each device link needs every name
    // defined for its own architecture.
    let mut c = Command::new(&nvcc);
    c.args(["-rdc=true", "-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_90,code=sm_90", "-std=c++17"])
        .arg(&src)
        .arg("-I")
        .arg(root().join("bindings/c/include"))
        .arg("-L")
        .arg(&lib)
        .arg("-loxshmem")
        .arg(ar.join("libnvshmem_device.a"))
        .arg("-o")
        .arg(dir.join("every"));
    run(c, Duration::from_secs(600));
    assert!(dir.join("every").exists(), "nvcc made no executable");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The programs of `tests/cuda/` and the device benchmark, written as NVSHMEM users write them
/// (and built against NVIDIA's NVSHMEM too, by `scripts/gpu-check.sh --prepare`), compile and
/// link against an oxshmem prefix with NVSHMEM's build line (`tests/cuda/build.sh`: `nvcc
/// -rdc=true prog.cu -I P/include P/lib/libnvshmem_device.a -L P/lib -lnvshmem_host`), and
/// the modules of `tests/cuda/modules/` device-link into fatbins.
#[test]
fn the_nvshmem_style_programs_build_against_oxshmem() {
    let Some(nvcc) = nvcc("tests/cuda/*.cu") else { return };
    let lib = host_lib();
    let ar = archive(&nvcc);
    // The prefix: the headers, libnvshmem_host.so (the host library under NVSHMEM's name) and
    // the archive, as `oxshmem-install` lays them out.
    let prefix = scratch("prefix");
    std::fs::create_dir_all(prefix.join("lib")).expect("creating prefix/lib");
    let link = |from: &Path, to: &Path| {
        let _ = std::fs::remove_file(to);
        std::os::unix::fs::symlink(from, to).unwrap_or_else(|e| panic!("linking {}: {e}", to.display()));
    };
    link(&root().join("bindings/c/include"), &prefix.join("include"));
    link(&lib.join("liboxshmem.so"), &prefix.join("lib/libnvshmem_host.so"));
    link(&ar.join("libnvshmem_device.a"), &prefix.join("lib/libnvshmem_device.a"));
    let out = scratch("programs");
    let mut c = Command::new("bash");
    c.arg(root().join("tests/cuda/build.sh")).arg(&prefix).arg(&out).arg("sm_90").env("OXSHMEM_NVCC", &nvcc);
    run(c, Duration::from_secs(1500));
    let mut built = Vec::new();
    for e in std::fs::read_dir(root().join("tests/cuda")).expect("reading tests/cuda").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".cu") {
            assert!(out.join(stem).exists(), "tests/cuda/{name} did not build");
            built.push(stem.to_string());
        }
    }
    assert!(built.len() >= 5, "only {built:?} in tests/cuda");
    assert!(out.join("device_bench").exists(), "benches/cuda/device_bench.cu did not build");
    // The modules (device code only, device-linked with the archive into a fatbin the Rust
    // GPU device loads): the device library's globals are in it, for load_module to set.
    let fatbin = std::fs::read(out.join("gpu_ring.fatbin")).expect("tests/cuda/modules/gpu_ring.cu did not build");
    for global in [&b"oxshmemi_state_d"[..], b"oxshmemi_cuda_d"] {
        assert!(
            fatbin.windows(global.len()).any(|w| w == global),
            "gpu_ring.fatbin has no {}",
            String::from_utf8_lossy(global)
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&prefix);
}

#[test]
fn the_headers_compile_under_nvcc() {
    let Some(nvcc) = nvcc("nvshmem.h under nvcc") else { return };
    let dir = scratch("headers");
    let src = dir.join("use.cu");
    std::fs::write(
        &src,
        r#"#include <nvshmem.h>
#include <nvshmemx.h>
__global__ void k(float *f, uint64_t *sig) {
    nvshmem_float_p(f, 1.0f, 0);
    nvshmemx_float_put_nbi_block(f, f + 1, 4, 1);
    nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_SET, 1);
    nvshmem_uint64_wait_until(sig, NVSHMEM_CMP_EQ, 1);
    half h = nvshmem_half_g((const half *)f, 0);
    (void)h;
}
int main() {
    nvshmem_init();
    float *f = (float *)nvshmem_malloc(64);
    nvshmem_float_p(f, 1.0f, 0);
    nvshmem_finalize();
    return 0;
}
"#,
    )
    .expect("writing use.cu");
    let mut c = Command::new(&nvcc);
    c.args(["-rdc=true", "-arch=sm_90", "-std=c++17", "-Werror", "all-warnings", "-c"])
        .arg(&src)
        .arg("-I")
        .arg(root().join("bindings/c/include"))
        .arg("-o")
        .arg(dir.join("use.o"));
    run(c, Duration::from_secs(300));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program written the way NVSHMEM's examples and perftests are: it includes `nvshmem.h`,
/// `nvshmemx.h`, `non_abi/nvshmemx_error.h` and `device_host/nvshmem_common.cuh`, relies on
/// `<assert.h>` and `<cuda.h>` arriving through `nvshmem.h`, stamps out kernels with the
/// `NVSHMEMI_REPT_*` macros, calls NVSHMEM 3.8's device names, and reports through the
/// `NVSHMEMI_*` error macros. Its `main` runs on the host only (no GPU needed).
const COMPAT_PROGRAM: &str = r#"#include <stdio.h>
#include "nvshmem.h"
#include "nvshmemx.h"
#include "non_abi/nvshmemx_error.h"
#include "device_host/nvshmem_common.cuh"

#define DEFINE_P_KERNEL(NAME, TYPE) \
    __global__ void p_##NAME(TYPE *d, TYPE v, int pe) { nvshmem_##NAME##_p(d, v, pe); }
NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES(DEFINE_P_KERNEL)
#define DEFINE_WAIT_KERNEL(NAME, TYPE) \
    __global__ void w_##NAME(TYPE *d, TYPE v) { nvshmem_##NAME##_wait_until(d, NVSHMEM_CMP_GE, v); }
NVSHMEMI_REPT_FOR_WAIT_TYPES(DEFINE_WAIT_KERNEL)
#define DEFINE_REDUCE_KERNEL(NAME, TYPE, OP) \
    __global__ void r_##NAME##_##OP(TYPE *d, const TYPE *s) { \
        nvshmemx_##NAME##_##OP##_reduce_block(NVSHMEM_TEAM_WORLD, d, s, 4); }
NVSHMEMI_REPT_TYPES_AND_OPS_FOR_REDUCE(DEFINE_REDUCE_KERNEL)

#define COUNT3(NAME, TYPE, OP) +1
#define COUNT2(NAME, TYPE) +1
#define COUNT1(BITS) +1
static const int n_reduce = 0 NVSHMEMI_REPT_TYPES_AND_OPS_FOR_REDUCE(COUNT3);
static const int n_rma = 0 NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES(COUNT2);
static const int n_wait = 0 NVSHMEMI_REPT_FOR_WAIT_TYPES(COUNT2);
static const int n_sizes = 0 NVSHMEMI_REPT_FOR_SIZES(COUNT1);

__global__ void v38(float *f, double *d, half *h, uint64_t *sig, int pe) {
    nvshmemx_float_atomic_add(f, 1.0f, pe);
    d[1] = nvshmemx_double_atomic_fetch_add(d, 2.0, pe);
    nvshmemx_half_atomic_add(h, h[1], pe);
    h[2] = nvshmemx_half_atomic_fetch_add(h, h[1], pe);
    (void)nvshmemx_float_atomic_fetch_add(f, 1.0f, pe);
    nvshmemx_double_atomic_add(d, 1.0, pe);
    nvshmemx_put16_signal_nbi_block(h, h + 8, 4, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    nvshmemx_put16_signal_warp(h, h + 8, 4, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    nvshmemx_put6_signal_block(h, h + 8, 4, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    nvshmemx_flush();
    nvshmemx_flush_warp();
    nvshmemx_flush_block();
    nvshmemx_signal_counted_reset(sig);
    nvshmemx_region_handle_t r;
    nvshmemx_region_attrs_t a = NVSHMEMX_REGION_ATTRS_INITIALIZER;
    int active = 0;
    if (nvshmemx_region_start_block(&r, &a) == NVSHMEMX_SUCCESS) nvshmemx_region_stop_block(r);
    (void)nvshmemx_region_is_active(NVSHMEMX_REGION_HINT_BATCH_RMA, &active);
    extern __shared__ char smem[];
    nvshmemx_give_smem(smem, nvshmemx_ask_smem(NVSHMEMX_SMEM_MINIMUM));
    nvshmemx_release_smem();
}

static int jumps(int status) {
    int rc = 0;
    NVSHMEMI_NZ_ERROR_JMP(status, NVSHMEMX_ERROR_INTERNAL, out, "step %d", 3);
    NVSHMEMI_NULL_ERROR_JMP((void *)0, rc, NVSHMEMX_ERROR_OUT_OF_MEMORY, out, "no buffer");
out:
    return status ? status : rc;
}
static int returns(int status) {
    NVSHMEMI_NE_ERROR_RET(status, 0, NVSHMEMX_ERROR_INVALID_VALUE, "ret %s", "path");
    return 0;
}

int main() {
    CUresult r = CUDA_SUCCESS;  /* <cuda.h>, through nvshmem.h */
    assert(r == CUDA_SUCCESS);  /* <assert.h>, through nvshmem.h */
    NVSHMEMI_ERROR_PRINT("compat %d", 42);
    NVSHMEMI_WARN_PRINT("careful %s", "now");
    printf("jmp %d %d\n", jumps(5), jumps(0));
    printf("ret %d %d\n", returns(9), returns(0));
    printf("string %s %s\n", nvshmemx_status_string(NVSHMEMX_ERROR_SYMMETRY), nvshmemx_status_string(99));
    printf("counts %d %d %d %d\n", n_reduce, n_rma, n_wait, n_sizes);
    /* the host library, found through the rpath (no GPU needed for these two) */
    int major = 0, minor = 0;
    nvshmem_info_get_version(&major, &minor);
    printf("host %d %d.%d\n", (int)nvshmemx_init_status(), major, minor);
    return 0;
}
"#;

/// [`COMPAT_PROGRAM`] builds with nvcc and no `-arch` (sm_75 for nvcc 13) against the headers and
/// the archive with the link line the docs give (`-L lib -loxshmem libnvshmem_device.a`, an
/// rpath), and runs without `LD_LIBRARY_PATH`: the rpath finds the host library, the macros
/// report what NVSHMEM's do.
#[test]
fn an_nvshmem_style_program_builds_without_arch_and_runs() {
    let Some(nvcc) = nvcc("a program built without -arch") else { return };
    let lib = host_lib();
    let ar = archive(&nvcc);
    let dir = scratch("compat");
    let src = dir.join("compat.cu");
    std::fs::write(&src, COMPAT_PROGRAM).expect("writing compat.cu");
    let mut c = Command::new(&nvcc);
    c.args(["-rdc=true", "-std=c++17"])
        .arg(&src)
        .arg("-I")
        .arg(root().join("bindings/c/include"))
        .arg("-L")
        .arg(&lib)
        .arg("-loxshmem")
        .arg(ar.join("libnvshmem_device.a"))
        .arg("-Xlinker")
        .arg(format!("-rpath,{}", lib.display()))
        .arg("-o")
        .arg(dir.join("compat"));
    run(c, Duration::from_secs(900));
    let out = Command::new(dir.join("compat"))
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("running the program built without -arch");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "compat failed ({}):\n{stdout}\n{stderr}", out.status);
    // The exact lines: the macros' effects (status set, goto, return), NVSHMEM's type lists
    // (138 reduction pairs, 25 RMA types, 14 wait types, 5 sizes), and the host library's
    // answers (not initialized; OpenSHMEM 1.3), which a missing rpath would have kept from
    // loading at all (exit 127).
    let want_out = "WARN: careful now\njmp 7 2\nret 1 0\nstring NVSHMEMX_ERROR_SYMMETRY NVSHMEMX_ERROR_<unknown>\n\
                    counts 138 25 14 5\nhost 0 1.3\n";
    assert_eq!(stdout, want_out, "stdout of compat");
    for line in [
        "compat.cu:main:",
        ": compat 42\n",
        ": error status: 5 (NVSHMEMX_ERROR_GPU_NOT_SELECTED) step 3\n",
        ": NULL value no buffer\n",
        ": non-zero status: 9 ret path\n",
    ] {
        assert!(stderr.contains(line), "stderr of compat lacks {line:?}:\n{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cuda_queue_producer_writes_the_rust_producers_bytes() {
    let Some(nvcc) = nvcc("the CUDA IBGDA producer") else { return };
    let dir = scratch("wqe");
    let exe = dir.join("wqe_dump");
    let mut c = Command::new(&nvcc);
    c.args(["-std=c++17", "-diag-suppress", "20044", "-x", "cu", "-I"])
        .arg(root().join("bindings/c/include"))
        .arg("-I")
        .arg(root().join("device/include"))
        .arg(root().join("bindings/cuda/tests/wqe_dump.cu"))
        .arg("-o")
        .arg(&exe);
    run(c, Duration::from_secs(300));
    let out = Command::new(&exe).output().expect("running wqe_dump");
    assert!(out.status.success(), "wqe_dump failed: {}", String::from_utf8_lossy(&out.stderr));
    let cuda = String::from_utf8(out.stdout).expect("wqe_dump prints ASCII");
    let rust = oxshmem_tests::wqe::rust_wqe_dump();
    for (i, (c, r)) in cuda.lines().zip(rust.lines()).enumerate() {
        assert_eq!(c, r, "line {i}: the CUDA producer (first) and the Rust one (second) differ");
    }
    assert_eq!(cuda.lines().count(), rust.lines().count(), "the two dumps have different lengths");
    assert!(cuda.lines().count() > 20, "the dump is too short:\n{cuda}");
    let _ = std::fs::remove_dir_all(&dir);
}
