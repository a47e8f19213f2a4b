//! Configuration, read once at init from the environment.
//!
//! Every variable is declared once in [`VARS`] (name, aliases, default, help), as Sandia
//! OpenSHMEM's `SHMEM_INTERNAL_ENV_DEF` does, so that `oxshmem-info` can print the table with
//! each value's source. `NVSHMEM_*` spellings are accepted as aliases of the `SHMEM_*` ones.

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
}

/// Which layer reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// The runtime (`oxshmem`): every program.
    Runtime,
    /// The device layer (`oxshmem-device`): programs that call `Device::init`.
    Device,
    /// Fault injection for the project's own tests; never shown.
    Testing,
}

impl Var {
    /// Whether users see it (in `SHMEM_INFO`, `oxshmem-info` and `docs/configuration.md`).
    pub fn shown(&self) -> bool {
        self.group != Group::Testing
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
        aliases: &["NVSHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"],
        default: "1G",
        help: "bytes of symmetric heap per PE (K/M/G/T suffixes, powers of 1024, minimum 1M). Address space is reserved; memory is committed only as it is touched. The runtime's own symmetric objects (team slots, mailboxes) live beyond this size and never take space from it.",
        group: Group::Runtime,
    },
    Var {
        name: "SHMEM_DEBUG",
        aliases: &["NVSHMEM_DEBUG", "SMA_DEBUG"],
        default: "0",
        help: "extra checks: every collective allocation verifies through the launcher that all PEs asked for the same size",
        group: Group::Runtime,
    },
    Var {
        name: "SHMEM_INFO",
        aliases: &["NVSHMEM_INFO", "SMA_INFO"],
        default: "0",
        help: "PE 0 prints the version and this table at init",
        group: Group::Runtime,
    },
    Var {
        name: "SHMEM_VERSION",
        aliases: &["NVSHMEM_VERSION", "SMA_VERSION"],
        default: "0",
        help: "PE 0 prints the version at init",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_TRANSPORT",
        aliases: &[],
        default: "auto",
        help: "`auto`: shared memory within a host, the network transport (`ofi`, a build feature) across hosts; `shm`: shared memory only; `ofi`: the network path for every peer, even on one host",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_NODES",
        aliases: &[],
        default: "auto",
        help: "how PEs are grouped into nodes — shared memory inside a node, the network transport between nodes. `host`: same host name and boot id. `launcher`: the launcher's placement (`PMI_process_mapping` of Hydra and Slurm, PMIx's node ids), split further where host keys differ, since shared memory needs one host; the host grouping when the launcher says nothing. `auto`: `launcher` when the build has a network transport (feature `ofi`) and `OXSHMEM_TRANSPORT` is not `shm`, else `host`. So `mpiexec.hydra -launcher fork -hosts 127.0.0.2,127.0.0.3` gives two nodes on one machine with ofi between them; without a network transport, `launcher` then fails at init naming a peer no transport reaches",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_SHOW_PEERS",
        aliases: &[],
        default: "0",
        help: "`1`: every PE prints one line to stderr at init: its node, and which transport reaches which PEs (`oxshmem: PE 1: node 1 of 2 (host (launcher node 1)): shm 1,3; ofi 0,2 (tcp;ofi_rxm, domain tcp, endpoint 127.0.0.3:41000); unreachable -`)",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_BOOTSTRAP",
        aliases: &[],
        default: "auto",
        help: "how PEs find each other; see below",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_TIMEOUT",
        aliases: &[],
        default: "60",
        help: "seconds a wait for a peer may last (the ofi transport, device-side waits and channels; the unique-id bootstrap defaults to `120`) before it fails with an error naming the peer and the step",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_OFI_SRC_ADDR",
        aliases: &[],
        default: "",
        help: "the address the ofi endpoint binds to (e.g. 127.0.0.2 for one of several \"hosts\" on one machine). Unset: under Hydra, the PE's host name when it is a loopback address (`MPIR_CVAR_CH3_INTERFACE_HOSTNAME`, so `-hosts 127.0.0.2,127.0.0.3` binds each group to its own address); otherwise the provider's choice",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_OFI_TEST_BAD_PEER",
        aliases: &[],
        default: "",
        help: "testing only: a PE number whose exchanged ofi address this PE corrupts, to exercise unreachable-peer errors",
        group: Group::Testing,
    },
    Var {
        name: "OXSHMEM_SPIN",
        aliases: &[],
        default: "1000",
        help: "polls a waiting PE spins before it starts yielding the CPU",
        group: Group::Runtime,
    },
    Var {
        name: "OXSHMEM_DEVICE_CHANNEL",
        aliases: &[],
        default: "auto",
        help: "device-initiated operations: `p2p` (mapped peers, direct loads/stores/atomics), `proxy` (request ring drained by a host proxy thread), `ibgda` (mlx5 work queues the device thread writes and rings itself, consumed by the software NIC); `auto` picks P2P for mapped peers and `OXSHMEM_DEVICE_REMOTE` for the rest",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_DEVICE_REMOTE",
        aliases: &[],
        default: "proxy",
        help: "with `OXSHMEM_DEVICE_CHANNEL=auto`: the channel of peers whose heap is not mapped here, `proxy` or `ibgda`",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_DEVICE_BLOCKS",
        aliases: &[],
        default: "4",
        help: "blocks of a CPU-back-end kernel that run at once",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_IBGDA_NWQES",
        aliases: &[],
        default: "2048",
        help: "slots (64 B) per IBGDA send queue, a power of two from 8 to 32768",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_IBGDA_NUM_RC_PER_PE",
        aliases: &[],
        default: "8",
        help: "IBGDA queues per peer; a device thread uses queue `warp % N`",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_IBGDA_CQ_MODE",
        aliases: &[],
        default: "collapsed",
        help: "`collapsed` (one CQE, always overwritten, as NVSHMEM creates it) or `normal` (a ring with owner bits and a consumer index)",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_IBGDA_NCQES",
        aliases: &[],
        default: "",
        help: "CQEs of a `normal` completion queue; unset: the same as `OXSHMEM_IBGDA_NWQES`",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_IBGDA_BATCH",
        aliases: &[],
        default: "32",
        help: "a producer rings the doorbell at least every this many slots",
        group: Group::Device,
    },
    Var {
        name: "OXSHMEM_SOFTNIC_NAP_MS",
        aliases: &[],
        default: "50",
        help: "how long the idle software NIC thread sleeps before it looks at the doorbells again; doorbells rung meanwhile are served by the ringing threads, so this is a safety net",
        group: Group::Device,
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

/// Looks a variable up: its value and where it came from.
pub fn lookup(var: &Var) -> (String, Source) {
    for name in std::iter::once(&var.name).chain(var.aliases.iter()) {
        if let Ok(v) = std::env::var(name) {
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

/// Parses a size with an optional K/M/G/T suffix (powers of 1024; a trailing `B` or `iB` is
/// accepted): `"64K"`, `"1G"`, `"1536M"`, `"4096"`.
///
/// ```
/// assert_eq!(oxshmem::config::parse_size("64K"), Ok(65536));
/// assert_eq!(oxshmem::config::parse_size("1g"), Ok(1 << 30));
/// assert!(oxshmem::config::parse_size("12Q").is_err());
/// ```
pub fn parse_size(text: &str) -> std::result::Result<usize, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix("ib"))
        .or_else(|| t.strip_suffix('B'))
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: usize = digits
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size (a number with an optional K, M, G or T suffix)"))?;
    n.checked_mul(1usize << shift).ok_or_else(|| format!("{text:?} overflows"))
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "no" | "n" | "false" | "off" => Some(false),
        "1" | "yes" | "y" | "true" | "on" => Some(true),
        _ => None,
    }
}

/// The resolved configuration of one PE.
#[derive(Debug, Clone)]
pub struct Config {
    /// Symmetric heap bytes per PE.
    pub symmetric_size: usize,
    /// `SHMEM_DEBUG`.
    pub debug: bool,
    /// `SHMEM_INFO`.
    pub info: bool,
    /// `SHMEM_VERSION`.
    pub print_version: bool,
    /// `OXSHMEM_TRANSPORT`.
    pub transport: TransportChoice,
    /// `OXSHMEM_SPIN`.
    pub spin: u32,
    /// `OXSHMEM_NODES`.
    pub nodes: NodeGrouping,
    /// `OXSHMEM_SHOW_PEERS`.
    pub show_peers: bool,
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
        let bad = |v: &'static str, value: String, reason: String| {
            Error::new(pe, "shmem_init", ErrorKind::Config { var: v, value, reason })
        };
        let get = |name: &str| {
            let v = var(name);
            let (value, src) = lookup(v);
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
        let debug = flag("SHMEM_DEBUG")?;
        let info = flag("SHMEM_INFO")?;
        let print_version = flag("SHMEM_VERSION")?;
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
        let (v, n) = get("OXSHMEM_NODES");
        let nodes = match v.trim() {
            "" | "auto" => NodeGrouping::Auto,
            "host" => NodeGrouping::Host,
            "launcher" => NodeGrouping::Launcher,
            _ => return Err(bad(n, v, "expected auto, host or launcher".into())),
        };
        let show_peers = flag("OXSHMEM_SHOW_PEERS")?;
        Ok(Config { symmetric_size, debug, info, print_version, transport, spin, nodes, show_peers })
    }
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
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("99999999999999999999T").is_err());
        assert!(parse_size("16777216T").is_err());
    }

    /// `docs/configuration.md` shows exactly the generated table, between its markers.
    #[test]
    fn the_documented_table_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
        let doc = std::fs::read_to_string(path).expect("reading docs/configuration.md");
        let (begin, end) = ("<!-- vars:begin (generated by oxshmem::config::markdown_table) -->\n", "<!-- vars:end -->");
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
        let mut names: Vec<&str> = VARS.iter().flat_map(|v| std::iter::once(&v.name).chain(v.aliases)).copied().collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "a name is declared twice");
    }

    #[test]
    fn bools() {
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }
}
