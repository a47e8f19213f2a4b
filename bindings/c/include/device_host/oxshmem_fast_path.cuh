/*
 * device_host/oxshmem_fast_path.cuh -- oxshmem's P2P fast paths, inline in the calling kernel.
 *
 * nvshmem_device.h includes this in nvcc's device pass only (not for HIP or the CPU target, not
 * while libnvshmem_device.a itself is built, and not with -DOXSHMEM_NO_INLINE_FAST_PATHS). It
 * defines, inline, the hottest device routines as NVSHMEM's headers do: p and g, signal_op,
 * fence, quiet, the integer atomic (fetch_)add, and putmem, putmem_signal and getmem (blocking
 * and nbi) at thread, warp and block scope. Each checks the peer (PE in range, the
 * symmetric range in the heap, channel P2P) with read-only loads of the device state and does
 * the one access into the peer's mapped heap; every other case (proxy, IBGDA, an error to
 * record, the state not attached yet) calls an out-of-line core of libnvshmem_device.a
 * (oxshmemi_cold_*), which routes again from the start. The archive keeps the out-of-line
 * definitions of the same names (bindings/cuda/src/generated), for calls through a pointer and
 * for programs built without this header.
 *
 * The fast paths read the state's head from constant memory (oxshmemi_fast_d, a copy the
 * archive makes at attach), as NVSHMEM's read nvshmemi_device_state_d. Its layout is
 * oxshmem_device_state_t's head (device/include/oxshmem/device_state.h;
 * bindings/cuda/src/state.cuh asserts that it matches), then the atomics table. Written for
 * oxshmem, not generated.
 *
 * Atomics (the integer (fetch_)add, a signal add) look the peer up in amo_base instead of
 * peer_base: it is 0 for a P2P peer whose GPU has no native P2P atomics with this one
 * (CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, as NVSHMEM checks), so they take the cold
 * path, which sends them through the proxy. Loads and stores, signal sets included (NVSHMEM's
 * signal set is a store), read peer_base.
 */
#ifndef OXSHMEM_FAST_PATH_CUH
#define OXSHMEM_FAST_PATH_CUH

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* What the fast paths read: oxshmem_device_state_t's head, with `limit` in place of its channel
 * array, then the atomics table (read-only while kernels run). */
struct oxshmemi_fast_state_t {
    uint32_t my_pe;
    uint32_t n_pes;
    uint64_t heap_base;
    uint64_t heap_size;
    const uint64_t *peer_base; /* n_pes entries: where each P2P peer's heap is mapped here, else 0 */
    uint64_t limit;            /* heap_size - 8: the last offset a word of up to 8 bytes is fast at */
    const void *ring;          /* the proxy ring (null: none) */
    const void *ibgda;         /* the IBGDA state (null: none) */
    const uint64_t *amo_base;  /* n_pes + 1 entries: peer_base's where atomics may go P2P, else 0 */
};

/* Where in this PE's GPU heap the proxy ring's ticket counter lives (GPU memory, which device
 * threads fetch-add: the ring header's own `issue`, in pinned host memory, is not used by the
 * CUDA library). The flag line of the world barrier's round 30, which no job of fewer than 2^30
 * PEs signals (state.cuh RING_ISSUE_OFFSET, device/src/cuda/node.rs). */
#define OXSHMEMI_RING_ISSUE_OFFSET 1920

/* The head of the runtime's device state, copied into constant memory by libnvshmem_device.a
 * when nvshmem_init attaches (and by nvshmemx_cumodule_init for loaded code). Before, n_pes and
 * limit are 0 and peer_base an empty table: every fast path takes its cold path. */
extern __constant__ oxshmemi_fast_state_t oxshmemi_fast_d;

