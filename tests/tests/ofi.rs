//! The libfabric network transport, across real jobs of 2 and 4 PEs on one machine:
//! `OXSHMEM_TRANSPORT=ofi` maps no peer, so every operation between PEs — RMA, atomics, waits,
//! ordering, the collectives' flags and mailboxes — goes through `tcp;ofi_rxm` on the loopback
//! interface. The PE programs and their checks are the ones of the other areas' tests; what
//! differs is the path underneath. Also: other providers, and the errors of a peer that cannot
//! be reached and of a provider without usable atomics. Two "hosts" under Hydra are in
//! `ofi_nodes.rs`.
//!
//! Needs the `ofi` feature (and so libfabric-dev and libclang-dev to build):
//! `cargo test -p oxshmem-tests --features ofi --test ofi`.

#![cfg(feature = "ofi")]

use std::time::Duration;

use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_ok};

const PE_RMA: &str = env!("CARGO_BIN_EXE_pe-rma");
const PE_AMO: &str = env!("CARGO_BIN_EXE_pe-amo");
const PE_WAIT: &str = env!("CARGO_BIN_EXE_pe-wait");
const PE_ORDER: &str = env!("CARGO_BIN_EXE_pe-order");
const PE_COLL: &str = env!("CARGO_BIN_EXE_pe-coll");
const PE_SYNC: &str = env!("CARGO_BIN_EXE_pe-sync");
const PE_TEAM: &str = env!("CARGO_BIN_EXE_pe-team");
const PE_FAULT: &str = env!("CARGO_BIN_EXE_pe-fault");

const COUNTS: [usize; 2] = [2, 4];

/// A job whose PEs reach each other only through `provider` on the loopback interface.
fn on(provider: &str, n: usize, program: &str, args: &[&str]) -> Job {
    Job::new(n, program)
        .args(args)
        .env("OXSHMEM_TRANSPORT", "ofi")
        .env("FI_PROVIDER", provider)
        .env("FI_TCP_IFACE", "lo")
        .env("FI_SOCKETS_IFACE", "lo")
        .env("FI_UDP_IFACE", "lo")
        .env("OXSHMEM_TIMEOUT", "30")
}

fn ofi(n: usize, program: &str, args: &[&str]) -> Job {
    on("tcp;ofi_rxm", n, program, args)
}

#[track_caller]
fn ok(n: usize, program: &str, args: &[&str]) -> JobResult {
    let r = ofi(n, program, args).run();
    assert_job_ok(&r);
    r
}

#[track_caller]
fn failed_saying(r: &JobResult, texts: &[&str]) {
    assert!(!r.status.success() && !r.hard_killed, "the job should have failed\n{}", r.report());
    let all = format!("{}{}", r.stdout, r.stderr);
    for t in texts {
        assert!(all.contains(t), "expected {t:?} in the job's output\n{}", r.report());
    }
}

