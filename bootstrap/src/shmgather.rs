//! An allgather through shared memory for the ranks of one host, around the launcher's
//! barriers.
//!
//! PMI's allgather is a put by every rank, a barrier, and a get of every other rank's value:
//! n² round trips through one launcher process (oshrun, or Hydra's proxy on the node), which
//! made start-up grow with n² (1,000 PEs: minutes). When the launcher's process mapping says
//! that every rank is on this host, rank 0 instead creates an anonymous shared segment
//! (`memfd_create`) and publishes where it is (`PID:FD`) in the key-value space with its blob;
//! after the first barrier every other rank opens it through `/proc/PID/fd/FD` (as the heaps
//! of node peers are opened), writes its blob into its fixed slot, and after a second barrier
//! every rank reads the slots: O(n) per rank and two barriers. The segment has no name, so a
//! job that dies half-way leaves nothing behind. A blob too large for a slot, or a rank that
//! cannot open the segment, goes through the key-value space as before (every rank also puts
//! its blob there, one put each), and readers get only what they did not find in the segment.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Bytes per rank's slot: an 8-byte header (the blob's length + 1, or [`TOO_BIG`] + 1) and the
/// blob.
pub(crate) const SLOT: usize = 2048;
/// A slot whose blob went through the key-value space.
const TOO_BIG: u64 = u64::MAX - 1;

/// Bytes before the first slot: a random 64-bit nonce (its token carries it too), so that a
/// rank that follows a token to a process of the same PID on another host refuses whatever it
/// finds there.
const HEAD: usize = 64;

/// One allgather's shared segment, mapped.
#[derive(Debug)]
pub(crate) struct ShmGather {
    ptr: *mut u8,
    len: usize,
    /// Where the other ranks find it (`PID:FD:NONCE`).
    token: String,
    _fd: OwnedFd,
}

fn os_err(what: String) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn map(fd: OwnedFd, len: usize, token: String) -> Result<ShmGather, String> {
    // SAFETY: a fresh shared mapping of a file at least `len` bytes long.
    let ptr = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
    };
    if ptr == libc::MAP_FAILED {
        return Err(os_err(format!("mmap of the allgather segment ({len} bytes)")));
    }
    Ok(ShmGather { ptr: ptr.cast(), len, token, _fd: fd })
}

impl ShmGather {
    /// Whether a blob of `len` bytes fits a slot.
    pub(crate) fn fits(len: usize) -> bool {
        len <= SLOT - 8
    }

