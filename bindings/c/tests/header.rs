//! The headers: the checked-in copies are what the generator makes now, and they compile
//! cleanly as C99, C11 (`-pedantic`), C++11 and C++17, every `_Generic` association and C++
//! overload included; NVSHMEM's other headers (`non_abi/nvshmemx_error.h`,
//! `device_host/nvshmem_common.cuh`) work from C and C++ as NVSHMEM's programs use them.
//!
//! `OXSHMEM_BLESS=1 cargo test -p oxshmem-c --test header` refreshes the checked-in copies.
//! The compile tests need gcc and g++; without them they say so and pass.

mod common;

use common::{arg, have, include_dir, out_dir, run_ok};

const HEADERS: [&str; 7] =
    ["shmem.h", "shmemx.h", "mpp/shmem.h", "mpp/shmemx.h", "nvshmem.h", "nvshmemx.h", "nvshmem_device.h"];

/// The device API's generated wrappers (bindings/cuda/src/generated/), blessed like the headers.
const CUDA_FILES: [&str; 7] = ["rma.cu", "atomic.cu", "signal.cu", "wait.cu", "sync.cu", "collective.cu", "misc.cu"];

#[test]
fn checked_in_headers_are_fresh() {
    let bless = std::env::var_os("OXSHMEM_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    let headers = HEADERS.iter().map(|h| (out_dir().join("include").join(h), include_dir().join(h), *h));
    let cuda = CUDA_FILES
        .iter()
        .map(|f| (out_dir().join("cuda").join(f), common::crate_dir().join("../cuda/src/generated").join(f), *f));
    for (fresh, path, h) in headers.chain(cuda) {
        let fresh = std::fs::read_to_string(fresh).expect("generated header");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(fresh.as_str()) {
            if bless {
                std::fs::create_dir_all(path.parent().expect("a header has a directory")).expect("creating include/");
                std::fs::write(&path, fresh).expect("writing the header");
                eprintln!("refreshed {}", path.display());
            } else {
                stale.push(h);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "bindings/c/include/{{{}}} differ from what build.rs generates from types.tsv and gen/: \
         run `OXSHMEM_BLESS=1 cargo test -p oxshmem-c --test header` and commit the result",
        stale.join(",")
    );
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("oxshmem-c-header-{}-{name}", std::process::id()))
}

/// Compiles `src` (a file) with `compiler` and `flags`, against the checked-in headers.
fn compile(compiler: &str, flags: &[&str], src: &std::path::Path, obj: &str) {
    if !have(compiler) {
        return;
    }
    let inc = include_dir();
    let obj = tmp(obj);
    let mut args: Vec<&str> = flags.to_vec();
    args.extend(["-Wall", "-Wextra", "-Werror", "-I", arg(&inc), "-c", arg(src), "-o", arg(&obj)]);
    let r = std::panic::catch_unwind(|| run_ok(compiler, &args));
    let _ = std::fs::remove_file(&obj);
    if let Err(e) = r {
        std::panic::resume_unwind(e);
    }
}

fn use_file(ext: &str) -> std::path::PathBuf {
    common::crate_dir().join(format!("tests/c/header_use.{ext}"))
}

#[test]
fn headers_compile_as_c99() {
    compile("gcc", &["-std=c99", "-pedantic"], &use_file("c"), "c99.o");
}

#[test]
fn headers_compile_as_c11() {
    compile("gcc", &["-std=c11", "-pedantic"], &use_file("c"), "c11.o");
}

#[test]
fn headers_compile_as_cxx11() {
    compile("g++", &["-std=c++11", "-pedantic"], &use_file("cc"), "cxx11.o");
}

#[test]
fn headers_compile_as_cxx17() {
    compile("g++", &["-std=c++17", "-pedantic"], &use_file("cc"), "cxx17.o");
}

/// Every `_Generic` association, with and without a context, selects a routine whose
/// prototype takes exactly the arguments given (an incompatible selection is an error under
/// `-Werror`). The deprecated interfaces warn by design.
#[test]
fn every_c11_generic_association_compiles() {
    compile(
        "gcc",
        &["-std=c11", "-pedantic", "-Wno-deprecated-declarations"],
        &out_dir().join("generic_check.c"),
        "generic_c11.o",
    );
}

/// The same for every C++ overload.
#[test]
fn every_cxx_overload_compiles() {
    for std in ["-std=c++11", "-std=c++17"] {
        compile(
            "g++",
            &[std, "-pedantic", "-Wno-deprecated-declarations"],
            &out_dir().join("generic_check.cc"),
            "generic_cxx.o",
        );
    }
}

/// The headers NVSHMEM's programs include besides `nvshmem.h` (`non_abi/nvshmemx_error.h`,
/// `device_host/nvshmem_common.cuh`) and what `nvshmem.h` brings as NVSHMEM's does (`assert`,
/// the error macros): `tests/c/nvshmem_compat.c` compiles as C11 and C++17 with `-Werror` and
/// prints what NVSHMEM's macros do (a status set, a goto or a return taken, the report lines)
/// and the sizes of NVSHMEM's type lists.
#[test]
fn nvshmem_compat_headers_work_from_c_and_cxx() {
    let src = common::crate_dir().join("tests/c/nvshmem_compat.c");
    let inc = include_dir();
    for (compiler, lang, std) in [("gcc", "c", "-std=c11"), ("g++", "c++", "-std=c++17")] {
        if !have(compiler) {
            continue;
        }
        let exe = tmp(&format!("compat-{lang}"));
        run_ok(
            compiler,
            &["-x", lang, std, "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", arg(&inc), arg(&src), "-o", arg(&exe)],
        );
        let out = std::process::Command::new(&exe).output().expect("running nvshmem_compat");
        let _ = std::fs::remove_file(&exe);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "nvshmem_compat ({lang}) failed: {}\n{stdout}\n{stderr}", out.status);
        assert_eq!(
            stdout,
            "WARN: careful now\njmp 7 2\nret 1 0\ncheck 4 3 0\n\
             string NVSHMEMX_ERROR_SYMMETRY NVSHMEMX_ERROR_<unknown>\ncounts 138 25 14 5 84\nround 16 3\n",
            "stdout of nvshmem_compat ({lang})"
        );
        for line in [
            "nvshmem_compat.c:main:",
            ": compat 42\n",
            ": NULL value no buffer\n",
            ": error status: 5 (NVSHMEMX_ERROR_GPU_NOT_SELECTED) step 3\n",
            ": non-zero status: 9 ret path\n",
            ": error status: 1 (NVSHMEMX_ERROR_INVALID_VALUE) one\n",
            ": bad 2\n",
        ] {
            assert!(stderr.contains(line), "stderr of nvshmem_compat ({lang}) lacks {line:?}:\n{stderr}");
        }
    }
}
