//! What PE 0 prints at init: unknown variables with the nearest known name, and the
//! `SHMEM_INFO`/`SHMEM_VERSION` text.

use std::fmt::Write as _;

use super::nvshmem::{
    NVSHMEM_API_VERSION, NVSHMEM_NO_EFFECT, NvDebug, no_effect_reason, nv_debug_in, nvshmem_info_text, nvshmem_style,
};
use super::table::{DEVICE_NAMES, shown_vars, vars};
use super::table::{Source, Var, lookup};
use crate::{SPEC_VERSION, VENDOR_STRING};

/// Variables of the `OXSHMEM_` family that other parts of the project read (the bootstrap, the
/// tests, build scripts and tools): not configuration of a running PE, so not in the table ([`vars`]), but
/// known, so that setting them draws no warning. A name ending in `*` is a prefix. The third
/// field: whether a warning may suggest it for a misspelt name.
pub const READ_ELSEWHERE: &[(&str, &str, bool)] = &[
    ("OXSHMEM_UNIQUEID", "the unique-id bootstrap (oxshmem-bootstrap): the id of the job to join", true),
    ("OXSHMEM_UID_RANK", "the unique-id bootstrap: this process's rank", true),
    ("OXSHMEM_UID_SIZE", "the unique-id bootstrap: the number of ranks", true),
    ("OXSHMEM_UID_ADDR", "the unique-id bootstrap: the address rank 0 listens on", true),
    ("OXSHMEM_PMI_TOKEN", "oshrun --pmi-port sets it in every PE: the token its PMI-1 client presents", false),
    ("OXSHMEM_STATUS_FD", "oshrun sets it in every PE: the status table of its hang report", false),
    ("OXSHMEM_TEST_*", "the project's tests and their harness (tests/src/lib.rs)", false),
    ("OXSHMEM_TESTS_*", "the test harness: a job's token, the launcher under test", false),
    ("OXSHMEM_BLESS", "tests that regenerate generated files", false),
    ("OXSHMEM_CI_*", ".ci/run: OXSHMEM_CI_ISOLATED (run here, not in a clone), OXSHMEM_CI_STOP_AFTER=setup", false),
    ("OXSHMEM_HIPCC", "bindings/cuda/build-hip.sh and tests/hip_build.rs: the hipcc to build with", false),
    ("OXSHMEM_OSHRUN_ARGS", "benches/c/run.sh: extra oshrun options for oxshmem's runs (--bind-to none)", false),
    ("OXSHMEM_LIBFABRIC_DIR", "runtime/build.rs: where libfabric is installed", false),
    ("OXSHMEM_CUDA_HOME", "scripts/cuda-toolchain.sh: where the CUDA toolkit is", false),
    ("OXSHMEM_CUDA_INCLUDE", "scripts/cuda-toolchain.sh and the tests of nvshmem.h with CUDA's headers", false),
    ("OXSHMEM_CUDA_VERSION", "scripts/cuda-toolchain.sh: the CUDA version to fetch", false),
    ("OXSHMEM_CCCL_VERSION", "scripts/cuda-toolchain.sh", false),
    ("OXSHMEM_EMUCUDA_*", "tests/emucuda/libcuda.c, the emulated CUDA driver of the tests", false),
    ("OXSHMEM_NVCC", "scripts/cuda-toolchain.sh: the nvcc to test with", false),
    ("OXSHMEM_DEVICE_STATE_INCLUDE", "bindings/cuda/build.sh: where device_state.h is (default device/include)", false),
    (
        "OXSHMEM_NVSHMEM_*",
        "scripts/cuda-toolchain.sh --nvshmem: NVIDIA's NVSHMEM, the reference of the GPU check",
        false,
    ),
    ("OXSHMEM_BUILD_*", "oxshmem-tools' build script", false),
    ("OXSHMEM_DEVICE_LIB", "oshnvcc --target cuda|hip: the libnvshmem_device.a to link", false),
    ("OXSHMEM_CPU_TARGET", "oshnvcc --target cpu: another build of the CPU target's libnvshmem_device.a", false),
    (
        "OXSHMEM_CPU_DRIVER",
        "the CPU target (bindings/cuda/src/host.cu): the emulated CUDA driver to load instead of build-cpu.sh's",
        false,
    ),
];

