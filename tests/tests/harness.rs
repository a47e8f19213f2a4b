//! The harness's own promises: a job that outlives its `--timeout` is ended by `oshrun`, and
//! one that the launcher cannot end is killed at the hard limit, with nothing left running.

use std::time::Duration;

use oxshmem_tests::{Job, assert_job_code, assert_stderr_has, survivors};

/// `oshrun --timeout` ends a job that would run on, with status 124.
#[test]
fn a_job_past_its_timeout_is_ended_by_oshrun() {
    let r = Job::new(2, "/bin/sleep").args(&["30"]).timeout(Duration::from_secs(1)).run();
    assert_job_code(&r, 124);
    assert_stderr_has(&r, "oshrun: job timed out");
    assert!(r.elapsed < Duration::from_secs(10), "took {:?}\n{}", r.elapsed, r.report());
    let left = survivors(&r.token, Duration::from_secs(3));
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
    assert!(!r.status.success());
    assert!(r.elapsed < Duration::from_secs(10), "took {:?}\n{}", r.elapsed, r.report());
    assert!(survivors(&r.token, Duration::from_secs(3)).is_empty());
}
