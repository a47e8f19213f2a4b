//! NICs for the IBGDA channel: the seam its set-up drives ([`provider`]) and the providers
//! that fill it — the software NIC's ([`soft`]) in every build — and what the host sends a
//! real ConnectX NIC so that device threads can then drive its queues by themselves:
//! [`devx`], byte builders and output parsers for the mlx5 DEVX commands (`QUERY_HCA_CAP`,
//! `CREATE_CQ`, `CREATE_QP` and the RC transitions `RST2INIT` / `INIT2RTR` / `RTR2RTS`), in the
//! PRM's big-endian bit layout. Pure bytes, no FFI: whoever owns the rdma-core handles passes
//! the buffers to `mlx5dv_devx_obj_create` / `_modify` / `mlx5dv_devx_general_cmd`.
//!
//! `OXSHMEM_NIC` chooses: `soft`, `devx` (an mlx5 NIC through DEVX: this build has no hardware
//! provider yet, so it fails saying so), or `auto` (the default: the software NIC here).

pub mod devx;
pub mod provider;
pub mod soft;

use std::sync::Arc;

use provider::{NicError, NicProvider};

/// The NIC PE `pe`'s IBGDA queues use (`OXSHMEM_NIC`).
///
/// # Errors
/// `OXSHMEM_NIC` names a provider this build or machine cannot give, or is malformed.
pub fn open(pe: usize) -> Result<Arc<dyn NicProvider>, NicError> {
    let (v, name) = oxshmem::config::value_of("OXSHMEM_NIC");
    match v.trim() {
        "" | "auto" | "soft" => Ok(Arc::new(soft::SoftProvider::new(pe))),
        "devx" => Err(NicError::NoDevice(format!(
            "{name}=devx: this build of oxshmem has no hardware NIC provider (mlx5 DEVX); use {name}=soft or auto"
        ))),
        other => Err(NicError::refused(name, format!("{other:?}: expected soft, devx or auto"))),
    }
}
