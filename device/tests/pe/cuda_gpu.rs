//! PE 1 of `tests/cuda_gpu.rs`'s `two_pes_share_one_gpu`: meets PE 0 (the test) on the abstract
//! socket `OXSHMEM_TEST_CUDA_GPU_NAME` and runs its side.

use std::time::Instant;

use oxshmem_device::cuda::{Gpu, fdpass};

#[path = "../common/gpu_pair.rs"]
mod gpu_pair;

use gpu_pair::{NAME_VAR, TIMEOUT, pe};

fn main() {
    let name =
        std::env::var(NAME_VAR).unwrap_or_else(|_| panic!("{NAME_VAR} is not set: this is PE 1 of tests/cuda_gpu.rs"));
    let gpu = Gpu::select(1).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let sock = loop {
        match fdpass::connect_abstract(name.as_bytes()) {
            Ok(s) => break s,
            Err(e) => {
                assert!(Instant::now() < deadline, "PE 1: connect to {name}: {e}");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    };
    pe(&sock, 1, &gpu);
    println!("PE 1 done");
}
