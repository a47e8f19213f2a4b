/*
 * AMO and locks: every atomic routine for every type of its table, all PEs hammering the same
 * targets on PE 0 (in the heap and in static variables), with exact totals and with the
 * fetched values checked for atomicity:
 *
 *   standard   fetch_inc, inc, fetch_add, add, compare_swap (blocking, ctx, nbi forms): the
 *              values fetch_inc returned are exactly 0..nK-1; the fetch_add values, sorted,
 *              step by the addend of whoever fetched each; a compare-swap counter ends at nK
 *   extended   fetch, set, swap (and ctx / nbi): swapped-out values and the final value are
 *              exactly the initial value and every value swapped in
 *   bitwise    and, or, xor with their fetching, ctx and nbi forms: each PE flips only bits
 *              it owns, so every fetched value must show its own earlier flips and not this one
 *   locks      shmem_set_lock/shmem_clear_lock and shmem_test_lock around a get-increment-put
 *              of a counter: exact total; test_lock reports a held lock
 */
#include "oxtest.h"

#define K 256

static int me, npes;
static shmem_ctx_t ctx;

/* PE 0's record of what every PE fetched: slot pe*K + k, filled with puts */
#define STD_TEST(N, T)                                                                         \
    static T g_std_##N[8]; /* .bss targets on PE 0 */                                          \
    static void std_##N(void) {                                                                \
        const char *tn = #N;                                                                   \
        T *c = g_std_##N;                                                                      \
        T *hc = (T *)shmem_calloc(8, sizeof(T));                                               \
        T *rec = (T *)shmem_calloc((size_t)npes * K * 3, sizeof(T));                           \
        T f_inc[K], f_add[K], f_nbi[K], f_ctx_nbi[K], f_more[2][K];                            \
        int k, p;                                                                              \
        memset(c, 0, sizeof g_std_##N);                                                        \
        shmem_barrier_all();                                                                   \
        for (k = 0; k < K; k++) {                                                              \
            f_inc[k] = shmem_##N##_atomic_fetch_inc(&c[0], 0);                                 \
            shmem_##N##_atomic_inc(&c[1], 0);                                                  \
            f_add[k] = shmem_##N##_atomic_fetch_add(&hc[0], (T)(me + 1), 0);                   \
            shmem_##N##_atomic_add(&hc[1], (T)(me + 1), 0);                                    \
            (void)shmem_ctx_##N##_atomic_fetch_inc(ctx, &c[2], 0);                             \
            shmem_ctx_##N##_atomic_inc(ctx, &c[3], 0);                                         \
            (void)shmem_ctx_##N##_atomic_fetch_add(ctx, &hc[2], (T)2, 0);                      \
            shmem_ctx_##N##_atomic_add(ctx, &hc[3], (T)3, 0);                                  \
            shmem_##N##_atomic_fetch_inc_nbi(&f_nbi[k], &c[4], 0);                             \
            shmem_ctx_##N##_atomic_fetch_add_nbi(ctx, &f_ctx_nbi[k], &hc[4], (T)(me + 1), 0);  \
            shmem_ctx_##N##_atomic_fetch_inc_nbi(ctx, &f_more[0][k], &c[5], 0);               \
            shmem_##N##_atomic_fetch_add_nbi(&f_more[1][k], &hc[7], (T)5, 0);                  \
        }                                                                                      \
        shmem_quiet();                                                                         \
        shmem_ctx_quiet(ctx);                                                                  \
        for (k = 1; k < K; k++) {                                                              \
            CHECK(f_inc[k] > f_inc[k - 1], "%s fetch_inc returns increase on one PE (%d)", tn, k); \
            CHECK(f_add[k] > f_add[k - 1], "%s fetch_add returns increase on one PE (%d)", tn, k); \
        }                                                                                      \
        shmem_##N##_put(&rec[me * K], f_inc, K, 0);                                            \
        shmem_##N##_put(&rec[(npes + me) * K], f_add, K, 0);                                   \
        shmem_##N##_put(&rec[(2 * npes + me) * K], f_nbi, K, 0);                               \
        shmem_barrier_all();                                                                   \
        if (me == 0) {                                                                         \
            long nk = (long)npes * K, tri = (long)K * npes * (npes + 1) / 2, j;                \
            CHECK_EQ(nk, c[0], "%s fetch_inc total", tn);                                      \
            CHECK_EQ(nk, c[1], "%s inc total", tn);                                            \
            CHECK_EQ(tri, hc[0], "%s fetch_add total", tn);                                    \
            CHECK_EQ(tri, hc[1], "%s add total", tn);                                          \
            CHECK_EQ(nk, c[2], "%s ctx fetch_inc total", tn);                                  \
            CHECK_EQ(nk, c[3], "%s ctx inc total", tn);                                        \
            CHECK_EQ(2 * nk, hc[2], "%s ctx fetch_add total", tn);                             \
            CHECK_EQ(3 * nk, hc[3], "%s ctx add total", tn);                                   \
            CHECK_EQ(nk, c[4], "%s fetch_inc_nbi total", tn);                                  \
            CHECK_EQ(tri, hc[4], "%s ctx fetch_add_nbi total", tn);                            \
            CHECK_EQ(nk, c[5], "%s ctx fetch_inc_nbi total", tn);                              \
            CHECK_EQ(5 * nk, hc[7], "%s fetch_add_nbi total", tn);                             \
            /* fetch_inc (blocking and nbi) handed out each of 0..nK-1 exactly once */         \
            for (p = 0; p < 3; p += 2) {                                                       \
                char *seen = (char *)calloc((size_t)nk, 1);                                    \
                long dup = 0, out = 0;                                                         \
                for (j = 0; j < nk; j++) {                                                     \
                    long v = (long)rec[p * nk + j];                                            \
                    if (v < 0 || v >= nk) out++;                                               \
                    else if (seen[v]++) dup++;                                                 \
                }                                                                              \
                CHECK_EQ(0, out + dup, "%s fetch_inc%s values outside 0..nK-1 or repeated", tn, \
                         p ? "_nbi" : "");                                                     \
                free(seen);                                                                    \
            }                                                                                  \
            /* fetch_add: sorted, the fetched values step by the adder's addend */             \
            {                                                                                  \
                long *v = (long *)malloc(sizeof(long) * (size_t)nk);                           \
                int *who = (int *)malloc(sizeof(int) * (size_t)nk);                            \
                long a, b, steps = 0;                                                          \
                for (j = 0; j < nk; j++) {                                                     \
                    v[j] = (long)rec[nk + j];                                                  \
                    who[j] = (int)(j / K);                                                     \
                }                                                                              \
                for (a = 1; a < nk; a++) /* insertion sort: nK is small */                     \
                    for (b = a; b > 0 && v[b - 1] > v[b]; b--) {                               \
                        long t = v[b];                                                         \
                        int w = who[b];                                                        \
                        v[b] = v[b - 1];                                                       \
                        who[b] = who[b - 1];                                                   \
                        v[b - 1] = t;                                                          \
                        who[b - 1] = w;                                                        \
                    }                                                                          \
                CHECK_EQ(0, v[0], "%s first fetch_add value", tn);                             \
                for (j = 0; j + 1 < nk; j++)                                                   \
                    if (v[j + 1] - v[j] != who[j] + 1) steps++;                                \
                CHECK_EQ(0, steps, "%s fetch_add values that do not step by the addend", tn);  \
                CHECK_EQ(tri - v[nk - 1], who[nk - 1] + 1, "%s last fetch_add step", tn);      \
                free(v);                                                                       \
                free(who);                                                                     \
            }                                                                                  \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        /* compare_swap as a counter: blocking, ctx and nbi forms on the same word */          \
        for (k = 0; k < K; k++) {                                                              \
            T old = shmem_##N##_atomic_fetch(&hc[5], 0), prev;                                 \
            for (;;) {                                                                         \
                if (k % 3 == 0) prev = shmem_##N##_atomic_compare_swap(&hc[5], old, (T)(old + 1), 0); \
                else if (k % 3 == 1)                                                           \
                    prev = shmem_ctx_##N##_atomic_compare_swap(ctx, &hc[5], old, (T)(old + 1), 0); \
                else {                                                                         \
                    shmem_##N##_atomic_compare_swap_nbi(&prev, &hc[5], old, (T)(old + 1), 0);  \
                    shmem_quiet();                                                             \
                }                                                                              \
                if (prev == old) break;                                                        \
                old = prev;                                                                    \
            }                                                                                  \
        }                                                                                      \
        /* a compare that fails must not write */                                              \
        CHECK(shmem_##N##_atomic_compare_swap(&hc[6], (T)1, (T)9, 0) == (T)0,                  \
              "%s compare_swap with a false condition returns the old value", tn);             \
        {                                                                                      \
            T f;                                                                               \
            shmem_ctx_##N##_atomic_compare_swap_nbi(ctx, &f, &hc[6], (T)5, (T)9, 0);           \
            shmem_ctx_quiet(ctx);                                                              \
            CHECK_EQ(0, f, "%s ctx compare_swap_nbi with a false condition", tn);              \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        if (me == 0) {                                                                         \
            CHECK_EQ((long)npes * K, hc[5], "%s compare_swap counter", tn);                    \
            CHECK_EQ(0, hc[6], "%s word after failed compare_swaps", tn);                      \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(rec);                                                                       \
        shmem_free(hc);                                                                        \
    }
OX_AMO_TYPES(STD_TEST)

/* ---- extended: fetch, set, swap ---- */
#define EXT_TEST(N, T)                                                                         \
    T g_ext_##N[4] = {(T)7, (T)7, (T)7, (T)7}; /* .data */                                     \
    static void ext_##N(void) {                                                                \
        const char *tn = #N;                                                                   \
        int right = (me + 1) % npes, left = (me + npes - 1) % npes, k;                         \
        T *s = (T *)shmem_calloc((size_t)npes * 2, sizeof(T));                                 \
        T *rec = (T *)shmem_calloc((size_t)npes * K, sizeof(T));                               \
        T got[K], f;                                                                           \
        /* the initial image of .data, read atomically */                                      \
        CHECK_EQ(7, shmem_##N##_atomic_fetch(&g_ext_##N[0], right), "%s fetch of .data", tn);  \
        shmem_barrier_all();                                                                   \
        shmem_##N##_atomic_set(&s[me], (T)(10 + me), right);                                   \
        shmem_ctx_##N##_atomic_set(ctx, &s[npes + me], (T)(20 + me), right);                   \
        shmem_##N##_atomic_set(&g_ext_##N[1], (T)(30 + me), right);                            \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        CHECK_EQ(10 + left, s[left], "%s set", tn);                                            \
        CHECK_EQ(20 + left, s[npes + left], "%s ctx set", tn);                                 \
        CHECK_EQ(30 + left, g_ext_##N[1], "%s set into .data", tn);                            \
        CHECK_EQ(10 + me, shmem_##N##_atomic_fetch(&s[me], right), "%s fetch", tn);            \
        CHECK_EQ(20 + me, shmem_ctx_##N##_atomic_fetch(ctx, &s[npes + me], right), "%s ctx fetch", tn); \
        shmem_##N##_atomic_fetch_nbi(&f, &g_ext_##N[1], right);                                \
        shmem_quiet();                                                                         \
        CHECK_EQ(30 + me, f, "%s fetch_nbi of .data", tn);                                     \
        shmem_ctx_##N##_atomic_fetch_nbi(ctx, &f, &s[me], right);                              \
        shmem_ctx_quiet(ctx);                                                                  \
        CHECK_EQ(10 + me, f, "%s ctx fetch_nbi", tn);                                          \
        shmem_barrier_all();                                                                   \
        /* swap: everyone swaps distinct values into one word of PE 0's .data */               \
        if (me == 0) g_ext_##N[2] = (T)0;                                                      \
        shmem_barrier_all();                                                                   \
        for (k = 0; k < K; k++) {                                                              \
            T v = (T)(me * K + k + 1);                                                         \
            switch (k % 4) {                                                                   \
            case 0: got[k] = shmem_##N##_atomic_swap(&g_ext_##N[2], v, 0); break;              \
            case 1: got[k] = shmem_ctx_##N##_atomic_swap(ctx, &g_ext_##N[2], v, 0); break;     \
            case 2: shmem_##N##_atomic_swap_nbi(&got[k], &g_ext_##N[2], v, 0); shmem_quiet(); break; \
            default: shmem_ctx_##N##_atomic_swap_nbi(ctx, &got[k], &g_ext_##N[2], v, 0);      \
                shmem_ctx_quiet(ctx);                                                          \
                break;                                                                         \
            }                                                                                  \
        }                                                                                      \
        shmem_##N##_put(&rec[me * K], got, K, 0);                                              \
        shmem_barrier_all();                                                                   \
        if (me == 0) {                                                                         \
            long nk = (long)npes * K, j, bad = 0;                                              \
            char *seen = (char *)calloc((size_t)nk + 1, 1);                                    \
            for (j = 0; j <= nk; j++) {                                                        \
                T x = j < nk ? rec[j] : g_ext_##N[2];                                          \
                long v = (long)x;                                                              \
                if (v < 0 || v > nk || (T)v != x || seen[v]++) bad++;                          \
            }                                                                                  \
            CHECK_EQ(0, bad, "%s swapped-out values and final value not a permutation of 0..nK", tn); \
            free(seen);                                                                        \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(rec);                                                                       \
        shmem_free(s);                                                                         \
    }
OX_EXT_AMO_TYPES(EXT_TEST)

/* ---- bitwise ---- */
#define BIT_TEST(N, T)                                                                         \
    static T g_bit_##N[3];                                                                     \
    static void bit_##N(void) {                                                                \
        const char *tn = #N;                                                                   \
        const int width = (int)(8 * sizeof(T));                                                \
        T *t = (T *)shmem_malloc(3 * sizeof(T));                                               \
        T mine = 0, ones = (T)~(T)0, f[3 * 64];                                                \
        int b, j, nf = 0;                                                                      \
        int bits[64];                                                                          \
        t[0] = 0;         /* or */                                                             \
        t[1] = ones;      /* and */                                                            \
        t[2] = 0;         /* xor */                                                            \
        g_bit_##N[0] = 0; /* or, non-fetching */                                               \
        g_bit_##N[1] = ones;                                                                   \
        g_bit_##N[2] = 0;                                                                      \
        shmem_barrier_all();                                                                   \
        for (b = me, j = 0; b < width; b += npes, j++) {                                       \
            T bit = (T)((uint64_t)1 << b);                                                            \
            bits[j] = b;                                                                       \
            switch (j % 4) {                                                                   \
            case 0:                                                                            \
                f[nf++] = shmem_##N##_atomic_fetch_or(&t[0], bit, 0);                          \
                f[nf++] = shmem_##N##_atomic_fetch_and(&t[1], (T)~bit, 0);                     \
                f[nf++] = shmem_##N##_atomic_fetch_xor(&t[2], bit, 0);                         \
                shmem_##N##_atomic_or(&g_bit_##N[0], bit, 0);                                  \
                shmem_##N##_atomic_and(&g_bit_##N[1], (T)~bit, 0);                             \
                shmem_##N##_atomic_xor(&g_bit_##N[2], bit, 0);                                 \
                break;                                                                         \
            case 1:                                                                            \
                f[nf++] = shmem_ctx_##N##_atomic_fetch_or(ctx, &t[0], bit, 0);                 \
                f[nf++] = shmem_ctx_##N##_atomic_fetch_and(ctx, &t[1], (T)~bit, 0);            \
                f[nf++] = shmem_ctx_##N##_atomic_fetch_xor(ctx, &t[2], bit, 0);                \
                shmem_ctx_##N##_atomic_or(ctx, &g_bit_##N[0], bit, 0);                         \
                shmem_ctx_##N##_atomic_and(ctx, &g_bit_##N[1], (T)~bit, 0);                    \
                shmem_ctx_##N##_atomic_xor(ctx, &g_bit_##N[2], bit, 0);                        \
                break;                                                                         \
            case 2:                                                                            \
                shmem_##N##_atomic_fetch_or_nbi(&f[nf++], &t[0], bit, 0);                      \
                shmem_ctx_##N##_atomic_fetch_and_nbi(ctx, &f[nf++], &t[1], (T)~bit, 0);        \
                shmem_##N##_atomic_fetch_xor_nbi(&f[nf++], &t[2], bit, 0);                     \
                shmem_quiet();                                                                 \
                shmem_ctx_quiet(ctx);                                                          \
                shmem_##N##_atomic_or(&g_bit_##N[0], bit, 0);                                  \
                shmem_ctx_##N##_atomic_and(ctx, &g_bit_##N[1], (T)~bit, 0);                    \
                shmem_##N##_atomic_xor(&g_bit_##N[2], bit, 0);                                 \
                break;                                                                         \
            default:                                                                           \
                shmem_ctx_##N##_atomic_fetch_or_nbi(ctx, &f[nf++], &t[0], bit, 0);             \
                shmem_##N##_atomic_fetch_and_nbi(&f[nf++], &t[1], (T)~bit, 0);                 \
                shmem_ctx_##N##_atomic_fetch_xor_nbi(ctx, &f[nf++], &t[2], bit, 0);            \
                shmem_quiet();                                                                 \
                shmem_ctx_quiet(ctx);                                                          \
                shmem_ctx_##N##_atomic_or(ctx, &g_bit_##N[0], bit, 0);                         \
                shmem_##N##_atomic_and(&g_bit_##N[1], (T)~bit, 0);                             \
                shmem_ctx_##N##_atomic_xor(ctx, &g_bit_##N[2], bit, 0);                        \
                break;                                                                         \
            }                                                                                  \
            /* what the fetches saw of my own bits: every earlier one, not this one */         \
            CHECK_EQ(mine, (T)(f[nf - 3] & mine), "%s fetch_or saw my earlier bits (bit %d)", tn, b); \
            CHECK_EQ(0, (T)(f[nf - 3] & bit), "%s fetch_or saw bit %d before setting it", tn, b); \
            CHECK_EQ(0, (T)(f[nf - 2] & mine), "%s fetch_and saw my cleared bits (bit %d)", tn, b); \
            CHECK_EQ(bit, (T)(f[nf - 2] & bit), "%s fetch_and bit %d before clearing", tn, b); \
            CHECK_EQ(mine, (T)(f[nf - 1] & mine), "%s fetch_xor saw my earlier bits (bit %d)", tn, b); \
            CHECK_EQ(0, (T)(f[nf - 1] & bit), "%s fetch_xor saw bit %d before flipping", tn, b); \
            mine = (T)(mine | bit);                                                            \
        }                                                                                      \
        (void)bits;                                                                            \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        if (me == 0) {                                                                         \
            CHECK_EQ(ones, t[0], "%s fetch_or result", tn);                                    \
            CHECK_EQ(0, t[1], "%s fetch_and result", tn);                                      \
            CHECK_EQ(ones, t[2], "%s fetch_xor result", tn);                                   \
            CHECK_EQ(ones, g_bit_##N[0], "%s or result", tn);                                  \
            CHECK_EQ(0, g_bit_##N[1], "%s and result", tn);                                    \
            CHECK_EQ(ones, g_bit_##N[2], "%s xor result", tn);                                 \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(t);                                                                         \
    }
OX_BITWISE_AMO_TYPES(BIT_TEST)

/* ---- locks ---- */
static long g_lock;       /* a lock in .bss */
static int g_counter;     /* the counter it protects, on PE 0 */
static void locks(void) {
    long *hlock = (long *)shmem_calloc(1, sizeof(long));
    int *hcount = (int *)shmem_calloc(1, sizeof(int));
    int k;
    g_counter = 0;
    shmem_barrier_all();
    for (k = 0; k < K; k++) {
        shmem_set_lock(&g_lock);
        int v = shmem_int_g(&g_counter, 0);
        shmem_int_p(&g_counter, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&g_lock);
    }
    for (k = 0; k < K; k++) {
        while (shmem_test_lock(hlock) != 0) {
        }
        int v = shmem_int_g(hcount, npes - 1);
        shmem_int_p(hcount, v + 2, npes - 1);
        shmem_quiet();
        shmem_clear_lock(hlock);
    }
    shmem_barrier_all();
    if (me == 0) CHECK_EQ(npes * K, g_counter, "counter under shmem_set_lock");
    if (me == npes - 1) CHECK_EQ(2 * npes * K, *hcount, "counter under shmem_test_lock");
    /* a held lock: test_lock says so and does not take it */
    if (me == 0) shmem_set_lock(&g_lock);
    shmem_barrier_all();
    if (me != 0) CHECK_EQ(1, shmem_test_lock(&g_lock), "shmem_test_lock on a lock PE 0 holds");
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(&g_lock);
    shmem_barrier_all();
    shmem_free(hcount);
    shmem_free(hlock);
}

int main(void) {
    ox_init("amo");
    me = ox_me;
    npes = ox_npes;
    CHECK_EQ(0, shmem_ctx_create(0, &ctx), "shmem_ctx_create");
#define RUN_STD(N, T) std_##N();
    OX_AMO_TYPES(RUN_STD)
#define RUN_EXT(N, T) ext_##N();
    OX_EXT_AMO_TYPES(RUN_EXT)
#define RUN_BIT(N, T) bit_##N();
    OX_BITWISE_AMO_TYPES(RUN_BIT)
    locks();
    shmem_ctx_destroy(ctx);
    return ox_finish();
}
