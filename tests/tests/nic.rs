//! The IBGDA channel's software NIC in real two-PE jobs (`OXSHMEM_DEVICE_CHANNEL=ibgda`):
//! its error path — malformed or unauthorised work requests posted unchecked from device
//! threads come back as error completions naming the PE, the target, the WQE, the opcode and
//! the syndrome, and latch the queue in error — and what the device API never posts itself
//! (masked atomics with field boundaries, general masked compare-and-swap, fenced WQEs), in
//! both completion-queue modes; the normal device stress on tiny queues with a normal CQ; and
//! configuration errors.
//!
//! The PE programs are `pe-nic` and, for the stress case, `pe-device`.

use std::time::Duration;

use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_ok, assert_stderr_has, assert_stdout_has};

const PE_NIC: &str = env!("CARGO_BIN_EXE_pe-nic");
const PE_DEVICE: &str = env!("CARGO_BIN_EXE_pe-device");
const PE_MOE: &str = env!("CARGO_BIN_EXE_pe-moe");

/// Runs `program args...` on 2 PEs over IBGDA with `env`, within `secs` seconds.
fn run(program: &str, args: &[&str], env: &[(&str, &str)], secs: u64) -> JobResult {
    let job = Job::new(2, program)
        .args(args)
        .env("OXSHMEM_DEVICE_CHANNEL", "ibgda")
        .timeout(Duration::from_secs(secs))
        .envs(env);
    job.run()
}

/// Ten malformed or unauthorised work requests, each on a fresh device, in both CQ modes: the
/// report names the PE, the thread, the WQE index, the opcode, the target PE and the syndrome
/// (as mlx5 numbers them); the queue latches the error, so a later put and p on it fail at once
/// with the same error instead of waiting for the timeout (30 s here); finalize reports it
/// again; nothing reaches the target; a good device works afterwards.
#[test]
fn nic_errors_name_the_opcode_and_syndrome_and_latch_the_queue() {
    for mode in ["collapsed", "normal"] {
        let r = run(PE_NIC, &["errors"], &[("OXSHMEM_IBGDA_CQ_MODE", mode), ("OXSHMEM_TIMEOUT", "30")], 120);
        assert_job_ok(&r);
        for (label, what) in [
            ("bad rkey", "(RDMA_WRITE) on the IBGDA queue to PE {t}: REMOTE_ACCESS_ERR (syndrome 0x13)"),
            (
                "remote address past the heap's end",
                "(RDMA_READ) on the IBGDA queue to PE {t}: REMOTE_ACCESS_ERR (syndrome 0x13)",
            ),
            ("bad lkey", "(RDMA_WRITE) on the IBGDA queue to PE {t}: LOCAL_PROT_ERR (syndrome 0x04)"),
            (
                "local range past the heap's end",
                "(RDMA_WRITE) on the IBGDA queue to PE {t}: LOCAL_PROT_ERR (syndrome 0x04)",
            ),
            (
                "atomic result past the scratch buffer",
                "(ATOMIC_FA) on the IBGDA queue to PE {t}: LOCAL_PROT_ERR (syndrome 0x04)",
            ),
            ("unknown opcode", "(unknown opcode) on the IBGDA queue to PE {t}: LOCAL_QP_OP_ERR (syndrome 0x02)"),
            (
                "DS that does not fit the opcode",
                "(RDMA_WRITE) on the IBGDA queue to PE {t}: LOCAL_LENGTH_ERR (syndrome 0x01)",
            ),
            (
                "two-slot masked CS with one slot's DS",
                "(ATOMIC_MASKED_CS) on the IBGDA queue to PE {t}: LOCAL_LENGTH_ERR (syndrome 0x01)",
            ),
            ("wrong WQE index", "(RDMA_WRITE) on the IBGDA queue to PE {t}: LOCAL_QP_OP_ERR (syndrome 0x02)"),
            ("wrong QP number", "(RDMA_WRITE) on the IBGDA queue to PE {t}: LOCAL_QP_OP_ERR (syndrome 0x02)"),
        ] {
            for pe in 0..2 {
                // A fresh device: the bad WQE is the first on its queue, index 0.
                let what = what.replace("{t}", &(1 - pe).to_string());
                let head = format!("PE {pe}: device kernel (block 0, thread 0): the NIC failed WQE 0 {what}");
                assert_stdout_has(&r, &format!("ERR {label}: {head}; the queue is in error"));
                assert_stdout_has(&r, &format!("ERR {label} (put after): {head}"));
                assert_stdout_has(&r, &format!("ERR {label} (finalize): {head}"));
            }
        }
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: 10 NIC errors reported, latched and survived (ibgda)"));
    }
}

