//! PE 0 and PE 1 bounce a counter with `p` and `wait_until`, and PE 0 prints the round-trip
//! time. Other PEs only take part in the barriers.
//!
//! Run: `oshrun -n 2 target/release/ping-pong`

use oxshmem::Cmp;

fn main() -> Result<(), oxshmem::Error> {
    const ROUNDS: i64 = 10_000;
    let shmem = oxshmem::init()?;
    let me = shmem.my_pe();
    let ball = shmem.alloc(0i64)?;
    shmem.barrier_all()?;
    if shmem.n_pes() >= 2 && me < 2 {
        let peer = 1 - me;
        let start = std::time::Instant::now();
        for i in 1..=ROUNDS {
            if me == 0 {
                ball.put_value(i, peer)?;
                ball.wait(Cmp::Eq, i)?;
            } else {
                ball.wait(Cmp::Eq, i)?;
                ball.put_value(i, peer)?;
            }
        }
        if me == 0 {
            let rtt = start.elapsed().as_secs_f64() / ROUNDS as f64;
            println!("ping-pong: {ROUNDS} round trips, {:.3} us each ({:.3} us one way)", rtt * 1e6, rtt * 0.5e6);
        }
    }
    shmem.barrier_all()?;
    drop(ball);
    shmem.finalize()
}
