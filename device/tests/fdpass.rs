//! File descriptors passed between two real processes: this test binary starts itself again as
//! the child (the `child` test, which does nothing unless `OXSHMEM_TEST_FDPASS_NAME` is set),
//! they meet on an abstract-namespace socket, each offers the other a memfd, and each writes
//! through the descriptor it received what the other then reads through its own.
#![cfg(feature = "cuda")]

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use oxshmem_device::cuda::fdpass::{self, Method};

const NAME_VAR: &str = "OXSHMEM_TEST_FDPASS_NAME";
const PIDFD_VAR: &str = "OXSHMEM_TEST_FDPASS_PIDFD";
/// How long either side waits for the other before the test fails (not a performance bound).
const TIMEOUT: Duration = Duration::from_secs(60);

fn memfd(contents: &[u8]) -> File {
    // SAFETY: memfd_create takes a NUL-terminated name and flags; returns a new fd or -1.
    let fd = unsafe { libc::memfd_create(c"oxshmem-fdpass".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: a new descriptor we own.
    let mut f = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    f.write_all(contents).unwrap();
    f
}

fn read_all(f: &mut File) -> Vec<u8> {
    let mut v = Vec::new();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.read_to_end(&mut v).unwrap();
    v
}

fn write_at0(f: &mut File, data: &[u8]) {
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(data).unwrap();
}

/// One side of the exchange: offer ours, take theirs, write through theirs, and check that
/// the peer wrote through ours. `first` orders the offers so both sides do not wait to read.
fn exchange(sock: &UnixStream, first: bool, try_pidfd: bool, me: &str) -> (Method, Method) {
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut mine = memfd(format!("from {me}").as_bytes());
    let (sent, (theirs, got)) = if first {
        let sent = fdpass::offer_fd(sock, mine.as_fd(), true).unwrap();
        (sent, fdpass::take_fd(sock, try_pidfd).unwrap())
    } else {
        let got = fdpass::take_fd(sock, try_pidfd).unwrap();
        (fdpass::offer_fd(sock, mine.as_fd(), true).unwrap(), got)
    };
    let mut theirs = File::from(theirs);
    let peer = if me == "parent" { "child" } else { "parent" };
    assert_eq!(read_all(&mut theirs), format!("from {peer}").as_bytes(), "{me}: the peer's file");
    write_at0(&mut theirs, format!("{me} was here").as_bytes());
    // Both have written; the peer's write through our descriptor shows in our file.
    let mut done = [0u8; 1];
    (&*sock).write_all(b"w").unwrap();
    (&*sock).read_exact(&mut done).unwrap();
    assert_eq!(read_all(&mut mine), format!("{peer} was here").as_bytes(), "{me}: the write through the peer");
    (sent, got)
}

/// The child's side (run by `two_processes_exchange_memfds` as a separate process).
#[test]
fn child() {
    let Ok(name) = std::env::var(NAME_VAR) else { return };
    let try_pidfd = std::env::var(PIDFD_VAR).is_ok_and(|v| v == "1");
    let deadline = Instant::now() + TIMEOUT;
    let sock = loop {
        match fdpass::connect_abstract(name.as_bytes()) {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("child: connect to {name}: {e}"),
        }
    };
    let (sent, got) = exchange(&sock, false, try_pidfd, "child");
    println!("child: sent by {sent:?}, received by {got:?}");
}

/// Kills the child if the test fails before reaping it.
struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run_pair(try_pidfd: bool) -> (Method, Method) {
    let name = format!("oxshmem-test-fdpass-{}-{try_pidfd}", std::process::id());
    let listener = fdpass::listen_abstract(name.as_bytes()).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(NAME_VAR, &name)
        .env(PIDFD_VAR, if try_pidfd { "1" } else { "0" })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reap(Some(child));
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let sock = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("parent: accept on {name}: {e}"),
        }
    };
    sock.set_nonblocking(false).unwrap();
    let methods = exchange(&sock, true, try_pidfd, "parent");
    // The child's exit, bounded: it has finished its part once `exchange` returned here.
    let c = child.0.as_mut().unwrap();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the child did not exit within {TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.0.take().unwrap().wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(status.success(), "child failed: {text}");
    assert!(text.contains("child: sent by"), "the child ran its side: {text}");
    methods
}

#[test]
fn two_processes_exchange_memfds_over_scm_rights() {
    let (sent, got) = run_pair(false);
    assert_eq!((sent, got), (Method::ScmRights, Method::ScmRights));
}

#[test]
fn two_processes_exchange_memfds_pidfd_or_fallback() {
    // pidfd_getfd is allowed or refused by the kernel's ptrace policy; either way the
    // descriptor arrives. The parent may copy from its child; the child usually may not.
    let (sent, got) = run_pair(true);
    println!("parent: sent by {sent:?}, received by {got:?}");
}
