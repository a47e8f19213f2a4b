//! Low-latency mode: token-indexed receive slots in both directions, so no count or layout
//! exchange in either direction.
//!
//! Dispatch: block `s` of `recv_x` at PE `q` holds `tmax` token-indexed rows: row `t` is token
//! `t` of source `s`, if any of its experts is on `q`. The source knows every address without
//! asking, and puts each token once per destination PE (not once per expert there: a token's
//! top-k choices often land on the same PE, and the bytes are most of the time), runs of
//! consecutive tokens as one put. After its rows, each source puts one metadata message per
//! destination, with its signal: `[count per local expert][(token, k, weight) of each row,
//! expert by expert]` — the expert pass walks each expert's rows from it.
//!
//! Combine: the expert PE sums its experts' weighted outputs per token (`partial = 0 + w_k ·
//! y_k` in `k` order) into row `t` of its block for the source, and puts the rows back to row
//! `t` of the source's block for this PE (`comb_recv[q][t]`) — addresses the source knows in
//! advance too — runs of consecutive tokens as one put, one signal per source.

use std::sync::Arc;

use oxshmem::{Shmem, SignalOp};

use super::access::{Arrived, Inbox, Kernel, Kernels, Outbox};
use super::{ExpertRow, MoeError, Phase, RowSum, Run, Shape, Signals, add_scaled_row, alloc, my_peers, push_run};
use oxshmem_device::DevPtr;

/// u32 words per metadata entry: token, choice k, weight bits.
const ENTRY: usize = 3;

/// u32 words of one metadata message: the counts, then at most `tmax` entries per local expert
/// (a token picks an expert at most once, and at most `topk` of them).
fn meta_cap(s: &Shape) -> usize {
    s.epp + ENTRY * s.tmax * s.topk.min(s.epp)
}

/// The symmetric buffers of low-latency mode and the layout of the current dispatch.
pub(super) struct Bufs {
    /// One metadata message per destination.
    send_meta: Outbox<u32>,
    /// Per source, `tmax` token-indexed rows.
    recv_x: Inbox<f32>,
    /// One metadata message per source.
    recv_meta: Inbox<u32>,
    /// Per source, `tmax` token-indexed rows of partial sums: the source of the combine puts.
    partial: Outbox<f32>,
    /// Per expert PE, `tmax` token-indexed rows of partial sums for this PE's tokens (block
    /// `me`: this PE's own experts' sums, written by its expert pass).
    comb_recv: Inbox<f32>,
    /// `[l * n + s]`: rows received from source `s` for local expert `l`.
    recv_cnt: Vec<usize>,
    /// Per source: runs of the tokens it sent here (token-indexed rows of `partial`).
    tokens_from: Vec<Vec<Run>>,
}

struct Plan {
    runs: Vec<Vec<Run>>,
    meta_len: Vec<usize>,
}

/// One received (token, expert) row: where it is and what it is.
#[derive(Debug, Clone, Copy)]
struct Entry {
    token: usize,
    k: usize,
    w: f32,
}

impl Bufs {
    pub(super) fn new(shmem: &Shmem, s: &Shape) -> Result<Bufs, MoeError> {
        let (n, cap, block) = (s.n, meta_cap(s), s.tmax * s.hf);
        // SAFETY: the protocol of the module documentation. send_meta and partial are only
        // the sources of this PE's puts. Peers put into recv_x and recv_meta in their dispatch
        // kernels, before their data signal, and into their own blocks of comb_recv in their
        // combine kernels, before their combine signal; neither again before this PE's next
        // kernel ("Why one set of buffers is enough", moe.rs). Nobody puts into block `me` of
        // comb_recv, and no kernel reads it.
        unsafe {
            Ok(Bufs {
                send_meta: Outbox::new(alloc(shmem, n * cap, 0u32)?),
                recv_x: Inbox::new(alloc(shmem, n * block, 0.0f32)?, Kernel::Dispatch, 0..0),
                recv_meta: Inbox::new(alloc(shmem, n * cap, 0u32)?, Kernel::Dispatch, 0..0),
                partial: Outbox::new(alloc(shmem, n * block, 0.0f32)?),
                comb_recv: Inbox::new(
                    alloc(shmem, n * block, 0.0f32)?,
                    Kernel::Combine,
                    s.me * block..(s.me + 1) * block,
                ),
                recv_cnt: vec![0; s.epp * n],
                tokens_from: vec![Vec::new(); n],
            })
        }
    }

    pub(super) fn free(self) -> Result<(), MoeError> {
        self.comb_recv.free()?;
        self.partial.free()?;
        self.recv_meta.free()?;
        self.recv_x.free()?;
        self.send_meta.free()?;
        Ok(())
    }

