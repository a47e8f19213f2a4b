//! PMI-1 client: the "simple PMI" wire protocol that MPICH's Hydra (`mpiexec`), Slurm's
//! `srun --mpi=pmi1`-style plugins and our own `oshrun` serve.
//!
//! The launcher gives each process either an inherited, connected socket (`PMI_FD`, with
//! `PMI_RANK` and `PMI_SIZE`) or a TCP address and an id (`PMI_PORT=host:port`, `PMI_ID`), in
//! which case the process first says `cmd=initack pmiid=N` and learns its rank and size from
//! the `cmd=set` lines that follow (MPICH `simple_pmi.c`, `PMII_Set_from_port`). Every request
//! is one line and gets one reply line, except `abort`, which gets none.
//!
//! Anyone on the host can connect to a TCP port, so `oshrun --pmi-port` also gives each PE a
//! secret, [`TOKEN_VAR`], that the first line must carry (`cmd=initack pmiid=N token=T`);
//! when it is set we send it. Other launchers do not set it, and the PMI-1 servers we know
//! read only the keys they need from `initack`, so an extra key does them no harm.
//!
//! Blobs go through the key-value space hex-encoded and cut into chunks that fit the
//! launcher's `vallen_max`: real launchers silently truncate longer values (Hydra keeps 1023
//! bytes and still answers `rc=0`). This module never trusts a reply it cannot parse: a closed
//! connection, a truncated line or an unexpected command is an error naming the step, never a
//! panic or a hang on our side.

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::OnceLock;

use parking_lot::{Mutex, MutexGuard};

use crate::kvs::{self, Kvs};
use crate::sock::{Sock, env_err, env_usize, quote, take_pmi_fd, write_all_fd};
use crate::wire::{Command, LineBuf};
use crate::{Bootstrap, BootstrapError, Result, mapping};

const PROTOCOL: &str = "pmi1";

/// The environment variable in which `oshrun --pmi-port` gives each PE the job's token, which
/// the PE presents in its `cmd=initack` line: without it `oshrun` refuses the connection.
pub const TOKEN_VAR: &str = "OXSHMEM_PMI_TOKEN";

/// Most hex characters we put in one value, whatever the launcher allows: comfortably under
/// the 1023 bytes that launchers keep, with room for the chunk-count prefix.
const CHUNK_CHARS_MAX: usize = 1000;

/// The line buffer of the launchers' PMI-1 servers, newline included.
const LINE_MAX: usize = 1024;

/// Size limits the launcher reported in `cmd=maxes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maxes {
    /// Longest key-value-space name.
    pub kvsname_max: usize,
    /// Longest key (buffer size, NUL included, as MPICH counts it).
    pub keylen_max: usize,
    /// Longest value (buffer size, NUL included, as MPICH counts it).
    pub vallen_max: usize,
}

/// A PMI-1 client connection: rank, size and the job's key-value space.
///
/// ```no_run
/// use oxshmem_bootstrap::{Bootstrap, pmi1::Pmi1};
/// let pmi = Pmi1::from_env()?; // inside `oshrun -n 4 prog` or `mpiexec -n 4 prog`
/// let all = pmi.allgather(format!("hello from {}", pmi.rank()).as_bytes())?;
/// assert_eq!(all.len(), pmi.size());
/// pmi.finalize()?;
/// # Ok::<(), oxshmem_bootstrap::BootstrapError>(())
/// ```
pub struct Pmi1 {
    rank: usize,
    size: usize,
    kvsname: String,
    maxes: Maxes,
    debug: bool,
    /// Hex characters per chunk value.
    chunk_chars: usize,
    conn: Mutex<Conn>,
    /// Raw descriptor of the connection, for `abort` when another thread holds the lock.
    raw_fd: RawFd,
    /// `PMI_process_mapping`, fetched on first use (`None` inside: the launcher has none).
    nodes: OnceLock<Option<Vec<usize>>>,
}

impl std::fmt::Debug for Pmi1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmi1")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("kvsname", &self.kvsname)
            .field("maxes", &self.maxes)
            .field("fd", &self.raw_fd)
            .finish()
    }
}

