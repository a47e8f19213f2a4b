//! Where `oshrun` places its PEs: `--bind-to none|core|socket`.
//!
//! A PE that the scheduler may move shares a core with its peer whenever the kernel thinks
//! fit, and then every wait for that peer is a context switch instead of a cache-line trip
//! (measured here: a 2-PE barrier of 0.1 µs became 4–30 µs while the two sat on one core).
//! So, like Open MPI's `mpirun`, `oshrun` binds PE i to the i-th core it may use when the PEs
//! fit, and leaves them unbound when they do not (`none`: the scheduler then spreads the
//! surplus better than a fixed round-robin would).
//!
//! "The cores it may use" are those of `oshrun`'s own affinity mask, so an inherited cpuset
//! (Slurm's allocation, `taskset`, a cgroup) is respected: `taskset -c 2,3 oshrun -n 2 …`
//! binds PE 0 to CPU 2 and PE 1 to CPU 3. Cores are read from sysfs
//! (`/sys/devices/system/cpu/cpuN/topology`): the hardware threads of one core form one
//! binding, ordered by package and core id; a CPU without topology is a core of its own.

use std::fmt;

/// The binding policy (`--bind-to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindTo {
    /// No binding: every PE may run on every allowed CPU.
    None,
    /// PE i on the hardware threads of core i (round-robin when there are more PEs than cores).
    Core,
    /// PE i on every allowed CPU of the package that holds core i.
    Socket,
}

impl BindTo {
    /// From `--bind-to`'s value.
    pub fn parse(s: &str) -> Option<BindTo> {
        match s {
            "none" => Some(BindTo::None),
            "core" | "cores" => Some(BindTo::Core),
            "socket" | "sockets" | "package" => Some(BindTo::Socket),
            _ => None,
        }
    }
}

impl fmt::Display for BindTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BindTo::None => "none",
            BindTo::Core => "core",
            BindTo::Socket => "socket",
        })
    }
}

/// One CPU `oshrun` may use, with where it sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpu {
    /// The CPU number (as in `taskset`).
    pub id: usize,
    /// `physical_package_id`.
    pub package: usize,
    /// `core_id` (unique within its package).
    pub core: usize,
}

/// The cores made of `cpus`, each its CPU numbers, ordered by package, core and CPU number.
pub fn cores(cpus: &[Cpu]) -> Vec<(usize, Vec<usize>)> {
    let mut sorted = cpus.to_vec();
    sorted.sort_by_key(|c| (c.package, c.core, c.id));
    let mut out: Vec<((usize, usize), Vec<usize>)> = Vec::new();
    for c in sorted {
        match out.last_mut() {
            Some((key, ids)) if *key == (c.package, c.core) => ids.push(c.id),
            _ => out.push(((c.package, c.core), vec![c.id])),
        }
    }
    out.into_iter().map(|((package, _), ids)| (package, ids)).collect()
}

/// The policy in force: the one asked for, or by default `core` when the `npes` PEs fit on
/// the cores and `none` when they do not.
pub fn effective(asked: Option<BindTo>, npes: usize, ncores: usize) -> BindTo {
    match asked {
        Some(b) => b,
        None if ncores > 0 && npes <= ncores => BindTo::Core,
        None => BindTo::None,
    }
}

/// The CPUs each of `npes` PEs is bound to (`None`: unbound), given the CPUs `oshrun` may
/// use and the policy in force.
pub fn plan(cpus: &[Cpu], npes: usize, policy: BindTo) -> Vec<Option<Vec<usize>>> {
    let cores = cores(cpus);
    if cores.is_empty() || policy == BindTo::None {
        return vec![None; npes];
    }
    (0..npes)
        .map(|pe| {
            let (package, ids) = &cores[pe % cores.len()];
            Some(match policy {
                BindTo::Core => ids.clone(),
                _ => {
                    let mut all: Vec<usize> =
                        cores.iter().filter(|(p, _)| p == package).flat_map(|(_, ids)| ids.iter().copied()).collect();
                    all.sort_unstable();
                    all
                }
            })
        })
        .collect()
}

