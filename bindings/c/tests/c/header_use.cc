// Compiled (not run) by tests/header.rs as C++11 and C++17 with -Wall -Wextra -Werror: every
// header, and the C++ overloads with and without a context.
#include <shmem.h>
#include <shmemx.h>
#include <mpp/shmem.h>

static long lvar;
static int ivar[4];
static double dvar;
static long double ldvar;
static uint64_t sig;

int use_shmem();
int use_shmem() {
    shmem_init();
    long *heap = static_cast<long *>(shmem_malloc(4 * sizeof(long)));
    shmem_put(heap, &lvar, 1, 0);
    shmem_put(SHMEM_CTX_DEFAULT, heap, &lvar, 1, 0);
    shmem_p(&dvar, 2.0, 0);
    shmem_p(SHMEM_CTX_DEFAULT, ivar, 4, 1);
    shmem_p(&ldvar, 1.5L, 0);
    lvar = shmem_g(&lvar, 0);
    lvar = shmem_atomic_fetch_add(&lvar, 1L, 0);
    lvar = shmem_atomic_fetch(SHMEM_CTX_DEFAULT, static_cast<const long *>(&lvar), 0);
    shmem_atomic_fetch_nbi(&lvar, &lvar, 0);
    shmem_put_signal(heap, &lvar, 1, &sig, 1, SHMEM_SIGNAL_SET, 0);
    shmem_wait_until(&lvar, SHMEM_CMP_EQ, 1L);
    (void) shmem_test_all_vector(ivar, 4, nullptr, SHMEM_CMP_EQ, ivar);
    (void) shmem_sum_reduce(SHMEM_TEAM_WORLD, heap, heap, 1);
    (void) shmem_max_reduce(SHMEM_TEAM_WORLD, &ldvar, &ldvar, 1);
    (void) shmem_broadcast(SHMEM_TEAM_WORLD, ivar, ivar, 4, 0);
    (void) shmem_sync(SHMEM_TEAM_WORLD);
    (void) shmemx_heap_size();
    shmemx_pcntr_t counters;
    shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &counters);
    shmemx_long_ibput(heap, heap, 2, 2, 1, 2, 0);
    (void) shmem_long_sum_inscan(SHMEMX_TEAM_NODE, heap, heap, 1);
    shmemx_signal_add(&sig, counters.pending_put, 0);
    shmemx_signal_set(SHMEM_CTX_DEFAULT, &sig, 1, 0);
    shmem_signal_add(SHMEM_CTX_DEFAULT, &sig, 1, 0);
    shmem_ctx_signal_set(SHMEM_CTX_DEFAULT, &sig, 1, 0);
    shmem_free(heap);
    shmem_finalize();
    return 0;
}
