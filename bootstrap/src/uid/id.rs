//! The unique id: where rank 0 listens and the job's key, in a printable form (for
//! `OXSHMEM_UNIQUEID`) and a binary one (for the `internal` bytes of NVSHMEM's
//! `nvshmemx_uniqueid_t`); and [`create_unique_id`], which binds rank 0's socket up front.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6, TcpListener};
use std::str::FromStr;

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use super::net::io_err;
use crate::sock::env_err;
use crate::wire::{hex_decode, hex_encode};
use crate::{BootstrapError, Result};

/// The prefix of a printed [`UniqueId`]; a new format gets a new prefix.
pub const ID_PREFIX: &str = "oxs2";
/// Length of the job key in bytes (256 bits). It never crosses the wire: the handshake
/// proves that each side holds it.
pub const SECRET_LEN: usize = 32;
/// Length of the binary form ([`UniqueId::to_bytes`]): the `internal` member of NVSHMEM's
/// 128-byte `nvshmemx_uniqueid_t` (`{ int version; char internal[124]; }`).
pub const ID_BYTES: usize = 124;
/// The first bytes of the binary form.
pub const ID_MAGIC: &[u8; 4] = b"OXSU";
/// The format version of the binary form (the `2` of [`ID_PREFIX`]).
pub const ID_VERSION: u8 = 2;

// Offsets in the binary form.
const AT_VERSION: usize = 4;
const AT_FAMILY: usize = 5;
const AT_PORT: usize = 6;
const AT_IP: usize = 8;
const AT_SCOPE: usize = 24;
const AT_KEY: usize = 28;
const AT_RESERVED: usize = AT_KEY + SECRET_LEN;
const AT_CHECKSUM: usize = ID_BYTES - 4;

/// Where rank 0 listens and the job's key. `Display` gives the printable form that
/// [`UniqueId::from_str`] reads back; [`UniqueId::to_bytes`] the binary one that
/// [`UniqueId::from_bytes`] reads back; `Debug` hides the key.
///
/// ```
/// use oxshmem_bootstrap::uid::UniqueId;
/// let text = format!("oxs2:127.0.0.1:43211:{}", "0f".repeat(32));
/// let id: UniqueId = text.parse().unwrap();
/// assert_eq!(id.addr().port(), 43211);
/// assert_eq!(id.to_string(), text);
/// assert_eq!(UniqueId::from_bytes(&id.to_bytes()).unwrap(), id);
/// assert!("oxs2:127.0.0.1:43211:00".parse::<UniqueId>().is_err());
/// assert!(UniqueId::from_bytes(&[0; 124]).unwrap_err().to_string().contains("all zero"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct UniqueId {
    addr: SocketAddr,
    secret: [u8; SECRET_LEN],
}

impl UniqueId {
    /// An id for `addr` with a fresh random key. Nothing listens yet: rank 0's
    /// [`Uid::init`](super::Uid::init) binds `addr` (use [`create_unique_id`] to bind first and
    /// pick a port).
    pub fn new(addr: SocketAddr) -> Result<Self> {
        Ok(Self::with_secret(addr, random_bytes("create a job key")?))
    }

    /// An id with a given key (tests, or a key agreed some other way). An IPv6 flow label
    /// is dropped: neither form of the id carries it.
    pub fn with_secret(addr: SocketAddr, secret: [u8; SECRET_LEN]) -> Self {
        let addr = match addr {
            SocketAddr::V6(a) => SocketAddr::V6(SocketAddrV6::new(*a.ip(), a.port(), 0, a.scope_id())),
            v4 => v4,
        };
        UniqueId { addr, secret }
    }

    /// The address rank 0 listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The job key.
    pub fn secret(&self) -> &[u8; SECRET_LEN] {
        &self.secret
    }

