//! `oshnvcc`: builds an NVSHMEM program (CUDA C++ that calls NVSHMEM from its kernels) for one of
//! three targets with one line, as `oshcc` does for C:
//!
//! ```text
//! oshnvcc [--target cpu|cuda|hip] prog.cu [more sources, objects, flags] -o prog
//! ```
//!
//! - `cpu` (the default where no `nvcc` is found, or `OSHNVCC_TARGET=cpu`): the device library
//!   compiled for the CPU target, whose kernels run on host threads
//!   (`bindings/cuda/src/arch/cuda-on-cpu/cuda_runtime.h`). Each `.cu` source is preprocessed
//!   (`c++ -E`), rewritten ([`crate::cudarewrite`]: `<<<>>>` launches, `__shared__`, kernel
//!   registration) and compiled with `c++`; the program links the CPU target's
//!   `libnvshmem_device.a` before the host library. In the build tree the archive is built on
//!   first use (and again when the device library's sources change) into
//!   `target/<profile>/cuda-cpu/` by `bindings/cuda/build-cpu.sh`.
//! - `cuda`: `nvcc -rdc=true` with the include directory, then `libnvshmem_device.a` (nvcc's,
//!   `$OXSHMEM_DEVICE_LIB`, default `<lib>/libnvshmem_device.a`) and the host library.
//! - `hip`: `hipcc -x hip --offload-arch=gfx90a -fgpu-rdc` with `cuda-on-hip` on the include
//!   path, then the HIP archive (`$OXSHMEM_DEVICE_LIB`).
//!
//! With `-shared -fPIC` the CPU target makes a module: a shared object that the emulated CUDA
//! driver loads in the place of a cubin (`cuModuleLoadData` of `OXEMUCUDA-HOST-SO\n<path>`,
//! `tests/emucuda/README.md`), whose kernels the driver launches through the object's own CPU
//! runtime; it does not link the host library (the program that loads it has one).
//!
//! `OXSHMEM_CPU_TARGET` names another build of the CPU target's archive (build-cpu.sh's output).
//!
//! `-show` prints the commands instead of running them. nvcc's own options that mean nothing on
//! the CPU (`-arch`, `-gencode`, `-rdc=true`, `-lineinfo`, `--expt-*`, `-lcudart`, `-lnvshmem*`)
//! are dropped there; `-lcuda` links the emulated driver (the CPU target's driver API);
//! `-Xcompiler A` becomes `A`, `-Xlinker A` `-Wl,A`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::layout::{Kind, Layout};

/// The target of a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Host threads (the CPU target).
    Cpu,
    /// NVIDIA GPUs through nvcc.
    Cuda,
    /// AMD GPUs through hipcc.
    Hip,
}

impl Target {
    fn parse(s: &str) -> Result<Target, String> {
        match s {
            "cpu" => Ok(Target::Cpu),
            "cuda" => Ok(Target::Cuda),
            "hip" => Ok(Target::Hip),
            o => Err(format!("oshnvcc: --target {o:?}: expected cpu, cuda or hip")),
        }
    }
}

/// What the command line asked for.
#[derive(Debug, Default)]
struct Args {
    target: Option<Target>,
    show: bool,
    compile_only: bool,
    output: Option<String>,
    sources: Vec<String>,
    /// Everything else, in order, already translated for the target.
    rest: Vec<String>,
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut i = 0;
    while i < argv.len() {
        let x = argv[i].as_str();
        let next = |i: &mut usize| -> Result<String, String> {
            *i += 1;
            argv.get(*i).cloned().ok_or_else(|| format!("oshnvcc: {x} needs a value"))
        };
        match x {
            "--target" => a.target = Some(Target::parse(&next(&mut i)?)?),
            t if t.starts_with("--target=") => a.target = Some(Target::parse(&t["--target=".len()..])?),
            "-show" | "--showme" | "-showme" => a.show = true,
            "-c" => a.compile_only = true,
            "-o" => a.output = Some(next(&mut i)?),
            s if s.ends_with(".cu") || s.ends_with(".cpp") || s.ends_with(".cc") || s.ends_with(".cxx") => {
                a.sources.push(s.to_string())
            }
            _ => a.rest.push(x.to_string()),
        }
        i += 1;
    }
    Ok(a)
}