/// A CPU list as `taskset -c` and `/proc/PID/status` write it: `0-3,8,10-11`.
pub fn cpu_list(ids: &[usize]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(if j == i { ids[i].to_string() } else { format!("{}-{}", ids[i], ids[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// The CPUs this process may run on, with their topology from sysfs.
pub fn allowed_cpus() -> Vec<Cpu> {
    let ids = super::sys::affinity().unwrap_or_default();
    let read = |id: usize, what: &str| -> Option<usize> {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{id}/topology/{what}")).ok()?.trim().parse().ok()
    };
    ids.into_iter()
        .map(|id| match (read(id, "physical_package_id"), read(id, "core_id")) {
            (Some(package), Some(core)) => Cpu { id, package, core },
            // No topology (some containers and VMs): a core of its own.
            _ => Cpu { id, package: 0, core: usize::MAX - id },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(id: usize, package: usize, core: usize) -> Cpu {
        Cpu { id, package, core }
    }

    /// Two packages of two cores with two hardware threads each, numbered as Linux does on
    /// most x86 machines (the sibling threads are n/2 apart).
    fn two_sockets() -> Vec<Cpu> {
        vec![
            cpu(0, 0, 0),
            cpu(1, 0, 1),
            cpu(2, 1, 0),
            cpu(3, 1, 1),
            cpu(4, 0, 0),
            cpu(5, 0, 1),
            cpu(6, 1, 0),
            cpu(7, 1, 1),
        ]
    }

    #[test]
    fn cores_group_hardware_threads() {
        assert_eq!(cores(&two_sockets()), vec![(0, vec![0, 4]), (0, vec![1, 5]), (1, vec![2, 6]), (1, vec![3, 7])]);
    }

    #[test]
    fn default_binds_to_cores_only_when_the_pes_fit() {
        assert_eq!(effective(None, 2, 2), BindTo::Core);
        assert_eq!(effective(None, 3, 2), BindTo::None);
        assert_eq!(effective(None, 1, 0), BindTo::None);
        assert_eq!(effective(Some(BindTo::Core), 3, 2), BindTo::Core);
        assert_eq!(effective(Some(BindTo::None), 1, 2), BindTo::None);
    }

    #[test]
    fn core_binding_takes_cores_in_order_and_wraps() {
        let p = plan(&two_sockets(), 5, BindTo::Core);
        assert_eq!(p, vec![Some(vec![0, 4]), Some(vec![1, 5]), Some(vec![2, 6]), Some(vec![3, 7]), Some(vec![0, 4])]);
    }

    #[test]
    fn socket_binding_gives_the_whole_package_of_the_pes_core() {
        let p = plan(&two_sockets(), 4, BindTo::Socket);
        let s0 = Some(vec![0, 1, 4, 5]);
        let s1 = Some(vec![2, 3, 6, 7]);
        assert_eq!(p, vec![s0.clone(), s0, s1.clone(), s1]);
    }

    #[test]
    fn an_inherited_cpuset_is_respected() {
        // As under `taskset -c 5,6`: only those two CPUs exist for the plan.
        let allowed: Vec<Cpu> = two_sockets().into_iter().filter(|c| c.id == 5 || c.id == 6).collect();
        assert_eq!(plan(&allowed, 2, BindTo::Core), vec![Some(vec![5]), Some(vec![6])]);
        assert_eq!(plan(&allowed, 2, BindTo::None), vec![None, None]);
        assert_eq!(plan(&[], 2, BindTo::Core), vec![None, None]);
    }

    #[test]
    fn cpu_lists_read_like_taskset() {
        assert_eq!(cpu_list(&[0]), "0");
        assert_eq!(cpu_list(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn policies_parse() {
        assert_eq!(BindTo::parse("core"), Some(BindTo::Core));
        assert_eq!(BindTo::parse("socket"), Some(BindTo::Socket));
        assert_eq!(BindTo::parse("none"), Some(BindTo::None));
        assert_eq!(BindTo::parse("hwthread"), None);
        assert_eq!(BindTo::Socket.to_string(), "socket");
    }
}
