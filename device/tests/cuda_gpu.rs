//! The GPU heap on a real GPU: created, exported, passed to another process, mapped there,
//! written through the peer mapping and read back by its owner. Two PEs on one GPU, as when a
//! node runs more PEs than it has GPUs. Without a driver each test is skipped with the reason
//! (requirement `cuda-gpu` of `oxshmem_test_require`: a failure where the run requires it).
#![cfg(feature = "cuda")]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use oxshmem_device::cuda::fdpass;
use oxshmem_device::cuda::{self, CudaError, Gpu, GpuHeap, PinnedBuf};

use common::gpu_pair::{HEAP, NAME_VAR, TIMEOUT, pattern, pe};

/// The GPU, or `None` after printing why the test is skipped.
fn gpu(local_rank: usize) -> Option<Gpu> {
    match Gpu::select(local_rank) {
        Ok(g) => Some(g),
        Err(e) if e.is_no_driver() => no_gpu("no CUDA driver"),
        Err(CudaError::NoDevice { detail }) => no_gpu(&format!("no CUDA device ({detail})")),
        Err(e) => panic!("Gpu::select: {e}"),
    }
}

/// Skips (or fails, where the run requires a GPU: `.ci/run` runs these under the emulated
/// driver of tests/emucuda) for want of a GPU.
fn no_gpu(why: &str) -> Option<Gpu> {
    oxshmem_test_require::skip("cuda-gpu", &format!("{why} (a GPU, or LD_LIBRARY_PATH at tests/emucuda's libcuda)"));
    None
}

#[test]
fn probe_reports_the_devices() {
    match cuda::probe() {
        Err(e) if e.is_no_driver() => drop(no_gpu("no CUDA driver")),
        Err(CudaError::NoDevice { detail }) => drop(no_gpu(&format!("no CUDA device ({detail})"))),
        Err(e) => panic!("probe: {e}"),
        Ok(info) => {
            println!("{info}");
            assert!(info.driver_version >= 11000, "{info}");
            assert!(!info.devices.is_empty());
            let n = info.devices.len() as i32;
            assert_eq!(Gpu::open(n).unwrap_err(), CudaError::BadOrdinal { requested: i64::from(n), present: n });
        }
    }
}

#[test]
fn heap_maps_its_own_export_and_copies_round_trip() {
    let Some(gpu) = gpu(0) else { return };
    let g = cuda::granularity(&gpu).unwrap();
    let (heap, fd) = GpuHeap::create(&gpu, HEAP).unwrap();
    assert_eq!(heap.size(), HEAP.next_multiple_of(g));
    assert!(gpu.pointer_is_device(heap.base() as *const _).unwrap());
    let x = 0u64;
    assert!(!cuda::pointer_is_device((&raw const x).cast()).unwrap());
    // A second mapping of the same memory, from the exported descriptor.
    let alias = GpuHeap::import_peer(&gpu, &fd, heap.size()).unwrap();
    assert_ne!(alias.base(), heap.base());
    let data = pattern(7, 4096);
    let mut back = vec![0u8; data.len()];
    // SAFETY: both addresses are mappings of the heap, `HEAP` bytes long.
    unsafe {
        gpu.copy_htod(alias.base() + 64, &data).unwrap();
        gpu.copy_dtoh(&mut back, heap.base() + 64).unwrap();
    }
    assert_eq!(back, data);
    // SAFETY: as above; the ranges do not overlap.
    unsafe {
        gpu.copy_dtod(heap.base() + (1 << 20), heap.base() + 64, data.len()).unwrap();
        gpu.copy_dtoh(&mut back, alias.base() + (1 << 20)).unwrap();
    }
    assert_eq!(back, data);
    drop(alias);
    drop(fd);
    drop(heap);
}

#[test]
fn pinned_host_memory_is_reached_through_its_device_address() {
    let Some(gpu) = gpu(0) else { return };
    let buf = PinnedBuf::new(&gpu, 4096).unwrap();
    assert!(!gpu.pointer_is_device(buf.host_ptr().cast()).unwrap());
    // SAFETY: the buffer is 4096 bytes, freshly zeroed, and nothing else uses it.
    unsafe { buf.host_ptr().add(10).write_volatile(42) };
    let mut back = [0u8; 16];
    // SAFETY: the device address maps the same 4096 bytes.
    unsafe { gpu.copy_dtoh(&mut back, buf.device_ptr()).unwrap() };
    assert_eq!(back[10], 42);
    assert_eq!(back[0], 0);
    let e = PinnedBuf::new(&gpu, 0).unwrap_err();
    assert_eq!(e.to_string(), "PinnedBuf::new: size 0 bytes; a pinned buffer holds at least one byte");
}

