//! The device layer's settings: its variables (the channels, the proxy, IBGDA's queues, the
//! NIC, the CPU and CUDA back ends), their rules, and the channel choice with NVSHMEM's
//! spellings of it translated (`NVSHMEM_DISABLE_P2P`, `NVSHMEM_IB_ENABLE_IBGDA`,
//! `NVSHMEM_REMOTE_TRANSPORT`).
//!
//! They are part of the runtime's one table (`oxshmem::config`), which this crate, above the
//! runtime, joins through its seam: [`register`](crate::config::register) adds
//! [`LAYER`](crate::config::LAYER) to it, so that `SHMEM_INFO`, `oxshmem-info`, the NVSHMEM
//! listing and `docs/configuration.md` show these variables with the runtime's, and every later
//! init checks their values. [`crate::Device::init`] registers (and checks them), as the C
//! library does before its init and `oxshmem-info` at start; a Rust program that wants them
//! checked by `oxshmem::init` itself calls [`register`](crate::config::register) first.
//! The runtime knows the names alone ([`oxshmem::config::DEVICE_NAMES`], for its warnings about
//! misspelt variables); a test holds the two lists equal.

use oxshmem::config::{Env, Group, Layer, Refused, Section, Source, Var, VarType, lookup_in, parse_bool, refused_text};

