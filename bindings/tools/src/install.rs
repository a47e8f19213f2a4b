//! `oxshmem-install --prefix DIR`: builds oxshmem (release unless `--profile` says otherwise)
//! and installs it:
//!
//! | where | what |
//! | --- | --- |
//! | `bin/` | `oshrun`, `oshcc`, `oshcxx` with the links `oshc++` and `oshCC`, `oshfort`, `oshnvcc`, `oxshmem-info`, `oxshmem-api-coverage` |
//! | `lib/` | `liboxshmem.so`, the SONAME link `liboxshmem.so.1`, `liboxshmem.a`; `libnvshmem_host.so.3` (NVSHMEM's library name, the same code) and its link `libnvshmem_host.so`; `libnvshmem_device.a`, the CUDA device library, when nvcc is there to build it (see [`DeviceLib`]) |
//! | `lib/pkgconfig/` | `oxshmem.pc` |
//! | `lib/oxshmem/cpu/` | the CPU target of `oshnvcc --target cpu` (see `cpu_target`): `libnvshmem_device.a` built by `bindings/cuda/build-cpu.sh` with `c++` and `cc`, always, and the emulated CUDA driver `emucuda/libcuda.so`, whose path the archive holds |
//! | `include/` | `shmem.h`, `shmemx.h`, `mpp/shmem.h`, `mpp/shmemx.h`, `nvshmem.h`, `nvshmemx.h`, `nvshmem_device.h`, and the NVSHMEM headers programs include besides those, `non_abi/nvshmemx_error.h` and `device_host/nvshmem_common.cuh` (the whole of `bindings/c/include`); `shmem.fh`, the include file of the deprecated Fortran API |
//! | `include/oxshmem/` | the CPU target's CUDA headers in `cuda-on-cpu/` (`cuda_runtime.h`, `cuda.h`, `cooperative_groups.h`, ...: `bindings/cuda/src/arch/cuda-on-cpu`), their SIMT model `cpu.cuh` beside it, and the device library's state and protocol headers `device_state.h`, `device_protocol.h` (`device/include/oxshmem`) |
//! | `share/oxshmem/fortran/` | `shmem.f90`, the Fortran module source |
//! | `lib/oxshmem/fortran/<compiler>/` | `shmem.mod` compiled with the Fortran compiler found now, if any |
//!
//! Each file is written beside its destination and renamed over it, so reinstalling over a
//! prefix whose programs are running is safe (the CPU target's archive and driver are made anew
//! by `ar` and the linker, which replace a file rather than write into it, and only when its
//! sources or compilers changed).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::layout::{self, Layout};

/// What the installer was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The installation prefix.
    pub prefix: PathBuf,
    /// The cargo profile to build and install (`release`).
    pub profile: String,
    /// Install what is built already, without running cargo.
    pub build: bool,
    /// Cargo features to build with (`--features`), e.g. `oxshmem-bootstrap/pmix` or
    /// `oxshmem/ofi`.
    pub features: Vec<String>,
    /// Whether to build and install `libnvshmem_device.a`.
    pub device_lib: DeviceLib,
    /// The GPU architectures of the device library (`--cuda-arch`, e.g. `80,90,100`).
    pub cuda_arch: String,
}

/// Whether the installer builds the CUDA device library (`bindings/cuda/build.sh`, nvcc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceLib {
    /// Build it when an nvcc is found (`OXSHMEM_NVCC`, `NVCC`, `nvcc` on `PATH`, or the toolchain
    /// `scripts/cuda-toolchain.sh` installed: [`toolchain_dir`]), else say in one line what to
    /// run; with `--no-build`, install the one `target/<profile>/cuda/` holds, if any.
    Auto,
    /// `--device-lib`: build it, and fail without an nvcc.
    Require,
    /// `--no-device-lib`: neither build nor install it.
    Skip,
}

/// The architectures the device library is built for by default: SASS for A100, H100/H200 and
/// B200 (so a driver runs it without JIT: a driver older than the compiler cannot JIT its
/// PTX), plus PTX for later GPUs.
pub const DEFAULT_CUDA_ARCH: &str = "80,90,100";

