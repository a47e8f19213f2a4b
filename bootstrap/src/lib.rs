//! How oxshmem PEs find each other.
//!
//! This crate owns the [`Bootstrap`] trait — rank, size, allgather of byte blobs, barrier,
//! broadcast, abort, and where the launcher placed each rank — and one back end per launcher
//! protocol: [`pmi1`] and [`pmi2`] (the wire protocols of Hydra and Slurm), `pmix` (feature
//! `pmix`, through libpmix), [`uid`] (a TCP rendezvous for programs that bring their own process
//! management) and [`single`]; plus the `oshrun` launcher, which is a PMI-1 *server*.
//! [`from_env`] picks the back end. It never touches symmetric memory: it moves small blobs at
//! init and at finalize only, so nothing here is on a data path.
//!
//! Environment read here:
//!
//! | variable | meaning |
//! | --- | --- |
//! | `OXSHMEM_BOOTSTRAP` | `auto` (default, see [`detect`]), `pmi1`, `pmi2`, `pmix`, `uid`, `singleton` |
//! | `PMI_FD`, `PMI_RANK`, `PMI_SIZE`, `PMI_PORT`, `PMI_ID`, `PMI_JOBID` | set by Hydra, Slurm, oshrun |
//! | `PMI_VERSION` | `2`: prefer PMI-2 on a `PMI_FD`/`PMI_PORT` connection |
//! | `OXSHMEM_PMI_TOKEN` | set by `oshrun --pmi-port`: the job's token, which the PMI-1 client presents first |
//! | `PMIX_RANK`, `PMIX_NAMESPACE`, ... | set by PMIx launchers; read by libpmix |
//! | `OXSHMEM_UNIQUEID`, `OXSHMEM_UID_RANK`, `OXSHMEM_UID_SIZE` | the unique-id job to join |
//! | `OXSHMEM_UID_ADDR` | address (IP or IP:port) [`uid::create_unique_id`] listens on |
//! | `OXSHMEM_TIMEOUT` | seconds each unique-id wait may take (default 120) |
//! | `OXSHMEM_STATUS_FD` | set by `oshrun`: the hang report's status table ([`status`]) |

#![warn(missing_docs)]

mod kvs;
pub mod launcher;
pub mod logging;
pub mod mapping;
pub mod mpi;
pub mod pmi1;
pub mod pmi2;
#[cfg(feature = "pmix")]
pub mod pmix;
mod shmgather;
pub mod single;
mod sock;
pub mod status;
pub mod uid;
pub mod wire;

use std::fmt;