/// The socket, its read buffer, and the collective state that must move with it.
struct Conn {
    sock: Sock,
    buf: LineBuf,
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
        Conn { sock: Sock::new(fd), buf: LineBuf::new(), epoch: 0, finalized: false }
    }

    fn send(&mut self, step: &str, cmd: &Command) -> Result<()> {
        let line = cmd.encode().map_err(|e| proto_err(step, format!("cannot encode request: {e}")))?;
        self.sock.write_all(line.as_bytes()).map_err(|e| {
            if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) {
                io_err(step, io::Error::new(e.kind(), "launcher closed the connection"))
            } else {
                io_err(step, e)
            }
        })
    }

    /// Read one reply line and parse it.
    fn recv(&mut self, step: &str) -> Result<Command> {
        let mut chunk = [0u8; 8192];
        loop {
            match self.buf.pop_line() {
                Ok(Some(line)) => {
                    return Command::parse(&line)
                        .map_err(|e| proto_err(step, format!("malformed reply {}: {e}", quote(&line))));
                }
                Ok(None) => {}
                Err(e) => return Err(proto_err(step, format!("malformed reply: {e}"))),
            }
            let n = self.sock.read(&mut chunk).map_err(|e| io_err(step, e))?;
            if n == 0 {
                let pending = self.buf.pending();
                let msg = if pending.is_empty() {
                    "launcher closed the connection".to_string()
                } else {
                    format!(
                        "launcher closed the connection in the middle of a reply (got {})",
                        quote(&String::from_utf8_lossy(pending))
                    )
                };
                return Err(io_err(step, io::Error::new(io::ErrorKind::UnexpectedEof, msg)));
            }
            self.buf.feed(&chunk[..n]);
        }
    }

    /// Read one reply and check that it is `cmd=<expect>` with `rc` absent or 0.
    fn expect(&mut self, step: &str, expect: &str) -> Result<Command> {
        let reply = self.recv(step)?;
        if reply.name != expect {
            return Err(proto_err(step, format!("expected cmd={expect}, got {}", quote(&reply.to_string()))));
        }
        check_rc(step, &reply)?;
        Ok(reply)
    }

    fn call(&mut self, step: &str, cmd: &Command, expect: &str) -> Result<Command> {
        self.send(step, cmd)?;
        self.expect(step, expect)
    }
}

fn check_rc(step: &str, reply: &Command) -> Result<()> {
    match reply.get("rc") {
        None | Some("0") => Ok(()),
        Some(rc) => {
            let msg = reply.get("msg").unwrap_or("no message");
            Err(proto_err(step, format!("launcher answered rc={rc}: {msg}")))
        }
    }
}

fn int_field(step: &str, reply: &Command, key: &str) -> Result<usize> {
    let v =
        reply.get(key).ok_or_else(|| proto_err(step, format!("reply {} has no {key}=", quote(&reply.to_string()))))?;
    v.parse().map_err(|_| proto_err(step, format!("reply has {key}={v:?}, not a number")))
}

impl Pmi1 {
    /// Connect to the launcher named by the environment: `PMI_FD` (+ `PMI_RANK`, `PMI_SIZE`),
    /// else `PMI_PORT` + `PMI_ID` (and [`TOKEN_VAR`] when set). Runs the init handshake.
    pub fn from_env() -> Result<Self> {
        if let Ok(v) = std::env::var("PMI_FD") {
            let why = "the launcher must set it with PMI_FD";
            let rank = env_usize("PMI_RANK", why)?;
            let size = env_usize("PMI_SIZE", why)?;
            let owned = take_pmi_fd(&v)?;
            return Self::connect(owned, rank, size);
        }
        if let Ok(port) = std::env::var("PMI_PORT") {
            let id = std::env::var("PMI_ID")
                .map_err(|_| env_err("PMI_ID", "not set (the launcher must set it with PMI_PORT)"))?;
            let id: usize =
                id.trim().parse().map_err(|_| env_err("PMI_ID", format!("{id:?} is not a non-negative integer")))?;
            let token = std::env::var(TOKEN_VAR).ok().filter(|t| !t.is_empty());
            return Self::connect_port_with_token(&port, id, token.as_deref());
        }
        Err(env_err("PMI_FD", "neither PMI_FD nor PMI_PORT is set: not started by a PMI-1 launcher"))
    }

    /// Run the PMI-1 handshake over an already connected socket whose rank and size the
    /// launcher told us out of band (the `PMI_FD` form).
    pub fn connect(fd: impl Into<OwnedFd>, rank: usize, size: usize) -> Result<Self> {
        let conn = Conn::new(fd.into());
        if size == 0 || rank >= size {
            return Err(env_err("PMI_RANK", format!("rank {rank} is out of range for size {size}")));
        }
        Self::handshake(conn, rank, size, false)
    }

