//! The shared-memory transport: peers on this host, reached through their mapped segments.
//!
//! A put is a `memcpy` into the peer's mapping, a get a `memcpy` out of it, an atomic is the
//! CPU's own atomic instruction on the shared mapping — atomic against every other PE on the
//! host, with no syscall anywhere.
//!
//! Peers' segments are mapped on first use, not at init: mapping every node peer's heap at
//! init costs each PE an `open` of `/proc/PID/fd/N`, an `fstat`, an `mmap` and a `close` per
//! peer — n² system calls for the job, which made start-up grow with n² (8.9 s for 256 PEs on
//! two cores, 154 s for 1,000). A PE that never touches a peer never maps it; the first access
//! maps it under a lock and publishes the base address, and every later access is the same
//! one load and compare as before. Init still maps one peer (the next PE of the node), so that
//! a host where mapping cannot work (another user's PE, a ptrace policy) fails at init.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};

use parking_lot::Mutex;

use super::{AmoOp, LocalBytes, LocalBytesMut, MAX_SEGMENTS, SymAddr, Transport, Width};
use crate::error::Result;
use crate::heap::segment::{Mapping, OsFailure};

/// Where a peer's segment can be mapped from: its process and the descriptor there.
#[derive(Debug, Clone)]
pub(crate) struct PeerSegment {
    /// The peer's process.
    pub(crate) pid: u32,
    /// The descriptor of the segment in the peer's process.
    pub(crate) fd: i32,
    /// What it is, for messages (`heap of PE 3`).
    pub(crate) what: String,
}

/// The mapped segments of every PE on this host.
#[derive(Debug)]
pub struct ShmTransport {
    /// This PE, for error messages.
    me: usize,
    n_pes: usize,
    /// `bases[pe * MAX_SEGMENTS + seg]`: where `pe`'s segment `seg` is mapped here; 0 if not
    /// (yet).
    bases: Box<[AtomicUsize]>,
    /// Lengths of each segment, same layout (known at init, mapped or not).
    lens: Box<[usize]>,
    /// Same layout: where a segment not mapped yet can be mapped from.
    sources: Box<[Option<PeerSegment>]>,
    /// The mappings made so far (kept alive as long as the transport), and the first failure
    /// to map each segment, for the error of the operation that needed it.
    maps: Mutex<Mapped>,
}

/// The mappings made so far, and the failures as (`bases` index, reason).
type Mapped = (Vec<Mapping>, Vec<(usize, OsFailure)>);

impl ShmTransport {
    /// The table of PE `me` in a job of `n_pes`, with no segment in it yet.
    pub(crate) fn new(me: usize, n_pes: usize) -> Self {
        ShmTransport {
            me,
            n_pes,
            bases: (0..n_pes * MAX_SEGMENTS).map(|_| AtomicUsize::new(0)).collect(),
            lens: vec![0; n_pes * MAX_SEGMENTS].into_boxed_slice(),
            sources: vec![None; n_pes * MAX_SEGMENTS].into_boxed_slice(),
            maps: Mutex::new((Vec::new(), Vec::new())),
        }
    }

    /// Records that `pe`'s segment `seg` is at `base..base+len` in this process.
    pub(crate) fn set(&mut self, pe: usize, seg: usize, base: usize, len: usize) {
        *self.bases[pe * MAX_SEGMENTS + seg].get_mut() = base;
        self.lens[pe * MAX_SEGMENTS + seg] = len;
    }

    /// Records that `pe`'s segment `seg` (`len` bytes) is mapped from `src` when first used.
    pub(crate) fn set_lazy(&mut self, pe: usize, seg: usize, len: usize, src: PeerSegment) {
        self.lens[pe * MAX_SEGMENTS + seg] = len;
        self.sources[pe * MAX_SEGMENTS + seg] = Some(src);
    }

    /// Keeps a mapping alive as long as the transport.
    pub(crate) fn keep(&mut self, m: Mapping) {
        self.maps.get_mut().0.push(m);
    }

