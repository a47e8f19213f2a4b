//! The world: init, finalize, who the PEs are and where they live.
//!
//! Init (`init.rs`) runs the bootstrap exchange once — host key, pid and heap descriptor of
//! every PE (`card.rs`) — builds the node layout (`layout.rs`) and the peer table, which
//! transport reaches which PE (`peers.rs`; node peers' heaps are mapped on first use), and
//! publishes the runtime in the process-wide state (`state.rs`) that every operation reads
//! first. Nothing here is on a data path after init.

mod card;
mod flush;
mod init;
mod layout;
mod peers;
mod state;

use std::os::fd::OwnedFd;
use std::sync::Arc;

use oxshmem_bootstrap::Bootstrap;

pub(crate) use self::flush::flush_output;
pub(crate) use self::init::{finalize_runtime, init_runtime_checked};
pub use self::state::{aborting, initialized, pe_for_errors};
pub(crate) use self::state::{ever_initialized, failed_init_boot, running};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::heap::Heap;
use crate::team::{SlotLayout, Teams};
use crate::transport::SymAddr;
use crate::transport::shm::ShmTransport;

/// Thread support levels (OpenSHMEM 1.5 §9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum ThreadLevel {
    /// One thread only.
    Single = 0,
    /// Several threads, only the main one calls OpenSHMEM.
    Funneled = 1,
    /// Several threads call OpenSHMEM, never at the same time.
    Serialized = 2,
    /// Any thread calls anything at any time.
    Multiple = 3,
}

impl ThreadLevel {
    /// From the C constant (`SHMEM_THREAD_*`).
    pub fn from_c(v: i32) -> Option<ThreadLevel> {
        Some(match v {
            0 => ThreadLevel::Single,
            1 => ThreadLevel::Funneled,
            2 => ThreadLevel::Serialized,
            3 => ThreadLevel::Multiple,
            _ => return None,
        })
    }
}

/// Where the PEs of the job live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLayout {
    /// Node index of every PE (nodes numbered in order of their first PE).
    pub node_of: Vec<usize>,
    /// Host name of every node (and, where the launcher splits one host into several nodes,
    /// which of the launcher's nodes it is).
    pub hosts: Vec<String>,
    /// The PEs on this PE's node, ascending.
    pub local_pes: Vec<usize>,
}

impl NodeLayout {
    /// Number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.hosts.len()
    }
}

/// Everything a running PE knows.
#[derive(Debug)]
pub(crate) struct Runtime {
    pub(crate) me: usize,
    pub(crate) n: usize,
    pub(crate) boot: Arc<dyn Bootstrap>,
    pub(crate) config: Config,
    pub(crate) thread_level: ThreadLevel,
    pub(crate) layout: NodeLayout,
    pub(crate) heap: Heap,
    /// Local segments: `(base, len)` of segment `i` in this process.
    pub(crate) segs: Vec<(usize, usize)>,
    pub(crate) shm: ShmTransport,
    /// The network transport, for peers this process has not mapped.
    pub(crate) net: Option<Box<dyn crate::transport::Transport>>,
    /// Where each team slot's internal symmetric objects live.
    pub(crate) slots: SlotLayout,
    /// The teams of this PE: world, shared, and the free-slot mask.
    pub(crate) teams: Teams,
    _heap_fd: OwnedFd,
    _static_fd: Option<OwnedFd>,
}

/// The heap's base address is aligned to this, so that `shmem_align` can honour any alignment
/// up to it with the same offset on every PE.
pub(crate) const HEAP_ALIGN: usize = 1 << 30;

impl Runtime {
    /// Checks a PE number.
    #[inline(always)]
    pub(crate) fn check_pe(&self, pe: usize, func: &'static str) -> Result<usize> {
        if pe < self.n { Ok(pe) } else { Err(self.pe_error(pe as i128, func)) }
    }

    #[cold]
    pub(crate) fn pe_error(&self, pe: i128, func: &'static str) -> Error {
        Error::new(self.me, func, ErrorKind::PeOutOfRange { pe, n_pes: self.n })
    }

    /// Translates a local address range to its symmetric location.
    #[inline(always)]
    pub(crate) fn translate(&self, addr: usize, len: usize, what: &'static str, func: &'static str) -> Result<SymAddr> {
        for (seg, &(base, slen)) in self.segs.iter().enumerate() {
            let off = addr.wrapping_sub(base);
            if off < slen && len <= slen - off {
                return Ok(SymAddr { seg, offset: off });
            }
        }
        // Not symmetric (said so in `segment.rs`, which knows the registered segments).
        Err(self.not_symmetric(addr, len, what, func))
    }

    /// The local address of a symmetric location.
    #[inline(always)]
    pub(crate) fn local_addr(&self, a: SymAddr) -> usize {
        self.segs[a.seg].0 + a.offset
    }

    /// Aborts the job with a message, through the launcher, after flushing this PE's output
    /// (`flush.rs`: the bootstrap may end the process without exit's flushes).
    pub(crate) fn abort(&self, code: i32, msg: &str) -> ! {
        state::mark_aborting();
        flush::flush_output();
        self.boot.abort(code, msg)
    }
}

/// Ends the job from any PE with `status` (`shmem_global_exit`).
pub fn global_exit(status: i32) -> ! {
    state::mark_aborting();
    match running("shmem_global_exit") {
        Ok(rt) => {
            let msg = format!("PE {}: shmem_global_exit({status})", rt.me);
            rt.abort(status, &msg)
        }
        Err(_) => std::process::exit(status),
    }
}
