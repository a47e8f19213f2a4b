//! The deprecated Fortran API (`include 'shmem.fh'`): the programs of
//! `bindings/fortran/tests/legacy/`, fixed and free form, compiled with `oshfort` from the build
//! tree and run under `oshrun` with 2 and 4 PEs. Each covers a routine family, checks every
//! value it gets and prints `PE <n> : OK` last; a failed check ends the job through
//! `SHMEM_GLOBAL_EXIT(1)`. Also: errors name the Fortran routine, `SHMEM_GLOBAL_EXIT` ends the
//! job with a failure, programs that declare the functions' types themselves (as Sandia
//! OpenSHMEM's `shmem.fh` expects) compile, and an installation's `oshfort` finds `shmem.fh`.
//! Needs gfortran; without it the tests say so and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TempDir, describe, ensure_built, have, oshrun_ok, profile_dir, run_ok, source_root, tool};

fn legacy_dir() -> PathBuf {
    source_root().join("bindings/fortran/tests/legacy")
}

/// The flags the programs are compiled with: every warning an error, Cray pointers
/// (`SHMEM_PTR`, `SHPALLOC`) allowed.
const FLAGS: &[&str] = &["-Wall", "-Werror", "-g", "-fcray-pointer"];

/// Compiles `bindings/fortran/tests/legacy/<file>` with `oshfort` in `dir`.
fn build(oshfort: &Path, dir: &TempDir, file: &str) -> PathBuf {
    let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
    let exe = dir.join(stem);
    run_ok(
        Command::new(oshfort)
            .args(FLAGS)
            .arg(legacy_dir().join(file))
            .arg("-o")
            .arg(&exe)
            .current_dir(&dir.0)
            .env_remove("OSHFORT_FC"),
    );
    exe
}

/// Asserts one `PE i : OK` line (gfortran's list-directed `print *, 'PE', me, ': OK'`) per PE.
fn check_ok_lines(out: &str, n: usize, what: &str) {
    let mut seen = vec![0; n];
    for line in out.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["PE", pe, ":", "OK"] = words[..] {
            let pe: usize = pe.parse().unwrap_or_else(|_| panic!("{what}: odd line {line:?}"));
            assert!(pe < n, "{what}: PE {pe} of {n} in:\n{out}");
            seen[pe] += 1;
        }
    }
    assert!(seen.iter().all(|&c| c == 1), "{what} on {n} PEs: OK lines per PE {seen:?} in:\n{out}");
}

fn job(file: &str) {
    if !have("gfortran") {
        return;
    }
    ensure_built();
    let t = TempDir::new(&format!("fl-{}", file.replace('.', "-")));
    let exe = build(&tool("oshfort"), &t, file);
    for n in [2, 4] {
        let out = oshrun_ok(&tool("oshrun"), n, &exe);
        check_ok_lines(&out, n, file);
    }
}

#[test]
fn setup_queries_and_shmem_ptr() {
    job("init.f");
}

#[test]
fn every_rma_routine_on_static_and_heap_data() {
    job("rma.f90");
}

#[test]
fn atomics_under_contention() {
    job("amo.f90");
}

#[test]
fn every_to_all_reduction() {
    job("reduce.f90");
}

#[test]
fn broadcast_collect_alltoall_and_barrier() {
    job("coll.f");
}

#[test]
fn wait_wait_until_fence_and_quiet() {
    job("sync.f90");
}

#[test]
fn locks() {
    job("lock.f");
}

/// Every program of the folder is one of the jobs above.
#[test]
fn every_program_is_run() {
    let mut files: Vec<String> = std::fs::read_dir(legacy_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".f") || f.ends_with(".f90"))
        .collect();
    files.sort();
    assert_eq!(files, ["amo.f90", "coll.f", "init.f", "lock.f", "reduce.f90", "rma.f90", "sync.f90"]);
}

/// Compiles `src` (a program written here) with the build tree's `oshfort` and `flags`.
fn build_inline(t: &TempDir, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let path = t.join(name);
    std::fs::write(&path, src).unwrap();
    let exe = t.join(Path::new(name).file_stem().unwrap().to_str().unwrap());
    run_ok(
        Command::new(tool("oshfort"))
            .args(flags)
            .arg(&path)
            .arg("-o")
            .arg(&exe)
            .current_dir(&t.0)
            .env_remove("OSHFORT_FC"),
    );
    exe
}

