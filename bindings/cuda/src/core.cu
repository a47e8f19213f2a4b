// The out-of-line cores of the device API, compiled once: routing, the proxy ring, the IBGDA
// operations, the byte-generic put/get (one instance per scope), AMOs, barriers and the
// byte-generic collectives. The headers only declare them unless OXSHMEMI_CORE_IMPL is
// defined, so the generated wrappers' files stay thin (relocatable device code links them).
#define OXSHMEMI_CORE_IMPL
#include "oxshmem_device.cuh"

namespace oxshmemi {

#define OXSHMEMI_INSTANTIATE(V)                                                                              \
    template __device__ void put_bytes<V>(uint32_t, void *, const void *, ptrdiff_t, ptrdiff_t, size_t, size_t, \
                                          int, bool, uint64_t *, uint64_t, int);                             \
    template __device__ void get_bytes<V>(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, size_t, int, bool); \
    template __device__ int team_barrier<V>(uint32_t, nvshmem_team_t, bool);

OXSHMEMI_INSTANTIATE(Thread)
OXSHMEMI_INSTANTIATE(Warp)
OXSHMEMI_INSTANTIATE(Block)
OXSHMEMI_INSTANTIATE(Warpgroup)

}  // namespace oxshmemi

// The cold paths of the inline fast paths (bindings/c/include/device_host/oxshmem_fast_path.cuh):
// called when the peer is not P2P, the range is not symmetric, the state is not attached, or
// IBGDA or the proxy ring has work to complete. Each routes again from the start.
#if OXSHMEMI_DEVICE_PASS
extern "C" {
__device__ void oxshmemi_cold_p(void *dest, uint64_t bits, int pe, uint32_t bytes) {
    oxshmemi::p_bits(dest, bits, bytes, pe);
}
__device__ uint64_t oxshmemi_cold_g(const void *src, int pe, uint32_t bytes) { return oxshmemi::g_bits(src, bytes, pe); }
// The same by width, so that the inline caller passes no width and only the value's bits.
__device__ void oxshmemi_cold_p1(void *dest, uint32_t bits, int pe) { oxshmemi::p_bits(dest, bits, 1, pe); }
__device__ void oxshmemi_cold_p2(void *dest, uint32_t bits, int pe) { oxshmemi::p_bits(dest, bits, 2, pe); }
__device__ void oxshmemi_cold_p4(void *dest, uint32_t bits, int pe) { oxshmemi::p_bits(dest, bits, 4, pe); }
__device__ void oxshmemi_cold_p8(void *dest, uint64_t bits, int pe) { oxshmemi::p_bits(dest, bits, 8, pe); }
__device__ uint32_t oxshmemi_cold_g1(const void *src, int pe) { return (uint32_t)oxshmemi::g_bits(src, 1, pe); }
__device__ uint32_t oxshmemi_cold_g2(const void *src, int pe) { return (uint32_t)oxshmemi::g_bits(src, 2, pe); }
__device__ uint32_t oxshmemi_cold_g4(const void *src, int pe) { return (uint32_t)oxshmemi::g_bits(src, 4, pe); }
__device__ uint64_t oxshmemi_cold_g8(const void *src, int pe) { return oxshmemi::g_bits(src, 8, pe); }
__device__ void oxshmemi_cold_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    oxshmemi::signal_op_impl(sig_addr, signal, sig_op, pe);
}
__device__ void oxshmemi_cold_signal_set(uint64_t *sig_addr, uint64_t signal, int pe) {
    oxshmemi::signal_op_impl(sig_addr, signal, NVSHMEM_SIGNAL_SET, pe);
}
__device__ void oxshmemi_cold_signal_add(uint64_t *sig_addr, uint64_t signal, int pe) {
    oxshmemi::signal_op_impl(sig_addr, signal, NVSHMEM_SIGNAL_ADD, pe);
}
__device__ uint32_t oxshmemi_cold_fetch_add4(void *dest, uint32_t value, int pe) {
    return (uint32_t)oxshmemi::amo_bits(dest, oxshmemi::Amo::FetchAdd, value, 0, 4, pe, true);
}
__device__ uint64_t oxshmemi_cold_fetch_add8(void *dest, uint64_t value, int pe) {
    return oxshmemi::amo_bits(dest, oxshmemi::Amo::FetchAdd, value, 0, 8, pe, true);
}
__device__ void oxshmemi_cold_add4(void *dest, uint32_t value, int pe) {
    oxshmemi::amo_bits(dest, oxshmemi::Amo::FetchAdd, value, 0, 4, pe, false);
}
__device__ void oxshmemi_cold_add8(void *dest, uint64_t value, int pe) {
    oxshmemi::amo_bits(dest, oxshmemi::Amo::FetchAdd, value, 0, 8, pe, false);
}
/// bytes_fetch: the word's bytes (4 or 8), | 0x100 when the old value is wanted.
__device__ uint64_t oxshmemi_cold_fetch_add(void *dest, uint64_t value, int pe, uint32_t bytes_fetch) {
    return oxshmemi::amo_bits(dest, oxshmemi::Amo::FetchAdd, value, 0, bytes_fetch & 0xff, pe,
                              (bytes_fetch & 0x100) != 0);
}
__device__ void oxshmemi_cold_quiet(void) { oxshmemi::quiet_impl(); }
/// how: the scope (0 thread, 1 warp, 2 block) | nbi << 4 | sig_op << 8; sig_addr null: no signal.
__device__ void oxshmemi_cold_put(void *dest, const void *src, size_t bytes, int pe, uint32_t how, uint64_t *sig_addr,
                                  uint64_t signal) {
    uint32_t op = sig_addr ? OXSHMEM_OP_PUT_SIGNAL : OXSHMEM_OP_PUT;
    bool nbi = (how >> 4 & 1) != 0;
    int sig_op = (int)(how >> 8);
    if ((how & 3) == 1)
        oxshmemi::put_bytes<oxshmemi::Warp>(op, dest, src, 1, 1, bytes, 1, pe, nbi, sig_addr, signal, sig_op);
    else if ((how & 3) == 2)
        oxshmemi::put_bytes<oxshmemi::Block>(op, dest, src, 1, 1, bytes, 1, pe, nbi, sig_addr, signal, sig_op);
    else
        oxshmemi::put_bytes<oxshmemi::Thread>(op, dest, src, 1, 1, bytes, 1, pe, nbi, sig_addr, signal, sig_op);
}
__device__ void oxshmemi_cold_fence(void) { oxshmemi::fence_impl(); }
/// The inline wait_until's first look was not satisfied: the library's wait, by word type, and
/// by word type and comparison (for a compile-time constant cmp: one argument fewer to pass).
#define OXSHMEMI_COLD_WAIT_CMP(SUFFIX, T, NAME, CMP)                           \
    __device__ void oxshmemi_cold_wait_##NAME##_##SUFFIX(T *ivar, T value) { \
        oxshmemi::api::wait_until<oxshmemi::Thread, T>(ivar, CMP, value);    \
    }
