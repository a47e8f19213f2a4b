// Every device atomic family on every type NVSHMEM defines it for:
//   standard (int long longlong uint ulong ulonglong int32 int64 uint32 uint64 size ptrdiff):
//     fetch, set, swap, compare_swap; and fetch_add, add, fetch_inc, inc on all of them but
//     longlong, int64 and ptrdiff, which NVSHMEM's device API leaves out ("lack of CUDA
//     support", nvshmem_defines.h)
//   extended (float double): fetch, set, swap
//   bitwise (uint ulong ulonglong int32 int64 uint32 uint64): fetch_and/and, fetch_or/or,
//     fetch_xor/xor
// Commutative updates go from every PE to every PE (the totals are checked); the others
// go to the right neighbour, whose slot only this PE touches (each result is checked).
#include "cutest.h"

// Per type: 8 slots of 8 bytes (every type here fits), one area per type.
constexpr int SLOTS = 8;
constexpr int NTYPES = 32;

#define STD_TYPES(X)                                                                  \
    X(int, int, 0) X(long, long, 1) X(longlong, long long, 2) X(uint, unsigned int, 3) \
    X(ulong, unsigned long, 4) X(ulonglong, unsigned long long, 5) X(int32, int32_t, 6) \
    X(int64, int64_t, 7) X(uint32, uint32_t, 8) X(uint64, uint64_t, 9) X(size, size_t, 10) \
    X(ptrdiff, ptrdiff_t, 11)
#define ADD_TYPES(X)                                                                  \
    X(int, int, 0) X(long, long, 1) X(uint, unsigned int, 3) X(ulong, unsigned long, 4)  \
    X(ulonglong, unsigned long long, 5) X(int32, int32_t, 6) X(uint32, uint32_t, 8)      \
    X(uint64, uint64_t, 9) X(size, size_t, 10)
#define EXT_TYPES(X) X(float, float, 12) X(double, double, 13)
#define BIT_TYPES(X)                                                                  \
    X(uint, unsigned int, 14) X(ulong, unsigned long, 15) X(ulonglong, unsigned long long, 16) \
    X(int32, int32_t, 17) X(int64, int64_t, 18) X(uint32, uint32_t, 19) X(uint64, uint64_t, 20)