    /// The binary form, for the `internal` bytes of an `nvshmemx_uniqueid_t` (all integers
    /// little-endian):
    ///
    /// | bytes | what |
    /// | --- | --- |
    /// | 0..4 | `"OXSU"` |
    /// | 4 | format version, 2 |
    /// | 5 | address family: 4 or 6 |
    /// | 6..8 | port `u16` |
    /// | 8..24 | IP address: IPv4 in 8..12 (the rest zero), IPv6 in all 16 |
    /// | 24..28 | IPv6 scope id `u32` (0 for IPv4) |
    /// | 28..60 | the 32-byte key |
    /// | 60..120 | reserved, zero |
    /// | 120..124 | checksum: the first 4 bytes of SHA-256 of bytes 0..120 |
    pub fn to_bytes(&self) -> [u8; ID_BYTES] {
        let mut b = [0u8; ID_BYTES];
        b[..4].copy_from_slice(ID_MAGIC);
        b[AT_VERSION] = ID_VERSION;
        b[AT_PORT..AT_PORT + 2].copy_from_slice(&self.addr.port().to_le_bytes());
        match self.addr {
            SocketAddr::V4(a) => {
                b[AT_FAMILY] = 4;
                b[AT_IP..AT_IP + 4].copy_from_slice(&a.ip().octets());
            }
            SocketAddr::V6(a) => {
                b[AT_FAMILY] = 6;
                b[AT_IP..AT_IP + 16].copy_from_slice(&a.ip().octets());
                b[AT_SCOPE..AT_SCOPE + 4].copy_from_slice(&a.scope_id().to_le_bytes());
            }
        }
        b[AT_KEY..AT_KEY + SECRET_LEN].copy_from_slice(&self.secret);
        let sum = checksum(&b[..AT_CHECKSUM]);
        b[AT_CHECKSUM..].copy_from_slice(&sum);
        b
    }

    /// Read the binary form back (exactly [`ID_BYTES`] bytes). A cut, zeroed, corrupted or
    /// foreign id is an [`IdError`] that says which.
    pub fn from_bytes(b: &[u8]) -> Result<Self, IdError> {
        if b.len() != ID_BYTES {
            return Err(IdError::Length(b.len()));
        }
        if b.iter().all(|&x| x == 0) {
            return Err(IdError::AllZero);
        }
        if &b[..4] != ID_MAGIC {
            return Err(IdError::NotAnId);
        }
        if b[AT_VERSION] != ID_VERSION {
            return Err(IdError::Version(b[AT_VERSION]));
        }
        if b[AT_CHECKSUM..] != checksum(&b[..AT_CHECKSUM]) {
            return Err(IdError::Checksum);
        }
        // The checksum holds: what is still wrong was written that way.
        let port = u16::from_le_bytes([b[AT_PORT], b[AT_PORT + 1]]);
        let ip = &b[AT_IP..AT_IP + 16];
        let scope = u32::from_le_bytes(b[AT_SCOPE..AT_SCOPE + 4].try_into().unwrap_or_default());
        let addr = match b[AT_FAMILY] {
            4 if ip[4..].iter().all(|&x| x == 0) && scope == 0 => {
                SocketAddr::new(IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])), port)
            }
            4 => return Err(IdError::Field("bytes after the IPv4 address are not zero")),
            6 => {
                let octets: [u8; 16] = ip.try_into().unwrap_or_default();
                SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(octets), port, 0, scope))
            }
            _ => return Err(IdError::Field("the address family is neither 4 nor 6")),
        };
        if port == 0 {
            return Err(IdError::Field("port 0"));
        }
        if b[AT_RESERVED..AT_CHECKSUM].iter().any(|&x| x != 0) {
            return Err(IdError::Field("reserved bytes are not zero"));
        }
        let mut secret = [0u8; SECRET_LEN];
        secret.copy_from_slice(&b[AT_KEY..AT_KEY + SECRET_LEN]);
        Ok(UniqueId { addr, secret })
    }
}

fn checksum(b: &[u8]) -> [u8; 4] {
    let d = Sha256::digest(b);
    [d[0], d[1], d[2], d[3]]
}

/// Why bytes are not a [`UniqueId`] ([`UniqueId::from_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Not [`ID_BYTES`] long.
    #[error("the unique id is not valid: {0} bytes where an id has {ID_BYTES} (cut short or padded on its way?)")]
    Length(usize),
    /// Every byte is zero: an id that was never filled in.
    #[error(
        "the unique id is not valid: all zero (was nvshmemx_get_uniqueid called on rank 0 and the id passed to \
         this rank?)"
    )]
    AllZero,
    /// The first bytes are not [`ID_MAGIC`].
    #[error("the unique id is not valid: it does not start with \"OXSU\" (not an id made by oxshmem's rank 0)")]
    NotAnId,
    /// Another format version.
    #[error(
        "the unique id is not valid: format version {0}, this oxshmem reads version {ID_VERSION} (every rank must \
         run the same oxshmem)"
    )]
    Version(u8),
    /// The checksum does not match the bytes.
    #[error("the unique id is not valid: checksum mismatch (the id was changed or cut on its way to this rank)")]
    Checksum,
    /// A field holds a value no id has.
    #[error("the unique id is not valid: {0}")]
    Field(&'static str),
}

