//! Logging (`OXSHMEM_LOG`, and `SHMEM_DEBUG` / `NVSHMEM_DEBUG` mapped onto it): real jobs
//! under `oshrun`, with the lines each PE and the launcher write to stderr.
//!
//! The PE program is `pe-misc`.

use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_ok};

const PE_MISC: &str = env!("CARGO_BIN_EXE_pe-misc");

fn hello(n: usize, env: &[(&str, &str)]) -> JobResult {
    let job = Job::new(n, PE_MISC).args(&["hello", &n.to_string()]).envs(env);
    let r = job.run();
    assert_job_ok(&r);
    // Every PE ran the program to its end, so that a check that finds no line (no DEBUG, no
    // INFO) is about the logging, not about a PE that never ran.
    assert_each_pe_says(&r, n, |pe| format!("hello from PE {pe} of {n}"));
    r
}

/// The log lines of `r`'s stderr at `level` on `target` (`PE 1 ... DEBUG init: ...`).
fn lines<'a>(r: &'a JobResult, who: &str, level: &str, target: &str) -> Vec<&'a str> {
    r.stderr
        .lines()
        .filter(|l| {
            l.contains(&format!("{who} ")) && l.contains(&format!(" {level} ")) && l.contains(&format!("{target}: "))
        })
        .collect()
}

/// `OXSHMEM_LOG=debug`: every PE logs its init phases and its bootstrap, each line naming the
/// PE; the launcher logs each PE's start and exit as `oshrun`.
#[test]
fn debug_shows_every_pe_and_the_launcher() {
    let r = hello(2, &[("OXSHMEM_LOG", "debug")]);
    for pe in 0..2 {
        let who = format!("PE {pe}");
        assert!(!lines(&r, &who, "DEBUG", "boot").is_empty(), "no boot lines for {who}:\n{}", r.report());
        assert!(
            lines(&r, &who, "INFO", "init").iter().any(|l| l.contains("ready")),
            "no init 'ready' line for {who}:\n{}",
            r.report()
        );
    }
    let launcher = lines(&r, "oshrun", "DEBUG", "oshrun");
    assert!(launcher.iter().filter(|l| l.contains("started")).count() == 2, "{}", r.report());
    assert!(launcher.iter().filter(|l| l.contains("exited")).count() == 2, "{}", r.report());
}

/// A per-target filter selects: `boot=debug` gives bootstrap lines and no init lines.
#[test]
fn targets_filter_independently() {
    let r = hello(2, &[("OXSHMEM_LOG", "boot=debug")]);
    assert!(!lines(&r, "PE 0", "DEBUG", "boot").is_empty(), "{}", r.report());
    assert!(lines(&r, "PE", "INFO", "init").is_empty(), "{}", r.report());
}

/// Unset, nothing at debug or info is printed (the C library and oshrun show warnings; a Rust
/// program shows nothing).
#[test]
fn silent_by_default() {
    let r = hello(2, &[]);
    assert!(!r.stderr.contains(" DEBUG ") && !r.stderr.contains(" INFO "), "{}", r.report());
}

/// `SHMEM_DEBUG=1` means `debug`; `NVSHMEM_DEBUG=INFO` means `info` (no debug lines);
/// `OXSHMEM_LOG` wins over both.
#[test]
fn shmem_debug_and_nvshmem_debug_map_onto_it() {
    let r = hello(2, &[("SHMEM_DEBUG", "1")]);
    assert!(!lines(&r, "PE 1", "DEBUG", "boot").is_empty(), "{}", r.report());
    let r = hello(2, &[("NVSHMEM_DEBUG", "INFO")]);
    assert!(!lines(&r, "PE 1", "INFO", "init").is_empty(), "{}", r.report());
    assert!(!r.stderr.contains(" DEBUG "), "{}", r.report());
    let r = hello(2, &[("SHMEM_DEBUG", "1"), ("OXSHMEM_LOG", "init=info")]);
    assert!(!lines(&r, "PE 1", "INFO", "init").is_empty(), "{}", r.report());
    assert!(!r.stderr.contains(" DEBUG "), "{}", r.report());
}

/// The `error` target shows every error as it is built, here the ones a program handles.
#[test]
fn errors_are_logged_as_they_are_built() {
    let r = Job::new(2, PE_MISC).args(&["bad-pe"]).env("OXSHMEM_LOG", "error=debug").run();
    assert_job_ok(&r);
    let errs = lines(&r, "PE 0", "DEBUG", "error");
    assert!(errs.iter().any(|l| l.contains("PE 0: shmem_putmem: PE -1 is out of range (0..2)")), "{}", r.report());
}

/// A filter that does not parse is reported once per process, and the job runs unlogged.
#[test]
fn a_bad_filter_is_reported_not_fatal() {
    let r = hello(2, &[("OXSHMEM_LOG", "boot=loud")]);
    assert!(r.stderr.contains("OXSHMEM_LOG=\"boot=loud\" is not a filter"), "{}", r.report());
    assert!(!r.stderr.contains(" DEBUG "), "{}", r.report());
}
