//! One `oshrun` job: start the PEs, serve their PMI connections, forward their output, watch
//! for deaths and end the whole job when one PE fails.
//!
//! Everything runs on one thread around one `poll`: the PMI sockets, the PEs' stdout and
//! stderr pipes, a self-pipe fed by the signal handlers (`SIGCHLD`, `SIGINT`, `SIGTERM`,
//! `SIGHUP`, `SIGQUIT`), and the timers (job timeout, the SIGTERM→SIGKILL grace, the output
//! drain). One thread means no locks around the job state, and it keeps `PR_SET_PDEATHSIG`
//! meaningful (it fires when the thread that forked the PE exits).
//!
//! Each PE leads its own process group, so ending the job signals whatever the PE started as
//! well, and a terminal's Ctrl-C reaches `oshrun` alone, which then ends the PEs in order. A
//! keeper process ([`super::keeper`]) ends those groups when `oshrun` itself is gone, even by
//! `kill -9`, which no handler sees. A
//! PE that has exited stays an unreaped zombie until the job is over, so that its group id
//! stays pinned: when the job fails, what a dead PE left behind in its group is killed too.
//! This module never waits without a bound once the job is over: output still held open by
//! an orphaned grandchild is drained for [`DRAIN`] at most. It creates nothing in `/dev/shm`
//! or anywhere else on disk. While the PEs are being started, a signal or the job's timeout
//! stops the start, and the PEs already started are ended like those of any failed job.
//!
//! Every PE also gets the status table of [`crate::status`] (a memfd, named by
//! `OXSHMEM_STATUS_FD`), where its runtime notes which blocking routine it is in. On the job's
//! timeout, before killing, and on `SIGQUIT` (which ends nothing) `oshrun` prints the hang
//! report: a line per PE saying where it waits, and for whom, or that it runs, is stopped (from
//! `/proc`), or has exited.
//!
//! With `--pmi-port` anyone on this host can connect to the PMI port, so each job has a
//! random token ([`TOKEN_VAR`] in every PE's environment) that a connection must present in
//! its first line (`cmd=initack pmiid=N token=T`) before it may speak for a PE; one without
//! it is refused and logged, and the job goes on. A connection must send that line within
//! [`INITACK_DEADLINE`], at most [`MAX_PENDING`] may wait at once (the oldest is closed
//! first), and running out of descriptors pauses accepting instead of spinning, so that idle
//! connections of another local user cannot stall the job. The inherited socket of the default mode
//! (`PMI_FD`) needs no token: it has no address, and only the PE (and what it forks) holds
//! its end.
//!
//! A PE that spoke PMI and then closes its connection without `finalize` while it keeps
//! running (still, [`CLOSE_GRACE`] later: one that is exiting is reported by its exit
//! status) ends the job. A PE that never spoke PMI (`/bin/true`) may close it as it likes.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::args::Options;
use super::output::LineForwarder;
use super::server::{Event, PmiServer};
use super::sys::{self, Exit, SignalPipe};
use crate::pmi1::TOKEN_VAR;
use crate::status::{self, Table};
use crate::wire::{Command, LineBuf};

/// Time between SIGTERM and SIGKILL when the job is ended.
pub const KILL_GRACE: Duration = Duration::from_millis(500);
/// How long output is still read once every PE has been reaped.
pub const DRAIN: Duration = Duration::from_millis(300);
/// How long after SIGKILL `oshrun` waits for PEs to disappear before it gives up on them.
const GIVE_UP: Duration = Duration::from_secs(2);
/// Longest sleep in `poll`, a safety net should a `SIGCHLD` wake-up ever be missed.
const TICK: Duration = Duration::from_millis(250);
/// How long a PE that closed its PMI connection without finalizing may take to exit before
/// the close itself counts as its failure: a PE that closes and then exits (its last
/// destructors, `exit()`) is reported by its exit status instead.
pub const CLOSE_GRACE: Duration = Duration::from_secs(3);
/// Bytes of randomness in a `--pmi-port` job's token.
const TOKEN_BYTES: usize = 32;
/// Refused PMI connections reported one by one; after that, only once more.
const REFUSALS_REPORTED: usize = 10;

/// Run the job described by `opts` to its end; returns `oshrun`'s exit status. Messages go
/// to stderr. Only one job may run in a process at a time (it owns the signal handlers).
pub fn run(opts: &Options) -> i32 {
    match Job::start(opts) {
        Ok(job) => job.run(),
        Err(code) => code,
    }
}

/// A fresh job token: [`TOKEN_BYTES`] random bytes from the kernel, in hex.
fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    sys::random_bytes(&mut bytes)?;
    Ok(crate::wire::hex_encode(&bytes))
}

/// Whether `given` equals `want`, in time that depends on their lengths only.
fn token_matches(given: &[u8], want: &[u8]) -> bool {
    if given.len() != want.len() {
        return false;
    }
    let diff = given.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(diff) == 0
}

