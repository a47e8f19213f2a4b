//! What the bootstrap's job tests share: the PE programs they start.
//!
//! Each test file's PEs are a program of their own, `tests/pe/<file>.rs`, built as an example
//! target (`<file>-pe`), which each test process builds (or finds up to date) on first use.
//! Each test binary uses part of this module.
#![allow(dead_code)]

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// What a finished process left: its status, its output, how long it ran.
pub(crate) struct Out {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// A thread that reads `r` to its end.
pub(crate) fn reader(r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::BufReader::new(r).read_to_string(&mut s);
        s
    })
}

/// A connection to `addr` (rank 0's unique-id listener), retried until it listens, at most
/// `limit`.
pub(crate) fn connect_retrying(addr: std::net::SocketAddr, limit: Duration) -> TcpStream {
    let t = Instant::now();
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return s,
            Err(e) => {
                assert!(t.elapsed() < limit, "rank 0 never listened: {e}");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
