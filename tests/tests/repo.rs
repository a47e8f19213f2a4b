//! The repository stands alone: a fresh clone, with nothing beside it, builds and passes its
//! tests, so no file of it may point outside it (at the team's `shared/` folder, which users
//! never have).

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn no_file_points_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("repository root");
    let mut all = Vec::new();
    files(&root, &mut all);
    assert!(all.len() > 100, "found only {} files under {}", all.len(), root.display());
    // Built from pieces, so that this file does not match itself.
    let needles = [["../", "shared"].concat(), ["shared/", "reference"].concat(), ["shared/", "tools"].concat()];
    let mut bad = Vec::new();
    for f in &all {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        for (i, line) in text.lines().enumerate() {
            if needles.iter().any(|n| line.contains(n.as_str())) {
                bad.push(format!("{}:{}: {line}", f.strip_prefix(&root).unwrap_or(f).display(), i + 1));
            }
        }
    }
    assert!(bad.is_empty(), "files that reach outside the repository:\n{}", bad.join("\n"));
}

/// The runtime library depends on `tracing` only: the log subscriber (tracing-subscriber and
/// its regex engine) comes in with the feature `log`, which the binaries, tests and the C
/// library ask for, never into a Rust user's build by default.
#[test]
fn the_runtime_library_depends_on_tracing_only() {
    let tree = |features: &[&str]| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let out = std::process::Command::new(cargo)
            .args(["tree", "--offline", "-e", "normal", "--prefix", "none", "-p", "oxshmem", "--manifest-path"])
            .arg(&manifest)
            .args(features)
            .output()
            .expect("running cargo tree");
        assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let plain = tree(&[]);
    assert!(plain.lines().any(|l| l.starts_with("tracing ")), "{plain}");
    assert!(!plain.contains("tracing-subscriber"), "oxshmem pulls in the subscriber by default:\n{plain}");
    let with_log = tree(&["--features", "log"]);
    assert!(with_log.lines().any(|l| l.starts_with("tracing-subscriber ")), "{with_log}");
}

/// No test is a child process's entry point that returns at once outside its parent: such a
/// `#[test]` (its body starting `let Ok(x) = std::env::var(..) else { return }`) counted as a
/// passing test that tested nothing. A child is a program of its own (`tests/src/bin/`, or an
/// example under a crate's `tests/pe/`); see docs/testing.md.
#[test]
fn no_test_is_a_child_entry_point_that_passes_outside_its_parent() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("repository root");
    let mut all = Vec::new();
    files(&root, &mut all);
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in all.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.trim() != "#[test]" {
                continue;
            }
            checked += 1;
            // The attribute, the signature, then the first statements of the body.
            let body = lines[i + 1..lines.len().min(i + 6)].join("\n");
            let first = body.split_once('{').map_or("", |(_, b)| b);
            let head: String = first.lines().take(3).collect::<Vec<_>>().join(" ");
            if head.contains("std::env::var") && head.contains("else") && head.contains("return") {
                bad.push(format!("{}:{}", f.strip_prefix(&root).unwrap_or(f).display(), i + 1));
            }
        }
    }
    assert!(checked > 500, "found only {checked} tests under {}", root.display());
    assert!(bad.is_empty(), "tests that return at once unless a parent process set a variable:\n{}", bad.join("\n"));
}
