//! Passing file descriptors between the processes of one node: how the GPU heap's exported
//! descriptor reaches the other PEs that map it.
//!
//! Two ways, and a small protocol ([`offer_fd`] / [`take_fd`]) that picks one:
//!
//! - **`SCM_RIGHTS`** over a Unix socket ([`send_fds`], [`recv_fds`]): a socket pair inherited
//!   across `fork`, or an abstract-namespace socket ([`listen_abstract`], [`connect_abstract`])
//!   that PEs started separately reach by name. Always allowed between processes that can
//!   connect to each other; this is what the heap exchange relies on.
//! - **`pidfd_getfd`** (Linux ≥ 5.6, [`pidfd_getfd`]): the receiver copies the descriptor out
//!   of the sender by pid and number, without the sender's help. The kernel allows it only
//!   where `ptrace` would be (`PTRACE_MODE_ATTACH_REALCREDS`): under Yama's default
//!   `ptrace_scope = 1` only from an ancestor, so PEs that are siblings under a launcher are
//!   usually refused, and seccomp profiles of containers often refuse it outright.
//!
//! [`take_fd`] tries `pidfd_getfd` first when both sides allow it, checks that what it got is
//! the file offered (device and inode, which also guards against a pid read in another pid
//! namespace), and otherwise asks for the descriptor over the socket; [`Method`] says which
//! way it came. A descriptor received either way is the receiver's own (close-on-exec).

use std::io::{self, Read, Write};
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};

/// The most descriptors one [`send_fds`] carries (the kernel's `SCM_MAX_FD`).
pub const MAX_FDS: usize = 253;

/// How a descriptor came across.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Copied out of the sender with `pidfd_open` + `pidfd_getfd`.
    PidfdGetfd,
    /// Sent over the socket as `SCM_RIGHTS` ancillary data.
    ScmRights,
}

fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Sends `payload` (at least one byte: a stream socket carries ancillary data only with data)
/// and the descriptors `fds` (the receiver gets its own copies; these stay open here).
///
/// # Errors
/// An empty payload, more than [`MAX_FDS`] descriptors, or the socket's error.
pub fn send_fds(sock: &UnixStream, payload: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    if payload.is_empty() || fds.len() > MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "send_fds: {} payload bytes and {} descriptors (need ≥ 1 byte, ≤ {MAX_FDS} descriptors)",
                payload.len(),
                fds.len()
            ),
        ));
    }
    let data_len = size_of::<RawFd>() * fds.len();
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(data_len as u32) } as usize;
    // u64 words: the control buffer must be aligned for cmsghdr.
    let mut control = vec![0u64; space.div_ceil(8).max(1)];
    let mut iov = libc::iovec { iov_base: payload.as_ptr() as *mut libc::c_void, iov_len: payload.len() };
    // SAFETY: msghdr is a plain C struct; all zeroes is a valid empty header.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer holds CMSG_SPACE(data_len) bytes, so the first header and
        // its data fit; the data is written unaligned.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(data_len as u32) as _;
            let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                data.add(i).write_unaligned(fd.as_raw_fd());
            }
        }
    }
    // SAFETY: `msg` points at live buffers (payload, control) for the duration of the call.
    let sent = retry(|| match unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } {
        -1 => Err(io::Error::last_os_error()),
        n => Ok(n as usize),
    })?;
    // The descriptors went with the first byte; the rest of a partial send is plain data.
    (&*sock).write_all(&payload[sent..])
}

