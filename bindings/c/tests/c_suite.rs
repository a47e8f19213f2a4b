//! The C test suite: the programs of `tests/c/` (repository root), compiled with `oshcc` and
//! `oshc++` as a user of Sandia OpenSHMEM or OpenMPI's OSHMEM would compile unchanged OpenSHMEM
//! code, and run with `oshrun` on 2 and 4 PEs. Each program checks its results against values
//! it computes itself and prints `PE n: <what>: expected X got Y` for a mismatch; here the
//! job's exit status and every PE's `OK` line are asserted.
//!
//! | program        | area |
//! | ---            | --- |
//! | rma            | put/get/p/g/iput/iget/nbi/put_signal for the 24 RMA types, ctx forms, sized forms, heap/.data/.bss |
//! | amo            | every AMO for every AMO type under contention, exact totals; locks |
//! | sync           | wait_until/test and the _all/_any/_some(_vector) forms for every type; signals; fence ordering |
//! | coll           | barrier/sync, broadcast/collect/fcollect/alltoall(s), every reduction for every type, on the world and a split team |
//! | teams          | split_strided, split_2d, translate, team contexts, contexts, threads |
//! | static_data    | globals and statics (.data/.bss, two object files) as targets of everything; PIE and non-PIE |
//! | deprecated     | start_pes, shmalloc, old AMO names, shmem_wait, active-set collectives, TYPE_OP_to_all |
//! | generic        | the C11 _Generic interfaces |
//! | cxx_overloads  | the C++ overloads, from templates |
//! | cxx_app        | C++ application style: RAII, global constructors, a Jacobi halo exchange |
//! | memory         | version/name/thread queries, shmem_malloc/calloc/align/realloc/free/with_hints, a 256 MiB block |
//! | errors         | non-symmetric addresses, PE out of range, shmem_global_exit, clear_lock not held, SHMEM_CTX_INVALID |
//! | edge_cases     | config_mask 0, quiet/fence on SHMEM_CTX_INVALID, unknown malloc hints, zero-length collectives on NULL, negative strides |
//! | ext            | shmemx.h: signal_add/set, ibput/ibget, sum_inscan/exscan (and their OpenSHMEM 1.6 names), SHMEMX_TEAM_NODE, SHMEMX_MALLOC_NO_BARRIER, pcntr, register_gettid |
//! | ext_c11        | the C11 interfaces of shmemx.h's signal routines (with and without a context) |

mod common;
#[path = "common/suite.rs"]
mod suite;

use std::sync::OnceLock;

use suite::{Program, assert_all_ok, build, called_names, run_job};

// Optimization: the X-macro programs (thousands of instantiated calls) build at -O0, which is
// several times faster to compile; the programs whose own loops spin or race build at -O2, as
// users build them.
const C11: &[&str] = &["-std=c11", "-O0", "-Wno-deprecated-declarations"];
const C11_O2: &[&str] = &["-std=c11", "-O2", "-lpthread"];

