/*
 * The C11 generic interfaces (_Generic selections in shmem.h), as OpenSHMEM 1.5 code writes
 * them: shmem_put(dest, source, n, pe) and shmem_put(ctx, dest, ...) pick the typed routine
 * from the pointer type. Each distinct C type goes through every generic RMA, AMO,
 * synchronization and collective name it belongs to, plus the deprecated generic AMO names
 * (shmem_fadd, shmem_finc, shmem_cswap, shmem_swap, ...). A wrong selection moves the wrong
 * number of bytes or does the wrong arithmetic, and the values show it.
 */
#include <complex.h>
#include "oxtest.h"

#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#error "generic.c needs C11"
#endif

static int me, npes, right, left;
static shmem_ctx_t ctx;

/* the distinct C types of the generic RMA interfaces */
#define GEN_RMA_TYPES(X)                                                                       \
    X(float, float) X(double, double) X(longdouble, long double) X(char, char)                 \
    X(schar, signed char) X(short, short) X(int, int) X(long, long) X(longlong, long long)     \
    X(uchar, unsigned char) X(ushort, unsigned short) X(uint, unsigned int)                    \
    X(ulong, unsigned long) X(ulonglong, unsigned long long)

#define V(T, p, i, k) OX_VAL(T, p, i, k)

