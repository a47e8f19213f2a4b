//! `oxshmem-info`: the version, the build, the machine's transports and launchers, and every
//! variable of `oxshmem::config::VARS` with its value and source, in both output forms.

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::{run_ok, tool};

/// `oxshmem-info` with none of the configuration variables set, then `set`.
fn info(args: &[&str], set: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(tool("oxshmem-info"));
    cmd.args(args);
    for v in oxshmem::config::shown_vars() {
        cmd.env_remove(v.name);
        for a in v.aliases {
            cmd.env_remove(a);
        }
    }
    for (k, v) in set {
        cmd.env(k, v);
    }
    run_ok(&mut cmd)
}

fn parse(text: &str) -> HashMap<String, String> {
    text.lines()
        .map(|l| {
            // section:key:value, where the keys of `config` are NAME:what and values may hold ':'.
            let fields = if l.starts_with("config:") { 3 } else { 2 };
            let mut parts = l.splitn(fields + 1, ':');
            let key: Vec<&str> = parts.by_ref().take(fields).collect();
            let value = parts.next().unwrap_or_else(|| panic!("not section:key:value: {l}"));
            (key.join(":"), value.to_string())
        })
        .collect()
}

#[test]
fn parsable_form_has_every_variable_with_its_source() {
    let facts = parse(&info(&["--parsable"], &[("NVSHMEM_DEBUG", "1"), ("OXSHMEM_SPIN", "7")]));
    assert_eq!(facts["package:version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(facts["package:openshmem"], "1.5");
    for v in oxshmem::config::shown_vars() {
        let value = &facts[&format!("config:{}:value", v.name)];
        let source = &facts[&format!("config:{}:source", v.name)];
        match v.name {
            "SHMEM_DEBUG" => assert_eq!((value.as_str(), source.as_str()), ("1", "environment (NVSHMEM_DEBUG)")),
            "OXSHMEM_SPIN" => assert_eq!((value.as_str(), source.as_str()), ("7", "environment (OXSHMEM_SPIN)")),
            _ => assert_eq!((value.as_str(), source.as_str()), (v.default, "default"), "{}", v.name),
        }
        assert_eq!(facts[&format!("config:{}:help", v.name)], v.help);
    }
    for l in ["oshrun", "mpiexec.hydra", "srun"] {
        assert!(facts.contains_key(&format!("launcher:{l}")), "launcher {l} missing");
    }
    assert_eq!(facts["path:layout"], "build tree");
    assert!(facts["build:profile"].len() > 1);
    assert!(["yes", "no"].iter().any(|p| facts["build:feature pmix"].starts_with(p)));
}

#[test]
fn canonical_spelling_wins_over_aliases() {
    let facts = parse(&info(&["-p"], &[("SMA_SYMMETRIC_SIZE", "64M"), ("SHMEM_SYMMETRIC_SIZE", "2G")]));
    assert_eq!(facts["config:SHMEM_SYMMETRIC_SIZE:value"], "2G");
    assert_eq!(facts["config:SHMEM_SYMMETRIC_SIZE:source"], "environment (SHMEM_SYMMETRIC_SIZE)");
}

#[test]
fn human_form() {
    let text = info(&[], &[("NVSHMEM_SYMMETRIC_SIZE", "3G")]);
    assert!(text.contains(&format!("version: {}", env!("CARGO_PKG_VERSION"))), "{text}");
    assert!(text.contains("openshmem: 1.5"), "{text}");
    assert!(text.contains("SHMEM_SYMMETRIC_SIZE = 3G [environment (NVSHMEM_SYMMETRIC_SIZE)]"), "{text}");
    for v in oxshmem::config::shown_vars() {
        assert!(text.contains(&format!("  {} = ", v.name)), "{} missing:\n{text}", v.name);
    }
    assert!(text.contains("shm: available"), "{text}");
    let rdma = std::fs::read_dir("/sys/class/infiniband").map(|d| d.count()).unwrap_or(0);
    if rdma == 0 {
        assert!(text.contains("rdma devices: none found"), "{text}");
    }
    assert!(text.contains("mpiexec.hydra: "), "{text}");
    assert!(text.contains("srun: "), "{text}");
}

#[test]
fn arguments() {
    assert!(info(&["--version"], &[]).starts_with(&format!("oxshmem-info {}", env!("CARGO_PKG_VERSION"))));
    assert!(info(&["--help"], &[]).contains("--parsable"));
    let out = Command::new(tool("oxshmem-info")).arg("--bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
