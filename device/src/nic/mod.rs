//! NICs for the IBGDA channel: the seam its set-up drives ([`provider`](crate::nic::provider)) and the providers
//! that fill it — the software NIC's ([`soft`](crate::nic::soft)) in every build — and what the host sends a
//! real ConnectX NIC so that device threads can then drive its queues by themselves:
//! [`devx`](crate::nic::devx), byte builders and output parsers for the mlx5 DEVX commands (`QUERY_HCA_CAP`,
//! `CREATE_CQ`, `CREATE_QP` and the RC transitions `RST2INIT` / `INIT2RTR` / `RTR2RTS`), in the
//! PRM's big-endian bit layout. Pure bytes, no FFI: whoever owns the rdma-core handles passes
//! the buffers to `mlx5dv_devx_obj_create` / `_modify` / `mlx5dv_devx_general_cmd`.
//!
//! With the feature `verbs`, `verbs` finds the RDMA devices of the host, their ports and
//! addresses, and whether they can create DEVX objects.
//!
//! `OXSHMEM_NIC` chooses: `soft`, `devx` (`devx_nic`, feature `verbs`: an mlx5 NIC through
//! DEVX; fails with `no RDMA device: …` where none can serve), or `auto` (the default: the
//! software NIC, saying on one info line why not a hardware one). The software NIC reads mlx5
//! queues unless `OXSHMEM_SOFTNIC_LAYOUT=hns` has it stand in for a HiSilicon hns NIC (the
//! producers then write hns WQEs; `auto` then stays with the software NIC, as no hns hardware
//! provider exists yet).

pub mod devx;
#[cfg(feature = "verbs")]
pub mod devx_nic;
pub mod provider;
pub mod soft;
#[cfg(feature = "verbs")]
pub mod verbs;

use std::sync::Arc;

use crate::ibgda::layout::Layout;
use provider::{NicError, NicProvider};

/// The NIC PE `pe`'s IBGDA queues use (`OXSHMEM_NIC`; the software NIC reads queues in
/// `layout`, `OXSHMEM_SOFTNIC_LAYOUT`, mlx5 when `None`, and, with `registers`
/// (`OXSHMEM_SOFTNIC_DOORBELL=register`), learns of new work from a doorbell register per
/// queue pair as a hardware NIC does).
///
/// # Errors
/// `OXSHMEM_NIC` names a provider this build or machine cannot give, or is malformed; or
/// `layout` asks a hardware NIC for a format that is not its own.
pub fn open(pe: usize, layout: Option<Layout>, registers: bool) -> Result<Arc<dyn NicProvider>, NicError> {
    let (v, name) = oxshmem::config::value_of("OXSHMEM_NIC");
    let lname = oxshmem::config::value_of("OXSHMEM_SOFTNIC_LAYOUT").1;
    let soft =
        || -> Arc<dyn NicProvider> { Arc::new(soft::SoftProvider::with(pe, layout.unwrap_or_default(), registers)) };
    match v.trim() {
        "soft" => Ok(soft()),
        "" | "auto" if layout.is_some_and(|l| l != Layout::Mlx5) => Ok(soft()),
        "" | "auto" => {
            announce_once(pe, hardware_refusal);
            Ok(soft())
        }
        "devx" => match layout {
            Some(l) if l != Layout::Mlx5 => Err(NicError::refused(
                lname,
                format!("{}: {name}=devx drives mlx5 NICs, whose queues are mlx5's", l.name()),
            )),
            _ => open_devx(name),
        },
        other => Err(NicError::refused(name, format!("{other:?}: expected soft, devx or auto"))),
    }
}

/// The hardware provider (`OXSHMEM_NIC=devx`).
#[cfg(feature = "verbs")]
fn open_devx(var: &str) -> Result<Arc<dyn NicProvider>, NicError> {
    match devx_nic::DevxNic::open(None) {
        Ok(nic) => Ok(Arc::new(nic)),
        Err(NicError::NoDevice(why)) => Err(NicError::NoDevice(format!("{var}=devx: {why}"))),
        Err(e) => Err(e),
    }
}

/// The hardware provider (`OXSHMEM_NIC=devx`): not in this build.
#[cfg(not(feature = "verbs"))]
fn open_devx(var: &str) -> Result<Arc<dyn NicProvider>, NicError> {
    Err(NicError::NoDevice(format!("{var}=devx: {}", hardware_refusal())))
}

/// Why the hardware path does not serve here, in words.
#[cfg(feature = "verbs")]
fn hardware_refusal() -> String {
    match verbs::open_devx(None) {
        Ok(d) => format!("{} can create DEVX objects: OXSHMEM_NIC=devx has it execute the IBGDA queues", d.name),
        Err(e) => e.to_string(),
    }
}

/// Why the hardware path does not serve here, in words.
#[cfg(not(feature = "verbs"))]
fn hardware_refusal() -> String {
    "this build of oxshmem has no hardware NIC provider (build with the feature verbs for RDMA devices); use \
     OXSHMEM_NIC=soft or auto"
        .to_string()
}

/// The one info line saying which NIC executes the IBGDA queues (PE 0, once per process;
/// `why_not_hardware` is asked only then: it may open every RDMA device of the host).
fn announce_once(pe: usize, why_not_hardware: fn() -> String) {
    static SAID: std::sync::Once = std::sync::Once::new();
    if pe == 0 {
        SAID.call_once(|| {
            tracing::info!(target: "nic", "IBGDA queues: the software NIC ({})", why_not_hardware());
        });
    }
}
