//! Deterministic MoE workloads and their serial answer, shared by the tests, the example, the
//! benchmark and (transcribed line by line) the MPI reference `benches/c/moe_mpi.c`.
//!
//! Everything here is a pure function of a [`Problem`]: the tokens of every PE, their routing
//! (top-k experts and weights), the per-expert function, and the combined output each PE must
//! get back. Every value is produced by integer hashing and exact float operations (weights are
//! multiples of 1/1024, token values multiples of 1/256), and no step may be fused into an FMA,
//! so a C program that performs the same operations in the same order gets the same bits.
//! Keep this file and `moe_mpi.c` in step: a change to one is a change to both.

/// How tokens pick their experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `topk` distinct experts drawn uniformly.
    Random,
    /// As `Random`, but the second expert lives on the same PE as the first (a token routed
    /// twice to one PE). Needs at least two experts per PE.
    SamePe,
    /// No token picks an expert of the last PE, which therefore receives nothing (with one PE,
    /// as `Random`).
    ZeroPe,
    /// As `Random`, then about a quarter of the choices are masked with `-1` (some tokens go
    /// nowhere at all).
    Masked,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 4] = [Scenario::Random, Scenario::SamePe, Scenario::ZeroPe, Scenario::Masked];

    /// The name used on command lines (and by `moe_mpi.c`).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Random => "random",
            Scenario::SamePe => "same-pe",
            Scenario::ZeroPe => "zero-pe",
            Scenario::Masked => "masked",
        }
    }

    /// The scenario called `name`.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One workload: `tokens` tokens of `hidden` f32 on each of `npes` PEs, routed to `topk` of
/// `experts` experts (expert `e` lives on PE `e / (experts / npes)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Problem {
    /// Seed of every hash.
    pub seed: u64,
    /// Tokens per PE (the most any PE has when `ragged`).
    pub tokens: usize,
    /// f32 values per token.
    pub hidden: usize,
    /// Experts per token.
    pub topk: usize,
    /// Experts in the job (a multiple of `npes`).
    pub experts: usize,
    /// PEs in the job.
    pub npes: usize,
    /// How tokens pick experts.
    pub scenario: Scenario,
    /// Whether PEs have different token counts (see [`tokens_on`](Self::tokens_on)).
    pub ragged: bool,
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output function applied to `state + GOLDEN`.
pub fn mix(state: u64) -> u64 {
    let mut z = state.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// splitmix64: the routing's random stream, one per (seed, PE, token).
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64, pe: usize, t: usize) -> Rng {
        Rng(seed ^ ((pe as u64) << 32) ^ (t as u64).wrapping_mul(0x0000_0100_0000_01B3))
    }
    fn next(&mut self) -> u64 {
        let z = mix(self.0);
        self.0 = self.0.wrapping_add(GOLDEN);
        z
    }
}

/// The expert function of the tests and benchmarks: `y = x * (e + 1) + e`, elementwise.
pub fn expert(e: usize, x: &[f32], y: &mut [f32]) {
    let (a, b) = ((e + 1) as f32, e as f32);
    for (y, &x) in y.iter_mut().zip(x) {
        *y = x * a + b;
    }
}

