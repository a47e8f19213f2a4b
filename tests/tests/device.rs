//! The device layer (`oxshmem-device`): device threads of the CPU kernel back end starting
//! one-sided operations themselves, across real jobs of 1, 2, 4 and 8 PEs, each case once over
//! the P2P channel, once over the proxy ring and once over the IBGDA queues consumed by the
//! software NIC (`OXSHMEM_DEVICE_CHANNEL`, which the PE program passes to `Device::init_with`).
//!
//! The PE program is `pe-device`. Every device operation is checked against the host API doing
//! the same thing on a second buffer; the stress cases check exact totals (nothing lost or
//! duplicated), unique dense tickets, data visible before its signal, and completion at
//! `quiet`; the error cases check the text `Stream::synchronize` reports.
//!
//! Not covered, and why: a non-symmetric address cannot be named through the safe API
//! (`DevPtr` is made only from a `SymSlice`, and `DevPtr::offset` past the end yields an
//! out-of-bounds error first, which is tested); forcing P2P to an unmapped peer needs a second
//! host (every peer's heap is mapped on one host).

use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_ok, assert_stderr_has, assert_stdout_has};

const PE_DEVICE: &str = env!("CARGO_BIN_EXE_pe-device");

const CHANNELS: [&str; 3] = ["p2p", "proxy", "ibgda"];

const COUNTS: [usize; 3] = [1, 2, 4];

/// Runs `pe-device args...` on `n` PEs with the channel forced to `ch`.
fn run(n: usize, ch: &str, args: &[&str], env: &[(&str, &str)]) -> JobResult {
    let job = Job::new(n, PE_DEVICE).args(args).env("OXSHMEM_DEVICE_CHANNEL", ch).envs(env);
    job.run()
}

#[track_caller]
fn run_ok(n: usize, ch: &str, args: &[&str]) -> JobResult {
    let r = run(n, ch, args, &[]);
    assert_job_ok(&r);
    r
}

