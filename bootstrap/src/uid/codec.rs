//! The bytes on the wire, as pure functions: the handshake messages, the welcome, the frames
//! of the collectives and the allgather reply. Every decoder returns a [`HandshakeError`] for
//! bad input and never panics, whatever the bytes; none of them checks a MAC (the handshake
//! module does).

/// Length of a handshake nonce.
pub const NONCE_LEN: usize = 32;
/// Length of a handshake MAC (HMAC-SHA256).
pub const MAC_LEN: usize = 32;
/// What rank 0 sends first on every connection: the challenge.
pub const CHALLENGE_MAGIC: &[u8; 8] = b"OXSUIDc2";
/// What a connecting rank answers: its response.
pub const RESPONSE_MAGIC: &[u8; 8] = b"OXSUIDr2";
/// What rank 0 answers a response that proves the key: its own proof.
pub const PROOF_MAGIC: &[u8; 8] = b"OXSUIDp2";
/// What rank 0 sends once every rank is connected.
pub const WELCOME_MAGIC: &[u8; 8] = b"OXSUIDw2";
/// The part of every handshake magic that does not change with the version.
const MAGIC_STEM: &[u8; 6] = b"OXSUID";
/// Length of a challenge.
pub const CHALLENGE_LEN: usize = 8 + NONCE_LEN;
/// Length of a response.
pub const RESPONSE_LEN: usize = 8 + NONCE_LEN + 4 + 4 + MAC_LEN;
/// Length of rank 0's proof.
pub const PROOF_LEN: usize = 8 + MAC_LEN;
/// Length of a frame header.
pub const FRAME_HEADER: usize = 16;
/// Largest frame payload accepted (an allgather reply holds every rank's blob).
pub const MAX_PAYLOAD: usize = 256 << 20;
/// Longest welcome message accepted.
pub(super) const MAX_WELCOME_MSG: usize = 4096;

/// Why bytes from a peer were refused. Every decoder here returns one of these for bad
/// input; none panics, whatever the bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The first bytes are not this protocol's.
    #[error("not an oxshmem uid peer (first bytes {0:02x?})")]
    BadMagic(Vec<u8>),
    /// An oxshmem uid peer, but of another protocol version (or another step of it).
    #[error(
        "an oxshmem uid peer that sent {:?} where this one expects {:?} (every rank must run the same oxshmem)",
        String::from_utf8_lossy(got),
        String::from_utf8_lossy(want)
    )]
    Version {
        /// The magic received.
        got: Vec<u8>,
        /// The magic expected.
        want: Vec<u8>,
    },
    /// More bytes arrived than the message may have.
    #[error("{got} bytes where the message has {want}")]
    TooLong {
        /// Bytes received.
        got: usize,
        /// The message's length.
        want: usize,
    },
    /// A MAC does not match: the peer does not hold this job's key.
    #[error("its proof does not match this job's unique id")]
    BadMac,
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

pub(super) fn le32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// Refuse `buf` as soon as its first bytes differ from `magic`; tell another version of
/// this protocol from a stranger.
fn check_magic(buf: &[u8], magic: &[u8; 8]) -> Result<(), HandshakeError> {
    let m = buf.len().min(magic.len());
    if buf[..m] == magic[..m] {
        return Ok(());
    }
    let stem = m.min(MAGIC_STEM.len());
    if buf[..stem] == MAGIC_STEM[..stem] && m > MAGIC_STEM.len() {
        return Err(HandshakeError::Version { got: buf[..m].to_vec(), want: magic.to_vec() });
    }
    Err(HandshakeError::BadMagic(buf[..m].to_vec()))
}

fn array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// Rank 0 → a connecting rank, first thing on every connection: `"OXSUIDc2"`, a fresh
/// 32-byte nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Challenge {
    /// Rank 0's nonce for this connection.
    pub nonce: [u8; NONCE_LEN],
}

/// The wire form of a challenge.
pub fn encode_challenge(c: &Challenge) -> [u8; CHALLENGE_LEN] {
    let mut b = [0u8; CHALLENGE_LEN];
    b[..8].copy_from_slice(CHALLENGE_MAGIC);
    b[8..].copy_from_slice(&c.nonce);
    b
}

