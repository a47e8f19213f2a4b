//! The launcher's few system calls that std does not wrap: signals into a self-pipe,
//! non-blocking descriptors, `poll`, process groups, `waitid`, and the child-side setup that
//! runs between `fork` and `exec`. Every `unsafe` of the launcher lives here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// Write end of the self-pipe that the signal handler writes signal numbers into.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// Signals `oshrun` handles (`SIGQUIT`: print the hang report and go on).
pub(super) const HANDLED: [libc::c_int; 5] = [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = sig as u8;
        // SAFETY: write(2) and errno access are async-signal-safe; `byte` outlives the call.
        // errno is saved and restored so the interrupted code does not see our write's.
        unsafe {
            let saved = *libc::__errno_location();
            libc::write(fd, (&byte as *const u8).cast(), 1);
            *libc::__errno_location() = saved;
        }
    }
}

/// Handlers for [`HANDLED`] that write each signal's number into a pipe; dropping this
/// restores the default dispositions and closes the pipe.
#[derive(Debug)]
pub(super) struct SignalPipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl SignalPipe {
    pub(super) fn install() -> io::Result<SignalPipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        if SIGNAL_PIPE.compare_exchange(-1, write.as_raw_fd(), Ordering::SeqCst, Ordering::SeqCst).is_err() {
            return Err(io::Error::other("another job already owns the signal handlers"));
        }
        for sig in HANDLED {
            set_handler(sig, on_signal as *const () as libc::sighandler_t)?;
        }
        unblock_handled()?;
        Ok(SignalPipe { read, write })
    }

    pub(super) fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// The signal numbers received since the last call.
    pub(super) fn drain(&self) -> Vec<libc::c_int> {
        let mut buf = [0u8; 64];
        let mut out = Vec::new();
        loop {
            match read(self.read.as_raw_fd(), &mut buf) {
                Ok(n) if n > 0 => out.extend(buf[..n].iter().map(|&b| b as libc::c_int)),
                _ => return out,
            }
        }
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for sig in HANDLED {
            let _ = set_handler(sig, libc::SIG_DFL);
        }
        let _ = SIGNAL_PIPE.compare_exchange(self.write.as_raw_fd(), -1, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Unblock [`HANDLED`] in this thread: a signal mask is inherited across exec, and a
/// parent that started us with SIGTERM or SIGCHLD blocked must not leave them unheard.
fn unblock_handled() -> io::Result<()> {
    // SAFETY: a zeroed sigset_t is valid storage for sigemptyset to initialise.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; pthread_sigmask only reads it.
    let rc = unsafe {
        libc::sigemptyset(&mut set);
        for sig in HANDLED {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut())
    };
    if rc != 0 { Err(io::Error::from_raw_os_error(rc)) } else { Ok(()) }
}

fn set_handler(sig: libc::c_int, handler: libc::sighandler_t) -> io::Result<()> {
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value, which we then fill.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler;
    sa.sa_flags = libc::SA_RESTART | if sig == libc::SIGCHLD { libc::SA_NOCLDSTOP } else { 0 };
    // SAFETY: `sa` is fully initialised; the handler only does async-signal-safe work.
    let rc = unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if rc != 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Make sure descriptors 0, 1 and 2 are open, so that a socket or pipe we create never gets
/// one of those numbers (a child's stdio setup would then clobber it).
pub(super) fn ensure_stdio_open() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only inspects the descriptor table.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            // SAFETY: a constant NUL-terminated path; open returns the lowest free number,
            // which is `fd`; it is deliberately never closed.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

pub(super) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor the caller owns; no memory is involved.
    let rc = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 { flags } else { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }
    };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// read(2), retrying on EINTR.
pub(super) fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` writable bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// send(2) with MSG_NOSIGNAL (a PE that went away gives EPIPE, not SIGPIPE), retrying on EINTR.
pub(super) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` readable bytes.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// poll(2) over `fds` for at most `timeout`; EINTR counts as "nothing ready".
pub(super) fn poll(fds: &mut [libc::pollfd], timeout: Duration) -> io::Result<usize> {
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // Round up so that we do not wake a millisecond early and spin.
    let ms = if Duration::from_millis(ms as u64) < timeout { ms.saturating_add(1) } else { ms };
    // SAFETY: `fds` is a valid slice of pollfd and we pass its length.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(e) }
}

/// Send `sig` to process `pid` and to its process group (each PE leads its own group, so
/// this reaches what it started too). Call only while `pid` is not yet reaped (running, or a
/// zombie that [`exited`] left waitable), so that neither number can have been reused: a
/// zombie leader still pins its group id, so the group of a PE that already died is reached
/// too.
pub(super) fn kill_tree(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) has no memory effects; `pid` is an unreaped child of ours.
    unsafe {
        libc::kill(-pid, sig);
        libc::kill(pid, sig);
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Exit {
    /// exit(code)
    Code(i32),
    /// killed by this signal
    Signal(i32),
}

/// How child `pid` ended, if it has, without reaping it: it stays a zombie, so its pid and
/// its process group id stay ours (see [`kill_tree`]) until [`reap`]. `None` while it runs.
pub(super) fn exited(pid: libc::pid_t) -> io::Result<Option<Exit>> {
    // SAFETY: a zeroed siginfo_t is valid; waitid fills it. WNOWAIT leaves the child waitable.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid siginfo_t to fill.
    let rc = unsafe {
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (si_pid is 0 when nothing is waitable yet); for a child
    // that ended, si_status holds its exit code or signal, as si_code says.
    let (who, status) = unsafe { (info.si_pid(), info.si_status()) };
    if who == 0 {
        return Ok(None);
    }
    Ok(Some(if info.si_code == libc::CLD_EXITED { Exit::Code(status) } else { Exit::Signal(status) }))
}

/// Reap child `pid`, which [`exited`] found ended (so this does not block).
pub(super) fn reap(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: `status` is a valid int to fill; the child is waitable.
    unsafe { libc::waitpid(pid, &mut status, 0) };
}

/// The most processes this user may have (`ulimit -u`, `RLIMIT_NPROC`), when the limit
/// applies to us: `None` when it is unlimited, unreadable, or we are root (whom the kernel
/// does not hold to it).
pub(super) fn process_limit() -> Option<u64> {
    // SAFETY: getuid and geteuid cannot fail and touch no memory.
    if unsafe { libc::getuid() == 0 || libc::geteuid() == 0 } {
        return None;
    }
    // SAFETY: a zeroed rlimit is valid; getrlimit fills it.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `rl` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } != 0 || rl.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(rl.rlim_cur as u64)
}

/// Fill `buf` from the kernel's random source: `getrandom(2)`, else `/dev/urandom`.
pub(super) fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: `rest` is valid for `rest.len()` writable bytes.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            filled += n as usize;
            continue;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            // No getrandom (old kernel, seccomp): the device gives the same bytes.
            Some(libc::ENOSYS) | Some(libc::EPERM) => {
                use std::io::Read;
                return std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(rest));
            }
            _ => return Err(e),
        }
    }
    Ok(())
}

