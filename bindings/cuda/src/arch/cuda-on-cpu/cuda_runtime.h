// CUDA's runtime API and device built-ins for the CPU target (issue 30): with this folder on the
// include path (oshnvcc --target cpu puts it there), an NVSHMEM program's host and device code
// compile with the ordinary C++ compiler, and its kernels run on host threads through the
// SIMT model of ../cpu.cuh, calling the device library's own code.
//
// What runs how:
// - Device memory (cudaMalloc) and pinned host memory (cudaHostAlloc) are host memory; the
//   symmetric heap (nvshmem_malloc) is the GPU heap that the host library maps through the
//   emulated driver (tests/emucuda), which every PE of the node maps, so P2P loads and stores
//   reach peers as on GPUs of one node.
// - A stream is a worker thread that runs its operations in order; a kernel launch is one such
//   operation, which runs the grid's threads as host threads (../cpu.cuh: every block at once
//   for a cooperative launch, else waves of as many blocks as fit on the emulated device) and
//   returns when they have all ended. The legacy default stream (0) waits for the blocking
//   streams and they for it, as CUDA's does.
// - `kernel<<<grid, block, shmem, stream>>>(args)` is not C++: oshnvcc --target cpu rewrites it
//   (and __shared__ declarations) before compiling; see bindings/tools/src/cudarewrite.rs.
// - What a GPU keeps from the host stays kept: a device thread's stack and a block's shared
//   memory are recorded while they live, and the host library's proxy and software NIC refuse
//   them (oxshmemi_cpu_local_memory).
//
// Not a general CUDA: texture, surfaces, graphs, managed-memory migration, peer copies between
// emulated devices and the driver API beyond a few types are absent; a name missing here is a
// compile error.
#pragma once

#ifndef OXSHMEMI_TARGET_CPU
#define OXSHMEMI_TARGET_CPU 1
#endif

#include "../cpu.cuh"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

// nvshmem.h: the runtime's types come from here.
#define OXSHMEM_NVSHMEM_CUDA_RUNTIME 1
#define CUDART_VERSION 13000
#define __CUDA_RUNTIME_H__ 1

#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __constant__
#define __managed__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __grid_constant__

// ---- vector and index types -------------------------------------------------------------------

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct uint2 { unsigned int x, y; };
struct uint4 { unsigned int x, y, z, w; };
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct longlong2 { long long x, y; };
struct ulonglong2 { unsigned long long x, y; };
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }


// threadIdx, blockIdx, blockDim and gridDim: each device thread's own copies, set when it
// starts (variables, not macros, so that host code may name its own `dim3 gridDim(...)`).
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
namespace oxshmemi {
namespace cpu_rt {
inline void set_builtins(const arch::cpu::Thread &t) {
    const arch::cpu::Block &b = *t.block;
    threadIdx = uint3{t.idx.x, t.idx.y, t.idx.z};
    blockIdx = uint3{b.idx.x, b.idx.y, b.idx.z};
    blockDim = dim3(b.dim.x, b.dim.y, b.dim.z);
    gridDim = dim3(b.grid.x, b.grid.y, b.grid.z);
}
}  // namespace cpu_rt
}  // namespace oxshmemi
static constexpr int warpSize = 32;

// ---- device built-ins -------------------------------------------------------------------------

