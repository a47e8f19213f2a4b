//! What `oxshmem-info` prints: the version, how this build was made, what it finds on this
//! machine (transports, RDMA devices, launchers, compilers) and every configuration variable
//! of the runtime's table ([`oxshmem::config::vars`], the device layer's registered into it)
//! with its value and where the value came from — the table the runtime itself reads, so the
//! two cannot disagree. Like `ompi_info`, it has a human form and
//! a `--parsable` one (`section:key:value`, one a line); and `--json`, the same facts as one
//! JSON document ([`json`]).
//!
//! The `nvshmem` section is the NVSHMEM view: the NVSHMEM version whose host API the library
//! follows, where `nvshmem.h` and `libnvshmem_host.so` are, and every NVSHMEM variable oxshmem
//! reads with what it maps to given the environment ([`oxshmem::config::nvshmem_settings`]).

use std::path::{Path, PathBuf};

use oxshmem::config::{self, Source};

use crate::layout::{Kind, Layout, SHARED_LIB, STATIC_LIB};
use crate::wrapper::Lang;

/// One fact: section, key, value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// The section (`package`, `build`, `path`, `transport`, `launcher`, `compiler`, `config`).
    pub section: &'static str,
    /// The key within the section.
    pub key: String,
    /// The value.
    pub value: String,
}

fn fact(section: &'static str, key: impl Into<String>, value: impl Into<String>) -> Fact {
    Fact { section, key: key.into(), value: value.into() }
}

/// Whether the process has a shared object whose file name contains `needle` loaded.
fn loaded_object(needle: &str) -> Option<String> {
    /// `dl_iterate_phdr`'s callback.
    ///
    /// # Safety
    /// `info` must point to a valid record and `data` to the `(needle, found)` pair this
    /// function's caller passed, as `dl_iterate_phdr` does.
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info record and our `data`, a `&mut
        // (String, Option<String>)` that outlives the iteration.
        let (needle, found) = unsafe { &mut *data.cast::<(String, Option<String>)>() };
        // SAFETY: as above; dlpi_name is a NUL-terminated string or null.
        let name = unsafe { (*info).dlpi_name };
        if !name.is_null() {
            // SAFETY: non-null dlpi_name points to a NUL-terminated string owned by the loader.
            let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
            if name.rsplit('/').next().is_some_and(|f| f.contains(needle.as_str())) {
                *found = Some(name.into_owned());
                return 1;
            }
        }
        0
    }
    let mut data: (String, Option<String>) = (needle.to_string(), None);
    // SAFETY: `visit` matches the callback type and only reads the records it is given;
    // `data` lives across the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut data).cast()) };
    data.1
}

/// Whether this build has the PMIx bootstrap: this crate's `pmix` feature, or libpmix linked
/// in (the bootstrap crate's `pmix` feature, turned on by another package of the build).
pub fn pmix() -> Option<String> {
    // Keep the bootstrap's back-end selection (and through it libpmix, when built in) linked.
    std::hint::black_box(oxshmem_bootstrap::connect as fn(_) -> _);
    match loaded_object("libpmix") {
        Some(path) => Some(format!("yes ({path})")),
        None if cfg!(feature = "pmix") => Some("yes".into()),
        None => None,
    }
}

/// Whether this build has the libfabric transport (the runtime's `ofi` feature): libfabric is
/// linked in.
pub fn ofi() -> Option<String> {
    // Keep the runtime's init, and through it every transport built in, linked.
    std::hint::black_box(oxshmem::init as fn() -> _);
    loaded_object("libfabric")
}

/// The first `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| is_executable(p))
}

/// Whether the launcher at `p` (a link is followed) is OpenMPI's: Debian's `/usr/bin/oshrun`
/// is a link to `mpirun.openmpi`, itself `orterun` (OpenMPI 4) or `prterun` (OpenMPI 5).
pub fn is_openmpi_launcher(p: &Path) -> bool {
    let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    [p, real.as_path()].iter().any(|q| {
        let name = q.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.starts_with("orterun")
            || name.starts_with("prterun")
            || name.contains("openmpi")
            || q.components().any(|c| c.as_os_str().to_string_lossy().contains("openmpi"))
    })
}

