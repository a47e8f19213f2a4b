/*
 * Sandia OpenSHMEM's extensions (shmemx.h) and their OpenSHMEM 1.6 names, every routine by name:
 *
 *   signals   shmemx_[ctx_]signal_add/_set and shmem_[ctx_]signal_add/_set: sums and last
 *             values on every PE, and put + fence + signal_add delivering the data first
 *   ibput     shmemx_[ctx_]TYPE_ibput/_ibget and shmem_[ctx_]TYPE_ibput/_ibget for the 24 RMA
 *             types, shmemx_/shmem_[ctx_]ibput/ibget{8..128}: strided blocks, block size 1,
 *             contiguous, overlapping source blocks; everything else untouched
 *   scans     shmemx_/shmem_TYPE_sum_inscan/_exscan for every sum type (complex and long double
 *             too), on the world, a reversed team and SHMEMX_TEAM_NODE, in place and not; long
 *             scans of many mailbox-sized chunks
 *   node      SHMEMX_TEAM_NODE: the PEs that share memory (SHMEM_TEAM_SHARED's)
 *   hints     shmem_malloc_with_hints with SHMEMX_MALLOC_NO_BARRIER, then shmem_sync_all
 *   pcntr     shmemx_pcntr_*: exact counts of writes and reads issued and completed, per
 *             context, over threads; get_all against the single getters
 *   gettid    shmemx_register_gettid before init: private contexts per named thread (Sandia
 *             OpenSHMEM's own test), and a private context used by the same named thread from
 *             another system thread
 *
 * Modes (argv[1]): none runs everything; "scan_mismatch" has PE 0 call an exclusive scan while
 * the others call an inclusive one (every PE must get an error, none hang); "gettid_foreign"
 * uses a private context under another name than its creator's (the job must end).
 *
 * Expected values are computed here with plain C arithmetic.
 */
#include "oxtest.h"

#include <complex.h>
#include <pthread.h>
#include <shmemx.h>

static int me, npes, right, left;
static shmem_ctx_t ctx; /* a context of our own (not private), beside SHMEM_CTX_DEFAULT */

#define V(T, p, i, k) OX_VAL(T, p, i, k)
#define SENT(T) ((T)0x5A)

/* ---- gettid: a logical thread id per system thread, settable (user-level threads) ---------- */

static __thread uint64_t tl_id;
static __thread int tl_named;
static uint64_t gettid_calls;

static uint64_t my_gettid(void) {
    __atomic_fetch_add(&gettid_calls, 1, __ATOMIC_RELAXED);
    /* unnamed threads: a value of their own (the address of a thread-local is unique per thread) */
    return tl_named ? tl_id : (uint64_t)(uintptr_t)&tl_id;
}

static void name_thread(uint64_t id) {
    tl_id = id;
    tl_named = 1;
}

/* ---- signals -------------------------------------------------------------------------------- */

static uint64_t sig[12];
static long sdata[2][8];

static void signals(void) {
    long src[8];
    int p, i;
    memset(sig, 0, sizeof sig);
    shmem_barrier_all();
    for (p = 0; p < npes; p++) shmemx_signal_add(&sig[0], (uint64_t)me + 1, p);
    for (p = 0; p < npes; p++) shmem_signal_add(&sig[1], 2 * ((uint64_t)me + 1), p);
    shmemx_ctx_signal_add(ctx, &sig[2], 10 * ((uint64_t)me + 1), right);
    shmem_ctx_signal_add(ctx, &sig[3], 100 + (uint64_t)me, right);
    shmemx_signal_set(&sig[4], 1000 + (uint64_t)me, right);
    shmem_signal_set(&sig[5], 2000 + (uint64_t)me, right);
    shmemx_ctx_signal_set(ctx, &sig[6], 3000 + (uint64_t)me, right);
    shmem_ctx_signal_set(ctx, &sig[7], 4000 + (uint64_t)me, right);
    /* data, then the signal: whoever sees the signal sees the data */
    for (i = 0; i < 8; i++) src[i] = 7L * me + i;
    shmem_long_put(sdata[0], src, 8, right);
    shmem_fence();
    shmemx_signal_add(&sig[8], 1, right);
    CHECK_EQ(1, shmem_signal_wait_until(&sig[8], SHMEM_CMP_EQ, 1), "signal_add after put+fence");
    for (i = 0; i < 8; i++) CHECK_EQ(7L * left + i, sdata[0][i], "data before signal_add [%d]", i);
    /* a set signal after a put: the reader sees the value set */
    for (i = 0; i < 8; i++) src[i] = 9L * me - i;
    shmem_ctx_long_put(ctx, sdata[1], src, 8, right);
    shmem_ctx_fence(ctx);
    shmem_ctx_signal_set(ctx, &sig[9], 5 + (uint64_t)me, right);
    (void)shmem_signal_wait_until(&sig[9], SHMEM_CMP_NE, 0);
    for (i = 0; i < 8; i++) CHECK_EQ(9L * left - i, sdata[1][i], "data before ctx_signal_set [%d]", i);
    CHECK_EQ(5 + (uint64_t)left, sig[9], "ctx_signal_set value");
    /* the adds from every PE all arrive */
    (void)shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, (uint64_t)npes * (npes + 1) / 2);
    (void)shmem_signal_wait_until(&sig[1], SHMEM_CMP_EQ, (uint64_t)npes * (npes + 1));
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK_EQ((uint64_t)npes * (npes + 1) / 2, shmem_signal_fetch(&sig[0]), "shmemx_signal_add from every PE");
    CHECK_EQ((uint64_t)npes * (npes + 1), shmem_signal_fetch(&sig[1]), "shmem_signal_add from every PE");
    CHECK_EQ(10 * ((uint64_t)left + 1), sig[2], "shmemx_ctx_signal_add");
    CHECK_EQ(100 + (uint64_t)left, sig[3], "shmem_ctx_signal_add");
    CHECK_EQ(1000 + (uint64_t)left, sig[4], "shmemx_signal_set");
    CHECK_EQ(2000 + (uint64_t)left, sig[5], "shmem_signal_set");
    CHECK_EQ(3000 + (uint64_t)left, sig[6], "shmemx_ctx_signal_set");
    CHECK_EQ(4000 + (uint64_t)left, sig[7], "shmem_ctx_signal_set");
    CHECK_EQ(0, sig[10], "signal untouched");
    shmem_barrier_all();
}

