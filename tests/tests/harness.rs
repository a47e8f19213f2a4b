//! The harness's own promises: a job that outlives its `--timeout` is ended by `oshrun`, and
//! one that the launcher cannot end is killed at the hard limit, with nothing left running.
//!
//! No test here asserts how fast that happens (CI runs jobs of up to 16 PEs on 2 cores beside
//! these, so any wall-clock figure may come out late without a bug). Each checks instead who
//! ended the job — `oshrun`'s timeout (status 124, its message, and not the harness's kill) or
//! the harness's hard limit (its flag, and a signal rather than the program's own exit) — and
//! that it did not end before its limit, which load cannot make happen. The waits for leftover
//! processes are hang guards: they only run out when a test fails.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use oxshmem_tests::{Job, assert_job_code, assert_stderr_has, survivors};

/// Hang guard for the job's processes to be gone once the launcher has exited.
const GONE_WITHIN: Duration = Duration::from_secs(60);

/// `oshrun --timeout` ends a job that would run on, with status 124: `oshrun` ended it (not
/// the harness, whose hard limit is 30 s later; [`assert_job_code`] checks that), after its
/// timeout and not before, and before the program's own end (30 s, which would be status 0).
#[test]
fn a_job_past_its_timeout_is_ended_by_oshrun() {
    let r = Job::new(2, "/bin/sleep").args(&["30"]).timeout(Duration::from_secs(1)).run();
    assert_job_code(&r, 124);
    assert_stderr_has(&r, "oshrun: job timed out after 1 s");
    assert!(r.elapsed >= Duration::from_secs(1), "ended before its timeout\n{}", r.report());
    let left = survivors(&r.token, GONE_WITHIN);
    assert!(left.is_empty(), "processes still alive: {left:?}\n{}", r.report());
}

/// A program without a launcher that never ends is killed at the hard limit.
#[test]
fn a_hung_program_is_killed_at_the_hard_limit() {
    let r = Job::direct("/bin/sleep")
        .args(&["30"])
        .timeout(Duration::from_secs(1))
        .hard_limit_slack(Duration::from_secs(1))
        .run();
    assert!(r.hard_killed, "the harness did not kill the program\n{}", r.report());
    // Killed (SIGTERM first, SIGKILL after 3 s), not ended by itself 30 s in.
    let sig = r.status.signal();
    assert!(matches!(sig, Some(libc::SIGTERM | libc::SIGKILL)), "status {:?}\n{}", r.status, r.report());
    assert!(r.elapsed >= Duration::from_secs(2), "killed before its hard limit\n{}", r.report());
    assert!(survivors(&r.token, GONE_WITHIN).is_empty());
}

/// Only what a job could have created counts as its leftover in `/dev/shm`: other programs'
/// segments that come and go meanwhile do not fail a test (issue: an OpenMPI job beside the
/// suite failed the fault tests).
#[test]
fn dev_shm_leftovers_are_only_the_jobs_own() {
    use std::collections::BTreeSet;
    let before: BTreeSet<String> = ["ucx_shm_posix_1", "fi_shm_old"].map(String::from).into();
    let after: BTreeSet<String> = [
        "ucx_shm_posix_1",
        "fi_shm_old",
        "vader_segment.host.1234.0",
        "ucx_shm_posix_77",
        "oxshmem-heap-3",
        "fi_shm_new",
        "segment_4321_x",
        "segment_43210_x",
    ]
    .map(String::from)
    .into();
    let got = oxshmem_tests::job_shm_leftovers(&before, &after, &[4321]);
    assert_eq!(got, ["fi_shm_new", "oxshmem-heap-3", "segment_4321_x"]);
}