extern "C" {
/* The cold paths (libnvshmem_device.a, core.cu): each routes again and records errors. */
__device__ void oxshmemi_cold_p(void *dest, uint64_t bits, int pe, uint32_t bytes);
__device__ uint64_t oxshmemi_cold_g(const void *src, int pe, uint32_t bytes);
/* p and g by width (fewer arguments to pass than the forms above) */
__device__ void oxshmemi_cold_p1(void *dest, uint32_t bits, int pe);
__device__ void oxshmemi_cold_p2(void *dest, uint32_t bits, int pe);
__device__ void oxshmemi_cold_p4(void *dest, uint32_t bits, int pe);
__device__ void oxshmemi_cold_p8(void *dest, uint64_t bits, int pe);
__device__ uint32_t oxshmemi_cold_g1(const void *src, int pe);
__device__ uint32_t oxshmemi_cold_g2(const void *src, int pe);
__device__ uint32_t oxshmemi_cold_g4(const void *src, int pe);
__device__ uint64_t oxshmemi_cold_g8(const void *src, int pe);
__device__ void oxshmemi_cold_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
__device__ void oxshmemi_cold_signal_set(uint64_t *sig_addr, uint64_t signal, int pe);
__device__ void oxshmemi_cold_signal_add(uint64_t *sig_addr, uint64_t signal, int pe);
__device__ uint64_t oxshmemi_cold_fetch_add(void *dest, uint64_t value, int pe, uint32_t bytes_fetch);
/* (fetch_)add by width */
__device__ uint32_t oxshmemi_cold_fetch_add4(void *dest, uint32_t value, int pe);
__device__ uint64_t oxshmemi_cold_fetch_add8(void *dest, uint64_t value, int pe);
__device__ void oxshmemi_cold_add4(void *dest, uint32_t value, int pe);
__device__ void oxshmemi_cold_add8(void *dest, uint64_t value, int pe);
__device__ void oxshmemi_cold_quiet(void);
/* put, put_nbi, put_signal(_nbi); how: the scope (0 thread, 1 warp, 2 block) | nbi << 4 |
 * sig_op << 8 (sig_addr null: no signal) */
__device__ void oxshmemi_cold_put(void *dest, const void *src, size_t bytes, int pe, uint32_t how, uint64_t *sig_addr,
                                  uint64_t signal);
__device__ void oxshmemi_cold_fence(void);
/* wait_until for a wait the first look did not satisfy, by word type: checks ivar, waits (with
 * the state's timeout, recorded), then acquires. The same by comparison (_eq_, _ne_, ...), which
 * the inline wait calls when cmp is a compile-time constant: one argument fewer to pass. */
#define OXSHMEMI_COLD_WAIT_DECL(S, T)                                         \
    __device__ void oxshmemi_cold_wait_until_##S(T *ivar, int cmp, T value); \
    __device__ void oxshmemi_cold_wait_eq_##S(T *ivar, T value);             \
    __device__ void oxshmemi_cold_wait_ne_##S(T *ivar, T value);             \
    __device__ void oxshmemi_cold_wait_gt_##S(T *ivar, T value);             \
    __device__ void oxshmemi_cold_wait_ge_##S(T *ivar, T value);             \
    __device__ void oxshmemi_cold_wait_lt_##S(T *ivar, T value);             \
    __device__ void oxshmemi_cold_wait_le_##S(T *ivar, T value);
OXSHMEMI_COLD_WAIT_DECL(i16, int16_t)
OXSHMEMI_COLD_WAIT_DECL(u16, uint16_t)
OXSHMEMI_COLD_WAIT_DECL(i32, int32_t)
OXSHMEMI_COLD_WAIT_DECL(u32, uint32_t)
OXSHMEMI_COLD_WAIT_DECL(i64, int64_t)
OXSHMEMI_COLD_WAIT_DECL(u64, uint64_t)
#undef OXSHMEMI_COLD_WAIT_DECL
/* get, get_nbi; how: the scope (0 thread, 1 warp, 2 block) | nbi << 4 */
__device__ void oxshmemi_cold_get(void *dest, const void *src, size_t bytes, int pe, uint32_t how);
}