/// Every variable the device layer reads.
pub const VARS: &[Var] = &[
    Var {
        name: "OXSHMEM_DEVICE_CHANNEL",
        aliases: &[],
        default: "auto",
        help: "device-initiated operations: `p2p` (mapped peers, direct loads/stores/atomics), `proxy` (request ring drained by a host proxy thread), `ibgda` (mlx5 work queues the device thread writes and rings itself, consumed by the software NIC); `auto` picks P2P for mapped peers and `OXSHMEM_DEVICE_REMOTE` for the rest",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_PROXY_SPIN",
        aliases: &[],
        default: "auto",
        help: "whether the device layer's host proxy thread spins for requests (NVSHMEM's dedicated proxy; \
               lowest latency, holds a core; it sleeps only after 10 ms idle) or sleeps after 1 ms idle: `1`, `0`, \
               or `auto` (spin when this host has a CPU for every PE and every proxy)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_DEVICE_REMOTE",
        aliases: &[],
        default: "proxy",
        help: "with `OXSHMEM_DEVICE_CHANNEL=auto`: the channel of peers whose heap is not mapped here, `proxy` or `ibgda`",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_DEVICE_BLOCKS",
        aliases: &[],
        default: "4",
        help: "blocks of a CPU-back-end kernel that run at once",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_IBGDA_NWQES",
        aliases: &[],
        default: "2048",
        help: "slots (64 B) per IBGDA send queue, a power of two from 8 to 32768",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_NUM_RC_PER_PE",
        aliases: &["NVSHMEM_IBGDA_NUM_RC_PER_PE"],
        default: "8",
        help: "IBGDA queues per peer (1 to 64; NVSHMEM's `0`, DCI only, means 1 here); a device thread uses queue `warp % N`",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_NIC",
        aliases: &[],
        default: "auto",
        help: "the NIC that executes the IBGDA queues: `soft` (the software NIC, in every build), `devx` (an mlx5 NIC through DEVX, feature `verbs`; fails with the reason where none can serve), `auto` (the hardware NIC when every PE has a DEVX-capable one, else the software NIC; one info line says which and why)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_NIC_GID_INDEX",
        aliases: &["NVSHMEM_IB_GID_INDEX"],
        default: "",
        help: "with `OXSHMEM_NIC=devx`: the GID index the queue pairs use (unset: 0 on InfiniBand, the first RoCE v2 GID on Ethernet)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_SOFTNIC_LAYOUT",
        aliases: &[],
        default: "mlx5",
        help: "the queue format the software NIC reads and the IBGDA producers write: `mlx5` (ConnectX) or `hns` (HiSilicon RoCE; CPU device threads only, the CUDA device library writes mlx5 WQEs)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_SOFTNIC_DOORBELL",
        aliases: &[],
        default: "record",
        help: "how the software NIC learns of new IBGDA work: `record` (it watches each queue's doorbell record) or `register` (as a hardware NIC: from a doorbell register per queue pair that producers, or the CPU ringer, write after the record)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_QUEUE_MEM",
        aliases: &["NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE"],
        default: "host",
        help: "where the CUDA back end's IBGDA queues (send queues, completion queues, doorbell records) live: `host` (pinned host memory, which GPU threads reach over PCIe; also `hostmem`, `auto`) or `gpu` (GPU memory, registered with the NIC through a dma-buf; also `gpumem`). The software NIC and the CPU ringer read the queues with the CPU, so with them `gpu` needs a CPU that reaches GPU memory (a coherent system)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_NIC_HANDLER",
        aliases: &["NVSHMEM_IBGDA_NIC_HANDLER"],
        default: "auto",
        help: "who writes a NIC's doorbell register: `gpu` (the producers, GPU threads through the register page mapped for the GPU; init fails where it cannot be mapped), `cpu` (a CPU thread of the PE watches the queues' doorbells and rings for every producer), `auto` (the producers, and the CPU thread for GPU producers whose GPU cannot map the page)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_CQ_MODE",
        aliases: &[],
        default: "collapsed",
        help: "`collapsed` (one CQE, always overwritten, as NVSHMEM creates it) or `normal` (a ring with owner bits and a consumer index)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_NCQES",
        aliases: &[],
        default: "",
        help: "CQEs of a `normal` completion queue; unset: the same as `OXSHMEM_IBGDA_NWQES`",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_IBGDA_BATCH",
        aliases: &["NVSHMEM_IBGDA_NUM_REQUESTS_IN_BATCH"],
        default: "32",
        help: "a producer rings the doorbell at least every this many slots",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_SOFTNIC_NAP_MS",
        aliases: &[],
        default: "50",
        help: "how long the idle software NIC thread sleeps before it looks at the doorbells again; doorbells rung meanwhile are served by the ringing threads, so this is a safety net",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Transport,
    },
    Var {
        name: "OXSHMEM_CUDA_DEVICE",
        aliases: &[],
        default: "",
        help: "with the CUDA back end (feature `cuda`): the ordinal of the GPU the PE uses (after `CUDA_VISIBLE_DEVICES`); unset: as NVSHMEM does, the PE's rank on its node modulo the GPUs it sees, so PEs share GPUs when a node runs more PEs than it has",
        group: Group::Device,
        ty: VarType::Int,
        section: Section::Additional,
    },
    Var {
        name: "OXSHMEM_CUDA_HEAP",
        aliases: &[],
        default: "auto",
        help: "the C library's GPU symmetric heap: `on` (`1`, `yes`): `nvshmem_malloc`, `_calloc`, `_align` and `_free` work on GPU memory, and init fails where there is no CUDA driver or GPU; `off` (`0`, `no`): they give host memory, as `shmem_malloc` does (refused when the program links `libnvshmem_device.a`, whose kernels need the GPU heap); `auto`: on when the program links `libnvshmem_device.a` (see `docs/cuda.md`)",
        group: Group::Device,
        ty: VarType::Text,
        section: Section::Additional,
    },
    Var {
        name: "NVSHMEM_DISABLE_P2P",
        aliases: &[],
        default: "0",
        help: "`1`: the device layer uses no P2P channel: every peer, mapped here or not, gets the remote channel (`OXSHMEM_DEVICE_REMOTE`'s, as NVSHMEM sends everything through its remote transport). An explicit `OXSHMEM_DEVICE_CHANNEL` wins. Host-side operations still use shared memory",
        group: Group::Nvshmem,
        ty: VarType::Bool,
        section: Section::Additional,
    },
    Var {
        name: "NVSHMEM_REMOTE_TRANSPORT",
        aliases: &[],
        default: "ibrc",
        help: "NVSHMEM's transport to peers without P2P. `ibrc`, `ucx`, `libfabric`, `ibdevx`: the device layer's `proxy` channel, whose host thread uses oxshmem's own transport (shared memory within a host, `ofi` between hosts); `ibgda`: `OXSHMEM_DEVICE_REMOTE=ibgda`; `none`: the proxy too (oxshmem keeps its host transport, which the host API and the IBGDA software NIC need). An explicit `OXSHMEM_DEVICE_REMOTE` and `NVSHMEM_IB_ENABLE_IBGDA=1` win",
        group: Group::Nvshmem,
        ty: VarType::Text,
        section: Section::Transport,
    },
    Var {
        name: "NVSHMEM_IB_ENABLE_IBGDA",
        aliases: &[],
        default: "0",
        help: "`1`: `OXSHMEM_DEVICE_REMOTE=ibgda`: device threads reach the peers not mapped here through IBGDA queues (the software NIC). An explicit `OXSHMEM_DEVICE_REMOTE` wins",
        group: Group::Nvshmem,
        ty: VarType::Bool,
        section: Section::Transport,
    },
];

