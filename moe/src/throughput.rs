//! Throughput mode: count exchange, packed per-source receive regions, one row per
//! (token, destination PE), expert-side partial sums.
//!
//! Receive layout at PE `q`: the rows of source 0, then source 1, ... (`Σ_s count(s→q)` rows
//! of `hidden` f32 in `recv_x`, and one metadata row each in `recv_meta`:
//! `[token, topk expert ids, topk weight bits]`). Source `s` finds its offset at `q` as
//! `Σ_{s' < s} count(s'→q)` from the count matrix that every PE puts to every PE first.

use std::sync::Arc;

use oxshmem::{Cmp, Shmem, SignalOp};

use super::access::{Arrived, Inbox, Kernel, Kernels, Outbox};
use super::{ExpertRow, MoeError, NONE, Phase, RowSum, Run, Shape, Signals, add_scaled_row, alloc, my_peers, push_run};
use oxshmem_device::DevPtr;

/// u32 words of metadata per row: token, topk expert ids, topk weights.
fn meta_words(s: &Shape) -> usize {
    1 + 2 * s.topk
}

/// The symmetric buffers of throughput mode and the layout of the current dispatch.
pub(super) struct Bufs {
    /// This PE's row count per destination (the source of the count exchange).
    cnt_send: Outbox<u64>,
    /// Row `s`: source `s`'s count per destination.
    cnt_mat: Inbox<u64>,
    /// Metadata rows per destination, `tmax` rows each.
    send_meta: Outbox<u32>,
    recv_x: Inbox<f32>,
    recv_meta: Inbox<u32>,
    /// One partial sum per received row: the source of the combine puts.
    partial: Outbox<f32>,
    /// Per expert PE, `tmax` rows of partial sums (block `me`: this PE's own experts' sums,
    /// written by its expert pass).
    comb_recv: Inbox<f32>,
    /// `[t * n + p]`: row of token `t` in its region at PE `p` (NONE: not sent there).
    row_of: Vec<u32>,
    /// Per source: first row and rows in this PE's receive region.
    recv: Vec<(usize, usize)>,
}

struct Plan {
    runs: Vec<Vec<Run>>,
    count: Vec<usize>,
}

impl Bufs {
    pub(super) fn new(shmem: &Shmem, s: &Shape) -> Result<Bufs, MoeError> {
        let (n, rows, mw, block) = (s.n, s.n * s.tmax, meta_words(s), s.tmax * s.hf);
        // SAFETY: the protocol of the module documentation. cnt_send, send_meta and partial are
        // only the sources of this PE's puts. Peers put into cnt_mat, recv_x and recv_meta in
        // their dispatch kernels, before their data signal (the counts before a fence, the rows
        // and metadata with it), and into their own blocks of comb_recv in their combine
        // kernels, with their combine signal; neither again before this PE's next kernel ("Why
        // one set of buffers is enough", moe.rs). Nobody puts into block `me` of comb_recv, and
        // no kernel reads it.
        unsafe {
            Ok(Bufs {
                cnt_send: Outbox::new(alloc(shmem, n, 0u64)?),
                cnt_mat: Inbox::new(alloc(shmem, n * n, 0u64)?, Kernel::Dispatch, 0..0),
                send_meta: Outbox::new(alloc(shmem, rows * mw, 0u32)?),
                recv_x: Inbox::new(alloc(shmem, rows * s.hf, 0.0f32)?, Kernel::Dispatch, 0..0),
                recv_meta: Inbox::new(alloc(shmem, rows * mw, 0u32)?, Kernel::Dispatch, 0..0),
                partial: Outbox::new(alloc(shmem, rows * s.hf, 0.0f32)?),
                comb_recv: Inbox::new(
                    alloc(shmem, rows * s.hf, 0.0f32)?,
                    Kernel::Combine,
                    s.me * block..(s.me + 1) * block,
                ),
                row_of: Vec::new(),
                recv: vec![(0, 0); n],
            })
        }
    }

    pub(super) fn free(self) -> Result<(), MoeError> {
        // Reverse order of allocation, as every PE does.
        self.comb_recv.free()?;
        self.partial.free()?;
        self.recv_meta.free()?;
        self.recv_x.free()?;
        self.send_meta.free()?;
        self.cnt_mat.free()?;
        self.cnt_send.free()?;
        Ok(())
    }

