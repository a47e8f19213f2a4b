//! Without a CUDA driver every entry point of `oxshmem_device::cuda` returns
//! `no CUDA driver: libcuda.so.1 not found`, and nothing panics (`cudarc`'s loader would, were
//! it reached). On a machine with a driver these tests are skipped (requirement `no-cuda-driver`).
#![cfg(feature = "cuda")]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxshmem_device::cuda::{self, CudaError, Gpu};

const NO_DRIVER: &str = "no CUDA driver: libcuda.so.1 not found";

/// Whether this machine has a driver (then the no-driver checks do not apply).
fn driver_present() -> bool {
    match cuda::probe() {
        Err(e) if e.is_no_driver() => false,
        other => {
            let what = other.map(|i| i.to_string()).unwrap_or_else(|e| e.to_string());
            oxshmem_test_require::skip("no-cuda-driver", &format!("a CUDA driver is present ({what})"));
            true
        }
    }
}

#[test]
fn every_entry_point_says_no_driver() {
    if driver_present() {
        return;
    }
    let no_driver = CudaError::NoDriver { detail: "libcuda.so.1 not found".into() };
    assert_eq!(cuda::probe().unwrap_err(), no_driver);
    assert_eq!(cuda::probe().unwrap_err().to_string(), NO_DRIVER);
    assert_eq!(cuda::driver_version().unwrap_err(), no_driver);
    assert_eq!(cuda::device_count().unwrap_err(), no_driver);
    assert_eq!(Gpu::open(0).unwrap_err(), no_driver);
    assert_eq!(Gpu::open(3).unwrap_err(), no_driver);
    assert_eq!(Gpu::select(0).unwrap_err(), no_driver);
    let x = 5u64;
    assert_eq!(cuda::pointer_is_device((&raw const x).cast()).unwrap_err(), no_driver);
    // Asked again: the same answer (the outcome is kept, the library not looked for again).
    assert_eq!(Gpu::open(0).unwrap_err().to_string(), NO_DRIVER);
    // A routine's caller prefixes its own name, as the runtime's messages do.
    assert_eq!(
        format!("nvshmem_malloc: {}", Gpu::select(1).unwrap_err()),
        "nvshmem_malloc: no CUDA driver: libcuda.so.1 not found"
    );
}

#[test]
fn from_threads_at_once() {
    if driver_present() {
        return;
    }
    let handles: Vec<_> = (0..4).map(|i| std::thread::spawn(move || Gpu::select(i).unwrap_err())).collect();
    for h in handles {
        assert_eq!(h.join().unwrap().to_string(), NO_DRIVER);
    }
}

/// The same checks in a process whose library path points nowhere (and one where it names a
/// directory without the driver): the search must not find, nor crash on, anything.
#[test]
fn with_a_library_path_pointing_nowhere() {
    if driver_present() {
        return;
    }
    for path in ["/nonexistent/oxshmem-no-cuda", "/tmp"] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "every_entry_point_says_no_driver", "--nocapture", "--test-threads=1"])
            .env("LD_LIBRARY_PATH", path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Bounded wait: the child's checks take no time; a hang is a failure, not a slow run.
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the child with LD_LIBRARY_PATH={path} did not finish within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "LD_LIBRARY_PATH={path}: {text}");
        assert!(text.contains("1 passed"), "LD_LIBRARY_PATH={path}: the check ran: {text}");
        assert!(!text.contains("panicked"), "LD_LIBRARY_PATH={path}: {text}");
    }
}

// ---------------------------------------------------------------------------------------------
// A fake driver: a small C library named libcuda.so.1, built here with `cc` and found through
// LD_LIBRARY_PATH by a child process. It answers the calls this layer makes from environment
// settings and logs the VMM calls, so the paths after a successful load — a stub library, no
// device, a bad ordinal, a device without VMM, an allocation that fails, the order of the
// teardown — run without a GPU. (The real thing: tests/cuda_gpu.rs on a GPU machine.)