/// Errors of the bootstrap layer. Each names the step that failed, so a user can tell a
/// launcher problem from a runtime one.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The environment that a launcher should have set is missing or malformed.
    #[error("bootstrap: environment variable {var}: {reason}")]
    Env {
        /// The variable (e.g. `PMI_FD`).
        var: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Talking to the launcher failed (connection closed, I/O error).
    #[error("bootstrap ({protocol}): {step}: {source}")]
    Io {
        /// Protocol name (`pmi1`, ...).
        protocol: &'static str,
        /// The step that was under way (`init`, `barrier`, `get key ...`).
        step: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The launcher answered something we cannot parse, or an error code.
    #[error("bootstrap ({protocol}): {step}: {reason}")]
    Protocol {
        /// Protocol name.
        protocol: &'static str,
        /// The step that was under way.
        step: String,
        /// What was wrong with the reply.
        reason: String,
    },
    /// A caller passed bad arguments (e.g. broadcast root out of range).
    #[error("bootstrap: {0}")]
    Invalid(String),
}

/// Result alias of this crate.
pub type Result<T, E = BootstrapError> = std::result::Result<T, E>;

/// What a PE needs from its launcher: who am I, how many are we, and a way to exchange small
/// blobs collectively. Every method except `rank`, `size` and `name` is collective over all
/// ranks unless said otherwise.
///
/// ```
/// use oxshmem_bootstrap::{Bootstrap, single::Singleton};
/// let b = Singleton::new();
/// assert_eq!((b.rank(), b.size()), (0, 1));
/// assert_eq!(b.allgather(b"hi").unwrap(), vec![b"hi".to_vec()]);
/// ```
pub trait Bootstrap: Send + Sync + fmt::Debug {
    /// This process's rank in `0..size()`.
    fn rank(&self) -> usize;
    /// Number of processes in the job.
    fn size(&self) -> usize;
    /// Short name of the protocol (`pmi1`, `singleton`, ...), for diagnostics.
    fn name(&self) -> &'static str;
    /// Collective: every rank contributes `data` (any length, any bytes); returns all
    /// contributions, indexed by rank.
    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// Collective: returns when every rank has entered.
    fn barrier(&self) -> Result<()>;
    /// Collective: `root` passes `Some(data)`, the others `None`; every rank gets root's data.
    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>> {
        if root >= self.size() {
            return Err(BootstrapError::Invalid(format!("broadcast root {root} out of range (size {})", self.size())));
        }
        let mine = if self.rank() == root { data.unwrap_or(&[]) } else { &[] };
        let mut all = self.allgather(mine)?;
        Ok(std::mem::take(&mut all[root]))
    }
    /// Where the launcher placed the ranks: `Some(node)` with `node[rank]` the node of every
    /// rank, numbered in order of their first rank (`node[0] == 0`; see
    /// [`mapping::renumber`]), when the launcher says so (Hydra's and Slurm's
    /// `PMI_process_mapping`, PMIx's `PMIX_NODEID`); `None` when it does not. Not collective;
    /// may ask the launcher once, then answers from a cache.
    ///
    /// It says what the launcher *intended*: `mpiexec.hydra -launcher fork -hosts a,b` reports
    /// two nodes even though both "hosts" are this machine.
    fn node_mapping(&self) -> Option<Vec<usize>> {
        None
    }
    /// Tell the launcher the job must end with `code` and `msg`, then end this process.
    /// Not collective.
    fn abort(&self, code: i32, msg: &str) -> !;
    /// Collective: leave the job cleanly. No other method may be called afterwards.
    fn finalize(&self) -> Result<()>;
}

/// The back ends [`from_env`] can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`pmi1::Pmi1`].
    Pmi1,
    /// [`pmi2::Pmi2`].
    Pmi2,
    /// `pmix::Pmix` (feature `pmix`).
    Pmix,
    /// [`uid::Uid`].
    Uid,
    /// [`single::Singleton`].
    Singleton,
}

impl Kind {
    /// The name `OXSHMEM_BOOTSTRAP` uses for it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pmi1 => "pmi1",
            Kind::Pmi2 => "pmi2",
            Kind::Pmix => "pmix",
            Kind::Uid => "uid",
            Kind::Singleton => "singleton",
        }
    }
}

