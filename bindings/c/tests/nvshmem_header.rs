//! `nvshmem.h` against NVSHMEM's own prototypes: every one of the 1,483 host-callable
//! functions is declared with exactly the type NVSHMEM 3.4 gives it (checked by a C++
//! `static_assert` per function, generated from `bindings/api/nvshmem_host_prototypes.tsv`),
//! and the header compiles as C11 and C++17, with and without CUDA's headers before or after it.
//!
//! CUDA's headers are used where `OXSHMEM_CUDA_INCLUDE` names a folder holding `cuda_runtime.h`
//! (the CUDA toolchain script installs one); without it those cases say so and pass.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::{arg, crate_dir, have, include_dir, run_ok};

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("oxshmem-c-nvheader-{}-{name}", std::process::id()))
}

/// The parameter types of a parameter list as the reference writes it (names dropped).
fn param_types(params: &str) -> String {
    if params.trim() == "void" {
        return String::new();
    }
    params
        .split(',')
        .map(|p| {
            let p = p.trim();
            let cut = p.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            let ty = p[..cut].trim();
            // An unnamed parameter (`size_t`) is all type.
            if ty.is_empty() || ty == "const" || ty == "unsigned" { p.to_string() } else { ty.to_string() }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn prototype_check() -> String {
    let path = crate_dir().join("../api/nvshmem_host_prototypes.tsv");
    let text = std::fs::read_to_string(&path).expect("reading the prototype list");
    let mut s = String::from("#include <type_traits>\n#include <nvshmem.h>\n#include <nvshmemx.h>\n\n");
    let mut n = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "a row of 4 columns: {line}");
        let (name, ret, params) = (f[0], f[1], f[2]);
        let _ = writeln!(
            s,
            "static_assert(std::is_same<decltype(&{name}), {ret} (*)({})>::value, \"{name} has NVSHMEM's prototype\");",
            param_types(params)
        );
        n += 1;
    }
    assert_eq!(n, 1483, "the reference lists every host-callable name");
    s
}

fn compile(compiler: &str, flags: &[&str], src: &Path, extra_include: Option<&Path>) {
    let obj = tmp("o");
    let inc = include_dir();
    let mut args: Vec<&str> = flags.to_vec();
    args.extend(["-Wall", "-Wextra", "-Werror", "-I", arg(&inc)]);
    if let Some(e) = extra_include {
        args.extend(["-I", arg(e)]);
    }
    args.extend(["-c", arg(src), "-o", arg(&obj)]);
    let r = std::panic::catch_unwind(|| run_ok(compiler, &args));
    let _ = std::fs::remove_file(&obj);
    if let Err(e) = r {
        std::panic::resume_unwind(e);
    }
}

fn cuda_include() -> Option<PathBuf> {
    let dir = PathBuf::from(oxshmem_test_require::env("OXSHMEM_CUDA_INCLUDE", CUDA_HOW)?);
    let ok = dir.join("cuda_runtime.h").exists();
    oxshmem_test_require::need("OXSHMEM_CUDA_INCLUDE", ok, &format!("{} has no cuda_runtime.h", dir.display()))
        .then_some(dir)
}

const CUDA_HOW: &str = "eval \"$(bash scripts/cuda-toolchain.sh --env)\" sets it";

#[test]
fn every_function_has_nvshmems_prototype() {
    if !have("g++") {
        return;
    }
    let src = tmp("protos.cc");
    std::fs::write(&src, prototype_check()).expect("writing the check");
    compile("g++", &["-std=c++17", "-fsyntax-only"], &src, None);
    if let Some(cuda) = cuda_include() {
        compile("g++", &["-std=c++17", "-fsyntax-only"], &src, Some(&cuda));
    }
    let _ = std::fs::remove_file(&src);
}

/// The check has teeth: a wrong prototype fails to compile.
#[test]
fn a_wrong_prototype_fails_the_check() {
    if !have("g++") {
        return;
    }
    let bad = prototype_check().replace("decltype(&nvshmem_my_pe), int (*)()", "decltype(&nvshmem_my_pe), long (*)()");
    assert!(bad.contains("long (*)()"), "the check names nvshmem_my_pe as expected");
    let src = tmp("bad.cc");
    std::fs::write(&src, bad).expect("writing the check");
    let inc = include_dir();
    let out = std::process::Command::new("g++")
        .args(["-std=c++17", "-fsyntax-only", "-I", arg(&inc), arg(&src)])
        .output()
        .expect("running g++");
    let _ = std::fs::remove_file(&src);
    assert!(!out.status.success(), "a wrong prototype compiled");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nvshmem_my_pe has NVSHMEM's prototype"));
}

const USE_C: &str = r#"
#include <nvshmem.h>
#include <nvshmemx.h>
#include <shmem.h>
int use_nvshmem(cudaStream_t s, dim3 d);
int use_nvshmem(cudaStream_t s, dim3 d) {
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    nvshmem_team_config_t cfg = NVSHMEM_TEAM_CONFIG_INITIALIZER;
    nvshmem_team_t t = NVSHMEM_TEAM_WORLD;
    half h = nvshmem_half_g((const half *)0, 0);
    (void)h; (void)cfg;
    nvshmemx_set_attr_uniqueid_args(0, 1, &id, &attr);
    nvshmemx_int_put_on_stream((int *)0, (const int *)0, 0, 0, s);
    nvshmem_int_sum_reduce(t, (int *)0, (const int *)0, 1);
    shmem_barrier_all();
    return (int)d.x + NVSHMEM_CMP_GE + NVSHMEM_SIGNAL_ADD + NVSHMEMX_TEAM_NODE + NVSHMEM_VENDOR_VERSION;
}
"#;

#[test]
fn the_header_compiles_as_c11_and_cxx17_with_and_without_cuda() {
    if !have("gcc") || !have("g++") {
        return;
    }
    let c = tmp("use.c");
    let cc = tmp("use.cc");
    std::fs::write(&c, USE_C).expect("writing");
    std::fs::write(&cc, USE_C).expect("writing");
    compile("gcc", &["-std=c11", "-pedantic"], &c, None);
    compile("g++", &["-std=c++17", "-pedantic"], &cc, None);
    if let Some(cuda) = cuda_include() {
        // CUDA first, then ours; and ours, then CUDA.
        for (name, before, after) in
            [("first", "#include <cuda_runtime.h>\n", ""), ("after", "", "#include <cuda_runtime.h>\n")]
        {
            let text = format!("{before}{USE_C}{after}");
            let c2 = tmp(&format!("cuda-{name}.c"));
            let cc2 = tmp(&format!("cuda-{name}.cc"));
            std::fs::write(&c2, &text).expect("writing");
            std::fs::write(
                &cc2,
                text.replace(
                    "#include <cuda_runtime.h>",
                    "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>",
                ),
            )
            .expect("writing");
            compile("gcc", &["-std=c11"], &c2, Some(&cuda));
            compile("g++", &["-std=c++17"], &cc2, Some(&cuda));
            let _ = std::fs::remove_file(&c2);
            let _ = std::fs::remove_file(&cc2);
        }
    }
    let _ = std::fs::remove_file(&c);
    let _ = std::fs::remove_file(&cc);
}
