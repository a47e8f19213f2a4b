// The archive's host side: the __device__ globals device code reads, the attach callback the
// host library calls with their values, its registration at load time, and the collective
// launch routines (only code linked into the program with the CUDA runtime can launch the
// program's kernels; these definitions interpose on the host library's fallbacks).
#include <cuda_runtime.h>

#include "state.cuh"

__device__ oxshmem_device_state_t *oxshmemi_state_d = nullptr;
__device__ oxshmemi::oxshmem_cuda_state_t *oxshmemi_cuda_d = nullptr;

extern "C" {

/// Exported by the host library (liboxshmem / libnvshmem_host): remembers `attach`, and calls
/// it with the device addresses of the runtime's and the CUDA-side state once they exist.
/// Weak, so that the archive also links against a host library without it.
__attribute__((weak)) int oxshmemi_register_device_library(int abi_version,
                                                           int (*attach)(const void *device_state_gpu_ptr,
                                                                         const void *cuda_state_gpu_ptr));

}  // extern "C"

namespace {

/// Copies the two pointers into the __device__ globals: 0, or the CUDA error code.
int oxshmemi_attach(const void *device_state_gpu_ptr, const void *cuda_state_gpu_ptr) {
    cudaError_t e = cudaMemcpyToSymbol(oxshmemi_state_d, &device_state_gpu_ptr, sizeof(void *));
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(oxshmemi_cuda_d, &cuda_state_gpu_ptr, sizeof(void *));
    return (int)e;
}

__attribute__((constructor)) void oxshmemi_register() {
    if (oxshmemi_register_device_library) oxshmemi_register_device_library(oxshmemi::ABI_VERSION, oxshmemi_attach);
}

}  // namespace

extern "C" {

/// nvshmemx_collective_launch: a cooperative launch (every block resident at once, so that
/// device-side barriers across blocks cannot deadlock). 0, or the CUDA error code.
int nvshmemx_collective_launch(const void *func, dim3 gridDims, dim3 blockDims, void **args, size_t sharedMem,
                               cudaStream_t stream) {
    return (int)cudaLaunchCooperativeKernel(func, gridDims, blockDims, args, sharedMem, stream);
}

/// nvshmemx_collective_launch_query_gridsize: the largest grid a cooperative launch of `func`
/// with `blockDims` allows (blocks per SM by the occupancy API × SMs). 0, or the CUDA error code.
int nvshmemx_collective_launch_query_gridsize(const void *func, dim3 blockDims, void **args, size_t sharedMem,
                                              int *gridsize) {
    (void)args;
    int dev = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, (int)(blockDims.x * blockDims.y * blockDims.z),
                                                          sharedMem);
    if (e != cudaSuccess) return (int)e;
    *gridsize = per_sm * sms;
    return 0;
}

}  // extern "C"
