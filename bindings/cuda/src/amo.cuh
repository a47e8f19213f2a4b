// Atomic memory operations: P2P through arch::sys_ref (system scope, relaxed, as NVSHMEM's AMOs),
// proxy as one AMO request (flags: OXSHMEM_AMO_* | OXSHMEM_AMO_W64 for 64-bit words). A P2P peer
// whose GPU has no native P2P atomics with this one takes the proxy (atomic_route, state.cuh).
#pragma once

#include "ibgda.cuh"
#include "state.cuh"

namespace oxshmemi {

/// The AMO kinds of a proxy request's flags (device_state.h OXSHMEM_AMO_*).
enum class Amo : uint16_t {
    Fetch = OXSHMEM_AMO_FETCH,
    Set = OXSHMEM_AMO_SET,
    Swap = OXSHMEM_AMO_SWAP,
    CompareSwap = OXSHMEM_AMO_COMPARE_SWAP,
    FetchAdd = OXSHMEM_AMO_FETCH_ADD,
    FetchAnd = OXSHMEM_AMO_FETCH_AND,
    FetchOr = OXSHMEM_AMO_FETCH_OR,
    FetchXor = OXSHMEM_AMO_FETCH_XOR
};

/// One AMO on a 32- or 64-bit word. Every AMO is a bitwise operation on the unsigned word of its
/// width (add is two's complement; float/double have only fetch, set and swap).
template <class U>
__device__ inline U p2p_amo(U *p, Amo k, U value, U cond) {
    sys_ref<U> a(*p);
    constexpr auto R = mo_relaxed;
    switch (k) {
        case Amo::Fetch: return a.load(R);
        case Amo::Set: a.store(value, R); return 0;
        case Amo::Swap: return a.exchange(value, R);
        case Amo::CompareSwap: {
            U c = cond;
            a.compare_exchange_strong(c, value, R, R);
            return c;
        }
        case Amo::FetchAdd: return a.fetch_add(value, R);
        case Amo::FetchAnd: return a.fetch_and(value, R);
        case Amo::FetchOr: return a.fetch_or(value, R);
        case Amo::FetchXor: return a.fetch_xor(value, R);
    }
    return 0;
}

/// One AMO on `pe`'s `dest` (`es` = 4 or 8 bytes) on bits; returns the old bits when `fetch`.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE uint64_t amo_bits(void *dest, Amo k, uint64_t value, uint64_t cond, size_t es, int pe,
                                                 bool fetch) {
    if ((uint64_t)dest % es != 0) {
        fail(OXSHMEM_ERR_MISALIGNED, OXSHMEM_OP_AMO, pe, (uint64_t)dest, es);
        return 0;
    }
    Route r = atomic_route(route(OXSHMEM_OP_AMO, dest, es, pe), pe);
    if (r.via == Via::P2p) {
        if (es == 8) return p2p_amo((uint64_t *)r.p2p, k, value, cond);
        return p2p_amo((uint32_t *)r.p2p, k, (uint32_t)value, (uint32_t)cond);
    }
    if (r.via == Via::Ibgda) {
        mlx5::Amo a = k == Amo::Fetch ? mlx5::Amo::Fetch
                    : k == Amo::Set || k == Amo::Swap ? mlx5::Amo::Set
                    : k == Amo::CompareSwap ? mlx5::Amo::CompareSwap
                    : k == Amo::FetchAdd ? mlx5::Amo::Add
                    : k == Amo::FetchAnd ? mlx5::Amo::And
                    : k == Amo::FetchOr ? mlx5::Amo::Or
                    : mlx5::Amo::Xor;
        return ib_amo(OXSHMEM_OP_AMO, pe, (uint64_t)dest, (uint32_t)es, a, value, cond, fetch);
    }
    if (r.via == Via::None) return 0;
    // Through the proxy a fetched value lands in the request's ring slot (proxy_fetch).
    oxshmem_proxy_request_t q =
        req(PROXY_AMO, (uint16_t)((uint16_t)k | (es == 8 ? OXSHMEM_AMO_W64 : 0)), pe, es, dest, nullptr);
    q.value = value;
    q.cond = cond;
    if (fetch) return proxy_fetch(q, OXSHMEM_OP_AMO);
    proxy_submit(q, OXSHMEM_OP_AMO);
    return 0;
}
#else
__device__ OXSHMEMI_NOINLINE uint64_t amo_bits(void *dest, Amo k, uint64_t value, uint64_t cond, size_t es, int pe,
                                                 bool fetch);
