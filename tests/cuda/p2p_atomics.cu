// Device atomics and signal adds between PEs whose GPUs may lack native P2P atomics (issue 31,
// item 7): every PE adds into every PE's words (integer fetch_add/add of 32 and 64 bits,
// fetch_or, float and double fetch_add, signal_op add, putmem_signal with a signal add) from
// several threads at once, and checks the totals; then a ring of signal adds, each waited for on
// the device. Over P2P between GPUs without native P2P atomics (PCIe-only pairs; on the CPU
// target OXSHMEM_EMUCUDA_DEVICES=2 OXSHMEM_EMUCUDA_P2P_ATOMICS=0) the atomics to the other GPU
// go through the proxy, as NVSHMEM's do; the loads and stores stay P2P. Runs over P2P and the
// proxy (over IBGDA the float adds are not performed: docs/cuda.md). Only the public NVSHMEM
// API is used.
#include "cutest.h"

constexpr int THREADS = 32;
constexpr int ITERS = 4;

struct Area {
    int i32[2];
    unsigned long long u64[3];
    float f;
    double d;
    uint64_t sig[3];
    uint64_t mine;      // this PE's put_signal payload (symmetric: the proxy channel reaches it too)
    uint64_t data[64];  // put_signal payloads, one word per sending PE
};

__global__ void k_adds(Area *a, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    long long total = (long long)npes * THREADS * ITERS;
    if (threadIdx.x == 0) a->mine = 0xa70000ull + (uint64_t)me;
    __syncthreads();
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < npes; k++) {
            int pe = (me + k) % npes;
            int old = nvshmem_int_atomic_fetch_add(&a->i32[0], 1, pe);
            if (old < 0 || old >= total) dev_fail(err, __LINE__, old, -1);
            nvshmem_int_atomic_add(&a->i32[1], 2, pe);
            unsigned long long o64 = nvshmem_ulonglong_atomic_fetch_add(&a->u64[0], 1, pe);
            if (o64 >= (unsigned long long)total) dev_fail(err, __LINE__, (long long)o64, -1);
            nvshmem_ulonglong_atomic_add(&a->u64[1], 3, pe);
            nvshmem_ulonglong_atomic_fetch_or(&a->u64[2], 1ull << me, pe);
            float of = nvshmemx_float_atomic_fetch_add(&a->f, 1.0f, pe);
            if (of < 0.0f || of >= (float)total) dev_fail(err, __LINE__, (long long)of, -1);
            nvshmemx_double_atomic_add(&a->d, 0.5, pe);
            nvshmemx_signal_op(&a->sig[0], 1, NVSHMEM_SIGNAL_ADD, pe);
            // the payload lands P2P, its signal add after it (through the proxy where needed)
            nvshmemx_putmem_signal_block(&a->data[me], &a->mine, sizeof a->mine, &a->sig[1], 1, NVSHMEM_SIGNAL_ADD,
                                         pe);
        }
    }
    nvshmem_quiet();
}

// Each PE adds 1 to its right neighbour's sig[2], then waits for its own to reach `round` (the
// left neighbour may be a round ahead already).
__global__ void k_ring(Area *a, uint64_t round, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    nvshmemx_signal_op(&a->sig[2], 1, NVSHMEM_SIGNAL_ADD, (me + 1) % npes);
    uint64_t v = nvshmem_signal_wait_until(&a->sig[2], NVSHMEM_CMP_GE, round);
    if (v < round || v > 3) dev_fail(err, __LINE__, (long long)v, (long long)round);
}

int main() {
    cutest_init("p2p_atomics");
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    CHECK(npes <= 64, "at most 64 PEs (%d)", npes);
    Area *a = (Area *)nvshmem_calloc(1, sizeof(Area));
    CHECK(a, "nvshmem_calloc");
    DevErr *err = dev_err_new();
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));

    // Part 1: the adds from every PE to every PE.
    nvshmem_barrier_all();
    k_adds<<<1, THREADS, 0, s>>>(a, err);
    CUDA_CHECK(cudaGetLastError());
    dev_err_check(err, s, "k_adds");
    nvshmem_barrier_all();
    Area h;
    CUDA_CHECK(cudaMemcpy(&h, a, sizeof h, cudaMemcpyDeviceToHost));
    long long n = (long long)npes * THREADS * ITERS;
    CHECK(h.i32[0] == n, "int fetch_add total %d, expected %lld", h.i32[0], n);
    CHECK(h.i32[1] == 2 * n, "int add total %d, expected %lld", h.i32[1], 2 * n);
    CHECK(h.u64[0] == (unsigned long long)n, "ulonglong fetch_add total %llu, expected %lld", h.u64[0], n);
    CHECK(h.u64[1] == 3ull * n, "ulonglong add total %llu, expected %lld", h.u64[1], 3 * n);
    unsigned long long all = npes == 64 ? ~0ull : (1ull << npes) - 1;
    CHECK(h.u64[2] == all, "fetch_or bits %#llx, expected %#llx", h.u64[2], all);
    CHECK(h.f == (float)n, "float fetch_add total %g, expected %lld", (double)h.f, n);
    CHECK(h.d == 0.5 * (double)n, "double add total %g, expected %g", h.d, 0.5 * (double)n);
    CHECK(h.sig[0] == (uint64_t)n, "signal_op add total %llu, expected %lld", (unsigned long long)h.sig[0], n);
    CHECK(h.sig[1] == (uint64_t)npes * ITERS, "putmem_signal add total %llu, expected %d",
          (unsigned long long)h.sig[1], npes * ITERS);
    for (int pe = 0; pe < npes; pe++)
        CHECK(h.data[pe] == 0xa70000ull + (uint64_t)pe, "payload from PE %d: %#llx", pe,
              (unsigned long long)h.data[pe]);
    cutest_ok("integer, float and signal adds from every PE");

    // Part 2: a ring of signal adds, each waited for on the device (no host barrier between).
    for (uint64_t round = 1; round <= 3; round++) {
        k_ring<<<1, 1, 0, s>>>(a, round, err);
        CUDA_CHECK(cudaGetLastError());
        dev_err_check(err, s, "k_ring");
    }
    nvshmem_barrier_all();
    uint64_t ring = 0;
    CUDA_CHECK(cudaMemcpy(&ring, &a->sig[2], sizeof ring, cudaMemcpyDeviceToHost));
    CHECK(ring == 3, "ring signal %llu, expected 3", (unsigned long long)ring);
    cutest_ok("signal add ring waited on the device");

    (void)me;
    nvshmem_free(a);
    CUDA_CHECK(cudaStreamDestroy(s));
    nvshmem_finalize();
    return 0;
}