impl From<IdError> for BootstrapError {
    fn from(e: IdError) -> Self {
        BootstrapError::Invalid(format!("uid: {e}"))
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

    /// Parse `oxs2:<ipv4>:<port>:<hex>` or `oxs2:[<ipv6>]:<port>:<hex>`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| {
            env_err("OXSHMEM_UNIQUEID", format!("{why}: expected {ID_PREFIX}:<address>:<port>:<64 hex digits>"))
        };
        let s = s.trim();
        if s.starts_with("oxs1:") {
            return Err(bad(
                "an \"oxs1:\" id comes from an older oxshmem (every rank, rank 0 included, must run the same \
                 oxshmem)",
            ));
        }
        let rest = s
            .strip_prefix(ID_PREFIX)
            .and_then(|r| r.strip_prefix(':'))
            .ok_or_else(|| bad(&format!("does not start with \"{ID_PREFIX}:\"")))?;
        let (addr, hex) = rest.rsplit_once(':').ok_or_else(|| bad("no key after the address"))?;
        let addr: SocketAddr = addr.parse().map_err(|_| bad(&format!("{addr:?} is not an address:port")))?;
        if addr.port() == 0 {
            return Err(bad("port 0"));
        }
        let secret: [u8; SECRET_LEN] =
            hex_decode(hex).ok().and_then(|v| v.try_into().ok()).ok_or_else(|| bad("the key is not 64 hex digits"))?;
        Ok(UniqueId::with_secret(addr, secret))
    }
}