/// The device layer as the runtime's table knows it ([`register`]).
pub static LAYER: Layer = Layer { name: "oxshmem-device", vars: VARS, check: check_in, nvshmem_effect };

/// Adds the device layer's variables to the runtime's table (once), then checks the values set
/// in this process's environment: a malformed one is an error naming it.
///
/// ```
/// oxshmem_device::config::register().unwrap();
/// assert!(oxshmem::config::shown_vars().any(|v| v.name == "OXSHMEM_DEVICE_CHANNEL"));
/// ```
pub fn register() -> Result<(), String> {
    oxshmem::config::register(&LAYER);
    check_in(&process_env).map_err(refused_text)
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The declaration of the device layer's variable `name`.
pub(crate) fn var(name: &str) -> &'static Var {
    VARS.iter().find(|v| v.name == name).expect("device variable declared in oxshmem_device::config::VARS")
}

/// The value of the device layer's variable `name` (its default when unset) and the spelling to
/// name in an error about it: the one set, else the canonical name. Registered or not.
pub fn value_of(name: &str) -> (String, &'static str) {
    let v = var(name);
    match lookup_in(&process_env, v) {
        (value, Source::Env(n)) => (value, n),
        (value, Source::Default) => (value, v.name),
    }
}

/// The value of `name` when it is set in `env` (under any of its spellings).
fn set_in(env: Env, name: &str) -> Option<(String, &'static str)> {
    match lookup_in(env, var(name)) {
        (value, Source::Env(n)) => Some((value, n)),
        (_, Source::Default) => None,
    }
}

/// A boolean variable; unset is its default.
fn flag_in(env: Env, name: &str) -> Result<bool, Refused> {
    let v = var(name);
    let (value, src) = lookup_in(env, v);
    let shown = if let Source::Env(n) = src { n } else { v.name };
    parse_bool(&value).ok_or_else(|| (shown, value, "expected 0 or 1 (also no/yes, false/true, off/on)".to_string()))
}

