//! Rank 0: accept and authenticate the other ranks, then gather one frame from each per
//! collective.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use super::auth::check_response;
use super::codec::{
    CHALLENGE_LEN, Challenge, Frame, HandshakeError, Op, Proof, RESPONSE_LEN, Response, Welcome, decode_response,
    encode_challenge, encode_frame, encode_proof, encode_welcome,
};
use super::id::{UniqueId, random_bytes};
use super::net::{Peer, io_err, log, poll_readable, proto_err, ranks_list, secs, show_bytes};
use super::{HANDSHAKE_TIMEOUT, LINGER, exit_on_abort};
use crate::Result;

/// How many connections may wait for their answer to the challenge at once: a new one beyond
/// it closes the oldest (a rank answers within moments; the oldest is most likely a stranger
/// that keeps silent), so that a flood of idle connections cannot take every descriptor.
pub(super) const MAX_PENDING: usize = 64;
/// How many refused connections are logged one by one; after that, one line says so, and the
/// count closes the rendezvous.
const REFUSALS_LOGGED: usize = 10;
/// How long rank 0 stops accepting when it has no descriptor left and none to free.
const FD_BACKOFF: Duration = Duration::from_millis(100);

/// Refused connections, logged with a bound ([`REFUSALS_LOGGED`]).
#[derive(Default)]
struct Refusals {
    count: usize,
    out_of_fds: bool,
}

impl Refusals {
    fn log(&mut self, msg: &str) {
        self.count += 1;
        if self.count <= REFUSALS_LOGGED {
            log(msg);
        }
        if self.count == REFUSALS_LOGGED + 1 {
            log("more connections refused: not logged one by one (a count follows when every rank has joined)");
        }
    }
}

/// A connection that has not answered its challenge yet.
struct Pending {
    stream: TcpStream,
    from: SocketAddr,
    buf: Vec<u8>,
    since: Instant,
    challenge: Challenge,
}

enum Outcome {
    /// Not complete yet.
    More,
    /// A response that proves the key, and the proof to send back.
    Proven(Response, Proof),
    /// Not one of ours: close it and log why.
    Refuse(String),
}

/// Read what a pending connection sent and judge it.
fn read_response(p: &mut Pending, id: &UniqueId) -> Outcome {
    // At most one byte past a response: a rank sends nothing more before rank 0's proof,
    // so one extra byte is already an error.
    let mut chunk = [0u8; RESPONSE_LEN + 1];
    let want = (RESPONSE_LEN + 1 - p.buf.len().min(RESPONSE_LEN)).max(1);
    match p.stream.read(&mut chunk[..want]) {
        Ok(0) if p.buf.is_empty() => Outcome::Refuse("closed without answering the challenge".into()),
        Ok(0) => Outcome::Refuse(format!("closed after {} bytes of a response", p.buf.len())),
        Ok(n) => {
            p.buf.extend_from_slice(&chunk[..n]);
            match decode_response(&p.buf) {
                Ok(None) => Outcome::More,
                Ok(Some(resp)) => match check_response(id.secret(), &p.challenge, &resp) {
                    Ok(proof) => Outcome::Proven(resp, proof),
                    Err(_) => Outcome::Refuse(
                        "it does not hold this job's unique id: its proof does not match (a rank of another job, \
                         or with an id other than rank 0's?)"
                            .into(),
                    ),
                },
                Err(e @ HandshakeError::Version { .. }) => Outcome::Refuse(e.to_string()),
                Err(e) => Outcome::Refuse(format!("{e}; it sent {}", show_bytes(&p.buf))),
            }
        }
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => Outcome::More,
        Err(e) => Outcome::Refuse(e.to_string()),
    }
}

/// Tell `peers` that the job cannot start, best effort and briefly.
fn refuse_all<'a>(peers: impl IntoIterator<Item = &'a mut Peer>, msg: &str) {
    let w = encode_welcome(&Welcome { status: 1, message: msg.to_string() });
    let dl = Instant::now() + Duration::from_secs(1);
    for p in peers {
        let _ = p.send(&w, dl);
    }
}

