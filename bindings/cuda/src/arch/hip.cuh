// The HIP target (hipcc -x hip, clang's HIP front end; ROCm 5.2 and later): the primitives of
// arch.cuh on AMD GPUs. Compiled and linked for gfx90a in CI (bindings/cuda/build-hip.sh);
// nothing of it has run on an AMD GPU yet.
//
// Differences from CUDA a reader of the library should know:
// - a warp is the wavefront: WARP_SIZE is 64 on gfx9 (CDNA: MI100/MI200/MI300) and 32 on
//   wave32 targets, so the warp-scope routines span a wavefront;
// - AMD has no named barriers: the warpgroup barrier is the block's barrier, correct when the
//   whole block calls the warpgroup routine together (a block of one warpgroup, the common case),
//   a deadlock otherwise (TODO: an LDS counter barrier per warpgroup);
// - lanes of a wavefront do not diverge independently, so activemask() is the EXEC mask and
//   the shuffle ignores its mask;
// - now_ns() reads s_memrealtime, a constant 100 MHz clock on gfx9 (hipDeviceAttributeWallClockRate);
// - atomics are __hip_atomic_* with an explicit scope, the ones CUDA's thread_scope_* name.
#pragma once

#include "cuda-on-hip/cuda_fp16.h"
#include "cuda-on-hip/cuda_runtime.h"

#include <stddef.h>
#include <stdint.h>

#if !defined(__HIP_DEVICE_COMPILE__)
#include <chrono>
#endif

#if defined(__HIP_DEVICE_COMPILE__)
#define OXSHMEMI_DEVICE_PASS 1
#else
#define OXSHMEMI_DEVICE_PASS 0
#endif
#define OXSHMEMI_NOINLINE __attribute__((noinline))
// The generated wrappers' entries: nothing on a GPU (see cpu.cuh).
#define OXSHMEMI_ENTRY_BOTH(name, ...)
#define OXSHMEMI_ENTRY_DEVICE(name)

