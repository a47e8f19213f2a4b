//! The device library for AMD GPUs (issue 30): `bindings/cuda/build-hip.sh` compiles the same
//! sources as the CUDA build (`bindings/cuda/src`, `generated/` included) with hipcc into a
//! relocatable `libnvshmem_device.a` for gfx90a, and links the NVSHMEM-style programs of
//! `tests/cuda` against it and the host library (`liboxshmem.so`). The test reads what was
//! built: every archive member carries a gfx90a device part (LLVM bitcode, linked when a program
//! is), and every program's fat binary holds a gfx90a code object (an AMDGPU ELF for gfx90a);
//! in `rma` and `signal` that code object holds the device library's routing core, so the
//! library was linked into the device code, not only named.
//!
//! Needs hipcc: `OXSHMEM_HIPCC`, else `hipcc` on PATH (Debian 12: `apt-get install -y hipcc
//! libamdhip64-dev rocm-device-libs`, ROCm 5.2). Without it the test is skipped with that line,
//! or fails where the run requires hipcc (`OXSHMEM_TEST_REQUIRE`, as `.ci/run` sets it). No GPU is
//! needed: nothing runs on a device.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/<profile>`: above the test executable's `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("the test executable has a directory").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// hipcc: `OXSHMEM_HIPCC`, else the first `hipcc` on PATH; `None` after
/// [`oxshmem_test_require::skip`] when there is none (a failure where the run requires hipcc, as
/// `.ci/run` does).
fn hipcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OXSHMEM_HIPCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    oxshmem_test_require::tool(
        "hipcc",
        "the HIP build of libnvshmem_device.a needs it; on Debian 12: \
         apt-get install -y hipcc libamdhip64-dev rocm-device-libs, or set OXSHMEM_HIPCC",
    )
}

