//! The smallest bootstrap program: init, one allgather, a barrier, finalize.
//!
//! ```text
//! cargo build -p oxshmem-bootstrap --example pmi_hello
//! oshrun -n 4 target/debug/examples/pmi_hello
//! mpiexec.hydra -launcher fork -hosts 127.0.0.2,127.0.0.3 -n 4 target/debug/examples/pmi_hello
//! srun --mpi=pmi2 -n 4 target/debug/examples/pmi_hello
//! ```
//! Started without a launcher, it runs as PE 0 of 1.

fn main() -> Result<(), oxshmem_bootstrap::BootstrapError> {
    let boot = oxshmem_bootstrap::from_env()?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let me = format!("{} pid {}", host.trim(), std::process::id());
    let all = boot.allgather(me.as_bytes())?;
    boot.barrier()?;
    if boot.rank() == 0 {
        println!("{} PEs over {}, nodes by rank: {:?}", boot.size(), boot.name(), boot.node_mapping());
        for (pe, who) in all.iter().enumerate() {
            println!("  PE {pe}: {}", String::from_utf8_lossy(who));
        }
    }
    boot.finalize()
}
