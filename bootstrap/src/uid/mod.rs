//! The unique-id bootstrap: a TCP rendezvous for programs that bring their own process
//! management, like NVSHMEM's `nvshmemx_get_uniqueid` + `nvshmemx_init_attr`.
//!
//! Rank 0 creates a [`UniqueId`] — the address of a listening socket plus a random 256-bit
//! job key, printable as `oxs2:127.0.0.1:43211:<64 hex digits>` ([`ID_PREFIX`]) or as the 124
//! bytes of an `nvshmemx_uniqueid_t`'s `internal` ([`UniqueId::to_bytes`]) — and passes it to
//! the other ranks any way it likes (over MPI, a file, the environment: `OXSHMEM_UNIQUEID` with
//! `OXSHMEM_UID_RANK` and `OXSHMEM_UID_SIZE`). Every rank then calls [`Uid::init`]: rank 0
//! listens, the others connect to it, and the collectives run through rank 0 (a star: the
//! bootstrap moves a few hundred bytes per rank at init, so a tree would buy nothing at the
//! sizes that start this way).
//!
//! What this module must never do: block without a deadline, or trust a byte it has not
//! checked. And since no launcher watches the processes, the ranks watch each other: after
//! init, a rank whose peer dies (its connection closes before finalize) ends within moments,
//! naming the dead rank, and rank 0 tells the others (`watch.rs`). Every wait — connecting, the handshake, each collective — ends after
//! `OXSHMEM_TIMEOUT` seconds (default 120) with an error that names the step and the peer
//! waited for.
//!
//! # Authentication and its threat model
//!
//! The key never crosses the wire. On every connection rank 0 and the connecting rank run a
//! challenge-response handshake keyed by it (HMAC-SHA256 over fresh nonces of both sides,
//! the rank and the size; see the wire format below), and each side checks the other's
//! MAC in constant time before it trusts anything else. This stops:
//!
//! - strays (port scanners, a health check, a service that connects to the wrong port): rank
//!   0 closes and logs every connection that does not prove the key within 10 s, and the job
//!   goes on without it;
//! - other jobs' ranks, and ranks holding a stale id: their MAC does not match; rank 0 logs
//!   and closes, and such a rank fails at once (rank 0 closed instead of proving the key);
//! - a squatter on the id's port — a process that bound it before rank 0 did, or after rank
//!   0 died: it cannot learn the key (it sees two nonces and one MAC, not the key) and cannot
//!   pass for rank 0 (it cannot compute `MAC_root`), so a rank that meets it fails at once
//!   with an error naming the address, and sends it nothing but its nonce, rank, size and
//!   `MAC_leaf`. Replaying a MAC seen earlier does not help: both nonces are fresh per
//!   connection.
//!
//! It does not stop an attacker on the path between two ranks (one who can read and rewrite
//! their traffic): the handshake authenticates the two ends but nothing after it is
//! authenticated or encrypted, so such an attacker can relay a valid handshake and then
//! tamper with the welcome and every frame (the blobs exchanged at init, including memory
//! handles). Rank, size and the blobs travel in the clear. A flood of connections cannot take
//! rank 0 down (at most `root::MAX_PENDING` unanswered connections are kept, the oldest closed
//! first; running out of descriptors is never fatal), though one fast enough could close a real
//! rank's connection before it answers (that rank then fails, saying rank 0 closed it). Run the
//! bootstrap on a network you trust against that; the key only keeps out strays, other jobs and
//! squatters.
//!
//! # Wire format
//!
//! All integers little-endian; nonces and MACs 32 bytes. Every handshake magic ends in the
//! protocol version (`2`), so an older or newer peer is refused with a message that says so.
//!
//! - challenge, rank 0 → rank r, at once on accept: `"OXSUIDc2"`, `nonce_root` (40 bytes).
//! - response, rank r → rank 0: `"OXSUIDr2"`, `nonce_leaf`, rank `u32`, size `u32`,
//!   `MAC_leaf` (80 bytes), where `MAC_leaf = HMAC-SHA256(key, "oxshmem-uid leaf" ‖
//!   nonce_root ‖ nonce_leaf ‖ rank ‖ size)`.
//! - proof, rank 0 → rank r, as soon as `MAC_leaf` checks out: `"OXSUIDp2"`, `MAC_root` (40
//!   bytes), where `MAC_root = HMAC-SHA256(key, "oxshmem-uid root" ‖ nonce_leaf ‖ nonce_root
//!   ‖ rank ‖ size)`.
//! - stale, sent instead of a challenge by the socket of an id its process replaced with a
//!   newer one ([`create_unique_id`]): `"OXSUIDs2"`, then the connection closes. The rank fails
//!   at once, saying that its id is stale.
//! - welcome, rank 0 → rank r, once every rank is connected: `"OXSUIDw2"`, status `u32` (0 =
//!   ok), message length `u32`, message (why the job cannot start, when status is not 0).
//! - frames, both ways: `'F'`, op `u8`, 2 zero bytes, sequence `u32`, argument `u32`, payload
//!   length `u32`, payload. Each rank sends one frame per collective; rank 0 answers each.