/// Masked fetch-and-add with field boundaries (two 16-bit fields in a u32; 16/16/32-bit fields
/// in a u64), general masked compare-and-swap on 4 and 8 bytes (the latter a two-slot WQE plus
/// its NOP) hitting and missing, and fenced WQEs: prior values and new values are what
/// `NicAtomic::apply` predicts, on both sides, in both CQ modes.
#[test]
fn masked_atomics_and_fences_execute_as_specified() {
    for mode in ["collapsed", "normal"] {
        let r = run(PE_NIC, &["atomics"], &[("OXSHMEM_IBGDA_CQ_MODE", mode)], 60);
        assert_job_ok(&r);
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: masked atomics and fenced WQEs ok ({mode} CQ)"));
    }
}

/// The normal device stress (4 blocks × 16 device threads, 24 operations each, 2 rounds) on
/// 8- and 16-slot send queues with a normal CQ of 4 entries, and with a collapsed CQ: every
/// queue wraps thousands of times, producers wait for slots and the NIC for CQ space, and
/// nothing is lost or duplicated. Several runs: the interleavings that matter (a producer
/// descheduled inside the publish) are the scheduler's to choose.
#[test]
fn stress_on_tiny_queues_in_both_cq_modes() {
    for (mode, nwqes) in [("normal", "8"), ("collapsed", "8"), ("normal", "16"), ("collapsed", "16")] {
        let env = [("OXSHMEM_IBGDA_CQ_MODE", mode), ("OXSHMEM_IBGDA_NCQES", "4"), ("OXSHMEM_IBGDA_NWQES", nwqes)];
        let r = run(PE_DEVICE, &["stress", "4", "16", "24", "2"], &env, 180);
        assert!(r.status.success() && !r.hard_killed, "{mode} CQ, {nwqes} slots: the job failed\n{}", r.report());
        for pe in 0..2 {
            assert_stdout_has(&r, &format!("PE {pe}: stress ok: "));
        }
        assert_stdout_has(&r, "IBGDA send queues wrapped");
        assert!(!r.stdout.contains("QUEUES DID NOT WRAP"), "{}", r.report());
    }
}

/// Doorbells rung while the NIC thread sleeps, with nobody waiting for a completion: 256
/// device threads per PE each `p` to the neighbour and wait for its host's acknowledgement, 30
/// rounds, the NIC thread's nap set to ten minutes, in both CQ modes — every value arrives, so
/// the ringing threads serve their own doorbells and those of the threads that found the NIC
/// taken.
#[test]
fn doorbells_rung_while_the_nic_sleeps_are_served() {
    for mode in ["collapsed", "normal"] {
        let env = [("OXSHMEM_SOFTNIC_NAP_MS", "600000"), ("OXSHMEM_IBGDA_CQ_MODE", mode)];
        let r = run(PE_NIC, &["unattended", "30"], &env, 120);
        assert_job_ok(&r);
        assert_each_pe_says(&r, 2, |pe| {
            format!("PE {pe}: 30 rounds of 256 unattended p delivered with the NIC thread asleep")
        });
    }
}

/// Every queue size the configuration accepts runs every operation: with
/// `OXSHMEM_IBGDA_NWQES=8` the largest inline put (four slots and a NOP) and put_signal (four
/// slots and the signal) must work — or init must reject 8, naming the variable.
#[test]
fn the_smallest_accepted_queue_runs_the_largest_inline_put() {
    let r = run(PE_NIC, &["small-queue"], &[("OXSHMEM_IBGDA_NWQES", "8")], 60);
    assert_job_ok(&r);
    let ok = |pe: usize| format!("PE {pe}: OXSHMEM_IBGDA_NWQES=8: the largest inline put and put_signal work");
    let rejected = |pe: usize| format!("PE {pe}: OXSHMEM_IBGDA_NWQES=8 rejected at init: ");
    for pe in 0..2 {
        assert!(r.stdout.contains(&ok(pe)) || r.stdout.contains(&rejected(pe)), "PE {pe}\n{}", r.report());
    }
}

