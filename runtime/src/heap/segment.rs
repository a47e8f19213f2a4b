//! Memory segments backed by a memfd, mapped by every PE of the host.
//!
//! A segment is created by its owner (`memfd_create`, mode 0600, sized with `ftruncate` so that
//! pages are committed only as they are touched) and mapped `MAP_SHARED`. Peers on the same
//! host map the same file through `/proc/<owner pid>/fd/<fd>`. A memfd has no name in any
//! file system, so nothing can ever be left behind in `/dev/shm`, and no other job can guess
//! or collide with it: the file vanishes with the last process that maps it.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A live `mmap` of a segment; unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a Mapping is an address range; the memory is shared between processes anyway and
// every access goes through raw pointers whose synchronization the runtime's protocols provide.
unsafe impl Send for Mapping {}
// SAFETY: as above; &Mapping only exposes the address and length.
unsafe impl Sync for Mapping {}

/// Why setting up or mapping a segment failed: the call with its subject (`mmap of PE 2's
/// heap`) and the OS's reason, taken from `errno` at once; `errno` is empty for a check of our
/// own (a size that does not fit, a peer's file of the wrong size). Becomes
/// [`ErrorKind::Os`](crate::ErrorKind::Os) with both parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OsFailure {
    pub(crate) call: String,
    pub(crate) errno: String,
}

impl OsFailure {
    /// `call` failed with the current `errno`.
    pub(crate) fn last(call: String) -> Self {
        OsFailure { call, errno: std::io::Error::last_os_error().to_string() }
    }

    /// A failed check of our own, with no OS reason.
    pub(crate) fn check(what: String) -> Self {
        OsFailure { call: what, errno: String::new() }
    }
}

impl std::fmt::Display for OsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.errno.is_empty() { f.write_str(&self.call) } else { write!(f, "{} failed: {}", self.call, self.errno) }
    }
}

impl From<OsFailure> for crate::ErrorKind {
    fn from(e: OsFailure) -> Self {
        crate::ErrorKind::Os { call: e.call, errno: e.errno }
    }
}

fn os_err(call: String) -> OsFailure {
    OsFailure::last(call)
}

