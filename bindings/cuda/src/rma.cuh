// RMA: put/get (blocking, nbi, strided), p/g, put_signal; thread, warp and block scopes.
//
// All threads of the scope call with the same arguments. P2P: the threads stride over the
// elements with plain stores/loads into the peer's mapped heap. Proxy: thread 0 of the scope
// submits one request (blocking forms wait for its ticket). Every path of put, get and
// put_signal (blocking or not) syncs the scope on entry and on exit, as NVSHMEM's warp and
// block forms do: on entry so that what the group's threads wrote to the source (or still read
// from the destination) just before the call is complete, whichever thread copies it.
#pragma once

#include "ibgda.cuh"
#include "state.cuh"

namespace oxshmemi {

/// The signal update of put_signal/signal_op on a P2P peer: after the data (release).
__device__ inline void p2p_signal(uint64_t *remote, uint64_t value, int sig_op) {
    sys_ref<uint64_t> s(*remote);
    if (sig_op == NVSHMEM_SIGNAL_ADD)
        s.fetch_add(value, mo_release);
    else
        s.store(value, mo_release);
}

/// Proxy flags of a signal operation (device/src/channel/proxy.rs: 0 set, 1 add).
__device__ inline uint16_t sig_flags(int sig_op) { return sig_op == NVSHMEM_SIGNAL_ADD ? 1 : 0; }

/// Checks the signal word (a symmetric, aligned u64) and routes it.
__device__ inline Route sig_route(uint32_t op, const uint64_t *sig, int pe) {
    if ((uint64_t)sig % 8 != 0) {
        fail(OXSHMEM_ERR_MISALIGNED, op, pe, (uint64_t)sig, 8);
        return {Via::None, nullptr};
    }
    return route(op, sig, 8, pe);
}

/// Submits a signal operation to the proxy (not waited for: the signal is delivered in ring order).
__device__ inline void proxy_signal(uint32_t op, uint64_t *sig, uint64_t signal, int sig_op, int pe) {
    oxshmem_proxy_request_t q = req(PROXY_SIGNAL_OP, sig_flags(sig_op), pe, 8, nullptr, nullptr);
    q.value = signal;
    q.sig = (uint64_t)sig;
    proxy_submit(q, op);
}

/// Strided copy by the scope's threads: d[i*ds] = s[i*ss].
template <class V, class T>
__device__ inline void copy(T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n) {
    for (size_t i = V::rank(); i < n; i += V::size()) d[(ptrdiff_t)i * ds] = s[(ptrdiff_t)i * ss];
}

/// The same for elements of `es` bytes (1, 2, 4, 8 or 16; anything else moves byte by byte).
template <class V>
__device__ inline void copy_es(void *d, const void *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, size_t es) {
    switch (es) {
        case 1: copy<V>((uint8_t *)d, (const uint8_t *)s, ds, ss, n); break;
        case 2: copy<V>((uint16_t *)d, (const uint16_t *)s, ds, ss, n); break;
        case 4: copy<V>((uint32_t *)d, (const uint32_t *)s, ds, ss, n); break;
        case 8: copy<V>((uint64_t *)d, (const uint64_t *)s, ds, ss, n); break;
        case 16: copy<V>((u128 *)d, (const u128 *)s, ds, ss, n); break;
        default:
            for (size_t i = 0; i < n; i++)
                for (size_t b = V::rank(); b < es; b += V::size())
                    ((char *)d)[(ptrdiff_t)i * ds * (ptrdiff_t)es + (ptrdiff_t)b] =
                        ((const char *)s)[(ptrdiff_t)i * ss * (ptrdiff_t)es + (ptrdiff_t)b];
    }
}

/// put/put_nbi/iput (strided: dst/sst, in elements of `es` bytes) and put_signal[_nbi]
/// (sig != nullptr). One out-of-line copy per scope, shared by every element type.
#ifdef OXSHMEMI_CORE_IMPL
template <class V>
__device__ OXSHMEMI_NOINLINE void put_bytes(uint32_t op, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                                       size_t es, int pe, bool nbi, uint64_t *sig, uint64_t signal, int sig_op) {
    V::sync();  // entry: the group's writes of the source are done
    size_t span = n == 0 ? 0 : ((n - 1) * (size_t)(dst < 0 ? -dst : dst) + 1) * es;
    Route r = route(op, dest, span, pe);
    Route rs = {Via::P2p, nullptr};
    if (sig) rs = sig_route(op, sig, pe);
    // a signal add is an atomic: to a P2P peer without native P2P atomics, the proxy's
    if (sig && sig_op == NVSHMEM_SIGNAL_ADD) rs = atomic_route(rs, pe);
    if (r.via == Via::None || rs.via == Via::None) return;
    if (r.via == Via::P2p) {
        copy_es<V>(r.p2p, src, dst, sst, n, es);
        if (sig) {
            // every thread's stores are before the barrier; rank 0's release of the signal (cumulative
            // over them through the barrier) orders them before it: one membar per group, no
            // separate system fence before the release (the proxy's request is published with a
            // system fence and a release, after the data likewise)
            V::sync();
            if (V::rank() == 0) {
                if (rs.via == Via::P2p) p2p_signal((uint64_t *)rs.p2p, signal, sig_op);
                else proxy_signal(op, sig, signal, sig_op, pe);
            }
        }
        V::sync();
        return;
    }
    if (r.via == Via::Ibgda) {
        if (V::rank() == 0) {
            if (dst == 1 && sst == 1 && sig)
                ib_put_signal(op, pe, (uint64_t)dest, src, n * es, (uint64_t)sig, signal, sig_op, nbi);
            else if (dst == 1 && sst == 1)
                ib_put(op, pe, (uint64_t)dest, src, n * es, nbi);
            else
                for (size_t i = 0; i < n; i++)
                    ib_put(op, pe, (uint64_t)dest + (uint64_t)((ptrdiff_t)i * dst * (ptrdiff_t)es),
                           (const char *)src + (ptrdiff_t)i * sst * (ptrdiff_t)es, es, nbi);
        }
        V::sync();
        return;
    }
    if (V::rank() == 0) {
        if (dst == 1 && sst == 1) {
            oxshmem_proxy_request_t q =
                req(sig ? PROXY_PUT_SIGNAL : PROXY_PUT, sig ? sig_flags(sig_op) : 0, pe, n * es, dest, src);
            q.value = signal;
            q.sig = (uint64_t)sig;
            uint64_t t = proxy_submit(q, op);
            if (!nbi) proxy_wait(t, op);
        } else {
            // strided through the proxy: one request per element, in order
            uint64_t t = UINT64_MAX;
            for (size_t i = 0; i < n; i++)
                t = proxy_submit(req(PROXY_PUT, 0, pe, es, (char *)dest + (ptrdiff_t)i * dst * (ptrdiff_t)es,
                                     (const char *)src + (ptrdiff_t)i * sst * (ptrdiff_t)es),
                                 op);
            if (!nbi) proxy_wait(t, op);
        }
    }
    V::sync();
}
#else
template <class V>
__device__ OXSHMEMI_NOINLINE void put_bytes(uint32_t op, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                                       size_t es, int pe, bool nbi, uint64_t *sig, uint64_t signal, int sig_op);
#endif

#ifdef OXSHMEMI_CORE_IMPL
template <class V>
__device__ OXSHMEMI_NOINLINE void get_bytes(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t n, size_t es,
                                       int pe, bool nbi) {
    V::sync();  // entry: the group's reads of the destination are done
    size_t span = n == 0 ? 0 : ((n - 1) * (size_t)(sst < 0 ? -sst : sst) + 1) * es;
    Route r = route(OXSHMEM_OP_GET, src, span, pe);
    if (r.via == Via::None) return;
    if (r.via == Via::P2p) {
        copy_es<V>(dest, r.p2p, dst, sst, n, es);
        V::sync();
        return;
    }
    if (r.via == Via::Ibgda) {
        if (V::rank() == 0) {
            if (dst == 1 && sst == 1)
                ib_get(OXSHMEM_OP_GET, pe, dest, (uint64_t)src, n * es, nbi);
            else
                for (size_t i = 0; i < n; i++)
                    ib_get(OXSHMEM_OP_GET, pe, (char *)dest + (ptrdiff_t)i * dst * (ptrdiff_t)es,
                           (uint64_t)src + (uint64_t)((ptrdiff_t)i * sst * (ptrdiff_t)es), es, nbi);
        }
        V::sync();
        return;
    }
    if (V::rank() == 0) {
        uint64_t t = UINT64_MAX;
        if (dst == 1 && sst == 1)
            t = proxy_submit(req(PROXY_GET, 0, pe, n * es, src, dest), OXSHMEM_OP_GET);
        else
            for (size_t i = 0; i < n; i++)
                t = proxy_submit(req(PROXY_GET, 0, pe, es, (const char *)src + (ptrdiff_t)i * sst * (ptrdiff_t)es,
                                     (char *)dest + (ptrdiff_t)i * dst * (ptrdiff_t)es),
                                 OXSHMEM_OP_GET);
        if (!nbi) proxy_wait(t, OXSHMEM_OP_GET);
    }
    V::sync();
}
#else
template <class V>
__device__ OXSHMEMI_NOINLINE void get_bytes(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t n, size_t es,
                                       int pe, bool nbi);
#endif

/// Typed front of put_bytes (used by the collectives too).
template <class V, class T>
__device__ inline void put_impl(uint32_t op, T *dest, const T *src, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe,
                                bool nbi, uint64_t *sig = nullptr, uint64_t signal = 0, int sig_op = 0) {
    put_bytes<V>(op, dest, src, dst, sst, n, sizeof(T), pe, nbi, sig, signal, sig_op);
}
template <class V, class T>
__device__ inline void get_impl(T *dest, const T *src, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe, bool nbi) {
    get_bytes<V>(dest, src, dst, sst, n, sizeof(T), pe, nbi);
}

/// nvshmem_p on the bits of a value of `es` <= 8 bytes.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void p_bits(void *dest, uint64_t v, size_t es, int pe) {
    Route r = route(OXSHMEM_OP_P, dest, es, pe);
    if (r.via == Via::P2p) {
        switch (es) {
            case 1: volatile_store((uint8_t *)r.p2p, (uint8_t)v); break;
            case 2: volatile_store((uint16_t *)r.p2p, (uint16_t)v); break;
            case 4: volatile_store((uint32_t *)r.p2p, (uint32_t)v); break;
            default: volatile_store((uint64_t *)r.p2p, v); break;
        }
    } else if (r.via == Via::Proxy) {
        oxshmem_proxy_request_t q = req(PROXY_P, 0, pe, es, dest, nullptr);
        q.value = v;
        proxy_submit(q, OXSHMEM_OP_P);
    } else if (r.via == Via::Ibgda) {
        ib_put(OXSHMEM_OP_P, pe, (uint64_t)dest, &v, es, false);
    }
}
#else
__device__ OXSHMEMI_NOINLINE void p_bits(void *dest, uint64_t v, size_t es, int pe);
#endif

