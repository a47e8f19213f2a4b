// Ordering (fence, quiet), teams (the CUDA-side team table), and barriers: a dissemination
// barrier over symmetric flags as device/src/api.rs sync_all does, on the state's barrier_flags
// for the world team and on each team's scratch flags for the others.
#pragma once

#include "wait.cuh"

namespace oxshmemi {

__device__ OXSHMEMI_NOINLINE void quiet_impl();

/// fence: P2P stores are ordered by the system fence and the proxy executes in ring order; an
/// IBGDA queue is completed (stronger than NVSHMEM's fenced next WQE, which needs per-thread state).
/// Over P2P with a ring (the atomics of peers without native P2P atomics), what the proxy still
/// holds is completed, so that a later P2P store does not pass an earlier proxied atomic.
__device__ inline void fence_impl() {
    fence_system();
    oxshmem_device_state_t *s = st();
    if (s && s->ibgda) ib_quiet(OXSHMEM_OP_QUIET);
    if (s && s->ring && s->channel[s->my_pe] == OXSHMEM_CHANNEL_P2P) quiet_impl();
}

/// Every operation issued so far is complete: a system fence, this thread's IBGDA queues
/// quiet, then the proxy ring drained up to its current issue counter (every thread's).
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void quiet_impl() {
    fence_system();
    oxshmem_device_state_t *s = st();
    if (s && s->ibgda) ib_quiet(OXSHMEM_OP_QUIET);
    if (!s || !s->ring) return;
    oxshmem_ring_t *r = ring();
    uint64_t issued = sys_ref<uint64_t>(*ring_issue()).load(mo_acquire);
    if (issued > 0) ring_wait(s, r, issued - 1, OXSHMEM_OP_QUIET, block_id(), thread_id());
    fence_system();
}
#else
__device__ OXSHMEMI_NOINLINE void quiet_impl();
#endif

/// A team as the device sees it.
struct Team {
    int start, stride, size, me;
    uint64_t flags;     ///< symmetric address of the barrier flags
    uint64_t *epoch;    ///< this PE's epoch counter
    uint64_t scratch;   ///< symmetric data scratch (0: none)
    uint64_t scratch_bytes;
    __device__ int pe(int i) const { return start + i * stride; }
};

/// Looks `team` up; false (recorded) for an unknown team or one this PE is not in.
__device__ inline bool team_of(nvshmem_team_t team, Team *out, bool need_member = true) {
    oxshmem_device_state_t *s = st();
    if (!s) return false;
    oxshmem_cuda_state_t *c = cst();
    if (c && team >= 0 && (uint32_t)team < c->n_teams && c->teams[team].start >= 0) {
        oxshmem_cuda_team_t &t = c->teams[team];
        *out = {t.start, t.stride, t.size, t.my_pe, t.scratch, &t.epoch,
                t.scratch ? t.scratch + TEAM_FLAG_BYTES : 0, c->scratch_bytes};
        if (team == NVSHMEM_TEAM_WORLD) {
            out->flags = s->barrier_flags;
            out->epoch = (uint64_t *)(s->heap_base + WORLD_EPOCH_OFFSET);  // world_sync's
        }
    } else if (team == NVSHMEM_TEAM_WORLD) {
        *out = {0, 1, (int)s->n_pes, (int)s->my_pe, s->barrier_flags, (uint64_t *)(s->heap_base + WORLD_EPOCH_OFFSET),
                0, 0};
    } else {
        if (need_member) fail(OXSHMEM_ERR_PE_OUT_OF_RANGE, OXSHMEM_OP_BARRIER, -1, (uint64_t)(int64_t)team, 0);
        return false;
    }
    if (need_member && out->me < 0) {
        fail(OXSHMEM_ERR_PE_OUT_OF_RANGE, OXSHMEM_OP_BARRIER, -1, (uint64_t)(int64_t)team, 0);
        return false;
    }
    return true;
}

/// The dissemination barrier (api.rs sync_all_as): round k sets the flag of the PE 2^k to the
/// right to the new epoch and waits for its own flag of round k to reach it. 0, or -1 when a
/// round timed out (recorded).
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE int dissemination(uint32_t op, const Team &t) {
    int n = t.size, me = t.me;
    uint64_t epoch = sys_ref<uint64_t>(*t.epoch).fetch_add(1, mo_relaxed) + 1;
    int round = 0;
    for (int dist = 1; dist < n; dist <<= 1, round++) {
        uint64_t *f = (uint64_t *)(t.flags + (uint64_t)round * FLAG_STRIDE);
        signal_op_impl(f, epoch, NVSHMEM_SIGNAL_SET, t.pe((me + dist) % n));
        bool ok = true;
        wait_word(op, t.pe((me + n - dist) % n), f, NVSHMEM_CMP_GE, epoch, &ok);
        if (!ok) return -1;
    }
    return 0;
}
#else
__device__ OXSHMEMI_NOINLINE int dissemination(uint32_t op, const Team &t);
#endif

/// Gives every thread of the scope rank 0's return code.
template <class V>
__device__ inline int share_rc(int r) {
    if constexpr (std::is_same<V, Warp>::value) {
        return shfl(activemask(), r, 0);
    } else if constexpr (std::is_same<V, Block>::value) {
        return bcast_block(r);
    } else {
        return r;  // Thread; Warpgroup: rank 0's code (the others see 0)
    }
}

}  // namespace oxshmemi