    /// Plans the rows per destination (host), then one kernel: count exchange, puts of the
    /// token runs, one metadata put-with-signal per destination, wait for every source. Rows
    /// for this PE's own experts are not copied: they are read in place from the token buffer.
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
        let (me, n, k, hf, tmax, mw) = (s.me, s.n, s.topk, s.hf, s.tmax, meta_words(s));
        let num_tokens = idx.len() / k;
        let mut plan = Plan { runs: vec![Vec::new(); n], count: vec![0; n] };
        self.row_of.clear();
        self.row_of.resize(num_tokens * n, NONE);
        {
            let meta = self.send_meta.host_mut(kernels.idle());
            for t in 0..num_tokens {
                let ids = &idx[t * k..(t + 1) * k];
                for p in 0..n {
                    if !ids.iter().any(|&e| e >= 0 && e as usize / s.epp == p) {
                        continue;
                    }
                    let j = plan.count[p];
                    plan.count[p] += 1;
                    self.row_of[t * n + p] = j as u32;
                    let m = &mut meta[(p * tmax + j) * mw..][..mw];
                    m[0] = t as u32;
                    for (d, &e) in m[1..=k].iter_mut().zip(ids) {
                        *d = e as u32;
                    }
                    for (d, &v) in m[1 + k..].iter_mut().zip(&w[t * k..(t + 1) * k]) {
                        *d = v.to_bits();
                    }
                    if p != me {
                        push_run(&mut plan.runs[p], t, j);
                    }
                }
            }
            let cnt = self.cnt_send.host_mut(kernels.idle());
            for (c, &v) in cnt.iter_mut().zip(&plan.count) {
                *c = v as u64;
            }
        }
        let own = plan.count[me];
        let plan = Arc::new(plan);
        let (cnt_send, cnt_mat) = (self.cnt_send.dev(), self.cnt_mat.dev());
        let (send_meta, recv_x, recv_meta) = (self.send_meta.dev(), self.recv_x.dev(), self.recv_meta.dev());
        let arrived = kernels.run_then_await(Kernel::Dispatch, s, sig, epoch, move |t| {
            for p in my_peers(t, me, n).filter(|&p| p != me) {
                t.put_signal_nbi(
                    cnt_mat.offset(me * n),
                    cnt_send,
                    n,
                    sig.at(Phase::Counts, me),
                    epoch,
                    SignalOp::Set,
                    p,
                );
            }
            // Every thread needs column p of the whole matrix for each of its destinations.
            for src in (0..n).filter(|&src| src != me) {
                t.signal_wait_until(sig.at(Phase::Counts, src), Cmp::Ge, epoch);
            }
            for p in my_peers(t, me, n).filter(|&p| p != me) {
                let off: usize = (0..me).map(|src| cnt_mat.read_local(src * n + p) as usize).sum();
                for r in &plan.runs[p] {
                    let (token, row, len) = (r.token as usize, r.row as usize, r.len as usize);
                    t.put_nbi(recv_x.offset((off + row) * hf), x.offset(token * hf), len * hf, p);
                }
                let c = plan.count[p];
                if c > 0 {
                    // The metadata and its signal go after every token row of this destination.
                    t.fence();
                    t.put_signal_nbi(
                        recv_meta.offset(off * mw),
                        send_meta.offset(p * tmax * mw),
                        c * mw,
                        sig.at(Phase::Data, me),
                        epoch,
                        SignalOp::Set,
                        p,
                    );
                } else {
                    t.signal_op(sig.at(Phase::Data, me), epoch, SignalOp::Set, p);
                }
            }
        })?;
        // Every other source's count row arrived (its signal was awaited in the kernel).
        let cm = self.cnt_mat.read(arrived);
        let mut off = 0;
        for src in 0..n {
            let c = if src == me { own } else { cm[src * n + me] as usize };
            self.recv[src] = (off, c);
            off += c;
        }
        Ok(())
    }

    /// What the last dispatch brought here, viewed until the combine kernel.
    fn received<'a>(&'a self, x: &'a [f32], arrived: Arrived<'a>) -> Received<'a> {
        Received::new(&self.send_meta, &self.recv_meta, &self.recv_x, &self.recv, x, arrived)
    }

    /// The local choices `(k, expert)` of a metadata row.
    fn local_choices<'m>(s: &Shape, m: &'m [u32]) -> impl Iterator<Item = (usize, usize)> + 'm {
        let (me, epp) = (s.me, s.epp);
        m[1..=s.topk].iter().enumerate().filter_map(move |(k, &e)| {
            let e = e as i32;
            (e >= 0 && e as usize / epp == me).then_some((k, e as usize))
        })
    }

    pub(super) fn tokens_per_expert(&self, s: &Shape, x: &[f32], arrived: Arrived<'_>) -> Vec<usize> {
        let mut per = vec![0; s.epp];
        self.received(x, arrived).each_row(s, |_, _, m, _| {
            for (_, e) in Self::local_choices(s, m) {
                per[e % s.epp] += 1;
            }
        });
        per
    }

    pub(super) fn rows_from(&self, _s: &Shape) -> Vec<usize> {
        self.recv.iter().map(|r| r.1).collect()
    }

    pub(super) fn for_each_row(
        &self,
        s: &Shape,
        x: &[f32],
        arrived: Arrived<'_>,
        mut f: impl FnMut(ExpertRow, &[f32]),
    ) {
        self.received(x, arrived).each_row(s, |src, _, m, xr| {
            for (_, expert) in Self::local_choices(s, m) {
                f(ExpertRow { expert, src_pe: src, src_token: m[0] as usize }, xr);
            }
        });
    }

    /// Runs the experts and reduces them per row: `partial = 0 + w_k * y_k` in k order. The
    /// partial sums of this PE's own tokens go straight to where combine would put them.
    pub(super) fn apply(
        &mut self,
        s: &Shape,
        x: &[f32],
        scratch: &mut [f32],
        arrived: Arrived<'_>,
        mut f: impl FnMut(ExpertRow, &[f32], &mut [f32]),
    ) {
        let hf = s.hf;
        let got = Received::new(&self.send_meta, &self.recv_meta, &self.recv_x, &self.recv, x, arrived);
        // partial goes out in combine; block `me` of comb_recv is where combine would have put
        // this PE's own sums.
        let partial = self.partial.host_mut(arrived.idle());
        let home = self.comb_recv.own_mut(arrived.idle());
        got.each_row(s, |src, r, m, xr| {
            let pr =
                if src == s.me { &mut home[r * hf..][..hf] } else { &mut partial[(got.recv[src].0 + r) * hf..][..hf] };
            pr.fill(0.0);
            for (k, e) in Self::local_choices(s, m) {
                f(ExpertRow { expert: e, src_pe: src, src_token: m[0] as usize }, xr, scratch);
                add_scaled_row(pr, f32::from_bits(m[1 + s.topk + k]), scratch);
            }
        });
    }

    /// One put-with-signal of partial sums per other source, then the sum over PEs at home.
    pub(super) fn combine(
        &mut self,
        s: &Shape,
        kernels: &mut Kernels,
        sig: Signals,
        epoch: u64,
        num_tokens: usize,
        out: &mut [f32],
    ) -> Result<(), MoeError> {
        let (me, n, hf, tmax) = (s.me, s.n, s.hf, s.tmax);
        let recv: Arc<[(usize, usize)]> = self.recv.clone().into();
        let (partial, comb_recv) = (self.partial.dev(), self.comb_recv.dev());
        let arrived = kernels.run_then_await(Kernel::Combine, s, sig, epoch, move |t| {
            for src in my_peers(t, me, n).filter(|&src| src != me) {
                let (first, rows) = recv[src];
                let flag = sig.at(Phase::Combine, me);
                if rows > 0 {
                    t.put_signal_nbi(
                        comb_recv.offset(me * tmax * hf),
                        partial.offset(first * hf),
                        rows * hf,
                        flag,
                        epoch,
                        SignalOp::Set,
                        src,
                    );
                } else {
                    t.signal_op(flag, epoch, SignalOp::Set, src);
                }
            }
        })?;
        // Every expert PE's rows arrived with its combine signal, which the kernel awaited.
        let cr = self.comb_recv.read(arrived);
        for t in 0..num_tokens {
            let mut sum = RowSum::new(&mut out[t * hf..][..hf]);
            for q in 0..n {
                let j = self.row_of[t * n + q];
                if j != NONE {
                    let p = &cr[(q * tmax + j as usize) * hf..][..hf];
                    sum.push(p);
                }
            }
            sum.finish();
        }
        Ok(())
    }
}