#endif

/// A floating-point add through the proxy (a proxy peer, or a P2P peer without native P2P
/// atomics): a compare-and-swap loop of proxy AMOs on the word holding the value (the 4-byte
/// word around a half), each CAS atomic at the peer. The old bits.
#ifdef OXSHMEMI_CORE_IMPL
template <class T>
__device__ inline uint64_t fadd_of(uint64_t a, uint64_t b) {
    return bits((T)(from_bits<T>(a) + from_bits<T>(b)));
}
__device__ inline uint64_t proxy_fadd(void *dest, uint64_t value, size_t es, int pe) {
    size_t ws = es == 8 ? 8 : 4;
    char *word = (char *)((uint64_t)dest & ~(uint64_t)(ws - 1));
    uint32_t shift = (uint32_t)((char *)dest - word) * 8;  // a half's place in its word (little-endian)
    uint64_t mask = es == 8 ? ~(uint64_t)0 : es == 4 ? 0xffffffffull : 0xffffull << shift;
    uint16_t w64 = ws == 8 ? OXSHMEM_AMO_W64 : 0;
    oxshmem_proxy_request_t q = req(PROXY_AMO, (uint16_t)((uint16_t)Amo::Fetch | w64), pe, ws, word, nullptr);
    uint64_t old = proxy_fetch(q, OXSHMEM_OP_AMO);
    for (;;) {
        uint64_t mine = (old & mask) >> shift;
        uint64_t sum = es == 8 ? fadd_of<double>(mine, value)
                     : es == 4 ? fadd_of<float>(mine, value) & 0xffffffffull
                               : fadd_of<half>(mine, value) & 0xffff;
        q = req(PROXY_AMO, (uint16_t)((uint16_t)Amo::CompareSwap | w64), pe, ws, word, nullptr);
        q.value = (old & ~mask) | sum << shift;
        q.cond = old;
        uint64_t seen = proxy_fetch(q, OXSHMEM_OP_AMO);
        if (seen == old) return mine;
        // a failed request (the proxy recorded it in the host's slot; it returns 0) ends the
        // loop rather than spinning on it
        if (sys_ref<uint32_t>(st()->host_error.state).load(mo_acquire) != OXSHMEM_ERROR_SLOT_EMPTY) return 0;
        old = seen;
    }
}
#endif

/// A floating-point add (nvshmemx_{half,float,double}_atomic_{add,fetch_add}) on `pe`'s `dest`
/// (`es` = 2, 4 or 8 bytes: half, float, double); the old bits. Over P2P a hardware float add on
/// the peer's mapped copy (arch fadd_system: atomicAdd_system on CUDA); through the proxy (its
/// channel, or a P2P peer without native P2P atomics) a compare-and-swap loop of its integer
/// AMOs (proxy_fadd). The IBGDA channel carries the NIC's integer AMOs only, so there the
/// operation is not performed: it records OXSHMEM_ERR_TRANSPORT (op AMO, len = es) and returns 0.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE uint64_t fadd_bits(void *dest, uint64_t value, size_t es, int pe) {
    if ((uint64_t)dest % es != 0) {
        fail(OXSHMEM_ERR_MISALIGNED, OXSHMEM_OP_AMO, pe, (uint64_t)dest, es);
        return 0;
    }
    Route r = atomic_route(route(OXSHMEM_OP_AMO, dest, es, pe), pe);
    if (r.via == Via::None) return 0;
    if (r.via == Via::Proxy) return proxy_fadd(dest, value, es, pe);
    if (r.via != Via::P2p) {
        fail(OXSHMEM_ERR_TRANSPORT, OXSHMEM_OP_AMO, pe, (uint64_t)dest, es);
        return 0;
    }
    if (es == 8) return bits(fadd_system((double *)r.p2p, from_bits<double>(value)));
    if (es == 4) return bits(fadd_system((float *)r.p2p, from_bits<float>(value)));
    return bits(fadd_system((half *)r.p2p, from_bits<half>(value)));
}
#else
__device__ OXSHMEMI_NOINLINE uint64_t fadd_bits(void *dest, uint64_t value, size_t es, int pe);
#endif