/// Rank 0: accept connections, challenge each, until every other rank has proven the key;
/// refuse (close and log) everything else. Then welcome them all, or tell them all why the
/// job cannot start. After a fatal error (two ranks disagree), go on answering ranks that
/// prove the key with the reason for [`LINGER`], so that the late ones fail with it too.
pub(super) fn accept_all(
    listener: &TcpListener,
    id: &UniqueId,
    size: usize,
    timeout: Duration,
    deadline: Instant,
) -> Result<Vec<Peer>> {
    let step = "rank 0: connect";
    listener.set_nonblocking(true).map_err(|e| io_err(step, e))?;
    let mut ranks: Vec<Option<Peer>> = (0..size).map(|_| None).collect();
    let mut pending: Vec<Pending> = Vec::new();
    let mut refusals = Refusals::default();
    // No descriptor left and none to free: accepting pauses until then.
    let mut backoff_until: Option<Instant> = None;
    // Why the job cannot start, and until when to keep telling latecomers.
    let mut failed: Option<(String, Instant)> = None;
    loop {
        let now = Instant::now();
        match &failed {
            Some((msg, until)) if now >= *until => return Err(proto_err(step, msg.clone())),
            Some(_) => {}
            None => {
                let missing: Vec<usize> = (1..size).filter(|&r| ranks[r].is_none()).collect();
                if missing.is_empty() {
                    break;
                }
                if now >= deadline {
                    let msg = format!(
                        "timed out after {} waiting for {} to connect to {} ({} of {size} ranks connected; \
                         OXSHMEM_TIMEOUT)",
                        secs(timeout),
                        ranks_list(&missing),
                        id.addr(),
                        size - missing.len()
                    );
                    refuse_all(ranks.iter_mut().flatten(), &msg);
                    return Err(proto_err(step, msg));
                }
            }
        }
        // Drop connections that keep silent.
        pending.retain(|p| {
            let keep = now.duration_since(p.since) < HANDSHAKE_TIMEOUT;
            if !keep {
                refusals.log(&format!(
                    "refused the connection from {}: no answer to the challenge within {}",
                    p.from,
                    secs(HANDSHAKE_TIMEOUT)
                ));
            }
            keep
        });
        // While out of descriptors, the listener is left alone (polling it would spin).
        let paused = backoff_until.is_some_and(|t| now < t);
        let listen_fd = if paused { -1 } else { listener.as_raw_fd() };
        let mut fds: Vec<RawFd> = vec![listen_fd];
        fds.extend(pending.iter().map(|p| p.stream.as_raw_fd()));
        let until = failed.as_ref().map_or(deadline, |f| f.1);
        let mut wait = until.saturating_duration_since(now).min(Duration::from_millis(500));
        if let Some(t) = backoff_until.filter(|_| paused) {
            wait = wait.min(t.saturating_duration_since(now));
        }
        let ready = poll_readable(&fds, wait).map_err(|e| io_err(step, e))?;
        // Backwards, so that `swap_remove` only moves entries already looked at.
        for idx in (0..pending.len()).rev() {
            if !ready[idx + 1] {
                continue;
            }
            let (resp, proof) = match read_response(&mut pending[idx], id) {
                Outcome::More => continue,
                Outcome::Refuse(why) => {
                    let p = pending.swap_remove(idx);
                    refusals.log(&format!("refused the connection from {}: {why}", p.from));
                    continue;
                }
                Outcome::Proven(resp, proof) => (resp, proof),
            };
            let p = pending.swap_remove(idx);
            let _ = p.stream.set_nonblocking(false);
            let r = resp.rank as usize;
            let mut peer = Peer::new(p.stream, format!("rank {r} ({})", p.from));
            if let Err(e) = peer.send(&encode_proof(&proof), Instant::now() + Duration::from_secs(1)) {
                refusals.log(&format!("refused the connection from {}: sending rank 0's proof: {e}", p.from));
                continue;
            }
            // From here on the peer holds the key: what it says is a fact about the job.
            if let Some((msg, _)) = &failed {
                refuse_all([&mut peer], msg);
                continue;
            }
            let problem = if resp.size as usize != size {
                Some(format!(
                    "rank {r} (connecting from {}) says the job has {} ranks; rank 0 says {size}",
                    p.from, resp.size
                ))
            } else if r >= size {
                Some(format!("the process connecting from {} claims rank {r}, out of range for size {size}", p.from))
            } else if r == 0 {
                Some(format!("the process connecting from {} claims rank 0, which is this process", p.from))
            } else if let Some(first) = &ranks[r] {
                Some(format!("two processes claim rank {r}: {} and {}", first.who, p.from))
            } else {
                None
            };
            match problem {
                None => ranks[r] = Some(peer),
                Some(msg) => {
                    refuse_all(ranks.iter_mut().flatten().chain([&mut peer]), &msg);
                    // The told ranks fail now; nothing more to say to them.
                    ranks.iter_mut().for_each(|r| *r = None);
                    let until = (Instant::now() + LINGER).min(deadline);
                    failed = Some((msg, until));
                }
            }
        }
        if !paused && ready[0] {
            backoff_until = accept_new(listener, &mut pending, &mut refusals, step)?;
        }
    }
    for p in pending {
        refusals.log(&format!("closed the connection from {}: every rank has already joined", p.from));
    }
    if refusals.count > REFUSALS_LOGGED {
        log(&format!("refused {} connections in all while the ranks joined", refusals.count));
    }
    let welcome = encode_welcome(&Welcome { status: 0, message: String::new() });
    let mut peers: Vec<Peer> = ranks.into_iter().skip(1).flatten().collect();
    let send_deadline = Instant::now() + timeout;
    for p in &mut peers {
        p.send(&welcome, send_deadline).map_err(|e| io_err(&format!("{step}: welcome {}", p.who), e))?;
    }
    Ok(peers)
}

