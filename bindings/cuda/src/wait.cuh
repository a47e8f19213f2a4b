// Signals (signal_op, signal_fetch, signal_wait_until) and point-to-point synchronization
// (wait_until*, test*). A wait past the state's timeout records WaitTimeout with the value last
// seen (state.rs ErrorSlot::record_wait) and returns, like the CPU back end. A wait that is
// satisfied and a test that succeeds fence (fence_device, NVSHMEM's __threadfence) so that the
// payload read after it is not stale; a test that fails does not.
#pragma once

#include "rma.cuh"

namespace oxshmemi {

/// Whether `v cmp value` holds (NVSHMEM's comparison constants).
template <class T>
__device__ inline bool holds(T v, int cmp, T value) {
    switch (cmp) {
        case NVSHMEM_CMP_EQ: return v == value;
        case NVSHMEM_CMP_NE: return v != value;
        case NVSHMEM_CMP_GT: return v > value;
        case NVSHMEM_CMP_GE: return v >= value;
        case NVSHMEM_CMP_LT: return v < value;
        case NVSHMEM_CMP_LE: return v <= value;
        default: return false;
    }
}

/// The error slot's comparison encoding (state.rs wait_cmp::pack: Rust Cmp, bytes, signed).
template <class T>
__device__ inline uint32_t pack_cmp(int cmp) {
    uint32_t c = cmp == NVSHMEM_CMP_EQ ? 0 : cmp == NVSHMEM_CMP_NE ? 1 : cmp == NVSHMEM_CMP_GT ? 2
               : cmp == NVSHMEM_CMP_GE ? 3 : cmp == NVSHMEM_CMP_LT ? 4 : 5;
    return (c & 0xff) | (uint32_t)sizeof(T) << 8 | (uint32_t)((T)-1 < (T)0) << 16;
}

/// Checks that `ivar` is an aligned word of this PE's heap.
template <class T>
__device__ inline bool local_word(uint32_t op, const T *ivar) {
    oxshmem_device_state_t *s = st();
    if (!s) return false;
    if ((uint64_t)ivar % sizeof(T) != 0) {
        fail(OXSHMEM_ERR_MISALIGNED, op, s->my_pe, (uint64_t)ivar, sizeof(T));
        return false;
    }
    return route(op, ivar, sizeof(T), (int)s->my_pe).via != Via::None;
}

/// Waits for `*ivar cmp value`; returns the value seen (the last one on timeout, recorded).
template <class T>
__device__ OXSHMEMI_NOINLINE T wait_word(uint32_t op, int64_t from, T *ivar, int cmp, T value, bool *ok = nullptr) {
    Waiter w;
    for (;;) {
        T v = vload(ivar);
        if (holds(v, cmp, value)) {
            poll_acquire(ivar);
            fence_device();
            if (ok) *ok = true;
            return v;
        }
        if (!w.ok(st())) {
            record_in(st(), OXSHMEM_ERR_WAIT_TIMEOUT, op, from, (uint64_t)ivar, bits(v), bits(value), pack_cmp<T>(cmp),
                      block_id(), thread_id());
            if (ok) *ok = false;
            return v;
        }
    }
}

#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void signal_op_impl(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    Route r = sig_route(OXSHMEM_OP_SIGNAL_OP, sig_addr, pe);
    // a signal add is an atomic (the proxy's without native P2P atomics); a set is a store
    if (sig_op == NVSHMEM_SIGNAL_ADD) r = atomic_route(r, pe);
    if (r.via == Via::P2p) {
        p2p_signal((uint64_t *)r.p2p, signal, sig_op);
    } else if (r.via == Via::Proxy) {
        oxshmem_proxy_request_t q = req(PROXY_SIGNAL_OP, sig_flags(sig_op), pe, 8, nullptr, nullptr);
        q.value = signal;
        q.sig = (uint64_t)sig_addr;
        proxy_submit(q, OXSHMEM_OP_SIGNAL_OP);
    } else if (r.via == Via::Ibgda) {
        ib_signal_op(OXSHMEM_OP_SIGNAL_OP, pe, (uint64_t)sig_addr, signal, sig_op);
    }
}
#else
__device__ OXSHMEMI_NOINLINE void signal_op_impl(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
#endif

namespace api {

template <class V>
__device__ void signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    signal_op_impl(sig_addr, signal, sig_op, pe);
}
template <class V>
__device__ uint64_t signal_fetch(uint64_t *sig_addr) {
    if (!local_word(OXSHMEM_OP_SIGNAL_WAIT, sig_addr)) return 0;
    return sys_ref<uint64_t>(*sig_addr).load(mo_acquire);
}
template <class V>
__device__ uint64_t signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_val) {
    if (!local_word(OXSHMEM_OP_SIGNAL_WAIT, sig_addr)) return 0;
    return wait_word(OXSHMEM_OP_SIGNAL_WAIT, -1, sig_addr, cmp, cmp_val);
}

template <class V, class T>
__device__ void wait_until(T *ivar, int cmp, T cmp_value) {
    if (local_word(OXSHMEM_OP_WAIT_UNTIL, ivar)) wait_word(OXSHMEM_OP_WAIT_UNTIL, -1, ivar, cmp, cmp_value);
}
template <class V, class T>
__device__ int test(T *ivar, int cmp, T cmp_value) {
    if (!local_word(OXSHMEM_OP_WAIT_UNTIL, ivar)) return 0;
    if (!holds(vload(ivar), cmp, cmp_value)) return 0;
    poll_acquire(ivar);
    fence_device();
    return 1;
}

/// The element i's comparison value: one for all, or the vector's.
template <class T>
struct Cmp1 {
    T v;
    __device__ T operator[](size_t) const { return v; }
};

