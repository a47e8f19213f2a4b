//! Collectives called out of order, and the hang report.
//!
//! PEs in different collectives of one team — a barrier against a reduction, a PE that skipped
//! a reduction, an extra barrier against the others' `shmem_finalize`, a sync against a
//! barrier — must all fail, never hang, each naming both calls and their numbers on the team;
//! the team then refuses every later collective (finalize included) at once. The PE program is
//! `pe-mismatch`; see its documentation for the cases.
//!
//! Where a hang cannot be told from a slow peer, `oshrun` reports where each PE is: on
//! `--timeout` and on `SIGQUIT`, from the status table the PEs write, and `/proc` for a PE that
//! is stopped.

use std::time::Duration;

use oxshmem_tests::{Job, JobResult, assert_job_code, assert_stderr_has};

const PE_MISMATCH: &str = env!("CARGO_BIN_EXE_pe-mismatch");

/// One PE's mismatch error: `this PE is in MINE (collective #A) but PE P is in THEIRS
/// (collective #B)[, as PE F found]`.
#[derive(Debug)]
struct Mismatch {
    func: String,
    mine: String,
    my_seq: u64,
    pe: usize,
    theirs: String,
    their_seq: u64,
}

/// Parses the `ERR <label>: PE <pe>: ...` line of PE `pe` for `label`.
fn mismatch_of(r: &JobResult, label: &str, pe: usize) -> Mismatch {
    let head = format!("ERR {label}: PE {pe}: ");
    let Some(line) = r.stdout.lines().find_map(|l| l.strip_prefix(&head)) else {
        panic!("no line starting {head:?}\n{}", r.report());
    };
    parse(line).unwrap_or_else(|| panic!("PE {pe}: unexpected mismatch text {line:?}\n{}", r.report()))
}

fn parse(line: &str) -> Option<Mismatch> {
    let (func, rest) = line.split_once(": collective mismatch on the world team: this PE is in ")?;
    let (mine, rest) = rest.split_once(" (collective #")?;
    let (my_seq, rest) = rest.split_once(") but PE ")?;
    let (other, rest) = rest.split_once(" is in ")?;
    let (theirs, rest) = rest.split_once(" (collective #")?;
    let (their_seq, rest) = rest.split_once(')')?;
    let tail_ok = rest.is_empty() || rest.starts_with(", as PE ") && rest.ends_with(" found");
    tail_ok.then_some(())?;
    Some(Mismatch {
        func: func.to_string(),
        mine: mine.to_string(),
        my_seq: my_seq.parse().ok()?,
        pe: other.parse().ok()?,
        theirs: theirs.to_string(),
        their_seq: their_seq.parse().ok()?,
    })
}

/// Runs `case` on `n` PEs with PE `odd` as the odd one out and checks every PE's errors:
/// the odd one is in `odd_call` (routine `odd_func` of the runtime's errors) and names one of
/// the others, in `others_call`; every other PE is in `others_call` and names the odd PE in
/// `odd_call`; all of them at the same collective number. Then every PE's next collective
/// failed at once, and every PE got to the end.
fn check_case(case: &str, n: usize, odd: usize, odd_calls: (&str, &str), calls: (&str, &str)) {
    check_case_with(case, n, odd, odd_calls, calls, &[]);
}

/// [`check_case`] with `env` in every PE's environment.
fn check_case_with(
    case: &str,
    n: usize,
    odd: usize,
    (odd_func, odd_call): (&str, &str),
    (func, call): (&str, &str),
    env: &[(&str, &str)],
) {
    let job = Job::new(n, PE_MISMATCH).args(&[case, &odd.to_string()]).timeout(Duration::from_secs(60)).envs(env);
    let r = job.run();
    assert_job_code(&r, 3);
    let mut seq = None;
    for pe in 0..n {
        let m = mismatch_of(&r, case, pe);
        let report = || format!("PE {pe}: {m:?}\n{}", r.report());
        if pe == odd {
            assert!(m.func == odd_func && m.mine == odd_call && m.theirs == call && m.pe != odd, "{}", report());
        } else {
            assert!(m.func == func && m.mine == call && m.theirs == odd_call && m.pe == odd, "{}", report());
        }
        assert_eq!(m.my_seq, m.their_seq, "{}", report());
        assert_eq!(*seq.get_or_insert(m.my_seq), m.my_seq, "every PE is at the same collective\n{}", report());
        let want = format!("PE {pe}: {case} failed everywhere, nothing hung");
        assert!(r.stdout.lines().any(|l| l == want), "{want:?} missing\n{}", r.report());
    }
    // The world team takes no collective any more, finalize included: at once, no hang.
    let after = r.stdout.lines().filter(|l| l.contains("no collective can run on it any more")).count();
    assert!(after >= n, "expected every PE's later collective to be refused\n{}", r.report());
}

