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
}

/// Every variable the runtime reads.
pub const VARS: &[Var] = &[
    Var {
        name: "SHMEM_SYMMETRIC_SIZE",
        aliases: &["NVSHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"],
        default: "1G",
        help: "bytes of symmetric heap per PE (K/M/G/T suffixes, powers of 1024); address space is reserved, memory is committed as touched",
    },
    Var {
        name: "SHMEM_DEBUG",
        aliases: &["NVSHMEM_DEBUG", "SMA_DEBUG"],
        default: "0",
        help: "1: extra checks (collective allocation arguments agree across PEs)",
    },
    Var {
        name: "SHMEM_INFO",
        aliases: &["NVSHMEM_INFO", "SMA_INFO"],
        default: "0",
        help: "1: PE 0 prints the resolved configuration at init",
    },
    Var {
        name: "SHMEM_VERSION",
        aliases: &["NVSHMEM_VERSION", "SMA_VERSION"],
        default: "0",
        help: "1: PE 0 prints the library version at init",
    },
    Var {
        name: "OXSHMEM_TRANSPORT",
        aliases: &[],
        default: "auto",
        help: "transport for every peer: auto (shm within a host, ofi across hosts), shm, or ofi (the network path even within a host)",
    },
    Var {
        name: "OXSHMEM_NODES",
        aliases: &[],
        default: "auto",
        help: "how PEs are grouped into nodes (shared memory within one, the network between them): host (same host name and boot id), launcher (the launcher's placement, split further by host), auto (launcher when this build has a network transport, else host)",
    },
    Var {
        name: "OXSHMEM_SHOW_PEERS",
        aliases: &[],
        default: "0",
        help: "1: every PE prints its node and which transport reaches each peer at init (stderr)",
    },
    Var {
        name: "OXSHMEM_BOOTSTRAP",
        aliases: &[],
        default: "auto",
        help: "bootstrap: auto (uid, PMI-1/PMI-2, PMIx or singleton, from the environment), pmi1, pmi2, pmix, uid, singleton",
    },
    Var {
        name: "OXSHMEM_TIMEOUT",
        aliases: &[],
        default: "60",
        help: "seconds a wait for a peer may last (ofi transport, device channels, unique-id bootstrap) before it fails with an error naming the peer",
    },
    Var {
        name: "OXSHMEM_OFI_SRC_ADDR",
        aliases: &[],
        default: "",
        help: "ofi: address or host name this PE's endpoint binds to (fi_getinfo node with FI_SOURCE); empty: the loopback address Hydra names the PE's host by (MPIR_CVAR_CH3_INTERFACE_HOSTNAME=127.x.y.z), else the provider's choice",
    },
    Var {
        name: "OXSHMEM_OFI_TEST_BAD_PEER",
        aliases: &[],
        default: "",
        help: "testing only: a PE number whose exchanged ofi address this PE corrupts, to exercise unreachable-peer errors",
    },
    Var {
        name: "OXSHMEM_SPIN",
        aliases: &[],
        default: "1000",
        help: "polls a waiting PE spins before it starts yielding the CPU (default 1000; 0 when a host runs more PEs than it has cores)",
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
pub fn var_named(name: &str) -> &'static Var {
    var(name)
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

    #[test]
    fn bools() {
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }
}