/// Malformed queue settings are init errors naming the variable and the value: `shmem_init`
/// refuses them (every variable of the table is checked there, whether or not the device
/// layer starts: issue 32, item 11). A well-formed value that the device layer cannot serve
/// here (`OXSHMEM_IBGDA_QUEUE_MEM=gpu` with CPU device threads) is the device init's error, and
/// a P2P device works afterwards.
#[test]
fn bad_queue_settings_are_init_errors() {
    for (var, value, why) in [
        ("OXSHMEM_IBGDA_NWQES", "bogus", "expected a power of two from 8 to 32768"),
        ("OXSHMEM_IBGDA_NWQES", "12", "expected a power of two from 8 to 32768"),
        ("OXSHMEM_IBGDA_CQ_MODE", "bogus", "expected collapsed, normal"),
        ("OXSHMEM_SOFTNIC_NAP_MS", "soon", "expected milliseconds"),
        ("OXSHMEM_SOFTNIC_LAYOUT", "bnxt", "expected mlx5, hns"),
        ("OXSHMEM_SOFTNIC_DOORBELL", "bell", "expected record, register"),
        ("OXSHMEM_IBGDA_NIC_HANDLER", "dpu", "expected auto, gpu, cpu"),
        ("OXSHMEM_IBGDA_QUEUE_MEM", "vram", "expected host, hostmem, auto, gpu, gpumem"),
    ] {
        let r = run(PE_NIC, &["bad-env", var], &[(var, value)], 60);
        assert!(!r.status.success() && !r.hard_killed, "{}", r.report());
        assert_stderr_has(&r, &format!(": shmem_init: environment variable {var}={value:?}: {why}"));
    }
    let (var, why) =
        ("OXSHMEM_IBGDA_QUEUE_MEM", "OXSHMEM_IBGDA_QUEUE_MEM=gpu: CPU device threads' queues are host memory");
    let r = run(PE_NIC, &["bad-env", var], &[(var, "gpu")], 60);
    assert_job_ok(&r);
    for pe in 0..2 {
        assert_stdout_has(&r, &format!("ERR {var}: PE {pe}: device init: {why}"));
    }
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: {var} rejected"));
}

/// The IBGDA set-up through the NIC provider seam with the software NIC's provider, in 2- and
/// 4-PE jobs: every queue pair in RTS, connected to the matching queue pair of its peer (QP
/// numbers and port addresses exchanged through the bootstrap), distinct nonzero keys; and
/// `OXSHMEM_NIC=devx` refused clearly where this build has no hardware provider.
#[test]
fn queue_pairs_are_connected_through_the_provider_seam() {
    for n in [2, 4] {
        let r = Job::new(n, PE_NIC)
            .args(&["connect"])
            .env("OXSHMEM_DEVICE_CHANNEL", "ibgda")
            .env("OXSHMEM_IBGDA_NUM_RC_PER_PE", "3")
            .timeout(Duration::from_secs(120))
            .run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: {} queue pairs connected through the soft provider", 3 * n));
        assert!(r.stdout.contains("ERR devx: PE 0: nvshmem_init: no RDMA device: OXSHMEM_NIC=devx"), "{}", r.report());
        assert!(
            r.stdout.contains(
                "ERR devx hns: PE 0: nvshmem_init: OXSHMEM_SOFTNIC_LAYOUT: hns: OXSHMEM_NIC=devx drives mlx5"
            ),
            "{}",
            r.report()
        );
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: {} hns queue pairs connected", 3 * n));
    }
}

/// The device API's exact cases (RMA, atomics, signals, ordering) on `n` PEs over IBGDA with
/// `env`; each PE must say its case passed. The jobs, for more checks.
fn device_cases(n: usize, env: &[(&str, &str)]) -> Vec<JobResult> {
    let mut out = Vec::new();
    for (args, line) in [
        (&["rma"][..], "device rma matches host"),
        (&["amo"][..], "device atomics match host"),
        (&["signal"][..], "device signals match host"),
        (&["order", "100"][..], "100 signalled rounds on 8 device threads ok"),
    ] {
        let job = Job::new(n, PE_DEVICE).args(args).env("OXSHMEM_DEVICE_CHANNEL", "ibgda").envs(env);
        let r = job.timeout(Duration::from_secs(180)).run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: {line} (ibgda)"));
        out.push(r);
    }
    out
}

