//! Every PE says hello and where it lives.
//!
//! Run: `oshrun -n 4 target/release/hello`

fn main() -> Result<(), oxshmem::Error> {
    let shmem = oxshmem::init()?;
    let layout = shmem.layout()?;
    let me = shmem.my_pe();
    let node = layout.node_of[me];
    println!(
        "Hello from PE {me} of {} on node {node} ({}), which holds PEs {:?} — {} node(s) in the job",
        shmem.n_pes(),
        layout.hosts[node],
        layout.local_pes,
        layout.n_nodes()
    );
    shmem.finalize()
}
