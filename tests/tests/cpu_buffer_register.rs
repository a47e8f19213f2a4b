//! Local buffers outside the GPU heap over IBGDA (issue 31, item 8), on the CPU target:
//! `tests/cuda/buffer_register.cu`, built with `oshnvcc --target cpu`, run at 2 PEs.
//!
//! A NIC reaches only registered memory: NVSHMEM's IBGDA needs `nvshmemx_buffer_register` for
//! a kernel's put from (or get into) `cudaMalloc` or pinned host memory, which an implicit
//! on-demand-paging key does not cover on real hardware. The device library used to give such
//! a buffer that implicit key, so the software NIC executed what a real NIC would fault on.
//! Now registration enters the buffer, under its own NIC key, in a table of the IBGDA channel
//! that device code looks local buffers up in, and an unregistered one is a recorded device
//! error naming the put, the buffer and `nvshmemx_buffer_register`, which the PE's finalize
//! reports (ending the job, as a device-side failure ends an NVSHMEM job).
//!
//! - registered buffers (a put from `cudaMalloc` memory, one from pinned host memory, a
//!   put_signal, a block put, a get into `cudaMalloc` memory; unregister, register again)
//!   deliver their data over IBGDA, P2P and the proxy;
//! - an unregistered `cudaMalloc` source: over IBGDA nothing is delivered and the job ends with
//!   the recorded error; over P2P and the proxy (which reach any local memory) the put delivers.
//!
//! Needs a C++ compiler; builds `liboxshmem.so`, `oshnvcc` and `oshrun` with cargo.

use oxshmem_tests::{have_cxx, profile_dir, repo_root as root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The program, built once per test process (a temporary name first, then renamed).
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = profile_dir().join("cpu-programs");
        std::fs::create_dir_all(&dir).expect("the programs' directory");
        let exe = dir.join("buffer_register");
        let tmp = dir.join(format!("buffer_register.tmp{}", std::process::id()));
        let out = Command::new(oxshmem_tests::oshnvcc())
            .args(["--target", "cpu"])
            .arg(root().join("tests/cuda/buffer_register.cu"))
            .arg("-o")
            .arg(&tmp)
            .stdin(Stdio::null())
            .output()
            .expect("running oshnvcc");
        assert!(
            out.status.success() && tmp.exists(),
            "oshnvcc --target cpu buffer_register.cu failed:\n{}",
            text(&out)
        );
        std::fs::rename(&tmp, &exe).expect("renaming the built program");
        exe
    })
}

/// Runs the program at 2 PEs over `channel` with `args`: (success, everything it printed).
fn run(channel: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(oxshmem_tests::oshrun())
        .args(["-n", "2", "--timeout", "120"])
        .arg(program())
        .args(args)
        .env("OXSHMEM_DEVICE_CHANNEL", channel)
        .env("CUTEST_TIMEOUT", "90")
        .stdin(Stdio::null())
        .output()
        .expect("running oshrun");
    (out.status.success(), text(&out))
}

fn oks(out: &str, what: &str) -> usize {
    out.lines().filter(|l| l.contains(": ok buffer_register: ") && l.contains(what)).count()
}

/// Registered buffers deliver over every channel: 3 ok lines per PE.
fn registered_over(channel: &str) {
    if !have_cxx() {
        return;
    }
    let (ok, out) = run(channel, &[]);
    let n = oks(&out, "");
    assert!(ok && n == 6, "registered buffers over {channel}: {} with {n} of 6 ok lines:\n{out}", ok_word(ok));
}

fn ok_word(ok: bool) -> &'static str {
    if ok { "ran" } else { "failed" }
}

#[test]
fn registered_buffers_deliver_over_ibgda() {
    registered_over("ibgda");
}

#[test]
fn registered_buffers_deliver_over_p2p() {
    registered_over("p2p");
}

#[test]
fn registered_buffers_deliver_over_the_proxy() {
    registered_over("proxy");
}

#[test]
fn an_unregistered_buffer_over_ibgda_is_a_device_error_naming_it() {
    if !have_cxx() {
        return;
    }
    let (ok, out) = run("ibgda", &["unregistered"]);
    assert!(!ok, "the job ended well although its put's source was never registered:\n{out}");
    assert_eq!(oks(&out, "unregistered put: not delivered"), 2, "the put must deliver nothing:\n{out}");
    // Each PE printed its buffer's address, and each fails at nvshmem_finalize naming its own;
    // the first to end takes the job down, so one PE's message may be all there is.
    let errors: Vec<String> = (0..2)
        .map(|pe| {
            let addr = out
                .lines()
                .find_map(|l| l.strip_prefix(&format!("PE {pe}: unregistered source at ")))
                .unwrap_or_else(|| panic!("PE {pe} printed no address:\n{out}"))
                .trim()
                .to_string();
            format!(
                "PE {pe}: nvshmem_finalize: device nvshmem_put (block 0, thread 0): the local buffer at {addr} (+4096 \
                 bytes) is neither in the symmetric heap nor registered"
            )
        })
        .collect();
    assert!(errors.iter().any(|e| out.contains(e)), "none of {errors:?}:\n{out}");
    assert!(out.contains("call nvshmemx_buffer_register(ptr, len) on it"), "the error does not say what to do:\n{out}");
}

#[test]
fn an_unregistered_buffer_over_p2p_and_the_proxy_delivers() {
    if !have_cxx() {
        return;
    }
    for channel in ["p2p", "proxy"] {
        let (ok, out) = run(channel, &["unregistered"]);
        let n = oks(&out, "unregistered put: delivered");
        assert!(ok && n == 2, "an unregistered source over {channel}: {} with {n} of 2 ok lines:\n{out}", ok_word(ok));
    }
}
