//! The libfabric bindings of the `ofi` feature (`src/transport/ofi/sys.rs`) are committed, so
//! that building the feature needs libfabric's headers and a C compiler but not bindgen or
//! libclang. This test regenerates them with bindgen from the headers installed here and
//! checks that the committed file is what bindgen writes now
//! (`OXSHMEM_BLESS=1 cargo test -p oxshmem --test ofi_bindings` refreshes it).
//!
//! The committed file was generated from one libfabric release (its first line says which).
//! The build checks the rest on every `--features ofi` build: `build.rs` turns the file's
//! layout assertions and the constants the transport uses into C `_Static_assert`s compiled
//! against the headers it builds with, so headers that disagree with the bindings fail the
//! build instead of corrupting memory.
//!
//! Requirements (`oxshmem_test_require`): `libclang` (what bindgen loads) and
//! `libfabric-headers` (libfabric's headers, of the release the file names). Missing, the test
//! says so and passes on a developer's machine, and fails where the run requires every tool
//! (`.ci/run`, which installs libclang-dev and Debian's libfabric-dev).

use std::path::{Path, PathBuf};
use std::process::Command;

const SYS: &str = "src/transport/ofi/sys.rs";

fn sys_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(SYS)
}

/// libfabric's include directories, as build.rs finds them (OXSHMEM_LIBFABRIC_DIR, else
/// pkg-config, else the compiler's default paths).
fn includes() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("OXSHMEM_LIBFABRIC_DIR") {
        return vec![PathBuf::from(dir).join("include")];
    }
    let out = Command::new("pkg-config").args(["--cflags-only-I", "libfabric"]).output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .filter_map(|t| t.strip_prefix("-I"))
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// `FI_MAJOR_VERSION.FI_MINOR_VERSION` of the installed `rdma/fabric.h`, if it is there.
fn header_version(includes: &[PathBuf]) -> Option<String> {
    let dirs = includes.iter().cloned().chain([PathBuf::from("/usr/include"), PathBuf::from("/usr/local/include")]);
    let text = dirs.map(|d| d.join("rdma/fabric.h")).find_map(|p| std::fs::read_to_string(p).ok())?;
    let num = |name: &str| -> Option<String> {
        text.lines().find_map(|l| l.strip_prefix(&format!("#define {name}")).map(|v| v.trim().to_string()))
    };
    Some(format!("{}.{}", num("FI_MAJOR_VERSION")?, num("FI_MINOR_VERSION")?))
}

/// The committed file's first line names the release: `// libfabric X.Y headers ...`.
fn committed_version(text: &str) -> Option<String> {
    text.lines().next()?.strip_prefix("// libfabric ")?.split_whitespace().next().map(str::to_string)
}

/// bindgen over `shim.h` with the settings the transport was written against.
fn generate(includes: &[PathBuf], version: &str) -> Result<String, String> {
    let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/transport/ofi/shim.h");
    let mut b = bindgen::Builder::default()
        .header(shim.to_string_lossy())
        // The crate's rust-version, as build.rs's bindgen read it from CARGO_PKG_RUST_VERSION.
        .rust_target(env!("CARGO_PKG_RUST_VERSION").parse().expect("the crate's rust-version is a Rust target"))
        .rust_edition(bindgen::RustEdition::Edition2024)
        .allowlist_function("oxs_.*")
        .allowlist_function("fi_getinfo|fi_freeinfo|fi_dupinfo|fi_strerror|fi_version")
        .allowlist_type("fi_info|fi_.*_attr")
        .allowlist_var("FI_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        // Kept: build.rs turns them into C assertions against the headers it builds with.
        .layout_tests(true)
        .derive_debug(false)
        .derive_default(false)
        .wrap_unsafe_ops(true)
        .generate_comments(false);
    for i in includes {
        b = b.clang_arg(format!("-I{}", i.display()));
    }
    let bindings = b.generate().map_err(|e| e.to_string())?;
    Ok(format!(
        "// libfabric {version} headers (rdma/*.h through src/transport/ofi/shim.h), by bindgen 0.73.\n\
         // Generated; do not edit. Regenerate: OXSHMEM_BLESS=1 cargo test -p oxshmem --test ofi_bindings\n\n{bindings}",
    ))
}

#[test]
fn the_committed_libfabric_bindings_are_what_bindgen_writes() {
    let committed = std::fs::read_to_string(sys_path()).unwrap_or_default();
    let includes = includes();
    let Some(installed) = header_version(&includes) else {
        oxshmem_test_require::skip(
            "libfabric-headers",
            "rdma/fabric.h is not installed (apt-get install libfabric-dev, or set OXSHMEM_LIBFABRIC_DIR)",
        );
        return;
    };
    let bless = std::env::var_os("OXSHMEM_BLESS").is_some_and(|v| v == "1");
    let want_version = committed_version(&committed);
    if !bless && want_version.as_deref() != Some(installed.as_str()) {
        oxshmem_test_require::skip(
            "libfabric-headers",
            &format!(
                "{SYS} was generated from libfabric {} headers, these are {installed} (regenerate with \
                 OXSHMEM_BLESS=1 against the release CI installs)",
                want_version.as_deref().unwrap_or("?")
            ),
        );
        return;
    }
    // bindgen panics when it cannot load libclang.
    let generated = match std::panic::catch_unwind(|| generate(&includes, &installed)) {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => panic!("bindgen over libfabric's headers failed: {e}"),
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            oxshmem_test_require::skip(
                "libclang",
                &format!("bindgen could not run ({why}); apt-get install libclang-dev"),
            );
            return;
        }
    };
    if generated == committed {
        return;
    }
    if bless {
        std::fs::write(sys_path(), &generated).expect("writing the bindings");
        eprintln!("refreshed {}", sys_path().display());
        return;
    }
    let first = committed.lines().zip(generated.lines()).position(|(a, b)| a != b).unwrap_or(0);
    panic!(
        "{SYS} is not what bindgen writes from the installed libfabric {installed} headers (first difference at line {}:\n  \
         committed: {:?}\n  generated: {:?}\n); run `OXSHMEM_BLESS=1 cargo test -p oxshmem --test ofi_bindings` and commit it",
        first + 1,
        committed.lines().nth(first).unwrap_or("<end of file>"),
        generated.lines().nth(first).unwrap_or("<end of file>"),
    );
}
