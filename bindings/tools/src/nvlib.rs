//! `libnvshmem_host.so.3`: the library NVSHMEM programs link (`-lnvshmem_host`), made from the
//! same code as `liboxshmem`.
//!
//! The C ABI crate builds one library that exports both APIs. NVSHMEM's link lines name
//! `libnvshmem_host` and its programs ask the loader for `libnvshmem_host.so.3`, so this links
//! `liboxshmem.a` once more into a shared library with that SONAME, exporting exactly what
//! `liboxshmem.so` exports (the version script is made from its dynamic symbol table). A
//! program links one of the two; each is the whole runtime, so OpenSHMEM and NVSHMEM names mix
//! freely in it. A program that links both gets every call resolved to the first (the loader
//! binds each name once), so one runtime still serves it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The file name NVSHMEM link lines find (`-lnvshmem_host`).
pub const LINK_NAME: &str = "libnvshmem_host.so";
/// The SONAME, as NVSHMEM 3's.
pub const SONAME: &str = "libnvshmem_host.so.3";

/// The system libraries a link of `liboxshmem.a` needs (rustc's `native-static-libs`).
pub const NATIVE_LIBS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"];

/// Links `dir/libnvshmem_host.so.3` from `dir/liboxshmem.a`, exporting the names of
/// `dir/liboxshmem.so`, and makes `libnvshmem_host.so` a link to it. `extra` are more libraries
/// the build's features need (`-lfabric`, `-lpmix`). Skips the link when the result is newer
/// than both inputs. Returns the path of the library.
///
/// # Errors
/// When `nm` or the C compiler cannot be run or fail, with their output.
pub fn link(dir: &Path, extra: &[String]) -> Result<PathBuf, String> {
    let archive = dir.join(crate::layout::STATIC_LIB);
    let shared = dir.join(crate::layout::SHARED_LIB);
    let out = dir.join(SONAME);
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = match (mtime(&out), mtime(&archive), mtime(&shared)) {
        (Some(o), Some(a), Some(s)) => o >= a && o >= s,
        _ => false,
    };
    if !fresh {
        let names = exported(&shared)?;
        let script = std::env::temp_dir().join(format!("oxshmem-nvshmem_host-{}.map", std::process::id()));
        let mut text = String::from("{\n  global:\n");
        for n in &names {
            text.push_str(&format!("    {n};\n"));
        }
        text.push_str("  local: *;\n};\n");
        std::fs::write(&script, text).map_err(|e| format!("writing {}: {e}", script.display()))?;
        let cc = std::env::var("CC").ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "cc".into());
        // Link into a temporary name, then rename: a concurrent reader never sees half a file.
        let tmp = dir.join(format!("{SONAME}.{}.tmp", std::process::id()));
        let mut cmd = Command::new(&cc);
        cmd.arg("-shared")
            .arg("-o")
            .arg(&tmp)
            .arg(format!("-Wl,-soname,{SONAME}"))
            .arg(format!("-Wl,--version-script={}", script.display()))
            .arg("-Wl,--whole-archive")
            .arg(&archive)
            .arg("-Wl,--no-whole-archive")
            .args(extra)
            .args(NATIVE_LIBS);
        let o = cmd.output().map_err(|e| format!("cannot run {cc}: {e}"));
        let _ = std::fs::remove_file(&script);
        let o = o?;
        if !o.status.success() {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("linking {SONAME} failed: {cmd:?}\n{}", String::from_utf8_lossy(&o.stderr)));
        }
        std::fs::rename(&tmp, &out).map_err(|e| format!("renaming to {}: {e}", out.display()))?;
    }
    let link = dir.join(LINK_NAME);
    if std::fs::read_link(&link).ok().as_deref() != Some(Path::new(SONAME)) {
        let _ = std::fs::remove_file(&link);
        match std::os::unix::fs::symlink(SONAME, &link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("linking {} to {SONAME}: {e}", link.display())),
        }
    }
    Ok(out)
}

/// The defined dynamic symbols of `lib` (functions and variables), sorted.
fn exported(lib: &Path) -> Result<Vec<String>, String> {
    let v: Vec<String> = crate::coverage::dynamic_symbols(lib, "TtWiVDBR")?.into_iter().collect();
    if v.len() < 1000 {
        return Err(format!("{} exports only {} names: not the C library", lib.display(), v.len()));
    }
    Ok(v)
}