mod auth;
mod codec;
mod id;
mod leaf;
mod net;
mod root;
#[cfg(test)]
mod tests;
mod watch;

use std::fmt;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

pub use auth::{LEAF_LABEL, ROOT_LABEL, check_proof, check_response, leaf_mac, respond, root_mac};
pub use codec::{
    CHALLENGE_LEN, CHALLENGE_MAGIC, Challenge, FRAME_HEADER, Frame, HandshakeError, MAC_LEN, MAX_PAYLOAD, NONCE_LEN,
    Op, PROOF_LEN, PROOF_MAGIC, Proof, RESPONSE_LEN, RESPONSE_MAGIC, Response, WELCOME_MAGIC, Welcome,
    decode_challenge, decode_frame, decode_gathered, decode_proof, decode_response, decode_welcome, encode_challenge,
    encode_frame, encode_gathered, encode_proof, encode_response, encode_welcome,
};
pub use id::{
    ID_BYTES, ID_MAGIC, ID_PREFIX, ID_VERSION, IdError, SECRET_LEN, STALE_MAGIC, UniqueId, close_unused,
    create_unique_id,
};

pub use watch::PEER_DIED_STATUS;

use codec::frame_bytes;
use net::{Peer, RecvResult, closed_hint, io_err, proto_err, secs};

use crate::sock::{env_err, env_usize};
use crate::{Bootstrap, BootstrapError, Result};

const PROTOCOL: &str = "uid";

/// How long a connection may take to answer rank 0's challenge before rank 0 drops it; and
/// how long a rank waits for rank 0's proof after its response.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How much longer than rank 0 the other ranks wait, so that rank 0's error (which names
/// the rank it waited for) reaches them before their own timeout fires.
const LEAF_GRACE: Duration = Duration::from_secs(2);
/// How long rank 0, after two ranks disagreed, goes on telling ranks that arrive late why
/// the job cannot start, before its own `init` returns the error.
const LINGER: Duration = Duration::from_secs(2);
/// Default of `OXSHMEM_TIMEOUT`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// `OXSHMEM_TIMEOUT` (seconds, fractions allowed), or [`DEFAULT_TIMEOUT`].
pub fn timeout_from_env() -> Result<Duration> {
    match std::env::var("OXSHMEM_TIMEOUT") {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| env_err("OXSHMEM_TIMEOUT", format!("{v:?} is not a positive number of seconds"))),
    }
}

/// The (id, rank) pairs this process is joining or has joined, while their [`Uid`] lives.
static JOINED: Mutex<Vec<(UniqueId, usize)>> = Mutex::new(Vec::new());

/// This process's claim on one (id, rank) pair; dropping it releases the pair.
struct Joined {
    id: UniqueId,
    rank: usize,
}