/* ---- blocked strided RMA -------------------------------------------------------------------- */

#define LEN 20 /* elements per region (4 regions) */

/* e[] = SENT, then block k (bs elements) of who's values (element k*sst + j, salt key) at
 * k*dst + j */
#define IB_EXPECT(T, e, dst, sst, bs, nb, who, key)                                            \
    do {                                                                                       \
        int k_, j_;                                                                            \
        for (k_ = 0; k_ < LEN; k_++) e[k_] = SENT(T);                                          \
        for (k_ = 0; k_ < (nb); k_++)                                                          \
            for (j_ = 0; j_ < (bs); j_++) e[k_ * (dst) + j_] = V(T, who, k_ * (sst) + j_, key); \
    } while (0)

#define IB_CHECK(e, got, what)                                                                 \
    do {                                                                                       \
        int q_;                                                                                \
        for (q_ = 0; q_ < LEN; q_++) CHECK_EQ(e[q_], (got)[q_], "%s %s [%d]", tn, what, q_);   \
    } while (0)

#define IB_TEST(N, T)                                                                          \
    static void ib_##N(void) {                                                                 \
        const char *tn = #N;                                                                   \
        T *h = (T *)shmem_malloc(4 * LEN * sizeof(T));                                         \
        T src[LEN], loc[LEN], e[LEN];                                                          \
        int i;                                                                                 \
        for (i = 0; i < 4 * LEN; i++) h[i] = SENT(T);                                          \
        shmem_barrier_all();                                                                   \
        /* ---- ibput to the right neighbour, one region per form ---- */                      \
        for (i = 0; i < LEN; i++) src[i] = V(T, me, i, 30);                                    \
        shmemx_##N##_ibput(h, src, 5, 4, 3, 4, right);                                         \
        for (i = 0; i < LEN; i++) src[i] = V(T, me, i, 31);                                    \
        shmemx_ctx_##N##_ibput(ctx, h + LEN, src, 3, 2, 3, 4, right); /* source blocks overlap */ \
        for (i = 0; i < LEN; i++) src[i] = V(T, me, i, 32);                                    \
        shmem_##N##_ibput(h + 2 * LEN, src, 2, 1, 1, 6, right); /* blocks of 1: iput */         \
        for (i = 0; i < LEN; i++) src[i] = V(T, me, i, 33);                                    \
        shmem_ctx_##N##_ibput(ctx, h + 3 * LEN, src, 3, 3, 3, 4, right); /* contiguous */       \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        IB_EXPECT(T, e, 5, 4, 3, 4, left, 30);                                                 \
        IB_CHECK(e, h, "shmemx_ibput(dst 5, sst 4, bsize 3, nblocks 4)");                      \
        IB_EXPECT(T, e, 3, 2, 3, 4, left, 31);                                                 \
        IB_CHECK(e, h + LEN, "shmemx_ctx_ibput(dst 3, sst 2, bsize 3, nblocks 4)");            \
        IB_EXPECT(T, e, 2, 1, 1, 6, left, 32);                                                 \
        IB_CHECK(e, h + 2 * LEN, "shmem_ibput(dst 2, sst 1, bsize 1, nblocks 6)");             \
        IB_EXPECT(T, e, 3, 3, 3, 4, left, 33);                                                 \
        IB_CHECK(e, h + 3 * LEN, "shmem_ctx_ibput(dst 3, sst 3, bsize 3, nblocks 4)");         \
        shmem_barrier_all();                                                                   \
        /* ---- ibget from the right neighbour ---- */                                         \
        for (i = 0; i < LEN; i++) {                                                            \
            h[i] = V(T, me, i, 40);                                                            \
            h[LEN + i] = V(T, me, i, 41);                                                      \
            h[2 * LEN + i] = V(T, me, i, 42);                                                  \
            h[3 * LEN + i] = V(T, me, i, 43);                                                  \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        for (i = 0; i < LEN; i++) loc[i] = SENT(T);                                            \
        shmemx_##N##_ibget(loc, h, 5, 4, 3, 4, right);                                         \
        IB_EXPECT(T, e, 5, 4, 3, 4, right, 40);                                                \
        IB_CHECK(e, loc, "shmemx_ibget(dst 5, sst 4, bsize 3, nblocks 4)");                    \
        for (i = 0; i < LEN; i++) loc[i] = SENT(T);                                            \
        shmemx_ctx_##N##_ibget(ctx, loc, h + LEN, 1, 3, 1, 5, right);                          \
        IB_EXPECT(T, e, 1, 3, 1, 5, right, 41);                                                \
        IB_CHECK(e, loc, "shmemx_ctx_ibget(dst 1, sst 3, bsize 1, nblocks 5)");                \
        for (i = 0; i < LEN; i++) loc[i] = SENT(T);                                            \
        shmem_##N##_ibget(loc, h + 2 * LEN, 3, 4, 3, 4, right);                                \
        IB_EXPECT(T, e, 3, 4, 3, 4, right, 42);                                                \
        IB_CHECK(e, loc, "shmem_ibget(dst 3, sst 4, bsize 3, nblocks 4)");                     \
        for (i = 0; i < LEN; i++) loc[i] = SENT(T);                                            \
        shmem_ctx_##N##_ibget(ctx, loc, h + 3 * LEN, 6, 6, 2, 3, right);                       \
        IB_EXPECT(T, e, 6, 6, 2, 3, right, 43);                                                \
        IB_CHECK(e, loc, "shmem_ctx_ibget(dst 6, sst 6, bsize 2, nblocks 3)");                 \
        shmem_barrier_all(); /* the sources stay until every PE has read them */              \
        shmem_free(h);                                                                         \
    }
