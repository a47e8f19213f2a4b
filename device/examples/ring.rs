//! The crate's front-page example as a program: every device thread of a 4 × 256 grid stores
//! one word into the right neighbour's buffer, and the program ends by finalizing the device
//! and then the runtime, as every program must (see the crate documentation, "Finalizing").
//!
//! `cargo build -p oxshmem-device --examples && target/debug/oshrun -n 2 target/debug/examples/ring`

use oxshmem_device::{DevPtr, Device, Grid};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shmem = oxshmem::init()?;
    let dev = Device::init(&shmem)?; // collective
    let buf = shmem.alloc_slice(1024, 0u64)?;
    let dst = DevPtr::from_slice(&buf);
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = (me + 1) % n;
    let stream = dev.stream();
    stream.launch(Grid::new(4, 256), move |t| {
        let i = t.global_idx();
        t.p(dst.offset(i), (1000 * me + i) as u64, right); // one store per device thread
        t.quiet();
    });
    stream.synchronize()?; // the kernel and its stores are done
    shmem.barrier_all()?; // … on every PE
    let left = (me + n - 1) % n;
    assert_eq!(buf.read(1023), (1000 * left + 1023) as u64);
    println!("PE {me} of {n}: 1024 words from PE {left} arrived");
    drop(stream);
    dev.finalize()?; // collective: before the runtime's
    shmem.finalize()?; // collective: the last call
    Ok(())
}
