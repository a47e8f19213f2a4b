//! Your own element type in symmetric memory: a `#[repr(C)]` struct derives `oxshmem::Pod`
//! and `oxshmem::Zeroable` (this crate does not depend on `bytemuck` itself; the attribute
//! points the derive at the copy oxshmem re-exports). Each PE puts its particle into every
//! other PE's table and checks what arrived.
//!
//! Run: `oshrun -n 4 target/release/particles`

/// A particle, as every PE stores it.
#[derive(Clone, Copy, Debug, PartialEq, oxshmem::Pod, oxshmem::Zeroable)]
#[bytemuck(crate = "oxshmem::bytemuck")]
#[repr(C)]
struct Particle {
    pos: [f32; 3],
    owner: u32,
}

fn main() -> Result<(), oxshmem::Error> {
    let shmem = oxshmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let table = shmem.alloc_slice(n, Particle { pos: [0.0; 3], owner: u32::MAX })?;
    let mine = Particle { pos: [me as f32, 0.5, -1.0], owner: me as u32 };
    for pe in 0..n {
        table.p(me, mine, pe)?;
    }
    shmem.barrier_all()?;
    for pe in 0..n {
        let got = table.read(pe);
        assert_eq!(got, Particle { pos: [pe as f32, 0.5, -1.0], owner: pe as u32 }, "PE {me}: slot {pe}");
    }
    println!("PE {me}: {n} particles arrived");
    drop(table);
    shmem.finalize()
}
