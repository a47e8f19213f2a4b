//! Each PE puts its number into its right neighbour's buffer, around the ring, and checks
//! what arrived from its left neighbour.
//!
//! Run: `oshrun -n 4 target/release/ring-put`

fn main() -> Result<(), oxshmem::Error> {
    let shmem = oxshmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let inbox = shmem.alloc_slice(4, -1i64)?;
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let msg = [me as i64; 4];
    inbox.put(0, &msg, right)?;
    shmem.barrier_all()?;
    let got = inbox.to_vec();
    assert_eq!(got, [left as i64; 4], "PE {me}: wrong data from PE {left}");
    println!("PE {me}: received {got:?} from PE {left}");
    drop(inbox);
    shmem.finalize()
}
