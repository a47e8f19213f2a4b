//! Socket I/O with deadlines: polling, a peer with its receive buffer, and the error helpers
//! every part of the unique-id bootstrap uses.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use super::PROTOCOL;
use super::codec::{Frame, HandshakeError, decode_frame};
use crate::BootstrapError;

pub(super) fn io_err(step: &str, source: io::Error) -> BootstrapError {
    BootstrapError::Io { protocol: PROTOCOL, step: step.to_string(), source }
}

pub(super) fn proto_err(step: &str, reason: impl Into<String>) -> BootstrapError {
    BootstrapError::Protocol { protocol: PROTOCOL, step: step.to_string(), reason: reason.into() }
}

/// Wait until one of `fds` is readable (or closed) or `timeout` passes; returns which are.
pub(super) fn poll_readable(fds: &[RawFd], timeout: Duration) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `p` is a valid array of `p.len()` pollfd structures that outlives the call.
    let rc = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(p.iter().map(|x| x.revents != 0).collect())
}

/// A connected peer and the bytes received from it but not yet decoded.
pub(super) struct Peer {
    pub(super) stream: TcpStream,
    buf: Vec<u8>,
    /// Whom it is, for messages: `rank 3 (127.0.0.1:40112)`.
    pub(super) who: String,
}

impl Peer {
    pub(super) fn new(stream: TcpStream, who: String) -> Self {
        let _ = stream.set_nodelay(true);
        Peer { stream, buf: Vec::new(), who }
    }

    /// Read what is available (after poll said so); `Ok(false)` at end of stream.
    pub(super) fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) => return Err(e),
            }
        }
    }

    pub(super) fn take_frame(&mut self) -> Result<Option<Frame>, HandshakeError> {
        Ok(decode_frame(&self.buf)?.map(|(f, used)| {
            self.buf.drain(..used);
            f
        }))
    }

    /// Write all of `data` before `deadline`.
    pub(super) fn send(&mut self, data: &[u8], deadline: Instant) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
        }
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write_all(data)
    }

    /// Read until `decode` yields a value and the bytes it used, `deadline` passes or the
    /// peer closes. The bytes used are taken from the buffer; the rest stay for the next read.
    pub(super) fn recv<T>(
        &mut self,
        deadline: Instant,
        mut decode: impl FnMut(&[u8]) -> Result<Option<(T, usize)>, HandshakeError>,
    ) -> RecvResult<T> {
        loop {
            match decode(&self.buf) {
                Ok(Some((v, used))) => {
                    self.buf.drain(..used);
                    return RecvResult::Got(v);
                }
                Ok(None) => {}
                Err(e) => return RecvResult::Bad(e, self.buf.clone()),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return RecvResult::TimedOut;
            }
            match poll_readable(&[self.stream.as_raw_fd()], left) {
                Ok(r) if r[0] => match self.fill() {
                    Ok(true) => {}
                    Ok(false) => return RecvResult::Closed,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return RecvResult::Closed,
                    Err(e) => return RecvResult::Io(e),
                },
                Ok(_) => {}
                Err(e) => return RecvResult::Io(e),
            }
        }
    }
}

/// How a [`Peer::recv`] ended.
pub(super) enum RecvResult<T> {
    Got(T),
    /// Refused by the decoder; the bytes it saw.
    Bad(HandshakeError, Vec<u8>),
    /// The peer closed (or reset) the connection.
    Closed,
    TimedOut,
    Io(io::Error),
}

/// Connect to `addr`, retrying while nothing listens there yet, until `deadline`: `Ok(None)`
/// when it passed.
pub(super) fn connect_retrying(addr: SocketAddr, deadline: Instant) -> io::Result<Option<TcpStream>> {
    let mut backoff = Duration::from_millis(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(Some(s)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                std::thread::sleep(backoff.min(left));
                backoff = (backoff * 2).min(Duration::from_millis(200));
            }
            Err(e) => return Err(e),
        }
    }
}

pub(super) fn closed_hint(e: io::Error) -> io::Error {
    if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) {
        io::Error::new(e.kind(), "rank 0 closed the connection")
    } else {
        e
    }
}

/// `[1, 2, 5]` as "ranks 1, 2, 5"; one as "rank 1".
pub(super) fn ranks_list(r: &[usize]) -> String {
    let list: Vec<String> = r.iter().map(|x| x.to_string()).collect();
    if r.len() == 1 { format!("rank {}", list[0]) } else { format!("ranks {}", list.join(", ")) }
}

pub(super) fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A note from the unique-id handshake that does not change the job (a stranger's connection
/// refused, a late one closed): a warning on the `boot` target, seen with `OXSHMEM_LOG`.
pub(super) fn log(msg: &str) {
    tracing::warn!(target: "boot", "uid: {msg}");
}

/// At most the first 16 bytes a stranger sent, for a message.
pub(super) fn show_bytes(b: &[u8]) -> String {
    let head = &b[..b.len().min(16)];
    let text = String::from_utf8_lossy(head);
    if text.chars().all(|c| c.is_ascii_graphic() || c == ' ') { format!("{text:?}") } else { format!("{head:02x?}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn recv_keeps_what_follows_and_ends_on_close_or_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let mut p = Peer::new(b, "test".into());
        a.write_all(b"abcdef").unwrap();
        let two = |buf: &[u8]| Ok((buf.len() >= 2).then(|| (buf[..2].to_vec(), 2)));
        let soon = || Instant::now() + Duration::from_secs(5);
        assert!(matches!(p.recv(soon(), two), RecvResult::Got(v) if v == b"ab"));
        assert!(matches!(p.recv(soon(), two), RecvResult::Got(v) if v == b"cd"));
        let t = Instant::now();
        let never = |_: &[u8]| Ok::<Option<((), usize)>, HandshakeError>(None);
        assert!(matches!(p.recv(Instant::now() + Duration::from_millis(50), never), RecvResult::TimedOut));
        assert!(t.elapsed() < Duration::from_secs(2));
        drop(a);
        assert!(matches!(p.recv(soon(), never), RecvResult::Closed));
        assert_eq!(show_bytes(b"SSH-2.0-OpenSSH_9.2\r\n"), "\"SSH-2.0-OpenSSH_\"");
        assert_eq!(show_bytes(&[0, 1]), "[00, 01]");
    }

    #[test]
    fn connect_gives_up_at_the_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let t = Instant::now();
        assert!(connect_retrying(addr, Instant::now() + Duration::from_millis(100)).unwrap().is_none());
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
