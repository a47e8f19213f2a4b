//! The variable table: every variable declared once ([`VARS`]), and its lookups.

/// One configuration variable.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// The canonical name.
    pub name: &'static str,
    /// Other accepted spellings, tried after the canonical one.
    pub aliases: &'static [&'static str],
    /// Default value as text.
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Who reads it; [`Group::Testing`] variables are left out of every table users see.
    pub group: Group,
    /// The type of its value, as NVSHMEM's `NVSHMEM_INFO` listing names it.
    pub ty: VarType,
    /// The section of that listing it appears in.
    pub section: Section,
}

/// Which layer reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// The runtime (`oxshmem`): every program.
    Runtime,
    /// The device layer (`oxshmem-device`): programs that call `Device::init`.
    Device,
    /// NVSHMEM's own variables whose meaning differs from every oxshmem variable's: translated
    /// by this module (each one's help says into what).
    Nvshmem,
    /// Fault injection for the project's own tests; never shown.
    Testing,
}

/// The type of a variable's value (NVSHMEM's `bool`, `size`, `int`, `string`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarType {
    /// `0`/`1` (also `yes`/`no`, `true`/`false`, `on`/`off`).
    Bool,
    /// Bytes, with an optional K/M/G/T suffix.
    Size,
    /// A whole number.
    Int,
    /// Text.
    Text,
}

impl VarType {
    /// NVSHMEM's name for it.
    pub fn name(self) -> &'static str {
        match self {
            VarType::Bool => "bool",
            VarType::Size => "size",
            VarType::Int => "int",
            VarType::Text => "string",
        }
    }
}

/// The sections of NVSHMEM's `NVSHMEM_INFO` listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// "Standard options": the OpenSHMEM ones, and the debug level.
    Standard,
    /// "Bootstrap options".
    Bootstrap,
    /// "Additional options".
    Additional,
    /// "Transport options" (oxshmem's transports and device channels).
    Transport,
}

impl Section {
    /// Every section, in listing order.
    pub const ALL: [Section; 4] = [Section::Standard, Section::Bootstrap, Section::Additional, Section::Transport];

    /// The heading NVSHMEM prints.
    pub fn title(self) -> &'static str {
        match self {
            Section::Standard => "Standard options",
            Section::Bootstrap => "Bootstrap options",
            Section::Additional => "Additional options",
            Section::Transport => "Transport options",
        }
    }
}

impl Var {
    /// Whether users see it (in `SHMEM_INFO`, `oxshmem-info` and `docs/configuration.md`).
    pub fn shown(&self) -> bool {
        self.group != Group::Testing
    }

    /// Its NVSHMEM spelling: the name, or the alias, that starts with `NVSHMEM_`.
    pub fn nvshmem_name(&self) -> Option<&'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied()).find(|n| n.starts_with("NVSHMEM_"))
    }
}

/// The variables users see, in declaration order: the runtime's, then each registered
/// layer's ([`register`]).
pub fn shown_vars() -> impl Iterator<Item = &'static Var> {
    vars().filter(|v| v.shown())
}

/// Every variable of the table: the runtime's own ([`VARS`]), then those of each layer
/// registered so far ([`register`]), in registration order.
pub fn vars() -> impl Iterator<Item = &'static Var> {
    VARS.iter().chain(layers().into_iter().flat_map(|l| l.vars.iter()))
}

/// The settings of a layer above the runtime (the device layer, `oxshmem-device`, which the
/// runtime cannot depend on): its variables, registered into the one table so that
/// `SHMEM_INFO`, `oxshmem-info` and `docs/configuration.md` show them with the runtime's, and
/// init checks them.
#[derive(Debug)]
pub struct Layer {
    /// The crate that reads them.
    pub name: &'static str,
    /// Its variables (of [`Group::Device`], or [`Group::Nvshmem`] for NVSHMEM variables it
    /// translates).
    pub vars: &'static [Var],
    /// Checks the layer's variables set in `env`, as init checks the runtime's: a malformed
    /// value is refused, naming the spelling set.
    pub check: fn(Env) -> std::result::Result<(), super::parse::Refused>,
    /// What the layer's NVSHMEM variable `name` does given `env` (the NVSHMEM view of
    /// `oxshmem-info`); `None` for a name that is not the layer's.
    pub nvshmem_effect: fn(&str, Env) -> Option<String>,
}

