//! Configuration from the environment in real jobs, NVSHMEM's spellings above all: unknown
//! variables draw one warning from PE 0, `NVSHMEM_DEBUG` takes NVSHMEM's levels,
//! `NVSHMEM_INFO` prints NVSHMEM's listing, `NVSHMEM_VERSION` its version line, and
//! `NVSHMEM_BOOTSTRAP*`, `NVSHMEM_DISABLE_P2P`, `NVSHMEM_IB_ENABLE_IBGDA` choose what they
//! choose in NVSHMEM (`runtime/src/config.rs`, `docs/nvshmem.md`).
//!
//! The PE program is `pe-config`.

use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_code, assert_job_ok, assert_stdout_has};

const PE_CONFIG: &str = env!("CARGO_BIN_EXE_pe-config");
const PE_HEAP: &str = env!("CARGO_BIN_EXE_pe-heap");

/// The warning lines of a job's standard error.
fn warnings(r: &JobResult) -> Vec<&str> {
    r.stderr.lines().filter(|l| l.starts_with("oxshmem: warning: ")).collect()
}

/// How many lines of `text` are exactly `line`.
fn count(text: &str, line: &str) -> usize {
    text.lines().filter(|l| *l == line).count()
}

/// A misspelt variable of each family draws exactly one warning in a job of 4 PEs (PE 0's),
/// naming the nearest known variable; the known variables set beside them, the project's own
/// (the unique-id bootstrap's, the tests') and NVSHMEM's without effect draw none.
#[test]
fn unknown_variables_draw_one_warning_from_pe_0() {
    let r = Job::new(4, PE_CONFIG)
        .args(&["init"])
        .env("NVSHMEM_SYMETRIC_SIZE", "2G")
        .env("OXSHMEM_TIMEOUTS", "5")
        .env("SHMEM_SYMMETRICSIZE", "2G")
        .env("SHMEM_SYMMETRIC_SIZE", "64M")
        .env("NVSHMEM_INFOO", "1")
        .env("NVSHMEM_HCA_LIST", "mlx5_0:1")
        .env("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo")
        .env("OXSHMEM_UID_ADDR", "127.0.0.1")
        .env("OXSHMEM_TEST_SOMETHING", "1")
        .env("OXSHMEM_SPIN", "100")
        .run();
    assert_job_ok(&r);
    assert_each_pe_says(&r, 4, |pe| format!("PE {pe} of 4: ok"));
    let w = warnings(&r);
    for (typo, near) in [
        ("NVSHMEM_SYMETRIC_SIZE", "NVSHMEM_SYMMETRIC_SIZE"),
        ("OXSHMEM_TIMEOUTS", "OXSHMEM_TIMEOUT"),
        ("SHMEM_SYMMETRICSIZE", "SHMEM_SYMMETRIC_SIZE"),
        ("NVSHMEM_INFOO", "NVSHMEM_INFO"),
    ] {
        let want = format!("oxshmem: warning: {typo} is not a variable oxshmem reads (did you mean {near}?)");
        assert_eq!(count(&r.stderr, &want), 1, "{want:?} not exactly once:\n{}", r.report());
    }
    for known in [
        "SHMEM_SYMMETRIC_SIZE",
        "NVSHMEM_HCA_LIST",
        "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME",
        "OXSHMEM_UID_ADDR",
        "OXSHMEM_TEST_SOMETHING",
        "OXSHMEM_SPIN",
        "OXSHMEM_TESTS_JOB",
    ] {
        let named = format!(": {known} ");
        assert!(!w.iter().any(|l| l.contains(&named)), "a warning names the known {known}:\n{}", r.report());
    }
}