/// `N` bytes from the kernel's random source (`getrandom(2)`: no descriptor, so a process
/// out of descriptors still gets them); `what` names the use in an error.
pub(super) fn random_bytes<const N: usize>(what: &str) -> Result<[u8; N]> {
    let mut s = [0u8; N];
    let mut got = 0;
    while got < N {
        // SAFETY: the pointer and length describe the unfilled rest of `s`.
        let n = unsafe { libc::getrandom(s[got..].as_mut_ptr().cast(), N - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(io_err(&format!("{what} from getrandom"), e));
        }
        got += n as usize;
    }
    Ok(s)
}

/// Listeners made by [`create_unique_id`] in this process, waiting for rank 0's
/// [`Uid::init`](super::Uid::init) to take them.
static LISTENERS: Mutex<Vec<(UniqueId, TcpListener)>> = Mutex::new(Vec::new());

/// The listeners of ids this process made and then replaced with a newer one, unused: each
/// connection to them gets [`STALE_MAGIC`] and is closed at once, so that a rank handed a stale
/// id fails at once saying so, instead of waiting for a handshake that never comes. Closed at
/// finalize ([`close_unused`]).
static STALE: Mutex<Vec<(UniqueId, TcpListener)>> = Mutex::new(Vec::new());
/// Whether the thread that answers on [`STALE`]'s listeners runs.
static STALE_THREAD: AtomicBool = AtomicBool::new(false);

/// What a listener of a replaced id sends on every connection before it closes it.
pub const STALE_MAGIC: &[u8; 8] = b"OXSUIDs2";

/// Moves every unused listener of this process to [`STALE`] (a newer id replaces them), and
/// starts the thread that answers there if need be.
fn retire_unused() {
    let old: Vec<(UniqueId, TcpListener)> = LISTENERS.lock().drain(..).collect();
    if old.is_empty() {
        return;
    }
    for (id, l) in &old {
        let _ = l.set_nonblocking(true);
        tracing::debug!(target: "boot", "uid: the id at {} is replaced by a newer one: its connections are told so", id.addr());
    }
    STALE.lock().extend(old);
    if !STALE_THREAD.swap(true, Ordering::AcqRel) {
        let spawned = std::thread::Builder::new().name("oxshmem-uid-stale".into()).spawn(answer_stale);
        if spawned.is_err() {
            // No thread: the replaced listeners are closed instead (connections are refused).
            STALE.lock().clear();
            STALE_THREAD.store(false, Ordering::Release);
        }
    }
}

/// The stale listeners' thread: accepts every connection, sends [`STALE_MAGIC`] and closes it,
/// until no stale listener is left.
fn answer_stale() {
    loop {
        {
            let stale = STALE.lock();
            if stale.is_empty() {
                STALE_THREAD.store(false, Ordering::Release);
                return;
            }
            let fds: Vec<std::os::fd::RawFd> = stale.iter().map(|(_, l)| l.as_raw_fd()).collect();
            // Briefly, with the lock held, so that no listener closes under the poll.
            let ready = super::net::poll_readable(&fds, std::time::Duration::from_millis(50)).unwrap_or_default();
            for ((_, l), _) in stale.iter().zip(ready).filter(|(_, r)| *r) {
                while let Ok((mut c, _)) = l.accept() {
                    let _ = c.set_nonblocking(true);
                    let _ = std::io::Write::write(&mut c, STALE_MAGIC);
                }
            }
        }
        std::thread::yield_now();
    }
}

/// Closes every listener of this process that no [`Uid::init`](super::Uid::init) took: the
/// unused ids (a rank handed one then finds nothing listening) and the replaced ones. Called
/// at finalize.
pub fn close_unused() {
    let n = LISTENERS.lock().drain(..).count() + STALE.lock().drain(..).count();
    if n > 0 {
        tracing::debug!(target: "boot", "uid: closed {n} unused unique-id listeners");
    }
}

/// Whether `id` is one this process replaced with a newer one.
fn is_stale(id: &UniqueId) -> bool {
    STALE.lock().iter().any(|(s, _)| s == id)
}

/// Rank 0, before the others start: bind a listening socket now and return its id (the
/// `nvshmemx_get_uniqueid` step). The address is `OXSHMEM_UID_ADDR` (an IP, or IP:port) when
/// set, else this host's address on its default route, else 127.0.0.1; the port is picked by
/// the kernel unless given. Rank 0's later [`Uid::init`](super::Uid::init) with this id uses
/// this very socket, so no other process can take the port in between.
///
/// A new id replaces the ids this process made before and did not use: their sockets stop
/// waiting for rank 0 and answer every connection with "stale id" (a rank handed one fails at
/// once, saying so) until finalize closes them ([`close_unused`]).
pub fn create_unique_id() -> Result<UniqueId> {
    retire_unused();
    let addr = match std::env::var("OXSHMEM_UID_ADDR") {
        Ok(v) => parse_bind_addr(&v)
            .ok_or_else(|| env_err("OXSHMEM_UID_ADDR", format!("{v:?} is not an IP address or address:port")))?,
        Err(_) => SocketAddr::new(default_ip(), 0),
    };
    let listener = TcpListener::bind(addr).map_err(|e| io_err(&format!("listen on {addr}"), e))?;
    let bound = listener.local_addr().map_err(|e| io_err("listen: local address", e))?;
    let id = UniqueId::new(bound)?;
    LISTENERS.lock().push((id.clone(), listener));
    Ok(id)
}

/// Rank 0: the socket [`create_unique_id`] bound for `id`, else a new one bound to its address.
pub(super) fn take_listener(id: &UniqueId) -> Result<TcpListener> {
    let mut ls = LISTENERS.lock();
    if let Some(i) = ls.iter().position(|(l, _)| l == id) {
        return Ok(ls.swap_remove(i).1);
    }
    drop(ls);
    if is_stale(id) {
        return Err(BootstrapError::Invalid(format!(
            "uid: the unique id at {} is stale: this process made a newer one since (use the id made last)",
            id.addr
        )));
    }
    TcpListener::bind(id.addr).map_err(|e| io_err(&format!("rank 0: listen on {}", id.addr), e))
}

/// Whether a listener made by [`create_unique_id`] for `id` still waits for rank 0.
#[cfg(test)]
pub(super) fn has_listener(id: &UniqueId) -> bool {
    LISTENERS.lock().iter().any(|(l, _)| l == id)
}

fn parse_bind_addr(v: &str) -> Option<SocketAddr> {
    let v = v.trim();
    v.parse::<SocketAddr>().ok().or_else(|| v.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 0)))
}