/// nvshmem_g: the bits of one element of `es` <= 8 bytes. Through the proxy the result lands
/// in the request's ring slot (proxy_fetch), never in this thread's local memory.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE uint64_t g_bits(const void *src, size_t es, int pe) {
    Route r = route(OXSHMEM_OP_G, src, es, pe);
    uint64_t out = 0;
    if (r.via == Via::P2p) {
        switch (es) {
            case 1: out = volatile_load((const uint8_t *)r.p2p); break;
            case 2: out = volatile_load((const uint16_t *)r.p2p); break;
            case 4: out = volatile_load((const uint32_t *)r.p2p); break;
            default: out = volatile_load((const uint64_t *)r.p2p); break;
        }
    } else if (r.via == Via::Proxy) {
        out = proxy_fetch(req(PROXY_GET, 0, pe, es, src, nullptr), OXSHMEM_OP_G);
    } else if (r.via == Via::Ibgda) {
        ib_get(OXSHMEM_OP_G, pe, &out, (uint64_t)src, es, false);
    }
    return out;
}
#else
__device__ OXSHMEMI_NOINLINE uint64_t g_bits(const void *src, size_t es, int pe);
#endif

namespace api {

template <class V, class T>
__device__ void put(T *dest, const T *source, size_t nelems, int pe) {
    put_impl<V>(OXSHMEM_OP_PUT, dest, source, 1, 1, nelems, pe, false);
}
template <class V, class T>
__device__ void put_nbi(T *dest, const T *source, size_t nelems, int pe) {
    put_impl<V>(OXSHMEM_OP_PUT, dest, source, 1, 1, nelems, pe, true);
}
template <class V, class T>
__device__ void iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {
    put_impl<V>(OXSHMEM_OP_PUT, dest, source, dst, sst, nelems, pe, false);
}
template <class V, class T>
__device__ void get(T *dest, const T *source, size_t nelems, int pe) {
    get_impl<V>(dest, source, 1, 1, nelems, pe, false);
}
template <class V, class T>
__device__ void get_nbi(T *dest, const T *source, size_t nelems, int pe) {
    get_impl<V>(dest, source, 1, 1, nelems, pe, true);
}
template <class V, class T>
__device__ void iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {
    get_impl<V>(dest, source, dst, sst, nelems, pe, false);
}
template <class V, class T>
__device__ void put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op,
                           int pe) {
    put_impl<V>(OXSHMEM_OP_PUT_SIGNAL, dest, source, 1, 1, nelems, pe, false, sig_addr, signal, sig_op);
}
template <class V, class T>
__device__ void put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                               int sig_op, int pe) {
    put_impl<V>(OXSHMEM_OP_PUT_SIGNAL, dest, source, 1, 1, nelems, pe, true, sig_addr, signal, sig_op);
}

template <class V, class T>
__device__ void p(T *dest, const T value, int pe) {
    p_bits(dest, bits(value), sizeof(T), pe);
}
template <class V, class T>
__device__ T g(const T *src, int pe) {
    return from_bits<T>(g_bits(src, sizeof(T), pe));
}

}  // namespace api
}  // namespace oxshmemi