/// What a set value of variable `name` must look like (the layer reads some only when a
/// channel or back end starts, so init checks them all beforehand). `Err` says what is
/// expected.
fn check_value(name: &str, value: &str) -> Result<(), String> {
    let t = value.trim();
    let one_of = |choices: &[&str]| {
        if choices.contains(&t) { Ok(()) } else { Err(format!("expected {}", choices.join(", "))) }
    };
    let whole = |min: u64, max: u64, what: &str| match t.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(()),
        _ => Err(format!("expected {what}")),
    };
    if t.is_empty() {
        // Set but empty: the layer reads it as unset.
        return Ok(());
    }
    match name {
        "OXSHMEM_DEVICE_CHANNEL" => one_of(&["auto", "p2p", "proxy", "ibgda"]),
        "OXSHMEM_PROXY_SPIN" => match t.to_ascii_lowercase().as_str() {
            "auto" | "1" | "y" | "yes" | "true" | "on" | "0" | "n" | "no" | "false" | "off" => Ok(()),
            _ => Err("expected 1, 0 or auto".into()),
        },
        "OXSHMEM_DEVICE_REMOTE" => one_of(&["proxy", "ibgda"]),
        "OXSHMEM_DEVICE_BLOCKS" => whole(1, 1 << 20, "a whole number of blocks, at least 1"),
        "OXSHMEM_IBGDA_NWQES" => match t.parse::<u64>() {
            Ok(n) if n.is_power_of_two() && (8..=32768).contains(&n) => Ok(()),
            _ => Err("expected a power of two from 8 to 32768".into()),
        },
        "OXSHMEM_IBGDA_NUM_RC_PER_PE" => whole(0, 64, "a number of queues from 1 to 64 (0: 1)"),
        "OXSHMEM_NIC" => one_of(&["auto", "soft", "devx"]),
        "OXSHMEM_NIC_GID_INDEX" => whole(0, 255, "a GID index (0 to 255)"),
        "OXSHMEM_SOFTNIC_LAYOUT" => one_of(&["mlx5", "hns"]),
        "OXSHMEM_SOFTNIC_DOORBELL" => one_of(&["record", "register"]),
        "OXSHMEM_IBGDA_QUEUE_MEM" => one_of(&["host", "hostmem", "auto", "gpu", "gpumem"]),
        "OXSHMEM_IBGDA_NIC_HANDLER" => one_of(&["auto", "gpu", "cpu"]),
        "OXSHMEM_IBGDA_CQ_MODE" => one_of(&["collapsed", "normal"]),
        "OXSHMEM_IBGDA_NCQES" => whole(1, 1 << 24, "a number of CQEs, at least 1"),
        "OXSHMEM_IBGDA_BATCH" => whole(1, 1 << 24, "a number of slots, at least 1"),
        "OXSHMEM_SOFTNIC_NAP_MS" => whole(0, 3_600_000, "milliseconds"),
        "OXSHMEM_CUDA_DEVICE" => whole(0, 1 << 20, "a device ordinal (0, 1, ...)"),
        "OXSHMEM_CUDA_HEAP" => one_of(&["auto", "on", "1", "yes", "off", "0", "no"]),
        _ => Ok(()),
    }
}

/// [`LAYER`]'s check: every variable of [`VARS`] set in `env`, and the NVSHMEM spellings of the
/// channel choice as the layer would read them.
fn check_in(env: Env) -> Result<(), Refused> {
    for v in VARS {
        if let (value, Source::Env(n)) = lookup_in(env, v) {
            check_value(v.name, &value).map_err(|why| (n, value.clone(), why))?;
        }
    }
    if set_in(env, "OXSHMEM_DEVICE_CHANNEL").is_none() {
        flag_in(env, "NVSHMEM_DISABLE_P2P")?;
    }
    device_remote_in(env)?;
    Ok(())
}

/// [`LAYER`]'s NVSHMEM view: what `NVSHMEM_DISABLE_P2P`, `NVSHMEM_IB_ENABLE_IBGDA` and
/// `NVSHMEM_REMOTE_TRANSPORT` do given `env`.
fn nvshmem_effect(name: &str, env: Env) -> Option<String> {
    let invalid = |b: Refused| format!("invalid: {}", refused_text(b));
    Some(match name {
        "NVSHMEM_DISABLE_P2P" => match device_channel_in(env) {
            Err(b) => invalid(b),
            Ok(_) if env("OXSHMEM_DEVICE_CHANNEL").is_some() => "OXSHMEM_DEVICE_CHANNEL is set and wins".into(),
            Ok((ch, "NVSHMEM_DISABLE_P2P")) => format!("OXSHMEM_DEVICE_CHANNEL={ch} for every peer"),
            Ok(_) => "off: P2P to the peers mapped here".into(),
        },
        "NVSHMEM_IB_ENABLE_IBGDA" | "NVSHMEM_REMOTE_TRANSPORT" => match device_remote_in(env) {
            Err(b) => invalid(b),
            Ok((ch, n)) if n == name => format!("OXSHMEM_DEVICE_REMOTE={ch}"),
            Ok(_) if env("OXSHMEM_DEVICE_REMOTE").is_some() => "OXSHMEM_DEVICE_REMOTE is set and wins".into(),
            Ok((_, n)) if n.starts_with("NVSHMEM_") && env(name).is_some() => format!("not used: {n} decides"),
            Ok((ch, _)) => format!("off: the remote channel is OXSHMEM_DEVICE_REMOTE's default, {ch}"),
        },
        _ => return None,
    })
}

