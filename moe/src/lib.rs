//! MoE expert-parallel *dispatch* and *combine* on the device API — the DeepEP pattern.
//!
//! Every PE holds up to `tokens` tokens of `hidden_bytes` bytes (f32 values). Each token picks
//! `topk` of `experts` experts with a weight each; expert `e` lives on PE
//! `e / (experts / n_pes)`. [`Buffer::dispatch`] sends every token to the PEs of its experts,
//! the caller runs the experts on what arrived ([`Dispatched::apply_experts`]), and
//! [`ExpertOutputs::combine`] brings the outputs home, weighted and summed. All data moves by
//! device-initiated `_nbi` puts from device threads, and arrival is signalled with one signal
//! word per (source, destination) pair and phase — never per token.
//!
//! Two modes ([`Mode`]), like DeepEP's normal and low-latency kernels:
//!
//! - **Throughput**: a token goes once to each PE that holds one of its experts (not once per
//!   expert). A count exchange (each PE puts its per-destination counts to every PE, one signal
//!   each) lets every source compute where its rows land, so each destination receives all
//!   rows packed, source by source. Consecutive tokens bound for the same PE travel as one put,
//!   straight from the token buffer (no packing copy). The expert PE reduces its own experts'
//!   outputs for a token (`partial = Σ w_k · y_k`) and sends one row per (token, PE) back.
//! - **Low latency**: no count or layout exchange. Every destination preallocates, for each
//!   source PE, a token-indexed slot per token it may send (`tokens` rows), so a source knows
//!   every address in advance: each token is put straight into its slot once per PE that holds
//!   one of its experts (runs of consecutive tokens as one put), followed by one small
//!   put-with-signal per destination that carries the per-expert counts and the (token,
//!   choice, weight) of each row; the experts walk their rows through that list. (DeepEP's
//!   low-latency kernels put each (token, expert) row into per-expert slots, ready for a
//!   grouped GEMM; here that sent a token up to `topk` times to one PE, and at 7 KiB rows the
//!   extra bytes cost more than the count exchange saves.) Combine reduces per token on the
//!   expert PE, as in throughput mode, and puts the rows back to token-indexed slots at the
//!   source (again known in advance).
//!
//! In both modes the rows for this PE's own experts never move: the experts read them in
//! place from the token buffer and write their outputs where combine would have put them.
//! Each dispatch and each combine is one kernel of `threads` device threads, with the host's
//! share around it (the routing plan before dispatch, the final sum after combine); the kernels
//! run on the buffer's *resident* kernel (`moe/engine.rs`), so that a call does not pay for
//! spawning device threads.
//!
//! Host code works on symmetric rows as slices only through `moe/access.rs`: a buffer peers
//! write (an *inbox*) only after the kernel that awaited their signals, one only this PE writes
//! (an *outbox*) only while no kernel runs — each against a guard that the kernel runner hands
//! out, so no such slice outlives its phase.
//!
//! Both modes add up in the same order — for a token, `0 + partial(0) + partial(1) + ...` over
//! the PEs it was sent to, where `partial(q) = 0 + w_k · y_k` over its choices `k` on PE `q` in
//! `k` order — so they, every channel, and the MPI reference (`benches/c/moe_mpi.c`) give the
//! same bits ([`reference::Problem::expected_output`] is the serial definition).
//!
//! **Why one set of buffers is enough.** A peer writes my receive buffers only in its next
//! dispatch, which it starts after its combine — and its combine completes only after I sent
//! it my combine rows, which I do after I finished reading my receive buffers. Likewise my
//! combine-receive buffer is written in a peer's next combine, after my next dispatch, which I
//! start after reading it. So dispatch and combine must alternate, on every PE, and both are
//! collective: every PE calls them in the same order with the same [`MoeConfig`].
//!
//! This module owns the MoE protocol and its buffers only; it never touches a channel
//! directly — every remote access goes through [`Thread`]'s device API.
//!
//! ```no_run
//! use oxshmem_device::Device;
//! use oxshmem_moe::{Buffer, Mode, MoeConfig, reference};
//! let shmem = oxshmem::init()?;
//! let dev = Device::init(&shmem)?;
//! let experts = 8 * shmem.n_pes();
//! let cfg = MoeConfig { tokens: 128, hidden_bytes: 7168, topk: 8, experts, mode: Mode::Throughput, ..Default::default() };
//! let mut buf = Buffer::new(&shmem, &dev, cfg)?;
//! let x = vec![1.0f32; 128 * 7168 / 4];                 // 128 tokens of 1792 f32
//! let idx: Vec<i32> = (0..128 * 8).map(|i| ((i / 8 + i % 8 * 5) % experts) as i32).collect();
//! let w = vec![0.125f32; 128 * 8];                       // top-8 experts and weights per token
//! let d = buf.dispatch(&x, &idx, &w)?;
//! println!("my experts received {:?} tokens", d.tokens_per_expert());
//! let out: &[f32] = d.apply_experts(|row, x, y| reference::expert(row.expert, x, y)).combine()?;
//! println!("combined {} values", out.len());
//! buf.free()?;                                           // collective, like the rest
//! dev.finalize()?;
//! shmem.finalize()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod access;
mod engine;
mod low_latency;
pub mod reference;
mod throughput;

