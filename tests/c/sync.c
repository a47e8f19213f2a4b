/*
 * Point-to-point synchronization and signals:
 *
 *   wait/test   for every type of Table 13: shmem_TYPE_wait_until with each of the six
 *               comparisons, shmem_TYPE_test (true and false for each comparison), the
 *               _all/_any/_some forms and their _vector forms, waiting and testing, with a
 *               status mask and without; flags in the heap and in .bss
 *   signals     shmem_putmem_signal(_nbi) with SHMEM_SIGNAL_ADD from every PE into one
 *               signal word, shmem_signal_wait_until with each comparison, shmem_signal_fetch,
 *               a put-with-signal ping-pong that checks the data each time the signal arrives,
 *               a 1 MiB put_signal_nbi
 *   ordering    put, shmem_fence, flag: the data is there when the flag is
 */
#include "oxtest.h"

static int me, npes, right, left;

static int cmp_true(long double a, int cmp, long double b) {
    switch (cmp) {
    case SHMEM_CMP_EQ: return a == b;
    case SHMEM_CMP_NE: return a != b;
    case SHMEM_CMP_GT: return a > b;
    case SHMEM_CMP_GE: return a >= b;
    case SHMEM_CMP_LT: return a < b;
    default: return a <= b;
    }
}
static const int cmps[6] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT,
                            SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE};
static const char *cmp_names[6] = {"EQ", "NE", "GT", "GE", "LT", "LE"};

/* the set {j != me} as the indices some/any may return */
static int is_other(size_t j) { return j < (size_t)npes && (int)j != me; }