/// `NVSHMEM_REMOTE_TRANSPORT`'s values and the device layer's remote channel each gives.
pub const NVSHMEM_REMOTE_TRANSPORTS: &[(&str, &str)] = &[
    ("ibrc", "proxy"),
    ("ucx", "proxy"),
    ("libfabric", "proxy"),
    ("ibdevx", "proxy"),
    ("none", "proxy"),
    ("ibgda", "ibgda"),
];

/// The device layer's remote channel `NVSHMEM_REMOTE_TRANSPORT` asks for, when it is set.
pub(super) fn nv_remote_transport_in(env: Env) -> Result<Option<(&'static str, &'static str)>, Refused> {
    let Some((value, n)) = set_in(env, "NVSHMEM_REMOTE_TRANSPORT") else {
        return Ok(None);
    };
    let t = value.trim().to_ascii_lowercase();
    if t.is_empty() {
        return Ok(None);
    }
    match NVSHMEM_REMOTE_TRANSPORTS.iter().find(|(name, _)| *name == t) {
        Some((_, channel)) => Ok(Some((channel, n))),
        None => Err((n, value, "expected ibrc, ucx, libfabric, ibdevx, ibgda or none".into())),
    }
}

/// The channel of the device layer's peers whose heap is not mapped here, and the variable
/// that chose it: an explicit `OXSHMEM_DEVICE_REMOTE`, else `ibgda` for
/// `NVSHMEM_IB_ENABLE_IBGDA=1`, else what `NVSHMEM_REMOTE_TRANSPORT` maps to
/// ([`NVSHMEM_REMOTE_TRANSPORTS`]), else the default (`proxy`). The device layer checks the
/// value; a malformed NVSHMEM variable is an error naming it.
pub fn device_remote() -> Result<(String, &'static str), String> {
    device_remote_in(&process_env).map_err(refused_text)
}

pub(super) fn device_remote_in(env: Env) -> Result<(String, &'static str), Refused> {
    let v = var("OXSHMEM_DEVICE_REMOTE");
    if let (value, Source::Env(n)) = lookup_in(env, v) {
        return Ok((value, n));
    }
    if flag_in(env, "NVSHMEM_IB_ENABLE_IBGDA")? {
        return Ok(("ibgda".into(), "NVSHMEM_IB_ENABLE_IBGDA"));
    }
    if let Some((channel, n)) = nv_remote_transport_in(env)? {
        return Ok((channel.into(), n));
    }
    Ok((v.default.into(), v.name))
}

/// `OXSHMEM_PROXY_SPIN`: `Some(true)` spin, `Some(false)` sleep when idle, `None` decide
/// (auto); a malformed value is an error naming it.
pub fn proxy_spin() -> Result<Option<bool>, String> {
    proxy_spin_in(&process_env)
}

pub(super) fn proxy_spin_in(env: Env) -> Result<Option<bool>, String> {
    let v = var("OXSHMEM_PROXY_SPIN");
    let (value, src) = lookup_in(env, v);
    let name = match src {
        Source::Env(n) => n,
        _ => v.name,
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(None),
        "1" | "y" | "yes" | "true" | "on" => Ok(Some(true)),
        "0" | "n" | "no" | "false" | "off" => Ok(Some(false)),
        other => Err(format!("{name}={other:?}: expected 1, 0 or auto")),
    }
}

