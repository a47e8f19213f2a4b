//! The values' rules, and the resolved [`Config`] of a PE with the checks every init makes.

use crate::error::{Error, ErrorKind, Result};

use super::host::page_size;
use super::nvshmem::{NvDebug, nv_debug_in};
use super::table::{Env, Source, VARS, layers, lookup_in, process_env, set_in, var};

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

/// A boolean value: `0`/`1`, `no`/`yes`, `false`/`true`, `off`/`on` (any case; empty is false).
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "no" | "n" | "false" | "off" => Some(false),
        "1" | "yes" | "y" | "true" | "on" => Some(true),
        _ => None,
    }
}

/// A refused value: the variable (the spelling set), the value and why.
pub type Refused = (&'static str, String, String);
pub(super) type Bad = Refused;

/// The message of a [`Refused`] value, as init and the device layer word it:
/// `environment variable NAME="value": why`.
pub fn refused_text((var, value, reason): Refused) -> String {
    format!("environment variable {var}={value:?}: {reason}")
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
    /// This host runs more of the job's PEs than it has CPUs for them (decided at init): a
    /// wait that lasts naps early, as the PE it waits for needs the core.
    pub crowded: bool,
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
            // NVSHMEM keeps its own state beside the heap it is asked for, and its programs ask
            // for small heaps (its perftests: twice the largest message); ours lives in the heap,
            // so an NVSHMEM program gets at least the minimum. OpenSHMEM's spelling is refused.
            if !n.starts_with("NVSHMEM_") {
                return Err(bad(n, v, format!("must be at least {MIN_SYMMETRIC_SIZE} bytes")));
            }
            symmetric_size = MIN_SYMMETRIC_SIZE;
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
            crowded: false,
            barrier,
            central_barrier: barrier == Some(true),
            nodes,
            show_peers,
            nvshmem_debug,
        })
    }
}

/// What a set value of variable `name` must look like, for the runtime's variables that are
/// read later or elsewhere (the ofi transport, the device layer's waits): checked at every init
/// ([`check_all_in`]), so that a malformed value fails the job whether or not their reader
/// starts. `Err` says what is expected. The device layer's variables have their rules in that
/// layer (`oxshmem_device::config`), checked at init once it is registered.
pub(super) fn check_value(name: &str, value: &str) -> std::result::Result<(), String> {
    let t = value.trim();
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
        _ => Ok(()),
    }
}

/// Checks every variable of [`VARS`] set in `env` with [`check_value`] (the ones init reads
/// itself are checked where it reads them), then each registered layer's with its own check.
pub(super) fn check_all_in(env: Env) -> std::result::Result<(), Bad> {
    for v in VARS {
        if let (value, Source::Env(n)) = lookup_in(env, v) {
            check_value(v.name, &value).map_err(|why| (n, value.clone(), why))?;
        }
    }
    for layer in layers() {
        (layer.check)(env)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env::env_of;

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

    /// A heap below the minimum: OpenSHMEM's spelling is refused, NVSHMEM's (its perftests ask
    /// for twice their largest message) gets the minimum.
    #[test]
    fn small_heaps() {
        let e = Config::from_lookup(0, &env_of(&[("SHMEM_SYMMETRIC_SIZE", "4096")])).unwrap_err();
        assert!(e.to_string().contains("must be at least 1048576 bytes"), "{e}");
        let c = Config::from_lookup(0, &env_of(&[("NVSHMEM_SYMMETRIC_SIZE", "128")])).expect("NVSHMEM's small heap");
        assert_eq!(c.symmetric_size, MIN_SYMMETRIC_SIZE);
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
            ("OXSHMEM_OFI_TEST_BAD_PEER", "x"),
        ] {
            let e = Config::from_lookup(2, &env_of(&[(name, bad)]))
                .expect_err(&format!("{name}={bad:?} must fail init"))
                .to_string();
            assert!(e.starts_with("PE 2: shmem_init: ") && e.contains(&format!("{name}={bad:?}")), "{e}");
        }
        for (name, good) in [
            ("OXSHMEM_TIMEOUT", "0.5"),
            // The bootstrap reads its own variable, any case (pmi, single too).
            ("OXSHMEM_BOOTSTRAP", "PMI"),
        ] {
            assert!(Config::from_lookup(0, &env_of(&[(name, good)])).is_ok(), "{name}={good:?}");
        }
    }

    #[test]
    fn bools() {
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
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
}