template <class T, class C>
__device__ inline bool excluded(const int *status, size_t i) {
    return status && status[i] != 0;
}

template <class T, class C>
__device__ void wait_all_impl(T *ivars, size_t nelems, const int *status, int cmp, C vals) {
    for (size_t i = 0; i < nelems; i++) {
        if (excluded<T, C>(status, i)) continue;
        if (!local_word(OXSHMEM_OP_WAIT_UNTIL, ivars + i)) return;
        bool ok = true;
        wait_word(OXSHMEM_OP_WAIT_UNTIL, -1, ivars + i, cmp, (T)vals[i], &ok);
        if (!ok) return;
    }
}
/// test_any/wait_until_any's probe: the first satisfied index, fenced; SIZE_MAX if none.
template <class T, class C>
__device__ size_t test_any_impl(T *ivars, size_t nelems, const int *status, int cmp, C vals) {
    for (size_t i = 0; i < nelems; i++)
        if (!excluded<T, C>(status, i) && holds(vload(ivars + i), cmp, (T)vals[i])) {
            poll_acquire(ivars + i);
            fence_device();
            return i;
        }
    return SIZE_MAX;
}
/// test_some/wait_until_some's probe: the satisfied indices, fenced when there is one.
template <class T, class C>
__device__ size_t test_some_impl(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, C vals) {
    size_t n = 0;
    for (size_t i = 0; i < nelems; i++)
        if (!excluded<T, C>(status, i) && holds(vload(ivars + i), cmp, (T)vals[i])) {
            poll_acquire(ivars + i);
            indices[n++] = i;
        }
    if (n) fence_device();
    return n;
}
/// test_all's probe: 1 when every word not excluded holds (fenced when there is one), else 0.
template <class T, class C>
__device__ int test_all_impl(T *ivars, size_t nelems, const int *status, int cmp, C vals) {
    bool any = false;
    for (size_t i = 0; i < nelems; i++) {
        if (excluded<T, C>(status, i)) continue;
        if (!holds(vload(ivars + i), cmp, (T)vals[i])) return 0;
        poll_acquire(ivars + i);
        any = true;
    }
    if (any) fence_device();
    return 1;
}
template <class T>
__device__ inline bool all_excluded(size_t nelems, const int *status) {
    for (size_t i = 0; i < nelems; i++)
        if (!status || status[i] == 0) return false;
    return true;
}
template <class T, class C>
__device__ size_t wait_any_impl(T *ivars, size_t nelems, const int *status, int cmp, C vals) {
    if (all_excluded<T>(nelems, status)) return SIZE_MAX;
    Waiter w;
    for (;;) {
        size_t i = test_any_impl<T>(ivars, nelems, status, cmp, vals);
        if (i != SIZE_MAX) return i;
        if (!w.ok(st())) {
            record_in(st(), OXSHMEM_ERR_WAIT_TIMEOUT, OXSHMEM_OP_WAIT_UNTIL, -1, (uint64_t)ivars, 0, 0, pack_cmp<T>(cmp),
                      block_id(), thread_id());
            return SIZE_MAX;
        }
    }
}
template <class T, class C>
__device__ size_t wait_some_impl(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, C vals) {
    if (all_excluded<T>(nelems, status)) return 0;
    Waiter w;
    for (;;) {
        size_t n = test_some_impl<T>(ivars, nelems, indices, status, cmp, vals);
        if (n) return n;
        if (!w.ok(st())) {
            record_in(st(), OXSHMEM_ERR_WAIT_TIMEOUT, OXSHMEM_OP_WAIT_UNTIL, -1, (uint64_t)ivars, 0, 0, pack_cmp<T>(cmp),
                      block_id(), thread_id());
            return 0;
        }
    }
}

template <class V, class T> __device__ void wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) { wait_all_impl<T>(ivars, nelems, status, cmp, Cmp1<T>{cmp_value}); }
template <class V, class T> __device__ void wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) { wait_all_impl<T>(ivars, nelems, status, cmp, cmp_values); }
template <class V, class T> __device__ size_t wait_until_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) { return wait_any_impl<T>(ivars, nelems, status, cmp, Cmp1<T>{cmp_value}); }
template <class V, class T> __device__ size_t wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) { return wait_any_impl<T>(ivars, nelems, status, cmp, cmp_values); }
template <class V, class T> __device__ size_t wait_until_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value) { return wait_some_impl<T>(ivars, nelems, indices, status, cmp, Cmp1<T>{cmp_value}); }
template <class V, class T> __device__ size_t wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *cmp_values) { return wait_some_impl<T>(ivars, nelems, indices, status, cmp, cmp_values); }
template <class V, class T> __device__ int test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) { return test_all_impl<T>(ivars, nelems, status, cmp, Cmp1<T>{cmp_value}); }
template <class V, class T> __device__ int test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) { return test_all_impl<T>(ivars, nelems, status, cmp, cmp_values); }
template <class V, class T> __device__ size_t test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) { return test_any_impl<T>(ivars, nelems, status, cmp, Cmp1<T>{cmp_value}); }
template <class V, class T> __device__ size_t test_any_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) { return test_any_impl<T>(ivars, nelems, status, cmp, cmp_values); }
template <class V, class T> __device__ size_t test_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value) { return test_some_impl<T>(ivars, nelems, indices, status, cmp, Cmp1<T>{cmp_value}); }
template <class V, class T> __device__ size_t test_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *cmp_values) { return test_some_impl<T>(ivars, nelems, indices, status, cmp, cmp_values); }

}  // namespace api
}  // namespace oxshmemi
