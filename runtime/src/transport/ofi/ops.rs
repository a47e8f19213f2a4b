//! The operations: put (injected, copied through a bounce slot, or straight from the caller's
//! buffer), get, the deferred per-peer fence, quiet with its read-backs, and the
//! [`Transport`] impl of [`OfiTransport`] over them (atomics are in `atomics.rs`). Each takes
//! the transport context ([`CtxId`]) the operation belongs to, whose completion state
//! (`track.rs`) its fence and quiet use; the `Transport` impl reads it from the calling
//! thread's scope.

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::progress::{Call, OpLabel};
use super::track::Track;
use super::{Inner, OfiTransport, SLOT_SIZE, ffi};
use crate::error::Result;
use crate::transport::{AmoOp, CtxId, LocalBytes, LocalBytesMut, SymAddr, Transport, Width};

impl Inner {
    /// The completion state of context `ctx`: its own, or the default context's.
    #[inline]
    pub(super) fn track(&self, ctx: CtxId) -> &Track {
        self.ctxs.get(ctx).unwrap_or(&self.all)
    }

    /// Completes every operation of context `ctx` in flight to `pe` (remotely); for the
    /// default context, every context's.
    pub(super) fn settle(&self, func: &'static str, ctx: CtxId, pe: usize) -> Result<()> {
        let t = self.track(ctx);
        if t.pending[pe].load(Ordering::Acquire) != 0 {
            let what = || {
                format!(
                    "the {} earlier fi_write/fi_atomic to PE {pe} still in flight (waiting for their remote completion)",
                    t.pending[pe].load(Ordering::Relaxed)
                )
            };
            self.wait_until(func, pe, &what, || t.pending[pe].load(Ordering::Acquire) == 0)?;
        }
        if t.dirty[pe].swap(false, Ordering::AcqRel) {
            self.read_back(func, pe)?;
        }
        Ok(())
    }

    /// An 8-byte read of `pe`'s heap, ordered behind this PE's writes to it by the provider's
    /// read-after-write ordering: when it returns, they have been delivered.
    fn read_back(&self, func: &'static str, pe: usize) -> Result<()> {
        let (fa, ra, key) = self.remote(func, pe, SymAddr { seg: 0, offset: 0 }, 8)?;
        let what = || "an 8-byte read-back proving delivery of earlier writes".to_string();
        self.blocking(
            func,
            &OpLabel { call: Call::Read, pe, what: &what },
            // SAFETY: the slot is ours and registered (bounce_desc); 8 bytes fit.
            |c, s| unsafe { ffi::oxs_read(self.ep, self.slot_ptr(s).cast(), 8, self.bounce_desc, fa, ra, key, c, 0) },
            |_| (),
        )
    }

