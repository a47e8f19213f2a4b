//! What the tests of the C ABI share: where the built library, the headers and the generator's
//! output are, and how to run a C compiler.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `target/<profile>`: the directory above the test executable's `deps/`, where cargo puts
/// `liboxshmem.so`, `liboxshmem.a` and `oshrun`.
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("the test executable has a directory").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// This crate's directory.
pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The checked-in headers.
pub(crate) fn include_dir() -> PathBuf {
    crate_dir().join("include")
}

/// What build.rs generated for this build.
pub(crate) fn out_dir() -> PathBuf {
    PathBuf::from(env!("OUT_DIR"))
}

/// Builds, once per test process, what these tests use beside the test executable and
/// `cargo test` never builds: the C library itself (this crate makes no rlib, so no test
/// links it and cargo does not build it for them), `oshrun` and the compiler wrappers. Always
/// asks cargo, which makes it a no-op when they are fresh and rebuilds them when a source
/// changed, so a test never runs yesterday's library; on a fresh clone it is the first build.
pub(crate) fn ensure_built() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let profile = match profile_dir().file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(p) => p.to_string(),
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let target = profile_dir().parent().expect("target/<profile> has a parent").to_path_buf();
        let manifest = crate_dir().join("../../Cargo.toml");
        run_ok(
            &cargo,
            &[
                "build",
                "-p",
                "oxshmem-c",
                "-p",
                "oxshmem-bootstrap",
                "--bin",
                "oshrun",
                "-p",
                "oxshmem-tools",
                "--bin",
                "oshcc",
                "--bin",
                "oshcxx",
                "--bin",
                "oxshmem-api-coverage",
                "--lib",
                "--profile",
                &profile,
                "--manifest-path",
                arg(&manifest),
                "--target-dir",
                arg(&target),
            ],
        );
    });
}

/// The shared library, built by [`ensure_built`].
pub(crate) fn shared_lib() -> PathBuf {
    ensure_built();
    let p = profile_dir().join("liboxshmem.so");
    assert!(p.exists(), "{} not found even after cargo built oxshmem-c", p.display());
    p
}

/// The static library, built by [`ensure_built`].
pub(crate) fn static_lib() -> PathBuf {
    ensure_built();
    let p = profile_dir().join("liboxshmem.a");
    assert!(p.exists(), "{} not found even after cargo built oxshmem-c", p.display());
    p
}

/// A binary that [`ensure_built`] builds into `target/<profile>/`.
pub(crate) fn workspace_bin(file: &str) -> PathBuf {
    ensure_built();
    let p = profile_dir().join(file);
    assert!(p.exists(), "{} not found even after cargo built it", p.display());
    p
}

/// Whether `cmd --version` runs. If not, the test is skipped with the reason, or fails where the
/// run requires every tool (`oxshmem_test_require`): the caller just returns on `false`.
pub(crate) fn have(cmd: &str) -> bool {
    let ok = Command::new(cmd).arg("--version").output().is_ok_and(|o| o.status.success());
    oxshmem_test_require::need(cmd, ok, &format!("`{cmd} --version` does not run (install {cmd})"))
}

/// Runs `cmd args…`, failing the test with its output unless it succeeds.
pub(crate) fn run_ok(cmd: &str, args: &[&str]) -> Output {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("running {cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `p` as a string argument.
pub(crate) fn arg(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The names a header declares: functions (the `SHMEM_FUNCTION_ATTRIBUTES` lines of
/// `shmem.h`, the `NVSHMEMI_HOST_API` lines of `nvshmem.h`; every prototype is on one) and variables (the `extern` lines).
pub(crate) fn declared(header: &str) -> (Vec<String>, Vec<String>) {
    let ident_before = |s: &str| -> String {
        let s = s.trim_end();
        let start = s.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        s[start..].to_string()
    };
    let mut funcs = Vec::new();
    let mut vars = Vec::new();
    for line in header.lines() {
        let l = line.trim();
        if l.starts_with('#') {
            continue;
        }
        if l.contains("SHMEM_FUNCTION_ATTRIBUTES") || l.starts_with("NVSHMEMI_HOST_API ") {
            let head = l.split('(').next().expect("a prototype has a parameter list");
            funcs.push(ident_before(head));
        } else if l.starts_with("extern ") && l.ends_with(';') && !l.contains('"') {
            vars.push(ident_before(l.trim_end_matches(';')));
        }
    }
    (funcs, vars)
}

/// Makes `liboxshmem.so.1` (the SONAME, which programs linked with `-loxshmem` ask the
/// loader for) a link to `liboxshmem.so` beside it, as an installation would; returns the
/// directory. Cargo produces only `liboxshmem.so`.
pub(crate) fn lib_dir_with_soname() -> PathBuf {
    let dir = profile_dir();
    shared_lib();
    let link = dir.join("liboxshmem.so.1");
    if std::fs::symlink_metadata(&link).is_err() {
        match std::os::unix::fs::symlink("liboxshmem.so", &link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => panic!("linking {} to liboxshmem.so: {e}", link.display()),
        }
    }
    dir
}
