//! The installer: installs what this build made into a fresh prefix, then compiles and runs
//! programs the way a user of the installation would — `<prefix>/bin/oshcc`, `oshc++`,
//! `oshfort`, `<prefix>/bin/oshrun -n 2`, `pkg-config oxshmem`, a static link with
//! `liboxshmem.a` and the `.pc` file's `Libs.private`, and an NVSHMEM program built for the CPU
//! target with `<prefix>/bin/oshnvcc --target cpu` (the installer always builds that target:
//! it needs `c++` and `cc`, which this test therefore needs). (`bindings/tools/install.sh` also
//! builds in release first; the tests use `--no-build` on the build they run in, which runs no
//! nvcc.)

mod common;

use std::path::Path;
use std::process::Command;

use common::{TempDir, check_ring, crate_dir, ensure_built, have, oshrun_ok, profile_dir, run_ok, source_root, tool};

fn install(prefix: &Path) -> String {
    let profile = profile_dir().file_name().unwrap().to_str().unwrap().to_string();
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_oxshmem-install"))
            .arg("--prefix")
            .arg(prefix)
            .args(["--profile", &profile, "--no-build"])
            .env_remove("OSHFORT_FC"),
    )
}

#[test]
fn install_then_build_and_run_from_the_prefix() {
    ensure_built();
    // oshc++ and oshCC are made by the build script; make sure the rest of the tools are there.
    for t in ["oshcc", "oshcxx", "oshfort", "oshnvcc", "oxshmem-info", "oshrun"] {
        tool(t);
    }
    // The installer builds the CPU target with them, whatever else is there.
    if !(have("c++") && have("cc")) {
        return;
    }
    let t = TempDir::new("install");
    let prefix = t.join("prefix");
    let summary = install(&prefix);
    assert!(summary.contains("installed into"), "{summary}");
    // Installing again over the same prefix works (files are replaced, links remade).
    install(&prefix);

    for f in [
        "bin/oshrun",
        "bin/oshcc",
        "bin/oshcxx",
        "bin/oshc++",
        "bin/oshCC",
        "bin/oshfort",
        "bin/oshnvcc",
        "bin/oxshmem-info",
        "lib/liboxshmem.so",
        "lib/liboxshmem.so.1",
        "lib/liboxshmem.a",
        "lib/pkgconfig/oxshmem.pc",
        "include/shmem.h",
        "include/shmemx.h",
        "include/mpp/shmem.h",
        "include/nvshmem.h",
        "include/non_abi/nvshmemx_error.h",
        "include/device_host/nvshmem_common.cuh",
        "share/oxshmem/fortran/shmem.f90",
        "lib/oxshmem/cpu/libnvshmem_device.a",
        "lib/oxshmem/cpu/emucuda/libcuda.so",
        "include/oxshmem/cuda-on-cpu/cuda_runtime.h",
        "include/oxshmem/cuda-on-cpu/cooperative_groups.h",
        "include/oxshmem/cpu.cuh",
        "include/oxshmem/device_state.h",
        "include/oxshmem/device_protocol.h",
    ] {
        assert!(prefix.join(f).exists(), "{f} not installed");
    }
    assert_eq!(std::fs::read_link(prefix.join("lib/liboxshmem.so.1")).unwrap(), Path::new("liboxshmem.so"));
    assert_eq!(std::fs::read_link(prefix.join("bin/oshc++")).unwrap(), Path::new("oshcxx"));
    assert_eq!(
        std::fs::read(prefix.join("include/shmem.h")).unwrap(),
        std::fs::read(source_root().join("bindings/c/include/shmem.h")).unwrap()
    );
    let bin = prefix.join("bin");
    let prefix_s = prefix.canonicalize().unwrap().display().to_string();

    // The wrappers point at the prefix, not at the build tree.
    let shown = run_ok(Command::new(bin.join("oshcc")).args(["-show", "x.c"]).env_remove("OSHCC_CC"));
    assert_eq!(
        shown.trim(),
        format!("cc -I{prefix_s}/include x.c -L{prefix_s}/lib -Wl,-rpath,{prefix_s}/lib -loxshmem")
    );
    let facts = run_ok(Command::new(bin.join("oxshmem-info")).arg("--parsable"));
    assert!(
        facts.contains("path:layout:installed\n") && facts.contains(&format!("path:prefix:{prefix_s}\n")),
        "{facts}"
    );

    let src = crate_dir().join("tests/c/ring.c");
    let oshrun = bin.join("oshrun");

    // oshnvcc --target cpu + oshrun from the prefix: an NVSHMEM program of tests/cuda, its
    // kernels on host threads, with the prefix's CPU target and nothing of the source tree's.
    assert!(!prefix.join("lib/oxshmem/cpu/obj").exists(), "the CPU target's objects are left in the prefix");
    let rma = source_root().join("tests/cuda/rma.cu");
    let shown =
        run_ok(Command::new(bin.join("oshnvcc")).args(["--target", "cpu", "-show"]).arg(&rma).args(["-o", "rma"]));
    for want in [
        format!("-I {prefix_s}/include/oxshmem/cuda-on-cpu -I {prefix_s}/include "),
        format!(" {prefix_s}/lib/oxshmem/cpu/libnvshmem_device.a -L{prefix_s}/lib "),
    ] {
        assert!(shown.contains(&want), "no {want:?} in:\n{shown}");
    }
    let root_s = source_root().display().to_string();
    assert!(!shown.lines().any(|l| l.contains(&format!("-I {root_s}/"))), "source-tree headers in:\n{shown}");
    run_ok(
        Command::new(bin.join("oshnvcc"))
            .args(["--target", "cpu"])
            .arg(&rma)
            .args(["-o", "rma"])
            .current_dir(&t.0)
            .env_remove("OSHNVCC_CXX"),
    );
    let out = run_ok(Command::new(&oshrun).args(["-n", "2", "--timeout", "120", "./rma"]).current_dir(&t.0));
    for pe in 0..2 {
        assert!(out.lines().any(|l| l.starts_with(&format!("PE {pe}: ok rma: "))), "no `PE {pe}: ok rma:` in:\n{out}");
    }

    // oshcc + oshrun from the prefix.
    let exe = t.join("ring");
    run_ok(Command::new(bin.join("oshcc")).arg("-Wall").arg(&src).arg("-o").arg(&exe));
    check_ring(&oshrun_ok(&oshrun, 2, &exe), 2, "");

    // pkg-config.
    if have("pkg-config") {
        let pc_path = prefix.join("lib/pkgconfig");
        let pkg = |args: &[&str]| {
            run_ok(Command::new("pkg-config").args(args).arg("oxshmem").env("PKG_CONFIG_PATH", &pc_path))
                .trim()
                .to_string()
        };
        let flags = pkg(&["--cflags", "--libs"]);
        assert_eq!(flags, format!("-I{prefix_s}/include -L{prefix_s}/lib -loxshmem"));
        let libdir = pkg(&["--variable=libdir"]);
        let exe = t.join("ring-pc");
        run_ok(
            Command::new("cc")
                .arg(&src)
                .arg("-o")
                .arg(&exe)
                .args(flags.split_whitespace())
                .arg(format!("-Wl,-rpath,{libdir}")),
        );
        check_ring(&oshrun_ok(&oshrun, 2, &exe), 2, "");

        // Static: the archive and Libs.private are enough.
        let private = pkg(&["--libs", "--static"]);
        let exe = t.join("ring-static");
        let mut cc = Command::new("cc");
        cc.arg(&src).arg("-o").arg(&exe).arg(format!("-I{prefix_s}/include"));
        for w in private.split_whitespace() {
            if w == "-loxshmem" {
                cc.arg(prefix.join("lib/liboxshmem.a"));
            } else {
                cc.arg(w);
            }
        }
        run_ok(&mut cc);
        let ldd = run_ok(Command::new("ldd").arg(&exe));
        assert!(!ldd.contains("liboxshmem"), "the static program loads liboxshmem:\n{ldd}");
        check_ring(&oshrun_ok(&oshrun, 2, &exe), 2, "");
    }

    if have("c++") {
        let exe = t.join("ring-cxx");
        run_ok(Command::new(bin.join("oshc++")).arg(crate_dir().join("tests/c/ring.cc")).arg("-o").arg(&exe));
        check_ring(&oshrun_ok(&oshrun, 2, &exe), 2, "C++ ");
    }

    // Fortran from the prefix: the installer compiled the module for this gfortran.
    if have("gfortran") {
        let shown = run_ok(Command::new(bin.join("oshfort")).args(["-show", "p.f90"]).env_remove("OSHFORT_FC"));
        assert!(shown.contains(&format!("-I{prefix_s}/lib/oxshmem/fortran/gfortran-")), "{shown}");
        let exe = t.join("rma");
        run_ok(
            Command::new(bin.join("oshfort"))
                .arg(source_root().join("bindings/fortran/tests/rma.f90"))
                .arg("-o")
                .arg(&exe)
                .current_dir(&t.0)
                .env_remove("OSHFORT_FC"),
        );
        let out = oshrun_ok(&oshrun, 2, &exe);
        assert!(out.contains("rma: ok on 2 PEs"), "{out}");
    }
}