const FAKE_DRIVER_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long H;
typedef struct { int type; int id; } Loc;
typedef struct { int type; int handle_types; Loc loc; void *win32; unsigned char flags[8]; } Prop;
typedef struct { Loc loc; int flags; } Access;
static int setting(const char *k, int d) { const char *v = getenv(k); return v ? atoi(v) : d; }
static void logf_(const char *fmt, unsigned long long a, unsigned long long b, unsigned long long c) {
    const char *p = getenv("OXSHMEM_TEST_FAKE_CUDA_LOG");
    if (!p) return;
    FILE *f = fopen(p, "a");
    if (!f) return;
    fprintf(f, fmt, a, b, c);
    fputc('\n', f);
    fclose(f);
}
static unsigned long long fcntl_ok(int fd) { return fcntl(fd, F_GETFD) != -1; }
CUresult cuInit(unsigned flags) { return setting("OXSHMEM_TEST_FAKE_CUDA_INIT", 0); }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = setting("OXSHMEM_TEST_FAKE_CUDA_DEVICES", 1); return 0; }
CUresult cuDeviceGet(CUdevice *d, int o) { *d = o; return 0; }
CUresult cuDeviceGetName(char *b, int len, CUdevice d) { snprintf(b, len, "Fake GPU %d", d); return 0; }
CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { *b = 1ull << 34; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    switch (attr) {
    case 75: *v = 9; break;           /* compute capability major */
    case 76: *v = 0; break;           /* minor */
    case 102: *v = d == 0; break;     /* VMM: device 0 only */
    case 103: *v = 1; break;          /* POSIX fd handles */
    default: *v = 0;
    }
    return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, CUdevice d) { *c = (void *)(0x1000 + d); logf_("retain %llu", d, 0, 0); return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { logf_("release %llu", d, 0, 0); return 0; }
CUresult cuCtxSetCurrent(void *c) { return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemGetAllocationGranularity(size_t *g, const Prop *p, int o) { *g = 2u << 20; return 0; }
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t s, size_t a, CUdeviceptr addr, unsigned long long f) {
    static CUdeviceptr next = 0x7f0000000000ull;
    *p = next; next += s;
    logf_("reserve %llu align %llu", s, a, 0);
    return 0;
}
CUresult cuMemAddressFree(CUdeviceptr p, size_t s) { logf_("free %llu", s, 0, 0); return 0; }
CUresult cuMemCreate(H *h, size_t s, const Prop *p, unsigned long long f) {
    logf_("create %llu type %llu handles %llu", s, p->type, p->handle_types);
    logf_("create location %llu id %llu", p->loc.type, p->loc.id, 0);
    if (s > (1ull << 30)) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *h = 42; return 0;
}
CUresult cuMemRelease(H h) { logf_("release handle %llu", h, 0, 0); return 0; }
CUresult cuMemMap(CUdeviceptr p, size_t s, size_t o, H h, unsigned long long f) { logf_("map %llu handle %llu", s, h, 0); return 0; }
CUresult cuMemUnmap(CUdeviceptr p, size_t s) { logf_("unmap %llu", s, 0, 0); return 0; }
CUresult cuMemSetAccess(CUdeviceptr p, size_t s, const Access *d, size_t n) {
    logf_("access %llu location %llu id %llu", s, d->loc.type, d->loc.id);
    logf_("access flags %llu count %llu", d->flags, n, 0);
    return 0;
}
CUresult cuMemExportToShareableHandle(void *out, H h, int type, unsigned long long f) {
    int fd = memfd_create("fake-cuda-heap", MFD_CLOEXEC);
    *(int *)out = fd;
    logf_("export handle %llu type %llu", h, type, 0);
    return fd < 0 ? 999 : 0;
}
CUresult cuMemImportFromShareableHandle(H *h, void *os, int type) {
    logf_("import fd-is-open %llu type %llu", fcntl_ok((int)(long)os), type, 0);
    *h = 43; return 0;
}
CUresult cuPointerGetAttribute(void *out, int attr, CUdeviceptr p) { return 1; /* CUDA_ERROR_INVALID_VALUE */ }
CUresult cuStreamCreate(void **st, unsigned f) { *st = (void *)0x5000; return 0; }
CUresult cuStreamDestroy_v2(void *st) { return 0; }
CUresult cuStreamSynchronize(void *st) { return 0; }
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) { logf_("memcpy %llu", n, 0, 0); memmove((void *)d, (void *)s, n); return 0; }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) { memset((void *)d, v, n); return 0; }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) { *p = malloc(n); logf_("host alloc %llu flags %llu", n, flags, 0); return 0; }
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned f) { *d = (CUdeviceptr)p; return 0; }
CUresult cuMemFreeHost(void *p) { free(p); logf_("host free", 0, 0, 0); return 0; }
"#;

