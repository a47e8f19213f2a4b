// put-with-signal (thread, warp, block; blocking and nbi; SET and ADD), signal_wait_until,
// signal_fetch, signal_op, and the ordering nvshmem_fence and nvshmem_quiet give: a flag
// written after a fence or quiet is never seen before the data written before it.
#include "cutest.h"

constexpr int N = 512;  // longs per message
constexpr int ROUNDS = 64;

// Symmetric layout (one allocation per kind).
struct Sym {
    long *data;       // 4 * N: areas 0..3 written by the left neighbour
    long *src;        // N: source, filled by the host
    uint64_t *sig;    // 8 signals
    int *flag;        // 2 flags for the fence/quiet rounds
    int *ord;         // ROUNDS * 16 ints of fence/quiet data, then 16 ints of staging
};

__global__ void k_put_signal(Sym s, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        // thread, blocking, SET
        nvshmem_putmem_signal(s.data, s.src, N * sizeof(long), s.sig + 0, 1, NVSHMEM_SIGNAL_SET, right);
        // thread, typed nbi, ADD (twice: the signal adds up)
        nvshmem_long_put_signal_nbi(s.data + N, s.src, N, s.sig + 1, 2, NVSHMEM_SIGNAL_ADD, right);
        nvshmem_quiet();
        nvshmemx_signal_op(s.sig + 1, 3, NVSHMEM_SIGNAL_ADD, right);
    }
    if (blockIdx.x == 0 && threadIdx.x < 32) {
        // warp form
        nvshmemx_putmem_signal_warp(s.data + 2 * N, s.src, N * sizeof(long), s.sig + 2, 7, NVSHMEM_SIGNAL_SET, right);
    }
    if (blockIdx.x == 1) {
        // block form (nbi) then quiet by the block
        nvshmemx_long_put_signal_nbi_block(s.data + 3 * N, s.src, N, s.sig + 3, 11, NVSHMEM_SIGNAL_SET, right);
        nvshmem_quiet();
    }
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        DCHECK(err, nvshmem_signal_wait_until(s.sig + 0, NVSHMEM_CMP_EQ, 1), 1);
        nvshmem_signal_wait_until(s.sig + 1, NVSHMEM_CMP_GE, 5);
        DCHECK(err, nvshmem_signal_fetch(s.sig + 1), 5);
        nvshmem_signal_wait_until(s.sig + 2, NVSHMEM_CMP_EQ, 7);
        nvshmem_signal_wait_until(s.sig + 3, NVSHMEM_CMP_NE, 0);
        DCHECK(err, nvshmem_signal_fetch(s.sig + 3), 11);
        for (int a = 0; a < 4; a++)
            for (int i = 0; i < N; i++) DCHECK(err, s.data[a * N + i], (long)left * 1000000 + i);
    }
}

// Every PE adds 3 to signal 4 and sets signal 5 (to its number + 1) on every PE.
__global__ void k_signal_op(Sym s, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    for (int pe = 0; pe < npes; pe++) {
        nvshmemx_signal_op(s.sig + 4, 3, NVSHMEM_SIGNAL_ADD, pe);
        if (pe == (me + 1) % npes) nvshmemx_signal_op(s.sig + 5, me + 1, NVSHMEM_SIGNAL_SET, pe);
    }
    DCHECK(err, nvshmem_signal_wait_until(s.sig + 4, NVSHMEM_CMP_EQ, 3 * npes), 3 * npes);
    int left = (me + npes - 1) % npes;
    nvshmem_signal_wait_until(s.sig + 5, NVSHMEM_CMP_GT, 0);
    DCHECK(err, nvshmem_signal_fetch(s.sig + 5), left + 1);
}

// ROUNDS rounds: PE writes 16 ints to the right neighbour, orders them before the flag with a
// fence (even rounds) or a quiet (odd rounds), then sets the flag to the round; the neighbour
// waits for the flag and checks every int. A second flag acknowledges the round.
__global__ void k_order(Sym s, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    int *vals = s.ord + ROUNDS * 16;  // symmetric staging (reused once the round is acknowledged)
    for (int r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < 16; i++) vals[i] = me * 10000 + r * 16 + i;
        nvshmem_int_put_nbi(s.ord + r * 16 % (ROUNDS * 16), vals, 16, right);
        if (r % 2) nvshmem_quiet(); else nvshmem_fence();
        nvshmem_int_p(s.flag, r, right);
        nvshmem_int_wait_until(s.flag, NVSHMEM_CMP_GE, r);
        for (int i = 0; i < 16; i++) DCHECK(err, s.ord[r * 16 % (ROUNDS * 16) + i], left * 10000 + r * 16 + i);
        // acknowledge, so the left neighbour does not overwrite before we read
        nvshmem_int_atomic_set(s.flag + 1, r, left);
        nvshmem_int_wait_until(s.flag + 1, NVSHMEM_CMP_GE, r);
    }
}

int main() {
    cutest_init("signal");
    int me = nvshmem_my_pe();
    cudaStream_t st;
    CUDA_CHECK(cudaStreamCreate(&st));
    Sym s;
    s.data = (long *)nvshmem_calloc(4 * N, sizeof(long));
    s.src = (long *)nvshmem_malloc(N * sizeof(long));
    s.sig = (uint64_t *)nvshmem_calloc(8, sizeof(uint64_t));
    s.flag = (int *)nvshmem_calloc(2, sizeof(int));
    s.ord = (int *)nvshmem_calloc(ROUNDS * 16 + 16, sizeof(int));
    CHECK(s.data && s.src && s.sig && s.flag && s.ord, "nvshmem_malloc/calloc returned NULL");
    long h[N];
    for (int i = 0; i < N; i++) h[i] = (long)me * 1000000 + i;
    CUDA_CHECK(cudaMemcpy(s.src, h, sizeof h, cudaMemcpyHostToDevice));
    DevErr *err = dev_err_new();
    nvshmem_barrier_all();

    k_put_signal<<<2, 128, 0, st>>>(s, err);
    dev_err_check(err, st, "k_put_signal (putmem_signal, put_signal_nbi, warp/block forms, signal_wait_until)");
    cutest_ok("put_signal thread/warp/block, nbi, SET/ADD, signal_wait_until EQ/GE/NE, signal_fetch");

    nvshmem_barrier_all();
    k_signal_op<<<1, 1, 0, st>>>(s, err);
    dev_err_check(err, st, "k_signal_op (signal_op ADD from every PE, SET from the left)");
    cutest_ok("signal_op ADD/SET to every PE");

    nvshmem_barrier_all();
    void *args[] = {&s, &err};
    COLL_LAUNCH(k_order, 1, 1, args, st);
    dev_err_check(err, st, "k_order (data before flag after fence/quiet)");
    cutest_ok("fence and quiet order puts before the flag (64 rounds)");

    nvshmem_barrier_all();
    nvshmem_free(s.data);
    nvshmem_free(s.src);
    nvshmem_free(s.sig);
    nvshmem_free(s.flag);
    nvshmem_free(s.ord);
    nvshmem_finalize();
    return 0;
}
