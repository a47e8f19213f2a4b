//! The Rust GPU device (`oxshmem_device::cuda::GpuDevice`, feature `cuda`) in real multi-PE
//! jobs, under the emulated CUDA driver (`tests/emucuda`): set-up (GPU heap, peer mappings,
//! device state), symmetric GPU buffers, host put and get on every PE's copy, a module whose
//! kernels use the device library's globals, launches with checked arguments, and device
//! errors reported by `synchronize`. The module is `tests/cuda/modules/gpu_ring.cu` itself: here
//! built for the CPU target (`oshnvcc --target cpu -shared`), so the emulated driver runs its
//! kernels, which call the device library's own code, on host threads; on a GPU the same source
//! is a fatbin (`scripts/gpu-check.sh`).
//!
//! `cargo test -p oxshmem-tests --features cuda --test gpu_rust`

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_ok, build_emulated_driver};

const PE_GPU: &str = env!("CARGO_BIN_EXE_pe-gpu");

/// The emulated driver's directory and the module image file naming the CPU-target module.
fn setup() -> &'static (PathBuf, PathBuf) {
    static DIRS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIRS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gpu_rust-{}", std::process::id()));
        build_emulated_driver(&dir).unwrap_or_else(|e| panic!("{e}"));
        let so = dir.join("gpu_ring.so");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda/modules/gpu_ring.cu");
        let out = std::process::Command::new(oxshmem_tests::oshnvcc())
            .args(["--target", "cpu", "-shared", "-fPIC"])
            .arg(&src)
            .arg("-o")
            .arg(&so)
            .output()
            .expect("running oshnvcc");
        assert!(
            out.status.success() && so.exists(),
            "oshnvcc --target cpu -shared {} failed:\n{}{}",
            src.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let image = dir.join("gpu_ring.image");
        std::fs::write(&image, format!("OXEMUCUDA-HOST-SO\n{}", so.display())).expect("writing the module image");
        (dir, image)
    })
}

fn job(n: usize, case: &str, env: &[(&str, &str)]) -> JobResult {
    let (dir, image) = setup();
    let mut j = Job::new(n, PE_GPU)
        .args(&[case, image.to_str().expect("a UTF-8 path")])
        .env("LD_LIBRARY_PATH", dir.to_str().expect("a UTF-8 path"))
        .env("SHMEM_SYMMETRIC_SIZE", "8M")
        .timeout(Duration::from_secs(120));
    for (k, v) in env {
        j = j.env(k, v);
    }
    j.run()
}

/// Kernels store into the next PE's GPU buffer through the device state the module's globals
/// point at, and add and fetch-add on its counters; host put and get reach every PE's copy;
/// freed space is reused. Over each channel: P2P, the proxy (the Rust device's proxy thread)
/// and IBGDA (its software NIC), whose atomics run the module's own atomic kernel.
#[test]
fn a_module_kernel_reaches_every_peer_over_each_channel() {
    for channel in ["p2p", "proxy", "ibgda"] {
        for n in [2, 4] {
            let r = job(n, "ring", &[("OXSHMEM_DEVICE_CHANNEL", channel)]);
            assert_job_ok(&r);
            assert_each_pe_says(&r, n, |pe| {
                format!("PE {pe}: ring_put from PE {} arrived (32 threads)", (pe + n - 1) % n)
            });
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: atomics from kernels and the host on GPU memory agree"));
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: host put and get on every PE's GPU buffer agree"));
            if channel == "ibgda" {
                // Issue 31, item 4: what the GPU's producers read-modify-write (the queues'
                // counters, locks, error latch, scratch bitmap) is GPU memory; the queues the
                // NIC reads and the host observes are host memory (OXSHMEM_IBGDA_QUEUE_MEM=host).
                for (what, mem) in
                    [("IBGDA queue descriptors", "GPU"), ("IBGDA channel table", "GPU"), ("IBGDA queues", "host")]
                {
                    assert_each_pe_says(&r, n, |pe| format!("PE {pe}: placement: {what} in {mem} memory"));
                }
            }
        }
    }
}

/// A device error (a put to a PE out of range) comes back from `synchronize` in words; bad
/// launches and modules fail before reaching the GPU.
#[test]
fn device_errors_and_bad_launches_are_reported() {
    let r = job(2, "errors", &[]);
    assert_job_ok(&r);
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: errors reported"));
    assert!(
        r.stdout.contains("ERR too few arguments: PE 0: device kernel (host): ring_put takes 3 parameters"),
        "{}",
        r.report()
    );
}

/// The GPU heap is a segment of the runtime: its ordinary pointer-based routines (put, get, p,
/// g, strided, atomics, put with signal and the signal wait, waits and tests, `shmem_ptr`) reach
/// `GpuBuf` memory on every PE, and a routine that does not (a lock) says so.
#[test]
fn the_runtime_routes_host_routines_to_gpu_memory() {
    for n in [2, 3] {
        let r = job(n, "host-ops", &[]);
        assert_job_ok(&r);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: host routines on GPU memory agree"));
    }
}

/// A channel that does not exist is refused at start-up, naming the variable and the choices.
#[test]
fn the_rust_gpu_device_refuses_an_unknown_channel() {
    let r = job(2, "ring", &[("OXSHMEM_DEVICE_CHANNEL", "carrier-pigeon")]);
    assert!(!r.status.success(), "{}", r.report());
    assert!(
        r.stderr.contains("OXSHMEM_DEVICE_CHANNEL=\"carrier-pigeon\": expected auto, p2p, proxy, ibgda"),
        "{}",
        r.report()
    );
}

/// Without a driver, `GpuDevice::init` fails with the driver's message, not a panic.
#[test]
fn without_a_driver_init_says_so() {
    let r = Job::new(2, PE_GPU)
        .args(&["no-gpu"])
        .env("LD_LIBRARY_PATH", "/nonexistent")
        .timeout(Duration::from_secs(60))
        .run();
    assert_job_ok(&r);
}
