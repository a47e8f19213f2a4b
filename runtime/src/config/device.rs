//! The device layer's channel choice: `OXSHMEM_DEVICE_CHANNEL`, `OXSHMEM_DEVICE_REMOTE` and
//! `OXSHMEM_PROXY_SPIN`, with NVSHMEM's spellings of the same choices translated.

use super::parse::{Bad, bad_text, flag_in};
use super::table::{Env, Source, lookup_in, process_env, set_in, var};

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
pub(super) fn nv_remote_transport_in(env: Env) -> std::result::Result<Option<(&'static str, &'static str)>, Bad> {
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
pub fn device_remote() -> std::result::Result<(String, &'static str), String> {
    device_remote_in(&process_env).map_err(bad_text)
}

pub(super) fn device_remote_in(env: Env) -> std::result::Result<(String, &'static str), Bad> {
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
pub fn proxy_spin() -> std::result::Result<Option<bool>, String> {
    proxy_spin_in(&process_env)
}

pub(super) fn proxy_spin_in(env: Env) -> std::result::Result<Option<bool>, String> {
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
pub fn device_channel() -> std::result::Result<(String, &'static str), String> {
    device_channel_in(&process_env).map_err(bad_text)
}

pub(super) fn device_channel_in(env: Env) -> std::result::Result<(String, &'static str), Bad> {
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
    use super::*;
    use crate::config::Config;
    use crate::config::test_env::env_of;

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
        let remote = |pairs: &[(&str, &str)]| device_remote_in(&env_of(pairs)).map_err(bad_text);
        let channel = |pairs: &[(&str, &str)]| device_channel_in(&env_of(pairs)).map_err(bad_text);
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
        // Init checks them even where the device layer is never started.
        let e = Config::from_lookup(0, &env_of(&[("NVSHMEM_REMOTE_TRANSPORT", "smoke")])).unwrap_err().to_string();
        assert!(e.contains("NVSHMEM_REMOTE_TRANSPORT=\"smoke\""), "{e}");
        assert!(Config::from_lookup(0, &env_of(&[("NVSHMEM_DISABLE_P2P", "2")])).is_err());
    }
}