/// The prefixes of the variable families oxshmem answers for.
pub const FAMILIES: [&str; 3] = ["OXSHMEM_", "SHMEM_", "NVSHMEM_"];

/// Whether `name` is a variable that oxshmem or the project reads: a name or alias of
/// the table ([`vars`]) or of the device layer's ([`DEVICE_NAMES`], registered or not), one of
/// [`READ_ELSEWHERE`] or of [`NVSHMEM_NO_EFFECT`].
///
/// ```
/// use oxshmem::config::is_known;
/// assert!(is_known("NVSHMEM_SYMMETRIC_SIZE") && is_known("OXSHMEM_TESTS_JOB") && is_known("NVSHMEM_HCA_LIST"));
/// assert!(!is_known("NVSHMEM_SYMETRIC_SIZE"));
/// ```
pub fn is_known(name: &str) -> bool {
    vars().any(|v| v.name == name || v.aliases.contains(&name))
        || DEVICE_NAMES.contains(&name)
        || READ_ELSEWHERE.iter().any(|(n, _, _)| match n.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => *n == name,
        })
        || no_effect_reason(name).is_some()
}

/// The edit distance (insertions, deletions, substitutions) between two names.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The known variable nearest to `name` by [`edit_distance`] (ties: the first declared), and
/// the distance. Candidates: every spelling users may set (test-only ones excluded).
///
/// ```
/// assert_eq!(oxshmem::config::nearest_known("NVSHMEM_SYMETRIC_SIZE"), ("NVSHMEM_SYMMETRIC_SIZE", 1));
/// ```
pub fn nearest_known(name: &str) -> (&'static str, usize) {
    let vars = shown_vars().flat_map(|v| std::iter::once(v.name).chain(v.aliases.iter().copied()));
    // The device layer's names, whether or not it is registered (a duplicate changes nothing).
    let vars = vars.chain(DEVICE_NAMES.iter().copied());
    let elsewhere = READ_ELSEWHERE.iter().filter(|(_, _, suggest)| *suggest).map(|(n, _, _)| *n);
    let no_effect = NVSHMEM_NO_EFFECT.iter().flat_map(|(_, names)| names.iter().copied());
    vars.chain(elsewhere)
        .chain(no_effect)
        .map(|k| (k, edit_distance(name, k)))
        .min_by_key(|&(_, d)| d)
        .expect("VARS is not empty")
}

