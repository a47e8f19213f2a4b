//! The keeper: a small process that ends what is left of a job once `oshrun` is gone, however
//! it went, `kill -9` included.
//!
//! The PEs die with `oshrun` by their parent-death signal, but what a PE started (its own
//! children) would be adopted by init and go on. Each PE leads its own process group, which
//! its children join unless they leave it on purpose, so `oshrun` starts, before any PE, a
//! keeper: `oshrun` itself again (`--internal-keeper`), in a process group of its own (a
//! terminal's Ctrl-C reaches `oshrun` alone), with an empty environment, ignoring the signals
//! that end a job, reading from a pipe whose only writer is `oshrun`. `oshrun` writes each PE's
//! group id there as it starts it, and, when the job has ended the ordinary way (having ended
//! the PEs of a failed job itself), a last line that lets the keeper go. When the pipe reaches
//! its end without that line — `oshrun` was killed, or crashed — the keeper sends `SIGKILL` to
//! every group it was told of and exits.
//!
//! What it cannot reach: a process that left its PE's group (`setsid`, `setpgid`) or was
//! started in another one on purpose.

use std::io::{BufRead, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};

/// The argument that makes `oshrun` a keeper.
pub const KEEPER_ARG: &str = "--internal-keeper";

/// `oshrun`'s side: the keeper process and the pipe to it.
#[derive(Debug)]
pub(super) struct Keeper {
    to: std::fs::File,
    _child: Child,
}

impl Keeper {
    /// Starts the keeper; `None` (after a warning) when it cannot be started: the job then runs
    /// as before, and a `kill -9` of `oshrun` leaves the PEs' children running.
    pub(super) fn start() -> Option<Keeper> {
        let mut p = [0 as libc::c_int; 2];
        // SAFETY: `p` has room for the two descriptors; O_CLOEXEC keeps both out of the PEs.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            tracing::warn!(target: "oshrun", "no keeper (pipe: {})", std::io::Error::last_os_error());
            return None;
        }
        // SAFETY: pipe2 made both descriptors, ours alone.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
        let exe = std::env::current_exe().ok()?;
        let child = std::os::unix::process::CommandExt::process_group(
            Command::new(exe).arg(KEEPER_ARG).env_clear().stdin(Stdio::from(rd)).stdout(Stdio::null()),
            0,
        )
        .spawn();
        match child {
            Ok(c) => Some(Keeper { to: std::fs::File::from(wr), _child: c }),
            Err(e) => {
                tracing::warn!(target: "oshrun", "no keeper ({e}): kill -9 of oshrun would leave the PEs' children running");
                None
            }
        }
    }

    /// Tells the keeper of a PE's process group.
    pub(super) fn watch_group(&mut self, pgid: libc::pid_t) {
        let _ = writeln!(self.to, "{pgid}");
    }
}

impl Drop for Keeper {
    /// The job ended the ordinary way (`oshrun` ended every PE of a failed job itself, and
    /// leaves what the PEs of a job that succeeded started in the background alone): the
    /// keeper goes without killing anything.
    fn drop(&mut self) {
        let _ = writeln!(self.to, "{RELEASE}");
    }
}

/// What `oshrun` writes when its job ended the ordinary way.
const RELEASE: &str = "release";

/// The keeper's own side (`oshrun --internal-keeper`): returns its exit status.
pub fn keeper_main() -> i32 {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
        // SAFETY: ignoring a signal has no memory effects.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let mut groups: Vec<libc::pid_t> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim() == RELEASE {
            return 0;
        }
        if let Ok(g) = line.trim().parse::<libc::pid_t>()
            && g > 1
        {
            groups.push(g);
        }
    }
    // `oshrun` is gone: nothing of its job may outlive it.
    for g in groups {
        // SAFETY: kill(2) has no memory effects; a group id only names a group while one of
        // its processes lives (a group id is not reused before).
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    0
}
