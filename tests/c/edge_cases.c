/*
 * What unchanged OpenSHMEM programs do at the edges of the specification, each of which once
 * went wrong here:
 *
 *   config_mask    shmem_team_split_strided/_split_2d apply only the options whose bit is in
 *                  config_mask: a config of 3 contexts with mask 0 gives the default (0)
 *   invalid_ctx    the specification's own team/context example: PEs outside a team keep
 *                  SHMEM_CTX_INVALID and call shmem_ctx_quiet/shmem_ctx_fence on it (no-ops)
 *   hints          shmem_malloc_with_hints with hint bits the library does not know still
 *                  allocates (an implementation may ignore hints)
 *   zero_length    every collective with zero elements and NULL buffers, team forms and the
 *                  deprecated active-set forms: a silent success, matched on every PE
 *   negative       shmem_team_split_strided with negative strides (OpenSHMEM 1.6, as Sandia
 *                  OpenSHMEM): team PE i is parent PE start + i*stride; translate_pe and
 *                  collectives on the new teams; splits that leave the parent fail everywhere
 *
 * Prints "PE n: edge_cases: OK (k checks)" on success (see oxtest.h).
 */
#include "oxtest.h"

#include <limits.h>

static int me, npes;

static long g_psync[SHMEM_REDUCE_SYNC_SIZE];
static int g_pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long double g_ldwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int g_src[64], g_dst[64 * 8];
static long g_sum_src, g_sum_dst;

static void config_mask(void) {
    shmem_team_config_t conf = {.num_contexts = 3}, got = {.num_contexts = -1};
    shmem_team_t t = SHMEM_TEAM_INVALID, x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, &conf, 0, &t), "split_strided, mask 0");
    CHECK_EQ(0, shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &got), "team_get_config");
    CHECK_EQ(0, got.num_contexts, "num_contexts of a team split with config_mask 0");
    shmem_team_destroy(t);
    CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, &conf, SHMEM_TEAM_NUM_CONTEXTS, &t),
             "split_strided, mask SHMEM_TEAM_NUM_CONTEXTS");
    CHECK_EQ(0, shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &got), "team_get_config");
    CHECK_EQ(3, got.num_contexts, "num_contexts of a team split with SHMEM_TEAM_NUM_CONTEXTS");
    shmem_team_destroy(t);
    /* PEs may leave the ignored fields as they like */
    conf.num_contexts = 100 + me;
    CHECK_EQ(0, shmem_team_split_2d(SHMEM_TEAM_WORLD, 1, &conf, 0, &x, &conf, 0, &y), "split_2d, masks 0");
    got.num_contexts = -1;
    CHECK_EQ(0, shmem_team_get_config(x, SHMEM_TEAM_NUM_CONTEXTS, &got), "team_get_config(x)");
    CHECK_EQ(0, got.num_contexts, "num_contexts of the x team split with mask 0");
    got.num_contexts = -1;
    CHECK_EQ(0, shmem_team_get_config(y, SHMEM_TEAM_NUM_CONTEXTS, &got), "team_get_config(y)");
    CHECK_EQ(0, got.num_contexts, "num_contexts of the y team split with mask 0");
    shmem_team_destroy(x);
    shmem_team_destroy(y);
}

/* After the specification's example for shmem_team_create_ctx / shmem_ctx_get_team. */
static void invalid_ctx(void) {
    static int counter;
    shmem_team_t odds = SHMEM_TEAM_INVALID;
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    int n_odds = npes / 2;
    if (n_odds > 0) {
        CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n_odds, NULL, 0, &odds), "split odds");
    }
    if (odds != SHMEM_TEAM_INVALID) {
        CHECK_EQ(0, shmem_team_create_ctx(odds, 0, &ctx), "team_create_ctx(odds)");
        shmem_ctx_int_atomic_inc(ctx, &counter, 0);
    } else {
        CHECK(shmem_team_create_ctx(odds, 0, &ctx) != 0, "team_create_ctx(SHMEM_TEAM_INVALID) fails");
        CHECK(ctx == SHMEM_CTX_INVALID, "team_create_ctx(SHMEM_TEAM_INVALID) gives SHMEM_CTX_INVALID");
    }
    /* Every PE, member or not: */
    shmem_ctx_fence(ctx);
    shmem_ctx_quiet(ctx);
    shmem_ctx_quiet(SHMEM_CTX_INVALID);
    shmem_ctx_fence(SHMEM_CTX_INVALID);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    if (me == 1) CHECK_EQ(n_odds, counter, "increments on the odds' contexts");
    if (odds != SHMEM_TEAM_INVALID) shmem_team_destroy(odds);
    shmem_barrier_all();
}

