//! The library's exported symbols against the headers and the API lists: every prototype has
//! an export and every export a prototype, `oxshmem-api-coverage` finds all 1,726 OpenSHMEM 1.5
//! functions and all 1,483 host-callable NVSHMEM 3.4 functions, the static library defines them
//! too, and the SONAME is `liboxshmem.so.1`. The deprecated Fortran API counts as declared by
//! `shmem.fh` (`bindings/fortran/shmem.fh`): the routines its catalogue lists, under gfortran's
//! names (`SHMEM_INT4_ADD` is `shmem_int4_add_`).

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::{arg, declared, have, include_dir, run_ok, shared_lib};

/// Defined dynamic symbols of the shared library: (functions, variables).
fn exports() -> (BTreeSet<String>, BTreeSet<String>) {
    let out = run_ok("nm", &["-D", "--defined-only", arg(&shared_lib())]);
    let mut funcs = BTreeSet::new();
    let mut vars = BTreeSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let name = f[2].split('@').next().unwrap_or(f[2]).to_string();
        match f[1] {
            "T" | "W" | "i" => funcs.insert(name),
            "D" | "B" | "R" | "V" => vars.insert(name),
            _ => false,
        };
    }
    (funcs, vars)
}

fn header_decls() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut funcs = BTreeSet::new();
    let mut vars = BTreeSet::new();
    for h in ["shmem.h", "shmemx.h", "nvshmem.h"] {
        let text = std::fs::read_to_string(include_dir().join(h)).expect("reading the header");
        let (f, v) = declared(&text);
        funcs.extend(f);
        vars.extend(v);
    }
    (funcs, vars)
}

/// The exported names of the routines `shmem.fh` lists (its catalogue, which names every
/// routine of the deprecated Fortran API) and declares (`EXTERNAL`), as gfortran spells them.
fn fortran_decls() -> BTreeSet<String> {
    let path = common::crate_dir().join("../fortran/shmem.fh");
    let text = std::fs::read_to_string(&path).expect("reading bindings/fortran/shmem.fh");
    let marker = "! Every routine, as it is called";
    let (head, catalogue) = text.split_at(text.find(marker).expect("shmem.fh has no catalogue"));
    let listed: BTreeSet<String> = catalogue
        .lines()
        .filter_map(|l| l.strip_prefix("!     "))
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|l| l.split('(').next().expect("a name").trim().to_string())
        .collect();
    let externals: Vec<&str> = head.lines().filter_map(|l| l.trim().strip_prefix("EXTERNAL ")).collect();
    assert!(externals.len() >= 3, "shmem.fh declares only {externals:?}");
    for e in &externals {
        assert!(listed.contains(*e), "shmem.fh declares {e}, which its catalogue does not list");
    }
    listed.iter().map(|n| format!("{}_", n.to_ascii_lowercase())).collect()
}

fn diff(what: &str, a: &BTreeSet<String>, b: &BTreeSet<String>) -> String {
    let only_a: Vec<&String> = a.difference(b).collect();
    let only_b: Vec<&String> = b.difference(a).collect();
    format!("{what}: only in the headers: {only_a:?}; only in the library: {only_b:?}")
}

#[test]
fn every_prototype_is_exported_and_every_export_declared() {
    if !have("nm") {
        return;
    }
    let (mut hf, hv) = header_decls();
    let (ef, ev) = exports();
    assert!(hf.len() > 1700, "only {} prototypes parsed from the headers", hf.len());
    let fortran = fortran_decls();
    assert!(fortran.len() > 150, "only {} routines listed in shmem.fh", fortran.len());
    hf.extend(fortran);
    assert_eq!(hf, ef, "{}", diff("functions", &hf, &ef));
    assert_eq!(hv, ev, "{}", diff("variables", &hv, &ev));
    for v in ["SHMEM_TEAM_WORLD", "SHMEM_TEAM_SHARED", "SHMEM_CTX_DEFAULT"] {
        assert!(ev.contains(v), "{v} is not exported");
    }
}