    /// Creates the segment of an allgather among `size` ranks (rank 0).
    pub(crate) fn create(size: usize) -> Result<ShmGather, String> {
        let len =
            size.checked_mul(SLOT).and_then(|l| l.checked_add(HEAD)).ok_or("job too large for an allgather segment")?;
        let name = CString::new("oxshmem-allgather").expect("no NUL");
        // SAFETY: name is a valid C string.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(os_err("memfd_create for the allgather".to_string()));
        }
        // SAFETY: memfd_create returned a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: fd is valid.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(os_err(format!("ftruncate of the allgather segment to {len} bytes")));
        }
        let mut nonce = 0u64;
        // SAFETY: getrandom writes at most 8 bytes into `nonce`.
        let got = unsafe { libc::getrandom((&raw mut nonce).cast(), 8, 0) };
        if got != 8 {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            nonce = t.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32);
        }
        let nonce = nonce | 1; // never 0, the value of a fresh segment
        let token = format!("{}:{}:{nonce:x}", std::process::id(), fd.as_raw_fd());
        let g = map(fd, len, token)?;
        // SAFETY: the mapping is at least HEAD bytes; nobody else has it yet.
        unsafe { g.ptr.cast::<u64>().write_volatile(nonce) };
        Ok(g)
    }

    /// Opens rank 0's segment from its token (`PID:FD:NONCE`), checking its size and nonce.
    pub(crate) fn open(token: &str, size: usize) -> Result<ShmGather, String> {
        let mut it = token.split(':');
        let (pid, fd, nonce) = (|| {
            let pid = it.next()?.parse::<u32>().ok()?;
            let fd = it.next()?.parse::<i32>().ok()?;
            let nonce = u64::from_str_radix(it.next()?, 16).ok()?;
            it.next().is_none().then_some((pid, fd, nonce))
        })()
        .ok_or_else(|| format!("bad allgather segment token {token:?}"))?;
        let path = format!("/proc/{pid}/fd/{fd}");
        let c = CString::new(path.clone()).expect("no NUL in a /proc path");
        // SAFETY: c is a valid NUL-terminated path.
        let raw = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(os_err(format!("open {path}")));
        }
        // SAFETY: open returned a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fd is valid; st is writable storage of the right size.
        if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
            return Err(os_err(format!("fstat {path}")));
        }
        // SAFETY: fstat succeeded.
        let have = unsafe { st.assume_init() }.st_size as usize;
        let len =
            size.checked_mul(SLOT).and_then(|l| l.checked_add(HEAD)).ok_or("job too large for an allgather segment")?;
        if have != len {
            return Err(format!("{path} is {have} bytes, expected {len}: not this allgather's segment"));
        }
        let g = map(fd, len, token.to_string())?;
        // SAFETY: the mapping is at least HEAD bytes.
        let found = unsafe { g.ptr.cast::<u64>().read_volatile() };
        if found != nonce {
            return Err(format!("{path} is not this allgather's segment (nonce {found:x}, expected {nonce:x})"));
        }
        Ok(g)
    }

    /// Where the other ranks find the segment.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// Writes `rank`'s slot: the blob, or the mark that it went through the key-value space.
    pub(crate) fn write(&self, rank: usize, blob: Option<&[u8]>) {
        let at = HEAD + rank * SLOT;
        assert!(at + SLOT <= self.len, "rank {rank} outside the gather file");
        let header = match blob {
            Some(b) => {
                assert!(Self::fits(b.len()), "a blob of {} bytes does not fit a slot", b.len());
                // SAFETY: the slot is inside the mapping; only this rank writes it.
                unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.ptr.add(at + 8), b.len()) };
                b.len() as u64
            }
            None => TOO_BIG,
        };
        // Length + 1, so that a slot nobody wrote (zero) is told apart from an empty blob.
        // SAFETY: as above; 8-byte aligned (SLOT is a multiple of 8, the mapping page-aligned).
        unsafe { self.ptr.add(at).cast::<u64>().write_volatile(header.wrapping_add(1)) };
    }

    /// `rank`'s blob: `Ok(Some)` from the file, `Ok(None)` when it went through the key-value
    /// space, an error when the slot is empty or corrupt (the barrier orders the writes before
    /// every read: the launcher's barrier is a round trip through a socket for every rank).
    pub(crate) fn read(&self, rank: usize) -> Result<Option<Vec<u8>>, String> {
        let at = HEAD + rank * SLOT;
        if at + SLOT > self.len {
            return Err(format!("allgather segment: rank {rank} is outside it"));
        }
        // SAFETY: inside the mapping; written before the barrier this read follows.
        let header = unsafe { self.ptr.add(at).cast::<u64>().read_volatile() };
        match header.wrapping_sub(1) {
            TOO_BIG => Ok(None),
            u64::MAX => Err(format!("allgather segment: rank {rank} wrote nothing before the barrier")),
            n if Self::fits(n as usize) => {
                let mut v = vec![0u8; n as usize];
                // SAFETY: inside the mapping (n fits a slot).
                unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(at + 8), v.as_mut_ptr(), v.len()) };
                Ok(Some(v))
            }
            n => Err(format!("allgather segment: rank {rank}'s slot claims {n} bytes")),
        }
    }
}

impl Drop for ShmGather {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap that nothing else unmaps.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Whether the launcher's mapping puts every rank on one node.
pub(crate) fn one_node(mapping: Option<&[usize]>) -> bool {
    mapping.is_some_and(|m| m.iter().all(|&n| n == m[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip_and_mark_big_blobs() {
        let a = ShmGather::create(3).unwrap();
        let b = ShmGather::open(a.token(), 3).unwrap();
        a.write(0, Some(b"card of rank 0"));
        b.write(1, None);
        b.write(2, Some(b""));
        assert_eq!(b.read(0).unwrap().as_deref(), Some(&b"card of rank 0"[..]));
        assert_eq!(a.read(1).unwrap(), None);
        assert_eq!(a.read(2).unwrap().as_deref(), Some(&b""[..]));
        let c = ShmGather::create(3).unwrap();
        assert!(c.read(0).unwrap_err().contains("wrote nothing"));
        assert!(ShmGather::open(a.token(), 4).unwrap_err().contains("expected"));
        assert!(ShmGather::open("12:x", 3).is_err());
        let (pid, fd) = a.token().rsplit_once(':').unwrap().0.split_once(':').unwrap();
        let wrong = ShmGather::open(&format!("{pid}:{fd}:2"), 3).unwrap_err();
        assert!(wrong.contains("not this allgather's segment"), "{wrong}");
        assert!(ShmGather::fits(SLOT - 8) && !ShmGather::fits(SLOT - 7));
        assert!(one_node(Some(&[0, 0, 0])) && !one_node(Some(&[0, 1])) && !one_node(None));
    }
}
