/*
 * The C11 interfaces of shmemx.h: shmemx_signal_add/_set and OpenSHMEM 1.6's
 * shmem_signal_add/_set take a context as their first argument or none, as OpenSHMEM 1.6's C11
 * synopsis writes them (and Sandia OpenSHMEM's tests call shmemx_signal_set). And the
 * performance counters of a program initialized with shmem_init (SHMEM_THREAD_SINGLE), which
 * count in a block of their own (ext.c runs at SHMEM_THREAD_MULTIPLE).
 */
#include "oxtest.h"

#include <shmemx.h>

static uint64_t sig[8];

int main(void) {
    int me, npes, right, left, p;
    shmem_ctx_t ctx;
    ox_init("ext_c11");
    me = ox_me;
    npes = ox_npes;
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    CHECK_EQ(0, shmem_ctx_create(0, &ctx), "shmem_ctx_create");
    shmem_barrier_all();
    for (p = 0; p < npes; p++) {
        shmemx_signal_add(&sig[0], 1, p);
        shmemx_signal_add(SHMEM_CTX_DEFAULT, &sig[1], 2, p);
        shmem_signal_add(&sig[2], 3, p);
        shmem_signal_add(ctx, &sig[3], 4, p);
    }
    shmemx_signal_set(&sig[4], 10 + (uint64_t)me, right);
    shmemx_signal_set(ctx, &sig[5], 20 + (uint64_t)me, right);
    shmem_signal_set(&sig[6], 30 + (uint64_t)me, right);
    shmem_signal_set(SHMEM_CTX_DEFAULT, &sig[7], 40 + (uint64_t)me, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK_EQ((uint64_t)npes, sig[0], "shmemx_signal_add(sig, ...)");
    CHECK_EQ(2 * (uint64_t)npes, sig[1], "shmemx_signal_add(ctx, sig, ...)");
    CHECK_EQ(3 * (uint64_t)npes, sig[2], "shmem_signal_add(sig, ...)");
    CHECK_EQ(4 * (uint64_t)npes, sig[3], "shmem_signal_add(ctx, sig, ...)");
    CHECK_EQ(10 + (uint64_t)left, sig[4], "shmemx_signal_set(sig, ...)");
    CHECK_EQ(20 + (uint64_t)left, sig[5], "shmemx_signal_set(ctx, sig, ...)");
    CHECK_EQ(30 + (uint64_t)left, sig[6], "shmem_signal_set(sig, ...)");
    CHECK_EQ(40 + (uint64_t)left, sig[7], "shmem_signal_set(ctx, sig, ...)");
    {
        shmemx_pcntr_t a, b, c0, c1;
        long *h = (long *)shmem_malloc(4 * sizeof(long));
        long v = 3;
        int i;
        shmem_barrier_all();
        shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &a);
        shmemx_pcntr_get_all(ctx, &c0);
        for (i = 0; i < 7; i++) shmem_long_put(h, &v, 1, right);
        for (i = 0; i < 3; i++) v += shmem_long_g(h, right);
        (void)shmem_long_atomic_fetch_add(&h[1], 1, right);
        shmem_long_atomic_inc(&h[2], right);
        shmem_ctx_long_put(ctx, h, &v, 1, right);
        (void)shmem_ctx_long_atomic_fetch(ctx, &h[1], right);
        shmem_ctx_quiet(ctx);
        shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &b);
        shmemx_pcntr_get_all(ctx, &c1);
        CHECK_EQ(8, b.pending_put - a.pending_put, "writes issued (SHMEM_THREAD_SINGLE)");
        CHECK_EQ(8, b.completed_put - a.completed_put, "writes completed (SHMEM_THREAD_SINGLE)");
        CHECK_EQ(4, b.pending_get - a.pending_get, "reads issued (SHMEM_THREAD_SINGLE)");
        CHECK_EQ(4, b.completed_get - a.completed_get, "reads completed (SHMEM_THREAD_SINGLE)");
        CHECK_EQ(1, c1.pending_put - c0.pending_put, "ctx writes (SHMEM_THREAD_SINGLE)");
        CHECK_EQ(1, c1.pending_get - c0.pending_get, "ctx reads (SHMEM_THREAD_SINGLE)");
        shmem_barrier_all();
        shmem_free(h);
    }
    shmem_ctx_destroy(ctx);
    return ox_finish();
}