use oxshmem::{Shmem, SymSlice};

use access::{Kernel, Kernels, Outbox};
use engine::Engine;
use oxshmem_device::{DevPtr, Device, DeviceError, Grid, Thread};

/// How tokens travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Count exchange, then one packed region per source at each destination; a token crosses
    /// once per destination PE.
    #[default]
    Throughput,
    /// Preallocated per-(expert, source) slots, no count exchange; a token crosses once per
    /// expert on the way out, once per PE on the way back.
    LowLatency,
}

impl Mode {
    /// Both modes.
    pub const ALL: [Mode; 2] = [Mode::Throughput, Mode::LowLatency];

    /// `throughput` or `low-latency`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Throughput => "throughput",
            Mode::LowLatency => "low-latency",
        }
    }

    /// The mode called `name` (`ll` is accepted for low latency).
    pub fn from_name(name: &str) -> Option<Mode> {
        match name {
            "throughput" | "tp" => Some(Mode::Throughput),
            "low-latency" | "ll" => Some(Mode::LowLatency),
            _ => None,
        }
    }
}

/// The shape of a [`Buffer`]; every PE passes the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MoeConfig {
    /// The most tokens a PE dispatches at once.
    pub tokens: usize,
    /// Bytes per token (a multiple of 4: tokens are f32).
    pub hidden_bytes: usize,
    /// Experts per token.
    pub topk: usize,
    /// Experts in the job, a multiple of the number of PEs.
    pub experts: usize,
    /// Throughput or low latency.
    pub mode: Mode,
    /// Device threads per kernel (one block); 0 picks [`DEFAULT_THREADS`]. Device threads of
    /// the CPU back end are OS threads: more than the cores only adds switching.
    pub threads: usize,
    /// Launch a kernel per dispatch and per combine instead of handing them to the buffer's
    /// resident kernel (slower on the CPU back end, where a launch spawns the device threads;
    /// for comparison).
    pub launch_per_call: bool,
}

/// Device threads per kernel when [`MoeConfig::threads`] is 0.
pub const DEFAULT_THREADS: usize = 1;

impl MoeConfig {
    /// f32 values per token.
    pub fn hidden(&self) -> usize {
        self.hidden_bytes / 4
    }

    fn check(&self, pe: usize, n: usize) -> Result<(), MoeError> {
        let bad = |reason: String| Err(MoeError::Invalid { pe, func: "Buffer::new", reason });
        if self.tokens == 0 || self.hidden_bytes == 0 || self.topk == 0 {
            return bad(format!("tokens, hidden_bytes and topk must be positive: {self:?}"));
        }
        if !self.hidden_bytes.is_multiple_of(4) {
            return bad(format!("hidden_bytes {} is not a multiple of 4 (tokens are f32)", self.hidden_bytes));
        }
        if self.experts == 0 || !self.experts.is_multiple_of(n) {
            return bad(format!("{} experts cannot be spread evenly over {n} PEs", self.experts));
        }
        if self.topk > self.experts {
            return bad(format!("topk {} exceeds the {} experts", self.topk, self.experts));
        }
        if self.tokens > u32::MAX as usize / 2 {
            return bad(format!("{} tokens per PE is too many", self.tokens));
        }
        Ok(())
    }
}

