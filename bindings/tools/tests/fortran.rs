//! The Fortran `shmem` module: programs compiled with `oshfort` from the build tree and run
//! under `oshrun` with 2 and 4 PEs — puts and gets of every type, atomics under contention,
//! wait_until and test, broadcast, reductions and the other collectives — each ending with
//! `error stop` on a wrong value; a failing PE fails the job. The module's names and
//! constants are held against `shmem.h`. Needs gfortran; without it the job tests say so and
//! pass.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TempDir, describe, ensure_built, have, oshrun_ok, run_ok, source_root, tool};

fn fortran_dir() -> PathBuf {
    source_root().join("bindings/fortran")
}

/// Compiles `bindings/fortran/tests/<name>.f90` with oshfort in `dir` (where the program's
/// own modules go).
fn build(dir: &TempDir, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let src = fortran_dir().join(format!("tests/{name}.f90"));
    run_ok(
        Command::new(tool("oshfort"))
            .args(["-std=f2018", "-Wall", "-Werror", "-g"])
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .current_dir(&dir.0)
            .env_remove("OSHFORT_FC"),
    );
    exe
}

fn job(name: &str) {
    if !have("gfortran") {
        return;
    }
    ensure_built();
    let t = TempDir::new(&format!("f-{name}"));
    let exe = build(&t, name);
    for n in [2, 4] {
        let out = oshrun_ok(&tool("oshrun"), n, &exe);
        assert!(out.contains(&format!("{name}: ok on {n} PEs")), "{name} on {n} PEs printed:\n{out}");
    }
}

#[test]
fn rma_of_every_type() {
    job("rma");
}

#[test]
fn atomics_under_contention() {
    job("amo");
}

#[test]
fn waiting_and_collectives() {
    job("coll");
}

#[test]
fn reductions_of_scalars() {
    job("scalar_reduce");
}

#[test]
fn a_failing_pe_fails_the_job() {
    if !have("gfortran") {
        return;
    }
    ensure_built();
    let t = TempDir::new("f-fail");
    let src = t.join("fail.f90");
    std::fs::write(
        &src,
        "program fail\n  use shmem\n  implicit none\n  integer(c_int), save :: x = 0\n  call shmem_init()\n  \
         call shmem_int_p(x, 41_c_int + shmem_my_pe(), modulo(shmem_my_pe() + 1, shmem_n_pes()))\n  \
         call shmem_barrier_all()\n  if (x /= 42) error stop \"x is not 42\"\n  call shmem_finalize()\nend program fail\n",
    )
    .unwrap();
    let exe = t.join("fail");
    run_ok(Command::new(tool("oshfort")).arg(&src).arg("-o").arg(&exe).current_dir(&t.0));
    let out = Command::new(tool("oshrun")).args(["-n", "2", "--timeout", "60"]).arg(&exe).output().unwrap();
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("x is not 42"), "{}", describe(&out));
}

/// `#define NAME VALUE` lines of shmem.h with an integer value.
fn c_constants(header: &str) -> HashMap<String, i64> {
    header
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("#define ")?.split_whitespace();
            let name = w.next()?;
            let value = w.next()?.trim_end_matches('L').parse().ok()?;
            Some((name.to_string(), value))
        })
        .collect()
}

#[test]
fn names_and_constants_match_shmem_h() {
    let header = std::fs::read_to_string(source_root().join("bindings/c/include/shmem.h")).unwrap();
    let module = std::fs::read_to_string(fortran_dir().join("shmem.f90")).unwrap();
    // Every C name the module binds is a function or variable the header declares.
    let mut bound = 0;
    for part in module.split("name=\"").skip(1) {
        let name = part.split('"').next().unwrap();
        let as_function = format!(" {name}(");
        let as_pointer_function = format!("*{name}(");
        let as_variable = format!(" {name};");
        assert!(
            header.lines().any(|l| {
                (l.starts_with("SHMEM_FUNCTION_ATTRIBUTES")
                    && (l.contains(&as_function) || l.contains(&as_pointer_function)))
                    || (l.starts_with("extern ") && l.ends_with(&as_variable))
            }),
            "shmem.f90 binds {name}, which shmem.h does not declare"
        );
        bound += 1;
    }
    assert!(bound >= 100, "only {bound} bindings found");
    // Every integer parameter named like a shmem.h constant has its value.
    let consts = c_constants(&header);
    let mut checked = 0;
    for l in module.lines() {
        let Some(rest) = l.trim().strip_prefix("integer(c_int), parameter :: ") else { continue };
        let (name, value) = rest.split_once('=').unwrap();
        let (name, value) = (name.trim(), value.trim().parse::<i64>().unwrap());
        assert_eq!(consts.get(name), Some(&value), "{name} = {value} in shmem.f90");
        checked += 1;
    }
    assert!(checked >= 13, "only {checked} constants checked");
    for c in ["SHMEM_CMP_EQ", "SHMEM_CMP_NE", "SHMEM_CMP_GT", "SHMEM_CMP_GE", "SHMEM_CMP_LT", "SHMEM_CMP_LE"] {
        assert!(module.contains(&format!("parameter :: {c} = ")), "{c} missing");
    }
}

#[test]
fn module_source_compiles_without_warnings() {
    if !have("gfortran") {
        return;
    }
    let t = TempDir::new("f-mod");
    let src = fortran_dir().join("shmem.f90");
    run_ok(
        Command::new("gfortran")
            .args(["-std=f2018", "-Wall", "-Wextra", "-Werror", "-c"])
            .arg(&src)
            .arg("-o")
            .arg(t.join("shmem.o"))
            .current_dir(&t.0),
    );
    assert!(Path::new(&t.join("shmem.mod")).is_file());
}
