//! Low-latency mode: preallocated per-(expert, source) slots, no count exchange, one row per
//! (token, expert), source-side weighting.
//!
//! Receive layout at PE `q`: block `(l, s)` of `recv_x` holds up to `tmax` rows that source
//! `s` sent to `q`'s local expert `l`, in token order; slot numbers are assigned by the source,
//! so it knows every address without asking. After its rows, each source puts one metadata
//! message per destination with a signal: `[count per local expert][token of each row, expert
//! by expert]`. The expert outputs go to `y` in the same layout, and combine puts block
//! `(l, s)` of `y` to source `s`'s `comb_recv`, block `q·epp + l` — the global expert — where
//! the source finds each (token, choice) at the slot it assigned.

use std::sync::Arc;

use oxshmem::{Cmp, Shmem, SignalOp, SymSlice};

use super::engine::Engine;
use super::{
    ExpertRow, MoeError, NONE, Phase, Run, Shape, Signals, add_row, add_scaled_row, alloc, assign_sum, my_peers,
    my_sources, push_run,
};
use crate::DevPtr;

/// u32 words of one metadata message: the counts, then at most `tmax` rows per local expert
/// (a token picks an expert at most once, and at most `topk` of them).
fn meta_cap(s: &Shape) -> usize {
    s.epp + s.tmax * s.topk.min(s.epp)
}

/// The symmetric buffers of low-latency mode and the layout of the current dispatch.
pub(super) struct Bufs {
    /// One metadata message per destination.
    send_meta: SymSlice<u32>,
    /// Blocks `(local expert, source)` of `tmax` rows.
    recv_x: SymSlice<f32>,
    /// One metadata message per source.
    recv_meta: SymSlice<u32>,
    /// Expert outputs, laid out as `recv_x`: the source of the combine puts.
    y: SymSlice<f32>,
    /// Blocks per global expert of `tmax` rows: the outputs for this PE's tokens.
    comb_recv: SymSlice<f32>,
    /// `[t * topk + k]`: the slot of choice `k` of token `t` in its expert's block.
    slot_of: Vec<u32>,
    /// `[l * n + s]`: rows received from source `s` for local expert `l`.
    recv_cnt: Vec<usize>,
}

struct Plan {
    runs: Vec<Vec<Run>>,
    meta_len: Vec<usize>,
}

impl Bufs {
    pub(super) fn new(shmem: &Shmem, s: &Shape) -> Result<Bufs, MoeError> {
        let (n, cap, block_rows) = (s.n, meta_cap(s), s.epp * s.n * s.tmax);
        Ok(Bufs {
            send_meta: alloc(shmem, n * cap, 0u32)?,
            recv_x: alloc(shmem, block_rows * s.hf, 0.0f32)?,
            recv_meta: alloc(shmem, n * cap, 0u32)?,
            y: alloc(shmem, block_rows * s.hf, 0.0f32)?,
            comb_recv: alloc(shmem, block_rows * s.hf, 0.0f32)?,
            slot_of: Vec::new(),
            recv_cnt: vec![0; s.epp * n],
        })
    }

    pub(super) fn free(self) -> Result<(), MoeError> {
        self.comb_recv.free()?;
        self.y.free()?;
        self.recv_meta.free()?;
        self.recv_x.free()?;
        self.send_meta.free()?;
        Ok(())
    }