const PROGRAMS: &[Program] = &[
    Program { name: "rma", sources: &["rma.c"], cxx: false, flags: C11 },
    Program { name: "amo", sources: &["amo.c"], cxx: false, flags: C11 },
    Program { name: "sync", sources: &["sync.c"], cxx: false, flags: C11_O2 },
    Program { name: "coll", sources: &["coll.c"], cxx: false, flags: C11 },
    Program { name: "teams", sources: &["teams.c"], cxx: false, flags: C11_O2 },
    Program { name: "static_data", sources: &["static_data.c", "static_data_extra.c"], cxx: false, flags: C11_O2 },
    Program {
        name: "static_data_nopie",
        sources: &["static_data.c", "static_data_extra.c"],
        cxx: false,
        flags: &["-std=c11", "-O2", "-no-pie", "-fno-pie"],
    },
    // As codes of OpenSHMEM 1.0-1.3 were built: C99, where shmem_wait_until and shmem_swap
    // are the untyped long routines.
    Program {
        name: "deprecated",
        sources: &["deprecated.c"],
        cxx: false,
        flags: &["-std=gnu99", "-O0", "-Wno-deprecated-declarations"],
    },
    Program { name: "generic", sources: &["generic.c"], cxx: false, flags: C11 },
    Program {
        name: "cxx_overloads",
        sources: &["cxx_overloads.cc"],
        cxx: true,
        flags: &["-std=c++17", "-O0", "-Wno-deprecated-declarations"],
    },
    Program { name: "cxx_app", sources: &["cxx_app.cc"], cxx: true, flags: &["-std=c++17", "-O2"] },
    Program { name: "memory", sources: &["memory.c"], cxx: false, flags: C11_O2 },
    Program { name: "errors", sources: &["errors.c"], cxx: false, flags: C11_O2 },
    Program {
        name: "edge_cases",
        sources: &["edge_cases.c"],
        cxx: false,
        flags: &["-std=c11", "-O2", "-Wno-deprecated-declarations"],
    },
    // C99 with GNU extensions (thread-locals): the signal routines by name, not through the
    // C11 interfaces that ext_c11 tests.
    Program { name: "ext", sources: &["ext.c"], cxx: false, flags: &["-std=gnu99", "-O2", "-lpthread"] },
    Program { name: "ext_c11", sources: &["ext_c11.c"], cxx: false, flags: C11 },
];

static BUILT: [OnceLock<Result<std::path::PathBuf, String>>; PROGRAMS.len()] =
    [const { OnceLock::new() }; PROGRAMS.len()];

/// The executable of the program `name`, compiled once per test run.
fn exe(name: &str) -> std::path::PathBuf {
    let i = PROGRAMS.iter().position(|p| p.name == name).expect("a program of the table");
    build(&PROGRAMS[i], &BUILT[i])
}

/// Runs `name` on `n` PEs and asserts that every PE passed every check.
fn passes(name: &str, n: usize, args: &[&str]) {
    let job = run_job(&exe(name), n, args, &[]);
    assert_all_ok(name.trim_end_matches("_nopie"), n, &job);
}

macro_rules! on_2_and_4_pes {
    ($($test2:ident, $test4:ident => $name:literal $(, $arg:literal)*;)*) => {$(
        #[test]
        fn $test2() {
            passes($name, 2, &[$($arg),*]);
        }
        #[test]
        fn $test4() {
            passes($name, 4, &[$($arg),*]);
        }
    )*};
}

on_2_and_4_pes! {
    rma_every_type_and_form_on_2_pes, rma_every_type_and_form_on_4_pes => "rma";
    amo_every_type_under_contention_on_2_pes, amo_every_type_under_contention_on_4_pes => "amo";
    wait_test_and_signals_on_2_pes, wait_test_and_signals_on_4_pes => "sync";
    collectives_every_op_and_type_on_2_pes, collectives_every_op_and_type_on_4_pes => "coll";
    teams_and_contexts_on_2_pes, teams_and_contexts_on_4_pes => "teams";
    static_data_as_targets_on_2_pes, static_data_as_targets_on_4_pes => "static_data";
    static_data_without_pie_on_2_pes, static_data_without_pie_on_4_pes => "static_data_nopie";
    deprecated_api_on_2_pes, deprecated_api_on_4_pes => "deprecated", "finalize";
    c11_generic_interfaces_on_2_pes, c11_generic_interfaces_on_4_pes => "generic";
    cxx_overloads_on_2_pes, cxx_overloads_on_4_pes => "cxx_overloads";
    cxx_application_on_2_pes, cxx_application_on_4_pes => "cxx_app";
    setup_and_memory_management_on_2_pes, setup_and_memory_management_on_4_pes => "memory";
    shmemx_extensions_on_2_pes, shmemx_extensions_on_4_pes => "ext";
    shmemx_c11_signal_interfaces_on_2_pes, shmemx_c11_signal_interfaces_on_4_pes => "ext_c11";
}

