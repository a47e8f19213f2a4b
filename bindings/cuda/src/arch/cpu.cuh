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

#include <dlfcn.h>
#include <pthread.h>

#define OXSHMEMI_DEVICE_PASS 1
#define OXSHMEMI_NOINLINE __attribute__((noinline))
// The entry of each generated wrapper: a routine callable from both sides forwards a host call
// (no device thread context) to the host library; a device-only one refuses it.
#define OXSHMEMI_ENTRY_BOTH(name, ...)                                                            \
    if (!::oxshmemi::arch::cpu::self) {                                                           \
        static void *const oxshmemi_host_fn = ::oxshmemi::arch::cpu::host_symbol(#name);          \
        return reinterpret_cast<decltype(&name)>(oxshmemi_host_fn)(__VA_ARGS__);                  \
    }
#define OXSHMEMI_ENTRY_DEVICE(name) \
    if (!::oxshmemi::arch::cpu::self) ::oxshmemi::arch::cpu::device_only(#name);
#define __host__
#define __device__
#ifndef __constant__
#define __constant__
#endif
// oshnvcc --target cpu preprocesses with OXSHMEMI_CPU_KEEP_QUALIFIERS, so that its rewrite
// (bindings/tools/src/cudarewrite.rs) finds the kernels and the __shared__ declarations.
#ifndef OXSHMEMI_CPU_KEEP_QUALIFIERS
#define __global__
#endif

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

// ---- device threads' local memory ---------------------------------------------------------------
//
// What a GPU keeps to itself: a thread's local memory (its stack here) and a block's shared
// memory. The runtime records each range while it lives, so that the host side (the proxy, the
// software NIC, host routines) can refuse an address in one, as a GPU's host could not reach it
// (local_memory_owner).

/// Records [lo, hi) as device-local memory described by `what` (`the stack of block (1,0,0)
/// thread (5,0,0)`), until unregister_local.
// The registry is bookkeeping, not a synchronization of the program: under ThreadSanitizer its
// lock and its accesses are ignored, so that a device thread that starts after another one ended
// does not look ordered after it through the registry's lock (a race between them stays a race).
#if defined(__SANITIZE_THREAD__)
#define OXSHMEMI_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OXSHMEMI_TSAN 1
#endif
#endif
#if defined(OXSHMEMI_TSAN)
extern "C" void AnnotateIgnoreSyncBegin(const char *file, int line);
extern "C" void AnnotateIgnoreSyncEnd(const char *file, int line);
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char *file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char *file, int line);
struct IgnoreSync {
    IgnoreSync() {
        AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    }
    ~IgnoreSync() {
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
        AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
    }
};
#else
struct IgnoreSync {
    IgnoreSync() {}  // user-provided: no unused-variable warning where it does nothing
};
#endif

struct LocalRange {
    uintptr_t lo, hi;
    char what[96];
};
struct LocalRegistry {
    std::mutex lock;
    std::vector<LocalRange> ranges;
};
inline LocalRegistry &local_registry() {
    static LocalRegistry *r = new LocalRegistry;  // never destroyed: threads may outlive main's statics
    return *r;
}
inline void register_local(uintptr_t lo, uintptr_t hi, const char *what) {
    LocalRange r;
    r.lo = lo;
    r.hi = hi;
    snprintf(r.what, sizeof r.what, "%s", what);
    LocalRegistry &reg = local_registry();
    IgnoreSync quiet;
    std::lock_guard<std::mutex> g(reg.lock);
    reg.ranges.push_back(r);
}
inline void unregister_local(uintptr_t lo) {
    LocalRegistry &reg = local_registry();
    IgnoreSync quiet;
    std::lock_guard<std::mutex> g(reg.lock);
    for (size_t i = 0; i < reg.ranges.size(); i++)
        if (reg.ranges[i].lo == lo) {
            reg.ranges[i] = reg.ranges.back();
            reg.ranges.pop_back();
            return;
        }
}
/// Whether [addr, addr + len) overlaps device-local memory; if so its description goes to `what`.
inline bool local_memory_owner(uintptr_t addr, size_t len, char *what, size_t what_len) {
    LocalRegistry &reg = local_registry();
    IgnoreSync quiet;
    std::lock_guard<std::mutex> g(reg.lock);
    uintptr_t end = addr + (len ? len : 1);
    for (auto &r : reg.ranges)
        if (addr < r.hi && end > r.lo) {
            if (what && what_len) snprintf(what, what_len, "%s", r.what);
            return true;
        }
    return false;
}

struct Grid;

/// What the threads of one block share.
struct Block {
    idx3 grid, dim, idx;
    uint32_t threads;
    Grid *launch = nullptr;  ///< the launch (null for launch_block/launch_grid of the tests)
    std::unique_ptr<Barrier[]> warps, warpgroups;
    Barrier block;
    std::unique_ptr<uint64_t[]> lanes;  ///< one exchange word per thread (shuffles)
    uint64_t bcast = 0;
    /// The block's static __shared__ variables (by the address of their tag) and dynamic
    /// shared memory, allocated when first used, freed with the block.
    std::mutex shared_lock;
    std::vector<std::pair<const void *, unsigned char *>> shared;
    unsigned char *dynamic_shared = nullptr;
    size_t dynamic_bytes = 0;
    Block(idx3 grid_, idx3 dim_, idx3 idx_) : grid(grid_), dim(dim_), idx(idx_), threads(dim_.count()) {
        uint32_t nw = (threads + WARP_SIZE - 1) / WARP_SIZE, ng = (threads + 127) / 128;
        warps.reset(new Barrier[nw]);
        warpgroups.reset(new Barrier[ng]);
        for (uint32_t w = 0; w < nw; w++) warps[w].init(threads - w * WARP_SIZE < WARP_SIZE ? threads - w * WARP_SIZE : WARP_SIZE);
        for (uint32_t g = 0; g < ng; g++) warpgroups[g].init(threads - g * 128 < 128 ? threads - g * 128 : 128);
        block.init(threads);
        lanes.reset(new uint64_t[threads]());
    }
    ~Block() {
        for (auto &s : shared) {
            unregister_local((uintptr_t)s.second);
            free(s.second);
        }
        if (dynamic_shared) {
            unregister_local((uintptr_t)dynamic_shared);
            free(dynamic_shared);
        }
    }
    Block(const Block &) = delete;
    Block &operator=(const Block &) = delete;
    /// `bytes` of shared memory for the variable tagged `tag` (the same for every thread of
    /// the block). Filled with 0xA5, as a GPU leaves shared memory undefined: a kernel that
    /// reads it before writing reads garbage here too.
    unsigned char *shared_var(const void *tag, size_t bytes) {
        std::lock_guard<std::mutex> g(shared_lock);
        for (auto &s : shared)
            if (s.first == tag) return s.second;
        unsigned char *p = alloc_shared(bytes ? bytes : 1, "a __shared__ variable");
        shared.emplace_back(tag, p);
        return p;
    }
    unsigned char *dynamic() {
        std::lock_guard<std::mutex> g(shared_lock);
        if (!dynamic_shared) dynamic_shared = alloc_shared(dynamic_bytes ? dynamic_bytes : 16, "dynamic shared memory");
        return dynamic_shared;
    }

private:
    unsigned char *alloc_shared(size_t bytes, const char *kind) {
        size_t n = (bytes + 63) / 64 * 64;
        unsigned char *p = (unsigned char *)aligned_alloc(64, n);
        if (!p) {
            fprintf(stderr, "oxshmem CPU target: out of memory for %zu bytes of shared memory\n", bytes);
            abort();
        }
        memset(p, 0xA5, n);
        char what[96];
        snprintf(what, sizeof what, "%s of block (%u,%u,%u)", kind, idx.x, idx.y, idx.z);
        register_local((uintptr_t)p, (uintptr_t)p + n, what);
        return p;
    }
};

/// One kernel launch: its shape and, for a cooperative launch, the grid-wide barrier.
struct Grid {
    idx3 grid, dim;
    size_t dynamic_bytes = 0;
    bool cooperative = false;
    Barrier all;  ///< every thread of the grid (cooperative launches: grid.sync())
};

/// The calling host thread as a device thread.
struct Thread {
    Block *block;
    idx3 idx;
    uint32_t linear;
};
inline thread_local Thread *self = nullptr;
/// Called in each device thread before its kernel body (the CPU runtime sets threadIdx & co.).
inline void (*thread_start_hook)(const Thread &) = nullptr;

inline Thread &me() {
    if (!self) {
        fprintf(stderr, "oxshmem CPU target: a device routine ran outside a kernel (no thread context)\n");
        abort();
    }
    return *self;
}

/// Bytes of each device thread's stack (its local memory).
constexpr size_t STACK_BYTES = 512 << 10;

/// Starts one host thread per thread of block `b`, running `fn` with its indices; their
/// handles go to `threads`.
struct ThreadStart {
    Block *b;
    const std::function<void()> *fn;
    idx3 idx;
};
inline void *thread_main(void *arg) {
    ThreadStart st = *(ThreadStart *)arg;
    delete (ThreadStart *)arg;
    Block &b = *st.b;
    Thread t{&b, st.idx, st.idx.x + b.dim.x * (st.idx.y + b.dim.y * st.idx.z)};
    // This thread's stack is its local memory.
    pthread_attr_t a;
    void *lo = nullptr;
    size_t n = 0;
    bool known = pthread_getattr_np(pthread_self(), &a) == 0;
    if (known) {
        known = pthread_attr_getstack(&a, &lo, &n) == 0;
        pthread_attr_destroy(&a);
    }
    if (known) {
        char what[96];
        snprintf(what, sizeof what, "the local memory (stack) of block (%u,%u,%u) thread (%u,%u,%u)", b.idx.x, b.idx.y,
                 b.idx.z, st.idx.x, st.idx.y, st.idx.z);
        register_local((uintptr_t)lo, (uintptr_t)lo + n, what);
    }
    self = &t;
    if (thread_start_hook) thread_start_hook(t);
    (*st.fn)();
    self = nullptr;
    if (known) unregister_local((uintptr_t)lo);
    return nullptr;
}
inline void start_block(Block &b, const std::function<void()> &fn, std::vector<pthread_t> &threads) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, STACK_BYTES);
    for (uint32_t z = 0; z < b.dim.z; z++)
        for (uint32_t y = 0; y < b.dim.y; y++)
            for (uint32_t x = 0; x < b.dim.x; x++) {
                pthread_t t;
                int rc = pthread_create(&t, &a, thread_main, new ThreadStart{&b, &fn, {x, y, z}});
                if (rc != 0) {
                    fprintf(stderr, "oxshmem CPU target: cannot start a device thread (%s); %zu are running\n",
                            strerror(rc), threads.size());
                    abort();
                }
                threads.push_back(t);
            }
    pthread_attr_destroy(&a);
}
/// Waits for the threads start_block started.
inline void join_all(std::vector<pthread_t> &threads) {
    for (pthread_t t : threads) pthread_join(t, nullptr);
    threads.clear();
}

