//! What the tools' tests share: where things are built, temporary directories, running
//! commands, and the programs of a job.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `target/<profile>`: the directory above the test executable's `deps/`.
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("the test executable has a directory").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// The workspace root.
pub(crate) fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// This crate's directory.
pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds what the tools need beside them and `cargo test -p oxshmem-tools` does not build
/// (the C library and `oshrun`), once per test process; cargo makes this a no-op when they
/// are fresh.
pub(crate) fn ensure_built() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let profile = match profile_dir().file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(p) => p.to_string(),
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let target = profile_dir().parent().expect("target/<profile> has a parent").to_path_buf();
        let manifest = source_root().join("Cargo.toml");
        let out = Command::new(&cargo)
            .args(["build", "-p", "oxshmem-c", "-p", "oxshmem-bootstrap", "--lib", "--bin", "oshrun", "--profile"])
            .arg(&profile)
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .output()
            .expect("running cargo");
        assert!(
            out.status.success(),
            "building liboxshmem and oshrun failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// A tool of this crate (`oshcc`, ...) or beside it (`oshrun`, `oshc++`).
pub(crate) fn tool(name: &str) -> PathBuf {
    let p = profile_dir().join(name);
    assert!(std::fs::symlink_metadata(&p).is_ok(), "{} is not built", p.display());
    p
}

/// Whether `cmd --version` runs. If not, the test is skipped with the reason, or fails where the
/// run requires every tool (`oxshmem_test_require`): the caller just returns on `false`.
pub(crate) fn have(cmd: &str) -> bool {
    let ok = Command::new(cmd).arg("--version").output().is_ok_and(|o| o.status.success());
    oxshmem_test_require::need(cmd, ok, &format!("`{cmd} --version` does not run (install {cmd})"))
}

/// A temporary directory of one test, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// A new, empty directory named after the test `tag`.
    pub(crate) fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("oxshmem-tools-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// `name` inside it.
    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Text of a command's output, for failure messages.
pub(crate) fn describe(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `cmd`, failing the test with its output unless it succeeds; returns stdout.
pub(crate) fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", describe(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `oshrun -n N --timeout 120 prog`, which must succeed; returns stdout.
pub(crate) fn oshrun_ok(oshrun: &Path, n: usize, prog: &Path) -> String {
    run_ok(Command::new(oshrun).args(["-n", &n.to_string(), "--timeout", "120"]).arg(prog))
}

/// Checks that `out` has one line `PE i of n: got (i-1 mod n)` per PE.
pub(crate) fn check_ring(out: &str, n: usize, prefix: &str) {
    for i in 0..n {
        let want = format!("{prefix}PE {i} of {n}: got {}", (i + n - 1) % n);
        assert!(out.lines().any(|l| l == want), "no line {want:?} in:\n{out}");
    }
}

/// `oxshmem-info` with none of the configuration variables set, then `set`.
pub(crate) fn info(args: &[&str], set: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(tool("oxshmem-info"));
    cmd.args(args);
    for v in oxshmem::config::shown_vars() {
        cmd.env_remove(v.name);
        for a in v.aliases {
            cmd.env_remove(a);
        }
    }
    for (k, v) in set {
        cmd.env(k, v);
    }
    run_ok(&mut cmd)
}