/// `NVSHMEM_DEBUG` takes every NVSHMEM level, any case, without failing init: `VERSION` and
/// above print the version once (NVSHMEM's way, on standard output), `WARN` and above name the
/// NVSHMEM variables set that have no effect here, `INFO` and above turn on `SHMEM_DEBUG`.
#[test]
fn nvshmem_debug_levels_are_accepted() {
    for (level, name, version, warn, checks) in [
        ("NONE", "NONE", false, false, false),
        ("VERSION", "VERSION", true, false, false),
        ("WARN", "WARN", true, true, false),
        ("warn", "WARN", true, true, false),
        ("INFO", "INFO", true, true, true),
        ("ABORT", "ABORT", true, true, true),
        ("TRACE", "TRACE", true, true, true),
    ] {
        let r = Job::new(2, PE_CONFIG)
            .args(&["config"])
            .env("NVSHMEM_DEBUG", level)
            .env("NVSHMEM_CUMEM_GRANULARITY", "2097152")
            .run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, 2, |pe| {
            format!("PE {pe}: debug={checks} version={version} info=false nvshmem_debug={name}")
        });
        let version_lines = r.stdout.lines().filter(|l| l.starts_with("oxshmem ") && l.ends_with(" (NVSHMEM 3.4 API)"));
        assert_eq!(version_lines.count(), usize::from(version), "NVSHMEM_DEBUG={level}:\n{}", r.report());
        let note = "oxshmem: warning: NVSHMEM_CUMEM_GRANULARITY is NVSHMEM's and has no effect in oxshmem (CUDA and \
                    GPU memory: oxshmem's CUDA back end has no such setting)";
        assert_eq!(count(&r.stderr, note), usize::from(warn), "NVSHMEM_DEBUG={level}:\n{}", r.report());
    }
}

/// `NVSHMEM_DEBUG=INFO` turns on `SHMEM_DEBUG` (whose debugging aids never change what a
/// program does): mismatched collective allocations are caught exactly as with `SHMEM_DEBUG=1`
/// and without it; an explicit `SHMEM_DEBUG=0` wins.
#[test]
fn nvshmem_debug_info_turns_on_the_collective_checks() {
    let r = Job::new(2, PE_HEAP).args(&["debug-mismatch"]).env("NVSHMEM_DEBUG", "INFO").run();
    assert_job_ok(&r);
    assert_stdout_has(
        &r,
        "PE 0: shmem_malloc: collective arguments differ between PEs: this PE called shmem_malloc with size 1024, PE 1 called shmem_malloc with size 2048",
    );
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: CollectiveMismatch caught"));
    let r = Job::new(2, PE_CONFIG).args(&["config"]).env("NVSHMEM_DEBUG", "TRACE").env("SHMEM_DEBUG", "0").run();
    assert_job_ok(&r);
    assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: debug=false version=true info=false nvshmem_debug=TRACE"));
}