    /// Maps `pe`'s segment `seg` now if it is mappable and not mapped yet; the error says why
    /// it could not be.
    pub(crate) fn map_now(&self, pe: usize, seg: usize) -> std::result::Result<usize, OsFailure> {
        let i = pe * MAX_SEGMENTS + seg;
        match self.bases.get(i).map(|b| b.load(Ordering::Acquire)) {
            None => Err(OsFailure::check(format!("PE {pe} is out of range"))),
            Some(b) if b != 0 => Ok(b),
            Some(_) => self.map_slow(i).ok_or_else(|| {
                self.map_error(pe, seg)
                    .unwrap_or_else(|| OsFailure::check(format!("PE {pe}'s segment {seg} is not on this host")))
            }),
        }
    }

    /// Why mapping `pe`'s segment `seg` failed, if it did.
    pub(crate) fn map_error(&self, pe: usize, seg: usize) -> Option<OsFailure> {
        let i = pe * MAX_SEGMENTS + seg;
        let g = self.maps.lock();
        g.1.iter().find(|(j, _)| *j == i).map(|(_, e)| e.clone())
    }

    #[cold]
    #[inline(never)]
    fn map_slow(&self, i: usize) -> Option<usize> {
        // Peers on other hosts have no source: their operations go on to the network
        // transport from here, without a lock or an allocation.
        let src = self.sources[i].as_ref()?;
        let mut g = self.maps.lock();
        // Another thread may have mapped it while this one waited for the lock.
        let b = self.bases[i].load(Ordering::Acquire);
        if b != 0 {
            return Some(b);
        }
        if g.1.iter().any(|(j, _)| *j == i) {
            return None;
        }
        match Mapping::open_peer(src.pid, src.fd, self.lens[i], &src.what) {
            Ok(m) => {
                let b = m.addr();
                tracing::debug!(target: "shm", what = %src.what, pid = src.pid, bytes = self.lens[i], base = b, "peer segment mapped");
                g.0.push(m);
                self.bases[i].store(b, Ordering::Release);
                Some(b)
            }
            Err(e) => {
                // The descriptor is gone only when the peer's process has exited (a PE keeps its
                // heap's descriptor open until it ends): a PE died, and its launcher is ending
                // the job. Give the launcher time to do that and to name the PE that died,
                // rather than racing it with an error of our own that it would blame on us.
                let gone = !std::path::Path::new(&format!("/proc/{}/fd/{}", src.pid, src.fd)).exists();
                let e = if gone {
                    OsFailure {
                        call: format!("mapping {} (its process, pid {}, has exited; {})", src.what, src.pid, e.call),
                        errno: e.errno,
                    }
                } else {
                    e
                };
                tracing::debug!(target: "shm", "cannot map: {e}");
                g.1.push((i, e));
                drop(g);
                if gone {
                    std::thread::sleep(std::time::Duration::from_secs(3));
                }
                None
            }
        }
    }

    /// Where `pe`'s segment `seg` is mapped in this process (0 when it cannot be: not on this
    /// host, or mapping it failed). Maps it if it was not yet.
    #[inline(always)]
    pub fn base(&self, pe: usize, seg: usize) -> usize {
        let b = self.bases[pe * MAX_SEGMENTS + seg].load(Ordering::Acquire);
        if b != 0 { b } else { self.map_slow(pe * MAX_SEGMENTS + seg).unwrap_or(0) }
    }

    /// Length of `pe`'s segment `seg` (0 when it is not on this host).
    pub fn len(&self, pe: usize, seg: usize) -> usize {
        self.lens.get(pe * MAX_SEGMENTS + seg).copied().unwrap_or(0)
    }

    /// The address of `a` on `pe` in this process, if mapped (or mappable) and `len` bytes
    /// fit.
    #[inline(always)]
    pub fn ptr(&self, pe: usize, a: SymAddr, len: usize) -> Option<*mut u8> {
        let i = pe * MAX_SEGMENTS + a.seg;
        let mut base = self.bases.get(i)?.load(Ordering::Acquire);
        if base == 0 {
            base = self.map_slow(i)?;
        }
        if a.offset.checked_add(len)? > self.lens[i] {
            return None;
        }
        Some((base + a.offset) as *mut u8)
    }
}

/// Copies at least this long into another process's memory go around this core's cache.
pub const STREAM_MIN: usize = 4096;

