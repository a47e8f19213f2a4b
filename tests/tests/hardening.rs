//! Issue 32, "Hardening, round 2": each item's behaviour in real multi-PE jobs.
//!
//! The PE programs are `pe-config` and `pe-heap` (and the others named per test).

use std::time::Duration;

use oxshmem_tests::{Job, assert_job_code, assert_job_ok};

const PE_CONFIG: &str = env!("CARGO_BIN_EXE_pe-config");
const PE_HEAP: &str = env!("CARGO_BIN_EXE_pe-heap");

/// Item 7: one size rule for `SHMEM_SYMMETRIC_SIZE`, `NVSHMEM_SYMMETRIC_SIZE` and
/// `SMA_SYMMETRIC_SIZE`. Trailing junk (`1G1`, `1M1`) fails init under every spelling with a
/// message naming the PE, `shmem_init` and the spelling set; NVSHMEM's decimals are taken
/// under every spelling.
#[test]
fn every_spelling_of_the_heap_size_refuses_trailing_junk() {
    for name in ["NVSHMEM_SYMMETRIC_SIZE", "SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"] {
        for junk in ["1G1", "1M1"] {
            let r = Job::new(2, PE_CONFIG).args(&["init-fails"]).env(name, junk).timeout(Duration::from_secs(30)).run();
            assert_job_code(&r, 3);
            let want = format!("shmem_init: environment variable {name}=\"{junk}\"");
            assert!(r.stderr.contains(&want) && r.stderr.contains("PE "), "{want:?} missing:\n{}", r.report());
        }
        // 2.5 MiB, rounded up to whole pages.
        let page = oxshmem::config::page_size();
        let want = ((5usize << 19).next_multiple_of(page)).to_string();
        let r = Job::new(2, PE_HEAP).args(&["size", &want]).env(name, "2.5M").timeout(Duration::from_secs(30)).run();
        assert_job_ok(&r);
    }
}

/// Item 12: `SMA_SYMMETRIC_SIZE`, an alias of `SHMEM_SYMMETRIC_SIZE`, wins over
/// `NVSHMEM_SYMMETRIC_SIZE`, as an explicit `SHMEM_*` setting does.
#[test]
fn sma_symmetric_size_wins_over_the_nvshmem_spelling() {
    let r = Job::new(2, PE_HEAP)
        .args(&["size", &(2usize << 20).to_string()])
        .env("SMA_SYMMETRIC_SIZE", "2M")
        .env("NVSHMEM_SYMMETRIC_SIZE", "4M")
        .timeout(Duration::from_secs(30))
        .run();
    assert_job_ok(&r);
}

const PE_HARDENING: &str = env!("CARGO_BIN_EXE_pe-hardening");

/// Item 3: debugging never makes the runtime less safe. PE 0 makes a collective allocation
/// call the others do not make (`shmem_malloc` against `shmem_barrier_all`, two mallocs
/// against one, `shmem_malloc` against `shmem_team_split_strided`): with `SHMEM_DEBUG=1` and
/// with `NVSHMEM_DEBUG=INFO`, as without, every PE gets an error and the job ends by itself
/// (status 3), never by the launcher's `--timeout` (the old debug check waited in a
/// launcher allgather that the other PEs never entered).
#[test]
fn debug_checks_never_turn_an_allocation_mismatch_into_a_hang() {
    for case in ["malloc-vs-barrier", "two-mallocs-vs-one", "malloc-vs-split"] {
        for env in [&[][..], &[("SHMEM_DEBUG", "1")][..], &[("NVSHMEM_DEBUG", "INFO")][..]] {
            let r = Job::new(3, PE_HARDENING).args(&[case]).envs(env).timeout(Duration::from_secs(30)).run();
            assert_job_code(&r, 3);
            for pe in 0..3 {
                let said = format!("PE {pe}: {case} failed everywhere, nothing hung");
                assert!(r.stdout.contains(&said), "{said:?} missing ({env:?}):\n{}", r.report());
            }
            let err = format!("ERR {case}: PE 0: shmem_malloc: ");
            assert!(r.stdout.contains(&err), "{err:?} missing ({env:?}):\n{}", r.report());
        }
    }
}

/// Item 11: in a job without the device layer, a malformed variable of that layer (or of the
/// ofi transport) fails init naming it; a misspelt `OXSHMEM_CUDA_` variable draws PE 0's
/// warning with the nearest known name.
#[test]
fn every_variable_is_checked_whether_or_not_its_layer_starts() {
    for (name, bad) in [
        ("OXSHMEM_TIMEOUT", "-5"),
        ("OXSHMEM_TIMEOUT", "abc"),
        ("OXSHMEM_IBGDA_NWQES", "3"),
        ("OXSHMEM_CUDA_DEVICE", "-3"),
    ] {
        let r = Job::new(2, PE_CONFIG).args(&["init-fails"]).env(name, bad).timeout(Duration::from_secs(30)).run();
        assert_job_code(&r, 3);
        let want = format!(": shmem_init: environment variable {name}={bad:?}: ");
        assert!(r.stderr.contains(&want), "{want:?} missing:\n{}", r.report());
    }
    let r =
        Job::new(2, PE_CONFIG).args(&["init"]).env("OXSHMEM_CUDA_HAEP", "on").timeout(Duration::from_secs(30)).run();
    assert_job_ok(&r);
    let want = "oxshmem: warning: OXSHMEM_CUDA_HAEP is not a variable oxshmem reads (did you mean OXSHMEM_CUDA_HEAP?)";
    assert_eq!(r.stderr.lines().filter(|l| *l == want).count(), 1, "{want:?} not once:\n{}", r.report());
}
