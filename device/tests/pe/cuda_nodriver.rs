//! The child of `tests/cuda_nodriver.rs`'s fake-driver cases: run with `LD_LIBRARY_PATH` at the
//! fake `libcuda.so.1` the test built, it makes the checks of the case `OXSHMEM_TEST_FAKE_CUDA_CASE`
//! and prints `case <case> done`.

use oxshmem_device::cuda::{self, Gpu, GpuHeap, PinnedBuf};

const CASE_VAR: &str = "OXSHMEM_TEST_FAKE_CUDA_CASE";
const LOG_VAR: &str = "OXSHMEM_TEST_FAKE_CUDA_LOG";

fn main() {
    let case = std::env::var(CASE_VAR)
        .unwrap_or_else(|_| panic!("{CASE_VAR} is not set: this is a child of tests/cuda_nodriver.rs"));
    let log_path = std::env::var(LOG_VAR).unwrap();
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    match case.as_str() {
        "stub" => assert_eq!(
            cuda::probe().unwrap_err().to_string(),
            "no CUDA driver: libcuda.so.1 is the CUDA toolkit's stub library, not a driver \
             (cuInit returned CUDA_ERROR_STUB_LIBRARY (34)); take the stubs directory out of LD_LIBRARY_PATH"
        ),
        "init_no_device" => {
            let e = Gpu::open(0).unwrap_err();
            assert_eq!(e.to_string(), "no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE (100)");
        }
        "init_other" => {
            assert_eq!(cuda::probe().unwrap_err().to_string(), "cuInit failed: CUDA_ERROR_OPERATING_SYSTEM (304)");
        }
        "no_device" => {
            assert_eq!(cuda::device_count(), Ok(0));
            for e in [cuda::probe().unwrap_err(), Gpu::open(0).unwrap_err(), Gpu::select(0).unwrap_err()] {
                assert_eq!(e.to_string(), "no CUDA device: cuDeviceGetCount returned 0");
            }
        }
        "bad_env" => {
            assert_eq!(Gpu::select(0).unwrap_err().to_string(), "CUDA device 5 requested but only 2 present");
        }
        "two" => two_fake_devices(&log),
        other => panic!("unknown case {other}"),
    }
    println!("case {case} done");
}

fn two_fake_devices(log: &dyn Fn() -> String) {
    let info = cuda::probe().unwrap();
    assert_eq!(
        info.to_string(),
        "CUDA driver 13.0, 2 devices\n\
         device 0: Fake GPU 0, compute capability 9.0, 16.0 GiB, VMM yes, POSIX fd handles yes, GPUDirect RDMA on VMM no\n\
         device 1: Fake GPU 1, compute capability 9.0, 16.0 GiB, VMM no, POSIX fd handles yes, GPUDirect RDMA on VMM no"
    );
    assert_eq!(Gpu::open(3).unwrap_err().to_string(), "CUDA device 3 requested but only 2 present");
    assert_eq!(Gpu::open(-1).unwrap_err().to_string(), "CUDA device -1 requested but only 2 present");
    // Local rank 3 of a node with 2 GPUs: device 1, which lacks VMM.
    let gpu1 = Gpu::select(3).unwrap();
    assert_eq!((gpu1.ordinal(), gpu1.name()), (1, "Fake GPU 1"));
    assert_eq!(
        GpuHeap::create(&gpu1, 1 << 20).unwrap_err().to_string(),
        "CUDA device 1 (Fake GPU 1) does not support virtual memory management \
         (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0)"
    );
    drop(gpu1);
    assert!(log().contains("retain 1\nrelease 1\n"), "{}", log());

    let gpu = Gpu::select(2).unwrap();
    assert_eq!(gpu.ordinal(), 0);
    assert_eq!(cuda::granularity(&gpu), Ok(2 << 20));
    // An allocation the fake refuses: the reserved range is given back, nothing is mapped.
    let before = log().len();
    let e = GpuHeap::create(&gpu, 3 << 30).unwrap_err();
    assert_eq!(e.to_string(), "cuMemCreate of 3221225472 bytes failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
    assert_eq!(
        &log()[before..],
        "reserve 3221225472 align 2097152\n\
         create 3221225472 type 1 handles 1\n\
         create location 1 id 0\n\
         free 3221225472\n"
    );
    assert_eq!(
        GpuHeap::create(&gpu, 0).unwrap_err().to_string(),
        "GpuHeap::create: size 0 bytes; the heap holds at least one byte"
    );

    // A heap: 3 MiB rounds up to 4 MiB; pinned device memory exported as a POSIX fd (type 1),
    // mapped read/write (flags 3) for device 0 (location type 1).
    let before = log().len();
    let (heap, fd) = GpuHeap::create(&gpu, 3 << 20).unwrap();
    assert_eq!(heap.size(), 4 << 20);
    assert_ne!(heap.base(), 0);
    assert_eq!(
        &log()[before..],
        "reserve 4194304 align 2097152\n\
         create 4194304 type 1 handles 1\n\
         create location 1 id 0\n\
         map 4194304 handle 42\n\
         access 4194304 location 1 id 0\n\
         access flags 3 count 1\n\
         export handle 42 type 1\n"
    );
    // A peer's heap from the descriptor (here our own): imported, mapped, access granted.
    let before = log().len();
    let peer = GpuHeap::import_peer(&gpu, &fd, 3 << 20).unwrap();
    assert_eq!(peer.size(), 4 << 20);
    assert_ne!(peer.base(), heap.base());
    assert_eq!(
        &log()[before..],
        "reserve 4194304 align 2097152\n\
         import fd-is-open 1 type 1\n\
         map 4194304 handle 43\n\
         access 4194304 location 1 id 0\n\
         access flags 3 count 1\n"
    );
    // Teardown in reverse: unmap, release the handle, free the range.
    let before = log().len();
    drop(peer);
    drop(heap);
    assert_eq!(
        &log()[before..],
        "unmap 4194304\nrelease handle 43\nfree 4194304\nunmap 4194304\nrelease handle 42\nfree 4194304\n"
    );
    drop(fd);

    // Pinned memory and the copies (the fake maps device addresses of pinned memory 1:1).
    let buf = PinnedBuf::new(&gpu, 64).unwrap();
    assert!(log().contains("host alloc 64 flags 3\n"), "DEVICEMAP | PORTABLE: {}", log());
    let data: Vec<u8> = (0..64).collect();
    let mut back = [0u8; 64];
    // SAFETY: the buffer is 64 bytes and nothing else uses it.
    unsafe {
        gpu.copy_htod(buf.device_ptr(), &data).unwrap();
        gpu.copy_dtoh(&mut back, buf.device_ptr()).unwrap();
        gpu.copy_dtod(buf.device_ptr(), buf.device_ptr() + 32, 0).unwrap();
    }
    assert_eq!(&back[..], &data[..]);
    assert!(!gpu.pointer_is_device(buf.host_ptr().cast()).unwrap());
    drop(buf);
    assert!(log().ends_with("memcpy 64\nmemcpy 64\nhost free\n"), "{}", log());
    drop(gpu);
    assert!(log().ends_with("release 0\n"), "{}", log());
}