/// The device layer's channel override for every peer, and the variable that chose it: an
/// explicit `OXSHMEM_DEVICE_CHANNEL`, else, with `NVSHMEM_DISABLE_P2P=1`, the remote channel
/// ([`device_remote`]) for every peer, else `auto` (P2P for mapped peers, the remote channel
/// for the rest).
pub fn device_channel() -> Result<(String, &'static str), String> {
    device_channel_in(&process_env).map_err(refused_text)
}

pub(super) fn device_channel_in(env: Env) -> Result<(String, &'static str), Refused> {
    let v = var("OXSHMEM_DEVICE_CHANNEL");
    if let (value, Source::Env(n)) = lookup_in(env, v) {
        return Ok((value, n));
    }
    if flag_in(env, "NVSHMEM_DISABLE_P2P")? {
        let (remote, n) = device_remote_in(env)?;
        return match remote.trim() {
            "" | "proxy" => Ok(("proxy".into(), "NVSHMEM_DISABLE_P2P")),
            "ibgda" => Ok(("ibgda".into(), "NVSHMEM_DISABLE_P2P")),
            _ => Err((n, remote, "expected proxy or ibgda".into())),
        };
    }
    Ok((v.default.into(), v.name))
}

#[cfg(test)]
mod tests {
    use oxshmem::config::Config;

    use super::*;

    /// An environment made of `pairs`.
    fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn proxy_spin_values() {
        let spin = |v: &str| proxy_spin_in(&env_of(&[("OXSHMEM_PROXY_SPIN", v)]));
        assert_eq!(proxy_spin_in(&env_of(&[])), Ok(None));
        assert_eq!(spin("auto"), Ok(None));
        assert_eq!(spin("1"), Ok(Some(true)));
        assert_eq!(spin("yes"), Ok(Some(true)));
        assert_eq!(spin("0"), Ok(Some(false)));
        assert_eq!(spin("off"), Ok(Some(false)));
        assert_eq!(spin("sometimes"), Err("OXSHMEM_PROXY_SPIN=\"sometimes\": expected 1, 0 or auto".into()));
    }