static LAYERS: std::sync::RwLock<Vec<&'static Layer>> = std::sync::RwLock::new(Vec::new());

/// Adds `layer`'s variables to the table (once; registering again does nothing). From then on
/// [`vars`], [`shown_vars`], [`lookup`] by name, the `SHMEM_INFO` text, the NVSHMEM listing,
/// [`markdown_table`] and every init's checks include them. The device layer registers at
/// `Device::init`, the C library before its init; a Rust program that wants the device
/// layer's variables checked and listed by `oxshmem::init` itself calls
/// `oxshmem_device::config::register()` first.
pub fn register(layer: &'static Layer) {
    let mut all = LAYERS.write().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|l| std::ptr::eq(*l, layer) || l.name == layer.name) {
        all.push(layer);
    }
}

/// The layers registered so far.
pub fn layers() -> Vec<&'static Layer> {
    LAYERS.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Every spelling of the device layer's variables (`oxshmem_device::config::VARS`), by name
/// only: known, so that setting one draws no "unknown variable" warning and a misspelling gets
/// the right suggestion (`OXSHMEM_DEVICE_CHANEL`), even in a program that never links or
/// registers the device layer. The device crate's tests hold the two lists equal.
pub const DEVICE_NAMES: &[&str] = &[
    "OXSHMEM_DEVICE_CHANNEL",
    "OXSHMEM_PROXY_SPIN",
    "OXSHMEM_DEVICE_REMOTE",
    "OXSHMEM_DEVICE_BLOCKS",
    "OXSHMEM_IBGDA_NWQES",
    "OXSHMEM_IBGDA_NUM_RC_PER_PE",
    "NVSHMEM_IBGDA_NUM_RC_PER_PE",
    "OXSHMEM_NIC",
    "OXSHMEM_NIC_GID_INDEX",
    "NVSHMEM_IB_GID_INDEX",
    "OXSHMEM_SOFTNIC_LAYOUT",
    "OXSHMEM_SOFTNIC_DOORBELL",
    "OXSHMEM_IBGDA_QUEUE_MEM",
    "NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE",
    "OXSHMEM_IBGDA_NIC_HANDLER",
    "NVSHMEM_IBGDA_NIC_HANDLER",
    "OXSHMEM_IBGDA_CQ_MODE",
    "OXSHMEM_IBGDA_NCQES",
    "OXSHMEM_IBGDA_BATCH",
    "NVSHMEM_IBGDA_NUM_REQUESTS_IN_BATCH",
    "OXSHMEM_SOFTNIC_NAP_MS",
    "OXSHMEM_CUDA_DEVICE",
    "OXSHMEM_CUDA_HEAP",
    "NVSHMEM_DISABLE_P2P",
    "NVSHMEM_REMOTE_TRANSPORT",
    "NVSHMEM_IB_ENABLE_IBGDA",
];

