//! Nodes as the launcher placed them (`OXSHMEM_NODES`), under MPICH's Hydra with two "hosts"
//! that are both this machine (`-launcher fork -hosts 127.0.0.2,127.0.0.3`).
//!
//! With a network transport in the build (`--features ofi`), the default groups PEs by the
//! launcher's placement: PEs of one "host" share memory, the two groups talk through ofi, each
//! group's endpoints bound to its own address. Without one, the default keeps the host
//! grouping (one node, shared memory everywhere), and asking for the launcher's grouping is an
//! init error that names the peer no transport reaches. Every PE says which transport reaches
//! each peer (`OXSHMEM_SHOW_PEERS=1`), and the tests hold that against the placement.
//!
//! Runs in the workspace's test command (no feature) and in the ofi suite:
//! `cargo test -p oxshmem-tests --features ofi --test ofi --test ofi_nodes`.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const PE_RMA: &str = env!("CARGO_BIN_EXE_pe-rma");
const PE_AMO: &str = env!("CARGO_BIN_EXE_pe-amo");
const PE_ORDER: &str = env!("CARGO_BIN_EXE_pe-order");
const PE_COLL: &str = env!("CARGO_BIN_EXE_pe-coll");

/// Round-robin placement over the two "hosts": PEs 0 and 2 on the first.
const ROUND_ROBIN: (&str, [usize; 4]) = ("127.0.0.2,127.0.0.3", [0, 1, 0, 1]);
/// Two slots per host: PEs 0 and 1 on the first.
const BLOCKS: (&str, [usize; 4]) = ("127.0.0.2:2,127.0.0.3:2", [0, 0, 1, 1]);

/// Whether this build's runtime has a network transport (the ofi feature).
fn networked() -> bool {
    !oxshmem::transport::NETWORK_TRANSPORTS.is_empty()
}