    /// Plans the puts (host), then one kernel: every token once to each other PE that holds one
    /// of its experts, into its token-indexed row there, one metadata put-with-signal per
    /// destination, wait for every source. Rows for this PE's own experts are not copied: they
    /// are read in place from the token buffer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch(
        &mut self,
        s: &Shape,
        kernels: &mut Kernels,
        x: DevPtr<f32>,
        sig: Signals,
        epoch: u64,
        idx: &[i32],
        w: &[f32],
    ) -> Result<(), MoeError> {
        let (me, n, k, hf, tmax, epp, cap) = (s.me, s.n, s.topk, s.hf, s.tmax, s.epp, meta_cap(s));
        let num_tokens = idx.len() / k;
        // Rows per global expert.
        let mut count = vec![0usize; n * epp];
        for &e in idx.iter().filter(|&&e| e >= 0) {
            count[e as usize] += 1;
        }
        let mut plan = Plan { runs: vec![Vec::new(); n], meta_len: vec![0; n] };
        {
            let meta = self.send_meta.host_mut(kernels.idle());
            // Where each global expert's entries start in its destination's message.
            let mut at = vec![0usize; n * epp];
            for p in 0..n {
                let m = &mut meta[p * cap..][..cap];
                let mut pos = epp;
                for l in 0..epp {
                    m[l] = count[p * epp + l] as u32;
                    at[p * epp + l] = p * cap + pos;
                    pos += ENTRY * count[p * epp + l];
                }
                plan.meta_len[p] = pos;
            }
            // Entries in token order per expert; runs per destination PE: a token once, into
            // row `t` of this PE's block there, consecutive tokens as one run.
            let mut slot = vec![0usize; n * epp];
            for t in 0..num_tokens {
                for kk in 0..k {
                    let e = idx[t * k + kk];
                    if e < 0 {
                        continue;
                    }
                    let e = e as usize;
                    let j = slot[e];
                    slot[e] += 1;
                    meta[at[e] + ENTRY * j..][..ENTRY].copy_from_slice(&[t as u32, kk as u32, w[t * k + kk].to_bits()]);
                    let p = e / epp;
                    // Each token once per PE: tokens come in order, so a PE this token already
                    // goes to has a last run that ends past it.
                    if p != me && plan.runs[p].last().is_none_or(|r| (r.token + r.len) as usize <= t) {
                        push_run(&mut plan.runs[p], t, me * tmax + t);
                    }
                }
            }
        }
        let plan = Arc::new(plan);
        let (send_meta, recv_x, recv_meta) = (self.send_meta.dev(), self.recv_x.dev(), self.recv_meta.dev());
        let arrived = kernels.run_then_await(Kernel::Dispatch, s, sig, epoch, move |t| {
            for p in my_peers(t, me, n).filter(|&p| p != me) {
                for r in &plan.runs[p] {
                    let (token, row, len) = (r.token as usize, r.row as usize, r.len as usize);
                    t.put_nbi(recv_x.offset(row * hf), x.offset(token * hf), len * hf, p);
                }
                // The counts and entries, and their signal, go after every row.
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
        })?;
        for src in 0..n {
            let m = meta_of(&self.send_meta, &self.recv_meta, s, src, arrived);
            // The tokens of src that come back from here, in order.
            let mut tokens: Vec<usize> = Vec::new();
            let mut start = epp;
            for (l, &c) in m[..epp].iter().enumerate() {
                self.recv_cnt[l * n + src] = c as usize;
                tokens.extend((0..c as usize).map(|j| m[start + ENTRY * j] as usize));
                start += ENTRY * c as usize;
            }
            tokens.sort_unstable();
            tokens.dedup();
            let runs = &mut self.tokens_from[src];
            runs.clear();
            for t in tokens {
                push_run(runs, t, t);
            }
        }
        Ok(())
    }

    /// The metadata message from `src`.
    fn meta<'a>(&'a self, s: &Shape, src: usize, arrived: Arrived<'a>) -> &'a [u32] {
        meta_of(&self.send_meta, &self.recv_meta, s, src, arrived)
    }

    /// Calls `f(expert, source, entry)` for every received row, expert by expert, source by
    /// source.
    fn each_row(&self, s: &Shape, arrived: Arrived<'_>, mut f: impl FnMut(usize, usize, Entry)) {
        for l in 0..s.epp {
            for src in 0..s.n {
                let m = self.meta(s, src, arrived);
                let start = s.epp + ENTRY * m[..l].iter().map(|&c| c as usize).sum::<usize>();
                for j in 0..self.recv_cnt[l * s.n + src] {
                    let e = &m[start + ENTRY * j..][..ENTRY];
                    let entry = Entry { token: e[0] as usize, k: e[1] as usize, w: f32::from_bits(e[2]) };
                    f(s.me * s.epp + l, src, entry);
                }
            }
        }
    }

    pub(super) fn tokens_per_expert(&self, s: &Shape) -> Vec<usize> {
        (0..s.epp).map(|l| (0..s.n).map(|src| self.recv_cnt[l * s.n + src]).sum()).collect()
    }

    pub(super) fn rows_from(&self, s: &Shape) -> Vec<usize> {
        (0..s.n).map(|src| (0..s.epp).map(|l| self.recv_cnt[l * s.n + src]).sum()).collect()
    }

    pub(super) fn for_each_row(
        &self,
        s: &Shape,
        x: &[f32],
        arrived: Arrived<'_>,
        mut f: impl FnMut(ExpertRow, &[f32]),
    ) {
        let recv_x = self.recv_x.read(arrived);
        self.each_row(s, arrived, |expert, src, e| {
            f(ExpertRow { expert, src_pe: src, src_token: e.token }, x_row(s, x, recv_x, src, &e));
        });
    }

    /// Runs the experts and reduces them per (source, token): `partial = 0 + w_k * y_k` in k
    /// order, into the token's row of the source's block (this PE's own tokens: straight into
    /// the combine buffer).
    pub(super) fn apply(
        &mut self,
        s: &Shape,
        x: &[f32],
        scratch: &mut [f32],
        arrived: Arrived<'_>,
        mut f: impl FnMut(ExpertRow, &[f32], &mut [f32]),
    ) {
        let (hf, me, tmax) = (s.hf, s.me, s.tmax);
        // Every source's entries, by token, then choice.
        let mut by_src: Vec<Vec<(usize, Entry)>> = vec![Vec::new(); s.n];
        self.each_row(s, arrived, |expert, src, e| by_src[src].push((expert, e)));
        let recv_x = self.recv_x.read(arrived);
        // partial goes out in combine; block `me` of comb_recv (token-indexed like the other
        // blocks) is where combine would have put this PE's own sums.
        let partial = self.partial.host_mut(arrived.idle());
        let home = self.comb_recv.own_mut(arrived.idle());
        for (src, rows) in by_src.iter_mut().enumerate() {
            rows.sort_unstable_by_key(|(_, e)| (e.token, e.k));
            let mut last = usize::MAX;
            for (expert, e) in rows.iter() {
                let pr = if src == me {
                    &mut home[e.token * hf..][..hf]
                } else {
                    &mut partial[(src * tmax + e.token) * hf..][..hf]
                };
                if e.token != last {
                    pr.fill(0.0);
                    last = e.token;
                }
                f(ExpertRow { expert: *expert, src_pe: src, src_token: e.token }, x_row(s, x, recv_x, src, e), scratch);
                add_scaled_row(pr, e.w, scratch);
            }
        }
    }

    /// One put per run of tokens and one signal per other source; then the sum over PEs at
    /// home.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn combine(
        &mut self,
        s: &Shape,
        kernels: &mut Kernels,
        sig: Signals,
        epoch: u64,
        idx: &[i32],
        out: &mut [f32],
    ) -> Result<(), MoeError> {
        let (me, n, hf, tmax, epp, k) = (s.me, s.n, s.hf, s.tmax, s.epp, s.topk);
        let runs: Arc<Vec<Vec<Run>>> = Arc::new(self.tokens_from.clone());
        let (partial, comb_recv) = (self.partial.dev(), self.comb_recv.dev());
        let arrived = kernels.run_then_await(Kernel::Combine, s, sig, epoch, move |t| {
            for src in my_peers(t, me, n).filter(|&src| src != me) {
                for r in &runs[src] {
                    let (t0, len) = (r.token as usize, r.len as usize);
                    t.put_nbi(
                        comb_recv.offset((me * tmax + t0) * hf),
                        partial.offset((src * tmax + t0) * hf),
                        len * hf,
                        src,
                    );
                }
                t.fence();
                t.signal_op(sig.at(Phase::Combine, me), epoch, SignalOp::Set, src);
            }
        })?;
        // Every expert PE's rows arrived before its combine signal, which the kernel awaited.
        let cr = self.comb_recv.read(arrived);
        let num_tokens = idx.len() / k;
        for t in 0..num_tokens {
            let ids = &idx[t * k..(t + 1) * k];
            let mut sum = RowSum::new(&mut out[t * hf..][..hf]);
            for q in 0..n {
                if ids.iter().any(|&e| e >= 0 && e as usize / epp == q) {
                    let p = &cr[(q * tmax + t) * hf..][..hf];
                    sum.push(p);
                }
            }
            sum.finish();
        }
        Ok(())
    }
}

/// The metadata message from `src` (this PE's own stays in `send_meta`).
fn meta_of<'a>(
    send_meta: &'a Outbox<u32>,
    recv_meta: &'a Inbox<u32>,
    s: &Shape,
    src: usize,
    arrived: Arrived<'a>,
) -> &'a [u32] {
    let cap = meta_cap(s);
    let all = if src == s.me { send_meta.host(arrived.idle()) } else { recv_meta.read(arrived) };
    &all[src * cap..][..cap]
}

/// The values of a received row (`recv_x`: the receive blocks, viewed for the phase).
fn x_row<'a>(s: &Shape, x: &'a [f32], recv_x: &'a [f32], src: usize, e: &Entry) -> &'a [f32] {
    let hf = s.hf;
    if src == s.me {
        return &x[e.token * hf..][..hf];
    }
    &recv_x[(src * s.tmax + e.token) * hf..][..hf]
}