#define GEN_RMA(N, T)                                                                          \
    static T g_d_##N[6][8];                                                                    \
    static void gen_rma_##N(void) {                                                            \
        const char *tn = #T;                                                                   \
        T src[16], loc[8];                                                                     \
        int i;                                                                                 \
        memset(g_d_##N, 0, sizeof g_d_##N);                                                    \
        shmem_barrier_all();                                                                   \
        for (i = 0; i < 16; i++) src[i] = V(T, me, i, 1);                                      \
        shmem_put(g_d_##N[0], src, 8, right);                                                  \
        shmem_put(ctx, g_d_##N[1], src, 8, right);                                             \
        shmem_p(&g_d_##N[2][0], V(T, me, 0, 2), right);                                        \
        shmem_p(ctx, &g_d_##N[2][1], V(T, me, 1, 2), right);                                   \
        shmem_iput(g_d_##N[3], src, 2, 2, 4, right);                                           \
        shmem_put_nbi(g_d_##N[4], src, 8, right);                                              \
        shmem_put_nbi(ctx, g_d_##N[5], src + 8, 8, right);                                     \
        shmem_quiet();                                                                         \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        for (i = 0; i < 8; i++) {                                                              \
            CHECK_EQ(V(T, left, i, 1), g_d_##N[0][i], "shmem_put(%s *) [%d]", tn, i);         \
            CHECK_EQ(V(T, left, i, 1), g_d_##N[1][i], "shmem_put(ctx, %s *) [%d]", tn, i);    \
            CHECK_EQ(i % 2 ? (T)0 : V(T, left, i, 1), g_d_##N[3][i], "shmem_iput(%s *) [%d]", tn, i); \
            CHECK_EQ(V(T, left, i, 1), g_d_##N[4][i], "shmem_put_nbi(%s *) [%d]", tn, i);     \
            CHECK_EQ(V(T, left, i + 8, 1), g_d_##N[5][i], "shmem_put_nbi(ctx, %s *) [%d]", tn, i); \
        }                                                                                      \
        CHECK_EQ(V(T, left, 0, 2), g_d_##N[2][0], "shmem_p(%s *)", tn);                        \
        CHECK_EQ(V(T, left, 1, 2), g_d_##N[2][1], "shmem_p(ctx, %s *)", tn);                   \
        CHECK_EQ(V(T, me, 0, 2), shmem_g(&g_d_##N[2][0], right), "shmem_g(%s *)", tn);         \
        CHECK_EQ(V(T, me, 1, 2), shmem_g(ctx, &g_d_##N[2][1], right), "shmem_g(ctx, %s *)", tn); \
        shmem_get(loc, g_d_##N[0], 8, right);                                                  \
        for (i = 0; i < 8; i++) CHECK_EQ(V(T, me, i, 1), loc[i], "shmem_get(%s *) [%d]", tn, i); \
        shmem_get(ctx, loc, g_d_##N[5], 8, right);                                             \
        for (i = 0; i < 8; i++) CHECK_EQ(V(T, me, i + 8, 1), loc[i], "shmem_get(ctx, %s *) [%d]", tn, i); \
        shmem_iget(loc, g_d_##N[0], 1, 2, 4, right);                                           \
        for (i = 0; i < 4; i++) CHECK_EQ(V(T, me, 2 * i, 1), loc[i], "shmem_iget(%s *) [%d]", tn, i); \
        shmem_get_nbi(loc, g_d_##N[4], 8, right);                                              \
        shmem_quiet();                                                                         \
        for (i = 0; i < 8; i++) CHECK_EQ(V(T, me, i, 1), loc[i], "shmem_get_nbi(%s *) [%d]", tn, i); \
        /* put with signal */                                                                  \
        {                                                                                      \
            static uint64_t sig;                                                               \
            sig = 0;                                                                           \
            shmem_barrier_all();                                                               \
            shmem_put_signal(g_d_##N[0], src + 8, 8, &sig, 1, SHMEM_SIGNAL_ADD, right);        \
            shmem_put_signal_nbi(ctx, g_d_##N[1], src + 8, 8, &sig, 1, SHMEM_SIGNAL_ADD, right); \
            shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 2);                                    \
            shmem_ctx_quiet(ctx);                                                              \
            CHECK_EQ(V(T, left, 15, 1), g_d_##N[0][7], "shmem_put_signal(%s *)", tn);          \
            CHECK_EQ(V(T, left, 15, 1), g_d_##N[1][7], "shmem_put_signal_nbi(ctx, %s *)", tn); \
        }                                                                                      \
        /* collectives */                                                                      \
        {                                                                                      \
            T *cs = (T *)shmem_malloc(4 * (size_t)npes * sizeof(T));                           \
            T *cd = (T *)shmem_malloc(4 * (size_t)npes * sizeof(T));                           \
            int j;                                                                             \
            for (i = 0; i < 4 * npes; i++) cs[i] = V(T, me, i, 3);                             \
            CHECK_EQ(0, shmem_broadcast(SHMEM_TEAM_WORLD, cd, cs, 3, npes - 1), "shmem_broadcast(%s *)", tn); \
            CHECK_EQ(V(T, npes - 1, 2, 3), cd[2], "shmem_broadcast(%s *)", tn);                \
            CHECK_EQ(0, shmem_fcollect(SHMEM_TEAM_WORLD, cd, cs, 2), "shmem_fcollect(%s *)", tn); \
            for (j = 0; j < npes; j++) CHECK_EQ(V(T, j, 1, 3), cd[2 * j + 1], "shmem_fcollect(%s *) from %d", tn, j); \
            CHECK_EQ(0, shmem_collect(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_collect(%s *)", tn); \
            for (j = 0; j < npes; j++) CHECK_EQ(V(T, j, 0, 3), cd[j], "shmem_collect(%s *) from %d", tn, j); \
            CHECK_EQ(0, shmem_alltoall(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_alltoall(%s *)", tn); \
            for (j = 0; j < npes; j++) CHECK_EQ(V(T, j, me, 3), cd[j], "shmem_alltoall(%s *) from %d", tn, j); \
            CHECK_EQ(0, shmem_alltoalls(SHMEM_TEAM_WORLD, cd, cs, 1, 2, 1), "shmem_alltoalls(%s *)", tn); \
            for (j = 0; j < npes; j++) CHECK_EQ(V(T, j, 2 * me, 3), cd[j], "shmem_alltoalls(%s *) from %d", tn, j); \
            for (i = 0; i < 2; i++) cs[i] = (T)(me + 1 + i);                                   \
            CHECK_EQ(0, shmem_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 2), "shmem_sum_reduce(%s *)", tn); \
            CHECK_EQ(npes * (npes + 1) / 2 + npes, cd[1], "shmem_sum_reduce(%s *)", tn);       \
            CHECK_EQ(0, shmem_max_reduce(SHMEM_TEAM_WORLD, cd, cs, 2), "shmem_max_reduce(%s *)", tn); \
            CHECK_EQ(npes + 1, cd[1], "shmem_max_reduce(%s *)", tn);                           \
            CHECK_EQ(0, shmem_min_reduce(SHMEM_TEAM_WORLD, cd, cs, 2), "shmem_min_reduce(%s *)", tn); \
            CHECK_EQ(1, cd[0], "shmem_min_reduce(%s *)", tn);                                  \
            cs[0] = (T)(1 + me % 2);                                                           \
            CHECK_EQ(0, shmem_prod_reduce(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_prod_reduce(%s *)", tn); \
            CHECK_EQ(1 << (npes / 2), cd[0], "shmem_prod_reduce(%s *)", tn);                   \
            shmem_barrier_all();                                                               \
            shmem_free(cd);                                                                    \
            shmem_free(cs);                                                                    \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
    }
GEN_RMA_TYPES(GEN_RMA)

/* bitwise reductions over the unsigned and signed integer types */
#define GEN_BITRED(N, T)                                                                       \
    static void gen_bitred_##N(void) {                                                         \
        T *s = (T *)shmem_malloc(sizeof(T)), *d = (T *)shmem_malloc(sizeof(T));                \
        *s = (T)(1 << me);                                                                     \
        CHECK_EQ(0, shmem_or_reduce(SHMEM_TEAM_WORLD, d, s, 1), "shmem_or_reduce(" #T " *)");  \
        CHECK_EQ((1 << npes) - 1, *d, "shmem_or_reduce(" #T " *)");                            \
        CHECK_EQ(0, shmem_xor_reduce(SHMEM_TEAM_WORLD, d, s, 1), "shmem_xor_reduce(" #T " *)"); \
        CHECK_EQ((1 << npes) - 1, *d, "shmem_xor_reduce(" #T " *)");                           \
        *s = (T)(0x7F & ~(1 << me));                                                           \
        CHECK_EQ(0, shmem_and_reduce(SHMEM_TEAM_WORLD, d, s, 1), "shmem_and_reduce(" #T " *)"); \
        CHECK_EQ(0x7F & ~((1 << npes) - 1), *d, "shmem_and_reduce(" #T " *)");                 \
        shmem_barrier_all();                                                                   \
        shmem_free(d);                                                                         \
        shmem_free(s);                                                                         \
    }
GEN_BITRED(uchar, unsigned char) GEN_BITRED(ushort, unsigned short) GEN_BITRED(uint, unsigned int)
GEN_BITRED(ulong, unsigned long) GEN_BITRED(ulonglong, unsigned long long) GEN_BITRED(int, int)
GEN_BITRED(long, long) GEN_BITRED(short, short) GEN_BITRED(schar, signed char)

/* standard AMO generics on the distinct C types (int32_t is int, size_t is unsigned long...) */
#define GEN_AMO(N, T)                                                                          \
    static T g_a_##N[8];                                                                       \
    static void gen_amo_##N(void) {                                                            \
        const char *tn = #T;                                                                   \
        T f, prev;                                                                             \
        int k;                                                                                 \
        memset(g_a_##N, 0, sizeof g_a_##N);                                                    \
        shmem_barrier_all();                                                                   \
        for (k = 0; k < 10; k++) {                                                             \
            (void)shmem_atomic_fetch_inc(&g_a_##N[0], 0);                                      \
            shmem_atomic_inc(ctx, &g_a_##N[1], 0);                                             \
            (void)shmem_atomic_fetch_add(&g_a_##N[2], (T)3, 0);                                \
            shmem_atomic_add(ctx, &g_a_##N[3], (T)(me + 1), 0);                                \
            shmem_atomic_fetch_inc_nbi(&f, &g_a_##N[4], 0);                                    \
            shmem_atomic_fetch_add_nbi(ctx, &f, &g_a_##N[4], (T)2, 0);                         \
            prev = shmem_atomic_fetch(&g_a_##N[5], 0);                                         \
            while ((f = shmem_atomic_compare_swap(&g_a_##N[5], prev, (T)(prev + 1), 0)) != prev) prev = f; \
            (void)shmem_finc(&g_a_##N[6], 0);                                                  \
            (void)shmem_fadd(&g_a_##N[6], (T)2, 0);                                            \
            shmem_inc(&g_a_##N[6], 0);                                                         \
            shmem_add(&g_a_##N[6], (T)4, 0);                                                   \
            prev = shmem_fetch(&g_a_##N[7], 0);                                                \
            while ((f = shmem_cswap(&g_a_##N[7], prev, (T)(prev + 1), 0)) != prev) prev = f;   \
        }                                                                                      \
        shmem_quiet();                                                                         \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        if (me == 0) {                                                                         \
            CHECK_EQ(10 * npes, g_a_##N[0], "shmem_atomic_fetch_inc(%s *)", tn);               \
            CHECK_EQ(10 * npes, g_a_##N[1], "shmem_atomic_inc(ctx, %s *)", tn);                \
            CHECK_EQ(30 * npes, g_a_##N[2], "shmem_atomic_fetch_add(%s *)", tn);               \
            CHECK_EQ(10 * npes * (npes + 1) / 2, g_a_##N[3], "shmem_atomic_add(ctx, %s *)", tn); \
            CHECK_EQ(30 * npes, g_a_##N[4], "shmem_atomic_fetch_inc_nbi + fetch_add_nbi(%s *)", tn); \
            CHECK_EQ(10 * npes, g_a_##N[5], "shmem_atomic_compare_swap(%s *)", tn);            \
            CHECK_EQ(80 * npes, g_a_##N[6], "shmem_finc/fadd/inc/add(%s *)", tn);              \
            CHECK_EQ(10 * npes, g_a_##N[7], "shmem_cswap(%s *)", tn);                          \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        /* extended: set, fetch, swap and their nbi / ctx forms */                             \
        shmem_atomic_set(ctx, &g_a_##N[0], (T)(me + 5), right);                                \
        shmem_set(&g_a_##N[1], (T)(me + 6), right);                                            \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        CHECK_EQ(left + 5, g_a_##N[0], "shmem_atomic_set(ctx, %s *)", tn);                     \
        CHECK_EQ(left + 6, g_a_##N[1], "shmem_set(%s *)", tn);                                 \
        shmem_barrier_all(); /* checked before the left neighbour swaps them */                \
        CHECK_EQ(me + 5, shmem_atomic_swap(ctx, &g_a_##N[0], (T)1, right), "shmem_atomic_swap(ctx, %s *)", tn); \
        CHECK_EQ(me + 6, shmem_swap(&g_a_##N[1], (T)2, right), "shmem_swap(%s *)", tn);        \
        shmem_atomic_swap_nbi(&f, &g_a_##N[0], (T)3, right);                                   \
        shmem_quiet();                                                                         \
        CHECK_EQ(1, f, "shmem_atomic_swap_nbi(%s *)", tn);                                     \
        shmem_atomic_compare_swap_nbi(ctx, &f, &g_a_##N[0], (T)3, (T)4, right);                \
        shmem_ctx_quiet(ctx);                                                                  \
        CHECK_EQ(3, f, "shmem_atomic_compare_swap_nbi(ctx, %s *)", tn);                        \
        shmem_atomic_fetch_nbi(&f, &g_a_##N[0], right);                                        \
        shmem_quiet();                                                                         \
        CHECK_EQ(4, f, "shmem_atomic_fetch_nbi(%s *)", tn);                                    \
        shmem_barrier_all();                                                                   \
    }
GEN_AMO(int, int) GEN_AMO(long, long) GEN_AMO(longlong, long long) GEN_AMO(uint, unsigned int)
GEN_AMO(ulong, unsigned long) GEN_AMO(ulonglong, unsigned long long)

static float g_ff;
static double g_fd;
static void gen_ext_float(void) {
    shmem_atomic_set(&g_ff, 1.5f + me, right);
    shmem_atomic_set(&g_fd, 2.5 + me, right);
    shmem_barrier_all();
    CHECK_EQ(1.5f + left, shmem_atomic_fetch(&g_ff, me), "shmem_atomic_fetch(float *)");
    CHECK_EQ(2.5 + left, shmem_atomic_swap(&g_fd, 0.25, me), "shmem_atomic_swap(double *)");
    CHECK_EQ(0.25, g_fd, "value shmem_atomic_swap(double *) left");
    shmem_barrier_all();
}

/* bitwise AMO generics: int32_t, int64_t, uint32_t, uint64_t (and so int, long, ...) */
#define GEN_BIT(N, T)                                                                          \
    static T g_b_##N[3];                                                                       \
    static void gen_bit_##N(void) {                                                            \
        T f, bit = (T)((T)1 << me);                                                            \
        g_b_##N[0] = 0;                                                                        \
        g_b_##N[1] = (T)~(T)0;                                                                 \
        g_b_##N[2] = 0;                                                                        \
        shmem_barrier_all();                                                                   \
        f = shmem_atomic_fetch_or(&g_b_##N[0], bit, 0);                                        \
        CHECK_EQ(0, f & bit, "shmem_atomic_fetch_or(" #T " *)");                               \
        shmem_atomic_and(ctx, &g_b_##N[1], (T)~bit, 0);                                        \
        shmem_atomic_fetch_xor_nbi(&f, &g_b_##N[2], bit, 0);                                   \
        shmem_atomic_or(&g_b_##N[2], (T)0, 0);                                                 \
        shmem_atomic_fetch_and_nbi(ctx, &f, &g_b_##N[1], (T)~(T)0, 0);                         \
        shmem_atomic_fetch_or_nbi(&f, &g_b_##N[0], (T)0, 0);                                   \
        (void)shmem_atomic_fetch_and(&g_b_##N[1], (T)~(T)0, 0);                                \
        shmem_atomic_xor(ctx, &g_b_##N[0], (T)0, 0);                                           \
        (void)shmem_atomic_fetch_xor(ctx, &g_b_##N[0], (T)0, 0);                               \
        shmem_quiet();                                                                         \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        if (me == 0) {                                                                         \
            T all = (T)(((T)1 << npes) - 1);                                                   \
            CHECK_EQ(all, g_b_##N[0], "or via generics (" #T ")");                             \
            CHECK_EQ((T)~all, g_b_##N[1], "and via generics (" #T ")");                        \
            CHECK_EQ(all, g_b_##N[2], "xor via generics (" #T ")");                            \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
    }
GEN_BIT(int32, int32_t) GEN_BIT(int64, int64_t) GEN_BIT(uint32, uint32_t) GEN_BIT(uint64, uint64_t)

/* wait/test generics over the synchronization types */
#define GEN_WAIT(N, T)                                                                         \
    static T g_w_##N[64];                                                                      \
    static void gen_wait_##N(void) {                                                           \
        T cmpv[64];                                                                            \
        size_t idx[64];                                                                        \
        int j;                                                                                 \
        memset(g_w_##N, 0, sizeof g_w_##N);                                                    \
        shmem_barrier_all();                                                                   \
        shmem_p(&g_w_##N[me], (T)(me + 1), right);                                             \
        shmem_wait_until(&g_w_##N[left], SHMEM_CMP_EQ, (T)(left + 1));                         \
        CHECK_EQ(1, shmem_test(&g_w_##N[left], SHMEM_CMP_GE, (T)1), "shmem_test(" #T " *)");   \
        CHECK_EQ(left, shmem_test_any(g_w_##N, npes, NULL, SHMEM_CMP_NE, (T)0), "shmem_test_any(" #T " *)"); \
        CHECK_EQ(left, shmem_wait_until_any(g_w_##N, npes, NULL, SHMEM_CMP_NE, (T)0), "shmem_wait_until_any(" #T " *)"); \
        CHECK_EQ(1, shmem_wait_until_some(g_w_##N, npes, idx, NULL, SHMEM_CMP_NE, (T)0), "shmem_wait_until_some(" #T " *)"); \
        CHECK_EQ(1, shmem_test_some(g_w_##N, npes, idx, NULL, SHMEM_CMP_NE, (T)0), "shmem_test_some(" #T " *)"); \
        shmem_barrier_all();                                                                   \
        for (j = 0; j < npes; j++)                                                             \
            if (j != me) shmem_p(&g_w_##N[32 + me], (T)(me + 2), j);                           \
        for (j = 0; j < npes; j++) cmpv[j] = (T)(j + 2);                                       \
        {                                                                                      \
            int status[64] = {0};                                                              \
            status[me] = 1;                                                                    \
            shmem_wait_until_all(&g_w_##N[32], npes, status, SHMEM_CMP_GE, (T)2);             \
            CHECK_EQ(1, shmem_test_all(&g_w_##N[32], npes, status, SHMEM_CMP_GE, (T)2), "shmem_test_all(" #T " *)"); \
            shmem_wait_until_all_vector(&g_w_##N[32], npes, status, SHMEM_CMP_EQ, cmpv);        \
            CHECK_EQ(1, shmem_test_all_vector(&g_w_##N[32], npes, status, SHMEM_CMP_EQ, cmpv), "shmem_test_all_vector(" #T " *)"); \
            CHECK(shmem_wait_until_any_vector(&g_w_##N[32], npes, status, SHMEM_CMP_EQ, cmpv) != (size_t)me, "shmem_wait_until_any_vector(" #T " *)"); \
            CHECK(shmem_test_any_vector(&g_w_##N[32], npes, status, SHMEM_CMP_EQ, cmpv) != (size_t)me, "shmem_test_any_vector(" #T " *)"); \
            CHECK_EQ(npes - 1, shmem_wait_until_some_vector(&g_w_##N[32], npes, idx, status, SHMEM_CMP_EQ, cmpv), "shmem_wait_until_some_vector(" #T " *)"); \
            CHECK_EQ(npes - 1, shmem_test_some_vector(&g_w_##N[32], npes, idx, status, SHMEM_CMP_EQ, cmpv), "shmem_test_some_vector(" #T " *)"); \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
    }
GEN_WAIT(short, short) GEN_WAIT(int, int) GEN_WAIT(long, long) GEN_WAIT(longlong, long long)
GEN_WAIT(ushort, unsigned short) GEN_WAIT(uint, unsigned int) GEN_WAIT(ulong, unsigned long)
GEN_WAIT(ulonglong, unsigned long long)

static void gen_complex(void) {
    static double _Complex s, d;
    static float _Complex fs, fd;
    s = (me + 1) + 1.0 * I;
    fs = 1.0f + (me % 2) * I;
    CHECK_EQ(0, shmem_sum_reduce(SHMEM_TEAM_WORLD, &d, &s, 1), "shmem_sum_reduce(double _Complex *)");
    CHECK(d == npes * (npes + 1) / 2 + npes * 1.0 * I, "shmem_sum_reduce(double _Complex *) value");
    CHECK_EQ(0, shmem_prod_reduce(SHMEM_TEAM_WORLD, &fd, &fs, 1), "shmem_prod_reduce(float _Complex *)");
    {
        float _Complex e = 1;
        for (int p = 0; p < npes; p++) e *= 1.0f + (p % 2) * I;
        CHECK(fd == e, "shmem_prod_reduce(float _Complex *) value");
    }
}

int main(void) {
    ox_init("generic");
    me = ox_me;
    npes = ox_npes;
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    CHECK_EQ(0, shmem_ctx_create(0, &ctx), "shmem_ctx_create");
#define RUN_RMA(N, T) gen_rma_##N();
    GEN_RMA_TYPES(RUN_RMA)
    gen_bitred_uchar(); gen_bitred_ushort(); gen_bitred_uint(); gen_bitred_ulong();
    gen_bitred_ulonglong(); gen_bitred_int(); gen_bitred_long(); gen_bitred_short(); gen_bitred_schar();
    gen_amo_int(); gen_amo_long(); gen_amo_longlong(); gen_amo_uint(); gen_amo_ulong(); gen_amo_ulonglong();
    gen_ext_float();
    gen_bit_int32(); gen_bit_int64(); gen_bit_uint32(); gen_bit_uint64();
    gen_wait_short(); gen_wait_int(); gen_wait_long(); gen_wait_longlong();
    gen_wait_ushort(); gen_wait_uint(); gen_wait_ulong(); gen_wait_ulonglong();
    gen_complex();
    shmem_ctx_destroy(ctx);
    return ox_finish();
}