/// Find `program` as `execvp` would: as given when it has a `/`, else in `PATH`.
pub fn resolve_program(program: &OsStr) -> Result<PathBuf, String> {
    let shown = program.to_string_lossy();
    let executable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        return match p.metadata() {
            Err(e) => Err(format!("cannot start {shown:?}: {e}")),
            Ok(_) if !executable(&p) => Err(format!("cannot start {shown:?}: not an executable file")),
            Ok(_) => Ok(p),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let candidate = dir.join(program);
        if executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(format!("cannot start {shown:?}: not found in PATH"))
}

/// A PE's PMI connection: non-blocking, with its unparsed input and unsent replies.
#[derive(Debug)]
struct Conn {
    fd: OwnedFd,
    input: LineBuf,
    output: Vec<u8>,
    closed: bool,
}

impl Conn {
    fn new(fd: OwnedFd) -> io::Result<Conn> {
        sys::set_nonblocking(fd.as_raw_fd())?;
        Ok(Conn { fd, input: LineBuf::new(), output: Vec::new(), closed: false })
    }

    /// Read what is there; marks the connection closed at EOF or on error.
    fn read_available(&mut self) {
        let mut buf = [0u8; 16 * 1024];
        while !self.closed {
            match sys::read(self.fd.as_raw_fd(), &mut buf) {
                Ok(0) => self.closed = true,
                Ok(n) => self.input.feed(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => self.closed = true,
            }
        }
    }

    fn send(&mut self, cmd: &Command) {
        if self.closed {
            return;
        }
        match cmd.encode() {
            Ok(line) => self.output.extend_from_slice(line.as_bytes()),
            // Our own replies always encode; a failure here is a bug worth hearing about.
            Err(e) => eprintln!("oshrun: internal error: cannot encode {cmd}: {e}"),
        }
        self.flush();
    }

    fn flush(&mut self) {
        while !self.output.is_empty() && !self.closed {
            match sys::send(self.fd.as_raw_fd(), &self.output) {
                Ok(n) => {
                    self.output.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.output.clear();
                    self.closed = true;
                }
            }
        }
    }
}

/// One of a PE's output pipes.
#[derive(Debug)]
struct Pipe {
    fd: OwnedFd,
    fwd: LineForwarder,
}

#[derive(Debug)]
struct Pe {
    pid: libc::pid_t,
    running: bool,
    /// It has exited but is not reaped yet: its pid and process group id are still ours.
    zombie: bool,
    exited_ok: bool,
    conn: Option<Conn>,
    /// It sent at least one PMI command (or claimed its id over `--pmi-port`).
    spoke: bool,
    /// When its PMI connection was seen closed without `finalize`, while it ran.
    closed_at: Option<Instant>,
    /// stdout, stderr
    pipes: [Option<Pipe>; 2],
    /// How it ended, once it has.
    exit: Option<Exit>,
}

impl Pe {
    /// Neither reaped nor lost: `kill_tree` may still signal it and its group.
    fn unreaped(&self) -> bool {
        self.running || self.zombie
    }
}

/// A `--pmi-port` connection that has not yet said who it is.
#[derive(Debug)]
struct Pending {
    conn: Conn,
    peer: String,
    /// When it was accepted: it must say `cmd=initack` within [`INITACK_DEADLINE`].
    since: Instant,
}

/// How long a `--pmi-port` connection may take to send its first line before it is closed (a
/// PE sends it at once).
pub const INITACK_DEADLINE: Duration = Duration::from_secs(10);
/// How many `--pmi-port` connections may wait for their first line at once: a new one beyond it
/// closes the oldest, so that other users' idle connections cannot take every descriptor.
pub const MAX_PENDING: usize = 64;
/// How long `oshrun` stops accepting when it has no descriptor left and none to free.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The job is being ended: PEs got SIGTERM and will get SIGKILL at `kill_at`.
#[derive(Debug, Clone, Copy)]
struct Ending {
    code: i32,
    kill_at: Instant,
    killed: bool,
    give_up_at: Instant,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    Signals,
    Listener,
    Pending(usize),
    Conn(usize),
    Pipe(usize, usize),
}

struct Job<'a> {
    opts: &'a Options,
    pes: Vec<Pe>,
    server: PmiServer,
    listener: Option<TcpListener>,
    /// The `--pmi-port` job's token, which a connection's `cmd=initack` must carry.
    token: Option<String>,
    /// TCP connections that have not yet said `cmd=initack`.
    pending: Vec<Pending>,
    /// Connections refused so far (for [`REFUSALS_REPORTED`]).
    refused: usize,
    /// Accepting is paused until then (out of descriptors, none to free).
    accept_paused_until: Option<Instant>,
    /// Whether running out of descriptors was reported (once per job).
    out_of_fds_said: bool,
    signals: SignalPipe,
    deadline: Option<Instant>,
    ending: Option<Ending>,
    drain_until: Option<Instant>,
    /// The status table the PEs write where they are (`None` if it could not be made).
    status: Option<Table>,
    started: Instant,
    /// Each PE's CPU mask (`--bind-to`).
    binding: Vec<Option<sys::CpuMask>>,
    /// The CPUs `oshrun` may use.
    cpus: Vec<usize>,
    /// What ends the PEs' process groups if `oshrun` dies (see `keeper.rs`).
    keeper: Option<super::keeper::Keeper>,
}

impl<'a> Job<'a> {
    fn start(opts: &'a Options) -> Result<Job<'a>, i32> {
        sys::ensure_stdio_open();
        let program = resolve_program(&opts.program).map_err(|e| {
            eprintln!("oshrun: {e}");
            2
        })?;
        let signals = SignalPipe::install().map_err(|e| {
            eprintln!("oshrun: cannot install signal handlers: {e}");
            1
        })?;
        let listener = if opts.pmi_port {
            let l = TcpListener::bind("127.0.0.1:0").and_then(|l| l.set_nonblocking(true).map(|_| l));
            match l {
                Ok(l) => Some(l),
                Err(e) => {
                    eprintln!("oshrun: cannot listen for PMI connections on 127.0.0.1: {e}");
                    return Err(1);
                }
            }
        } else {
            None
        };
        let port = match &listener {
            Some(l) => match l.local_addr() {
                Ok(a) => Some(a.to_string()),
                Err(e) => {
                    eprintln!("oshrun: cannot read the PMI listener's address: {e}");
                    return Err(1);
                }
            },
            None => None,
        };
        let token = if opts.pmi_port {
            match new_token() {
                Ok(t) => Some(t),
                Err(e) => {
                    eprintln!("oshrun: cannot read random bytes for the PMI port's token: {e}");
                    return Err(1);
                }
            }
        } else {
            None
        };
        let deadline = opts.timeout.as_ref().map(|t| Instant::now() + t.duration);
        // The hang report's table. Without it the job runs all the same, only the report
        // cannot say where the PEs are.
        let status = match Table::create(opts.npes) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("oshrun: cannot create the PEs' status table ({e}); hang reports will lack it");
                None
            }
        };
        let mut job = Job {
            opts,
            pes: Vec::new(),
            server: PmiServer::new(opts.npes, format!("oshrun_{}_0", std::process::id())),
            listener,
            token,
            pending: Vec::new(),
            refused: 0,
            accept_paused_until: None,
            out_of_fds_said: false,
            signals,
            deadline,
            ending: None,
            drain_until: None,
            status,
            started: Instant::now(),
            binding: bindings(opts),
            cpus: super::sys::affinity().unwrap_or_default(),
            keeper: super::keeper::Keeper::start(),
        };
        job.start_pes(&program, port.as_deref());
        Ok(job)
    }

    /// Start the PEs one by one. Between two starts, heed a signal and the job's timeout;
    /// when one cannot be started (too many open files, too many processes), or on a signal
    /// or the timeout, stop and end the job: [`Job::run`] then ends the PEs already started
    /// like any failed job's, within the usual bounds.
    fn start_pes(&mut self, program: &Path, port: Option<&str>) {
        let n = self.opts.npes;
        for rank in 0..n {
            for sig in self.signals.drain() {
                if sig == libc::SIGQUIT {
                    self.hang_report("SIGQUIT");
                } else if sig != libc::SIGCHLD && self.ending.is_none() {
                    let name = sys::signal_name(sig).unwrap_or("a signal");
                    self.fail(
                        format!("oshrun: caught {name} while starting PEs ({rank} of {n} started); killing {rank} PEs"),
                        128 + sig,
                    );
                }
            }
            if self.ending.is_none()
                && let (Some(d), Some(t)) = (self.deadline, self.opts.timeout.as_ref())
                && Instant::now() >= d
            {
                self.fail(
                    format!(
                        "oshrun: job timed out after {} s while starting PEs ({rank} of {n} started); killing {rank} PEs",
                        t.text
                    ),
                    124,
                );
            }
            if self.ending.is_some() {
                return;
            }
            if let Err(e) = self.spawn(rank, program, port) {
                let shown = self.opts.program.to_string_lossy();
                self.fail(
                    format!("oshrun: cannot start PE {rank} ({shown:?}): {e}; killing the {rank} PEs already started"),
                    2,
                );
                return;
            }
        }
    }

    fn spawn(&mut self, rank: usize, program: &Path, port: Option<&str>) -> io::Result<()> {
        let opts = self.opts;
        let mut cmd = std::process::Command::new(program);
        cmd.arg0(&opts.program)
            .args(&opts.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // Bootstrap variables of an enclosing job (srun, mpirun, a uid job) must not leak into
        // ours: the PE would pick that job's protocol. `-x` may still set them on purpose.
        for (var, _) in std::env::vars_os() {
            let v = var.to_string_lossy();
            if v.starts_with("PMIX_")
                || matches!(
                    v.as_ref(),
                    "PMI_JOBID" | "PMI_VERSION" | "OXSHMEM_UNIQUEID" | "OXSHMEM_UID_RANK" | "OXSHMEM_UID_SIZE"
                )
            {
                cmd.env_remove(&var);
            }
        }
        for (k, v) in &opts.exports {
            cmd.env(k, v);
        }
        cmd.env("OSHRUN_NPES", opts.npes.to_string());
        // How many CPUs the job has here: a PE bound to one core cannot tell from its own
        // affinity whether the job is oversubscribed (and so whether waiting should yield).
        cmd.env("OSHRUN_CPUS", self.cpus.len().to_string());
        // And which: a bound PE's helper threads (the device layer's) may run on any of them.
        cmd.env("OSHRUN_CPU_LIST", super::bind::cpu_list(&self.cpus));
        // The PMI variables and the status table are ours alone.
        for var in ["PMI_FD", "PMI_PORT", "PMI_ID", "PMI_RANK", "PMI_SIZE", TOKEN_VAR, status::FD_VAR] {
            cmd.env_remove(var);
        }
        let status_fd = self.status.as_ref().map(Table::fd);
        if let Some(fd) = status_fd {
            cmd.env(status::FD_VAR, fd.to_string());
        }
        let mut ours = None;
        let mut child_fd = None;
        match port {
            Some(port) => {
                cmd.env("PMI_PORT", port).env("PMI_ID", rank.to_string());
                if let Some(token) = &self.token {
                    cmd.env(TOKEN_VAR, token);
                }
            }
            None => {
                let (a, b) = UnixStream::pair()?;
                child_fd = Some(b.as_raw_fd());
                cmd.env("PMI_FD", b.as_raw_fd().to_string())
                    .env("PMI_RANK", rank.to_string())
                    .env("PMI_SIZE", opts.npes.to_string());
                ours = Some((a, b));
            }
        }
        let launcher_pid = std::process::id() as libc::pid_t;
        // SAFETY: child_setup runs between fork and exec and only makes async-signal-safe
        // calls (prctl, getppid, fcntl), allocating nothing; its captures are plain integers.
        let bind = self.binding.get(rank).copied().flatten();
        // SAFETY: as above; the mask is plain data copied into the closure.
        unsafe { cmd.pre_exec(move || sys::child_setup(launcher_pid, child_fd, status_fd, bind)) };
        let mut child = cmd.spawn()?;
        tracing::debug!(target: "oshrun", pe = rank, pid = child.id(), bound = bind.is_some(), "started");
        // The PE leads its own group (`process_group(0)`): its id is the PE's pid.
        if let Some(k) = &mut self.keeper {
            k.watch_group(child.id() as libc::pid_t);
        }
        // Listed at once, so that it is ended with the job should the rest fail. `child` is
        // dropped without waiting: we reap by pid (see `reap`).
        self.pes.push(Pe {
            pid: child.id() as libc::pid_t,
            running: true,
            zombie: false,
            exited_ok: false,
            conn: None,
            spoke: false,
            closed_at: None,
            pipes: [None, None],
            exit: None,
        });
        let pe = self.pes.last_mut().expect("just pushed");
        if let Some((a, b)) = ours {
            // The child has its end now; ours must not keep it open, or EOF never comes.
            drop(b);
            pe.conn = Some(Conn::new(OwnedFd::from(a))?);
        }
        let pipe = |fd: Option<OwnedFd>| -> io::Result<Option<Pipe>> {
            let Some(fd) = fd else { return Ok(None) };
            sys::set_nonblocking(fd.as_raw_fd())?;
            let tag = opts.tag_output.then(|| format!("[PE {rank}] "));
            Ok(Some(Pipe { fd, fwd: LineForwarder::new(tag) }))
        };
        pe.pipes[0] = pipe(child.stdout.take().map(OwnedFd::from))?;
        pe.pipes[1] = pipe(child.stderr.take().map(OwnedFd::from))?;
        Ok(())
    }

    fn live(&self) -> usize {
        self.pes.iter().filter(|p| p.running).count()
    }

    fn run(mut self) -> i32 {
        let mut reap_now = true;
        loop {
            if reap_now {
                self.reap();
            }
            let now = Instant::now();
            let live = self.live();
            if live == 0 {
                let open = self.pes.iter().any(|p| p.pipes.iter().any(Option::is_some));
                let until = *self.drain_until.get_or_insert(now + DRAIN);
                if !open || now >= until {
                    break;
                }
            }
            if self.ending.is_none()
                && let (Some(d), Some(t)) = (self.deadline, self.opts.timeout.as_ref())
                && now >= d
            {
                let msg = format!("oshrun: job timed out after {} s; killing {live} PEs", t.text);
                self.fail_reporting(msg, 124, true);
            }
            let close_deadline = self.check_closed(now);
            if let Some(e) = self.ending.as_mut() {
                if !e.killed && now >= e.kill_at {
                    e.killed = true;
                    for pe in self.pes.iter().filter(|p| p.unreaped()) {
                        sys::kill_tree(pe.pid, libc::SIGKILL);
                    }
                }
                if live > 0 && now >= e.give_up_at {
                    eprintln!("oshrun: {live} PEs still exist after SIGKILL; giving up on them");
                    break;
                }
            }

            let mut wake = TICK;
            let mut until = |t: Instant| wake = wake.min(t.saturating_duration_since(now));
            if let (None, Some(d)) = (self.ending, self.deadline) {
                until(d);
            }
            if let Some(e) = self.ending {
                until(if e.killed { e.give_up_at } else { e.kill_at });
            }
            if let Some(d) = self.drain_until {
                until(d);
            }
            if let Some(d) = close_deadline {
                until(d);
            }
            if let Some(d) = self.expire_pending(now) {
                until(d);
            }
            if let Some(t) = self.accept_paused_until {
                if now >= t {
                    self.accept_paused_until = None;
                } else {
                    until(t);
                }
            }

            let (mut fds, slots) = self.poll_set();
            let ready = match sys::poll(&mut fds, wake) {
                Ok(n) => n,
                Err(e) => {
                    eprintln!("oshrun: poll failed: {e}; ending the job");
                    self.begin_end(1);
                    std::thread::sleep(Duration::from_millis(10));
                    0
                }
            };
            reap_now = ready == 0;
            for (pfd, slot) in fds.iter().zip(slots) {
                if pfd.revents == 0 {
                    continue;
                }
                match slot {
                    Slot::Signals => reap_now |= self.on_signals(),
                    Slot::Listener => self.accept(),
                    Slot::Pending(i) => self.pending[i].conn.read_available(),
                    Slot::Conn(r) => self.on_conn(r, pfd.revents),
                    Slot::Pipe(r, k) => self.read_pipe(r, k),
                }
            }
            if !self.pending.is_empty() {
                self.promote_pending();
            }
        }
        for r in 0..self.pes.len() {
            for k in 0..2 {
                if let Some(mut p) = self.pes[r].pipes[k].take() {
                    p.fwd.finish(&mut sink(k));
                }
            }
        }
        // The dead PEs' groups: after a failure, nothing they started may outlive the job.
        let failed = self.ending.is_some();
        for pe in self.pes.iter_mut().filter(|p| p.zombie) {
            if failed {
                sys::kill_tree(pe.pid, libc::SIGKILL);
            }
            sys::reap(pe.pid);
            pe.zombie = false;
        }
        self.ending.map_or(0, |e| e.code)
    }

    /// Note the PEs whose PMI connection has closed without `finalize` while they run, and
    /// end the job over one that still runs [`CLOSE_GRACE`] later. A PE that never spoke
    /// PMI (a program that does not use it, such as `/bin/true`) may close it as it likes.
    /// Returns when the next such grace ends, for `poll`'s timeout.
    fn check_closed(&mut self, now: Instant) -> Option<Instant> {
        if self.ending.is_some() {
            return None;
        }
        let mut next: Option<Instant> = None;
        for r in 0..self.pes.len() {
            let pe = &mut self.pes[r];
            if !pe.running || !pe.spoke || !pe.conn.as_ref().is_some_and(|c| c.closed) || self.server.is_finalized(r) {
                continue;
            }
            let since = *pe.closed_at.get_or_insert(now);
            let at = since + CLOSE_GRACE;
            if now >= at {
                // Its exit may be what closed the connection: if so, report that instead.
                self.reap();
                if self.ending.is_some() || !self.pes[r].running {
                    return None;
                }
                let pid = self.pes[r].pid;
                self.fail(
                    format!(
                        "oshrun: PE {r} closed its PMI connection without finalizing (pid {pid}, still running); ending the job"
                    ),
                    1,
                );
                return None;
            }
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        next
    }

    fn poll_set(&self) -> (Vec<libc::pollfd>, Vec<Slot>) {
        let mut fds = Vec::with_capacity(2 + 3 * self.pes.len() + self.pending.len());
        let mut slots = Vec::with_capacity(fds.capacity());
        let mut add = |fd: RawFd, events: libc::c_short, slot: Slot| {
            fds.push(libc::pollfd { fd, events, revents: 0 });
            slots.push(slot);
        };
        add(self.signals.fd(), libc::POLLIN, Slot::Signals);
        if let (Some(l), None, None) = (&self.listener, self.ending, self.accept_paused_until) {
            add(l.as_raw_fd(), libc::POLLIN, Slot::Listener);
        }
        for (i, p) in self.pending.iter().enumerate() {
            add(p.conn.fd.as_raw_fd(), libc::POLLIN, Slot::Pending(i));
        }
        for (r, pe) in self.pes.iter().enumerate() {
            if let Some(c) = pe.conn.as_ref().filter(|c| !c.closed) {
                let out = if c.output.is_empty() { 0 } else { libc::POLLOUT };
                add(c.fd.as_raw_fd(), libc::POLLIN | out, Slot::Conn(r));
            }
            for (k, p) in pe.pipes.iter().enumerate() {
                if let Some(p) = p {
                    add(p.fd.as_raw_fd(), libc::POLLIN, Slot::Pipe(r, k));
                }
            }
        }
        (fds, slots)
    }

    /// Handle the signals that arrived; returns whether a child may have exited.
    fn on_signals(&mut self) -> bool {
        let mut child = false;
        for sig in self.signals.drain() {
            if sig == libc::SIGCHLD {
                child = true;
                continue;
            }
            if sig == libc::SIGQUIT {
                // Report where every PE is, and let the job go on.
                if self.ending.is_none() {
                    self.hang_report("SIGQUIT");
                }
                continue;
            }
            let name = sys::signal_name(sig).unwrap_or("a signal");
            if self.ending.is_none() {
                let live = self.live();
                self.fail(format!("oshrun: caught {name}; killing {live} PEs"), 128 + sig);
            } else if let Some(e) = self.ending.as_mut().filter(|e| !e.killed) {
                // Asked twice: do not wait for the grace period.
                e.killed = true;
                for pe in self.pes.iter().filter(|p| p.unreaped()) {
                    sys::kill_tree(pe.pid, libc::SIGKILL);
                }
            }
        }
        child
    }

    /// Accept every waiting `--pmi-port` connection, keeping at most [`MAX_PENDING`] that have
    /// not sent their first line (the oldest goes first). Running out of descriptors is never
    /// fatal and never spins: the oldest such connection is closed to make room, or, when there
    /// is none, accepting pauses for [`ACCEPT_BACKOFF`]; it is reported once per job.
    fn accept(&mut self) {
        loop {
            let Some(l) = &self.listener else { return };
            match l.accept() {
                Ok((s, peer)) => {
                    let _ = s.set_nodelay(true);
                    if self.pending.len() >= MAX_PENDING {
                        self.drop_oldest_pending(&format!(
                            "{MAX_PENDING} connections were waiting to say who they are, this the oldest"
                        ));
                    }
                    match Conn::new(OwnedFd::from(s)) {
                        Ok(conn) => self.pending.push(Pending { conn, peer: peer.to_string(), since: Instant::now() }),
                        Err(e) => eprintln!("oshrun: dropping a PMI connection: {e}"),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // That connection is gone; the listener is fine.
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    let out_of_fds =
                        matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM));
                    if !self.out_of_fds_said {
                        self.out_of_fds_said = true;
                        eprintln!(
                            "oshrun: accepting a PMI connection failed: {e}; closing the oldest connections that have \
                             not said who they are, and pausing while there are none (not reported again)"
                        );
                    }
                    if !(out_of_fds && self.drop_oldest_pending("out of descriptors, this the oldest waiting")) {
                        self.accept_paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                        return;
                    }
                }
            }
        }
    }

    /// Closes the waiting connection accepted first, as a refusal; whether there was one.
    fn drop_oldest_pending(&mut self, why: &str) -> bool {
        let Some(i) = self.pending.iter().enumerate().min_by_key(|(_, p)| p.since).map(|(i, _)| i) else {
            return false;
        };
        let p = self.pending.swap_remove(i);
        self.refuse(&p.peer, why);
        true
    }

    /// Closes the waiting connections that have not sent their first line within
    /// [`INITACK_DEADLINE`]; returns when the next one's deadline passes.
    fn expire_pending(&mut self, now: Instant) -> Option<Instant> {
        let (late, keep): (Vec<Pending>, Vec<Pending>) =
            std::mem::take(&mut self.pending).into_iter().partition(|p| now >= p.since + INITACK_DEADLINE);
        self.pending = keep;
        for p in late {
            self.refuse(&p.peer, &format!("no first line (cmd=initack) within {} s", INITACK_DEADLINE.as_secs()));
        }
        self.pending.iter().map(|p| p.since + INITACK_DEADLINE).min()
    }

    /// Hand each TCP connection whose first line has arrived to its PE (`cmd=initack`), if
    /// that line carries the job's token; refuse (close) it otherwise.
    fn promote_pending(&mut self) {
        for mut p in std::mem::take(&mut self.pending) {
            let line = match p.conn.input.pop_line() {
                Ok(Some(line)) => line,
                Ok(None) if !p.conn.closed => {
                    self.pending.push(p);
                    continue;
                }
                Ok(None) => continue,
                Err(e) => {
                    self.refuse(&p.peer, &e.to_string());
                    continue;
                }
            };
            let claim = Command::parse(&line).map_err(|e| e.to_string()).and_then(|c| {
                // Before anything else: a connection without the token may not even learn
                // whether its claim would have been good.
                self.check_token(&c)?;
                self.server.initack(&c)
            });
            match claim {
                Ok((pe, replies)) => {
                    let mut conn = p.conn;
                    for r in &replies {
                        conn.send(r);
                    }
                    self.pes[pe].conn = Some(conn);
                    self.pes[pe].spoke = true;
                    // Requests may have come in the same read as the initack.
                    self.process_lines(pe);
                }
                Err(e) => self.refuse(&p.peer, &e),
            }
        }
    }

    /// Whether the first line of a `--pmi-port` connection carries this job's token.
    fn check_token(&self, cmd: &Command) -> Result<(), String> {
        let Some(want) = &self.token else { return Ok(()) };
        match cmd.get("token") {
            None => Err("it did not present this job's token (only the PEs oshrun started may connect)".into()),
            Some(given) if token_matches(given.as_bytes(), want.as_bytes()) => Ok(()),
            Some(_) => Err("it presented a wrong token (only the PEs oshrun started may connect)".into()),
        }
    }

    /// Log a refused connection (it is dropped, hence closed, by the caller); the job goes on.
    fn refuse(&mut self, peer: &str, why: &str) {
        self.refused += 1;
        if self.refused <= REFUSALS_REPORTED {
            eprintln!("oshrun: refusing a PMI connection from {peer}: {why}");
        } else if self.refused == REFUSALS_REPORTED + 1 {
            eprintln!("oshrun: refusing more PMI connections; no longer reporting each");
        }
    }

    fn on_conn(&mut self, r: usize, revents: libc::c_short) {
        let Some(conn) = self.pes[r].conn.as_mut() else {
            return;
        };
        if revents & libc::POLLOUT != 0 {
            conn.flush();
        }
        if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            conn.read_available();
            self.process_lines(r);
        }
    }

    fn process_lines(&mut self, r: usize) {
        loop {
            let Some(conn) = self.pes[r].conn.as_mut() else {
                return;
            };
            let line = match conn.input.pop_line() {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(e) => {
                    self.fail(format!("oshrun: PE {r}: PMI protocol error: {e}; ending the job"), 1);
                    continue;
                }
            };
            self.pes[r].spoke = true;
            // Once the job is ending, nothing a PE asks for matters any more.
            if self.ending.is_some() {
                continue;
            }
            let cmd = match Command::parse(&line) {
                Ok(cmd) => cmd,
                Err(e) => {
                    let shown: String = line.chars().take(200).collect();
                    self.fail(format!("oshrun: PE {r}: PMI protocol error: {e} in {shown:?}; ending the job"), 1);
                    continue;
                }
            };
            let outcome = self.server.handle(r, &cmd);
            for (to, reply) in &outcome.replies {
                if let Some(c) = self.pes[*to].conn.as_mut() {
                    c.send(reply);
                }
            }
            match outcome.event {
                Some(Event::Abort { code, message }) => {
                    let message = if message.is_empty() { "(no message)".to_string() } else { message };
                    self.fail(format!("oshrun: PE {r} called abort (exit code {code}): {message}"), code);
                }
                Some(Event::ProtocolError(e)) => {
                    self.fail(format!("oshrun: PE {r}: PMI protocol error: {e}; ending the job"), 1)
                }
                Some(Event::Finalized) | None => self.check_barrier_deadlock(),
            }
        }
    }

    /// Forward what a pipe holds now; at EOF forward the partial last line and close it.
    fn read_pipe(&mut self, r: usize, k: usize) {
        let Some(pipe) = self.pes[r].pipes[k].as_mut() else {
            return;
        };
        let mut buf = [0u8; 64 * 1024];
        let mut out = sink(k);
        // Bounded, so that one chatty PE cannot starve the others or the timers.
        for _ in 0..16 {
            match sys::read(pipe.fd.as_raw_fd(), &mut buf) {
                Ok(0) => {
                    pipe.fwd.finish(&mut out);
                    self.pes[r].pipes[k] = None;
                    return;
                }
                Ok(n) => pipe.fwd.feed(&buf[..n], &mut out),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    pipe.fwd.finish(&mut out);
                    self.pes[r].pipes[k] = None;
                    return;
                }
            }
        }
    }

    /// Notice the PEs that have exited. They stay unreaped zombies until the job is over
    /// (see the end of [`Job::run`]), so that their process groups can still be signalled.
    fn reap(&mut self) {
        for r in 0..self.pes.len() {
            if !self.pes[r].running {
                continue;
            }
            match sys::exited(self.pes[r].pid) {
                Ok(Some(exit)) => {
                    self.pes[r].running = false;
                    self.pes[r].zombie = true;
                    self.pes[r].exit = Some(exit);
                    self.on_exit(r, exit);
                }
                Ok(None) => {}
                // ECHILD: someone else reaped it; nothing more can be learnt.
                Err(_) => self.pes[r].running = false,
            }
        }
    }

    fn on_exit(&mut self, r: usize, exit: Exit) {
        tracing::debug!(target: "oshrun", pe = r, ?exit, "exited");
        // Its last PMI words (finalize, abort) are already in the socket: hear them first.
        if let Some(conn) = self.pes[r].conn.as_mut() {
            conn.read_available();
            self.process_lines(r);
        }
        if self.ending.is_some() {
            return;
        }
        let pid = self.pes[r].pid;
        match exit {
            Exit::Signal(sig) => {
                let name = sys::signal_name(sig).map(|n| format!(" ({n})")).unwrap_or_default();
                self.fail(
                    format!("oshrun: PE {r} (pid {pid}) was killed by signal {sig}{name}; ending the job"),
                    128 + sig,
                );
            }
            Exit::Code(code) if code != 0 => {
                self.fail(format!("oshrun: PE {r} (pid {pid}) exited with status {code}; ending the job"), code);
            }
            Exit::Code(_) if self.server.is_inited(r) && !self.server.is_finalized(r) => {
                self.fail(
                    format!(
                        "oshrun: PE {r} (pid {pid}) exited with status 0 without finalizing (no shmem_finalize / PMI finalize after init); ending the job"
                    ),
                    1,
                );
            }
            Exit::Code(_) => {
                self.pes[r].exited_ok = true;
                self.check_barrier_deadlock();
            }
        }
    }

    /// PEs wait in a barrier that PEs which already exited can never join: end the job
    /// now rather than at the timeout.
    fn check_barrier_deadlock(&mut self) {
        if self.ending.is_some() {
            return;
        }
        let waiting = self.server.in_barrier();
        let gone: Vec<usize> = (0..self.pes.len()).filter(|&r| self.pes[r].exited_ok).collect();
        if !waiting.is_empty() && !gone.is_empty() && waiting.len() + gone.len() == self.pes.len() {
            self.fail(
                format!(
                    "oshrun: {} {} in a PMI barrier that {} can no longer enter (exited); ending the job",
                    list(&waiting),
                    if waiting.len() == 1 { "waits" } else { "wait" },
                    list(&gone)
                ),
                1,
            );
        }
    }

    /// End the job: print `msg` (after the output the PEs already wrote), SIGTERM every PE,
    /// SIGKILL after [`KILL_GRACE`], and exit with `code`. Only the first failure counts.
    fn fail(&mut self, msg: String, code: i32) {
        self.fail_reporting(msg, code, false);
    }

    /// [`fail`](Self::fail), with the hang report after `msg` when `report` (the job timed out:
    /// where each PE is, before they are killed).
    fn fail_reporting(&mut self, msg: String, code: i32, report: bool) {
        if self.ending.is_some() {
            return;
        }
        for r in 0..self.pes.len() {
            for k in 0..2 {
                self.read_pipe(r, k);
            }
        }
        let _ = io::stderr().lock().write_all(format!("{msg}\n").as_bytes());
        if report {
            self.hang_report("timeout");
        }
        self.begin_end(code);
    }

    /// Prints where each PE is, from the status table the PEs write and from `/proc`, under a
    /// heading that gives `why` (`timeout`, `SIGQUIT`): one line per PE, in one write.
    fn hang_report(&mut self, why: &str) {
        // What the PEs printed so far comes first, so that the report follows it.
        for r in 0..self.pes.len() {
            for k in 0..2 {
                self.read_pipe(r, k);
            }
        }
        let now = status::now_ns();
        let mut out = format!(
            "oshrun: hang report ({why}, {:.1} s after the start): where each of the {} PEs is\n",
            self.started.elapsed().as_secs_f64(),
            self.opts.npes
        );
        for (r, pe) in self.pes.iter().enumerate() {
            out += &format!("oshrun:   PE {r}: {}\n", self.pe_line(r, pe, now));
        }
        for r in self.pes.len()..self.opts.npes {
            out += &format!("oshrun:   PE {r}: not started\n");
        }
        let _ = io::stderr().lock().write_all(out.as_bytes());
    }

    /// The hang report's line for PE `r`.
    fn pe_line(&self, r: usize, pe: &Pe, now: u64) -> String {
        let snap = self.status.as_ref().map(|t| t.read(r));
        let (finalized, inited) = (self.server.is_finalized(r), self.server.is_inited(r));
        let what = || match snap {
            None => "status unknown (no status table)".to_string(),
            Some(None) => "status unreadable (it stopped while writing it)".to_string(),
            Some(Some(s)) if s.state == status::State::Unknown && !inited => {
                "running (not initialized: no PMI init yet)".to_string()
            }
            Some(Some(s)) => s.describe(now),
        };
        if !pe.running {
            let how = match pe.exit {
                Some(Exit::Code(c)) => format!("exited with status {c}"),
                Some(Exit::Signal(sig)) => {
                    format!(
                        "killed by signal {sig}{}",
                        sys::signal_name(sig).map(|n| format!(" ({n})")).unwrap_or_default()
                    )
                }
                None => "gone".to_string(),
            };
            return if finalized { format!("{how}, after finalizing") } else { how };
        }
        if finalized {
            return "finalized, still running".to_string();
        }
        match sys::proc_state(pe.pid) {
            Some('T') => format!("stopped (SIGSTOP); {}", what().replacen("running (", "was running (", 1)),
            Some('t') => format!("stopped by a debugger; {}", what()),
            Some('Z') => "exited (not yet noticed)".to_string(),
            _ => what(),
        }
    }

    fn begin_end(&mut self, code: i32) {
        if self.ending.is_some() {
            return;
        }
        let now = Instant::now();
        self.ending =
            Some(Ending { code, kill_at: now + KILL_GRACE, killed: false, give_up_at: now + KILL_GRACE + GIVE_UP });
        // The PEs that already exited too: what they left in their groups ends with the job.
        for pe in self.pes.iter().filter(|p| p.unreaped()) {
            sys::kill_tree(pe.pid, libc::SIGTERM);
        }
    }
}