    /// Connect over TCP to `host:port` (the `PMI_PORT` form) and introduce ourselves as
    /// `pmi_id`; rank and size come from the launcher's reply.
    pub fn connect_port(hostport: &str, pmi_id: usize) -> Result<Self> {
        Self::connect_port_with_token(hostport, pmi_id, None)
    }

    /// [`connect_port`](Self::connect_port), presenting `token` in the `cmd=initack` line
    /// (the job token of `oshrun --pmi-port`, [`TOKEN_VAR`]).
    pub fn connect_port_with_token(hostport: &str, pmi_id: usize, token: Option<&str>) -> Result<Self> {
        let stream = std::net::TcpStream::connect(hostport)
            .map_err(|e| io_err(&format!("connect to PMI_PORT {hostport}"), e))?;
        let _ = stream.set_nodelay(true);
        Self::connect_initack_with_token(stream, pmi_id, token)
    }

    /// Run `cmd=initack pmiid=N` and then the PMI-1 handshake over an already connected
    /// socket (the `PMI_PORT` form, once connected).
    pub fn connect_initack(fd: impl Into<OwnedFd>, pmi_id: usize) -> Result<Self> {
        Self::connect_initack_with_token(fd, pmi_id, None)
    }

    /// [`connect_initack`](Self::connect_initack), with `token=` in the `cmd=initack` line
    /// when `token` is given.
    pub fn connect_initack_with_token(fd: impl Into<OwnedFd>, pmi_id: usize, token: Option<&str>) -> Result<Self> {
        let mut conn = Conn::new(fd.into());
        let step = "initack";
        let mut initack = Command::new("initack").arg("pmiid", pmi_id);
        if let Some(token) = token {
            if token.is_empty() || token.contains([' ', '\t', '\r', '\n', '\\']) {
                return Err(env_err(TOKEN_VAR, "the PMI token must be one word (no spaces or '\\')"));
            }
            initack = initack.arg("token", token);
        }
        conn.call(step, &initack, "initack")?;
        let (mut size, mut rank, mut debug) = (None, None, false);
        // Hydra sends exactly three `cmd=set` lines: size, rank, debug.
        for _ in 0..3 {
            let set = conn.expect(step, "set")?;
            if set.get("size").is_some() {
                size = Some(int_field(step, &set, "size")?);
            } else if set.get("rank").is_some() {
                rank = Some(int_field(step, &set, "rank")?);
            } else if let Some(d) = set.get("debug") {
                debug = d != "0";
            } else {
                return Err(proto_err(step, format!("unexpected {}", quote(&set.to_string()))));
            }
        }
        let size = size.ok_or_else(|| proto_err(step, "launcher did not send cmd=set size="))?;
        let rank = rank.ok_or_else(|| proto_err(step, "launcher did not send cmd=set rank="))?;
        if size == 0 || rank >= size {
            return Err(proto_err(step, format!("rank {rank} is out of range for size {size}")));
        }
        Self::handshake(conn, rank, size, debug)
    }