/// Every variable the runtime reads (the device layer's are `oxshmem_device::config::VARS`, added to the
/// table by [`register`]).
pub const VARS: &[Var] = &[
    Var {
        name: "SHMEM_SYMMETRIC_SIZE",
        aliases: &["SMA_SYMMETRIC_SIZE", "NVSHMEM_SYMMETRIC_SIZE"],
        default: "1G",
        help: "bytes of symmetric heap per PE: a number, decimals allowed (`3.1M`, rounded up to a byte), then an optional K/M/G/T (powers of 1024) and an optional `B`/`iB`, nothing else (`1G1` is refused); the same rule for every spelling; minimum 1M (below it, `NVSHMEM_SYMMETRIC_SIZE` gets 1M, as NVSHMEM programs ask for small heaps; `SHMEM_SYMMETRIC_SIZE` is refused). Address space is reserved; memory is committed only as it is touched. The runtime's own symmetric objects (team slots, mailboxes) live beyond this size and never take space from it.",
        group: Group::Runtime,
        ty: VarType::Size,
        section: Section::Standard,
    },
    Var {
        name: "SHMEM_DEBUG",
        aliases: &["SMA_DEBUG"],
        default: "0",
        help: "debugging aids: unless `OXSHMEM_LOG` is set, log lines at `debug`; warnings about ignored hint bits. It never changes what a program does: the checks (a collective allocation's arguments, the order of collectives) are on at every level, and a mismatch they find is an error at once, with or without it. Unset: on when `NVSHMEM_DEBUG` is `INFO`, `ABORT` or `TRACE`",
        group: Group::Runtime,
        ty: VarType::Bool,
        section: Section::Standard,
    },
    Var {
        name: "SHMEM_INFO",
        aliases: &["SMA_INFO", "NVSHMEM_INFO"],
        default: "0",
        help: "PE 0 prints the version and this table at init, to standard error; as `NVSHMEM_INFO`, NVSHMEM's listing (sections, `(type: …, default: …)`, NVSHMEM spellings) to standard output",
        group: Group::Runtime,
        ty: VarType::Bool,
        section: Section::Standard,
    },
    Var {
        name: "SHMEM_VERSION",
        aliases: &["SMA_VERSION", "NVSHMEM_VERSION"],
        default: "0",
        help: "PE 0 prints the version at init (as `NVSHMEM_VERSION`: to standard output, with the NVSHMEM API version)",
        group: Group::Runtime,
        ty: VarType::Bool,
        section: Section::Standard,
    },
    Var {
        name: "OXSHMEM_TRANSPORT",
        aliases: &[],
        default: "auto",
        help: "`auto`: shared memory within a host, the network transport (`ofi`, a build feature) across hosts; `shm`: shared memory only; `ofi`: the network path for every peer, even on one host",
        group: Group::Runtime,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_NODES",
        aliases: &[],
        default: "auto",
        help: "how PEs are grouped into nodes — shared memory inside a node, the network transport between nodes. `host`: same host name and boot id. `launcher`: the launcher's placement (`PMI_process_mapping` of Hydra and Slurm, PMIx's node ids), split further where host keys differ, since shared memory needs one host; the host grouping when the launcher says nothing. `auto`: `launcher` when the build has a network transport (feature `ofi`) and `OXSHMEM_TRANSPORT` is not `shm`, else `host`. So `mpiexec.hydra -launcher fork -hosts 127.0.0.2,127.0.0.3` gives two nodes on one machine with ofi between them; without a network transport, `launcher` then fails at init naming a peer no transport reaches",
        group: Group::Runtime,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_SHOW_PEERS",
        aliases: &[],
        default: "0",
        help: "`1`: every PE prints one line to stderr at init: its node, and which transport reaches which PEs (`oxshmem: PE 1: node 1 of 2 (host (launcher node 1)): shm 1,3; ofi 0,2 (tcp;ofi_rxm, domain tcp, endpoint 127.0.0.3:41000); unreachable -`)",
        group: Group::Runtime,
        ty: VarType::Bool,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_BOOTSTRAP",
        aliases: &[],
        default: "auto",
        help: "how PEs find each other: `pmi1`, `pmi2`, `pmix` (a build feature), `uid` (the unique-id rendezvous), `singleton`; `auto`: detected from the environment (see Bootstrap selection in `docs/configuration.md`)",
        group: Group::Runtime,
        ty: VarType::Text,
        section: Section::Bootstrap,
    },
    Var {
        name: "OXSHMEM_LOG",
        aliases: &[],
        default: "",
        help: "log filter (tracing-subscriber's `EnvFilter` syntax) for lines on stderr, each with its PE: `debug`, `ofi=trace,boot=debug`. Targets: `init`, `boot`, `shm`, `ofi`, `heap`, `device`, `proxy`, `softnic`, `cuda`, `error` (every error as it is built), `oshrun`. Unset: `debug` when `SHMEM_DEBUG` is true, `info`/`trace` for `NVSHMEM_DEBUG` `INFO`/`TRACE`; else the C library and `oshrun` show warnings only and a Rust program nothing (a Rust program with its own subscriber keeps it)",
        group: Group::Runtime,
        ty: VarType::Text,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_TIMEOUT",
        aliases: &[],
        default: "60",
        help: "seconds a wait for a peer may last (the ofi transport, device-side waits and channels; the unique-id bootstrap defaults to `120`) before it fails with an error naming the peer and the step",
        group: Group::Runtime,
        ty: VarType::Int,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_OFI_SRC_ADDR",
        aliases: &[],
        default: "",
        help: "the address the ofi endpoint binds to (e.g. 127.0.0.2 for one of several \"hosts\" on one machine). Unset: under Hydra, the PE's host name when it is a loopback address (`MPIR_CVAR_CH3_INTERFACE_HOSTNAME`, so `-hosts 127.0.0.2,127.0.0.3` binds each group to its own address); otherwise the provider's choice",
        group: Group::Runtime,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_OFI_TEST_BAD_PEER",
        aliases: &[],
        default: "",
        help: "testing only: a PE number whose exchanged ofi address this PE corrupts, to exercise unreachable-peer errors",
        group: Group::Testing,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_BARRIER",
        aliases: &[],
        default: "auto",
        help: "the barrier's pattern: `dissemination` (log2 n rounds, every member signalling one other per round), `central` (members signal the team's first member, which releases them all: two steps, each member scheduled twice), `auto` (central when the whole job is on one host with more PEs than CPUs, where every round costs a PE waiting for its turn on a core; else dissemination)",
        group: Group::Runtime,
        ty: VarType::Text,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_SPIN",
        aliases: &[],
        default: "1000",
        help: "polls a waiting PE spins before it starts yielding the CPU",
        group: Group::Runtime,
        ty: VarType::Int,
        section: Section::Additional,
    },
    Var {
        name: "NVSHMEM_DEBUG",
        aliases: &[],
        default: "",
        help: "NVSHMEM's debug level: `NONE`, `VERSION`, `WARN`, `INFO`, `ABORT` or `TRACE`, in NVSHMEM's order, any case (`0` and `1` are `NONE` and `INFO`). `VERSION` and above: PE 0 prints the version at init (unless `SHMEM_VERSION` is set); `WARN` and above: PE 0 also names each NVSHMEM variable set that has no effect here; `INFO`, `ABORT`, `TRACE`: `SHMEM_DEBUG` too (unless `SHMEM_DEBUG` is set). Unless `OXSHMEM_LOG` is set, `INFO`/`ABORT` log at `info` and `TRACE` at `trace`. Errors end the job with their message at every level, so `ABORT` adds nothing",
        group: Group::Nvshmem,
        ty: VarType::Text,
        section: Section::Standard,
    },
    Var {
        name: "NVSHMEM_BOOTSTRAP",
        aliases: &[],
        default: "PMI",
        help: "NVSHMEM's choice of bootstrap for `nvshmem_init` and `shmem_init`, read when neither `OXSHMEM_BOOTSTRAP` nor `OXSHMEM_UNIQUEID` is set: `PMI`: the launcher's (see `NVSHMEM_BOOTSTRAP_PMI`); `MPI`: `MPI_COMM_WORLD` of the MPI library the program loaded, which must have called `MPI_Init` (as with NVSHMEM); `SHMEM`: the launcher's, which is what `shmem_init` uses (oxshmem is the OpenSHMEM library); `UID`: `OXSHMEM_BOOTSTRAP=uid` (the job from `OXSHMEM_UNIQUEID`, `OXSHMEM_UID_RANK`, `OXSHMEM_UID_SIZE`); `plugin` is refused: oxshmem's bootstraps are built in. `nvshmemx_init_attr` with a unique id or a communicator ignores it",
        group: Group::Nvshmem,
        ty: VarType::Text,
        section: Section::Bootstrap,
    },
    Var {
        name: "NVSHMEM_BOOTSTRAP_PMI",
        aliases: &[],
        default: "PMI",
        help: "with `NVSHMEM_BOOTSTRAP=PMI`, when set: `PMI` is `OXSHMEM_BOOTSTRAP=pmi1`, `PMI-2` is `pmi2`, `PMIX` is `pmix` (a build feature). Unset, the launcher's protocol is detected (`oshrun` and Hydra: PMI-1; Slurm's `--mpi=pmi2`: PMI-2; PMIx launchers: PMIx)",
        group: Group::Nvshmem,
        ty: VarType::Text,
        section: Section::Bootstrap,
    },
];

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Not set; the default applies.
    Default,
    /// Set in the environment under this name.
    Env(&'static str),
}

