//! Records build facts for `oxshmem-info` (profile, optimization, target, rustc) and makes the
//! links `oshc++` and `oshCC` to `oshcxx` in `target/<profile>/`: cargo refuses a `+` in a
//! binary's name, and users (and build systems) call the C++ wrapper by those names. A link
//! made before `oshcxx` is linked dangles only until the end of the same build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let out = PathBuf::from(env("OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let profile_dir = out.ancestors().nth(3).filter(|d| d.join("build").is_dir()).map(Path::to_path_buf);
    let profile = profile_dir
        .as_deref()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .map_or_else(|| env("PROFILE"), str::to_string);
    let rustc = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=OXSHMEM_BUILD_PROFILE={profile}");
    println!("cargo:rustc-env=OXSHMEM_BUILD_OPT_LEVEL={}", env("OPT_LEVEL"));
    println!("cargo:rustc-env=OXSHMEM_BUILD_DEBUG={}", env("DEBUG"));
    println!("cargo:rustc-env=OXSHMEM_BUILD_TARGET={}", env("TARGET"));
    println!("cargo:rustc-env=OXSHMEM_BUILD_RUSTC={rustc}");

    if let Some(dir) = profile_dir {
        for alias in ["oshc++", "oshCC"] {
            let link = dir.join(alias);
            if std::fs::read_link(&link).is_ok_and(|t| t == Path::new("oshcxx")) {
                continue;
            }
            let _ = std::fs::remove_file(&link);
            if let Err(e) = std::os::unix::fs::symlink("oshcxx", &link) {
                println!("cargo:warning=could not link {} to oshcxx: {e}", link.display());
            }
        }
    }
}