#[test]
fn rma_every_type_and_size() {
    for n in COUNTS {
        let r = ok(n, PE_RMA, &["types", "1", "1000", "1048576"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe} checked 15 types at sizes [1, 1000, 1048576]"));
    }
}

#[test]
fn rma_strided_raw_and_accessible() {
    for n in COUNTS {
        ok(n, PE_RMA, &["strided"]);
        let r = ok(n, PE_RMA, &["raw"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: raw RMA ok"));
        let r = ok(n, PE_RMA, &["accessible"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: accessible ok"));
    }
    // An odd size past the bounce slots: a long put straight from the user's buffer.
    ok(2, PE_RMA, &["raw", "1048573"]);
}

#[test]
fn atomics() {
    for n in COUNTS {
        ok(n, PE_AMO, &["ops"]);
        ok(n, PE_AMO, &["float"]);
        ok(n, PE_AMO, &["bits"]);
        ok(n, PE_AMO, &["add", "2000"]);
        ok(n, PE_AMO, &["cas", "1000"]);
        ok(n, PE_AMO, &["tickets", "500"]);
    }
}

#[test]
fn waits_see_remote_puts() {
    for n in COUNTS {
        ok(n, PE_WAIT, &["cmp"]);
        ok(n, PE_WAIT, &["vector"]);
    }
}

#[test]
fn fence_quiet_and_barrier_order() {
    for n in COUNTS {
        let r = ok(n, PE_ORDER, &["fence", "1000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 1000 shmem_fence iterations ok"));
        let r = ok(n, PE_ORDER, &["quiet", "1000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 1000 shmem_quiet iterations ok"));
        ok(n, PE_ORDER, &["barrier-puts", "500"]);
        ok(n, PE_ORDER, &["barrier-count", "1000"]);
    }
}

#[test]
fn collectives() {
    for n in COUNTS {
        let r = ok(n, PE_COLL, &["sync", "world", "100"]);
        assert!(r.stdout.contains("100 rounds of team sync ok"), "{}", r.report());
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 100 rounds of team sync ok"));
        for case in ["bcast", "collect", "fcollect", "alltoall", "alltoalls", "raw"] {
            let r = ok(n, PE_COLL, &[case, "world"]);
            // Every PE of the world team got to the end of the case, not only some.
            let said = match case {
                "bcast" => "broadcast ok".to_string(),
                "raw" => "raw collectives ok".to_string(),
                _ => format!("{case} ok"),
            };
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: {said}"));
        }
        for kind in ["int", "float"] {
            let r = ok(n, PE_COLL, &["reduce", "world", kind]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: {kind} reductions ok"));
        }
    }
    // On a strided team and a team that leaves PE 0 out.
    ok(4, PE_COLL, &["bcast", "1:2:2"]);
    ok(4, PE_COLL, &["reduce", "0:3:2", "int"]);
}

#[test]
fn signals_locks_contexts_teams() {
    for n in COUNTS {
        ok(n, PE_SYNC, &["signal-ring", "300", "100"]);
        ok(n, PE_SYNC, &["signal-add", "1000"]);
        ok(n, PE_SYNC, &["lock-count", "100"]);
        ok(n, PE_SYNC, &["ctx-ops", "world"]);
        ok(n, PE_TEAM, &["strided"]);
        ok(n, PE_TEAM, &["nested"]);
    }
}

/// A context's quiet waits for its own operations only: on PE 0, thread A's puts to PE 1 (which
/// PE 0 stops meanwhile) stay in flight on A's context while thread B's context quiets and
/// returns; B's count is 0 and A's is not. Then PE 1 continues, A quiets, and A's data is at
/// PE 1. A's puts go through the transport's bounce slots (64 of 64 KiB; a larger put waits for
/// its completion, which a stopped target never gives), about 3.5 MiB in all: more than the
/// loopback sockets take in while their reader is stopped, so some stay in flight. With a few
/// KiB (16 × 1 KiB, 8 × 4 KiB, as this test had) `tcp;ofi_rxm` now and then reported every
/// write complete once it sat in the socket buffers.
#[test]
fn context_quiet_waits_for_its_own_operations_only() {
    for (count, size) in [("56", "65536"), ("56", "65000")] {
        let r = ok(3, PE_SYNC, &["ctx-independent", count, size]);
        assert_each_pe_says(&r, 3, |pe| format!("PE {pe}: contexts completed independently"));
        let out = &r.stdout;
        assert!(
            out.contains("of context A's operations in flight (PE 1 stopped)")
                && !out.contains("with 0 of context A's"),
            "context B's quiet should have returned with A's puts in flight\n{}",
            r.report()
        );
    }
}

/// The same transport over other providers: `sockets` (automatic progress, no progress
/// thread) and `shm` (`FI_MR_VIRT_ADDR`; manual progress by the polling thread). Not
/// `udp;ofi_rxd`: libfabric 1.17's rxd segfaults inside `fi_cq_read` in the ordering cases.
#[test]
fn other_providers() {
    for p in ["sockets", "shm"] {
        for (prog, args) in [
            (PE_RMA, &["raw"][..]),
            (PE_AMO, &["ops"][..]),
            (PE_ORDER, &["fence", "200"][..]),
            (PE_ORDER, &["fence-small", "500"][..]),
        ] {
            let r = on(p, 2, prog, args).env("FI_SOCKETS_PE_WAITTIME", "0").run();
            assert_job_ok(&r);
        }
    }
}

/// A peer whose exchanged address leads nowhere: the first operation to it (init's barrier: a
/// tagged signal, written with `fi_write`, or an atomic) fails after `OXSHMEM_TIMEOUT`, and the
/// error names the routine, the libfabric call, the peer and the provider.
#[test]
fn unreachable_peer_is_named() {
    let r = ofi(2, PE_RMA, &["raw"]).env("OXSHMEM_OFI_TEST_BAD_PEER", "1").env("OXSHMEM_TIMEOUT", "3").run();
    failed_saying(
        &r,
        &["PE 0: shmem_init: fi_", " to PE 1 (", "(OXSHMEM_TIMEOUT): PE 1 is unreachable", "tcp;ofi_rxm"],
    );
}

/// A peer that stops (SIGSTOP: it neither runs nor serves one-sided operations, like a hung
/// host): what its peers are blocked on fails after `OXSHMEM_TIMEOUT`, and the error names the
/// routine, the libfabric call or the step, and the peer. A fetch-add waits for its own
/// answer; a get first waits for the earlier puts to the same peer to complete remotely, then
/// for its own read.
#[test]
fn frozen_peer_is_named_with_routine_and_step() {
    let r =
        ofi(2, PE_AMO, &["tickets", "2000000"]).env("OXSHMEM_TIMEOUT", "2").freeze_pe(0, Duration::from_secs(3)).run();
    failed_saying(
        &r,
        &[
            "PE 1: shmem_atomic_fetch_add: fi_fetch_atomic to PE 0 (a 64-bit atomic FetchAdd(1) at offset 0x",
            "did not complete within 2s (OXSHMEM_TIMEOUT): PE 0 is unreachable, dead or not making progress",
        ],
    );
    // Nobody dies in this put/get loop (the victim, PE 99, does not exist).
    let r = ofi(2, PE_FAULT, &["sigkill", "putloop", "99"])
        .env("OXSHMEM_TIMEOUT", "2")
        .freeze_pe(0, Duration::from_secs(3))
        .run();
    failed_saying(&r, &["did not complete within 2s (OXSHMEM_TIMEOUT): PE 0 is unreachable"]);
    // Where PE 1 was when PE 0 stopped is a race: the get waits for the earlier put, or the
    // put had completed and the get waits for its own read. Either way the get is named.
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("PE 1: shmem_get: the 1 earlier fi_write/fi_atomic to PE 0 still in flight")
            || all.contains("PE 1: shmem_get: fi_read to PE 0 (a get of 65536 bytes from offset 0x0 of segment 0)"),
        "expected the get's step in the job's output\n{}",
        r.report()
    );
}

/// `net` advertises atomics but validates none: init refuses, naming provider and operation.
#[test]
fn provider_without_usable_atomics_is_refused() {
    let r = on("net", 2, PE_RMA, &["raw"]).run();
    failed_saying(&r, &["cannot do 32-bit compare-swap", "provider net"]);
}

#[test]
fn missing_provider_is_a_clear_error() {
    let r = on("no-such-provider", 2, PE_RMA, &["raw"]).run();
    failed_saying(&r, &["no libfabric endpoint", "no-such-provider", "FI_EP_RDM"]);
}
