//! PMI-2 client: the wire protocol of MPICH's Hydra (which serves PMI-1 and PMI-2 on the same
//! socket) and of Slurm's `srun --mpi=pmi2`.
//!
//! The connection starts like PMI-1 — one line, `cmd=init pmi_version=2 pmi_subversion=0`,
//! answered by `cmd=response_to_init ... rc=0` — and then switches to PMI-2 messages: a
//! 6-character decimal length, then `cmd=NAME;key=value;...;` of exactly that many bytes
//! (MPICH `src/pmi/src/pmi_wire.c`, `PMIU_cmd_output_v2` and `parse_v2`; the PMI-2 API is
//! `pmi2.h`). Hydra right-justifies the length (`%6u`), Slurm left-justifies it, so the
//! field is read with its spaces trimmed. Values end at the next `;` and there is no escape,
//! so a value must not hold one. `fullinit` must carry `pmijobid=$PMI_JOBID` when the launcher
//! gave one: Slurm answers `rc=3` otherwise.
//!
//! Blobs go through the key-value space hex-encoded and cut into chunks of at most 1000
//! characters, as in [`pmi1`](crate::pmi1): launchers keep 1023 bytes of a value (`PMI2_MAX_VALLEN`
//! is 1024 with the NUL). A reply that is closed early, cut, mis-framed or unexpected is an
//! error naming the step, never a panic or a hang on our side.

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::OnceLock;

use parking_lot::{Mutex, MutexGuard};

use crate::kvs::{self, Kvs};
use crate::sock::{Sock, env_err, env_usize, quote, take_pmi_fd, write_all_fd};
use crate::wire::{self, Command, WireError};
use crate::{Bootstrap, BootstrapError, Result, mapping};

const PROTOCOL: &str = "pmi2";

/// Width of the length field that starts every PMI-2 message.
pub const LEN_FIELD: usize = 6;
/// Longest message accepted, length field excluded (MPICH's `PMII_MAX_COMMAND_LEN`).
pub const MAX_MESSAGE: usize = 64 * 1024;
/// Longest key we put, NUL included, as `pmi2.h` counts it (`PMI2_MAX_KEYLEN`).
pub const KEYLEN_MAX: usize = 64;
/// Longest value we put, NUL included (`PMI2_MAX_VALLEN`).
pub const VALLEN_MAX: usize = 1024;

/// Hex characters per chunk: with the `N:` prefix of chunk 0 (at most 21 characters) a value
/// stays under `VALLEN_MAX - 1`.
const CHUNK_CHARS: usize = 1000;

/// One PMI-2 message: the command name and its `key=value` pairs in wire order.
///
/// ```
/// use oxshmem_bootstrap::pmi2::Message;
/// let m = Message::new("kvs-put").arg("key", "k").arg("value", "v");
/// assert_eq!(m.encode().unwrap(), "    26cmd=kvs-put;key=k;value=v;");
/// // Slurm left-justifies the length field.
/// let (r, used) = Message::parse_frame(b"26    cmd=kvs-put-response;rc=0;").unwrap().unwrap();
/// assert_eq!((r.name.as_str(), r.get("rc"), used), ("kvs-put-response", Some("0"), 32));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The value of `cmd=` (e.g. `kvs-put`).
    pub name: String,
    /// The other pairs, in the order they appeared. A bare `key` (MPICH allows it) has an
    /// empty value.
    pub args: Vec<(String, String)>,
}

/// Keys as MPICH's PMI-2 parser accepts them (`IS_KEY`).
fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'/'))
}

