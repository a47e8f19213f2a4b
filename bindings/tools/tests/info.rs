//! `oxshmem-info`: the version, the build, the machine's transports and launchers, and every
//! variable of `oxshmem::config::VARS` with its value and source, in both output forms.

mod common;

use std::process::Command;

use common::{info, tool};
use std::collections::HashMap;

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
    let mut set_seen = 0;
    for v in oxshmem::config::shown_vars() {
        let value = &facts[&format!("config:{}:value", v.name)];
        let source = &facts[&format!("config:{}:source", v.name)];
        match v.name {
            "NVSHMEM_DEBUG" => assert_eq!((value.as_str(), source.as_str()), ("1", "environment (NVSHMEM_DEBUG)")),
            "OXSHMEM_SPIN" => assert_eq!((value.as_str(), source.as_str()), ("7", "environment (OXSHMEM_SPIN)")),
            _ => assert_eq!((value.as_str(), source.as_str()), (v.default, "default"), "{}", v.name),
        }
        set_seen += usize::from(matches!(v.name, "NVSHMEM_DEBUG" | "OXSHMEM_SPIN"));
        assert_eq!(facts[&format!("config:{}:help", v.name)], v.help);
    }
    // The two variables set above were among those checked: their values were read back.
    assert_eq!(set_seen, 2, "NVSHMEM_DEBUG or OXSHMEM_SPIN is not a shown variable");
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

/// The NVSHMEM view: the API version (the one `nvshmem.h` declares), the header, where
/// `libnvshmem_host.so` is (in a build tree: made by `oxshmem-install`), and every NVSHMEM
/// variable with what it maps to here.
#[test]
fn nvshmem_view() {
    let facts = parse(&info(&["-p"], &[]));
    let (major, minor, patch) = oxshmem::config::NVSHMEM_API_VERSION;
    assert!(
        facts["nvshmem:api"].starts_with(&format!("{major}.{minor}.{patch} (the host API of NVSHMEM {major}.{minor}"))
    );
    let header = concat!(env!("CARGO_MANIFEST_DIR"), "/../c/include");
    assert_eq!(
        oxshmem_tools::info::header_nvshmem_version(std::path::Path::new(header)),
        Some(oxshmem::config::NVSHMEM_API_VERSION),
        "bindings/c/include/nvshmem.h and oxshmem::config::NVSHMEM_API_VERSION disagree"
    );
    assert!(facts["nvshmem:header"].ends_with("bindings/c/include/nvshmem.h"), "{}", facts["nvshmem:header"]);
    let lib = &facts["nvshmem:library"];
    assert!(lib.contains("libnvshmem_host.so") && (lib.contains("oxshmem-install") || lib.contains(" -> ")), "{lib}");
    // Every NVSHMEM spelling oxshmem reads is listed, unset here, with its meaning.
    let mut spellings = 0;
    for v in oxshmem::config::shown_vars() {
        if let Some(name) = v.nvshmem_name() {
            let value = &facts[&format!("nvshmem:{name}")];
            assert!(value.starts_with("unset -> "), "{name}: {value}");
            spellings += 1;
        }
    }
    // NVSHMEM_SYMMETRIC_SIZE, NVSHMEM_DEBUG and NVSHMEM_BOOTSTRAP at least (checked below).
    assert!(spellings >= 3, "only {spellings} NVSHMEM spellings checked");
    assert_eq!(facts["nvshmem:NVSHMEM_SYMMETRIC_SIZE"], "unset -> same as SHMEM_SYMMETRIC_SIZE");
    assert!(facts["nvshmem:without effect"].ends_with("none set"), "{}", facts["nvshmem:without effect"]);

    // What each maps to follows the environment; oxshmem's own variables win.
    let facts = parse(&info(
        &["-p"],
        &[
            ("NVSHMEM_BOOTSTRAP_PMI", "PMI-2"),
            ("NVSHMEM_DISABLE_P2P", "1"),
            ("NVSHMEM_IB_ENABLE_IBGDA", "1"),
            ("NVSHMEM_DEBUG", "INFO"),
            ("SHMEM_DEBUG", "0"),
            ("NVSHMEM_HCA_LIST", "mlx5_0:1"),
        ],
    ));
    assert_eq!(facts["nvshmem:NVSHMEM_BOOTSTRAP_PMI"], "\"PMI-2\" -> OXSHMEM_BOOTSTRAP=pmi2");
    assert_eq!(facts["nvshmem:NVSHMEM_DISABLE_P2P"], "\"1\" -> OXSHMEM_DEVICE_CHANNEL=ibgda for every peer");
    assert_eq!(facts["nvshmem:NVSHMEM_IB_ENABLE_IBGDA"], "\"1\" -> OXSHMEM_DEVICE_REMOTE=ibgda");
    let debug = &facts["nvshmem:NVSHMEM_DEBUG"];
    assert!(
        debug.starts_with("\"INFO\" -> INFO: ") && debug.ends_with("(SHMEM_DEBUG is set and wins over it)"),
        "{debug}"
    );
    assert!(facts["nvshmem:without effect"].ends_with("set now: NVSHMEM_HCA_LIST"));
    let facts = parse(&info(&["-p"], &[("NVSHMEM_BOOTSTRAP", "MPI"), ("OXSHMEM_BOOTSTRAP", "pmi1")]));
    assert_eq!(facts["nvshmem:NVSHMEM_BOOTSTRAP"], "\"MPI\" -> not read: OXSHMEM_BOOTSTRAP is set and wins");

    let text = info(&[], &[]);
    assert!(text.contains("NVSHMEM (the same library under NVSHMEM's names):\n"), "{text}");
    assert!(text.contains(&format!("  api: {major}.{minor}.{patch} ")), "{text}");
    assert!(text.contains("  NVSHMEM_BOOTSTRAP: unset -> the launcher's bootstrap, detected"), "{text}");
}