/// The flags of `rest` that the CPU target keeps, translated.
fn cpu_flags(rest: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let x = rest[i].as_str();
        let dropped_with_value =
            ["-arch", "-gencode", "-rdc", "-ccbin", "--gpu-architecture", "--generate-code", "-maxrregcount"];
        if dropped_with_value.contains(&x) {
            i += 2;
            continue;
        }
        if x == "-Xcompiler" || x == "-Xlinker" {
            if let Some(v) = rest.get(i + 1) {
                for part in v.split(',') {
                    out.push(if x == "-Xlinker" { format!("-Wl,{part}") } else { part.to_string() });
                }
            }
            i += 2;
            continue;
        }
        let drop = x.starts_with("-arch=")
            || x.starts_with("-gencode=")
            || x.starts_with("--gpu-architecture=")
            || x.starts_with("-rdc=")
            || x.starts_with("--relocatable-device-code")
            || x.starts_with("--expt-")
            || x.starts_with("-maxrregcount")
            || matches!(
                x,
                "-lineinfo"
                    | "-G"
                    | "--extended-lambda"
                    | "-lcudart"
                    | "-lnvshmem"
                    | "-lnvshmem_host"
                    | "-lnvshmem_device"
                    | "-dc"
                    | "-dlink"
                    | "--use_fast_math"
            );
        if !drop {
            out.push(x.to_string());
        }
        i += 1;
    }
    out
}

/// The CPU target's pieces: include directories and the archive.
struct CpuTarget {
    includes: Vec<PathBuf>,
    archive: PathBuf,
}

/// The newest modification time under `dir` (recursively).
fn newest(dir: &Path) -> std::time::SystemTime {
    let mut t = std::time::SystemTime::UNIX_EPOCH;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let m = if p.is_dir() { newest(&p) } else { e.metadata().and_then(|m| m.modified()).unwrap_or(t) };
            t = t.max(m);
        }
    }
    t
}

fn cpu_target(layout: &Layout, show: bool) -> Result<CpuTarget, String> {
    // Another build of the CPU target's archive (the tests build broken ones on purpose).
    if let Some(a) = std::env::var_os("OXSHMEM_CPU_TARGET").filter(|a| !a.is_empty())
        && let Kind::BuildTree { source_root } = &layout.kind
    {
        return Ok(CpuTarget {
            includes: vec![
                source_root.join("bindings/cuda/src/arch/cuda-on-cpu"),
                layout.include_dir.clone(),
                source_root.join("device/include"),
            ],
            archive: PathBuf::from(a),
        });
    }
    match &layout.kind {
        Kind::BuildTree { source_root } => {
            let out = layout.lib_dir.join("cuda-cpu");
            let archive = out.join("libnvshmem_device.a");
            let built = archive.metadata().and_then(|m| m.modified()).ok();
            let sources = [source_root.join("bindings/cuda/src"), source_root.join("device/include")];
            let stale = built.is_none_or(|b| sources.iter().any(|d| newest(d) > b));
            if stale && !show {
                eprintln!("oshnvcc: building the CPU target's device library into {}", out.display());
                let st = Command::new("bash")
                    .arg(source_root.join("bindings/cuda/build-cpu.sh"))
                    .arg(&out)
                    .stdout(std::process::Stdio::null())
                    .status()
                    .map_err(|e| format!("oshnvcc: running bindings/cuda/build-cpu.sh: {e}"))?;
                if !st.success() {
                    return Err("oshnvcc: bindings/cuda/build-cpu.sh failed".into());
                }
            }
            Ok(CpuTarget {
                includes: vec![
                    source_root.join("bindings/cuda/src/arch/cuda-on-cpu"),
                    layout.include_dir.clone(),
                    source_root.join("device/include"),
                ],
                archive,
            })
        }
        Kind::Installed { prefix } => {
            let archive = prefix.join("lib/oxshmem/cpu/libnvshmem_device.a");
            if !archive.exists() {
                return Err(format!(
                    "oshnvcc: {} is missing: this installation has no CPU target (install from a source tree)",
                    archive.display()
                ));
            }
            Ok(CpuTarget {
                includes: vec![prefix.join("include/oxshmem/cuda-on-cpu"), layout.include_dir.clone()],
                archive,
            })
        }
    }
}

