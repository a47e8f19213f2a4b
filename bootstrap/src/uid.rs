//! The unique-id bootstrap: a TCP rendezvous for programs that bring their own process
//! management, like NVSHMEM's `nvshmemx_get_uniqueid` + `nvshmemx_init_attr`.
//!
//! Rank 0 creates a [`UniqueId`] — the address of a listening socket plus a random 128-bit job
//! secret, printable as `oxs1:127.0.0.1:43211:<32 hex digits>` — and passes it to the other
//! ranks any way it likes (over MPI, a file, the environment: `OXSHMEM_UNIQUEID` with
//! `OXSHMEM_UID_RANK` and `OXSHMEM_UID_SIZE`). Every rank then calls [`Uid::init`]: rank 0
//! listens, the others connect to it, and the collectives run through rank 0 (a star: the
//! bootstrap moves a few hundred bytes per rank at init, so a tree would buy nothing at the
//! sizes that start this way).
//!
//! What this module must never do: block without a deadline, or trust a byte it has not
//! checked. Every wait — connecting, the handshake, each collective — ends after
//! `OXSHMEM_TIMEOUT` seconds (default 120) with an error that names the step and the peer
//! waited for. A connection that does not open with this job's magic and secret is closed
//! and logged, and the job goes on without it. The secret keeps out strays and other jobs'
//! ranks; it is not authentication against someone who can read the traffic.
//!
//! Wire format (all integers little-endian):
//! - hello, rank r → rank 0: `"OXSUIDh1"`, the 16-byte secret, rank `u32`, size `u32` (32 bytes).
//! - welcome, rank 0 → rank r, once every rank is connected: `"OXSUIDw1"`, status `u32` (0 = ok),
//!   message length `u32`, message (why the job cannot start, when status is not 0).
//! - frames, both ways: `'F'`, op `u8`, 2 zero bytes, sequence `u32`, argument `u32`, payload
//!   length `u32`, payload. Each rank sends one frame per collective; rank 0 answers each.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sock::{env_err, env_usize};
use crate::wire::{hex_decode, hex_encode};
use crate::{Bootstrap, BootstrapError, Result};

const PROTOCOL: &str = "uid";

/// The prefix of a printed [`UniqueId`]; a new format gets a new prefix.
pub const ID_PREFIX: &str = "oxs1";
/// Length of the job secret in bytes.
pub const SECRET_LEN: usize = 16;
/// What a connecting rank sends first.
pub const HELLO_MAGIC: &[u8; 8] = b"OXSUIDh1";
/// What rank 0 answers once every rank is connected.
pub const WELCOME_MAGIC: &[u8; 8] = b"OXSUIDw1";
/// Length of a hello.
pub const HELLO_LEN: usize = 8 + SECRET_LEN + 4 + 4;
/// Length of a frame header.
pub const FRAME_HEADER: usize = 16;
/// Largest frame payload accepted (an allgather reply holds every rank's blob).
pub const MAX_PAYLOAD: usize = 256 << 20;
/// Longest welcome message accepted.
const MAX_WELCOME_MSG: usize = 4096;
/// How long a connection may take to say hello before rank 0 drops it.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How much longer than rank 0 the other ranks wait, so that rank 0's error (which names
/// the rank it waited for) reaches them before their own timeout fires.
const LEAF_GRACE: Duration = Duration::from_secs(2);
/// Default of `OXSHMEM_TIMEOUT`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------- the id

/// Where rank 0 listens and the job's secret. `Display` gives the printable form that
/// [`UniqueId::from_str`] reads back; `Debug` hides the secret.
///
/// ```
/// use oxshmem_bootstrap::uid::UniqueId;
/// let id: UniqueId = "oxs1:127.0.0.1:43211:000102030405060708090a0b0c0d0e0f".parse().unwrap();
/// assert_eq!(id.addr().port(), 43211);
/// assert_eq!(id.to_string(), "oxs1:127.0.0.1:43211:000102030405060708090a0b0c0d0e0f");
/// assert!("oxs1:127.0.0.1:43211:00".parse::<UniqueId>().is_err());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct UniqueId {
    addr: SocketAddr,
    secret: [u8; SECRET_LEN],
}

impl UniqueId {
    /// An id for `addr` with a fresh random secret. Nothing listens yet: rank 0's
    /// [`Uid::init`] binds `addr` (use [`create_unique_id`] to bind first and pick a port).
    pub fn new(addr: SocketAddr) -> Result<Self> {
        Ok(UniqueId { addr, secret: random_secret()? })
    }

    /// An id with a given secret (tests, or a secret agreed some other way).
    pub fn with_secret(addr: SocketAddr, secret: [u8; SECRET_LEN]) -> Self {
        UniqueId { addr, secret }
    }

    /// The address rank 0 listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The job secret.
    pub fn secret(&self) -> &[u8; SECRET_LEN] {
        &self.secret
    }
}

impl fmt::Display for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ID_PREFIX}:{}:{}", self.addr, hex_encode(&self.secret))
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UniqueId").field("addr", &self.addr).field("secret", &"<hidden>").finish()
    }
}

impl FromStr for UniqueId {
    type Err = BootstrapError;