/// Receives up to `buf.len()` bytes and up to `max_fds` descriptors (close-on-exec) from one
/// message; returns the byte count and the descriptors.
///
/// # Errors
/// The socket's; more descriptors than `max_fds` were sent (those received are closed).
pub fn recv_fds(sock: &UnixStream, buf: &mut [u8], max_fds: usize) -> io::Result<(usize, Vec<OwnedFd>)> {
    let max_fds = max_fds.min(MAX_FDS);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE((size_of::<RawFd>() * max_fds.max(1)) as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr is a plain C struct; all zeroes is a valid empty header.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` points at live, writable buffers of the lengths it states.
    let n = retry(|| match unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) } {
        -1 => Err(io::Error::last_os_error()),
        n => Ok(n as usize),
    })?;
    let mut fds = Vec::new();
    // SAFETY: the kernel filled the control buffer and set msg_controllen; the CMSG macros walk
    // it within that length, and each SCM_RIGHTS entry holds descriptors now owned here.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let header = libc::CMSG_LEN(0) as usize;
                let count = ((*cmsg).cmsg_len as usize - header) / size_of::<RawFd>();
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("recv_fds: the peer sent more than {max_fds} descriptors; the rest were dropped"),
        ));
    }
    Ok((n, fds))
}

/// Listens on the abstract-namespace socket `name` (no file; gone when closed). Names are
/// per network namespace; a job puts its id in the name.
///
/// # Errors
/// The name is taken, or the socket's error.
pub fn listen_abstract(name: &[u8]) -> io::Result<UnixListener> {
    UnixListener::bind_addr(&SocketAddr::from_abstract_name(name)?)
}

/// Connects to the abstract-namespace socket `name`.
///
/// # Errors
/// Nobody listens there, or the socket's error.
pub fn connect_abstract(name: &[u8]) -> io::Result<UnixStream> {
    UnixStream::connect_addr(&SocketAddr::from_abstract_name(name)?)
}

/// A copy of descriptor `fd` of process `pid` (`pidfd_open` then `pidfd_getfd`; Linux ≥ 5.6),
/// close-on-exec.
///
/// # Errors
/// `ENOSYS` on older kernels; `EPERM` where `ptrace` of `pid` is not allowed (see the module
/// documentation); `ESRCH` for a process that is gone; `EBADF` for a descriptor it lacks.
pub fn pidfd_getfd(pid: i32, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags 0 and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just returned to us.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    // SAFETY: pidfd_getfd takes a pidfd, a descriptor number and flags 0; it returns a new
    // close-on-exec descriptor or -1.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by this process.
    Ok(unsafe { OwnedFd::from_raw_fd(got as RawFd) })
}

/// The (device, inode) of the file behind `fd`.
fn file_id(fd: RawFd) -> io::Result<(u64, u64)> {
    // SAFETY: stat is a plain C struct, filled by fstat.
    let mut st: libc::stat = unsafe { zeroed() };
    // SAFETY: `st` is a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.st_dev, st.st_ino))
}

const MAGIC: u32 = u32::from_le_bytes(*b"OXFD");
const ALLOW_PIDFD: u32 = 1;
const OFFER_LEN: usize = 32;
const GOT_IT: u8 = 0;
const SEND_IT: u8 = 1;
const HERE_IT_IS: u8 = 2;

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Offers `fd` to the process at the other end of `sock`, which calls [`take_fd`]; returns how
/// it went across. With `allow_pidfd` the peer may copy it with `pidfd_getfd`; it falls back to
/// `SCM_RIGHTS` when that is refused.
///
/// Wire format (little-endian): `"OXFD"`, flags (bit 0: pidfd allowed), pid, fd, st_dev,
/// st_ino (32 bytes); the reply is one byte, 0 (copied) or 1 (send it), and on 1 the
/// descriptor follows with the byte 2.
///
/// # Errors
/// The socket's; a reply that is not part of the protocol.
pub fn offer_fd(sock: &UnixStream, fd: BorrowedFd<'_>, allow_pidfd: bool) -> io::Result<Method> {
    let (dev, ino) = file_id(fd.as_raw_fd())?;
    let mut msg = [0u8; OFFER_LEN];
    msg[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    msg[4..8].copy_from_slice(&(if allow_pidfd { ALLOW_PIDFD } else { 0 }).to_le_bytes());
    msg[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    msg[12..16].copy_from_slice(&fd.as_raw_fd().to_le_bytes());
    msg[16..24].copy_from_slice(&dev.to_le_bytes());
    msg[24..32].copy_from_slice(&ino.to_le_bytes());
    (&*sock).write_all(&msg)?;
    let mut reply = [0u8; 1];
    (&*sock).read_exact(&mut reply)?;
    match reply[0] {
        GOT_IT if allow_pidfd => Ok(Method::PidfdGetfd),
        SEND_IT => {
            send_fds(sock, &[HERE_IT_IS], &[fd])?;
            Ok(Method::ScmRights)
        }
        r => Err(bad(format!(
            "offer_fd: the peer replied {r}, expected {SEND_IT}{}",
            if allow_pidfd { " or 0" } else { "" }
        ))),
    }
}

/// Takes the descriptor the process at the other end of `sock` offers with [`offer_fd`]: with
/// `try_pidfd` (and the offer allowing it) by `pidfd_getfd`, else — or when that is refused or
/// yields another file — over the socket. Returns the descriptor and how it came.
///
/// # Errors
/// The socket's; a message that is not an offer; an offer whose descriptor does not arrive.
pub fn take_fd(sock: &UnixStream, try_pidfd: bool) -> io::Result<(OwnedFd, Method)> {
    let mut msg = [0u8; OFFER_LEN];
    (&*sock).read_exact(&mut msg)?;
    let word = |i: usize| u32::from_le_bytes(msg[i..i + 4].try_into().expect("4 bytes"));
    let dword = |i: usize| u64::from_le_bytes(msg[i..i + 8].try_into().expect("8 bytes"));
    if word(0) != MAGIC {
        return Err(bad(format!("take_fd: not an fd offer (magic {:#010x})", word(0))));
    }
    let (flags, pid, fd, id) = (word(4), word(8) as i32, word(12) as RawFd, (dword(16), dword(24)));
    if try_pidfd && flags & ALLOW_PIDFD != 0 {
        // Refused (EPERM, ENOSYS) or another file (a pid of another namespace): fall back.
        if let Ok(got) = pidfd_getfd(pid, fd)
            && file_id(got.as_raw_fd()).ok() == Some(id)
        {
            (&*sock).write_all(&[GOT_IT])?;
            return Ok((got, Method::PidfdGetfd));
        }
    }
    (&*sock).write_all(&[SEND_IT])?;
    let mut byte = [0u8; 1];
    let (n, mut fds) = recv_fds(sock, &mut byte, 1)?;
    if n != 1 || byte[0] != HERE_IT_IS || fds.len() != 1 {
        return Err(bad(format!(
            "take_fd: expected the byte {HERE_IT_IS} with one descriptor, got {n} byte(s) ({}) and {} descriptor(s)",
            byte[0],
            fds.len()
        )));
    }
    let got = fds.pop().expect("one descriptor");
    if file_id(got.as_raw_fd())? != id {
        return Err(bad("take_fd: the descriptor received is not the file offered".into()));
    }
    Ok((got, Method::ScmRights))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::os::fd::AsFd;

    fn memfd(contents: &[u8]) -> File {
        // SAFETY: memfd_create takes a NUL-terminated name and flags; returns a new fd or -1.
        let fd = unsafe { libc::memfd_create(c"oxshmem-fdpass-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0, "memfd_create: {}", io::Error::last_os_error());
        // SAFETY: a new descriptor we own.
        let mut f = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        f.write_all(contents).unwrap();
        f
    }

    #[test]
    fn scm_rights_within_a_process() {
        let (a, b) = UnixStream::pair().unwrap();
        let f = memfd(b"hello");
        send_fds(&a, b"x", &[f.as_fd()]).unwrap();
        let mut buf = [0u8; 4];
        let (n, fds) = recv_fds(&b, &mut buf, 4).unwrap();
        assert_eq!((n, buf[0], fds.len()), (1, b'x', 1));
        assert_ne!(fds[0].as_raw_fd(), f.as_raw_fd());
        assert_eq!(file_id(fds[0].as_raw_fd()).unwrap(), file_id(f.as_raw_fd()).unwrap());
        // Close-on-exec, as asked.
        // SAFETY: F_GETFD on an open descriptor.
        let flags = unsafe { libc::fcntl(fds[0].as_raw_fd(), libc::F_GETFD) };
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
    }

    #[test]
    fn argument_errors() {
        let (a, _b) = UnixStream::pair().unwrap();
        let e = send_fds(&a, b"", &[]).unwrap_err();
        assert_eq!(e.to_string(), "send_fds: 0 payload bytes and 0 descriptors (need ≥ 1 byte, ≤ 253 descriptors)");
    }

    #[test]
    fn too_many_descriptors_are_an_error() {
        let (a, b) = UnixStream::pair().unwrap();
        let f = memfd(b"");
        send_fds(&a, b"x", &[f.as_fd(), f.as_fd(), f.as_fd()]).unwrap();
        let e = recv_fds(&b, &mut [0u8; 1], 1).unwrap_err();
        assert_eq!(e.to_string(), "recv_fds: the peer sent more than 1 descriptors; the rest were dropped");
    }

    #[test]
    fn offer_and_take_within_a_process_fall_back_or_copy() {
        for try_pidfd in [false, true] {
            let (a, b) = UnixStream::pair().unwrap();
            let f = memfd(b"abc");
            let id = file_id(f.as_raw_fd()).unwrap();
            let t = std::thread::spawn(move || take_fd(&b, try_pidfd).unwrap());
            let sent = offer_fd(&a, f.as_fd(), true).unwrap();
            let (got, method) = t.join().unwrap();
            assert_eq!(sent, method);
            assert_eq!(file_id(got.as_raw_fd()).unwrap(), id);
            if !try_pidfd {
                assert_eq!(method, Method::ScmRights);
            }
        }
    }

    #[test]
    fn a_non_offer_is_refused() {
        let (a, b) = UnixStream::pair().unwrap();
        (&a).write_all(&[7u8; OFFER_LEN]).unwrap();
        let e = take_fd(&b, true).unwrap_err();
        assert_eq!(e.to_string(), "take_fd: not an fd offer (magic 0x07070707)");
    }
}