/// An error of the MoE layer.
#[derive(Debug, thiserror::Error)]
pub enum MoeError {
    /// A bad argument; nothing was sent. (Dispatch and combine are collective: the other PEs
    /// are left waiting, so treat this as fatal for the job.)
    #[error("PE {pe}: moe {func}: {reason}")]
    Invalid {
        /// This PE.
        pe: usize,
        /// The function.
        func: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A device operation failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The runtime failed (allocating or freeing the symmetric buffers).
    #[error(transparent)]
    Runtime(#[from] oxshmem::Error),
}

/// One (token, expert) pair as the expert's PE sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExpertRow {
    /// The expert (global index).
    pub expert: usize,
    /// The PE that sent the token.
    pub src_pe: usize,
    /// The token's index on that PE.
    pub src_token: usize,
}

/// What both modes need to know about the job and the buffer.
#[derive(Debug, Clone, Copy)]
struct Shape {
    me: usize,
    n: usize,
    /// Experts per PE.
    epp: usize,
    /// f32 per token.
    hf: usize,
    topk: usize,
    /// Capacity in tokens per PE.
    tmax: usize,
    grid: Grid,
}

/// Signal words, each on its own cache line: one group per phase, one word per source PE.
const SIG_STRIDE: usize = 8;

#[derive(Debug, Clone, Copy)]
struct Signals {
    base: DevPtr<u64>,
    n: usize,
}

/// The phases that signal.
#[derive(Debug, Clone, Copy)]
enum Phase {
    Counts = 0,
    Data = 1,
    Combine = 2,
}

impl Signals {
    /// The word that source `src` sets in `phase`.
    fn at(self, phase: Phase, src: usize) -> DevPtr<u64> {
        self.base.offset((phase as usize * self.n + src) * SIG_STRIDE)
    }
}

/// The PEs device thread `t` serves, each once over the block: `me + i` for `i ≡ thread (mod
/// threads)` — every thread starts with a different peer, so the copies spread out.
fn my_peers(t: &Thread<'_>, me: usize, n: usize) -> impl Iterator<Item = usize> {
    (t.thread_idx()..n).step_by(t.block_dim()).map(move |i| (me + i) % n)
}

/// As [`my_peers`], counting downwards: the sources whose signals thread `t` waits for.
fn my_sources(t: &Thread<'_>, me: usize, n: usize) -> impl Iterator<Item = usize> {
    (t.thread_idx()..n).step_by(t.block_dim()).map(move |i| (me + n - i) % n)
}

/// A run of consecutive tokens that lands in consecutive rows of one destination region.
#[derive(Debug, Clone, Copy)]
struct Run {
    token: u32,
    row: u32,
    len: u32,
}

/// Appends token `token` going to row `row`, extending the last run when both continue it.
fn push_run(runs: &mut Vec<Run>, token: usize, row: usize) {
    match runs.last_mut() {
        Some(r) if (r.token + r.len) as usize == token && (r.row + r.len) as usize == row => r.len += 1,
        _ => runs.push(Run { token: token as u32, row: row as u32, len: 1 }),
    }
}

/// "No row": a token that does not go to that PE, or a masked choice.
const NONE: u32 = u32::MAX;

/// Symmetric memory of one slice, never less than one element.
fn alloc<T: bytemuck::Pod>(shmem: &Shmem, len: usize, fill: T) -> Result<SymSlice<T>, MoeError> {
    Ok(shmem.alloc_slice(len.max(1), fill)?)
}

/// Sums rows into `out`, elementwise and in the order they are pushed, starting from zero —
/// `out = ((0 + r0) + r1) + ...` — with one pass over `out` per four rows (the sum at the end of
/// combine is memory-bound).
struct RowSum<'r, 'o> {
    out: &'o mut [f32],
    rows: [&'r [f32]; 4],
    len: usize,
    started: bool,
}

impl<'r, 'o> RowSum<'r, 'o> {
    fn new(out: &'o mut [f32]) -> Self {
        RowSum { out, rows: [&[]; 4], len: 0, started: false }
    }

    fn push(&mut self, row: &'r [f32]) {
        if self.len == 4 {
            self.flush();
        }
        self.rows[self.len] = row;
        self.len += 1;
    }