/// What one dispatch brought here, viewed for host code until the combine kernel: every
/// source's metadata and token rows. This PE's own rows stay where they were: metadata in
/// `send_meta`, the token in the token buffer `x`.
#[derive(Clone, Copy)]
struct Received<'a> {
    x: &'a [f32],
    own_meta: &'a [u32],
    recv_meta: &'a [u32],
    recv_x: &'a [f32],
    /// Per source: first row and rows in the receive region.
    recv: &'a [(usize, usize)],
}

impl<'a> Received<'a> {
    fn new(
        send_meta: &'a Outbox<u32>,
        recv_meta: &'a Inbox<u32>,
        recv_x: &'a Inbox<f32>,
        recv: &'a [(usize, usize)],
        x: &'a [f32],
        arrived: Arrived<'a>,
    ) -> Received<'a> {
        Received {
            x,
            own_meta: send_meta.host(arrived.idle()),
            recv_meta: recv_meta.read(arrived),
            recv_x: recv_x.read(arrived),
            recv,
        }
    }

    /// Row `r` from source `src`: its metadata and its token.
    fn row(&self, s: &Shape, src: usize, r: usize) -> (&'a [u32], &'a [f32]) {
        let (mw, hf) = (meta_words(s), s.hf);
        if src == s.me {
            let m = &self.own_meta[(s.me * s.tmax + r) * mw..][..mw];
            (m, &self.x[m[0] as usize * hf..][..hf])
        } else {
            let row = self.recv[src].0 + r;
            (&self.recv_meta[row * mw..][..mw], &self.recv_x[row * hf..][..hf])
        }
    }

    /// Calls `f(source, row, metadata, token values)` for every received row.
    fn each_row(&self, s: &Shape, mut f: impl FnMut(usize, usize, &'a [u32], &'a [f32])) {
        for (src, &(_, rows)) in self.recv.iter().enumerate() {
            for r in 0..rows {
                let (m, xr) = self.row(s, src, r);
                f(src, r, m, xr);
            }
        }
    }
}