/// Decode a challenge from the start of `buf`: `Ok(Some((challenge, bytes used)))`, or
/// `Ok(None)` while incomplete. A wrong magic is refused as soon as its first bytes arrive.
pub fn decode_challenge(buf: &[u8]) -> Result<Option<(Challenge, usize)>, HandshakeError> {
    check_magic(buf, CHALLENGE_MAGIC)?;
    if buf.len() < CHALLENGE_LEN {
        return Ok(None);
    }
    Ok(Some((Challenge { nonce: array(&buf[8..]) }, CHALLENGE_LEN)))
}

/// A connecting rank → rank 0: `"OXSUIDr2"`, its nonce, rank `u32`, size `u32` and
/// `MAC_leaf` (80 bytes). [`respond`](super::respond) makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The rank's nonce for this connection.
    pub nonce: [u8; NONCE_LEN],
    /// Its rank.
    pub rank: u32,
    /// The job size it was given.
    pub size: u32,
    /// `MAC_leaf` over both nonces, rank and size.
    pub mac: [u8; MAC_LEN],
}

/// The wire form of a response.
pub fn encode_response(r: &Response) -> [u8; RESPONSE_LEN] {
    let mut b = [0u8; RESPONSE_LEN];
    b[..8].copy_from_slice(RESPONSE_MAGIC);
    b[8..40].copy_from_slice(&r.nonce);
    b[40..44].copy_from_slice(&r.rank.to_le_bytes());
    b[44..48].copy_from_slice(&r.size.to_le_bytes());
    b[48..80].copy_from_slice(&r.mac);
    b
}

/// Decode what a connection has sent so far as a response: `Ok(None)` while it is a valid
/// but incomplete start. A wrong magic is refused as soon as its first bytes arrive; a byte
/// past the response is an error too (a rank sends nothing more before rank 0's proof).
///
/// ```
/// use oxshmem_bootstrap::uid::{Response, decode_response, encode_response};
/// let r = Response { nonce: [1; 32], rank: 2, size: 4, mac: [9; 32] };
/// let b = encode_response(&r);
/// assert_eq!(decode_response(&b), Ok(Some(r)));
/// assert_eq!(decode_response(&b[..10]), Ok(None));
/// assert!(decode_response(b"GET / HTTP/1.1\r\n").is_err());
/// ```
pub fn decode_response(buf: &[u8]) -> Result<Option<Response>, HandshakeError> {
    check_magic(buf, RESPONSE_MAGIC)?;
    if buf.len() < RESPONSE_LEN {
        return Ok(None);
    }
    if buf.len() > RESPONSE_LEN {
        return Err(HandshakeError::TooLong { got: buf.len(), want: RESPONSE_LEN });
    }
    Ok(Some(Response {
        nonce: array(&buf[8..]),
        rank: le32(&buf[40..]),
        size: le32(&buf[44..]),
        mac: array(&buf[48..]),
    }))
}

/// Rank 0 → a rank whose response proved the key: `"OXSUIDp2"`, `MAC_root` (40 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proof {
    /// `MAC_root` over both nonces, rank and size.
    pub mac: [u8; MAC_LEN],
}

/// The wire form of rank 0's proof.
pub fn encode_proof(p: &Proof) -> [u8; PROOF_LEN] {
    let mut b = [0u8; PROOF_LEN];
    b[..8].copy_from_slice(PROOF_MAGIC);
    b[8..].copy_from_slice(&p.mac);
    b
}

/// Decode rank 0's proof from the start of `buf`: `Ok(Some((proof, bytes used)))`, or
/// `Ok(None)` while incomplete.
pub fn decode_proof(buf: &[u8]) -> Result<Option<(Proof, usize)>, HandshakeError> {
    check_magic(buf, PROOF_MAGIC)?;
    if buf.len() < PROOF_LEN {
        return Ok(None);
    }
    Ok(Some((Proof { mac: array(&buf[8..]) }, PROOF_LEN)))
}