/// `NVSHMEM_INFO=1` prints, once, on standard output, the listing as NVSHMEM prints its own:
/// the configuration block, the sections in NVSHMEM's order, `  NAME  value (type: T,
/// default: D)` with the value in column 31 and tab-indented help, the NVSHMEM spellings of
/// oxshmem's variables, oxshmem's own, and the NVSHMEM variables set that have no effect.
#[test]
fn nvshmem_info_prints_nvshmems_listing() {
    let r = Job::new(2, PE_CONFIG)
        .args(&["init"])
        .env("NVSHMEM_INFO", "1")
        .env("NVSHMEM_SYMMETRIC_SIZE", "64M")
        .env("OXSHMEM_SPIN", "7")
        .env("NVSHMEM_BOOTSTRAP_PMI", "PMI")
        .env("NVSHMEM_HCA_LIST", "mlx5_0:1")
        .run();
    assert_job_ok(&r);
    let out = &r.stdout;
    assert_eq!(count(out, "NVSHMEM configuration:"), 1, "{}", r.report());
    let mut at = out.find("NVSHMEM configuration:\n").unwrap();
    for heading in [
        "Standard options:",
        "Bootstrap options:",
        "Additional options:",
        "Transport options:",
        "Without effect in oxshmem:",
    ] {
        let found = out[at..].find(&format!("\n{heading}\n"));
        at += found.unwrap_or_else(|| panic!("{heading:?} missing or out of order:\n{}", r.report())) + 1;
    }
    for line in [
        "  NVSHMEM_SYMMETRIC_SIZE       67108864 (type: size, default: 1073741824)",
        "  NVSHMEM_INFO                 true (type: bool, default: false)",
        "  NVSHMEM_DEBUG                \"\" (type: string, default: \"\")",
        "  NVSHMEM_BOOTSTRAP            \"PMI\" (type: string, default: \"PMI\")",
        "  NVSHMEM_BOOTSTRAP_PMI        \"PMI\" (type: string, default: \"PMI\")",
        "  NVSHMEM_DISABLE_P2P          false (type: bool, default: false)",
        "  OXSHMEM_SPIN                 7 (type: int, default: 1000)",
        "  NVSHMEM_HCA_LIST             \"mlx5_0:1\"",
    ] {
        assert_eq!(count(out, line), 1, "{line:?} not exactly once:\n{}", r.report());
    }
    let lines: Vec<&str> = out.lines().collect();
    let i = lines.iter().position(|l| l.starts_with("  NVSHMEM_SYMMETRIC_SIZE ")).unwrap();
    assert!(lines[i + 1].starts_with("\tbytes of symmetric heap per PE"), "{}", lines[i + 1]);
    assert!(lines.iter().filter(|l| l.starts_with('\t')).all(|l| l.len() <= 81), "help wider than 80 columns");
    let help: Vec<&str> = lines[i + 1..].iter().take_while(|l| l.starts_with('\t')).map(|l| l.trim()).collect();
    let help = help.join(" ");
    assert!(
        help.ends_with(
            "Spellings, the first set wins: SHMEM_SYMMETRIC_SIZE, SMA_SYMMETRIC_SIZE, NVSHMEM_SYMMETRIC_SIZE"
        ),
        "{help}"
    );
    // Not the OpenSHMEM table as well.
    assert!(!r.stderr.lines().any(|l| l.contains(" = ") && l.ends_with("[default]")), "{}", r.report());

    // SHMEM_INFO keeps oxshmem's own table, on standard error.
    let r = Job::new(2, PE_CONFIG).args(&["init"]).env("SHMEM_INFO", "1").run();
    assert_job_ok(&r);
    assert!(!r.stdout.contains("NVSHMEM configuration:"), "{}", r.report());
    let row = |name: &str, value: &str| {
        r.stderr.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with(&format!("{name} ")) && l.contains(&format!(" = {value} "))
        })
    };
    assert!(row("SHMEM_SYMMETRIC_SIZE", "1G") && row("NVSHMEM_DEBUG", "\"\""), "{}", r.report());
}

/// `NVSHMEM_VERSION=1`: PE 0 prints one line, the version with the NVSHMEM API it follows, on
/// standard output.
#[test]
fn nvshmem_version_prints_one_line() {
    let r = Job::new(2, PE_CONFIG).args(&["init"]).env("NVSHMEM_VERSION", "1").run();
    assert_job_ok(&r);
    let lines: Vec<&str> = r.stdout.lines().filter(|l| !l.contains(": ok")).collect();
    assert_eq!(lines.len(), 1, "{}", r.report());
    assert!(lines[0].starts_with("oxshmem ") && lines[0].ends_with(" (NVSHMEM 3.4 API)"), "{}", lines[0]);
    assert!(!r.stderr.contains("(OpenSHMEM 1.5)"), "{}", r.report());
}

