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
//! hardware NIC when every PE has one that can serve, else the software NIC, saying which
//! and why on one info line). The software NIC reads mlx5
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

/// How the PEs agree on the automatic choice (collective): given whether this PE could use
/// a hardware NIC, the first PE that could not (`None`: every PE could). Every PE must take
/// the same kind of NIC: a hardware queue pair talks only to a hardware queue pair.
pub type Agree<'a> = &'a dyn Fn(bool) -> Result<Option<usize>, NicError>;

/// The NIC PE `pe`'s IBGDA queues use (`OXSHMEM_NIC`; the software NIC reads queues in
/// `layout`, `OXSHMEM_SOFTNIC_LAYOUT`, mlx5 when `None`, and, with `registers`
/// (`OXSHMEM_SOFTNIC_DOORBELL=register`), learns of new work from a doorbell register per
/// queue pair as a hardware NIC does). `auto` takes the hardware NIC when every PE has one
/// that serves (`agree`, called on every PE of a build with the feature `verbs`): one that
/// opens with DEVX, registers the implicit on-demand-paging region and, for a GPU heap
/// (`gpu`), can register GPU memory; else the software NIC, saying which and why on one info
/// line (PE 0).
///
/// # Errors
/// `OXSHMEM_NIC` names a provider this build or machine cannot give, or is malformed; or
/// `layout` asks a hardware NIC for a format that is not its own; or the agreement failed.
pub fn open(
    pe: usize,
    layout: Option<Layout>,
    registers: bool,
    gpu: bool,
    agree: Agree<'_>,
) -> Result<Arc<dyn NicProvider>, NicError> {
    let (v, name) = crate::config::value_of("OXSHMEM_NIC");
    let lname = crate::config::value_of("OXSHMEM_SOFTNIC_LAYOUT").1;
    let soft =
        || -> Arc<dyn NicProvider> { Arc::new(soft::SoftProvider::with(pe, layout.unwrap_or_default(), registers)) };
    match v.trim() {
        "soft" => Ok(soft()),
        // Settings only the software NIC has keep it (every PE has the same settings).
        "" | "auto" if layout.is_some_and(|l| l != Layout::Mlx5) || registers => Ok(soft()),
        "" | "auto" => match auto(pe, gpu, agree)? {
            Some(hardware) => Ok(hardware),
            None => Ok(soft()),
        },
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

/// `OXSHMEM_NIC=auto`: the hardware NIC when every PE has one that can serve, else `None`
/// (the software NIC), with the info line.
#[cfg(feature = "verbs")]
fn auto(pe: usize, gpu: bool, agree: Agree<'_>) -> Result<Option<Arc<dyn NicProvider>>, NicError> {
    // Everything of the set-up that a NIC can refuse before the queue pairs, tried here, so
    // that a PE whose NIC cannot serve says so before any PE has chosen.
    let mine = devx_nic::DevxNic::open(None).and_then(|nic| {
        nic.register_implicit()?;
        let d = nic.describe();
        if gpu && !d.gpu_memory && !d.dmabuf {
            return Err(NicError::refused(
                format!("{}: GPU memory", d.name),
                "neither a dma-buf (libibverbs or the kernel lacks it) nor nvidia_peermem",
            ));
        }
        Ok(nic)
    });
    match agree(mine.is_ok())? {
        None => {
            let nic = mine?;
            announce_once(pe, || {
                let d = nic.describe();
                format!("IBGDA queues: {} through DEVX (every PE has a DEVX-capable NIC)", d.name)
            });
            Ok(Some(Arc::new(nic)))
        }
        Some(p) => {
            announce_once(pe, || {
                let why = match (&mine, p == pe) {
                    (Err(e), true) => e.to_string(),
                    _ => format!("PE {p} has no RDMA NIC that can serve (see its own oxshmem-info)"),
                };
                format!("IBGDA queues: the software NIC ({why})")
            });
            Ok(None)
        }
    }
}

/// `OXSHMEM_NIC=auto` in a build without hardware providers: the software NIC.
#[cfg(not(feature = "verbs"))]
fn auto(pe: usize, _gpu: bool, _agree: Agree<'_>) -> Result<Option<Arc<dyn NicProvider>>, NicError> {
    announce_once(pe, || format!("IBGDA queues: the software NIC ({})", hardware_refusal()));
    Ok(None)
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
#[cfg(not(feature = "verbs"))]
fn hardware_refusal() -> String {
    "this build of oxshmem has no hardware NIC provider (build with the feature verbs for RDMA devices); use \
     OXSHMEM_NIC=soft or auto"
        .to_string()
}

/// The one info line saying which NIC executes the IBGDA queues (PE 0, once per process;
/// `line` is asked only then: it may open every RDMA device of the host).
fn announce_once(pe: usize, line: impl FnOnce() -> String) {
    static SAID: std::sync::Once = std::sync::Once::new();
    if pe == 0 {
        SAID.call_once(|| tracing::info!(target: "nic", "{}", line()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` asks the PEs to agree (in builds with hardware providers) and takes the software
    /// NIC unless every PE could use its hardware NIC; when all agree on hardware it opens it
    /// (here, with no RDMA device, that fails saying so instead of falling back on one PE
    /// only). Settings only the software NIC has keep it without asking.
    #[test]
    fn auto_agrees_before_it_takes_hardware() {
        if std::env::var_os("OXSHMEM_NIC").is_some() {
            return;
        }
        let asked = std::cell::Cell::new(None);
        let refuse = |capable: bool| {
            asked.set(Some(capable));
            Ok(Some(0))
        };
        let nic = open(0, Some(Layout::Mlx5), false, false, &refuse).expect("the software NIC");
        assert_eq!(nic.describe().provider, "soft");
        // Asked only where hardware could be chosen, with whether this host has a NIC that serves.
        #[cfg(feature = "verbs")]
        assert!(asked.get().is_some(), "asked");
        #[cfg(not(feature = "verbs"))]
        assert_eq!(asked.get(), None);
        let all = |_: bool| Ok(None);
        match open(0, Some(Layout::Mlx5), false, false, &all) {
            Ok(nic) => assert_eq!(nic.describe().provider, if cfg!(feature = "verbs") { "devx" } else { "soft" }),
            Err(e) => {
                // Only the hardware path can fail here: no device on this host.
                let verbs = cfg!(feature = "verbs");
                assert!(verbs, "without hardware providers auto cannot fail: {e}");
                assert!(e.to_string().contains("no RDMA device"), "{e}");
            }
        }
        asked.set(None);
        let nic = open(0, Some(Layout::Hns), false, false, &refuse).expect("the software NIC");
        assert_eq!((nic.describe().provider, nic.describe().layout), ("soft", Layout::Hns));
        assert_eq!(open(0, None, true, false, &refuse).expect("soft").describe().provider, "soft");
        assert_eq!(asked.get(), None, "software-only settings need no agreement");
    }
}
