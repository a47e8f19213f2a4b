//! Where the headers, the library and the Fortran module source are, seen from a tool's own
//! executable.
//!
//! Two layouts are recognized:
//! - **installed**: the tool is `<prefix>/bin/NAME` and `<prefix>/include/shmem.h` exists; the
//!   library is in `<prefix>/lib/`, the Fortran source in `<prefix>/share/oxshmem/fortran/`,
//!   modules compiled by the installer in `<prefix>/lib/oxshmem/fortran/`;
//! - **build tree**: the tool is `target/<profile>/NAME` beside `liboxshmem.so`; the headers are
//!   the checked-in `bindings/c/include/` of the source tree above (or of the tree this crate was
//!   built from, when the target directory is elsewhere).

use std::path::{Path, PathBuf};

/// The library's file names.
pub const SHARED_LIB: &str = "liboxshmem.so";
/// The shared library's SONAME, which programs linked with `-loxshmem` ask the loader for.
pub const SONAME: &str = "liboxshmem.so.1";
/// The static library.
pub const STATIC_LIB: &str = "liboxshmem.a";
/// The Fortran module source's file name.
pub const FORTRAN_SOURCE: &str = "shmem.f90";

/// Which kind of tree the tools run from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// An installation under this prefix.
    Installed {
        /// The prefix (`<prefix>/bin` holds the tools).
        prefix: PathBuf,
    },
    /// A cargo build directory (`target/<profile>`) of the source tree `source_root`.
    BuildTree {
        /// The workspace root.
        source_root: PathBuf,
    },
}

/// Where everything a compiler wrapper needs lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Installed or build tree.
    pub kind: Kind,
    /// The directory of the tools (and of `oshrun`).
    pub bin_dir: PathBuf,
    /// Holds `shmem.h`, `shmemx.h`, `mpp/`.
    pub include_dir: PathBuf,
    /// Holds `liboxshmem.so`, `liboxshmem.so.1`, `liboxshmem.a`.
    pub lib_dir: PathBuf,
    /// The Fortran module source, `shmem.f90`.
    pub fortran_source: PathBuf,
    /// Where compiled Fortran modules are kept, one folder per compiler (see
    /// [`crate::fortran`]).
    pub fortran_module_root: PathBuf,
}

/// The source tree this crate was built from.
fn built_from() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn is_source_root(dir: &Path) -> bool {
    dir.join("bindings/c/include/shmem.h").is_file()
}

impl Layout {
    /// The layout around the running executable.
    pub fn locate() -> Result<Layout, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
        // current_exe resolves /proc/self/exe, so links (oshc++ -> oshcxx) lead to the real file.
        let exe = exe.canonicalize().unwrap_or(exe);
        let bin_dir = exe.parent().ok_or("my executable has no directory")?;
        Layout::from_bin_dir(bin_dir)
    }

    /// The layout of tools that lie in `bin_dir`.
    pub fn from_bin_dir(bin_dir: &Path) -> Result<Layout, String> {
        let bin_dir = bin_dir.to_path_buf();
        if let Some(prefix) = bin_dir.parent()
            && bin_dir.file_name().is_some_and(|n| n == "bin")
            && prefix.join("include/shmem.h").is_file()
        {
            return Ok(Layout::installed(prefix));
        }
        let source_root = bin_dir
            .ancestors()
            .find(|d| is_source_root(d))
            .map(Path::to_path_buf)
            .or_else(|| Some(built_from()).filter(|d| is_source_root(d)))
            .ok_or_else(|| {
                format!(
                    "no oxshmem installation or source tree around {}: expected ../include/shmem.h \
                     (installed) or bindings/c/include/shmem.h in a directory above (build tree)",
                    bin_dir.display()
                )
            })?;
        let source_root = source_root.canonicalize().unwrap_or(source_root);
        Ok(Layout {
            include_dir: source_root.join("bindings/c/include"),
            lib_dir: bin_dir.clone(),
            fortran_source: source_root.join("bindings/fortran").join(FORTRAN_SOURCE),
            fortran_module_root: bin_dir.join("oxshmem-fortran"),
            kind: Kind::BuildTree { source_root },
            bin_dir,
        })
    }

    /// The layout of an installation under `prefix` (which need not exist yet).
    pub fn installed(prefix: &Path) -> Layout {
        Layout {
            kind: Kind::Installed { prefix: prefix.to_path_buf() },
            bin_dir: prefix.join("bin"),
            include_dir: prefix.join("include"),
            lib_dir: prefix.join("lib"),
            fortran_source: prefix.join("share/oxshmem/fortran").join(FORTRAN_SOURCE),
            fortran_module_root: prefix.join("lib/oxshmem/fortran"),
        }
    }

    /// Whether this is a build tree.
    pub fn is_build_tree(&self) -> bool {
        matches!(self.kind, Kind::BuildTree { .. })
    }

    /// Checks that the library is there to link with, and in a build tree makes the SONAME link
    /// (`liboxshmem.so.1` -> `liboxshmem.so`) that cargo does not make but every program linked
    /// with `-loxshmem` needs at run time.
    pub fn check_library(&self) -> Result<(), String> {
        let so = self.lib_dir.join(SHARED_LIB);
        if !so.exists() && !self.lib_dir.join(STATIC_LIB).exists() {
            let hint = if self.is_build_tree() {
                "build it with `cargo build -p oxshmem-c`"
            } else {
                "the installation is incomplete: run the installer again"
            };
            return Err(format!("{SHARED_LIB} not found in {}: {hint}", self.lib_dir.display()));
        }
        if so.exists() {
            ensure_soname_link(&self.lib_dir)?;
        }
        Ok(())
    }
}

/// Makes `dir/liboxshmem.so.1` a link to `liboxshmem.so` unless it exists (it may be a file
/// or a link made by someone else, possibly at the same moment).
pub fn ensure_soname_link(dir: &Path) -> Result<(), String> {
    let link = dir.join(SONAME);
    if std::fs::symlink_metadata(&link).is_ok() {
        return Ok(());
    }
    match std::os::unix::fs::symlink(SHARED_LIB, &link) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("linking {} to {SHARED_LIB}: {e}", link.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_prefix_is_recognized() {
        let prefix = std::env::temp_dir().join(format!("oxshmem-layout-{}", std::process::id()));
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(prefix.join("include")).unwrap();
        std::fs::write(prefix.join("include/shmem.h"), "").unwrap();
        let l = Layout::from_bin_dir(&prefix.join("bin")).unwrap();
        std::fs::remove_dir_all(&prefix).unwrap();
        assert_eq!(l, Layout::installed(&prefix));
        assert_eq!(l.lib_dir, prefix.join("lib"));
        assert_eq!(l.fortran_source, prefix.join("share/oxshmem/fortran/shmem.f90"));
    }

    #[test]
    fn build_tree_is_recognized() {
        let bin = built_from().join("target/some-profile");
        let l = Layout::from_bin_dir(&bin).unwrap();
        assert!(l.is_build_tree());
        assert_eq!(l.lib_dir, bin);
        assert!(l.include_dir.join("shmem.h").is_file());
        assert!(l.fortran_source.is_file());
    }
}
