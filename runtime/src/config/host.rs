//! Facts of the host that decisions read: the CPUs the job may use, the page size.

/// The CPUs the job may use on this host: what the launcher says (`OSHRUN_CPUS` from
/// `oshrun`, `SLURM_CPUS_ON_NODE` from Slurm), else this process's own affinity. A PE the
/// launcher bound to one core sees one CPU of its own, not the job's.
pub fn job_cpus() -> usize {
    launcher_cpus().unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// The CPUs the launcher says the job has on this host (`OSHRUN_CPUS` from `oshrun`,
/// `SLURM_CPUS_ON_NODE` from Slurm), if it says.
pub(super) fn launcher_cpus() -> Option<usize> {
    ["OSHRUN_CPUS", "SLURM_CPUS_ON_NODE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok().filter(|&n| n > 0))
}

/// The CPUs the job may use on this host, for deciding whether its PEs crowd it: what the
/// launcher says, as [`job_cpus`]; without a launcher's word, the host's online CPUs rather
/// than this process's affinity (a launcher that binds each PE to one core, as `mpirun
/// --bind-to core` does, leaves every PE seeing one CPU, which says nothing of the host).
pub fn host_cpus() -> usize {
    launcher_cpus().unwrap_or_else(|| {
        // SAFETY: sysconf has no preconditions.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if online > 0 { online as usize } else { job_cpus() }
    })
}

/// The CPUs `oshrun` may use on this host (`OSHRUN_CPU_LIST`, in `taskset -c` form), which
/// it spreads its PEs over: where a PE's helper threads (the device layer's proxy, software
/// NIC and CPU "device" threads) may run, rather than on the one core the PE is bound to.
/// `None` outside `oshrun` or when malformed.
pub fn job_cpu_list() -> Option<Vec<usize>> {
    let v = std::env::var("OSHRUN_CPU_LIST").ok()?;
    let mut out = Vec::new();
    for part in v.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.trim().parse::<usize>().ok()?..=b.trim().parse::<usize>().ok()?),
            None => out.push(part.trim().parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}
