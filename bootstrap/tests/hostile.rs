//! Issue 32, "Hardening, round 2": the bootstrap against a hostile or careless world, with
//! real processes. The unique-id ranks are this test binary, re-executed as `--exact hostile_pe`
//! with `OXS_HOSTILE_PE=<scenario>` (self-contained, so that this file needs nothing but the
//! crate). Every job runs in its own process group under a watchdog that kills the group, and
//! every rank's waits are bounded by `OXSHMEM_TIMEOUT`, so no test can hang.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use oxshmem_bootstrap::Bootstrap;
use oxshmem_bootstrap::uid::{Uid, UniqueId};

const PE_VAR: &str = "OXS_HOSTILE_PE";
/// Upper bound for any one job here.
const WATCHDOG: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------- the rank side

/// Not a test of its own: the entry point of a rank this file starts.
#[test]
fn hostile_pe() {
    let Ok(scenario) = std::env::var(PE_VAR) else {
        return;
    };
    oxshmem_bootstrap::logging::install(None);
    std::process::exit(rank_main(&scenario));
}

fn rank_main(scenario: &str) -> i32 {
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
        other => {
            eprintln!("unknown scenario {other}");
            return 2;
        }
    }
    step("finalize", boot.finalize());
    println!("rank {r}: ok");
    0
}

// ---------------------------------------------------------------- running ranks

struct Out {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

fn reader(r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::BufReader::new(r).read_to_string(&mut s);
        s
    })
}

/// A free port on 127.0.0.1 below the kernel's ephemeral range, for an id that nothing
/// listens on yet (rank 0's init binds it).
fn local_id() -> UniqueId {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seed = u64::from(std::process::id()) << 32 ^ now.as_nanos() as u64;
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = 20_000 + (x % 12_000) as u16;
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            let addr = l.local_addr().unwrap();
            drop(l);
            return UniqueId::new(addr).unwrap();
        }
    }
    panic!("no free port in 20000..32000 on 127.0.0.1");
}

/// One rank: `rank` of `size` in job `id`, in its own process group.
fn rank(id: &UniqueId, rank: usize, size: usize, scenario: &str, env: &[(&str, &str)]) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("OXSHMEM_") || k.starts_with("SHMEM_") || k.starts_with("NVSHMEM_") {
            c.env_remove(k);
        }
    }
    c.args(["--exact", "hostile_pe", "--nocapture", "--test-threads", "1"])
        .env(PE_VAR, scenario)
        .env("OXSHMEM_UNIQUEID", id.to_string())
        .env("OXSHMEM_UID_RANK", rank.to_string())
        .env("OXSHMEM_UID_SIZE", size.to_string())
        .env("OXSHMEM_LOG", "boot=warn");
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start a rank: {e}"))
}

/// Waits for every child at most [`WATCHDOG`]; past that, SIGKILLs their process groups and
/// fails the test with what they printed.
fn finish_all(children: Vec<Child>, start: Instant) -> Vec<Out> {
    let mut slots: Vec<_> = children
        .into_iter()
        .map(|mut c| {
            let out = reader(c.stdout.take().unwrap());
            let err = reader(c.stderr.take().unwrap());
            (c, out, err, None::<(ExitStatus, Duration)>)
        })
        .collect();
    loop {
        for s in slots.iter_mut().filter(|s| s.3.is_none()) {
            s.3 = s.0.try_wait().unwrap().map(|st| (st, start.elapsed()));
        }
        if slots.iter().all(|s| s.3.is_some()) {
            break;
        }
        if start.elapsed() > WATCHDOG {
            for s in &slots {
                // SAFETY: signalling the process group of a child we started; no memory.
                unsafe { libc::kill(-(s.0.id() as i32), libc::SIGKILL) };
            }
            let outs: Vec<String> = slots
                .into_iter()
                .map(|mut s| {
                    let _ = s.0.wait();
                    format!("{}{}", s.1.join().unwrap(), s.2.join().unwrap())
                })
                .collect();
            panic!("ranks still running after {WATCHDOG:?}; killed. Output:\n{outs:#?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    slots
        .into_iter()
        .map(|s| {
            let (status, elapsed) = s.3.unwrap();
            Out { status, stdout: s.1.join().unwrap(), stderr: s.2.join().unwrap(), elapsed }
        })
        .collect()
}

fn connect_retrying(addr: std::net::SocketAddr) -> TcpStream {
    let t = Instant::now();
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return s,
            Err(e) => {
                assert!(t.elapsed() < WATCHDOG, "rank 0 never listened: {e}");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

// ---------------------------------------------------------------- item 12: log lines

/// Rank 0 knows its rank from the start: the warnings it logs while it accepts the others (a
/// stranger refused) say `PE 0`, not `PE ?`.
#[test]
fn uid_rank_0_log_lines_name_its_pe() {
    let id = local_id();
    let t = Instant::now();
    let kids = vec![rank(&id, 0, 2, "collectives", &[("OXSHMEM_TIMEOUT", "20")])];
    let mut g = connect_retrying(id.addr());
    g.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    g.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    let _ = g.read_to_end(&mut got);
    // Now the real rank 1, so that the job ends well.
    let mut kids = kids;
    kids.push(rank(&id, 1, 2, "collectives", &[("OXSHMEM_TIMEOUT", "20")]));
    let outs = finish_all(kids, t);
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(0), "rank {r}: {out:?}");
    }
    let log = &outs[0].stderr;
    let refused: Vec<&str> = log.lines().filter(|l| l.contains("refused the connection")).collect();
    assert!(!refused.is_empty(), "rank 0 logged no refusal: {:?}", outs[0]);
    for l in refused {
        assert!(l.starts_with("PE 0 "), "rank 0's line does not name PE 0: {l:?}");
    }
    assert!(!log.contains("PE ?"), "{:?}", outs[0]);
}