const CASE_VAR: &str = "OXSHMEM_TEST_FAKE_CUDA_CASE";
const LOG_VAR: &str = "OXSHMEM_TEST_FAKE_CUDA_LOG";

/// Builds the fake driver into a fresh directory, as `libcuda.so.1` and `libcuda.so` (the
/// loader tries `libcuda.so` first); `None`, after saying why, where no C compiler runs.
fn build_fake_driver() -> Option<std::path::PathBuf> {
    static DIR: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-cuda-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("fake_cuda.c");
        std::fs::write(&src, FAKE_DRIVER_C).unwrap();
        let lib = dir.join("libcuda.so.1");
        let out = match Command::new("cc").args(["-shared", "-fPIC", "-O1", "-Wall", "-o"]).arg(&lib).arg(&src).output()
        {
            Ok(o) => o,
            Err(e) => {
                oxshmem_test_require::skip("cc", &format!("no C compiler to build the fake driver ({e})"));
                return None;
            }
        };
        assert!(out.status.success(), "cc: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::copy(&lib, dir.join("libcuda.so")).unwrap();
        Some(dir)
    })
    .clone()
}

/// Runs the child program `cuda-nodriver-pe` (tests/pe/cuda_nodriver.rs) for `case` against the fake driver with the settings `env`;
/// returns its output.
fn run_fake(case: &str, env: &[(&str, &str)]) -> Option<String> {
    let dir = build_fake_driver()?;
    let log = dir.join(format!("{case}.log"));
    let _ = std::fs::remove_file(&log);
    let mut cmd = Command::new(common::pe_program("cuda-nodriver-pe"));
    cmd.env("LD_LIBRARY_PATH", &dir)
        .env(CASE_VAR, case)
        .env(LOG_VAR, &log)
        .env_remove("OXSHMEM_CUDA_DEVICE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fake driver case {case}: the child did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "fake driver case {case}: {text}");
    assert!(text.contains(&format!("case {case} done")), "fake driver case {case} ran: {text}");
    Some(text)
}

#[test]
fn a_stub_library_is_no_driver() {
    run_fake("stub", &[("OXSHMEM_TEST_FAKE_CUDA_INIT", "34")]);
}

#[test]
fn cuinit_errors_are_named() {
    run_fake("init_no_device", &[("OXSHMEM_TEST_FAKE_CUDA_INIT", "100")]);
    run_fake("init_other", &[("OXSHMEM_TEST_FAKE_CUDA_INIT", "304")]);
}

#[test]
fn a_driver_without_devices() {
    run_fake("no_device", &[("OXSHMEM_TEST_FAKE_CUDA_DEVICES", "0")]);
}

#[test]
fn the_device_variable_is_checked() {
    run_fake("bad_env", &[("OXSHMEM_TEST_FAKE_CUDA_DEVICES", "2"), ("OXSHMEM_CUDA_DEVICE", "5")]);
}

#[test]
fn the_heap_calls_and_their_order() {
    run_fake("two", &[("OXSHMEM_TEST_FAKE_CUDA_DEVICES", "2")]);
}
