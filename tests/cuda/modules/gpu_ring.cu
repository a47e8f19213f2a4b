// gpu_ring.cu: the kernels the Rust GPU device's test program (tests/src/bin/pe-gpu.rs) loads
// as a CUDA module: NVSHMEM device code, device-linked with libnvshmem_device.a into a fatbin
// that GpuDevice::load_module takes (tests/cuda/build.sh builds it as gpu_ring.fatbin):
//
//   nvcc -rdc=true -arch=ARCH -I PREFIX/include -c gpu_ring.cu -o gpu_ring.o
//   nvcc -dlink -fatbin -arch=ARCH gpu_ring.o PREFIX/lib/libnvshmem_device.a -o gpu_ring.fatbin
//
// Under the emulated driver the same source is built for the CPU target as a shared object
// (oshnvcc --target cpu -shared -fPIC; tests/tests/gpu_rust.rs).
#include <nvshmem.h>
#include <stdint.h>

// Thread t stores (me + 1) * 1000 + t into dest[me * blockDim.x + t] on PE (me + 1) % npes,
// then completes it.
extern "C" __global__ void ring_put(uint64_t *dest, int me, int npes) {
    unsigned t = threadIdx.x;
    nvshmem_uint64_p(dest + (uint64_t)me * blockDim.x + t, (uint64_t)(me + 1) * 1000 + t, (me + 1) % npes);
    nvshmem_quiet();
}

// Every thread adds 1 to counter[0] on PE (me + 1) % npes and fetch-adds 1 to counter[1]
// there, keeping the value it fetched in olds[thread] (this PE's buffer): the fetched values
// are 0 .. blockDim.x - 1 in some order. Over the proxy and IBGDA the host side runs these
// atomics with the device library's own atomic kernel, found in this module.
extern "C" __global__ void ring_add(uint64_t *counter, uint64_t *olds, int me, int npes) {
    int peer = (me + 1) % npes;
    nvshmem_uint64_atomic_add(counter, 1, peer);
    olds[threadIdx.x] = nvshmem_uint64_atomic_fetch_add(counter + 1, 1, peer);
    nvshmem_quiet();
}

// A put to PE `pe`, which the test makes out of range: the device library records the error
// and GpuDevice::synchronize reports it.
extern "C" __global__ void bad_pe(uint64_t *dest, int pe) { nvshmem_uint64_p(dest, 1, pe); }