/// A scan whose kind differs between PEs (exclusive on PE 0, inclusive elsewhere) fails on
/// every PE with a message naming both, and the team's next scan works.
#[test]
fn scans_that_disagree_fail_everywhere() {
    for n in [2, 4] {
        let job = run_job(&exe("ext"), n, &["scan_mismatch"], &[]);
        assert_all_ok("ext", n, &job);
        for w in ["PE 0: shmemx_int_sum_exscan: ", "PE 1: shmemx_int_sum_inscan: ", "called inclusive scan of 16 bytes"]
        {
            assert!(job.stderr.contains(w), "no '{w}' on stderr on {n} PEs\n{}", job.report());
        }
    }
}

/// With a gettid function registered, a private context belongs to the thread the function
/// names: used under another name on the very same system thread, it ends the job.
#[test]
fn a_private_context_used_under_another_gettid_name_ends_the_job() {
    let job = run_job(&exe("ext"), 2, &["gettid_foreign"], &[]);
    assert!(job.code.is_some_and(|c| c != 0 && c != 124), "the job should end\n{}", job.report());
    assert!(
        job.stderr.contains(
            "shmem_ctx_int_p: invalid argument: a SHMEM_CTX_PRIVATE context is used by a thread other than its creator"
        ),
        "{}",
        job.report()
    );
    assert!(!job.stdout.contains("survived"), "a PE went on\n{}", job.report());
}

/// OpenSHMEM 1.5, start_pes: "Unlike shmem_init and shmem_init_thread, start_pes does not
/// require a call to shmem_finalize. Instead, the OpenSHMEM library is implicitly finalized
/// when the program exits." The same program as `deprecated_api_*`, returning from main
/// without shmem_finalize, as the codes of that era (and the OSU benchmarks) do.
#[test]
fn a_start_pes_program_may_return_from_main_without_finalizing() {
    passes("deprecated", 2, &[]);
}

/// Runs the `errors` program with `mistake` and asserts that the job failed with `status`
/// (any non-zero one when `None`), that stderr holds every piece of `wanted`, and that no PE
/// went on.
fn fails_with(mistake: &str, n: usize, env: &[(&str, &str)], status: Option<i32>, wanted: &[&str]) {
    let job = run_job(&exe("errors"), n, &[mistake], env);
    match status {
        Some(s) => assert_eq!(job.code, Some(s), "'{mistake}' on {n} PEs\n{}", job.report()),
        None => assert!(job.code.is_some_and(|c| c != 0), "'{mistake}' should end the job\n{}", job.report()),
    }
    assert_ne!(job.code, Some(124), "'{mistake}' hung until oshrun's timeout\n{}", job.report());
    for w in wanted {
        assert!(job.stderr.contains(w), "no '{w}' on stderr after '{mistake}'\n{}", job.report());
    }
    assert!(!job.stdout.contains("survived"), "a PE went on after '{mistake}'\n{}", job.report());
    assert!(!job.stderr.contains("SIGSEGV") && !job.stderr.contains("signal 11"), "{}", job.report());
}

#[test]
fn a_stack_variable_as_the_target_of_shmem_int_p_ends_the_job() {
    fails_with("stack_p", 2, &[], None, &["PE 0: shmem_int_p:", "not symmetric"]);
    fails_with("stack_p", 4, &[], None, &["PE 0: shmem_int_p:", "not symmetric"]);
}

#[test]
fn a_stack_variable_as_the_target_of_shmem_int_p_ends_the_job_under_shmem_debug() {
    fails_with("stack_p", 2, &[("SHMEM_DEBUG", "1")], None, &["PE 0: shmem_int_p:", "not symmetric"]);
    fails_with("stack_p", 4, &[("SHMEM_DEBUG", "1")], None, &["PE 0: shmem_int_p:", "not symmetric"]);
}

#[test]
fn other_non_symmetric_addresses_end_the_job_naming_the_routine() {
    fails_with("stack_get", 2, &[], None, &["shmem_long_get:", "source", "not symmetric"]);
    fails_with("malloc_put", 2, &[], None, &["shmem_putmem:", "destination", "not symmetric"]);
    fails_with("stack_amo", 2, &[], None, &["shmem_int_atomic_fetch_add:", "not symmetric"]);
}

