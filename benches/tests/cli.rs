//! The benchmarks explain themselves and their default runs work at the PE count they are
//! started with: `--help` prints the usage and exits 0 (once per job, not once per PE), a
//! wrong argument exits 2 pointing at `--help`, a benchmark named at a PE count it cannot run
//! at says which count it needs, and a run with no argument (the quick default) succeeds at 1
//! and 2 PEs, writing `--csv` rows. No timings are checked: only that the runs complete.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use oxshmem_tests::{Job, JobResult, assert_job_code, assert_job_ok, assert_stderr_has, assert_stdout_has};

const SHMEM_BENCH: &str = env!("CARGO_BIN_EXE_shmem-bench");
const DEVICE_BENCH: &str = env!("CARGO_BIN_EXE_device-bench");
const MOE_BENCH: &str = env!("CARGO_BIN_EXE_moe-bench");

/// Generous: a debug build on a loaded 2-core machine; the runs take seconds.
const TIMEOUT: Duration = Duration::from_secs(300);

/// The header line of device-bench's `--csv` rows.
const DEVICE_CSV_HEADER: &str =
    "table,operation,bytes,unit,channel,pes,rounds,best,median,worst,vs_proxy,vs_proxy_spin,machine,date";

/// The device benchmark's work per round, made small for a debug build (the quick default's
/// shape: every benchmark, every channel, 3 rounds).
const SMALL_DEVICE_RUN: &[(&str, &str)] =
    &[("DEVICE_BENCH_OPS", "200"), ("DEVICE_BENCH_A2A", "20"), ("DEVICE_BENCH_WARMUP_MS", "5")];

fn run_alone(program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program).args(args).output().unwrap_or_else(|e| panic!("running {program}: {e}"))
}

