//! Issue 32, "Hardening, round 2": the bootstrap against a hostile or careless world, with
//! real processes. The ranks, strangers and `--pmi-port` PEs are the program `hostile-pe`
//! (tests/pe/hostile.rs), started with `OXS_HOSTILE_PE=<scenario>`. Every job runs in its own process group under a watchdog that kills the group, and
//! every rank's waits are bounded by `OXSHMEM_TIMEOUT`, so no test can hang.

mod common;

use common::{Out, connect_retrying, reader};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use oxshmem_bootstrap::uid::UniqueId;

const PE_VAR: &str = "OXS_HOSTILE_PE";
/// Upper bound for any one job here.
const WATCHDOG: Duration = Duration::from_secs(90);

/// Another local user (`nobody`, where this test runs as root; else this user, in a process of
/// its own) holding `n` idle connections to `addr`; returns it (kill it to let them go) once it
/// holds them, with how many it made.
fn stranger_holding(addr: std::net::SocketAddr, n: usize) -> (Child, usize) {
    let mut c = Command::new(program_for_anyone());
    c.env(PE_VAR, "hold")
        .env("OXS_HOLD_ADDR", addr.to_string())
        .env("OXS_HOLD_N", n.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: setgroups, setgid and setuid are async-signal-safe; nothing is allocated.
        unsafe {
            c.pre_exec(|| {
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
    } else {
        eprintln!("not root: the stranger runs as this user, in a process of its own");
    }
    let mut child = c.spawn().unwrap_or_else(|e| panic!("starting the stranger: {e}"));
    let out = lines_of(child.stdout.take().unwrap());
    let held = line_with(&out, "held ");
    eprintln!("the stranger {held}");
    let count = held.split(' ').next().unwrap().parse().unwrap();
    (child, count)
}

/// The rank program copied into a folder of its own that every user may enter and run from:
/// the stranger runs as `nobody`, who cannot reach a build tree under a private folder (a
/// checkout in `/root`, or CI's clone in a `mktemp -d` folder).
fn program_for_anyone() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static COPY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    extern "C" fn remove_copy() {
        let _ = std::fs::remove_dir_all(copy_dir());
    }
    fn copy_dir() -> std::path::PathBuf {
        std::path::Path::new("/tmp").join(format!("oxshmem-hostile-{}", std::process::id()))
    }
    COPY.get_or_init(|| {
        let dir = copy_dir();
        // SAFETY: registers a function that takes no arguments and touches only the file system.
        unsafe { libc::atexit(remove_copy) };
        std::fs::create_dir_all(&dir).expect("creating the stranger's folder");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
        let exe = dir.join("hostile-pe");
        std::fs::copy(common::pe_program("hostile-pe"), &exe).expect("copying the rank program");
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
        exe
    })
    .clone()
}

/// Kills a stranger (its process group).
fn let_go(mut c: Child) {
    // SAFETY: signalling the process group of a child we started; no memory.
    unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
    let _ = c.wait();
}

// ---------------------------------------------------------------- running ranks

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
    rank_command(id, rank, size, scenario, env).spawn().unwrap_or_else(|e| panic!("start a rank: {e}"))
}

/// [`rank`] with its descriptor limit (`ulimit -n`) set to `nofile`.
fn rank_with_fd_limit(id: &UniqueId, rank: usize, size: usize, scenario: &str, nofile: u64) -> Child {
    let mut c = rank_command(id, rank, size, scenario, &[("OXSHMEM_TIMEOUT", "60")]);
    let limit = libc::rlimit { rlim_cur: nofile, rlim_max: nofile };
    // SAFETY: setrlimit is async-signal-safe and only reads `limit`, a plain copy.
    unsafe {
        c.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    c.spawn().unwrap_or_else(|e| panic!("start a rank: {e}"))
}

fn rank_command(id: &UniqueId, rank: usize, size: usize, scenario: &str, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(common::pe_program("hostile-pe"));
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("OXSHMEM_") || k.starts_with("SHMEM_") || k.starts_with("NVSHMEM_") {
            c.env_remove(k);
        }
    }
    c.env(PE_VAR, scenario)
        .env("OXSHMEM_UNIQUEID", id.to_string())
        .env("OXSHMEM_UID_RANK", rank.to_string())
        .env("OXSHMEM_UID_SIZE", size.to_string())
        .env("OXSHMEM_LOG", "boot=warn");
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    c
}

/// Waits for every child at most [`WATCHDOG`]; past that, SIGKILLs their process groups and
/// fails the test with what they printed.
fn finish_all(children: Vec<Child>, start: Instant) -> Vec<Out> {
    let mut slots: Vec<_> = children
        .into_iter()
        .map(|mut c| {
            // A test may have taken standard output to read it itself.
            let out = c.stdout.take().map(reader);
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
                    format!("{}{}", s.1.map(|o| o.join().unwrap()).unwrap_or_default(), s.2.join().unwrap())
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
            let stdout = s.1.map(|o| o.join().unwrap()).unwrap_or_default();
            Out { status, stdout, stderr: s.2.join().unwrap(), elapsed }
        })
        .collect()
}

// ---------------------------------------------------------------- item 12: log lines

/// Rank 0 knows its rank from the start: the warnings it logs while it accepts the others (a
/// stranger refused) say `PE 0`, not `PE ?`.
#[test]
fn uid_rank_0_log_lines_name_its_pe() {
    let id = local_id();
    let t = Instant::now();
    let kids = vec![rank(&id, 0, 2, "collectives", &[("OXSHMEM_TIMEOUT", "20")])];
    let mut g = connect_retrying(id.addr(), WATCHDOG);
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

// ---------------------------------------------------------------- item 10: unused and stale ids

/// The lines of a child's standard output, read by a thread of their own.
fn lines_of(out: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufRead::lines(std::io::BufReader::new(out)) {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (at most [`WATCHDOG`]) for a line that holds `marker`; returns what follows it.
fn line_with(lines: &std::sync::mpsc::Receiver<String>, marker: &str) -> String {
    let deadline = Instant::now() + WATCHDOG;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) => {
                if let Some(i) = l.find(marker) {
                    return l[i + marker.len()..].trim_end().to_string();
                }
            }
            Err(e) => panic!("no line with {marker:?} from the rank ({e:?})"),
        }
    }
}

/// A rank handed an id that rank 0's process has since replaced with a newer one fails at once
/// with a message saying the id is stale (before, the replaced id's socket kept listening with
/// nobody behind it, and the rank waited out `OXSHMEM_TIMEOUT` for a handshake); the job on the
/// newer id then runs.
#[test]
fn a_rank_with_a_replaced_id_fails_at_once_saying_so() {
    let t = Instant::now();
    // Rank 0 makes its ids itself; its own OXSHMEM_UNIQUEID is unused.
    let placeholder = local_id();
    let mut root =
        rank(&placeholder, 0, 2, "replaced-id", &[("OXSHMEM_TIMEOUT", "60"), ("OXSHMEM_UID_ADDR", "127.0.0.1")]);
    let out = lines_of(root.stdout.take().unwrap());
    let old: UniqueId = line_with(&out, "old ").parse().unwrap();
    let new: UniqueId = line_with(&out, "new ").parse().unwrap();
    // OXSHMEM_TIMEOUT of 60 s: a rank that waits for the handshake would outlast the watchdog's
    // patience for this step, which is the whole job's.
    let stray = finish_all(vec![rank(&old, 1, 2, "collectives", &[("OXSHMEM_TIMEOUT", "60")])], Instant::now());
    let stray = &stray[0];
    assert_eq!(stray.status.code(), Some(3), "{stray:?}");
    assert!(stray.stderr.contains("this unique id is stale"), "{stray:?}");
    assert!(stray.stderr.contains(&old.addr().to_string()), "{stray:?}");
    let peer = finish_all(vec![rank(&new, 1, 2, "collectives", &[("OXSHMEM_TIMEOUT", "60")])], t);
    assert_eq!(peer[0].status.code(), Some(0), "{:?}", peer[0]);
    let roots = finish_all(vec![root], t);
    assert_eq!(roots[0].status.code(), Some(0), "{:?}", roots[0]);
    line_with(&out, "rank 0: ok");
}

/// An id that was made and never used stops listening when the process finalizes its job:
/// a connection to it is refused afterwards (before, its socket listened for the life of the
/// process, and a rank handed it waited out its timeout).
#[test]
fn an_unused_id_stops_listening_at_finalize() {
    let placeholder = local_id();
    let mut p = rank(&placeholder, 0, 1, "unused-id", &[("OXSHMEM_TIMEOUT", "60"), ("OXSHMEM_UID_ADDR", "127.0.0.1")]);
    // Killed however this test ends.
    struct Kill(i32);
    impl Drop for Kill {
        fn drop(&mut self) {
            // SAFETY: signalling the process group of a child we started; no memory.
            unsafe { libc::kill(-self.0, libc::SIGKILL) };
        }
    }
    let _kill = Kill(p.id() as i32);
    let out = lines_of(p.stdout.take().unwrap());
    let unused: UniqueId = line_with(&out, "unused ").parse().unwrap();
    line_with(&out, "finalized");
    let r = TcpStream::connect(unused.addr());
    // SAFETY: signalling the process group of a child we started; no memory.
    unsafe { libc::kill(-(p.id() as i32), libc::SIGKILL) };
    let _ = p.wait();
    let e = r.expect_err("the unused id's socket still accepts connections after finalize");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
}

// ---------------------------------------------------------------- item 2: a dead rank

/// `kill -9` of rank `victim` of 4 while every rank waits outside the bootstrap (as PEs in a
/// runtime barrier do): every survivor ends on its own with status
/// [`oxshmem_bootstrap::uid::PEER_DIED_STATUS`] and a line naming the dead rank. (Before, they
/// waited for ever: the watchdog killed them.) Prints how long the survivors took.
fn a_dead_rank_ends_the_others(victim: usize) {
    let id = local_id();
    let env = [("OXSHMEM_TIMEOUT", "120")];
    let mut kids: Vec<Child> = (0..4).map(|r| rank(&id, r, 4, "wait-forever", &env)).collect();
    let outs: Vec<_> = kids.iter_mut().map(|k| lines_of(k.stdout.take().unwrap())).collect();
    for (r, o) in outs.iter().enumerate() {
        line_with(o, &format!("rank {r}: waiting"));
    }
    let killed = Instant::now();
    // SAFETY: signalling a child we started; no memory.
    unsafe { libc::kill(kids[victim].id() as i32, libc::SIGKILL) };
    let outs = finish_all(kids, killed);
    let mut slowest = Duration::ZERO;
    for (r, out) in outs.iter().enumerate() {
        if r == victim {
            assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{out:?}");
            continue;
        }
        assert_eq!(out.status.code(), Some(oxshmem_bootstrap::uid::PEER_DIED_STATUS), "rank {r}: {out:?}");
        let names = format!("rank {victim} (");
        assert!(
            out.stderr.contains(&format!("oxshmem uid: rank {r}: ")) && out.stderr.contains(&names),
            "rank {r}: {out:?}"
        );
        assert!(out.stderr.contains("died"), "rank {r}: {out:?}");
        slowest = slowest.max(out.elapsed);
    }
    eprintln!("kill -9 of rank {victim}: the 3 survivors ended within {slowest:?}");
}

#[test]
fn killing_rank_0_ends_the_other_ranks() {
    a_dead_rank_ends_the_others(0);
}

#[test]
fn killing_another_rank_ends_the_others() {
    a_dead_rank_ends_the_others(2);
}

// ---------------------------------------------------------------- item 6: kill -9 of oshrun

/// Whether process `pid` is alive (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// `kill -9` of `oshrun` leaves nothing of the job: the PEs (their parent-death signal) and
/// what the PEs started themselves (here a `sleep` each PE forks), which the keeper ends.
/// Before, the `sleep`s were adopted by init and ran on. Prints how long they took to go.
#[test]
fn kill_9_of_oshrun_leaves_no_pe_children() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oshrun"));
    cmd.args(["-n", "2", "--timeout", "120", "--", "sh", "-c", "sleep 300 & echo \"grandchild $!\"; wait"]);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("OXSHMEM_") {
            cmd.env_remove(k);
        }
    }
    // Its own group, so that the test can clean up whatever a failure leaves.
    let mut oshrun =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn().unwrap();
    let out = lines_of(oshrun.stdout.take().unwrap());
    let grandchildren: Vec<i32> = (0..2).map(|_| line_with(&out, "grandchild ").parse().unwrap()).collect();
    let pes: Vec<i32> = grandchildren
        .iter()
        .map(|&g| {
            std::fs::read_to_string(format!("/proc/{g}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok())
                .expect("a grandchild's parent")
        })
        .collect();
    assert!(grandchildren.iter().chain(&pes).all(|&p| alive(p)), "the job is not running");
    let killed = Instant::now();
    oshrun.kill().unwrap();
    let _ = oshrun.wait();
    let mut left: Vec<i32> = grandchildren.iter().chain(&pes).copied().filter(|&p| alive(p)).collect();
    while !left.is_empty() && killed.elapsed() < WATCHDOG {
        std::thread::sleep(Duration::from_millis(2));
        left.retain(|&p| alive(p));
    }
    for &p in &left {
        // SAFETY: signalling processes this test's job started; no memory.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "still running {WATCHDOG:?} after kill -9 of oshrun: {left:?} (PEs {pes:?}, their children {grandchildren:?})"
    );
    eprintln!("kill -9 of oshrun: the PEs and their children were gone within {:?}", killed.elapsed());
}

// ---------------------------------------------------------------- item 1: a flood of strangers

/// Rank 0, with `ulimit -n` at `nofile`, gets 1,500 idle connections (more than the limit)
/// from another local user before the other ranks come; they keep silent and stay open. Rank 0 keeps at most a bounded
/// number of them and never runs out of descriptors for good (before, it failed init with "Too
/// many open files", and the other ranks waited out their timeout): the job completes.
fn a_flood_of_idle_connections_does_not_stop_rank_0(nofile: u64) {
    let id = local_id();
    let t = Instant::now();
    let mut kids = vec![rank_with_fd_limit(&id, 0, 3, "collectives", nofile)];
    // Rank 0 listens once its init runs.
    drop(connect_retrying(id.addr(), WATCHDOG));
    let (stranger, held) = stranger_holding(id.addr(), 1500);
    assert!(held as u64 > nofile.min(1000), "the stranger made only {held} connections");
    kids.push(rank(&id, 1, 3, "collectives", &[("OXSHMEM_TIMEOUT", "60")]));
    kids.push(rank(&id, 2, 3, "collectives", &[("OXSHMEM_TIMEOUT", "60")]));
    let outs = finish_all(kids, t);
    let_go(stranger);
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out.status.code(), Some(0), "rank {r} (rank 0 with ulimit -n {nofile}): {out:?}");
    }
    // The refusals were logged with a bound.
    let lines = outs[0].stderr.lines().filter(|l| l.contains("refused the connection")).count();
    assert!(lines <= 10, "{lines} refusal lines: {:?}", outs[0]);
}