/// put, put_nbi, get, get_nbi, p and g on eight element types, 1 … 100 000 elements, split over
/// eight device threads: the same result as the host API's put, put_nbi, get and p.
#[test]
fn rma_matches_the_host_api() {
    for ch in CHANNELS {
        for n in COUNTS {
            let r = run_ok(n, ch, &["rma"]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: device rma matches host ({ch})"));
        }
    }
}

/// The proxy channel with a spinning proxy thread (`OXSHMEM_PROXY_SPIN=1`, NVSHMEM's
/// dedicated proxy) and with a sleeping one (`0`) does the same work.
#[test]
fn proxy_spinning_or_sleeping_matches_the_host_api() {
    for spin in ["1", "0"] {
        for n in [1, 2] {
            let r = run(n, "proxy", &["rma"], &[("OXSHMEM_PROXY_SPIN", spin)]);
            assert_job_ok(&r);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: device rma matches host (proxy)"));
        }
    }
}

/// Every integer atomic on u32, i32, u64 and i64, and fetch/set/swap on f32 and f64: the same
/// fetched values and final state as the host API.
#[test]
fn atomics_match_the_host_api() {
    for ch in CHANNELS {
        for n in COUNTS {
            let r = run_ok(n, ch, &["amo"]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: device atomics match host ({ch})"));
        }
    }
}

/// put_signal and put_signal_nbi (Set, Add), signal_op, and signal_wait_until with every
/// comparison, 100 000-element payloads: the same data and signal words as the host API.
#[test]
fn signals_match_the_host_api() {
    for ch in CHANNELS {
        for n in COUNTS {
            let r = run_ok(n, ch, &["signal"]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: device signals match host ({ch})"));
        }
    }
}

/// 4 blocks × 64 device threads per PE (far more threads than cores) issue p, atomics and
/// fetch_add to every PE: every slot written exactly once, exact counters, unique dense
/// tickets, every p read back with g after quiet; 8 to 16 times `PROXY_RING_SLOTS` requests
/// per kernel, so the proxy ring wraps many times.
#[test]
fn many_device_threads_lose_and_duplicate_nothing() {
    // (PEs, blocks, threads per block, operations per thread, rounds); 8 × 40 runs the blocks
    // in two waves (4 at a time) with a partial warp in each.
    let shapes = [(2, 4, 64, 24, 2), (2, 8, 40, 16, 2), (4, 4, 64, 48, 3), (8, 4, 64, 24, 2)];
    for ch in CHANNELS {
        for (n, b, t, k, rounds) in shapes {
            let args = ["stress".to_string(), b.to_string(), t.to_string(), k.to_string(), rounds.to_string()];
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let r = run_ok(n, ch, &args);
            for pe in 0..n {
                assert_stdout_has(&r, &format!("PE {pe}: stress ok: "));
            }
            if ch == "ibgda" {
                assert!(
                    !r.stdout.contains("QUEUES DID NOT WRAP"),
                    "the stress case must wrap the IBGDA send queues\n{}",
                    r.report()
                );
            }
            if ch == "proxy" {
                assert!(
                    !r.stdout.contains("RING DID NOT WRAP"),
                    "the stress case must wrap the proxy ring\n{}",
                    r.report()
                );
            }
        }
    }
}

/// Eight device threads per PE send 256-word payloads around the ring for 300 rounds, with
/// put_signal, put_signal_nbi and put_nbi + fence + signal_op in turn; the receiver waits for
/// the signal and then checks every word.
#[test]
fn data_is_visible_before_its_signal() {
    for ch in CHANNELS {
        for n in COUNTS {
            let r = run_ok(n, ch, &["order", "300"]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 300 signalled rounds on 8 device threads ok ({ch})"));
        }
    }
}

/// put/put_nbi/get/get_nbi/put_signal in their _warp and _block forms, with 80 threads per
/// block (the third warp has 16 lanes), 10 rounds of new data; after its own quiet every member
/// sees everything its group fetched with get_nbi.
#[test]
fn warp_and_block_forms_with_a_partial_warp() {
    for ch in CHANNELS {
        for n in COUNTS {
            let r = run_ok(n, ch, &["group", "10"]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 10 rounds of warp and block forms ok ({ch})"));
        }
    }
}

/// barrier_all_block, barrier_all_warp (from a partial warp), sync_all_block and barrier_all
/// from one device thread per PE, 50 rounds each: after round r every PE's counter r is exactly
/// the number of PEs, so nobody left early.
#[test]
fn device_barriers_let_nobody_through_early() {
    for ch in CHANNELS {
        for n in [1, 2, 4, 8] {
            let r = run_ok(n, ch, &["barrier", "50"]);
            assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 50 rounds of each device barrier ok ({ch})"));
        }
    }
}

/// A PE out of range in p, put, get, an atomic, signal_op and put_signal: the error names the
/// PE, the operation and the device thread; the operation does nothing.
#[test]
fn pe_out_of_range_is_reported() {
    for ch in CHANNELS {
        let r = run_ok(2, ch, &["err-pe"]);
        for pe in 0..2 {
            assert_stdout_has(
                &r,
                &format!("ERR p to PE 9: PE {pe}: device nvshmem_p (block 1, thread 2): PE 9 is out of range (0..2)"),
            );
            assert_stdout_has(
                &r,
                &format!(
                    "ERR p to PE 9 (finalize): PE {pe}: device nvshmem_p (block 1, thread 2): PE 9 is out of range"
                ),
            );
        }
        assert_stdout_has(
            &r,
            "ERR put_signal to PE 9: PE 1: device nvshmem_put_signal (block 0, thread 0): PE 9 is out of range",
        );
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: out-of-range PEs reported ({ch})"));
    }
}

/// A device pointer offset past its object, a transfer longer than the object, an `_nbi`
/// source or destination too short: out-of-bounds errors; the first error wins.
#[test]
fn out_of_bounds_is_reported() {
    for ch in CHANNELS {
        let r = run_ok(2, ch, &["err-oob"]);
        assert_stdout_has(
            &r,
            "ERR p past the end (offset(8) of 8): PE 0: device nvshmem_p (block 0, thread 1): 1 elements at 0x",
        );
        assert_stdout_has(&r, "ERR put of 9 into 8: PE 1: device nvshmem_put (block 0, thread 0): 9 elements at 0x");
        assert_stdout_has(&r, "exceed the symmetric object");
        assert_stdout_has(&r, "ERR first error wins: PE 0: device nvshmem_p (block 0, thread 0): 1 elements at");
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: out-of-bounds device pointers reported ({ch})"));
    }
}

/// With the proxy stopped (finalize through one handle of the device, then more work through
/// another) and `OXSHMEM_TIMEOUT=1`, a blocking put and a p into a full ring report a stalled
/// ring after about a second instead of hanging. P2P has no ring: the same work succeeds.
#[test]
fn stalled_ring_is_reported() {
    for ch in CHANNELS {
        let r = run(2, ch, &["err-stall"], &[("OXSHMEM_TIMEOUT", "1")]);
        assert_job_ok(&r);
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: stalled ring reported ({ch})"));
        if ch == "ibgda" {
            assert_stdout_has(
                &r,
                "ERR blocking put with the software NIC stopped: PE 1: device nvshmem_put (block 0, thread 0): the IBGDA queue to PE 0 stalled: WQE index 1 not complete (completed up to 0)",
            );
            assert_stdout_has(&r, "ERR p into a full queue with the software NIC stopped: PE 0: device nvshmem_p");
        }
        if ch == "proxy" {
            assert_stdout_has(
                &r,
                "ERR blocking put with the proxy stopped: PE 1: device nvshmem_put (block 0, thread 0): the proxy ring stalled: request 0 not done after the timeout (0 completed); is the proxy alive?",
            );
            assert_stdout_has(
                &r,
                "ERR p into a full ring with the proxy stopped: PE 0: device nvshmem_p (block 0, thread 0): the proxy ring stalled: request 4096",
            );
        }
    }
}

/// A device thread that panics: the error names the kernel and the thread; the other threads
/// of the kernel run to the end; the job goes on.
#[test]
fn kernel_panic_is_reported() {
    for ch in CHANNELS {
        let r = run_ok(2, ch, &["err-panic"]);
        for pe in 0..2 {
            assert_stdout_has(
                &r,
                &format!("ERR a panicking kernel: PE {pe}: device kernel (block 1, thread 5): the kernel panicked"),
            );
        }
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: kernel panic reported ({ch})"));
    }
}

/// Kernels that end with put_nbi, get_nbi and put_signal_nbi outstanding: `synchronize` and
/// `finalize` complete them (the data arrives) and report no error.
#[test]
fn nbi_left_outstanding_is_completed() {
    for ch in CHANNELS {
        for n in COUNTS {
            let r = run_ok(n, ch, &["nbi-end"]);
            assert_each_pe_says(&r, n, |pe| {
                format!("PE {pe}: _nbi operations completed by synchronize and finalize ({ch})")
            });
        }
    }
}

/// Kernels that would wait forever with `OXSHMEM_DEVICE_BLOCKS=1`: a block that waits
/// (`signal_wait_until`, `wait_until`) for a block that starts only after it ends, a device
/// barrier one PE never enters, a block barrier one thread skips, and many waits in a row. With
/// `OXSHMEM_TIMEOUT=2` each ends after the timeout (twice it for the block barrier, once for
/// the many waits) with an error naming the launch site, the block and thread, the address,
/// the condition and the value seen, and the waiting threads nap instead of spinning.
#[test]
fn device_waits_that_would_deadlock_time_out() {
    for ch in CHANNELS {
        let env = [("OXSHMEM_DEVICE_BLOCKS", "1"), ("OXSHMEM_TIMEOUT", "2")];
        let r = run(2, ch, &["err-wait"], &env);
        assert_job_ok(&r);
        let file = "tests/src/bin/pe-device.rs";
        for pe in 0..2 {
            assert_stdout_has(
                &r,
                &format!(
                    "ERR signal_wait_until for a later block: PE {pe}: device nvshmem_signal_wait_until (kernel launched at {file}:"
                ),
            );
            assert_stdout_has(
                &r,
                &format!(
                    "ERR wait_until for a later block: PE {pe}: device nvshmem_wait_until (kernel launched at {file}:"
                ),
            );
            assert_stdout_has(&r, &format!("ERR sync_block that a thread skips: PE {pe}: device __syncthreads"));
        }
        assert_stdout_has(
            &r,
            "to become >= 1; it is 0; only 1 of the kernel's 2 blocks run at once (OXSHMEM_DEVICE_BLOCKS=1)",
        );
        assert_stdout_has(&r, "to become == -5; it is 0; only 1 of the kernel's 2 blocks run at once");
        assert_stdout_has(
            &r,
            "ERR device barrier without PE 1: PE 0: device nvshmem_barrier_all (kernel launched at tests/src/bin/pe-device.rs:",
        );
        assert_stdout_has(&r, "in the device barrier: PE 1 never arrived (its flag at 0x");
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: device waits that would deadlock time out ({ch})"));
    }
}

/// `OXSHMEM_DEVICE_BLOCKS` that is not a block count (`abc`, `0`, `-1`, `2.5`) is an init error
/// naming the variable and the value, instead of silently running 4 blocks at once: since
/// every variable of the table is checked at `shmem_init` (issue 32, item 11), init itself
/// fails, before the device layer starts.
#[test]
fn malformed_device_blocks_is_an_init_error() {
    for value in ["abc", "0", "-1", "2.5"] {
        let r = run(2, "p2p", &["rma"], &[("OXSHMEM_DEVICE_BLOCKS", value)]);
        assert!(!r.status.success() && !r.hard_killed, "{}", r.report());
        assert_stderr_has(
            &r,
            &format!(
                ": shmem_init: environment variable OXSHMEM_DEVICE_BLOCKS={value:?}: expected a whole number of blocks, at least 1"
            ),
        );
    }
}

/// `OXSHMEM_DEVICE_CHANNEL=bogus` fails `shmem_init` naming the variable and the choices (the
/// table's check); `init_with("rdma")` is a device init error that names the choices; a good
/// init works afterwards.
#[test]
fn unknown_channel_is_an_init_error() {
    let r = run(2, "bogus", &["bogus"], &[]);
    assert!(!r.status.success() && !r.hard_killed, "{}", r.report());
    assert_stderr_has(
        &r,
        ": shmem_init: environment variable OXSHMEM_DEVICE_CHANNEL=\"bogus\": expected auto, p2p, proxy, ibgda",
    );
    let r = run_ok(2, "auto", &["bogus"]);
    for pe in 0..2 {
        assert_stdout_has(&r, &format!("ERR init_with rdma: PE {pe}: device init: "));
    }
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: bogus channel rejected"));
}

/// The IBGDA and proxy channels to peers reached only through the network transport
/// (`OXSHMEM_TRANSPORT=ofi`, `tcp;ofi_rxm` on the loopback interface): the software NIC and
/// the proxy execute through libfabric. Forced IBGDA for every peer (every case), and the
/// automatic choice — P2P to itself, `OXSHMEM_DEVICE_REMOTE` to the others — with IBGDA and
/// with the proxy (a subset, to keep the suite's time in bounds).
#[cfg(feature = "ofi")]
#[test]
fn remote_channels_over_the_network_transport() {
    let net = [("OXSHMEM_TRANSPORT", "ofi"), ("FI_PROVIDER", "tcp;ofi_rxm"), ("FI_TCP_IFACE", "lo")];
    let cases: [(&str, &str, &[&str]); 3] = [
        ("ibgda", "proxy", &["rma", "amo", "signal", "order"]),
        ("auto", "ibgda", &["amo", "signal", "order"]),
        ("auto", "proxy", &["signal"]),
    ];
    for (ch, remote, what) in cases {
        for case in what {
            let (args, line): (&[&str], &str) = match *case {
                "rma" => (&["rma"], "device rma matches host"),
                "amo" => (&["amo"], "device atomics match host"),
                "signal" => (&["signal"], "device signals match host"),
                _ => (&["order", "50"], "50 signalled rounds on 8 device threads ok"),
            };
            let job = Job::new(2, PE_DEVICE)
                .args(args)
                .env("OXSHMEM_DEVICE_CHANNEL", ch)
                .env("OXSHMEM_DEVICE_REMOTE", remote)
                .timeout(std::time::Duration::from_secs(180))
                .envs(&net);
            let r = job.run();
            assert_job_ok(&r);
            assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: {line} ({ch})"));
        }
    }
}

/// The software NIC's error path: a bad remote key, a remote address past the heap's end, a bad
/// local key, a local range outside its region, an unknown opcode and a DS that does not fit
/// the opcode, each posted unchecked from a device thread, come back as error CQEs that the
/// device side reports with the PE, the target PE, the WQE's opcode and the syndrome; the queue
/// stays in error (a later put fails at once instead of hanging); a good device works after.
#[test]
fn nic_errors_are_reported_with_their_syndromes() {
    let r = run_ok(2, "ibgda", &["err-nic"]);
    assert_stdout_has(
        &r,
        "ERR NIC bad rkey: PE 0: device kernel (block 0, thread 0): the NIC failed WQE 0 (RDMA_WRITE) on the IBGDA queue to PE 1: REMOTE_ACCESS_ERR (syndrome 0x13); the queue is in error",
    );
    assert_stdout_has(
        &r,
        "ERR NIC unknown opcode: PE 1: device kernel (block 0, thread 0): the NIC failed WQE 0 (unknown opcode) on the IBGDA queue to PE 0: LOCAL_QP_OP_ERR (syndrome 0x02)",
    );
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: NIC errors reported (ibgda)"));
}
