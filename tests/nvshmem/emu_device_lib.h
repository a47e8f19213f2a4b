/*
 * emu_device_lib.h -- what the tests of the CUDA back end under the emulated driver
 * (tests/emucuda) use in place of libnvshmem_device.a's host-callable AMO kernel: the same
 * callback signature (oxshmemi_register_device_amo), done with CPU atomics on the emulated GPU
 * memory, which is host memory. Included by gpu_heap.c, gpu_stream.c and gpu_ibgda.cu (C and
 * C++ alike).
 */
#ifndef OXSHMEM_TESTS_EMU_DEVICE_LIB_H
#define OXSHMEM_TESTS_EMU_DEVICE_LIB_H

#include <oxshmem/device_state.h>
#include <stdint.h>

/* How many atomics the stand-in carried out. */
static long emu_amo_calls;

#define EMU_AMO_WORD(T, p, op, v, cond, old)                                                   \
    do {                                                                                       \
        T *p_ = (T *)(p), v_ = (T)(v), e_ = (T)(cond);                                        \
        switch (op) {                                                                          \
            case OXSHMEM_AMO_FETCH: *(old) = __atomic_load_n(p_, __ATOMIC_SEQ_CST); break;     \
            case OXSHMEM_AMO_SET:                                                              \
            case OXSHMEM_AMO_SWAP: *(old) = __atomic_exchange_n(p_, v_, __ATOMIC_SEQ_CST); break; \
            case OXSHMEM_AMO_COMPARE_SWAP:                                                     \
                __atomic_compare_exchange_n(p_, &e_, v_, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
                *(old) = e_;                                                                   \
                break;                                                                         \
            case OXSHMEM_AMO_FETCH_ADD: *(old) = __atomic_fetch_add(p_, v_, __ATOMIC_SEQ_CST); break; \
            case OXSHMEM_AMO_FETCH_AND: *(old) = __atomic_fetch_and(p_, v_, __ATOMIC_SEQ_CST); break; \
            case OXSHMEM_AMO_FETCH_OR: *(old) = __atomic_fetch_or(p_, v_, __ATOMIC_SEQ_CST); break;   \
            default: *(old) = __atomic_fetch_xor(p_, v_, __ATOMIC_SEQ_CST);                    \
        }                                                                                      \
    } while (0)

/* The AMO callback: `flags` an OXSHMEM_AMO_* operation, | OXSHMEM_AMO_W64 for 64 bits. */
static int emu_amo(uint64_t addr, uint32_t flags, uint64_t value, uint64_t cond, uint64_t *old) {
    uint32_t op = flags & OXSHMEM_AMO_OP_MASK;
    emu_amo_calls++;
    if (flags & OXSHMEM_AMO_W64)
        EMU_AMO_WORD(uint64_t, addr, op, value, cond, old);
    else
        EMU_AMO_WORD(uint32_t, addr, op, value, cond, old);
    return 0;
}

#endif
