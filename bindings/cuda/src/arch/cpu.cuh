// The CPU target (c++ -x c++ -std=c++17 -DOXSHMEMI_TARGET_CPU): the primitives of arch.cuh on a
// SIMT model where a block's threads are host threads. The device library's own files compile
// unchanged against it (bindings/cuda/build-cpu.sh); what exists so far is the model below and
// its test (bindings/cuda/tests/cpu_simt.cpp), not a CUDA runtime: no launches of user kernels,
// no streams, no symmetric heap (issue 30, items 2 to 5).
//
// The model:
// - cpu::launch_block(grid, block, block_idx, fn) runs `fn` once per thread of one block, each
//   on its own host thread, with that thread's indices; the threads share a cpu::Block (the
//   block's barriers and exchange words). cpu::launch_grid runs every block of a grid at once.
// - sync_block/sync_warp/sync_warpgroup are barriers over the block, the calling thread's warp
//   (its threads that exist: the last warp of a block may be partial) and its warpgroup;
//   shfl and bcast_block exchange through the block's words between two barriers. Every
//   thread of the group must call, as on a GPU.
// - Atomics are the compiler's __atomic builtins: one host, so every scope is the system's, and
//   ThreadSanitizer sees them as atomics (a plain access another thread writes is a race).
// - pause() yields the host thread, so spinning device threads let the others run.
// - The CUDA qualifiers are defined away; kernels are ordinary functions.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#define OXSHMEMI_DEVICE_PASS 1
#define OXSHMEMI_NOINLINE __attribute__((noinline))
#define __host__
#define __device__
#define __global__

// ---- CUDA's types the library names -----------------------------------------------------------

/// CUDA's double2 (maxloc).
struct double2 {
    double x, y;
};

/// half: the compiler's IEEE binary16 (GCC 12 and clang on x86-64 and AArch64).
typedef _Float16 half;

/// __nv_bfloat16: the top 16 bits of a float, arithmetic in float, round to nearest even.
struct __nv_bfloat16 {
    uint16_t x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) {
        uint32_t u;
        memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            x = (uint16_t)((u >> 16) | 0x40);  // NaN stays a quiet NaN
        else
            x = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
    }
    operator float() const {
        uint32_t u = (uint32_t)x << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
};
inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a + (float)b; }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a * (float)b; }
inline bool operator<(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a < (float)b; }
inline bool operator>(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a > (float)b; }
inline bool operator==(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a == (float)b; }

// nvshmem.h: half and __nv_bfloat16 are the ones above.
#define OXSHMEM_NVSHMEM_CUDA_HALF 1