impl Message {
    /// A message with no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Message { name: name.into(), args: Vec::new() }
    }

    /// Builder: append `key=value`.
    pub fn arg(mut self, key: impl Into<String>, value: impl std::fmt::Display) -> Self {
        self.args.push((key.into(), value.to_string()));
        self
    }

    /// The value of the first argument named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.args.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Parse a message body (what follows the length field): `cmd=NAME;key=value;...`, the
    /// last `;` optional, spaces before a key skipped.
    pub fn parse(body: &str) -> Result<Message, WireError> {
        if body.len() > MAX_MESSAGE {
            return Err(WireError::TooLong { len: body.len(), max: MAX_MESSAGE });
        }
        let mut tokens = body.split(';').map(|t| t.trim_start_matches(' ')).filter(|t| !t.is_empty());
        let first = tokens.next().ok_or(WireError::Empty)?;
        let name = match first.split_once('=') {
            Some(("cmd", v)) if valid_key(v) => v.to_string(),
            _ => return Err(WireError::MissingCmd),
        };
        let mut args = Vec::new();
        for tok in tokens {
            let (k, v) = tok.split_once('=').unwrap_or((tok, ""));
            if !valid_key(k) {
                return Err(WireError::BadKey(k.to_string()));
            }
            args.push((k.to_string(), v.to_string()));
        }
        Ok(Message { name, args })
    }

    /// Parse the first message of a byte stream: `Ok(Some((message, bytes used)))`, or
    /// `Ok(None)` when `stream` is a valid but incomplete start of one. A length field that is
    /// not a decimal number (spaces around it allowed), a length over [`MAX_MESSAGE`], a body
    /// that is not UTF-8 or does not parse is an error.
    pub fn parse_frame(stream: &[u8]) -> Result<Option<(Message, usize)>, WireError> {
        let field = &stream[..stream.len().min(LEN_FIELD)];
        if !field.iter().all(|b| *b == b' ' || b.is_ascii_digit()) {
            return Err(WireError::BadLength(String::from_utf8_lossy(field).into_owned()));
        }
        if stream.len() < LEN_FIELD {
            return Ok(None);
        }
        let bad = || WireError::BadLength(String::from_utf8_lossy(field).into_owned());
        let digits = std::str::from_utf8(field).map_err(|_| bad())?.trim_matches(' ');
        if digits.is_empty() || digits.contains(' ') {
            return Err(bad());
        }
        let len: usize = digits.parse().map_err(|_| bad())?;
        if len > MAX_MESSAGE {
            return Err(WireError::TooLong { len, max: MAX_MESSAGE });
        }
        let Some(body) = stream.get(LEN_FIELD..LEN_FIELD + len) else {
            return Ok(None);
        };
        let body = std::str::from_utf8(body).map_err(|_| WireError::NotUtf8)?;
        Ok(Some((Message::parse(body)?, LEN_FIELD + len)))
    }

    /// The wire form: the length right-justified in 6 characters, as MPICH writes it, then
    /// `cmd=NAME;key=value;...;`. Keys are checked; a value must not hold `;`, a newline or
    /// a NUL.
    pub fn encode(&self) -> Result<String, WireError> {
        if !valid_key(&self.name) {
            return Err(WireError::BadKey(self.name.clone()));
        }
        let mut body = format!("cmd={};", self.name);
        for (k, v) in &self.args {
            if !valid_key(k) {
                return Err(WireError::BadKey(k.clone()));
            }
            if v.contains(';') {
                return Err(WireError::Semicolon(k.clone()));
            }
            if v.contains(['\n', '\0']) {
                return Err(WireError::BadValue(k.clone()));
            }
            body.push_str(k);
            body.push('=');
            body.push_str(v);
            body.push(';');
        }
        if body.len() > MAX_MESSAGE {
            return Err(WireError::TooLong { len: body.len(), max: MAX_MESSAGE });
        }
        Ok(format!("{:>6}{body}", body.len()))
    }
}

impl std::fmt::Display for Message {
    /// The body without the length field, values cut at 80 characters, for messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cmd={};", self.name)?;
        for (k, v) in &self.args {
            if v.len() > 80 {
                let cut = (0..=80).rev().find(|&i| v.is_char_boundary(i)).unwrap_or(0);
                write!(f, "{k}={}...;", &v[..cut])?;
            } else {
                write!(f, "{k}={v};")?;
            }
        }
        Ok(())
    }
}

/// A PMI-2 client connection: rank, size, job id and the job's key-value space.
///
/// ```no_run
/// use oxshmem_bootstrap::{Bootstrap, pmi2::Pmi2};
/// let pmi = Pmi2::from_env()?; // inside `srun --mpi=pmi2 -n 4 prog`
/// let all = pmi.allgather(format!("hello from {}", pmi.rank()).as_bytes())?;
/// assert_eq!(all.len(), pmi.size());
/// println!("nodes: {:?}", pmi.node_mapping());
/// pmi.finalize()?;
/// # Ok::<(), oxshmem_bootstrap::BootstrapError>(())
/// ```
pub struct Pmi2 {
    rank: usize,
    size: usize,
    appnum: i64,
    jobid: String,
    conn: Mutex<Conn>,
    /// Raw descriptor of the connection, for `abort` when another thread holds the lock.
    raw_fd: RawFd,
    /// `PMI_process_mapping`, fetched on first use (`None` inside: the launcher has none).
    nodes: OnceLock<Option<Vec<usize>>>,
}

impl std::fmt::Debug for Pmi2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmi2")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("appnum", &self.appnum)
            .field("jobid", &self.jobid)
            .field("fd", &self.raw_fd)
            .finish()
    }
}

/// The socket, its read buffer, and the collective state that must move with it.
struct Conn {
    sock: Sock,
    buf: Vec<u8>,
    /// Collective counter: each allgather or broadcast uses fresh keys `oxs<epoch>.*`.
    epoch: u64,
    finalized: bool,
}

fn io_err(step: &str, source: io::Error) -> BootstrapError {
    BootstrapError::Io { protocol: PROTOCOL, step: step.to_string(), source }
}