    /// Assigns slots (host), then one kernel: every (token, expert) row straight into its
    /// slot, one metadata put-with-signal per destination, wait for every source.
    pub(super) fn dispatch(
        &mut self,
        s: &Shape,
        exec: &Engine,
        x: DevPtr<f32>,
        sig: Signals,
        epoch: u64,
        idx: &[i32],
    ) -> Result<(), MoeError> {
        let (me, n, k, hf, tmax, epp, cap) = (s.me, s.n, s.topk, s.hf, s.tmax, s.epp, meta_cap(s));
        let num_tokens = idx.len() / k;
        // Slots per global expert, in token order.
        let mut count = vec![0usize; n * epp];
        self.slot_of.clear();
        self.slot_of.extend(idx.iter().map(|&e| {
            if e < 0 {
                return NONE;
            }
            let c = &mut count[e as usize];
            *c += 1;
            (*c - 1) as u32
        }));
        let mut plan = Plan { runs: vec![Vec::new(); n], meta_len: vec![0; n] };
        {
            // SAFETY: send_meta is read only by this PE's device threads (the source of the
            // metadata puts), inside this buffer's dispatch kernels, none of which runs now.
            let meta = unsafe { self.send_meta.as_mut_slice() };
            // Where each global expert's token list starts in its destination's message.
            let mut at = vec![0usize; n * epp];
            for p in 0..n {
                let m = &mut meta[p * cap..][..cap];
                let mut pos = epp;
                for l in 0..epp {
                    m[l] = count[p * epp + l] as u32;
                    at[p * epp + l] = p * cap + pos;
                    pos += count[p * epp + l];
                }
                plan.meta_len[p] = pos;
            }
            // Runs per (destination, expert): consecutive tokens in consecutive slots.
            let mut expert_runs: Vec<Vec<Run>> = vec![Vec::new(); n * epp];
            for t in 0..num_tokens {
                for kk in 0..k {
                    let e = idx[t * k + kk];
                    if e < 0 {
                        continue;
                    }
                    let (e, slot) = (e as usize, self.slot_of[t * k + kk] as usize);
                    meta[at[e] + slot] = t as u32;
                    let row = ((e % epp) * n + me) * tmax + slot;
                    push_run(&mut expert_runs[e], t, row);
                }
            }
            // This PE's own rows stay in the token buffer.
            for (e, runs) in expert_runs.into_iter().enumerate().filter(|(e, _)| e / epp != me) {
                plan.runs[e / epp].extend(runs);
            }
        }
        let plan = Arc::new(plan);
        let (send_meta, recv_x, recv_meta) = (
            DevPtr::from_slice(&self.send_meta),
            DevPtr::from_slice(&self.recv_x),
            DevPtr::from_slice(&self.recv_meta),
        );
        exec.run(move |t| {
            for p in my_peers(t, me, n).filter(|&p| p != me) {
                for r in &plan.runs[p] {
                    let (token, row, len) = (r.token as usize, r.row as usize, r.len as usize);
                    t.put_nbi(recv_x.offset(row * hf), x.offset(token * hf), len * hf, p);
                }
                // The counts and token ids, and their signal, go after every row.
                t.fence();
                t.put_signal_nbi(
                    recv_meta.offset(me * cap),
                    send_meta.offset(p * cap),
                    plan.meta_len[p],
                    sig.at(Phase::Data, me),
                    epoch,
                    SignalOp::Set,
                    p,
                );
            }
            t.quiet();
            for src in my_sources(t, me, n).filter(|&src| src != me) {
                t.signal_wait_until(sig.at(Phase::Data, src), Cmp::Ge, epoch);
            }
        })?;
        for l in 0..epp {
            for src in 0..n {
                self.recv_cnt[l * n + src] = self.meta(s, src)[l] as usize;
            }
        }
        Ok(())
    }

    /// The metadata message from `src` (this PE's own stays in `send_meta`).
    fn meta(&self, s: &Shape, src: usize) -> &[u32] {
        let cap = meta_cap(s);
        // SAFETY: send_meta is written by this PE before its dispatch kernel and read-only
        // until the next; recv_meta by the sources before their data signal, which the
        // dispatch kernel awaited, and not again before our combine has sent everything back.
        let all = unsafe { if src == s.me { self.send_meta.as_slice() } else { self.recv_meta.as_slice() } };
        &all[src * cap..][..cap]
    }

    pub(super) fn tokens_per_expert(&self, s: &Shape) -> Vec<usize> {
        (0..s.epp).map(|l| (0..s.n).map(|src| self.recv_cnt[l * s.n + src]).sum()).collect()
    }

    pub(super) fn rows_from(&self, s: &Shape) -> Vec<usize> {
        (0..s.n).map(|src| (0..s.epp).map(|l| self.recv_cnt[l * s.n + src]).sum()).collect()
    }

    pub(super) fn for_each_row(&self, s: &Shape, x: &[f32], mut f: impl FnMut(ExpertRow, &[f32])) {
        // SAFETY: written by the sources before their data signal, which the dispatch kernel
        // awaited; not written again before our combine has sent everything back.
        let recv_x = unsafe { self.recv_x.as_slice() };
        self.each_row(s, |expert, l, src, slot, token| {
            let xr = if src == s.me { &x[token * s.hf..] } else { &recv_x[((l * s.n + src) * s.tmax + slot) * s.hf..] };
            f(ExpertRow { expert, src_pe: src, src_token: token }, &xr[..s.hf]);
        });
    }