    /// `NVSHMEM_DISABLE_P2P`, `NVSHMEM_IB_ENABLE_IBGDA` and `NVSHMEM_REMOTE_TRANSPORT` onto the
    /// device layer's channels; oxshmem's own variables win.
    #[test]
    fn nvshmem_device_mapping() {
        let remote = |pairs: &[(&str, &str)]| device_remote_in(&env_of(pairs)).map_err(refused_text);
        let channel = |pairs: &[(&str, &str)]| device_channel_in(&env_of(pairs)).map_err(refused_text);
        let s = |v: &str, n: &'static str| Ok((v.to_string(), n));
        assert_eq!(remote(&[]), s("proxy", "OXSHMEM_DEVICE_REMOTE"));
        assert_eq!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "1")]), s("ibgda", "NVSHMEM_IB_ENABLE_IBGDA"));
        assert_eq!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "true")]), s("ibgda", "NVSHMEM_IB_ENABLE_IBGDA"));
        assert_eq!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "0")]), s("proxy", "OXSHMEM_DEVICE_REMOTE"));
        for (t, ch) in NVSHMEM_REMOTE_TRANSPORTS {
            assert_eq!(remote(&[("NVSHMEM_REMOTE_TRANSPORT", t)]), s(ch, "NVSHMEM_REMOTE_TRANSPORT"), "{t}");
        }
        assert_eq!(remote(&[("NVSHMEM_REMOTE_TRANSPORT", "UCX")]), s("proxy", "NVSHMEM_REMOTE_TRANSPORT"));
        // IBGDA enabled beats the remote transport (DeepEP sets both, with `none`).
        let both = [("NVSHMEM_IB_ENABLE_IBGDA", "1"), ("NVSHMEM_REMOTE_TRANSPORT", "none")];
        assert_eq!(remote(&both), s("ibgda", "NVSHMEM_IB_ENABLE_IBGDA"));
        let own = [("NVSHMEM_IB_ENABLE_IBGDA", "1"), ("OXSHMEM_DEVICE_REMOTE", "proxy")];
        assert_eq!(remote(&own), s("proxy", "OXSHMEM_DEVICE_REMOTE"));
        assert!(remote(&[("NVSHMEM_REMOTE_TRANSPORT", "smoke")]).unwrap_err().contains("expected ibrc, ucx"));
        assert!(remote(&[("NVSHMEM_IB_ENABLE_IBGDA", "sure")]).unwrap_err().contains("NVSHMEM_IB_ENABLE_IBGDA"));

        assert_eq!(channel(&[]), s("auto", "OXSHMEM_DEVICE_CHANNEL"));
        assert_eq!(channel(&[("NVSHMEM_DISABLE_P2P", "1")]), s("proxy", "NVSHMEM_DISABLE_P2P"));
        let p2p_off_ibgda = [("NVSHMEM_DISABLE_P2P", "1"), ("NVSHMEM_IB_ENABLE_IBGDA", "1")];
        assert_eq!(channel(&p2p_off_ibgda), s("ibgda", "NVSHMEM_DISABLE_P2P"));
        let own = [("NVSHMEM_DISABLE_P2P", "1"), ("OXSHMEM_DEVICE_CHANNEL", "p2p")];
        assert_eq!(channel(&own), s("p2p", "OXSHMEM_DEVICE_CHANNEL"));
        let e = channel(&[("NVSHMEM_DISABLE_P2P", "1"), ("OXSHMEM_DEVICE_REMOTE", "pigeon")]).unwrap_err();
        assert!(e.contains("OXSHMEM_DEVICE_REMOTE=\"pigeon\""), "{e}");
        // Init checks them once the layer is registered, whether or not it starts.
        oxshmem::config::register(&LAYER);
        let e = Config::from_lookup(0, &env_of(&[("NVSHMEM_REMOTE_TRANSPORT", "smoke")])).unwrap_err().to_string();
        assert!(e.contains("NVSHMEM_REMOTE_TRANSPORT=\"smoke\""), "{e}");
        assert!(Config::from_lookup(0, &env_of(&[("NVSHMEM_DISABLE_P2P", "2")])).is_err());
    }

    /// Issue 32, item 11: every variable of the layer is checked by init once the layer is
    /// registered, naming the variable, and each has a rule.
    #[test]
    fn every_device_variable_is_checked_at_init() {
        oxshmem::config::register(&LAYER);
        for (name, bad) in [
            ("OXSHMEM_IBGDA_NWQES", "3"),
            ("OXSHMEM_IBGDA_NWQES", "65536"),
            ("OXSHMEM_CUDA_DEVICE", "-3"),
            ("OXSHMEM_CUDA_HEAP", "maybe"),
            ("OXSHMEM_DEVICE_CHANNEL", "carrier-pigeon"),
            ("OXSHMEM_DEVICE_BLOCKS", "0"),
            ("OXSHMEM_IBGDA_NUM_RC_PER_PE", "65"),
            ("NVSHMEM_IBGDA_NUM_RC_PER_PE", "x"),
            ("OXSHMEM_NIC", "hardware"),
            ("OXSHMEM_IBGDA_CQ_MODE", "fast"),
            ("OXSHMEM_SOFTNIC_NAP_MS", "-1"),
            ("OXSHMEM_PROXY_SPIN", "sometimes"),
            ("OXSHMEM_NIC_GID_INDEX", "300"),
        ] {
            let e = Config::from_lookup(2, &env_of(&[(name, bad)]))
                .expect_err(&format!("{name}={bad:?} must fail init"))
                .to_string();
            assert!(e.starts_with("PE 2: shmem_init: ") && e.contains(&format!("{name}={bad:?}")), "{e}");
        }
        for (name, good) in [
            ("OXSHMEM_IBGDA_NWQES", "8"),
            ("OXSHMEM_CUDA_DEVICE", "1"),
            ("OXSHMEM_CUDA_HEAP", "off"),
            ("OXSHMEM_DEVICE_CHANNEL", "proxy"),
            ("OXSHMEM_IBGDA_NCQES", ""),
            ("OXSHMEM_PROXY_SPIN", "Auto"),
            ("OXSHMEM_NIC_GID_INDEX", "3"),
        ] {
            assert!(Config::from_lookup(0, &env_of(&[(name, good)])).is_ok(), "{name}={good:?}");
        }
        // Every variable of the layer's own has a check (a new one must get its rule here).
        let unchecked: Vec<&str> = VARS
            .iter()
            .filter(|v| v.group == Group::Device && check_value(v.name, "\u{1}not a value").is_ok())
            .map(|v| v.name)
            .collect();
        assert!(unchecked.is_empty(), "device variables without a check: {unchecked:?}");
    }

    /// The runtime's names-only list of the device layer's variables, which its warnings use
    /// where the layer is not registered, is this table's spellings.
    #[test]
    fn the_runtimes_device_names_are_this_table() {
        let mine: Vec<&str> =
            VARS.iter().flat_map(|v| std::iter::once(v.name).chain(v.aliases.iter().copied())).collect();
        assert_eq!(
            oxshmem::config::DEVICE_NAMES,
            &mine[..],
            "oxshmem::config::DEVICE_NAMES and oxshmem_device::config::VARS differ"
        );
        assert!(VARS.iter().all(|v| matches!(v.group, Group::Device | Group::Nvshmem)));
    }

    /// Registered, the layer's variables are in the one table: shown, in the generated
    /// document's table, found by name.
    #[test]
    fn registered_variables_join_the_table() {
        register().unwrap();
        register().unwrap();
        assert_eq!(oxshmem::config::vars().filter(|v| v.name == "OXSHMEM_CUDA_HEAP").count(), 1, "registered once");
        assert!(oxshmem::config::markdown_table().contains("| `OXSHMEM_CUDA_HEAP` | `auto` |"));
        assert_eq!(oxshmem::config::var_named("OXSHMEM_DEVICE_REMOTE").default, "proxy");
        assert!(oxshmem::config::nvshmem_info_text().contains("  NVSHMEM_IB_ENABLE_IBGDA "));
    }

    /// The NVSHMEM view of the layer's NVSHMEM variables: what each maps to.
    #[test]
    fn nvshmem_settings_say_what_each_maps_to() {
        let effect = |pairs: &[(&str, &str)], name: &str| nvshmem_effect(name, &env_of(pairs)).unwrap();
        assert_eq!(
            effect(&[("NVSHMEM_DISABLE_P2P", "1")], "NVSHMEM_DISABLE_P2P"),
            "OXSHMEM_DEVICE_CHANNEL=proxy for every peer"
        );
        assert!(effect(&[], "NVSHMEM_DISABLE_P2P").starts_with("off"));
        assert_eq!(
            effect(&[("NVSHMEM_IB_ENABLE_IBGDA", "1")], "NVSHMEM_IB_ENABLE_IBGDA"),
            "OXSHMEM_DEVICE_REMOTE=ibgda"
        );
        let both = [("NVSHMEM_IB_ENABLE_IBGDA", "1"), ("NVSHMEM_REMOTE_TRANSPORT", "ibrc")];
        assert_eq!(effect(&both, "NVSHMEM_REMOTE_TRANSPORT"), "not used: NVSHMEM_IB_ENABLE_IBGDA decides");
        assert_eq!(nvshmem_effect("NVSHMEM_DEBUG", &env_of(&[])), None);
        register().unwrap();
        let aliased = oxshmem::config::nvshmem_settings().into_iter().find(|s| s.name == "NVSHMEM_IBGDA_NUM_RC_PER_PE");
        assert_eq!(aliased.unwrap().effect, "same as OXSHMEM_IBGDA_NUM_RC_PER_PE");
    }
}