fn proto_err(step: &str, reason: impl Into<String>) -> BootstrapError {
    BootstrapError::Protocol { protocol: PROTOCOL, step: step.to_string(), reason: reason.into() }
}

impl Conn {
    fn new(fd: OwnedFd) -> Self {
        Conn { sock: Sock::new(fd), buf: Vec::new(), epoch: 0, finalized: false }
    }

    fn write(&mut self, step: &str, data: &[u8]) -> Result<()> {
        self.sock.write_all(data).map_err(|e| {
            if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) {
                io_err(step, io::Error::new(e.kind(), "launcher closed the connection"))
            } else {
                io_err(step, e)
            }
        })
    }

    /// Read more bytes into the buffer; end of stream is an error that says whether it cut a
    /// reply.
    fn fill(&mut self, step: &str) -> Result<()> {
        let mut chunk = [0u8; 8192];
        let n = self.sock.read(&mut chunk).map_err(|e| io_err(step, e))?;
        if n == 0 {
            let msg = if self.buf.is_empty() {
                "launcher closed the connection".to_string()
            } else {
                format!(
                    "launcher closed the connection in the middle of a reply (got {})",
                    quote(&String::from_utf8_lossy(&self.buf))
                )
            };
            return Err(io_err(step, io::Error::new(io::ErrorKind::UnexpectedEof, msg)));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// The PMI-1 line that answers `cmd=init`.
    fn recv_line(&mut self, step: &str) -> Result<Command> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let line = String::from_utf8_lossy(&line).into_owned();
                return Command::parse(&line)
                    .map_err(|e| proto_err(step, format!("malformed reply {}: {e}", quote(line.trim_end()))));
            }
            if self.buf.len() > wire::MAX_LINE {
                return Err(proto_err(step, "reply line too long"));
            }
            self.fill(step)?;
        }
    }

    /// Read one PMI-2 message.
    fn recv(&mut self, step: &str) -> Result<Message> {
        loop {
            match Message::parse_frame(&self.buf) {
                Ok(Some((msg, used))) => {
                    self.buf.drain(..used);
                    return Ok(msg);
                }
                Ok(None) => self.fill(step)?,
                Err(e) => {
                    return Err(proto_err(
                        step,
                        format!("malformed reply {}: {e}", quote(&String::from_utf8_lossy(&self.buf))),
                    ));
                }
            }
        }
    }

    /// Send `msg`, read one reply and check that it is `cmd=<expect>` with `rc` absent or 0.
    fn call(&mut self, step: &str, msg: &Message, expect: &str) -> Result<Message> {
        let wire = msg.encode().map_err(|e| proto_err(step, format!("cannot encode request: {e}")))?;
        self.write(step, wire.as_bytes())?;
        let reply = self.recv(step)?;
        if reply.name != expect {
            return Err(proto_err(step, format!("expected cmd={expect}, got {}", quote(&reply.to_string()))));
        }
        match reply.get("rc") {
            None | Some("0") => Ok(reply),
            Some(rc) => {
                let msg = reply.get("errmsg").or_else(|| reply.get("msg")).unwrap_or("no message");
                Err(proto_err(step, format!("launcher answered rc={rc}: {msg}")))
            }
        }
    }
}

fn int_field<T: std::str::FromStr>(step: &str, reply: &Message, key: &str) -> Result<T> {
    let v =
        reply.get(key).ok_or_else(|| proto_err(step, format!("reply {} has no {key}=", quote(&reply.to_string()))))?;
    v.parse().map_err(|_| proto_err(step, format!("reply has {key}={v:?}, not a number")))
}

impl Pmi2 {
    /// Connect to the launcher named by the environment: `PMI_FD` (+ `PMI_RANK`, and
    /// `PMI_JOBID` when set), else `PMI_PORT` + `PMI_ID`. Runs the init handshake.
    pub fn from_env() -> Result<Self> {
        let jobid = std::env::var("PMI_JOBID").ok();
        if let Ok(v) = std::env::var("PMI_FD") {
            let rank = env_usize("PMI_RANK", "the launcher must set it with PMI_FD")?;
            let owned = take_pmi_fd(&v)?;
            return Self::connect(owned, rank, jobid.as_deref());
        }
        if let Ok(port) = std::env::var("PMI_PORT") {
            let id = env_usize("PMI_ID", "the launcher must set it with PMI_PORT")?;
            let step = format!("connect to PMI_PORT {port}");
            let stream = std::net::TcpStream::connect(&port).map_err(|e| io_err(&step, e))?;
            let _ = stream.set_nodelay(true);
            return Self::connect(stream, id, jobid.as_deref());
        }
        Err(env_err("PMI_FD", "neither PMI_FD nor PMI_PORT is set: not started by a PMI-2 launcher"))
    }