/// The usage text.
pub const USAGE: &str = "\
Usage: oxshmem-install --prefix DIR [--profile NAME] [--no-build] [--features LIST] [--pmix]
                      [--device-lib | --no-device-lib] [--cuda-arch LIST]

Builds oxshmem with cargo and installs the launcher, the compiler wrappers (oshnvcc too),
oxshmem-info, liboxshmem (.so, .a), the headers, oxshmem.pc and the Fortran module under DIR,
and builds the CPU target of `oshnvcc --target cpu` into DIR/lib/oxshmem/cpu (c++ and cc).

  --prefix DIR     where to install (bin/, lib/, include/, share/)
  --profile NAME   cargo profile to build and install (default: release)
  --no-build       install what target/<profile>/ holds now, without running cargo
  --features LIST  cargo features to build with, e.g. oxshmem/ofi (libfabric transport)
  --pmix           the PMIx bootstrap (srun --mpi=pmix): --features oxshmem-tools/pmix
  --device-lib     build libnvshmem_device.a, the CUDA device library, with nvcc
                   (OXSHMEM_NVCC, NVCC, nvcc on PATH, or the toolchain that
                   scripts/cuda-toolchain.sh installed in $OXSHMEM_CUDA_HOME or
                   ~/.cache/oxshmem/cuda); by default it is built when an nvcc is found
  --no-device-lib  do not build or install the device library
  --cuda-arch LIST GPU architectures of the device library (default: 80,90,100)
  -h, --help       print this help

Usually run as: bindings/tools/install.sh --prefix DIR
";

/// Parses the command line (without the program name).
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Option<Options>, String> {
    let mut prefix = None;
    let mut profile = "release".to_string();
    let mut build = true;
    let mut features = Vec::new();
    let mut device_lib = DeviceLib::Auto;
    let mut cuda_arch = DEFAULT_CUDA_ARCH.to_string();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let a = a.into_string().map_err(|a| format!("argument {a:?} is not UTF-8"))?;
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().and_then(|v| v.into_string().ok()))
                .ok_or(format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--prefix" => prefix = Some(PathBuf::from(value("--prefix")?)),
            "--profile" => profile = value("--profile")?,
            "--no-build" => build = false,
            "--features" => {
                features.extend(value("--features")?.split([',', ' ']).filter(|f| !f.is_empty()).map(String::from))
            }
            "--pmix" => features.push("oxshmem-tools/pmix".to_string()),
            "--device-lib" => device_lib = DeviceLib::Require,
            "--no-device-lib" => device_lib = DeviceLib::Skip,
            "--cuda-arch" => {
                cuda_arch = value("--cuda-arch")?;
                if cuda_arch.is_empty()
                    || !cuda_arch.split(',').all(|a| !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()))
                {
                    return Err(format!("--cuda-arch {cuda_arch:?}: expected numbers like 80,90,100"));
                }
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let prefix = prefix.ok_or("--prefix DIR is required")?;
    Ok(Some(Options { prefix, profile, build, features, device_lib, cuda_arch }))
}

/// cargo's directory name for `profile`.
fn profile_dir_name(profile: &str) -> &str {
    match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        p => p,
    }
}

/// The binaries installed into `bin/`, from `target/<profile>/`.
pub const BINARIES: &[&str] =
    &["oshrun", "oshcc", "oshcxx", "oshfort", "oshnvcc", "oxshmem-info", "oxshmem-api-coverage"];
/// The links installed into `bin/`, to `oshcxx`.
pub const CXX_ALIASES: &[&str] = &["oshc++", "oshCC"];
/// The include file of the deprecated Fortran API (`include 'shmem.fh'`), beside the module
/// source in a build tree and in `include/` once installed, where `oshfort`'s `-I` finds it.
pub const FORTRAN_INCLUDE: &str = "shmem.fh";