// Standard types, slot 4: set/fetch/swap/compare_swap to the right neighbour.
#define STD_KERNEL(Name, T, idx)                                                                  \
    __global__ void k_std_##Name(unsigned long long *area, DevErr *err) {                         \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), right = (me + 1) % npes;                \
        nvshmem_##Name##_atomic_set(a + 4, (T)(me + 10), right);                                  \
        DCHECK(err, nvshmem_##Name##_atomic_fetch(a + 4, right), me + 10);                        \
        DCHECK(err, nvshmem_##Name##_atomic_swap(a + 4, (T)(me + 20), right), me + 10);           \
        DCHECK(err, nvshmem_##Name##_atomic_compare_swap(a + 4, (T)(me + 20), (T)(me + 30), right), me + 20); \
        DCHECK(err, nvshmem_##Name##_atomic_compare_swap(a + 4, (T)999, (T)(me + 40), right), me + 30); \
        DCHECK(err, nvshmem_##Name##_atomic_fetch(a + 4, right), me + 30);                        \
    }                                                                                             \
    __global__ void k_std_verify_##Name(unsigned long long *area, DevErr *err) {                  \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), left = (me + npes - 1) % npes;          \
        DCHECK(err, a[4], left + 30);                                                             \
    }
STD_TYPES(STD_KERNEL)

// Arithmetic: slots 0 fetch_add, 1 add, 2 inc, 3 fetch_inc, from every PE to every PE.
#define ADD_KERNEL(Name, T, idx)                                                                  \
    __global__ void k_add_##Name(unsigned long long *area, DevErr *err) {                         \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int me = nvshmem_my_pe(), npes = nvshmem_n_pes();                                         \
        for (int pe = 0; pe < npes; pe++) {                                                       \
            T old = nvshmem_##Name##_atomic_fetch_add(a + 0, (T)(me + 1), pe);                    \
            if (!((long long)old >= 0 && (long long)old < npes * (npes + 1) / 2))                 \
                dev_fail(err, __LINE__, (long long)old, -1);                                      \
            nvshmem_##Name##_atomic_add(a + 1, (T)2, pe);                                         \
            nvshmem_##Name##_atomic_inc(a + 2, pe);                                               \
            T f = nvshmem_##Name##_atomic_fetch_inc(a + 3, pe);                                   \
            if (!((long long)f >= 0 && (long long)f < npes)) dev_fail(err, __LINE__, (long long)f, -1); \
        }                                                                                         \
    }                                                                                             \
    __global__ void k_add_verify_##Name(unsigned long long *area, DevErr *err) {                  \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int npes = nvshmem_n_pes();                                                               \
        DCHECK(err, a[0], npes * (npes + 1) / 2);                                                 \
        DCHECK(err, a[1], 2 * npes);                                                              \
        DCHECK(err, a[2], npes);                                                                  \
        DCHECK(err, a[3], npes);                                                                  \
    }
ADD_TYPES(ADD_KERNEL)

// Extended types: set/fetch/swap to the right neighbour (values exact in float).
#define EXT_KERNEL(Name, T, idx)                                                                  \
    __global__ void k_ext_##Name(unsigned long long *area, DevErr *err) {                         \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), right = (me + 1) % npes;                \
        nvshmem_##Name##_atomic_set(a, (T)(me + 0.5), right);                                     \
        DCHECK(err, nvshmem_##Name##_atomic_fetch(a, right) * 2, 2 * me + 1);                     \
        DCHECK(err, nvshmem_##Name##_atomic_swap(a, (T)(me + 2.25), right) * 2, 2 * me + 1);      \
        DCHECK(err, nvshmem_##Name##_atomic_fetch(a, right) * 4, 4 * me + 9);                     \
    }                                                                                             \
    __global__ void k_ext_verify_##Name(unsigned long long *area, DevErr *err) {                  \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), left = (me + npes - 1) % npes;          \
        DCHECK(err, a[0] * 4, 4 * left + 9);                                                      \
    }
EXT_TYPES(EXT_KERNEL)

// Bitwise types, all PEs to all PEs: slot 0 starts 0 and gets or(bit me) and fetch_or;
// slot 1 starts all ones and gets and(~bit me); slot 2 starts 0 and gets xor(bit me),
// slot 3 gets fetch_xor twice (back to its start, 5). Bits stay below 32 (npes <= 16).
#define BIT_KERNEL(Name, T, idx)                                                                  \
    __global__ void k_bit_##Name(unsigned long long *area, DevErr *err) {                         \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int me = nvshmem_my_pe(), npes = nvshmem_n_pes();                                         \
        T bit = (T)1 << me, hi = (T)1 << (me + 16);                                               \
        for (int pe = 0; pe < npes; pe++) {                                                       \
            nvshmem_##Name##_atomic_or(a + 0, bit, pe);                                           \
            T o = nvshmem_##Name##_atomic_fetch_or(a + 0, hi, pe);                                \
            if (((unsigned long long)o >> (me + 16)) & 1) dev_fail(err, __LINE__, (long long)o, 0); \
            nvshmem_##Name##_atomic_and(a + 1, (T)~bit, pe);                                      \
            T n = nvshmem_##Name##_atomic_fetch_and(a + 1, (T)~hi, pe);                           \
            if (!(((unsigned long long)n >> (me + 16)) & 1)) dev_fail(err, __LINE__, (long long)n, 1); \
            nvshmem_##Name##_atomic_xor(a + 2, bit, pe);                                          \
            nvshmem_##Name##_atomic_fetch_xor(a + 3, hi, pe);                                     \
            nvshmem_##Name##_atomic_fetch_xor(a + 3, hi, pe);                                     \
        }                                                                                         \
    }                                                                                             \
    __global__ void k_bit_verify_##Name(unsigned long long *area, DevErr *err) {                  \
        T *a = (T *)(area + idx * SLOTS);                                                         \
        int npes = nvshmem_n_pes();                                                               \
        T lo = (T)(((T)1 << npes) - 1), all = (T)(lo | (lo << 16));                               \
        DCHECK(err, (unsigned long long)a[0], (unsigned long long)all);                           \
        DCHECK(err, (unsigned long long)a[1], (unsigned long long)(T)~all);                       \
        DCHECK(err, (unsigned long long)a[2], (unsigned long long)lo);                            \
        DCHECK(err, (unsigned long long)a[3], 5ull);                                              \
    }