fn scratch_csv(tag: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("bench-cli-{}-{tag}.csv", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn help_prints_the_usage_and_exits_0() {
    for (program, name) in [(SHMEM_BENCH, "shmem-bench"), (DEVICE_BENCH, "device-bench")] {
        for flag in ["--help", "-h"] {
            let out = run_alone(program, &[flag]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{name} {flag}: {out:?}");
            assert!(text.starts_with(&format!("Usage: oshrun -n N {name} [BENCHMARK]")), "{name} {flag}:\n{text}");
            assert!(text.contains("--quick") && text.contains("--csv FILE"), "{name} {flag}:\n{text}");
        }
        // Under the launcher: the usage once, from the first PE, and the job's status is 0.
        let r = Job::new(2, program).args(&["--help"]).timeout(TIMEOUT).run();
        assert_job_ok(&r);
        assert_eq!(r.stdout.matches("Usage: ").count(), 1, "{name} --help at 2 PEs:\n{}", r.report());
    }
}

/// The other benchmarks answer `--help` too: moe-bench, and ofi-bench where it is built.
#[test]
fn moe_and_ofi_bench_answer_help() {
    let moe = (MOE_BENCH, "Usage: oshrun -n N moe-bench [OPTIONS]");
    #[cfg(feature = "ofi")]
    let programs = [moe, (env!("CARGO_BIN_EXE_ofi-bench"), "Usage: ofi-bench [ROUNDS]")];
    #[cfg(not(feature = "ofi"))]
    let programs = [moe];
    for (program, first) in programs {
        let out = run_alone(program, &["--help"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{program} --help: {out:?}");
        assert!(text.starts_with(first), "{program} --help:\n{text}");
        let out = run_alone(program, &["--no-such-option"]);
        assert_eq!(out.status.code(), Some(2), "{program} --no-such-option: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--help"), "{program}: {out:?}");
    }
    // A list of token counts is compare's (8,32,128 by default); a run measures one.
    let out = run_alone(MOE_BENCH, &["--tokens", "8,32"]);
    assert_eq!(out.status.code(), Some(2), "moe-bench --tokens 8,32: {out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tokens takes one T outside compare"), "{out:?}");
    let r = Job::new(2, MOE_BENCH).args(&["--help"]).timeout(TIMEOUT).run();
    assert_job_ok(&r);
    assert_eq!(r.stdout.matches("Usage: ").count(), 1, "moe-bench --help at 2 PEs:\n{}", r.report());
}

#[test]
fn wrong_arguments_exit_2_and_point_at_help() {
    for (program, name) in [(SHMEM_BENCH, "shmem-bench"), (DEVICE_BENCH, "device-bench")] {
        for args in [&["--nope"][..], &["no-such-benchmark"], &["--csv"]] {
            let out = run_alone(program, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {out:?}");
            assert!(err.contains(&format!("{name} --help lists")), "{name} {args:?}:\n{err}");
        }
    }
}

/// The case: `all` and the 2-PE benchmarks at another PE count say which count they
/// need, instead of a bare refusal; the default run at that count is the way out.
#[test]
fn a_benchmark_at_a_pe_count_it_cannot_run_at_names_the_count_it_needs() {
    let r = Job::direct(SHMEM_BENCH).args(&["put-lat"]).timeout(TIMEOUT).run();
    assert_job_code(&r, 2);
    assert_stderr_has(&r, "put-lat needs exactly 2 PEs (this job has 1)");
    let r = Job::new(4, SHMEM_BENCH).args(&["all"]).timeout(TIMEOUT).run();
    assert_job_code(&r, 2);
    assert_stderr_has(&r, "all needs exactly 2 PEs (this job has 4)");
}

fn csv_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    text.lines().map(str::to_string).collect()
}

fn shmem_bench_default(n: usize, csv: &Path) -> JobResult {
    let csv = csv.to_str().unwrap();
    let job = if n == 1 { Job::direct(SHMEM_BENCH) } else { Job::new(n, SHMEM_BENCH) };
    let r = job.args(&["--csv", csv]).timeout(TIMEOUT).run();
    assert_job_ok(&r);
    r
}

#[test]
fn shmem_bench_default_runs_at_1_and_2_pes() {
    let csv = scratch_csv("shmem-1");
    let r = shmem_bench_default(1, &csv);
    assert_stderr_has(&r, "quick run (3 rounds) of barrier on 1 PEs; not at this PE count: put-lat (exactly 2 PEs)");
    assert_stdout_has(&r, "barrier_all 1 PEs");
    let rows = csv_lines(&csv);
    assert_eq!(rows[0], "table,operation,bytes,unit,min,median,reference,ref_min,ref_median,ratio,pes,machine,date");
    let date = rows[1].rsplit(',').next().unwrap();
    assert!(date.len() == 10 && date.starts_with("20") && &date[4..5] == "-", "the run's date: {}", rows[1]);
    assert_eq!(rows.len(), 2, "one barrier row: {rows:?}");

    let csv = scratch_csv("shmem-2");
    let r = shmem_bench_default(2, &csv);
    for table in ["# put latency", "# get latency", "# put bandwidth", "# message rate", "# fetch-add latency"] {
        assert_stdout_has(&r, table);
    }
    assert_stdout_has(&r, "barrier_all 2 PEs");
    assert_stdout_has(&r, "# collectives on 2 PEs");
    assert_stderr_has(&r, "shmem-bench: [7/7] coll");
    // 7 sizes x 3 (put, get, put bw), msg rate, fetch-add, barrier, 6 collectives' sizes.
    let rows = csv_lines(&csv);
    assert!(rows.len() > 30, "{} rows", rows.len());
}

#[test]
fn device_bench_default_runs_at_1_and_2_pes() {
    for n in [1, 2] {
        let csv = scratch_csv(&format!("device-{n}"));
        let job = if n == 1 { Job::direct(DEVICE_BENCH) } else { Job::new(n, DEVICE_BENCH) };
        let r = job.args(&["--csv", csv.to_str().unwrap()]).envs(SMALL_DEVICE_RUN).timeout(TIMEOUT).run();
        assert_job_ok(&r);
        assert_stdout_has(&r, &format!("{n} PEs, 3 interleaved rounds (quick run)"));
        assert_stdout_has(&r, "p rate ");
        assert_stderr_has(&r, "device-bench: rate: round 3/3 done");
        let rows = csv_lines(&csv);
        assert_eq!(rows[0], DEVICE_CSV_HEADER);
        for ch in ["p2p", "proxy", "proxy-spin", "ibgda"] {
            assert!(rows.iter().any(|l| l.starts_with(&format!("rate,p rate,8,Mops/s,{ch},{n},3,"))), "{ch}: {rows:?}");
        }
        if n == 1 {
            assert_stdout_has(&r, "(b) latency needs 2 PEs");
            assert_stdout_has(&r, "(d) MoE needs 2 PEs or more");
        } else {
            assert!(rows.iter().any(|l| l.starts_with("lat,put 1 MiB,1048576,us,ibgda,2,3,")), "{rows:?}");
            assert!(rows.iter().any(|l| l.starts_with("a2a,all-to-all 2 PEs,7168,us,p2p,2,3,")), "{rows:?}");
            for ch in ["p2p", "proxy", "proxy-spin", "ibgda"] {
                for what in ["moe low-latency T=32", "moe throughput T=128"] {
                    assert!(rows.iter().any(|l| l.starts_with(&format!("moe,{what},7168,us,{ch},2,3,"))), "{rows:?}");
                }
            }
            // The IBGDA/proxy table: one line per headline operation.
            assert_stdout_has(&r, "# IBGDA against the proxy, 2 PEs, each at its best");
            for what in
                ["p rate ", "put 8 B + quiet ", "all-to-all 2 PEs ", "moe low-latency T=32 ", "moe throughput T=128 "]
            {
                let after = r.stdout.split("# IBGDA against the proxy").nth(1).unwrap_or("");
                // Each line ends with its verdict on the headline ("holds" or "does not hold").
                assert!(after.lines().any(|l| l.starts_with(what) && l.ends_with("hold")), "{what}: {after}");
            }
        }
    }
}

/// device-bench's `--help` names every option, benchmark, channel and variable it reads, the
/// columns (best, median, worst) and the reference.
#[test]
fn device_bench_help_names_every_option() {
    let out = run_alone(DEVICE_BENCH, &["--help"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for word in [
        "[--quick] [--csv FILE|-]",
        "--quick",
        "--csv FILE",
        "--csv -",
        "-h, --help",
        "  rate ",
        "  lat ",
        "  a2a ",
        "  moe ",
        "  all ",
        "  p2p ",
        "  proxy ",
        "  proxy-spin ",
        "  ibgda ",
        "the reference",
        "median",
        "worst round",
        "table,operation,bytes,unit,channel,pes,rounds,best,median,worst,vs_proxy,",
        "DEVICE_BENCH_OPS",
        "DEVICE_BENCH_GRID",
        "DEVICE_BENCH_WARMUP_MS",
        "DEVICE_BENCH_A2A",
    ] {
        assert!(text.contains(word), "device-bench --help does not mention {word:?}:\n{text}");
    }
}

/// `--csv - --quick` at 2 PEs, with the least work: stdout is the CSV alone (a header line, then
/// one row per channel and line of every table, every figure a number), the tables go to stderr.
/// The figures are not judged, only their shape (and best <= median <= worst in the unit's
/// order, which the columns mean whatever the timing).
#[test]
fn device_bench_csv_on_stdout_has_its_shape() {
    let small: Vec<(&str, &str)> = SMALL_DEVICE_RUN.iter().copied().chain([("DEVICE_BENCH_GRID", "1,4")]).collect();
    let r = Job::new(2, DEVICE_BENCH).args(&["--csv", "-", "--quick"]).envs(&small).timeout(TIMEOUT).run();
    assert_job_ok(&r);
    assert_stderr_has(&r, "# (a) 8 B p rate, 4 device threads x 200 p");
    assert_stderr_has(&r, "operation          | p2p      best    median     worst |");
    let mut reader = csv::Reader::from_reader(r.stdout.as_bytes());
    let header: Vec<String> = reader.headers().expect("a header line").iter().map(str::to_string).collect();
    assert_eq!(header.join(","), DEVICE_CSV_HEADER, "{}", r.report());
    let rows: Vec<csv::StringRecord> =
        reader.records().collect::<Result<_, _>>().unwrap_or_else(|e| panic!("{e}: {}", r.report()));
    // rate: 4 channels + 2 idle-proxy rows; lat: 7 sizes x (put, get) x 4; a2a: 4; moe: 2 x 4.
    assert_eq!(rows.len(), 4 + 2 + 7 * 2 * 4 + 4 + 2 * 4, "{}", r.report());
    assert_stderr_has(&r, "# IBGDA against the proxy, 2 PEs");
    let number = |row: &csv::StringRecord, field: usize| -> f64 {
        let v: f64 = row[field].parse().unwrap_or_else(|e| panic!("{} of {row:?}: {e}", header[field]));
        assert!(v.is_finite() && v >= 0.0, "{} of {row:?}", header[field]);
        v
    };
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
        assert!(["rate", "rate beside an idle proxy", "lat", "a2a", "moe"].contains(&&row[0]), "{row:?}");
        let bytes: usize = row[2].parse().unwrap_or_else(|e| panic!("bytes of {row:?}: {e}"));
        assert!(bytes >= 8, "{row:?}");
        assert!(["Mops/s", "us"].contains(&&row[3]), "{row:?}");
        assert_eq!((&row[5], &row[6]), ("2", "3"), "pes and rounds of {row:?}");
        let (best, median, worst) = (number(row, 7), number(row, 8), number(row, 9));
        if &row[3] == "Mops/s" {
            assert!(best >= median && median >= worst, "a rate's best >= median >= worst: {row:?}");
        } else {
            assert!(best <= median && median <= worst, "a time's best <= median <= worst: {row:?}");
        }
        if row[0] == *"rate beside an idle proxy" {
            assert_eq!((&row[10], &row[11]), ("", ""), "{row:?}");
        } else {
            number(row, 10);
            number(row, 11);
        }
        assert!(row[12].contains("CPU"), "machine of {row:?}");
        assert!(row[13].len() == 10 && row[13].starts_with("20"), "date of {row:?}");
    }
    for ch in ["p2p", "proxy", "proxy-spin", "ibgda"] {
        assert!(rows.iter().any(|row| &row[1] == "get 1 MiB" && &row[2] == "1048576" && &row[4] == ch), "{ch}");
        // The proxy is the reference: its ratio to itself is 1.
        if ch == "proxy" {
            assert!(rows.iter().filter(|row| &row[4] == ch).all(|row| &row[10] == "1.0"), "{}", r.report());
        }
    }
}