/// Copies `len` bytes to memory another process will read (a peer's heap), with memmove
/// semantics. From [`STREAM_MIN`] bytes up (x86-64) the bulk goes with non-temporal stores:
/// the lines are written without first being read into this core's cache (a plain copy reads
/// each destination line before writing it, a third of the memory traffic) and without
/// evicting this core's working set for data the peer reads. A store fence ends such a copy,
/// so that a flag or signal stored after it is not seen before the data.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes and `src` for reads.
#[inline]
pub unsafe fn copy_to_peer(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let (d, s) = (dst as usize, src as usize);
        let disjoint = d + len <= s || s + len <= d;
        if len >= STREAM_MIN && disjoint {
            // SAFETY: forwarded from the caller; the ranges do not overlap.
            unsafe { stream_copy(dst, src, len) };
            return;
        }
    }
    // SAFETY: forwarded from the caller. The common tiny sizes (a `p`, a signal) as one
    // load and one store, without a call into the C library.
    unsafe {
        match len {
            8 => dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned()),
            _ => std::ptr::copy(src, dst, len),
        }
    }
}

/// The non-temporal copy of [`copy_to_peer`]: a plain copy up to the first 64-byte boundary of
/// `dst`, 64-byte lines of streaming stores, a plain copy of the tail, then `sfence`.
///
/// # Safety
/// As for [`copy_to_peer`], and the ranges must not overlap.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_copy(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(not(miri))]
    use std::arch::x86_64::_mm_sfence;
    use std::arch::x86_64::{__m128i, _mm_loadu_si128};
    let head = dst.align_offset(64).min(len);
    let lines = (len - head) / 64;
    // SAFETY: every access stays within [0, len) of both ranges, which the caller vouches
    // for; streaming stores go to 16-byte aligned addresses (dst + head is 64-byte aligned);
    // loads are unaligned.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let (mut d, mut s) = (dst.add(head), src.add(head));
        for _ in 0..lines {
            let a = _mm_loadu_si128(s.cast::<__m128i>());
            let b = _mm_loadu_si128(s.add(16).cast::<__m128i>());
            let c = _mm_loadu_si128(s.add(32).cast::<__m128i>());
            let e = _mm_loadu_si128(s.add(48).cast::<__m128i>());
            stream16(d.cast::<__m128i>(), a);
            stream16(d.add(16).cast::<__m128i>(), b);
            stream16(d.add(32).cast::<__m128i>(), c);
            stream16(d.add(48).cast::<__m128i>(), e);
            d = d.add(64);
            s = s.add(64);
        }
        let done = head + lines * 64;
        std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), len - done);
        #[cfg(not(miri))]
        _mm_sfence();
    }
}

/// One 16-byte streaming store. Under Miri, which cannot run the instruction (it is inline
/// assembly), an aligned plain store: the same bounds and alignment are checked.
///
/// # Safety
/// `d` must be valid for a 16-byte write and 16-byte aligned.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn stream16(d: *mut std::arch::x86_64::__m128i, v: std::arch::x86_64::__m128i) {
    // SAFETY: forwarded from the caller.
    #[cfg(not(miri))]
    unsafe {
        std::arch::x86_64::_mm_stream_si128(d, v)
    };
    // SAFETY: forwarded from the caller.
    #[cfg(miri)]
    unsafe {
        d.write(v)
    };
}

