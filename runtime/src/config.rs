//! Configuration, read once at init from the environment.
//!
//! Every variable is declared once in [`VARS`] (name, aliases, default, help, type), as Sandia
//! OpenSHMEM's `SHMEM_INTERNAL_ENV_DEF` does, so that `SHMEM_INFO`, `oxshmem-info` and
//! `docs/configuration.md` show the one table with each value's source.
//!
//! NVSHMEM's variables are read with their NVSHMEM meaning where oxshmem has one: an alias where
//! the meaning is the same (`NVSHMEM_SYMMETRIC_SIZE` of `SHMEM_SYMMETRIC_SIZE`), a variable of
//! [`Group::Nvshmem`] translated here where it differs (`NVSHMEM_DEBUG`'s levels,
//! `NVSHMEM_BOOTSTRAP` in [`bootstrap_from_env`], `NVSHMEM_DISABLE_P2P` in [`device_channel`],
//! `NVSHMEM_IB_ENABLE_IBGDA` and `NVSHMEM_REMOTE_TRANSPORT` in [`device_remote`]). An explicit
//! `OXSHMEM_*` or `SHMEM_*` setting always wins over the NVSHMEM spelling. NVSHMEM's variables
//! that mean nothing here are listed in [`NVSHMEM_NO_EFFECT`]; at init PE 0 names every
//! `NVSHMEM_*`, `SHMEM_*` or `OXSHMEM_*` variable that nobody reads ([`env_warnings`]).

use std::fmt::Write as _;

use crate::error::{Error, ErrorKind, Result};

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

/// The NVSHMEM version whose host API the C library follows (`nvshmem.h`'s
/// `NVSHMEM_VENDOR_{MAJOR,MINOR,PATCH}_VERSION`; `oxshmem-info`'s tests hold the two together).
pub const NVSHMEM_API_VERSION: (u32, u32, u32) = (3, 4, 5);

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

fn process_env(name: &str) -> Option<String> {
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

fn var(name: &str) -> &'static Var {
    VARS.iter().find(|v| v.name == name).expect("config variable declared in VARS")
}

/// Parses a size, the one rule for every spelling of `SHMEM_SYMMETRIC_SIZE`
/// (`NVSHMEM_SYMMETRIC_SIZE`, `SMA_SYMMETRIC_SIZE`): a number that may have a decimal fraction
/// (NVSHMEM's `3.1M`, `.5m`), then at most one K/M/G/T multiplier (powers of 1024), then an
/// optional `B` or `iB`, and nothing else: `"1G1"`, `"20kk"` and `"12Q"` are refused. A
/// fractional product is rounded up to a whole byte.
///
/// ```
/// use oxshmem::config::parse_size;
/// assert_eq!(parse_size("64K"), Ok(65536));
/// assert_eq!(parse_size("1g"), Ok(1 << 30));
/// assert_eq!(parse_size("3.1M"), Ok(3250586));
/// assert_eq!(parse_size(".5m"), parse_size("0.5m"));
/// assert!(parse_size("12Q").is_err());
/// assert!(parse_size("1G1").is_err());
/// ```
pub fn parse_size(text: &str) -> std::result::Result<usize, String> {
    let not_a_size = || {
        format!(
            "{text:?} is not a size (a number, possibly with a decimal fraction, then an optional K, M, G or T \
             and an optional B or iB, and nothing after them)"
        )
    };
    let t = text.trim();
    let end = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (number, rest) = t.split_at(end);
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') || frac.len() > 18 {
        return Err(not_a_size());
    }
    let mut suffix = rest.chars();
    let shift = match suffix.clone().next() {
        Some('k' | 'K') => 10,
        Some('m' | 'M') => 20,
        Some('g' | 'G') => 30,
        Some('t' | 'T') => 40,
        _ => 0,
    };
    if shift != 0 {
        suffix.next();
    }
    // What may follow: nothing, `B`, or (after a multiplier) `iB`.
    match suffix.as_str() {
        "" | "B" | "b" => {}
        "iB" | "ib" if shift != 0 => {}
        _ => return Err(not_a_size()),
    }
    let overflows = || format!("{text:?} overflows");
    let scale = 10u128.pow(frac.len() as u32);
    let whole: u128 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| overflows())? };
    let frac: u128 = if frac.is_empty() { 0 } else { frac.parse().map_err(|_| not_a_size())? };
    let scaled = whole.checked_mul(scale).and_then(|w| w.checked_add(frac)).ok_or_else(overflows)?;
    let bytes = scaled.checked_mul(1u128 << shift).ok_or_else(overflows)?.div_ceil(scale);
    usize::try_from(bytes).map_err(|_| overflows())
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "no" | "n" | "false" | "off" => Some(false),
        "1" | "yes" | "y" | "true" | "on" => Some(true),
        _ => None,
    }
}

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