/// The headers declare exactly the OpenSHMEM 1.5 API of the reference list (all of it in
/// `shmem.h`), plus the `shmemx_` extensions and, in a section of `shmemx.h` of its own, the
/// OpenSHMEM 1.6 names of some of them — none of which is a 1.5 name.
#[test]
fn the_headers_declare_the_reference_api() {
    let reference = std::fs::read_to_string(reference_dir().join("openshmem_api.tsv")).expect("reading the API list");
    let want: BTreeSet<String> = reference
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("name\t"))
        .filter_map(|l| l.split('\t').next())
        .map(String::from)
        .collect();
    assert_eq!(want.len(), 1726);
    let (hf, _) = header_decls();
    let std16 = shmem_1_6_names();
    let api: BTreeSet<String> = hf
        .iter()
        .filter(|n| {
            !n.starts_with("shmemx_") && !n.starts_with("nvshmem") && !n.starts_with("oxshmemi_") && !std16.contains(*n)
        })
        .cloned()
        .collect();
    assert_eq!(api, want, "{}", diff("OpenSHMEM 1.5", &api, &want));
    let text = std::fs::read_to_string(include_dir().join("shmem.h")).expect("reading shmem.h");
    let shmem_h: BTreeSet<String> = declared(&text).0.into_iter().collect();
    assert_eq!(shmem_h, want, "{}", diff("shmem.h", &shmem_h, &want));
    let clash: Vec<&String> = std16.intersection(&want).collect();
    assert!(clash.is_empty(), "OpenSHMEM 1.6 names that are 1.5 names: {clash:?}");
    let families = ["signal_add", "signal_set", "_ibput", "_ibget", "_sum_inscan", "_sum_exscan"];
    let odd: Vec<&String> = std16.iter().filter(|n| !families.iter().any(|f| n.contains(f))).collect();
    assert!(odd.is_empty(), "shmemx.h's OpenSHMEM 1.6 section declares {odd:?}");
}

/// The routines of `shmemx.h`'s OpenSHMEM 1.6 section (after its banner); everything before it
/// is a `shmemx_` extension.
fn shmem_1_6_names() -> BTreeSet<String> {
    let text = std::fs::read_to_string(include_dir().join("shmemx.h")).expect("reading shmemx.h");
    let (ext, std16) = text.split_once("OpenSHMEM 1.6 names of the extensions above").expect("the 1.6 section");
    let not_x: Vec<String> = declared(ext).0.into_iter().filter(|n| !n.starts_with("shmemx_")).collect();
    assert!(not_x.is_empty(), "shmemx.h declares {not_x:?} among the shmemx_ extensions");
    let names: BTreeSet<String> = declared(std16).0.into_iter().collect();
    assert!(names.iter().all(|n| n.starts_with("shmem_")), "shmemx.h's 1.6 section: {names:?}");
    names
}

/// The reference API lists the project carries (their sources are named in its README).
fn reference_dir() -> PathBuf {
    common::crate_dir().join("../api")
}

#[test]
fn api_coverage_finds_all_1726_functions() {
    let tool = common::workspace_bin("oxshmem-api-coverage");
    let out = run_ok(arg(&tool), &[arg(&shared_lib())]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1726/1726 openshmem functions exported by liboxshmem.so"), "api-coverage says:\n{text}");
}

/// `nvshmem.h` declares exactly NVSHMEM 3.4's host-callable names (the reference list carries
/// 1,483), and the coverage tool finds every one exported.
#[test]
fn nvshmem_h_declares_and_the_library_exports_the_nvshmem_host_api() {
    let reference = std::fs::read_to_string(reference_dir().join("nvshmem_api.tsv")).expect("reading the API list");
    let want: BTreeSet<String> = reference
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() >= 3 && matches!(f[1], "host" | "both") && !f[0].contains("::")).then(|| f[0].to_string())
        })
        .collect();
    assert_eq!(want.len(), 1483);
    let text = std::fs::read_to_string(include_dir().join("nvshmem.h")).expect("reading nvshmem.h");
    let (declared_nv, _) = declared(&text);
    // Less the one internal entry point (`oxshmemi_register_device_library`, where the device
    // library registers itself), which is not NVSHMEM API.
    let declared_nv: BTreeSet<String> = declared_nv.into_iter().filter(|n| !n.starts_with("oxshmemi_")).collect();
    assert_eq!(declared_nv, want, "{}", diff("NVSHMEM host API", &declared_nv, &want));
    let tool = common::workspace_bin("oxshmem-api-coverage");
    let out = run_ok(arg(&tool), &[arg(&shared_lib()), "--api", "nvshmem-host"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1483/1483 nvshmem-host functions exported by liboxshmem.so"), "coverage says:\n{text}");
}

#[test]
fn the_static_library_defines_every_routine() {
    if !have("nm") {
        return;
    }
    let lib = common::static_lib();
    let out = run_ok("nm", &["-g", "--defined-only", arg(&lib)]);
    let defined: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3).then(|| f[2].to_string())
        })
        .collect();
    let (mut hf, hv) = header_decls();
    // An empty list of routines would have nothing missing.
    assert!(hf.len() > 1700, "only {} prototypes parsed from the headers", hf.len());
    hf.extend(fortran_decls());
    let missing: Vec<&String> = hf.iter().chain(&hv).filter(|n| !defined.contains(*n)).collect();
    assert!(missing.is_empty(), "liboxshmem.a lacks {missing:?}");
}

#[test]
fn the_soname_is_liboxshmem_so_1() {
    if !have("readelf") {
        return;
    }
    let out = run_ok("readelf", &["-d", arg(&shared_lib())]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Library soname: [liboxshmem.so.1]"), "readelf -d says:\n{text}");
}