    fn finish(mut self) {
        self.flush();
        if !self.started {
            self.out.fill(0.0);
        }
    }

    fn flush(&mut self) {
        let (o, z, r) = (&mut *self.out, !self.started, &self.rows);
        match self.len {
            0 => return,
            1 => sum_pass([r[0]], o, z),
            2 => sum_pass([r[0], r[1]], o, z),
            3 => sum_pass([r[0], r[1], r[2]], o, z),
            _ => sum_pass([r[0], r[1], r[2], r[3]], o, z),
        }
        self.started = true;
        self.len = 0;
    }
}

/// `out = ((base + r0) + r1) + ...` elementwise, `base` being 0 or `out` itself.
fn sum_pass<const K: usize>(rows: [&[f32]; K], out: &mut [f32], from_zero: bool) {
    let n = out.len();
    let rows = rows.map(|r| &r[..n]);
    if from_zero {
        for (h, o) in out.iter_mut().enumerate() {
            let mut acc = 0.0f32;
            for r in &rows {
                acc += r[h];
            }
            *o = acc;
        }
    } else {
        for (h, o) in out.iter_mut().enumerate() {
            let mut acc = *o;
            for r in &rows {
                acc += r[h];
            }
            *o = acc;
        }
    }
}

/// `dst += w * src`, elementwise (a multiply, then an add: never fused).
fn add_scaled_row(dst: &mut [f32], w: f32, src: &[f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d += w * s;
    }
}

enum ModeBufs {
    Throughput(throughput::Bufs),
    LowLatency(low_latency::Bufs),
}

/// The symmetric buffers and state of MoE dispatch/combine for one [`MoeConfig`] (DeepEP's
/// `Buffer`). Creating and freeing it is collective.
pub struct Buffer {
    cfg: MoeConfig,
    shape: Shape,
    kernels: Kernels,
    epoch: u64,
    /// The tokens to dispatch (`tokens × hidden`), read by this PE's device threads only.
    x: Outbox<f32>,
    sig: SymSlice<u64>,
    /// The routing of the current dispatch.
    idx: Vec<i32>,
    w: Vec<f32>,
    num_tokens: usize,
    out: Vec<f32>,
    scratch: Vec<f32>,
    bufs: ModeBufs,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("moe::Buffer").field("cfg", &self.cfg).field("pe", &self.shape.me).finish()
    }
}

impl Buffer {
    /// Allocates the symmetric buffers for `cfg` (collective: every PE, same `cfg`).
    pub fn new(shmem: &Shmem, dev: &Device, cfg: MoeConfig) -> Result<Buffer, MoeError> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        cfg.check(me, n)?;
        if dev.state().n_pes as usize != n {
            return Err(MoeError::Invalid {
                pe: me,
                func: "Buffer::new",
                reason: format!("the device has {} PEs, the runtime {n}", dev.state().n_pes),
            });
        }
        let threads = if cfg.threads == 0 { DEFAULT_THREADS } else { cfg.threads };
        let shape = Shape {
            me,
            n,
            epp: cfg.experts / n,
            hf: cfg.hidden(),
            topk: cfg.topk,
            tmax: cfg.tokens,
            grid: Grid::new(1, threads.min(n)),
        };
        // SAFETY: the token buffer is only ever the source of this PE's dispatch puts.
        let x = unsafe { Outbox::new(alloc(shmem, cfg.tokens * shape.hf, 0.0f32)?) };
        let sig = alloc(shmem, 3 * n * SIG_STRIDE, 0u64)?;
        let bufs = match cfg.mode {
            Mode::Throughput => ModeBufs::Throughput(throughput::Bufs::new(shmem, &shape)?),
            Mode::LowLatency => ModeBufs::LowLatency(low_latency::Bufs::new(shmem, &shape)?),
        };
        Ok(Buffer {
            cfg,
            shape,
            kernels: Kernels::new(Engine::new(dev, shape.grid, !cfg.launch_per_call)),
            epoch: 0,
            x,
            sig,
            idx: Vec::new(),
            w: Vec::new(),
            num_tokens: 0,
            out: vec![0.0; cfg.tokens * shape.hf],
            scratch: vec![0.0; shape.hf],
            bufs,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &MoeConfig {
        &self.cfg
    }

    /// The symmetric token buffer (`tokens × hidden` f32): write tokens here and call
    /// [`dispatch_in_place`](Self::dispatch_in_place) to send them without a copy.
    pub fn tokens_mut(&mut self) -> &mut [f32] {
        self.x.host_mut(self.kernels.idle())
    }

    /// Sends `x` (`num_tokens × hidden` f32, copied into the symmetric token buffer first) to
    /// the experts in `topk_idx` (`num_tokens × topk`, `-1` for none) with `topk_weights`.
    /// Collective; returns what this PE's experts received.
    pub fn dispatch(&mut self, x: &[f32], topk_idx: &[i32], topk_weights: &[f32]) -> Result<Dispatched<'_>, MoeError> {
        let hf = self.shape.hf;
        if !x.len().is_multiple_of(hf) || x.len() / hf > self.cfg.tokens {
            return Err(self.invalid(
                "dispatch",
                format!("{} values are not a whole number of at most {} tokens of {hf}", x.len(), self.cfg.tokens),
            ));
        }
        self.tokens_mut()[..x.len()].copy_from_slice(x);
        self.dispatch_in_place(x.len() / hf, topk_idx, topk_weights)
    }

    /// As [`dispatch`](Self::dispatch) for the first `num_tokens` tokens already in
    /// [`tokens_mut`](Self::tokens_mut).
    pub fn dispatch_in_place(
        &mut self,
        num_tokens: usize,
        topk_idx: &[i32],
        topk_weights: &[f32],
    ) -> Result<Dispatched<'_>, MoeError> {
        self.check_routing(num_tokens, topk_idx, topk_weights)?;
        self.idx.clear();
        self.idx.extend_from_slice(topk_idx);
        self.w.clear();
        self.w.extend_from_slice(topk_weights);
        self.num_tokens = num_tokens;
        self.epoch += 1;
        let sig = Signals { base: DevPtr::from_slice(&self.sig), n: self.shape.n };
        let x = self.x.dev();
        let k = &mut self.kernels;
        match &mut self.bufs {
            ModeBufs::Throughput(b) => b.dispatch(&self.shape, k, x, sig, self.epoch, &self.idx, &self.w)?,
            ModeBufs::LowLatency(b) => b.dispatch(&self.shape, k, x, sig, self.epoch, &self.idx, &self.w)?,
        }
        Ok(Dispatched { buf: self })
    }