/// A refused value: the variable (the spelling set), the value and why.
type Bad = (&'static str, String, String);

fn bad_text((var, value, reason): Bad) -> String {
    format!("environment variable {var}={value:?}: {reason}")
}

/// The value of `name` when it is set in `env` (under any of its spellings).
fn set_in(env: Env, name: &str) -> Option<(String, &'static str)> {
    match lookup_in(env, var(name)) {
        (value, Source::Env(n)) => Some((value, n)),
        (_, Source::Default) => None,
    }
}

/// A boolean variable; unset is its default.
fn flag_in(env: Env, name: &str) -> std::result::Result<bool, Bad> {
    let v = var(name);
    let (value, src) = lookup_in(env, v);
    let shown = if let Source::Env(n) = src { n } else { v.name };
    parse_bool(&value).ok_or_else(|| (shown, value, "expected 0 or 1 (also no/yes, false/true, off/on)".to_string()))
}

/// `NVSHMEM_DEBUG`'s level.
fn nv_debug_in(env: Env) -> std::result::Result<NvDebug, Bad> {
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

/// `NVSHMEM_REMOTE_TRANSPORT`'s values and the device layer's remote channel each gives.
pub const NVSHMEM_REMOTE_TRANSPORTS: &[(&str, &str)] = &[
    ("ibrc", "proxy"),
    ("ucx", "proxy"),
    ("libfabric", "proxy"),
    ("ibdevx", "proxy"),
    ("none", "proxy"),
    ("ibgda", "ibgda"),
];

/// The device layer's remote channel `NVSHMEM_REMOTE_TRANSPORT` asks for, when it is set.
fn nv_remote_transport_in(env: Env) -> std::result::Result<Option<(&'static str, &'static str)>, Bad> {
    let Some((value, n)) = set_in(env, "NVSHMEM_REMOTE_TRANSPORT") else {
        return Ok(None);
    };
    let t = value.trim().to_ascii_lowercase();
    if t.is_empty() {
        return Ok(None);
    }
    match NVSHMEM_REMOTE_TRANSPORTS.iter().find(|(name, _)| *name == t) {
        Some((_, channel)) => Ok(Some((channel, n))),
        None => Err((n, value, "expected ibrc, ucx, libfabric, ibdevx, ibgda or none".into())),
    }
}

/// The channel of the device layer's peers whose heap is not mapped here, and the variable
/// that chose it: an explicit `OXSHMEM_DEVICE_REMOTE`, else `ibgda` for
/// `NVSHMEM_IB_ENABLE_IBGDA=1`, else what `NVSHMEM_REMOTE_TRANSPORT` maps to
/// ([`NVSHMEM_REMOTE_TRANSPORTS`]), else the default (`proxy`). The device layer checks the
/// value; a malformed NVSHMEM variable is an error naming it.
pub fn device_remote() -> std::result::Result<(String, &'static str), String> {
    device_remote_in(&process_env).map_err(bad_text)
}

fn device_remote_in(env: Env) -> std::result::Result<(String, &'static str), Bad> {
    let v = var("OXSHMEM_DEVICE_REMOTE");
    if let (value, Source::Env(n)) = lookup_in(env, v) {
        return Ok((value, n));
    }
    if flag_in(env, "NVSHMEM_IB_ENABLE_IBGDA")? {
        return Ok(("ibgda".into(), "NVSHMEM_IB_ENABLE_IBGDA"));
    }
    if let Some((channel, n)) = nv_remote_transport_in(env)? {
        return Ok((channel.into(), n));
    }
    Ok((v.default.into(), v.name))
}

/// `OXSHMEM_PROXY_SPIN`: `Some(true)` spin, `Some(false)` sleep when idle, `None` decide
/// (auto); a malformed value is an error naming it.
pub fn proxy_spin() -> std::result::Result<Option<bool>, String> {
    proxy_spin_in(&process_env)
}

fn proxy_spin_in(env: Env) -> std::result::Result<Option<bool>, String> {
    let v = var("OXSHMEM_PROXY_SPIN");
    let (value, src) = lookup_in(env, v);
    let name = match src {
        Source::Env(n) => n,
        _ => v.name,
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(None),
        "1" | "y" | "yes" | "true" | "on" => Ok(Some(true)),
        "0" | "n" | "no" | "false" | "off" => Ok(Some(false)),
        other => Err(format!("{name}={other:?}: expected 1, 0 or auto")),
    }
}

/// The CPUs the job may use on this host: what the launcher says (`OSHRUN_CPUS` from
/// `oshrun`, `SLURM_CPUS_ON_NODE` from Slurm), else this process's own affinity. A PE the
/// launcher bound to one core sees one CPU of its own, not the job's.
pub fn job_cpus() -> usize {
    launcher_cpus().unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// The CPUs the launcher says the job has on this host (`OSHRUN_CPUS` from `oshrun`,
/// `SLURM_CPUS_ON_NODE` from Slurm), if it says.
fn launcher_cpus() -> Option<usize> {
    ["OSHRUN_CPUS", "SLURM_CPUS_ON_NODE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok().filter(|&n| n > 0))
}

/// The CPUs the job may use on this host, for deciding whether its PEs crowd it: what the
/// launcher says, as [`job_cpus`]; without a launcher's word, the host's online CPUs rather
/// than this process's affinity (a launcher that binds each PE to one core, as `mpirun
/// --bind-to core` does, leaves every PE seeing one CPU, which says nothing of the host).
pub fn host_cpus() -> usize {
    launcher_cpus().unwrap_or_else(|| {
        // SAFETY: sysconf has no preconditions.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if online > 0 { online as usize } else { job_cpus() }
    })
}

/// The CPUs `oshrun` may use on this host (`OSHRUN_CPU_LIST`, in `taskset -c` form), which
/// it spreads its PEs over: where a PE's helper threads (the device layer's proxy, software
/// NIC and CPU "device" threads) may run, rather than on the one core the PE is bound to.
/// `None` outside `oshrun` or when malformed.
pub fn job_cpu_list() -> Option<Vec<usize>> {
    let v = std::env::var("OSHRUN_CPU_LIST").ok()?;
    let mut out = Vec::new();
    for part in v.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.trim().parse::<usize>().ok()?..=b.trim().parse::<usize>().ok()?),
            None => out.push(part.trim().parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The device layer's channel override for every peer, and the variable that chose it: an
/// explicit `OXSHMEM_DEVICE_CHANNEL`, else, with `NVSHMEM_DISABLE_P2P=1`, the remote channel
/// ([`device_remote`]) for every peer, else `auto` (P2P for mapped peers, the remote channel
/// for the rest).
pub fn device_channel() -> std::result::Result<(String, &'static str), String> {
    device_channel_in(&process_env).map_err(bad_text)
}

fn device_channel_in(env: Env) -> std::result::Result<(String, &'static str), Bad> {
    let v = var("OXSHMEM_DEVICE_CHANNEL");
    if let (value, Source::Env(n)) = lookup_in(env, v) {
        return Ok((value, n));
    }
    if flag_in(env, "NVSHMEM_DISABLE_P2P")? {
        let (remote, n) = device_remote_in(env)?;
        return match remote.trim() {
            "" | "proxy" => Ok(("proxy".into(), "NVSHMEM_DISABLE_P2P")),
            "ibgda" => Ok(("ibgda".into(), "NVSHMEM_DISABLE_P2P")),
            _ => Err((n, remote, "expected proxy or ibgda".into())),
        };
    }
    Ok((v.default.into(), v.name))
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
fn nvshmem_bootstrap_in(env: Env) -> std::result::Result<Option<(NvBootstrap, &'static str)>, Bad> {
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
    match nvshmem_bootstrap_in(&process_env).map_err(bad_text)? {
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

/// The resolved configuration of one PE.
#[derive(Debug, Clone)]
pub struct Config {
    /// Symmetric heap bytes per PE.
    pub symmetric_size: usize,
    /// `SHMEM_DEBUG` (unset: `NVSHMEM_DEBUG` at `INFO` or above).
    pub debug: bool,
    /// `SHMEM_INFO`.
    pub info: bool,
    /// `SHMEM_VERSION` (unset: `NVSHMEM_DEBUG` at `VERSION` or above).
    pub print_version: bool,
    /// `OXSHMEM_TRANSPORT`.
    pub transport: TransportChoice,
    /// `OXSHMEM_SPIN`.
    pub spin: u32,
    /// `OXSHMEM_BARRIER`: `Some(true)` central, `Some(false)` dissemination, `None` auto
    /// (decided at init, [`Config::central_barrier`] afterwards).
    pub barrier: Option<bool>,
    /// Barriers gather at the team's first member and are released by it (decided at init from
    /// `barrier` and the job's shape), instead of disseminating.
    pub central_barrier: bool,
    /// `OXSHMEM_NODES`.
    pub nodes: NodeGrouping,
    /// `OXSHMEM_SHOW_PEERS`.
    pub show_peers: bool,
    /// `NVSHMEM_DEBUG`.
    pub nvshmem_debug: NvDebug,
}

/// How PEs are grouped into nodes: PEs of one node reach each other through shared memory,
/// PEs of different nodes through the network transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeGrouping {
    /// [`NodeGrouping::Launcher`] when this build has a network transport (and
    /// `OXSHMEM_TRANSPORT` is not `shm`), else [`NodeGrouping::Host`].
    Auto,
    /// PEs with the same host name and boot id.
    Host,
    /// The launcher's placement (`PMI_process_mapping`, `PMIX_NODEID`), split further where
    /// host keys differ (shared memory needs one host); the host grouping when the launcher
    /// says nothing. `mpiexec.hydra -launcher fork -hosts 127.0.0.2,127.0.0.3` so gives two
    /// nodes on one machine, with the network path between them.
    Launcher,
}

/// Which transport to use for peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportChoice {
    /// Shared memory within a host; other hosts need a network transport.
    Auto,
    /// Shared memory for every peer (fails for peers on other hosts).
    Shm,
    /// The network transport for every peer, even on this host (to test the network path).
    Ofi,
}

/// The smallest heap we accept: room for the runtime's own symmetric objects.
pub const MIN_SYMMETRIC_SIZE: usize = 1 << 20;

impl Config {
    /// Reads the environment. `pe` only labels errors.
    pub fn from_env(pe: usize) -> Result<Config> {
        Self::from_lookup(pe, &process_env)
    }

    /// As [`Config::from_env`], reading the environment through `env`.
    pub fn from_lookup(pe: usize, env: Env) -> Result<Config> {
        let bad = |v: &'static str, value: String, reason: String| {
            Error::new(pe, "shmem_init", ErrorKind::Config { var: v, value, reason })
        };
        let refused = |(v, value, reason): Bad| bad(v, value, reason);
        let get = |name: &str| {
            let v = var(name);
            let (value, src) = lookup_in(env, v);
            let shown = match src {
                Source::Env(n) => n,
                Source::Default => v.name,
            };
            (value, shown)
        };
        let (v, n) = get("SHMEM_SYMMETRIC_SIZE");
        let mut symmetric_size = parse_size(&v).map_err(|r| bad(n, v.clone(), r))?;
        if symmetric_size < MIN_SYMMETRIC_SIZE {
            return Err(bad(n, v, format!("must be at least {MIN_SYMMETRIC_SIZE} bytes")));
        }
        let page = page_size();
        symmetric_size =
            symmetric_size.checked_next_multiple_of(page).ok_or_else(|| bad(n, v.clone(), "overflows".into()))?;
        let flag = |name: &str| -> Result<bool> {
            let (v, n) = get(name);
            parse_bool(&v).ok_or_else(|| bad(var(name).name, v, format!("{n}: expected 0 or 1")))
        };
        let nvshmem_debug = nv_debug_in(env).map_err(refused)?;
        let is_set = |name: &str| set_in(env, name).is_some();
        let debug = if is_set("SHMEM_DEBUG") { flag("SHMEM_DEBUG")? } else { nvshmem_debug >= NvDebug::Info };
        let info = flag("SHMEM_INFO")?;
        let print_version =
            if is_set("SHMEM_VERSION") { flag("SHMEM_VERSION")? } else { nvshmem_debug >= NvDebug::Version };
        // The NVSHMEM variables the device layer applies: checked here too, so that a
        // malformed one fails init in programs that never start the device layer.
        if set_in(env, "OXSHMEM_DEVICE_CHANNEL").is_none() {
            flag_in(env, "NVSHMEM_DISABLE_P2P").map_err(refused)?;
        }
        device_remote_in(env).map_err(refused)?;
        let (v, n) = get("OXSHMEM_TRANSPORT");
        let transport = match v.trim() {
            "" | "auto" => TransportChoice::Auto,
            "shm" => TransportChoice::Shm,
            "ofi" if cfg!(feature = "ofi") => TransportChoice::Ofi,
            _ if cfg!(feature = "ofi") => return Err(bad(n, v, "expected auto, shm or ofi".into())),
            _ => {
                return Err(bad(n, v, "expected auto or shm (this build has no network transport)".into()));
            }
        };
        let (v, n) = get("OXSHMEM_SPIN");
        let spin = v.trim().parse().map_err(|_| bad(n, v.clone(), "expected a count".into()))?;
        let (v, n) = get("OXSHMEM_BARRIER");
        let barrier = match v.trim() {
            "" | "auto" => None,
            "central" => Some(true),
            "dissemination" => Some(false),
            _ => return Err(bad(n, v, "expected auto, central or dissemination".into())),
        };
        let (v, n) = get("OXSHMEM_NODES");
        let nodes = match v.trim() {
            "" | "auto" => NodeGrouping::Auto,
            "host" => NodeGrouping::Host,
            "launcher" => NodeGrouping::Launcher,
            _ => return Err(bad(n, v, "expected auto, host or launcher".into())),
        };
        let show_peers = flag("OXSHMEM_SHOW_PEERS")?;
        // Every other variable of the table, whether or not its layer starts in this program.
        check_all_in(env).map_err(refused)?;
        Ok(Config {
            symmetric_size,
            debug,
            info,
            print_version,
            transport,
            spin,
            barrier,
            central_barrier: barrier == Some(true),
            nodes,
            show_peers,
            nvshmem_debug,
        })
    }
}

/// What a set value of variable `name` must look like, for the variables whose layer reads
/// them later or elsewhere (the device layer, the ofi transport, the C library's CUDA back
/// end): checked at every init ([`check_all_in`]), so that a malformed value fails the job
/// whether or not that layer starts. `Err` says what is expected.
fn check_value(name: &str, value: &str) -> std::result::Result<(), String> {
    let t = value.trim();
    let one_of = |choices: &[&str]| {
        if choices.contains(&t) { Ok(()) } else { Err(format!("expected {}", choices.join(", "))) }
    };
    let whole = |min: u64, max: u64, what: &str| match t.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(()),
        _ => Err(format!("expected {what}")),
    };
    if t.is_empty() && name != "OXSHMEM_TIMEOUT" {
        // Set but empty: the layer reads it as unset.
        return Ok(());
    }
    match name {
        "OXSHMEM_TIMEOUT" => match t.parse::<f64>() {
            Ok(s) if s > 0.0 && s < 1e9 => Ok(()),
            _ => Err("expected a positive number of seconds".into()),
        },
        "OXSHMEM_SPIN" => whole(0, u64::from(u32::MAX), "a count of polls"),
        "OXSHMEM_OFI_TEST_BAD_PEER" => whole(0, u64::MAX, "a PE number"),
        "OXSHMEM_DEVICE_CHANNEL" => one_of(&["auto", "p2p", "proxy", "ibgda"]),
        "OXSHMEM_PROXY_SPIN" => match t.to_ascii_lowercase().as_str() {
            "auto" | "1" | "y" | "yes" | "true" | "on" | "0" | "n" | "no" | "false" | "off" => Ok(()),
            _ => Err("expected 1, 0 or auto".into()),
        },
        "OXSHMEM_DEVICE_REMOTE" => one_of(&["proxy", "ibgda"]),
        "OXSHMEM_DEVICE_BLOCKS" => whole(1, 1 << 20, "a whole number of blocks, at least 1"),
        "OXSHMEM_IBGDA_NWQES" => match t.parse::<u64>() {
            Ok(n) if n.is_power_of_two() && (8..=32768).contains(&n) => Ok(()),
            _ => Err("expected a power of two from 8 to 32768".into()),
        },
        "OXSHMEM_IBGDA_NUM_RC_PER_PE" => whole(0, 64, "a number of queues from 1 to 64 (0: 1)"),
        "OXSHMEM_NIC" => one_of(&["auto", "soft", "devx"]),
        "OXSHMEM_NIC_GID_INDEX" => whole(0, 255, "a GID index (0 to 255)"),
        "OXSHMEM_SOFTNIC_LAYOUT" => one_of(&["mlx5", "hns"]),
        "OXSHMEM_SOFTNIC_DOORBELL" => one_of(&["record", "register"]),
        "OXSHMEM_IBGDA_QUEUE_MEM" => one_of(&["host", "hostmem", "auto", "gpu", "gpumem"]),
        "OXSHMEM_IBGDA_NIC_HANDLER" => one_of(&["auto", "gpu", "cpu"]),
        "OXSHMEM_IBGDA_CQ_MODE" => one_of(&["collapsed", "normal"]),
        "OXSHMEM_IBGDA_NCQES" => whole(1, 1 << 24, "a number of CQEs, at least 1"),
        "OXSHMEM_IBGDA_BATCH" => whole(1, 1 << 24, "a number of slots, at least 1"),
        "OXSHMEM_SOFTNIC_NAP_MS" => whole(0, 3_600_000, "milliseconds"),
        "OXSHMEM_CUDA_DEVICE" => whole(0, 1 << 20, "a device ordinal (0, 1, ...)"),
        "OXSHMEM_CUDA_HEAP" => one_of(&["auto", "on", "1", "yes", "off", "0", "no"]),
        _ => Ok(()),
    }
}

/// Checks every variable of [`VARS`] set in `env` with [`check_value`] (the ones init reads
/// itself are checked where it reads them).
fn check_all_in(env: Env) -> std::result::Result<(), Bad> {
    for v in VARS {
        if let (value, Source::Env(n)) = lookup_in(env, v) {
            check_value(v.name, &value).map_err(|why| (n, value.clone(), why))?;
        }
    }
    Ok(())
}

/// Variables of the `OXSHMEM_` family that other parts of the project read (the bootstrap, the
/// tests, build scripts and tools): not configuration of a running PE, so not in [`VARS`], but
/// known, so that setting them draws no warning. A name ending in `*` is a prefix. The third
/// field: whether a warning may suggest it for a misspelt name.
pub const READ_ELSEWHERE: &[(&str, &str, bool)] = &[
    ("OXSHMEM_UNIQUEID", "the unique-id bootstrap (oxshmem-bootstrap): the id of the job to join", true),
    ("OXSHMEM_UID_RANK", "the unique-id bootstrap: this process's rank", true),
    ("OXSHMEM_UID_SIZE", "the unique-id bootstrap: the number of ranks", true),
    ("OXSHMEM_UID_ADDR", "the unique-id bootstrap: the address rank 0 listens on", true),
    ("OXSHMEM_PMI_TOKEN", "oshrun --pmi-port sets it in every PE: the token its PMI-1 client presents", false),
    ("OXSHMEM_STATUS_FD", "oshrun sets it in every PE: the status table of its hang report", false),
    ("OXSHMEM_TEST_*", "the project's tests and their harness (tests/src/lib.rs)", false),
    ("OXSHMEM_TESTS_*", "the test harness: a job's token, the launcher under test", false),
    ("OXSHMEM_BLESS", "tests that regenerate generated files", false),
    ("OXSHMEM_CI_*", ".ci/run: OXSHMEM_CI_ISOLATED (run here, not in a clone), OXSHMEM_CI_STOP_AFTER=setup", false),
    ("OXSHMEM_HIPCC", "bindings/cuda/build-hip.sh and tests/hip_build.rs: the hipcc to build with", false),
    ("OXSHMEM_OSHRUN_ARGS", "benches/c/run.sh: extra oshrun options for oxshmem's runs (--bind-to none)", false),
    ("OXSHMEM_LIBFABRIC_DIR", "runtime/build.rs: where libfabric is installed", false),
    ("OXSHMEM_CUDA_HOME", "scripts/cuda-toolchain.sh: where the CUDA toolkit is", false),
    ("OXSHMEM_CUDA_INCLUDE", "scripts/cuda-toolchain.sh and the tests of nvshmem.h with CUDA's headers", false),
    ("OXSHMEM_CUDA_VERSION", "scripts/cuda-toolchain.sh: the CUDA version to fetch", false),
    ("OXSHMEM_CCCL_VERSION", "scripts/cuda-toolchain.sh", false),
    ("OXSHMEM_EMUCUDA_*", "tests/emucuda/libcuda.c, the emulated CUDA driver of the tests", false),
    ("OXSHMEM_NVCC", "scripts/cuda-toolchain.sh: the nvcc to test with", false),
    ("OXSHMEM_DEVICE_STATE_INCLUDE", "bindings/cuda/build.sh: where device_state.h is (default device/include)", false),
    (
        "OXSHMEM_NVSHMEM_*",
        "scripts/cuda-toolchain.sh --nvshmem: NVIDIA's NVSHMEM, the reference of the GPU check",
        false,
    ),
    ("OXSHMEM_BUILD_*", "oxshmem-tools' build script", false),
];

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

/// The prefixes of the variable families oxshmem answers for.
pub const FAMILIES: [&str; 3] = ["OXSHMEM_", "SHMEM_", "NVSHMEM_"];

/// Whether `name` is a variable that oxshmem or the project reads: a name or alias of
/// [`VARS`], one of [`READ_ELSEWHERE`] or of [`NVSHMEM_NO_EFFECT`].
///
/// ```
/// use oxshmem::config::is_known;
/// assert!(is_known("NVSHMEM_SYMMETRIC_SIZE") && is_known("OXSHMEM_TESTS_JOB") && is_known("NVSHMEM_HCA_LIST"));
/// assert!(!is_known("NVSHMEM_SYMETRIC_SIZE"));
/// ```
pub fn is_known(name: &str) -> bool {
    VARS.iter().any(|v| v.name == name || v.aliases.contains(&name))
        || READ_ELSEWHERE.iter().any(|(n, _, _)| match n.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => *n == name,
        })
        || no_effect_reason(name).is_some()
}

/// The edit distance (insertions, deletions, substitutions) between two names.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The known variable nearest to `name` by [`edit_distance`] (ties: the first declared), and
/// the distance. Candidates: every spelling users may set (test-only ones excluded).
///
/// ```
/// assert_eq!(oxshmem::config::nearest_known("NVSHMEM_SYMETRIC_SIZE"), ("NVSHMEM_SYMMETRIC_SIZE", 1));
/// ```
pub fn nearest_known(name: &str) -> (&'static str, usize) {
    let vars = shown_vars().flat_map(|v| std::iter::once(v.name).chain(v.aliases.iter().copied()));
    let elsewhere = READ_ELSEWHERE.iter().filter(|(_, _, suggest)| *suggest).map(|(n, _, _)| *n);
    let no_effect = NVSHMEM_NO_EFFECT.iter().flat_map(|(_, names)| names.iter().copied());
    vars.chain(elsewhere)
        .chain(no_effect)
        .map(|k| (k, edit_distance(name, k)))
        .min_by_key(|&(_, d)| d)
        .expect("VARS is not empty")
}

/// The warnings PE 0 prints at init for the environment `vars` (name, value), one line each:
/// every `NVSHMEM_*`, `SHMEM_*` or `OXSHMEM_*` variable that is not [`is_known`], with the
/// nearest known name (`did you mean` when it is close); and, at `NVSHMEM_DEBUG=WARN` and
/// above, every NVSHMEM variable set that has no effect here, with why.
///
/// ```
/// let env = [("NVSHMEM_SYMETRIC_SIZE".to_string(), "2G".to_string())];
/// assert_eq!(
///     oxshmem::config::env_warnings(&env),
///     ["oxshmem: warning: NVSHMEM_SYMETRIC_SIZE is not a variable oxshmem reads (did you mean NVSHMEM_SYMMETRIC_SIZE?)"]
/// );
/// ```
pub fn env_warnings(vars: &[(String, String)]) -> Vec<String> {
    let mut names: Vec<&str> = vars
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| FAMILIES.iter().any(|f| k.starts_with(f) && k.len() > f.len()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::new();
    for name in names.iter().copied().filter(|n| !is_known(n)) {
        let (near, d) = nearest_known(name);
        out.push(if d <= 3 || d * 5 <= name.len() {
            format!("oxshmem: warning: {name} is not a variable oxshmem reads (did you mean {near}?)")
        } else {
            format!(
                "oxshmem: warning: {name} is not a variable oxshmem reads (the nearest known one is {near}; \
                 oxshmem-info lists them all)"
            )
        });
    }
    let env = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if nv_debug_in(&env).is_ok_and(|l| l >= NvDebug::Warn) {
        for name in names.iter().copied() {
            if let Some(why) = no_effect_reason(name) {
                out.push(format!("oxshmem: warning: {name} is NVSHMEM's and has no effect in oxshmem ({why})"));
            }
        }
    }
    out
}

/// Prints [`env_warnings`] for this process's environment to standard error, in one write
/// (PE 0 calls it at init).
pub fn print_env_warnings() {
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .collect();
    let lines = env_warnings(&vars);
    if !lines.is_empty() {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    }
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

/// Prints what `SHMEM_INFO`/`SHMEM_VERSION` ask PE 0 for at init ([`crate::info_text`]): to
/// standard error, or, asked for with the NVSHMEM spelling ([`nvshmem_style`]), to standard
/// output, as NVSHMEM does.
pub fn print_info(full: bool) {
    let text = crate::info_text(full);
    if nvshmem_style(full) {
        let mut out = std::io::stdout().lock();
        let _ = std::io::Write::write_all(&mut out, text.as_bytes());
        let _ = std::io::Write::flush(&mut out);
    } else {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    }
}

/// A value as NVSHMEM's listing shows one of type `ty`: `true`/`false`, a size in bytes, a
/// number, or quoted text (a value that does not parse is shown quoted, as set).
fn nvshmem_value(ty: VarType, text: &str) -> String {
    let quoted = || format!("\"{text}\"");
    match ty {
        VarType::Bool => parse_bool(text).map_or_else(quoted, |b| b.to_string()),
        VarType::Size => parse_size(text).map_or_else(|_| quoted(), |b| b.to_string()),
        VarType::Int if !text.trim().is_empty() && text.trim().parse::<i64>().is_ok() => text.trim().to_string(),
        VarType::Int | VarType::Text => quoted(),
    }
}

/// `text` wrapped to lines of at most `width` columns (a longer word stands alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
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

fn nvshmem_settings_in(env: Env) -> Vec<NvshmemSetting> {
    let mut out = Vec::new();
    let invalid = |b: Bad| format!("invalid: {}", bad_text(b));
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
                "NVSHMEM_DISABLE_P2P" => match device_channel_in(env) {
                    Err(b) => invalid(b),
                    Ok(_) if env("OXSHMEM_DEVICE_CHANNEL").is_some() => "OXSHMEM_DEVICE_CHANNEL is set and wins".into(),
                    Ok((ch, "NVSHMEM_DISABLE_P2P")) => format!("OXSHMEM_DEVICE_CHANNEL={ch} for every peer"),
                    Ok(_) => "off: P2P to the peers mapped here".into(),
                },
                _ => match device_remote_in(env) {
                    Err(b) => invalid(b),
                    Ok((ch, n)) if n == name => format!("OXSHMEM_DEVICE_REMOTE={ch}"),
                    Ok(_) if env("OXSHMEM_DEVICE_REMOTE").is_some() => "OXSHMEM_DEVICE_REMOTE is set and wins".into(),
                    Ok((_, n)) if n.starts_with("NVSHMEM_") && value.is_some() => format!("not used: {n} decides"),
                    Ok((ch, _)) => format!("off: the remote channel is OXSHMEM_DEVICE_REMOTE's default, {ch}"),
                },
            }
        };
        out.push(NvshmemSetting { name, value, effect });
    }
    out
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_spin_values() {
        let spin = |v: &str| proxy_spin_in(&env_of(&[("OXSHMEM_PROXY_SPIN", v)]));
        assert_eq!(proxy_spin_in(&env_of(&[])), Ok(None));
        assert_eq!(spin("auto"), Ok(None));
        assert_eq!(spin("1"), Ok(Some(true)));
        assert_eq!(spin("yes"), Ok(Some(true)));
        assert_eq!(spin("0"), Ok(Some(false)));
        assert_eq!(spin("off"), Ok(Some(false)));
        assert_eq!(spin("sometimes"), Err("OXSHMEM_PROXY_SPIN=\"sometimes\": expected 1, 0 or auto".into()));
    }

    /// An environment made of `pairs`.
    fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("3M"), Ok(3 << 20));
        assert_eq!(parse_size("1GB"), Ok(1 << 30));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert!(parse_size("").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999999999T").is_err());
        assert!(parse_size("16777216T").is_err());
    }

    /// NVSHMEM's reading of a size (its documented examples) is the one rule, with nothing
    /// allowed after the multiplier but `B`/`iB`.
    #[test]
    fn nvshmem_sizes() {
        assert_eq!(parse_size("20m"), Ok(20971520));
        assert_eq!(parse_size("3.1M"), Ok(3250586));
        assert_eq!(parse_size(".5m"), Ok(1 << 19));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("1073741824"), Ok(1 << 30));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size(" 2g "), Ok(2 << 30));
        for bad in ["", "lots", "12Q", ".", "1.2.3M", "-1M", "M", "20kk", "1G1", "1M1", "1iB", "1 G", "1GBB"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(parse_size("99999999999999999999T").is_err());
    }

    /// Issue 32, item 7: the three spellings of the heap size read one way. `1G1` and `1M1`
    /// are refused under every spelling (the NVSHMEM one took them as 1 GiB and 1 MiB), with
    /// an error naming the spelling set; decimals are taken under every spelling.
    #[test]
    fn one_size_rule_for_every_spelling() {
        for name in ["SHMEM_SYMMETRIC_SIZE", "NVSHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"] {
            for junk in ["1G1", "1M1", "20kk", "64MB1"] {
                let e = Config::from_lookup(3, &env_of(&[(name, junk)]))
                    .expect_err(&format!("{name}={junk} must be refused"))
                    .to_string();
                assert!(e.contains(name) && e.contains(junk) && e.contains("PE 3"), "{name}={junk}: {e}");
            }
            let c = Config::from_lookup(0, &env_of(&[(name, "2.5M")])).unwrap();
            assert_eq!(c.symmetric_size, (5usize << 19).next_multiple_of(page_size()), "{name}=2.5M");
            let c = Config::from_lookup(0, &env_of(&[(name, "64MiB")])).unwrap();
            assert_eq!(c.symmetric_size, 64 << 20, "{name}=64MiB");
        }
    }

    /// Issue 32, item 12: `SMA_*` is an alias of `SHMEM_*`, so, as an explicit `SHMEM_*`
    /// setting does, it wins over the NVSHMEM spelling; no variable lists an NVSHMEM alias
    /// before another.
    #[test]
    fn sma_spellings_win_over_nvshmem_ones() {
        let both = [("NVSHMEM_SYMMETRIC_SIZE", "4M"), ("SMA_SYMMETRIC_SIZE", "2M")];
        assert_eq!(Config::from_lookup(0, &env_of(&both)).unwrap().symmetric_size, 2 << 20);
        let both = [("NVSHMEM_INFO", "1"), ("SMA_INFO", "0")];
        assert!(!Config::from_lookup(0, &env_of(&both)).unwrap().info);
        let both = [("NVSHMEM_VERSION", "1"), ("SMA_VERSION", "0")];
        assert!(!Config::from_lookup(0, &env_of(&both)).unwrap().print_version);
        for v in VARS {
            let first_nv = v.aliases.iter().position(|a| a.starts_with("NVSHMEM_"));
            let last_other = v.aliases.iter().rposition(|a| !a.starts_with("NVSHMEM_"));
            if let (Some(nv), Some(other)) = (first_nv, last_other) {
                assert!(other < nv, "{}: an NVSHMEM alias before {}", v.name, v.aliases[other]);
            }
        }
    }

    /// Issue 32, item 11: every variable of the table is checked at init, whether or not its
    /// layer starts: values the device layer, the ofi transport or the CUDA back end would
    /// refuse (or silently replace) fail the runtime's init, naming the variable.
    #[test]
    fn every_variable_is_checked_at_init() {
        for (name, bad) in [
            ("OXSHMEM_TIMEOUT", "-5"),
            ("OXSHMEM_TIMEOUT", "abc"),
            ("OXSHMEM_TIMEOUT", ""),
            ("OXSHMEM_IBGDA_NWQES", "3"),
            ("OXSHMEM_IBGDA_NWQES", "65536"),
            ("OXSHMEM_CUDA_DEVICE", "-3"),
            ("OXSHMEM_CUDA_HEAP", "maybe"),
            ("OXSHMEM_DEVICE_CHANNEL", "carrier-pigeon"),
            ("OXSHMEM_DEVICE_BLOCKS", "0"),
            ("OXSHMEM_IBGDA_NUM_RC_PER_PE", "65"),
            ("NVSHMEM_IBGDA_NUM_RC_PER_PE", "x"),
            ("OXSHMEM_NIC", "hardware"),
            ("OXSHMEM_IBGDA_CQ_MODE", "fast"),
            ("OXSHMEM_SOFTNIC_NAP_MS", "-1"),
            ("OXSHMEM_PROXY_SPIN", "sometimes"),
            ("OXSHMEM_NIC_GID_INDEX", "300"),
        ] {
            let e = Config::from_lookup(2, &env_of(&[(name, bad)]))
                .expect_err(&format!("{name}={bad:?} must fail init"))
                .to_string();
            assert!(e.starts_with("PE 2: shmem_init: ") && e.contains(&format!("{name}={bad:?}")), "{e}");
        }
        for (name, good) in [
            ("OXSHMEM_TIMEOUT", "0.5"),
            ("OXSHMEM_IBGDA_NWQES", "8"),
            ("OXSHMEM_CUDA_DEVICE", "1"),
            ("OXSHMEM_CUDA_HEAP", "off"),
            ("OXSHMEM_DEVICE_CHANNEL", "proxy"),
            ("OXSHMEM_IBGDA_NCQES", ""),
            ("OXSHMEM_PROXY_SPIN", "Auto"),
            // The bootstrap reads its own variable, any case (pmi, single too).
            ("OXSHMEM_BOOTSTRAP", "PMI"),
            ("OXSHMEM_NIC_GID_INDEX", "3"),
        ] {
            assert!(Config::from_lookup(0, &env_of(&[(name, good)])).is_ok(), "{name}={good:?}");
        }
        // Every Device variable has a check (a new one must get its rule here).
        let unchecked: Vec<&str> = VARS
            .iter()
            .filter(|v| v.group == Group::Device && check_value(v.name, "\u{1}not a value").is_ok())
            .map(|v| v.name)
            .collect();
        assert!(unchecked.is_empty(), "device variables without a check: {unchecked:?}");
    }

    /// Issue 32, item 11: `OXSHMEM_CUDA_HEAP` is in the table, and a misspelling of it (or of
    /// any `OXSHMEM_CUDA_` variable) draws a warning; the toolchain script's variables do not.
    #[test]
    fn cuda_heap_is_declared_and_its_misspellings_warned() {
        assert!(shown_vars().any(|v| v.name == "OXSHMEM_CUDA_HEAP"));
        assert!(markdown_table().contains("| `OXSHMEM_CUDA_HEAP` | `auto` |"));
        assert!(!is_known("OXSHMEM_CUDA_HAEP"));
        assert!(is_known("OXSHMEM_CUDA_HOME") && is_known("OXSHMEM_CUDA_HEAP"));
        let w = env_warnings(&[("OXSHMEM_CUDA_HAEP".into(), "on".into())]);
        assert!(w.iter().any(|l| l.contains("OXSHMEM_CUDA_HAEP") && l.contains("OXSHMEM_CUDA_HEAP")), "{w:?}");
    }

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

    #[test]
    fn bools() {
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }

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
            let got = map(pairs).unwrap_or_else(|e| panic!("{pairs:?}: {}", bad_text(e)));
            assert_eq!(got.map(|g| g.0), want, "{pairs:?}");
            assert_eq!(got.map_or("", |g| g.1), by, "{pairs:?}");
        }
        let e = bad_text(map(&[("NVSHMEM_BOOTSTRAP", "plugin")]).unwrap_err());
        assert!(e.contains("NVSHMEM_BOOTSTRAP=\"plugin\"") && e.contains("no bootstrap plugins"), "{e}");
        let e = bad_text(map(&[("NVSHMEM_BOOTSTRAP_PMI", "PMI-3")]).unwrap_err());
        assert!(e.contains("NVSHMEM_BOOTSTRAP_PMI=\"PMI-3\": expected PMI, PMI-2 or PMIX"), "{e}");
        assert!(map(&[("NVSHMEM_BOOTSTRAP", "carrier-pigeon")]).is_err());
    }

    /// `NVSHMEM_DISABLE_P2P`, `NVSHMEM_IB_ENABLE_IBGDA` and `NVSHMEM_REMOTE_TRANSPORT` onto the
    /// device layer's channels; oxshmem's own variables win.
    #[test]
    fn nvshmem_device_mapping() {
        let remote = |pairs: &[(&str, &str)]| device_remote_in(&env_of(pairs)).map_err(bad_text);
        let channel = |pairs: &[(&str, &str)]| device_channel_in(&env_of(pairs)).map_err(bad_text);
        let s = |v: &str, n: &'static str| Ok((v.to_string(), n));
        assert_eq!(remote(&[]), s("proxy", "OXSHMEM_DEVICE_REMOTE"));
        assert_eq!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "1")]), s("ibgda", "NVSHMEM_IB_ENABLE_IBGDA"));
        assert_eq!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "true")]), s("ibgda", "NVSHMEM_IB_ENABLE_IBGDA"));
        assert_eq!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "0")]), s("proxy", "OXSHMEM_DEVICE_REMOTE"));
        for (t, ch) in NVSHMEM_REMOTE_TRANSPORTS {
            assert_eq!(remote(&[("NVSHMEM_REMOTE_TRANSPORT", t)]), s(ch, "NVSHMEM_REMOTE_TRANSPORT"), "{t}");
        }
        assert_eq!(remote(&[("NVSHMEM_REMOTE_TRANSPORT", "UCX")]), s("proxy", "NVSHMEM_REMOTE_TRANSPORT"));
        // IBGDA enabled beats the remote transport (DeepEP sets both, with `none`).
        let both = [("NVSHMEM_IB_ENABLE_IBGDA", "1"), ("NVSHMEM_REMOTE_TRANSPORT", "none")];
        assert_eq!(remote(&both), s("ibgda", "NVSHMEM_IB_ENABLE_IBGDA"));
        let own = [("NVSHMEM_IB_ENABLE_IBGDA", "1"), ("OXSHMEM_DEVICE_REMOTE", "proxy")];
        assert_eq!(remote(&own), s("proxy", "OXSHMEM_DEVICE_REMOTE"));
        assert!(remote(&[("NVSHMEM_REMOTE_TRANSPORT", "smoke")]).unwrap_err().contains("expected ibrc, ucx"));
        assert!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "sure")]).unwrap_err().contains("NVSHMEM_IB_ENABLE_IBGDA"));

        assert_eq!(channel(&[]), s("auto", "OXSHMEM_DEVICE_CHANNEL"));
        assert_eq!(channel(&[("NVSHMEM_DISABLE_P2P", "1")]), s("proxy", "NVSHMEM_DISABLE_P2P"));
        let p2p_off_ibgda = [("NVSHMEM_DISABLE_P2P", "1"), ("NVSHMEM_IB_ENABLE_IBGDA", "1")];
        assert_eq!(channel(&p2p_off_ibgda), s("ibgda", "NVSHMEM_DISABLE_P2P"));
        let own = [("NVSHMEM_DISABLE_P2P", "1"), ("OXSHMEM_DEVICE_CHANNEL", "p2p")];
        assert_eq!(channel(&own), s("p2p", "OXSHMEM_DEVICE_CHANNEL"));
        let e = channel(&[("NVSHMEM_DISABLE_P2P", "1"), ("OXSHMEM_DEVICE_REMOTE", "pigeon")]).unwrap_err();
        assert!(e.contains("OXSHMEM_DEVICE_REMOTE=\"pigeon\""), "{e}");
        // Init checks them even where the device layer is never started.
        let e = Config::from_lookup(0, &env_of(&[("NVSHMEM_REMOTE_TRANSPORT", "smoke")])).unwrap_err().to_string();
        assert!(e.contains("NVSHMEM_REMOTE_TRANSPORT=\"smoke\""), "{e}");
        assert!(Config::from_lookup(0, &env_of(&[("NVSHMEM_DISABLE_P2P", "2")])).is_err());
    }

    #[test]
    fn the_barrier_pattern_is_read_and_checked() {
        let cfg = |v: &str| Config::from_lookup(0, &env_of(&[("OXSHMEM_BARRIER", v)]));
        assert_eq!(cfg("auto").unwrap().barrier, None);
        assert_eq!(cfg("central").unwrap().barrier, Some(true));
        assert!(cfg("central").unwrap().central_barrier);
        let d = cfg("dissemination").unwrap();
        assert_eq!((d.barrier, d.central_barrier), (Some(false), false));
        let e = cfg("ring").unwrap_err().to_string();
        assert!(e.contains("OXSHMEM_BARRIER=\"ring\"") && e.contains("expected auto, central or dissemination"), "{e}");
    }

    #[test]
    fn edit_distances_and_nearest_names() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("NVSHMEM_SYMETRIC_SIZE", "NVSHMEM_SYMMETRIC_SIZE"), 1);
        assert_eq!(nearest_known("NVSHMEM_SYMETRIC_SIZE"), ("NVSHMEM_SYMMETRIC_SIZE", 1));
        assert_eq!(nearest_known("SHMEM_SYMMETRICSIZE"), ("SHMEM_SYMMETRIC_SIZE", 1));
        assert_eq!(nearest_known("OXSHMEM_TIMEOUTS"), ("OXSHMEM_TIMEOUT", 1));
        assert_eq!(nearest_known("OXSHMEM_DEVICE_CHANEL").0, "OXSHMEM_DEVICE_CHANNEL");
        assert_eq!(nearest_known("NVSHMEM_IB_ENABLE_IBGDAA").0, "NVSHMEM_IB_ENABLE_IBGDA");
        assert_eq!(nearest_known("OXSHMEM_UID_RANKS").0, "OXSHMEM_UID_RANK");
        assert_eq!(nearest_known("NVSHMEM_HCA_LST").0, "NVSHMEM_HCA_LIST");
        // Test-only spellings are never suggested.
        assert_ne!(nearest_known("OXSHMEM_OFI_TEST_BAD_PEERS").0, "OXSHMEM_OFI_TEST_BAD_PEER");
    }

    #[test]
    fn warnings_name_unknown_variables_once_each() {
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let w = env_warnings(&owned(&[
            ("NVSHMEM_SYMETRIC_SIZE", "2G"),
            ("PATH", "/bin"),
            ("SHMEM_SYMMETRIC_SIZE", "1G"),
            ("NVSHMEM_INFO", "1"),
            ("OXSHMEM_TESTS_JOB", "x"),
            ("OXSHMEM_TEST_TRANSPORT", "ofi"),
            ("OXSHMEM_UNIQUEID", "oxs1:x"),
            ("OXSHMEM_CUDA_INCLUDE", "/x"),
            ("NVSHMEM_HCA_LIST", "mlx5_0:1"),
            ("SHMEM_OFI_PROVIDER_NAME", "verbs"),
            ("NVSHMEM_SYMETRIC_SIZE", "2G"),
            ("SHMEM_", "prefix only"),
            ("SMA_FOO", "not ours"),
        ]));
        assert_eq!(
            w,
            [
                "oxshmem: warning: NVSHMEM_SYMETRIC_SIZE is not a variable oxshmem reads (did you mean NVSHMEM_SYMMETRIC_SIZE?)",
                "oxshmem: warning: SHMEM_OFI_PROVIDER_NAME is not a variable oxshmem reads (the nearest known one is \
                 OXSHMEM_OFI_SRC_ADDR; oxshmem-info lists them all)",
            ]
        );
        // At NVSHMEM_DEBUG=WARN, the NVSHMEM variables without effect are named too.
        let w = env_warnings(&owned(&[
            ("NVSHMEM_DEBUG", "WARN"),
            ("NVSHMEM_HCA_LIST", "mlx5_0:1"),
            ("NVSHMEM_DISABLE_P2P", "1"),
        ]));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("oxshmem: warning: NVSHMEM_HCA_LIST is NVSHMEM's and has no effect in oxshmem (NIC"),
            "{w:?}"
        );
        assert!(env_warnings(&owned(&[("NVSHMEM_DEBUG", "VERSION"), ("NVSHMEM_HCA_LIST", "x")])).is_empty());
    }

    /// Every `OXSHMEM_*`, `SHMEM_*` or `NVSHMEM_*` variable that a source file, script or tool of
    /// the repository reads from the environment is known, so that no warning fires for one of
    /// the project's own.
    #[test]
    fn every_variable_the_project_reads_is_known() {
        use std::path::Path;
        fn walk(dir: &Path, found: &mut Vec<(String, String)>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                        walk(&path, found);
                    }
                    continue;
                }
                let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
                let shell = ext == "sh" || (name == "run" && dir.file_name().is_some_and(|d| d == ".ci"));
                if !(shell || matches!(ext, "rs" | "c" | "cc" | "py")) {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&path) else { continue };
                let markers: &[&str] = if shell {
                    &["${", "$"]
                } else {
                    &[
                        "var(\"",
                        "var_os(\"",
                        "value_of(\"",
                        "var_named(\"",
                        "getenv(\"",
                        "environ.get(\"",
                        "environ[\"",
                        "&str = \"",
                    ]
                };
                for m in markers {
                    for (at, _) in text.match_indices(m) {
                        let rest = &text[at + m.len()..];
                        let end = rest.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'));
                        let word = &rest[..end.unwrap_or(rest.len())];
                        if FAMILIES.iter().any(|f| word.starts_with(f) && word.len() > f.len()) {
                            found.push((word.to_string(), path.display().to_string()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")), &mut found);
        assert!(found.iter().any(|(n, _)| n == "OXSHMEM_UNIQUEID"), "the scan finds the bootstrap's reads");
        assert!(found.iter().any(|(n, _)| n == "OXSHMEM_TESTS_JOB"), "the scan finds the harness's variables");
        let unknown: Vec<&(String, String)> = found.iter().filter(|(n, _)| !is_known(n)).collect();
        assert!(
            unknown.is_empty(),
            "read by the project but unknown to oxshmem::config (declare them in VARS or READ_ELSEWHERE): {unknown:?}"
        );
    }

    /// `docs/nvshmem.md` names every NVSHMEM variable oxshmem knows, read or not.
    #[test]
    fn the_porting_guide_names_every_nvshmem_variable() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/nvshmem.md"))
            .expect("reading docs/nvshmem.md");
        let read = shown_vars().filter_map(|v| v.nvshmem_name());
        let ignored = NVSHMEM_NO_EFFECT.iter().flat_map(|(_, n)| n.iter().copied());
        let missing: Vec<&str> = read.chain(ignored).filter(|n| !doc.contains(&format!("`{n}`"))).collect();
        assert!(missing.is_empty(), "docs/nvshmem.md does not name {missing:?}");
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
        assert_eq!(
            effect(&[("NVSHMEM_DISABLE_P2P", "1")], "NVSHMEM_DISABLE_P2P"),
            "OXSHMEM_DEVICE_CHANNEL=proxy for every peer"
        );
        assert!(effect(&[], "NVSHMEM_DISABLE_P2P").starts_with("off"));
        assert_eq!(
            effect(&[("NVSHMEM_IB_ENABLE_IBGDA", "1")], "NVSHMEM_IB_ENABLE_IBGDA"),
            "OXSHMEM_DEVICE_REMOTE=ibgda"
        );
        let both = [("NVSHMEM_IB_ENABLE_IBGDA", "1"), ("NVSHMEM_REMOTE_TRANSPORT", "ibrc")];
        assert_eq!(effect(&both, "NVSHMEM_REMOTE_TRANSPORT"), "not used: NVSHMEM_IB_ENABLE_IBGDA decides");
        assert!(effect(&[("NVSHMEM_DEBUG", "INFO")], "NVSHMEM_DEBUG").contains("SHMEM_DEBUG is on"));
        assert!(effect(&[("NVSHMEM_DEBUG", "LOUD")], "NVSHMEM_DEBUG").starts_with("invalid: "));
        assert_eq!(effect(&[], "NVSHMEM_IBGDA_NUM_RC_PER_PE"), "same as OXSHMEM_IBGDA_NUM_RC_PER_PE");
    }
}
