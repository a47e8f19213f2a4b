//! NVSHMEM compatibility: `NVSHMEM_DEBUG`'s levels, the bootstrap `NVSHMEM_BOOTSTRAP` asks for,
//! the NVSHMEM variables without effect here, NVSHMEM's `NVSHMEM_INFO` listing and the NVSHMEM
//! view of `oxshmem-info`.

use std::fmt::Write as _;

use super::parse::{Bad, parse_bool, parse_size, refused_text};
use super::table::{
    Env, Group, Section, Source, VarType, layers, lookup, lookup_in, process_env, set_in, shown_vars, var,
};

/// The NVSHMEM version whose host API the C library follows (`nvshmem.h`'s
/// `NVSHMEM_VENDOR_{MAJOR,MINOR,PATCH}_VERSION`; `oxshmem-info`'s tests hold the two together).
pub const NVSHMEM_API_VERSION: (u32, u32, u32) = (3, 4, 5);

/// NVSHMEM's debug levels (`NVSHMEM_DEBUG`), in NVSHMEM's order: each includes the ones
/// before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NvDebug {
    /// Unset, empty, `NONE` or `0`.
    None,
    /// `VERSION`: PE 0 prints the version.
    Version,
    /// `WARN`: and names the NVSHMEM variables set that have no effect here.
    Warn,
    /// `INFO` (or `1`): and turns on `SHMEM_DEBUG`.
    Info,
    /// `ABORT`: as `INFO` (errors end the job at every level).
    Abort,
    /// `TRACE`: as `INFO`.
    Trace,
}

impl NvDebug {
    /// Parses a level, any case.
    ///
    /// ```
    /// use oxshmem::config::NvDebug;
    /// assert_eq!(NvDebug::parse("info"), Some(NvDebug::Info));
    /// assert_eq!(NvDebug::parse(""), Some(NvDebug::None));
    /// assert_eq!(NvDebug::parse("LOUD"), None);
    /// ```
    pub fn parse(text: &str) -> Option<NvDebug> {
        Some(match text.trim().to_ascii_uppercase().as_str() {
            "" | "NONE" | "0" => NvDebug::None,
            "VERSION" => NvDebug::Version,
            "WARN" => NvDebug::Warn,
            "INFO" | "1" => NvDebug::Info,
            "ABORT" => NvDebug::Abort,
            "TRACE" => NvDebug::Trace,
            _ => return None,
        })
    }

    /// NVSHMEM's name for the level.
    pub fn name(self) -> &'static str {
        match self {
            NvDebug::None => "NONE",
            NvDebug::Version => "VERSION",
            NvDebug::Warn => "WARN",
            NvDebug::Info => "INFO",
            NvDebug::Abort => "ABORT",
            NvDebug::Trace => "TRACE",
        }
    }
}

/// `NVSHMEM_DEBUG`'s level.
pub(super) fn nv_debug_in(env: Env) -> std::result::Result<NvDebug, Bad> {
    let Some((value, n)) = set_in(env, "NVSHMEM_DEBUG") else {
        return Ok(NvDebug::None);
    };
    NvDebug::parse(&value).ok_or_else(|| {
        (
            n,
            value,
            "expected one of NVSHMEM's levels NONE, VERSION, WARN, INFO, ABORT, TRACE (any case), or 0 or 1".into(),
        )
    })
}

/// What `NVSHMEM_BOOTSTRAP` (and `NVSHMEM_BOOTSTRAP_PMI`) ask init for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvBootstrap {
    /// This back end, as if `OXSHMEM_BOOTSTRAP` named it.
    Kind(oxshmem_bootstrap::Kind),
    /// `MPI_COMM_WORLD` of the MPI library the program loaded.
    MpiWorld,
}