/// Performs `op` on the integer at `p`.
///
/// # Safety
/// `p` must be valid for atomic access of `width` bytes and aligned to it, for the duration of
/// the call, and every concurrent access to it must be atomic.
#[inline(always)]
pub unsafe fn atomic_at(p: *mut u8, width: Width, op: AmoOp) -> u64 {
    const O: Ordering = Ordering::SeqCst;
    match width {
        Width::W32 => {
            // SAFETY: the caller guarantees p is valid and 4-byte aligned for atomic access.
            let a = unsafe { AtomicU32::from_ptr(p.cast()) };
            let v = |x: u64| x as u32;
            u64::from(match op {
                AmoOp::Fetch => a.load(O),
                AmoOp::Set(x) => {
                    a.store(v(x), O);
                    0
                }
                AmoOp::Swap(x) => a.swap(v(x), O),
                AmoOp::CompareSwap { cond, value } => a.compare_exchange(v(cond), v(value), O, O).unwrap_or_else(|e| e),
                AmoOp::FetchAdd(x) => a.fetch_add(v(x), O),
                AmoOp::FetchAnd(x) => a.fetch_and(v(x), O),
                AmoOp::FetchOr(x) => a.fetch_or(v(x), O),
                AmoOp::FetchXor(x) => a.fetch_xor(v(x), O),
            })
        }
        Width::W64 => {
            // SAFETY: the caller guarantees p is valid and 8-byte aligned for atomic access.
            let a = unsafe { AtomicU64::from_ptr(p.cast()) };
            match op {
                AmoOp::Fetch => a.load(O),
                AmoOp::Set(x) => {
                    a.store(x, O);
                    0
                }
                AmoOp::Swap(x) => a.swap(x, O),
                AmoOp::CompareSwap { cond, value } => a.compare_exchange(cond, value, O, O).unwrap_or_else(|e| e),
                AmoOp::FetchAdd(x) => a.fetch_add(x, O),
                AmoOp::FetchAnd(x) => a.fetch_and(x, O),
                AmoOp::FetchOr(x) => a.fetch_or(x, O),
                AmoOp::FetchXor(x) => a.fetch_xor(x, O),
            }
        }
    }
}

impl ShmTransport {
    fn unmapped(&self, pe: usize, a: SymAddr, len: usize, func: &'static str) -> crate::Error {
        crate::Error::new(
            self.me,
            func,
            crate::ErrorKind::InvalidArgument(format!(
                "shm transport: PE {pe} segment {} offset {:#x} (+{len}) is not mapped here",
                a.seg, a.offset
            )),
        )
    }
}

impl Transport for ShmTransport {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn reaches(&self, pe: usize) -> bool {
        pe < self.n_pes && self.base(pe, 0) != 0
    }