/// Accept every connection waiting on `listener` and send each its challenge, keeping at most
/// [`MAX_PENDING`] unanswered (the oldest goes first). Running out of descriptors is never
/// fatal: the oldest unanswered connection is closed to make room, and when there is none,
/// accepting pauses for [`FD_BACKOFF`] (returned), with one log line.
fn accept_new(
    listener: &TcpListener,
    pending: &mut Vec<Pending>,
    refusals: &mut Refusals,
    step: &str,
) -> Result<Option<Instant>> {
    let drop_oldest = |pending: &mut Vec<Pending>, refusals: &mut Refusals, why: &str| -> bool {
        let Some(i) = pending.iter().enumerate().min_by_key(|(_, p)| p.since).map(|(i, _)| i) else {
            return false;
        };
        let p = pending.swap_remove(i);
        refusals.log(&format!("refused the connection from {}: {why}", p.from));
        true
    };
    loop {
        match listener.accept() {
            Ok((mut stream, from)) => {
                if pending.len() >= MAX_PENDING {
                    drop_oldest(
                        pending,
                        refusals,
                        &format!("{MAX_PENDING} connections were waiting to answer the challenge, this the oldest"),
                    );
                }
                let challenge = Challenge { nonce: random_bytes("rank 0: a challenge nonce")? };
                let _ = stream.set_nonblocking(true);
                let _ = stream.set_nodelay(true);
                // 40 bytes into a fresh socket's empty send buffer: a short write does not
                // happen, and a connection that makes it fail is not worth waiting for.
                match stream.write(&encode_challenge(&challenge)) {
                    Ok(CHALLENGE_LEN) => {
                        pending.push(Pending { stream, from, buf: Vec::new(), since: Instant::now(), challenge });
                    }
                    Ok(_) => refusals.log(&format!("refused the connection from {from}: the challenge did not fit")),
                    Err(e) => refusals.log(&format!("refused the connection from {from}: sending the challenge: {e}")),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // ECONNABORTED and friends: that connection is gone; the listener is fine.
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)) => {
                if !refusals.out_of_fds {
                    refusals.out_of_fds = true;
                    log(&format!(
                        "accepting a connection failed ({e}): closing the oldest connections that have not \
                         answered the challenge, and pausing while there are none (said once)"
                    ));
                }
                if !drop_oldest(pending, refusals, "out of descriptors, this the oldest unanswered connection") {
                    return Ok(Some(Instant::now() + FD_BACKOFF));
                }
            }
            Err(e) => return Err(io_err(step, e)),
        }
    }
}