/// The bootstrap the NVSHMEM variables ask for, and the variable that decided; `None` when
/// they leave the choice to oxshmem's own rules (`OXSHMEM_BOOTSTRAP` or `OXSHMEM_UNIQUEID` is
/// set, or they name the launcher's bootstrap without saying which protocol).
pub(super) fn nvshmem_bootstrap_in(env: Env) -> std::result::Result<Option<(NvBootstrap, &'static str)>, Bad> {
    use oxshmem_bootstrap::Kind;
    if env("OXSHMEM_BOOTSTRAP").is_some() || env("OXSHMEM_UNIQUEID").is_some() {
        return Ok(None);
    }
    let (boot, boot_var) = set_in(env, "NVSHMEM_BOOTSTRAP").unwrap_or_default();
    let boot_var = if boot_var.is_empty() { "NVSHMEM_BOOTSTRAP" } else { boot_var };
    match boot.trim().to_ascii_uppercase().as_str() {
        "" | "PMI" => {
            let Some((pmi, n)) = set_in(env, "NVSHMEM_BOOTSTRAP_PMI") else {
                return Ok(None);
            };
            let kind = match pmi.trim().to_ascii_uppercase().as_str() {
                "" => return Ok(None),
                "PMI" | "PMI1" | "PMI-1" => Kind::Pmi1,
                "PMI2" | "PMI-2" => Kind::Pmi2,
                "PMIX" => Kind::Pmix,
                _ => return Err((n, pmi, "expected PMI, PMI-2 or PMIX".into())),
            };
            Ok(Some((NvBootstrap::Kind(kind), n)))
        }
        "MPI" => Ok(Some((NvBootstrap::MpiWorld, boot_var))),
        // NVSHMEM's SHMEM bootstrap is shmem_init's, and oxshmem is the OpenSHMEM library.
        "SHMEM" => Ok(None),
        "UID" => Ok(Some((NvBootstrap::Kind(Kind::Uid), boot_var))),
        "PLUGIN" => Err((
            boot_var,
            boot,
            "oxshmem loads no bootstrap plugins; its bootstraps are built in: unset it (the launcher's bootstrap \
             is detected), or choose PMI, MPI, SHMEM or UID, or OXSHMEM_BOOTSTRAP"
                .into(),
        )),
        _ => Err((boot_var, boot, "expected PMI, MPI, SHMEM or UID (NVSHMEM's plugin is not supported)".into())),
    }
}

/// Connects the bootstrap the environment asks for: `OXSHMEM_BOOTSTRAP` and the launcher's
/// variables ([`oxshmem_bootstrap::from_env`]), or what `NVSHMEM_BOOTSTRAP` and
/// `NVSHMEM_BOOTSTRAP_PMI` ask for when `OXSHMEM_BOOTSTRAP` and `OXSHMEM_UNIQUEID` are unset
/// (`MPI`: `MPI_COMM_WORLD`, which needs `MPI_Init` first). The error names the variable.
pub fn bootstrap_from_env() -> std::result::Result<Box<dyn oxshmem_bootstrap::Bootstrap>, String> {
    match nvshmem_bootstrap_in(&process_env).map_err(refused_text)? {
        None => oxshmem_bootstrap::from_env().map_err(|e| e.to_string()),
        Some((NvBootstrap::Kind(kind), n)) => {
            oxshmem_bootstrap::connect(kind).map_err(|e| format!("{n} asks for {}: {e}", kind.name()))
        }
        Some((NvBootstrap::MpiWorld, n)) => {
            // SAFETY: a null communicator asks for MPI_COMM_WORLD, which `from_comm` allows.
            // NVSHMEM_BOOTSTRAP=MPI carries NVSHMEM's contract: the program initialized MPI and
            // calls none of it from another thread while init runs.
            let mpi = unsafe { oxshmem_bootstrap::mpi::Mpi::from_comm(std::ptr::null()) };
            match mpi {
                Ok(m) => Ok(Box::new(m)),
                Err(e) => Err(format!("{n}=MPI (MPI_COMM_WORLD of the program's MPI): {e}")),
            }
        }
    }
}

