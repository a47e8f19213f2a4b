/* Compiled (not run) by tests/header.rs as C99 and C11, with -Wall -Wextra -Werror -pedantic:
 * every header, the constants and types, typed routines, and in C11 the generic interfaces. */
#include <shmem.h>
#include <shmemx.h>
#include <mpp/shmem.h>
#include <mpp/shmemx.h>

static long lvar;
static int ivar[4];
static double dvar;
static long double ldvar;
static uint64_t sig;
static long psync[SHMEM_BARRIER_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

int use_shmem(void);
int use_shmem(void) {
    int provided = SHMEM_THREAD_SINGLE;
    int major, minor;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_team_t team = SHMEM_TEAM_INVALID;
    shmem_team_config_t config = {0};
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    size_t idx[4];
    int status[4] = {0, 0, 0, 0};
    long *heap;

    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0) return 1;
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    heap = (long *) shmem_malloc(4 * sizeof(long));
    shmem_long_put(heap, &lvar, 1, 0);
    shmem_int_p(&ivar[0], 3, 0);
    dvar = shmem_double_g(&dvar, 0);
    shmem_longdouble_p(&ldvar, 1.5L, 0);
    (void) shmem_int_atomic_fetch_add(&ivar[1], 1, 0);
    shmem_ctx_long_atomic_inc(SHMEM_CTX_DEFAULT, &lvar, 0);
    shmem_putmem_signal(heap, &lvar, sizeof lvar, &sig, 1, SHMEM_SIGNAL_ADD, 0);
    (void) shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 1);
    shmem_long_wait_until(&lvar, _SHMEM_CMP_NE, 0);
    (void) shmem_int_wait_until_any(ivar, 4, status, SHMEM_CMP_EQ, 1);
    (void) shmem_int_test_some(ivar, 4, idx, NULL, SHMEM_CMP_EQ, 1);
    (void) shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), &config, SHMEM_TEAM_NUM_CONTEXTS, &team);
    (void) shmem_team_create_ctx(team, SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE, &ctx);
    (void) shmem_long_sum_reduce(team, heap, heap, 1);
    (void) shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, &ldvar, &ldvar, 1);
    (void) shmem_broadcastmem(SHMEM_TEAM_SHARED, heap, heap, 8, 0);
    shmem_ctx_destroy(ctx);
    shmem_team_destroy(team);
    shmem_sync(0, 0, shmem_n_pes(), psync);
    (void) pwrk;
    (void) shmemx_heap_free();
    {
        /* The extensions of shmemx.h and their OpenSHMEM 1.6 names */
        shmemx_pcntr_t counters;
        uint64_t issued;
        shmem_team_t node = SHMEMX_TEAM_NODE;
        shmemx_register_gettid((shmemx_gettid_fn_t) 0);
        shmemx_int_ibput(ivar, ivar, 2, 2, 1, 2, 0);
        shmemx_ctx_ibget64(SHMEM_CTX_DEFAULT, heap, heap, 2, 2, 1, 2, 0);
        shmem_longdouble_ibget(&ldvar, &ldvar, 1, 1, 1, 1, 0);
        (void) shmemx_long_sum_inscan(node, heap, heap, 1);
        (void) shmem_complexd_sum_exscan(SHMEM_TEAM_WORLD, (double _Complex *) heap, (const double _Complex *) heap, 1);
        shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &counters);
        shmemx_pcntr_get_issued_write(SHMEM_CTX_DEFAULT, &issued);
        heap = (long *) shmem_malloc_with_hints(8, SHMEMX_MALLOC_NO_BARRIER);
        shmemx_signal_add(&sig, 1, 0);
        shmem_signal_set(&sig, counters.pending_put + issued, 0);
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
        shmemx_signal_set(SHMEM_CTX_DEFAULT, &sig, 1, 0);
        shmem_signal_add(SHMEM_CTX_DEFAULT, &sig, 1, 0);
#endif
    }
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
    shmem_put(heap, &lvar, 1, 0);
    shmem_put(SHMEM_CTX_DEFAULT, heap, &lvar, 1, 0);
    shmem_p(&dvar, 2.0, 0);
    shmem_p(SHMEM_CTX_DEFAULT, ivar, 4, 1);
    lvar = shmem_g(&lvar, 0);
    lvar = shmem_atomic_fetch_add(&lvar, 1L, 0);
    lvar = shmem_atomic_fetch(SHMEM_CTX_DEFAULT, (const long *) &lvar, 0);
    shmem_atomic_fetch_nbi(&lvar, &lvar, 0);
    shmem_wait_until(&lvar, SHMEM_CMP_EQ, 1L);
    (void) shmem_test_all_vector(ivar, 4, status, SHMEM_CMP_EQ, ivar);
    (void) shmem_sum_reduce(SHMEM_TEAM_WORLD, heap, heap, 1);
    (void) shmem_max_reduce(SHMEM_TEAM_WORLD, &ldvar, &ldvar, 1);
    (void) shmem_broadcast(SHMEM_TEAM_WORLD, ivar, ivar, 4, 0);
    (void) shmem_sync(SHMEM_TEAM_WORLD);
#else
    shmem_wait_until(&lvar, SHMEM_CMP_EQ, 1L);
    lvar = shmem_swap(&lvar, 2L, 0);
#endif
    shmem_free(heap);
    shmem_finalize();
    return 0;
}