static void hints(void) {
    static const long unknown[] = {~SHMEM_MALLOC_ATOMICS_REMOTE, 1L << 20, LONG_MIN, -1L};
    size_t k;
    for (k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        int *p = (int *)shmem_malloc_with_hints(8 * sizeof(int), unknown[k]);
        CHECK(p != NULL, "shmem_malloc_with_hints(32, %#lx)", (unsigned long)unknown[k]);
        if (p == NULL) continue;
        p[0] = 0;
        shmem_barrier_all();
        shmem_int_atomic_inc(p, 0);
        shmem_barrier_all();
        if (me == 0) CHECK_EQ(npes, p[0], "atomics in memory from shmem_malloc_with_hints(%#lx)", (unsigned long)unknown[k]);
        shmem_free(p);
    }
}

static void zero_length(void) {
    int k;
    for (k = 0; k < SHMEM_REDUCE_SYNC_SIZE; k++) g_psync[k] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    /* team forms: 0 on success */
    CHECK_EQ(0, shmem_broadcastmem(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0), "broadcastmem of 0 bytes");
    CHECK_EQ(0, shmem_int_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, npes - 1), "int_broadcast of 0");
    CHECK_EQ(0, shmem_collectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0), "collectmem of 0");
    CHECK_EQ(0, shmem_long_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0), "long_collect of 0");
    CHECK_EQ(0, shmem_fcollectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0), "fcollectmem of 0");
    CHECK_EQ(0, shmem_double_fcollect(SHMEM_TEAM_WORLD, NULL, NULL, 0), "double_fcollect of 0");
    CHECK_EQ(0, shmem_alltoallmem(SHMEM_TEAM_WORLD, NULL, NULL, 0), "alltoallmem of 0");
    CHECK_EQ(0, shmem_int_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0), "int_alltoall of 0");
    CHECK_EQ(0, shmem_alltoallsmem(SHMEM_TEAM_WORLD, NULL, NULL, 2, 3, 0), "alltoallsmem of 0");
    CHECK_EQ(0, shmem_long_alltoalls(SHMEM_TEAM_WORLD, NULL, NULL, 1, 1, 0), "long_alltoalls of 0");
    CHECK_EQ(0, shmem_int_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0), "int_sum_reduce of 0");
    CHECK_EQ(0, shmem_double_max_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0), "double_max_reduce of 0");
    CHECK_EQ(0, shmem_ulong_xor_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0), "ulong_xor_reduce of 0");
    CHECK_EQ(0, shmem_longdouble_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0), "longdouble_sum_reduce of 0");
    /* deprecated active-set forms, back to back on one pSync */
    shmem_broadcast32(NULL, NULL, 0, 0, 0, 0, npes, g_psync);
    shmem_broadcast64(NULL, NULL, 0, npes - 1, 0, 0, npes, g_psync);
    shmem_collect32(NULL, NULL, 0, 0, 0, npes, g_psync);
    shmem_collect64(NULL, NULL, 0, 0, 0, npes, g_psync);
    shmem_fcollect32(NULL, NULL, 0, 0, 0, npes, g_psync);
    shmem_fcollect64(NULL, NULL, 0, 0, 0, npes, g_psync);
    shmem_alltoall32(NULL, NULL, 0, 0, 0, npes, g_psync);
    shmem_alltoall64(NULL, NULL, 0, 0, 0, npes, g_psync);
    shmem_alltoalls32(NULL, NULL, 1, 1, 0, 0, 0, npes, g_psync);
    shmem_alltoalls64(NULL, NULL, 2, 3, 0, 0, 0, npes, g_psync);
    shmem_int_sum_to_all(NULL, NULL, 0, 0, 0, npes, g_pwrk, g_psync);
    shmem_int_max_to_all(NULL, NULL, 0, 0, 0, npes, g_pwrk, g_psync);
    shmem_longdouble_prod_to_all(NULL, NULL, 0, 0, 0, npes, g_ldwrk, g_psync);
    /* the collectives stay matched: real ones after them work */
    for (k = 0; k < 4; k++) g_src[k] = me * 10 + k;
    CHECK_EQ(0, shmem_int_fcollect(SHMEM_TEAM_WORLD, g_dst, g_src, 4), "fcollect after the zero-length ones");
    for (k = 0; k < 4 * npes; k++) CHECK_EQ((k / 4) * 10 + k % 4, g_dst[k], "fcollect element %d", k);
    shmem_fcollect32(g_dst, g_src, 2, 0, 0, npes, g_psync);
    for (k = 0; k < 2 * npes; k++) CHECK_EQ((k / 2) * 10 + k % 2, g_dst[k], "fcollect32 element %d", k);
    shmem_barrier_all();
}

/* The world PE of PE i of the team split from the world with start/stride. */
static int strided(int start, int stride, int i) { return start + stride * i; }