/// Runs `cmd` with a timeout, failing the test with its output unless it succeeds.
fn run(mut cmd: Command, log: &Path, timeout: Duration) {
    let shown = format!("{cmd:?}");
    let file = std::fs::File::create(log).expect("creating a log file");
    let mut child = cmd
        .stdout(Stdio::from(file.try_clone().expect("cloning the log file")))
        .stderr(Stdio::from(file))
        .spawn()
        .unwrap_or_else(|e| panic!("starting {shown}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for a child") {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{shown} ran past {}s:\n{}", timeout.as_secs(), std::fs::read_to_string(log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    assert!(status.success(), "{shown} failed ({status}):\n{text}");
}

/// Builds `liboxshmem.so` (the host library) into this test's target directory.
fn host_lib(scratch: &Path) -> PathBuf {
    let profile = match profile_dir().file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_string(),
        Some(p) => p.to_string(),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = profile_dir().parent().expect("target/<profile> has a parent").to_path_buf();
    let mut c = Command::new(cargo);
    c.args(["build", "-p", "oxshmem-c", "--profile", &profile, "--manifest-path"])
        .arg(root().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target);
    run(c, &scratch.join("cargo.log"), Duration::from_secs(1800));
    assert!(profile_dir().join("liboxshmem.so").exists(), "cargo built oxshmem-c but no liboxshmem.so");
    profile_dir()
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes")) as usize
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes")) as usize
}

/// The sections of a 64-bit little-endian ELF file: (name, contents).
fn elf_sections(elf: &[u8], what: &str) -> Vec<(String, Vec<u8>)> {
    assert!(
        elf.len() > 64 && &elf[..4] == b"\x7fELF" && elf[4] == 2 && elf[5] == 1,
        "{what} is not a 64-bit LE ELF file"
    );
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(elf, 0x28), u16_at(elf, 0x3a), u16_at(elf, 0x3c), u16_at(elf, 0x3e));
    let header = |i: usize| {
        let h = shoff + i * shentsize;
        (u32_at(elf, h) as usize, u32_at(elf, h + 4), u64_at(elf, h + 24), u64_at(elf, h + 32))
    };
    let (_, _, stroff, _) = header(shstrndx);
    (0..shnum)
        .map(|i| {
            let (name, kind, off, size) = header(i);
            let n = &elf[stroff + name..];
            let n = String::from_utf8_lossy(&n[..n.iter().position(|&c| c == 0).unwrap_or(0)]).into_owned();
            // SHT_NOBITS (8) has no contents in the file
            let data = if kind == 8 { Vec::new() } else { elf[off..off + size].to_vec() };
            (n, data)
        })
        .collect()
}

/// The members of a System V / GNU `ar` archive: (name, contents).
fn ar_members(ar: &[u8]) -> Vec<(String, Vec<u8>)> {
    assert!(ar.starts_with(b"!<arch>\n"), "not an ar archive");
    let mut at = 8;
    let mut long_names: &[u8] = &[];
    let mut out = Vec::new();
    while at + 60 <= ar.len() {
        let h = &ar[at..at + 60];
        let raw = String::from_utf8_lossy(&h[..16]).trim_end().to_string();
        let size: usize = String::from_utf8_lossy(&h[48..58]).trim().parse().expect("ar member size");
        let data = &ar[at + 60..at + 60 + size];
        if raw == "//" {
            long_names = data;
        } else if raw != "/" && raw != "/SYM64/" {
            let name = if let Some(off) = raw.strip_prefix('/').and_then(|o| o.parse::<usize>().ok()) {
                let n = &long_names[off..];
                String::from_utf8_lossy(&n[..n.iter().position(|&c| c == b'/').unwrap_or(n.len())]).into_owned()
            } else {
                raw.trim_end_matches('/').to_string()
            };
            out.push((name, data.to_vec()));
        }
        at += 60 + size + size % 2;
    }
    out
}

/// The entries of a clang offload bundle: (target triple, contents).
fn bundle_entries(b: &[u8], what: &str) -> Vec<(String, Vec<u8>)> {
    const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
    assert!(b.starts_with(MAGIC), "{what} does not start with a clang offload bundle");
    let n = u64_at(b, 24);
    let mut at = 32;
    (0..n)
        .map(|_| {
            let (off, size, tlen) = (u64_at(b, at), u64_at(b, at + 8), u64_at(b, at + 16));
            let triple = String::from_utf8_lossy(&b[at + 24..at + 24 + tlen]).into_owned();
            at += 24 + tlen;
            (triple, b[off..off + size].to_vec())
        })
        .collect()
}

const EM_AMDGPU: usize = 224;
const EF_AMDGPU_MACH_AMDGCN_GFX90A: u32 = 0x3f;

#[test]
fn the_device_library_and_the_test_programs_build_for_gfx90a() {
    let Some(hipcc) = hipcc() else { return };
    let scratch = std::env::temp_dir().join(format!("oxshmem-hip-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("creating a scratch directory");
    let libdir = host_lib(&scratch);
    let out = scratch.join("hip");
    let mut c = Command::new("bash");
    c.arg(root().join("bindings/cuda/build-hip.sh"))
        .arg(&out)
        .args(["--arch", "gfx90a", "--programs"])
        .arg(&libdir)
        .env("OXSHMEM_HIPCC", &hipcc);
    let start = Instant::now();
    run(c, &scratch.join("build-hip.log"), Duration::from_secs(1800));
    println!("build-hip.sh --arch gfx90a --programs: {:.0}s", start.elapsed().as_secs_f64());

    // The archive: one member per source, each with a gfx90a device part of LLVM bitcode.
    let ar = std::fs::read(out.join("libnvshmem_device.a")).expect("build-hip.sh made no libnvshmem_device.a");
    let members = ar_members(&ar);
    let mut names: Vec<String> = members.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    let mut want: Vec<String> = ["host.o", "core.o"].iter().map(|s| s.to_string()).collect();
    for e in std::fs::read_dir(root().join("bindings/cuda/src/generated")).expect("reading src/generated") {
        let p = e.expect("a directory entry").path();
        if p.extension().is_some_and(|x| x == "cu") {
            want.push(format!("{}.o", p.file_stem().expect("a file stem").to_string_lossy()));
        }
    }
    want.sort();
    assert_eq!(names, want, "libnvshmem_device.a's members");
    for (name, obj) in &members {
        let sections = elf_sections(obj, name);
        let dev = sections
            .iter()
            .find(|(n, _)| n == "__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa-gfx90a")
            .unwrap_or_else(|| panic!("{name} in libnvshmem_device.a has no gfx90a device part"));
        assert!(dev.1.starts_with(b"BC\xc0\xde"), "{name}'s gfx90a part is not LLVM bitcode (relocatable device code)");
    }
    println!("libnvshmem_device.a: {} members, each with gfx90a relocatable device code", members.len());

    // The programs: a gfx90a code object each; rma and signal hold the library's routing core.
    let mut programs = Vec::new();
    for e in std::fs::read_dir(root().join("tests/cuda")).expect("reading tests/cuda") {
        let p = e.expect("a directory entry").path();
        if p.extension().is_some_and(|x| x == "cu") {
            programs.push(p.file_stem().expect("a file stem").to_string_lossy().into_owned());
        }
    }
    programs.sort();
    assert!(programs.len() >= 2, "tests/cuda has fewer than two programs");
    for prog in &programs {
        let exe = std::fs::read(out.join("bin").join(prog)).unwrap_or_else(|e| panic!("no program {prog}: {e}"));
        let sections = elf_sections(&exe, prog);
        let fatbin =
            &sections.iter().find(|(n, _)| n == ".hip_fatbin").unwrap_or_else(|| panic!("{prog} has no .hip_fatbin")).1;
        let entries = bundle_entries(fatbin, prog);
        let (_, code) = entries
            .iter()
            .find(|(t, _)| t.starts_with("hipv4-amdgcn-amd-amdhsa") && t.ends_with("gfx90a"))
            .unwrap_or_else(|| {
                let t: Vec<&String> = entries.iter().map(|(t, _)| t).collect();
                panic!("{prog}'s fat binary has no gfx90a code object (targets {t:?})")
            });
        assert!(code.starts_with(b"\x7fELF"), "{prog}'s gfx90a code object is not an ELF file");
        assert_eq!(u16_at(code, 0x12), EM_AMDGPU, "{prog}'s gfx90a code object is not for AMDGPU");
        assert_eq!(u32_at(code, 0x30) & 0xff, EF_AMDGPU_MACH_AMDGCN_GFX90A, "{prog}'s code object is not for gfx90a");
        let core = b"_ZN8oxshmemi5routeEjPKvmi";
        let linked = code.windows(core.len()).any(|w| w == core);
        if prog == "rma" || prog == "signal" {
            assert!(linked, "{prog}'s gfx90a code object does not hold the device library's route()");
        }
        println!(
            "{prog}: gfx90a code object of {} bytes{}",
            code.len(),
            if linked { ", with the device library's cores" } else { "" }
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
