//! Signals: `put_signal` (data, then a signal word updated on the same PE), `signal_fetch`,
//! `signal_wait_until`.
//!
//! The data is written first and the signal is then updated with a sequentially consistent
//! atomic, which orders after it every store before it: a PE that sees the signal sees the
//! data. Signal words are `u64` (`uint64_t`) objects in symmetric memory.

use bytemuck::Pod;

use crate::amo::foreign_atomic;
use crate::error::{Error, ErrorKind, Result};
use crate::segment::Route;
use crate::sym::SymSlice;
use crate::transport::{AmoOp, LocalBytes, SymAddr, Width};
use crate::wait::{Cmp, SyncType};
use crate::world::{Runtime, running};

/// How a signal word is updated (`SHMEM_SIGNAL_SET`, `SHMEM_SIGNAL_ADD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum SignalOp {
    /// The signal becomes the value.
    Set = 0,
    /// The value is added to the signal.
    Add = 1,
}

impl SignalOp {
    /// From the C constant.
    pub fn from_c(v: i32) -> Option<SignalOp> {
        match v {
            0 => Some(SignalOp::Set),
            1 => Some(SignalOp::Add),
            _ => None,
        }
    }

    fn amo(self, v: u64) -> AmoOp {
        match self {
            SignalOp::Set => AmoOp::Set(v),
            SignalOp::Add => AmoOp::FetchAdd(v),
        }
    }
}

impl Runtime {
    /// Puts `len` bytes, then updates the signal at `sig` on `pe`.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn put_signal_sym(
        &self,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
        sig: SymAddr,
        signal: u64,
        op: SignalOp,
        func: &'static str,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.put_raw(pe, dst, src, len, func)? };
        self.atomic_sym(pe, sig, Width::W64, op.amo(signal), func).map(drop)
    }
}

impl<T: Pod> SymSlice<T> {
    /// `shmem_put_signal`: copies `src` into elements `at..` on `pe`, then updates element
    /// `sig_at` of `sig` on `pe` with `op` and `signal`. A PE that observes the signal also
    /// observes the data.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, SignalOp};
    /// let data = shmem.alloc_slice(4, 0u32)?;
    /// let sig = shmem.alloc_slice(1, 0u64)?;
    /// let me = shmem.my_pe();
    /// data.put_signal(0, &[1, 2, 3, 4], &sig, 0, 1, SignalOp::Set, me)?;
    /// assert_eq!(sig.signal_wait_until(0, Cmp::Eq, 1)?, 1);
    /// assert_eq!(data.to_vec(), [1, 2, 3, 4]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal(
        &self,
        at: usize,
        src: &[T],
        sig: &SymSlice<u64>,
        sig_at: usize,
        signal: u64,
        op: SignalOp,
        pe: usize,
    ) -> Result<()> {
        self.put_signal_named(at, src, sig, sig_at, signal, op, pe, "shmem_put_signal")
    }

    /// `shmem_put_signal_nbi`: as [`put_signal`](Self::put_signal); complete at the next quiet
    /// (the source is consumed before return).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::SignalOp;
    /// let data = shmem.alloc_slice(1, 0u8)?;
    /// let sig = shmem.alloc_slice(1, 0u64)?;
    /// data.put_signal_nbi(0, &[9], &sig, 0, 5, SignalOp::Add, shmem.my_pe())?;
    /// shmem.quiet()?;
    /// assert_eq!(sig.signal_fetch(0)?, 5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal_nbi(
        &self,
        at: usize,
        src: &[T],
        sig: &SymSlice<u64>,
        sig_at: usize,
        signal: u64,
        op: SignalOp,
        pe: usize,
    ) -> Result<()> {
        self.put_signal_named(at, src, sig, sig_at, signal, op, pe, "shmem_put_signal_nbi")
    }

    #[allow(clippy::too_many_arguments)]
    fn put_signal_named(
        &self,
        at: usize,
        src: &[T],
        sig: &SymSlice<u64>,
        sig_at: usize,
        signal: u64,
        op: SignalOp,
        pe: usize,
        func: &'static str,
    ) -> Result<()> {
        let (rt, pe, a) = self.target(pe, at, src.len(), func)?;
        let (_, _, s) = sig.target(pe, sig_at, 1, func)?;
        if pe == rt.me {
            // To this PE: element-wise relaxed atomic, as the safe accessors another thread of
            // this process may be calling on the same elements (sym/rma.rs put_local); the
            // signal's atomic update then orders it as usual.
            self.put_local(at, src);
            return rt.atomic_sym(pe, s, Width::W64, op.amo(signal), func).map(drop);
        }
        // SAFETY: src is a valid slice of exactly the bytes written.
        unsafe { rt.put_signal_sym(pe, a, src.as_ptr().cast(), size_of_val(src), s, signal, op, func) }
    }
}

impl SymSlice<u64> {
    /// `shmem_signal_fetch`: atomically reads local signal word `at`.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let sig = shmem.alloc_slice(1, 3u64)?;
    /// assert_eq!(sig.signal_fetch(0)?, 3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn signal_fetch(&self, at: usize) -> Result<u64> {
        let (rt, me, a) = self.target(crate::world::pe_for_errors(), at, 1, "shmem_signal_fetch")?;
        rt.atomic_sym(me, a, Width::W64, AmoOp::Fetch, "shmem_signal_fetch")
    }

    /// `shmem_signal_wait_until`: waits until local signal word `at` satisfies `cmp value`;
    /// returns the signal's value then.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::Cmp;
    /// let sig = shmem.alloc_slice(1, 2u64)?;
    /// assert_eq!(sig.signal_wait_until(0, Cmp::Ge, 1)?, 2);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn signal_wait_until(&self, at: usize, cmp: Cmp, value: u64) -> Result<u64> {
        const F: &str = "shmem_signal_wait_until";
        let rt = running(F)?;
        if at >= self.len() {
            return Err(Error::new(rt.me, F, ErrorKind::OutOfBounds { start: at, end: at + 1, len: self.len() }));
        }
        // SAFETY: at < len; the element is live and aligned.
        unsafe { wait_signal(rt, self.as_ptr().add(at), cmp, value) }
    }
}