/// half, float and double: added as floating point (fadd_bits), not as their bits.
template <class T>
constexpr bool is_float_amo = std::is_same<T, float>::value || std::is_same<T, double>::value ||
                              std::is_same<T, half>::value;

template <class T>
__device__ inline T amo(T *dest, Amo k, T value, T cond, int pe, bool fetch) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "AMOs are 32 or 64 bits");
    return from_bits<T>(amo_bits(dest, k, bits(value), bits(cond), sizeof(T), pe, fetch));
}

namespace api {

template <class V, class T> __device__ T atomic_fetch(const T *dest, int pe) { return amo((T *)dest, Amo::Fetch, T{}, T{}, pe, true); }
template <class V, class T> __device__ void atomic_set(T *dest, T value, int pe) { amo(dest, Amo::Set, value, T{}, pe, false); }
template <class V, class T> __device__ T atomic_swap(T *dest, T value, int pe) { return amo(dest, Amo::Swap, value, T{}, pe, true); }
template <class V, class T> __device__ T atomic_compare_swap(T *dest, T cond, T value, int pe) { return amo(dest, Amo::CompareSwap, value, cond, pe, true); }
template <class V, class T> __device__ T atomic_fetch_add(T *dest, T value, int pe) {
    if constexpr (is_float_amo<T>) return from_bits<T>(fadd_bits(dest, bits(value), sizeof(T), pe));
    else return amo(dest, Amo::FetchAdd, value, T{}, pe, true);
}
template <class V, class T> __device__ void atomic_add(T *dest, T value, int pe) {
    if constexpr (is_float_amo<T>) fadd_bits(dest, bits(value), sizeof(T), pe);
    else amo(dest, Amo::FetchAdd, value, T{}, pe, false);
}
template <class V, class T> __device__ T atomic_fetch_inc(T *dest, int pe) { return amo(dest, Amo::FetchAdd, (T)1, T{}, pe, true); }
template <class V, class T> __device__ void atomic_inc(T *dest, int pe) { amo(dest, Amo::FetchAdd, (T)1, T{}, pe, false); }
template <class V, class T> __device__ T atomic_fetch_and(T *dest, T value, int pe) { return amo(dest, Amo::FetchAnd, value, T{}, pe, true); }
template <class V, class T> __device__ void atomic_and(T *dest, T value, int pe) { amo(dest, Amo::FetchAnd, value, T{}, pe, false); }
template <class V, class T> __device__ T atomic_fetch_or(T *dest, T value, int pe) { return amo(dest, Amo::FetchOr, value, T{}, pe, true); }
template <class V, class T> __device__ void atomic_or(T *dest, T value, int pe) { amo(dest, Amo::FetchOr, value, T{}, pe, false); }
template <class V, class T> __device__ T atomic_fetch_xor(T *dest, T value, int pe) { return amo(dest, Amo::FetchXor, value, T{}, pe, true); }
template <class V, class T> __device__ void atomic_xor(T *dest, T value, int pe) { amo(dest, Amo::FetchXor, value, T{}, pe, false); }

}  // namespace api
}  // namespace oxshmemi