inline void __syncthreads() { oxshmemi::arch::sync_block(); }
inline int __syncthreads_count(int p) {
    static_assert(sizeof(int) == 4, "int");
    oxshmemi::arch::cpu::Block &b = *oxshmemi::arch::cpu::me().block;
    oxshmemi::arch::sync_block();
    if (oxshmemi::arch::thread_id() == 0) b.bcast = 0;
    oxshmemi::arch::sync_block();
    if (p) __atomic_fetch_add(&b.bcast, 1, __ATOMIC_RELAXED);
    oxshmemi::arch::sync_block();
    int n = (int)__atomic_load_n(&b.bcast, __ATOMIC_RELAXED);
    oxshmemi::arch::sync_block();
    return n;
}
inline int __syncthreads_or(int p) { return __syncthreads_count(p) != 0; }
inline int __syncthreads_and(int p) { return __syncthreads_count(p) == (int)oxshmemi::arch::block_threads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { oxshmemi::arch::sync_warp(); }
inline unsigned __activemask() { return oxshmemi::arch::activemask(); }
inline void __threadfence() { oxshmemi::arch::fence_device(); }
inline void __threadfence_block() { oxshmemi::arch::fence_block(); }
inline void __threadfence_system() { oxshmemi::arch::fence_system(); }
inline void __nanosleep(unsigned ns) {
    if (ns > 1000) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
    else std::this_thread::yield();
}
inline long long clock64() { return (long long)oxshmemi::arch::now_ns(); }
inline unsigned long long __globaltimer() { return oxshmemi::arch::now_ns(); }
template <class T>
inline T __ldg(const T *p) { return *p; }
inline void __trap() { oxshmemi::arch::trap(); }
inline unsigned __laneid() { return oxshmemi::arch::thread_id() % 32; }

template <class T>
inline T __shfl_sync(unsigned m, T v, int lane, int width = 32) {
    unsigned me = __laneid();
    return oxshmemi::arch::shfl(m, v, (int)(me / width * width + (unsigned)lane % width));
}
template <class T>
inline T __shfl_down_sync(unsigned m, T v, unsigned d, int width = 32) {
    unsigned me = __laneid(), base = me / width * width;
    unsigned src = me - base + d < (unsigned)width ? me + d : me;
    return oxshmemi::arch::shfl(m, v, (int)src);
}
template <class T>
inline T __shfl_up_sync(unsigned m, T v, unsigned d, int width = 32) {
    unsigned me = __laneid(), base = me / width * width;
    unsigned src = me - base >= d ? me - d : me;
    return oxshmemi::arch::shfl(m, v, (int)src);
}
template <class T>
inline T __shfl_xor_sync(unsigned m, T v, int mask, int width = 32) {
    unsigned me = __laneid(), base = me / width * width;
    unsigned src = base + ((me - base) ^ (unsigned)mask) % width;
    return oxshmemi::arch::shfl(m, v, (int)src);
}
/// The lanes of the warp whose predicate is non-zero.
inline unsigned __ballot_sync(unsigned m, int p) {
    unsigned me = __laneid(), bits = 0;
    for (int l = 0; l < 32; l++) {
        unsigned v = oxshmemi::arch::shfl(m, (unsigned)(p != 0), l);
        if (l < 32 && (oxshmemi::arch::activemask() >> l & 1)) bits |= v << l;
    }
    (void)me;
    return bits;
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) { return __ballot_sync(m, p) == (oxshmemi::arch::activemask() & m); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= (x >> i & 1u) << (31 - i);
    return r;
}
/// CUDA's min and max (device functions over mixed integer types too).
template <class A, class B>
inline typename std::common_type<A, B>::type min(A a, B b) {
    return b < a ? b : a;
}
template <class A, class B>
inline typename std::common_type<A, B>::type max(A a, B b) {
    return a < b ? b : a;
}

// Atomics: device scope and system scope are the same host; each is a sequentially consistent
// read-modify-write (CUDA's are relaxed; stronger is allowed, and ThreadSanitizer sees them).
#define OXSHMEMI_CPU_ATOMIC(NAME, EXPR)                                           \
    template <class T>                                                            \
    inline T NAME(T *p, T v) {                                                    \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                             \
        for (;;) {                                                                \
            T n = (EXPR);                                                         \
            if (__atomic_compare_exchange_n(p, &old, n, true, __ATOMIC_SEQ_CST,   \
                                            __ATOMIC_RELAXED))                    \
                return old;                                                       \
        }                                                                         \
    }                                                                             \
    template <class T>                                                            \
    inline T NAME##_system(T *p, T v) { return NAME(p, v); }                      \
    template <class T>                                                            \
    inline T NAME##_block(T *p, T v) { return NAME(p, v); }
template <class T>
inline T atomicAdd(T *p, T v) {
    if constexpr (std::is_integral<T>::value) return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    else return oxshmemi::arch::fadd_system(p, v);
}
template <class T>
inline T atomicAdd_system(T *p, T v) { return atomicAdd(p, v); }
template <class T>
inline T atomicAdd_block(T *p, T v) { return atomicAdd(p, v); }
template <class T>
inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <class T>
inline T atomicExch(T *p, T v) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomicExch: 4 or 8 bytes");
    T old;
    __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
    return old;
}
template <class T>
inline T atomicExch_system(T *p, T v) { return atomicExch(p, v); }
template <class T>
inline T atomicCAS(T *p, T compare, T v) {
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return compare;
}
template <class T>
inline T atomicCAS_system(T *p, T compare, T v) { return atomicCAS(p, compare, v); }
template <class T>
inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <class T>
inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <class T>
inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }
OXSHMEMI_CPU_ATOMIC(atomicMax, old > v ? old : v)
OXSHMEMI_CPU_ATOMIC(atomicMin, old < v ? old : v)
inline unsigned atomicInc(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old >= v ? 0 : old + 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    return old;
}
inline unsigned atomicDec(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, (old == 0 || old > v) ? v : old - 1, true, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED)) {
    }
    return old;
}