// The cold parts of the world barrier's fast path (world_sync, below): out of line and named
// oxshmemi_cold_*, as the inline fast paths' (tests/tests/cuda_sass.rs does not count them).
extern "C" {
/// quiet_impl: IBGDA queues to complete, work on the proxy ring, one PE, or no state attached.
__device__ OXSHMEMI_NOINLINE void oxshmemi_cold_barrier_quiet(void);
/// A round's signal to a PE reached over the proxy or IBGDA (signal_op_impl routes it).
__device__ OXSHMEMI_NOINLINE void oxshmemi_cold_barrier_signal(uint64_t *flag, uint64_t epoch, int pe);
/// A round's wait timed out: records WaitTimeout (the flag, the value last seen, the epoch).
__device__ OXSHMEMI_NOINLINE void oxshmemi_cold_barrier_timeout(uint32_t op, int from, uint64_t *flag, uint64_t seen,
                                                                uint64_t epoch);
}

#ifdef OXSHMEMI_CORE_IMPL
extern "C" {
__device__ OXSHMEMI_NOINLINE void oxshmemi_cold_barrier_quiet(void) { oxshmemi::quiet_impl(); }
__device__ OXSHMEMI_NOINLINE void oxshmemi_cold_barrier_signal(uint64_t *flag, uint64_t epoch, int pe) {
    oxshmemi::signal_op_impl(flag, epoch, NVSHMEM_SIGNAL_SET, pe);
}
__device__ OXSHMEMI_NOINLINE void oxshmemi_cold_barrier_timeout(uint32_t op, int from, uint64_t *flag, uint64_t seen,
                                                                uint64_t epoch) {
    using namespace oxshmemi;
    record_in(st(), OXSHMEM_ERR_WAIT_TIMEOUT, op, from, (uint64_t)flag, seen, epoch,
              pack_cmp<uint64_t>(NVSHMEM_CMP_GE), block_id(), thread_id());
}
}
#endif