/// Rank 0: best-effort notice to every rank that the collective failed, so that they fail
/// now with the reason instead of timing out.
pub(super) fn tell_error(peers: &mut [Peer], seq: u32, msg: &str) {
    let frame = encode_frame(&Frame { op: Op::Error, seq, arg: 0, payload: msg.as_bytes().to_vec() });
    let deadline = Instant::now() + Duration::from_secs(1);
    for p in peers.iter_mut() {
        let _ = p.send(&frame, deadline);
    }
}

/// Rank 0: one frame from every other rank (index 0 left empty).
pub(super) fn gather(
    peers: &mut [Peer],
    op: Op,
    seq: u32,
    arg: u32,
    step: &str,
    timeout: Duration,
    deadline: Instant,
) -> Result<Vec<Vec<u8>>> {
    let n = peers.len() + 1;
    let mut got: Vec<Option<Vec<u8>>> = vec![None; n];
    got[0] = Some(Vec::new());
    loop {
        for (i, p) in peers.iter_mut().enumerate() {
            let r = i + 1;
            if got[r].is_some() {
                continue;
            }
            let f = p.take_frame().map_err(|e| proto_err(step, format!("bad message from {}: {e}", p.who)))?;
            let Some(f) = f else { continue };
            if f.op == Op::Abort {
                let frame = encode_frame(&f);
                let dl = Instant::now() + Duration::from_secs(1);
                for (j, q) in peers.iter_mut().enumerate() {
                    if j != i {
                        let _ = q.send(&frame, dl);
                    }
                }
                exit_on_abort(r as u32, f.arg, &f.payload);
            }
            if f.op != op || f.seq != seq || f.arg != arg {
                return Err(proto_err(
                    step,
                    format!(
                        "{} entered {} #{} (arg {}) while rank 0 is in {step} (arg {arg}): \
                         the ranks called collectives in a different order",
                        p.who,
                        f.op.name(),
                        f.seq,
                        f.arg
                    ),
                ));
            }
            got[r] = Some(f.payload);
        }
        let missing: Vec<usize> = (1..n).filter(|&r| got[r].is_none()).collect();
        if missing.is_empty() {
            return Ok(got.into_iter().map(Option::unwrap_or_default).collect());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(proto_err(
                step,
                format!("timed out after {} waiting for {} (OXSHMEM_TIMEOUT)", secs(timeout), ranks_list(&missing)),
            ));
        }
        let fds: Vec<RawFd> = missing.iter().map(|&r| peers[r - 1].stream.as_raw_fd()).collect();
        let ready = poll_readable(&fds, left).map_err(|e| io_err(step, e))?;
        for (k, &r) in missing.iter().enumerate() {
            if !ready[k] {
                continue;
            }
            let p = &mut peers[r - 1];
            match p.fill() {
                Ok(true) => {}
                Ok(false) => {
                    return Err(proto_err(step, format!("{} closed its connection (it exited or failed)", p.who)));
                }
                Err(e) => return Err(io_err(&format!("{step}: from {}", p.who), e)),
            }
        }
    }
}