fn run(cmd: &mut Command, show: bool) -> Result<(), String> {
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
    );
    if show {
        println!("{shown}");
        return Ok(());
    }
    let st = cmd.status().map_err(|e| format!("oshnvcc: {shown}: {e}"))?;
    if st.success() { Ok(()) } else { Err(String::new()) }
}

fn cxx() -> Vec<OsString> {
    let w: Vec<OsString> = std::env::var("OSHNVCC_CXX")
        .or_else(|_| std::env::var("CXX"))
        .map(|v| v.split_whitespace().map(OsString::from).collect())
        .unwrap_or_default();
    if w.is_empty() { vec!["c++".into()] } else { w }
}

fn command(words: &[OsString]) -> Command {
    let mut c = Command::new(&words[0]);
    c.args(&words[1..]);
    c
}

fn build_cpu(layout: &Layout, a: &Args) -> Result<(), String> {
    let t = cpu_target(layout, a.show)?;
    let flags = cpu_flags(&a.rest);
    let shared = flags.iter().any(|f| f == "-shared");
    let (compile_flags, link_flags): (Vec<String>, Vec<String>) = flags.iter().cloned().partition(|f| {
        !(f.starts_with("-l")
            || f.starts_with("-L")
            || f.starts_with("-Wl,")
            || matches!(f.as_str(), "-shared" | "-rdynamic"))
    });
    let objects: Vec<String> =
        compile_flags.iter().filter(|f| f.ends_with(".o") || f.ends_with(".a")).cloned().collect();
    let compile_flags: Vec<String> =
        compile_flags.into_iter().filter(|f| !(f.ends_with(".o") || f.ends_with(".a"))).collect();
    let std_given = compile_flags.iter().any(|f| f.starts_with("-std="));
    let tmp = std::env::temp_dir().join(format!("oshnvcc-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("oshnvcc: {}: {e}", tmp.display()))?;
    let mut objs = Vec::new();
    let result = (|| {
        for (n, src) in a.sources.iter().enumerate() {
            let obj = if a.compile_only {
                match (&a.output, a.sources.len()) {
                    (Some(o), 1) => PathBuf::from(o),
                    _ => PathBuf::from(Path::new(src).file_stem().unwrap_or_default()).with_extension("o"),
                }
            } else {
                tmp.join(format!("{n}.o"))
            };
            let pre = tmp.join(format!("{n}.ii"));
            let mut base = command(&cxx());
            base.args(["-x", "c++"]);
            if !std_given {
                base.arg("-std=c++17");
            }
            base.arg("-DOXSHMEMI_TARGET_CPU");
            for i in &t.includes {
                base.arg("-I").arg(i);
            }
            base.args(&compile_flags);
            let mut e = base;
            e.args(["-E", "-DOXSHMEMI_CPU_KEEP_QUALIFIERS"]).arg(src).arg("-o").arg(&pre);
            run(&mut e, a.show)?;
            if !a.show {
                let text = std::fs::read_to_string(&pre).map_err(|e| format!("oshnvcc: {}: {e}", pre.display()))?;
                let (out, _) = crate::cudarewrite::rewrite(&text);
                std::fs::write(&pre, out).map_err(|e| format!("oshnvcc: {}: {e}", pre.display()))?;
            }
            let mut c = command(&cxx());
            c.args(["-x", "c++-cpp-output"]);
            if !std_given {
                c.arg("-std=c++17");
            }
            c.args(&compile_flags).arg("-c").arg(&pre).arg("-o").arg(&obj);
            run(&mut c, a.show)?;
            objs.push(obj);
        }
        if a.compile_only {
            return Ok(());
        }
        let mut l = command(&cxx());
        l.args(&objs).args(&objects);
        l.args(compile_flags.iter().filter(|f| f.starts_with("-fsanitize") || *f == "-pthread"));
        if let Some(o) = &a.output {
            l.arg("-o").arg(o);
        }
        l.arg(&t.archive);
        l.arg(format!("-L{}", layout.lib_dir.display()));
        l.arg(format!("-Wl,-rpath,{}", layout.lib_dir.display()));
        // `-lcuda`: the driver API of the CPU target is the emulated driver beside the archive.
        let driver = t.archive.parent().map(|d| d.join("emucuda")).unwrap_or_default();
        for f in &link_flags {
            if f == "-lcuda" {
                l.arg(driver.join("libcuda.so")).arg(format!("-Wl,-rpath,{}", driver.display()));
            } else {
                l.arg(f);
            }
        }
        // A shared object (a module the emulated driver loads into a program) takes the host
        // library of the program that loads it.
        if !shared {
            l.arg("-loxshmem");
        }
        l.args(["-lpthread", "-ldl"]);
        run(&mut l, a.show)
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

fn build_gpu(layout: &Layout, a: &Args, target: Target) -> Result<(), String> {
    let lib = &layout.lib_dir;
    let archive =
        std::env::var_os("OXSHMEM_DEVICE_LIB").map(PathBuf::from).unwrap_or_else(|| lib.join("libnvshmem_device.a"));
    let mut c = match target {
        Target::Cuda => {
            let mut c = Command::new(std::env::var("OXSHMEM_NVCC").unwrap_or_else(|_| "nvcc".into()));
            c.arg("-rdc=true");
            c
        }
        _ => {
            let mut c = Command::new(std::env::var("OXSHMEM_HIPCC").unwrap_or_else(|_| "hipcc".into()));
            c.args(["-x", "hip", "--offload-arch=gfx90a", "-fgpu-rdc"]);
            if let Kind::BuildTree { source_root } = &layout.kind {
                c.arg("-I").arg(source_root.join("bindings/cuda/src/arch/cuda-on-hip"));
            }
            c
        }
    };
    c.arg("-I").arg(&layout.include_dir);
    if let Kind::BuildTree { source_root } = &layout.kind {
        c.arg("-I").arg(source_root.join("device/include"));
    }
    if a.compile_only {
        c.arg("-c");
    }
    c.args(&a.sources).args(&a.rest);
    if let Some(o) = &a.output {
        c.arg("-o").arg(o);
    }
    if !a.compile_only {
        c.arg(&archive).arg(format!("-L{}", lib.display()));
        if target == Target::Cuda {
            c.arg("-Xlinker").arg(format!("-rpath,{}", lib.display()));
        } else {
            c.arg(format!("-Wl,-rpath,{}", lib.display()));
        }
        c.arg("-loxshmem");
    }
    run(&mut c, a.show)
}

/// The default target: `OSHNVCC_TARGET`, else `cuda` where an nvcc is on PATH, else `cpu`.
fn default_target() -> Result<Target, String> {
    if let Ok(t) = std::env::var("OSHNVCC_TARGET")
        && !t.is_empty()
    {
        return Target::parse(&t);
    }
    let nvcc = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("nvcc").is_file()));
    Ok(if nvcc { Target::Cuda } else { Target::Cpu })
}

/// The tool's entry point.
pub fn main(argv: Vec<String>) -> ExitCode {
    let go = || -> Result<(), String> {
        let a = parse(&argv)?;
        if a.sources.is_empty() && a.rest.iter().all(|r| !r.ends_with(".o")) {
            return Err(
                "usage: oshnvcc [--target cpu|cuda|hip] [-show] prog.cu [sources, objects, flags] [-o prog]".into()
            );
        }
        let layout = Layout::locate()?;
        match a.target.map_or_else(default_target, Ok)? {
            Target::Cpu => build_cpu(&layout, &a),
            t => build_gpu(&layout, &a, t),
        }
    };
    match go() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("{e}");
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvcc_options_are_translated_for_the_cpu() {
        let rest: Vec<String> = [
            "-arch=sm_90",
            "-rdc=true",
            "-O2",
            "-Xcompiler",
            "-Wall,-g",
            "-Xlinker",
            "-z,now",
            "-lcudart",
            "-lcuda",
            "-lm",
            "-gencode",
            "arch=compute_90,code=sm_90",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(cpu_flags(&rest), vec!["-O2", "-Wall", "-g", "-Wl,-z", "-Wl,now", "-lcuda", "-lm"]);
    }

    #[test]
    fn the_command_line_is_understood() {
        let a =
            parse(&["--target".into(), "cpu".into(), "a.cu".into(), "-c".into(), "-o".into(), "a.o".into()]).unwrap();
        assert_eq!(
            (a.target, a.compile_only, a.output.as_deref(), a.sources.len()),
            (Some(Target::Cpu), true, Some("a.o"), 1)
        );
        assert!(parse(&["--target=rocm".into()]).is_err());
    }
}
