//! Finds libpmix when the `pmix` feature is on; does nothing otherwise.
//!
//! Order: `PMIX_LIB_DIR` if set, then `pkg-config --variable=libdir pmix`, then Debian's
//! `libpmix-dev` location (`/usr/lib/x86_64-linux-gnu/pmix2/lib`, PMIx 4.2). Fails the build
//! with what to install when none has `libpmix.so`.

use std::path::{Path, PathBuf};

const DEBIAN_LIBDIR: &str = "/usr/lib/x86_64-linux-gnu/pmix2/lib";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PMIX_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if std::env::var_os("CARGO_FEATURE_PMIX").is_none() {
        return;
    }
    let from_env = std::env::var_os("PMIX_LIB_DIR").map(PathBuf::from);
    let from_pkg_config = std::process::Command::new("pkg-config")
        .args(["--variable=libdir", "pmix"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| !p.as_os_str().is_empty());
    let candidates = [from_env, from_pkg_config, Some(PathBuf::from(DEBIAN_LIBDIR))];
    let Some(dir) = candidates.into_iter().flatten().find(|d| has_lib(d)) else {
        panic!(
            "feature `pmix`: libpmix.so not found (looked in $PMIX_LIB_DIR, pkg-config's \
             libdir of `pmix`, and {DEBIAN_LIBDIR}). Install it (Debian/Ubuntu: \
             `apt-get install libpmix-dev`) or set PMIX_LIB_DIR to the folder holding libpmix.so."
        );
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=pmix");
    // The library's own folder is not always on the loader's path (Debian adds a symlink in
    // the multiarch folder; other installs do not): let this package's tests, examples and
    // binaries find it. Dependents that link libpmix through us add their own rpath.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}

fn has_lib(dir: &Path) -> bool {
    dir.join("libpmix.so").exists()
}