/// Reads one environment variable: the process's, or a table a test made up.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

pub(super) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Looks a variable up: its value and where it came from.
pub fn lookup(var: &Var) -> (String, Source) {
    lookup_in(&process_env, var)
}

/// As [`lookup`], in the environment `env`.
pub fn lookup_in(env: Env, var: &Var) -> (String, Source) {
    for name in std::iter::once(&var.name).chain(var.aliases.iter()) {
        if let Some(v) = env(name) {
            return (v, Source::Env(name));
        }
    }
    (var.default.to_string(), Source::Default)
}

/// The declaration of variable `name`.
///
/// # Panics
/// If `name` is not declared in [`VARS`] or a registered [`Layer`] (a bug in the caller).
pub fn var_named(name: &str) -> &'static Var {
    var(name)
}

/// The value of variable `name` (its default when unset) and the spelling to name in an
/// error about it: the one set in the environment, else the canonical name. For the layers
/// above the runtime (the device layer), which read their variables through this table.
///
/// ```
/// let (value, _) = oxshmem::config::value_of("OXSHMEM_TIMEOUT");
/// assert!(!value.is_empty());
/// ```
///
/// # Panics
/// If `name` is not declared in [`VARS`] or a registered [`Layer`].
pub fn value_of(name: &str) -> (String, &'static str) {
    let v = var(name);
    let (value, src) = lookup(v);
    match src {
        Source::Env(n) => (value, n),
        Source::Default => (value, v.name),
    }
}