/// What `oxshmem-info` warns about `oshrun` when the one a shell would run (`on_path`, the
/// first on `PATH`) is not oxshmem's: another launcher ahead of the `oshrun` beside
/// `oxshmem-info` (`beside`), or, with none beside, OpenMPI's. `None` when nothing is amiss.
///
/// ```
/// use std::path::Path;
/// use oxshmem_tools::info::oshrun_warning;
/// let ours = Path::new("/opt/oxshmem/bin/oshrun");
/// assert_eq!(oshrun_warning(Some(ours), Some(ours)), None);
/// let w = oshrun_warning(Some(ours), Some(Path::new("/usr/lib/openmpi/bin/oshrun"))).unwrap();
/// assert!(w.contains("OpenMPI's launcher, which cannot start oxshmem programs"), "{w}");
/// assert!(w.contains("export PATH=/opt/oxshmem/bin:$PATH"), "{w}");
/// ```
pub fn oshrun_warning(beside: Option<&Path>, on_path: Option<&Path>) -> Option<String> {
    let p = on_path?;
    let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let shown = if real == p { p.display().to_string() } else { format!("{} -> {}", p.display(), real.display()) };
    let openmpi = is_openmpi_launcher(p);
    let whose = if openmpi {
        "OpenMPI's launcher, which cannot start oxshmem programs"
    } else {
        "another launcher than the one beside oxshmem-info"
    };
    match beside {
        Some(b) if b.canonicalize().ok() == Some(real.clone()) || b == p => None,
        Some(b) => {
            let dir = b.parent().unwrap_or(Path::new("."));
            Some(format!(
                "`oshrun` alone runs {shown}, {whose}; run oxshmem's by its path ({}) or put its \
                 folder first on PATH: export PATH={}:$PATH",
                b.display(),
                dir.display()
            ))
        }
        None if openmpi => Some(format!(
            "`oshrun` alone runs {shown}, {whose}; use oxshmem's: target/<profile>/oshrun in the \
             build tree, or <prefix>/bin/oshrun of an installation (put <prefix>/bin first on PATH)"
        )),
        None => None,
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// RDMA devices the kernel shows in `/sys/class/infiniband`.
pub fn rdma_devices() -> Result<Vec<String>, String> {
    let dir = Path::new("/sys/class/infiniband");
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut v: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            v.sort();
            Ok(v)
        }
        Err(e) => Err(format!("{} unreadable: {e}", dir.display())),
    }
}

/// The NICs IBGDA could drive (feature `verbs`): each RDMA device with its ports, GIDs and
/// DEVX capability, and how GPU memory can be registered.
#[cfg(feature = "verbs")]
pub fn nic_facts() -> Vec<Fact> {
    use oxshmem_device::nic::verbs;
    let mut f = vec![fact("nic", "verbs", "built in (libibverbs, mlx5dv)")];
    match verbs::devices() {
        Ok(list) if list.is_empty() => {
            f.push(fact("nic", "devices", "none (ibv_get_device_list found no RDMA device)"))
        }
        Ok(list) => {
            for d in list {
                let ports: Vec<String> = d
                    .ports
                    .iter()
                    .map(|p| {
                        let gids: Vec<String> = p.gids.iter().map(gid_text).collect();
                        format!(
                            "port {} {} {} lid {} mtu {} gids [{}]",
                            p.num,
                            if p.active { "active" } else { "down" },
                            p.link_layer.map_or("unknown link layer".to_string(), |l| l.to_string()),
                            p.lid,
                            p.mtu,
                            gids.join(", ")
                        )
                    })
                    .collect();
                let devx = match &d.devx {
                    Ok(()) => "DEVX: yes (IBGDA capable)".to_string(),
                    Err(e) => format!("DEVX: no ({e})"),
                };
                f.push(fact(
                    "nic",
                    d.name.clone(),
                    format!(
                        "fw {}; {}; atomics {}; max send queue {}; {devx}",
                        d.fw,
                        ports.join("; "),
                        if d.atomics { "yes" } else { "no" },
                        d.max_qp_wr
                    ),
                ));
            }
        }
        Err(e) => f.push(fact("nic", "devices", e.to_string())),
    }
    let g = verbs::gpu_registration();
    f.push(fact(
        "nic",
        "gpu memory registration",
        format!(
            "dma-buf (ibv_reg_dmabuf_mr): {}; nvidia_peermem: {}",
            if g.dmabuf { "yes" } else { "no" },
            if g.peermem { "loaded" } else { "not loaded" }
        ),
    ));
    f
}

