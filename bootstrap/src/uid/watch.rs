//! Liveness without a launcher: after init, a thread of each rank watches the connections the
//! job already has (rank 0: one to every other rank; the others: one to rank 0) for the peer's
//! end closing, which the kernel does when a process dies, `kill -9` included. Under `oshrun`
//! or Hydra the launcher ends a job whose process died; here no one else would, and the
//! survivors would wait for ever in their next collective (the runtime's own, which go through
//! shared memory, never touch these sockets).
//!
//! - Rank 0 sees rank r's connection close: it tells every other rank why (an abort frame,
//!   with the message of rank r's own abort frame when one came first), and ends itself.
//! - Another rank sees rank 0's connection close: it ends, with rank 0's message when one came
//!   (the death of another rank), else saying that rank 0 died.
//!
//! The thread blocks in `poll` on the connections' hang-up events and a pipe of its own (no
//! reading, so the collectives' reads are untouched, and no periodic wake-up); finalize (and
//! drop) write to the pipe and join it before anyone closes a connection on purpose. A rank
//! that ends this way leaves with `_exit` after one line on standard error: `exit` would run
//! the runtime's `atexit` finalize, a collective with dead peers.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::thread::JoinHandle;

use super::codec::{Frame, Op, decode_frame, encode_frame};

/// The exit status of a rank ended because another died (an abort's own code is kept).
pub const PEER_DIED_STATUS: i32 = 1;

/// One watched connection: its descriptor, the rank at the other end and how to name it.
#[derive(Debug, Clone)]
pub(super) struct Watched {
    pub(super) fd: RawFd,
    pub(super) rank: usize,
    pub(super) who: String,
}

/// The running watch; [`Watch::stop`] (or drop) ends it.
#[derive(Debug)]
pub(super) struct Watch {
    wake: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching `peers` for rank `me`; `None` when no thread can be made (the job then
    /// runs as before, without the watch).
    ///
    /// `quiesce` runs before the thread acts on a closed connection: it waits for a collective
    /// of this rank in progress to end (which sees the closed connection too, and may be
    /// handling an abort frame it read already) and keeps new ones from starting.
    pub(super) fn start(me: usize, peers: Vec<Watched>, quiesce: Box<dyn FnOnce() + Send>) -> Option<Watch> {
        let mut p = [0 as libc::c_int; 2];
        // SAFETY: `p` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: pipe2 made both descriptors, ours alone.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
        let thread = std::thread::Builder::new()
            .name("oxshmem-uid-watch".into())
            .spawn(move || watch(me, &peers, rd, quiesce))
            .ok()?;
        Some(Watch { wake: Some(wr), thread: Some(thread) })
    }

    /// Ends the watch and waits for its thread (before the connections close on purpose).
    pub(super) fn stop(&mut self) {
        // Closing the write end wakes the thread (its read end becomes readable: end of file).
        drop(self.wake.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

fn watch(me: usize, peers: &[Watched], wake: OwnedFd, quiesce: Box<dyn FnOnce() + Send>) {
    let mut fds: Vec<libc::pollfd> =
        std::iter::once(libc::pollfd { fd: wake.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .chain(peers.iter().map(|p| libc::pollfd { fd: p.fd, events: libc::POLLRDHUP, revents: 0 }))
            .collect();
    loop {
        // SAFETY: `fds` is a valid array of pollfd that outlives the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if rc < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[0].revents != 0 {
            return;
        }
        let hung = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;
        if let Some(i) = (1..fds.len()).find(|&i| fds[i].revents & hung != 0) {
            quiesce();
            peer_gone(me, peers, &peers[i - 1]);
        }
    }
}

/// The abort frame among what `fd` has received and nobody has read yet, if there is one.
fn pending_abort(fd: RawFd) -> Option<(i32, String)> {
    let mut buf = vec![0u8; 64 * 1024];
    // SAFETY: `buf` is valid for writes of its length; MSG_PEEK leaves the data in place.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    let mut rest = &buf[..usize::try_from(n).ok()?];
    while let Ok(Some((f, used))) = decode_frame(rest) {
        if f.op == Op::Abort {
            return Some((f.arg as i32, String::from_utf8_lossy(&f.payload).into_owned()));
        }
        rest = &rest[used..];
    }
    None
}

/// One line on standard error, in one write.
fn say(line: &str) {
    let l = format!("{line}\n");
    // SAFETY: writes a valid buffer to standard error.
    let _ = unsafe { libc::write(2, l.as_ptr().cast(), l.len()) };
}

fn peer_gone(me: usize, peers: &[Watched], gone: &Watched) -> ! {
    let (code, why) = match pending_abort(gone.fd) {
        // Rank 0 passing on another rank's death or abort, or a rank's own abort.
        Some((code, msg)) if gone.rank == 0 && me != 0 => (code, msg),
        Some((code, msg)) => (code, format!("rank {} aborted the job (exit code {code}): {msg}", gone.rank)),
        None => (
            PEER_DIED_STATUS,
            format!("{} died (its connection to rank {me} closed before it finalized): the job cannot go on", gone.who),
        ),
    };
    if me == 0 {
        let frame = encode_frame(&Frame { op: Op::Abort, seq: 0, arg: code as u32, payload: why.clone().into_bytes() });
        for p in peers.iter().filter(|p| p.rank != gone.rank) {
            // SAFETY: `frame` is a valid buffer; the descriptor stays open (the Uid lives on:
            // it is only dropped after this thread is joined). Never blocking.
            unsafe { libc::send(p.fd, frame.as_ptr().cast(), frame.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        }
    }
    say(&format!("oxshmem uid: rank {me}: {why}"));
    // SAFETY: _exit ends the process at once; see the module documentation for why not exit.
    unsafe { libc::_exit(code) }
}
