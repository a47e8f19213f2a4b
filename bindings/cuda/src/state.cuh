// The device state, the execution scopes, errors, routing and the proxy ring.
//
// Device code reads two __device__ globals that the attach callback (host.cu) sets:
// oxshmemi_state_d, the runtime's oxshmem_device_state_t (device/include/oxshmem/
// device_state.h, generated from device/src/state.rs), and oxshmemi_cuda_d, the CUDA-side
// oxshmem_cuda_state_t below (what the Rust state does not carry yet: the team table).
//
// The protocol code is __host__ __device__ over arch::sys_ref<T> (cuda::atomic_ref<T,
// thread_scope_system> on CUDA), so that it also compiles for the host (tests).
#pragma once

// The archive defines the device API out of line: nvshmem_device.h leaves out its inline fast
// paths (device_host/oxshmem_fast_path.cuh) here.
#ifndef OXSHMEMI_BUILDING_LIBRARY
#define OXSHMEMI_BUILDING_LIBRARY 1
#endif
#include "arch/arch.cuh"

#include <string.h>

#include <type_traits>

#include <nvshmem.h>
#include <nvshmemx.h>
#include <oxshmem/device_state.h>

namespace oxshmemi {

using namespace arch;

/// The ABI version the archive registers with the host library (oxshmemi_register_device_library).
constexpr int ABI_VERSION = 5;

/// One team of the device-side team table (team id = index).
struct oxshmem_cuda_team_t {
    int32_t start;     ///< world PE of the team's PE 0 (-1: the slot is unused)
    int32_t stride;    ///< world-PE distance between consecutive team PEs
    int32_t size;      ///< number of PEs
    int32_t my_pe;     ///< this PE's index in the team, -1 when not a member
    uint64_t scratch;  ///< symmetric address (same on every member): barrier flags, then data
    uint64_t epoch;    ///< this PE's barrier epoch for the team (device-written)
};
static_assert(sizeof(oxshmem_cuda_team_t) == 32, "oxshmem_cuda_team_t is 32 bytes");
static_assert(offsetof(oxshmem_cuda_team_t, scratch) == 16, "scratch at 16");
static_assert(offsetof(oxshmem_cuda_team_t, epoch) == 24, "epoch at 24");

/// The CUDA-side state, filled by the host at attach (device memory, or host memory mapped
/// into the device).
struct oxshmem_cuda_state_t {
    uint32_t abi_version;         ///< ABI_VERSION
    uint32_t n_teams;             ///< entries of `teams`
    oxshmem_cuda_team_t *teams;   ///< the team table, indexed by nvshmem_team_t
    uint64_t scratch_bytes;       ///< bytes of each team's scratch after its barrier flags
    /// n_pes + 1 entries: where a peer's heap is mapped for atomics (a P2P peer whose GPU has
    /// native P2P atomics with this one), 0 where atomics take the proxy (device/src/cuda/node.rs)
    const uint64_t *amo_base;
};
static_assert(sizeof(oxshmem_cuda_state_t) == 32, "oxshmem_cuda_state_t is 32 bytes");
static_assert(offsetof(oxshmem_cuda_state_t, teams) == 8, "teams at 8");
static_assert(offsetof(oxshmem_cuda_state_t, scratch_bytes) == 16, "scratch_bytes at 16");
static_assert(offsetof(oxshmem_cuda_state_t, amo_base) == 24, "amo_base at 24");

// The head of the state that device_host/oxshmem_fast_path.cuh reads (oxshmemi_fast_state_t,
// below).
static_assert(offsetof(oxshmem_device_state_t, n_pes) == 4 && offsetof(oxshmem_device_state_t, heap_base) == 8 &&
                  offsetof(oxshmem_device_state_t, heap_size) == 16 && offsetof(oxshmem_device_state_t, peer_base) == 24 &&
                  offsetof(oxshmem_device_state_t, channel) == 32 && offsetof(oxshmem_device_state_t, ring) == 40 &&
                  offsetof(oxshmem_device_state_t, ibgda) == 48,
              "oxshmemi_fast_state_t (device_host/oxshmem_fast_path.cuh) mirrors oxshmem_device_state_t's head");
static_assert(OXSHMEM_CHANNEL_P2P == 1 && offsetof(oxshmem_ring_t, issue) == 0 && offsetof(oxshmem_ring_t, completed) == 8,
              "the fast paths' P2P channel byte and ring counters");

/// Bytes of barrier flags at the start of each team's scratch: one 64-byte line per round.
constexpr uint64_t FLAG_STRIDE = 64;
constexpr uint64_t TEAM_FLAG_BYTES = OXSHMEM_BARRIER_ROUNDS * FLAG_STRIDE;
/// Where in the GPU heap this PE's world barrier epoch lives (device memory, which the GPU's
/// threads fetch-add; issue 31 item 4): the line of the world flags' last round, which only a
/// job of more than 2^31 PEs would signal (node.rs WORLD_EPOCH_OFFSET).
constexpr uint64_t WORLD_EPOCH_OFFSET = (OXSHMEM_BARRIER_ROUNDS - 1) * FLAG_STRIDE;
/// Where in the GPU heap the proxy ring's ticket counter lives (device memory, which the GPU's
/// threads fetch-add; the ring header's `issue`, in pinned host memory, stays 0): the line of
/// the world flags' round 30 (node.rs RING_ISSUE_OFFSET).
constexpr uint64_t RING_ISSUE_OFFSET = (OXSHMEM_BARRIER_ROUNDS - 2) * FLAG_STRIDE;
static_assert(RING_ISSUE_OFFSET == 1920, "the fast paths' OXSHMEMI_RING_ISSUE_OFFSET (oxshmem_fast_path.cuh)");

// The proxy request kinds (device_state.h, from device/src/channel/proxy.rs `kind`).
constexpr uint16_t PROXY_PUT = OXSHMEM_PROXY_PUT, PROXY_GET = OXSHMEM_PROXY_GET, PROXY_P = OXSHMEM_PROXY_P,
                   PROXY_AMO = OXSHMEM_PROXY_AMO, PROXY_PUT_SIGNAL = OXSHMEM_PROXY_PUT_SIGNAL,
                   PROXY_SIGNAL_OP = OXSHMEM_PROXY_SIGNAL_OP;

/// 16-byte element of the 128-bit sized forms.
struct alignas(16) u128 {
    uint64_t lo, hi;
};

/// Reduction operations.
enum class Op { And, Or, Xor, Min, Max, Sum, Prod, Maxloc };

}  // namespace oxshmemi