OX_RMA_TYPES(IB_TEST)

/* The sized forms move elements of ES bytes: byte b of who's pattern with salt key. */
static unsigned char pat(int who, size_t b, int key) {
    return (unsigned char)(who * 31 + b * 7 + key * 13 + 1);
}

/* e = 0x5A bytes, then block k of who's elements (k*sst + j) at element k*dst + j */
static void sized_expect(unsigned char *e, size_t es, int dst, int sst, int bs, int nb, int who, int key) {
    int k, j;
    size_t q;
    memset(e, 0x5A, LEN * es);
    for (k = 0; k < nb; k++)
        for (j = 0; j < bs; j++)
            for (q = 0; q < es; q++) e[(size_t)(k * dst + j) * es + q] = pat(who, (size_t)(k * sst + j) * es + q, key);
}

static void sized_check(const unsigned char *e, const unsigned char *got, size_t es, const char *what) {
    size_t q;
    for (q = 0; q < LEN * es; q++) {
        if (e[q] != got[q]) {
            CHECK_EQ(e[q], got[q], "%s (elements of %zu bytes) byte %zu", what, es, q);
            return;
        }
    }
    CHECK(1, "%s", what);
}

#define SIZED_TEST(S, ES)                                                                      \
    static void ib_sized_##S(void) {                                                           \
        const size_t es = ES;                                                                  \
        unsigned char *h = (unsigned char *)shmem_malloc(4 * LEN * es);                        \
        unsigned char src[LEN * ES], loc[LEN * ES], e[LEN * ES];                               \
        size_t b;                                                                              \
        memset(h, 0x5A, 4 * LEN * es);                                                         \
        shmem_barrier_all();                                                                   \
        for (b = 0; b < LEN * es; b++) src[b] = pat(me, b, 50);                                \
        shmemx_ibput##S(h, src, 5, 4, 3, 4, right);                                            \
        shmemx_ctx_ibput##S(ctx, h + LEN * es, src, 2, 3, 2, 4, right);                        \
        shmem_ibput##S(h + 2 * LEN * es, src, 3, 3, 3, 4, right);                              \
        shmem_ctx_ibput##S(ctx, h + 3 * LEN * es, src, 3, 1, 1, 5, right);                     \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        sized_expect(e, es, 5, 4, 3, 4, left, 50);                                             \
        sized_check(e, h, es, "shmemx_ibput" #S);                                              \
        sized_expect(e, es, 2, 3, 2, 4, left, 50);                                             \
        sized_check(e, h + LEN * es, es, "shmemx_ctx_ibput" #S);                               \
        sized_expect(e, es, 3, 3, 3, 4, left, 50);                                             \
        sized_check(e, h + 2 * LEN * es, es, "shmem_ibput" #S);                                \
        sized_expect(e, es, 3, 1, 1, 5, left, 50);                                             \
        sized_check(e, h + 3 * LEN * es, es, "shmem_ctx_ibput" #S);                            \
        shmem_barrier_all();                                                                   \
        for (b = 0; b < 4 * LEN * es; b++) h[b] = pat(me, b % (LEN * es), 51);                 \
        shmem_barrier_all();                                                                   \
        memset(loc, 0x5A, sizeof loc);                                                         \
        shmemx_ibget##S(loc, h, 5, 4, 3, 4, right);                                            \
        sized_expect(e, es, 5, 4, 3, 4, right, 51);                                            \
        sized_check(e, loc, es, "shmemx_ibget" #S);                                            \
        memset(loc, 0x5A, sizeof loc);                                                         \
        shmemx_ctx_ibget##S(ctx, loc, h + LEN * es, 1, 3, 1, 5, right);                        \
        sized_expect(e, es, 1, 3, 1, 5, right, 51);                                            \
        sized_check(e, loc, es, "shmemx_ctx_ibget" #S);                                        \
        memset(loc, 0x5A, sizeof loc);                                                         \
        shmem_ibget##S(loc, h + 2 * LEN * es, 3, 4, 3, 4, right);                              \
        sized_expect(e, es, 3, 4, 3, 4, right, 51);                                            \
        sized_check(e, loc, es, "shmem_ibget" #S);                                             \
        memset(loc, 0x5A, sizeof loc);                                                         \
        shmem_ctx_ibget##S(ctx, loc, h + 3 * LEN * es, 6, 6, 2, 3, right);                     \
        sized_expect(e, es, 6, 6, 2, 3, right, 51);                                            \
        sized_check(e, loc, es, "shmem_ctx_ibget" #S);                                         \
        shmem_barrier_all();                                                                   \
        shmem_free(h);                                                                         \
    }
OX_BITS_SIZES(SIZED_TEST)

/* ---- prefix sums ---------------------------------------------------------------------------- */

#define NS 7
/* source element i of team member p (small values: every sum is exact and in range) */
#define SCAN_VAL(T, p, i) ((T)((p) + 1 + (i) % 5))

/* Runs one scan routine F (in place when inplace) and checks member tme's result. */
#define SCAN_ONE(N, T, F, excl, inplace)                                                       \
    do {                                                                                       \
        int i_, p_;                                                                            \
        T *d_ = (inplace) ? src : dst;                                                         \
        for (i_ = 0; i_ < NS; i_++) {                                                          \
            src[i_] = SCAN_VAL(T, tme, i_);                                                    \
            if (!(inplace)) dst[i_] = SENT(T);                                                 \
        }                                                                                      \
        CHECK_EQ(0, F(team, d_, src, NS), "%s " #F "%s status (%s)", tn, (inplace) ? " in place" : "", team_name); \
        for (i_ = 0; i_ < NS; i_++) {                                                          \
            T e_ = (T)0;                                                                       \
            for (p_ = 0; p_ < ((excl) ? tme : tme + 1); p_++) e_ = (T)(e_ + SCAN_VAL(T, p_, i_)); \
            CHECK_EQ(e_, d_[i_], "%s " #F "%s [%d] (%s)", tn, (inplace) ? " in place" : "", i_, team_name); \
        }                                                                                      \
    } while (0)

#define SCAN_TEST(N, T)                                                                        \
    static void scan_##N(shmem_team_t team, const char *team_name) {                           \
        const char *tn = #N;                                                                   \
        T *src = (T *)shmem_malloc(NS * sizeof(T)), *dst = (T *)shmem_malloc(NS * sizeof(T));  \
        if (team != SHMEM_TEAM_INVALID) {                                                      \
            int tme = shmem_team_my_pe(team);                                                  \
            SCAN_ONE(N, T, shmemx_##N##_sum_inscan, 0, 0);                                     \
            SCAN_ONE(N, T, shmemx_##N##_sum_exscan, 1, 0);                                     \
            SCAN_ONE(N, T, shmem_##N##_sum_inscan, 0, 0);                                      \
            SCAN_ONE(N, T, shmem_##N##_sum_exscan, 1, 0);                                      \
            SCAN_ONE(N, T, shmemx_##N##_sum_inscan, 0, 1);                                     \
            SCAN_ONE(N, T, shmem_##N##_sum_exscan, 1, 1);                                      \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(dst);                                                                       \
        shmem_free(src);                                                                       \
    }
OX_REDUCE_ARITH_TYPES(SCAN_TEST)

/* complex: small Gaussian integers, so that every sum is exact */
#define CSCAN_VAL(T, p, i) ((T)(((p) + 1 + (i) % 2) + ((p) % 2 ? 1 : -1) * ((i) % 3) * I))
#define CHECK_CEQ(expected, got, ...)                                                          \
    do {                                                                                       \
        ox_checks++;                                                                           \
        if ((expected) != (got)) {                                                             \
            char w_[256];                                                                      \
            snprintf(w_, sizeof w_, __VA_ARGS__);                                              \
            ox_fail("%s: expected %g%+gi got %g%+gi", w_, (double)creal(expected),             \
                    (double)cimag(expected), (double)creal(got), (double)cimag(got));          \
        }                                                                                      \
    } while (0)
#define CSCAN_ONE(T, F, excl)                                                                  \
    do {                                                                                       \
        int i_, p_;                                                                            \
        for (i_ = 0; i_ < NS; i_++) {                                                          \
            src[i_] = CSCAN_VAL(T, tme, i_);                                                   \
            dst[i_] = 7;                                                                       \
        }                                                                                      \
        CHECK_EQ(0, F(team, dst, src, NS), "%s " #F " status (%s)", tn, team_name);            \
        for (i_ = 0; i_ < NS; i_++) {                                                          \
            T e_ = 0;                                                                          \
            for (p_ = 0; p_ < ((excl) ? tme : tme + 1); p_++) e_ += CSCAN_VAL(T, p_, i_);      \
            CHECK_CEQ(e_, dst[i_], "%s " #F " [%d] (%s)", tn, i_, team_name);                  \
        }                                                                                      \
    } while (0)
#define CSCAN_TEST(N, T)                                                                       \
    static void scan_##N(shmem_team_t team, const char *team_name) {                           \
        const char *tn = #N;                                                                   \
        T *src = (T *)shmem_malloc(NS * sizeof(T)), *dst = (T *)shmem_malloc(NS * sizeof(T));  \
        if (team != SHMEM_TEAM_INVALID) {                                                      \
            int tme = shmem_team_my_pe(team);                                                  \
            CSCAN_ONE(T, shmemx_##N##_sum_inscan, 0);                                          \
            CSCAN_ONE(T, shmemx_##N##_sum_exscan, 1);                                          \
            CSCAN_ONE(T, shmem_##N##_sum_inscan, 0);                                           \
            CSCAN_ONE(T, shmem_##N##_sum_exscan, 1);                                           \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(dst);                                                                       \
        shmem_free(src);                                                                       \
    }
CSCAN_TEST(complexf, float _Complex)
CSCAN_TEST(complexd, double _Complex)

/* Long scans: many chunks of a mailbox, so the pipelined chain runs; in place and not. */
static void scan_large(shmem_team_t team, const char *team_name) {
    const size_t n = 50000;
    long *ls = (long *)shmem_malloc(n * sizeof(long)), *ld = (long *)shmem_malloc(n * sizeof(long));
    double *ds = (double *)shmem_malloc(n * sizeof(double));
    long double *xs = (long double *)shmem_malloc(300 * sizeof(long double));
    if (team != SHMEM_TEAM_INVALID) {
        long tme = shmem_team_my_pe(team), bad = 0;
        size_t i;
        for (i = 0; i < n; i++) ls[i] = (long)(i % 1000) * (tme + 1);
        CHECK_EQ(0, shmemx_long_sum_inscan(team, ld, ls, n), "long_sum_inscan of %zu (%s)", n, team_name);
        for (i = 0; i < n; i++)
            if (ld[i] != (long)(i % 1000) * (tme + 1) * (tme + 2) / 2) bad++;
        CHECK_EQ(0, bad, "elements wrong in long_sum_inscan of %zu (%s)", n, team_name);
        CHECK_EQ(0, shmem_long_sum_exscan(team, ls, ls, n), "in-place long_sum_exscan of %zu (%s)", n, team_name);
        bad = 0;
        for (i = 0; i < n; i++)
            if (ls[i] != (long)(i % 1000) * tme * (tme + 1) / 2) bad++;
        CHECK_EQ(0, bad, "elements wrong in in-place long_sum_exscan of %zu (%s)", n, team_name);
        /* doubles: k + p/4 summed over the members before, exact */
        for (i = 0; i < n; i++) ds[i] = (double)(i % 77) + tme * 0.25;
        CHECK_EQ(0, shmemx_double_sum_inscan(team, ds, ds, n), "in-place double_sum_inscan (%s)", team_name);
        bad = 0;
        for (i = 0; i < n; i++)
            if (ds[i] != (double)(i % 77) * (tme + 1) + 0.25 * tme * (tme + 1) / 2) bad++;
        CHECK_EQ(0, bad, "elements wrong in in-place double_sum_inscan of %zu (%s)", n, team_name);
        /* long double: more than one long double reduction buffer */
        for (i = 0; i < 300; i++) xs[i] = (long double)i / 8 + tme;
        CHECK_EQ(0, shmemx_longdouble_sum_exscan(team, xs, xs, 300), "in-place longdouble_sum_exscan (%s)", team_name);
        bad = 0;
        for (i = 0; i < 300; i++)
            if (xs[i] != (long double)i / 8 * tme + (long double)(tme * (tme - 1) / 2)) bad++;
        CHECK_EQ(0, bad, "elements wrong in in-place longdouble_sum_exscan (%s)", team_name);
    }
    shmem_barrier_all();
    shmem_free(xs);
    shmem_free(ds);
    shmem_free(ld);
    shmem_free(ls);
}

static void scans(void) {
    shmem_team_t reversed = SHMEM_TEAM_INVALID;
    shmem_team_config_t cfg = {0};
    CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, &cfg, 0, &reversed),
             "reversed team split");
    {
        shmem_team_t teams[3] = {SHMEM_TEAM_WORLD, reversed, SHMEMX_TEAM_NODE};
        const char *names[3] = {"world", "reversed world", "SHMEMX_TEAM_NODE"};
        int t;
        for (t = 0; t < 3; t++) {
#define RUN_SCAN(N, T) scan_##N(teams[t], names[t]);
            OX_REDUCE_ARITH_TYPES(RUN_SCAN)
            scan_complexf(teams[t], names[t]);
            scan_complexd(teams[t], names[t]);
            scan_large(teams[t], names[t]);
        }
    }
    shmem_team_destroy(reversed);
}

/* ---- SHMEMX_TEAM_NODE --------------------------------------------------------------------- */

static void team_node(void) {
    int p;
    CHECK(SHMEMX_TEAM_NODE != SHMEM_TEAM_INVALID, "SHMEMX_TEAM_NODE is set");
    CHECK_EQ(shmem_team_n_pes(SHMEM_TEAM_SHARED), shmem_team_n_pes(SHMEMX_TEAM_NODE), "node size");
    CHECK_EQ(shmem_team_my_pe(SHMEM_TEAM_SHARED), shmem_team_my_pe(SHMEMX_TEAM_NODE), "my PE on the node");
    /* the tests run on one host: every PE shares memory with every other */
    CHECK_EQ(npes, shmem_team_n_pes(SHMEMX_TEAM_NODE), "every PE is on this node");
    for (p = 0; p < npes; p++) {
        CHECK_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, SHMEM_TEAM_SHARED),
                 shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, SHMEMX_TEAM_NODE), "translate PE %d", p);
        CHECK(shmem_ptr(&sig[0], p) != NULL, "shmem_ptr to node PE %d", p);
    }
}

/* ---- SHMEMX_MALLOC_NO_BARRIER (Sandia OpenSHMEM's test, shaped) ----------------------------- */

#define NBUF 16
#define BLEN 64

static void no_barrier(void) {
    int *bufs[NBUF];
    int k, i;
    for (k = 0; k < NBUF; k++) {
        long hints = SHMEMX_MALLOC_NO_BARRIER | (k % 2 ? SHMEM_MALLOC_ATOMICS_REMOTE : 0);
        bufs[k] = (int *)shmem_malloc_with_hints(BLEN * sizeof(int), hints);
        CHECK(bufs[k] != NULL, "malloc_with_hints(NO_BARRIER) %d", k);
        for (i = 0; i < BLEN; i++) bufs[k][i] = -1;
    }
    for (k = 1; k < NBUF; k++) CHECK(bufs[k] != bufs[k - 1], "distinct allocations %d", k);
    shmem_sync_all(); /* the program's own synchronization, which the hint asks for */
    for (k = 0; k < NBUF; k++) {
        CHECK(shmem_addr_accessible(bufs[k], right), "allocation %d is symmetric", k);
        shmem_int_p(&bufs[k][me % BLEN], 100 * k + me, right);
    }
    shmem_barrier_all();
    for (k = 0; k < NBUF; k++)
        for (i = 0; i < BLEN; i++)
            CHECK_EQ(i == left % BLEN ? 100 * k + left : -1, bufs[k][i], "NO_BARRIER allocation %d [%d]", k, i);
    shmem_barrier_all();
    for (k = NBUF - 1; k >= 0; k--) shmem_free(bufs[k]);
}

/* ---- performance counters ------------------------------------------------------------------- */

#define PC_THREADS 4
#define PC_OPS 250
static int *pc_heap;

static void *pc_thread(void *arg) {
    int t = (int)(intptr_t)arg, i;
    for (i = 0; i < PC_OPS; i++) shmem_int_p(&pc_heap[16 + t], i, right);
    return NULL;
}

static void pcntr(void) {
    shmemx_pcntr_t a, b, c0, c1, d;
    uint64_t iw, ir, cw, cr, tg = 99;
    long *lh = (long *)shmem_malloc(8 * sizeof(long));
    int loc[8] = {1, 2, 3, 4, 5, 6, 7, 8}, i;
    long f;
    pthread_t th[PC_THREADS];
    pc_heap = (int *)shmem_malloc(32 * sizeof(int));
    memset(lh, 0, 8 * sizeof(long));
    shmem_barrier_all();
    shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &a);
    CHECK_EQ(a.pending_put, a.completed_put, "writes completed before");
    /* writes: 5 puts, 1 p, 1 putmem, 4 adds, 1 signal, 1 ibput = 13 */
    for (i = 0; i < 5; i++) shmem_int_put(pc_heap, loc, 8, right);
    shmem_int_p(&pc_heap[8], 1, right);
    shmem_putmem(&pc_heap[9], loc, sizeof(int), right);
    for (i = 0; i < 4; i++) shmem_long_atomic_add(&lh[0], 1, right);
    shmemx_signal_add((uint64_t *)&lh[1], 1, right);
    shmemx_int_ibput(pc_heap, loc, 2, 1, 1, 4, right);
    /* reads: 3 gets, 2 g, 2 fetch_adds, 1 swap, 1 fetch_nbi, 1 ibget = 10 */
    for (i = 0; i < 3; i++) shmem_int_get(loc, pc_heap, 8, right);
    for (i = 0; i < 2; i++) loc[i] = shmem_int_g(&pc_heap[i], right);
    for (i = 0; i < 2; i++) (void)shmem_long_atomic_fetch_add(&lh[2], 1, right);
    (void)shmem_long_atomic_swap(&lh[3], 5, right);
    shmem_long_atomic_fetch_nbi(&f, &lh[3], right);
    shmemx_int_ibget(loc, pc_heap, 1, 2, 1, 4, right);
    shmem_quiet();
    shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &b);
    CHECK_EQ(13, b.pending_put - a.pending_put, "writes issued");
    CHECK_EQ(13, b.completed_put - a.completed_put, "writes completed");
    CHECK_EQ(10, b.pending_get - a.pending_get, "reads issued");
    CHECK_EQ(10, b.completed_get - a.completed_get, "reads completed");
    CHECK_EQ(0, b.target, "target counter");
    shmemx_pcntr_get_issued_write(SHMEM_CTX_DEFAULT, &iw);
    shmemx_pcntr_get_issued_read(SHMEM_CTX_DEFAULT, &ir);
    shmemx_pcntr_get_completed_write(SHMEM_CTX_DEFAULT, &cw);
    shmemx_pcntr_get_completed_read(SHMEM_CTX_DEFAULT, &cr);
    shmemx_pcntr_get_completed_target(&tg);
    CHECK_EQ(b.pending_put, iw, "get_issued_write = get_all");
    CHECK_EQ(b.pending_get, ir, "get_issued_read = get_all");
    CHECK_EQ(b.completed_put, cw, "get_completed_write = get_all");
    CHECK_EQ(b.completed_get, cr, "get_completed_read = get_all");
    CHECK_EQ(0, tg, "get_completed_target");
    /* another context counts its own operations, and only those */
    shmemx_pcntr_get_all(ctx, &c0);
    for (i = 0; i < 3; i++) shmem_ctx_int_put(ctx, pc_heap, loc, 2, right);
    shmemx_ctx_signal_set(ctx, (uint64_t *)&lh[4], 3, right);
    for (i = 0; i < 2; i++) shmem_ctx_int_get(ctx, loc, pc_heap, 2, right);
    (void)shmem_ctx_long_atomic_fetch_inc(ctx, &lh[5], right);
    shmem_ctx_quiet(ctx);
    shmemx_pcntr_get_all(ctx, &c1);
    CHECK_EQ(4, c1.pending_put - c0.pending_put, "ctx writes issued");
    CHECK_EQ(4, c1.completed_put - c0.completed_put, "ctx writes completed");
    CHECK_EQ(3, c1.pending_get - c0.pending_get, "ctx reads issued");
    CHECK_EQ(3, c1.completed_get - c0.completed_get, "ctx reads completed");
    shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &d);
    CHECK_EQ(b.pending_put, d.pending_put, "default context unchanged by ctx's writes");
    CHECK_EQ(b.pending_get, d.pending_get, "default context unchanged by ctx's reads");
    /* every thread's operations count */
    for (i = 0; i < PC_THREADS; i++) pthread_create(&th[i], NULL, pc_thread, (void *)(intptr_t)i);
    for (i = 0; i < PC_THREADS; i++) pthread_join(th[i], NULL);
    shmemx_pcntr_get_all(SHMEM_CTX_DEFAULT, &b);
    CHECK_EQ(PC_THREADS * PC_OPS, b.pending_put - d.pending_put, "writes issued by %d threads", PC_THREADS);
    CHECK_EQ(PC_THREADS * PC_OPS, b.completed_put - d.completed_put, "writes completed by %d threads", PC_THREADS);
    CHECK_EQ(d.pending_get, b.pending_get, "no reads by the threads");
    shmem_barrier_all();
    for (i = 0; i < PC_THREADS; i++) CHECK_EQ(PC_OPS - 1, pc_heap[16 + i], "thread %d's last p", i);
    shmem_barrier_all();
    shmem_free(pc_heap);
    shmem_free(lh);
}

/* ---- shmemx_register_gettid ----------------------------------------------------------------- */

#define GT_THREADS 6
static int gt_dest;
static int gt_moved;
static shmem_ctx_t gt_ctx = SHMEM_CTX_INVALID;

/* Sandia OpenSHMEM's test: each named thread adds through a private context of its own */
static void *gt_worker(void *arg) {
    uint64_t tid = (uint64_t)(uintptr_t)arg;
    shmem_ctx_t c;
    int p;
    name_thread(tid);
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &c) != 0) {
        ox_fail("thread %d: shmem_ctx_create(SHMEM_CTX_PRIVATE) failed", (int)tid);
        return NULL;
    }
    for (p = 1; p <= npes; p++) shmem_ctx_int_atomic_add(c, &gt_dest, (int)tid, (me + p) % npes);
    shmem_ctx_quiet(c);
    shmem_ctx_destroy(c);
    return NULL;
}

/* A user-level thread named 42 creates a private context ... */
static void *gt_create(void *arg) {
    (void)arg;
    name_thread(42);
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &gt_ctx) != 0) ox_fail("thread 42: shmem_ctx_create failed");
    return NULL;
}

/* ... and uses it after it moved to another system thread */
static void *gt_use(void *arg) {
    (void)arg;
    name_thread(42);
    shmem_ctx_int_atomic_add(gt_ctx, &gt_moved, 1, right);
    shmem_ctx_quiet(gt_ctx);
    shmem_ctx_destroy(gt_ctx);
    return NULL;
}

static void gettid_test(void) {
    pthread_t th[GT_THREADS];
    uint64_t before = __atomic_load_n(&gettid_calls, __ATOMIC_RELAXED);
    int i, sum = 0;
    for (i = 0; i < GT_THREADS; i++) pthread_create(&th[i], NULL, gt_worker, (void *)(uintptr_t)(i + 1));
    for (i = 0; i < GT_THREADS; i++) pthread_join(th[i], NULL);
    shmem_sync_all();
    for (i = 1; i <= GT_THREADS; i++) sum += i;
    CHECK_EQ(sum * npes, gt_dest, "adds through private contexts of %d named threads", GT_THREADS);
    pthread_create(&th[0], NULL, gt_create, NULL);
    pthread_join(th[0], NULL);
    pthread_create(&th[1], NULL, gt_use, NULL);
    pthread_join(th[1], NULL);
    shmem_barrier_all();
    CHECK_EQ(1, gt_moved, "a private context used by its named thread on another system thread");
    CHECK(__atomic_load_n(&gettid_calls, __ATOMIC_RELAXED) > before, "the registered gettid was called");
}

/* A private context used under another name than its creator's, on the same system thread
 * (two user-level threads): the library ends the job. */
static void gettid_foreign(void) {
    shmem_ctx_t c;
    name_thread(42);
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &c) != 0) ox_fail("shmem_ctx_create failed");
    shmem_ctx_int_p(c, &gt_dest, 1, right); /* the creator: fine */
    name_thread(43);
    shmem_ctx_int_p(c, &gt_dest, 2, right); /* another thread: an error */
    printf("PE %d: survived a foreign use of a private context\n", me);
    fflush(stdout);
}

/* ---- scans that disagree -------------------------------------------------------------------- */

static void scan_mismatch(void) {
    int *s = (int *)shmem_malloc(4 * sizeof(int)), *d = (int *)shmem_malloc(4 * sizeof(int));
    int i, rc;
    for (i = 0; i < 4; i++) s[i] = i;
    rc = me == 0 ? shmemx_int_sum_exscan(SHMEM_TEAM_WORLD, d, s, 4) : shmemx_int_sum_inscan(SHMEM_TEAM_WORLD, d, s, 4);
    CHECK(rc != 0, "a scan whose kind differs between PEs fails (got %d)", rc);
    /* the team still works */
    CHECK_EQ(0, shmem_int_sum_inscan(SHMEM_TEAM_WORLD, d, s, 4), "a scan after the failed one");
    for (i = 0; i < 4; i++) CHECK_EQ(i * (me + 1), d[i], "scan after the failed one [%d]", i);
    shmem_barrier_all();
    shmem_free(d);
    shmem_free(s);
}

int main(int argc, char **argv) {
    int provided = -1;
    const char *mode = argc > 1 ? argv[1] : "all";
    /* Before init, as Sandia OpenSHMEM's programs register it */
    shmemx_register_gettid(my_gettid);
    ox_program = "ext";
    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0 || provided != SHMEM_THREAD_MULTIPLE) {
        fprintf(stderr, "shmem_init_thread(SHMEM_THREAD_MULTIPLE) gave %d\n", provided);
        return 1;
    }
    ox_me = me = shmem_my_pe();
    ox_npes = npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    CHECK_EQ(0, shmem_ctx_create(SHMEM_CTX_SERIALIZED, &ctx), "shmem_ctx_create");
    if (strcmp(mode, "scan_mismatch") == 0) {
        scan_mismatch();
    } else if (strcmp(mode, "gettid_foreign") == 0) {
        gettid_foreign();
    } else {
        signals();
#define RUN_IB(N, T) ib_##N();
        OX_RMA_TYPES(RUN_IB)
#define RUN_SIZED(S, ES) ib_sized_##S();
        OX_BITS_SIZES(RUN_SIZED)
        team_node();
        scans();
        no_barrier();
        pcntr();
        gettid_test();
    }
    shmem_ctx_destroy(ctx);
    return ox_finish();
}
