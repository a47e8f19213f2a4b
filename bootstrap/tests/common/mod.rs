//! What the bootstrap's job tests share: the PE programs they start.
//!
//! Each test file's PEs are a program of their own, `tests/pe/<file>.rs`, built as an example
//! target (`<file>-pe`), which each test process builds (or finds up to date) on first use.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// `target/<profile>/examples/<name>`, brought up to date with this test's features by one
/// `cargo build --example` per test process (cargo itself decides whether anything changed:
/// an example built earlier without `--features pmix` must not serve a pmix test).
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
        build(&profile_dir, name);
        built.push(name.to_string());
    }
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "{} not found even after cargo built it", path.display());
    path
}

fn build(profile_dir: &Path, name: &str) {
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_string(),
        Some(other) => other.to_string(),
    };
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "oxshmem-bootstrap", "--example", name, "--profile", &profile, "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null());
    if cfg!(feature = "pmix") {
        cmd.args(["--features", "pmix"]);
    }
    let status = cmd.status().expect("running cargo to build a PE program");
    assert!(status.success(), "cargo build of the PE program {name} failed: {status}");
}