/// Copies `from` to `to` through a temporary file beside `to`, keeping the permissions.
fn install_file(from: &Path, to: &Path) -> Result<(), String> {
    let name = to.file_name().ok_or("no file name")?.to_string_lossy();
    let tmp = to.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::copy(from, &tmp).map_err(|e| format!("copying {} to {}: {e}", from.display(), tmp.display()))?;
    std::fs::rename(&tmp, to).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("renaming {} to {}: {e}", tmp.display(), to.display())
    })
}

/// Makes `link` a symbolic link to `target` (relative), replacing what is there.
fn install_link(target: &str, link: &Path) -> Result<(), String> {
    let name = link.file_name().ok_or("no file name")?.to_string_lossy();
    let tmp = link.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).map_err(|e| format!("linking {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, link).map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), link.display()))
}

fn write_file(to: &Path, text: &str) -> Result<(), String> {
    let name = to.file_name().ok_or("no file name")?.to_string_lossy();
    let tmp = to.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, to).map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), to.display()))
}

fn mkdir(d: &Path) -> Result<(), String> {
    std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))
}

/// Copies every file under `from` to `to`, keeping the tree.
fn install_tree(from: &Path, to: &Path) -> Result<(), String> {
    mkdir(to)?;
    let rd = std::fs::read_dir(from).map_err(|e| format!("reading {}: {e}", from.display()))?;
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            install_tree(&p, &to.join(e.file_name()))?;
        } else {
            install_file(&p, &to.join(e.file_name()))?;
        }
    }
    Ok(())
}

fn pkg_config(args: &[&str]) -> Option<String> {
    Command::new("pkg-config")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|d| !d.is_empty())
}

/// What a static link needs beyond [`crate::pkgconfig::LIBS_PRIVATE`] for the features built:
/// libpmix for `pmix`, libfabric for `ofi`, found as their build scripts find them.
fn extra_private_libs(features: &[String]) -> String {
    let mut v = Vec::new();
    if features.iter().any(|f| f.ends_with("pmix")) {
        let dir = pkg_config(&["--variable=libdir", "pmix"])
            .unwrap_or_else(|| "/usr/lib/x86_64-linux-gnu/pmix2/lib".to_string());
        v.push(format!("-L{dir} -lpmix"));
    }
    if features.iter().any(|f| f.ends_with("ofi")) {
        v.push(pkg_config(&["--libs", "libfabric"]).unwrap_or_else(|| "-lfabric".to_string()));
    }
    v.join(" ")
}

/// The one line the installer prints when it finds no nvcc: what to run to get one.
pub const NO_NVCC_HINT: &str = "no nvcc: `bash scripts/cuda-toolchain.sh` installs one without root \
     (NVIDIA's pip wheels, into ~/.cache/oxshmem/cuda, where the installer finds it), then install again";

/// The nvcc to build the device library with, and where it was found: `OXSHMEM_NVCC`, `NVCC`,
/// `nvcc` on `PATH`, or else the toolchain `scripts/cuda-toolchain.sh` installed into its
/// folder ([`toolchain_dir`]) even though its `--env` output was never evaluated.
fn find_nvcc() -> Option<(PathBuf, String)> {
    for var in ["OXSHMEM_NVCC", "NVCC"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return Some((PathBuf::from(v), format!("${var}")));
        }
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|d| d.join("nvcc")).find(|p| p.is_file()));
    if let Some(p) = on_path {
        return Some((p, "PATH".into()));
    }
    let dir = toolchain_dir()?;
    cached_nvcc(&dir).map(|p| (p, format!("the toolchain scripts/cuda-toolchain.sh installed in {}", dir.display())))
}

/// The folder `scripts/cuda-toolchain.sh` installs into by default: `$OXSHMEM_CUDA_HOME`, else
/// `~/.cache/oxshmem/cuda`.
pub fn toolchain_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("OXSHMEM_CUDA_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cache/oxshmem/cuda"))
}

/// The nvcc of a toolchain `scripts/cuda-toolchain.sh` installed into `dir` (a Python virtual
/// environment holding NVIDIA's wheels: `lib/python3.*/site-packages/nvidia/cu13/bin/nvcc`), if
/// it is there and executable.
pub fn cached_nvcc(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut pythons: Vec<PathBuf> = std::fs::read_dir(dir.join("lib"))
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path())
        .collect();
    pythons.sort();
    pythons
        .into_iter()
        .map(|p| p.join("site-packages/nvidia/cu13/bin/nvcc"))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Builds (or finds) `libnvshmem_device.a` under `built/cuda/`: the library and whether this