namespace oxshmemi_fast {

/* Whether `pe` is a P2P peer, a word of up to 8 bytes at `addr` is in the heap and `bad` is
 * false (a caller's own condition, such as misalignment, folded into the one branch); then *out
 * is the peer's mapped copy. Otherwise the cold path decides, and records what is wrong. The
 * state's fields are constant-bank operands; the peer's base is the one load. `Atomic`: for an
 * atomic, which also needs native P2P atomics with the peer's GPU (the amo_base table). */
template <bool Atomic = false>
__device__ __forceinline__ bool p2p(const void *addr, int pe, char **out, bool bad = false) {
    uint64_t off = (uint64_t)addr - oxshmemi_fast_d.heap_base;
    /* peer_base and amo_base have n_pes + 1 entries: [i] is 0 unless PE i is reached over P2P
     * (for amo_base: with native atomics), and [n_pes], always 0, stands for every PE out of
     * range (the host library writes them so) */
    uint32_t i = min((uint32_t)pe, oxshmemi_fast_d.n_pes);
    const uint64_t *table = Atomic ? oxshmemi_fast_d.amo_base : oxshmemi_fast_d.peer_base;
    uint64_t base = __ldg((const unsigned long long *)table + i);
    if ((off > oxshmemi_fast_d.limit) | bad | (base == 0)) return false;
    *out = (char *)(base + off);
    return true;
}

/* Relaxed system-scope adds on the peer's mapped heap (global memory: no generic-space test, no
 * warp aggregation), the old value or none (red). */
__device__ __forceinline__ uint32_t atom_add(uint32_t *p, uint32_t v) {
    uint32_t old;
    asm volatile("atom.relaxed.sys.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
__device__ __forceinline__ uint64_t atom_add(uint64_t *p, uint64_t v) {
    uint64_t old;
    asm volatile("atom.relaxed.sys.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
    return old;
}
__device__ __forceinline__ void red_add(uint32_t *p, uint32_t v) {
    asm volatile("red.relaxed.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void red_add(uint64_t *p, uint64_t v) {
    asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <class T>
__device__ __forceinline__ uint64_t bits(T v) {
    uint64_t b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
__device__ __forceinline__ T from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}

template <class T>
__device__ __forceinline__ void p(T *dest, T value, int pe) {
    char *r;
    if (!p2p(dest, pe, &r)) {
        if (sizeof(T) == 1) oxshmemi_cold_p1(dest, (uint32_t)bits(value), pe);
        else if (sizeof(T) == 2) oxshmemi_cold_p2(dest, (uint32_t)bits(value), pe);
        else if (sizeof(T) == 4) oxshmemi_cold_p4(dest, (uint32_t)bits(value), pe);
        else oxshmemi_cold_p8(dest, bits(value), pe);
        return;
    }
    if (sizeof(T) == 1) *(volatile uint8_t *)r = (uint8_t)bits(value);
    else if (sizeof(T) == 2) *(volatile uint16_t *)r = (uint16_t)bits(value);
    else if (sizeof(T) == 4) *(volatile uint32_t *)r = (uint32_t)bits(value);
    else *(volatile uint64_t *)r = bits(value);
}

template <class T>
__device__ __forceinline__ T g(const T *src, int pe) {
    char *r;
    if (!p2p(src, pe, &r)) {
        if (sizeof(T) == 1) return from_bits<T>(oxshmemi_cold_g1(src, pe));
        if (sizeof(T) == 2) return from_bits<T>(oxshmemi_cold_g2(src, pe));
        if (sizeof(T) == 4) return from_bits<T>(oxshmemi_cold_g4(src, pe));
        return from_bits<T>(oxshmemi_cold_g8(src, pe));
    }
    if (sizeof(T) == 1) return from_bits<T>(*(const volatile uint8_t *)r);
    if (sizeof(T) == 2) return from_bits<T>(*(const volatile uint16_t *)r);
    if (sizeof(T) == 4) return from_bits<T>(*(const volatile uint32_t *)r);
    return from_bits<T>(*(const volatile uint64_t *)r);
}

/* NVSHMEM's integer atomic add (relaxed, system scope) on a P2P peer (4- or 8-byte words). */
template <class T>
__device__ __forceinline__ T fetch_add(T *dest, T value, int pe, int fetch) {
    char *r;
    if (!p2p<true>(dest, pe, &r, (uint64_t)dest % sizeof(T) != 0)) {
        if (sizeof(T) == 4) {
            if (!fetch) return oxshmemi_cold_add4(dest, (uint32_t)bits(value), pe), T{};
            return from_bits<T>(oxshmemi_cold_fetch_add4(dest, (uint32_t)bits(value), pe));
        }
        if (!fetch) return oxshmemi_cold_add8(dest, bits(value), pe), T{};
        return from_bits<T>(oxshmemi_cold_fetch_add8(dest, bits(value), pe));
    }
    if (sizeof(T) == 4) {
        if (!fetch) return red_add((uint32_t *)r, (uint32_t)bits(value)), T{};
        return from_bits<T>(atom_add((uint32_t *)r, (uint32_t)bits(value)));
    }
    if (!fetch) return red_add((uint64_t *)r, bits(value)), T{};
    return from_bits<T>(atom_add((uint64_t *)r, bits(value)));
}

/* The groups of the warp and block forms: G 0 thread, 1 warp, 2 block (the library's scopes). */
__device__ __forceinline__ uint32_t tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
__device__ __forceinline__ uint32_t nthreads() { return blockDim.x * blockDim.y * blockDim.z; }
template <int G>
__device__ __forceinline__ uint32_t rank() {
    return G == 0 ? 0 : G == 1 ? tid() % 32 : tid();
}
template <int G>
__device__ __forceinline__ uint32_t size() {
    if (G == 0) return 1;
    if (G == 2) return nthreads();
    uint32_t left = nthreads() - tid() / 32 * 32;
    return left < 32 ? left : 32;
}
template <int G>
__device__ __forceinline__ void sync() {
    if (G == 1) __syncwarp();
    if (G == 2) __syncthreads();
}

/* The group's threads copy n bytes: 16-byte vectors when both ends and n allow, else 8-byte
 * words, else bytes. */
template <int G>
__device__ __forceinline__ void copy(char *d, const char *src, size_t n) {
    uint32_t r = rank<G>(), k = size<G>();
    uint64_t a = (uint64_t)d | (uint64_t)src | n;
    if ((a & 15) == 0) {
        for (size_t i = r; i < n / 16; i += k) ((int4 *)d)[i] = ((const int4 *)src)[i];
    } else if ((a & 7) == 0) {
        for (size_t i = r; i < n / 8; i += k) ((uint64_t *)d)[i] = ((const uint64_t *)src)[i];
    } else {
        for (size_t i = r; i < n; i += k) d[i] = src[i];
    }
}

/* p2p() for a range of any length n. */
__device__ __forceinline__ bool p2p_range(const void *addr, size_t n, int pe, char **out) {
    if (n > oxshmemi_fast_d.heap_size || !p2p(addr, pe, out)) return false;
    uint64_t off = (uint64_t)addr - oxshmemi_fast_d.heap_base;
    return off <= oxshmemi_fast_d.heap_size - n;
}

/* get / get_nbi of the group (P2P: complete on return), with the group syncs of the library's forms. */
template <int G>
__device__ __forceinline__ void get(void *dest, const void *src, size_t n, int pe, int nbi) {
    sync<G>();
    char *r;
    if (!p2p_range(src, n, pe, &r)) {
        oxshmemi_cold_get(dest, src, n, pe, (uint32_t)G | (uint32_t)nbi << 4);
        return;
    }
    copy<G>((char *)dest, r, n);
    sync<G>();
}

/* put / put_nbi / put_signal(_nbi) of the group (P2P: the copy is complete on return, so nbi is
 * the same). Syncs the group on entry and on exit, as the library's forms do; the signal is
 * rank 0's release store or add after the group's copy (one membar per group). */
template <int G>
__device__ __forceinline__ void put(void *dest, const void *src, size_t n, int pe, int nbi, uint64_t *sig = nullptr,
                                    uint64_t signal = 0, int sig_op = 0) {
    sync<G>();
    char *r, *rs = nullptr;
    bool fast = p2p_range(dest, n, pe, &r);
    /* a signal add is an atomic (amo_base), a set a store (peer_base) */
    if (fast && sig)
        fast = (uint64_t)sig % 8 == 0 &&
               (sig_op == NVSHMEM_SIGNAL_SET ? p2p(sig, pe, &rs) : sig_op == NVSHMEM_SIGNAL_ADD && p2p<true>(sig, pe, &rs));
    if (!fast) {
        oxshmemi_cold_put(dest, src, n, pe, (uint32_t)G | (uint32_t)nbi << 4 | (uint32_t)sig_op << 8, sig, signal);
        return;
    }
    copy<G>(r, (const char *)src, n);
    if (sig) {
        sync<G>();
        if (rank<G>() == 0) {
            if (sig_op == NVSHMEM_SIGNAL_SET)
                asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(rs), "l"(signal) : "memory");
            else
                asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(rs), "l"(signal) : "memory");
        }
    }
    sync<G>();
}

/* One acquire load at system scope (a peer's store and the payload before it are visible). */
template <class T>
__device__ __forceinline__ T load_acquire(const T *p) {
    if (sizeof(T) == 2) {
        unsigned short v;
        asm volatile("ld.acquire.sys.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
        return from_bits<T>(v);
    }
    if (sizeof(T) == 4) {
        unsigned int v;
        asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
        return from_bits<T>(v);
    }
    unsigned long long v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return from_bits<T>(v);
}

template <class T>
__device__ __forceinline__ bool holds(T v, int cmp, T value) {
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

/* The out-of-line wait of each word type: by comparison when cmp is a compile-time constant
 * (the common case: one argument fewer to pass), else the generic one. */
#define OXSHMEMI_COLD_WAIT_CALL(S, T)                                                 \
    __device__ __forceinline__ void cold_wait(T *ivar, int cmp, T value) {           \
        if (__builtin_constant_p(cmp)) {                                              \
            switch (cmp) {                                                            \
                case NVSHMEM_CMP_EQ: oxshmemi_cold_wait_eq_##S(ivar, value); return; \
                case NVSHMEM_CMP_NE: oxshmemi_cold_wait_ne_##S(ivar, value); return; \
                case NVSHMEM_CMP_GT: oxshmemi_cold_wait_gt_##S(ivar, value); return; \
                case NVSHMEM_CMP_GE: oxshmemi_cold_wait_ge_##S(ivar, value); return; \
                case NVSHMEM_CMP_LT: oxshmemi_cold_wait_lt_##S(ivar, value); return; \
                case NVSHMEM_CMP_LE: oxshmemi_cold_wait_le_##S(ivar, value); return; \
                default: break;                                                       \
            }                                                                         \
        }                                                                             \
        oxshmemi_cold_wait_until_##S(ivar, cmp, value);                               \
    }
OXSHMEMI_COLD_WAIT_CALL(i16, int16_t)
OXSHMEMI_COLD_WAIT_CALL(u16, uint16_t)
OXSHMEMI_COLD_WAIT_CALL(i32, int32_t)
OXSHMEMI_COLD_WAIT_CALL(u32, uint32_t)
OXSHMEMI_COLD_WAIT_CALL(i64, int64_t)
OXSHMEMI_COLD_WAIT_CALL(u64, uint64_t)
#undef OXSHMEMI_COLD_WAIT_CALL

/* wait_until: one acquire load; a wait it satisfies is over (NVSHMEM's poll, with the acquire in
 * the load instead of a fence after it). Otherwise the out-of-line wait checks ivar (an aligned
 * word of this PE's heap, else a recorded error), polls with the state's timeout and acquires. */
template <class T>
__device__ __forceinline__ void wait_until(T *ivar, int cmp, T value) {
    if (holds(load_acquire(ivar), cmp, value)) return;
    constexpr bool sgn = (T)-1 < (T)0;
    uint64_t b = bits(value);
    if (sizeof(T) == 2 && sgn) cold_wait((int16_t *)ivar, cmp, (int16_t)b);
    else if (sizeof(T) == 2) cold_wait((uint16_t *)ivar, cmp, (uint16_t)b);
    else if (sizeof(T) == 4 && sgn) cold_wait((int32_t *)ivar, cmp, (int32_t)b);
    else if (sizeof(T) == 4) cold_wait((uint32_t *)ivar, cmp, (uint32_t)b);
    else if (sgn) cold_wait((int64_t *)ivar, cmp, (int64_t)b);
    else cold_wait((uint64_t *)ivar, cmp, b);
}

}  // namespace oxshmemi_fast

extern "C" {

#define OXSHMEMI_FAST_WAIT(NAME, TYPE)                                                                     \
    __device__ inline void nvshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value) {            \
        oxshmemi_fast::wait_until<TYPE>(ivar, cmp, cmp_value);                                           \
    }
OXSHMEMI_FAST_WAIT(short, short)
OXSHMEMI_FAST_WAIT(int, int)
OXSHMEMI_FAST_WAIT(long, long)
OXSHMEMI_FAST_WAIT(longlong, long long)
OXSHMEMI_FAST_WAIT(ushort, unsigned short)
OXSHMEMI_FAST_WAIT(uint, unsigned int)
OXSHMEMI_FAST_WAIT(ulong, unsigned long)
OXSHMEMI_FAST_WAIT(ulonglong, unsigned long long)
OXSHMEMI_FAST_WAIT(int32, int32_t)
OXSHMEMI_FAST_WAIT(int64, int64_t)
OXSHMEMI_FAST_WAIT(uint32, uint32_t)
OXSHMEMI_FAST_WAIT(uint64, uint64_t)
OXSHMEMI_FAST_WAIT(size, size_t)
OXSHMEMI_FAST_WAIT(ptrdiff, ptrdiff_t)
#undef OXSHMEMI_FAST_WAIT

#define OXSHMEMI_FAST_RMA(NAME, TYPE)                                                                      \
    __host__ __device__ inline void nvshmem_##NAME##_p(TYPE *dest, const TYPE value, int pe) {           \
        oxshmemi_fast::p<TYPE>(dest, value, pe);                                                         \
    }                                                                                                    \
    __host__ __device__ inline TYPE nvshmem_##NAME##_g(const TYPE *src, int pe) {                        \
        return oxshmemi_fast::g<TYPE>(src, pe);                                                          \
    }
OXSHMEMI_FAST_RMA(float, float)
OXSHMEMI_FAST_RMA(double, double)
OXSHMEMI_FAST_RMA(char, char)
OXSHMEMI_FAST_RMA(short, short)
OXSHMEMI_FAST_RMA(schar, signed char)
OXSHMEMI_FAST_RMA(int, int)
OXSHMEMI_FAST_RMA(long, long)
OXSHMEMI_FAST_RMA(longlong, long long)
OXSHMEMI_FAST_RMA(uchar, unsigned char)
OXSHMEMI_FAST_RMA(ushort, unsigned short)
OXSHMEMI_FAST_RMA(uint, unsigned int)
OXSHMEMI_FAST_RMA(ulong, unsigned long)
OXSHMEMI_FAST_RMA(ulonglong, unsigned long long)
OXSHMEMI_FAST_RMA(int8, int8_t)
OXSHMEMI_FAST_RMA(int16, int16_t)
OXSHMEMI_FAST_RMA(int32, int32_t)
OXSHMEMI_FAST_RMA(int64, int64_t)
OXSHMEMI_FAST_RMA(uint8, uint8_t)
OXSHMEMI_FAST_RMA(uint16, uint16_t)
OXSHMEMI_FAST_RMA(uint32, uint32_t)
OXSHMEMI_FAST_RMA(uint64, uint64_t)
OXSHMEMI_FAST_RMA(size, size_t)
OXSHMEMI_FAST_RMA(ptrdiff, ptrdiff_t)
#undef OXSHMEMI_FAST_RMA

#define OXSHMEMI_FAST_ADD(NAME, TYPE)                                                                      \
    __host__ __device__ inline TYPE nvshmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe) {  \
        return oxshmemi_fast::fetch_add<TYPE>(dest, value, pe, 1);                                       \
    }                                                                                                    \
    __host__ __device__ inline void nvshmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe) {        \
        oxshmemi_fast::fetch_add<TYPE>(dest, value, pe, 0);                                              \
    }
OXSHMEMI_FAST_ADD(int, int)
OXSHMEMI_FAST_ADD(long, long)
OXSHMEMI_FAST_ADD(longlong, long long)
OXSHMEMI_FAST_ADD(uint, unsigned int)
OXSHMEMI_FAST_ADD(ulong, unsigned long)
OXSHMEMI_FAST_ADD(ulonglong, unsigned long long)
OXSHMEMI_FAST_ADD(int32, int32_t)
OXSHMEMI_FAST_ADD(int64, int64_t)
OXSHMEMI_FAST_ADD(uint32, uint32_t)
OXSHMEMI_FAST_ADD(uint64, uint64_t)
OXSHMEMI_FAST_ADD(size, size_t)
OXSHMEMI_FAST_ADD(ptrdiff, ptrdiff_t)
#undef OXSHMEMI_FAST_ADD

/* signal_op on a P2P peer: set is a volatile store, add a relaxed system-scope atomic add (where
 * the peer's GPU has native P2P atomics with this one: amo_base), with no fence (NVSHMEM's;
 * ordering the data before the signal is put_signal's or fence's job). */
__host__ __device__ inline void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    char *r;
    if (sig_op == NVSHMEM_SIGNAL_SET) {
        if (oxshmemi_fast::p2p(sig_addr, pe, &r, (uint64_t)sig_addr % 8 != 0))
            *(volatile uint64_t *)r = signal;
        else
            oxshmemi_cold_signal_set(sig_addr, signal, pe);
    } else if (sig_op == NVSHMEM_SIGNAL_ADD) {
        if (oxshmemi_fast::p2p<true>(sig_addr, pe, &r, (uint64_t)sig_addr % 8 != 0))
            oxshmemi_fast::red_add((uint64_t *)r, signal);
        else
            oxshmemi_cold_signal_add(sig_addr, signal, pe);
    } else {
        oxshmemi_cold_signal_op(sig_addr, signal, sig_op, pe);
    }
}