    /// Parse `oxs1:<ipv4>:<port>:<hex>` or `oxs1:[<ipv6>]:<port>:<hex>`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| {
            env_err("OXSHMEM_UNIQUEID", format!("{why}: expected {ID_PREFIX}:<address>:<port>:<32 hex digits>"))
        };
        let s = s.trim();
        let rest = s
            .strip_prefix(ID_PREFIX)
            .and_then(|r| r.strip_prefix(':'))
            .ok_or_else(|| bad("does not start with \"oxs1:\""))?;
        let (addr, hex) = rest.rsplit_once(':').ok_or_else(|| bad("no secret after the address"))?;
        let addr: SocketAddr = addr.parse().map_err(|_| bad(&format!("{addr:?} is not an address:port")))?;
        if addr.port() == 0 {
            return Err(bad("port 0"));
        }
        let secret: [u8; SECRET_LEN] = hex_decode(hex)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| bad("the secret is not 32 hex digits"))?;
        Ok(UniqueId { addr, secret })
    }
}

fn random_secret() -> Result<[u8; SECRET_LEN]> {
    let mut s = [0u8; SECRET_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut s))
        .map_err(|e| io_err("create a job secret from /dev/urandom", e))?;
    Ok(s)
}

/// Listeners made by [`create_unique_id`] in this process, waiting for rank 0's
/// [`Uid::init`] to take them.
static LISTENERS: Mutex<Vec<(UniqueId, TcpListener)>> = Mutex::new(Vec::new());

/// Rank 0, before the others start: bind a listening socket now and return its id (the
/// `nvshmemx_get_uniqueid` step). The address is `OXSHMEM_UID_ADDR` (an IP, or IP:port) when
/// set, else this host's address on its default route, else 127.0.0.1; the port is picked by
/// the kernel unless given. Rank 0's later [`Uid::init`] with this id uses this very socket,
/// so no other process can take the port in between.
pub fn create_unique_id() -> Result<UniqueId> {
    let addr = match std::env::var("OXSHMEM_UID_ADDR") {
        Ok(v) => parse_bind_addr(&v)
            .ok_or_else(|| env_err("OXSHMEM_UID_ADDR", format!("{v:?} is not an IP address or address:port")))?,
        Err(_) => SocketAddr::new(default_ip(), 0),
    };
    let listener = TcpListener::bind(addr).map_err(|e| io_err(&format!("listen on {addr}"), e))?;
    let bound = listener.local_addr().map_err(|e| io_err("listen: local address", e))?;
    let id = UniqueId::new(bound)?;
    LISTENERS.lock().unwrap_or_else(|e| e.into_inner()).push((id.clone(), listener));
    Ok(id)
}

fn parse_bind_addr(v: &str) -> Option<SocketAddr> {
    let v = v.trim();
    v.parse::<SocketAddr>().ok().or_else(|| v.parse::<std::net::IpAddr>().ok().map(|ip| SocketAddr::new(ip, 0)))
}

/// The address other hosts can reach: the source address of the default route (asking the
/// kernel by "connecting" a UDP socket, which sends nothing), else loopback.
fn default_ip() -> std::net::IpAddr {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
}

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

// ---------------------------------------------------------------- the wire format

/// Why bytes from a peer were refused. Every decoder here returns one of these for bad
/// input; none panics, whatever the bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The first bytes are not this protocol's magic.
    #[error("not an oxshmem uid peer (first bytes {0:02x?})")]
    BadMagic(Vec<u8>),
    /// The hello carries a different job secret.
    #[error("wrong job secret")]
    BadSecret,
    /// More bytes arrived than the message may have.
    #[error("{got} bytes where the hello has {HELLO_LEN}")]
    TooLong {
        /// Bytes received.
        got: usize,
    },
    /// The hello's rank is not below its size.
    #[error("rank {rank} out of range for size {size}")]
    BadRank {
        /// The rank it claims.
        rank: u32,
        /// The size it claims.
        size: u32,
    },
    /// The hello's size differs from rank 0's.
    #[error("this rank says the job has {got} ranks, rank 0 says {want}")]
    SizeMismatch {
        /// The size it claims.
        got: u32,
        /// Rank 0's size.
        want: u32,
    },
    /// A length field exceeds its limit.
    #[error("length {len} exceeds the limit of {max} bytes")]
    Oversized {
        /// The length announced.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// An unknown frame operation.
    #[error("unknown operation {0}")]
    BadOp(u8),
    /// A reply payload does not decode.
    #[error("malformed reply: {0}")]
    BadPayload(String),
}

/// What a connecting rank says first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// Its rank.
    pub rank: u32,
    /// The job size it was given.
    pub size: u32,
}

fn le32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// The wire form of a hello.
pub fn encode_hello(secret: &[u8; SECRET_LEN], hello: Hello) -> [u8; HELLO_LEN] {
    let mut b = [0u8; HELLO_LEN];
    b[..8].copy_from_slice(HELLO_MAGIC);
    b[8..24].copy_from_slice(secret);
    b[24..28].copy_from_slice(&hello.rank.to_le_bytes());
    b[28..32].copy_from_slice(&hello.size.to_le_bytes());
    b
}

