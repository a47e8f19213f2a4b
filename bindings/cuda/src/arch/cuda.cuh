// The CUDA target (nvcc): each primitive of arch.cuh spelled exactly as the library spelled it
// before the arch layer existed, so that the SASS does not change (bindings/cuda/README.md has
// the per-function instruction counts before and after).
#pragma once

#include <cuda/atomic>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(__CUDA_ARCH__)
#include <chrono>
#endif

#if defined(__CUDA_ARCH__)
#define OXSHMEMI_DEVICE_PASS 1
#else
#define OXSHMEMI_DEVICE_PASS 0
#endif
#define OXSHMEMI_NOINLINE __noinline__
// The generated wrappers' entries: nothing on a GPU (see cpu.cuh).
#define OXSHMEMI_ENTRY_BOTH(name, ...)
#define OXSHMEMI_ENTRY_DEVICE(name)

namespace oxshmemi {
namespace arch {

constexpr unsigned WARP_SIZE = 32;

// ---- indices ----------------------------------------------------------------------------------

__device__ inline uint32_t block_id() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
__device__ inline uint32_t thread_id() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
__device__ inline uint32_t block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

// ---- synchronization within a block -----------------------------------------------------------

__device__ inline void sync_block() { __syncthreads(); }
__device__ inline void sync_warp() { __syncwarp(); }
/// The named barrier 1 + id over 128 threads (a warpgroup).
__device__ inline void sync_warpgroup(uint32_t id) { asm volatile("bar.sync %0, 128;" ::"r"(1 + id) : "memory"); }
__device__ inline unsigned activemask() { return __activemask(); }
template <class T>
__device__ inline T shfl(unsigned mask, T v, int lane) {
    return __shfl_sync(mask, v, lane);
}
/// Thread 0's `v` to every thread of the block (all of them call).
__device__ inline int bcast_block(int v) {
    __shared__ int slot;
    if (thread_id() == 0) slot = v;
    __syncthreads();
    v = slot;
    __syncthreads();
    return v;
}

// ---- fences -----------------------------------------------------------------------------------

__device__ inline void fence_block() { __threadfence_block(); }
__device__ inline void fence_device() { __threadfence(); }
__device__ inline void fence_system() { __threadfence_system(); }
__host__ __device__ inline void fence_sc_system() {
    cuda::atomic_thread_fence(cuda::std::memory_order_seq_cst, cuda::thread_scope_system);
}

// ---- word accesses other agents see ------------------------------------------------------------

/// A volatile word access (CUDA's ld.volatile/st.volatile: every access reaches memory), the
/// way the library polls and stores words another agent reads or writes. W: 1, 2, 4, 8 bytes.
template <class W>
__host__ __device__ inline W volatile_load(const W *p) {
    return *(const volatile W *)p;
}
template <class W>
__host__ __device__ inline void volatile_store(W *p, W v) {
    *(volatile W *)p = v;
}
/// After a poll saw the awaited value: nothing here (fence_device(), which follows, orders).
template <class W>
__host__ __device__ inline void poll_acquire(const W *) {}
/// An acquire load of a word (4 or 8 bytes) at system scope: ld.acquire.sys (LD.STRONG.SYS
/// then CCTL.IVALL on sm_70 and newer, no membar), for a poll that needs no fence after it.
template <class W>
__device__ inline W load_acquire(const W *p) {
    static_assert(sizeof(W) == 4 || sizeof(W) == 8, "load_acquire: a word of 4 or 8 bytes");
    if constexpr (sizeof(W) == 8) {
        unsigned long long v;
        asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
        return (W)v;
    } else {
        unsigned int v;
        asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
        return (W)v;
    }
}
/// A store of a word that the fence_system() before it releases (a barrier's signal): the
/// volatile store (relaxed, system scope), no membar of its own.
template <class W>
__device__ inline void fenced_store(W *p, W v) {
    *(volatile W *)p = v;
}

// ---- time, back-off, the rest -----------------------------------------------------------------

__host__ __device__ inline uint64_t now_ns() {
#if defined(__CUDA_ARCH__)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
#endif
}

__host__ __device__ inline void pause() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(64);
#endif
}

__device__ inline void trap() { __trap(); }
__device__ inline uint32_t bswap32(uint32_t x) { return __byte_perm(x, 0, 0x0123); }

// ---- atomics ----------------------------------------------------------------------------------

template <class T>
using sys_ref = cuda::atomic_ref<T, cuda::thread_scope_system>;
template <class T>
using gpu_ref = cuda::atomic_ref<T, cuda::thread_scope_device>;
using memory_order = cuda::std::memory_order;
constexpr memory_order mo_relaxed = cuda::memory_order_relaxed;
constexpr memory_order mo_acquire = cuda::memory_order_acquire;
constexpr memory_order mo_release = cuda::memory_order_release;
constexpr memory_order mo_acq_rel = cuda::memory_order_acq_rel;
constexpr memory_order mo_seq_cst = cuda::memory_order_seq_cst;

/// A floating-point atomic add at system scope (relaxed): the old value. float and double are
/// CUDA's atomicAdd_system (RED/ATOM .F32/.F64 .SYS); CUDA has no system-scope half add, so
/// half is atomicAdd's device-scope one (sm_70 and newer), as NVSHMEM does for its half add.
__device__ inline float fadd_system(float *p, float v) { return atomicAdd_system(p, v); }
__device__ inline double fadd_system(double *p, double v) { return atomicAdd_system(p, v); }
__device__ inline half fadd_system(half *p, half v) { return atomicAdd(p, v); }

}  // namespace arch
}  // namespace oxshmemi