#define OXSHMEMI_FAST_PUT(SUFFIX, G)                                                                        \
    __device__ inline void nvshmemx_putmem##SUFFIX(void *dest, const void *source, size_t bytes, int pe) {      \
        oxshmemi_fast::put<G>(dest, source, bytes, pe, 0);                                                  \
    }                                                                                                       \
    __device__ inline void nvshmemx_putmem_nbi##SUFFIX(void *dest, const void *source, size_t bytes, int pe) {  \
        oxshmemi_fast::put<G>(dest, source, bytes, pe, 1);                                                  \
    }                                                                                                       \
    __device__ inline void nvshmemx_putmem_signal##SUFFIX(void *dest, const void *source, size_t bytes,         \
                                                          uint64_t *sig_addr, uint64_t signal, int sig_op,  \
                                                          int pe) {                                         \
        oxshmemi_fast::put<G>(dest, source, bytes, pe, 0, sig_addr, signal, sig_op);                        \
    }                                                                                                       \
    __device__ inline void nvshmemx_putmem_signal_nbi##SUFFIX(void *dest, const void *source, size_t bytes,     \
                                                              uint64_t *sig_addr, uint64_t signal,          \
                                                              int sig_op, int pe) {                         \
        oxshmemi_fast::put<G>(dest, source, bytes, pe, 1, sig_addr, signal, sig_op);                        \
    }
