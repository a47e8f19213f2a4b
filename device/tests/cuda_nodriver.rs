//! Without a CUDA driver every entry point of `oxshmem_device::cuda` returns
//! `no CUDA driver: libcuda.so.1 not found`, and nothing panics (`cudarc`'s loader would, were
//! it reached). On a machine with a driver these tests are skipped (requirement `no-cuda-driver`).
#![cfg(feature = "cuda")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxshmem_device::cuda::{self, CudaError, Gpu, GpuHeap, PinnedBuf};

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

/// Runs `fake_driver_child` for `case` against the fake driver with the settings `env`;
/// returns its output.
fn run_fake(case: &str, env: &[(&str, &str)]) -> Option<String> {
    let dir = build_fake_driver()?;
    let log = dir.join(format!("{case}.log"));
    let _ = std::fs::remove_file(&log);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "fake_driver_child", "--nocapture", "--test-threads=1"])
        .env("LD_LIBRARY_PATH", &dir)
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
    assert!(out.status.success() && text.contains("1 passed"), "fake driver case {case}: {text}");
    assert!(text.contains(&format!("case {case} done")), "fake driver case {case} ran: {text}");
    Some(text)
}

/// The child's side: the checks of one case (does nothing unless started by `run_fake`).
#[test]
fn fake_driver_child() {
    let Ok(case) = std::env::var(CASE_VAR) else { return };
    let log_path = std::env::var(LOG_VAR).unwrap();
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    match case.as_str() {
        "stub" => assert_eq!(
            cuda::probe().unwrap_err().to_string(),
            "no CUDA driver: libcuda.so.1 is the CUDA toolkit's stub library, not a driver \
             (cuInit returned CUDA_ERROR_STUB_LIBRARY (34)); take the stubs directory out of LD_LIBRARY_PATH"
        ),
        "init_no_device" => {
            let e = Gpu::open(0).unwrap_err();
            assert_eq!(e.to_string(), "no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE (100)");
        }
        "init_other" => {
            assert_eq!(cuda::probe().unwrap_err().to_string(), "cuInit failed: CUDA_ERROR_OPERATING_SYSTEM (304)");
        }
        "no_device" => {
            assert_eq!(cuda::device_count(), Ok(0));
            for e in [cuda::probe().unwrap_err(), Gpu::open(0).unwrap_err(), Gpu::select(0).unwrap_err()] {
                assert_eq!(e.to_string(), "no CUDA device: cuDeviceGetCount returned 0");
            }
        }
        "bad_env" => {
            assert_eq!(Gpu::select(0).unwrap_err().to_string(), "CUDA device 5 requested but only 2 present");
        }
        "two" => two_fake_devices(&log),
        other => panic!("unknown case {other}"),
    }
    println!("case {case} done");
}