/// Child side, between fork and exec: die with the launcher (`PR_SET_PDEATHSIG`), and let
/// `pmi_fd` and `status_fd` (those given) survive exec.
///
/// # Safety
/// Call only in the child between `fork` and `exec` (a `pre_exec` hook): it sets the calling
/// process's death signal, descriptor flags and CPU affinity, which would be wrong for the
/// launcher. `pmi_fd` and `status_fd` must be open descriptors meant for the child. It
/// allocates nothing and makes only async-signal-safe calls, as that context requires.
pub(super) unsafe fn child_setup(
    launcher_pid: libc::pid_t,
    pmi_fd: Option<RawFd>,
    status_fd: Option<RawFd>,
    bind: Option<CpuMask>,
) -> io::Result<()> {
    // SAFETY: prctl, getppid and fcntl are async-signal-safe and touch no memory of ours.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // The launcher may have died before prctl took effect.
        if libc::getppid() != launcher_pid {
            // No allocation between fork and exec: a plain errno value.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        for fd in [pmi_fd, status_fd].into_iter().flatten() {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // sched_setaffinity is a plain system call on a mask that lives in our captures.
        if let Some(m) = &bind
            && libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &m.set) != 0
            && m.required
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A CPU mask for a PE, built before `fork` so that the child only hands it to the kernel.
#[derive(Clone, Copy)]
pub(super) struct CpuMask {
    set: libc::cpu_set_t,
    /// The user asked for the binding (`--bind-to`): failing to bind fails the start. A
    /// default binding that the kernel refuses (a cpuset changed under us) is dropped.
    required: bool,
}

impl CpuMask {
    /// The mask of `cpus` (numbers past the mask's 1,024 bits are left out).
    pub(super) fn new(cpus: &[usize], required: bool) -> CpuMask {
        // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            if c < 8 * size_of::<libc::cpu_set_t>() {
                // SAFETY: `c` is inside the mask (checked above).
                unsafe { libc::CPU_SET(c, &mut set) };
            }
        }
        CpuMask { set, required }
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), in increasing order.
pub(super) fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: as in CpuMask::new.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable mask of the size passed.
    if unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..8 * size_of::<libc::cpu_set_t>())
        .filter(|&c| {
            // SAFETY: `c` is inside the mask.
            unsafe { libc::CPU_ISSET(c, &set) }
        })
        .collect())
}

/// What `/proc` says process `pid` is doing: the state letter of `/proc/PID/stat` (`R`
/// running, `S` sleeping, `T` stopped by a signal, `t` stopped by a debugger, `Z` zombie, ...),
/// `None` when it cannot be read.
pub(super) fn proc_state(pid: libc::pid_t) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold anything: the state follows the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The name of a signal for messages (`SIGKILL`), if it is a common one.
pub(super) fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}