/// Decode what a connection has sent so far as a hello for a job of `size` ranks with
/// `secret`: `Ok(None)` while it is a valid but incomplete start. A wrong magic is refused as
/// soon as its first bytes arrive.
///
/// ```
/// use oxshmem_bootstrap::uid::{Hello, HandshakeError, decode_hello, encode_hello};
/// let s = [7u8; 16];
/// let h = encode_hello(&s, Hello { rank: 2, size: 4 });
/// assert_eq!(decode_hello(&h, &s, 4), Ok(Some(Hello { rank: 2, size: 4 })));
/// assert_eq!(decode_hello(&h[..10], &s, 4), Ok(None));
/// assert_eq!(decode_hello(&h, &[0; 16], 4), Err(HandshakeError::BadSecret));
/// assert!(decode_hello(b"GET / HTTP/1.1\r\n", &s, 4).is_err());
/// ```
pub fn decode_hello(buf: &[u8], secret: &[u8; SECRET_LEN], size: u32) -> Result<Option<Hello>, HandshakeError> {
    let m = buf.len().min(HELLO_MAGIC.len());
    if buf[..m] != HELLO_MAGIC[..m] {
        return Err(HandshakeError::BadMagic(buf[..m].to_vec()));
    }
    if buf.len() < HELLO_LEN {
        return Ok(None);
    }
    if buf.len() > HELLO_LEN {
        return Err(HandshakeError::TooLong { got: buf.len() });
    }
    // Compare every byte, whatever the first difference, so timing says nothing.
    let diff = buf[8..24].iter().zip(secret).fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff != 0 {
        return Err(HandshakeError::BadSecret);
    }
    let hello = Hello { rank: le32(&buf[24..28]), size: le32(&buf[28..32]) };
    if hello.rank >= hello.size {
        return Err(HandshakeError::BadRank { rank: hello.rank, size: hello.size });
    }
    if hello.size != size {
        return Err(HandshakeError::SizeMismatch { got: hello.size, want: size });
    }
    Ok(Some(hello))
}

/// Rank 0's answer to a hello: status 0 and an empty message admit the rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcome {
    /// 0: the job starts; anything else: it cannot, and `message` says why.
    pub status: u32,
    /// Why the job cannot start.
    pub message: String,
}

/// The wire form of a welcome.
pub fn encode_welcome(w: &Welcome) -> Vec<u8> {
    let msg = &w.message.as_bytes()[..w.message.len().min(MAX_WELCOME_MSG)];
    let mut b = Vec::with_capacity(16 + msg.len());
    b.extend_from_slice(WELCOME_MAGIC);
    b.extend_from_slice(&w.status.to_le_bytes());
    b.extend_from_slice(&(msg.len() as u32).to_le_bytes());
    b.extend_from_slice(msg);
    b
}

/// Decode a welcome from the start of `buf`: `Ok(Some((welcome, bytes used)))`, or `Ok(None)`
/// while incomplete.
pub fn decode_welcome(buf: &[u8]) -> Result<Option<(Welcome, usize)>, HandshakeError> {
    let m = buf.len().min(WELCOME_MAGIC.len());
    if buf[..m] != WELCOME_MAGIC[..m] {
        return Err(HandshakeError::BadMagic(buf[..m].to_vec()));
    }
    if buf.len() < 16 {
        return Ok(None);
    }
    let status = le32(&buf[8..12]);
    let len = le32(&buf[12..16]) as usize;
    if len > MAX_WELCOME_MSG {
        return Err(HandshakeError::Oversized { len: len as u64, max: MAX_WELCOME_MSG });
    }
    let Some(msg) = buf.get(16..16 + len) else {
        return Ok(None);
    };
    Ok(Some((Welcome { status, message: String::from_utf8_lossy(msg).into_owned() }, 16 + len)))
}

/// What a frame asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Allgather: the payload is this rank's blob; the reply holds every rank's.
    Allgather = 1,
    /// Barrier: empty both ways.
    Barrier = 2,
    /// Broadcast from the rank in the argument: the root's payload is the data.
    Broadcast = 3,
    /// Abort: the argument is the exit code, the payload the message. No reply.
    Abort = 4,
    /// Finalize: a last barrier.
    Finalize = 5,
    /// From rank 0 only: the collective failed; the payload says why.
    Error = 6,
}

impl Op {
    fn from_u8(b: u8) -> Option<Op> {
        Some(match b {
            1 => Op::Allgather,
            2 => Op::Barrier,
            3 => Op::Broadcast,
            4 => Op::Abort,
            5 => Op::Finalize,
            6 => Op::Error,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Op::Allgather => "allgather",
            Op::Barrier => "barrier",
            Op::Broadcast => "broadcast",
            Op::Abort => "abort",
            Op::Finalize => "finalize",
            Op::Error => "error",
        }
    }
}

/// One message after the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// What it asks for.
    pub op: Op,
    /// Which collective of the job (1, 2, ...): all ranks must agree.
    pub seq: u32,
    /// Broadcast root, or abort exit code; 0 otherwise.
    pub arg: u32,
    /// The data.
    pub payload: Vec<u8>,
}

/// The wire form of a frame.
pub fn encode_frame(f: &Frame) -> Vec<u8> {
    frame_bytes(f.op, f.seq, f.arg, &f.payload)
}

