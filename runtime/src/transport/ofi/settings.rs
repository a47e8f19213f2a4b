//! How to build the transport ([`Options`]): the provider choice and source address, the
//! timeout, the polling budgets and the test hooks. [`OfiTransport::new`] reads them from the
//! environment (`OXSHMEM_TIMEOUT`, `OXSHMEM_OFI_SRC_ADDR`, `OXSHMEM_OFI_TEST_BAD_PEER`, and a
//! loopback host from MPICH's Hydra); unit tests set them directly.
//!
//! [`OfiTransport::new`]: super::OfiTransport::new

use std::time::Duration;

use super::fabric::Choice;
use crate::error::{Error, ErrorKind, Result};

/// How to build the transport; [`OfiTransport::new`] reads it from the environment, tests set it.
///
/// [`OfiTransport::new`]: super::OfiTransport::new
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(super) choice: Choice,
    /// `OXSHMEM_TIMEOUT`.
    pub(super) timeout: Duration,
    /// `OXSHMEM_OFI_TEST_BAD_PEER`: corrupt this peer's address before inserting it.
    pub(super) bad_peer: Option<usize>,
    /// Treat the provider as if it asked for these `FI_MR_*` bits too (tests: `FI_MR_LOCAL`
    /// exercises the bounce paths, `FI_MR_PROV_KEY` the key exchange, on any provider).
    pub(super) extra_mr_mode: u32,
    /// Reach this PE itself through the network too (tests of a single process).
    pub(super) self_loop: bool,
    /// Use no native atomic but compare-swap (tests of the emulation).
    pub(super) emulate_atomics: bool,
    /// How long the progress thread polls after the last traffic before it naps.
    pub(super) spin: Duration,
    /// `OXSHMEM_SPIN`: polls a blocking call makes before it starts yielding.
    pub(super) spin_polls: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            choice: Choice::default(),
            timeout: Duration::from_secs(60),
            bad_peer: None,
            extra_mr_mode: 0,
            self_loop: false,
            emulate_atomics: false,
            spin: Duration::from_millis(1),
            spin_polls: 1000,
        }
    }
}

fn env_var(name: &'static str) -> (&'static str, String) {
    match crate::config::VARS.iter().find(|v| v.name == name) {
        Some(v) => (v.name, crate::config::lookup(v).0),
        None => (name, std::env::var(name).unwrap_or_default()),
    }
}

impl Options {
    /// `OXSHMEM_TIMEOUT`, `OXSHMEM_OFI_SRC_ADDR`, `OXSHMEM_OFI_TEST_BAD_PEER`.
    pub(super) fn from_env(pe: usize) -> Result<Options> {
        let bad = |var: &'static str, value: String, reason: &str| {
            Error::new(pe, "shmem_init", ErrorKind::Config { var, value, reason: reason.into() })
        };
        let (n, v) = env_var("OXSHMEM_TIMEOUT");
        let secs: f64 = v.trim().parse().map_err(|_| bad(n, v.clone(), "expected a number of seconds"))?;
        if !(secs > 0.0 && secs < 1e9) {
            return Err(bad(n, v, "must be a positive number of seconds"));
        }
        let (_, src) = env_var("OXSHMEM_OFI_SRC_ADDR");
        let src_addr = Some(src.trim().to_string()).filter(|s| !s.is_empty()).or_else(hydra_loopback_host);
        let (n, bp) = env_var("OXSHMEM_OFI_TEST_BAD_PEER");
        let bad_peer = match bp.trim() {
            "" => None,
            t => Some(t.parse().map_err(|_| bad(n, bp.clone(), "expected a PE number"))?),
        };
        Ok(Options {
            choice: Choice { provider: None, src_addr },
            timeout: Duration::from_secs_f64(secs),
            bad_peer,
            ..Options::default()
        })
    }
}

/// The host MPICH's Hydra placed this PE on (`MPIR_CVAR_CH3_INTERFACE_HOSTNAME`), when it is a
/// loopback address: `-hosts 127.0.0.2,127.0.0.3` runs several "hosts" on one machine, and
/// each one's endpoints bind to its own address, so that traffic between them really crosses
/// from one address to the other. Real host names are left to the provider.
fn hydra_loopback_host() -> Option<String> {
    let h = std::env::var("MPIR_CVAR_CH3_INTERFACE_HOSTNAME").ok()?;
    let ip: std::net::Ipv4Addr = h.trim().parse().ok()?;
    ip.is_loopback().then(|| ip.to_string())
}
