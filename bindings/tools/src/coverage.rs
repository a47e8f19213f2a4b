//! API coverage: which names of a reference API list a built library exports.
//!
//! The lists are the project's own data (`bindings/api/*.tsv`, their sources named there), so
//! the check runs anywhere the repository is. Exported names come from `nm -D --defined-only`,
//! as a dynamic linker sees them: a name that is only declared in a header does not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// The OpenSHMEM 1.5 C API (1,726 functions).
pub const OPENSHMEM_API: &str = include_str!("../../api/openshmem_api.tsv");
/// The NVSHMEM 3.4 API, host- and device-callable names.
pub const NVSHMEM_API: &str = include_str!("../../api/nvshmem_api.tsv");

/// Which reference list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Every OpenSHMEM 1.5 C function.
    OpenShmem,
    /// The NVSHMEM functions a host may call (tag `host` or `both`; C++ templates excluded).
    NvshmemHost,
}

impl Api {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenShmem => "openshmem",
            Api::NvshmemHost => "nvshmem-host",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Option<Api> {
        match s {
            "openshmem" => Some(Api::OpenShmem),
            "nvshmem-host" => Some(Api::NvshmemHost),
            _ => None,
        }
    }
}

/// `(name, group)` of every function of `api`, in list order.
pub fn rows(api: Api) -> Vec<(&'static str, String)> {
    let data_rows = |text: &'static str| text.lines().filter(|l| !l.starts_with('#') && !l.starts_with("name\t"));
    match api {
        Api::OpenShmem => data_rows(OPENSHMEM_API)
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let (name, group, status) = (f.first()?, f.get(1)?, f.get(2).copied().unwrap_or(""));
                let dep = if status == "deprecated" { " (deprecated)" } else { "" };
                Some((*name, format!("{group}{dep}")))
            })
            .collect(),
        Api::NvshmemHost => data_rows(NVSHMEM_API)
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let (name, tag, group) = (f.first()?, f.get(1)?, f.get(2)?);
                (matches!(*tag, "host" | "both") && !name.contains("::")).then(|| (*name, group.to_string()))
            })
            .collect(),
    }
}

/// The function names `lib` exports (defined, dynamic, text or weak or indirect symbols).
pub fn exported(lib: &Path) -> Result<BTreeSet<String>, String> {
    dynamic_symbols(lib, "TtWiV")
}

/// The defined dynamic symbols of `lib` whose `nm` type letter is one of `kinds` (`TtWiV`:
/// functions; add `DBR` for variables), without their version suffix.
pub fn dynamic_symbols(lib: &Path, kinds: &str) -> Result<BTreeSet<String>, String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .map_err(|e| format!("running nm on {}: {e}", lib.display()))?;
    if !out.status.success() {
        return Err(format!("nm cannot read {}: {}", lib.display(), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && kinds.contains(f[1])).then(|| f[2].split('@').next().unwrap_or(f[2]).to_string())
        })
        .collect())
}

/// What a library covers of one list.
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    /// Per group: (present, total).
    pub groups: BTreeMap<String, (usize, usize)>,
    /// Names of the list the library lacks, with their group.
    pub missing: Vec<(String, String)>,
    /// Names of the list the library exports, with their group.
    pub present: Vec<(String, String)>,
}

impl Coverage {
    /// Functions of the list exported.
    pub fn got(&self) -> usize {
        self.groups.values().map(|g| g.0).sum()
    }

    /// Functions in the list.
    pub fn total(&self) -> usize {
        self.groups.values().map(|g| g.1).sum()
    }
}

/// Holds `exported` against the list of `api`.
pub fn coverage(api: Api, exported: &BTreeSet<String>) -> Coverage {
    let mut c = Coverage::default();
    for (name, group) in rows(api) {
        let e = c.groups.entry(group.clone()).or_default();
        e.1 += 1;
        if exported.contains(name) {
            e.0 += 1;
            c.present.push((name.to_string(), group));
        } else {
            c.missing.push((name.to_string(), group));
        }
    }
    c
}

/// The report: a line per group with present/total, then the total line
/// (`1726/1726 openshmem functions exported by liboxshmem.so`).
pub fn report(api: Api, lib_name: &str, c: &Coverage) -> String {
    let mut s = String::new();
    for (group, (got, total)) in &c.groups {
        s.push_str(&format!("{got:5}/{total:<5} {group}\n"));
    }
    s.push_str(&format!("{}/{} {} functions exported by {lib_name}\n", c.got(), c.total(), api.name()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_have_their_documented_sizes() {
        assert_eq!(rows(Api::OpenShmem).len(), 1726);
        assert_eq!(rows(Api::NvshmemHost).len(), 1483);
    }

    #[test]
    fn coverage_counts_present_and_missing() {
        let have: BTreeSet<String> = ["shmem_init", "shmem_finalize", "not_an_api_name"].map(String::from).into();
        let c = coverage(Api::OpenShmem, &have);
        assert_eq!(c.got(), 2);
        assert_eq!(c.total(), 1726);
        assert_eq!(c.missing.len(), 1724);
        assert!(report(Api::OpenShmem, "x.so", &c).ends_with("2/1726 openshmem functions exported by x.so\n"));
    }
}
