//! Signals (OpenSHMEM 1.5 §9.8.1–9.8.3: `put_signal`, `put_signal_nbi`, `signal_fetch`,
//! `signal_wait_until`), across real jobs of 1, 2, 3, 4 and 8 PEs.
//!
//! The PE program is `pe-sync`. The property that matters: a PE that sees the signal sees
//! all the data sent with it — checked word by word for every round of a ring in which every
//! PE signals its right neighbour, with payloads up to 800 KB.

use oxshmem_tests::{assert_each_pe_says, assert_stdout_has, job_ok};

const PE_SYNC: &str = env!("CARGO_BIN_EXE_pe-sync");

const COUNTS: [usize; 5] = [1, 2, 3, 4, 8];

/// Many rounds of small payloads, `Set` and `Add`, blocking, `_nbi` and raw forms.
#[test]
fn data_is_visible_before_the_signal_small() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["signal-ring", "300", "100"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 300 signalled rounds of 100 words ok"));
    }
}

/// Fewer rounds of 100 000-word (800 KB) payloads.
#[test]
fn data_is_visible_before_the_signal_large() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["signal-ring", "12", "100000"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: 12 signalled rounds of 100000 words ok"));
    }
}

/// Every PE adds `pe + 1` into one signal word on PE 0, 2000 times: the total is exact.
#[test]
fn signal_adds_from_every_pe_give_an_exact_total() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["signal-add", "2000"]);
        assert_stdout_has(&r, &format!("signal total exact: {}", 2000 * n * (n + 1) / 2));
    }
}

/// `signal_wait_until` with each comparison (a condition only the new value meets, `Add`
/// wrapping to 0 included), `signal_fetch`, and the errors of bad arguments.
#[test]
fn signal_wait_until_every_comparison() {
    for n in COUNTS {
        let r = job_ok(n, PE_SYNC, &["signal-cmp"]);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: signal comparisons ok"));
        assert_stdout_has(
            &r,
            "ERR raw put_signal with sig_op 7: PE 0: shmem_putmem_signal: invalid argument: sig_op 7 is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD",
        );
    }
}