/// Rank 0's last handshake message, once every rank is connected: status 0 and an empty
/// message admit the rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcome {
    /// 0: the job starts; anything else: it cannot, and `message` says why.
    pub status: u32,
    /// Why the job cannot start.
    pub message: String,
}

/// The wire form of a welcome: `"OXSUIDw2"`, status `u32`, message length `u32`, message.
pub fn encode_welcome(w: &Welcome) -> Vec<u8> {
    let mut n = w.message.len().min(MAX_WELCOME_MSG);
    while !w.message.is_char_boundary(n) {
        n -= 1;
    }
    let msg = &w.message.as_bytes()[..n];
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
    check_magic(buf, WELCOME_MAGIC)?;
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

    pub(super) fn name(self) -> &'static str {
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

/// The wire form of a frame: `'F'`, op `u8`, 2 zero bytes, sequence `u32`, argument `u32`,
/// payload length `u32`, payload.
pub fn encode_frame(f: &Frame) -> Vec<u8> {
    frame_bytes(f.op, f.seq, f.arg, &f.payload)
}

pub(super) fn frame_bytes(op: Op, seq: u32, arg: u32, payload: &[u8]) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_messages_roundtrip() {
        let c = Challenge { nonce: [7; NONCE_LEN] };
        let b = encode_challenge(&c);
        assert_eq!(b.len(), 40);
        assert_eq!(decode_challenge(&b), Ok(Some((c, 40))));
        let mut more = b.to_vec();
        more.extend_from_slice(PROOF_MAGIC);
        assert_eq!(decode_challenge(&more), Ok(Some((c, 40))));
        for cut in 0..b.len() {
            assert_eq!(decode_challenge(&b[..cut]), Ok(None));
        }

        let r = Response { nonce: [1; NONCE_LEN], rank: 3, size: 8, mac: [2; MAC_LEN] };
        let b = encode_response(&r);
        assert_eq!(&b[..8], b"OXSUIDr2");
        assert_eq!(&b[40..48], &[3, 0, 0, 0, 8, 0, 0, 0]);
        assert_eq!(decode_response(&b), Ok(Some(r)));
        for cut in 0..b.len() {
            assert_eq!(decode_response(&b[..cut]), Ok(None));
        }
        let mut long = b.to_vec();
        long.push(0);
        assert_eq!(decode_response(&long), Err(HandshakeError::TooLong { got: 81, want: 80 }));

        let p = Proof { mac: [5; MAC_LEN] };
        let b = encode_proof(&p);
        assert_eq!(decode_proof(&b), Ok(Some((p, 40))));
        assert_eq!(decode_proof(&b[..39]), Ok(None));
    }

    #[test]
    fn strangers_and_other_versions_are_told_apart() {
        assert!(matches!(decode_challenge(b"SSH-2.0-"), Err(HandshakeError::BadMagic(_))));
        assert!(matches!(decode_response(b"X"), Err(HandshakeError::BadMagic(_))));
        // The hello of the first protocol version, which carried the secret itself.
        let e = decode_response(b"OXSUIDh1").unwrap_err();
        assert!(matches!(e, HandshakeError::Version { .. }), "{e:?}");
        assert!(e.to_string().contains("same oxshmem"), "{e}");
        // A proof where a challenge belongs is refused too.
        assert!(decode_challenge(&encode_proof(&Proof { mac: [0; 32] })).is_err());
        assert!(decode_welcome(b"OXSUIDw1\0\0\0\0\0\0\0\0").is_err());
    }

    #[test]
    fn decoders_reject_garbage() {
        let w = encode_welcome(&Welcome { status: 1, message: "no".into() });
        assert_eq!(decode_welcome(&w[..17]), Ok(None));
        assert_eq!(decode_welcome(&w).unwrap().unwrap().0.message, "no");
        let mut big = w.clone();
        big[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_welcome(&big).is_err());
        let long = "é".repeat(MAX_WELCOME_MSG);
        let (w, _) = decode_welcome(&encode_welcome(&Welcome { status: 2, message: long })).unwrap().unwrap();
        assert!(w.message.len() <= MAX_WELCOME_MSG && !w.message.contains('\u{fffd}'));
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