/// An order-sensitive digest of a PE's combined output (FNV-1a over the f32 bit patterns,
/// one word at a time).
pub fn digest(out: &[f32]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for v in out {
        h ^= u64::from(v.to_bits());
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

impl Problem {
    /// Experts per PE.
    pub fn experts_per_pe(&self) -> usize {
        self.experts / self.npes
    }

    /// Tokens PE `pe` sends: `tokens`, or with `ragged`, `(tokens + 13 pe) mod (tokens + 1)`
    /// (uneven counts, and zero on some PE for most sizes).
    pub fn tokens_on(&self, pe: usize) -> usize {
        if self.ragged { (self.tokens + pe * 13) % (self.tokens + 1) } else { self.tokens }
    }

    /// Element `h` of token `t` of PE `pe`: a multiple of 1/256 in [-3.91, 3.91].
    pub fn value(&self, pe: usize, t: usize, h: usize) -> f32 {
        let m = mix(self.seed ^ ((pe as u64) << 48) ^ ((t as u64) << 24) ^ h as u64);
        ((m % 2001) as i64 - 1000) as f32 / 256.0
    }

    /// Token `t` of PE `pe` into `out` (`hidden` values).
    pub fn token(&self, pe: usize, t: usize, out: &mut [f32]) {
        for (h, v) in out.iter_mut().enumerate() {
            *v = self.value(pe, t, h);
        }
    }

    /// All tokens of PE `pe`, token-major.
    pub fn tokens_of(&self, pe: usize) -> Vec<f32> {
        let mut x = vec![0.0; self.tokens_on(pe) * self.hidden];
        if self.hidden > 0 {
            for (t, row) in x.chunks_exact_mut(self.hidden).enumerate() {
                self.token(pe, t, row);
            }
        }
        x
    }

    /// The routing of PE `pe`'s tokens: `topk` expert indices (`-1`: none) and weights per
    /// token, token-major. Draw order per token and choice: the expert (redrawn while it
    /// repeats an earlier choice or is excluded), then the weight, then (masked) the mask.
    pub fn routing(&self, pe: usize) -> (Vec<i32>, Vec<f32>) {
        let (n_tok, k_max, e_max) = (self.tokens_on(pe), self.topk, self.experts as u64);
        let epp = self.experts_per_pe();
        let allowed =
            if self.scenario == Scenario::ZeroPe && self.npes > 1 { self.experts - epp } else { self.experts };
        assert!(k_max <= allowed, "{k_max} distinct experts per token, but only {allowed} can be chosen");
        let mut idx = vec![-1i32; n_tok * k_max];
        let mut w = vec![0.0f32; n_tok * k_max];
        for t in 0..n_tok {
            let mut rng = Rng::new(self.seed, pe, t);
            let mut chosen = Vec::with_capacity(k_max);
            for k in 0..k_max {
                let e = if k == 1 && self.scenario == Scenario::SamePe && epp >= 2 {
                    let first = chosen[0];
                    let (p, local) = (first / epp, first % epp);
                    p * epp + (local + 1 + (rng.next() % (epp as u64 - 1)) as usize) % epp
                } else {
                    loop {
                        let e = (rng.next() % e_max) as usize;
                        let excluded = self.scenario == Scenario::ZeroPe && self.npes > 1 && e / epp == self.npes - 1;
                        if !excluded && !chosen.contains(&e) {
                            break e;
                        }
                    }
                };
                chosen.push(e);
                idx[t * k_max + k] = e as i32;
                w[t * k_max + k] = ((rng.next() >> 40) % 1024 + 1) as f32 / 1024.0;
                if self.scenario == Scenario::Masked && rng.next().is_multiple_of(4) {
                    idx[t * k_max + k] = -1;
                }
            }
        }
        (idx, w)
    }

    /// What PE `pe` must get back from combine, computed serially: for each token,
    /// `out = 0 + partial(0) + partial(1) + ...` over the PEs it was sent to, in PE order, where
    /// `partial(q) = 0 + w_k * expert(e_k, x)` over its choices `k` on PE `q`, in `k` order —
    /// the summation order every implementation (both modes, every channel, and the MPI
    /// reference) follows, so that results compare bit for bit.
    pub fn expected_output(&self, pe: usize) -> Vec<f32> {
        let (hf, kk, epp) = (self.hidden, self.topk, self.experts_per_pe());
        let x = self.tokens_of(pe);
        let (idx, w) = self.routing(pe);
        let n_tok = self.tokens_on(pe);
        let mut out = vec![0.0f32; n_tok * hf];
        let (mut y, mut partial) = (vec![0.0f32; hf], vec![0.0f32; hf]);
        for t in 0..n_tok {
            let xt = &x[t * hf..(t + 1) * hf];
            for q in 0..self.npes {
                let mut any = false;
                partial.fill(0.0);
                for k in 0..kk {
                    let e = idx[t * kk + k];
                    if e < 0 || e as usize / epp != q {
                        continue;
                    }
                    any = true;
                    expert(e as usize, xt, &mut y);
                    let wk = w[t * kk + k];
                    for (p, &v) in partial.iter_mut().zip(&y) {
                        *p += wk * v;
                    }
                }
                if any {
                    for (o, &p) in out[t * hf..(t + 1) * hf].iter_mut().zip(&partial) {
                        *o += p;
                    }
                }
            }
        }
        out
    }

    /// The (expert, source PE, source token) pairs that PE `pe`'s experts must receive,
    /// sorted.
    pub fn expected_rows(&self, pe: usize) -> Vec<(usize, usize, usize)> {
        let epp = self.experts_per_pe();
        let mut rows = Vec::new();
        for src in 0..self.npes {
            let (idx, _) = self.routing(src);
            for (i, &e) in idx.iter().enumerate() {
                if e >= 0 && e as usize / epp == pe {
                    rows.push((e as usize, src, i / self.topk));
                }
            }
        }
        rows.sort_unstable();
        rows
    }
}