static void check_team(shmem_team_t t, int start, int stride, int size, const char *what) {
    int i, idx = -1;
    long e = 0;
    for (i = 0; i < size; i++)
        if (strided(start, stride, i) == me) idx = i;
    CHECK_EQ(idx >= 0, t != SHMEM_TEAM_INVALID, "%s: whether PE %d got a team", what, me);
    if (t == SHMEM_TEAM_INVALID) return;
    CHECK_EQ(idx, shmem_team_my_pe(t), "%s: team_my_pe", what);
    CHECK_EQ(size, shmem_team_n_pes(t), "%s: team_n_pes", what);
    for (i = 0; i < size; i++) {
        CHECK_EQ(strided(start, stride, i), shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD),
                 "%s: translate_pe(%d) to the world", what, i);
        CHECK_EQ(i, shmem_team_translate_pe(SHMEM_TEAM_WORLD, strided(start, stride, i), t),
                 "%s: translate_pe of world PE %d into the team", what, strided(start, stride, i));
        e += strided(start, stride, i);
    }
    g_sum_src = me;
    g_sum_dst = -1;
    CHECK_EQ(0, shmem_long_sum_reduce(t, &g_sum_dst, &g_sum_src, 1), "%s: sum_reduce", what);
    CHECK_EQ(e, g_sum_dst, "%s: sum of world PE numbers over the team", what);
    g_src[0] = me;
    CHECK_EQ(0, shmem_int_fcollect(t, g_dst, g_src, 1), "%s: fcollect", what);
    for (i = 0; i < size; i++) CHECK_EQ(strided(start, stride, i), g_dst[i], "%s: fcollect element %d (team order)", what, i);
    g_src[0] = 1000 + me;
    CHECK_EQ(0, shmem_int_broadcast(t, g_dst, g_src, 1, 0), "%s: broadcast", what);
    CHECK_EQ(1000 + start, g_dst[0], "%s: broadcast from team PE 0", what);
}

static void negative(void) {
    /* (start, stride, size) in the world */
    int specs[8][3], nspecs = 0, k;
    specs[nspecs][0] = npes - 1, specs[nspecs][1] = -1, specs[nspecs++][2] = npes;
    specs[nspecs][0] = npes - 1, specs[nspecs][1] = -2, specs[nspecs++][2] = (npes + 1) / 2;
    specs[nspecs][0] = npes - 1, specs[nspecs][1] = -1, specs[nspecs++][2] = 1;
    specs[nspecs][0] = 0, specs[nspecs][1] = -3, specs[nspecs++][2] = 1;
    if (npes >= 3) specs[nspecs][0] = npes - 2, specs[nspecs][1] = -1, specs[nspecs++][2] = npes - 1;
    if (npes >= 4) specs[nspecs][0] = npes - 1, specs[nspecs][1] = -3, specs[nspecs++][2] = (npes + 2) / 3;
    for (k = 0; k < nspecs; k++) {
        char what[96];
        shmem_team_t t = (shmem_team_t)&what; /* overwritten on every PE */
        snprintf(what, sizeof what, "split_strided(%d, %d, %d)", specs[k][0], specs[k][1], specs[k][2]);
        CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, specs[k][0], specs[k][1], specs[k][2], NULL, 0, &t),
                 "%s", what);
        check_team(t, specs[k][0], specs[k][1], specs[k][2], what);
        if (t != SHMEM_TEAM_INVALID) shmem_team_destroy(t);
    }
    /* a split of the reversed world with stride 2 keeps its (reversed) order */
    {
        shmem_team_t rev, sub;
        CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev), "reverse the world");
        CHECK_EQ(0, shmem_team_split_strided(rev, 0, 2, (npes + 1) / 2, NULL, 0, &sub), "evens of the reversed world");
        check_team(sub, npes - 1, -2, (npes + 1) / 2, "every other PE of the reversed world");
        if (sub != SHMEM_TEAM_INVALID) shmem_team_destroy(sub);
        CHECK_EQ(0, shmem_team_split_strided(rev, npes - 1, -1, npes, NULL, 0, &sub), "reverse the reversed world");
        check_team(sub, 0, 1, npes, "the reversed reversed world");
        shmem_team_destroy(sub);
        shmem_team_destroy(rev);
    }
    /* leaving the parent fails on every PE */
    {
        shmem_team_t t = (shmem_team_t)&k;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, -1, 2, NULL, 0, &t) != 0, "split_strided(0, -1, 2) fails");
        CHECK(t == SHMEM_TEAM_INVALID, "split_strided(0, -1, 2) gives SHMEM_TEAM_INVALID");
        t = (shmem_team_t)&k;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, INT_MIN, 2, NULL, 0, &t) != 0,
              "split_strided(n-1, INT_MIN, 2) fails");
        CHECK(t == SHMEM_TEAM_INVALID, "split_strided(n-1, INT_MIN, 2) gives SHMEM_TEAM_INVALID");
    }
    shmem_barrier_all();
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : "all";
    ox_init("edge_cases");
    me = ox_me;
    npes = ox_npes;
    if (!strcmp(only, "all") || !strcmp(only, "config_mask")) config_mask();
    if (!strcmp(only, "all") || !strcmp(only, "invalid_ctx")) invalid_ctx();
    if (!strcmp(only, "all") || !strcmp(only, "hints")) hints();
    if (!strcmp(only, "all") || !strcmp(only, "zero_length")) zero_length();
    if (!strcmp(only, "all") || !strcmp(only, "negative")) negative();
    return ox_finish();
}