/// NVSHMEM 3.x's variables that have no meaning in oxshmem, each group with the reason: known
/// (setting them draws no "unknown variable" warning), ignored, and named by PE 0 at
/// `NVSHMEM_DEBUG=WARN` and above, by `NVSHMEM_INFO` and by `oxshmem-info`.
pub const NVSHMEM_NO_EFFECT: &[(&str, &[&str])] = &[
    (
        "CUDA and GPU memory: oxshmem's CUDA back end has no such setting",
        &[
            "NVSHMEM_CUDA_PATH",
            "NVSHMEM_CUMEM_GRANULARITY",
            "NVSHMEM_CUMEM_HANDLE_TYPE",
            "NVSHMEM_DISABLE_CUDA_VMM",
            "NVSHMEM_MAX_MEMORY_PER_GPU",
            "NVSHMEM_MAX_P2P_GPUS",
            "NVSHMEM_HEAP_KIND",
            "NVSHMEM_CUDA_LIMIT_STACK_SIZE",
            "NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            "NVSHMEM_BYPASS_ACCESSIBILITY_CHECK",
            "NVSHMEM_DISABLE_MNNVL",
            "NVSHMEM_DISABLE_NVLS",
            "NVSHMEM_DISABLE_NVLS_SHARING",
            "NVSHMEM_ENABLE_RAIL_OPT",
            "NVSHMEM_BOOTSTRAP_TWO_STAGE",
        ],
    ),
    (
        "bootstrap plugins: oxshmem's bootstraps are built in (see NVSHMEM_BOOTSTRAP)",
        &[
            "NVSHMEM_BOOTSTRAP_PLUGIN",
            "NVSHMEM_BOOTSTRAP_MPI_PLUGIN",
            "NVSHMEM_BOOTSTRAP_SHMEM_PLUGIN",
            "NVSHMEM_BOOTSTRAP_PMI_PLUGIN",
            "NVSHMEM_BOOTSTRAP_PMI2_PLUGIN",
            "NVSHMEM_BOOTSTRAP_PMIX_PLUGIN",
            "NVSHMEM_BOOTSTRAP_UID_PLUGIN",
        ],
    ),
    (
        "the unique-id socket: rank 0 listens where OXSHMEM_UID_ADDR says (an address, not an interface name)",
        &["NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "NVSHMEM_BOOTSTRAP_UID_SOCK_FAMILY", "NVSHMEM_BOOTSTRAP_UID_SESSION_ID"],
    ),
    (
        "debug output: oxshmem writes its messages to standard error (see NVSHMEM_DEBUG)",
        &[
            "NVSHMEM_DEBUG_SUBSYS",
            "NVSHMEM_DEBUG_FILE",
            "NVSHMEM_DEBUG_ATTACH_DELAY",
            "NVSHMEM_ENABLE_ERROR_CHECKS",
            "NVSHMEM_INFO_HIDDEN",
            "NVSHMEM_NVTX",
        ],
    ),
    ("teams: oxshmem's number of teams is its own limit", &["NVSHMEM_MAX_TEAMS"]),
    (
        "collective tuning: oxshmem's collectives choose their own algorithms",
        &[
            "NVSHMEM_DISABLE_NCCL",
            "NVSHMEM_BARRIER_DISSEM_KVAL",
            "NVSHMEM_BARRIER_TG_DISSEM_KVAL",
            "NVSHMEM_REDUCE_RECEXCH_KVAL",
            "NVSHMEM_FCOLLECT_LL_THRESHOLD",
            "NVSHMEM_FCOLLECT_LL128_THRESHOLD",
            "NVSHMEM_FCOLLECT_NVLS_THRESHOLD",
            "NVSHMEM_REDUCESCATTER_NVLS_THRESHOLD",
            "NVSHMEM_REDUCE_SCRATCH_SIZE",
            "NVSHMEM_BCAST_TREE_KVAL",
            "NVSHMEM_BCAST_ALGO",
            "NVSHMEM_FCOLLECT_ALGO",
            "NVSHMEM_REDUCE_ALGO",
            "NVSHMEM_REDMAXLOC_ALGO",
            "NVSHMEM_REDUCESCATTER_ALGO",
            "NVSHMEM_FCOLLECT_NTHREADS",
            "NVSHMEM_REDUCESCATTER_NTHREADS",
            "NVSHMEM_MAX_CTAS",
            "NVSHMEM_RDX_NUM_TPB",
        ],
    ),
    (
        "NIC choice and InfiniBand tuning: oxshmem's network transport is libfabric (FI_PROVIDER and FI_* choose and tune it)",
        &[
            "NVSHMEM_HCA_LIST",
            "NVSHMEM_HCA_PE_MAPPING",
            "NVSHMEM_ENABLE_NIC_PE_MAPPING",
            "NVSHMEM_IB_TRAFFIC_CLASS",
            "NVSHMEM_IB_SL",
            "NVSHMEM_IB_ADDR_FAMILY",
            "NVSHMEM_IB_ADDR_RANGE",
            "NVSHMEM_IB_ROCE_VERSION_NUM",
            "NVSHMEM_IB_ENABLE_RELAXED_ORDERING",
            "NVSHMEM_IB_DISABLE_DMABUF",
            "NVSHMEM_DISABLE_IB_NATIVE_ATOMICS",
            "NVSHMEM_DISABLE_GDRCOPY",
            "NVSHMEM_QP_DEPTH",
            "NVSHMEM_SRQ_DEPTH",
            "NVSHMEM_LIBFABRIC_PROVIDER",
            "NVSHMEM_LIBFABRIC_PERSONA",
        ],
    ),
    (
        "proxy thread tuning: oxshmem's proxy has no such settings",
        &[
            "NVSHMEM_PROXY_REQUEST_BATCH_MAX",
            "NVSHMEM_DISABLE_LOCAL_ONLY_PROXY",
            "NVSHMEM_BYPASS_FLUSH",
            "NVSHMEM_ASSERT_ATOMICS_SYNC",
        ],
    ),
    (
        "IBGDA details oxshmem's queues do not have (DCT and DCI queues, fetch slots, several ports); OXSHMEM_IBGDA_* size them",
        &[
            "NVSHMEM_IBGDA_NUM_DCT",
            "NVSHMEM_IBGDA_NUM_DCI",
            "NVSHMEM_IBGDA_NUM_SHARED_DCI",
            "NVSHMEM_IBGDA_DCI_MAP_BY",
            "NVSHMEM_IBGDA_RC_MAP_BY",
            "NVSHMEM_IBGDA_NUM_FETCH_SLOTS_PER_DCI",
            "NVSHMEM_IBGDA_NUM_FETCH_SLOTS_PER_RC",
            "NVSHMEM_IBGDA_ENABLE_MULTI_PORT",
        ],
    ),
];

/// Why NVSHMEM variable `name` has no effect here, if it is one of [`NVSHMEM_NO_EFFECT`].
pub fn no_effect_reason(name: &str) -> Option<&'static str> {
    NVSHMEM_NO_EFFECT.iter().find(|(_, names)| names.contains(&name)).map(|(why, _)| *why)
}

