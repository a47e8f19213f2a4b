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

// A put to PE `pe`, which the test makes out of range: the device library records the error
// and GpuDevice::synchronize reports it.
extern "C" __global__ void bad_pe(uint64_t *dest, int pe) { nvshmem_uint64_p(dest, 1, pe); }
