//! `oshcc`, `oshc++`/`oshcxx`/`oshCC` and `oshfort` from the build tree: the commands they
//! show, compile-only and compile-then-link, compiler overrides, errors, and C and C++
//! programs compiled with them and run as two-PE jobs under `oshrun`. Needs cc/c++; without
//! them the tests that compile say so and pass.

mod common;

use std::process::Command;

use common::{
    TempDir, check_ring, crate_dir, describe, ensure_built, have, oshrun_ok, profile_dir, run_ok, source_root, tool,
};

fn show(tool_name: &str, args: &[&str]) -> String {
    run_ok(Command::new(tool(tool_name)).args(args).env_remove("OSHCC_CC").env_remove("OSHCXX_CXX")).trim().to_string()
}

#[test]
fn shows_the_commands() {
    let inc = source_root().join("bindings/c/include");
    let lib = profile_dir().canonicalize().unwrap();
    let (inc, lib) = (inc.display(), lib.display());
    let link = format!("-L{lib} -Wl,-rpath,{lib} -loxshmem");
    assert_eq!(show("oshcc", &["-show", "a.c", "-o", "a"]), format!("cc -I{inc} a.c -o a {link}"));
    assert_eq!(show("oshcc", &["--showme", "-c", "a.c"]), format!("cc -I{inc} -c a.c"));
    assert_eq!(show("oshcc", &["-showme", "-E", "a.c"]), format!("cc -I{inc} -E a.c"));
    assert_eq!(show("oshcc", &["--showme:compile"]), format!("-I{inc}"));
    assert_eq!(show("oshcc", &["--showme:link"]), link);
    assert_eq!(show("oshcc", &["--showme:incdirs"]), inc.to_string());
    assert_eq!(show("oshcc", &["--showme:libdirs"]), lib.to_string());
    assert_eq!(show("oshcc", &["--showme:libs"]), "oxshmem");
    assert!(show("oshcc", &["--showme:version"]).contains("OpenSHMEM 1.5"));
    assert!(show("oshcc", &["--showme:help"]).contains("Usage: oshcc"));
    for cxx in ["oshc++", "oshcxx", "oshCC"] {
        assert_eq!(show(cxx, &["-show", "a.cc"]), format!("c++ -I{inc} a.cc {link}"), "{cxx}");
    }
    // Arguments with spaces come out quoted for a shell.
    assert_eq!(show("oshcc", &["-show", "-c", "my file.c"]), format!("cc -I{inc} -c 'my file.c'"));
}

#[test]
fn compiler_can_be_overridden() {
    let out = run_ok(Command::new(tool("oshcc")).args(["-show", "a.c"]).env("OSHCC_CC", "ccache gcc -m64"));
    assert!(out.starts_with("ccache gcc -m64 -I"), "{out}");
    let out = run_ok(Command::new(tool("oshc++")).args(["-show", "a.cc"]).env("OSHCXX_CXX", "clang++"));
    assert!(out.starts_with("clang++ -I"), "{out}");
    // A compiler that does not exist: the wrapper says which variable to set.
    let out = Command::new(tool("oshcc")).args(["-c", "a.c"]).env("OSHCC_CC", "/nonexistent/cc").output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("oshcc: cannot run /nonexistent/cc") && err.contains("OSHCC_CC"), "{err}");
}

#[test]
fn fortran_show_names_the_module_folder() {
    if !have("gfortran") {
        return;
    }
    let out = run_ok(Command::new(tool("oshfort")).args(["-show", "p.f90", "-o", "p"]).env_remove("OSHFORT_FC"));
    let dir = out
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("-I"))
        .find(|d| d.contains("oxshmem-fortran"))
        .unwrap_or_else(|| panic!("no module folder in {out}"));
    assert!(std::path::Path::new(dir).join("shmem.mod").is_file(), "{dir}/shmem.mod missing");
    // gfortran >= 10 also gets -fallow-argument-mismatch (the legacy `shmem.fh` API needs it).
    assert!(
        (out.starts_with("gfortran -I") || out.starts_with("gfortran -fallow-argument-mismatch -I"))
            && out.contains(" p.f90 -o p -L"),
        "{out}"
    );
    let out = run_ok(Command::new(tool("oshfort")).arg("--showme:link"));
    assert!(out.trim().ends_with("-loxshmem"), "{out}");
}

#[test]
fn c_program_runs_under_oshrun() {
    if !have("cc") {
        return;
    }
    ensure_built();
    let t = TempDir::new("c");
    let exe = t.join("ring");
    let src = crate_dir().join("tests/c/ring.c");
    run_ok(Command::new(tool("oshcc")).args(["-std=c11", "-Wall", "-Wextra", "-Werror"]).arg(&src).arg("-o").arg(&exe));
    assert!(profile_dir().join("liboxshmem.so.1").exists(), "the SONAME link was not made");
    let out = oshrun_ok(&tool("oshrun"), 2, &exe);
    check_ring(&out, 2, "");

    // Compile, then link, as make does.
    let obj = t.join("ring.o");
    let exe2 = t.join("ring2");
    run_ok(Command::new(tool("oshcc")).arg("-c").arg(&src).arg("-o").arg(&obj));
    run_ok(Command::new(tool("oshcc")).arg(&obj).arg("-o").arg(&exe2));
    check_ring(&oshrun_ok(&tool("oshrun"), 3, &exe2), 3, "");
}

#[test]
fn cxx_program_runs_under_oshrun() {
    if !have("c++") {
        return;
    }
    ensure_built();
    let t = TempDir::new("cxx");
    let exe = t.join("ring");
    run_ok(Command::new(tool("oshc++")).arg("-Wall").arg(crate_dir().join("tests/c/ring.cc")).arg("-o").arg(&exe));
    check_ring(&oshrun_ok(&tool("oshrun"), 2, &exe), 2, "C++ ");
}

#[test]
fn compiler_errors_pass_through() {
    if !have("cc") {
        return;
    }
    let t = TempDir::new("err");
    let src = t.join("bad.c");
    std::fs::write(&src, "int main(void) { return undeclared; }\n").unwrap();
    let out = Command::new(tool("oshcc")).arg("-c").arg(&src).arg("-o").arg(t.join("bad.o")).output().unwrap();
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("undeclared"), "{}", describe(&out));
}
