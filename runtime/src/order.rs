//! Ordering and completion: `shmem_fence` and `shmem_quiet`.
//!
//! On the shared-memory path a put is complete when its stores are; what remains is the
//! processor's own ordering. `fence` orders earlier stores before later ones (a release
//! fence); `quiet` also orders them before later loads (a full fence), so that a PE that quiets
//! and then reads a flag cannot read it ahead of its own puts becoming visible. On the network
//! the transport completes or orders what is in flight: every context's for `shmem_quiet`, one
//! context's for `shmem_ctx_quiet` and `shmem_ctx_fence` (`crate::ctx`).

use std::sync::atomic::{Ordering, fence};

use crate::error::Result;
use crate::transport::CtxId;
use crate::world::{Runtime, running};

impl Runtime {
    /// Completes every operation this PE issued: a full fence, the network transport's quiet
    /// (remote completion) when there is one, and each registered segment's
    /// ([`ForeignSegment::quiet`](crate::segment::ForeignSegment::quiet): a GPU's device
    /// operations still in the proxy ring or the NIC queues).
    #[inline(always)]
    pub(crate) fn quiet_internal(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        if let Some(net) = &self.net {
            net.quiet()?;
        }
        // Registered segments (a GPU heap) complete what their own agents still carry.
        crate::segment::quiet_all("shmem_quiet")
    }

    /// Orders this PE's operations to each peer.
    #[inline(always)]
    pub(crate) fn fence_internal(&self) -> Result<()> {
        fence(Ordering::Release);
        match &self.net {
            Some(net) => net.fence(),
            None => Ok(()),
        }
    }

    /// Completes the operations of context `ctx` (`shmem_ctx_quiet`): a full fence, and the
    /// network transport's quiet of that context only. The default context's is
    /// [`quiet_internal`](Runtime::quiet_internal).
    #[inline]
    pub(crate) fn ctx_quiet_internal(&self, ctx: CtxId) -> Result<()> {
        fence(Ordering::SeqCst);
        match &self.net {
            Some(net) => net.ctx_quiet(ctx),
            None => Ok(()),
        }
    }

    /// Orders the operations of context `ctx` to each peer (`shmem_ctx_fence`).
    #[inline]
    pub(crate) fn ctx_fence_internal(&self, ctx: CtxId) -> Result<()> {
        fence(Ordering::Release);
        match &self.net {
            Some(net) => net.ctx_fence(ctx),
            None => Ok(()),
        }
    }
}

/// Raw `shmem_quiet`.
#[inline]
pub fn quiet() -> Result<()> {
    running("shmem_quiet")?.quiet_internal()
}

/// Raw `shmem_fence`.
#[inline]
pub fn fence_all() -> Result<()> {
    running("shmem_fence")?.fence_internal()
}