    fn handshake(mut conn: Conn, rank: usize, size: usize, debug: bool) -> Result<Self> {
        let step = "init";
        let init = Command::new("init").arg("pmi_version", 1).arg("pmi_subversion", 1);
        let reply = conn.call(step, &init, "response_to_init")?;
        if reply.get("pmi_version").is_some_and(|v| v != "1") {
            return Err(proto_err(step, format!("launcher speaks PMI version {:?}, not 1", reply.get("pmi_version"))));
        }
        let step = "get_maxes";
        let reply = conn.call(step, &Command::new("get_maxes"), "maxes")?;
        let maxes = Maxes {
            kvsname_max: int_field(step, &reply, "kvsname_max")?,
            keylen_max: int_field(step, &reply, "keylen_max")?,
            vallen_max: int_field(step, &reply, "vallen_max")?,
        };
        // Our keys are at most 46 characters (`oxs` + 3 numbers); values need room for a
        // chunk-count prefix and some hex.
        if maxes.keylen_max < 48 || maxes.vallen_max < 64 {
            return Err(proto_err(
                step,
                format!(
                    "launcher limits keys to {} and values to {} bytes; need 48 and 64",
                    maxes.keylen_max, maxes.vallen_max
                ),
            ));
        }
        let step = "get_my_kvsname";
        let reply = conn.call(step, &Command::new("get_my_kvsname"), "my_kvsname")?;
        let kvsname = reply
            .get("kvsname")
            .filter(|k| !k.is_empty())
            .ok_or_else(|| proto_err(step, "reply has no kvsname="))?
            .to_string();
        // A value must fit `vallen_max` with its NUL and the `N:` prefix of chunk 0 (at most
        // 21 characters); and the whole `put` line must fit the 1024-byte line buffer of the
        // launchers (MPICH's `PMIU_MAXLINE`, Slurm's `MAX_READLINE`, read in one `read`):
        // `cmd=put kvsname= key= value=\n` is 29 bytes, plus the name, a key of at most 47
        // and the prefix.
        let by_value = maxes.vallen_max - 1 - 22;
        let by_line = LINE_MAX.saturating_sub(1 + 29 + kvsname.len() + 47 + 21);
        let chunk_chars = by_value.min(by_line).min(CHUNK_CHARS_MAX) & !1;
        if chunk_chars < 64 {
            return Err(proto_err(
                step,
                format!("kvsname of {} bytes leaves no room for values in a {LINE_MAX}-byte line", kvsname.len()),
            ));
        }
        let raw_fd = conn.sock.raw();
        Ok(Pmi1 {
            rank,
            size,
            kvsname,
            maxes,
            debug,
            chunk_chars,
            conn: Mutex::new(conn),
            raw_fd,
            nodes: OnceLock::new(),
        })
    }

    /// The job's key-value space name.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// The limits the launcher reported.
    pub fn maxes(&self) -> Maxes {
        self.maxes
    }

    /// Whether the launcher asked for PMI debugging (`cmd=set debug=1`, `PMI_PORT` form only).
    pub fn debug(&self) -> bool {
        self.debug
    }

    fn lock(&self) -> Result<MutexGuard<'_, Conn>> {
        // The lock does not poison: a panic in another thread mid-request leaves the stream in
        // an unknown state, but the next reply check will catch that.
        let conn = self.conn.lock();
        if conn.finalized {
            return Err(BootstrapError::Invalid("pmi1: used after finalize".into()));
        }
        Ok(conn)
    }

    /// Store `key=value` in the job's key-value space. Not collective; other ranks see it
    /// after the next barrier. Both must fit the launcher's limits and hold no spaces.
    pub fn put(&self, key: &str, value: &str) -> Result<()> {
        let mut conn = self.lock()?;
        self.put_locked(&mut conn, key, value)
    }

    /// Fetch `key` from the job's key-value space (put by any rank before a barrier).
    pub fn get(&self, key: &str) -> Result<String> {
        let mut conn = self.lock()?;
        self.get_locked(&mut conn, key)
    }

    /// The launcher's `PMI_process_mapping` (Hydra and Slurm publish it in the key-value
    /// space), or `None` if it has none or it cannot be parsed.
    fn fetch_mapping(&self) -> Option<Vec<usize>> {
        let mut conn = self.lock().ok()?;
        let text = self.get_locked(&mut conn, "PMI_process_mapping").ok()?;
        mapping::parse_process_mapping(&text, self.size).ok().map(|ids| mapping::renumber(&ids))
    }

    fn check_kv(&self, step: &str, key: &str, value: Option<&str>) -> Result<()> {
        if key.is_empty() || key.len() >= self.maxes.keylen_max || key.contains([' ', '\n', '=']) {
            return Err(proto_err(
                step,
                format!("bad key {key:?} (limit {} bytes, no spaces)", self.maxes.keylen_max - 1),
            ));
        }
        if let Some(v) = value
            && (v.len() >= self.maxes.vallen_max || v.contains([' ', '\n', '\\']))
        {
            return Err(proto_err(
                step,
                format!(
                    "value of {} bytes does not fit (limit {} bytes, no spaces)",
                    v.len(),
                    self.maxes.vallen_max - 1
                ),
            ));
        }
        Ok(())
    }

    fn put_locked(&self, conn: &mut Conn, key: &str, value: &str) -> Result<()> {
        let step = format!("put key {key}");
        self.check_kv(&step, key, Some(value))?;
        let cmd = Command::new("put").arg("kvsname", &self.kvsname).arg("key", key).arg("value", value);
        conn.call(&step, &cmd, "put_result")?;
        Ok(())
    }

    fn get_locked(&self, conn: &mut Conn, key: &str) -> Result<String> {
        let step = format!("get key {key}");
        self.check_kv(&step, key, None)?;
        let cmd = Command::new("get").arg("kvsname", &self.kvsname).arg("key", key);
        let reply = conn.call(&step, &cmd, "get_result")?;
        reply
            .get("value")
            .map(str::to_string)
            .ok_or_else(|| proto_err(&step, format!("reply {} has no value=", quote(&reply.to_string()))))
    }

    fn barrier_locked(conn: &mut Conn) -> Result<()> {
        conn.call("barrier", &Command::new("barrier_in"), "barrier_out").map(|_| ())
    }
}