/// `NVSHMEM_BOOTSTRAP` and `NVSHMEM_BOOTSTRAP_PMI` under `oshrun` (a PMI-1 launcher): the PMI
/// choices and `SHMEM` start the job; `plugin`, `MPI` without MPI in the process and `PMIX`
/// under a PMI-1 launcher fail init with an error naming the variable; an explicit
/// `OXSHMEM_BOOTSTRAP` wins.
#[test]
fn nvshmem_bootstrap_choices() {
    for env in [
        &[("NVSHMEM_BOOTSTRAP", "PMI")][..],
        &[("NVSHMEM_BOOTSTRAP_PMI", "PMI")],
        &[("NVSHMEM_BOOTSTRAP", "PMI"), ("NVSHMEM_BOOTSTRAP_PMI", "PMI")],
        &[("NVSHMEM_BOOTSTRAP", "SHMEM")],
        &[("NVSHMEM_BOOTSTRAP", "plugin"), ("OXSHMEM_BOOTSTRAP", "pmi1")],
    ] {
        let job = Job::new(2, PE_CONFIG).args(&["init"]).envs(env);
        let r = job.run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe} of 2: ok"));
    }
    for (env, needles) in [
        (&[("NVSHMEM_BOOTSTRAP", "plugin")][..], &["NVSHMEM_BOOTSTRAP=\"plugin\"", "no bootstrap plugins"][..]),
        (&[("NVSHMEM_BOOTSTRAP", "MPI")], &["NVSHMEM_BOOTSTRAP=MPI (MPI_COMM_WORLD", "no MPI library is loaded"]),
        (&[("NVSHMEM_BOOTSTRAP_PMI", "PMIX")], &["NVSHMEM_BOOTSTRAP_PMI asks for pmix"]),
        (&[("NVSHMEM_BOOTSTRAP_PMI", "PMI-3")], &["NVSHMEM_BOOTSTRAP_PMI=\"PMI-3\": expected PMI, PMI-2 or PMIX"]),
    ] {
        let job = Job::new(2, PE_CONFIG).args(&["init-fails"]).envs(env);
        let r = job.run();
        assert_job_code(&r, 3);
        for n in needles {
            assert!(r.stderr.contains(n), "{n:?} missing:\n{}", r.report());
        }
    }
}

/// The device layer's channels: P2P to every PE of one host by default; `NVSHMEM_DISABLE_P2P=1`
/// gives every peer the remote channel (the proxy, or IBGDA with `NVSHMEM_IB_ENABLE_IBGDA=1`);
/// an explicit `OXSHMEM_DEVICE_CHANNEL` wins.
#[test]
fn nvshmem_device_variables_choose_the_channels() {
    for (env, want) in [
        (&[][..], "P2p,P2p"),
        (&[("NVSHMEM_IB_ENABLE_IBGDA", "1")], "P2p,P2p"),
        (&[("NVSHMEM_DISABLE_P2P", "1")], "Proxy,Proxy"),
        (&[("NVSHMEM_DISABLE_P2P", "1"), ("NVSHMEM_REMOTE_TRANSPORT", "ibrc")], "Proxy,Proxy"),
        (&[("NVSHMEM_DISABLE_P2P", "1"), ("NVSHMEM_IB_ENABLE_IBGDA", "1")], "Ibgda,Ibgda"),
        (&[("NVSHMEM_DISABLE_P2P", "true"), ("NVSHMEM_REMOTE_TRANSPORT", "ibgda")], "Ibgda,Ibgda"),
        (&[("NVSHMEM_DISABLE_P2P", "1"), ("OXSHMEM_DEVICE_CHANNEL", "p2p")], "P2p,P2p"),
        (
            &[("NVSHMEM_DISABLE_P2P", "1"), ("NVSHMEM_IB_ENABLE_IBGDA", "1"), ("OXSHMEM_DEVICE_REMOTE", "proxy")],
            "Proxy,Proxy",
        ),
    ] {
        let job = Job::new(2, PE_CONFIG).args(&["channels"]).shm_only("P2P needs the peers' heaps mapped").envs(env);
        let r = job.run();
        assert_job_ok(&r);
        assert_each_pe_says(&r, 2, |pe| format!("PE {pe}: channels {want}"));
    }
}
