//! A 1-D heat stencil on a ring of cells, one block per PE, with the halo cells exchanged by
//! `put_signal` (docs/rust.md, "Worked program: a 1-D heat stencil"). Each PE checks its cells
//! against the same computation done serially; PE 0 prints the total heat and the peak.
//!
//! Run: `oshrun -n 4 target/release/heat` (any number of PEs)

use oxshmem::{Cmp, SignalOp};

const CELLS_PER_PE: usize = 64;
const STEPS: u64 = 500;
const R: f64 = 0.25; // diffusion number: stable up to 0.5

/// A hot stripe in the middle of the ring.
fn initial(cell: usize, cells: usize) -> f64 {
    if (cells * 2 / 5..cells * 3 / 5).contains(&cell) { 100.0 } else { 0.0 }
}

/// One step of `u`, with `left` and `right` the cells beside it, into `out`.
fn step(left: f64, u: &[f64], right: f64, out: &mut [f64]) {
    for i in 0..u.len() {
        let l = if i == 0 { left } else { u[i - 1] };
        let r = if i + 1 == u.len() { right } else { u[i + 1] };
        out[i] = u[i] + R * (l - 2.0 * u[i] + r);
    }
}

fn main() -> Result<(), oxshmem::Error> {
    let shmem = oxshmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (left, right) = ((me + n - 1) % n, (me + 1) % n);
    let cells = CELLS_PER_PE * n;

    // Halo slots, by step parity p: [2p] the left neighbour's last cell, [2p + 1] the right
    // neighbour's first. arrived[0] counts the halos from the left, arrived[1] from the right.
    let halo = shmem.alloc_slice(4, 0.0f64)?;
    let arrived = shmem.alloc_slice(2, 0u64)?;

    let mut u: Vec<f64> = (0..CELLS_PER_PE).map(|i| initial(me * CELLS_PER_PE + i, cells)).collect();
    let mut next = vec![0.0; CELLS_PER_PE];
    for t in 1..=STEPS {
        let p = (t % 2) as usize;
        halo.put_signal(2 * p + 1, &[u[0]], &arrived, 1, 1, SignalOp::Add, left)?;
        halo.put_signal(2 * p, &[u[CELLS_PER_PE - 1]], &arrived, 0, 1, SignalOp::Add, right)?;
        arrived.signal_wait_until(0, Cmp::Ge, t)?;
        arrived.signal_wait_until(1, Cmp::Ge, t)?;
        step(halo.read(2 * p), &u, halo.read(2 * p + 1), &mut next);
        std::mem::swap(&mut u, &mut next);
    }

    // The same steps over the whole ring, on one PE: the same arithmetic, so the same bits.
    let mut serial: Vec<f64> = (0..cells).map(|c| initial(c, cells)).collect();
    let mut tmp = vec![0.0; cells];
    for _ in 0..STEPS {
        step(serial[cells - 1], &serial, serial[0], &mut tmp);
        std::mem::swap(&mut serial, &mut tmp);
    }
    assert_eq!(u, serial[me * CELLS_PER_PE..(me + 1) * CELLS_PER_PE], "PE {me}: cells differ from the serial run");

    // The total heat, summed over the PEs: what the hot stripe started with.
    let heat = shmem.alloc_slice(1, u.iter().sum::<f64>())?;
    shmem.team_world().sum_reduce(&heat, &heat, 1)?;
    let start: f64 = (0..cells).map(|c| initial(c, cells)).sum();
    assert!((heat.read(0) - start).abs() < 1e-9 * start, "heat {} != {start}", heat.read(0));
    if me == 0 {
        let peak = serial.iter().cloned().fold(0.0, f64::max);
        println!(
            "heat: {cells} cells on {n} PEs, {STEPS} steps: total heat {:.3} (started with {start:.3}), peak {peak:.3}",
            heat.read(0)
        );
    }

    heat.free()?;
    arrived.free()?;
    halo.free()?;
    shmem.finalize()
}
