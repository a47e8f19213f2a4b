//! One PE's side of `tests/cuda_gpu.rs`'s two PEs on one GPU, which PE 0 (the test) and PE 1
//! (the program `cuda-gpu-pe`, tests/pe/cuda_gpu.rs) both run.

use std::os::fd::AsFd;
use std::time::Duration;

use oxshmem_device::cuda::fdpass;
use oxshmem_device::cuda::{Gpu, GpuHeap};

pub(crate) const NAME_VAR: &str = "OXSHMEM_TEST_CUDA_GPU_NAME";
/// How long either side waits for the other before the test fails (not a performance bound).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(120);
/// Each PE's GPU heap.
pub(crate) const HEAP: usize = 3 << 20;

pub(crate) fn pattern(who: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(who)).collect()
}

/// One PE's side: create the heap, swap descriptors with the peer, map the peer's heap, write
/// our pattern into it, and once the peer has done the same, find its pattern in ours.
pub(crate) fn pe(sock: &std::os::unix::net::UnixStream, rank: u8, gpu: &Gpu) {
    use std::io::{Read, Write};
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let (heap, fd) = GpuHeap::create(gpu, HEAP).unwrap();
    let (peer_fd, method) = if rank == 0 {
        fdpass::offer_fd(sock, fd.as_fd(), true).unwrap();
        fdpass::take_fd(sock, true).unwrap()
    } else {
        let got = fdpass::take_fd(sock, true).unwrap();
        fdpass::offer_fd(sock, fd.as_fd(), true).unwrap();
        got
    };
    println!("PE {rank}: the peer's heap came by {method:?}");
    let peer = GpuHeap::import_peer(gpu, &peer_fd, heap.size()).unwrap();
    drop(peer_fd);
    let mine = pattern(rank, 1 << 16);
    // SAFETY: the peer mapping is `HEAP` bytes long; the peer reads it only after our signal.
    unsafe { gpu.copy_htod(peer.base() + 4096, &mine).unwrap() };
    (&*sock).write_all(b"w").unwrap();
    let mut b = [0u8; 1];
    (&*sock).read_exact(&mut b).unwrap();
    let mut got = vec![0u8; mine.len()];
    // SAFETY: our heap is `HEAP` bytes long; the peer's write is complete (cuMemcpy is
    // synchronous and it signalled after it).
    unsafe { gpu.copy_dtoh(&mut got, heap.base() + 4096).unwrap() };
    assert_eq!(got, pattern(1 - rank, got.len()), "PE {rank}: the peer's write into our heap");
    // Unmap the peer before it may free: both say they are done.
    drop(peer);
    (&*sock).write_all(b"d").unwrap();
    (&*sock).read_exact(&mut b).unwrap();
    drop(heap);
}