    /// The token buffer, read-only.
    fn tokens(&self) -> &[f32] {
        self.x.host(self.kernels.idle())
    }

    fn invalid(&self, func: &'static str, reason: String) -> MoeError {
        MoeError::Invalid { pe: self.shape.me, func, reason }
    }

    fn check_routing(&self, num_tokens: usize, idx: &[i32], w: &[f32]) -> Result<(), MoeError> {
        let k = self.shape.topk;
        if num_tokens > self.cfg.tokens {
            return Err(
                self.invalid("dispatch", format!("{num_tokens} tokens exceed the {} allocated", self.cfg.tokens))
            );
        }
        if idx.len() != num_tokens * k || w.len() != num_tokens * k {
            return Err(self.invalid(
                "dispatch",
                format!(
                    "{num_tokens} tokens × topk {k} needs {} indices and weights, got {} and {}",
                    num_tokens * k,
                    idx.len(),
                    w.len()
                ),
            ));
        }
        for (t, ids) in idx.chunks_exact(k).enumerate() {
            for (j, &e) in ids.iter().enumerate() {
                if e < -1 || e >= self.cfg.experts as i32 {
                    return Err(self.invalid(
                        "dispatch",
                        format!("token {t}: expert {e} is out of range (-1 or 0..{})", self.cfg.experts),
                    ));
                }
                if e >= 0 && ids[..j].contains(&e) {
                    return Err(self.invalid("dispatch", format!("token {t}: expert {e} is chosen twice")));
                }
            }
        }
        Ok(())
    }

