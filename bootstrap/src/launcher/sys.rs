//! The launcher's few system calls that std does not wrap: signals into a self-pipe,
//! non-blocking descriptors, `poll`, process groups, `waitid`, and the child-side setup that
//! runs between `fork` and `exec`. Every `unsafe` of the launcher lives here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// Write end of the self-pipe that the signal handler writes signal numbers into.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// Signals `oshrun` handles.
pub(super) const HANDLED: [libc::c_int; 4] = [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

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
/// this reaches what it started too). Call only while `pid` is not yet reaped, so that
/// neither number can have been reused.
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

/// If child `pid` has ended, kill what is left of its process group while the zombie still
/// pins the group id (only when `kill_group`), then reap it. `None` while it runs.
pub(super) fn try_reap(pid: libc::pid_t, kill_group: bool) -> io::Result<Option<Exit>> {
    // SAFETY: a zeroed siginfo_t is valid; waitid fills it. WNOWAIT leaves the child waitable.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid siginfo_t to fill.
    let rc = unsafe {
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (si_pid is 0 when nothing is waitable yet).
    if unsafe { info.si_pid() } == 0 {
        return Ok(None);
    }
    if kill_group {
        // SAFETY: the child is a zombie, so its pid and group id cannot have been reused.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let mut status = 0;
    // SAFETY: `status` is a valid int to fill; the child is waitable, so this does not block.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Some(if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    }))
}

/// Child side, between fork and exec: die with the launcher (`PR_SET_PDEATHSIG`), and let
/// `pmi_fd` (if any) survive exec.
///
/// # Safety
/// Must run in the child after fork: it only makes async-signal-safe calls.
pub(super) unsafe fn child_setup(launcher_pid: libc::pid_t, pmi_fd: Option<RawFd>) -> io::Result<()> {
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
        if let Some(fd) = pmi_fd
            && libc::fcntl(fd, libc::F_SETFD, 0) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
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