/// The example: PE 0 in `shmem_barrier_all` while the others are in
/// `shmem_long_sum_reduce`.
#[test]
fn barrier_against_reduce_fails_on_every_pe() {
    for n in [2, 4] {
        check_case(
            "barrier-vs-reduce",
            n,
            0,
            ("shmem_barrier_all", "shmem_barrier_all"),
            ("shmem_reduce", "shmem_long_sum_reduce"),
        );
    }
    // The exact text, at 2 PEs.
    let r = Job::new(2, PE_MISMATCH).args(&["barrier-vs-reduce", "0"]).run();
    let m = mismatch_of(&r, "barrier-vs-reduce", 1);
    let want = format!(
        "ERR barrier-vs-reduce: PE 0: shmem_barrier_all: collective mismatch on the world team: this PE is in \
         shmem_barrier_all (collective #{0}) but PE 1 is in shmem_long_sum_reduce (collective #{0})",
        m.my_seq
    );
    assert!(r.stdout.lines().any(|l| l == want), "{want:?} missing\n{}", r.report());
}

/// A PE that skips a reduction: its next collective (a barrier) meets the others' reduction.
#[test]
fn a_skipped_reduce_fails_on_every_pe() {
    for (n, odd) in [(2, 1), (4, 2)] {
        check_case(
            "skip-reduce",
            n,
            odd,
            ("shmem_barrier_all", "shmem_barrier_all"),
            ("shmem_reduce", "shmem_long_sum_reduce"),
        );
    }
}

/// Both barrier patterns (`OXSHMEM_BARRIER`), forced, at 3 and 4 PEs: a barrier against a
/// reduction and a skipped reduction fail on every PE, whichever pattern the barrier has (the
/// automatic choice runs the other cases' bigger jobs central on small machines only).
#[test]
fn mismatches_fail_everywhere_with_either_barrier() {
    for pattern in ["dissemination", "central"] {
        let env = [("OXSHMEM_BARRIER", pattern)];
        for (n, odd) in [(3, 0), (4, 2), (4, 0)] {
            let (b, r) = (("shmem_barrier_all", "shmem_barrier_all"), ("shmem_reduce", "shmem_long_sum_reduce"));
            check_case_with("barrier-vs-reduce", n, odd, b, r, &env);
            check_case_with("skip-reduce", n, odd, b, r, &env);
        }
    }
}

/// One PE calls one barrier more at the end while the others finalize: finalize is
/// collective, and neither side may hang.
#[test]
fn an_extra_barrier_against_finalize_fails_on_every_pe() {
    for (n, odd) in [(2, 1), (4, 3)] {
        check_case(
            "extra-barrier",
            n,
            odd,
            ("shmem_barrier_all", "shmem_barrier_all"),
            ("shmem_finalize", "shmem_finalize"),
        );
    }
}

/// `shmem_sync_all` against `shmem_barrier_all`: the cheap path (a tag beside each barrier
/// signal) tells them apart too.
#[test]
fn sync_against_barrier_fails_on_every_pe() {
    for (n, odd) in [(2, 0), (4, 1)] {
        check_case(
            "sync-vs-barrier",
            n,
            odd,
            ("shmem_sync_all", "shmem_sync_all"),
            ("shmem_barrier_all", "shmem_barrier_all"),
        );
    }
}

