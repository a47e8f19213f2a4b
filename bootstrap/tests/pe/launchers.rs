//! A PE of the launcher tests (`tests/launchers.rs`): started by Hydra, `srun`, Open MPI's `mpirun` or the
//! test itself (unique id) with `OXS_LAUNCH_TEST_PE=<scenario>`.
//!
//! A program of its own (an example target of this crate) rather than the test binary re-run as a
//! `#[test]` that returns at once outside a job: such a "test" passed without testing anything.

use std::time::Duration;

const PE_VAR: &str = "OXS_LAUNCH_TEST_PE";

/// The scenario named by the test that started this PE.
fn main() {
    let scenario = std::env::var(PE_VAR)
        .unwrap_or_else(|_| panic!("{PE_VAR} is not set: this program is a PE of tests/launchers.rs"));
    // As the runtime's init does: logging when the environment asks for it.
    oxshmem_bootstrap::logging::install(None);
    std::process::exit(pe_main(&scenario));
}

/// Rank `rank`'s contribution to allgather number `epoch`: sizes cross the 1000-character
/// chunk boundary of the PMI back ends and include 0.
fn blob(rank: usize, epoch: usize) -> Vec<u8> {
    let len = [0, 10 * 1024, 1, 3000, 7, 0, 999, 2048][rank % 8];
    (0..len).map(|i| (i * 31 + rank * 7 + epoch * 13) as u8).collect()
}

fn show_nodes(n: &Option<Vec<usize>>) -> String {
    match n {
        None => "none".into(),
        Some(v) => v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","),
    }
}

fn pe_main(scenario: &str) -> i32 {
    let boot = match oxshmem_bootstrap::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("PE init failed: {e}");
            return 3;
        }
    };
    let (rank, size) = (boot.rank(), boot.size());
    if let Ok(want) = std::env::var("OXS_EXPECT_NAME") {
        assert_eq!(boot.name(), want, "PE {rank}: bootstrap");
    }
    match scenario {
        "collectives" => {
            for epoch in 0..2 {
                let all = boot.allgather(&blob(rank, epoch)).unwrap();
                assert_eq!(all.len(), size);
                for (r, got) in all.iter().enumerate() {
                    assert!(got == &blob(r, epoch), "PE {rank}: blob of {r}, epoch {epoch}");
                }
            }
            boot.barrier().unwrap();
            let root = size - 1;
            let data: Vec<u8> = (0..3000u32).map(|i| (i % 253) as u8).collect();
            let got = boot.broadcast(root, (rank == root).then_some(&data[..])).unwrap();
            assert!(got == data, "PE {rank}: broadcast");
            let nodes = show_nodes(&boot.node_mapping());
            if let Ok(want) = std::env::var("OXS_EXPECT_NODES") {
                assert_eq!(nodes, want, "PE {rank}: node mapping");
            }
            println!("PE {rank} of {size}: ok {} nodes={nodes}", boot.name());
            boot.finalize().unwrap();
        }
        "abort" => {
            if rank == 1 {
                std::thread::sleep(Duration::from_millis(100));
                boot.abort(7, "PE 1 gives up: test abort");
            }
            if let Err(e) = boot.barrier() {
                eprintln!("PE {rank}: barrier failed: {e}");
                return 5;
            }
            eprintln!("PE {rank}: the barrier completed although PE 1 aborted");
            return 6;
        }
        other => panic!("unknown scenario {other}"),
    }
    0
}