#define OXSHMEMI_COLD_WAIT(SUFFIX, T)                                                 \
    __device__ void oxshmemi_cold_wait_until_##SUFFIX(T *ivar, int cmp, T value) { \
        oxshmemi::api::wait_until<oxshmemi::Thread, T>(ivar, cmp, value);           \
    }                                                                               \
    OXSHMEMI_COLD_WAIT_CMP(SUFFIX, T, eq, NVSHMEM_CMP_EQ)                           \
    OXSHMEMI_COLD_WAIT_CMP(SUFFIX, T, ne, NVSHMEM_CMP_NE)                           \
    OXSHMEMI_COLD_WAIT_CMP(SUFFIX, T, gt, NVSHMEM_CMP_GT)                           \
    OXSHMEMI_COLD_WAIT_CMP(SUFFIX, T, ge, NVSHMEM_CMP_GE)                           \
    OXSHMEMI_COLD_WAIT_CMP(SUFFIX, T, lt, NVSHMEM_CMP_LT)                           \
    OXSHMEMI_COLD_WAIT_CMP(SUFFIX, T, le, NVSHMEM_CMP_LE)
OXSHMEMI_COLD_WAIT(i16, int16_t)
OXSHMEMI_COLD_WAIT(u16, uint16_t)
OXSHMEMI_COLD_WAIT(i32, int32_t)
OXSHMEMI_COLD_WAIT(u32, uint32_t)
OXSHMEMI_COLD_WAIT(i64, int64_t)
OXSHMEMI_COLD_WAIT(u64, uint64_t)
#undef OXSHMEMI_COLD_WAIT
#undef OXSHMEMI_COLD_WAIT_CMP
/// how: the scope (0 thread, 1 warp, 2 block) | nbi << 4.
__device__ void oxshmemi_cold_get(void *dest, const void *src, size_t bytes, int pe, uint32_t how) {
    bool nbi = (how >> 4 & 1) != 0;
    if ((how & 3) == 1)
        oxshmemi::get_bytes<oxshmemi::Warp>(dest, src, 1, 1, bytes, 1, pe, nbi);
    else if ((how & 3) == 2)
        oxshmemi::get_bytes<oxshmemi::Block>(dest, src, 1, 1, bytes, 1, pe, nbi);
    else
        oxshmemi::get_bytes<oxshmemi::Thread>(dest, src, 1, 1, bytes, 1, pe, nbi);
}
}
#endif