/// Decide which back end the environment asks for, without connecting to anything. `var`
/// reads one environment variable (so this can be tested without touching the process
/// environment). The rules, first match wins:
///
/// 1. `OXSHMEM_BOOTSTRAP=pmi1|pmi2|pmix|uid|singleton` (also `pmi`, `single`; `auto` or empty
///    means "detect").
/// 2. `OXSHMEM_UNIQUEID` set: the program brought its own process management and chose the
///    unique-id rendezvous, even inside a launcher (an `mpirun` job that passes the id over MPI).
/// 3. `PMI_FD` or `PMI_PORT` set: a PMI launcher. PMI-2 when `PMI_VERSION=2` (or `PMI2`) or
///    when `PMI_JOBID` is set — only Slurm's `--mpi=pmi2` plugin sets it, and its `fullinit`
///    needs it — else PMI-1. Hydra and Slurm serve both versions on the same socket, so both
///    choices work there; `oshrun` serves PMI-1 only. A PMI socket wins over `PMIX_*`
///    variables, which an enclosing PMIx job may have left in the environment.
/// 4. `PMIX_RANK` or `PMIX_NAMESPACE` set: a PMIx launcher (`srun --mpi=pmix`, OpenMPI's
///    `mpirun`).
/// 5. Otherwise a singleton.
///
/// ```
/// use oxshmem_bootstrap::{Kind, detect};
/// let env = |pairs: &'static [(&'static str, &'static str)]| {
///     move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
/// };
/// assert_eq!(detect(env(&[])).unwrap(), Kind::Singleton);
/// assert_eq!(detect(env(&[("PMI_FD", "6")])).unwrap(), Kind::Pmi1);
/// assert_eq!(detect(env(&[("PMI_FD", "6"), ("PMI_JOBID", "3.0")])).unwrap(), Kind::Pmi2);
/// assert_eq!(detect(env(&[("PMIX_RANK", "0")])).unwrap(), Kind::Pmix);
/// ```
pub fn detect(var: impl Fn(&str) -> Option<String>) -> Result<Kind> {
    let forced = var("OXSHMEM_BOOTSTRAP").map(|v| v.trim().to_ascii_lowercase());
    match forced.as_deref() {
        None | Some("") | Some("auto") => {}
        Some("pmi1") | Some("pmi") => return Ok(Kind::Pmi1),
        Some("pmi2") => return Ok(Kind::Pmi2),
        Some("pmix") => return Ok(Kind::Pmix),
        Some("uid") => return Ok(Kind::Uid),
        Some("singleton") | Some("single") => return Ok(Kind::Singleton),
        Some(other) => {
            return Err(BootstrapError::Env {
                var: "OXSHMEM_BOOTSTRAP",
                reason: format!("unknown bootstrap {other:?} (known: auto, pmi1, pmi2, pmix, uid, singleton)"),
            });
        }
    }
    if var("OXSHMEM_UNIQUEID").is_some() {
        return Ok(Kind::Uid);
    }
    if var("PMI_FD").is_some() || var("PMI_PORT").is_some() {
        let v2_hint =
            var("PMI_VERSION").is_some_and(|v| matches!(v.trim(), "2" | "PMI2" | "pmi2")) || var("PMI_JOBID").is_some();
        return Ok(if v2_hint { Kind::Pmi2 } else { Kind::Pmi1 });
    }
    if var("PMIX_RANK").is_some() || var("PMIX_NAMESPACE").is_some() {
        return Ok(Kind::Pmix);
    }
    Ok(Kind::Singleton)
}

/// Connect the back end `kind`, configured from the environment.
pub fn connect(kind: Kind) -> Result<Box<dyn Bootstrap>> {
    let start = std::time::Instant::now();
    let boot = connect_kind(kind);
    if let Ok(b) = &boot {
        logging::set_pe(b.rank());
    }
    match &boot {
        Ok(b) => tracing::debug!(
            target: "boot",
            bootstrap = kind.name(),
            rank = b.rank(),
            size = b.size(),
            took_us = start.elapsed().as_micros() as u64,
            "connected"
        ),
        Err(e) => tracing::debug!(target: "boot", bootstrap = kind.name(), "cannot connect: {e}"),
    }
    boot
}

