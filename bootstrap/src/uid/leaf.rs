//! Ranks other than 0: connect to rank 0, make it prove that it holds the job key (proving
//! ours in turn), and wait for the welcome.

use std::time::{Duration, Instant};

use super::auth::{check_proof, respond};
use super::codec::{HandshakeError, decode_challenge, decode_proof, decode_welcome, encode_response};
use super::id::{STALE_MAGIC, UniqueId, random_bytes};
use super::net::{Peer, RecvResult, closed_hint, connect_retrying, io_err, proto_err, secs, show_bytes};
use super::{HANDSHAKE_TIMEOUT, LEAF_GRACE};
use crate::Result;

/// Connect (retrying while rank 0 is not listening yet), authenticate both ways, and wait
/// for the welcome. Nothing but the response (nonce, rank, size, MAC) is sent before the
/// listener has proven the key.
pub(super) fn join(id: &UniqueId, rank: usize, size: usize, timeout: Duration, deadline: Instant) -> Result<Peer> {
    let addr = id.addr();
    let step = format!("rank {rank}: connect to rank 0 at {addr}");
    let stream = match connect_retrying(addr, deadline) {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Err(proto_err(
                &step,
                format!(
                    "timed out after {}: nothing accepts connections there (is rank 0 running, and is the \
                     unique id from this job?)",
                    secs(timeout)
                ),
            ));
        }
        Err(e) => return Err(io_err(&step, e)),
    };
    let mut peer = Peer::new(stream, "rank 0".into());

    let step = format!("rank {rank}: authenticate rank 0 at {addr}");
    let listener = format!("the process listening at {addr}");
    let stale = |bytes: &[u8]| bytes.len() >= 7 && STALE_MAGIC.starts_with(&bytes[..bytes.len().min(8)]);
    let challenge = match peer.recv(deadline, decode_challenge) {
        RecvResult::Got(c) => c,
        RecvResult::Bad(_, bytes) if stale(&bytes) => {
            return Err(proto_err(
                &step,
                format!(
                    "this unique id is stale: {listener} made a newer id since and no longer uses this one (hand                      every rank the id rank 0 made last)"
                ),
            ));
        }
        RecvResult::Bad(e @ HandshakeError::Version { .. }, _) => {
            return Err(proto_err(&step, format!("{listener} is {e}")));
        }
        RecvResult::Bad(_, bytes) => {
            return Err(proto_err(
                &step,
                format!("{listener} is not an oxshmem uid rank 0: it sent {}", show_bytes(&bytes)),
            ));
        }
        RecvResult::Closed => {
            return Err(proto_err(
                &step,
                format!(
                    "{listener} closed the connection before the handshake began (rank 0 failed or quit, or \
                     runs an older oxshmem? See its log)"
                ),
            ));
        }
        RecvResult::TimedOut => {
            return Err(proto_err(
                &step,
                format!(
                    "timed out after {}: {listener} accepted the connection but never started the handshake (is \
                     rank 0 inside Uid::init, and is this its address?)",
                    secs(timeout)
                ),
            ));
        }
        RecvResult::Io(e) => return Err(io_err(&step, e)),
    };
    let nonce = random_bytes(&format!("rank {rank}: a handshake nonce"))?;
    let response = respond(id.secret(), &challenge, nonce, rank as u32, size as u32);
    peer.send(&encode_response(&response), deadline).map_err(|e| io_err(&step, closed_hint(e)))?;

    // Rank 0 answers as soon as it reads the response; only a listener without the key
    // has reason to take long.
    let proof_deadline = (Instant::now() + HANDSHAKE_TIMEOUT).min(deadline + LEAF_GRACE);
    let not_proven = format!("{listener} could not prove it holds this job's unique id (not this job's rank 0)");
    match peer.recv(proof_deadline, decode_proof) {
        RecvResult::Got(proof) => {
            if check_proof(id.secret(), &challenge, &response, &proof).is_err() {
                return Err(proto_err(&step, not_proven));
            }
        }
        RecvResult::Bad(_, bytes) => {
            return Err(proto_err(&step, format!("{not_proven}: it answered {}", show_bytes(&bytes))));
        }
        RecvResult::Closed => {
            return Err(proto_err(
                &step,
                format!(
                    "{listener} closed the connection instead of proving it holds this job's unique id: either it \
                     is not this job's rank 0, or this rank's id is not the one rank 0 created (rank 0 logs the \
                     connections it refuses)"
                ),
            ));
        }
        RecvResult::TimedOut => {
            return Err(proto_err(&step, format!("{not_proven}: no proof within {}", secs(HANDSHAKE_TIMEOUT))));
        }
        RecvResult::Io(e) => return Err(io_err(&step, e)),
    }

    // Rank 0 is authentic: what it says from here on is trusted (see the threat model).
    let step = format!("rank {rank}: wait for rank 0 to admit every rank");
    match peer.recv(deadline + LEAF_GRACE, decode_welcome) {
        RecvResult::Got(w) if w.status == 0 => Ok(peer),
        RecvResult::Got(w) => Err(proto_err(&step, format!("rank 0 refused to start the job: {}", w.message))),
        RecvResult::Bad(e, _) => Err(proto_err(&step, format!("bad answer from rank 0: {e}"))),
        RecvResult::Closed => Err(proto_err(&step, "rank 0 closed the connection (it failed or quit: see its log)")),
        RecvResult::TimedOut => Err(proto_err(
            &step,
            format!("timed out after {} (OXSHMEM_TIMEOUT): some rank never joined", secs(timeout)),
        )),
        RecvResult::Io(e) => Err(io_err(&step, e)),
    }
}
