//! The exchange of GPU heaps between the PEs of a node: each offers its heap's descriptor on
//! an abstract Unix socket and maps every other PE's.

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use super::node::SetupError;
use super::{Gpu, GpuHeap, PeerMapping, fdpass};

type Result<T> = std::result::Result<T, SetupError>;

/// What a PE tells the others before the heap exchange.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Card {
    pub(crate) pid: u32,
    /// Its GPU heap's size.
    pub(crate) size: usize,
    /// A random number in its socket's name: PEs in different pid namespaces that share a
    /// network namespace may have equal pids.
    pub(crate) nonce: u64,
}

/// A random 64-bit number (std's per-process random hash keys, the time and the pid).
pub(crate) fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

/// The abstract socket a PE's heap descriptor is offered on.
fn socket_name(c: &Card) -> Vec<u8> {
    format!("oxshmem-gpu-heap-{}-{:016x}", c.pid, c.nonce).into_bytes()
}

/// The user id of the process at the other end of `sock` (`SO_PEERCRED`).
fn peer_uid(sock: &std::os::unix::net::UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: ucred is plain data; all-zero is a valid value.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid out-pointers of the sizes given; the socket is open.
    let rc = unsafe {
        libc::getsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_PEERCRED, (&raw mut cred).cast(), &mut len)
    };
    (rc == 0).then_some(cred.uid)
}

/// How long the exchange waits for a peer (the job's launcher ends a job whose PE died).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(60);

/// Offers this PE's heap descriptor to every other PE of the node and maps theirs.
pub(crate) fn exchange(
    shmem: &oxshmem::Shmem,
    me: usize,
    node: &[usize],
    cards: &[Card],
    gpu: &Gpu,
    fd: &OwnedFd,
) -> Result<Vec<(usize, PeerMapping)>> {
    let io = |what: String, e: std::io::Error| SetupError::Invalid(format!("GPU heap exchange: {what}: {e}"));
    let name = socket_name(&cards[me]);
    let listener = fdpass::listen_abstract(&name)
        .map_err(|e| io(format!("listening on @{}", String::from_utf8_lossy(&name)), e))?;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    listener.set_nonblocking(true).map_err(|e| io("the listener".into(), e))?;
    shmem.barrier_all()?;
    let peers = node.len() - 1;
    let maps = std::thread::scope(|s| -> Result<Vec<(usize, PeerMapping)>> {
        let server = s.spawn(|| -> std::result::Result<(), String> {
            let deadline = Instant::now() + EXCHANGE_TIMEOUT;
            let mut served = 0;
            while served < peers {
                match listener.accept() {
                    Ok((sock, _)) => {
                        // Only this user's processes get the heap (the socket is in the
                        // abstract namespace, which has no file permissions).
                        if peer_uid(&sock) != Some(uid) {
                            tracing::debug!(target: "cuda", "a process of another user connected: refused");
                            continue;
                        }
                        sock.set_nonblocking(false).map_err(|e| e.to_string())?;
                        sock.set_read_timeout(Some(EXCHANGE_TIMEOUT)).map_err(|e| e.to_string())?;
                        fdpass::offer_fd(&sock, fd.as_fd(), true).map_err(|e| format!("offering the heap: {e}"))?;
                        served += 1;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if Instant::now() > deadline {
                            return Err(format!(
                                "{served} of the {peers} other PEs of this node took this PE's GPU heap within {} s",
                                EXCHANGE_TIMEOUT.as_secs()
                            ));
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => return Err(format!("accept: {e}")),
                }
            }
            Ok(())
        });
        let mut maps = Vec::with_capacity(peers);
        for &pe in node.iter().filter(|&&p| p != me) {
            let Card { pid, size, .. } = cards[pe];
            let sock = fdpass::connect_abstract(&socket_name(&cards[pe]))
                .map_err(|e| io(format!("connecting to PE {pe} (pid {pid})"), e))?;
            sock.set_read_timeout(Some(EXCHANGE_TIMEOUT)).map_err(|e| io("the socket".into(), e))?;
            let (peer_fd, _) = fdpass::take_fd(&sock, true).map_err(|e| io(format!("taking PE {pe}'s heap"), e))?;
            let m = GpuHeap::import_peer(gpu, &peer_fd, size)
                .map_err(|e| SetupError::Invalid(format!("mapping PE {pe}'s GPU heap: {e}")))?;
            maps.push((pe, m));
        }
        server.join().expect("the GPU heap server does not panic").map_err(SetupError::Invalid)?;
        Ok(maps)
    })?;
    shmem.barrier_all()?;
    Ok(maps)
}