#[test]
fn a_pe_out_of_range_ends_the_job() {
    fails_with("pe_range", 2, &[], None, &["shmem_int_p:", "PE 2 is out of range"]);
    fails_with("pe_range", 4, &[], None, &["shmem_int_p:", "PE 4 is out of range"]);
}

#[test]
fn shmem_global_exit_ends_the_job_with_its_status() {
    fails_with("global_exit", 2, &[], Some(7), &[]);
    fails_with("global_exit", 4, &[], Some(7), &[]);
}

/// `shmem_global_exit(0)` ends the job with status 0: the status is the program's, whatever
/// it is, and 0 is no error.
#[test]
fn shmem_global_exit_with_status_zero_ends_the_job_with_zero() {
    for n in [1, 2, 4] {
        let job = run_job(&exe("errors"), n, &["global_exit0"], &[]);
        assert_eq!(job.code, Some(0), "shmem_global_exit(0) on {n} PEs\n{}", job.report());
        assert!(!job.stdout.contains("survived"), "a PE went on after shmem_global_exit(0)\n{}", job.report());
    }
}

/// `shmem_clear_lock` on a lock nobody holds ends the job with an error naming the routine
/// and the lock's address, at once — with one PE and `SHMEM_DEBUG` too — instead of spinning
/// forever.
#[test]
fn shmem_clear_lock_of_a_lock_not_held_ends_the_job() {
    for (n, env) in [(1, &[("SHMEM_DEBUG", "1")][..]), (1, &[][..]), (2, &[][..]), (4, &[("SHMEM_DEBUG", "1")][..])] {
        let job = run_job(&exe("errors"), n, &["clear_lock"], env);
        let addr = job
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("PE 0: the lock is at "))
            .unwrap_or_else(|| panic!("the program did not print the lock's address\n{}", job.report()))
            .trim()
            .to_string();
        assert!(
            job.code.is_some_and(|c| c != 0 && c != 124),
            "clear_lock on {n} PEs should end the job\n{}",
            job.report()
        );
        for w in ["PE 0: shmem_clear_lock: ", &format!("lock {addr} "), "not held by this PE"] {
            assert!(job.stderr.contains(w), "no '{w}' on stderr after clear_lock on {n} PEs\n{}", job.report());
        }
        assert!(!job.stdout.contains("survived"), "a PE went on after clear_lock\n{}", job.report());
    }
}

/// An operation on `SHMEM_CTX_INVALID` is refused with a message that names the macro as the
/// specification spells it.
#[test]
fn an_operation_on_shmem_ctx_invalid_names_it() {
    fails_with("invalid_ctx", 2, &[], None, &["PE 0: shmem_ctx_int_p: ", "SHMEM_CTX_INVALID"]);
    let job = run_job(&exe("errors"), 2, &["invalid_ctx"], &[]);
    assert!(!job.stderr.contains("SHMEM_CONTEXT_INVALID"), "a macro that does not exist\n{}", job.report());
}

/// Runs the `edge_cases` program's `part` on `n` PEs and asserts that every PE passed every
/// check and that the library printed nothing that names a problem these calls do not have.
fn edge(part: &str, n: usize, env: &[(&str, &str)]) -> suite::Job {
    let job = run_job(&exe("edge_cases"), n, &[part], env);
    assert_all_ok("edge_cases", n, &job);
    for bad in ["not symmetric", "SHMEM_CONTEXT_INVALID", "SHMEM_CTX_INVALID", "hint"] {
        if bad == "hint" && env.iter().any(|(k, _)| *k == "SHMEM_DEBUG") {
            continue;
        }
        assert!(!job.stderr.contains(bad), "'{part}' on {n} PEs printed '{bad}'\n{}", job.report());
    }
    job
}

/// `shmem_team_split_strided` and `shmem_team_split_2d` apply `config` only under
/// `config_mask`: with 0 the team has the default `num_contexts`, 0.
#[test]
fn team_config_applies_only_under_config_mask() {
    edge("config_mask", 1, &[]);
    edge("config_mask", 2, &[]);
    edge("config_mask", 4, &[]);
}

