//! Host-carried atomics for a kernel that fills the GPU (issue 31, item 3):
//! `tests/cuda/persistent.cu` (NVSHMEM-style) launches on every PE a collective kernel with as
//! many blocks as the GPU holds at once, whose first thread does a fetching atomic and a signal
//! add on the next PE, carried out by the host (the proxy, the software NIC, or the proxy between
//! GPUs without native P2P atomics), and waits for the previous PE's on the device.
//!
//! The host carries an atomic out as a one-thread kernel. The CPU target keeps a GPU's rule that
//! a kernel starts only when its blocks fit beside the running kernels of its context
//! (`cpu_runtime.cpp`), so where that kernel ran in the program's context (before) it waited for
//! the persistent kernel, which waited for it: the job hung until the program's timeout. It
//! runs in a context of its own per device (`segment::amo_at`), which a GPU time-slices with the
//! program's, made on the GPU whose memory it is: the emulated driver's log shows each PE making
//! one on its peers' devices.
//!
//! Needs a C and C++ compiler; builds `liboxshmem.so`, `oshnvcc` and `oshrun` with cargo.

use oxshmem_tests::{have_cxx, run_logged as run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// `tests/cuda/persistent.cu` built for the CPU target (once per test process).
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| oxshmem_tests::build_cpu_program("persistent", "cpu-persistent"))
}

/// Runs the program at `n` PEs over `channel` on `devices` emulated GPUs (PE p on GPU
/// p % devices), with native P2P atomics or not; checks its `ok` lines and returns the emulated
/// driver's log.
fn job(n: usize, channel: &str, devices: usize, native: bool) -> String {
    let exe = program();
    let log = exe.with_file_name(format!("emucuda-{channel}-{n}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let mut c = Command::new(oxshmem_tests::oshrun());
    c.arg("-n").arg(n.to_string()).arg(exe).current_dir(exe.parent().expect("the program's folder"));
    c.env("OXSHMEM_DEVICE_CHANNEL", channel)
        .env("OXSHMEM_EMUCUDA_DEVICES", devices.to_string())
        .env("OXSHMEM_EMUCUDA_P2P_ATOMICS", if native { "1" } else { "0" })
        .env("OXSHMEM_EMUCUDA_LOG", &log)
        .env("CUTEST_TIMEOUT", "60")
        .env("SHMEM_SYMMETRIC_SIZE", "16M");
    let (ok, out) = run(&mut c, Duration::from_secs(180));
    let oks = out.lines().filter(|l| l.contains(": ok persistent: ")).count();
    assert!(ok && oks == n, "persistent at {n} PEs over {channel} ({oks} of {n} ok lines):\n{out}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    text
}

#[test]
fn a_kernel_that_fills_the_gpu_gets_its_proxy_atomics() {
    if !have_cxx() {
        return;
    }
    for n in [2, 3] {
        job(n, "proxy", 8, true);
    }
}

#[test]
fn a_kernel_that_fills_the_gpu_gets_its_software_nic_atomics() {
    if !have_cxx() {
        return;
    }
    job(2, "ibgda", 8, true);
}

/// Between GPUs without native P2P atomics the proxy carries them, on the peer's GPU: each PE
/// makes an atomic context on its own device and on the other one.
#[test]
fn without_native_p2p_atomics_they_run_on_the_owners_gpu() {
    if !have_cxx() {
        return;
    }
    let log = job(2, "p2p", 2, false);
    let made: Vec<&str> = log.lines().filter(|l| l.contains("cuCtxCreate(device")).collect();
    for dev in 0..2 {
        let on = made.iter().filter(|l| l.contains(&format!("cuCtxCreate(device {dev})"))).count();
        assert_eq!(on, 2, "expected both PEs to make an atomic context on device {dev}:\n{}", made.join("\n"));
    }
}
