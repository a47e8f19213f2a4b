//! How oxshmem PEs find each other.
//!
//! This crate owns the [`Bootstrap`] trait — rank, size, allgather of byte blobs, barrier,
//! broadcast, abort — and one back end per launcher protocol (`pmi1.rs`, `single.rs`, later
//! `pmi2.rs`, `pmix.rs`, `uid.rs`), plus the `oshrun` launcher, which is a PMI-1 *server*.
//! It never touches symmetric memory: it moves small blobs at init and at finalize only, so
//! nothing here is on a data path.

#![warn(missing_docs)]

pub mod launcher;
pub mod pmi1;
pub mod single;
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
            return Err(BootstrapError::Invalid(format!(
                "broadcast root {root} out of range (size {})",
                self.size()
            )));
        }
        let mine = if self.rank() == root {
            data.unwrap_or(&[])
        } else {
            &[]
        };
        let mut all = self.allgather(mine)?;
        Ok(std::mem::take(&mut all[root]))
    }
    /// Tell the launcher the job must end with `code` and `msg`, then end this process.
    /// Not collective.
    fn abort(&self, code: i32, msg: &str) -> !;
    /// Collective: leave the job cleanly. No other method may be called afterwards.
    fn finalize(&self) -> Result<()>;
}

/// Pick the bootstrap from the environment: PMI-1 when a launcher gave `PMI_FD` or
/// `PMI_PORT`, else a singleton (PE 0 of 1). `OXSHMEM_BOOTSTRAP=pmi1|singleton` overrides.
pub fn from_env() -> Result<Box<dyn Bootstrap>> {
    let forced = std::env::var("OXSHMEM_BOOTSTRAP").ok();
    match forced.as_deref() {
        Some("pmi1") | Some("pmi") => Ok(Box::new(pmi1::Pmi1::from_env()?)),
        Some("singleton") | Some("single") => Ok(Box::new(single::Singleton::new())),
        Some(other) => Err(BootstrapError::Env {
            var: "OXSHMEM_BOOTSTRAP",
            reason: format!("unknown bootstrap {other:?} (known: pmi1, singleton)"),
        }),
        None => {
            if std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some() {
                Ok(Box::new(pmi1::Pmi1::from_env()?))
            } else {
                Ok(Box::new(single::Singleton::new()))
            }
        }
    }
}
