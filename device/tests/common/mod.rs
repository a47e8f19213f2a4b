//! What the device crate's process tests share: the child programs they start, and the sides of
//! the exchanges that a test and its child both run.
//!
//! A child is a program of its own, `tests/pe/<file>.rs`, built as an example target of this
//! crate (`fdpass-pe`, `cuda-gpu-pe`, `cuda-nodriver-pe`), never the test binary re-run as a
//! `#[test]` that returns at once outside its parent (such a "test" passed without testing
//! anything). Each test binary uses part of this module.
#![allow(dead_code)]

pub(crate) mod fdpass_pair;
pub(crate) mod gpu_pair;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// `target/<profile>/examples/<name>`, brought up to date with this test's features by one
/// `cargo build --example` per test process (cargo decides whether anything changed).
///
/// # Panics
/// If cargo cannot build it.
pub(crate) fn pe_program(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let exe = std::env::current_exe().expect("current_exe");
    let mut profile_dir = exe.parent().expect("the test executable has a folder").to_path_buf();
    if profile_dir.file_name().is_some_and(|n| n == "deps") {
        profile_dir.pop();
    }
    if !built.iter().any(|b| b == name) {
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let features: Vec<&str> = [("cuda", cfg!(feature = "cuda")), ("verbs", cfg!(feature = "verbs"))]
            .iter()
            .filter(|f| f.1)
            .map(|f| f.0)
            .collect();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "oxshmem-device", "--example", name, "--profile", &profile, "--features"])
            .arg(features.join(","))
            .arg("--manifest-path")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .arg("--target-dir")
            .arg(profile_dir.parent().expect("target/<profile> has a parent"))
            .stdin(Stdio::null())
            .status()
            .expect("running cargo to build a child program");
        assert!(status.success(), "cargo build of the child program {name} failed: {status}");
        built.push(name.to_string());
    }
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "{} not found even after cargo built it", path.display());
    path
}
