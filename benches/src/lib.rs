//! What the benchmarks share: the facts about the run that their `--csv` rows carry, so that a
//! plot (`benches/plot.py`) can say which machine, how many PEs and when; and which process of a
//! job prints usage and argument errors.

use std::time::{SystemTime, UNIX_EPOCH};

/// The machine a run is on, as a plot's subtitle names it: the host name, the CPU model and the
/// number of CPUs the machine has online (not those this PE is bound to), e.g.
/// `vm: AMD EPYC, 2 CPUs`.
///
/// ```
/// let m = oxshmem_benches::machine();
/// assert!(m.contains(" CPUs") || m.contains(" CPU"), "{m}");
/// ```
pub fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown host".to_string());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.split_whitespace().collect::<Vec<_>>().join(" "));
    let cpus = match cpuinfo.lines().filter(|l| l.starts_with("processor")).count() {
        0 => std::thread::available_parallelism().map_or(0, |n| n.get()),
        n => n,
    };
    let cpus = if cpus == 1 { "1 CPU".to_string() } else { format!("{cpus} CPUs") };
    match cpu {
        Some(cpu) => format!("{host}: {cpu}, {cpus}"),
        None => format!("{host}: {cpus}"),
    }
}

/// Today's date in UTC, `YYYY-MM-DD`.
///
/// ```
/// let d = oxshmem_benches::utc_date();
/// assert_eq!(d.len(), 10);
/// assert!(d.starts_with("20"));
/// ```
pub fn utc_date() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The driver's one argument, a number of rounds (default `default`): `None` after printing
/// `usage` for `-h`/`--help`/`help`; a word that is no number ends the process (status 2),
/// naming `tool`.
pub fn rounds_arg(tool: &str, usage: &str, default: usize) -> Option<usize> {
    match std::env::args().nth(1) {
        None => Some(default),
        Some(a) if matches!(a.as_str(), "-h" | "--help" | "help") => {
            print!("{usage}");
            None
        }
        Some(a) => Some(a.parse().unwrap_or_else(|_| {
            eprintln!("{tool}: {a:?} is not a number of rounds ({tool} --help)");
            std::process::exit(2)
        })),
    }
}

/// Whether this process is the job's first (or not started by a launcher): the one that prints
/// usage and argument errors, which come before init, so that a job prints them once.
pub fn first_process() -> bool {
    ["PMI_RANK", "PMI_ID", "PMIX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .all(|r| r.trim() == "0")
}

/// One timed MoE iteration as `moe-bench` and `device-bench moe` run it: a barrier, dispatch
/// (timed), the experts of `oxshmem_moe::reference` (not timed), a barrier, combine (timed).
/// Returns the dispatch and combine times in µs and the combined output; with `want`, the
/// output must equal it bit for bit (the serial computation), else it panics naming `what`
/// (the mode, the channel).
///
/// # Panics
/// When a call fails, or the output differs from `want`.
pub fn moe_iteration<'a>(
    shmem: &oxshmem::Shmem,
    buf: &'a mut oxshmem_moe::Buffer,
    tokens: usize,
    idx: &[i32],
    w: &[f32],
    want: Option<(&[f32], &str)>,
) -> (f64, f64, &'a [f32]) {
    use oxshmem_moe::reference;
    shmem.barrier_all().expect("barrier");
    let t0 = std::time::Instant::now();
    let d = buf.dispatch_in_place(tokens, idx, w).expect("dispatch");
    let td = t0.elapsed().as_secs_f64() * 1e6;
    let e = d.apply_experts(|row, x, y| reference::expert(row.expert, x, y));
    shmem.barrier_all().expect("barrier");
    let t1 = std::time::Instant::now();
    let out = e.combine().expect("combine");
    let tc = t1.elapsed().as_secs_f64() * 1e6;
    if let Some((want, what)) = want {
        assert!(
            out.iter().zip(want).all(|(a, b)| a.to_bits() == b.to_bits()),
            "PE {}: {what}: the combined output differs from the serial computation",
            shmem.my_pe()
        );
    }
    (td, tc, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(31 + 28), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_794), (2026, 12, 7));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }
}
