//! A distributed histogram: every PE counts its samples into bins spread over the PEs with
//! remote atomic increments (docs/rust.md, "Worked program: a distributed histogram"). Every
//! PE checks the histogram against a serial count; PE 0 prints it.
//!
//! Run: `oshrun -n 4 target/release/histogram` (any number of PEs)

const BINS: usize = 40;
const SAMPLES_PER_PE: usize = 20_000;

/// PE `pe`'s samples in [0, 1): the mean of two uniform numbers (a triangle), from a small
/// generator seeded by the PE number, so that every run can be checked.
fn samples(pe: usize) -> impl Iterator<Item = f64> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ (pe as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut uniform = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    std::iter::repeat_with(move || (uniform() + uniform()) / 2.0).take(SAMPLES_PER_PE)
}

fn bin_of(x: f64) -> usize {
    ((x * BINS as f64) as usize).min(BINS - 1)
}

fn main() -> Result<(), oxshmem::Error> {
    let shmem = oxshmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let slots = BINS.div_ceil(n); // bins per PE (the last PE may have fewer in use)
    let counts = shmem.alloc_slice(slots, 0u64)?;

    for x in samples(me) {
        let b = bin_of(x);
        counts.atomic_inc(b / n, b % n)?; // slot b / n on PE b % n
    }
    shmem.barrier_all()?; // every PE's increments are complete

    // Every sample was counted once.
    let total = shmem.alloc_slice(1, counts.to_vec().iter().sum::<u64>())?;
    shmem.team_world().sum_reduce(&total, &total, 1)?;
    assert_eq!(total.read(0), (SAMPLES_PER_PE * n) as u64);

    // The whole histogram on every PE: PE q's slots land at q * slots.
    let all = shmem.alloc_slice(slots * n, 0u64)?;
    shmem.team_world().fcollect(&all, &counts, slots)?;
    let hist: Vec<u64> = (0..BINS).map(|b| all.read((b % n) * slots + b / n)).collect();

    let mut serial = vec![0u64; BINS];
    for x in (0..n).flat_map(samples) {
        serial[bin_of(x)] += 1;
    }
    assert_eq!(hist, serial, "PE {me}: the histogram differs from a serial count");

    if me == 0 {
        let top = *hist.iter().max().unwrap_or(&1);
        for (b, &c) in hist.iter().enumerate().step_by(4) {
            println!("{:.3} {:>6} {}", b as f64 / BINS as f64, c, "#".repeat((50 * c / top) as usize));
        }
        println!("histogram: {} samples from {n} PEs in {BINS} bins", total.read(0));
    }

    all.free()?;
    total.free()?;
    counts.free()?;
    shmem.finalize()
}
