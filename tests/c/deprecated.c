/*
 * The deprecated API, as codes written for OpenSHMEM 1.0-1.3 (and SGI SHMEM) use it. Built
 * with -std=gnu99, so that the untyped shmem_wait_until/shmem_swap on long are what those
 * codes get, and with deprecation warnings off:
 *
 *   setup       start_pes(0) instead of shmem_init, _my_pe, _num_pes; main returns without
 *               shmem_finalize (unless given the argument "finalize")
 *   memory      shmalloc, shmemalign, shrealloc, shfree
 *   AMO         shmem_TYPE_{fetch,set,swap} (extended types), shmem_TYPE_{cswap,finc,inc,fadd,add}
 *               (standard types) under contention, shmem_swap on long
 *   sync        shmem_wait, shmem_TYPE_wait, shmem_wait_until on long, the _SHMEM_* constants
 *   active set  shmem_barrier, shmem_sync with pSync; shmem_broadcast32/64 (root's dest
 *               untouched), shmem_collect32/64, shmem_fcollect32/64, shmem_alltoall32/64,
 *               shmem_alltoalls32/64; every TYPE_OP_to_all with pWrk/pSync, on the whole job,
 *               on PEs 0,2,4,... (logPE_stride 1) and on PEs 1..n-1
 *   cache       shmem_set_cache_inv and friends (no-ops)
 */
#include <complex.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, npes, failures, checks;
#define CHECK_EQ(expected, got, ...)                                                           \
    do {                                                                                       \
        long double e_ = (long double)(expected), g_ = (long double)(got);                     \
        checks++;                                                                              \
        if (e_ != g_) {                                                                        \
            char w_[256];                                                                      \
            snprintf(w_, sizeof w_, __VA_ARGS__);                                              \
            if (++failures <= 40) fprintf(stderr, "PE %d: %s: expected %.21Lg got %.21Lg\n", me, w_, e_, g_); \
        }                                                                                      \
    } while (0)

/* pSync arrays: one per call site kind, initialized once, separated by barriers */
static long pSync[4][_SHMEM_REDUCE_SYNC_SIZE > _SHMEM_COLLECT_SYNC_SIZE ? _SHMEM_REDUCE_SYNC_SIZE : _SHMEM_COLLECT_SYNC_SIZE];
static long pSyncB[_SHMEM_BCAST_SYNC_SIZE];
static long pSyncBar[_SHMEM_BARRIER_SYNC_SIZE];

#define K 50