    /// Run the PMI-2 handshake over an already connected socket: `rank` is what the launcher
    /// told this process (`PMI_RANK`, or `PMI_ID` in the `PMI_PORT` form), `jobid` is
    /// `PMI_JOBID` if the launcher set it. The size comes from the launcher's reply.
    pub fn connect(fd: impl Into<OwnedFd>, rank: usize, jobid: Option<&str>) -> Result<Self> {
        let mut conn = Conn::new(fd.into());
        let step = "init";
        let init = Command::new("init")
            .arg("pmi_version", 2)
            .arg("pmi_subversion", 0)
            .encode()
            .map_err(|e| proto_err(step, e.to_string()))?;
        conn.write(step, init.as_bytes())?;
        let reply = conn.recv_line(step)?;
        if reply.name != "response_to_init" {
            return Err(proto_err(step, format!("expected cmd=response_to_init, got {}", quote(&reply.to_string()))));
        }
        let version = reply.get("pmi_version");
        if !matches!(reply.get("rc"), None | Some("0")) || version.is_some_and(|v| v != "2") {
            return Err(proto_err(
                step,
                format!(
                    "the launcher does not serve PMI-2 (it answered {}); \
                     try OXSHMEM_BOOTSTRAP=pmi1",
                    quote(&reply.to_string())
                ),
            ));
        }

        let step = "fullinit";
        let mut full = Message::new("fullinit");
        if let Some(j) = jobid {
            full = full.arg("pmijobid", j);
        }
        let full = full.arg("pmirank", rank).arg("threaded", "FALSE");
        let reply = conn.call(step, &full, "fullinit-response")?;
        let size: usize = int_field(step, &reply, "size")?;
        if reply.get("rank").is_some() {
            let r: usize = int_field(step, &reply, "rank")?;
            if r != rank {
                return Err(proto_err(step, format!("launcher says rank {r}, the environment says {rank}")));
            }
        }
        if size == 0 || rank >= size {
            return Err(proto_err(step, format!("rank {rank} is out of range for size {size}")));
        }
        let appnum = reply.get("appnum").and_then(|a| a.parse().ok()).unwrap_or(0);

        let step = "job-getid";
        let reply = conn.call(step, &Message::new("job-getid"), "job-getid-response")?;
        let jobid = reply.get("jobid").map(str::to_string).or_else(|| jobid.map(str::to_string)).unwrap_or_default();

        let raw_fd = conn.sock.raw();
        Ok(Pmi2 { rank, size, appnum, jobid, conn: Mutex::new(conn), raw_fd, nodes: OnceLock::new() })
    }

    /// The job id the launcher reported (`job-getid`).
    pub fn jobid(&self) -> &str {
        &self.jobid
    }

    /// The application number from `fullinit` (Slurm says -1, Hydra 0).
    pub fn appnum(&self) -> i64 {
        self.appnum
    }

    fn lock(&self) -> Result<MutexGuard<'_, Conn>> {
        // The lock does not poison: a panic in another thread mid-request leaves the stream in
        // an unknown state, but the next reply check will catch that.
        let conn = self.conn.lock();
        if conn.finalized {
            return Err(BootstrapError::Invalid("pmi2: used after finalize".into()));
        }
        Ok(conn)
    }

    /// Store `key=value` in the job's key-value space. Not collective; other ranks see it
    /// after the next fence. The key must be shorter than 64 bytes, the value than 1024, and
    /// neither may hold `;`.
    pub fn put(&self, key: &str, value: &str) -> Result<()> {
        let mut conn = self.lock()?;
        Self::put_locked(&mut conn, key, value)
    }

    /// Fetch `key` from the job's key-value space (put by any rank before a fence).
    pub fn get(&self, key: &str) -> Result<String> {
        let mut conn = self.lock()?;
        Self::get_locked(&mut conn, key)
    }

    /// A job attribute (`info-getjobattr`), e.g. `PMI_process_mapping`; `None` if the
    /// launcher has none by that name.
    pub fn job_attr(&self, key: &str) -> Result<Option<String>> {
        let mut conn = self.lock()?;
        let step = format!("info-getjobattr key {key}");
        let msg = Message::new("info-getjobattr").arg("key", key);
        let reply = conn.call(&step, &msg, "info-getjobattr-response")?;
        Ok(found_value(&step, &reply)?.map(str::to_string))
    }

    fn check_kv(step: &str, key: &str, value: Option<&str>) -> Result<()> {
        // The key travels as the value of `key=`: anything but the wire's separators.
        if key.is_empty() || key.len() >= KEYLEN_MAX || key.contains([';', '=', ' ', '\n', '\0']) {
            return Err(proto_err(
                step,
                format!("bad key {key:?} (limit {} bytes, no ';', '=' or spaces)", KEYLEN_MAX - 1),
            ));
        }
        if let Some(v) = value
            && (v.len() >= VALLEN_MAX || v.contains([';', '\n', '\0']))
        {
            return Err(proto_err(
                step,
                format!("value of {} bytes does not fit (limit {} bytes, no ';')", v.len(), VALLEN_MAX - 1),
            ));
        }
        Ok(())
    }

    fn put_locked(conn: &mut Conn, key: &str, value: &str) -> Result<()> {
        let step = format!("kvs-put key {key}");
        Self::check_kv(&step, key, Some(value))?;
        let msg = Message::new("kvs-put").arg("key", key).arg("value", value);
        conn.call(&step, &msg, "kvs-put-response")?;
        Ok(())
    }

    fn get_locked(conn: &mut Conn, key: &str) -> Result<String> {
        let step = format!("kvs-get key {key}");
        Self::check_kv(&step, key, None)?;
        let msg = Message::new("kvs-get").arg("key", key);
        let reply = conn.call(&step, &msg, "kvs-get-response")?;
        found_value(&step, &reply)?
            .map(str::to_string)
            .ok_or_else(|| proto_err(&step, "launcher has no such key (found=FALSE)"))
    }

    fn fence_locked(conn: &mut Conn) -> Result<()> {
        conn.call("barrier (kvs-fence)", &Message::new("kvs-fence"), "kvs-fence-response").map(|_| ())
    }
}

