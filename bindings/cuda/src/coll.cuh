// Collectives over a team: broadcast, fcollect, alltoall, reduce (and, or, xor, min, max, sum,
// prod; maxloc on double2) and reducescatter. Simple and correct first: thread 0 of the scope
// does the work with thread-scope puts, between team barriers; reductions go through the team's
// symmetric scratch (every member puts its contribution into every member's scratch, then each
// folds locally), in chunks of what the scratch holds.
#pragma once

#include "sync.cuh"

namespace oxshmemi {

template <Op O, class T>
__device__ inline T combine(const T &a, const T &b) {
    if constexpr (O == Op::And) return a & b;
    else if constexpr (O == Op::Or) return a | b;
    else if constexpr (O == Op::Xor) return a ^ b;
    else if constexpr (O == Op::Min) return b < a ? b : a;
    else if constexpr (O == Op::Max) return a < b ? b : a;
    else if constexpr (O == Op::Sum) return a + b;
    else if constexpr (O == Op::Prod) return a * b;
    else {
        // maxloc on double2: the larger value (x), the smaller index (y) on ties
        if (b.x > a.x || (b.x == a.x && b.y < a.y)) return b;
        return a;
    }
}

/// Runs `f` (returning 0 or an error) on rank 0 of the scope between syncs; every thread
/// returns its code.
template <class V, class F>
__device__ inline int leader(F f) {
    V::sync();
    int r = 0;
    if (V::rank() == 0) r = f();
    V::sync();
    return share_rc<V>(r);
}

__device__ inline int coll_barrier(const Team &t) {
    quiet_impl();
    return dissemination(OXSHMEM_OP_BARRIER, t);
}

#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE int bcast_bytes(nvshmem_team_t team, char *dest, const char *src, size_t n, int root) {
    Team t;
    if (!team_of(team, &t)) return -1;
    if (root < 0 || root >= t.size) {
        fail(OXSHMEM_ERR_PE_OUT_OF_RANGE, OXSHMEM_OP_PUT, root, (uint64_t)dest, n);
        return -1;
    }
    if (coll_barrier(t)) return -1;
    if (t.me == root)
        for (int i = 0; i < t.size; i++) put_impl<Thread>(OXSHMEM_OP_PUT, dest, src, 1, 1, n, t.pe(i), true);
    return coll_barrier(t);
}
#else
__device__ OXSHMEMI_NOINLINE int bcast_bytes(nvshmem_team_t team, char *dest, const char *src, size_t n, int root);
#endif

#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE int fcollect_bytes(nvshmem_team_t team, char *dest, const char *src, size_t n) {
    Team t;
    if (!team_of(team, &t)) return -1;
    if (coll_barrier(t)) return -1;
    for (int i = 0; i < t.size; i++)
        put_impl<Thread>(OXSHMEM_OP_PUT, dest + (size_t)t.me * n, src, 1, 1, n, t.pe((t.me + i) % t.size), true);
    return coll_barrier(t);
}
#else
__device__ OXSHMEMI_NOINLINE int fcollect_bytes(nvshmem_team_t team, char *dest, const char *src, size_t n);
#endif

#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE int alltoall_bytes(nvshmem_team_t team, char *dest, const char *src, size_t n) {
    Team t;
    if (!team_of(team, &t)) return -1;
    if (coll_barrier(t)) return -1;
    for (int i = 0; i < t.size; i++) {
        int j = (t.me + i) % t.size;
        put_impl<Thread>(OXSHMEM_OP_PUT, dest + (size_t)t.me * n, src + (size_t)j * n, 1, 1, n, t.pe(j), true);
    }
    return coll_barrier(t);
}
#else
__device__ OXSHMEMI_NOINLINE int alltoall_bytes(nvshmem_team_t team, char *dest, const char *src, size_t n);
#endif

/// reduce (scatter = false: dest[k] = op_i src_i[k], k < n) and reducescatter (scatter = true:
/// dest[k] = op_i src_i[me*n + k]).
template <Op O, class T>
__device__ OXSHMEMI_NOINLINE int reduce_impl(nvshmem_team_t team, T *dest, const T *src, size_t n, bool scatter) {
    Team t;
    if (!team_of(team, &t)) return -1;
    uint64_t per = t.scratch_bytes / ((uint64_t)t.size * sizeof(T));
    if (t.scratch == 0 || per == 0) {
        // no scratch for this team: nothing the device can do on its own
        fail(OXSHMEM_ERR_OUT_OF_BOUNDS, OXSHMEM_OP_KERNEL, -1, t.scratch, n * sizeof(T));
        return -1;
    }
    T *scratch = (T *)t.scratch;
    for (size_t off = 0; off < n; off += per) {
        size_t c = n - off < per ? n - off : per;
        if (coll_barrier(t)) return -1;  // every member is done with the scratch
        for (int i = 0; i < t.size; i++) {
            int j = (t.me + i) % t.size;
            const T *from = src + (scatter ? (size_t)j * n : 0) + off;
            put_impl<Thread>(OXSHMEM_OP_PUT, scratch + (size_t)t.me * c, from, 1, 1, c, t.pe(j), true);
        }
        if (coll_barrier(t)) return -1;  // every contribution arrived
        for (size_t k = 0; k < c; k++) {
            T acc = vload(&scratch[k]);
            for (int i = 1; i < t.size; i++) acc = combine<O>(acc, vload(&scratch[(size_t)i * c + k]));
            dest[off + k] = acc;
        }
    }
    return 0;
}

namespace api {

template <class V, class T> __device__ int broadcast(nvshmem_team_t team, T *dest, const T *src, size_t nelem, int PE_root) {
    return leader<V>([&] { return bcast_bytes(team, (char *)dest, (const char *)src, nelem * sizeof(T), PE_root); });
}
template <class V, class T> __device__ int fcollect(nvshmem_team_t team, T *dest, const T *src, size_t nelem) {
    return leader<V>([&] { return fcollect_bytes(team, (char *)dest, (const char *)src, nelem * sizeof(T)); });
}
template <class V, class T> __device__ int alltoall(nvshmem_team_t team, T *dest, const T *src, size_t nelem) {
    return leader<V>([&] { return alltoall_bytes(team, (char *)dest, (const char *)src, nelem * sizeof(T)); });
}
template <class V, class T, Op O> __device__ int reduce(nvshmem_team_t team, T *dest, const T *src, size_t nreduce) {
    return leader<V>([&] { return reduce_impl<O>(team, dest, src, nreduce, false); });
}
template <class V, class T, Op O> __device__ int reducescatter(nvshmem_team_t team, T *dest, const T *src, size_t nreduce) {
    return leader<V>([&] { return reduce_impl<O>(team, dest, src, nreduce, true); });
}

}  // namespace api
}  // namespace oxshmemi