/// A GID as IPv6 text.
#[cfg(feature = "verbs")]
fn gid_text(g: &[u8; 16]) -> String {
    std::net::Ipv6Addr::from(*g).to_string()
}

/// The NICs IBGDA could drive: not in a build without the feature `verbs`.
#[cfg(not(feature = "verbs"))]
pub fn nic_facts() -> Vec<Fact> {
    vec![fact("nic", "verbs", "not in this build (the tools' `verbs` feature lists RDMA devices through libibverbs)")]
}

/// The whole table: the device layer's variables join the runtime's.
fn register_layers() {
    config::register(&oxshmem_device::config::LAYER);
}

/// Every fact, in print order.
pub fn facts() -> Vec<Fact> {
    register_layers();
    let mut f = Vec::new();
    let (major, minor) = oxshmem::SPEC_VERSION;
    f.push(fact("package", "name", "oxshmem"));
    f.push(fact("package", "version", env!("CARGO_PKG_VERSION")));
    f.push(fact("package", "openshmem", format!("{major}.{minor}")));
    f.push(fact("package", "vendor string", oxshmem::VENDOR_STRING));

    f.push(fact("build", "profile", env!("OXSHMEM_BUILD_PROFILE")));
    f.push(fact("build", "opt-level", env!("OXSHMEM_BUILD_OPT_LEVEL")));
    f.push(fact("build", "debug info", env!("OXSHMEM_BUILD_DEBUG")));
    f.push(fact("build", "debug assertions", if cfg!(debug_assertions) { "yes" } else { "no" }));
    f.push(fact("build", "target", env!("OXSHMEM_BUILD_TARGET")));
    f.push(fact("build", "rustc", env!("OXSHMEM_BUILD_RUSTC")));
    f.push(fact("build", "feature pmix", pmix().unwrap_or_else(|| "no".into())));

    match Layout::locate() {
        Ok(l) => {
            let (kind, prefix) = match &l.kind {
                Kind::Installed { prefix } => ("installed", prefix.clone()),
                Kind::BuildTree { source_root } => ("build tree", source_root.clone()),
            };
            f.push(fact("path", "layout", kind));
            f.push(fact("path", "prefix", prefix.display().to_string()));
            f.push(fact("path", "bindir", l.bin_dir.display().to_string()));
            f.push(fact("path", "includedir", l.include_dir.display().to_string()));
            let libs: Vec<&str> = [SHARED_LIB, STATIC_LIB].into_iter().filter(|n| l.lib_dir.join(n).exists()).collect();
            let libs = if libs.is_empty() { "no library built yet".to_string() } else { libs.join(", ") };
            f.push(fact("path", "libdir", format!("{} ({libs})", l.lib_dir.display())));
            f.push(fact("path", "fortran module source", l.fortran_source.display().to_string()));
        }
        Err(e) => f.push(fact("path", "layout", e)),
    }

    f.push(fact("transport", "shm", "available (PEs of one host map each other's memfd-backed segments)"));
    let ofi = match ofi() {
        Some(path) => format!("built in (libfabric: {path})"),
        None => "not in this build (the runtime's `ofi` feature links libfabric)".to_string(),
    };
    f.push(fact("transport", "ofi", ofi));
    let rdma = match rdma_devices() {
        Ok(v) if v.is_empty() => "none found (/sys/class/infiniband is empty)".to_string(),
        Ok(v) => v.join(", "),
        Err(_) => "none found (no /sys/class/infiniband: the kernel shows no RDMA device)".to_string(),
    };
    f.push(fact("transport", "rdma devices", rdma));
    f.extend(nic_facts());

    let here = std::env::current_exe()
        .ok()
        .and_then(|e| e.canonicalize().ok())
        .and_then(|e| e.parent().map(Path::to_path_buf));
    for l in ["oshrun", "mpiexec.hydra", "srun"] {
        let on_path = which(l);
        let beside = here.as_ref().map(|d| d.join(l)).filter(|p| is_executable(p));
        let v = match (beside, on_path) {
            (Some(b), Some(p)) if p.canonicalize().ok() == b.canonicalize().ok() => p.display().to_string(),
            (Some(b), Some(p)) => {
                let real = p.canonicalize().unwrap_or_else(|_| p.clone());
                format!(
                    "{} (beside oxshmem-info; first on PATH is another: {} -> {})",
                    b.display(),
                    p.display(),
                    real.display()
                )
            }
            (Some(b), None) => format!("{} (beside oxshmem-info; not on PATH)", b.display()),
            (None, Some(p)) => p.display().to_string(),
            (None, None) => "not found on PATH".to_string(),
        };
        f.push(fact("launcher", l, v));
    }
    let beside = here.as_ref().map(|d| d.join("oshrun")).filter(|p| is_executable(p));
    if let Some(w) = oshrun_warning(beside.as_deref(), which("oshrun").as_deref()) {
        f.push(fact("launcher", "warning", w));
    }

    for lang in [Lang::C, Lang::Cxx, Lang::Fortran] {
        let words: Vec<String> = lang.compiler().iter().map(|w| w.to_string_lossy().into_owned()).collect();
        let cmd = words.join(" ");
        let found = match which(&words[0]) {
            _ if words[0].contains('/') => String::new(),
            Some(p) => format!(" = {}", p.display()),
            None => " (not found on PATH)".to_string(),
        };
        let source = match std::env::var(lang.compiler_var()) {
            Ok(v) if !v.trim().is_empty() => format!("environment ({})", lang.compiler_var()),
            _ => "default".to_string(),
        };
        f.push(fact("compiler", lang.tool(), format!("{cmd}{found} [{source}]")));
    }

    f.extend(nvshmem_facts());

    for v in config::shown_vars() {
        let (value, src) = config::lookup(v);
        let src = match src {
            Source::Default => "default".to_string(),
            Source::Env(n) => format!("environment ({n})"),
        };
        f.push(fact("config", format!("{}:value", v.name), value));
        f.push(fact("config", format!("{}:source", v.name), src));
        f.push(fact("config", format!("{}:default", v.name), v.default));
        f.push(fact("config", format!("{}:aliases", v.name), v.aliases.join(",")));
        f.push(fact("config", format!("{}:help", v.name), v.help));
    }
    f
}