/// `found=TRUE;value=V` → `Some(V)`, `found=FALSE` → `None`; anything else is an error.
fn found_value<'a>(step: &str, reply: &'a Message) -> Result<Option<&'a str>> {
    match reply.get("found") {
        Some("TRUE") | Some("true") => reply.get("value").map(Some).ok_or_else(|| {
            proto_err(step, format!("reply {} has found=TRUE but no value=", quote(&reply.to_string())))
        }),
        Some("FALSE") | Some("false") => Ok(None),
        _ => Err(proto_err(step, format!("reply {} has no found=", quote(&reply.to_string())))),
    }
}

/// This connection's key-value space, locked for one collective (`kvs.rs`).
struct Locked<'a> {
    conn: &'a mut Conn,
}

impl Kvs for Locked<'_> {
    fn put(&mut self, key: &str, value: &str) -> Result<()> {
        Pmi2::put_locked(self.conn, key, value)
    }
    fn get(&mut self, key: &str) -> Result<String> {
        Pmi2::get_locked(self.conn, key)
    }
    fn barrier(&mut self) -> Result<()> {
        Pmi2::fence_locked(self.conn)
    }
    fn chunk_chars(&self) -> usize {
        CHUNK_CHARS
    }
    fn error(&self, step: &str, reason: String) -> BootstrapError {
        proto_err(step, reason)
    }
}

