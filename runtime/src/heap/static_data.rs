//! The executable's static data (`.data` + `.bss`) as symmetric segment 1.
//!
//! C OpenSHMEM programs use global and static variables as symmetric objects. At init —
//! before the program starts threads, as OpenSHMEM programs do — the executable's writable
//! `PT_LOAD` segment is copied into a memfd, which is then mapped `MAP_SHARED | MAP_FIXED` over
//! the very same addresses: the program's values survive and peers on the host map the same
//! file, so puts, gets, atomics and waits reach those variables exactly like heap objects.
//! The first pages of the segment may hold RELRO data (`.got`, `.data.rel.ro`) that the dynamic
//! linker made read-only: every page gets its protection back after the remap. Addresses
//! differ between PEs (PIE), so peers translate by offset, as for the heap.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::segment::OsFailure;

/// The executable's writable data segment (the one holding `.data` and `.bss`),
/// page-aligned: `(start, len)`. GNU ld emits one writable `PT_LOAD` that begins with the RELRO
/// data; lld emits a separate writable `PT_LOAD` for RELRO alone, which is skipped.
fn writable_segment() -> Option<(usize, usize)> {
    #[derive(Default)]
    struct Found {
        loads: Vec<(usize, usize)>,
        relro: Option<(usize, usize)>,
    }
    /// `dl_iterate_phdr`'s callback.
    ///
    /// # Safety
    /// `info` must point to a valid record and `data` to the `Found` its caller passed, as
    /// `dl_iterate_phdr` does.
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our own `data`; the first object it
        // reports is the main executable.
        unsafe {
            let found = &mut *(data as *mut Found);
            let info = &*info;
            for i in 0..info.dlpi_phnum as usize {
                let ph = &*info.dlpi_phdr.add(i);
                let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
                if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
                    found.loads.push((start, ph.p_memsz as usize));
                } else if ph.p_type == libc::PT_GNU_RELRO {
                    found.relro = Some((start, ph.p_memsz as usize));
                }
            }
        }
        1 // stop after the executable
    }
    let mut found = Found::default();
    // SAFETY: cb only reads the headers it is given and writes `found`.
    unsafe { libc::dl_iterate_phdr(Some(cb), (&raw mut found).cast()) };
    let covered = |(s, l): (usize, usize)| found.relro.is_some_and(|(rs, rl)| rs <= s && s + l <= rs + rl);
    let (start, len) = found.loads.iter().copied().filter(|&l| !covered(l)).max_by_key(|l| l.0)?;
    let page = crate::config::page_size();
    let lo = start & !(page - 1);
    let hi = (start + len).next_multiple_of(page);
    Some((lo, hi - lo))
}

/// Protection of every page of `[start, start+len)` from /proc/self/maps.
fn protections(start: usize, len: usize) -> Result<Vec<(usize, usize, i32)>, OsFailure> {
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| OsFailure { call: "read /proc/self/maps".into(), errno: e.to_string() })?;
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms)) = (it.next(), it.next()) else { continue };
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else { continue };
        let (lo, hi) = (a.max(start), b.min(start + len));
        if lo >= hi {
            continue;
        }
        let p = perms.as_bytes();
        let mut prot = 0;
        if p.first() == Some(&b'r') {
            prot |= libc::PROT_READ;
        }
        if p.get(1) == Some(&b'w') {
            prot |= libc::PROT_WRITE;
        }
        if p.get(2) == Some(&b'x') {
            prot |= libc::PROT_EXEC;
        }
        out.push((lo, hi - lo, prot));
    }
    Ok(out)
}

/// Turns the executable's writable segment into a shared memfd mapping; returns the file and
/// the range. Must run before the program starts threads that write globals.
pub(crate) fn capture() -> Result<(OwnedFd, usize, usize), OsFailure> {
    let (start, len) =
        writable_segment().ok_or_else(|| OsFailure::check("the executable has no writable segment".into()))?;
    let prots = protections(start, len)?;
    let name = CString::new("oxshmem-static").expect("no NUL");
    // SAFETY: name is a valid C string.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(OsFailure::last("memfd_create of the static data".into()));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: fd is valid.
    // SAFETY: fd is a valid descriptor we own.
    let sized = unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } == 0
        // SAFETY: as above.
        && unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } == 0;
    if !sized {
        return Err(OsFailure::last("sizing the static-data file".into()));
    }
    // Read-only pages (RELRO) must be readable for the copy; they are.
    // From here to the mmap only system calls run, so no global changes in between.
    let mut done = 0usize;
    while done < len {
        // SAFETY: [start, start+len) is mapped and readable (the executable's segment).
        let n = unsafe {
            libc::pwrite(fd.as_raw_fd(), (start + done) as *const libc::c_void, len - done, done as libc::off_t)
        };
        if n <= 0 {
            return Err(OsFailure::last("copying static data".into()));
        }
        done += n as usize;
    }
    // SAFETY: replaces the executable's own writable pages by a shared mapping of a file that
    // holds exactly their contents; nothing wrote them since the copy.
    let p = unsafe {
        libc::mmap(
            start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED || p as usize != start {
        // A failed MAP_FIXED leaves the old mapping in place.
        return Err(OsFailure::last("mapping static data shared".into()));
    }
    for (lo, l, prot) in prots {
        if prot != libc::PROT_READ | libc::PROT_WRITE {
            // SAFETY: restoring the protection these pages had before the remap.
            unsafe { libc::mprotect(lo as *mut libc::c_void, l, prot) };
        }
    }
    Ok((fd, start, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "Miri: dl_iterate_phdr is a foreign call")]
    fn finds_the_writable_segment() {
        static mut PROBE: u64 = 7;
        let (start, len) = writable_segment().expect("a Rust test binary has .data");
        let a = (&raw const PROBE) as usize;
        assert!(a >= start && a < start + len, "{a:#x} not in {start:#x}+{len:#x}");
        assert_eq!(start % crate::config::page_size(), 0);
        assert!(!protections(start, len).unwrap().is_empty());
    }
}