/// The runtime's device state (set by attach; null before).
extern __device__ oxshmem_device_state_t *oxshmemi_state_d;
/// The CUDA-side state (set by attach; null before).
extern __device__ oxshmemi::oxshmem_cuda_state_t *oxshmemi_cuda_d;

// The head of the state (oxshmem_device_state_t's first 56 bytes, asserted above) with `limit`
// (heap_size - 8) in place of `channel`, then the CUDA-side state's `amo_base`, of which host.cu
// keeps a copy in constant memory (oxshmemi_fast_d). The same layout as the header's struct of
// the same name, which the archive does not include.
struct oxshmemi_fast_state_t {
    uint32_t my_pe;
    uint32_t n_pes;
    uint64_t heap_base;
    uint64_t heap_size;
    const uint64_t *peer_base;
    uint64_t limit;
    const void *ring;
    const void *ibgda;
    const uint64_t *amo_base;
};
static_assert(sizeof(oxshmemi_fast_state_t) == 64 && offsetof(oxshmemi_fast_state_t, amo_base) == 56,
              "the fast paths' head is 64 bytes");
extern __constant__ oxshmemi_fast_state_t oxshmemi_fast_d;

namespace oxshmemi {

/// A spin with the state's timeout: `ok()` until timeout_ns has passed (0: never). The first
/// SPIN_POLLS polls spin without a back-off (NVSHMEM's waits never sleep); after them each poll
/// backs off (arch pause(): a short sleep on a GPU, a yield on the CPU target).
struct Waiter {
    static constexpr uint32_t SPIN_POLLS = 16;
    uint64_t deadline = 0;
    uint32_t spins = 0;
    __host__ __device__ bool ok(const oxshmem_device_state_t *s) {
        if (++spins <= SPIN_POLLS) return true;
        pause();
        if (spins < 256 || s->timeout_ns == 0) return true;
        uint64_t t = now_ns();
        if (deadline == 0) deadline = t + s->timeout_ns;
        return t < deadline;
    }
};

// ---- execution scopes (thread_id, block_id, block_threads: arch.cuh) ---------------------------

/// One thread.
struct Thread {
    __device__ static uint32_t rank() { return 0; }
    __device__ static uint32_t size() { return 1; }
    __device__ static void sync() {}
};
/// The calling warp (all its active lanes call): arch::WARP_SIZE threads (a wavefront on HIP).
struct Warp {
    __device__ static uint32_t rank() { return thread_id() % WARP_SIZE; }
    __device__ static uint32_t size() {
        uint32_t n = block_threads(), w = thread_id() / WARP_SIZE;
        return n - w * WARP_SIZE < WARP_SIZE ? n - w * WARP_SIZE : WARP_SIZE;
    }
    __device__ static void sync() { sync_warp(); }
};
/// The calling block.
struct Block {
    __device__ static uint32_t rank() { return thread_id(); }
    __device__ static uint32_t size() { return block_threads(); }
    __device__ static void sync() { sync_block(); }
};
/// The calling warpgroup (4 consecutive warps, 128 threads).
struct Warpgroup {
    __device__ static uint32_t rank() { return thread_id() % 128; }
    __device__ static uint32_t size() { return 128; }
    __device__ static void sync() { sync_warpgroup(thread_id() / 128); }
};

// ---- state and errors -------------------------------------------------------------------------

__device__ inline oxshmem_device_state_t *st() { return oxshmemi_state_d; }
__device__ inline oxshmem_cuda_state_t *cst() { return oxshmemi_cuda_d; }

/// Records the first error into the slot (state.rs ErrorSlot::write: 0 -> 1 (writing) -> 2).
__host__ __device__ inline void record_in(oxshmem_device_state_t *s, uint32_t code, uint32_t op, int64_t pe,
                                          uint64_t addr, uint64_t len, uint64_t value, uint32_t cmp,
                                          uint32_t block, uint32_t thread) {
    if (!s) return;
    uint32_t expect = OXSHMEM_ERROR_SLOT_EMPTY;
    if (!sys_ref<uint32_t>(s->error.state).compare_exchange_strong(expect, OXSHMEM_ERROR_SLOT_WRITING, mo_acq_rel,
                                                                     mo_acquire))
        return;
    s->error.launch = 0;
    s->error.code = code;
    s->error.op = op;
    s->error.pe = pe;
    s->error.addr = addr;
    s->error.len = len;
    s->error.value = value;
    s->error.cmp = cmp;
    s->error.block = block;
    s->error.thread = thread;
    sys_ref<uint32_t>(s->error.state).store(OXSHMEM_ERROR_SLOT_SET, mo_release);
}

__device__ inline void fail(uint32_t code, uint32_t op, int64_t pe, uint64_t addr, uint64_t len) {
    record_in(st(), code, op, pe, addr, len, 0, 0, block_id(), thread_id());
}

/// The way to a peer.
enum class Via { None, P2p, Proxy, Ibgda };
struct Route {
    Via via;
    char *p2p;  ///< the peer's copy, mapped here (P2p)
};

/// Checks `pe` and the symmetric range [addr, addr+bytes) and picks the peer's channel
/// (device/src/api.rs Thread::route).
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE Route route(uint32_t op, const void *addr, uint64_t bytes, int pe) {
    oxshmem_device_state_t *s = st();
    uint64_t a = (uint64_t)addr;
    if (!s) {
        return {Via::None, nullptr};
    }
    if (pe < 0 || (uint32_t)pe >= s->n_pes) {
        fail(OXSHMEM_ERR_PE_OUT_OF_RANGE, op, pe, a, bytes);
        return {Via::None, nullptr};
    }
    if (a < s->heap_base || a + bytes > s->heap_base + s->heap_size) {
        fail(OXSHMEM_ERR_NOT_SYMMETRIC, op, pe, a, bytes);
        return {Via::None, nullptr};
    }
    uint8_t ch = s->channel[pe];
    if (ch == OXSHMEM_CHANNEL_P2P) return {Via::P2p, (char *)(s->peer_base[pe] + (a - s->heap_base))};
    if (ch == OXSHMEM_CHANNEL_IBGDA) return {Via::Ibgda, nullptr};
    return {Via::Proxy, nullptr};
}
#else
__device__ OXSHMEMI_NOINLINE Route route(uint32_t op, const void *addr, uint64_t bytes, int pe);
#endif

/// route() for an atomic (an AMO, a signal add) once `r` was routed to `pe`: a P2P peer whose GPU
/// has no native P2P atomics with this one (its amo_base entry is 0) is served by the proxy, as
/// NVSHMEM's (CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED; the host made the ring for it).
/// Loads and stores, signal sets included, stay P2P.
__device__ inline Route atomic_route(Route r, int pe) {
    if (r.via != Via::P2p) return r;
    oxshmem_cuda_state_t *c = cst();
    if (c && c->amo_base && c->amo_base[pe] == 0) return {Via::Proxy, nullptr};
    return r;
}

// ---- the proxy ring (device/src/channel/ring.rs) ---------------------------------------------

/// Submits a request: ticket = issue++, wait for room, write the body, publish seq = t+1
/// (release). Returns the ticket, or UINT64_MAX when the ring stalled past the timeout.
/// `issue` is the ticket counter (for the CUDA library a word of the GPU heap, `ring_issue()`).
__host__ __device__ inline uint64_t ring_submit(oxshmem_device_state_t *s, oxshmem_ring_t *ring, uint64_t *issue,
                                                const oxshmem_proxy_request_t &r, uint32_t op, uint32_t block,
                                                uint32_t thread) {
    uint64_t t = sys_ref<uint64_t>(*issue).fetch_add(1, mo_relaxed);
    uint64_t cap = ring->capacity;
    Waiter w;
    while (sys_ref<uint64_t>(ring->completed).load(mo_acquire) + cap <= t) {
        if (!w.ok(s)) {
            record_in(s, OXSHMEM_ERR_RING_STALLED, op, r.pe, t,
                      sys_ref<uint64_t>(ring->completed).load(mo_acquire), 0, 0, block, thread);
            return UINT64_MAX;
        }
    }
    static_assert(sizeof(oxshmem_ring_slot_t) == OXSHMEM_RING_SLOT_BYTES, "a ring slot is one line");
    oxshmem_ring_slot_t *slot = &ring->slots[t % cap];
    // The ticket before ours on this slot may still hold its result there (OXSHMEM_RING_HELD).
    while (sys_ref<uint64_t>(slot->seq).load(mo_acquire) == OXSHMEM_RING_HELD) {
        if (!w.ok(s)) {
            record_in(s, OXSHMEM_ERR_RING_STALLED, op, r.pe, t,
                      sys_ref<uint64_t>(ring->completed).load(mo_acquire), 0, 0, block, thread);
            return UINT64_MAX;
        }
    }
    slot->body = r;
    // A held request's result lands in its own slot (ring memory, which the host reaches).
    if (r.flags & OXSHMEM_PROXY_HOLD) slot->body.local = (uint64_t)(uintptr_t)&slot->body.value;
#if OXSHMEMI_DEVICE_PASS
    fence_system();
#endif
    sys_ref<uint64_t>(slot->seq).store(t + 1, mo_release);
    return t;
}

/// Waits until ticket `t` completed (completed > t); records RingStalled past the timeout
/// (once), then keeps waiting while the proxy is alive.
__host__ __device__ inline bool ring_wait(oxshmem_device_state_t *s, oxshmem_ring_t *ring, uint64_t t, uint32_t op,
                                          uint32_t block, uint32_t thread) {
    Waiter w;
    bool stalled = false;
    while (sys_ref<uint64_t>(ring->completed).load(mo_acquire) <= t) {
        if (stalled) {
            if (sys_ref<uint32_t>(s->proxy_alive).load(mo_acquire) == 0)
                return sys_ref<uint64_t>(ring->completed).load(mo_acquire) > t;
            pause();
            continue;
        }
        if (!w.ok(s)) {
            record_in(s, OXSHMEM_ERR_RING_STALLED, op, -1, t,
                      sys_ref<uint64_t>(ring->completed).load(mo_acquire), 0, 0, block, thread);
            stalled = true;
        }
    }
    return true;
}

__device__ inline oxshmem_ring_t *ring() { return st()->ring; }
/// The ring's ticket counter: a word of this PE's GPU heap (RING_ISSUE_OFFSET).
__device__ inline uint64_t *ring_issue() { return (uint64_t *)(oxshmemi_fast_d.heap_base + RING_ISSUE_OFFSET); }

/// Submits from this thread; UINT64_MAX on failure (recorded).
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE uint64_t proxy_submit(const oxshmem_proxy_request_t &r, uint32_t op) {
    if (!ring()) {
        fail(OXSHMEM_ERR_TRANSPORT, op, r.pe, r.dest, r.len);
        return UINT64_MAX;
    }
    return ring_submit(st(), ring(), ring_issue(), r, op, block_id(), thread_id());
}
#else
__device__ OXSHMEMI_NOINLINE uint64_t proxy_submit(const oxshmem_proxy_request_t &r, uint32_t op);
#endif

#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void proxy_wait(uint64_t t, uint32_t op) {
    if (t != UINT64_MAX) ring_wait(st(), ring(), t, op, block_id(), thread_id());
}
#else
__device__ OXSHMEMI_NOINLINE void proxy_wait(uint64_t t, uint32_t op);
#endif