/// Whether the startup text (`full`: the table, else the version line) is asked for with the
/// NVSHMEM spelling (`NVSHMEM_INFO`; `NVSHMEM_VERSION`, or `NVSHMEM_DEBUG`'s version line), so
/// is printed as NVSHMEM prints it.
pub fn nvshmem_style(full: bool) -> bool {
    let spelled = |name: &str| matches!(lookup(var(name)).1, Source::Env(n) if n.starts_with("NVSHMEM_"));
    if full {
        spelled("SHMEM_INFO")
    } else {
        spelled("SHMEM_VERSION")
            || (set_in(&process_env, "SHMEM_VERSION").is_none()
                && nv_debug_in(&process_env).is_ok_and(|l| l >= NvDebug::Version))
    }
}

/// A value as NVSHMEM's listing shows one of type `ty`: `true`/`false`, a size in bytes, a
/// number, or quoted text (a value that does not parse is shown quoted, as set).
pub(super) fn nvshmem_value(ty: VarType, text: &str) -> String {
    let quoted = || format!("\"{text}\"");
    match ty {
        VarType::Bool => parse_bool(text).map_or_else(quoted, |b| b.to_string()),
        VarType::Size => parse_size(text).map_or_else(|_| quoted(), |b| b.to_string()),
        VarType::Int if !text.trim().is_empty() && text.trim().parse::<i64>().is_ok() => text.trim().to_string(),
        VarType::Int | VarType::Text => quoted(),
    }
}