/// The NVSHMEM version `nvshmem.h` in `include_dir` declares
/// (`NVSHMEM_VENDOR_{MAJOR,MINOR,PATCH}_VERSION`), if it is there.
pub fn header_nvshmem_version(include_dir: &Path) -> Option<(u32, u32, u32)> {
    let text = std::fs::read_to_string(include_dir.join("nvshmem.h")).ok()?;
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("#define") && words.next() == Some(name)).then(|| words.next()?.parse().ok())?
        })
    };
    Some((
        field("NVSHMEM_VENDOR_MAJOR_VERSION")?,
        field("NVSHMEM_VENDOR_MINOR_VERSION")?,
        field("NVSHMEM_VENDOR_PATCH_VERSION")?,
    ))
}

/// The NVSHMEM view (section `nvshmem`): the API version, `nvshmem.h`, `libnvshmem_host.so`,
/// each NVSHMEM variable read (`"value" -> effect`, or `unset -> effect`), and those known to
/// have no effect.
pub fn nvshmem_facts() -> Vec<Fact> {
    register_layers();
    let mut f = Vec::new();
    let layout = Layout::locate().ok();
    let (major, minor, patch) = config::NVSHMEM_API_VERSION;
    let api = match layout.as_ref().and_then(|l| header_nvshmem_version(&l.include_dir)) {
        Some(v) if v != config::NVSHMEM_API_VERSION => format!(
            "{major}.{minor}.{patch} (but the nvshmem.h found declares {}.{}.{}: a header of another version)",
            v.0, v.1, v.2
        ),
        _ => format!("{major}.{minor}.{patch} (the host API of NVSHMEM {major}.{minor}: nvshmem.h, nvshmemx.h)"),
    };
    f.push(fact("nvshmem", "api", api));
    match &layout {
        Some(l) => {
            let header = l.include_dir.join("nvshmem.h");
            let h =
                if header.is_file() { header.display().to_string() } else { format!("{} (missing)", header.display()) };
            f.push(fact("nvshmem", "header", h));
            let lib = l.lib_dir.join(crate::nvlib::LINK_NAME);
            let so = l.lib_dir.join(crate::nvlib::SONAME);
            let v = if so.exists() {
                format!(
                    "{} -> {} (the same code as {}; link with -lnvshmem_host)",
                    lib.display(),
                    crate::nvlib::SONAME,
                    crate::layout::SHARED_LIB
                )
            } else if l.is_build_tree() {
                format!(
                    "not in this build tree ({}): oxshmem-install makes it, linking liboxshmem.a into {} \
                     (`bindings/tools/install.sh --prefix DIR` puts it in DIR/lib)",
                    l.lib_dir.display(),
                    crate::nvlib::SONAME
                )
            } else {
                format!("{} missing: the installation is incomplete, run the installer again", so.display())
            };
            f.push(fact("nvshmem", "library", v));
        }
        None => f.push(fact("nvshmem", "library", "no installation or build tree found")),
    }
    for s in config::nvshmem_settings() {
        let value = s.value.map_or_else(|| "unset".to_string(), |v| format!("{v:?}"));
        f.push(fact("nvshmem", s.name, format!("{value} -> {}", s.effect)));
    }
    let ignored: Vec<&str> = config::NVSHMEM_NO_EFFECT.iter().flat_map(|(_, n)| n.iter().copied()).collect();
    let set: Vec<&str> = ignored.iter().copied().filter(|n| std::env::var_os(n).is_some()).collect();
    let set = if set.is_empty() { "none set".to_string() } else { format!("set now: {}", set.join(", ")) };
    f.push(fact(
        "nvshmem",
        "without effect",
        format!("{} more NVSHMEM variables are known and ignored (docs/nvshmem.md); {set}", ignored.len()),
    ));
    f
}