/// This connection's key-value space, locked for one collective (`kvs.rs`).
struct Locked<'a> {
    pmi: &'a Pmi1,
    conn: &'a mut Conn,
}

impl Kvs for Locked<'_> {
    fn put(&mut self, key: &str, value: &str) -> Result<()> {
        self.pmi.put_locked(self.conn, key, value)
    }
    fn get(&mut self, key: &str) -> Result<String> {
        self.pmi.get_locked(self.conn, key)
    }
    fn barrier(&mut self) -> Result<()> {
        Pmi1::barrier_locked(self.conn)
    }
    fn chunk_chars(&self) -> usize {
        self.pmi.chunk_chars
    }
    fn error(&self, step: &str, reason: String) -> BootstrapError {
        proto_err(step, reason)
    }
}

impl Bootstrap for Pmi1 {
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
        // One host: through a shared segment (`shmgather`), O(n) per rank instead of n gets.
        let one_node = crate::shmgather::one_node(self.node_mapping().as_deref());
        let mut conn = self.lock()?;
        conn.epoch += 1;
        let epoch = conn.epoch;
        kvs::allgather(&mut Locked { pmi: self, conn: &mut conn }, epoch, self.rank, self.size, one_node, data)
    }

    fn barrier(&self) -> Result<()> {
        let mut conn = self.lock()?;
        Self::barrier_locked(&mut conn)
    }

    fn node_mapping(&self) -> Option<Vec<usize>> {
        self.nodes.get_or_init(|| self.fetch_mapping()).clone()
    }

    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>> {
        if root >= self.size {
            return Err(BootstrapError::Invalid(format!("broadcast root {root} out of range (size {})", self.size)));
        }
        let mut conn = self.lock()?;
        conn.epoch += 1;
        let epoch = conn.epoch;
        kvs::broadcast(&mut Locked { pmi: self, conn: &mut conn }, epoch, self.rank, root, data.unwrap_or(&[]))
    }

    fn abort(&self, code: i32, msg: &str) -> ! {
        eprintln!("{msg}");
        // MPICH 4 sends the message along (`PMIU_msg_set_query_abort`); older launchers
        // ignore it. No reply comes.
        let oneline: String = msg.chars().map(|c| if c == '\n' || c == '\r' || c == '\0' { ' ' } else { c }).collect();
        let cmd = Command::new("abort").arg("exitcode", code).arg("message", oneline.trim());
        if let Ok(line) = cmd.encode().or_else(|_| Command::new("abort").arg("exitcode", code).encode()) {
            match self.conn.try_lock() {
                Some(conn) => {
                    let _ = conn.sock.write_all(line.as_bytes());
                }
                // Another thread is blocked in a request; it is reading, not writing, so one
                // short line cannot interleave with a request of its own.
                None => {
                    let _ = write_all_fd(self.raw_fd, line.as_bytes());
                }
            }
        }
        std::process::exit(code)
    }

    fn finalize(&self) -> Result<()> {
        let mut conn = self.lock()?;
        conn.call("finalize", &Command::new("finalize"), "finalize_ack")?;
        conn.finalized = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The client against in-process fake launchers that misbehave on purpose.
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::thread;

    /// A fake server: reads lines and answers each with `respond(line)`. `None` closes the
    /// connection; so does a reply that does not end in a newline, after it is written.
    fn fake(respond: impl Fn(&Command) -> Option<String> + Send + 'static) -> (UnixStream, thread::JoinHandle<()>) {
        let (client, server) = UnixStream::pair().unwrap();
        let h = thread::spawn(move || {
            let mut w = server.try_clone().unwrap();
            let mut r = BufReader::new(server);
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                // Slurm reads a request with one 1024-byte read.
                assert!(line.len() <= LINE_MAX, "request of {} bytes", line.len());
                let cmd = Command::parse(&line).unwrap();
                match respond(&cmd) {
                    Some(reply) => {
                        if w.write_all(reply.as_bytes()).is_err() || !reply.ends_with('\n') {
                            return;
                        }
                    }
                    None => return,
                }
            }
        });
        (client, h)
    }

    /// Answers for a well-behaved handshake, else `None`.
    fn handshake_reply(cmd: &Command) -> Option<String> {
        Some(
            match cmd.name.as_str() {
                "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
                "get_maxes" => "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n",
                "get_my_kvsname" => "cmd=my_kvsname rc=0 kvsname=kvs_22619_0_1751728108_vm\n",
                _ => return None,
            }
            .to_string(),
        )
    }

    #[test]
    fn handshake_and_kvs() {
        let store = std::sync::Arc::new(Mutex::new(std::collections::HashMap::new()));
        let (sock, h) = fake(move |c| {
            handshake_reply(c).or_else(|| {
                Some(match c.name.as_str() {
                    "put" => {
                        store.lock().insert(c.get("key")?.to_string(), c.get("value")?.to_string());
                        "cmd=put_result rc=0 msg=success\n".to_string()
                    }
                    "get" => match store.lock().get(c.get("key")?) {
                        Some(v) => format!("cmd=get_result rc=0 msg=success value={v}\n"),
                        None => "cmd=get_result rc=-1 msg=key_not_found\n".to_string(),
                    },
                    "barrier_in" => "cmd=barrier_out\n".to_string(),
                    "finalize" => "cmd=finalize_ack\n".to_string(),
                    _ => return None,
                })
            })
        });
        let pmi = Pmi1::connect(sock, 0, 1).unwrap();
        assert_eq!(pmi.kvsname(), "kvs_22619_0_1751728108_vm");
        assert_eq!(pmi.maxes().vallen_max, 1024);
        pmi.put("k", "v1").unwrap();
        assert_eq!(pmi.get("k").unwrap(), "v1");
        let err = pmi.get("missing").unwrap_err().to_string();
        assert!(err.contains("get key missing") && err.contains("rc=-1"), "{err}");
        for len in [0usize, 1, 499, 500, 501, 100 * 1024] {
            let blob: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            assert_eq!(pmi.allgather(&blob).unwrap(), vec![blob.clone()]);
            assert_eq!(pmi.broadcast(0, Some(&blob)).unwrap(), blob);
        }
        assert!(pmi.put("has space", "v").is_err());
        assert!(pmi.put("k", &"a".repeat(1024)).is_err());
        pmi.finalize().unwrap();
        assert!(matches!(pmi.barrier(), Err(BootstrapError::Invalid(_))));
        drop(pmi);
        h.join().unwrap();
    }

    #[test]
    fn initack_form() {
        let (sock, h) = fake(|c| {
            handshake_reply(c).or_else(|| match c.name.as_str() {
                "initack" => {
                    assert_eq!(c.get("pmiid"), Some("3"));
                    Some("cmd=initack\ncmd=set size=4\ncmd=set rank=3\ncmd=set debug=0\n".into())
                }
                _ => None,
            })
        });
        let pmi = Pmi1::connect_initack(sock, 3).unwrap();
        assert_eq!((pmi.rank(), pmi.size(), pmi.debug()), (3, 4, false));
        drop(pmi);
        h.join().unwrap();
    }

    #[test]
    fn initack_presents_the_token() {
        let (sock, h) = fake(|c| {
            handshake_reply(c).or_else(|| match c.name.as_str() {
                // The token comes in the very first line, with the id it speaks for.
                "initack" => {
                    assert_eq!((c.get("pmiid"), c.get("token")), (Some("1"), Some("0123abcd")), "{c}");
                    Some("cmd=initack rc=0\ncmd=set size=2\ncmd=set rank=1\ncmd=set debug=0\n".into())
                }
                _ => None,
            })
        });
        let pmi = Pmi1::connect_initack_with_token(sock, 1, Some("0123abcd")).unwrap();
        assert_eq!((pmi.rank(), pmi.size()), (1, 2));
        drop(pmi);
        h.join().unwrap();
        // Without a token, none is sent (other launchers know of none).
        let (sock, h) = fake(|c| {
            handshake_reply(c).or_else(|| match c.name.as_str() {
                "initack" => {
                    assert_eq!(c.get("token"), None, "{c}");
                    Some("cmd=initack rc=0\ncmd=set size=1\ncmd=set rank=0\ncmd=set debug=0\n".into())
                }
                _ => None,
            })
        });
        drop(Pmi1::connect_initack_with_token(sock, 0, None).unwrap());
        h.join().unwrap();
        let (sock, _h) = fake(|_| None);
        let err = Pmi1::connect_initack_with_token(sock, 0, Some("two words")).unwrap_err().to_string();
        assert!(err.contains(TOKEN_VAR), "{err}");
    }

    #[test]
    fn closed_before_init_reply() {
        let (sock, h) = fake(|_| None);
        let err = Pmi1::connect(sock, 0, 2).unwrap_err().to_string();
        assert!(err.contains("init") && err.contains("launcher closed the connection"), "{err}");
        h.join().unwrap();
    }

    #[test]
    fn truncated_reply_is_an_error() {
        let (sock, h) = fake(|c| {
            handshake_reply(c).or_else(|| match c.name.as_str() {
                // Half a line, then the connection closes.
                "barrier_in" => Some("cmd=barrier_o".into()),
                _ => None,
            })
        });
        let pmi = Pmi1::connect(sock, 0, 2).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(pmi.barrier().map_err(|e| e.to_string()));
            h.join().unwrap();
        });
        // The client must fail, not wait for the rest of the line; bound the wait anyway.
        let res = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("client hung");
        let err = res.unwrap_err();
        assert!(err.contains("barrier") && err.contains("in the middle of a reply"), "{err}");
    }

    #[test]
    fn malformed_and_unexpected_replies() {
        for (bad, want) in [
            ("hello world\n", "malformed reply"),
            ("cmd=put_result rc=0\n", "expected cmd=barrier_out"),
            ("cmd=barrier_out rc=5 msg=nope\n", "rc=5"),
            ("cmd=barrier_out junk\n", "has no '='"),
        ] {
            let (sock, h) =
                fake(move |c| handshake_reply(c).or_else(|| (c.name == "barrier_in").then(|| bad.to_string())));
            let pmi = Pmi1::connect(sock, 1, 2).unwrap();
            let err = pmi.barrier().unwrap_err().to_string();
            assert!(err.contains("barrier") && err.contains(want), "{bad:?}: {err}");
            drop(pmi);
            h.join().unwrap();
        }
    }

    #[test]
    fn bad_handshake_replies() {
        let (sock, h) = fake(|c| match c.name.as_str() {
            "init" => Some("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".into()),
            "get_maxes" => Some("cmd=maxes rc=0 kvsname_max=256 keylen_max=64\n".into()),
            _ => None,
        });
        let err = Pmi1::connect(sock, 0, 1).unwrap_err().to_string();
        assert!(err.contains("get_maxes") && err.contains("vallen_max"), "{err}");
        h.join().unwrap();

        let (sock, h) = fake(|c| match c.name.as_str() {
            "init" => Some("cmd=response_to_init rc=-1 msg=unsupported_version\n".into()),
            _ => None,
        });
        let err = Pmi1::connect(sock, 0, 1).unwrap_err().to_string();
        assert!(err.contains("init") && err.contains("unsupported_version"), "{err}");
        h.join().unwrap();

        let (sock, _h) = fake(|_| None);
        assert!(Pmi1::connect(sock, 2, 2).is_err());
    }

    #[test]
    fn corrupt_blob_is_an_error() {
        let (sock, h) = fake(|c| {
            handshake_reply(c).or_else(|| {
                Some(match c.name.as_str() {
                    "put" => "cmd=put_result rc=0\n".into(),
                    "barrier_in" => "cmd=barrier_out\n".into(),
                    "get" => "cmd=get_result rc=0 value=1:zz\n".into(),
                    _ => return None,
                })
            })
        });
        let pmi = Pmi1::connect(sock, 0, 2).unwrap();
        let err = pmi.allgather(b"x").unwrap_err().to_string();
        assert!(err.contains("rank 1") && err.contains("hex"), "{err}");
        drop(pmi);
        h.join().unwrap();
    }
}
