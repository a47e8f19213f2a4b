//! A PE of the `oshrun` tests (`tests/oshrun.rs`): started by `oshrun` with `OXS_OSHRUN_TEST_PE=<scenario>`.
//!
//! A program of its own (an example target of this crate) rather than the test binary re-run as a
//! `#[test]` that returns at once outside a job: such a "test" passed without testing anything.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use oxshmem_bootstrap::launcher::job::CLOSE_GRACE;

const PE_VAR: &str = "OXS_OSHRUN_TEST_PE";
/// A folder the PEs of one job share (for the stranger scenarios' hand-over).
const DIR_VAR: &str = "OXS_OSHRUN_TEST_DIR";

/// The scenario named by the test that started this PE.
fn main() {
    let scenario = std::env::var(PE_VAR)
        .unwrap_or_else(|_| panic!("{PE_VAR} is not set: this program is a PE of tests/oshrun.rs"));
    let code = pe_main(&scenario);
    std::process::exit(code);
}

/// Rank `rank`'s contribution to allgather number `epoch`: sizes include 0 and 10 KiB.
fn blob(rank: usize, epoch: usize) -> Vec<u8> {
    let len = [0, 10 * 1024, 1, 1000, 3, 0, 4096, 777][rank % 8];
    (0..len).map(|i| (i * 31 + rank * 7 + epoch * 13) as u8).collect()
}

/// A connection to the PMI port from someone who was not given the job's token: send
/// `lines`, then expect oshrun to close the connection without a word.
fn stranger(port: &str, lines: &str) {
    let mut s = std::net::TcpStream::connect(port).expect("connect to PMI_PORT");
    // A bound on a hang, not a speed requirement: oshrun closes the connection at once.
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(lines.as_bytes()).unwrap();
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => {}
        // oshrun closed with our bytes unread: a reset, which is a close too.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("oshrun kept a stranger's connection open ({e}); it said {:?}", String::from_utf8_lossy(&got)),
    }
    assert!(got.is_empty(), "oshrun answered a stranger's {lines:?}: {:?}", String::from_utf8_lossy(&got));
}