/// The table of `docs/configuration.md`: one Markdown row per shown variable (a test holds
/// the document to this text, so the two cannot drift apart).
pub fn markdown_table() -> String {
    let mut s = String::from("| variable | default | meaning |\n| --- | --- | --- |\n");
    for v in shown_vars() {
        let default = if v.default.is_empty() { "unset".to_string() } else { format!("`{}`", v.default) };
        let aliases = if v.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also {})", v.aliases.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "))
        };
        s.push_str(&format!("| `{}`{aliases} | {default} | {} |\n", v.name, v.help));
    }
    s
}

pub(super) fn var(name: &str) -> &'static Var {
    vars().find(|v| v.name == name).expect("config variable declared in VARS or a registered layer")
}

/// The value of `name` when it is set in `env` (under any of its spellings).
pub(super) fn set_in(env: Env, name: &str) -> Option<(String, &'static str)> {
    match lookup_in(env, var(name)) {
        (value, Source::Env(n)) => Some((value, n)),
        (_, Source::Default) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NVSHMEM_NO_EFFECT, READ_ELSEWHERE};

    #[test]
    fn test_only_variables_are_hidden_and_names_unique() {
        assert!(shown_vars().all(|v| !v.name.contains("_TEST_")));
        assert!(VARS.iter().any(|v| v.group == Group::Testing));
        let mut names: Vec<&str> =
            VARS.iter().flat_map(|v| std::iter::once(&v.name).chain(v.aliases)).copied().collect();
        names.extend(NVSHMEM_NO_EFFECT.iter().flat_map(|(_, n)| n.iter().copied()));
        names.extend(READ_ELSEWHERE.iter().map(|(n, _, _)| *n));
        names.extend(DEVICE_NAMES);
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "a name is declared twice (VARS, DEVICE_NAMES, NVSHMEM_NO_EFFECT, READ_ELSEWHERE)");
        // Every variable of the NVSHMEM group is spelt NVSHMEM's way, and has one spelling.
        for v in VARS.iter().filter(|v| v.group == Group::Nvshmem) {
            assert!(v.name.starts_with("NVSHMEM_") && v.aliases.is_empty(), "{}", v.name);
        }
    }
}
