//! The deprecated active-set collectives (OpenSHMEM 1.5 §9.9, `PE_start`, `logPE_stride`,
//! `PE_size`, `pSync`), across real jobs of 1, 2, 3, 4 and 8 PEs.
//!
//! The PE program is `pe-coll active START LOGSTRIDE SIZE`: barrier and sync, broadcast32/64
//! from every root (the root's `dest` must stay untouched), collect and fcollect32/64,
//! alltoall(s)32/64 and `TYPE_OP_to_all` reductions, all back to back on one `pSync` with no
//! barrier between them, and an overlapping set (the world) in between. PEs outside the set
//! get an error instead of joining.

use oxshmem_tests::job_ok;

const PE_COLL: &str = env!("CARGO_BIN_EXE_pe-coll");

/// Runs the active set `(start, log_stride, size)` on `n` PEs and checks every PE's verdict.
fn active_set(n: usize, start: usize, log: usize, size: usize) {
    let r = job_ok(n, PE_COLL, &["active", &start.to_string(), &log.to_string(), &size.to_string()]);
    let members: Vec<usize> = (0..size).map(|i| start + i * (1 << log)).collect();
    for pe in 0..n {
        let want = if members.contains(&pe) {
            format!("PE {pe}: active set ok")
        } else {
            format!("PE {pe}: not in the active set: refused")
        };
        assert!(r.stdout.lines().any(|l| l == want), "set {start}/{log}/{size}: expected {want:?}\n{}", r.report());
    }
}

/// Every PE, stride 1.
#[test]
fn whole_world_set() {
    for n in [1, 2, 3, 4, 8] {
        active_set(n, 0, 0, n);
    }
}

/// `logPE_stride` 1: every other PE, from PE 0.
#[test]
fn stride_two_set() {
    for n in [2, 3, 4, 8] {
        active_set(n, 0, 1, n.div_ceil(2));
    }
}

/// `PE_start` above 0, with strides 1 and 2 (on 8 PEs: PEs 1..8 and PEs 1, 3, 5, 7).
#[test]
fn set_starting_above_pe_zero() {
    for n in [2, 3, 4, 8] {
        active_set(n, 1, 0, n - 1);
    }
    for n in [4, 8] {
        active_set(n, 1, 1, n / 2);
    }
    active_set(8, 2, 0, 5);
}

/// A set of one PE that is not PE 0: the others are refused.
#[test]
fn single_pe_set() {
    active_set(3, 2, 0, 1);
    active_set(4, 1, 1, 1);
}