/// `text` wrapped to lines of at most `width` columns (a longer word stands alone).
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The table as NVSHMEM's `NVSHMEM_INFO` prints its own: a `NVSHMEM configuration:` block
/// naming the library, then sections (`Standard options:`, `Bootstrap options:`, `Additional
/// options:`, `Transport options:`) of `  NAME  value (type: T, default: D)` lines, each with
/// its help wrapped to 80 columns after a tab. Variables appear under their NVSHMEM spelling
/// where they have one, oxshmem's own under theirs; the NVSHMEM variables set that have no
/// effect here close the listing.
pub fn nvshmem_info_text() -> String {
    let mut s = String::from("NVSHMEM configuration:\n");
    let (major, minor, _) = NVSHMEM_API_VERSION;
    let (smaj, smin) = crate::SPEC_VERSION;
    let library = format!("{} (NVSHMEM {major}.{minor} API, OpenSHMEM {smaj}.{smin})", crate::VENDOR_STRING);
    let _ = writeln!(s, "  {:<28} {library}", "Library");
    let _ = writeln!(
        s,
        "  {:<28} the GPU heap and device state of the C library's CUDA back end: when the program links \
         libnvshmem_device.a, or OXSHMEM_CUDA_HEAP=on",
        "CUDA"
    );
    s.push('\n');
    for section in Section::ALL {
        let _ = writeln!(s, "{}:", section.title());
        for v in shown_vars().filter(|v| v.section == section) {
            let name = v.nvshmem_name().unwrap_or(v.name);
            let (value, _) = lookup(v);
            let (value, default) = (nvshmem_value(v.ty, &value), nvshmem_value(v.ty, v.default));
            let _ = writeln!(s, "  {name:<28} {value} (type: {}, default: {default})", v.ty.name());
            let mut help = v.help.replace('`', "").trim_end_matches('.').to_string();
            if !v.aliases.is_empty() {
                let spellings: Vec<&str> = std::iter::once(v.name).chain(v.aliases.iter().copied()).collect();
                let _ = write!(help, ". Spellings, the first set wins: {}", spellings.join(", "));
            }
            for line in wrap(&help, 80) {
                let _ = writeln!(s, "\t{line}");
            }
        }
        s.push('\n');
    }
    let set: Vec<(&str, String, &str)> = NVSHMEM_NO_EFFECT
        .iter()
        .flat_map(|(why, names)| names.iter().map(move |n| (*n, *why)))
        .filter_map(|(n, why)| Some((n, std::env::var(n).ok()?, why)))
        .collect();
    if !set.is_empty() {
        s.push_str("Without effect in oxshmem:\n");
        for (name, value, why) in set {
            let _ = writeln!(s, "  {name:<28} \"{value}\"");
            for line in wrap(why, 80) {
                let _ = writeln!(s, "\t{line}");
            }
        }
        s.push('\n');
    }
    s
}

/// One NVSHMEM variable as `oxshmem-info` shows it: its value when set, and what it does in
/// oxshmem now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvshmemSetting {
    /// The NVSHMEM name.
    pub name: &'static str,
    /// Its value, when it is set.
    pub value: Option<String>,
    /// What it maps to here, given the whole environment.
    pub effect: String,
}

