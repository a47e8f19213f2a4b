//! RDMA devices through libibverbs (feature `verbs`): what is present, its ports and addresses,
//! whether it can create DEVX objects (what IBGDA's hardware path needs: the queues are created
//! with raw mlx5 commands, [`super::devx`]), and whether GPU memory can be registered with it.
//!
//! libibverbs comes through `rdma-sys`; the `mlx5dv_*` calls through our own bindgen of
//! rdma-core's `infiniband/mlx5dv.h` (`build.rs`), since rdma-sys has none. Where the kernel
//! has no RDMA support (`ibv_get_device_list` fails with `ENOSYS`) or no device is present,
//! [`devices`] returns an empty list and [`open_devx`] fails with `no RDMA device`, never a
//! panic.

use std::ffi::CStr;

use rdma_sys::{
    ibv_close_device, ibv_context, ibv_device, ibv_device_attr, ibv_free_device_list, ibv_get_device_guid,
    ibv_get_device_list, ibv_get_device_name, ibv_gid, ibv_open_device, ibv_port_attr, ibv_query_device, ibv_query_gid,
};

use super::provider::{LinkLayer, NicError};

/// The mlx5dv declarations (generated from `infiniband/mlx5dv.h` by `build.rs`).
#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    missing_docs,
    unreachable_pub,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
pub(crate) mod mlx5dv {
    include!(concat!(env!("OUT_DIR"), "/mlx5dv.rs"));
}

/// `MLX5DV_CONTEXT_FLAGS_DEVX` (`enum mlx5dv_context_attr_flags`).
const CONTEXT_FLAGS_DEVX: u32 = 1;
/// `IBV_LINK_LAYER_INFINIBAND`, `IBV_LINK_LAYER_ETHERNET` (`infiniband/verbs.h`).
const LINK_LAYER_INFINIBAND: u8 = 1;
const LINK_LAYER_ETHERNET: u8 = 2;
/// `IBV_PORT_ACTIVE`.
const PORT_ACTIVE: u32 = 4;
/// GID table entries listed per port (the first ones hold the link-local and RoCE v2 GIDs).
const GIDS_LISTED: i32 = 4;

/// One port of an RDMA device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaPort {
    /// Port number (from 1).
    pub num: u8,
    /// Whether the port is active (`IBV_PORT_ACTIVE`).
    pub active: bool,
    /// InfiniBand or Ethernet (RoCE); `None` when the device does not say.
    pub link_layer: Option<LinkLayer>,
    /// Local identifier (InfiniBand).
    pub lid: u16,
    /// Active MTU in bytes.
    pub mtu: u32,
    /// The first entries of the GID table that are set.
    pub gids: Vec<[u8; 16]>,
}

/// An RDMA device and what IBGDA needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaDevice {
    /// Its name (`mlx5_0`).
    pub name: String,
    /// Its node GUID.
    pub guid: u64,
    /// Firmware version.
    pub fw: String,
    /// Its ports.
    pub ports: Vec<RdmaPort>,
    /// Largest send queue (`max_qp_wr`) and completion queue (`max_cqe`).
    pub max_qp_wr: i32,
    /// Largest completion queue.
    pub max_cqe: i32,
    /// Whether it does remote atomics.
    pub atomics: bool,
    /// Whether it can create DEVX objects (an mlx5 device opened with
    /// `MLX5DV_CONTEXT_FLAGS_DEVX`); else why not.
    pub devx: Result<(), String>,
}

/// How GPU memory can be registered with the NICs of this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuRegistration {
    /// `ibv_reg_dmabuf_mr` is there (libibverbs 34 and later) for a dma-buf the CUDA driver
    /// exports (`cuMemGetHandleForAddressRange`).
    pub dmabuf: bool,
    /// The `nvidia_peermem` module is loaded: `ibv_reg_mr` takes GPU addresses.
    pub peermem: bool,
}