/// The stranger scenarios, before PE 0 and PE 1 connect themselves: PE 0 plays strangers
/// that speak for PE 1 (which has not connected yet), then lets PE 1 go on.
fn strangers_first(scenario: &str) {
    let id: usize = std::env::var("PMI_ID").unwrap().parse().unwrap();
    let done = PathBuf::from(std::env::var_os(DIR_VAR).unwrap()).join("strangers-done");
    if id == 0 {
        let port = std::env::var("PMI_PORT").unwrap();
        let wrong = "0".repeat(64);
        let tries = match scenario {
            // Claim PE 1's id and abort the job with an exit code of our choice.
            "stranger_abort" => vec![
                "cmd=initack pmiid=1\ncmd=abort exitcode=77\n".to_string(),
                format!("cmd=initack pmiid=1 token={wrong}\ncmd=abort exitcode=78\n"),
                "cmd=abort exitcode=79\n".to_string(),
            ],
            // Only claim PE 1's id, so that the real PE 1 would be refused.
            _ => vec![
                "cmd=initack pmiid=1\n".to_string(),
                format!("cmd=initack pmiid=1 token={wrong}\n"),
                "cmd=initack pmiid=1 token=\n".to_string(),
            ],
        };
        for lines in &tries {
            stranger(&port, lines);
        }
        std::fs::write(&done, b"").unwrap();
    } else {
        let start = Instant::now();
        while !done.exists() {
            assert!(start.elapsed() < Duration::from_secs(30), "PE 0 never let PE {id} go on");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn pe_main(scenario: &str) -> i32 {
    if scenario.starts_with("stranger") {
        strangers_first(scenario);
    }
    let pmi = oxshmem_bootstrap::from_env().expect("bootstrap from the environment");
    let (rank, size) = (pmi.rank(), pmi.size());
    assert_eq!(pmi.name(), "pmi1");
    assert_eq!(std::env::var("OSHRUN_NPES").unwrap(), size.to_string());
    match scenario {
        "collectives" => {
            // oshrun publishes PMI_process_mapping: every PE on one node.
            assert_eq!(pmi.node_mapping(), Some(vec![0; size]));
            for epoch in 0..3 {
                let all = pmi.allgather(&blob(rank, epoch)).unwrap();
                assert_eq!(all.len(), size);
                for (r, got) in all.iter().enumerate() {
                    assert_eq!(got, &blob(r, epoch), "PE {rank}: blob of rank {r}, epoch {epoch}");
                }
            }
            pmi.barrier().unwrap();
            let root = size - 1;
            let msg = b"from the root".as_slice();
            assert_eq!(pmi.broadcast(root, (rank == root).then_some(msg)).unwrap(), msg);
            let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
            assert_eq!(pmi.broadcast(0, (rank == 0).then_some(&big[..])).unwrap(), big);
            assert_eq!(pmi.broadcast(0, Some(&[])).unwrap(), b"");
            pmi.barrier().unwrap();
            println!("PE {rank} of {size}: collectives ok");
            pmi.finalize().unwrap();
        }
        "big" => {
            let mine: Vec<u8> = (0..100 * 1024).map(|i: usize| (i * 7 + rank) as u8).collect();
            let all = pmi.allgather(&mine).unwrap();
            assert_eq!(all.len(), size, "PE {rank}: one 100 KiB blob per rank");
            for (r, got) in all.iter().enumerate() {
                let want: Vec<u8> = (0..100 * 1024).map(|i: usize| (i * 7 + r) as u8).collect();
                assert!(got == &want, "PE {rank}: 100 KiB blob of rank {r} differs");
            }
            println!("PE {rank}: big ok");
            pmi.finalize().unwrap();
        }
        "exit3" => {
            if rank == 1 {
                return 3;
            }
            pmi.barrier().unwrap();
        }
        "sigkill" => {
            if rank == 1 {
                std::thread::sleep(Duration::from_millis(100));
                // SAFETY: signalling ourselves; no memory is involved.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            pmi.barrier().unwrap();
        }
        "abort" => {
            if rank == size - 1 {
                pmi.abort(5, "PE gave up: test abort");
            }
            pmi.barrier().unwrap();
        }
        "no_finalize" => {
            pmi.barrier().unwrap();
            if rank == 0 {
                return 0;
            }
            pmi.barrier().unwrap();
        }
        "finalize_early" => {
            if rank == 0 {
                pmi.finalize().unwrap();
                return 0;
            }
            pmi.barrier().unwrap();
        }
        "busy" => {
            if rank != 1 {
                // Ignore SIGTERM and (below) spin: only the SIGKILL that follows can end us.
                // SAFETY: setting a signal disposition to SIG_IGN has no memory effects.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            }
            // Past this barrier every other PE ignores SIGTERM, so PE 1's failure really needs
            // the SIGKILL (a fixed pause here could end before they got that far).
            pmi.barrier().unwrap();
            if rank == 1 {
                return 3;
            }
            loop {
                std::hint::spin_loop();
            }
        }
        "hang" => {
            pmi.barrier().unwrap();
            println!("PE {rank} ready pid {}", std::process::id());
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "status" => {
            // What a runtime writes into oshrun's status table: PE 0 waits in a barrier for
            // PE 1, PE 1 in a wait, PE 2 left its last barrier and runs; PE 3 writes nothing.
            use oxshmem_bootstrap::status::{self, Arg, Routine, code};
            assert!(std::env::var(status::FD_VAR).is_ok(), "oshrun names its status table");
            assert!(status::attach(rank, size, false), "PE {rank}: the table is this job's");
            match rank {
                0 => {
                    status::enter(Routine::of(code::BARRIER_ALL), Some(0), 7, Arg::None);
                    status::wait_begin(None, Some(1));
                }
                1 => status::wait_begin(Some((Routine::of(code::WAIT_UNTIL), Arg::Addr(0x1000))), None),
                2 => {
                    let r = Routine { code: code::REDUCE, op: 6, ty: 7 };
                    status::enter(r, Some(0), 6, Arg::None);
                    status::wait_begin(None, Some(0));
                    status::wait_end();
                }
                _ => {}
            }
            pmi.barrier().unwrap();
            println!("PE {rank} ready pid {}", std::process::id());
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "stranger_abort" | "stranger_claim" => {
            let all = pmi.allgather(&blob(rank, 1)).unwrap();
            assert_eq!(all, (0..size).map(|r| blob(r, 1)).collect::<Vec<_>>());
            println!("PE {rank}: ok");
            pmi.finalize().unwrap();
        }
        "close_pmi" => {
            pmi.barrier().unwrap();
            if rank == 1 {
                // Closes the connection; the PE goes on (until oshrun ends it).
                drop(pmi);
                println!("PE 1 closed its connection");
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            pmi.barrier().unwrap();
        }
        "finalize_then_close" => {
            pmi.barrier().unwrap();
            pmi.finalize().unwrap();
            drop(pmi);
            // Longer than oshrun's grace for a closed connection: a finalized PE may close.
            std::thread::sleep(CLOSE_GRACE + Duration::from_secs(1));
            println!("PE {rank}: still fine");
        }
        other => panic!("unknown scenario {other}"),
    }
    0
}