// ---- __shared__ (oshnvcc's rewrite turns each declaration into one of these) -----------------

namespace oxshmemi {
namespace cpu_rt {
/// The block's instance of the __shared__ variable of type T tagged by Tag (a local class the
/// rewrite declares beside it, so every declaration, and every instantiation of a template
/// around it, has its own).
template <class T, class Tag>
inline T &block_shared() {
    static const char key = 0;
    return *reinterpret_cast<T *>(arch::cpu::me().block->shared_var(&key, sizeof(T)));
}
/// The block's dynamic shared memory (the launch's shmem bytes).
inline void *dynamic_shared() { return arch::cpu::me().block->dynamic(); }
/// `extern __shared__ T x[];`: an empty object that stands for the block's dynamic shared
/// memory wherever the program names x.
template <class T>
struct DynamicShared {
    T *get() const { return static_cast<T *>(dynamic_shared()); }
    operator T *() const { return get(); }
    template <class U>
    explicit operator U *() const {
        return reinterpret_cast<U *>(get());
    }
    T &operator[](size_t i) const { return get()[i]; }
    T *operator+(ptrdiff_t i) const { return get() + i; }
};
}  // namespace cpu_rt
}  // namespace oxshmemi

// ---- the runtime API --------------------------------------------------------------------------

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDeviceFunction = 98,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719,
    cudaErrorCooperativeLaunchTooLarge = 720,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxBlockDimX = 2,
    cudaDevAttrMaxGridDimX = 5,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrUnifiedAddressing = 41,
    cudaDevAttrPciBusId = 33,
    cudaDevAttrPciDeviceId = 34,
    cudaDevAttrMaxThreadsPerMultiProcessor = 39,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrManagedMemory = 83,
    cudaDevAttrConcurrentManagedAccess = 89,
    cudaDevAttrCooperativeLaunch = 95,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
    cudaDevAttrHostNativeAtomicSupported = 86,
};

enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceMapHost 0x08

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    size_t totalConstMem;
    int major;
    int minor;
    int multiProcessorCount;
    int integrated;
    int canMapHostMemory;
    int concurrentKernels;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryClockRate;
    int memoryBusWidth;
    int l2CacheSize;
    int maxThreadsPerMultiProcessor;
    int managedMemory;
    int isMultiGpuBoard;
    int cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;
    size_t sharedMemPerMultiprocessor;
    size_t sharedMemPerBlockOptin;
    int hostNativeAtomicSupported;
    int concurrentManagedAccess;
};

struct cudaFuncAttributes {
    size_t sharedSizeBytes;
    size_t constSizeBytes;
    size_t localSizeBytes;
    int maxThreadsPerBlock;
    int numRegs;
    int ptxVersion;
    int binaryVersion;
    int maxDynamicSharedSizeBytes;
};

enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer;
    void *hostPointer;
};

typedef void (*cudaHostFn_t)(void *userData);

extern "C" {
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaSetDeviceFlags(unsigned flags);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d);
cudaError_t cudaDeviceCanAccessPeer(int *can, int d, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int d);

cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaMallocManaged(void **p, size_t n, unsigned flags);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t n);
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned flags);
cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p);
cudaError_t cudaMemGetInfo(size_t *free_, size_t *total);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s = 0);
cudaError_t cudaMemset(void *p, int v, size_t n);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s = 0);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind k);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int priority);
cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0);
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data);

cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t e);

/// A launch of a kernel known only by its address (cudaLaunchKernel, nvshmemx_collective_launch):
/// the kernel must be registered (oshnvcc's rewrite registers every non-template __global__
/// function of a file; OXSHMEMI_CPU_REGISTER_KERNEL registers one by hand).
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s);
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                                        cudaStream_t s);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *func);
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *func, int block, size_t shmem);
cudaError_t cudaOccupancyMaxPotentialBlockSize(int *grid, int *block, const void *func, size_t shmem, int limit);
}

namespace oxshmemi {
namespace cpu_rt {

/// A kernel body with its arguments bound: what runs on every device thread.
using Body = std::function<void()>;

/// Enqueues a launch of `body` on stream `s` (0: the legacy stream): grid, block, dynamic shared
/// bytes, cooperative or not. cudaSuccess, or why the launch is refused (the configuration is
/// checked now, as CUDA does).
cudaError_t launch(dim3 grid, dim3 block, size_t shmem, cudaStream_t s, bool cooperative, Body body);

/// The launcher a registered kernel gets: calls `f` (the kernel, a function of type F) with the
/// arguments that `args` points at, copied now (as a launch copies its parameters).
using Trampoline = cudaError_t (*)(const void *f, void **args, dim3 grid, dim3 block, size_t shmem, cudaStream_t s,
                                   bool cooperative);
/// Registers kernel `f` under `name` with the sizes of its `n` parameters.
void register_kernel(const void *f, Trampoline t, const char *name, const unsigned long long *sizes, size_t n);

/// The stream a trampoline takes to run the grid now, on the calling thread (a module's kernel
/// launched by the emulated driver, from its stream's worker), rather than enqueue it.
#define OXSHMEMI_CPU_RUN_NOW ((cudaStream_t)(uintptr_t)-1)

/// Registers a kernel for launches by address.
struct KernelReg {
    template <class... A>
    KernelReg(void (*f)(A...), const char *name) {
        static const unsigned long long sizes[sizeof...(A) + 1] = {sizeof(typename std::decay<A>::type)..., 0};
        register_kernel(reinterpret_cast<const void *>(f), &trampoline_of<A...>, name, sizes, sizeof...(A));
    }
    template <class... A>
    static cudaError_t trampoline_of(const void *f, void **args, dim3 grid, dim3 block, size_t shmem, cudaStream_t s,
                                     bool cooperative) {
        using F = void (*)(A...);
        F fn = reinterpret_cast<F>(const_cast<void *>(f));
        return apply<A...>(fn, args, grid, block, shmem, s, cooperative, std::index_sequence_for<A...>{});
    }
    template <class... A, size_t... I>
    static cudaError_t apply(void (*fn)(A...), void **args, dim3 grid, dim3 block, size_t shmem, cudaStream_t s,
                             bool cooperative, std::index_sequence<I...>) {
        std::tuple<typename std::decay<A>::type...> copy(*static_cast<typename std::decay<A>::type *>(args[I])...);
        return launch(grid, block, shmem, s, cooperative, [fn, copy]() { fn(std::get<I>(copy)...); });
    }
};

/// `kernel<<<grid, block, shmem, stream>>>(args...)` after oshnvcc's rewrite:
/// `::oxshmemi::cpu_rt::Launch(grid, block, shmem, stream).run([=](auto... p) { kernel(p...); }, args...)`.
struct Launch {
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
    Launch(dim3 g, dim3 b, size_t sh = 0, cudaStream_t s = 0) : grid(g), block(b), shmem(sh), stream(s) {}
    template <class K, class... A>
    void run(K k, A &&...args) {
        std::tuple<typename std::decay<A>::type...> copy(std::forward<A>(args)...);
        cudaError_t e = launch(grid, block, shmem, stream, false, [k, copy]() { std::apply(k, copy); });
        record_launch_error(e);
    }
    static void record_launch_error(cudaError_t e);
};

}  // namespace cpu_rt
}  // namespace oxshmemi