#define OXSHMEMI_FAST_GET(SUFFIX, G)                                                                        \
    __device__ inline void nvshmemx_getmem##SUFFIX(void *dest, const void *source, size_t bytes, int pe) {      \
        oxshmemi_fast::get<G>(dest, source, bytes, pe, 0);                                                  \
    }                                                                                                       \
    __device__ inline void nvshmemx_getmem_nbi##SUFFIX(void *dest, const void *source, size_t bytes, int pe) {  \
        oxshmemi_fast::get<G>(dest, source, bytes, pe, 1);                                                  \
    }
OXSHMEMI_FAST_GET(_warp, 1)
OXSHMEMI_FAST_GET(_block, 2)
#undef OXSHMEMI_FAST_GET
__host__ __device__ inline void nvshmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
    oxshmemi_fast::get<0>(dest, source, nelems, pe, 0);
}
__host__ __device__ inline void nvshmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    oxshmemi_fast::get<0>(dest, source, nelems, pe, 1);
}

OXSHMEMI_FAST_PUT(_warp, 1)
OXSHMEMI_FAST_PUT(_block, 2)
#undef OXSHMEMI_FAST_PUT

__host__ __device__ inline void nvshmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    oxshmemi_fast::put<0>(dest, source, nelems, pe, 0);
}
__host__ __device__ inline void nvshmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    oxshmemi_fast::put<0>(dest, source, nelems, pe, 1);
}
__device__ inline void nvshmem_putmem_signal(void *dest, const void *source, size_t bytes, uint64_t *sig_addr,
                                             uint64_t signal, int sig_op, int pe) {
    oxshmemi_fast::put<0>(dest, source, bytes, pe, 0, sig_addr, signal, sig_op);
}
__device__ inline void nvshmem_putmem_signal_nbi(void *dest, const void *source, size_t bytes, uint64_t *sig_addr,
                                                 uint64_t signal, int sig_op, int pe) {
    oxshmemi_fast::put<0>(dest, source, bytes, pe, 1, sig_addr, signal, sig_op);
}

