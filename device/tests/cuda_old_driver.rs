//! Issue 32, item 5: a `libcuda.so.1` that lacks a routine oxshmem calls (a driver of an older
//! CUDA) is refused with a clear error naming the routine and the CUDA release it came with,
//! as a missing driver is; nothing panics or aborts (`cudarc` panics on a missing symbol, which
//! aborted the process).
//!
//! Each case builds a stand-in driver (every routine of `DRIVER_SYMBOLS` but the ones left out,
//! stubs that report one device) with `cc`, and runs `cuda::probe()` in a child process (this
//! test binary, re-executed with `LD_LIBRARY_PATH` on the stand-in), under a wall-clock limit.
#![cfg(feature = "cuda")]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxshmem_device::cuda::{self, DRIVER_SYMBOLS};

const CHILD_VAR: &str = "OXS_OLD_DRIVER_CHILD";

/// Not a test of its own: the child's side, which probes and prints what it got.
#[test]
fn child_probe() {
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    match cuda::probe() {
        Ok(info) => println!("probe ok: {info}"),
        Err(e) => {
            println!("probe error: {e}");
            return;
        }
    }
    if std::env::var(CHILD_VAR).unwrap() == "stream-wait" {
        let gpu = cuda::Gpu::open(0).expect("Gpu::open on the stand-in");
        // SAFETY: the stand-in's stubs touch nothing; the null stream and address are not used.
        match unsafe { gpu.stream_wait_value32(std::ptr::null_mut(), 0, 1) } {
            Ok(()) => println!("stream wait ok"),
            Err(e) => println!("stream wait error: {e}"),
        }
    }
}

/// A stand-in driver without `omit`, built into `dir` as `libcuda.so.1` and `libcuda.so`.
fn stand_in(dir: &Path, omit: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut c = String::from("#include <string.h>\n");
    for (name, _) in DRIVER_SYMBOLS.iter().filter(|(n, _)| !omit.contains(n)) {
        let body = match *name {
            "cuDriverGetVersion" => "int cuDriverGetVersion(int *v) { *v = 11040; return 0; }".to_string(),
            "cuDeviceGetCount" => "int cuDeviceGetCount(int *n) { *n = 1; return 0; }".to_string(),
            "cuDeviceGet" => "int cuDeviceGet(int *d, int o) { *d = o; return 0; }".to_string(),
            "cuDeviceGetName" => {
                "int cuDeviceGetName(char *s, int n, int d) { (void)d; strncpy(s, \"Old GPU\", n); return 0; }"
                    .to_string()
            }
            "cuDeviceGetAttribute" => {
                "int cuDeviceGetAttribute(int *v, int a, int d) { (void)a; (void)d; *v = 1; return 0; }".to_string()
            }
            "cuDeviceTotalMem_v2" => {
                "int cuDeviceTotalMem_v2(unsigned long *b, int d) { (void)d; *b = 1ul << 30; return 0; }".to_string()
            }
            n => format!("int {n}(void) {{ return 0; }}"),
        };
        c.push_str(&body);
        c.push('\n');
    }
    let src = dir.join("libcuda.c");
    std::fs::write(&src, c).unwrap();
    let lib = dir.join("libcuda.so.1");
    let o = Command::new("cc")
        .args(["-shared", "-fPIC", "-w", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("this test needs a C compiler: install gcc (apt-get install gcc): {e}"));
    assert!(o.status.success(), "cc failed: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::copy(&lib, dir.join("libcuda.so")).unwrap();
}

/// Runs [`child_probe`] (`what`: `probe`, or `stream-wait` to go on to a stream wait) with
/// `dir` first on the library path; (exit status, stdout, stderr).
fn probe_with(dir: &Path, what: &str) -> (std::process::ExitStatus, String, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_probe", "--nocapture", "--test-threads", "1"])
        .env(CHILD_VAR, what)
        .env("LD_LIBRARY_PATH", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the probing child still runs after 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status, out, err)
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_driver_that_lacks_a_routine_is_refused_naming_it() {
    let tmp = TempDir(std::env::temp_dir().join(format!("oxshmem-old-driver-{}", std::process::id())));
    // A routine that the basic operations need (the probe calls it; the old loader panicked on
    // it): the driver is refused as none, naming the routine.
    let d = tmp.0.join("no-attribute");
    stand_in(&d, &["cuDeviceGetAttribute", "cuMemCreate"]);
    let (status, out, err) = probe_with(&d, "probe");
    assert!(status.success(), "the child did not end cleanly ({status}):\n{out}\n{err}");
    let want = "probe error: no CUDA driver: libcuda.so.1, a CUDA 11.4 driver, lacks cuDeviceGetAttribute (CUDA \
                2.0), cuMemCreate (CUDA 10.2 (driver 440)) that oxshmem calls: it needs a driver of CUDA 10.2 \
                (driver 440) or newer (update the NVIDIA driver)";
    assert!(out.contains(want), "{want:?} missing:\n{out}\n{err}");
    assert!(!err.contains("panicked") && !err.contains("Missing symbol"), "{err}");
    // A CUDA 11.4 driver: it lacks the two routines that came with 11.7. The driver loads; the
    // operation that needs one of them fails, naming it.
    let d = tmp.0.join("cuda-11.4");
    stand_in(&d, &["cuStreamWaitValue32_v2", "cuMemGetHandleForAddressRange"]);
    let (status, out, err) = probe_with(&d, "stream-wait");
    assert!(status.success(), "the child did not end cleanly ({status}):\n{out}\n{err}");
    assert!(out.contains("probe ok: CUDA driver 11.4, 1 device"), "{out}\n{err}");
    let want = "stream wait error: CUDA driver too old: libcuda.so.1, a CUDA 11.4 driver, lacks \
                cuStreamWaitValue32_v2 (CUDA 11.7 (driver 515)) that oxshmem calls: it needs a driver of CUDA \
                11.7 (driver 515) or newer (update the NVIDIA driver)";
    assert!(out.contains(want), "{want:?} missing:\n{out}\n{err}");
    // Everything there: the stand-in passes the checks (and runs on its stubs).
    let d = tmp.0.join("complete");
    stand_in(&d, &[]);
    let (status, out, err) = probe_with(&d, "stream-wait");
    assert!(status.success() && out.contains("probe ok: ") && out.contains("stream wait ok"), "{status}\n{out}\n{err}");
}