namespace oxshmemi {

/// barrier_all (quiet) and sync_all of the world team, by one thread: the dissemination barrier
/// of dissemination() (and api.rs sync_all_as) on the state's barrier flags and epoch, with the
/// P2P case inline. Its code holds one system fence, at the head of each round: in round 0 it
/// completes quiet's P2P stores, and in each round it is the release of the signal, cumulative
/// over what the previous round's acquire saw. A signal to a P2P peer is then a plain relaxed
/// store into its mapped heap, and a wait polls, then acquires with one load (no fence). The
/// rest goes out of line (oxshmemi_cold_barrier_*): a quiet with IBGDA queues or proxy work to
/// complete (or with one PE, which has no round to fence), a peer reached over the proxy or
/// IBGDA, a timeout to record, no state attached.
__device__ inline void world_sync(uint32_t op, bool quiet) {
    // Everything from the constant copy of the state's head (no load from pinned host memory):
    // n_pes is 0 before attach; the world flags start the heap, its epoch word is in the heap;
    // a peer is P2P exactly when its base in the (GPU-memory) peer table is not 0.
    const oxshmemi_fast_state_t &fs = oxshmemi_fast_d;
    uint32_t n = fs.n_pes, me = fs.my_pe;
    if (n == 0) {
        if (quiet) oxshmemi_cold_barrier_quiet();  // what quiet does before attach: a fence
        return;
    }
    const oxshmem_ring_t *r = (const oxshmem_ring_t *)fs.ring;
    // the ring's counters only grow: completed >= issue means nothing is outstanding
    if (quiet && (n < 2 || fs.ibgda ||
                  (r && volatile_load(&r->completed) < volatile_load(ring_issue()))))
        oxshmemi_cold_barrier_quiet();
    uint64_t epoch = sys_ref<uint64_t>(*(uint64_t *)(fs.heap_base + WORLD_EPOCH_OFFSET)).fetch_add(1, mo_relaxed) + 1;
    uint64_t *f = (uint64_t *)fs.heap_base;  // the state's barrier_flags
    for (uint32_t dist = 1; dist < n; dist <<= 1, f += FLAG_STRIDE / sizeof(uint64_t)) {
        fence_system();
        uint32_t to = me + dist >= n ? me + dist - n : me + dist;
        uint64_t base = fs.peer_base[to];
        if (base)
            fenced_store((uint64_t *)(base + ((uint64_t)f - fs.heap_base)), epoch);
        else
            oxshmemi_cold_barrier_signal(f, epoch, (int)to);
        Waiter w;
        for (uint64_t v; (v = volatile_load(f)) < epoch;) {
            if (!w.ok(st())) {
                uint32_t from = me >= dist ? me - dist : me + n - dist;
                oxshmemi_cold_barrier_timeout(op, (int)from, f, v, epoch);
                return;
            }
        }
        // the acquire of what the signal released, once (an acquire poll would invalidate the
        // L1 at every look)
        (void)load_acquire(f);
    }
}

#ifdef OXSHMEMI_CORE_IMPL
template <class V>
__device__ OXSHMEMI_NOINLINE int team_barrier(uint32_t op, nvshmem_team_t team, bool quiet) {
    V::sync();
    int r = 0;
    if (V::rank() == 0) {
        Team t;
        if (quiet) quiet_impl();
        r = team_of(team, &t) ? dissemination(op, t) : -1;
    }
    V::sync();
    return share_rc<V>(r);
}
#else
template <class V>
__device__ OXSHMEMI_NOINLINE int team_barrier(uint32_t op, nvshmem_team_t team, bool quiet);
#endif

namespace api {

template <class V> __device__ void fence() { fence_impl(); }
template <class V> __device__ void quiet() {
    V::sync();
    if (V::rank() == 0) quiet_impl();
    V::sync();
}
/// nvshmemx_flush[_warp|_block] (NVSHMEM 3.8): the source buffers of this PE's earlier
/// operations may be reused. Here it is quiet of the same scope: every earlier operation is
/// complete (P2P stores done, IBGDA queues and the proxy ring drained), which implies it.
template <class V> __device__ void flush() { quiet<V>(); }
template <class V> __device__ void qp_fence(int, nvshmemx_qp_handle_t *, int) { fence<V>(); }
template <class V> __device__ void qp_quiet(int, nvshmemx_qp_handle_t *, int) { quiet<V>(); }
/// barrier_all and sync_all of the scope: rank 0 runs the world barrier (world_sync) between
/// the scope's syncs (nothing to share: they return nothing).
template <class V> __device__ void barrier_all() {
    V::sync();
    if (V::rank() == 0) world_sync(OXSHMEM_OP_BARRIER, true);
    V::sync();
}
template <class V> __device__ void sync_all() {
    V::sync();
    if (V::rank() == 0) world_sync(OXSHMEM_OP_SYNC_ALL, false);
    V::sync();
}
template <class V> __device__ int barrier(nvshmem_team_t team) { return team_barrier<V>(OXSHMEM_OP_BARRIER, team, true); }
template <class V> __device__ int team_sync(nvshmem_team_t team) { return team_barrier<V>(OXSHMEM_OP_SYNC_ALL, team, false); }
template <class V> __device__ void barrier_warpgroup() { team_barrier<Warpgroup>(OXSHMEM_OP_BARRIER, NVSHMEM_TEAM_WORLD, true); }

template <class V> __device__ int my_pe() { return st() ? (int)st()->my_pe : -1; }
template <class V> __device__ int n_pes() { return st() ? (int)st()->n_pes : -1; }
template <class V> __device__ int team_my_pe(nvshmem_team_t team) {
    Team t;
    return team_of(team, &t, false) ? t.me : -1;
}
template <class V> __device__ int team_n_pes(nvshmem_team_t team) {
    Team t;
    return team_of(team, &t, false) ? t.size : -1;
}
template <class V> __device__ int team_translate_pe(nvshmem_team_t src_team, int src_pe, nvshmem_team_t dest_team) {
    Team a, b;
    if (!team_of(src_team, &a, false) || !team_of(dest_team, &b, false) || src_pe < 0 || src_pe >= a.size) return -1;
    int w = a.pe(src_pe) - b.start;
    if (b.stride == 0 || w < 0 || w % b.stride != 0 || w / b.stride >= b.size) return -1;
    return w / b.stride;
}

}  // namespace api
}  // namespace oxshmemi