/// The address other hosts can reach: the source address of the default route (asking the
/// kernel by "connecting" a UDP socket, which sends nothing), else loopback.
fn default_ip() -> IpAddr {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id4() -> UniqueId {
        let key: [u8; SECRET_LEN] = std::array::from_fn(|i| i as u8);
        UniqueId::with_secret("127.0.0.1:43211".parse().unwrap(), key)
    }

    #[test]
    fn text_roundtrip_and_errors() {
        let id = UniqueId::new("127.0.0.1:5000".parse().unwrap()).unwrap();
        let back: UniqueId = id.to_string().parse().unwrap();
        assert_eq!(back, id);
        assert!(!format!("{id:?}").contains(&hex_encode(id.secret())));
        let v6 = UniqueId::with_secret("[::1]:5000".parse().unwrap(), [0xab; SECRET_LEN]);
        assert_eq!(v6.to_string(), format!("oxs2:[::1]:5000:{}", "ab".repeat(32)));
        assert_eq!(v6.to_string().parse::<UniqueId>().unwrap(), v6);
        let scoped = UniqueId::with_secret("[fe80::1%3]:5000".parse().unwrap(), [1; SECRET_LEN]);
        assert_eq!(scoped.to_string().parse::<UniqueId>().unwrap(), scoped);
        let k = "0f".repeat(32);
        for bad in [
            String::new(),
            "oxs2".into(),
            format!("oxs3:127.0.0.1:5:{k}"),
            format!("oxs2:127.0.0.1:{k}"),
            format!("oxs2:127.0.0.1:0:{k}"),
            format!("oxs2:host:5:{k}"),
            format!("oxs2:127.0.0.1:5:{}", &k[2..]),
            format!("oxs2:127.0.0.1:5:{k}ff"),
            format!("oxs2:127.0.0.1:5:zz{}", &k[2..]),
            // A 128-bit key of the old format.
            format!("oxs2:127.0.0.1:5:{}", "0f".repeat(16)),
        ] {
            let e = bad.parse::<UniqueId>().unwrap_err().to_string();
            assert!(e.contains("OXSHMEM_UNIQUEID"), "{bad}: {e}");
        }
        let old = "oxs1:127.0.0.1:43211:000102030405060708090a0b0c0d0e0f".parse::<UniqueId>().unwrap_err();
        assert!(old.to_string().contains("older oxshmem"), "{old}");
    }

    #[test]
    fn binary_layout() {
        let id = id4();
        let b = id.to_bytes();
        assert_eq!(&b[..4], b"OXSU");
        assert_eq!(b[4], 2);
        assert_eq!(b[5], 4);
        assert_eq!(&b[6..8], &43211u16.to_le_bytes());
        assert_eq!(&b[8..12], &[127, 0, 0, 1]);
        assert!(b[12..28].iter().all(|&x| x == 0));
        assert_eq!(&b[28..60], id.secret());
        assert!(b[60..120].iter().all(|&x| x == 0));
        assert_eq!(UniqueId::from_bytes(&b).unwrap(), id);

        let v6 = UniqueId::with_secret("[fe80::1:2%7]:65535".parse().unwrap(), [0xee; SECRET_LEN]);
        let b6 = v6.to_bytes();
        assert_eq!(b6[5], 6);
        assert_eq!(&b6[24..28], &7u32.to_le_bytes());
        assert_eq!(UniqueId::from_bytes(&b6).unwrap(), v6);
    }

    #[test]
    fn binary_errors_say_what_is_wrong() {
        let b = id4().to_bytes();
        let err = |bytes: &[u8]| UniqueId::from_bytes(bytes).unwrap_err();
        assert_eq!(err(&[0; ID_BYTES]), IdError::AllZero);
        assert!(err(&[0; ID_BYTES]).to_string().contains("all zero (was nvshmemx_get_uniqueid called on rank 0"));
        assert_eq!(err(&[]), IdError::Length(0));
        assert_eq!(err(&b[..100]), IdError::Length(100));
        let mut long = b.to_vec();
        long.extend_from_slice(&[0; 4]);
        assert_eq!(err(&long), IdError::Length(128));
        // Every single flipped bit is caught, and none panics.
        for i in 0..ID_BYTES {
            for bit in 0..8 {
                let mut c = b;
                c[i] ^= 1 << bit;
                let e = err(&c);
                match i {
                    0..4 => assert_eq!(e, IdError::NotAnId),
                    4 => assert!(matches!(e, IdError::Version(_))),
                    _ => assert_eq!(e, IdError::Checksum, "byte {i} bit {bit}"),
                }
            }
        }
        assert!(
            err(&{
                let mut c = b;
                c[50] ^= 1;
                c
            })
            .to_string()
            .contains("checksum mismatch")
        );
        // Bad fields under a good checksum: written wrong, not damaged on the way.
        let reseal = |mut c: [u8; ID_BYTES]| {
            let sum = checksum(&c[..AT_CHECKSUM]);
            c[AT_CHECKSUM..].copy_from_slice(&sum);
            c
        };
        for (at, val, want) in [
            (AT_FAMILY, 5u8, "family"),
            (AT_PORT, 0, "port 0"),
            (AT_IP + 5, 1, "after the IPv4"),
            (AT_RESERVED + 3, 1, "reserved"),
        ] {
            let mut c = b;
            c[at] = val;
            if at == AT_PORT {
                c[AT_PORT + 1] = 0;
            }
            let e = err(&reseal(c)).to_string();
            assert!(e.contains(want), "{e}");
        }
        // Into the crate's error, for callers that return one.
        let be: BootstrapError = IdError::Checksum.into();
        assert!(be.to_string().contains("uid: the unique id is not valid"));
    }
}