/// The many-thread stress on 16-slot queues (4-entry CQ) at 2 PEs with `env`: exact, and the
/// queues wrap.
fn stress_on_tiny_queues(env: &[(&str, &str)]) {
    let mut all = vec![("OXSHMEM_IBGDA_NWQES", "16"), ("OXSHMEM_IBGDA_NCQES", "4")];
    all.extend_from_slice(env);
    let r = run(PE_DEVICE, &["stress", "4", "16", "24", "2"], &all, 180);
    assert_job_ok(&r);
    for pe in 0..2 {
        assert_stdout_has(&r, &format!("PE {pe}: stress ok: "));
    }
    assert!(!r.stdout.contains("QUEUES DID NOT WRAP"), "{}", r.report());
}

/// A NIC that learns of new work from a doorbell register, as hardware does: the software
/// NIC reads the producer index from a register per queue pair
/// (`OXSHMEM_SOFTNIC_DOORBELL=register`), so nothing runs that no register write announced.
/// The device threads write the registers themselves (`OXSHMEM_IBGDA_NIC_HANDLER=auto`), or
/// a CPU thread of the PE rings for them (`cpu`, NVSHMEM's fallback for a GPU that cannot map
/// the NIC's register page): RMA, atomics, signals, ordering and the many-thread stress on
/// tiny queues, exact as ever, at 2 and 4 PEs; with `cpu` the ringer says it rang.
#[test]
fn doorbell_registers_written_by_producers_or_a_cpu_ringer() {
    for handler in ["auto", "cpu"] {
        let env = [("OXSHMEM_SOFTNIC_DOORBELL", "register"), ("OXSHMEM_IBGDA_NIC_HANDLER", handler)];
        for n in [2, 4] {
            let logged = [env[0], env[1], ("OXSHMEM_LOG", "nic=debug")];
            for r in device_cases(n, &logged) {
                for pe in 0..n {
                    let says = |what: &str| {
                        r.stderr
                            .lines()
                            .any(|l| l.starts_with(&format!("PE {pe} ")) && l.contains(what) && !l.contains("writes=0"))
                    };
                    let rang = says("a CPU thread rings the NIC for the producers") && says("the CPU ringer stopped");
                    assert_eq!(rang, handler == "cpu", "{handler}: PE {pe}'s ringer\n{}", r.report());
                }
            }
        }
        stress_on_tiny_queues(&env);
    }
}

/// The second NIC layout end to end: the software NIC standing in for a HiSilicon hns NIC
/// (`OXSHMEM_SOFTNIC_LAYOUT=hns`), the producers writing hns WQEs through the unchanged device
/// API, in 2- and 4-PE jobs — RMA, every atomic (hns has only 8-byte fetch-add and
/// compare-swap: the rest are compare-and-swap loops, 4-byte ones on their 8-byte word), put
/// with signal (a signal set is such a loop after the data), data before its signal, the
/// many-thread stress wrapping tiny queues in both CQ modes, and MoE dispatch/combine, each
/// checked exactly as over mlx5 queues.
#[test]
fn the_hns_layout_serves_the_whole_device_api() {
    let hns = ("OXSHMEM_SOFTNIC_LAYOUT", "hns");
    for n in [2, 4] {
        device_cases(n, &[hns]);
    }
    for mode in ["normal", "collapsed"] {
        stress_on_tiny_queues(&[hns, ("OXSHMEM_IBGDA_CQ_MODE", mode)]);
    }
    for (n, mode) in [(2, "throughput"), (4, "low-latency")] {
        let r = Job::new(n, PE_MOE)
            .args(&["run", mode, "2", "resident", "64:8:4:256:11:random:0:2", "33:8:4:36:15:masked:0:2"])
            .env("OXSHMEM_DEVICE_CHANNEL", "ibgda")
            .env(hns.0, hns.1)
            .timeout(Duration::from_secs(180))
            .run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: moe ok ({mode}, ibgda)"));
    }
}
