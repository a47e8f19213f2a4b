//! Build script of the runtime. Without the `ofi` feature it does nothing.
//!
//! With `ofi` it builds the libfabric layer: `bindgen` over libfabric's headers (and the shim's
//! own prototypes) into `$OUT_DIR/ofi_sys.rs`, and the C shim `src/transport/ofi/shim.c`, which
//! turns libfabric's static-inline calls into real functions, with `cc`. It links `libfabric`.
//! Headers and the library are found through `pkg-config libfabric` when it answers, else in the
//! compiler's default paths; `OXSHMEM_LIBFABRIC_DIR` (a prefix with `include/` and `lib/`)
//! overrides both, to build against another libfabric (e.g. a 2.x in /opt).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "ofi")]
    ofi::build();
}

#[cfg(feature = "ofi")]
mod ofi {
    use std::path::PathBuf;
    use std::process::Command;

    const SHIM_DIR: &str = "src/transport/ofi";

    /// Include and library directories of libfabric.
    fn locate() -> (Vec<PathBuf>, Vec<PathBuf>) {
        println!("cargo:rerun-if-env-changed=OXSHMEM_LIBFABRIC_DIR");
        if let Some(dir) = std::env::var_os("OXSHMEM_LIBFABRIC_DIR") {
            let dir = PathBuf::from(dir);
            let libs = ["lib", "lib64"].iter().map(|l| dir.join(l)).filter(|p| p.exists()).collect();
            return (vec![dir.join("include")], libs);
        }
        let pkg = |flag: &str| -> Option<Vec<PathBuf>> {
            let out = Command::new("pkg-config").args([flag, "libfabric"]).output().ok()?;
            if !out.status.success() {
                return None;
            }
            let text = String::from_utf8(out.stdout).ok()?;
            let prefix = if flag == "--cflags-only-I" { "-I" } else { "-L" };
            Some(text.split_whitespace().filter_map(|t| t.strip_prefix(prefix)).map(PathBuf::from).collect())
        };
        (pkg("--cflags-only-I").unwrap_or_default(), pkg("--libs-only-L").unwrap_or_default())
    }

    pub(super) fn build() {
        let (includes, libdirs) = locate();
        for f in ["shim.c", "shim.h"] {
            println!("cargo:rerun-if-changed={SHIM_DIR}/{f}");
        }

        let mut cc = cc::Build::new();
        cc.file(format!("{SHIM_DIR}/shim.c")).warnings(true).flag_if_supported("-Wno-unused-parameter");
        for i in &includes {
            cc.include(i);
        }
        cc.compile("oxshmem_ofi_shim");

        for l in &libdirs {
            println!("cargo:rustc-link-search=native={}", l.display());
        }
        println!("cargo:rustc-link-lib=fabric");

        let mut b = bindgen::Builder::default()
            .header(format!("{SHIM_DIR}/shim.h"))
            .rust_edition(bindgen::RustEdition::Edition2024)
            .allowlist_function("oxs_.*")
            .allowlist_function("fi_getinfo|fi_freeinfo|fi_dupinfo|fi_strerror|fi_version")
            .allowlist_type("fi_info|fi_.*_attr")
            .allowlist_var("FI_.*")
            .default_enum_style(bindgen::EnumVariation::Consts)
            .prepend_enum_name(false)
            .layout_tests(false)
            .derive_debug(false)
            .derive_default(false)
            .wrap_unsafe_ops(true)
            .generate_comments(false);
        for i in &includes {
            b = b.clang_arg(format!("-I{}", i.display()));
        }
        let bindings = b.generate().unwrap_or_else(|e| {
            panic!(
                "bindgen over libfabric's headers failed: {e}. The ofi feature needs libfabric's \
                 headers and libclang: apt-get install libfabric-dev libclang-dev"
            )
        });
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        bindings.write_to_file(out.join("ofi_sys.rs")).expect("writing the libfabric bindings");
    }
}