/// The devices present, each opened once to read its attributes and closed again. Empty where
/// the kernel has no RDMA support or no device is present.
///
/// # Errors
/// A device that is listed but cannot be opened or queried.
pub fn devices() -> Result<Vec<RdmaDevice>, NicError> {
    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer; the list is freed below.
    let list = unsafe { ibv_get_device_list(&mut n) };
    if list.is_null() {
        tracing::debug!(target: "nic", errno = %std::io::Error::last_os_error(), "ibv_get_device_list: no RDMA support");
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut first_err = None;
    for i in 0..n.max(0) as usize {
        // SAFETY: the list holds `n` device pointers.
        let dev = unsafe { *list.add(i) };
        match describe(dev) {
            Ok(d) => out.push(d),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    // SAFETY: the list came from ibv_get_device_list; no device pointer is used after this.
    unsafe { ibv_free_device_list(list) };
    match first_err {
        Some(e) if out.is_empty() => Err(e),
        _ => Ok(out),
    }
}

/// An open device context, closed on drop.
struct Context(*mut ibv_context);

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: opened by ibv_open_device / mlx5dv_open_device and not used after this.
        unsafe { ibv_close_device(self.0) };
    }
}

fn describe(dev: *mut ibv_device) -> Result<RdmaDevice, NicError> {
    // SAFETY: a device of the current list: its name is a NUL-terminated string it owns.
    let name = unsafe { CStr::from_ptr(ibv_get_device_name(dev)) }.to_string_lossy().into_owned();
    // SAFETY: as above.
    let guid = u64::from_be(unsafe { ibv_get_device_guid(dev) });
    // SAFETY: as above; the context is closed by `Context`'s drop.
    let ctx = unsafe { ibv_open_device(dev) };
    if ctx.is_null() {
        return Err(NicError::refused(format!("ibv_open_device({name})"), std::io::Error::last_os_error().to_string()));
    }
    let ctx = Context(ctx);
    // SAFETY: ibv_device_attr is plain data; zero is a valid value.
    let mut attr: ibv_device_attr = unsafe { std::mem::zeroed() };
    // SAFETY: an open context and a valid out-pointer.
    let rc = unsafe { ibv_query_device(ctx.0, &mut attr) };
    if rc != 0 {
        return Err(NicError::refused(
            format!("ibv_query_device({name})"),
            std::io::Error::from_raw_os_error(rc).to_string(),
        ));
    }
    let fw = attr.fw_ver.iter().take_while(|&&c| c != 0).map(|&c| c as u8 as char).collect();
    let mut ports = Vec::new();
    for num in 1..=attr.phys_port_cnt {
        // SAFETY: ibv_port_attr is plain data; zero is a valid value.
        let mut pa: ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: an open context, a port of the device and a valid out-pointer.
        if unsafe { rdma_sys::___ibv_query_port(ctx.0, num, &mut pa) } != 0 {
            continue;
        }
        let mut gids = Vec::new();
        for index in 0..GIDS_LISTED.min(pa.gid_tbl_len) {
            let mut gid = ibv_gid { raw: [0; 16] };
            // SAFETY: an open context, a port and an index of its table, a valid out-pointer.
            if unsafe { ibv_query_gid(ctx.0, num, index, &mut gid) } == 0 {
                // SAFETY: every bit pattern of the union is a valid byte array.
                let raw = unsafe { gid.raw };
                if raw != [0; 16] {
                    gids.push(raw);
                }
            }
        }
        ports.push(RdmaPort {
            num,
            active: pa.state == PORT_ACTIVE,
            link_layer: match pa.link_layer {
                LINK_LAYER_INFINIBAND => Some(LinkLayer::InfiniBand),
                LINK_LAYER_ETHERNET => Some(LinkLayer::Ethernet),
                _ => None,
            },
            lid: pa.lid,
            mtu: mtu_bytes(pa.active_mtu),
            gids,
        });
    }
    drop(ctx);
    Ok(RdmaDevice {
        name: name.clone(),
        guid,
        fw,
        ports,
        max_qp_wr: attr.max_qp_wr,
        max_cqe: attr.max_cqe,
        atomics: attr.atomic_cap != rdma_sys::ibv_atomic_cap::IBV_ATOMIC_NONE,
        devx: devx_capable(dev, &name),
    })
}

/// `enum ibv_mtu` in bytes (0 when unknown).
fn mtu_bytes(mtu: u32) -> u32 {
    match mtu {
        1..=5 => 128 << mtu,
        _ => 0,
    }
}

/// Whether `dev` opens with DEVX (an mlx5 device, with a kernel and firmware that allow it).
fn devx_capable(dev: *mut ibv_device, name: &str) -> Result<(), String> {
    // SAFETY: a device of the current list.
    if !unsafe { mlx5dv::mlx5dv_is_supported(dev.cast()) } {
        return Err(format!("{name} is not an mlx5 device"));
    }
    let mut attr = mlx5dv::mlx5dv_context_attr { flags: CONTEXT_FLAGS_DEVX, comp_mask: 0 };
    // SAFETY: a device of the current list and a valid attribute struct; the context is closed
    // by `Context`'s drop.
    let ctx = unsafe { mlx5dv::mlx5dv_open_device(dev.cast(), &mut attr) };
    if ctx.is_null() {
        return Err(format!(
            "device {name} cannot create DEVX objects (mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX: {})",
            std::io::Error::last_os_error()
        ));
    }
    drop(Context(ctx.cast()));
    Ok(())
}

/// How GPU memory can be registered here (see [`GpuRegistration`]).
pub fn gpu_registration() -> GpuRegistration {
    let peermem = std::path::Path::new("/sys/module/nvidia_peermem").exists()
        || std::path::Path::new("/sys/kernel/mm/memory_peers/nv_mem").exists();
    // SAFETY: dlopen of the library this crate links (already loaded) and dlsym of a name.
    let dmabuf = unsafe {
        let h = libc::dlopen(c"libibverbs.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        let found = !h.is_null() && !libc::dlsym(h, c"ibv_reg_dmabuf_mr".as_ptr()).is_null();
        if !h.is_null() {
            libc::dlclose(h);
        }
        found
    };
    GpuRegistration { dmabuf, peermem }
}

/// The DEVX-capable device IBGDA's hardware path would use (the first one with an active
/// port, or the one named).
///
/// # Errors
/// `no RDMA device: …` when none is present; `device mlx5_0 cannot create DEVX objects …` when
/// none can.
pub fn open_devx(name: Option<&str>) -> Result<RdmaDevice, NicError> {
    let all = devices()?;
    if all.is_empty() {
        return Err(NicError::NoDevice("ibv_get_device_list found none on this host".into()));
    }
    let named: Vec<&RdmaDevice> = all.iter().filter(|d| name.is_none_or(|n| d.name == n)).collect();
    if named.is_empty() {
        let names: Vec<&str> = all.iter().map(|d| d.name.as_str()).collect();
        return Err(NicError::NoDevice(format!(
            "no device {:?} here (present: {})",
            name.unwrap_or(""),
            names.join(", ")
        )));
    }
    if let Some(d) = named.iter().find(|d| d.devx.is_ok() && d.ports.iter().any(|p| p.active)) {
        return Ok((*d).clone());
    }
    let why: Vec<String> = named
        .iter()
        .map(|d| match &d.devx {
            Err(e) => e.clone(),
            Ok(()) => format!("device {} has no active port", d.name),
        })
        .collect();
    Err(NicError::NoDevice(why.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtus_in_bytes() {
        assert_eq!(mtu_bytes(1), 256);
        assert_eq!(mtu_bytes(5), 4096);
        assert_eq!(mtu_bytes(0), 0);
        assert_eq!(mtu_bytes(9), 0);
    }

    /// On this host (no RDMA device, or a kernel without RDMA support) the list is empty and
    /// opening says so; on a host with devices every one is described.
    #[test]
    fn devices_are_listed_or_none_is_found_cleanly() {
        let list = devices().expect("listing RDMA devices");
        match open_devx(None) {
            Ok(d) => assert!(list.iter().any(|x| x.name == d.name)),
            Err(e) => {
                let text = e.to_string();
                assert!(text.starts_with("no RDMA device: "), "{text}");
                if list.is_empty() {
                    assert!(text.contains("found none on this host"), "{text}");
                }
            }
        }
        let e = open_devx(Some("no_such_nic_9")).unwrap_err().to_string();
        assert!(e.starts_with("no RDMA device: "), "{e}");
        let _ = gpu_registration();
    }
}