/// Runs `fn` on every thread of block `idx` of a `grid` of `dim`-sized blocks, one host thread
/// each, and waits for them all.
inline void launch_block(idx3 grid, idx3 dim, idx3 idx, const std::function<void()> &fn) {
    Block b(grid, dim, idx);
    std::vector<pthread_t> threads;
    threads.reserve(b.threads);
    start_block(b, fn, threads);
    join_all(threads);
}

/// Runs the kernel body `fn` over launch `g`: every block at once when the launch is
/// cooperative (every block resident, as cudaLaunchCooperativeKernel promises), else in waves
/// of at most `resident` blocks (a GPU runs as many as fit; a kernel whose blocks wait for a
/// later block deadlocks there, and here).
inline void run_grid(Grid &g, const std::function<void()> &fn, uint32_t resident) {
    uint32_t blocks = g.grid.count();
    if (blocks == 0 || g.dim.count() == 0) return;
    if (g.cooperative) resident = blocks;
    if (resident == 0) resident = 1;
    g.all.init(blocks * g.dim.count());
    std::vector<std::unique_ptr<Block>> live;
    std::vector<pthread_t> threads;
    uint32_t next = 0;
    while (next < blocks) {
        for (; next < blocks && live.size() < resident; next++) {
            idx3 bi{next % g.grid.x, next / g.grid.x % g.grid.y, next / (g.grid.x * g.grid.y)};
            live.emplace_back(new Block(g.grid, g.dim, bi));
            live.back()->launch = &g;
            live.back()->dynamic_bytes = g.dynamic_bytes;
            start_block(*live.back(), fn, threads);
        }
        join_all(threads);
        live.clear();
    }
}

