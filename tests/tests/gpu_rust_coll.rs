//! The runtime's team collectives on the Rust GPU device's memory (`GpuBuf`), in real multi-PE
//! jobs under the emulated CUDA driver (`tests/emucuda`): the runtime's ordinary collective
//! entry points (`oxshmem::coll::api::raw`) route a buffer of the GPU heap to its segment,
//! which runs broadcast, fcollect, collect, alltoall(s), reductions and reducescatter with
//! copies through the peers' mappings (`oxshmem_device::cuda::coll`). The PE program is
//! `src/bin/pe-gpu-coll.rs`; every element is checked there.
//!
//! `cargo test -p oxshmem-tests --features cuda --test gpu_rust_coll`

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use oxshmem_tests::{Job, JobResult, assert_each_pe_says, assert_job_ok, build_emulated_driver};

const PE_GPU_COLL: &str = env!("CARGO_BIN_EXE_pe-gpu-coll");

/// The emulated driver's directory.
fn driver() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gpu_rust_coll-{}", std::process::id()));
        build_emulated_driver(&dir).unwrap_or_else(|e| panic!("{e}"));
        dir
    })
}

fn job(n: usize, case: &str, channel: &str) -> JobResult {
    Job::new(n, PE_GPU_COLL)
        .args(&[case])
        .env("LD_LIBRARY_PATH", driver().to_str().expect("a UTF-8 path"))
        .env("SHMEM_SYMMETRIC_SIZE", "8M")
        .env("OXSHMEM_DEVICE_CHANNEL", channel)
        .timeout(Duration::from_secs(180))
        .run()
}

/// Broadcast, fcollect, collect, alltoall(s), sum/max/xor reductions and reducescatter on
/// `GpuBuf` memory (and with one buffer in host memory), on the world and, at 4 PEs, on a
/// team of the odd PEs; an fcollect whose members disagree fails on every PE alike, and the
/// world's collectives work after it. The host's collectives go through the peers' mappings
/// whatever channel the device uses, so they do so over the proxy and IBGDA channels too.
#[test]
fn team_collectives_reach_gpu_memory_from_rust() {
    for (channel, n) in [("p2p", 2), ("p2p", 3), ("p2p", 4), ("proxy", 2), ("ibgda", 4)] {
        let r = job(n, "coll", channel);
        assert_job_ok(&r);
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: collectives on the world agree"));
        assert_each_pe_says(&r, n, |pe| format!("PE {pe}: collectives on GPU memory agree"));
        if n == 4 {
            for pe in [1, 3] {
                let line = format!("PE {pe}: collectives on the odd PEs agree");
                assert!(r.stdout.lines().any(|l| l == line), "expected {line:?}\n{}", r.report());
            }
        }
        let refused = r.stdout.matches("the team's members called it with different arguments").count();
        assert_eq!(refused, n, "every PE should have refused the mismatched fcollect\n{}", r.report());
    }
}