fn two_fake_devices(log: &dyn Fn() -> String) {
    let info = cuda::probe().unwrap();
    assert_eq!(
        info.to_string(),
        "CUDA driver 13.0, 2 devices\n\
         device 0: Fake GPU 0, compute capability 9.0, 16.0 GiB, VMM yes, POSIX fd handles yes, GPUDirect RDMA on VMM no\n\
         device 1: Fake GPU 1, compute capability 9.0, 16.0 GiB, VMM no, POSIX fd handles yes, GPUDirect RDMA on VMM no"
    );
    assert_eq!(Gpu::open(3).unwrap_err().to_string(), "CUDA device 3 requested but only 2 present");
    assert_eq!(Gpu::open(-1).unwrap_err().to_string(), "CUDA device -1 requested but only 2 present");
    // Local rank 3 of a node with 2 GPUs: device 1, which lacks VMM.
    let gpu1 = Gpu::select(3).unwrap();
    assert_eq!((gpu1.ordinal(), gpu1.name()), (1, "Fake GPU 1"));
    assert_eq!(
        GpuHeap::create(&gpu1, 1 << 20).unwrap_err().to_string(),
        "CUDA device 1 (Fake GPU 1) does not support virtual memory management \
         (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0)"
    );
    drop(gpu1);
    assert!(log().contains("retain 1\nrelease 1\n"), "{}", log());

    let gpu = Gpu::select(2).unwrap();
    assert_eq!(gpu.ordinal(), 0);
    assert_eq!(cuda::granularity(&gpu), Ok(2 << 20));
    // An allocation the fake refuses: the reserved range is given back, nothing is mapped.
    let before = log().len();
    let e = GpuHeap::create(&gpu, 3 << 30).unwrap_err();
    assert_eq!(e.to_string(), "cuMemCreate of 3221225472 bytes failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
    assert_eq!(
        &log()[before..],
        "reserve 3221225472 align 2097152\n\
         create 3221225472 type 1 handles 1\n\
         create location 1 id 0\n\
         free 3221225472\n"
    );
    assert_eq!(
        GpuHeap::create(&gpu, 0).unwrap_err().to_string(),
        "GpuHeap::create: size 0 bytes; the heap holds at least one byte"
    );

    // A heap: 3 MiB rounds up to 4 MiB; pinned device memory exported as a POSIX fd (type 1),
    // mapped read/write (flags 3) for device 0 (location type 1).
    let before = log().len();
    let (heap, fd) = GpuHeap::create(&gpu, 3 << 20).unwrap();
    assert_eq!(heap.size(), 4 << 20);
    assert_ne!(heap.base(), 0);
    assert_eq!(
        &log()[before..],
        "reserve 4194304 align 2097152\n\
         create 4194304 type 1 handles 1\n\
         create location 1 id 0\n\
         map 4194304 handle 42\n\
         access 4194304 location 1 id 0\n\
         access flags 3 count 1\n\
         export handle 42 type 1\n"
    );
    // A peer's heap from the descriptor (here our own): imported, mapped, access granted.
    let before = log().len();
    let peer = GpuHeap::import_peer(&gpu, &fd, 3 << 20).unwrap();
    assert_eq!(peer.size(), 4 << 20);
    assert_ne!(peer.base(), heap.base());
    assert_eq!(
        &log()[before..],
        "reserve 4194304 align 2097152\n\
         import fd-is-open 1 type 1\n\
         map 4194304 handle 43\n\
         access 4194304 location 1 id 0\n\
         access flags 3 count 1\n"
    );
    // Teardown in reverse: unmap, release the handle, free the range.
    let before = log().len();
    drop(peer);
    drop(heap);
    assert_eq!(
        &log()[before..],
        "unmap 4194304\nrelease handle 43\nfree 4194304\nunmap 4194304\nrelease handle 42\nfree 4194304\n"
    );
    drop(fd);

    // Pinned memory and the copies (the fake maps device addresses of pinned memory 1:1).
    let buf = PinnedBuf::new(&gpu, 64).unwrap();
    assert!(log().contains("host alloc 64 flags 3\n"), "DEVICEMAP | PORTABLE: {}", log());
    let data: Vec<u8> = (0..64).collect();
    let mut back = [0u8; 64];
    // SAFETY: the buffer is 64 bytes and nothing else uses it.
    unsafe {
        gpu.copy_htod(buf.device_ptr(), &data).unwrap();
        gpu.copy_dtoh(&mut back, buf.device_ptr()).unwrap();
        gpu.copy_dtod(buf.device_ptr(), buf.device_ptr() + 32, 0).unwrap();
    }
    assert_eq!(&back[..], &data[..]);
    assert!(!gpu.pointer_is_device(buf.host_ptr().cast()).unwrap());
    drop(buf);
    assert!(log().ends_with("memcpy 64\nmemcpy 64\nhost free\n"), "{}", log());
    drop(gpu);
    assert!(log().ends_with("release 0\n"), "{}", log());
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