    fn put(&self, func: &'static str, pe: usize, dst: SymAddr, src: LocalBytes<'_>) -> Result<()> {
        let p = self.ptr(pe, dst, src.len()).ok_or_else(|| self.unmapped(pe, dst, src.len(), func))?;
        // SAFETY: ptr() checked that the whole range lies inside pe's live mapping; the source is
        // valid for src.len() bytes for this call (LocalBytes' contract). Both sides are raw
        // pointers, no reference: either may be symmetric memory others write, and they may
        // overlap (a put to oneself), which copy handles as memmove.
        unsafe { std::ptr::copy(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    fn get(&self, func: &'static str, pe: usize, src: SymAddr, dst: LocalBytesMut<'_>) -> Result<()> {
        let p = self.ptr(pe, src, dst.len()).ok_or_else(|| self.unmapped(pe, src, dst.len(), func))?;
        // SAFETY: as in put: the range is inside a live mapping, the destination is valid for
        // dst.len() bytes of writes for this call (LocalBytesMut's contract), and copy is a
        // memmove between raw pointers.
        unsafe { std::ptr::copy(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn atomic(&self, func: &'static str, pe: usize, dst: SymAddr, width: Width, op: AmoOp) -> Result<u64> {
        let p = self.ptr(pe, dst, width.bytes()).ok_or_else(|| self.unmapped(pe, dst, width.bytes(), func))?;
        if !(p as usize).is_multiple_of(width.bytes()) {
            return Err(crate::Error::new(
                self.me,
                func,
                crate::ErrorKind::Misaligned { addr: p as usize, width: width.bytes() },
            ));
        }
        // SAFETY: in a live mapping, aligned, and all PEs access it atomically.
        Ok(unsafe { atomic_at(p, width, op) })
    }

    fn fence(&self) -> Result<()> {
        fence(Ordering::Release);
        Ok(())
    }

    fn quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length around the streaming threshold and the line size, at every alignment of
    /// source and destination within a line: the bytes arrive, and nothing outside is touched.
    #[test]
    fn copy_to_peer_copies_exactly_the_range() {
        let src: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in [0, 1, 4, 8, 63, 64, 65, STREAM_MIN - 1, STREAM_MIN, STREAM_MIN + 1, STREAM_MIN + 63, 7168, 16_384] {
            for (so, doff) in [(0, 0), (1, 0), (0, 1), (13, 61), (63, 17), (32, 32)] {
                // Natively, 20 000 bytes of destination catch a far overrun. Under Miri one cache
                // line after the range is enough (a write past the allocation is itself the error
                // Miri reports), and checking 20 000 bytes per case made the test minutes long.
                let tail = if cfg!(miri) { 64 } else { 20_000 - doff - len };
                let mut dst = vec![0xEEu8; doff + len + tail];
                // SAFETY: both ranges lie inside their vectors (so + len < 20 000, doff + len < dst.len()).
                unsafe { copy_to_peer(dst.as_mut_ptr().add(doff), src.as_ptr().add(so), len) };
                assert_eq!(&dst[doff..doff + len], &src[so..so + len], "len {len}, offsets {so}/{doff}");
                assert!(dst[..doff].iter().all(|&b| b == 0xEE), "bytes before, len {len}, offsets {so}/{doff}");
                assert!(dst[doff + len..].iter().all(|&b| b == 0xEE), "bytes after, len {len}, offsets {so}/{doff}");
            }
        }
    }

    /// Overlapping ranges (a put to oneself) keep memmove semantics.
    #[test]
    fn copy_to_peer_overlapping_is_a_memmove() {
        for shift in [1usize, 64, 100] {
            let orig: Vec<u8> = (0..12_000u32).map(|i| (i % 251) as u8).collect();
            let mut buf = orig.clone();
            let len = 10_000;
            // SAFETY: both ranges lie inside `buf` (shift + len < 12 000).
            unsafe { copy_to_peer(buf.as_mut_ptr().add(shift), buf.as_ptr(), len) };
            assert_eq!(&buf[shift..shift + len], &orig[..len], "forward shift {shift}");
            let mut buf = orig.clone();
            // SAFETY: as above.
            unsafe { copy_to_peer(buf.as_mut_ptr(), buf.as_ptr().add(shift), len) };
            assert_eq!(&buf[..len], &orig[shift..shift + len], "backward shift {shift}");
        }
    }

    /// Peers are mapped on first use, once, from their process's descriptor; a peer that
    /// cannot be mapped gives its reason to whoever needs it, and peers of other hosts (no
    /// source) are simply not mapped.
    #[test]
    #[cfg_attr(miri, ignore = "Miri: maps peers' segments through /proc and mmap")]
    fn peers_are_mapped_lazily_and_failures_are_kept() {
        use std::os::fd::AsRawFd;
        let (fd, m) = Mapping::create(8192, "lazy-test", 4096).unwrap();
        // SAFETY: the mapping is 8192 bytes long and writable.
        unsafe { (m.addr() as *mut u64).write(0x1234_5678) };
        let mut t = ShmTransport::new(2, 3);
        let me = std::process::id();
        t.set_lazy(0, 0, 8192, PeerSegment { pid: me, fd: fd.as_raw_fd(), what: "heap of PE 0".into() });
        t.set_lazy(1, 0, 8192, PeerSegment { pid: me, fd: 1_000_000, what: "heap of PE 1".into() });
        let a = SymAddr { seg: 0, offset: 0 };
        let p = t.ptr(0, a, 8).expect("mapped on first use");
        // SAFETY: a fresh mapping of the same file, 8192 bytes.
        assert_eq!(unsafe { (p as *const u64).read() }, 0x1234_5678);
        assert_eq!(t.ptr(0, a, 8), Some(p), "mapped once");
        assert_eq!(t.base(0, 0), p as usize);
        assert!(t.ptr(0, a, 8193).is_none(), "the length is the peer's");
        assert!(t.ptr(1, a, 8).is_none());
        let e = t.map_error(1, 0).expect("the failure is kept");
        assert!(e.call.contains("heap of PE 1") && !e.errno.is_empty(), "{e}");
        assert_eq!(t.map_now(1, 0).unwrap_err(), e);
        assert!(t.ptr(2, a, 8).is_none() && t.map_error(2, 0).is_none(), "not on this host");
        assert!(t.map_now(2, 0).unwrap_err().to_string().contains("not on this host"));
        drop(m);
    }
}