/// The warnings PE 0 prints at init for the environment `vars` (name, value), one line each:
/// every `NVSHMEM_*`, `SHMEM_*` or `OXSHMEM_*` variable that is not [`is_known`], with the
/// nearest known name (`did you mean` when it is close); and, at `NVSHMEM_DEBUG=WARN` and
/// above, every NVSHMEM variable set that has no effect here, with why.
///
/// ```
/// let env = [("NVSHMEM_SYMETRIC_SIZE".to_string(), "2G".to_string())];
/// assert_eq!(
///     oxshmem::config::env_warnings(&env),
///     ["oxshmem: warning: NVSHMEM_SYMETRIC_SIZE is not a variable oxshmem reads (did you mean NVSHMEM_SYMMETRIC_SIZE?)"]
/// );
/// ```
pub fn env_warnings(vars: &[(String, String)]) -> Vec<String> {
    let mut names: Vec<&str> = vars
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| FAMILIES.iter().any(|f| k.starts_with(f) && k.len() > f.len()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::new();
    for name in names.iter().copied().filter(|n| !is_known(n)) {
        let (near, d) = nearest_known(name);
        out.push(if d <= 3 || d * 5 <= name.len() {
            format!("oxshmem: warning: {name} is not a variable oxshmem reads (did you mean {near}?)")
        } else {
            format!(
                "oxshmem: warning: {name} is not a variable oxshmem reads (the nearest known one is {near}; \
                 oxshmem-info lists them all)"
            )
        });
    }
    let env = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if nv_debug_in(&env).is_ok_and(|l| l >= NvDebug::Warn) {
        for name in names.iter().copied() {
            if let Some(why) = no_effect_reason(name) {
                out.push(format!("oxshmem: warning: {name} is NVSHMEM's and has no effect in oxshmem ({why})"));
            }
        }
    }
    out
}

/// Prints [`env_warnings`] for this process's environment to standard error, in one write
/// (PE 0 calls it at init).
pub fn print_env_warnings() {
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .collect();
    let lines = env_warnings(&vars);
    if !lines.is_empty() {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    }
}

/// Prints what `SHMEM_INFO`/`SHMEM_VERSION` ask PE 0 for at init ([`info_text`]): to
/// standard error, or, asked for with the NVSHMEM spelling ([`nvshmem_style`]), to standard
/// output, as NVSHMEM does.
pub fn print_info(full: bool) {
    let text = info_text(full);
    if nvshmem_style(full) {
        let mut out = std::io::stdout().lock();
        let _ = std::io::Write::write_all(&mut out, text.as_bytes());
        let _ = std::io::Write::flush(&mut out);
    } else {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    }
}

/// The text `SHMEM_INFO`/`SHMEM_VERSION` print: the version and, with `full`, the
/// configuration in three groups: what the environment set (each with its source and help),
/// what it set that oxshmem does not use (unknown names, NVSHMEM settings with no effect here),
/// and the defaults (one line each; `oxshmem-info` prints them with their help). Asked for with
/// the NVSHMEM spelling (`NVSHMEM_INFO`, `NVSHMEM_VERSION`; [`nvshmem_style`]), the text
/// is NVSHMEM's instead: its listing ([`nvshmem_info_text`]), or the version line with
/// the NVSHMEM API version.
///
/// ```
/// assert!(oxshmem::info_text(true).contains("SHMEM_SYMMETRIC_SIZE"));
/// ```
pub fn info_text(full: bool) -> String {
    if nvshmem_style(full) {
        if full {
            return nvshmem_info_text();
        }
        let (major, minor, _) = NVSHMEM_API_VERSION;
        return format!("{VENDOR_STRING} (NVSHMEM {major}.{minor} API)\n");
    }
    let mut s = format!("{VENDOR_STRING} (OpenSHMEM {}.{})\n", SPEC_VERSION.0, SPEC_VERSION.1);
    if full {
        let env: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
            .collect();
        s.push_str(&config_groups(shown_vars().map(|v| (v, lookup(v))), &env));
    }
    s
}

/// [`info_text`]'s table: `rows` are the shown variables with their value and source, `env` the
/// process's environment (for what it set that oxshmem does not use).
pub(super) fn config_groups<'a>(
    rows: impl Iterator<Item = (&'a Var, (String, Source))>,
    env: &[(String, String)],
) -> String {
    let rows: Vec<(&Var, String, Source)> =
        rows.map(|(v, (value, src))| (v, if value.is_empty() { "\"\"".to_string() } else { value }, src)).collect();
    let width = rows.iter().map(|r| r.0.name.len()).max().unwrap_or(0);
    let (set, defaults): (Vec<_>, Vec<_>) = rows.iter().partition(|r| matches!(r.2, Source::Env(_)));
    let mut s = String::new();
    if !set.is_empty() {
        let vwidth = set.iter().map(|r| r.1.len()).max().unwrap_or(0);
        let _ = writeln!(s, "Set in the environment ({}):", set.len());
        for (v, value, src) in set.iter().map(|r| (r.0, &r.1, &r.2)) {
            let Source::Env(from) = src else { continue };
            let _ = writeln!(s, "  {:<width$} = {value:<vwidth$} [environment ({from})]", v.name);
            // The help, wrapped to 100 columns under the value.
            let mut line = String::new();
            for word in v.help.replace('`', "").split_whitespace() {
                if !line.is_empty() && width + 5 + line.len() + word.len() > 100 {
                    let _ = writeln!(s, "  {:<width$}   {line}", "");
                    line.clear();
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(word);
            }
            if !line.is_empty() {
                let _ = writeln!(s, "  {:<width$}   {line}", "");
            }
        }
    }
    let mut unused: Vec<(&str, &str, String)> = env
        .iter()
        .filter(|(k, _)| FAMILIES.iter().any(|f| k.starts_with(f) && k.len() > f.len()))
        .filter_map(|(k, v)| {
            let why = if !is_known(k) {
                "not a variable oxshmem reads".to_string()
            } else {
                format!("NVSHMEM's, no effect in oxshmem: {}", no_effect_reason(k)?)
            };
            Some((k.as_str(), v.as_str(), why))
        })
        .collect();
    unused.sort_unstable();
    if !unused.is_empty() {
        let _ = writeln!(s, "Set in the environment, not used ({}):", unused.len());
        for (k, v, why) in unused {
            let _ = writeln!(s, "  {k} = {v} ({why})");
        }
    }
    let _ = writeln!(s, "Defaults ({}; oxshmem-info prints each with its help):", defaults.len());
    for (v, value, _) in defaults.iter().map(|r| (r.0, &r.1, &r.2)) {
        let _ = writeln!(s, "  {:<width$} = {value} [default]", v.name);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32, item 11: `OXSHMEM_CUDA_HEAP` is known (by name here, without the device layer
    /// registered), and a misspelling of it (or of any `OXSHMEM_CUDA_` variable) draws a
    /// warning; the toolchain script's variables do not. Likewise a device variable's.
    #[test]
    fn cuda_heap_is_known_and_its_misspellings_warned() {
        assert!(!is_known("OXSHMEM_CUDA_HAEP"));
        assert!(is_known("OXSHMEM_CUDA_HOME") && is_known("OXSHMEM_CUDA_HEAP"));
        let w = env_warnings(&[("OXSHMEM_CUDA_HAEP".into(), "on".into())]);
        assert!(w.iter().any(|l| l.contains("OXSHMEM_CUDA_HAEP") && l.contains("OXSHMEM_CUDA_HEAP")), "{w:?}");
        let w = env_warnings(&[("OXSHMEM_DEVICE_CHANEL".into(), "p2p".into())]);
        assert_eq!(
            w,
            [
                "oxshmem: warning: OXSHMEM_DEVICE_CHANEL is not a variable oxshmem reads (did you mean OXSHMEM_DEVICE_CHANNEL?)"
            ]
        );
        assert!(env_warnings(&[("OXSHMEM_DEVICE_CHANNEL".into(), "p2p".into())]).is_empty());
    }

    #[test]
    fn edit_distances_and_nearest_names() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("NVSHMEM_SYMETRIC_SIZE", "NVSHMEM_SYMMETRIC_SIZE"), 1);
        assert_eq!(nearest_known("NVSHMEM_SYMETRIC_SIZE"), ("NVSHMEM_SYMMETRIC_SIZE", 1));
        assert_eq!(nearest_known("SHMEM_SYMMETRICSIZE"), ("SHMEM_SYMMETRIC_SIZE", 1));
        assert_eq!(nearest_known("OXSHMEM_TIMEOUTS"), ("OXSHMEM_TIMEOUT", 1));
        assert_eq!(nearest_known("OXSHMEM_DEVICE_CHANEL").0, "OXSHMEM_DEVICE_CHANNEL");
        assert_eq!(nearest_known("NVSHMEM_IB_ENABLE_IBGDAA").0, "NVSHMEM_IB_ENABLE_IBGDA");
        assert_eq!(nearest_known("OXSHMEM_UID_RANKS").0, "OXSHMEM_UID_RANK");
        assert_eq!(nearest_known("NVSHMEM_HCA_LST").0, "NVSHMEM_HCA_LIST");
        // Test-only spellings are never suggested.
        assert_ne!(nearest_known("OXSHMEM_OFI_TEST_BAD_PEERS").0, "OXSHMEM_OFI_TEST_BAD_PEER");
    }

    #[test]
    fn warnings_name_unknown_variables_once_each() {
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let w = env_warnings(&owned(&[
            ("NVSHMEM_SYMETRIC_SIZE", "2G"),
            ("PATH", "/bin"),
            ("SHMEM_SYMMETRIC_SIZE", "1G"),
            ("NVSHMEM_INFO", "1"),
            ("OXSHMEM_TESTS_JOB", "x"),
            ("OXSHMEM_TEST_TRANSPORT", "ofi"),
            ("OXSHMEM_UNIQUEID", "oxs1:x"),
            ("OXSHMEM_CUDA_INCLUDE", "/x"),
            ("NVSHMEM_HCA_LIST", "mlx5_0:1"),
            ("SHMEM_OFI_PROVIDER_NAME", "verbs"),
            ("NVSHMEM_SYMETRIC_SIZE", "2G"),
            ("SHMEM_", "prefix only"),
            ("SMA_FOO", "not ours"),
        ]));
        assert_eq!(
            w,
            [
                "oxshmem: warning: NVSHMEM_SYMETRIC_SIZE is not a variable oxshmem reads (did you mean NVSHMEM_SYMMETRIC_SIZE?)",
                "oxshmem: warning: SHMEM_OFI_PROVIDER_NAME is not a variable oxshmem reads (the nearest known one is \
                 OXSHMEM_OFI_SRC_ADDR; oxshmem-info lists them all)",
            ]
        );
        // At NVSHMEM_DEBUG=WARN, the NVSHMEM variables without effect are named too.
        let w = env_warnings(&owned(&[
            ("NVSHMEM_DEBUG", "WARN"),
            ("NVSHMEM_HCA_LIST", "mlx5_0:1"),
            ("NVSHMEM_DISABLE_P2P", "1"),
        ]));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("oxshmem: warning: NVSHMEM_HCA_LIST is NVSHMEM's and has no effect in oxshmem (NIC"),
            "{w:?}"
        );
        assert!(env_warnings(&owned(&[("NVSHMEM_DEBUG", "VERSION"), ("NVSHMEM_HCA_LIST", "x")])).is_empty());
    }

    /// Every `OXSHMEM_*`, `SHMEM_*` or `NVSHMEM_*` variable that a source file, script or tool of
    /// the repository reads from the environment is known, so that no warning fires for one of
    /// the project's own.
    #[test]
    fn every_variable_the_project_reads_is_known() {
        use std::path::Path;
        fn walk(dir: &Path, found: &mut Vec<(String, String)>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                        walk(&path, found);
                    }
                    continue;
                }
                let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
                let shell = ext == "sh" || (name == "run" && dir.file_name().is_some_and(|d| d == ".ci"));
                if !(shell || matches!(ext, "rs" | "c" | "cc" | "py")) {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&path) else { continue };
                let markers: &[&str] = if shell {
                    &["${", "$"]
                } else {
                    &[
                        "var(\"",
                        "var_os(\"",
                        "value_of(\"",
                        "var_named(\"",
                        "getenv(\"",
                        "environ.get(\"",
                        "environ[\"",
                        "&str = \"",
                    ]
                };
                for m in markers {
                    for (at, _) in text.match_indices(m) {
                        let rest = &text[at + m.len()..];
                        let end = rest.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'));
                        let word = &rest[..end.unwrap_or(rest.len())];
                        if FAMILIES.iter().any(|f| word.starts_with(f) && word.len() > f.len()) {
                            found.push((word.to_string(), path.display().to_string()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")), &mut found);
        assert!(found.iter().any(|(n, _)| n == "OXSHMEM_UNIQUEID"), "the scan finds the bootstrap's reads");
        assert!(found.iter().any(|(n, _)| n == "OXSHMEM_TESTS_JOB"), "the scan finds the harness's variables");
        let unknown: Vec<&(String, String)> = found.iter().filter(|(n, _)| !is_known(n)).collect();
        assert!(
            unknown.is_empty(),
            "read by the project but unknown to oxshmem::config (declare them in VARS or READ_ELSEWHERE): {unknown:?}"
        );
    }

    /// SHMEM_INFO's table puts what was set first (with help), then what was set but is not
    /// used, then one line per default.
    #[test]
    fn the_table_groups_set_unused_and_defaults() {
        let vars: Vec<&Var> = shown_vars().take(3).collect();
        let rows = vars.iter().enumerate().map(|(i, v)| {
            let src = if i == 1 { Source::Env(v.name) } else { Source::Default };
            (*v, (format!("value{i}"), src))
        });
        let env = [
            ("OXSHMEM_CUDA_HAEP".to_string(), "on".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
            (vars[1].name.to_string(), "value1".to_string()),
        ];
        let text = config_groups(rows, &env);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Set in the environment (1):", "{text}");
        assert!(lines[1].contains(vars[1].name) && lines[1].ends_with(&format!("[environment ({})]", vars[1].name)));
        let unused = lines.iter().position(|l| l.starts_with("Set in the environment, not used (1):")).expect("unused");
        assert!(lines[unused + 1].starts_with("  OXSHMEM_CUDA_HAEP = on (not a variable"), "{text}");
        let defaults = lines.iter().position(|l| l.starts_with("Defaults (2;")).expect("defaults");
        assert!(defaults > unused, "{text}");
        assert_eq!(lines.len(), defaults + 3, "one line per default, nothing after:\n{text}");
        assert!(
            lines[defaults + 1].starts_with(&format!("  {}", vars[0].name))
                && lines[defaults + 1].ends_with("[default]")
        );
        assert!(!text.contains("PATH"), "{text}");
    }
}