/* ---- AMO under the old names ---- */
#define OLD_STD(N, T)                                                                          \
    static void old_std_##N(void) {                                                            \
        T *c = (T *)shmalloc(4 * sizeof(T));                                                   \
        T prev = 0, got, old;                                                                  \
        int k, ordered = 1;                                                                    \
        memset(c, 0, 4 * sizeof(T));                                                           \
        shmem_barrier_all();                                                                   \
        for (k = 0; k < K; k++) {                                                              \
            got = shmem_##N##_finc(&c[0], 0);                                                  \
            if (k > 0 && !(got > prev)) ordered = 0;                                           \
            prev = got;                                                                        \
            shmem_##N##_inc(&c[1], 0);                                                         \
            (void)shmem_##N##_fadd(&c[2], (T)(_my_pe() + 1), 0);                               \
            shmem_##N##_add(&c[3], (T)2, 0);                                                   \
            old = shmem_##N##_fetch(&c[0], 0);                                                 \
            while ((got = shmem_##N##_cswap(&c[0], old, old, 0)) != old) old = got;            \
        }                                                                                      \
        CHECK_EQ(1, ordered, #N "_finc values increase on one PE");                            \
        shmem_barrier_all();                                                                   \
        if (me == 0) {                                                                         \
            CHECK_EQ(npes * K, c[0], "shmem_" #N "_finc total");                               \
            CHECK_EQ(npes * K, c[1], "shmem_" #N "_inc total");                                \
            CHECK_EQ(K * npes * (npes + 1) / 2, c[2], "shmem_" #N "_fadd total");              \
            CHECK_EQ(2 * npes * K, c[3], "shmem_" #N "_add total");                            \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        /* cswap as a counter */                                                               \
        for (k = 0; k < K; k++) {                                                              \
            old = shmem_##N##_fetch(&c[1], npes - 1);                                          \
            while ((got = shmem_##N##_cswap(&c[1], old, (T)(old + 1), npes - 1)) != old) old = got; \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        if (me == npes - 1) CHECK_EQ((me == 0 ? 2 : 1) * npes * K, c[1], "shmem_" #N "_cswap counter"); \
        shmem_barrier_all();                                                                   \
        shfree(c);                                                                             \
    }
OLD_STD(int, int) OLD_STD(long, long) OLD_STD(longlong, long long) OLD_STD(uint, unsigned int)
OLD_STD(ulong, unsigned long) OLD_STD(ulonglong, unsigned long long) OLD_STD(int32, int32_t)
OLD_STD(int64, int64_t) OLD_STD(uint32, uint32_t) OLD_STD(uint64, uint64_t) OLD_STD(size, size_t)
OLD_STD(ptrdiff, ptrdiff_t)

#define OLD_EXT(N, T)                                                                          \
    static void old_ext_##N(void) {                                                            \
        T *w = (T *)shmalloc(2 * sizeof(T));                                                   \
        T *rec = (T *)shmalloc((size_t)npes * K * sizeof(T));                                  \
        T got[K];                                                                              \
        int k;                                                                                 \
        w[0] = 0;                                                                              \
        shmem_barrier_all();                                                                   \
        shmem_##N##_set(&w[1], (T)(me + 3), (me + 1) % npes);                                  \
        for (k = 0; k < K; k++) got[k] = shmem_##N##_swap(&w[0], (T)(me * K + k + 1), 0);      \
        shmem_##N##_put(&rec[me * K], got, K, 0);                                              \
        shmem_barrier_all();                                                                   \
        CHECK_EQ(((me + npes - 1) % npes) + 3, w[1], "shmem_" #N "_set");                      \
        CHECK_EQ(me + 3, shmem_##N##_fetch(&w[1], (me + 1) % npes), "shmem_" #N "_fetch");     \
        if (me == 0) {                                                                         \
            long nk = (long)npes * K, j, bad = 0;                                              \
            char *seen = (char *)calloc((size_t)nk + 1, 1);                                    \
            for (j = 0; j <= nk; j++) {                                                        \
                long v = (long)(j < nk ? rec[j] : w[0]);                                       \
                if (v < 0 || v > nk || seen[v]++) bad++;                                       \
            }                                                                                  \
            CHECK_EQ(0, bad, "shmem_" #N "_swap values not a permutation");                    \
            free(seen);                                                                        \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shfree(rec);                                                                           \
        shfree(w);                                                                             \
    }
OLD_EXT(float, float) OLD_EXT(double, double) OLD_EXT(int, int) OLD_EXT(long, long)
OLD_EXT(longlong, long long) OLD_EXT(uint, unsigned int) OLD_EXT(ulong, unsigned long)
OLD_EXT(ulonglong, unsigned long long) OLD_EXT(int32, int32_t) OLD_EXT(int64, int64_t)
OLD_EXT(uint32, uint32_t) OLD_EXT(uint64, uint64_t) OLD_EXT(size, size_t) OLD_EXT(ptrdiff, ptrdiff_t)

/* ---- point-to-point ---- */
static long g_lflag;
static short g_sw;
static int g_iw;
static long g_lw;
static long long g_llw;
static void waits(void) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long old;
    g_lflag = 0;
    g_sw = 0;
    g_iw = 0;
    g_lw = 0;
    g_llw = 0;
    shmem_barrier_all();
    shmem_short_p(&g_sw, (short)(me + 1), right);
    shmem_short_wait(&g_sw, 0);
    CHECK_EQ(left + 1, g_sw, "shmem_short_wait");
    shmem_int_p(&g_iw, me + 2, right);
    shmem_int_wait(&g_iw, 0);
    CHECK_EQ(left + 2, g_iw, "shmem_int_wait");
    shmem_long_p(&g_lw, me + 3, right);
    shmem_long_wait(&g_lw, 0);
    CHECK_EQ(left + 3, g_lw, "shmem_long_wait");
    shmem_longlong_p(&g_llw, me + 4, right);
    shmem_longlong_wait(&g_llw, 0);
    CHECK_EQ(left + 4, g_llw, "shmem_longlong_wait");
    shmem_long_p(&g_lflag, me + 5, right);
    shmem_wait(&g_lflag, 0);
    CHECK_EQ(left + 5, g_lflag, "shmem_wait");
    shmem_barrier_all();
    shmem_long_p(&g_lflag, 100 + me, right);
    shmem_wait_until(&g_lflag, _SHMEM_CMP_GE, 100); /* the untyped long form of C99 */
    CHECK_EQ(100 + left, g_lflag, "shmem_wait_until on long (C99)");
    shmem_barrier_all();
    old = shmem_swap(&g_lflag, (long)me, right); /* the untyped long form of C99 */
    CHECK_EQ(100 + me, old, "shmem_swap on long (C99)");
    shmem_barrier_all();
    CHECK_EQ(left, g_lflag, "value shmem_swap left");
    shmem_barrier_all();
}

/* ---- active-set collectives ---- */
/* the members of (start, logstride, size) in order */
static int member_index(int start, int logstride, int size, int pe) {
    int s = 1 << logstride;
    if (pe < start || (pe - start) % s != 0 || (pe - start) / s >= size) return -1;
    return (pe - start) / s;
}

static void active_set(int start, int logstride, int size, const char *set) {
    int idx = member_index(start, logstride, size, me), j, i;
    int32_t *s32 = (int32_t *)shmalloc(64 * sizeof(int32_t) * (size_t)npes);
    int32_t *d32 = (int32_t *)shmalloc(64 * sizeof(int32_t) * (size_t)npes);
    int64_t *s64 = (int64_t *)shmalloc(64 * sizeof(int64_t) * (size_t)npes);
    int64_t *d64 = (int64_t *)shmalloc(64 * sizeof(int64_t) * (size_t)npes);
    if (idx >= 0) {
        int root = size - 1, off;
#define WORLD(k) (start + (k) * (1 << logstride))
        shmem_barrier(start, logstride, size, pSyncBar);
        for (i = 0; i < 64 * npes; i++) {
            d32[i] = -1;
            d64[i] = -1;
        }
        for (i = 0; i < 5; i++) {
            s32[i] = me * 100 + i;
            s64[i] = me * 1000000000000LL + i;
        }
        shmem_broadcast32(d32, s32, 5, root, start, logstride, size, pSyncB);
        shmem_barrier(start, logstride, size, pSyncBar);
        shmem_broadcast64(d64, s64, 5, root, start, logstride, size, pSyncB);
        for (i = 0; i < 5; i++) {
            CHECK_EQ(idx == root ? -1 : WORLD(root) * 100 + i, d32[i], "broadcast32 [%d] (%s)", i, set);
            CHECK_EQ(idx == root ? -1 : WORLD(root) * 1000000000000LL + i, d64[i], "broadcast64 [%d] (%s)", i, set);
        }
        shmem_barrier(start, logstride, size, pSyncBar);
        /* collect: member k contributes k+1 elements */
        for (i = 0; i <= idx; i++) {
            s32[i] = me * 100 + i;
            s64[i] = -(me * 100LL + i);
        }
        shmem_collect32(d32, s32, (size_t)idx + 1, start, logstride, size, pSync[0]);
        shmem_collect64(d64, s64, (size_t)idx + 1, start, logstride, size, pSync[1]);
        for (j = 0, off = 0; j < size; off += j + 1, j++)
            for (i = 0; i <= j; i++) {
                CHECK_EQ(WORLD(j) * 100 + i, d32[off + i], "collect32 from member %d [%d] (%s)", j, i, set);
                CHECK_EQ(-(WORLD(j) * 100LL + i), d64[off + i], "collect64 from member %d [%d] (%s)", j, i, set);
            }
        shmem_barrier(start, logstride, size, pSyncBar);
        for (i = 0; i < 3; i++) {
            s32[i] = me * 10 + i;
            s64[i] = me * 10LL + i + 5000000000LL;
        }
        shmem_fcollect32(d32, s32, 3, start, logstride, size, pSync[2]);
        shmem_fcollect64(d64, s64, 3, start, logstride, size, pSync[3]);
        for (j = 0; j < size; j++)
            for (i = 0; i < 3; i++) {
                CHECK_EQ(WORLD(j) * 10 + i, d32[j * 3 + i], "fcollect32 (%s)", set);
                CHECK_EQ(WORLD(j) * 10LL + i + 5000000000LL, d64[j * 3 + i], "fcollect64 (%s)", set);
            }
        shmem_barrier(start, logstride, size, pSyncBar);
        for (i = 0; i < 2 * size; i++) {
            s32[i] = me * 1000 + i;
            s64[i] = me * 1000LL + i + 7000000000LL;
        }
        shmem_alltoall32(d32, s32, 2, start, logstride, size, pSync[0]);
        shmem_alltoall64(d64, s64, 2, start, logstride, size, pSync[1]);
        for (j = 0; j < size; j++)
            for (i = 0; i < 2; i++) {
                CHECK_EQ(WORLD(j) * 1000 + idx * 2 + i, d32[j * 2 + i], "alltoall32 (%s)", set);
                CHECK_EQ(WORLD(j) * 1000LL + idx * 2 + i + 7000000000LL, d64[j * 2 + i], "alltoall64 (%s)", set);
            }
        shmem_barrier(start, logstride, size, pSyncBar);
        for (i = 0; i < 64 * npes; i++) {
            d32[i] = -1;
            d64[i] = -1;
        }
        for (i = 0; i < 6 * size; i++) {
            s32[i] = me * 1000 + i;
            s64[i] = me * 1000LL + i;
        }
        shmem_barrier(start, logstride, size, pSyncBar);
        shmem_alltoalls32(d32, s32, 2, 3, 2, start, logstride, size, pSync[2]);
        shmem_alltoalls64(d64, s64, 3, 2, 2, start, logstride, size, pSync[3]);
        for (j = 0; j < size; j++)
            for (i = 0; i < 2; i++) {
                CHECK_EQ(WORLD(j) * 1000 + (idx * 2 + i) * 3, d32[(j * 2 + i) * 2], "alltoalls32 (%s)", set);
                CHECK_EQ(WORLD(j) * 1000LL + (idx * 2 + i) * 2, d64[(j * 2 + i) * 3], "alltoalls64 (%s)", set);
            }
        CHECK_EQ(-1, d32[1], "alltoalls32 leaves the gaps (%s)", set);
        shmem_sync(start, logstride, size, pSyncBar);
        shmem_barrier(start, logstride, size, pSyncBar);
    }
    shmem_barrier_all();
    shfree(d64);
    shfree(s64);
    shfree(d32);
    shfree(s32);
}

/* TYPE_OP_to_all over one active set; the expected value folds every member's source */
#define NRED 9
#define TO_ALL(N, T, OP, FILL, FOLD)                                                           \
    {                                                                                          \
        T *src = (T *)shmalloc(NRED * sizeof(T)), *dst = (T *)shmalloc(NRED * sizeof(T));      \
        T *pWrk = (T *)shmalloc((NRED / 2 + 1 + _SHMEM_REDUCE_MIN_WRKDATA_SIZE) * sizeof(T));  \
        long *ps = pSync[red_round++ % 4]; /* the same on every PE of the job */               \
        if (idx >= 0) {                                                                        \
            int i, k;                                                                          \
            for (i = 0; i < NRED; i++) {                                                       \
                int p = me;                                                                    \
                src[i] = (T)(FILL);                                                            \
                dst[i] = (T)0;                                                                 \
            }                                                                                  \
            shmem_barrier(start, logstride, size, pSyncBar);                                   \
            shmem_##N##_##OP##_to_all(dst, src, NRED, start, logstride, size, pWrk, ps); \
            for (i = 0; i < NRED; i++) {                                                       \
                T e = 0;                                                                       \
                for (k = 0; k < size; k++) {                                                   \
                    int p = start + k * (1 << logstride);                                      \
                    T x = (T)(FILL);                                                           \
                    e = k == 0 ? x : (T)(FOLD);                                                \
                }                                                                              \
                CHECK_EQ(1, e == dst[i], "shmem_" #N "_" #OP "_to_all [%d] (%s) equal", i, set); \
                if (e != dst[i]) CHECK_EQ(creall(e), creall(dst[i]), "shmem_" #N "_" #OP "_to_all [%d] (%s)", i, set); \
            }                                                                                  \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shfree(pWrk);                                                                          \
        shfree(dst);                                                                           \
        shfree(src);                                                                           \
    }

static int red_round;

#define BIT_OPS(N, T)                                                                          \
    TO_ALL(N, T, and, 0x7F7F ^ (1 << ((p + i) % 7)), e & x)                                    \
    TO_ALL(N, T, or, 1 << ((p * 3 + i) % 13), e | x)                                           \
    TO_ALL(N, T, xor, (p + 1) * 37 + i, e ^ x)
#define MINMAX_OPS(N, T)                                                                       \
    TO_ALL(N, T, max, (p * 7 + i * 3) % 11, e > x ? e : x)                                     \
    TO_ALL(N, T, min, (p * 5 + i * 3) % 11 - 4, e < x ? e : x)
#define ARITH_OPS(N, T)                                                                        \
    TO_ALL(N, T, sum, p + 1 + i % 3, e + x)                                                    \
    TO_ALL(N, T, prod, 1 + (p + i) % 3, e * x)

static void reductions(int start, int logstride, int size, const char *set) {
    int idx = member_index(start, logstride, size, me);
    BIT_OPS(short, short) BIT_OPS(int, int) BIT_OPS(long, long) BIT_OPS(longlong, long long)
    MINMAX_OPS(float, float) MINMAX_OPS(double, double) MINMAX_OPS(longdouble, long double)
    MINMAX_OPS(short, short) MINMAX_OPS(int, int) MINMAX_OPS(long, long) MINMAX_OPS(longlong, long long)
    ARITH_OPS(float, float) ARITH_OPS(double, double) ARITH_OPS(longdouble, long double)
    ARITH_OPS(short, short) ARITH_OPS(int, int) ARITH_OPS(long, long) ARITH_OPS(longlong, long long)
    TO_ALL(complexf, float _Complex, sum, (p + 1) + (i % 3) * I, e + x)
    TO_ALL(complexf, float _Complex, prod, (1 + p % 2) + (i % 2) * I, e * x)
    TO_ALL(complexd, double _Complex, sum, (p + 1) - (i % 3) * I, e + x)
    TO_ALL(complexd, double _Complex, prod, (2 - p % 2) + ((i + p) % 2) * I, e * x)
}

int main(int argc, char **argv) {
    int i, j;
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    CHECK_EQ(shmem_my_pe(), me, "_my_pe");
    CHECK_EQ(shmem_n_pes(), npes, "_num_pes");
    for (i = 0; i < _SHMEM_BCAST_SYNC_SIZE; i++) pSyncB[i] = _SHMEM_SYNC_VALUE;
    for (i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; i++) pSyncBar[i] = _SHMEM_SYNC_VALUE;
    for (i = 0; i < (int)(sizeof pSync / sizeof pSync[0]); i++)
        for (j = 0; j < (int)(sizeof pSync[0] / sizeof(long)); j++) pSync[i][j] = _SHMEM_SYNC_VALUE;
    shmem_barrier_all(); /* every pSync is initialized before any PE uses one */

    /* memory */
    {
        long *a = (long *)shmalloc(100 * sizeof(long));
        long *b = (long *)shmemalign(4096, 64);
        CHECK_EQ(1, a != NULL, "shmalloc");
        CHECK_EQ(0, (uintptr_t)b % 4096, "shmemalign(4096) alignment");
        a[99] = me;
        a = (long *)shrealloc(a, 1000 * sizeof(long));
        CHECK_EQ(me, a[99], "shrealloc keeps the contents");
        a[999] = me + 1;
        shmem_barrier_all();
        CHECK_EQ((me + 1) % npes + 1, shmem_long_g(&a[999], (me + 1) % npes), "g from shrealloc'd memory");
        shmem_barrier_all();
        shfree(b);
        shfree(a);
    }
    old_std_int(); old_std_long(); old_std_longlong(); old_std_uint(); old_std_ulong();
    old_std_ulonglong(); old_std_int32(); old_std_int64(); old_std_uint32(); old_std_uint64();
    old_std_size(); old_std_ptrdiff();
    old_ext_float(); old_ext_double(); old_ext_int(); old_ext_long(); old_ext_longlong();
    old_ext_uint(); old_ext_ulong(); old_ext_ulonglong(); old_ext_int32(); old_ext_int64();
    old_ext_uint32(); old_ext_uint64(); old_ext_size(); old_ext_ptrdiff();
    waits();
    active_set(0, 0, npes, "all");
    active_set(0, 1, (npes + 1) / 2, "0,2,4..");
    active_set(1, 0, npes - 1, "1..n-1");
    reductions(0, 0, npes, "all");
    reductions(0, 1, (npes + 1) / 2, "0,2,4..");
    reductions(1, 0, npes - 1, "1..n-1");
    /* "the values in the pSync array are restored to the original values" */
    for (i = 0; i < (int)(sizeof pSync / sizeof pSync[0]); i++)
        for (j = 0; j < (int)(sizeof pSync[0] / sizeof(long)); j++)
            CHECK_EQ(_SHMEM_SYNC_VALUE, pSync[i][j], "pSync[%d][%d] after the collectives", i, j);
    for (i = 0; i < _SHMEM_BCAST_SYNC_SIZE; i++) CHECK_EQ(_SHMEM_SYNC_VALUE, pSyncB[i], "broadcast pSync[%d]", i);
    for (i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; i++) CHECK_EQ(_SHMEM_SYNC_VALUE, pSyncBar[i], "barrier pSync[%d]", i);
    shmem_set_cache_inv();
    shmem_set_cache_line_inv(&g_lflag);
    shmem_clear_cache_inv();
    shmem_clear_cache_line_inv(&g_lflag);
    shmem_udcflush();
    shmem_udcflush_line(&g_lflag);

    shmem_barrier_all();
    if (failures == 0) printf("PE %d: deprecated: OK (%d checks)\n", me, checks);
    else fprintf(stderr, "PE %d: deprecated: FAILED (%d of %d checks)\n", me, failures, checks);
    fflush(stdout);
    /* Codes of that era often just return: start_pes "does not require a call to
     * shmem_finalize ... the library is implicitly finalized when the program exits"
     * (OpenSHMEM 1.5, start_pes). With the argument "finalize" this one finalizes explicitly. */
    if (argc > 1 && strcmp(argv[1], "finalize") == 0) shmem_finalize();
    return failures != 0;
}
