//! One side of the memfd exchange of `tests/fdpass.rs`, which its parent (the test) and its
//! child (the program `fdpass-pe`, tests/pe/fdpass.rs) both run.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use oxshmem_device::cuda::fdpass::{self, Method};

/// How long either side waits for the other (not a performance bound).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const NAME_VAR: &str = "OXSHMEM_TEST_FDPASS_NAME";
pub(crate) const PIDFD_VAR: &str = "OXSHMEM_TEST_FDPASS_PIDFD";

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
pub(crate) fn exchange(sock: &UnixStream, first: bool, try_pidfd: bool, me: &str) -> (Method, Method) {
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