impl Bootstrap for Pmi2 {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn node_mapping(&self) -> Option<Vec<usize>> {
        self.nodes
            .get_or_init(|| {
                let text = self.job_attr("PMI_process_mapping").ok()??;
                mapping::parse_process_mapping(&text, self.size).ok().map(|ids| mapping::renumber(&ids))
            })
            .clone()
    }

    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        // One host: through a shared segment (`shmgather`), O(n) per rank instead of n gets.
        let one_node = crate::shmgather::one_node(self.node_mapping().as_deref());
        let mut conn = self.lock()?;
        conn.epoch += 1;
        let epoch = conn.epoch;
        kvs::allgather(&mut Locked { conn: &mut conn }, epoch, self.rank, self.size, one_node, data)
    }

    fn barrier(&self) -> Result<()> {
        let mut conn = self.lock()?;
        Self::fence_locked(&mut conn)
    }

    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>> {
        if root >= self.size {
            return Err(BootstrapError::Invalid(format!("broadcast root {root} out of range (size {})", self.size)));
        }
        let mut conn = self.lock()?;
        conn.epoch += 1;
        let epoch = conn.epoch;
        kvs::broadcast(&mut Locked { conn: &mut conn }, epoch, self.rank, root, data.unwrap_or(&[]))
    }

    fn abort(&self, code: i32, msg: &str) -> ! {
        eprintln!("{msg}");
        // PMI-2 `abort` carries no exit code (`isworld`, `msg`); the launcher ends the job and
        // we exit with ours. No reply comes.
        let oneline: String =
            msg.chars().map(|c| if matches!(c, '\n' | '\r' | '\0' | ';') { ' ' } else { c }).take(900).collect();
        let m = Message::new("abort").arg("isworld", "TRUE").arg("msg", oneline.trim());
        if let Ok(wire) = m.encode() {
            match self.conn.try_lock() {
                Some(conn) => {
                    let _ = conn.sock.write_all(wire.as_bytes());
                }
                // Another thread is blocked in a request; it is reading, not writing, so one
                // short message cannot interleave with a request of its own.
                None => {
                    let _ = write_all_fd(self.raw_fd, wire.as_bytes());
                }
            }
        }
        std::process::exit(code)
    }

    fn finalize(&self) -> Result<()> {
        let mut conn = self.lock()?;
        conn.call("finalize", &Message::new("finalize"), "finalize-response")?;
        conn.finalized = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The client against in-process fake launchers that misbehave on purpose.
    use super::*;
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    /// How a fake server answers one request: bytes to send (already framed, so that tests can
    /// send broken frames), and whether to close the connection afterwards.
    enum Act {
        Send(String),
        SendClose(String),
        Close,
    }

    /// Frame a body like Hydra (`right`) or Slurm (left-justified).
    fn frame(body: &str, right: bool) -> String {
        if right { format!("{:>6}{body}", body.len()) } else { format!("{:<6}{body}", body.len()) }
    }

    /// A fake PMI-2 server: answers the PMI-1 init line with `init_reply`, then each PMI-2
    /// request with `respond`.
    fn fake(
        init_reply: &'static str,
        respond: impl Fn(&Message) -> Act + Send + 'static,
    ) -> (UnixStream, thread::JoinHandle<()>) {
        let (client, mut server) = UnixStream::pair().unwrap();
        let mut reader = server.try_clone().unwrap();
        let h = thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let mut read_more = |buf: &mut Vec<u8>| -> bool {
                match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => false,
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        true
                    }
                }
            };
            // The PMI-1 init line.
            while !buf.contains(&b'\n') {
                if !read_more(&mut buf) {
                    return;
                }
            }
            let i = buf.iter().position(|&b| b == b'\n').unwrap();
            let line = String::from_utf8(buf.drain(..=i).collect()).unwrap();
            assert!(line.starts_with("cmd=init pmi_version=2"), "{line}");
            if server.write_all(init_reply.as_bytes()).is_err() || init_reply.is_empty() {
                return;
            }
            loop {
                let (msg, used) = loop {
                    match Message::parse_frame(&buf).unwrap() {
                        Some(x) => break x,
                        None => {
                            if !read_more(&mut buf) {
                                return;
                            }
                        }
                    }
                };
                buf.drain(..used);
                match respond(&msg) {
                    Act::Send(s) => {
                        if server.write_all(s.as_bytes()).is_err() {
                            return;
                        }
                    }
                    Act::SendClose(s) => {
                        let _ = server.write_all(s.as_bytes());
                        return;
                    }
                    Act::Close => return,
                }
            }
        });
        (client, h)
    }

    const INIT_OK: &str = "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n";

    /// A well-behaved launcher with a key-value space; `right` picks the framing style.
    fn good_server(right: bool, size: usize) -> impl Fn(&Message) -> Act + Send + 'static {
        let kvs = Arc::new(Mutex::new(HashMap::<String, String>::new()));
        move |m: &Message| {
            let body = match m.name.as_str() {
                "fullinit" => format!(
                    "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank={};size={size};appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
                    m.get("pmirank").unwrap()
                ),
                "job-getid" => "cmd=job-getid-response;rc=0;jobid=7.0;".into(),
                "info-getjobattr" => "cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,2,1));".into(),
                "kvs-put" => {
                    kvs.lock().insert(m.get("key").unwrap().to_string(), m.get("value").unwrap().to_string());
                    "cmd=kvs-put-response;rc=0;".into()
                }
                "kvs-get" => match kvs.lock().get(m.get("key").unwrap()) {
                    Some(v) => format!("cmd=kvs-get-response;found=TRUE;value={v};rc=0;"),
                    None => "cmd=kvs-get-response;found=FALSE;rc=0;".into(),
                },
                "kvs-fence" => "cmd=kvs-fence-response;rc=0;".into(),
                "finalize" => "cmd=finalize-response;rc=0;".into(),
                _ => return Act::Close,
            };
            Act::Send(frame(&body, right))
        }
    }

    #[test]
    fn handshake_kvs_and_mapping_both_framings() {
        for right in [true, false] {
            let (sock, h) = fake(INIT_OK, good_server(right, 4));
            let pmi = Pmi2::connect(sock, 0, Some("7.0")).unwrap();
            assert_eq!((pmi.rank(), pmi.size(), pmi.jobid()), (0, 4, "7.0"));
            assert_eq!(pmi.appnum(), -1);
            assert_eq!(pmi.node_mapping(), Some(vec![0, 1, 0, 1]));
            pmi.put("k", "v1").unwrap();
            assert_eq!(pmi.get("k").unwrap(), "v1");
            let err = pmi.get("missing").unwrap_err().to_string();
            assert!(err.contains("kvs-get key missing") && err.contains("found=FALSE"));
            pmi.barrier().unwrap();
            for len in [0usize, 1, 499, 500, 501, 100 * 1024] {
                let blob: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
                // Size 4 but only our rank put anything: get our own blob via broadcast(0).
                assert_eq!(pmi.broadcast(0, Some(&blob)).unwrap(), blob);
            }
            assert!(pmi.put("k", "a;b").is_err());
            assert!(pmi.put("k y", "v").is_err());
            assert!(pmi.put("k", &"a".repeat(1024)).is_err());
            pmi.finalize().unwrap();
            assert!(matches!(pmi.barrier(), Err(BootstrapError::Invalid(_))));
            drop(pmi);
            h.join().unwrap();
        }
    }

    #[test]
    fn allgather_reads_every_rank() {
        let kvs = Arc::new(Mutex::new(HashMap::<String, String>::new()));
        // Ranks 0 and 2 already put their blobs for epoch 1.
        for r in [0usize, 2] {
            let hex = crate::wire::hex_encode(format!("rank {r}").as_bytes());
            kvs.lock().insert(format!("oxs1.{r}.0"), format!("1:{hex}"));
        }
        // Rank 0 made no shared segment ("-"): every blob comes through the key-value space.
        kvs.lock().insert("oxs1.seg".to_string(), "-".to_string());
        let inner = good_server(true, 3);
        let kvs2 = kvs.clone();
        let (sock, h) = fake(INIT_OK, move |m| {
            if m.name == "kvs-get" {
                let v = kvs2.lock().get(m.get("key").unwrap()).cloned();
                return Act::Send(frame(&format!("cmd=kvs-get-response;rc=0;found=TRUE;value={};", v.unwrap()), true));
            }
            inner(m)
        });
        let pmi = Pmi2::connect(sock, 1, None).unwrap();
        let all = pmi.allgather(b"rank 1").unwrap();
        assert_eq!(all, [b"rank 0".to_vec(), b"rank 1".to_vec(), b"rank 2".to_vec()]);
        drop(pmi);
        h.join().unwrap();
    }

    /// Run `op` on a connected client in a thread and bound the wait: the client must fail,
    /// not hang.
    fn bounded(pmi: Pmi2, op: impl FnOnce(&Pmi2) -> Result<()> + Send + 'static, h: thread::JoinHandle<()>) -> String {
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(op(&pmi).map_err(|e| e.to_string()));
            drop(pmi);
            h.join().unwrap();
        });
        rx.recv_timeout(Duration::from_secs(10)).expect("client hung").unwrap_err()
    }

    #[test]
    fn launcher_disappears_mid_job() {
        let inner = good_server(true, 2);
        let (sock, h) = fake(INIT_OK, move |m| match m.name.as_str() {
            "kvs-fence" => Act::Close,
            _ => inner(m),
        });
        let pmi = Pmi2::connect(sock, 0, None).unwrap();
        let err = bounded(pmi, |p| p.allgather(b"x").map(|_| ()), h);
        assert!(err.contains("kvs-fence") && err.contains("launcher closed the connection"), "{err}");
    }

    #[test]
    fn truncated_reply_is_an_error() {
        let full = frame("cmd=kvs-fence-response;rc=0;", true);
        for cut in [3, LEN_FIELD + 10, full.len() - 1] {
            let part = full[..cut].to_string();
            let inner = good_server(true, 2);
            let (sock, h) = fake(INIT_OK, move |m| match m.name.as_str() {
                "kvs-fence" => Act::SendClose(part.clone()),
                _ => inner(m),
            });
            let pmi = Pmi2::connect(sock, 0, None).unwrap();
            let err = bounded(pmi, |p| p.barrier(), h);
            assert!(err.contains("kvs-fence") && err.contains("in the middle of a reply"), "{cut}: {err}");
        }
    }

    #[test]
    fn malformed_and_unexpected_replies() {
        for (bad, want) in [
            ("cmd=kvs-fence-response;rc=0;\n", "bad PMI-2 length field"),
            ("  x 12cmd=kvs-fence", "bad PMI-2 length field"),
            ("1 2   cmd=kvs-fence-response;", "bad PMI-2 length field"),
            ("999999cmd=", "longer than"),
            ("    10rc=0;cmd=x", "does not start with cmd="),
            ("     4cmd=", "does not start with cmd="),
            ("    26cmd=kvs-put-response;rc=0;", "expected cmd=kvs-fence-response"),
            ("    40cmd=kvs-fence-response;rc=5;errmsg=nope;", "rc=5: nope"),
            ("    29cmd=kvs-fence-response;b@d=1;", "bad key"),
        ] {
            let inner = good_server(true, 2);
            let (sock, h) = fake(INIT_OK, move |m| match m.name.as_str() {
                "kvs-fence" => Act::Send(bad.to_string()),
                _ => inner(m),
            });
            let pmi = Pmi2::connect(sock, 0, None).unwrap();
            let err = pmi.barrier().unwrap_err().to_string();
            assert!(err.contains("kvs-fence") && err.contains(want), "{bad:?}: {err}");
            drop(pmi);
            h.join().unwrap();
        }
        // A get reply without found=, and one with found=TRUE but no value.
        for (bad, want) in [
            ("cmd=kvs-get-response;rc=0;value=x;", "no found="),
            ("cmd=kvs-get-response;rc=0;found=TRUE;", "no value="),
        ] {
            let inner = good_server(false, 2);
            let (sock, h) = fake(INIT_OK, move |m| match m.name.as_str() {
                "kvs-get" => Act::Send(frame(bad, false)),
                _ => inner(m),
            });
            let pmi = Pmi2::connect(sock, 0, None).unwrap();
            let err = pmi.get("k").unwrap_err().to_string();
            assert!(err.contains(want), "{bad:?}: {err}");
            drop(pmi);
            h.join().unwrap();
        }
    }

    #[test]
    fn corrupt_blob_is_an_error() {
        let inner = good_server(true, 2);
        let (sock, h) = fake(INIT_OK, move |m| match m.name.as_str() {
            "kvs-get" => Act::Send(frame("cmd=kvs-get-response;rc=0;found=TRUE;value=1:zz;", true)),
            _ => inner(m),
        });
        let pmi = Pmi2::connect(sock, 0, None).unwrap();
        let err = pmi.allgather(b"x").unwrap_err().to_string();
        assert!(err.contains("rank 1") && err.contains("hex"), "{err}");
        drop(pmi);
        h.join().unwrap();
    }

    #[test]
    fn handshake_failures() {
        // A PMI-1-only launcher (like oshrun) refuses version 2.
        let (sock, h) = fake("cmd=response_to_init rc=-1 msg=oshrun_serves_only_pmi_version_1\n", |_| Act::Close);
        let err = Pmi2::connect(sock, 0, None).unwrap_err().to_string();
        assert!(err.contains("does not serve PMI-2") && err.contains("OXSHMEM_BOOTSTRAP=pmi1"), "{err}");
        h.join().unwrap();

        // Slurm without pmijobid.
        let (sock, h) = fake(INIT_OK, |m| {
            if m.get("pmijobid").is_none() {
                Act::Send(frame("cmd=fullinit-response;rc=3;", false))
            } else {
                Act::Close
            }
        });
        let err = Pmi2::connect(sock, 0, None).unwrap_err().to_string();
        assert!(err.contains("fullinit") && err.contains("rc=3"), "{err}");
        h.join().unwrap();

        // Closed before answering init; a rank the launcher disagrees with; size 0.
        let (sock, h) = fake("", |_| Act::Close);
        let err = Pmi2::connect(sock, 0, None).unwrap_err().to_string();
        assert!(err.contains("init") && err.contains("closed"), "{err}");
        h.join().unwrap();
        for (reply, want) in [
            ("cmd=fullinit-response;rc=0;rank=1;size=2;", "launcher says rank 1"),
            ("cmd=fullinit-response;rc=0;size=0;", "out of range"),
            ("cmd=fullinit-response;rc=0;rank=0;", "no size="),
            ("cmd=fullinit-response;rc=0;size=two;", "not a number"),
        ] {
            let (sock, h) = fake(INIT_OK, move |_| Act::Send(frame(reply, true)));
            let err = Pmi2::connect(sock, 0, None).unwrap_err().to_string();
            assert!(err.contains("fullinit") && err.contains(want), "{reply}: {err}");
            drop(h);
        }
    }

    #[test]
    fn message_encoding() {
        let m = Message::new("fullinit").arg("pmijobid", "1.0").arg("pmirank", 3);
        let w = m.encode().unwrap();
        assert_eq!(w, "    36cmd=fullinit;pmijobid=1.0;pmirank=3;");
        let (back, used) = Message::parse_frame(w.as_bytes()).unwrap().unwrap();
        assert_eq!((back, used), (m, w.len()));
        assert_eq!(Message::new("x").arg("v", "a;b").encode(), Err(WireError::Semicolon("v".into())));
        assert!(Message::new("x").arg("v", "a\nb").encode().is_err());
        assert!(Message::new("x y").encode().is_err());
        assert!(Message::new("x").arg("", "v").encode().is_err());
        // A bare key and a missing last ';' are legal (MPICH `parse_v2`).
        let m = Message::parse("cmd=x; flag;k=v").unwrap();
        assert_eq!(m.get("flag"), Some(""));
        assert_eq!(m.get("k"), Some("v"));
        // Incomplete frames ask for more bytes.
        assert_eq!(Message::parse_frame(b""), Ok(None));
        assert_eq!(Message::parse_frame(b"   "), Ok(None));
        assert_eq!(Message::parse_frame(b"    12cmd="), Ok(None));
        assert!(Message::parse_frame(&[b' ', b' ', b' ', b' ', b'4', b' ', 0xff, 0xfe, b'x', b'y']).is_err());
    }
}