/// `section:key:value` lines.
pub fn parsable(facts: &[Fact]) -> String {
    facts.iter().map(|f| format!("{}:{}:{}\n", f.section, f.key, f.value)).collect()
}

/// The facts as one JSON document (pretty-printed, with a final newline): an object with a
/// member per section in print order, each an object of `"key": "value"` — but `config`, an
/// object with a member per variable, `{"value", "source", "default", "aliases", "help"}`
/// (`aliases` an array). So `section:key:value` of [`parsable`] is `doc[section][key]`, and
/// `config:NAME:what:value` is `doc.config[NAME][what]`, with the same text (`source` is
/// `default` or `environment (NAME)`).
pub fn json(facts: &[Fact]) -> String {
    /// Pairs in order, serialized as a JSON object.
    struct Ordered<V>(Vec<(String, V)>);
    impl<V: serde::Serialize> serde::Serialize for Ordered<V> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
        }
    }
    /// One configuration variable.
    #[derive(Default, serde::Serialize)]
    struct Setting<'a> {
        value: &'a str,
        source: &'a str,
        default: &'a str,
        aliases: Vec<&'a str>,
        help: &'a str,
    }
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Section<'a> {
        Plain(Ordered<&'a str>),
        Config(Ordered<Setting<'a>>),
    }

    let mut doc: Ordered<Section<'_>> = Ordered(Vec::new());
    for f in facts {
        let i = match doc.0.iter().position(|(s, _)| s == f.section) {
            Some(i) => i,
            None => {
                let section = match f.section {
                    "config" => Section::Config(Ordered(Vec::new())),
                    _ => Section::Plain(Ordered(Vec::new())),
                };
                doc.0.push((f.section.to_string(), section));
                doc.0.len() - 1
            }
        };
        match &mut doc.0[i].1 {
            Section::Plain(kv) => kv.0.push((f.key.clone(), f.value.as_str())),
            Section::Config(vars) => {
                // `NAME:what` (a variable's name has no ':').
                let (name, what) = f.key.split_once(':').unwrap_or((f.key.as_str(), "value"));
                let j = match vars.0.iter().position(|(n, _)| n == name) {
                    Some(j) => j,
                    None => {
                        vars.0.push((name.to_string(), Setting::default()));
                        vars.0.len() - 1
                    }
                };
                let v = &mut vars.0[j].1;
                match what {
                    "value" => v.value = &f.value,
                    "source" => v.source = &f.value,
                    "default" => v.default = &f.value,
                    "aliases" => v.aliases = f.value.split(',').filter(|a| !a.is_empty()).collect(),
                    "help" => v.help = &f.value,
                    _ => {}
                }
            }
        }
    }
    let mut s = serde_json::to_string_pretty(&doc).expect("strings and arrays of strings serialize");
    s.push('\n');
    s
}