fn frame_bytes(op: Op, seq: u32, arg: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(FRAME_HEADER + payload.len());
    b.extend_from_slice(&[b'F', op as u8, 0, 0]);
    b.extend_from_slice(&seq.to_le_bytes());
    b.extend_from_slice(&arg.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(payload);
    b
}

/// Decode a frame from the start of `buf`: `Ok(Some((frame, bytes used)))`, or `Ok(None)`
/// while incomplete.
pub fn decode_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, HandshakeError> {
    if buf.is_empty() {
        return Ok(None);
    }
    let head = &buf[..buf.len().min(4)];
    if head[0] != b'F' || head.get(2..).is_some_and(|z| z.iter().any(|&b| b != 0)) {
        return Err(HandshakeError::BadMagic(head.to_vec()));
    }
    if let Some(&op) = head.get(1)
        && Op::from_u8(op).is_none()
    {
        return Err(HandshakeError::BadOp(op));
    }
    if buf.len() < FRAME_HEADER {
        return Ok(None);
    }
    let op = Op::from_u8(buf[1]).ok_or(HandshakeError::BadOp(buf[1]))?;
    let len = le32(&buf[12..16]) as usize;
    if len > MAX_PAYLOAD {
        return Err(HandshakeError::Oversized { len: len as u64, max: MAX_PAYLOAD });
    }
    let Some(payload) = buf.get(FRAME_HEADER..FRAME_HEADER + len) else {
        return Ok(None);
    };
    Ok(Some((
        Frame { op, seq: le32(&buf[4..8]), arg: le32(&buf[8..12]), payload: payload.to_vec() },
        FRAME_HEADER + len,
    )))
}

/// The allgather reply: the number of blobs, then each as length `u32` and bytes.
pub fn encode_gathered(blobs: &[Vec<u8>]) -> Vec<u8> {
    let total: usize = blobs.iter().map(|b| 4 + b.len()).sum();
    let mut out = Vec::with_capacity(4 + total);
    out.extend_from_slice(&(blobs.len() as u32).to_le_bytes());
    for b in blobs {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    }
    out
}

/// Decode an allgather reply that must hold exactly `size` blobs.
pub fn decode_gathered(p: &[u8], size: usize) -> Result<Vec<Vec<u8>>, HandshakeError> {
    let bad = |why: String| HandshakeError::BadPayload(why);
    let count = p.get(..4).map(le32).ok_or_else(|| bad("no blob count".into()))? as usize;
    if count != size {
        return Err(bad(format!("{count} blobs for {size} ranks")));
    }
    let mut at = 4;
    let mut out = Vec::with_capacity(size.min(p.len() / 4 + 1));
    for r in 0..count {
        let len =
            p.get(at..at + 4).map(le32).ok_or_else(|| bad(format!("cut before the length of blob {r}")))? as usize;
        at += 4;
        let blob = p.get(at..at.saturating_add(len)).ok_or_else(|| bad(format!("blob {r} of {len} bytes is cut")))?;
        out.push(blob.to_vec());
        at += len;
    }
    if at != p.len() {
        return Err(bad(format!("{} bytes after the last blob", p.len() - at)));
    }
    Ok(out)
}

// ---------------------------------------------------------------- I/O with deadlines

fn io_err(step: &str, source: io::Error) -> BootstrapError {
    BootstrapError::Io { protocol: PROTOCOL, step: step.to_string(), source }
}

fn proto_err(step: &str, reason: impl Into<String>) -> BootstrapError {
    BootstrapError::Protocol { protocol: PROTOCOL, step: step.to_string(), reason: reason.into() }
}

/// Wait until one of `fds` is readable (or closed) or `timeout` passes; returns which are.
fn poll_readable(fds: &[RawFd], timeout: Duration) -> io::Result<Vec<bool>> {
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
struct Peer {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Whom it is, for messages: `rank 3 (127.0.0.1:40112)`.
    who: String,
}

impl Peer {
    fn new(stream: TcpStream, who: String) -> Self {
        let _ = stream.set_nodelay(true);
        Peer { stream, buf: Vec::new(), who }
    }

    /// Read what is available (after poll said so); `Ok(false)` at end of stream.
    fn fill(&mut self) -> io::Result<bool> {
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

    fn take_frame(&mut self) -> Result<Option<Frame>, HandshakeError> {
        Ok(decode_frame(&self.buf)?.map(|(f, used)| {
            self.buf.drain(..used);
            f
        }))
    }

    /// Write all of `data` before `deadline`.
    fn send(&mut self, data: &[u8], deadline: Instant) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
        }
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write_all(data)
    }

    /// Read until `decode` yields a value, `deadline` passes or the peer closes.
    fn recv<T>(
        &mut self,
        deadline: Instant,
        mut decode: impl FnMut(&mut Vec<u8>) -> Result<Option<T>, HandshakeError>,
    ) -> RecvResult<T> {
        loop {
            match decode(&mut self.buf) {
                Ok(Some(v)) => return RecvResult::Got(v),
                Ok(None) => {}
                Err(e) => return RecvResult::Bad(e),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return RecvResult::TimedOut;
            }
            match poll_readable(&[self.stream.as_raw_fd()], left) {
                Ok(r) if r[0] => match self.fill() {
                    Ok(true) => {}
                    Ok(false) => return RecvResult::Closed,
                    Err(e) => return RecvResult::Io(e),
                },
                Ok(_) => {}
                Err(e) => return RecvResult::Io(e),
            }
        }
    }
}

enum RecvResult<T> {
    Got(T),
    Bad(HandshakeError),
    Closed,
    TimedOut,
    Io(io::Error),
}

/// `[1, 2, 5]` as "ranks 1, 2, 5"; one as "rank 1".
fn ranks_list(r: &[usize]) -> String {
    let list: Vec<String> = r.iter().map(|x| x.to_string()).collect();
    if r.len() == 1 { format!("rank {}", list[0]) } else { format!("ranks {}", list.join(", ")) }
}

fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

fn log(msg: &str) {
    eprintln!("oxshmem uid: {msg}");
}

// ---------------------------------------------------------------- the bootstrap

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
    rank: usize,
    size: usize,
    timeout: Duration,
    state: Mutex<State>,
    /// Descriptors to write an abort to when another thread holds `state`.
    raw_fds: Vec<RawFd>,
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
        if size == 0 || rank >= size || size > u32::MAX as usize {
            return Err(BootstrapError::Invalid(format!("uid: rank {rank} is out of range for size {size}")));
        }
        let deadline = Instant::now() + timeout;
        let role = if rank == 0 {
            let listener = take_listener(id)?;
            Role::Root(accept_all(&listener, id, size, timeout, deadline)?)
        } else {
            Role::Leaf(join(id, rank, size, timeout, deadline)?)
        };
        let raw_fds = match &role {
            Role::Root(peers) => peers.iter().map(|p| p.stream.as_raw_fd()).collect(),
            Role::Leaf(p) => vec![p.stream.as_raw_fd()],
        };
        Ok(Uid { rank, size, timeout, state: Mutex::new(State { role, seq: 0, finalized: false }), raw_fds })
    }

    /// The timeout of every wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
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
                let mut blobs = match gather(peers, op, seq, arg, &step, self.timeout, deadline) {
                    Ok(b) => b,
                    Err(e) => {
                        tell_error(peers, seq, &format!("rank 0: {step}: {e}"));
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
                let f = match root.recv(deadline + LEAF_GRACE, |buf| {
                    Ok(decode_frame(buf)?.map(|(f, used)| {
                        buf.drain(..used);
                        f
                    }))
                }) {
                    RecvResult::Got(f) => f,
                    RecvResult::Bad(e) => {
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

fn closed_hint(e: io::Error) -> io::Error {
    if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) {
        io::Error::new(e.kind(), "rank 0 closed the connection")
    } else {
        e
    }
}

fn exit_on_abort(from: u32, code: u32, msg: &[u8]) -> ! {
    let code = code as i32;
    let code = if code == 0 { 1 } else { code };
    log(&format!("rank {from} aborted the job (exit code {code}): {}", String::from_utf8_lossy(msg)));
    std::process::exit(code)
}

/// Rank 0: best-effort notice to every rank that the collective failed, so that they fail
/// now with the reason instead of timing out.
fn tell_error(peers: &mut [Peer], seq: u32, msg: &str) {
    let frame = encode_frame(&Frame { op: Op::Error, seq, arg: 0, payload: msg.as_bytes().to_vec() });
    let deadline = Instant::now() + Duration::from_secs(1);
    for p in peers.iter_mut() {
        let _ = p.send(&frame, deadline);
    }
}

/// Rank 0: one frame from every other rank (index 0 left empty).
fn gather(
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

fn take_listener(id: &UniqueId) -> Result<TcpListener> {
    let mut ls = LISTENERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = ls.iter().position(|(l, _)| l == id) {
        return Ok(ls.swap_remove(i).1);
    }
    drop(ls);
    TcpListener::bind(id.addr).map_err(|e| io_err(&format!("rank 0: listen on {}", id.addr), e))
}

/// A connection that has not said hello yet.
struct Pending {
    stream: TcpStream,
    from: SocketAddr,
    buf: Vec<u8>,
    since: Instant,
}

enum HelloOutcome {
    /// Not complete yet.
    More,
    /// A valid hello from this rank.
    Rank(usize),
    /// Not one of ours: close it and log why.
    Refuse(String),
    /// One of ours (right secret) that cannot join this job: the job cannot start.
    Fatal(HandshakeError),
}

fn read_hello(p: &mut Pending, id: &UniqueId, size: usize) -> HelloOutcome {
    // At most one byte past a hello: a well-behaved rank sends nothing more before the
    // welcome, so one extra byte is already an error.
    let mut chunk = [0u8; HELLO_LEN + 1];
    let want = (HELLO_LEN + 1 - p.buf.len().min(HELLO_LEN)).max(1);
    match p.stream.read(&mut chunk[..want]) {
        Ok(0) => HelloOutcome::Refuse("closed before a complete hello".into()),
        Ok(n) => {
            p.buf.extend_from_slice(&chunk[..n]);
            match decode_hello(&p.buf, &id.secret, size as u32) {
                Ok(None) => HelloOutcome::More,
                Ok(Some(h)) => HelloOutcome::Rank(h.rank as usize),
                Err(e @ HandshakeError::SizeMismatch { .. }) => HelloOutcome::Fatal(e),
                Err(e) => HelloOutcome::Refuse(e.to_string()),
            }
        }
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => HelloOutcome::More,
        Err(e) => HelloOutcome::Refuse(e.to_string()),
    }
}

/// Rank 0: accept connections until every other rank has said a valid hello; refuse (close
/// and log) everything else. Then welcome them all, or tell them all why the job cannot
/// start.
fn accept_all(
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
    let fail = |ranks: &mut Vec<Option<Peer>>, msg: String| -> BootstrapError {
        let w = encode_welcome(&Welcome { status: 1, message: msg.clone() });
        let dl = Instant::now() + Duration::from_secs(1);
        for p in ranks.iter_mut().flatten() {
            let _ = p.send(&w, dl);
        }
        proto_err(step, msg)
    };
    loop {
        let missing: Vec<usize> = (1..size).filter(|&r| ranks[r].is_none()).collect();
        if missing.is_empty() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            let msg = format!(
                "timed out after {} waiting for {} to connect to {} ({} of {size} ranks \
                 connected; OXSHMEM_TIMEOUT)",
                secs(timeout),
                ranks_list(&missing),
                id.addr,
                size - missing.len()
            );
            return Err(fail(&mut ranks, msg));
        }
        // Drop connections that keep silent.
        pending.retain(|p| {
            let keep = now.duration_since(p.since) < HELLO_TIMEOUT;
            if !keep {
                log(&format!("refused the connection from {}: no hello within {}", p.from, secs(HELLO_TIMEOUT)));
            }
            keep
        });
        let mut fds = vec![listener.as_raw_fd()];
        fds.extend(pending.iter().map(|p| p.stream.as_raw_fd()));
        let wait = deadline.saturating_duration_since(now).min(Duration::from_millis(500));
        let ready = poll_readable(&fds, wait).map_err(|e| io_err(step, e))?;
        // Backwards, so that `swap_remove` only moves entries already looked at.
        for idx in (0..pending.len()).rev() {
            if !ready[idx + 1] {
                continue;
            }
            match read_hello(&mut pending[idx], id, size) {
                HelloOutcome::More => {}
                HelloOutcome::Refuse(why) => {
                    let p = pending.swap_remove(idx);
                    log(&format!("refused the connection from {}: {why}", p.from));
                }
                HelloOutcome::Fatal(e) => {
                    let p = pending.swap_remove(idx);
                    let msg = format!("the rank connecting from {}: {e}", p.from);
                    // Slot 0 (rank 0 itself) is free: park the refused rank there, so that it
                    // gets the reason with the others.
                    ranks[0] = Some(Peer::new(p.stream, p.from.to_string()));
                    return Err(fail(&mut ranks, msg));
                }
                HelloOutcome::Rank(r) => {
                    let p = pending.swap_remove(idx);
                    if let Some(first) = &ranks[r] {
                        let msg = format!("two processes claim rank {r}: {} and {}", first.who, p.from);
                        return Err(fail(&mut ranks, msg));
                    }
                    let _ = p.stream.set_nonblocking(false);
                    ranks[r] = Some(Peer::new(p.stream, format!("rank {r} ({})", p.from)));
                }
            }
        }
        if ready[0] {
            loop {
                match listener.accept() {
                    Ok((stream, from)) => {
                        let _ = stream.set_nonblocking(true);
                        pending.push(Pending { stream, from, buf: Vec::new(), since: Instant::now() });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // ECONNABORTED and friends: that connection is gone; the listener is fine.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                    Err(e) => return Err(io_err(step, e)),
                }
            }
        }
    }
    for p in pending {
        log(&format!("closed the connection from {}: every rank has already joined", p.from));
    }
    let welcome = encode_welcome(&Welcome { status: 0, message: String::new() });
    let mut peers: Vec<Peer> = ranks.into_iter().skip(1).flatten().collect();
    let send_deadline = Instant::now() + timeout;
    for p in &mut peers {
        p.send(&welcome, send_deadline).map_err(|e| io_err(&format!("{step}: welcome {}", p.who), e))?;
    }
    Ok(peers)
}

/// Ranks other than 0: connect (retrying while rank 0 is not listening yet), say hello, and
/// wait for the welcome.
fn join(id: &UniqueId, rank: usize, size: usize, timeout: Duration, deadline: Instant) -> Result<Peer> {
    let step = format!("rank {rank}: connect to rank 0 at {}", id.addr);
    let mut backoff = Duration::from_millis(10);
    let stream = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(proto_err(
                &step,
                format!(
                    "timed out after {}: nothing accepts connections there (is rank 0 \
                     running, and is OXSHMEM_UNIQUEID from this job?)",
                    secs(timeout)
                ),
            ));
        }
        match TcpStream::connect_timeout(&id.addr, left) {
            Ok(s) => break s,
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
            Err(e) => return Err(io_err(&step, e)),
        }
    };
    let mut peer = Peer::new(stream, "rank 0".into());
    let hello = encode_hello(&id.secret, Hello { rank: rank as u32, size: size as u32 });
    peer.send(&hello, deadline).map_err(|e| io_err(&step, closed_hint(e)))?;
    let step = format!("rank {rank}: wait for rank 0 to admit every rank");
    match peer.recv(deadline + LEAF_GRACE, |buf| {
        Ok(decode_welcome(buf)?.map(|(w, used)| {
            buf.drain(..used);
            w
        }))
    }) {
        RecvResult::Got(w) if w.status == 0 => Ok(peer),
        RecvResult::Got(w) => Err(proto_err(&step, format!("rank 0 refused to start the job: {}", w.message))),
        RecvResult::Bad(e) => Err(proto_err(&step, format!("bad answer from rank 0: {e}"))),
        RecvResult::Closed => Err(proto_err(
            &step,
            "rank 0 closed the connection (a wrong job secret? is OXSHMEM_UNIQUEID from this \
             job? See rank 0's log)",
        )),
        RecvResult::TimedOut => Err(proto_err(
            &step,
            format!("timed out after {} (OXSHMEM_TIMEOUT): some rank never joined", secs(timeout)),
        )),
        RecvResult::Io(e) => Err(io_err(&step, e)),
    }
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
        let code = if code == 0 { 1 } else { code };
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
        self.collective(Op::Finalize, 0, &[], |_| Vec::new()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    fn local_id() -> UniqueId {
        // A fresh port: bind, read, release (rank 0 binds it again).
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        UniqueId::new(addr).unwrap()
    }

    /// Run `f(rank)` for every rank of a job of `size` in threads; results by rank.
    fn job<T: Send + 'static>(
        id: &UniqueId,
        size: usize,
        timeout: Duration,
        f: impl Fn(Uid) -> T + Send + Sync + 'static,
    ) -> Vec<Result<T>> {
        let f = std::sync::Arc::new(f);
        let hs: Vec<_> = (0..size)
            .map(|r| {
                let (id, f) = (id.clone(), f.clone());
                thread::spawn(move || Uid::init_with_timeout(&id, r, size, timeout).map(|u| f(u)))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn id_roundtrip_and_errors() {
        let id = local_id();
        let back: UniqueId = id.to_string().parse().unwrap();
        assert_eq!(back, id);
        assert!(!format!("{id:?}").contains(&hex_encode(id.secret())));
        let v6 = UniqueId::with_secret("[::1]:5000".parse().unwrap(), [0xab; 16]);
        assert_eq!(v6.to_string(), format!("oxs1:[::1]:5000:{}", "ab".repeat(16)));
        assert_eq!(v6.to_string().parse::<UniqueId>().unwrap(), v6);
        for bad in [
            "",
            "oxs1",
            "oxs2:127.0.0.1:5:000102030405060708090a0b0c0d0e0f",
            "oxs1:127.0.0.1:000102030405060708090a0b0c0d0e0f",
            "oxs1:127.0.0.1:0:000102030405060708090a0b0c0d0e0f",
            "oxs1:host:5:000102030405060708090a0b0c0d0e0f",
            "oxs1:127.0.0.1:5:000102030405060708090a0b0c0d0e",
            "oxs1:127.0.0.1:5:000102030405060708090a0b0c0d0e0fff",
            "oxs1:127.0.0.1:5:zz0102030405060708090a0b0c0d0e0f",
        ] {
            let e = bad.parse::<UniqueId>().unwrap_err().to_string();
            assert!(e.contains("OXSHMEM_UNIQUEID"), "{bad}: {e}");
        }
    }

    #[test]
    fn collectives_in_threads() {
        let id = local_id();
        let res = job(&id, 4, Duration::from_secs(30), |u| {
            let r = u.rank();
            for round in 0..3usize {
                let mine: Vec<u8> = (0..r * 1000 + round).map(|i| (i + r) as u8).collect();
                let all = u.allgather(&mine).unwrap();
                for (q, b) in all.iter().enumerate() {
                    assert_eq!(b.len(), q * 1000 + round);
                }
            }
            u.barrier().unwrap();
            let got = u.broadcast(2, (r == 2).then_some(&b"from two"[..])).unwrap();
            assert_eq!(got, b"from two");
            assert_eq!(u.broadcast(0, Some(b"zero")).unwrap(), b"zero");
            assert!(u.broadcast(4, None).is_err());
            u.finalize().unwrap();
            assert!(matches!(u.barrier(), Err(BootstrapError::Invalid(_))));
            r
        });
        let ranks: Vec<usize> = res.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(ranks, [0, 1, 2, 3]);
    }

    #[test]
    fn created_id_is_used_by_rank_zero() {
        // create_unique_id binds now; rank 0's init takes that very socket.
        let id = create_unique_id().unwrap();
        assert_ne!(id.addr().port(), 0);
        let res = job(&id, 3, Duration::from_secs(30), |u| u.allgather(&[u.rank() as u8]).unwrap());
        for r in res {
            assert_eq!(r.unwrap(), [[0], [1], [2]]);
        }
        assert!(LISTENERS.lock().unwrap().iter().all(|(l, _)| *l != id));
    }

    #[test]
    fn single_rank_job() {
        let id = local_id();
        let u = Uid::init_with_timeout(&id, 0, 1, Duration::from_secs(5)).unwrap();
        assert_eq!(u.allgather(b"x").unwrap(), vec![b"x".to_vec()]);
        u.barrier().unwrap();
        u.finalize().unwrap();
    }

    #[test]
    fn strays_are_refused_and_the_job_completes() {
        let id = local_id();
        let addr = id.addr();
        let t = Duration::from_secs(30);
        let spawn = |r: usize| {
            let id = id.clone();
            thread::spawn(move || {
                let u = Uid::init_with_timeout(&id, r, 3, t)?;
                let all = u.allgather(&[r as u8])?;
                u.finalize()?;
                Ok::<_, BootstrapError>(all)
            })
        };
        let (r0, r2) = (spawn(0), spawn(2));
        let connect = || loop {
            match TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(_) => thread::sleep(Duration::from_millis(5)),
            }
        };
        // A silent connection, kept open while the job starts.
        let mut silent = connect();
        // Garbage and a wrong secret: each is closed without a welcome.
        let wrong = UniqueId::with_secret(addr, [0; 16]);
        for payload in
            [b"GET / HTTP/1.0\r\n\r\n".to_vec(), encode_hello(wrong.secret(), Hello { rank: 1, size: 3 }).to_vec()]
        {
            let mut s = connect();
            s.write_all(&payload).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut b = Vec::new();
            let got = s.read_to_end(&mut b).map(|_| b.len());
            assert!(matches!(got, Ok(0) | Err(_)), "{got:?}");
        }
        // Only now the last real rank: the listener was open for the strays.
        let r1 = spawn(1);
        for h in [r0, r1, r2] {
            assert_eq!(h.join().unwrap().unwrap(), vec![vec![0], vec![1], vec![2]]);
        }
        silent.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut b = Vec::new();
        assert!(matches!(silent.read_to_end(&mut b), Ok(0) | Err(_)));
    }

    #[test]
    fn missing_rank_times_out_with_its_name() {
        let id = local_id();
        let t = Duration::from_millis(500);
        let hs: Vec<_> = [0usize, 1, 3]
            .into_iter()
            .map(|r| {
                let id = id.clone();
                thread::spawn(move || Uid::init_with_timeout(&id, r, 4, t).map(|_| ()))
            })
            .collect();
        let errs: Vec<String> = hs.into_iter().map(|h| h.join().unwrap().unwrap_err().to_string()).collect();
        assert!(errs[0].contains("waiting for rank 2 to connect") && errs[0].contains("3 of 4"), "{}", errs[0]);
        for e in &errs[1..] {
            assert!(e.contains("rank 0 refused to start the job") && e.contains("rank 2"), "{e}");
        }
    }

    #[test]
    fn no_rank_zero_times_out() {
        let id = local_id();
        let e = Uid::init_with_timeout(&id, 1, 2, Duration::from_millis(300)).unwrap_err().to_string();
        assert!(e.contains("rank 1: connect to rank 0") && e.contains("timed out"), "{e}");
    }

    #[test]
    fn size_mismatch_and_duplicate_rank_fail_fast() {
        let id = local_id();
        let t = Duration::from_secs(20);
        let start = Instant::now();
        let a = {
            let id = id.clone();
            thread::spawn(move || Uid::init_with_timeout(&id, 0, 3, t).map(|_| ()))
        };
        let b = {
            let id = id.clone();
            thread::spawn(move || Uid::init_with_timeout(&id, 1, 4, t).map(|_| ()))
        };
        let ea = a.join().unwrap().unwrap_err().to_string();
        let eb = b.join().unwrap().unwrap_err().to_string();
        assert!(ea.contains("rank 0 says 3"), "{ea}");
        assert!(eb.contains("refused to start") && eb.contains("has 4 ranks"), "{eb}");
        assert!(start.elapsed() < Duration::from_secs(10));

        let id = local_id();
        let hs: Vec<_> = [0usize, 1, 1]
            .into_iter()
            .map(|r| {
                let id = id.clone();
                thread::spawn(move || Uid::init_with_timeout(&id, r, 3, t).map(|_| ()))
            })
            .collect();
        let errs: Vec<String> = hs.into_iter().map(|h| h.join().unwrap().unwrap_err().to_string()).collect();
        assert!(errs[0].contains("two processes claim rank 1"), "{}", errs[0]);
    }

    #[test]
    fn peer_leaving_mid_job_is_named() {
        let id = local_id();
        let res = job(&id, 3, Duration::from_secs(20), |u| {
            u.barrier().unwrap();
            if u.rank() == 2 {
                drop(u);
                return String::new();
            }
            u.barrier().unwrap_err().to_string()
        });
        let e0 = res[0].as_ref().unwrap();
        assert!(e0.contains("barrier #2") && e0.contains("rank 2") && e0.contains("closed"), "{e0}");
        let e1 = res[1].as_ref().unwrap();
        assert!(e1.contains("the job failed") && e1.contains("rank 2"), "{e1}");
    }

    #[test]
    fn mismatched_collectives_are_named() {
        let id = local_id();
        let res = job(&id, 2, Duration::from_secs(20), |u| {
            let r = if u.rank() == 0 { u.barrier().map(|_| ()) } else { u.allgather(b"x").map(|_| ()) };
            r.unwrap_err().to_string()
        });
        let e0 = res[0].as_ref().unwrap();
        assert!(e0.contains("different order"), "{e0}");
    }

    #[test]
    fn collective_timeout_names_the_late_rank() {
        let id = local_id();
        let res = job(&id, 3, Duration::from_millis(400), |u| {
            if u.rank() == 1 {
                thread::sleep(Duration::from_millis(1500));
                return String::new();
            }
            u.barrier().unwrap_err().to_string()
        });
        let e0 = res[0].as_ref().unwrap();
        assert!(e0.contains("barrier #1") && e0.contains("waiting for rank 1") && e0.contains("timed out"), "{e0}");
    }

    #[test]
    fn decoders_reject_garbage() {
        let s = [3u8; 16];
        assert!(matches!(decode_hello(b"X", &s, 2), Err(HandshakeError::BadMagic(_))));
        let mut h = encode_hello(&s, Hello { rank: 5, size: 2 }).to_vec();
        assert_eq!(decode_hello(&h, &s, 2), Err(HandshakeError::BadRank { rank: 5, size: 2 }));
        h.push(0);
        assert_eq!(decode_hello(&h, &s, 2), Err(HandshakeError::TooLong { got: 33 }));
        let w = encode_welcome(&Welcome { status: 1, message: "no".into() });
        assert_eq!(decode_welcome(&w[..17]), Ok(None));
        assert_eq!(decode_welcome(&w).unwrap().unwrap().0.message, "no");
        let mut big = w.clone();
        big[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_welcome(&big).is_err());
        let f = encode_frame(&Frame { op: Op::Broadcast, seq: 9, arg: 2, payload: b"abc".to_vec() });
        assert_eq!(decode_frame(&f[..5]), Ok(None));
        assert_eq!(decode_frame(&f).unwrap().unwrap().1, f.len());
        assert_eq!(decode_frame(b"F\x09"), Err(HandshakeError::BadOp(9)));
        assert!(decode_frame(b"G").is_err());
        let mut huge = f.clone();
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_frame(&huge).is_err());
        let g = encode_gathered(&[b"a".to_vec(), vec![], b"xyz".to_vec()]);
        assert_eq!(decode_gathered(&g, 3).unwrap()[2], b"xyz");
        assert!(decode_gathered(&g, 2).is_err());
        assert!(decode_gathered(&g[..g.len() - 1], 3).is_err());
        let mut extra = g.clone();
        extra.push(0);
        assert!(decode_gathered(&extra, 3).is_err());
        assert!(decode_gathered(&[], 0).is_err());
    }
}