/// run built it (else it is one an earlier run left there); `None` when there is none to
/// install.
fn device_library(opts: &Options, source_root: &Path, built: &Path) -> Result<Option<(PathBuf, bool)>, String> {
    let out = built.join("cuda");
    let lib = out.join(DEVICE_LIB);
    let nvcc = find_nvcc();
    let build = match (opts.device_lib, opts.build, &nvcc) {
        (DeviceLib::Skip, _, _) => return Ok(None),
        (DeviceLib::Require, _, None) => {
            return Err(format!("--device-lib: {NO_NVCC_HINT} (or set OXSHMEM_NVCC or NVCC, or put nvcc on PATH)"));
        }
        (DeviceLib::Require, _, Some(_)) => true,
        (DeviceLib::Auto, true, Some(_)) => true,
        (DeviceLib::Auto, true, None) => {
            if lib.is_file() {
                eprintln!(
                    "oxshmem-install: the CUDA device library is not rebuilt ({NO_NVCC_HINT}); installing the one an \
                     earlier run built: {}",
                    lib.display()
                );
            } else {
                eprintln!("oxshmem-install: the CUDA device library ({DEVICE_LIB}) is not built: {NO_NVCC_HINT}");
            }
            false
        }
        (DeviceLib::Auto, false, _) => false,
    };
    if build {
        let (nvcc, from) = nvcc.expect("checked above");
        eprintln!("oxshmem-install: nvcc: {} (from {from})", nvcc.display());
        let script = source_root.join("bindings/cuda/build.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(&script).arg(&out).arg("--arch").arg(&opts.cuda_arch).env("OXSHMEM_NVCC", &nvcc);
        eprintln!("oxshmem-install: building the device library: {cmd:?}");
        let st = cmd.status().map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !st.success() {
            return Err(format!("building {DEVICE_LIB} failed ({st})"));
        }
    }
    Ok(lib.is_file().then_some((lib, build)))
}

/// NVSHMEM's name for the device library, which its build lines name.
pub const DEVICE_LIB: &str = "libnvshmem_device.a";

/// Where the CPU target's archive and emulated driver go, under the prefix; `oshnvcc`'s
/// `cpu_target` (`nvcc.rs`) looks for `libnvshmem_device.a` there.
pub const CPU_TARGET_DIR: &str = "lib/oxshmem/cpu";
/// Where the CPU target's CUDA headers go, under the prefix (`oshnvcc --target cpu` puts it
/// first on the include path); `cuda_runtime.h` includes `../cpu.cuh`, installed beside it.
pub const CPU_HEADERS_DIR: &str = "include/oxshmem/cuda-on-cpu";

/// The file that runs as `cmd` (a path, or a name looked up on `PATH`), if any.
fn find_program(cmd: &str) -> Option<PathBuf> {
    if cmd.contains('/') {
        return Some(PathBuf::from(cmd)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(cmd)).find(|p| p.is_file())
}

/// The compilers `build-cpu.sh` uses (`$CXX`, default `c++`; `$CC`, default `cc`), checked
/// before anything is installed: the CPU target is always built, and needs nothing else.
fn cpu_compilers() -> Result<(String, String), String> {
    let pick = |var: &str, default: &str| {
        std::env::var(var).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| default.to_string())
    };
    let (cxx, cc) = (pick("CXX", "c++"), pick("CC", "cc"));
    for (cmd, what, var) in [(&cxx, "C++", "CXX"), (&cc, "C", "CC")] {
        let first = cmd.split_whitespace().next().unwrap_or_default();
        if find_program(first).is_none() {
            return Err(format!(
                "the CPU target of oshnvcc ({CPU_TARGET_DIR}/{DEVICE_LIB}) needs a {what} compiler, and `{first}` is \
                 not found (install g++ and gcc, or clang, or set {var})"
            ));
        }
    }
    Ok((cxx, cc))
}

/// The newest modification time of the files under `p` (recursively), or of `p`.
fn newest(p: &Path) -> std::time::SystemTime {
    let own = p.metadata().and_then(|m| m.modified()).unwrap_or(std::time::SystemTime::UNIX_EPOCH);
    match std::fs::read_dir(p) {
        Ok(rd) => rd.flatten().map(|e| newest(&e.path())).fold(own, std::cmp::max),
        Err(_) => own,
    }
}

/// Builds the CPU target of `oshnvcc` into `<prefix>/lib/oxshmem/cpu/` with
/// `bindings/cuda/build-cpu.sh` and installs its headers into `<prefix>/include/oxshmem/`.
/// The archive holds the absolute path of the emulated driver built beside it, so it is built
/// in place, not copied from the build tree. A reinstall from the same sources with the same
/// compilers keeps what is there (`.built-from` records them). Returns the archive and whether
/// this run built it.
fn cpu_target(source_root: &Path, prefix: &Path, compilers: &(String, String)) -> Result<(PathBuf, bool), String> {
    let out = prefix.join(CPU_TARGET_DIR);
    let archive = out.join(DEVICE_LIB);
    let stamp = out.join(".built-from");
    let sources = [
        source_root.join("bindings/cuda/src"),
        source_root.join("bindings/cuda/build-cpu.sh"),
        source_root.join("bindings/c/include"),
        source_root.join("device/include"),
        source_root.join("tests/emucuda/libcuda.c"),
    ];
    let recipe = format!(
        "{}\nCXX={}\nCC={}\nCXXFLAGS={}\n",
        source_root.display(),
        compilers.0,
        compilers.1,
        std::env::var("CXXFLAGS").unwrap_or_default()
    );
    let fresh = archive.metadata().and_then(|m| m.modified()).is_ok_and(|built| {
        out.join("emucuda/libcuda.so").is_file()
            && std::fs::read_to_string(&stamp).is_ok_and(|s| s == recipe)
            && sources.iter().all(|d| newest(d) <= built)
    });
    if !fresh {
        mkdir(&out)?;
        let _ = std::fs::remove_file(&stamp);
        let script = source_root.join("bindings/cuda/build-cpu.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(&script).arg(&out).env("CXX", &compilers.0).env("CC", &compilers.1);
        // Its progress goes where the installer's messages go, not into the summary.
        {
            use std::os::fd::AsFd;
            if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
                cmd.stdout(fd);
            }
        }
        eprintln!("oxshmem-install: building the CPU target (oshnvcc --target cpu): {cmd:?}");
        let st = cmd.status().map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !st.success() {
            return Err(format!("building the CPU target ({}) failed ({st})", archive.display()));
        }
        let _ = std::fs::remove_dir_all(out.join("obj"));
        write_file(&stamp, &recipe)?;
    }
    let arch = source_root.join("bindings/cuda/src/arch");
    install_tree(&arch.join("cuda-on-cpu"), &prefix.join(CPU_HEADERS_DIR))?;
    install_file(&arch.join("cpu.cuh"), &prefix.join("include/oxshmem/cpu.cuh"))?;
    install_tree(&source_root.join("device/include/oxshmem"), &prefix.join("include/oxshmem"))?;
    Ok((archive, !fresh))
}

/// Runs the installer; messages go to stderr, the summary to stdout.
pub fn run(opts: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let my_dir = exe.parent().ok_or("my executable has no directory")?;
    let tree = Layout::from_bin_dir(my_dir)?;
    let layout::Kind::BuildTree { source_root } = &tree.kind else {
        return Err("oxshmem-install runs from a build tree (target/<profile>/), not an installation".into());
    };
    let target_dir = my_dir.parent().ok_or("target/<profile> has no parent")?;
    let built = target_dir.join(profile_dir_name(&opts.profile));

    if opts.build {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(&cargo);
        cmd.arg("build")
            .arg("--profile")
            .arg(&opts.profile)
            .arg("--manifest-path")
            .arg(source_root.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir)
            .args(["-p", "oxshmem-c", "-p", "oxshmem-bootstrap", "-p", "oxshmem-tools"]);
        if !opts.features.is_empty() {
            cmd.arg("--features").arg(opts.features.join(","));
        }
        eprintln!("oxshmem-install: building: {cmd:?}");
        let st = cmd.status().map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
        if !st.success() {
            return Err(format!("the build failed ({st})"));
        }
    }
    let need: Vec<PathBuf> =
        BINARIES.iter().chain([layout::SHARED_LIB, layout::STATIC_LIB].iter()).map(|n| built.join(n)).collect();
    let missing: Vec<String> = need.iter().filter(|p| !p.is_file()).map(|p| p.display().to_string()).collect();
    if !missing.is_empty() {
        return Err(format!("not built: {} (run without --no-build)", missing.join(", ")));
    }

    let compilers = cpu_compilers()?;
    let device_lib = device_library(opts, source_root, &built)?;

    mkdir(&opts.prefix)?;
    let prefix = opts.prefix.canonicalize().map_err(|e| format!("{}: {e}", opts.prefix.display()))?;
    let dest = Layout::installed(&prefix);
    for d in [&dest.bin_dir, &dest.lib_dir, &dest.lib_dir.join("pkgconfig"), &dest.include_dir] {
        mkdir(d)?;
    }
    for b in BINARIES {
        install_file(&built.join(b), &dest.bin_dir.join(b))?;
    }
    for a in CXX_ALIASES {
        install_link("oshcxx", &dest.bin_dir.join(a))?;
    }
    for l in [layout::SHARED_LIB, layout::STATIC_LIB] {
        install_file(&built.join(l), &dest.lib_dir.join(l))?;
    }
    install_link(layout::SHARED_LIB, &dest.lib_dir.join(layout::SONAME))?;
    let extra = extra_private_libs(&opts.features);
    let extra_args: Vec<String> = extra.split_whitespace().map(String::from).collect();
    crate::nvlib::link(&dest.lib_dir, &extra_args)?;
    if let Some((lib, _)) = &device_lib {
        install_file(lib, &dest.lib_dir.join(DEVICE_LIB))?;
    }
    install_tree(&tree.include_dir, &dest.include_dir)?;
    let (cpu_archive, cpu_built) = cpu_target(source_root, &prefix, &compilers)?;
    let fdir = dest.fortran_source.parent().ok_or("no Fortran folder")?;
    mkdir(fdir)?;
    install_file(&tree.fortran_source, &dest.fortran_source)?;
    install_file(&tree.fortran_source.with_file_name(FORTRAN_INCLUDE), &dest.include_dir.join(FORTRAN_INCLUDE))?;
    write_file(&dest.lib_dir.join("pkgconfig/oxshmem.pc"), &crate::pkgconfig::pc_text(&prefix, &extra))?;

    // A module compiled now with the compiler the user will most likely use; oshfort compiles
    // others into the user's cache when asked for them.
    let _ = std::fs::remove_dir_all(&dest.fortran_module_root);
    let fc = crate::wrapper::Lang::Fortran.compiler();
    let module = std::fs::read(&dest.fortran_source)
        .map_err(|e| e.to_string())
        .and_then(|src| crate::fortran::key(&fc, &src))
        .and_then(|key| {
            let dir = dest.fortran_module_root.join(key);
            crate::fortran::compile_into(&dir, &dest.fortran_source, &fc).map(|()| dir)
        });
    let module = match module {
        Ok(dir) => dir.display().to_string(),
        Err(e) => {
            eprintln!(
                "oxshmem-install: warning: Fortran module not compiled now ({e}); oshfort compiles it on first use"
            );
            "not compiled (no Fortran compiler)".to_string()
        }
    };
    println!("oxshmem {} installed into {}", env!("CARGO_PKG_VERSION"), prefix.display());
    println!("  programs:        {}/{{{},{}}}", dest.bin_dir.display(), BINARIES.join(","), CXX_ALIASES.join(","));
    println!("  library:         {}/liboxshmem.{{so,so.1,a}}", dest.lib_dir.display());
    println!("  NVSHMEM library: {}/{} ({})", dest.lib_dir.display(), crate::nvlib::LINK_NAME, crate::nvlib::SONAME);
    match &device_lib {
        Some((_, true)) => {
            println!("  device library:  {}/{DEVICE_LIB} (sm {})", dest.lib_dir.display(), opts.cuda_arch)
        }
        Some((lib, false)) => {
            println!("  device library:  {}/{DEVICE_LIB} (built earlier: {})", dest.lib_dir.display(), lib.display())
        }
        None => match (opts.device_lib, opts.build) {
            (DeviceLib::Skip, _) => println!("  device library:  not built (--no-device-lib)"),
            (_, false) => {
                println!("  device library:  not installed (--no-build, and none in {}/cuda/)", built.display())
            }
            _ => println!("  device library:  not built ({NO_NVCC_HINT})"),
        },
    }
    println!(
        "  CPU target:      {} ({}; oshnvcc --target cpu, headers in {})",
        cpu_archive.display(),
        if cpu_built { format!("built with {}", compilers.0) } else { "up to date".to_string() },
        prefix.join(CPU_HEADERS_DIR).display()
    );
    println!("  headers:         {}", dest.include_dir.display());
    println!("  pkg-config:      {}/pkgconfig/oxshmem.pc", dest.lib_dir.display());
    println!("  Fortran source:  {}", dest.fortran_source.display());
    println!("  Fortran module:  {module}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments() {
        let o = parse(os(&["--prefix", "/x", "--no-build"])).unwrap().unwrap();
        assert_eq!(
            o,
            Options {
                prefix: "/x".into(),
                profile: "release".into(),
                build: false,
                features: vec![],
                device_lib: DeviceLib::Auto,
                cuda_arch: DEFAULT_CUDA_ARCH.into()
            }
        );
        let o = parse(os(&["--prefix=/x", "--device-lib", "--cuda-arch", "90"])).unwrap().unwrap();
        assert_eq!((o.device_lib, o.cuda_arch.as_str()), (DeviceLib::Require, "90"));
        assert_eq!(parse(os(&["--prefix=/x", "--no-device-lib"])).unwrap().unwrap().device_lib, DeviceLib::Skip);
        assert!(parse(os(&["--prefix=/x", "--cuda-arch", "sm_90"])).is_err());
        let o =
            parse(os(&["--prefix=/y", "--profile=dev", "--pmix", "--features", "oxshmem/ofi,a/b"])).unwrap().unwrap();
        assert_eq!((o.prefix, o.profile.as_str()), ("/y".into(), "dev"));
        assert_eq!(o.features, ["oxshmem-tools/pmix", "oxshmem/ofi", "a/b"]);
        assert!(parse(os(&["--no-build"])).is_err());
        assert!(parse(os(&["--prefix"])).is_err());
        assert!(parse(os(&["--bogus"])).is_err());
        assert_eq!(parse(os(&["--help"])), Ok(None));
    }

    /// The toolchain of scripts/cuda-toolchain.sh is found where it leaves it, without its
    /// `--env` having been evaluated: a virtual environment's `lib/python3.X/site-packages`.
    #[test]
    fn cached_toolchain() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("oxshmem-install-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(cached_nvcc(&dir), None, "no folder");
        let bin = dir.join("lib/python3.11/site-packages/nvidia/cu13/bin");
        std::fs::create_dir_all(&bin).unwrap();
        assert_eq!(cached_nvcc(&dir), None, "no nvcc in it");
        let nvcc = bin.join("nvcc");
        std::fs::write(&nvcc, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(cached_nvcc(&dir), None, "not executable");
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(cached_nvcc(&dir), Some(nvcc));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(NO_NVCC_HINT.contains("bash scripts/cuda-toolchain.sh"));
    }

    #[test]
    fn profile_dirs() {
        assert_eq!(profile_dir_name("dev"), "debug");
        assert_eq!(profile_dir_name("release"), "release");
        assert_eq!(profile_dir_name("custom"), "custom");
    }
}