impl Joined {
    fn claim(id: &UniqueId, rank: usize) -> Result<Self> {
        let mut j = JOINED.lock();
        if j.iter().any(|(i, r)| i == id && *r == rank) {
            return Err(BootstrapError::Invalid(format!(
                "uid: this process already joins the job at {} as rank {rank} (Uid::init called twice with the \
                 same unique id and rank; a new job needs a new id, or the first Uid dropped)",
                id.addr()
            )));
        }
        j.push((id.clone(), rank));
        Ok(Joined { id: id.clone(), rank })
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        let mut j = JOINED.lock();
        if let Some(i) = j.iter().position(|(i, r)| *i == self.id && *r == self.rank) {
            j.swap_remove(i);
        }
    }
}

/// The unique-id bootstrap of one rank.
///
/// ```no_run
/// use oxshmem_bootstrap::{Bootstrap, uid::{Uid, create_unique_id}};
/// # fn send_to_others(_: &str) {}
/// # let (rank, size) = (0, 4);
/// // Rank 0 creates the id and hands it to the others by its own means...
/// let id = create_unique_id()?;
/// send_to_others(&id.to_string());
/// // ...then every rank, rank 0 included, joins with its rank and the job size.
/// let boot = Uid::init(&id, rank, size)?;
/// let all = boot.allgather(b"hello")?;
/// boot.finalize()?;
/// # Ok::<(), oxshmem_bootstrap::BootstrapError>(())
/// ```
pub struct Uid {
    /// The liveness watch (see `watch.rs`); first, so that it stops before the connections in
    /// `state` close when the Uid drops.
    watch: Mutex<Option<watch::Watch>>,
    rank: usize,
    size: usize,
    timeout: Duration,
    /// Shared with the liveness watch, which takes it before it acts (see `watch.rs`).
    state: Arc<Mutex<State>>,
    /// Descriptors to write an abort to when another thread holds `state`.
    raw_fds: Vec<RawFd>,
    _joined: Joined,
}

enum Role {
    /// Rank 0: a peer per other rank (index `rank - 1`).
    Root(Vec<Peer>),
    /// The others: the connection to rank 0.
    Leaf(Peer),
}

struct State {
    role: Role,
    seq: u32,
    finalized: bool,
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Uid")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Uid {
    /// Join the job `id` as `rank` of `size`, waiting at most `OXSHMEM_TIMEOUT` (default
    /// 120 s) for every rank to arrive. Collective: returns once all `size` ranks joined.
    pub fn init(id: &UniqueId, rank: usize, size: usize) -> Result<Self> {
        Self::init_with_timeout(id, rank, size, timeout_from_env()?)
    }

    /// [`Uid::init`] from the environment: `OXSHMEM_UNIQUEID`, `OXSHMEM_UID_RANK`,
    /// `OXSHMEM_UID_SIZE`.
    pub fn from_env() -> Result<Self> {
        let id = std::env::var("OXSHMEM_UNIQUEID").map_err(|_| env_err("OXSHMEM_UNIQUEID", "not set"))?;
        let id: UniqueId = id.parse()?;
        let why = "the program must set it with OXSHMEM_UNIQUEID";
        let rank = env_usize("OXSHMEM_UID_RANK", why)?;
        let size = env_usize("OXSHMEM_UID_SIZE", why)?;
        Self::init(&id, rank, size)
    }

