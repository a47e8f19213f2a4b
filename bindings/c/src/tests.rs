//! The header's constants agree with the runtime's own values.

use oxshmem_rt::{Cmp, SignalOp, ThreadLevel};

const SHMEM_H: &str = include_str!(concat!(env!("OUT_DIR"), "/include/shmem.h"));

/// The value of `#define NAME VALUE` in shmem.h, evaluated (`N`, `NL`, `(1L << N)`).
fn define(name: &str) -> i64 {
    let prefix = format!("#define {name} ");
    let v = SHMEM_H.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("{name} not defined"));
    let v = v.trim().trim_start_matches('(').trim_end_matches(')');
    if v.starts_with("SHMEM_") {
        return define(v);
    }
    let num = |s: &str| s.trim().trim_end_matches('L').parse::<i64>().unwrap_or_else(|e| panic!("{name} = {v}: {e}"));
    match v.split_once("<<") {
        Some((a, b)) => num(a) << num(b),
        None => num(v),
    }
}

#[test]
fn comparison_constants_are_the_runtimes() {
    for (name, c) in [
        ("SHMEM_CMP_EQ", Cmp::Eq),
        ("SHMEM_CMP_NE", Cmp::Ne),
        ("SHMEM_CMP_GT", Cmp::Gt),
        ("SHMEM_CMP_GE", Cmp::Ge),
        ("SHMEM_CMP_LT", Cmp::Lt),
        ("SHMEM_CMP_LE", Cmp::Le),
    ] {
        assert_eq!(Cmp::from_c(define(name) as i32), Some(c), "{name}");
        assert_eq!(define(&format!("_{name}")), define(name));
    }
}

#[test]
fn thread_signal_context_and_hint_constants_are_the_runtimes() {
    for (name, l) in [
        ("SHMEM_THREAD_SINGLE", ThreadLevel::Single),
        ("SHMEM_THREAD_FUNNELED", ThreadLevel::Funneled),
        ("SHMEM_THREAD_SERIALIZED", ThreadLevel::Serialized),
        ("SHMEM_THREAD_MULTIPLE", ThreadLevel::Multiple),
    ] {
        assert_eq!(ThreadLevel::from_c(define(name) as i32), Some(l), "{name}");
    }
    assert_eq!(SignalOp::from_c(define("SHMEM_SIGNAL_SET") as i32), Some(SignalOp::Set));
    assert_eq!(SignalOp::from_c(define("SHMEM_SIGNAL_ADD") as i32), Some(SignalOp::Add));
    assert_eq!(define("SHMEM_CTX_SERIALIZED"), oxshmem_rt::ctx::SHMEM_CTX_SERIALIZED);
    assert_eq!(define("SHMEM_CTX_PRIVATE"), oxshmem_rt::ctx::SHMEM_CTX_PRIVATE);
    assert_eq!(define("SHMEM_CTX_NOSTORE"), oxshmem_rt::ctx::SHMEM_CTX_NOSTORE);
    assert_eq!(define("SHMEM_TEAM_NUM_CONTEXTS"), oxshmem_rt::team::SHMEM_TEAM_NUM_CONTEXTS);
    assert_eq!(define("SHMEM_MALLOC_ATOMICS_REMOTE") as u64, oxshmem_rt::heap::SHMEM_MALLOC_ATOMICS_REMOTE);
    assert_eq!(define("SHMEM_MALLOC_SIGNAL_REMOTE") as u64, oxshmem_rt::heap::SHMEM_MALLOC_SIGNAL_REMOTE);
}

#[test]
fn version_and_vendor_are_the_runtimes() {
    let (major, minor) = oxshmem_rt::info_get_version();
    assert_eq!((define("SHMEM_MAJOR_VERSION"), define("SHMEM_MINOR_VERSION")), (i64::from(major), i64::from(minor)));
    let vendor = format!("#define SHMEM_VENDOR_STRING \"{}\"", oxshmem_rt::VENDOR_STRING);
    assert!(SHMEM_H.lines().any(|l| l == vendor), "shmem.h lacks {vendor}");
    assert!(oxshmem_rt::VENDOR_STRING.len() < define("SHMEM_MAX_NAME_LEN") as usize);
    assert_eq!(define("SHMEM_MAX_NAME_LEN"), 256, "src/setup.rs copies the name into that many bytes");
}

#[test]
fn sync_sizes_are_positive() {
    for name in [
        "SHMEM_SYNC_SIZE",
        "SHMEM_BCAST_SYNC_SIZE",
        "SHMEM_BARRIER_SYNC_SIZE",
        "SHMEM_REDUCE_SYNC_SIZE",
        "SHMEM_COLLECT_SYNC_SIZE",
        "SHMEM_ALLTOALL_SYNC_SIZE",
        "SHMEM_ALLTOALLS_SYNC_SIZE",
        "SHMEM_REDUCE_MIN_WRKDATA_SIZE",
    ] {
        assert!(define(name) >= 1, "{name}");
    }
    assert_eq!(define("SHMEM_SYNC_VALUE"), 0);
}