    /// Frees the symmetric buffers (collective).
    pub fn free(self) -> Result<(), MoeError> {
        let Buffer { x, sig, bufs, kernels, .. } = self;
        // The resident kernel first: it must not outlive the memory its jobs name.
        drop(kernels);
        match bufs {
            ModeBufs::Throughput(b) => b.free()?,
            ModeBufs::LowLatency(b) => b.free()?,
        }
        sig.free()?;
        x.free()?;
        Ok(())
    }
}

/// What this PE's experts received from one dispatch. Run the experts with
/// [`apply_experts`](Self::apply_experts), then [`combine`](ExpertOutputs::combine) — which
/// every PE must do before the buffer's next dispatch (it is what makes reusing the buffers
/// safe, see the module documentation).
#[derive(Debug)]
pub struct Dispatched<'a> {
    buf: &'a mut Buffer,
}

impl<'a> Dispatched<'a> {
    /// The global indices of this PE's experts.
    pub fn local_experts(&self) -> std::ops::Range<usize> {
        let s = &self.buf.shape;
        s.me * s.epp..(s.me + 1) * s.epp
    }

    /// (token, expert) pairs received per local expert.
    pub fn tokens_per_expert(&self) -> Vec<usize> {
        let arrived = self.buf.kernels.arrived(Kernel::Dispatch);
        match &self.buf.bufs {
            ModeBufs::Throughput(b) => b.tokens_per_expert(&self.buf.shape, self.buf.tokens(), arrived),
            ModeBufs::LowLatency(b) => b.tokens_per_expert(&self.buf.shape),
        }
    }

    /// Token rows that crossed from each source PE (throughput: one per (token, this PE);
    /// low latency: one per (token, expert on this PE)).
    pub fn rows_from(&self) -> Vec<usize> {
        match &self.buf.bufs {
            ModeBufs::Throughput(b) => b.rows_from(&self.buf.shape),
            ModeBufs::LowLatency(b) => b.rows_from(&self.buf.shape),
        }
    }

    /// Calls `f` for every received (token, expert) pair with the token's values, expert by
    /// expert (low latency) or source by source (throughput).
    pub fn for_each_row(&self, f: impl FnMut(ExpertRow, &[f32])) {
        let arrived = self.buf.kernels.arrived(Kernel::Dispatch);
        match &self.buf.bufs {
            ModeBufs::Throughput(b) => b.for_each_row(&self.buf.shape, self.buf.tokens(), arrived, f),
            ModeBufs::LowLatency(b) => b.for_each_row(&self.buf.shape, self.buf.tokens(), arrived, f),
        }
    }

    /// Runs the experts: `f(row, x, y)` must write expert `row.expert`'s output for input `x`
    /// into `y` (both `hidden` values), for every received (token, expert) pair. Throughput
    /// mode weighs and sums them per row right away.
    pub fn apply_experts(self, f: impl FnMut(ExpertRow, &[f32], &mut [f32])) -> ExpertOutputs<'a> {
        let b = self.buf;
        let arrived = b.kernels.arrived(Kernel::Dispatch);
        let x = b.x.host(arrived.idle());
        match &mut b.bufs {
            ModeBufs::Throughput(m) => m.apply(&b.shape, x, &mut b.scratch, arrived, f),
            ModeBufs::LowLatency(m) => m.apply(&b.shape, x, &mut b.scratch, arrived, f),
        }
        ExpertOutputs { buf: b }
    }
}

/// The experts' outputs, ready to go home with [`combine`](Self::combine).
#[derive(Debug)]
pub struct ExpertOutputs<'a> {
    buf: &'a mut Buffer,
}

impl<'a> ExpertOutputs<'a> {
    /// Sends the expert outputs back and sums them per token (collective). Returns this PE's
    /// combined tokens (`num_tokens × hidden`), valid until the buffer's next dispatch.
    pub fn combine(self) -> Result<&'a [f32], MoeError> {
        let b = self.buf;
        let sig = Signals { base: DevPtr::from_slice(&b.sig), n: b.shape.n };
        let out = &mut b.out[..b.num_tokens * b.shape.hf];
        match &mut b.bufs {
            ModeBufs::Throughput(m) => m.combine(&b.shape, &mut b.kernels, sig, b.epoch, b.num_tokens, out)?,
            ModeBufs::LowLatency(m) => m.combine(&b.shape, &mut b.kernels, sig, b.epoch, &b.idx, out)?,
        }
        Ok(&b.out[..b.num_tokens * b.shape.hf])
    }
}
