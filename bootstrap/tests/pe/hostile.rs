//! A rank of the hostile-world tests (`tests/hostile.rs`): a unique-id rank, a stranger holding
//! idle connections (`hold`), a PE of an `oshrun --pmi-port` job (`pmi-late`), or a process that
//! replaces or leaves unused its unique ids, as `OXS_HOSTILE_PE=<scenario>` says.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use oxshmem_bootstrap::Bootstrap;
use oxshmem_bootstrap::uid::{Uid, UniqueId, create_unique_id};

const PE_VAR: &str = "OXS_HOSTILE_PE";

/// The scenario named by the test that started this rank.
fn main() {
    let scenario =
        std::env::var(PE_VAR).unwrap_or_else(|_| panic!("{PE_VAR} is not set: this is a rank of tests/hostile.rs"));
    oxshmem_bootstrap::logging::install(None);
    std::process::exit(rank_main(&scenario));
}

fn rank_main(scenario: &str) -> i32 {
    match scenario {
        "replaced-id" => return replaced_id(),
        "unused-id" => return unused_id(),
        "pmi-late" => return pmi_late(),
        "hold" => return hold(),
        _ => {}
    }
    let boot = match Uid::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("rank init failed: {e}");
            return 3;
        }
    };
    let r = boot.rank();
    let step = |what: &str, res: oxshmem_bootstrap::Result<()>| {
        if let Err(e) = res {
            eprintln!("rank {r}: {what} failed: {e}");
            std::process::exit(4);
        }
    };
    match scenario {
        "collectives" => {
            step("barrier", boot.barrier());
            step("allgather", boot.allgather(&[r as u8]).map(|_| ()));
        }
        // Two barriers with a pause between them, in which the test kills a rank.
        "pause" => {
            step("barrier 1", boot.barrier());
            println!("rank {r}: between barriers");
            let _ = std::io::stdout().flush();
            std::thread::sleep(Duration::from_millis(
                std::env::var("OXS_HOSTILE_PAUSE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(500),
            ));
            step("barrier 2", boot.barrier());
        }
        // A barrier, then a wait for ever (as a PE spinning in a runtime barrier, which no
        // bootstrap socket sees), in which the test kills a rank.
        "wait-forever" => {
            step("barrier", boot.barrier());
            println!("rank {r}: waiting");
            let _ = std::io::stdout().flush();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        other => {
            eprintln!("unknown scenario {other}");
            return 2;
        }
    }
    step("finalize", boot.finalize());
    println!("rank {r}: ok");
    0
}

/// The stranger: opens `OXS_HOLD_N` connections to `OXS_HOLD_ADDR` (each given 2 s), prints
/// `held <count> as uid <uid>`, and keeps them until it is killed.
fn hold() -> i32 {
    let addr: std::net::SocketAddr = std::env::var("OXS_HOLD_ADDR").unwrap().parse().unwrap();
    let n: usize = std::env::var("OXS_HOLD_N").unwrap().parse().unwrap();
    let held: Vec<TcpStream> =
        (0..n).filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()).collect();
    // SAFETY: getuid cannot fail.
    println!("held {} as uid {}", held.len(), unsafe { libc::getuid() });
    let _ = std::io::stdout().flush();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A PE of an `oshrun --pmi-port` job: prints `port <PMI_PORT>`, waits for the file named by
/// `OXS_HOSTILE_GO` to exist (at most 60 s), then joins the job over PMI-1 and runs a barrier,
/// an allgather and finalize.
fn pmi_late() -> i32 {
    println!("port {}", std::env::var("PMI_PORT").unwrap_or_default());
    let _ = std::io::stdout().flush();
    let go = std::path::PathBuf::from(std::env::var_os("OXS_HOSTILE_GO").expect("OXS_HOSTILE_GO"));
    let t = Instant::now();
    while !go.exists() {
        if t.elapsed() > Duration::from_secs(60) {
            eprintln!("the go file never came");
            return 9;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let boot = match oxshmem_bootstrap::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("PE init failed: {e}");
            return 3;
        }
    };
    let r = boot.rank();
    if let Err(e) = boot.barrier().and_then(|()| boot.allgather(&[r as u8]).map(drop)).and_then(|()| boot.finalize()) {
        eprintln!("PE {r}: {e}");
        return 4;
    }
    println!("PE {r}: ok");
    0
}

/// Rank 0 of a 2-rank job that makes an id, replaces it with a newer one (printing both, one
/// per line: `old <id>`, `new <id>`), and runs the job on the newer one.
fn replaced_id() -> i32 {
    let old = create_unique_id().expect("create_unique_id");
    let new = create_unique_id().expect("the second create_unique_id");
    println!("old {old}");
    println!("new {new}");
    let _ = std::io::stdout().flush();
    let boot = match Uid::init(&new, 0, 2) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("rank 0 init failed: {e}");
            return 3;
        }
    };
    // What the "collectives" scenario of rank 1 does.
    if let Err(e) = boot.barrier().and_then(|()| boot.allgather(&[0]).map(drop)).and_then(|()| boot.finalize()) {
        eprintln!("rank 0: {e}");
        return 4;
    }
    println!("rank 0: ok");
    0
}

/// A process that makes an id it never uses (printing `unused <id>`), then runs a 1-rank job
/// on another id (not made by `create_unique_id`, so that the unused one is not replaced) to
/// its finalize, prints `finalized` and waits to be killed.
fn unused_id() -> i32 {
    let unused = create_unique_id().expect("create_unique_id");
    println!("unused {unused}");
    let job = UniqueId::new("127.0.0.1:0".parse().unwrap()).unwrap();
    // Port 0: rank 0 binds a port of the kernel's choice (a 1-rank job needs no one to find it).
    let boot = Uid::init(&job, 0, 1).expect("a 1-rank job");
    boot.finalize().expect("finalize");
    println!("finalized");
    let _ = std::io::stdout().flush();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}