/* fence: P2P stores are ordered by the system fence; IBGDA queues are completed out of line, as
 * is everything before the state is attached, and what the proxy ring still holds (the proxy
 * executes in ring order, but over P2P it carries the atomics of peers without native P2P
 * atomics, which a later store must not pass). */
__host__ __device__ inline void nvshmem_fence(void) {
    __threadfence_system();
    const uint64_t *ring = (const uint64_t *)oxshmemi_fast_d.ring;
    if (oxshmemi_fast_d.n_pes == 0 || oxshmemi_fast_d.ibgda ||
        (ring && *(const volatile uint64_t *)(ring + 1) <
                     *(const volatile uint64_t *)(oxshmemi_fast_d.heap_base + OXSHMEMI_RING_ISSUE_OFFSET)))
        oxshmemi_cold_fence();
}

/* quiet: with no IBGDA and nothing outstanding on the proxy ring (its completed counter has
 * reached its issue counter; both only grow), the P2P stores are complete after one system
 * fence. Otherwise (or before the state is attached) the out-of-line quiet drains the queues
 * and the ring. */
__host__ __device__ inline void nvshmem_quiet(void) {
    if (oxshmemi_fast_d.n_pes != 0 && !oxshmemi_fast_d.ibgda) {
        const uint64_t *ring = (const uint64_t *)oxshmemi_fast_d.ring;
        /* oxshmem_ring_t: completed at 8 (device_state.h); the ticket counter in the heap */
        if (!ring || *(const volatile uint64_t *)(ring + 1) >=
                         *(const volatile uint64_t *)(oxshmemi_fast_d.heap_base + OXSHMEMI_RING_ISSUE_OFFSET)) {
            __threadfence_system();
            return;
        }
    }
    oxshmemi_cold_quiet();
}

}  /* extern "C" */

#endif /* OXSHMEM_FAST_PATH_CUH */