/// Runs `fn` on every thread of every block of `grid`, all at once (as a cooperative launch
/// keeps every block resident), and waits for them all.
inline void launch_grid(idx3 grid, idx3 dim, const std::function<void()> &fn) {
    Grid g;
    g.grid = grid;
    g.dim = dim;
    g.cooperative = true;
    run_grid(g, fn, grid.count());
}

/// The host library's definition of `name` (the next one after the program's): a routine that
/// is callable from host and device code is one symbol here, which forwards host calls to it.
inline void *host_symbol(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr,
                "oxshmem CPU target: %s was called from host code, but no host library after the program defines it "
                "(link the host library: -loxshmem or -lnvshmem_host)\n",
                name);
        abort();
    }
    return f;
}

/// A device-only routine called from host code: nvcc would have refused the program.
[[noreturn]] inline void device_only(const char *name) {
    fprintf(stderr,
            "oxshmem CPU target: %s is a device routine (__device__) and was called from host code: nvcc would "
            "refuse this program\n",
            name);
    abort();
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

/// An acquire load of a word (4 or 8 bytes), for a poll that needs no fence after it.
template <class W>
inline W load_acquire(const W *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
/// A store of a word that the fence_system() before it releases (a barrier's signal): a release
/// store here, since ThreadSanitizer does not model the fence (the GPUs' is relaxed).
template <class W>
inline void fenced_store(W *p, W v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
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
/// Device scope is system scope on the CPU: one memory, one coherence domain.
template <class T>
using gpu_ref = sys_ref<T>;

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