namespace oxshmemi {
namespace arch {

#if defined(__AMDGCN_WAVEFRONT_SIZE)
constexpr unsigned WARP_SIZE = __AMDGCN_WAVEFRONT_SIZE;
#else
constexpr unsigned WARP_SIZE = 64;  // the host pass (never used there)
#endif

// ---- indices ----------------------------------------------------------------------------------

__device__ inline uint32_t block_id() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
__device__ inline uint32_t thread_id() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
__device__ inline uint32_t block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

// ---- synchronization within a block -----------------------------------------------------------

__device__ inline void sync_block() { __syncthreads(); }
/// __syncwarp: the wavefront's lanes run together; order their memory operations.
__device__ inline void sync_warp() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
/// No named barriers on AMD: the block's barrier (see the top of this file).
__device__ inline void sync_warpgroup(uint32_t) { __syncthreads(); }
__device__ inline uint64_t activemask() { return __ballot(1); }
template <class T>
__device__ inline T shfl(uint64_t, T v, int lane) {
    return __shfl(v, lane);
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
__host__ __device__ inline void fence_sc_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

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
/// An acquire load of a word (4 or 8 bytes) at system scope, for a poll that needs no fence after it.
template <class W>
__device__ inline W load_acquire(const W *p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
/// A store of a word that the fence_system() before it releases (a barrier's signal): relaxed,
/// system scope.
template <class W>
__device__ inline void fenced_store(W *p, W v) {
    __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

// ---- time, back-off, the rest -----------------------------------------------------------------

__host__ __device__ inline uint64_t now_ns() {
#if defined(__HIP_DEVICE_COMPILE__)
    return __builtin_amdgcn_s_memrealtime() * 10;
#else
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
#endif
}

__host__ __device__ inline void pause() {
#if defined(__HIP_DEVICE_COMPILE__)
    __builtin_amdgcn_s_sleep(1);
#endif
}

__device__ inline void trap() { __builtin_trap(); }
__device__ inline uint32_t bswap32(uint32_t x) { return __builtin_bswap32(x); }

// ---- atomics ----------------------------------------------------------------------------------

using memory_order = int;
constexpr memory_order mo_relaxed = __ATOMIC_RELAXED;
constexpr memory_order mo_acquire = __ATOMIC_ACQUIRE;
constexpr memory_order mo_release = __ATOMIC_RELEASE;
constexpr memory_order mo_acq_rel = __ATOMIC_ACQ_REL;
constexpr memory_order mo_seq_cst = __ATOMIC_SEQ_CST;

/// The failure order C++ derives from a compare-exchange's single order.
__host__ __device__ constexpr memory_order cas_failure(memory_order o) {
    return o == mo_acq_rel ? mo_acquire : o == mo_release ? mo_relaxed : o;
}

/// cuda::atomic_ref's face over __hip_atomic_* at scope S (__HIP_MEMORY_SCOPE_*).
template <class T, int S>
struct scoped_ref {
    T *p;
    __host__ __device__ explicit scoped_ref(T &r) : p(&r) {}
    __host__ __device__ T load(memory_order o = mo_seq_cst) const { return __hip_atomic_load(p, o, S); }
    __host__ __device__ void store(T v, memory_order o = mo_seq_cst) const { __hip_atomic_store(p, v, o, S); }
    __host__ __device__ T exchange(T v, memory_order o = mo_seq_cst) const { return __hip_atomic_exchange(p, v, o, S); }
    __host__ __device__ bool compare_exchange_strong(T &expected, T desired, memory_order ok, memory_order bad) const {
        return __hip_atomic_compare_exchange_strong(p, &expected, desired, ok, bad, S);
    }
    __host__ __device__ bool compare_exchange_strong(T &expected, T desired, memory_order o = mo_seq_cst) const {
        return compare_exchange_strong(expected, desired, o, cas_failure(o));
    }
    __host__ __device__ bool compare_exchange_weak(T &expected, T desired, memory_order ok, memory_order bad) const {
        return __hip_atomic_compare_exchange_weak(p, &expected, desired, ok, bad, S);
    }
    __host__ __device__ bool compare_exchange_weak(T &expected, T desired, memory_order o = mo_seq_cst) const {
        return compare_exchange_weak(expected, desired, o, cas_failure(o));
    }
    __host__ __device__ T fetch_add(T v, memory_order o = mo_seq_cst) const { return __hip_atomic_fetch_add(p, v, o, S); }
    __host__ __device__ T fetch_and(T v, memory_order o = mo_seq_cst) const { return __hip_atomic_fetch_and(p, v, o, S); }
    __host__ __device__ T fetch_or(T v, memory_order o = mo_seq_cst) const { return __hip_atomic_fetch_or(p, v, o, S); }
    __host__ __device__ T fetch_xor(T v, memory_order o = mo_seq_cst) const { return __hip_atomic_fetch_xor(p, v, o, S); }
    __host__ __device__ T fetch_max(T v, memory_order o = mo_seq_cst) const { return __hip_atomic_fetch_max(p, v, o, S); }
};

template <class T>
using sys_ref = scoped_ref<T, __HIP_MEMORY_SCOPE_SYSTEM>;
template <class T>
using gpu_ref = scoped_ref<T, __HIP_MEMORY_SCOPE_AGENT>;

/// A floating-point atomic add at system scope (relaxed): the old value. float and double are
/// the hardware's (global_atomic_add_f32/f64 where the target has them, else the compiler's
/// CAS loop); half is a CAS loop on the aligned 32-bit word that holds it.
__device__ inline float fadd_system(float *p, float v) {
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
__device__ inline double fadd_system(double *p, double v) {
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
__device__ inline __half fadd_system(__half *p, __half v) {
    uint32_t *w = (uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
    const int shift = ((uintptr_t)p & 2) ? 16 : 0;
    uint32_t old = __hip_atomic_load(w, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
    for (;;) {
        uint16_t ob = (uint16_t)(old >> shift);
        __half o;
        __builtin_memcpy(&o, &ob, 2);
        __half n = __hadd(o, v);
        uint16_t nb;
        __builtin_memcpy(&nb, &n, 2);
        uint32_t nw = (old & ~(0xffffu << shift)) | ((uint32_t)nb << shift);
        if (__hip_atomic_compare_exchange_weak(w, &old, nw, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                               __HIP_MEMORY_SCOPE_SYSTEM))
            return o;
    }
}

}  // namespace arch
}  // namespace oxshmemi