/// The specification's team/context example: PEs outside the team quiet and fence their
/// `SHMEM_CTX_INVALID` context; both are no-ops.
#[test]
fn quiet_and_fence_on_shmem_ctx_invalid_are_no_ops() {
    edge("invalid_ctx", 1, &[]);
    edge("invalid_ctx", 2, &[]);
    edge("invalid_ctx", 3, &[]);
}

/// `shmem_malloc_with_hints` allocates whatever the hints (an implementation may ignore
/// them); under `SHMEM_DEBUG` it says once per PE that it ignored unknown bits.
#[test]
fn malloc_with_unknown_hints_allocates() {
    edge("hints", 2, &[]);
    let job = edge("hints", 2, &[("SHMEM_DEBUG", "1")]);
    for pe in 0..2 {
        let warned = job
            .stderr
            .lines()
            .filter(|l| l.starts_with(&format!("PE {pe}: shmem_malloc_with_hints: ")) && l.contains("ignored"))
            .count();
        assert_eq!(warned, 1, "PE {pe} should warn once about unknown hints\n{}", job.report());
    }
}

/// Every collective with zero elements and NULL buffers — team forms and the deprecated
/// active-set forms, `_to_all` included — succeeds silently, and later collectives work.
#[test]
fn zero_length_collectives_with_null_buffers_are_silent() {
    for n in [1, 2, 4] {
        let job = edge("zero_length", n, &[]);
        assert!(!job.stderr.contains("shmem_"), "a zero-length collective printed something\n{}", job.report());
    }
}

/// Negative strides in `shmem_team_split_strided`: team PE i is `start + i*stride`;
/// `translate_pe`, reductions, fcollect order and broadcast on the new teams; a split of a
/// reversed team; splits that leave the parent fail on every PE.
#[test]
fn split_strided_with_negative_strides() {
    for n in [1, 2, 3, 4] {
        edge("negative", n, &[]);
    }
}

#[test]
fn the_errors_program_passes_without_a_mistake() {
    let job = run_job(&exe("errors"), 2, &["ok"], &[]);
    assert_eq!(job.code, Some(0), "{}", job.report());
}

/// Every routine that `shmem.h` and `shmemx.h` declare (1,728) is called by at least one of the
/// plain C programs — typed and sized forms by name, not through the C11 generics or the C++
/// overloads, whose selections would hide a missing one.
#[test]
fn every_routine_the_headers_declare_is_called_by_a_c_program() {
    let mut declared = Vec::new();
    for h in ["shmem.h", "shmemx.h"] {
        let text = std::fs::read_to_string(common::include_dir().join(h)).expect("reading the header");
        declared.extend(common::declared(&text).0);
    }
    assert!(declared.len() > 1700, "only {} routines found in the headers", declared.len());
    let mut called = std::collections::BTreeSet::new();
    for p in PROGRAMS.iter().filter(|p| !p.cxx && p.name != "generic") {
        called.extend(called_names(p));
    }
    let missing: Vec<&String> = declared.iter().filter(|f| !called.contains(*f)).collect();
    assert!(missing.is_empty(), "{} routines are called by no C test program: {missing:?}", missing.len());
}

/// Every C and C++ source of `tests/c/` is compiled into one of the programs above, so that a
/// program added to the folder cannot go unrun (and a folder that reads as empty fails).
#[test]
fn every_source_of_tests_c_is_in_a_program() {
    let mut found: Vec<String> = std::fs::read_dir(suite::sources_dir())
        .expect("reading tests/c")
        .map(|e| e.expect("an entry of tests/c").file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".c") || f.ends_with(".cc"))
        .collect();
    found.sort();
    let used: std::collections::BTreeSet<&str> = PROGRAMS.iter().flat_map(|p| p.sources.iter().copied()).collect();
    assert_eq!(found.len(), used.len(), "tests/c holds {found:?}, the programs compile {used:?}");
    for f in &found {
        assert!(used.contains(f.as_str()), "tests/c/{f} is compiled into no program of the table");
    }
}