/// The lines of the hang report that `oshrun` printed for `why` (`timeout`, `SIGQUIT`), each
/// one's text after `PE n: `, by PE.
fn report_lines(r: &JobResult, why: &str, n: usize) -> Vec<String> {
    let head = format!("oshrun: hang report ({why}, ");
    let start = r.stderr.find(&head).unwrap_or_else(|| panic!("no hang report ({why})\n{}", r.report()));
    let mut lines = r.stderr[start..].lines().skip(1);
    (0..n)
        .map(|pe| {
            let l = lines.next().unwrap_or_else(|| panic!("the report ({why}) ends early\n{}", r.report()));
            let p = format!("oshrun:   PE {pe}: ");
            l.strip_prefix(&p).unwrap_or_else(|| panic!("{l:?} is not PE {pe}'s line\n{}", r.report())).to_string()
        })
        .collect()
}

/// PE 0 (and the others but PE 1) in `shmem_barrier_all`, PE 1 in a wait that never ends:
/// `oshrun --timeout 5` says so before it ends the job.
#[test]
fn timeout_reports_where_every_pe_waits() {
    for n in [2, 3] {
        let r = Job::new(n, PE_MISMATCH)
            .args(&["hang"])
            .timeout(Duration::from_secs(5))
            .shm_only("the hang report's table is written by the PEs of one host")
            .run();
        assert_job_code(&r, 124);
        assert_stderr_has(&r, "oshrun: job timed out after 5 s");
        let lines = report_lines(&r, "timeout", n);
        for (pe, l) in lines.iter().enumerate() {
            if pe == 1 {
                assert!(
                    l.starts_with("in shmem_wait_until (on 0x") && l.contains(") for "),
                    "PE 1: {l:?}\n{}",
                    r.report()
                );
            } else {
                assert!(
                    l.starts_with("in shmem_barrier_all (world, collective #") && l.contains(" s, waiting for PE "),
                    "PE {pe}: {l:?}\n{}",
                    r.report()
                );
            }
        }
        // PE 0 waits for PE 1 itself: the barrier's first round.
        assert!(lines[0].ends_with("waiting for PE 1") || n > 2, "{}", r.report());
    }
}

/// `SIGQUIT` to `oshrun` during such a hang prints the report and the job goes on, to its
/// timeout (which reports again).
#[test]
fn sigquit_reports_and_the_job_goes_on() {
    let r = Job::new(2, PE_MISMATCH)
        .args(&["hang-quit"])
        .timeout(Duration::from_secs(8))
        .shm_only("the hang report's table is written by the PEs of one host")
        .run();
    assert_job_code(&r, 124);
    let quit = report_lines(&r, "SIGQUIT", 2);
    assert!(quit[0].starts_with("in shmem_barrier_all (world, collective #"), "{:?}\n{}", quit[0], r.report());
    assert!(quit[0].ends_with("waiting for PE 1"), "{:?}\n{}", quit[0], r.report());
    assert!(quit[1].starts_with("in shmem_wait_until (on 0x"), "{:?}\n{}", quit[1], r.report());
    let (at_quit, at_end) = (
        r.stderr.find("hang report (SIGQUIT").unwrap(),
        r.stderr.find("oshrun: job timed out").unwrap_or_else(|| panic!("the job did not go on\n{}", r.report())),
    );
    assert!(at_quit < at_end, "the SIGQUIT report comes first\n{}", r.report());
    let end = report_lines(&r, "timeout", 2);
    assert!(end[0].starts_with("in shmem_barrier_all (world, collective #"), "{}", r.report());
}

/// A frozen PE (SIGSTOP) shows up as stopped, with where it was; the PE waiting for it says
/// whom it waits for.
#[test]
fn a_stopped_pe_shows_as_stopped() {
    let r = Job::new(2, PE_MISMATCH)
        .args(&["hang"])
        .timeout(Duration::from_secs(6))
        .freeze_pe(1, Duration::from_secs(3))
        .shm_only("the hang report's table is written by the PEs of one host")
        .run();
    assert_job_code(&r, 124);
    let lines = report_lines(&r, "timeout", 2);
    assert!(lines[1].starts_with("stopped (SIGSTOP); in shmem_wait_until (on 0x"), "{:?}\n{}", lines[1], r.report());
    assert!(lines[0].starts_with("in shmem_barrier_all (world, collective #"), "{:?}\n{}", lines[0], r.report());
    assert!(lines[0].ends_with("waiting for PE 1"), "{:?}\n{}", lines[0], r.report());
}
