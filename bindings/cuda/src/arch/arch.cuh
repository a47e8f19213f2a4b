// The one place where the device library meets its target. Every other file of bindings/cuda/src
// (the headers, core.cu, host.cu, generated/*.cu) includes this header, directly or through
// state.cuh, and spells no inline PTX, no CUDA-only intrinsic and no CUDA-only type itself, so
// that the same files compile for three targets:
//
//   CUDA  (nvcc)               arch/cuda.cuh   what the library spelled before this layer, 1:1
//   HIP   (hipcc, -x hip)      arch/hip.cuh    __hip_atomic_* with scopes, amdgcn builtins
//   CPU   (c++, -DOXSHMEMI_TARGET_CPU)
//                              arch/cpu.cuh    a SIMT model: a block's threads are host threads
//
// What each target header provides (all in namespace oxshmemi::arch unless a macro):
//
//   OXSHMEMI_DEVICE_PASS     1 in the compilation pass that emits device code (nvcc's device
//                            pass, HIP's device pass, always on the CPU), else 0
//   OXSHMEMI_NOINLINE        keeps an out-of-line core out of line (HIP defines __noinline__
//                            away, and GCC's own headers use the name __noinline__)
//   __host__ __device__ __global__   the CUDA qualifiers (defined away on the CPU; the library
//                            itself declares no __shared__ variable, bcast_block holds its one)
//   WARP_SIZE                threads of a warp (CUDA 32, HIP the wavefront: 64 on gfx9, CPU 32)
//   thread_id(), block_id(), block_threads()   linear thread index in its block, linear block
//                            index in the grid, threads per block
//   sync_block(), sync_warp(), sync_warpgroup(id)   __syncthreads, __syncwarp, the named barrier
//                            1+id over 128 threads
//   activemask(), shfl(mask, v, lane)              the warp's active lanes; lane's value of v
//   bcast_block(v)           thread 0's v to every thread of the block (a __shared__ slot)
//   fence_block(), fence_device(), fence_system()  __threadfence_block/__threadfence/_system
//   fence_sc_system()        a sequentially consistent fence at system scope
//                            (cuda::atomic_thread_fence(seq_cst, thread_scope_system))
//   poll_acquire(p)          after a poll of *p saw the awaited value, before fence_device():
//                            nothing on CUDA and HIP (the fence orders); an acquire load of *p on
//                            the CPU, so that ThreadSanitizer, which does not model standalone
//                            fences, sees the payload read after a successful test/wait as ordered
//   volatile_load(p), volatile_store(p, v)   a word (1, 2, 4, 8 bytes) that another agent reads
//                            or writes: CUDA's volatile access; a relaxed atomic on the CPU
//   load_acquire(p)          an acquire load of a word (4, 8 bytes) at system scope, for a poll
//                            that needs no fence after it (ld.acquire.sys on CUDA)
//   fenced_store(p, v)       a word's store that a fence_system() before it releases: relaxed on
//                            CUDA and HIP; a release store on the CPU (ThreadSanitizer does not
//                            model the fence)
//   now_ns(), pause()        a monotonic nanosecond clock; a short back-off in spin loops
//                            (both __host__ __device__)
//   trap()                   ends the kernel (nvshmem_global_exit)
//   bswap32(x)               byte reversal of a 32-bit word
//   sys_ref<T>               an atomic reference of system scope with load, store, exchange,
//                            compare_exchange_{strong,weak}, fetch_{add,and,or,xor,max}
//                            (cuda::atomic_ref<T, cuda::thread_scope_system>'s face)
//   gpu_ref<T>               the same at device scope, for words of GPU memory that only this
//                            GPU's threads read-modify-write (thread_scope_device; HIP's agent
//                            scope; sys_ref on the CPU, where the scopes are one)
//   fadd_system(p, v)        a floating-point atomic add (float, double, half) at system scope,
//                            relaxed; returns the old value (atomicAdd_system on CUDA)
//   memory_order, mo_relaxed, mo_acquire, mo_release, mo_acq_rel, mo_seq_cst
//   double2                  CUDA's vector type (maxloc), half and __nv_bfloat16 with arithmetic
//
// host.cu also uses the CUDA runtime's names (cudaMemcpyToSymbol, cudaLaunchKernel, ...); the
// HIP header maps the few it uses onto HIP's runtime, the CPU target has no host.cu yet.
#pragma once

#if defined(OXSHMEMI_TARGET_CPU)
#include "cpu.cuh"
#elif defined(__HIP__)
#include "hip.cuh"
#elif defined(__CUDACC__)
#include "cuda.cuh"
#else
#error "oxshmem's device library: compile with nvcc, with hipcc -x hip, or with -DOXSHMEMI_TARGET_CPU"
#endif