#[test]
fn a_heap_too_large_fails_with_the_drivers_error() {
    let Some(gpu) = gpu(0) else { return };
    let e = GpuHeap::create(&gpu, 1 << 40).unwrap_err();
    println!("{e}");
    assert!(matches!(&e, CudaError::Driver { call, .. } if call.starts_with("cuMem")), "{e}");
    let e = GpuHeap::create(&gpu, 0).unwrap_err();
    assert_eq!(e.to_string(), "GpuHeap::create: size 0 bytes; the heap holds at least one byte");
}

struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn two_pes_share_one_gpu() {
    let Some(gpu) = gpu(0) else { return };
    let name = format!("oxshmem-test-cuda-gpu-{}", std::process::id());
    let listener = fdpass::listen_abstract(name.as_bytes()).unwrap();
    let child = Command::new(common::pe_program("cuda-gpu-pe"))
        .env(NAME_VAR, &name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reap(Some(child));
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let sock = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                if let Some(s) = child.0.as_mut().unwrap().try_wait().unwrap() {
                    let out = child.0.take().unwrap().wait_with_output().unwrap();
                    panic!("PE 1 exited ({s}) before connecting: {}", String::from_utf8_lossy(&out.stderr));
                }
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("PE 0: accept on {name}: {e}"),
        }
    };
    sock.set_nonblocking(false).unwrap();
    pe(&sock, 0, &gpu);
    let c = child.0.as_mut().unwrap();
    while c.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "PE 1 did not exit within {TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.0.take().unwrap().wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("PE 1 done"), "PE 1: {text}");
}

/// Strided copies (`Gpu::copy_2d`, what host `iput`/`iget` and `alltoalls` on GPU memory use)
/// between pageable host memory, the GPU heap, a second mapping of it and pinned memory: one
/// driver 2D copy where the pitches allow, block by block where they do not (a negative pitch
/// reverses the rows, a pitch of 0 writes every row to one place: the last one wins).
#[test]
fn strided_copies_reach_every_kind_of_memory() {
    let Some(gpu) = gpu(0) else { return };
    let (heap, fd) = GpuHeap::create(&gpu, HEAP).unwrap();
    let alias = GpuHeap::import_peer(&gpu, &fd, heap.size()).unwrap();
    let pinned = PinnedBuf::new(&gpu, 4096).unwrap();
    let (rows, w) = (50usize, 4usize);
    let src = pattern(3, rows * 12);
    // Host (pitch 12) into the heap (pitch 20), through the alias.
    // SAFETY: every row lies in `src` or in the heap's first 1000 bytes.
    unsafe { gpu.copy_2d(alias.base(), 20, src.as_ptr() as u64, 12, w, rows).unwrap() };
    let mut whole = vec![0u8; rows * 20];
    // SAFETY: the heap holds `whole.len()` bytes at its base.
    unsafe { gpu.copy_dtoh(&mut whole, heap.base()).unwrap() };
    for r in 0..rows {
        assert_eq!(whole[r * 20..r * 20 + w], src[r * 12..r * 12 + w], "row {r}");
    }
    // The heap (pitch 20) back out to pinned memory (pitch 8), then to host (contiguous).
    let mut back = vec![0u8; rows * w];
    // SAFETY: every row lies in the heap's first 1000 bytes, the pinned buffer's 400, `back`.
    unsafe {
        gpu.copy_2d(pinned.device_ptr(), 8, heap.base(), 20, w, rows).unwrap();
        gpu.copy_2d(back.as_mut_ptr() as u64, w as isize, pinned.device_ptr(), 8, w, rows).unwrap();
    }
    for r in 0..rows {
        assert_eq!(back[r * w..r * w + w], src[r * 12..r * 12 + w], "row {r} back");
    }
    // Block by block: rows reversed (a negative destination pitch), then all onto one (pitch 0).
    let mut rev = vec![0u8; rows * w];
    let last = rev.as_mut_ptr() as u64 + ((rows - 1) * w) as u64;
    let mut one = [0u8; 4];
    // SAFETY: row r goes to `rev` at (rows - 1 - r) * w; every row of the source lies in the heap.
    unsafe {
        gpu.copy_2d(last, -(w as isize), heap.base(), 20, w, rows).unwrap();
        gpu.copy_2d(one.as_mut_ptr() as u64, 0, heap.base(), 20, w, rows).unwrap();
    }
    for r in 0..rows {
        assert_eq!(rev[(rows - 1 - r) * w..(rows - r) * w], src[r * 12..r * 12 + w], "reversed row {r}");
    }
    assert_eq!(one[..], src[(rows - 1) * 12..(rows - 1) * 12 + w]);
    drop(alias);
    drop(fd);
    drop(heap);
}
