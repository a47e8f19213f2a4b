//! One rule for every test that needs something outside the repository: a compiler, a
//! launcher, nvcc, a CUDA driver, a libfabric provider.
//!
//! A developer's machine may lack some of them; there such a test says why it did not run
//! (`SKIPPED: <requirement>: <why>`) and passes. A run that must test everything sets
//! `OXSHMEM_TEST_REQUIRE=all` (`.ci/run` does, after installing everything), or a comma-separated
//! list of requirement names; then a missing requirement fails the test instead, with the
//! install hint. `-name` in the list leaves one requirement out of `all`: two requirements that
//! exclude each other (a CUDA driver, and none) cannot both hold in one run, so CI leaves
//! `cuda-gpu` out of its run without a driver and requires it in its run under the emulated one. No test decides this on its own: every skip in the workspace goes through
//! [`skip`] (or the helpers built on it), so one variable decides for all of them.
//!
//! `OXSHMEM_TEST_REQUIRE_LAUNCHERS` (set by earlier CI scripts) means the same as `all`.

use std::path::PathBuf;

/// The variable that turns skips into failures: `all`, or requirement names separated by commas.
pub const REQUIRE_VAR: &str = "OXSHMEM_TEST_REQUIRE";

/// Whether the run requires `requirement` (see the crate doc).
pub fn required(requirement: &str) -> bool {
    if std::env::var_os("OXSHMEM_TEST_REQUIRE_LAUNCHERS").is_some() {
        return true;
    }
    match std::env::var(REQUIRE_VAR) {
        Ok(list) => {
            let items: Vec<&str> = list.split(',').map(str::trim).collect();
            let left_out = items.iter().any(|r| r.strip_prefix('-') == Some(requirement));
            !left_out && items.iter().any(|r| *r == "all" || *r == requirement)
        }
        Err(_) => false,
    }
}

/// A test cannot run because `requirement` is missing (`why` says what is missing and how to
/// install it). Prints `SKIPPED: …` and returns, so that the caller returns too.
///
/// # Panics
/// When the run requires `requirement` ([`required`]): a skipped test there is a failure.
pub fn skip(requirement: &str, why: &str) {
    if required(requirement) {
        panic!("{requirement} is required in this run ({REQUIRE_VAR}), but {why}");
    }
    eprintln!("SKIPPED: {requirement}: {why}");
}

/// `present`, or else [`skip`] with `why` and `false`: `if !need("nvcc", ok, "…") { return; }`.
pub fn need(requirement: &str, present: bool, why: &str) -> bool {
    if !present {
        skip(requirement, why);
    }
    present
}

/// The file that runs as `tool` from `PATH`, if any.
pub fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(tool)).find(|p| p.is_file())
}

/// `tool` on `PATH`, or else [`skip`] (requirement `tool`, with `install` as the hint) and
/// `None`.
pub fn tool(tool: &str, install: &str) -> Option<PathBuf> {
    let found = which(tool);
    if found.is_none() {
        skip(tool, &format!("{tool} is not on PATH ({install})"));
    }
    found
}

/// The value of environment variable `var` (non-empty), or else [`skip`] (requirement `var`,
/// with `how` saying how to set it) and `None`.
pub fn env(var: &str, how: &str) -> Option<String> {
    let v = std::env::var(var).ok().filter(|s| !s.is_empty());
    if v.is_none() {
        skip(var, &format!("{var} is not set ({how})"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test, because it changes the process's environment.
    #[test]
    fn the_variable_decides_between_skipping_and_failing() {
        let set = |v: Option<&str>| {
            // SAFETY: this is the crate's only test, so no other thread reads the environment.
            unsafe {
                match v {
                    Some(v) => std::env::set_var(REQUIRE_VAR, v),
                    None => std::env::remove_var(REQUIRE_VAR),
                }
                std::env::remove_var("OXSHMEM_TEST_REQUIRE_LAUNCHERS");
            }
        };
        set(None);
        assert!(!required("gcc"));
        assert!(!need("gcc", false, "gcc is missing"));
        assert!(need("gcc", true, "gcc is missing"));
        assert!(which("a-tool-nobody-has-oxshmem").is_none());
        assert!(tool("a-tool-nobody-has-oxshmem", "apt-get install nothing").is_none());

        set(Some("nvcc, gcc"));
        assert!(required("gcc") && required("nvcc") && !required("gfortran"));
        let failed = std::panic::catch_unwind(|| need("gcc", false, "gcc is missing"));
        let msg = *failed.expect_err("a required, missing tool fails").downcast::<String>().unwrap();
        assert!(msg.contains("gcc is required") && msg.contains("gcc is missing"), "{msg}");
        assert!(!need("gfortran", false, "gfortran is missing"));

        set(Some("all"));
        assert!(required("anything"));
        set(Some("all,-cuda-gpu"));
        assert!(required("gcc") && !required("cuda-gpu"));
        assert!(!need("cuda-gpu", false, "no driver"));
        set(Some("all"));
        assert!(std::panic::catch_unwind(|| env("OXSHMEM_NO_SUCH_VARIABLE", "set it")).is_err());
        set(None);
    }
}
