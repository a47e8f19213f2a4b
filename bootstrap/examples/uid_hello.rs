//! The unique-id bootstrap the NVSHMEM way (`nvshmemx_get_uniqueid` + `init_attr`): the
//! program is its own launcher. Rank 0 creates the id, starts the other ranks itself and hands
//! them the id through the environment; then every rank joins.
//!
//! ```text
//! cargo run -p oxshmem-bootstrap --example uid_hello -- 4
//! OXSHMEM_UID_ADDR=127.0.0.1 cargo run -p oxshmem-bootstrap --example uid_hello -- 4
//! ```

use oxshmem_bootstrap::uid::{Uid, create_unique_id};
use oxshmem_bootstrap::{Bootstrap, BootstrapError};

fn main() -> Result<(), BootstrapError> {
    let (boot, children) = if std::env::var_os("OXSHMEM_UNIQUEID").is_some() {
        // Started by rank 0 below: the id, rank and size are in the environment.
        (Uid::from_env()?, Vec::new())
    } else {
        let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4);
        let id = create_unique_id()?;
        let exe = std::env::current_exe().expect("own path");
        let children: Vec<_> = (1..n)
            .map(|r| {
                std::process::Command::new(&exe)
                    .env("OXSHMEM_UNIQUEID", id.to_string())
                    .env("OXSHMEM_UID_RANK", r.to_string())
                    .env("OXSHMEM_UID_SIZE", n.to_string())
                    .spawn()
                    .expect("start a rank")
            })
            .collect();
        println!("rank 0: job id {id}");
        (Uid::init(&id, 0, n)?, children)
    };
    let all = boot.allgather(format!("pid {}", std::process::id()).as_bytes())?;
    if boot.rank() == 0 {
        for (r, who) in all.iter().enumerate() {
            println!("  rank {r}: {}", String::from_utf8_lossy(who));
        }
    }
    boot.finalize()?;
    for mut c in children {
        let _ = c.wait();
    }
    Ok(())
}