#[test]
fn a_flood_of_idle_connections_with_ulimit_1024() {
    a_flood_of_idle_connections_does_not_stop_rank_0(1024);
}

/// With so few descriptors that accepting fails (`EMFILE`) before the bound on unanswered
/// connections is reached.
#[test]
fn a_flood_of_idle_connections_with_ulimit_48() {
    a_flood_of_idle_connections_does_not_stop_rank_0(48);
}

// ---------------------------------------------------------------- item 4: oshrun --pmi-port

/// Another local user holds 1,100 idle connections to an `oshrun --pmi-port` job's port
/// (`ulimit -n` 1024 for `oshrun`) before the PEs connect: `oshrun` closes them (a bound on the
/// waiting ones, a deadline for their first line), says at most once that accepting failed,
/// and the job completes. (Before: tens of thousands of "accepting a PMI connection failed"
/// lines, and the job stalled until the connections were let go, here until its timeout.)
#[test]
fn idle_connections_on_the_pmi_port_do_not_stall_the_job() {
    let dir = std::env::temp_dir().join(format!("oxshmem-hostile-pmi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let go = dir.join("go");
    let _ = std::fs::remove_file(&go);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oshrun"));
    cmd.args(["-n", "2", "--pmi-port", "--timeout", "60", "--"]).arg(common::pe_program("hostile-pe"));
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("OXSHMEM_") {
            cmd.env_remove(k);
        }
    }
    cmd.env(PE_VAR, "pmi-late").env("OXS_HOSTILE_GO", &go);
    let limit = libc::rlimit { rlim_cur: 1024, rlim_max: 1024 };
    // SAFETY: setrlimit is async-signal-safe and only reads `limit`, a plain copy.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let t = Instant::now();
    let mut oshrun =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn().unwrap();
    let out = lines_of(oshrun.stdout.take().unwrap());
    let port = line_with(&out, "port ");
    let addr: std::net::SocketAddr = port.parse().unwrap_or_else(|_| panic!("PMI_PORT {port:?}"));
    let (stranger, held) = stranger_holding(addr, 1100);
    assert!(held > 1024, "the stranger made only {held} connections");
    std::fs::write(&go, b"go").unwrap();
    let outs = finish_all(vec![oshrun], t);
    let_go(stranger);
    let _ = std::fs::remove_dir_all(&dir);
    let o = &outs[0];
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let failed = o.stderr.lines().filter(|l| l.contains("accepting a PMI connection failed")).count();
    assert!(failed <= 1, "{failed} lines about failed accepts: {o:?}");
    let refusals = o.stderr.lines().filter(|l| l.contains("refusing a PMI connection from")).count();
    assert!(refusals <= 10, "{refusals} refusal lines: {o:?}");
    // The PEs' lines come in either order: read them all (oshrun has exited, so the channel
    // ends), then look for each.
    let rest: Vec<String> = out.iter().collect();
    for pe in 0..2 {
        assert!(rest.iter().any(|l| l.contains(&format!("PE {pe}: ok"))), "PE {pe} did not finish: {rest:?}\n{o:?}");
    }
}
