//! The compiled Fortran `shmem` module, one per compiler.
//!
//! oxshmem ships the module's *source* (`shmem.f90`): `.mod` files only work with the compiler
//! (and version) that wrote them. `oshfort` compiles the source once per compiler into a folder
//! named after the compiler and a hash of its `--version` text, the source and the compiler
//! command, and passes that folder with `-I`. The module holds only interfaces, constants and a
//! reference to the library's `SHMEM_TEAM_WORLD`, so programs need the `.mod` file and never
//! an object file of it: the object file the compiler writes is thrown away.
//!
//! Where the folder is: `target/<profile>/oxshmem-fortran/` in a build tree;
//! `<prefix>/lib/oxshmem/fortran/` when the installer compiled it there (for the compiler it
//! found), else the user's cache (`$XDG_CACHE_HOME` or `~/.cache`, `oxshmem/fortran/`).
//! Compilation goes to a private folder that is then renamed into place, so concurrent
//! `oshfort` runs never see half a module.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::layout::Layout;

/// The file the compiler writes for `module shmem`.
pub const MODULE_FILE: &str = "shmem.mod";

/// 64-bit FNV-1a: a stable hash (std's hashers may change between releases).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain([0xffu8].iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The name of the module folder of compiler `fc` for the module source `source`: the
/// compiler's file name and a hash of its version text, the source and the command.
pub fn key(fc: &[OsString], source: &[u8]) -> Result<String, String> {
    let name = fc.first().ok_or("no Fortran compiler given")?;
    let out = Command::new(name)
        .args(&fc[1..])
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e} (set OSHFORT_FC to choose a compiler)", name.to_string_lossy()))?;
    let words = fc.iter().map(|w| w.as_encoded_bytes()).collect::<Vec<_>>().join(&b' ');
    let h = fnv1a(&[&out.stdout, &out.stderr, source, &words]);
    let base = Path::new(name).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let base: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    Ok(format!("{base}-{h:016x}"))
}

/// The user's cache folder for modules.
fn user_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")));
    match base {
        Some(b) => b.join("oxshmem/fortran"),
        // SAFETY: getuid has no preconditions and cannot fail.
        None => std::env::temp_dir().join(format!("oxshmem-fortran-{}", unsafe { libc::getuid() })),
    }
}

/// The folder holding `shmem.mod` for compiler `fc`, compiling the module first if no folder
/// has it yet.
pub fn module_dir(layout: &Layout, fc: &[OsString]) -> Result<PathBuf, String> {
    let src = &layout.fortran_source;
    let text = std::fs::read(src).map_err(|e| format!("reading the Fortran module source {}: {e}", src.display()))?;
    let key = key(fc, &text)?;
    let shipped = layout.fortran_module_root.join(&key);
    if shipped.join(MODULE_FILE).is_file() {
        return Ok(shipped);
    }
    // An installation's folder is not ours to write at use time; a build tree's is.
    let root = if layout.is_build_tree() { layout.fortran_module_root.clone() } else { user_cache() };
    let dir = root.join(&key);
    if !dir.join(MODULE_FILE).is_file() {
        compile_into(&dir, src, fc)?;
    }
    Ok(dir)
}

/// Compiles the module source `src` with `fc` into the folder `dir` (which must not hold a
/// module yet; when another process puts one there first, that one is kept).
pub fn compile_into(dir: &Path, src: &Path, fc: &[OsString]) -> Result<(), String> {
    let parent = dir.parent().ok_or("module folder has no parent")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let name = dir.file_name().ok_or("module folder has no name")?.to_string_lossy();
    let tmp = parent.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| format!("creating {}: {e}", tmp.display()))?;
    let result = (|| {
        // Compilers write .mod files into the working directory by default; no flag needed
        // (gfortran's -J, flang's -module-dir and ifx's -module differ).
        let out = Command::new(&fc[0])
            .args(&fc[1..])
            .arg("-c")
            .arg(src)
            .arg("-o")
            .arg("shmem.o")
            .current_dir(&tmp)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", fc[0].to_string_lossy()))?;
        if !out.status.success() {
            return Err(format!(
                "compiling the Fortran module {} failed ({}):\n{}{}",
                src.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let _ = std::fs::remove_file(tmp.join("shmem.o"));
        if !tmp.join(MODULE_FILE).is_file() {
            return Err(format!("{} wrote no {MODULE_FILE} into {}", fc[0].to_string_lossy(), tmp.display()));
        }
        match std::fs::rename(&tmp, dir) {
            Ok(()) => Ok(()),
            Err(_) if dir.join(MODULE_FILE).is_file() => Ok(()),
            Err(e) => Err(format!("moving {} to {}: {e}", tmp.display(), dir.display())),
        }
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_stable_and_separates_parts() {
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}
