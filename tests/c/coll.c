/*
 * Collectives, on SHMEM_TEAM_WORLD and again on a team of the PEs 1..n-1 (made with
 * shmem_team_split_strided, so that team and world numbers differ):
 *
 *   sync        shmem_barrier_all, shmem_sync_all (after shmem_quiet), shmem_team_sync: data
 *               put before them is there after them, many rounds
 *   data        shmem_TYPE_{broadcast,collect,fcollect,alltoall,alltoalls} for every standard
 *               RMA type and the mem forms; collect with a different count on every PE
 *   reductions  every operation for every type: and/or/xor over the bitwise types, max/min over
 *               the 24 standard types, sum/prod over them and complexf/complexd (long double
 *               included), one long reduction and one in place
 *
 * Expected values are computed here from what each team member contributed.
 */
#include <complex.h>
#include "oxtest.h"

#define NR 7 /* elements of each reduction */

static int me, npes;

#define V(T, p, i, k) OX_VAL(T, p, i, k)
#define SENT(T) ((T)0x5A)

/* ---- broadcast, collect, fcollect, alltoall, alltoalls ---- */
#define DATA_TEST(N, T)                                                                        \
    static void data_##N(shmem_team_t team, const char *team_name) {                           \
        const char *tn = #N;                                                                   \
        int member = team != SHMEM_TEAM_INVALID;                                               \
        int tme = member ? shmem_team_my_pe(team) : -1;                                       \
        int tsz = member ? shmem_team_n_pes(team) : 0;                                         \
        size_t cap = (size_t)npes * (npes + 1) / 2 + 6 * (size_t)npes * 8;                     \
        T *src = (T *)shmem_malloc(cap * sizeof(T));                                           \
        T *dst = (T *)shmem_malloc(cap * sizeof(T));                                           \
        size_t i, j, off;                                                                      \
        if (member) {                                                                          \
            int root = tsz - 1;                                                                \
            for (i = 0; i < cap; i++) dst[i] = SENT(T);                                        \
            for (i = 0; i < 5; i++) src[i] = V(T, tme, i, 50);                                 \
            CHECK_EQ(0, shmem_##N##_broadcast(team, dst, src, 5, root), "%s broadcast status (%s)", tn, team_name); \
            for (i = 0; i < 5; i++)                                                            \
                CHECK_EQ(V(T, root, i, 50), dst[i], "%s broadcast [%zu] (%s)", tn, i, team_name); \
            CHECK_EQ(SENT(T), dst[5], "%s broadcast past the end (%s)", tn, team_name);        \
                                                                                               \
            for (i = 0; i < cap; i++) dst[i] = SENT(T);                                        \
            for (i = 0; i < (size_t)tme + 1; i++) src[i] = V(T, tme, i, 51);                   \
            CHECK_EQ(0, shmem_##N##_collect(team, dst, src, (size_t)tme + 1), "%s collect status (%s)", tn, team_name); \
            for (j = 0, off = 0; j < (size_t)tsz; off += j + 1, j++)                           \
                for (i = 0; i <= j; i++)                                                       \
                    CHECK_EQ(V(T, (int)j, i, 51), dst[off + i], "%s collect from %zu [%zu] (%s)", tn, j, i, team_name); \
            CHECK_EQ(SENT(T), dst[off], "%s collect past the end (%s)", tn, team_name);        \
                                                                                               \
            for (i = 0; i < cap; i++) dst[i] = SENT(T);                                        \
            for (i = 0; i < 3; i++) src[i] = V(T, tme, i, 52);                                 \
            CHECK_EQ(0, shmem_##N##_fcollect(team, dst, src, 3), "%s fcollect status (%s)", tn, team_name); \
            for (j = 0; j < (size_t)tsz; j++)                                                  \
                for (i = 0; i < 3; i++)                                                        \
                    CHECK_EQ(V(T, (int)j, i, 52), dst[j * 3 + i], "%s fcollect from %zu [%zu] (%s)", tn, j, i, team_name); \
                                                                                               \
            for (i = 0; i < cap; i++) dst[i] = SENT(T);                                        \
            for (i = 0; i < 2 * (size_t)tsz; i++) src[i] = V(T, tme, i, 53);                   \
            CHECK_EQ(0, shmem_##N##_alltoall(team, dst, src, 2), "%s alltoall status (%s)", tn, team_name); \
            for (j = 0; j < (size_t)tsz; j++)                                                  \
                for (i = 0; i < 2; i++)                                                        \
                    CHECK_EQ(V(T, (int)j, (size_t)tme * 2 + i, 53), dst[j * 2 + i], "%s alltoall from %zu [%zu] (%s)", tn, j, i, team_name); \
                                                                                               \
            for (i = 0; i < cap; i++) dst[i] = SENT(T);                                        \
            for (i = 0; i < 6 * (size_t)tsz; i++) src[i] = V(T, tme, i, 54);                   \
            CHECK_EQ(0, shmem_##N##_alltoalls(team, dst, src, 2, 3, 2), "%s alltoalls status (%s)", tn, team_name); \
            for (i = 0; i < 4 * (size_t)tsz; i++) {                                            \
                T e = SENT(T);                                                                 \
                if (i % 2 == 0) {                                                              \
                    size_t el = i / 2, from = el / 2, k = el % 2;                              \
                    e = V(T, (int)from, ((size_t)tme * 2 + k) * 3, 54);                        \
                }                                                                              \
                CHECK_EQ(e, dst[i], "%s alltoalls(dst 2, sst 3) dest[%zu] (%s)", tn, i, team_name); \
            }                                                                                  \
            shmem_team_sync(team);                                                             \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(dst);                                                                       \
        shmem_free(src);                                                                       \
    }
OX_RMA_TYPES(DATA_TEST)

static void data_mem(shmem_team_t team, const char *team_name) {
    int member = team != SHMEM_TEAM_INVALID;
    int tme = member ? shmem_team_my_pe(team) : -1, tsz = member ? shmem_team_n_pes(team) : 0;
    size_t cap = 64 * (size_t)npes * 8, i, j, off;
    unsigned char *src = (unsigned char *)shmem_malloc(cap), *dst = (unsigned char *)shmem_malloc(cap);
#define B(p, i, k) ((unsigned char)(ox_mix(p, (long)(i), k) >> 16))
    if (member) {
        memset(dst, 0x5A, cap);
        for (i = 0; i < 37; i++) src[i] = B(tme, i, 70);
        CHECK_EQ(0, shmem_broadcastmem(team, dst, src, 37, 0), "broadcastmem status (%s)", team_name);
        for (i = 0; i < 38; i++) CHECK_EQ(i < 37 ? B(0, i, 70) : 0x5A, dst[i], "broadcastmem [%zu] (%s)", i, team_name);
        memset(dst, 0x5A, cap);
        for (i = 0; i < (size_t)tme * 3 + 1; i++) src[i] = B(tme, i, 71);
        CHECK_EQ(0, shmem_collectmem(team, dst, src, (size_t)tme * 3 + 1), "collectmem status (%s)", team_name);
        for (j = 0, off = 0; j < (size_t)tsz; off += j * 3 + 1, j++)
            for (i = 0; i < j * 3 + 1; i++) CHECK_EQ(B((int)j, i, 71), dst[off + i], "collectmem from %zu [%zu] (%s)", j, i, team_name);
        memset(dst, 0x5A, cap);
        for (i = 0; i < 13; i++) src[i] = B(tme, i, 72);
        CHECK_EQ(0, shmem_fcollectmem(team, dst, src, 13), "fcollectmem status (%s)", team_name);
        for (j = 0; j < (size_t)tsz; j++)
            for (i = 0; i < 13; i++) CHECK_EQ(B((int)j, i, 72), dst[j * 13 + i], "fcollectmem from %zu [%zu] (%s)", j, i, team_name);
        memset(dst, 0x5A, cap);
        for (i = 0; i < 11 * (size_t)tsz; i++) src[i] = B(tme, i, 73);
        CHECK_EQ(0, shmem_alltoallmem(team, dst, src, 11), "alltoallmem status (%s)", team_name);
        for (j = 0; j < (size_t)tsz; j++)
            for (i = 0; i < 11; i++) CHECK_EQ(B((int)j, (size_t)tme * 11 + i, 73), dst[j * 11 + i], "alltoallmem from %zu [%zu] (%s)", j, i, team_name);
        memset(dst, 0x5A, cap);
        for (i = 0; i < 4 * 3 * (size_t)tsz; i++) src[i] = B(tme, i, 74);
        CHECK_EQ(0, shmem_alltoallsmem(team, dst, src, 3, 4, 3), "alltoallsmem status (%s)", team_name);
        for (i = 0; i < 3 * 3 * (size_t)tsz; i++) {
            unsigned char e = 0x5A;
            if (i % 3 == 0) {
                size_t el = i / 3, from = el / 3, k = el % 3;
                e = B((int)from, ((size_t)tme * 3 + k) * 4, 74);
            }
            CHECK_EQ(e, dst[i], "alltoallsmem(dst 3, sst 4) dest[%zu] (%s)", i, team_name);
        }
    }
#undef B
    shmem_barrier_all();
    shmem_free(dst);
    shmem_free(src);
}

/* ---- reductions ---- */
/* Each reduction runs on the member's contribution and is compared with the same operation
 * folded here over every member's contribution, in team order. */
#define RED_BODY(N, T, OP, FILL, FOLD)                                                         \
    {                                                                                          \
        T e[NR];                                                                               \
        int i_, p_;                                                                            \
        for (i_ = 0; i_ < NR; i_++) {                                                          \
            int i = i_, p = tme;                                                               \
            src[i_] = (T)(FILL);                                                               \
            dst[i_] = SENT(T);                                                                 \
            (void)p;                                                                           \
        }                                                                                      \
        CHECK_EQ(0, shmem_##N##_##OP##_reduce(team, dst, src, NR), "%s " #OP "_reduce status (%s)", tn, team_name); \
        for (i_ = 0; i_ < NR; i_++) {                                                          \
            for (p_ = 0; p_ < tsz; p_++) {                                                     \
                int i = i_, p = p_;                                                            \
                T x = (T)(FILL);                                                               \
                (void)i;                                                                       \
                if (p_ == 0) e[i_] = x;                                                        \
                else e[i_] = (T)(FOLD);                                                        \
            }                                                                                  \
            CHECK_EQ(e[i_], dst[i_], "%s " #OP "_reduce [%d] (%s)", tn, i_, team_name);        \
        }                                                                                      \
    }

#define RED_SETUP(N)                                                                           \
    const char *tn = #N;                                                                       \
    int member = team != SHMEM_TEAM_INVALID;                                                   \
    int tme = member ? shmem_team_my_pe(team) : -1;                                            \
    int tsz = member ? shmem_team_n_pes(team) : 0;

#define RED_MINMAX(N, T)                                                                       \
    static void red_minmax_##N(shmem_team_t team, const char *team_name) {                     \
        RED_SETUP(N)                                                                           \
        T *src = (T *)shmem_malloc(NR * sizeof(T)), *dst = (T *)shmem_malloc(NR * sizeof(T));  \
        if (member) {                                                                          \
            RED_BODY(N, T, max, V(T, p, i, 60), e[i_] > x ? e[i_] : x)                         \
            RED_BODY(N, T, min, V(T, p, i, 61), e[i_] < x ? e[i_] : x)                         \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(dst);                                                                       \
        shmem_free(src);                                                                       \
    }
OX_REDUCE_MINMAX_TYPES(RED_MINMAX)

#define RED_ARITH(N, T)                                                                        \
    static void red_arith_##N(shmem_team_t team, const char *team_name) {                      \
        RED_SETUP(N)                                                                           \
        T *src = (T *)shmem_malloc(NR * sizeof(T)), *dst = (T *)shmem_malloc(NR * sizeof(T));  \
        if (member) {                                                                          \
            RED_BODY(N, T, sum, p + 1 + i % 3, e[i_] + x)                                      \
            RED_BODY(N, T, prod, 1 + (p + i) % 3, e[i_] * x)                                   \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(dst);                                                                       \
        shmem_free(src);                                                                       \
    }
OX_REDUCE_ARITH_TYPES(RED_ARITH)

#define RED_BIT(N, T)                                                                          \
    static void red_bit_##N(shmem_team_t team, const char *team_name) {                        \
        RED_SETUP(N)                                                                           \
        T *src = (T *)shmem_malloc(NR * sizeof(T)), *dst = (T *)shmem_malloc(NR * sizeof(T));  \
        if (member) {                                                                          \
            RED_BODY(N, T, and, V(T, p, i, 62) | V(T, p, i, 63), e[i_] & x)                    \
            RED_BODY(N, T, or, V(T, p, i, 64) & V(T, p, i, 65), e[i_] | x)                     \
            RED_BODY(N, T, xor, V(T, p, i, 66), e[i_] ^ x)                                     \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(dst);                                                                       \
        shmem_free(src);                                                                       \
    }
OX_REDUCE_BIT_TYPES(RED_BIT)

/* complex: small Gaussian integers, so that every sum and product is exact */
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

#define RED_COMPLEX(N, T)                                                                      \
    static void red_##N(shmem_team_t team, const char *team_name) {                            \
        RED_SETUP(N)                                                                           \
        T *src = (T *)shmem_malloc(NR * sizeof(T)), *dst = (T *)shmem_malloc(NR * sizeof(T));  \
        int op, i, p;                                                                          \
        if (member) {                                                                          \
            for (op = 0; op < 2; op++) {                                                       \
                for (i = 0; i < NR; i++) {                                                     \
                    src[i] = (T)((tme + 1 + i % 2) + (tme % 2 ? 1 : -1) * (i % 3) * I);        \
                    dst[i] = 0;                                                                \
                }                                                                              \
                CHECK_EQ(0, op ? shmem_##N##_prod_reduce(team, dst, src, NR) : shmem_##N##_sum_reduce(team, dst, src, NR), \
                         "%s %s_reduce status (%s)", tn, op ? "prod" : "sum", team_name);      \
                for (i = 0; i < NR; i++) {                                                     \
                    T e = op ? 1 : 0;                                                          \
                    for (p = 0; p < tsz; p++) {                                                \
                        T x = (T)((p + 1 + i % 2) + (p % 2 ? 1 : -1) * (i % 3) * I);           \
                        e = op ? e * x : e + x;                                                \
                    }                                                                          \
                    CHECK_CEQ(e, dst[i], "%s %s_reduce [%d] (%s)", tn, op ? "prod" : "sum", i, team_name); \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(dst);                                                                       \
        shmem_free(src);                                                                       \
    }
RED_COMPLEX(complexf, float _Complex)
RED_COMPLEX(complexd, double _Complex)

/* a long reduction (many chunks of any internal buffer) and one in place */
static void red_long(shmem_team_t team, const char *team_name) {
    const size_t n = 100000;
    int member = team != SHMEM_TEAM_INVALID;
    int tme = member ? shmem_team_my_pe(team) : -1, tsz = member ? shmem_team_n_pes(team) : 0;
    int *is = (int *)shmem_malloc(n * sizeof(int)), *id = (int *)shmem_malloc(n * sizeof(int));
    double *ds = (double *)shmem_malloc(n * sizeof(double));
    size_t i;
    if (member) {
        long bad = 0;
        for (i = 0; i < n; i++) is[i] = (int)(i % 1000) * (tme + 1);
        CHECK_EQ(0, shmem_int_sum_reduce(team, id, is, n), "int_sum_reduce of %zu (%s)", n, team_name);
        for (i = 0; i < n; i++)
            if (id[i] != (int)(i % 1000) * tsz * (tsz + 1) / 2) bad++;
        CHECK_EQ(0, bad, "elements wrong in int_sum_reduce of %zu (%s)", n, team_name);
        for (i = 0; i < n; i++) ds[i] = (double)(i % 77) + tme * 0.25;
        CHECK_EQ(0, shmem_double_max_reduce(team, ds, ds, n), "in-place double_max_reduce (%s)", team_name);
        bad = 0;
        for (i = 0; i < n; i++)
            if (ds[i] != (double)(i % 77) + (tsz - 1) * 0.25) bad++;
        CHECK_EQ(0, bad, "elements wrong in in-place double_max_reduce of %zu (%s)", n, team_name);
    }
    shmem_barrier_all();
    shmem_free(ds);
    shmem_free(id);
    shmem_free(is);
}

/* ---- barrier_all, sync_all, team_sync ---- */
static int g_slot[3];
static void syncs(shmem_team_t team) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes, r;
    for (r = 1; r <= 50; r++) {
        shmem_int_p(&g_slot[0], r, right);
        shmem_barrier_all();
        CHECK_EQ(r, g_slot[0], "slot after shmem_barrier_all, round %d", r);
        shmem_int_p(&g_slot[1], r * 3 + me, right);
        shmem_quiet();
        shmem_sync_all();
        CHECK_EQ(r * 3 + left, g_slot[1], "slot after shmem_quiet + shmem_sync_all, round %d", r);
        shmem_sync_all(); /* nobody writes round r+1 before everyone has read round r */
    }
    if (team != SHMEM_TEAM_INVALID) {
        int tme = shmem_team_my_pe(team), tsz = shmem_team_n_pes(team);
        int tright = shmem_team_translate_pe(team, (tme + 1) % tsz, SHMEM_TEAM_WORLD);
        int tleft = shmem_team_translate_pe(team, (tme + tsz - 1) % tsz, SHMEM_TEAM_WORLD);
        for (r = 1; r <= 50; r++) {
            shmem_int_p(&g_slot[2], r * 7 + me, tright);
            shmem_quiet();
            CHECK_EQ(0, shmem_team_sync(team), "shmem_team_sync status");
            CHECK_EQ(r * 7 + tleft, g_slot[2], "slot after shmem_team_sync, round %d", r);
            shmem_team_sync(team);
        }
    }
    shmem_barrier_all();
}

static void all_on(shmem_team_t team, const char *name) {
#define RUN_DATA(N, T) data_##N(team, name);
    OX_RMA_TYPES(RUN_DATA)
    data_mem(team, name);
#define RUN_MM(N, T) red_minmax_##N(team, name);
    OX_REDUCE_MINMAX_TYPES(RUN_MM)
#define RUN_AR(N, T) red_arith_##N(team, name);
    OX_REDUCE_ARITH_TYPES(RUN_AR)
#define RUN_BIT(N, T) red_bit_##N(team, name);
    OX_REDUCE_BIT_TYPES(RUN_BIT)
    red_complexf(team, name);
    red_complexd(team, name);
    red_long(team, name);
}

int main(void) {
    shmem_team_t rest;
    ox_init("coll");
    me = ox_me;
    npes = ox_npes;
    syncs(SHMEM_TEAM_WORLD);
    all_on(SHMEM_TEAM_WORLD, "world");
    /* PEs 1..n-1: team PE t is world PE t+1 */
    CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, NULL, 0, &rest),
             "split_strided(1, 1, n-1)");
    CHECK_EQ(me == 0, rest == SHMEM_TEAM_INVALID, "PE 0 is outside the team of PEs 1..n-1");
    syncs(rest);
    all_on(rest, "PEs 1..n-1");
    if (rest != SHMEM_TEAM_INVALID) shmem_team_destroy(rest);
    return ox_finish();
}