    /// [`Uid::init`] with an explicit timeout for every wait.
    pub fn init_with_timeout(id: &UniqueId, rank: usize, size: usize, timeout: Duration) -> Result<Self> {
        if size == 0 {
            return Err(BootstrapError::Invalid("uid: job size 0: a job has at least one rank".into()));
        }
        if rank >= size {
            return Err(BootstrapError::Invalid(format!(
                "uid: rank {rank} is out of range for size {size} (ranks are 0 to {})",
                size - 1
            )));
        }
        if size > u32::MAX as usize {
            return Err(BootstrapError::Invalid(format!("uid: job size {size} exceeds {}", u32::MAX)));
        }
        let joined = Joined::claim(id, rank)?;
        // The rank is this process's PE: the lines rank 0 logs while it accepts the others
        // (refused strangers) say so, instead of `PE ?`.
        crate::logging::set_pe(rank);
        let deadline = Instant::now() + timeout;
        let role = if rank == 0 {
            let listener = id::take_listener(id)?;
            Role::Root(root::accept_all(&listener, id, size, timeout, deadline)?)
        } else {
            Role::Leaf(leaf::join(id, rank, size, timeout, deadline)?)
        };
        let raw_fds = match &role {
            Role::Root(peers) => peers.iter().map(|p| p.stream.as_raw_fd()).collect(),
            Role::Leaf(p) => vec![p.stream.as_raw_fd()],
        };
        let watched = match &role {
            Role::Root(peers) => peers
                .iter()
                .enumerate()
                .map(|(i, p)| watch::Watched { fd: p.stream.as_raw_fd(), rank: i + 1, who: p.who.clone() })
                .collect(),
            Role::Leaf(p) => {
                vec![watch::Watched { fd: p.stream.as_raw_fd(), rank: 0, who: format!("rank 0 ({})", id.addr()) }]
            }
        };
        let state = Arc::new(Mutex::new(State { role, seq: 0, finalized: false }));
        let gate = Arc::clone(&state);
        // Held until the process ends: no collective starts once a peer is known dead.
        let quiesce = Box::new(move || std::mem::forget(gate.lock()));
        // The unit tests run their ranks as threads of one process, where a rank that returns
        // early (and drops its Uid) is not a death that should end the process: no watch there
        // (tests/hostile.rs tests it with processes).
        let watch = if cfg!(test) { None } else { watch::Watch::start(rank, watched, quiesce) };
        Ok(Uid { watch: Mutex::new(watch), rank, size, timeout, state, raw_fds, _joined: joined })
    }

    /// The timeout of every wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        let st = self.state.lock();
        if st.finalized {
            return Err(BootstrapError::Invalid("uid: used after finalize".into()));
        }
        Ok(st)
    }

    /// One collective: every rank hands in `data`; rank 0 combines them with `reply` and
    /// every rank gets the result.
    fn collective(
        &self,
        op: Op,
        arg: u32,
        data: &[u8],
        reply: impl FnOnce(Vec<Vec<u8>>) -> Vec<u8>,
    ) -> Result<Vec<u8>> {
        let mut st = self.lock()?;
        st.seq = st.seq.wrapping_add(1);
        let seq = st.seq;
        let step = format!("{} #{seq}", op.name());
        let deadline = Instant::now() + self.timeout;
        let out = match &mut st.role {
            Role::Root(peers) => {
                let mut blobs = match root::gather(peers, op, seq, arg, &step, self.timeout, deadline) {
                    Ok(b) => b,
                    Err(e) => {
                        root::tell_error(peers, seq, &format!("rank 0: {step}: {e}"));
                        return Err(e);
                    }
                };
                blobs[0] = data.to_vec();
                let payload = reply(blobs);
                let frame = frame_bytes(op, seq, arg, &payload);
                let send_deadline = Instant::now() + self.timeout;
                for p in peers.iter_mut() {
                    p.send(&frame, send_deadline).map_err(|e| io_err(&format!("{step}: reply to {}", p.who), e))?;
                }
                payload
            }
            Role::Leaf(root) => {
                let frame = frame_bytes(op, seq, arg, data);
                root.send(&frame, deadline).map_err(|e| io_err(&format!("{step}: send to rank 0"), closed_hint(e)))?;
                // Rank 0 knows who is late and says so when its own wait ends: wait a little
                // longer than it does, so that its reason arrives before our own timeout.
                let f = match root.recv(deadline + LEAF_GRACE, decode_frame) {
                    RecvResult::Got(f) => f,
                    RecvResult::Bad(e, _) => {
                        return Err(proto_err(&step, format!("bad reply from rank 0: {e}")));
                    }
                    RecvResult::Closed => {
                        return Err(proto_err(&step, "rank 0 closed the connection (it exited or failed)"));
                    }
                    RecvResult::TimedOut => {
                        return Err(proto_err(
                            &step,
                            format!("timed out after {} waiting for rank 0 (OXSHMEM_TIMEOUT)", secs(self.timeout)),
                        ));
                    }
                    RecvResult::Io(e) => return Err(io_err(&format!("{step}: from rank 0"), e)),
                };
                match f.op {
                    Op::Abort => exit_on_abort(0, f.arg, &f.payload),
                    Op::Error => {
                        return Err(proto_err(
                            &step,
                            format!("the job failed: {}", String::from_utf8_lossy(&f.payload)),
                        ));
                    }
                    _ if f.op != op || f.seq != seq || f.arg != arg => {
                        return Err(proto_err(
                            &step,
                            format!(
                                "rank 0 answered {} #{} (arg {}) to this rank's {step} (arg {arg})",
                                f.op.name(),
                                f.seq,
                                f.arg
                            ),
                        ));
                    }
                    _ => f.payload,
                }
            }
        };
        if op == Op::Finalize {
            st.finalized = true;
        }
        Ok(out)
    }
}

