//! Starting jobs: init at 1 to 16 PEs, the node layout, singletons, and the heap's memfd
//! (OpenSHMEM 1.5 §9.1–9.2 and the project's DESIGN, "Symmetric memory").
//!
//! The PE program is `pe-misc`.

use std::collections::BTreeSet;

use oxshmem_tests::{Job, assert_each_pe_says, assert_job_ok, dev_shm, job_ok, job_shm_leftovers};

const PE_MISC: &str = env!("CARGO_BIN_EXE_pe-misc");
const PE_RMA: &str = env!("CARGO_BIN_EXE_pe-rma");

/// Every PE of a 1-, 2-, 4-, 8- and 16-PE job initializes, knows its number and the job's
/// size, and sees one node holding PEs `0..n`.
#[test]
fn every_pe_initializes_and_all_share_one_node() {
    for n in [1, 2, 4, 8, 16] {
        let r = job_ok(n, PE_MISC, &["hello", &n.to_string()]);
        assert_each_pe_says(&r, n, |pe| format!("hello from PE {pe} of {n}"));
    }
}

/// `oshrun -n 16` of a trivial program (one that never talks to the launcher) finishes.
#[test]
fn sixteen_copies_of_a_trivial_program_finish() {
    let r = Job::new(16, "/bin/true").timeout(std::time::Duration::from_secs(30)).run();
    assert_job_ok(&r);
}

/// A program started without a launcher is PE 0 of 1, and every operation works.
#[test]
fn a_program_without_a_launcher_is_pe_0_of_1() {
    let r = Job::direct(PE_MISC).args(&["singleton"]).run();
    assert_job_ok(&r);
    assert_each_pe_says(&r, 1, |_| "singleton: PE 0 of 1".to_string());
    // A whole RMA case, too.
    let r = Job::direct(PE_RMA).args(&["types", "1", "4096"]).run();
    assert_job_ok(&r);
    assert_each_pe_says(&r, 1, |_| "PE 0 checked 15 types at sizes [1, 4096]".to_string());
}

/// The heap is a memfd of mode 0600 with no name in any file system, each PE maps a peer's heap
/// when it first uses it (a few at init, every one after using every PE, each once), and nothing
/// appears in /dev/shm, during the job or after it.
#[test]
fn heap_is_a_private_memfd_and_dev_shm_stays_clean() {
    for n in [1, 2, 4] {
        let before = dev_shm();
        let r = Job::new(n, PE_MISC)
            .args(&["memfd"])
            .shm_only("each PE maps every PE's heap, and the forced network path maps none")
            .run();
        assert_job_ok(&r);
        let after = dev_shm();
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: heap memfd mode 600"));
        let during: BTreeSet<String> = r.stdout_lines_with("devshm: ").into_iter().map(str::to_string).collect();
        let new_during = job_shm_leftovers(&before, &during, &[r.launcher_pid]);
        let new_after = job_shm_leftovers(&before, &after, &[r.launcher_pid]);
        assert!(new_during.is_empty(), "new entries in /dev/shm while the job ran: {new_during:?}\n{}", r.report());
        assert!(new_after.is_empty(), "new entries in /dev/shm after the job: {new_after:?}\n{}", r.report());
    }
}

/// `SHMEM_VERSION=1`: PE 0 prints exactly one line, the version, and no blank line after it.
#[test]
fn shmem_version_prints_one_line() {
    let r = Job::new(2, PE_MISC).args(&["hello", "2"]).env("SHMEM_VERSION", "1").run();
    assert_job_ok(&r);
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.starts_with("oshrun")).collect();
    assert_eq!(lines.len(), 1, "stderr: {:?}", r.stderr);
    assert!(lines[0].starts_with("oxshmem ") && lines[0].contains("(OpenSHMEM 1.5)"), "{}", lines[0]);
}

/// `SHMEM_INFO=1` (or `NVSHMEM_INFO`): PE 0 prints every variable users can set, the device
/// layer's included, with its value and source; test-only variables are not shown, and the
/// `=` signs line up.
#[test]
fn shmem_info_prints_the_whole_table_aligned() {
    let r = Job::new(2, PE_MISC).args(&["hello", "2"]).env("SHMEM_INFO", "1").env("OXSHMEM_DEVICE_BLOCKS", "3").run();
    assert_job_ok(&r);
    for v in oxshmem::config::VARS.iter().chain(oxshmem_device::config::VARS) {
        let shown = r.stderr.lines().any(|l| l.trim_start().starts_with(&format!("{} ", v.name)));
        assert_eq!(shown, v.shown(), "{} shown: {shown}\n{}", v.name, r.stderr);
    }
    let blocks = r.stderr.lines().find(|l| l.trim_start().starts_with("OXSHMEM_DEVICE_BLOCKS ")).expect("listed");
    assert!(blocks.contains("= 3") && blocks.contains("[environment (OXSHMEM_DEVICE_BLOCKS)]"), "{blocks}");
    let columns: BTreeSet<usize> =
        r.stderr.lines().filter(|l| l.contains(" = ")).map(|l| l.find(" = ").unwrap()).collect();
    assert_eq!(columns.len(), 1, "the = signs are not aligned:\n{}", r.stderr);
}

/// An error raised before the process knows its PE number does not claim to be PE 0: it
/// carries the rank the launcher put in the environment, or `PE ?` without one.
#[test]
fn errors_before_the_rank_is_known_do_not_say_pe_0() {
    const PE_HEAP: &str = env!("CARGO_BIN_EXE_pe-heap");
    let r = Job::direct(PE_HEAP).args(&["init-fails"]).env("OXSHMEM_BOOTSTRAP", "bogus").run();
    assert_eq!(r.code(), Some(3), "{}", r.report());
    assert!(r.stderr.contains("PE ?: shmem_init: "), "{}", r.report());
    assert!(!r.stderr.contains("PE 0:"), "{}", r.report());
    let r = Job::direct(PE_HEAP).args(&["init-fails"]).env("OXSHMEM_BOOTSTRAP", "bogus").env("PMI_RANK", "5").run();
    assert_eq!(r.code(), Some(3), "{}", r.report());
    assert!(r.stderr.contains("PE 5: shmem_init: "), "{}", r.report());
}

/// An OS error that carries its own text does not end in a stray "failed: " (it read
/// `memfd_create(...): Cannot allocate memory (os error 12) failed: `).
#[test]
fn os_errors_read_as_one_sentence() {
    let e = oxshmem::Error::new(
        1,
        "shmem_init",
        oxshmem::ErrorKind::Os {
            call: "memfd_create(heap): Cannot allocate memory (os error 12)".into(),
            errno: String::new(),
        },
    );
    assert_eq!(e.to_string(), "PE 1: shmem_init: memfd_create(heap): Cannot allocate memory (os error 12)");
    let e = oxshmem::Error::new(
        oxshmem::UNKNOWN_PE,
        "shmem_init",
        oxshmem::ErrorKind::Os { call: "mmap of PE 2's heap".into(), errno: "Permission denied (os error 13)".into() },
    );
    assert_eq!(e.to_string(), "PE ?: shmem_init: mmap of PE 2's heap failed: Permission denied (os error 13)");
}