/// Every NVSHMEM variable oxshmem reads, with what it maps to given the process's environment
/// (the NVSHMEM view of `oxshmem-info`).
pub fn nvshmem_settings() -> Vec<NvshmemSetting> {
    nvshmem_settings_in(&process_env)
}

pub(super) fn nvshmem_settings_in(env: Env) -> Vec<NvshmemSetting> {
    let mut out = Vec::new();
    let invalid = |b: Bad| format!("invalid: {}", refused_text(b));
    for v in shown_vars() {
        let Some(name) = v.nvshmem_name() else { continue };
        let value = env(name);
        let effect = if v.group != Group::Nvshmem {
            match lookup_in(env, v).1 {
                Source::Env(n) if n != name => format!("same as {} ({n} is set and wins)", v.name),
                _ => format!("same as {}", v.name),
            }
        } else {
            match name {
                "NVSHMEM_DEBUG" => match nv_debug_in(env) {
                    Err(b) => invalid(b),
                    Ok(NvDebug::None) => "off".to_string(),
                    Ok(level) => {
                        let mut e = format!("{}: PE 0 prints the version", level.name());
                        if level >= NvDebug::Warn {
                            e.push_str(" and names the NVSHMEM variables set without effect");
                        }
                        if level >= NvDebug::Info {
                            e.push_str("; SHMEM_DEBUG is on");
                        }
                        for own in ["SHMEM_VERSION", "SHMEM_DEBUG"] {
                            if let Some((_, n)) = set_in(env, own) {
                                let _ = write!(e, " ({n} is set and wins over it)");
                            }
                        }
                        e
                    }
                },
                "NVSHMEM_BOOTSTRAP" | "NVSHMEM_BOOTSTRAP_PMI" => match nvshmem_bootstrap_in(env) {
                    Err(b) => invalid(b),
                    Ok(_) if env("OXSHMEM_BOOTSTRAP").is_some() => "not read: OXSHMEM_BOOTSTRAP is set and wins".into(),
                    Ok(_) if env("OXSHMEM_UNIQUEID").is_some() => {
                        "not read: OXSHMEM_UNIQUEID is set (the unique-id bootstrap)".into()
                    }
                    Ok(None) => "the launcher's bootstrap, detected (as OXSHMEM_BOOTSTRAP=auto)".into(),
                    Ok(Some((NvBootstrap::Kind(k), _))) => format!("OXSHMEM_BOOTSTRAP={}", k.name()),
                    Ok(Some((NvBootstrap::MpiWorld, _))) => {
                        "MPI_COMM_WORLD of the program's MPI (MPI_Init before nvshmem_init)".into()
                    }
                },
                // The layers' own NVSHMEM variables (the device layer's channel choice).
                _ => layers()
                    .into_iter()
                    .find_map(|l| (l.nvshmem_effect)(name, env))
                    .unwrap_or_else(|| "read by a layer this program does not link".into()),
            }
        };
        out.push(NvshmemSetting { name, value, effect });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::config::test_env::env_of;

    /// `NVSHMEM_DEBUG` takes NVSHMEM's levels (not an init error), each including the ones
    /// before it; an explicit `SHMEM_DEBUG`/`SHMEM_VERSION` wins.
    #[test]
    fn nvshmem_debug_levels() {
        let cfg = |pairs: &[(&str, &str)]| Config::from_lookup(0, &env_of(pairs));
        for (level, version, checks) in [
            ("", false, false),
            ("none", false, false),
            ("0", false, false),
            ("VERSION", true, false),
            ("WARN", true, false),
            ("INFO", true, true),
            ("info", true, true),
            ("1", true, true),
            ("ABORT", true, true),
            ("TRACE", true, true),
        ] {
            let c = cfg(&[("NVSHMEM_DEBUG", level)]).unwrap_or_else(|e| panic!("NVSHMEM_DEBUG={level}: {e}"));
            assert_eq!((c.print_version, c.debug), (version, checks), "NVSHMEM_DEBUG={level}");
        }
        let c = cfg(&[("NVSHMEM_DEBUG", "TRACE"), ("SHMEM_DEBUG", "0"), ("SHMEM_VERSION", "0")]).unwrap();
        assert_eq!((c.print_version, c.debug, c.nvshmem_debug), (false, false, NvDebug::Trace));
        let c = cfg(&[("SHMEM_DEBUG", "1")]).unwrap();
        assert!(c.debug && !c.print_version);
        let e = cfg(&[("NVSHMEM_DEBUG", "LOUD")]).unwrap_err().to_string();
        assert!(e.contains("NVSHMEM_DEBUG=\"LOUD\"") && e.contains("WARN, INFO"), "{e}");
        assert!(NvDebug::Info < NvDebug::Abort && NvDebug::Abort < NvDebug::Trace);
    }

    /// `NVSHMEM_BOOTSTRAP` and `NVSHMEM_BOOTSTRAP_PMI` onto the bootstrap back ends; oxshmem's own
    /// variables win.
    #[test]
    fn nvshmem_bootstrap_mapping() {
        use oxshmem_bootstrap::Kind::*;
        let map = |pairs: &[(&str, &str)]| nvshmem_bootstrap_in(&env_of(pairs));
        let kind = |k| Some(NvBootstrap::Kind(k));
        for (pairs, want, by) in [
            (&[][..], None, ""),
            (&[("NVSHMEM_BOOTSTRAP", "PMI")][..], None, ""),
            (&[("NVSHMEM_BOOTSTRAP", "pmi"), ("NVSHMEM_BOOTSTRAP_PMI", "PMI")], kind(Pmi1), "NVSHMEM_BOOTSTRAP_PMI"),
            (&[("NVSHMEM_BOOTSTRAP_PMI", "PMI-2")], kind(Pmi2), "NVSHMEM_BOOTSTRAP_PMI"),
            (&[("NVSHMEM_BOOTSTRAP_PMI", "pmix")], kind(Pmix), "NVSHMEM_BOOTSTRAP_PMI"),
            (&[("NVSHMEM_BOOTSTRAP", "MPI")], Some(NvBootstrap::MpiWorld), "NVSHMEM_BOOTSTRAP"),
            (&[("NVSHMEM_BOOTSTRAP", "SHMEM")], None, ""),
            (&[("NVSHMEM_BOOTSTRAP", "UID")], kind(Uid), "NVSHMEM_BOOTSTRAP"),
            // NVSHMEM_BOOTSTRAP_PMI is read only for the PMI bootstrap.
            (
                &[("NVSHMEM_BOOTSTRAP", "MPI"), ("NVSHMEM_BOOTSTRAP_PMI", "PMIX")],
                Some(NvBootstrap::MpiWorld),
                "NVSHMEM_BOOTSTRAP",
            ),
            // An explicit OXSHMEM_BOOTSTRAP or unique id wins.
            (&[("NVSHMEM_BOOTSTRAP", "MPI"), ("OXSHMEM_BOOTSTRAP", "pmi2")], None, ""),
            (&[("NVSHMEM_BOOTSTRAP_PMI", "PMI-2"), ("OXSHMEM_BOOTSTRAP", "")], None, ""),
            (&[("NVSHMEM_BOOTSTRAP", "plugin"), ("OXSHMEM_UNIQUEID", "oxs1:x")], None, ""),
        ] {
            let got = map(pairs).unwrap_or_else(|e| panic!("{pairs:?}: {}", refused_text(e)));
            assert_eq!(got.map(|g| g.0), want, "{pairs:?}");
            assert_eq!(got.map_or("", |g| g.1), by, "{pairs:?}");
        }
        let e = refused_text(map(&[("NVSHMEM_BOOTSTRAP", "plugin")]).unwrap_err());
        assert!(e.contains("NVSHMEM_BOOTSTRAP=\"plugin\"") && e.contains("no bootstrap plugins"), "{e}");
        let e = refused_text(map(&[("NVSHMEM_BOOTSTRAP_PMI", "PMI-3")]).unwrap_err());
        assert!(e.contains("NVSHMEM_BOOTSTRAP_PMI=\"PMI-3\": expected PMI, PMI-2 or PMIX"), "{e}");
        assert!(map(&[("NVSHMEM_BOOTSTRAP", "carrier-pigeon")]).is_err());
    }

    /// The NVSHMEM-style listing: the configuration block, the four sections in order, and one
    /// `NAME value (type: T, default: D)` line per shown variable under its NVSHMEM spelling,
    /// each followed by tab-indented help of at most 80 columns.
    #[test]
    fn nvshmem_listing_shape() {
        let text = nvshmem_info_text();
        assert!(text.starts_with("NVSHMEM configuration:\n  Library "), "{text}");
        let mut at = 0;
        for s in Section::ALL {
            let h = format!("\n{}:\n", s.title());
            at += text[at..].find(&h).unwrap_or_else(|| panic!("no {h:?} after byte {at}:\n{text}"));
        }
        for v in shown_vars() {
            let name = v.nvshmem_name().unwrap_or(v.name);
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("  {name} ")))
                .unwrap_or_else(|| panic!("{name} missing:\n{text}"));
            assert!(line.ends_with(')') && line.contains(&format!(" (type: {}, default: ", v.ty.name())), "{line}");
            if name.len() < 28 {
                assert_eq!(line.as_bytes()[30], b' ', "the value starts in column 31: {line:?}");
            }
        }
        assert!(text.contains("  NVSHMEM_SYMMETRIC_SIZE       "), "{text}");
        assert!(text.contains("(type: size, default: 1073741824)"), "{text}");
        assert!(text.contains("(type: string, default: \"PMI\")"), "{text}");
        for l in text.lines().filter(|l| l.starts_with('\t')) {
            assert!(l.len() <= 81, "help wider than 80 columns: {l:?}");
        }
    }

    /// The NVSHMEM view: every NVSHMEM spelling with what it maps to.
    #[test]
    fn nvshmem_settings_say_what_each_maps_to() {
        let effect = |pairs: &[(&str, &str)], name: &str| {
            let all = nvshmem_settings_in(&env_of(pairs));
            all.into_iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name} missing")).effect
        };
        assert_eq!(effect(&[], "NVSHMEM_SYMMETRIC_SIZE"), "same as SHMEM_SYMMETRIC_SIZE");
        let both = [("NVSHMEM_SYMMETRIC_SIZE", "2G"), ("SHMEM_SYMMETRIC_SIZE", "1G")];
        assert_eq!(
            effect(&both, "NVSHMEM_SYMMETRIC_SIZE"),
            "same as SHMEM_SYMMETRIC_SIZE (SHMEM_SYMMETRIC_SIZE is set and wins)"
        );
        assert_eq!(effect(&[("NVSHMEM_BOOTSTRAP_PMI", "PMI-2")], "NVSHMEM_BOOTSTRAP"), "OXSHMEM_BOOTSTRAP=pmi2");
        assert!(effect(&[("NVSHMEM_BOOTSTRAP", "MPI")], "NVSHMEM_BOOTSTRAP").starts_with("MPI_COMM_WORLD"));
        let own = [("NVSHMEM_BOOTSTRAP", "MPI"), ("OXSHMEM_BOOTSTRAP", "pmi1")];
        assert!(effect(&own, "NVSHMEM_BOOTSTRAP").contains("OXSHMEM_BOOTSTRAP is set and wins"));
        assert!(effect(&[("NVSHMEM_DEBUG", "INFO")], "NVSHMEM_DEBUG").contains("SHMEM_DEBUG is on"));
        assert!(effect(&[("NVSHMEM_DEBUG", "LOUD")], "NVSHMEM_DEBUG").starts_with("invalid: "));
    }
}