#[test]
fn errors_name_the_fortran_routine_and_global_exit_fails_the_job() {
    if !have("gfortran") {
        return;
    }
    ensure_built();
    let t = TempDir::new("fl-errors");
    // A put to a PE that does not exist.
    let exe = build_inline(
        &t,
        "badpe.f90",
        "program badpe\n  implicit none\n  include 'shmem.fh'\n  integer :: shmem_n_pes\n  \
         integer, save :: x(2)\n  call start_pes(0)\n  call shmem_integer_put(x, x, 2, shmem_n_pes())\n  \
         print *, 'not reached'\nend program badpe\n",
        FLAGS,
    );
    let out = Command::new(tool("oshrun")).args(["-n", "2", "--timeout", "60"]).arg(&exe).output().unwrap();
    assert!(!out.status.success(), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SHMEM_INTEGER_PUT"), "the error does not name SHMEM_INTEGER_PUT: {}", describe(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("not reached"), "{}", describe(&out));
    // SHMEM_GLOBAL_EXIT from one PE ends every PE, with a failure.
    let exe = build_inline(
        &t,
        "gexit.f",
        "      PROGRAM GEXIT\n      INCLUDE 'shmem.fh'\n      CALL START_PES(0)\n      \
         IF (MY_PE() .EQ. 1) CALL SHMEM_GLOBAL_EXIT(3)\n      CALL SHMEM_BARRIER_ALL()\n      \
         PRINT *, 'past the barrier'\n      END\n",
        FLAGS,
    );
    let out = Command::new(tool("oshrun")).args(["-n", "2", "--timeout", "60"]).arg(&exe).output().unwrap();
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("past the barrier"), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shmem_global_exit(3)"), "{}", describe(&out));
}

/// `shmem.fh` leaves the functions' types to the program, as Sandia OpenSHMEM's does by
/// default: a program that declares them (`INTEGER SHMEM_MY_PE`, `INTEGER*8 SHMEM_INT8_FADD`)
/// compiles. And with `IMPLICIT NONE` in both forms, the declarations `shmem.fh` makes (the
/// LOGICAL accessibility functions, the `INTEGER(KIND=8)` `SHMEM_PTR`) are all the program
/// needs for those.
#[test]
fn programs_declare_the_function_types_themselves() {
    if !have("gfortran") {
        return;
    }
    ensure_built();
    let t = TempDir::new("fl-decl");
    let body = |indent: &str| {
        [
            "IMPLICIT NONE",
            "INCLUDE 'shmem.fh'",
            "INTEGER MY_PE, NUM_PES, SHMEM_MY_PE, SHMEM_N_PES, SHMEM_SWAP",
            "INTEGER SHMEM_TEST_LOCK",
            "INTEGER*4 SHMEM_INT4_FADD, SHMEM_INT4_FINC, SHMEM_INT4_CSWAP",
            "INTEGER*4 SHMEM_INT4_SWAP, SHMEM_INT4_FETCH",
            "INTEGER*8 SHMEM_INT8_FADD, SHMEM_INT8_FINC, SHMEM_INT8_CSWAP",
            "INTEGER*8 SHMEM_INT8_SWAP, SHMEM_INT8_FETCH",
            "REAL*4 SHMEM_REAL4_SWAP, SHMEM_REAL4_FETCH",
            "REAL*8 SHMEM_REAL8_SWAP, SHMEM_REAL8_FETCH",
            "INTEGER*8 X, P",
            "LOGICAL OK",
            "SAVE X",
            "CALL START_PES(0)",
            "X = 0",
            "CALL SHMEM_BARRIER_ALL()",
            "X = SHMEM_INT8_FADD(X, 1_8, 0) + SHMEM_N_PES() + NUM_PES()",
            "OK = SHMEM_PE_ACCESSIBLE(0) .AND. SHMEM_ADDR_ACCESSIBLE(X, 0)",
            "P = SHMEM_PTR(X, 0)",
            "CALL SHMEM_BARRIER_ALL()",
            "IF (OK .AND. P .NE. 0) PRINT *, 'PE', MY_PE(), ': OK'",
        ]
        .iter()
        .map(|l| format!("{indent}{l}\n"))
        .collect::<String>()
    };
    let fixed = format!("      PROGRAM DECL\n{}      END\n", body("      "));
    let free = format!("program decl\n{}end program decl\n", body("  "));
    for (name, src) in [("decl.f", fixed), ("decl.f90", free)] {
        // Not -Werror: most of the functions declared are not called.
        let exe = build_inline(&t, name, &src, &["-Wall", "-fcray-pointer"]);
        check_ok_lines(&oshrun_ok(&tool("oshrun"), 2, &exe), 2, name);
    }
}

/// An installation puts `shmem.fh` in `include/`, where its `oshfort` finds it.
#[test]
fn installed_oshfort_finds_shmem_fh() {
    if !have("gfortran") {
        return;
    }
    ensure_built();
    let t = TempDir::new("fl-install");
    let prefix = t.join("prefix");
    let profile = profile_dir().file_name().unwrap().to_str().unwrap().to_string();
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_oxshmem-install"))
            .arg("--prefix")
            .arg(&prefix)
            .args(["--profile", &profile, "--no-build"])
            .env_remove("OSHFORT_FC"),
    );
    assert_eq!(
        std::fs::read(prefix.join("include/shmem.fh")).unwrap(),
        std::fs::read(source_root().join("bindings/fortran/shmem.fh")).unwrap()
    );
    let exe = build(&prefix.join("bin/oshfort"), &t, "lock.f");
    check_ok_lines(&oshrun_ok(&prefix.join("bin/oshrun"), 2, &exe), 2, "lock.f from the installation");
}
