//! `shmem.fh`, the include file of the deprecated Fortran API: the checked-in copy
//! (`bindings/fortran/shmem.fh`) is what `build.rs` generates now from `gen/fortran.rs`, and it
//! compiles with `IMPLICIT NONE` in fixed form and in free form (`-std=f2018`), with gfortran's
//! warnings as errors. (`abi` holds the routines it lists against the library's exports; the
//! `oxshmem-tools` test `fortran_legacy` runs programs that include it.)
//!
//! `OXSHMEM_BLESS=1 cargo test -p oxshmem-c --test fortran_fh` refreshes the checked-in copy.
//! The compile test needs gfortran; without it, it says so and passes.

mod common;

use std::path::PathBuf;

use common::{arg, crate_dir, have, out_dir, run_ok};

fn checked_in() -> PathBuf {
    crate_dir().join("../fortran/shmem.fh")
}

#[test]
fn checked_in_shmem_fh_is_fresh() {
    let fresh = std::fs::read_to_string(out_dir().join("fortran/shmem.fh")).expect("generated shmem.fh");
    let path = checked_in();
    if std::fs::read_to_string(&path).ok().as_deref() == Some(fresh.as_str()) {
        return;
    }
    if std::env::var_os("OXSHMEM_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, fresh).expect("writing shmem.fh");
        eprintln!("refreshed {}", path.display());
        return;
    }
    panic!(
        "bindings/fortran/shmem.fh differs from what build.rs generates from gen/fortran.rs: run \
         `OXSHMEM_BLESS=1 cargo test -p oxshmem-c --test fortran_fh` and commit the result"
    );
}

#[test]
fn shmem_fh_compiles_in_fixed_and_free_form() {
    if !have("gfortran") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("oxshmem-c-fortran-fh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let inc = crate_dir().join("../fortran");
    // Uses what shmem.fh declares, so that -Wall finds nothing unused.
    let body = [
        "IMPLICIT NONE",
        "INCLUDE 'shmem.fh'",
        "INTEGER X(SHMEM_REDUCE_SYNC_SIZE)",
        "LOGICAL OK",
        "SAVE X",
        "X(1) = SHMEM_SYNC_VALUE + SHMEM_CMP_EQ",
        "OK = SHMEM_PE_ACCESSIBLE(0) .AND. SHMEM_ADDR_ACCESSIBLE(X, 0)",
        "IF (OK .AND. SHMEM_PTR(X, 0) .NE. 0) PRINT *, SHMEM_VENDOR_STRING",
    ];
    let fixed: String = body.iter().map(|l| format!("      {l}\n")).collect();
    let free: String = body.iter().map(|l| format!("  {l}\n")).collect();
    let sources = [
        ("fixed.f", format!("      PROGRAM FIXED\n{fixed}      END\n"), &["-Wall", "-Werror"][..]),
        ("free.f90", format!("program free\n{free}end program free\n"), &["-std=f2018", "-Wall", "-Werror"][..]),
    ];
    let r = std::panic::catch_unwind(|| {
        for (name, src, flags) in &sources {
            let file = dir.join(name);
            std::fs::write(&file, src).expect("writing the program");
            let obj = dir.join(format!("{name}.o"));
            let mut args: Vec<&str> = flags.to_vec();
            args.extend(["-I", arg(&inc), "-c", arg(&file), "-o", arg(&obj)]);
            run_ok("gfortran", &args);
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = r {
        std::panic::resume_unwind(e);
    }
}