/// Registers `kernel` (a non-template __global__ function) for launches by address.
#define OXSHMEMI_CPU_REGISTER_KERNEL(kernel) \
    static ::oxshmemi::cpu_rt::KernelReg oxshmemi_kernel_reg_##kernel((kernel), #kernel)

// Typed forms CUDA's header gives as templates.
template <class T>
inline cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc(reinterpret_cast<void **>(p), n); }
template <class T>
inline cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMallocHost(reinterpret_cast<void **>(p), n); }
template <class T>
inline cudaError_t cudaHostAlloc(T **p, size_t n, unsigned f) { return cudaHostAlloc(reinterpret_cast<void **>(p), n, f); }
template <class T>
inline cudaError_t cudaMallocManaged(T **p, size_t n, unsigned f = cudaMemAttachGlobal) {
    return cudaMallocManaged(reinterpret_cast<void **>(p), n, f);
}
template <class T>
inline cudaError_t cudaHostGetDevicePointer(T **d, void *h, unsigned f) {
    return cudaHostGetDevicePointer(reinterpret_cast<void **>(d), h, f);
}
template <class T>
inline cudaError_t cudaMemcpyToSymbol(T &symbol, const void *src, size_t n, size_t offset = 0,
                                      enum cudaMemcpyKind = cudaMemcpyHostToDevice) {
    if (offset + n > sizeof(T)) return cudaErrorInvalidValue;
    return cudaMemcpy(reinterpret_cast<char *>(&symbol) + offset, src, n, cudaMemcpyDefault);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t n, size_t offset = 0,
                                        enum cudaMemcpyKind = cudaMemcpyDeviceToHost) {
    if (offset + n > sizeof(T)) return cudaErrorInvalidValue;
    return cudaMemcpy(dst, reinterpret_cast<const char *>(&symbol) + offset, n, cudaMemcpyDefault);
}
template <class T>
inline cudaError_t cudaGetSymbolAddress(void **p, const T &symbol) {
    *p = (void *)&symbol;
    return cudaSuccess;
}
template <class... A>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, void (*f)(A...)) {
    return cudaFuncGetAttributes(a, reinterpret_cast<const void *>(f));
}
template <class... A>
inline cudaError_t cudaFuncSetAttribute(void (*f)(A...), enum cudaFuncAttribute attr, int v) {
    return cudaFuncSetAttribute(reinterpret_cast<const void *>(f), attr, v);
}
template <class... A>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void (*f)(A...), int block, size_t shmem) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, reinterpret_cast<const void *>(f), block, shmem);
}
template <class... A>
inline cudaError_t cudaLaunchKernel(void (*f)(A...), dim3 grid, dim3 block, void **args, size_t shmem = 0,
                                    cudaStream_t s = 0) {
    return ::oxshmemi::cpu_rt::KernelReg::trampoline_of<A...>(reinterpret_cast<const void *>(f), args, grid, block,
                                                                shmem, s, false);
}
template <class... A>
inline cudaError_t cudaLaunchCooperativeKernel(void (*f)(A...), dim3 grid, dim3 block, void **args, size_t shmem = 0,
                                               cudaStream_t s = 0) {
    return ::oxshmemi::cpu_rt::KernelReg::trampoline_of<A...>(reinterpret_cast<const void *>(f), args, grid, block,
                                                                shmem, s, true);
}
