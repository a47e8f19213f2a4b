//! A global counter on PE 0 that every PE increments many times with atomic fetch-add; the
//! total is exact.
//!
//! Run: `oshrun -n 4 target/release/atomic-counter`

fn main() -> Result<(), oxshmem::Error> {
    const ADDS: u64 = 10_000;
    let shmem = oxshmem::init()?;
    let counter = shmem.alloc(0u64)?;
    let mut tickets = Vec::with_capacity(ADDS as usize);
    for _ in 0..ADDS {
        tickets.push(counter.fetch_add(1, 0)?);
    }
    // Fetched values are strictly increasing for one PE.
    assert!(tickets.windows(2).all(|w| w[0] < w[1]));
    shmem.barrier_all()?;
    if shmem.my_pe() == 0 {
        let total = counter.value();
        println!("counter = {total} (expected {})", ADDS * shmem.n_pes() as u64);
        assert_eq!(total, ADDS * shmem.n_pes() as u64);
    }
    drop(counter);
    shmem.finalize()
}