/// Submits and waits (blocking operations).
__device__ inline void proxy_do(const oxshmem_proxy_request_t &r, uint32_t op) { proxy_wait(proxy_submit(r, op), op); }

/// Submits a request that returns a value (a get of at most 8 bytes, a fetching AMO) with
/// OXSHMEM_PROXY_HOLD: the proxy writes the value into the request's own ring slot, in memory
/// the host reaches (a GPU thread's local memory it cannot), and holds the slot until this
/// thread has read it. The value (0 when the request failed, which is recorded).
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE uint64_t proxy_fetch(oxshmem_proxy_request_t r, uint32_t op) {
    r.flags |= OXSHMEM_PROXY_HOLD;
    r.local = 0;
    uint64_t t = proxy_submit(r, op);
    if (t == UINT64_MAX) return 0;
    oxshmem_ring_t *rg = ring();
    oxshmem_ring_slot_t *slot = &rg->slots[t % rg->capacity];
    if (!ring_wait(st(), rg, t, op, block_id(), thread_id())) return 0;
    fence_system();
    uint64_t v = volatile_load(&slot->body.value);
    sys_ref<uint64_t>(slot->seq).store(0, mo_release);  // releases the slot
    return v;
}
#else
__device__ OXSHMEMI_NOINLINE uint64_t proxy_fetch(oxshmem_proxy_request_t r, uint32_t op);
#endif