fn exit_on_abort(from: u32, code: u32, msg: &[u8]) -> ! {
    let code = code as i32;
    eprintln!("oxshmem uid: rank {from} aborted the job (exit code {code}): {}", String::from_utf8_lossy(msg));
    std::process::exit(code)
}

impl Bootstrap for Uid {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        if data.len() > MAX_PAYLOAD / self.size.max(1) {
            return Err(BootstrapError::Invalid(format!(
                "uid: allgather of {} bytes per rank exceeds {} bytes in all",
                data.len(),
                MAX_PAYLOAD
            )));
        }
        let payload = self.collective(Op::Allgather, 0, data, |blobs| encode_gathered(&blobs))?;
        decode_gathered(&payload, self.size).map_err(|e| proto_err("allgather", format!("reply from rank 0: {e}")))
    }

    fn barrier(&self) -> Result<()> {
        self.collective(Op::Barrier, 0, &[], |_| Vec::new()).map(|_| ())
    }

    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>> {
        if root >= self.size {
            return Err(BootstrapError::Invalid(format!("broadcast root {root} out of range (size {})", self.size)));
        }
        let mine = if self.rank == root { data.unwrap_or(&[]) } else { &[] };
        if mine.len() > MAX_PAYLOAD {
            return Err(BootstrapError::Invalid(format!(
                "uid: broadcast of {} bytes exceeds {MAX_PAYLOAD}",
                mine.len()
            )));
        }
        self.collective(Op::Broadcast, root as u32, mine, |mut blobs| std::mem::take(&mut blobs[root]))
    }

    fn abort(&self, code: i32, msg: &str) -> ! {
        // This rank ends with its own code: its watch must not take rank 0's closing (which
        // the abort causes) for a death.
        if let Some(mut w) = self.watch.try_lock().and_then(|mut w| w.take()) {
            w.stop();
        }
        eprintln!("{msg}");
        let frame = encode_frame(&Frame {
            op: Op::Abort,
            seq: 0,
            arg: code as u32,
            payload: msg.as_bytes()[..msg.len().min(4096)].to_vec(),
        });
        // Best effort and never blocking: rank 0 passes it on to the others when it reads it;
        // if it never does, our exit closes the connection, which it notices as well.
        for &fd in &self.raw_fds {
            // SAFETY: `frame` is a valid buffer; `fd` belongs to a stream `self` keeps open.
            unsafe { libc::send(fd, frame.as_ptr().cast(), frame.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        }
        std::process::exit(code)
    }

    fn finalize(&self) -> Result<()> {
        // From here on a peer's connection closes because it finalized, not because it died.
        if let Some(mut w) = self.watch.lock().take() {
            w.stop();
        }
        let r = self.collective(Op::Finalize, 0, &[], |_| Vec::new()).map(|_| ());
        // Ids this process made and never used (or replaced) stop listening.
        close_unused();
        r
    }
}