BIT_TYPES(BIT_KERNEL)

// Host-side initial values of the bitwise slots.
template <typename T>
static void init_bits(unsigned long long *area, int idx) {
    T v[SLOTS] = {0};
    v[1] = (T)~(T)0;
    v[3] = 5;
    CUDA_CHECK(cudaMemcpy((T *)(area + idx * SLOTS), v, sizeof v, cudaMemcpyHostToDevice));
}

int main() {
    cutest_init("amo");
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    CHECK(nvshmem_n_pes() <= 16, "this test needs at most 16 PEs, got %d", nvshmem_n_pes());
    unsigned long long *area = (unsigned long long *)nvshmem_calloc(NTYPES * SLOTS, sizeof(unsigned long long));
    CHECK(area, "nvshmem_calloc returned NULL");
    DevErr *err = dev_err_new();
#define INIT_BITS(Name, T, idx) init_bits<T>(area, idx);
    BIT_TYPES(INIT_BITS)
    nvshmem_barrier_all();

#define RUN(kind, Name, T, idx)                                                    \
    k_##kind##_##Name<<<1, 1, 0, s>>>(area, err);                                  \
    dev_err_check(err, s, "k_" #kind "_" #Name " (" #T ")");
#define RUN_STD(Name, T, idx) RUN(std, Name, T, idx)
#define RUN_ADD(Name, T, idx) RUN(add, Name, T, idx)
#define RUN_EXT(Name, T, idx) RUN(ext, Name, T, idx)
#define RUN_BIT(Name, T, idx) RUN(bit, Name, T, idx)
    STD_TYPES(RUN_STD)
    ADD_TYPES(RUN_ADD)
    EXT_TYPES(RUN_EXT)
    BIT_TYPES(RUN_BIT)
    nvshmem_barrier_all();
#define VERIFY(kind, Name, T, idx)                                                 \
    k_##kind##_verify_##Name<<<1, 1, 0, s>>>(area, err);                           \
    dev_err_check(err, s, "k_" #kind "_verify_" #Name " (" #T ", after the barrier)");
#define VERIFY_STD(Name, T, idx) VERIFY(std, Name, T, idx)
#define VERIFY_ADD(Name, T, idx) VERIFY(add, Name, T, idx)
#define VERIFY_EXT(Name, T, idx) VERIFY(ext, Name, T, idx)
#define VERIFY_BIT(Name, T, idx) VERIFY(bit, Name, T, idx)
    STD_TYPES(VERIFY_STD)
    cutest_ok("standard AMOs fetch/set/swap/compare_swap on 12 types");
    ADD_TYPES(VERIFY_ADD)
    cutest_ok("fetch_add/add/fetch_inc/inc from every PE to every PE on 9 types");
    EXT_TYPES(VERIFY_EXT)
    cutest_ok("extended AMOs (fetch/set/swap) on float and double");
    BIT_TYPES(VERIFY_BIT)
    cutest_ok("bitwise AMOs (and/or/xor, fetch and not) on 7 types");

    nvshmem_barrier_all();
    nvshmem_free(area);
    nvshmem_finalize();
    return 0;
}