/// # Safety
/// `p` must point to a live, aligned `u64`.
unsafe fn wait_signal(rt: &Runtime, p: *const u64, cmp: Cmp, value: u64) -> Result<u64> {
    let mut b = rt.backoff();
    loop {
        // SAFETY: forwarded from the caller.
        let v = unsafe { u64::load_acquire(p) };
        if cmp.holds(v, value) {
            return Ok(v);
        }
        b.snooze();
    }
}

/// A put with signal whose data or signal word is in a registered segment: the data, then the
/// signal, each through the segment it is in. Data put through the runtime is completed (a
/// quiet) before a signal in a registered segment is updated.
///
/// # Safety
/// `src` must be valid for reads of `len` bytes.
#[cold]
unsafe fn put_signal_foreign(
    rt: &Runtime,
    pe: usize,
    d: Route,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    s: Route,
    sig: *mut u64,
    signal: u64,
    op: SignalOp,
    func: &'static str,
) -> Result<()> {
    if len > 0 {
        match d {
            // SAFETY: forwarded from the caller.
            Route::Sym(d) => unsafe { rt.put_raw(pe, d, src, len, func)? },
            // SAFETY: as above.
            Route::Foreign(seg) => unsafe { seg.put(func, pe, dest as usize, LocalBytes::new(src, len))? },
        }
    }
    match s {
        Route::Sym(s) => rt.atomic_sym(pe, s, Width::W64, op.amo(signal), func).map(drop),
        Route::Foreign(seg) => {
            rt.quiet_internal()?;
            foreign_atomic(rt, &*seg, pe, sig as usize, Width::W64, op.amo(signal), func).map(drop)
        }
    }
}

/// Pointer forms, for the C ABI.
pub mod raw {
    use super::*;

    /// `shmem_put_signal[_nbi]` / `shmem_putmem_signal[_nbi]`.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes; `dest` and `sig` are checked symmetric.
    pub unsafe fn put_signal(
        dest: *mut u8,
        src: *const u8,
        len: usize,
        sig: *mut u64,
        signal: u64,
        op: i32,
        pe: i32,
        func: &'static str,
    ) -> Result<()> {
        let rt = running(func)?;
        let Some(op) = SignalOp::from_c(op) else {
            return Err(Error::new(
                rt.me,
                func,
                ErrorKind::InvalidArgument(format!("sig_op {op} is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD")),
            ));
        };
        if pe < 0 || pe as usize >= rt.n {
            return Err(rt.pe_error(i128::from(pe), func));
        }
        let d = rt.route(dest as usize, len.max(1), "destination", func)?;
        let s = rt.route(sig as usize, 8, "signal", func)?;
        if !(sig as usize).is_multiple_of(8) {
            return Err(Error::new(rt.me, func, ErrorKind::Misaligned { addr: sig as usize, width: 8 }));
        }
        let pe = pe as usize;
        match (d, s) {
            // SAFETY: forwarded from the caller.
            (Route::Sym(d), Route::Sym(s)) => unsafe { rt.put_signal_sym(pe, d, src, len, s, signal, op, func) },
            // SAFETY: forwarded from the caller.
            (d, s) => unsafe { put_signal_foreign(rt, pe, d, dest, src, len, s, sig, signal, op, func) },
        }
    }

    /// `shmem_signal_fetch`.
    ///
    /// # Safety
    /// `sig` is checked symmetric and aligned.
    pub unsafe fn signal_fetch(sig: *const u64) -> Result<u64> {
        const F: &str = "shmem_signal_fetch";
        let rt = running(F)?;
        match rt.route(sig as usize, 8, "signal", F)? {
            Route::Sym(s) => rt.atomic_sym(rt.me, s, Width::W64, AmoOp::Fetch, F),
            Route::Foreign(seg) => foreign_atomic(rt, &*seg, rt.me, sig as usize, Width::W64, AmoOp::Fetch, F),
        }
    }

    /// `shmem_signal_wait_until`.
    ///
    /// # Safety
    /// `sig` is checked symmetric; it must be aligned.
    pub unsafe fn signal_wait_until(sig: *const u64, cmp: Cmp, value: u64) -> Result<u64> {
        const F: &str = "shmem_signal_wait_until";
        let rt = running(F)?;
        let r = rt.route(sig as usize, 8, "signal", F)?;
        if !(sig as usize).is_multiple_of(8) {
            return Err(Error::new(rt.me, F, ErrorKind::Misaligned { addr: sig as usize, width: 8 }));
        }
        match r {
            // SAFETY: checked symmetric and aligned.
            Route::Sym(_) => unsafe { wait_signal(rt, sig, cmp, value) },
            Route::Foreign(seg) => {
                let hit = |w: &[u64]| cmp.holds(w[0], value).then_some(w[0]);
                let code = oxshmem_bootstrap::status::code::SIGNAL_WAIT_UNTIL;
                crate::segment::poll_words(rt, &*seg, F, code, sig as usize, 1, true, hit)
                    .map(|v| v.expect("a blocking poll returns a value"))
            }
        }
    }
}
