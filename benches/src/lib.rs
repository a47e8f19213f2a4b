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