__device__ inline oxshmem_proxy_request_t req(uint16_t kind, uint16_t flags, int pe, uint64_t len, const void *dest,
                                              const void *local) {
    oxshmem_proxy_request_t r = {};
    r.kind = kind;
    r.flags = flags;
    r.pe = (uint32_t)pe;
    r.len = len;
    r.dest = (uint64_t)dest;
    r.local = (uint64_t)local;
    return r;
}

/// The bits of a value of up to 8 bytes.
template <class T>
__device__ inline uint64_t bits(const T &v) {
    static_assert(sizeof(T) <= 8, "bits: at most 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
__device__ inline T from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}

/// Volatile load/store (arch volatile_load/_store) of a value of any type (half and bfloat16 have no volatile copy; 16-byte
/// types move as two 8-byte words).
template <class T>
__device__ inline T vload(const T *p) {
    if constexpr (sizeof(T) == 1) return from_bits<T>(volatile_load((const uint8_t *)p));
    else if constexpr (sizeof(T) == 2) return from_bits<T>(volatile_load((const uint16_t *)p));
    else if constexpr (sizeof(T) == 4) return from_bits<T>(volatile_load((const uint32_t *)p));
    else if constexpr (sizeof(T) == 8) return from_bits<T>(volatile_load((const uint64_t *)p));
    else {
        static_assert(sizeof(T) % 8 == 0, "vload: 1, 2, 4 or a multiple of 8 bytes");
        uint64_t w[sizeof(T) / 8];
        for (size_t i = 0; i < sizeof(T) / 8; i++) w[i] = volatile_load((const uint64_t *)p + i);
        T v;
        memcpy(&v, w, sizeof(T));
        return v;
    }
}
template <class T>
__device__ inline void vstore(T *p, const T &v) {
    if constexpr (sizeof(T) == 1) volatile_store((uint8_t *)p, (uint8_t)bits(v));
    else if constexpr (sizeof(T) == 2) volatile_store((uint16_t *)p, (uint16_t)bits(v));
    else if constexpr (sizeof(T) == 4) volatile_store((uint32_t *)p, (uint32_t)bits(v));
    else if constexpr (sizeof(T) == 8) volatile_store((uint64_t *)p, bits(v));
    else {
        static_assert(sizeof(T) % 8 == 0, "vstore: 1, 2, 4 or a multiple of 8 bytes");
        uint64_t w[sizeof(T) / 8];
        memcpy(w, &v, sizeof(T));
        for (size_t i = 0; i < sizeof(T) / 8; i++) volatile_store((uint64_t *)p + i, w[i]);
    }
}

}  // namespace oxshmemi
