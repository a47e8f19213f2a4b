// CUDA's runtime names on HIP: the part of <cuda_runtime.h> that oxshmem's device library
// (host.cu) and its NVSHMEM-style test programs (tests/cuda) use, mapped onto HIP's runtime, so
// that `hipcc -x hip -I bindings/cuda/src/arch/cuda-on-hip` compiles them unchanged. Not a
// general CUDA-on-HIP layer: a name missing here is a compile error, add it when a program
// needs it.
//
// With this folder on the include path, nvshmem.h finds <cuda_runtime.h>, <cuda_fp16.h> and
// <cuda_bf16.h> as it does under nvcc, so it takes dim3, half and __nv_bfloat16 from them
// (HIP's dim3, __half, hip_bfloat16), and its `typedef struct CUstream_st *cudaStream_t` names
// HIP's stream type (CUstream_st is ihipStream_t here), so streams pass to HIP's launches.
#pragma once
#ifndef __HIP__
#error "cuda-on-hip/cuda_runtime.h is for hipcc -x hip"
#endif

#include <hip/hip_runtime.h>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

// nvshmem.h: the runtime's types come from here (it then declares no dim3 of its own).
#define OXSHMEM_NVSHMEM_CUDA_RUNTIME 1

#define CUstream_st ihipStream_t
typedef hipStream_t cudaStream_t;
typedef hipError_t cudaError_t;
typedef hipError_t cudaError;
typedef hipMemcpyKind cudaMemcpyKind;
typedef hipFuncAttributes cudaFuncAttributes;

#define cudaSuccess hipSuccess
#define cudaErrorNotReady hipErrorNotReady
#define cudaErrorInvalidDevice hipErrorInvalidDevice
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyDefault hipMemcpyDefault
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaHostAllocMapped hipHostMallocMapped
#define cudaHostAllocPortable hipHostMallocPortable
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount

#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDevice hipGetDevice
#define cudaSetDevice hipSetDevice
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaHostAlloc hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaHostGetDevicePointer hipHostGetDevicePointer
#define cudaStreamCreate hipStreamCreate
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamQuery hipStreamQuery
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaLaunchKernel hipLaunchKernel
#define cudaLaunchCooperativeKernel hipLaunchCooperativeKernel
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaMemcpyToSymbol hipMemcpyToSymbol
#define cudaMemcpyFromSymbol hipMemcpyFromSymbol

// CUDA's C++ overload takes the kernel itself; HIP's only a const void *.
template <class T>
static inline hipError_t cudaFuncGetAttributes(hipFuncAttributes *attr, T *kernel) {
    return hipFuncGetAttributes(attr, (const void *)kernel);
}

// __syncwarp came to HIP after ROCm 6.1; before, the wavefront's lanes run together and only
// their memory operations need ordering (arch/hip.cuh sync_warp does the same).
#if HIP_VERSION < 60200000
__device__ inline void __syncwarp(unsigned long long = ~0ull) {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#endif

// cudaMallocHost: pinned host memory (hipHostMalloc; HIP's own hipMallocHost is deprecated).
template <class T>
static inline hipError_t cudaMallocHost(T **p, size_t bytes) {
    return hipHostMalloc(reinterpret_cast<void **>(p), bytes, hipHostMallocDefault);
}

// __nanosleep has no HIP counterpart before ROCm 6: a wavefront sleep of 64 × about 64 cycles
// (s_sleep takes a constant), which is what a caller of __nanosleep in a poll loop wants.
#if HIP_VERSION < 60000000
__device__ inline void __nanosleep(unsigned) { __builtin_amdgcn_s_sleep(64); }
#endif