/// The human form: aligned `key: value` lines under section titles, and the configuration
/// variables with their source, other spellings and help.
pub fn pretty(facts: &[Fact]) -> String {
    register_layers();
    use std::fmt::Write;
    let mut s = String::new();
    let mut section = "";
    for f in facts.iter().filter(|f| f.section != "config") {
        if f.section != section {
            section = f.section;
            let title = match section {
                "package" => "Package",
                "build" => "Build",
                "path" => "Installation",
                "transport" => "Transports",
                "launcher" => "Launchers",
                "compiler" => "Compiler wrappers",
                "nvshmem" => "NVSHMEM (the same library under NVSHMEM's names)",
                other => other,
            };
            let _ = writeln!(s, "{title}:");
        }
        // Keys right-aligned to 22 columns, or to the section's longest (the NVSHMEM names).
        let width = facts.iter().filter(|g| g.section == f.section).map(|g| g.key.len()).max().unwrap_or(0).max(22);
        let _ = writeln!(s, "  {:>width$}: {}", f.key, f.value);
    }
    let _ = writeln!(s, "Configuration (environment variables, as a PE started here would read them):");
    let get = |name: &str, what: &str| {
        let key = format!("{name}:{what}");
        facts.iter().find(|f| f.section == "config" && f.key == key).map_or("", |f| f.value.as_str())
    };
    for v in config::shown_vars() {
        let shown = |t: &str| if t.is_empty() { "\"\"".to_string() } else { t.to_string() };
        let _ = writeln!(s, "  {} = {} [{}]", v.name, shown(get(v.name, "value")), get(v.name, "source"));
        if !v.aliases.is_empty() {
            let _ = writeln!(s, "      also read as {}", v.aliases.join(", "));
        }
        let _ = writeln!(s, "      default {}: {}", shown(v.default), v.help);
    }
    s
}