    /// Runs the experts into `y`; the outputs for this PE's own tokens go straight to where
    /// combine would put them.
    pub(super) fn apply(&mut self, s: &Shape, x: &[f32], mut f: impl FnMut(ExpertRow, &[f32], &mut [f32])) {
        let (hf, n, tmax) = (s.hf, s.n, s.tmax);
        // SAFETY: recv_x as in for_each_row. y is written by this PE only and read by its
        // combine puts, which have not started; the blocks of this PE's experts in comb_recv
        // are written by this PE only (peers write the blocks of their experts) and read after
        // combine. Neither overlaps what each_row reads (send_meta, recv_meta), and a SymSlice
        // holds no reference to its memory, so these slices alias nothing.
        let (recv_x, y, home) = unsafe {
            (
                self.recv_x.as_slice(),
                std::slice::from_raw_parts_mut(self.y.as_ptr(), self.y.len()),
                std::slice::from_raw_parts_mut(self.comb_recv.as_ptr(), self.comb_recv.len()),
            )
        };
        self.each_row(s, |expert, l, src, slot, token| {
            let row = ExpertRow { expert, src_pe: src, src_token: token };
            if src == s.me {
                f(row, &x[token * hf..][..hf], &mut home[(expert * tmax + slot) * hf..][..hf]);
            } else {
                let at = ((l * n + src) * tmax + slot) * hf;
                f(row, &recv_x[at..][..hf], &mut y[at..][..hf]);
            }
        });
    }

    /// Calls `f(expert, local expert, source, slot, token)` for every received row, expert by
    /// expert, source by source.
    fn each_row(&self, s: &Shape, mut f: impl FnMut(usize, usize, usize, usize, usize)) {
        for l in 0..s.epp {
            for src in 0..s.n {
                let m = self.meta(s, src);
                let start = s.epp + m[..l].iter().map(|&c| c as usize).sum::<usize>();
                for slot in 0..self.recv_cnt[l * s.n + src] {
                    f(s.me * s.epp + l, l, src, slot, m[start + slot] as usize);
                }
            }
        }
    }

    /// One put per (expert, source) block, one signal per source; then the weighted sum at
    /// home.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn combine(
        &mut self,
        s: &Shape,
        exec: &Engine,
        sig: Signals,
        epoch: u64,
        idx: &[i32],
        w: &[f32],
        scratch: &mut [f32],
        out: &mut [f32],
    ) -> Result<(), MoeError> {
        let (me, n, hf, tmax, epp, k) = (s.me, s.n, s.hf, s.tmax, s.epp, s.topk);
        let cnt: Arc<[usize]> = self.recv_cnt.clone().into();
        let (y, comb_recv) = (DevPtr::from_slice(&self.y), DevPtr::from_slice(&self.comb_recv));
        exec.run(move |t| {
            for src in my_peers(t, me, n).filter(|&src| src != me) {
                for l in 0..epp {
                    let rows = cnt[l * n + src];
                    if rows > 0 {
                        t.put_nbi(
                            comb_recv.offset((me * epp + l) * tmax * hf),
                            y.offset((l * n + src) * tmax * hf),
                            rows * hf,
                            src,
                        );
                    }
                }
                t.fence();
                t.signal_op(sig.at(Phase::Combine, me), epoch, SignalOp::Set, src);
            }
            t.quiet();
            for q in my_sources(t, me, n).filter(|&q| q != me) {
                t.signal_wait_until(sig.at(Phase::Combine, q), Cmp::Ge, epoch);
            }
        })?;
        // SAFETY: every expert PE's rows arrived before its combine signal, which the kernel
        // awaited; none writes here again before our next dispatch.
        let cr = unsafe { self.comb_recv.as_slice() };
        let num_tokens = idx.len() / k;
        for t in 0..num_tokens {
            let o = &mut out[t * hf..][..hf];
            let mut first = true;
            for q in 0..n {
                let mut any = false;
                scratch.fill(0.0);
                for kk in 0..k {
                    let e = idx[t * k + kk];
                    if e < 0 || e as usize / epp != q {
                        continue;
                    }
                    any = true;
                    let row = e as usize * tmax + self.slot_of[t * k + kk] as usize;
                    add_scaled_row(scratch, w[t * k + kk], &cr[row * hf..][..hf]);
                }
                if any {
                    if first {
                        assign_sum(o, scratch)
                    } else {
                        add_row(o, scratch)
                    }
                    first = false;
                }
            }
            if first {
                o.fill(0.0);
            }
        }
        Ok(())
    }
}