    /// The deferred fence: the first operation of context `ctx` to `pe` after a fence of
    /// `ctx` waits for the operations of `ctx` to `pe` still in flight from before it.
    pub(super) fn fence_point(&self, func: &'static str, ctx: CtxId, pe: usize) -> Result<()> {
        let t = self.track(ctx);
        let e = t.fence_epoch.load(Ordering::Acquire);
        if t.fence_seen[pe].load(Ordering::Relaxed) != e {
            self.settle(func, ctx, pe)?;
            t.fence_seen[pe].store(e, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `pe`'s address, the remote address of `a` and the key, after checking `len` bytes fit.
    pub(super) fn remote(&self, func: &'static str, pe: usize, a: SymAddr, len: usize) -> Result<(u64, u64, u64)> {
        let p = self
            .peers
            .get(pe)
            .filter(|p| p.reach)
            .ok_or_else(|| self.error(func, format!("PE {pe} is not reached through this transport")))?;
        let s = p
            .segs
            .get(a.seg)
            .filter(|s| s.len > 0)
            .ok_or_else(|| self.error(func, format!("PE {pe} has no symmetric segment {}", a.seg)))?;
        if (a.offset as u64).checked_add(len as u64).is_none_or(|e| e > s.len) {
            return Err(self.error(
                func,
                format!(
                    "offset {:#x} (+{len} bytes) lies outside PE {pe}'s segment {} ({} bytes)",
                    a.offset, a.seg, s.len
                ),
            ));
        }
        Ok((p.fi_addr, s.base + a.offset as u64, s.key))
    }

    /// The descriptor of the registered segment holding `[p, p+len)`, if any.
    fn local_desc(&self, p: usize, len: usize) -> Option<*mut c_void> {
        self.local.iter().find(|l| p >= l.base && p - l.base <= l.len && len <= l.len - (p - l.base)).map(|l| l.desc)
    }

    fn put(&self, func: &'static str, ctx: CtxId, pe: usize, dst: SymAddr, src: LocalBytes<'_>) -> Result<()> {
        let len = src.len();
        if len == 0 {
            return Ok(());
        }
        let (fa, ra, key) = self.remote(func, pe, dst, len)?;
        self.fence_point(func, ctx, pe)?;
        let what = || format!("a put of {len} bytes to offset {:#x} of segment {}", dst.offset, dst.seg);
        let label = OpLabel { call: Call::Write, pe, what: &what };
        let mut off = 0;
        while off < len {
            let rest = len - off;
            // Inside src (off < len): valid for rest bytes per LocalBytes' contract.
            let p = src.as_ptr().wrapping_add(off);
            let at = ra + off as u64;
            if rest <= self.prov.inject_size {
                let flags = self.wflags | u64::from(ffi::FI_INJECT);
                // SAFETY: p is valid for rest bytes; injected data is copied before the call
                // returns, so the source may be reused at once and needs no descriptor.
                self.post_counted(func, ctx, &label, None, |c| unsafe {
                    ffi::oxs_write(self.ep, p.cast(), rest, null_mut(), fa, at, key, c, flags)
                })?;
                off += rest;
            } else if rest <= SLOT_SIZE || (self.mr_local && self.local_desc(p as usize, rest).is_none()) {
                let chunk = rest.min(SLOT_SIZE);
                let s = self.acquire(func, pe)?;
                // SAFETY: the slot is ours until the completion releases it; p is valid for
                // chunk bytes and does not overlap the bounce buffer.
                unsafe { std::ptr::copy_nonoverlapping(p, self.slot_ptr(s), chunk) };
                // SAFETY: the slot holds the data until the completion; bounce_desc covers it.
                self.post_counted(func, ctx, &label, Some(s), |c| unsafe {
                    ffi::oxs_write(
                        self.ep,
                        self.slot_ptr(s).cast(),
                        chunk,
                        self.bounce_desc,
                        fa,
                        at,
                        key,
                        c,
                        self.wflags,
                    )
                })?;
                off += chunk;
            } else {
                // Long: straight from the caller's buffer, which src promises valid only for
                // this call — so wait for the write to complete. Only for its local completion
                // where the provider orders reads after writes: the kernel or NIC then pipelines
                // consecutive puts, and the next quiet or fence proves delivery by a read-back.
                let chunk = rest.min(self.prov.max_msg_size);
                let desc = self.local_desc(p as usize, chunk).unwrap_or(null_mut());
                let flags = if self.read_after_write {
                    u64::from(ffi::FI_COMPLETION | ffi::FI_TRANSMIT_COMPLETE)
                } else {
                    self.wflags
                };
                self.blocking(
                    func,
                    &label,
                    // SAFETY: p is valid for chunk bytes until we return, after completion.
                    |c, _| unsafe { ffi::oxs_write(self.ep, p.cast(), chunk, desc, fa, at, key, c, flags) },
                    |_| (),
                )?;
                if self.read_after_write || !self.prov.delivery_complete {
                    self.mark_dirty(ctx, pe);
                }
                off += chunk;
            }
        }
        Ok(())
    }

    fn get(&self, func: &'static str, ctx: CtxId, pe: usize, src: SymAddr, dst: LocalBytesMut<'_>) -> Result<()> {
        let len = dst.len();
        if len == 0 {
            return Ok(());
        }
        let (fa, ra, key) = self.remote(func, pe, src, len)?;
        self.settle(func, ctx, pe)?;
        let what = || format!("a get of {len} bytes from offset {:#x} of segment {}", src.offset, src.seg);
        let label = OpLabel { call: Call::Read, pe, what: &what };
        let mut off = 0;
        while off < len {
            let rest = len - off;
            // Inside dst (off < len): valid for rest bytes of writes per LocalBytesMut's contract.
            let p = dst.as_mut_ptr().wrapping_add(off);
            let at = ra + off as u64;
            let desc = if self.mr_local { self.local_desc(p as usize, rest) } else { Some(null_mut()) };
            match desc {
                Some(desc) => {
                    let chunk = rest.min(self.prov.max_msg_size);
                    self.blocking(
                        func,
                        &label,
                        // SAFETY: p is valid for writes of chunk bytes until we return (dst's
                        // contract), and we return only after the read completed; this code
                        // does not touch those bytes meanwhile.
                        |c, _| unsafe { ffi::oxs_read(self.ep, p.cast(), chunk, desc, fa, at, key, c, 0) },
                        |_| (),
                    )?;
                    off += chunk;
                }
                None => {
                    let chunk = rest.min(SLOT_SIZE);
                    self.blocking(
                        func,
                        &label,
                        // SAFETY: the slot is ours and registered; chunk <= SLOT_SIZE.
                        |c, s| unsafe {
                            ffi::oxs_read(self.ep, self.slot_ptr(s).cast(), chunk, self.bounce_desc, fa, at, key, c, 0)
                        },
                        // SAFETY: the read completed into the slot; p is valid for writes of
                        // chunk bytes (dst's contract) and does not overlap the bounce buffer.
                        |s| unsafe { std::ptr::copy_nonoverlapping(self.slot_ptr(s), p, chunk) },
                    )?;
                    off += chunk;
                }
            }
        }
        Ok(())
    }

    fn take_failure(&self, func: &'static str, t: &Track) -> Result<()> {
        match t.take_failure() {
            Some(m) => Err(self.error(func, m)),
            None => Ok(()),
        }
    }

    /// Completes the operations of context `ctx` (every context's for the default one):
    /// waits for its count, then reads back from the peers its writes dirtied.
    fn quiet(&self, func: &'static str, ctx: CtxId) -> Result<()> {
        let t = self.track(ctx);
        if t.total.load(Ordering::Acquire) != 0 {
            let what = || format!("the {} fi_write/fi_atomic in flight (quiet)", t.total.load(Ordering::Relaxed));
            let start = Instant::now();
            let cond = || t.total.load(Ordering::Acquire) == 0;
            // Name the first peer still owing completions when the wait times out.
            if let Err(e) = self.wait_until(func, self.me, &what, cond) {
                let stuck = t.pending.iter().position(|p| p.load(Ordering::Relaxed) != 0);
                return Err(match stuck {
                    Some(pe) => self.timed_out(
                        func,
                        pe,
                        &format!(
                            "the {} fi_write/fi_atomic to PE {pe} in flight (quiet, after {:?})",
                            t.pending[pe].load(Ordering::Relaxed),
                            start.elapsed()
                        ),
                    ),
                    None => e,
                });
            }
        }
        if t.any_dirty.swap(false, Ordering::AcqRel) {
            for pe in 0..t.dirty.len() {
                if t.dirty[pe].swap(false, Ordering::AcqRel) {
                    self.read_back(func, pe)?;
                }
            }
        }
        self.take_failure(func, t)
    }

    /// Opens a new fence epoch of context `ctx`.
    fn fence(&self, func: &'static str, ctx: CtxId) -> Result<()> {
        let t = self.track(ctx);
        t.fence_epoch.fetch_add(1, Ordering::AcqRel);
        self.take_failure(func, t)
    }
}

impl Transport for OfiTransport {
    fn name(&self) -> &'static str {
        "ofi"
    }

    fn detail(&self) -> String {
        let i = &self.inner;
        format!("{}, domain {}, endpoint {}", i.prov.name, i.prov.domain, i.addr_text)
    }

    fn reaches(&self, pe: usize) -> bool {
        self.inner.peers.get(pe).is_some_and(|p| p.reach)
    }

    fn put(&self, func: &'static str, pe: usize, dst: SymAddr, src: LocalBytes<'_>) -> Result<()> {
        self.inner.put(func, CtxId::current(), pe, dst, src)
    }

    fn get(&self, func: &'static str, pe: usize, src: SymAddr, dst: LocalBytesMut<'_>) -> Result<()> {
        self.inner.get(func, CtxId::current(), pe, src, dst)
    }

    fn atomic(&self, func: &'static str, pe: usize, dst: SymAddr, width: Width, op: AmoOp) -> Result<u64> {
        self.inner.atomic(func, CtxId::current(), pe, dst, width, op)
    }

    fn fence(&self) -> Result<()> {
        self.inner.fence("shmem_fence", CtxId::DEFAULT)
    }

    fn quiet(&self) -> Result<()> {
        self.inner.quiet("shmem_quiet", CtxId::DEFAULT)
    }

    fn ctx_create(&self) -> CtxId {
        self.inner.ctxs.create()
    }

    fn ctx_destroy(&self, ctx: CtxId) {
        self.inner.ctxs.destroy(ctx);
    }

    fn ctx_quiet(&self, ctx: CtxId) -> Result<()> {
        match ctx {
            CtxId::DEFAULT => self.quiet(),
            _ => self.inner.quiet("shmem_ctx_quiet", ctx),
        }
    }

    fn ctx_fence(&self, ctx: CtxId) -> Result<()> {
        match ctx {
            CtxId::DEFAULT => self.fence(),
            _ => self.inner.fence("shmem_ctx_fence", ctx),
        }
    }

    fn ctx_in_flight(&self, ctx: CtxId) -> u64 {
        self.inner.track(ctx).total.load(Ordering::Acquire)
    }

    fn progress(&self) {
        if !self.inner.closed.load(Ordering::Relaxed) {
            self.inner.progress();
        }
    }

    fn shutdown(&self) {
        self.inner.stop_progress();
        self.inner.closed.store(true, Ordering::Release);
        if let Some(mut f) = self.inner.fids.lock().take() {
            f.close();
        }
    }
}
