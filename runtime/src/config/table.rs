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

/// The variables users see, in declaration order.
pub fn shown_vars() -> impl Iterator<Item = &'static Var> {
    VARS.iter().filter(|v| v.shown())
}

/// Every variable the runtime reads.
pub const VARS: &[Var] = &[
    Var {
        name: "SHMEM_SYMMETRIC_SIZE",
        aliases: &["SMA_SYMMETRIC_SIZE", "NVSHMEM_SYMMETRIC_SIZE"],
        default: "1G",
        help: "bytes of symmetric heap per PE: a number, decimals allowed (`3.1M`, rounded up to a byte), then an optional K/M/G/T (powers of 1024) and an optional `B`/`iB`, nothing else (`1G1` is refused); the same rule for every spelling; minimum 1M. Address space is reserved; memory is committed only as it is touched. The runtime's own symmetric objects (team slots, mailboxes) live beyond this size and never take space from it.",
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
        name: "OXSHMEM_DEVICE_CHANNEL",
        aliases: &[],
        default: "auto",
        help: "device-initiated operations: `p2p` (mapped peers, direct loads/stores/atomics), `proxy` (request ring drained by a host proxy thread), `ibgda` (mlx5 work queues the device thread writes and rings itself, consumed by the software NIC); `auto` picks P2P for mapped peers and `OXSHMEM_DEVICE_REMOTE` for the rest",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_PROXY_SPIN",
        aliases: &[],
        default: "auto",
        help: "whether the device layer's host proxy thread spins for requests (NVSHMEM's dedicated proxy; \
               lowest latency, holds a core) or sleeps when idle: `1`, `0`, or `auto` (spin when this host has a \
               CPU for every PE and every proxy)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_DEVICE_REMOTE",
        aliases: &[],
        default: "proxy",
        help: "with `OXSHMEM_DEVICE_CHANNEL=auto`: the channel of peers whose heap is not mapped here, `proxy` or `ibgda`",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_DEVICE_BLOCKS",
        aliases: &[],
        default: "4",
        help: "blocks of a CPU-back-end kernel that run at once",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_IBGDA_NWQES",
        aliases: &[],
        default: "2048",
        help: "slots (64 B) per IBGDA send queue, a power of two from 8 to 32768",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_NUM_RC_PER_PE",
        aliases: &["NVSHMEM_IBGDA_NUM_RC_PER_PE"],
        default: "8",
        help: "IBGDA queues per peer (1 to 64; NVSHMEM's `0`, DCI only, means 1 here); a device thread uses queue `warp % N`",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_NIC",
        aliases: &[],
        default: "auto",
        help: "the NIC that executes the IBGDA queues: `soft` (the software NIC, in every build), `devx` (an mlx5 NIC through DEVX, feature `verbs`; fails with the reason where none can serve), `auto` (the hardware NIC when every PE has a DEVX-capable one, else the software NIC; one info line says which and why)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_NIC_GID_INDEX",
        aliases: &["NVSHMEM_IB_GID_INDEX"],
        default: "",
        help: "with `OXSHMEM_NIC=devx`: the GID index the queue pairs use (unset: 0 on InfiniBand, the first RoCE v2 GID on Ethernet)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_SOFTNIC_LAYOUT",
        aliases: &[],
        default: "mlx5",
        help: "the queue format the software NIC reads and the IBGDA producers write: `mlx5` (ConnectX) or `hns` (HiSilicon RoCE; CPU device threads only, the CUDA device library writes mlx5 WQEs)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_SOFTNIC_DOORBELL",
        aliases: &[],
        default: "record",
        help: "how the software NIC learns of new IBGDA work: `record` (it watches each queue's doorbell record) or `register` (as a hardware NIC: from a doorbell register per queue pair that producers, or the CPU ringer, write after the record)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_QUEUE_MEM",
        aliases: &["NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE"],
        default: "host",
        help: "where the CUDA back end's IBGDA queues (send queues, completion queues, doorbell records) live: `host` (pinned host memory, which GPU threads reach over PCIe; also `hostmem`, `auto`) or `gpu` (GPU memory, registered with the NIC through a dma-buf; also `gpumem`). The software NIC and the CPU ringer read the queues with the CPU, so with them `gpu` needs a CPU that reaches GPU memory (a coherent system)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_NIC_HANDLER",
        aliases: &["NVSHMEM_IBGDA_NIC_HANDLER"],
        default: "auto",
        help: "who writes a NIC's doorbell register: `gpu` (the producers, GPU threads through the register page mapped for the GPU; init fails where it cannot be mapped), `cpu` (a CPU thread of the PE watches the queues' doorbells and rings for every producer), `auto` (the producers, and the CPU thread for GPU producers whose GPU cannot map the page)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_CQ_MODE",
        aliases: &[],
        default: "collapsed",
        help: "`collapsed` (one CQE, always overwritten, as NVSHMEM creates it) or `normal` (a ring with owner bits and a consumer index)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_NCQES",
        aliases: &[],
        default: "",
        help: "CQEs of a `normal` completion queue; unset: the same as `OXSHMEM_IBGDA_NWQES`",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_BATCH",
        aliases: &["NVSHMEM_IBGDA_NUM_REQUESTS_IN_BATCH"],
        default: "32",
        help: "a producer rings the doorbell at least every this many slots",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_SOFTNIC_NAP_MS",
        aliases: &[],
        default: "50",
        help: "how long the idle software NIC thread sleeps before it looks at the doorbells again; doorbells rung meanwhile are served by the ringing threads, so this is a safety net",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_CUDA_DEVICE",
        aliases: &[],
        default: "",
        help: "with the CUDA back end (feature `cuda`): the ordinal of the GPU the PE uses (after `CUDA_VISIBLE_DEVICES`); unset: as NVSHMEM does, the PE's rank on its node modulo the GPUs it sees, so PEs share GPUs when a node runs more PEs than it has",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_CUDA_HEAP",
        aliases: &[],
        default: "auto",
        help: "the C library's GPU symmetric heap: `on` (`1`, `yes`): `nvshmem_malloc`, `_calloc`, `_align` and `_free` work on GPU memory, and init fails where there is no CUDA driver or GPU; `off` (`0`, `no`): they give host memory, as `shmem_malloc` does (refused when the program links `libnvshmem_device.a`, whose kernels need the GPU heap); `auto`: on when the program links `libnvshmem_device.a` (see `docs/cuda.md`)",
        group: Group::Device,
        ty: VarType::Text,
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
    Var {
        name: "NVSHMEM_DISABLE_P2P",
        aliases: &[],
        default: "0",
        help: "`1`: the device layer uses no P2P channel: every peer, mapped here or not, gets the remote channel (`OXSHMEM_DEVICE_REMOTE`'s, as NVSHMEM sends everything through its remote transport). An explicit `OXSHMEM_DEVICE_CHANNEL` wins. Host-side operations still use shared memory",
        group: Group::Nvshmem,
        ty: VarType::Bool,
        section: Section::Additional,
    },
    Var {
        name: "NVSHMEM_REMOTE_TRANSPORT",
        aliases: &[],
        default: "ibrc",
        help: "NVSHMEM's transport to peers without P2P. `ibrc`, `ucx`, `libfabric`, `ibdevx`: the device layer's `proxy` channel, whose host thread uses oxshmem's own transport (shared memory within a host, `ofi` between hosts); `ibgda`: `OXSHMEM_DEVICE_REMOTE=ibgda`; `none`: the proxy too (oxshmem keeps its host transport, which the host API and the IBGDA software NIC need). An explicit `OXSHMEM_DEVICE_REMOTE` and `NVSHMEM_IB_ENABLE_IBGDA=1` win",
        group: Group::Nvshmem,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "NVSHMEM_IB_ENABLE_IBGDA",
        aliases: &[],
        default: "0",
        help: "`1`: `OXSHMEM_DEVICE_REMOTE=ibgda`: device threads reach the peers not mapped here through IBGDA queues (the software NIC). An explicit `OXSHMEM_DEVICE_REMOTE` wins",
        group: Group::Nvshmem,
        ty: VarType::Bool,
        section: Section::Transport,
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
/// If `name` is not declared in [`VARS`] (a bug in the caller).
pub fn var_named(name: &str) -> &'static Var {
    var(name)
}

/// The value of variable `name` (its default when unset) and the spelling to name in an
/// error about it: the one set in the environment, else the canonical name. For the layers
/// above the runtime (the device layer), which read their variables through this table.
///
/// ```
/// let (value, _) = oxshmem::config::value_of("OXSHMEM_DEVICE_BLOCKS");
/// assert!(!value.is_empty());
/// ```
///
/// # Panics
/// If `name` is not declared in [`VARS`].
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
    VARS.iter().find(|v| v.name == name).expect("config variable declared in VARS")
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

    /// `docs/configuration.md` shows exactly the generated table, between its markers.
    #[test]
    fn the_documented_table_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
        let doc = std::fs::read_to_string(path).expect("reading docs/configuration.md");
        let (begin, end) =
            ("<!-- vars:begin (generated by oxshmem::config::markdown_table) -->\n", "<!-- vars:end -->");
        let start = doc.find(begin).expect("docs/configuration.md has the vars:begin marker") + begin.len();
        let stop = doc[start..].find(end).expect("docs/configuration.md has the vars:end marker") + start;
        let want = markdown_table();
        if doc[start..stop] != want {
            if std::env::var_os("OXSHMEM_BLESS").is_some() {
                std::fs::write(path, format!("{}{want}{}", &doc[..start], &doc[stop..])).expect("writing the doc");
            } else {
                panic!(
                    "docs/configuration.md's table is stale; regenerate it with \
                     OXSHMEM_BLESS=1 cargo test -p oxshmem --lib config\n--- expected\n{want}"
                );
            }
        }
    }

    #[test]
    fn test_only_variables_are_hidden_and_names_unique() {
        assert!(shown_vars().all(|v| !v.name.contains("_TEST_")));
        assert!(VARS.iter().any(|v| v.group == Group::Testing));
        let mut names: Vec<&str> =
            VARS.iter().flat_map(|v| std::iter::once(&v.name).chain(v.aliases)).copied().collect();
        names.extend(NVSHMEM_NO_EFFECT.iter().flat_map(|(_, n)| n.iter().copied()));
        names.extend(READ_ELSEWHERE.iter().map(|(n, _, _)| *n));
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "a name is declared twice (VARS, NVSHMEM_NO_EFFECT, READ_ELSEWHERE)");
        // Every variable of the NVSHMEM group is spelt NVSHMEM's way, and has one spelling.
        for v in VARS.iter().filter(|v| v.group == Group::Nvshmem) {
            assert!(v.name.starts_with("NVSHMEM_") && v.aliases.is_empty(), "{}", v.name);
        }
    }
}