namespace oxshmemi {
namespace arch {

constexpr unsigned WARP_SIZE = 32;

namespace cpu {

struct idx3 {
    uint32_t x = 0, y = 0, z = 0;
    uint32_t count() const { return x * y * z; }
};

/// A reusable barrier of `n` host threads.
class Barrier {
    std::mutex m_;
    std::condition_variable cv_;
    uint32_t n_ = 1, waiting_ = 0;
    uint64_t generation_ = 0;

public:
    void init(uint32_t n) { n_ = n; }
    void wait() {
        std::unique_lock<std::mutex> l(m_);
        uint64_t g = generation_;
        if (++waiting_ == n_) {
            waiting_ = 0;
            generation_++;
            cv_.notify_all();
        } else {
            cv_.wait(l, [&] { return generation_ != g; });
        }
    }
};

/// What the threads of one block share.
struct Block {
    idx3 grid, dim, idx;
    uint32_t threads;
    std::unique_ptr<Barrier[]> warps, warpgroups;
    Barrier block;
    std::unique_ptr<uint64_t[]> lanes;  ///< one exchange word per thread (shuffles)
    uint64_t bcast = 0;
    Block(idx3 grid_, idx3 dim_, idx3 idx_) : grid(grid_), dim(dim_), idx(idx_), threads(dim_.count()) {
        uint32_t nw = (threads + WARP_SIZE - 1) / WARP_SIZE, ng = (threads + 127) / 128;
        warps.reset(new Barrier[nw]);
        warpgroups.reset(new Barrier[ng]);
        for (uint32_t w = 0; w < nw; w++) warps[w].init(threads - w * WARP_SIZE < WARP_SIZE ? threads - w * WARP_SIZE : WARP_SIZE);
        for (uint32_t g = 0; g < ng; g++) warpgroups[g].init(threads - g * 128 < 128 ? threads - g * 128 : 128);
        block.init(threads);
        lanes.reset(new uint64_t[threads]());
    }
};

/// The calling host thread as a device thread.
struct Thread {
    Block *block;
    idx3 idx;
    uint32_t linear;
};
inline thread_local Thread *self = nullptr;

inline Thread &me() {
    if (!self) {
        fprintf(stderr, "oxshmem CPU target: a device routine ran outside a kernel (no thread context)\n");
        abort();
    }
    return *self;
}

/// Starts one host thread per thread of block `b`, running `fn` with its indices.
inline void start_block(Block &b, const std::function<void()> &fn, std::vector<std::thread> &threads) {
    for (uint32_t z = 0; z < b.dim.z; z++)
        for (uint32_t y = 0; y < b.dim.y; y++)
            for (uint32_t x = 0; x < b.dim.x; x++)
                threads.emplace_back([&b, &fn, x, y, z] {
                    Thread t{&b, {x, y, z}, x + b.dim.x * (y + b.dim.y * z)};
                    self = &t;
                    fn();
                    self = nullptr;
                });
}

/// Runs `fn` on every thread of block `idx` of a `grid` of `dim`-sized blocks, one host thread
/// each, and waits for them all.
inline void launch_block(idx3 grid, idx3 dim, idx3 idx, const std::function<void()> &fn) {
    Block b(grid, dim, idx);
    std::vector<std::thread> threads;
    threads.reserve(b.threads);
    start_block(b, fn, threads);
    for (auto &t : threads) t.join();
}

/// Runs `fn` on every thread of every block of `grid`, all at once (as a cooperative launch
/// keeps every block resident), and waits for them all.
inline void launch_grid(idx3 grid, idx3 dim, const std::function<void()> &fn) {
    std::vector<std::unique_ptr<Block>> blocks;
    std::vector<std::thread> threads;
    threads.reserve((size_t)grid.count() * dim.count());
    for (uint32_t z = 0; z < grid.z; z++)
        for (uint32_t y = 0; y < grid.y; y++)
            for (uint32_t x = 0; x < grid.x; x++) {
                blocks.emplace_back(new Block(grid, dim, {x, y, z}));
                start_block(*blocks.back(), fn, threads);
            }
    for (auto &t : threads) t.join();
}

}  // namespace cpu

// ---- indices ----------------------------------------------------------------------------------

inline uint32_t block_id() {
    const cpu::Block &b = *cpu::me().block;
    return b.idx.x + b.grid.x * (b.idx.y + b.grid.y * b.idx.z);
}
inline uint32_t thread_id() { return cpu::me().linear; }
inline uint32_t block_threads() { return cpu::me().block->threads; }

// ---- synchronization within a block -----------------------------------------------------------

inline void sync_block() { cpu::me().block->block.wait(); }
inline void sync_warp() { cpu::me().block->warps[thread_id() / WARP_SIZE].wait(); }
inline void sync_warpgroup(uint32_t id) { cpu::me().block->warpgroups[id].wait(); }
/// The lanes of the calling warp (every thread of a block runs until it returns).
inline unsigned activemask() {
    uint32_t n = block_threads() - thread_id() / WARP_SIZE * WARP_SIZE;
    return n >= 32 ? ~0u : (1u << n) - 1;
}
template <class T>
inline T shfl(unsigned, T v, int lane) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shfl: up to 8 bytes");
    cpu::Block &b = *cpu::me().block;
    uint32_t me = thread_id(), base = me / WARP_SIZE * WARP_SIZE;
    uint64_t w = 0;
    memcpy(&w, &v, sizeof(T));
    b.lanes[me] = w;
    sync_warp();
    uint32_t src = base + (uint32_t)lane % WARP_SIZE;
    if (src < b.threads) w = b.lanes[src];  // a lane past the block's end: undefined on a GPU, own value here
    sync_warp();
    memcpy(&v, &w, sizeof(T));
    return v;
}
inline int bcast_block(int v) {
    cpu::Block &b = *cpu::me().block;
    if (thread_id() == 0) b.bcast = (uint64_t)(int64_t)v;
    sync_block();
    v = (int)(int64_t)b.bcast;
    sync_block();
    return v;
}

// ---- fences: one host, every scope is the system's ---------------------------------------------

inline void fence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void fence_device() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void fence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void fence_sc_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// ---- word accesses other agents see ------------------------------------------------------------

/// CUDA's volatile word access as a relaxed atomic: every access reaches memory, as on a GPU,
/// and ThreadSanitizer sees a poll as an atomic, so only plain accesses race.
template <class W>
inline W volatile_load(const W *p) {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}
template <class W>
inline void volatile_store(W *p, W v) {
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
/// After a poll of *p saw the awaited value (before fence_device()): an acquire load of *p.
/// The seq_cst fence that follows orders on its own, but ThreadSanitizer does not model
/// standalone fences; the acquire load makes the writer's release visible to it, so a payload
/// read after a successful test or wait is not reported as a race. W: 1, 2, 4 or 8 bytes.
template <class W>
inline void poll_acquire(const W *p) {
    using U = typename std::conditional<
        sizeof(W) == 1, uint8_t,
        typename std::conditional<sizeof(W) == 2, uint16_t,
                                  typename std::conditional<sizeof(W) == 4, uint32_t, uint64_t>::type>::type>::type;
    static_assert(sizeof(W) == sizeof(U), "poll_acquire: a word of 1, 2, 4 or 8 bytes");
    (void)__atomic_load_n((const U *)p, __ATOMIC_ACQUIRE);
}

// ---- time, back-off, the rest -----------------------------------------------------------------

inline uint64_t now_ns() {
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
inline void pause() { std::this_thread::yield(); }
[[noreturn]] inline void trap() { __builtin_trap(); }
inline uint32_t bswap32(uint32_t x) { return __builtin_bswap32(x); }

// ---- atomics ----------------------------------------------------------------------------------

using memory_order = int;
constexpr memory_order mo_relaxed = __ATOMIC_RELAXED;
constexpr memory_order mo_acquire = __ATOMIC_ACQUIRE;
constexpr memory_order mo_release = __ATOMIC_RELEASE;
constexpr memory_order mo_acq_rel = __ATOMIC_ACQ_REL;
constexpr memory_order mo_seq_cst = __ATOMIC_SEQ_CST;

constexpr memory_order cas_failure(memory_order o) {
    return o == mo_acq_rel ? mo_acquire : o == mo_release ? mo_relaxed : o;
}

/// cuda::atomic_ref's face over the __atomic builtins.
template <class T>
struct sys_ref {
    T *p;
    explicit sys_ref(T &r) : p(&r) {}
    T load(memory_order o = mo_seq_cst) const { return __atomic_load_n(p, o); }
    void store(T v, memory_order o = mo_seq_cst) const { __atomic_store_n(p, v, o); }
    T exchange(T v, memory_order o = mo_seq_cst) const { return __atomic_exchange_n(p, v, o); }
    bool compare_exchange_strong(T &expected, T desired, memory_order ok, memory_order bad) const {
        return __atomic_compare_exchange_n(p, &expected, desired, false, ok, bad);
    }
    bool compare_exchange_strong(T &expected, T desired, memory_order o = mo_seq_cst) const {
        return compare_exchange_strong(expected, desired, o, cas_failure(o));
    }
    bool compare_exchange_weak(T &expected, T desired, memory_order ok, memory_order bad) const {
        return __atomic_compare_exchange_n(p, &expected, desired, true, ok, bad);
    }
    bool compare_exchange_weak(T &expected, T desired, memory_order o = mo_seq_cst) const {
        return compare_exchange_weak(expected, desired, o, cas_failure(o));
    }
    T fetch_add(T v, memory_order o = mo_seq_cst) const { return __atomic_fetch_add(p, v, o); }
    T fetch_and(T v, memory_order o = mo_seq_cst) const { return __atomic_fetch_and(p, v, o); }
    T fetch_or(T v, memory_order o = mo_seq_cst) const { return __atomic_fetch_or(p, v, o); }
    T fetch_xor(T v, memory_order o = mo_seq_cst) const { return __atomic_fetch_xor(p, v, o); }
    T fetch_max(T v, memory_order o = mo_seq_cst) const {
        T old = load(mo_relaxed);
        while (old < v && !compare_exchange_weak(old, v, o, mo_relaxed)) {
        }
        return old;
    }
};

/// A floating-point atomic add (float, double, half; relaxed): the old value. A CAS loop on the
/// value's bits (the __atomic builtins add integers only).
template <class T>
inline T fadd_system(T *p, T v) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "fadd_system: half, float or double");
    using U = typename std::conditional<sizeof(T) == 2, uint16_t,
                                        typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type>::type;
    U *w = reinterpret_cast<U *>(p);
    U old = __atomic_load_n(w, __ATOMIC_RELAXED);
    for (;;) {
        T o;
        memcpy(&o, &old, sizeof o);
        T n = (T)(o + v);
        U nb;
        memcpy(&nb, &n, sizeof nb);
        if (__atomic_compare_exchange_n(w, &old, nb, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return o;
    }
}

}  // namespace arch
}  // namespace oxshmemi