/// Where output pipe `k` goes: 0 → our stdout, 1 → our stderr.
/// Each PE's CPU mask under the policy in force ([`bind`](super::bind)); with
/// `--report-bindings`, says so on stderr.
fn bindings(opts: &Options) -> Vec<Option<sys::CpuMask>> {
    use super::bind;
    let cpus = bind::allowed_cpus();
    let ncores = bind::cores(&cpus).len();
    let policy = bind::effective(opts.bind_to, opts.npes, ncores);
    let plan = bind::plan(&cpus, opts.npes, policy);
    if opts.report_bindings {
        let how = if opts.bind_to.is_some() { "" } else { " (default)" };
        eprintln!(
            "oshrun: binding {} PEs to {policy}{how}; {} CPUs in {ncores} cores allowed ({})",
            opts.npes,
            cpus.len(),
            bind::cpu_list(&cpus.iter().map(|c| c.id).collect::<Vec<_>>())
        );
        for (pe, p) in plan.iter().enumerate() {
            match p {
                Some(ids) => eprintln!("oshrun: PE {pe} bound to CPUs {}", bind::cpu_list(ids)),
                None => eprintln!("oshrun: PE {pe} not bound"),
            }
        }
    }
    let required = opts.bind_to.is_some();
    plan.into_iter().map(|p| p.map(|ids| sys::CpuMask::new(&ids, required))).collect()
}

fn sink(k: usize) -> Box<dyn Write> {
    if k == 0 { Box::new(io::stdout().lock()) } else { Box::new(io::stderr().lock()) }
}

/// `PE 3` or `PEs 1, 2`.
fn list(pes: &[usize]) -> String {
    let s = if pes.len() == 1 { "" } else { "s" };
    format!("PE{s} {}", pes.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve() {
        assert!(resolve_program(OsStr::new("sh")).unwrap().ends_with("sh"));
        let e = resolve_program(OsStr::new("oxshmem-no-such-program")).unwrap_err();
        assert!(e.contains("\"oxshmem-no-such-program\"") && e.contains("not found in PATH"), "{e}");
        let e = resolve_program(OsStr::new("./oxshmem-no-such-program")).unwrap_err();
        assert!(e.contains("./oxshmem-no-such-program"), "{e}");
        let e = resolve_program(OsStr::new("/etc/passwd")).unwrap_err();
        assert!(e.contains("not an executable"), "{e}");
        assert!(resolve_program(OsStr::new("/bin/sh")).is_ok());
    }
}
