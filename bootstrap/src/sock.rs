//! What the PMI-1 and PMI-2 clients share: the launcher socket read and written with plain
//! syscalls, the one-owner rule for `PMI_FD`, and small helpers for environment variables and
//! error messages.
//!
//! Both clients may be tried in one process (auto-detection, then a forced protocol), but the
//! descriptor in `PMI_FD` can have only one owner, or a second `OwnedFd` would close it twice.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::{BootstrapError, Result};

/// Set once `PMI_FD` has been taken, so that a second client cannot close it twice.
static PMI_FD_TAKEN: AtomicBool = AtomicBool::new(false);

/// A connected stream socket (Unix or TCP) read and written with plain syscalls, so that a
/// closed peer gives `EPIPE` and never `SIGPIPE` (`MSG_NOSIGNAL`), even in a C program that
/// did not ignore `SIGPIPE`.
pub(crate) struct Sock(OwnedFd);

impl Sock {
    pub(crate) fn new(fd: OwnedFd) -> Self {
        Sock(fd)
    }

    pub(crate) fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is a valid, writable buffer of `buf.len()` bytes and the fd is
            // owned by `self` and open.
            let n = unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => wait_fd(self.0.as_raw_fd(), libc::POLLIN)?,
                _ => return Err(err),
            }
        }
    }

    pub(crate) fn write_all(&self, data: &[u8]) -> io::Result<()> {
        write_all_fd(self.0.as_raw_fd(), data)
    }
}

/// Write all of `data` to `fd`, never raising `SIGPIPE`.
pub(crate) fn write_all_fd(fd: RawFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: `data` is a valid buffer of `data.len()` bytes; `fd` is open for the
        // lifetime of the connection that the caller borrows.
        let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
        if n >= 0 {
            data = &data[n as usize..];
            continue;
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => wait_fd(fd, libc::POLLOUT)?,
            _ => return Err(err),
        }
    }
    Ok(())
}

/// Block until `fd` is ready for `events` (for a descriptor that a launcher left non-blocking).
fn wait_fd(fd: RawFd, events: libc::c_short) -> io::Result<()> {
    let mut p = libc::pollfd { fd, events, revents: 0 };
    // SAFETY: `p` is one valid pollfd and we pass a count of 1.
    let rc = unsafe { libc::poll(&mut p, 1, -1) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    Ok(())
}

pub(crate) fn env_err(var: &'static str, reason: impl Into<String>) -> BootstrapError {
    BootstrapError::Env { var, reason: reason.into() }
}

/// A non-negative integer from the environment; `why` says who should have set it.
pub(crate) fn env_usize(var: &'static str, why: &str) -> Result<usize> {
    let v = std::env::var(var).map_err(|_| env_err(var, format!("not set ({why})")))?;
    v.trim().parse().map_err(|_| env_err(var, format!("{v:?} is not a non-negative integer")))
}

/// Take ownership of the launcher's socket named by `PMI_FD` (value `v`): it must be an open
/// descriptor that no other client in this process has taken. The descriptor becomes
/// close-on-exec, so that children of the PE do not inherit the launcher connection.
pub(crate) fn take_pmi_fd(v: &str) -> Result<OwnedFd> {
    let fd: RawFd = v
        .trim()
        .parse()
        .ok()
        .filter(|&fd: &RawFd| fd >= 0)
        .ok_or_else(|| env_err("PMI_FD", format!("{v:?} is not a file descriptor number")))?;
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(env_err("PMI_FD", format!("{fd} is not an open file descriptor")));
    }
    if PMI_FD_TAKEN.swap(true, Ordering::SeqCst) {
        return Err(env_err("PMI_FD", format!("descriptor {fd} is already in use by another PMI client")));
    }
    // SAFETY: the launcher handed this descriptor to this process for PMI; it is open
    // (checked above) and PMI_FD_TAKEN guarantees that only this one OwnedFd owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: F_SETFD on a descriptor we own; no memory is involved.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Ok(owned)
}

/// Quote at most 200 characters of a message for an error.
pub(crate) fn quote(line: &str) -> String {
    if line.len() <= 200 {
        format!("{line:?}")
    } else {
        let cut = (0..=200).rev().find(|&i| line.is_char_boundary(i)).unwrap_or(0);
        format!("{:?}...", &line[..cut])
    }
}
