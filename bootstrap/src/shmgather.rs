//! An allgather through a file in `/dev/shm` for the PEs of one host, around one launcher
//! barrier.
//!
//! PMI's allgather is a put by every rank, a barrier, and a get of every other rank's value:
//! n² round trips through one launcher process (oshrun, or Hydra's proxy on the node), which
//! made start-up grow with n² (1,000 PEs: minutes). When the launcher's process mapping says
//! that every rank is on this host, the ranks instead write their blobs into fixed slots of one
//! shared file, meet in the launcher's barrier, and read the file: O(n) per rank, with one
//! barrier as before. A blob too large for a slot is marked in its slot and goes through the
//! key-value space as before (the reader gets only those).
//!
//! The file is created by whichever rank comes first (mode 0600, never following a link, and
//! refused unless this user owns it), named after the job's key-value space and the
//! allgather's sequence number, and unlinked by rank 0 after the barrier: every rank mapped it
//! before the barrier, so the name is no longer needed.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Bytes per rank's slot: an 8-byte header (the blob's length, or [`TOO_BIG`]) and the blob.
pub(crate) const SLOT: usize = 2048;
/// A slot whose blob went through the key-value space.
const TOO_BIG: u64 = u64::MAX - 1;
/// Where the files live.
const DIR: &str = "/dev/shm";

/// One allgather's shared file, mapped.
#[derive(Debug)]
pub(crate) struct ShmGather {
    path: String,
    ptr: *mut u8,
    len: usize,
    _fd: OwnedFd,
}

fn os_err(what: String) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

impl ShmGather {
    /// Whether a blob of `len` bytes fits a slot.
    pub(crate) fn fits(len: usize) -> bool {
        len <= SLOT - 8
    }

    /// Opens (creating if first) the file of allgather `epoch` of job `job` for `size` ranks.
    pub(crate) fn open(job: &str, epoch: u64, size: usize) -> Result<ShmGather, String> {
        let clean: String =
            job.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let path = format!("{DIR}/oxshmem-gather-{uid}-{clean}-{epoch}");
        let c = CString::new(path.clone()).map_err(|_| format!("{path}: NUL in the name"))?;
        // SAFETY: c is a valid NUL-terminated path.
        let raw =
            unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0o600) };
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
        let st = unsafe { st.assume_init() };
        if st.st_uid != uid || st.st_mode & 0o077 != 0 {
            return Err(format!(
                "{path} belongs to uid {} with mode {:o}: not ours, refusing it",
                st.st_uid, st.st_mode
            ));
        }
        let len = size.checked_mul(SLOT).ok_or("job too large for a gather file")?;
        // Every rank sets the same length; extending is idempotent and the new bytes are zero.
        // SAFETY: fd is valid.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(os_err(format!("ftruncate {path} to {len} bytes")));
        }
        // SAFETY: a fresh shared mapping of a file at least `len` bytes long.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_err(format!("mmap {path} ({len} bytes)")));
        }
        Ok(ShmGather { path, ptr: ptr.cast(), len, _fd: fd })
    }

    /// Writes `rank`'s slot: the blob, or the mark that it went through the key-value space.
    pub(crate) fn write(&self, rank: usize, blob: Option<&[u8]>) {
        let at = rank * SLOT;
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
        let at = rank * SLOT;
        // SAFETY: inside the mapping; written before the barrier this read follows.
        let header = unsafe { self.ptr.add(at).cast::<u64>().read_volatile() };
        match header.wrapping_sub(1) {
            TOO_BIG => Ok(None),
            u64::MAX => Err(format!("{}: rank {rank} wrote nothing before the barrier", self.path)),
            n if Self::fits(n as usize) => {
                let mut v = vec![0u8; n as usize];
                // SAFETY: inside the mapping (n fits a slot).
                unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(at + 8), v.as_mut_ptr(), v.len()) };
                Ok(Some(v))
            }
            n => Err(format!("{}: rank {rank}'s slot claims {n} bytes", self.path)),
        }
    }

    /// Removes the name (the mappings stay valid).
    pub(crate) fn unlink(&self) {
        if let Ok(c) = CString::new(self.path.clone()) {
            // SAFETY: c is a valid path.
            unsafe { libc::unlink(c.as_ptr()) };
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
        let job = format!("test_{}", std::process::id());
        let a = ShmGather::open(&job, 1, 3).unwrap();
        let b = ShmGather::open(&job, 1, 3).unwrap();
        a.write(0, Some(b"card of rank 0"));
        b.write(1, None);
        b.write(2, Some(b""));
        assert_eq!(b.read(0).unwrap().as_deref(), Some(&b"card of rank 0"[..]));
        assert_eq!(a.read(1).unwrap(), None);
        assert_eq!(a.read(2).unwrap().as_deref(), Some(&b""[..]));
        a.unlink();
        let c = ShmGather::open(&job, 1, 3).unwrap();
        let e = c.read(0).unwrap_err();
        assert!(e.contains("wrote nothing"), "{e}");
        c.unlink();
        assert!(ShmGather::fits(SLOT - 8) && !ShmGather::fits(SLOT - 7));
        assert!(one_node(Some(&[0, 0, 0])) && !one_node(Some(&[0, 1])) && !one_node(None));
    }
}