fn connect_kind(kind: Kind) -> Result<Box<dyn Bootstrap>> {
    Ok(match kind {
        Kind::Pmi1 => Box::new(pmi1::Pmi1::from_env()?),
        Kind::Pmi2 => Box::new(pmi2::Pmi2::from_env()?),
        Kind::Uid => Box::new(uid::Uid::from_env()?),
        Kind::Singleton => Box::new(single::Singleton::new()),
        #[cfg(feature = "pmix")]
        Kind::Pmix => Box::new(pmix::Pmix::init()?),
        #[cfg(not(feature = "pmix"))]
        Kind::Pmix => {
            let (var, why) = match std::env::var("PMIX_NAMESPACE") {
                Ok(ns) => (
                    "PMIX_NAMESPACE",
                    format!(
                        "this process was started by a PMIx launcher (namespace {ns:?}: srun \
                         --mpi=pmix, OpenMPI's mpirun)"
                    ),
                ),
                Err(_) if std::env::var_os("PMIX_RANK").is_some() => {
                    ("PMIX_RANK", "this process was started by a PMIx launcher".to_string())
                }
                Err(_) => ("OXSHMEM_BOOTSTRAP", "OXSHMEM_BOOTSTRAP=pmix asks for PMIx".to_string()),
            };
            return Err(BootstrapError::Env {
                var,
                reason: format!(
                    "{why}, but oxshmem-bootstrap was built without PMIx: rebuild with \
                     `--features pmix` (needs libpmix-dev), or launch with `srun --mpi=pmi2`, \
                     `mpiexec.hydra` or `oshrun`"
                ),
            });
        }
    })
}

/// Pick the bootstrap from the environment ([`detect`]) and connect it ([`connect`]).
pub fn from_env() -> Result<Box<dyn Bootstrap>> {
    let kind = detect(|k| std::env::var(k).ok());
    match &kind {
        Ok(k) => tracing::debug!(target: "boot", bootstrap = k.name(), "chosen"),
        Err(e) => tracing::debug!(target: "boot", "no bootstrap: {e}"),
    }
    connect(kind?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect_with(pairs: &[(&str, &str)]) -> Result<Kind> {
        detect(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn detection_rules() {
        use Kind::*;
        for (env, want) in [
            (&[][..], Singleton),
            (&[("PMI_FD", "6"), ("PMI_RANK", "0")][..], Pmi1),
            (&[("PMI_PORT", "h:1"), ("PMI_ID", "0")], Pmi1),
            // Slurm's --mpi=pmi2.
            (&[("PMI_FD", "11"), ("PMI_JOBID", "3.0")], Pmi2),
            (&[("PMI_FD", "6"), ("PMI_VERSION", "2")], Pmi2),
            (&[("PMI_FD", "6"), ("PMI_VERSION", "1")], Pmi1),
            (&[("PMIX_RANK", "0"), ("PMIX_NAMESPACE", "slurm.pmix.3.0")], Pmix),
            (&[("PMIX_NAMESPACE", "x")], Pmix),
            // A PMI socket beats PMIx variables left by an enclosing job.
            (&[("PMI_FD", "6"), ("PMIX_RANK", "0")], Pmi1),
            // The program chose the unique id, even inside a launcher.
            (&[("OXSHMEM_UNIQUEID", "oxs2:..."), ("PMI_FD", "6")], Uid),
            // Forced.
            (&[("OXSHMEM_BOOTSTRAP", "pmi2"), ("PMI_FD", "6")], Pmi2),
            (&[("OXSHMEM_BOOTSTRAP", "PMI"), ("PMI_JOBID", "1")], Pmi1),
            (&[("OXSHMEM_BOOTSTRAP", "singleton"), ("PMI_FD", "6")], Singleton),
            (&[("OXSHMEM_BOOTSTRAP", "uid")], Uid),
            (&[("OXSHMEM_BOOTSTRAP", "pmix")], Pmix),
            (&[("OXSHMEM_BOOTSTRAP", "auto"), ("PMI_FD", "6")], Pmi1),
            (&[("OXSHMEM_BOOTSTRAP", ""), ("PMIX_RANK", "1")], Pmix),
        ] {
            assert_eq!(detect_with(env).unwrap(), want, "{env:?}");
        }
        let err = detect_with(&[("OXSHMEM_BOOTSTRAP", "mpi")]).unwrap_err().to_string();
        assert!(err.contains("OXSHMEM_BOOTSTRAP") && err.contains("pmix"), "{err}");
        assert_eq!(Kind::Pmi2.name(), "pmi2");
    }
}