#define SYNC_TEST(N, T)                                                                        \
    static T g_one_##N;                                                                        \
    static T g_iv_##N[64];                                                                     \
    static void sync_##N(void) {                                                               \
        const char *tn = #N;                                                                   \
        T *iv = (T *)shmem_calloc((size_t)npes, sizeof(T));                                    \
        T *bv = g_iv_##N; /* the same again in .bss */                                         \
        int *status = (int *)calloc((size_t)npes, sizeof(int));                                \
        int *none = (int *)malloc(sizeof(int) * (size_t)npes);                                 \
        T *cmpv = (T *)malloc(sizeof(T) * (size_t)npes);                                       \
        size_t *idx = (size_t *)malloc(sizeof(size_t) * (size_t)npes), k, nidx;                \
        int c, j, x;                                                                           \
        status[me] = 1; /* my own slot is never written: it must be ignored */                 \
        for (j = 0; j < npes; j++) none[j] = 1;                                                \
                                                                                               \
        /* each comparison, waiting for a value the left neighbour puts into .bss */           \
        for (c = 0; c < 6; c++) {                                                              \
            T init = (T)(cmps[c] == SHMEM_CMP_LT || cmps[c] == SHMEM_CMP_LE ? 100 : 0);        \
            T want = (T)(10 + c);                                                              \
            T arg = cmps[c] == SHMEM_CMP_EQ || cmps[c] == SHMEM_CMP_GE || cmps[c] == SHMEM_CMP_LE \
                        ? want                                                                 \
                    : cmps[c] == SHMEM_CMP_NE ? init                                           \
                    : cmps[c] == SHMEM_CMP_GT ? (T)(want - 1)                                  \
                                              : (T)(want + 1);                                 \
            g_one_##N = init;                                                                  \
            shmem_barrier_all();                                                               \
            CHECK_EQ(0, shmem_##N##_test(&g_one_##N, cmps[c], arg), "%s test %s before the put", \
                     tn, cmp_names[c]);                                                        \
            shmem_barrier_all();                                                               \
            shmem_##N##_p(&g_one_##N, want, right);                                            \
            shmem_##N##_wait_until(&g_one_##N, cmps[c], arg);                                  \
            CHECK_EQ(want, g_one_##N, "%s wait_until %s", tn, cmp_names[c]);                   \
        }                                                                                      \
        /* test: each comparison true and false against the value now there (15) */           \
        for (c = 0; c < 6; c++)                                                                \
            for (x = 14; x <= 16; x++)                                                         \
                CHECK_EQ(cmp_true(15, cmps[c], x), shmem_##N##_test(&g_one_##N, cmps[c], (T)x),  \
                         "%s test(15 %s %d)", tn, cmp_names[c], x);                            \
                                                                                               \
        /* _all, _any, _some: every PE j sets slot j on every other PE to j + 1 */             \
        memset(bv, 0, sizeof g_iv_##N);                                                        \
        shmem_barrier_all();                                                                   \
        if (npes > 1) {                                                                        \
            CHECK_EQ(0, shmem_##N##_test_all(iv, npes, status, SHMEM_CMP_GE, 1), "%s test_all before", tn); \
            CHECK_EQ(SIZE_MAX, shmem_##N##_test_any(iv, npes, status, SHMEM_CMP_GE, 1),         \
                     "%s test_any before", tn);                                                \
            CHECK_EQ(0, shmem_##N##_test_some(iv, npes, idx, status, SHMEM_CMP_GE, 1),          \
                     "%s test_some before", tn);                                               \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        for (j = 0; j < npes; j++)                                                             \
            if (j != me) {                                                                     \
                shmem_##N##_p(&iv[me], (T)(me + 1), j);                                        \
                shmem_##N##_p(&bv[me], (T)(me + 1), j);                                        \
            }                                                                                  \
        shmem_##N##_wait_until_all(iv, npes, status, SHMEM_CMP_GE, 1);                         \
        for (j = 0; j < npes; j++) CHECK_EQ(j == me ? 0 : j + 1, iv[j], "%s wait_until_all slot %d", tn, j); \
        k = shmem_##N##_wait_until_any(bv, npes, status, SHMEM_CMP_GE, 1);                    \
        CHECK(npes == 1 ? k == SIZE_MAX : is_other(k), "%s wait_until_any returned %zu", tn, k);                           \
        if (is_other(k)) CHECK_EQ(k + 1, bv[k], "%s slot wait_until_any returned", tn);        \
        shmem_##N##_wait_until_all(bv, npes, status, SHMEM_CMP_NE, 0);                         \
        nidx = shmem_##N##_wait_until_some(bv, npes, idx, status, SHMEM_CMP_GT, 0);            \
        CHECK_EQ(npes - 1, nidx, "%s wait_until_some count", tn);                              \
        for (k = 0; k < nidx && k < (size_t)npes; k++)                                         \
            CHECK(is_other(idx[k]), "%s wait_until_some index %zu", tn, idx[k]);               \
        CHECK_EQ(1, shmem_##N##_test_all(iv, npes, status, SHMEM_CMP_GE, 1), "%s test_all", tn); \
        CHECK_EQ(0, shmem_##N##_test_all(iv, npes, NULL, SHMEM_CMP_GE, 1), "%s test_all unmasked", tn); \
        k = shmem_##N##_test_any(iv, npes, status, SHMEM_CMP_GT, 0);                           \
        CHECK(npes == 1 ? k == SIZE_MAX : is_other(k), "%s test_any returned %zu", tn, k);                                 \
        CHECK_EQ(me, shmem_##N##_test_any(iv, npes, NULL, SHMEM_CMP_EQ, 0), "%s test_any(EQ 0) unmasked", tn); \
        nidx = shmem_##N##_test_some(iv, npes, idx, status, SHMEM_CMP_LE, (T)npes);            \
        CHECK_EQ(npes - 1, nidx, "%s test_some count", tn);                                    \
        /* everything masked: all is true at once, any finds nothing */                        \
        shmem_##N##_wait_until_all(iv, npes, none, SHMEM_CMP_EQ, 99);                          \
        CHECK_EQ(SIZE_MAX, shmem_##N##_wait_until_any(iv, npes, none, SHMEM_CMP_EQ, 99),        \
                 "%s wait_until_any with every slot masked", tn);                              \
        CHECK_EQ(0, shmem_##N##_wait_until_some(iv, npes, idx, none, SHMEM_CMP_EQ, 99),        \
                 "%s wait_until_some with every slot masked", tn);                             \
                                                                                               \
        /* one writer: the left neighbour sets its slot to 9 */                                \
        shmem_barrier_all();                                                                   \
        memset(iv, 0, sizeof(T) * (size_t)npes);                                               \
        shmem_barrier_all();                                                                   \
        shmem_##N##_p(&iv[me], (T)9, right);                                                   \
        CHECK_EQ(left, shmem_##N##_wait_until_any(iv, npes, NULL, SHMEM_CMP_EQ, 9), "%s wait_until_any one writer", tn); \
        nidx = shmem_##N##_test_some(iv, npes, idx, NULL, SHMEM_CMP_EQ, 9);                    \
        CHECK_EQ(1, nidx, "%s test_some one writer", tn);                                      \
        CHECK_EQ(left, idx[0], "%s test_some one writer index", tn);                           \
                                                                                               \
        /* vector forms: slot j must reach 2j + 3 */                                           \
        for (j = 0; j < npes; j++) cmpv[j] = (T)(2 * j + 3);                                   \
        shmem_barrier_all();                                                                   \
        memset(iv, 0, sizeof(T) * (size_t)npes);                                               \
        shmem_barrier_all();                                                                   \
        if (npes > 1) {                                                                        \
            CHECK_EQ(0, shmem_##N##_test_all_vector(iv, npes, status, SHMEM_CMP_EQ, cmpv),      \
                     "%s test_all_vector before", tn);                                         \
            CHECK_EQ(SIZE_MAX, shmem_##N##_test_any_vector(iv, npes, status, SHMEM_CMP_EQ, cmpv), \
                     "%s test_any_vector before", tn);                                         \
            CHECK_EQ(0, shmem_##N##_test_some_vector(iv, npes, idx, status, SHMEM_CMP_EQ, cmpv), \
                     "%s test_some_vector before", tn);                                        \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        for (j = 0; j < npes; j++)                                                             \
            if (j != me) shmem_##N##_p(&iv[me], (T)(2 * me + 3), j);                           \
        k = shmem_##N##_wait_until_any_vector(iv, npes, status, SHMEM_CMP_EQ, cmpv);           \
        CHECK(npes == 1 ? k == SIZE_MAX : is_other(k), "%s wait_until_any_vector returned %zu", tn, k);                    \
        shmem_##N##_wait_until_all_vector(iv, npes, status, SHMEM_CMP_EQ, cmpv);               \
        for (j = 0; j < npes; j++)                                                             \
            CHECK_EQ(j == me ? 0 : 2 * j + 3, iv[j], "%s wait_until_all_vector slot %d", tn, j); \
        nidx = shmem_##N##_wait_until_some_vector(iv, npes, idx, status, SHMEM_CMP_GE, cmpv);  \
        CHECK_EQ(npes - 1, nidx, "%s wait_until_some_vector count", tn);                       \
        CHECK_EQ(1, shmem_##N##_test_all_vector(iv, npes, status, SHMEM_CMP_LE, cmpv), "%s test_all_vector", tn); \
        CHECK_EQ(me, shmem_##N##_test_any_vector(iv, npes, NULL, SHMEM_CMP_NE, cmpv),           \
                 "%s test_any_vector(NE) unmasked", tn);                                       \
        CHECK_EQ(npes - 1, shmem_##N##_test_some_vector(iv, npes, idx, NULL, SHMEM_CMP_EQ, cmpv), \
                 "%s test_some_vector count", tn);                                             \
        shmem_barrier_all();                                                                   \
        free(idx);                                                                             \
        free(cmpv);                                                                            \
        free(none);                                                                            \
        free(status);                                                                          \
        shmem_free(iv);                                                                        \
    }
OX_SYNC_TYPES(SYNC_TEST)

/* ---- signals ---- */
#define SIGBLK 64
static uint64_t g_sig, g_sig2;
static long g_sigdata[64 * SIGBLK];

static void signals(void) {
    long src[SIGBLK];
    int j, r;
    uint64_t got;
    /* every other PE adds 1 to PE 0's signal with its data */
    g_sig = 0;
    shmem_barrier_all();
    if (me != 0) {
        for (j = 0; j < SIGBLK; j++) src[j] = me * 1000 + j;
        if (me % 2)
            shmem_putmem_signal(&g_sigdata[me * SIGBLK], src, sizeof src, &g_sig, 1, SHMEM_SIGNAL_ADD, 0);
        else
            shmem_long_put_signal_nbi(&g_sigdata[me * SIGBLK], src, SIGBLK, &g_sig, 1, SHMEM_SIGNAL_ADD, 0);
    } else {
        got = shmem_signal_wait_until(&g_sig, SHMEM_CMP_EQ, (uint64_t)(npes - 1));
        CHECK_EQ(npes - 1, got, "signal_wait_until(EQ) return");
        for (r = 1; r < npes; r++)
            for (j = 0; j < SIGBLK; j++)
                CHECK_EQ(r * 1000 + j, g_sigdata[r * SIGBLK + j], "data of PE %d at signal [%d]", r, j);
        CHECK_EQ(npes - 1, shmem_signal_fetch(&g_sig), "signal_fetch");
    }
    shmem_quiet();
    shmem_barrier_all();

    /* each comparison of shmem_signal_wait_until, SET by the left neighbour */
    for (j = 0; j < 6; j++) {
        uint64_t init = cmps[j] == SHMEM_CMP_LT || cmps[j] == SHMEM_CMP_LE ? 1000 : 0;
        uint64_t want = 40 + (uint64_t)j;
        uint64_t arg = cmps[j] == SHMEM_CMP_EQ || cmps[j] == SHMEM_CMP_GE || cmps[j] == SHMEM_CMP_LE
                           ? want
                       : cmps[j] == SHMEM_CMP_NE ? init
                       : cmps[j] == SHMEM_CMP_GT ? want - 1
                                                 : want + 1;
        g_sig2 = init;
        shmem_barrier_all();
        src[0] = 7 * j + me;
        shmem_long_put_signal(&g_sigdata[0], src, 1, &g_sig2, want, SHMEM_SIGNAL_SET, right);
        got = shmem_signal_wait_until(&g_sig2, cmps[j], arg);
        CHECK_EQ(want, got, "signal_wait_until(%s) return", cmp_names[j]);
        CHECK_EQ(7 * j + left, g_sigdata[0], "data with signal_wait_until(%s)", cmp_names[j]);
        shmem_barrier_all();
    }

    /* ping-pong in pairs (0,1), (2,3): the data must be there every time the signal is */
    {
        int partner = me ^ 1;
        g_sig = 0;
        shmem_barrier_all();
        if (partner < npes) {
            for (r = 1; r <= 200; r++) {
                int mine = (me % 2 == 0) ? (r % 2 == 1) : (r % 2 == 0);
                if (mine) {
                    for (j = 0; j < SIGBLK; j++) src[j] = r * 100000 + me * 100 + j;
                    if (r % 4 < 2)
                        shmem_long_put_signal(g_sigdata, src, SIGBLK, &g_sig, (uint64_t)r, SHMEM_SIGNAL_SET, partner);
                    else
                        shmem_putmem_signal_nbi(g_sigdata, src, sizeof src, &g_sig, 2, SHMEM_SIGNAL_ADD, partner);
                } else {
                    shmem_signal_wait_until(&g_sig, SHMEM_CMP_GE, (uint64_t)r);
                    CHECK_EQ(r, shmem_signal_fetch(&g_sig), "ping-pong signal round %d", r);
                    for (j = 0; j < SIGBLK; j++)
                        if (g_sigdata[j] != r * 100000 + partner * 100 + j) {
                            CHECK_EQ(r * 100000 + partner * 100 + j, g_sigdata[j], "ping-pong data round %d [%d]", r, j);
                            break;
                        }
                }
            }
        }
        shmem_quiet();
        shmem_barrier_all();
    }

    /* 1 MiB with a signal */
    {
        size_t nb = 1 << 20, i, bad = 0;
        unsigned char *buf = (unsigned char *)shmem_malloc(nb);
        unsigned char *s = (unsigned char *)malloc(nb);
        for (i = 0; i < nb; i++) s[i] = (unsigned char)(i * 31 + me);
        g_sig = 0;
        shmem_barrier_all();
        shmem_putmem_signal_nbi(buf, s, nb, &g_sig, 0xABCDEF0123ULL, SHMEM_SIGNAL_SET, right);
        shmem_signal_wait_until(&g_sig, SHMEM_CMP_NE, 0);
        CHECK_EQ(0xABCDEF0123ULL, g_sig, "1 MiB put_signal_nbi signal");
        for (i = 0; i < nb; i++)
            if (buf[i] != (unsigned char)(i * 31 + left)) bad++;
        CHECK_EQ(0, bad, "bytes of a 1 MiB putmem_signal_nbi wrong when the signal arrived");
        shmem_quiet();
        shmem_barrier_all();
        free(s);
        shmem_free(buf);
    }
}

/* ---- ordering: put, fence, flag ---- */
static int g_flag, g_ack;
static int g_block[256];
static void ordering(void) {
    int r, j, src[256];
    g_flag = 0;
    g_ack = 0;
    shmem_barrier_all();
    if (me == 0 && npes > 1) {
        for (r = 1; r <= 100; r++) {
            for (j = 0; j < 256; j++) src[j] = r * 1000 + j;
            shmem_int_put(g_block, src, 256, 1);
            shmem_fence();
            shmem_int_p(&g_flag, r, 1);
            shmem_int_wait_until(&g_ack, SHMEM_CMP_EQ, r);
        }
    } else if (me == 1) {
        for (r = 1; r <= 100; r++) {
            shmem_int_wait_until(&g_flag, SHMEM_CMP_EQ, r);
            for (j = 0; j < 256; j++)
                if (g_block[j] != r * 1000 + j) {
                    CHECK_EQ(r * 1000 + j, g_block[j], "data after fence and flag, round %d [%d]", r, j);
                    break;
                }
            shmem_int_p(&g_ack, r, 0);
        }
    }
    shmem_barrier_all();
}

int main(void) {
    ox_init("sync");
    me = ox_me;
    npes = ox_npes;
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
#define RUN(N, T) sync_##N();
    OX_SYNC_TYPES(RUN)
    signals();
    ordering();
    return ox_finish();
}