impl Mapping {
    /// Base address.
    pub(crate) fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn map(fd: &OwnedFd, len: usize, what: &str) -> Result<Mapping, OsFailure> {
        // SAFETY: mapping a fresh range chosen by the kernel (addr = NULL) cannot clobber any
        // existing mapping; the fd is valid for the duration of the call.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_err(format!("mmap of {what} ({len} bytes)")));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// Creates a new anonymous shared file of `len` bytes (mode 0600) and maps it at an
    /// address aligned to `align` (a power of two, at least the page size).
    pub(crate) fn create(len: usize, name: &str, align: usize) -> Result<(OwnedFd, Mapping), OsFailure> {
        let cname = CString::new(name).map_err(|_| OsFailure::check("segment name has a NUL byte".into()))?;
        // SAFETY: cname is a valid NUL-terminated string.
        let raw = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(os_err(format!("memfd_create({name})")));
        }
        // SAFETY: memfd_create returned a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: fd is a valid descriptor.
        if unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } != 0 {
            return Err(os_err(format!("fchmod 0600 of {name}")));
        }
        let off = libc::off_t::try_from(len).map_err(|_| OsFailure::check(format!("segment size {len} too large")))?;
        // SAFETY: fd is a valid descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), off) } != 0 {
            return Err(os_err(format!("ftruncate of {name} to {len} bytes")));
        }
        let m = Self::map_aligned(&fd, len, align, name)?;
        Ok((fd, m))
    }

    /// Maps `fd` at an address aligned to `align`: reserve `len + align` bytes of address space,
    /// map the file over the aligned part, release the rest.
    fn map_aligned(fd: &OwnedFd, len: usize, align: usize, what: &str) -> Result<Mapping, OsFailure> {
        let span = len
            .checked_add(align)
            .ok_or_else(|| OsFailure::check(format!("{what}: {len} bytes + alignment overflows")))?;
        // SAFETY: a fresh PROT_NONE reservation chosen by the kernel; nothing else is touched.
        let r = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if r == libc::MAP_FAILED {
            return Err(os_err(format!("reserving {span} bytes of address space for {what}")));
        }
        let start = (r as usize).next_multiple_of(align);
        // SAFETY: [start, start+len) lies inside our own reservation.
        let p = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE | libc::MAP_FIXED,
                fd.as_raw_fd(),
                0,
            )
        };
        let err = (p == libc::MAP_FAILED).then(|| os_err(format!("mmap of {what} ({len} bytes)")));
        // SAFETY: releasing the unused head and tail of our own reservation (and all of it on
        // failure).
        unsafe {
            if let Some(e) = err {
                libc::munmap(r, span);
                return Err(e);
            }
            if start > r as usize {
                libc::munmap(r, start - r as usize);
            }
            let end = start + len;
            let rend = r as usize + span;
            if rend > end {
                libc::munmap(end as *mut libc::c_void, rend - end);
            }
        }
        Ok(Mapping { ptr: start as *mut u8, len })
    }

    /// Maps the segment that process `pid` holds open as descriptor `fd`.
    pub(crate) fn open_peer(pid: u32, fd: i32, len: usize, what: &str) -> Result<Mapping, OsFailure> {
        let path = format!("/proc/{pid}/fd/{fd}");
        let cpath = CString::new(path.clone()).expect("no NUL in a /proc path");
        // SAFETY: cpath is a valid NUL-terminated string.
        let raw = unsafe { libc::open(cpath.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(os_err(format!("open {path} ({what})")));
        }
        // SAFETY: open returned a fresh descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: owned is valid and st points to writable storage of the right size.
        if unsafe { libc::fstat(owned.as_raw_fd(), st.as_mut_ptr()) } != 0 {
            return Err(os_err(format!("fstat {path} ({what})")));
        }
        // SAFETY: fstat succeeded, so st is initialized.
        let size = unsafe { st.assume_init() }.st_size;
        if usize::try_from(size).ok() != Some(len) {
            return Err(OsFailure::check(format!(
                "{path} ({what}) is {size} bytes, expected {len}: the peer's segment changed or the descriptor was reused"
            )));
        }
        Self::map(&owned, len, what)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap that nothing else unmaps.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

#[cfg(test)]
/// The mode bits of an open descriptor (for tests of the 0600 rule).
pub(crate) fn fd_mode(fd: &OwnedFd) -> u32 {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fd is valid and st points to writable storage of the right size.
    let rc = unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) };
    assert_eq!(rc, 0, "fstat of an owned descriptor");
    // SAFETY: fstat succeeded, so st is initialized.
    unsafe { st.assume_init() }.st_mode & 0o7777
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "Miri: memfd_create and mmap are foreign calls")]
    fn create_is_private_and_shared() {
        let (fd, m) = Mapping::create(1 << 20, "oxshmem-test", 1 << 21).unwrap();
        assert_eq!(m.addr() % (1 << 21), 0);
        assert_eq!(fd_mode(&fd), 0o600);
        let pid = std::process::id();
        let peer = Mapping::open_peer(pid, fd.as_raw_fd(), 1 << 20, "self").unwrap();
        // SAFETY: both mappings are 1 MiB long and alive; offset 4096 is inside.
        unsafe {
            *(m.addr() as *mut u64).add(512) = 0xfeed;
            assert_eq!(*(peer.addr() as *const u64).add(512), 0xfeed);
        }
        let err = Mapping::open_peer(pid, fd.as_raw_fd(), 4096, "self").unwrap_err();
        assert!(err.call.contains("expected 4096") && err.errno.is_empty(), "{err}");
    }
}
