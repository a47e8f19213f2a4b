//! The pkg-config file, `<prefix>/lib/pkgconfig/oxshmem.pc`.

use std::path::Path;

/// The system libraries `liboxshmem.a` needs, as `cargo rustc -p oxshmem-c --
/// --print native-static-libs` reports them for this target (Rust's std on glibc Linux).
pub const LIBS_PRIVATE: &str = "-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc";

/// The text of `oxshmem.pc` for an installation under `prefix`; `extra_private` is appended
/// to `Libs.private` (e.g. `-L/usr/lib/x86_64-linux-gnu/pmix2/lib -lpmix` for a PMIx build).
pub fn pc_text(prefix: &Path, extra_private: &str) -> String {
    let (major, minor) = oxshmem::SPEC_VERSION;
    let private =
        if extra_private.is_empty() { LIBS_PRIVATE.to_string() } else { format!("{extra_private} {LIBS_PRIVATE}") };
    format!(
        "prefix={prefix}\n\
         exec_prefix=${{prefix}}\n\
         libdir=${{exec_prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         fortrandir=${{prefix}}/share/oxshmem/fortran\n\
         \n\
         Name: oxshmem\n\
         Description: OpenSHMEM {major}.{minor} library of oxshmem (PGAS runtime in Rust)\n\
         Version: {version}\n\
         Libs: -L${{libdir}} -loxshmem\n\
         Libs.private: {private}\n\
         Cflags: -I${{includedir}}\n",
        prefix = prefix.display(),
        version = env!("CARGO_PKG_VERSION"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let t = pc_text(Path::new("/opt/x"), "");
        assert!(t.starts_with("prefix=/opt/x\n"));
        assert!(t.contains("\nLibs: -L${libdir} -loxshmem\n"));
        assert!(t.contains("\nCflags: -I${includedir}\n"));
        assert!(t.contains(&format!("\nLibs.private: {LIBS_PRIVATE}\n")));
    }
}