/// `mpiexec.hydra -launcher fork -hosts <hosts> -n 4 <program> <args>` with `env`, the runtime's
/// own variables cleared from the runner's environment and `OXSHMEM_SHOW_PEERS=1`; `None`
/// (after saying why) when Hydra is not installed and the launcher tests are not required.
fn hydra(hosts: &str, env: &[(&str, &str)], program: &str, args: &[&str]) -> Option<Command> {
    let hydra = oxshmem_test_require::tool("mpiexec.hydra", "apt-get install mpich")?;
    let mut c = Command::new(&hydra);
    for var in oxshmem::config::VARS.iter().chain(oxshmem_device::config::VARS) {
        c.env_remove(var.name);
    }
    c.env_remove(oxshmem_tests::TEST_TRANSPORT_VAR);
    c.args(["-launcher", "fork", "-hosts", hosts, "-n", "4", program])
        .args(args)
        .env("FI_PROVIDER", "tcp;ofi_rxm")
        .env("OXSHMEM_TIMEOUT", "30")
        .env("OXSHMEM_SHOW_PEERS", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    Some(c)
}

/// What one PE's `OXSHMEM_SHOW_PEERS` line says: its node, the PEs it reaches through shared
/// memory and through ofi, and its endpoint's address.
#[derive(Debug, PartialEq)]
struct Routes {
    node: usize,
    shm: Vec<usize>,
    ofi: Vec<usize>,
    endpoint: Option<String>,
}

/// Parses PE `pe`'s line: `oxshmem: PE 1: node 1 of 2 (host): shm 1,3; ofi 0,2 (tcp;ofi_rxm,
/// domain tcp, endpoint 127.0.0.3:41000); unreachable -`.
fn routes(out: &str, pe: usize) -> Routes {
    let prefix = format!("oxshmem: PE {pe}: node ");
    let line = out
        .lines()
        .find_map(|l| l.find(&prefix).map(|i| &l[i + prefix.len()..]))
        .unwrap_or_else(|| panic!("PE {pe} printed no peer table:\n{out}"));
    let list = |after: &str| -> Vec<usize> {
        let rest = line.split(after).nth(1).unwrap_or("-");
        let field = rest.split([' ', ';']).next().unwrap_or("-");
        if field == "-" { Vec::new() } else { field.split(',').map(|p| p.parse().expect("a PE number")).collect() }
    };
    Routes {
        node: line.split(' ').next().and_then(|k| k.parse().ok()).expect("a node number"),
        shm: list("): shm "),
        ofi: list("; ofi "),
        endpoint: line.split("endpoint ").nth(1).and_then(|r| r.split(':').next()).map(str::to_string),
    }
}

/// The routes PE `pe` must have when the nodes are `node_of`, PEs of one node share memory,
/// and the others are reached through ofi, bound to the address of its "host".
fn split_routes(node_of: &[usize; 4], pe: usize) -> Routes {
    let peers = |same: bool| (0..4).filter(|&p| (node_of[p] == node_of[pe]) == same).collect::<Vec<_>>();
    Routes {
        node: node_of[pe],
        shm: peers(true),
        ofi: peers(false),
        endpoint: Some(format!("127.0.0.{}", 2 + node_of[pe])),
    }
}

/// One node of four PEs, shared memory everywhere.
fn one_node() -> Routes {
    Routes { node: 0, shm: vec![0, 1, 2, 3], ofi: vec![], endpoint: None }
}

/// With the default `OXSHMEM_NODES`: under a networked build, the launcher's two nodes, shared
/// memory inside each and ofi between them, for round-robin placement (nodes 0,1,0,1) and
/// blocks (`host:2`, nodes 0,0,1,1); the data of RMA (up to 1 MiB), atomics, ordering and a
/// collective across the two is right. Without a network transport: one node.
#[test]
fn default_grouping_follows_the_launcher_when_there_is_a_network() {
    let cases: &[(&str, &[&str], &str)] = &[
        (PE_RMA, &["raw"], "PE {pe}: raw RMA ok"),
        (PE_RMA, &["types", "1", "1000", "1048576"], "PE {pe} checked 15 types at sizes [1, 1000, 1048576]"),
        (PE_AMO, &["tickets", "300"], "1200 unique tickets"),
        (PE_ORDER, &["fence", "300"], "PE {pe}: 300 shmem_fence iterations ok"),
        (PE_COLL, &["reduce", "world", "int"], "PE {pe}: int reductions ok"),
    ];
    for (hosts, node_of) in [ROUND_ROBIN, BLOCKS] {
        let mut ran = 0;
        for (prog, args, line) in cases {
            if !networked() && *prog != PE_RMA {
                continue;
            }
            ran += 1;
            let Some(c) = hydra(hosts, &[], prog, args) else { return };
            let (ok, out) = run_with_limit(c, Duration::from_secs(90));
            assert!(ok, "hydra -hosts {hosts} job {args:?} failed:\n{out}");
            for pe in 0..4 {
                let want = if networked() { split_routes(&node_of, pe) } else { one_node() };
                assert_eq!(routes(&out, pe), want, "PE {pe} under -hosts {hosts}:\n{out}");
                let line = line.replace("{pe}", &pe.to_string());
                assert!(out.contains(&line), "PE {pe} did not report {line:?}:\n{out}");
            }
        }
        // Without a network only the RMA cases run (two): never none of them.
        assert!(ran >= 2, "-hosts {hosts}: ran {ran} of the {} cases", cases.len());
    }
}

/// `OXSHMEM_NODES=host`: one node whatever the launcher says, shared memory everywhere.
#[test]
fn host_grouping_ignores_the_launcher() {
    let Some(c) = hydra(ROUND_ROBIN.0, &[("OXSHMEM_NODES", "host")], PE_RMA, &["raw"]) else { return };
    let (ok, out) = run_with_limit(c, Duration::from_secs(90));
    assert!(ok, "hydra job failed:\n{out}");
    for pe in 0..4 {
        assert_eq!(routes(&out, pe), one_node(), "PE {pe}:\n{out}");
    }
}

/// `OXSHMEM_NODES=launcher`: two nodes even without a network transport, and then init fails
/// on every PE naming a peer of the other node and why.
#[test]
fn launcher_grouping_without_a_network_names_the_unreachable_peer() {
    let Some(c) = hydra(BLOCKS.0, &[("OXSHMEM_NODES", "launcher")], PE_RMA, &["raw"]) else { return };
    let (ok, out) = run_with_limit(c, Duration::from_secs(90));
    if networked() {
        assert!(ok, "hydra job failed:\n{out}");
        for pe in 0..4 {
            assert_eq!(routes(&out, pe), split_routes(&BLOCKS.1, pe), "PE {pe}:\n{out}");
        }
        return;
    }
    assert!(!ok, "the job should have failed:\n{out}");
    // The first PE to fail ends the job, so which one reports is a race; whichever does names
    // a peer of the other node, and that node.
    let named = out.lines().find_map(|l| {
        let (me, rest) = l.split_once(": shmem_init: no transport reaches PE ")?;
        let me: usize = me.rsplit(' ').next()?.parse().ok()?;
        let (peer, rest) = rest.split_once(' ')?;
        let node = rest.split("(launcher node ").nth(1)?.split(')').next()?;
        Some((me, peer.parse::<usize>().ok()?, node.parse::<usize>().ok()?, l))
    });
    let Some((me, peer, node, line)) = named else { panic!("no PE named an unreachable peer:\n{out}") };
    let node_of = BLOCKS.1;
    assert!(
        node_of[me] != node_of[peer]
            && node == node_of[peer]
            && line.contains("it is on another host and this build has no network transport"),
        "PE {me} should name a PE of the other node, and that node:\n{out}"
    );
}

/// Two "hosts" with the network path forced for every peer (`OXSHMEM_TRANSPORT=ofi`): all
/// traffic goes through ofi, between the two addresses and within each.
#[cfg(feature = "ofi")]
#[test]
fn two_hosts_all_through_ofi() {
    let cases: &[(&str, &[&str], &str)] = &[
        (PE_RMA, &["raw"], "raw RMA ok"),
        (PE_ORDER, &["fence", "300"], "300 shmem_fence iterations ok"),
        (PE_COLL, &["reduce", "world", "int"], "int reductions ok"),
    ];
    for (prog, args, line) in cases {
        let Some(c) = hydra(ROUND_ROBIN.0, &[("OXSHMEM_TRANSPORT", "ofi")], prog, args) else { return };
        let (ok, out) = run_with_limit(c, Duration::from_secs(90));
        assert!(ok, "hydra job {args:?} failed:\n{out}");
        for pe in 0..4 {
            let r = routes(&out, pe);
            assert_eq!((r.shm, r.ofi.len()), (vec![pe], 3), "PE {pe}:\n{out}");
            assert_eq!(r.endpoint, Some(format!("127.0.0.{}", 2 + pe % 2)), "PE {pe}:\n{out}");
            assert!(out.contains(&format!("PE {pe}: {line}")), "PE {pe} did not report {line:?}:\n{out}");
        }
    }
}

/// Runs `c`, killing it after `limit`; returns success and its output (stdout and stderr, then
/// the failure lines the PEs wrote to files, which Hydra may not have forwarded).
fn run_with_limit(mut c: Command, limit: Duration) -> (bool, String) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "oxshmem-ofi-hydra-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    c.env(oxshmem_tests::pe::FAIL_DIR_VAR, &dir);
    let (ok, mut out) = oxshmem_tests::run_logged(&mut c, limit);
    // The PEs' failure lines that Hydra may not have forwarded (see `pe::fail`), after a marker.
    let mut fails: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("fail."))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    fails.sort();
    if !fails.is_empty() {
        out.push_str("\n<failure lines the PEs also wrote to files>\n");
        for l in fails {
            out.push_str(&l);
            out.push('\n');
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    (ok, out)
}
