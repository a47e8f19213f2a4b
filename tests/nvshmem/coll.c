/*
 * coll.c -- NVSHMEM host collectives on NVSHMEM_TEAM_WORLD and on teams made with
 * nvshmem_team_split_strided and nvshmem_team_split_2d:
 *
 * - barrier_all, barrier, sync_all, team_sync (a put before them is seen after them);
 * - broadcast, fcollect, alltoall for the 25 types (half and bfloat16 as bit patterns) and the
 *   mem forms;
 * - every reduction: and/or/xor for the 14 bitwise types, sum/prod/max/min for the 24
 *   arithmetic types (half and bfloat16 sums, products and extremes of exactly representable
 *   values), as reduce and as reducescatter;
 * - team_my_pe, team_n_pes, team_translate_pe, team_get_config, team_destroy, and the
 *   predefined NVSHMEM_TEAM_SHARED and NVSHMEMX_TEAM_NODE (one node: the world).
 *
 * Every expected value is computed here from the team's known layout with plain C.
 * Prints "PE n: <what>: expected X got Y" on stderr for each mismatch, "PE n: OK" when none.
 */
#define _POSIX_C_SOURCE 200809L
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* half and bfloat16 as bit patterns, in C (where nvshmem.h declares them as 16-bit storage) and
 * in CUDA C++ (where they are CUDA's classes): through memcpy, never a member name. */
static inline half h16_make_half(unsigned short u) { half h; memcpy(&h, &u, 2); return h; }
static inline __nv_bfloat16 h16_make___nv_bfloat16(unsigned short u) { __nv_bfloat16 h; memcpy(&h, &u, 2); return h; }
static inline unsigned short h16_bits_h(half v) { unsigned short u; memcpy(&u, &v, 2); return u; }
static inline unsigned short h16_bits_b(__nv_bfloat16 v) { unsigned short u; memcpy(&u, &v, 2); return u; }
#ifdef __cplusplus
static inline unsigned short h16_bits(half v) { return h16_bits_h(v); }
static inline unsigned short h16_bits(__nv_bfloat16 v) { return h16_bits_b(v); }
#else
#define h16_bits(v) _Generic((v), half: h16_bits_h, __nv_bfloat16: h16_bits_b)(v)
#endif


/* ---------------------------------------------------------------- checks (same in every program) */

static int me = -1, npes = 0;
static long failures = 0, checks = 0;
static const char *where = ""; /* the team being tested, in every message */

#ifdef __GNUC__
__attribute__((format(printf, 1, 2)))
#endif
static void fail(const char *fmt, ...) {
    failures++;
    if (failures > 40) return;
    char buf[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "PE %d: %s%s\n", me, where, buf);
    fflush(stderr);
}

#define CHECK_EQ(expected, got, ...)                                                           \
    do {                                                                                       \
        __typeof__(got) g_ = (got);                                                            \
        __typeof__(got) e_ = (__typeof__(got))(expected);                                      \
        checks++;                                                                              \
        if (!(g_ == e_)) {                                                                     \
            char w_[256];                                                                      \
            snprintf(w_, sizeof w_, __VA_ARGS__);                                              \
            fail("%s: expected %.21Lg got %.21Lg", w_, (long double)e_, (long double)g_);      \
        }                                                                                      \
    } while (0)

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        checks++;                                                                              \
        if (!(cond)) {                                                                         \
            char w_[256];                                                                      \
            snprintf(w_, sizeof w_, __VA_ARGS__);                                              \
            fail("%s: expected %s got false", w_, #cond);                                      \
        }                                                                                      \
    } while (0)

static uint64_t mix(int p, long i, int k) {
    uint64_t x = (uint64_t)(p + 1) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ULL ^
                 (uint64_t)(k + 7) * 0x94D049BB133111EBULL;
    x ^= x >> 29;
    return x;
}

/* half (binary16) of a small integer (|v| <= 2048, exact), from its definition. */
static unsigned short half_bits(int v) {
    if (v == 0) return 0;
    unsigned short sign = v < 0 ? 0x8000 : 0;
    unsigned a = (unsigned)(v < 0 ? -v : v);
    int e = 31 - __builtin_clz(a);
    return (unsigned short)(sign | (unsigned)((e + 15) << 10) | ((a << (10 - e)) & 0x3FF));
}
/* bfloat16 of a small integer (|v| <= 256, exact): the top half of the float. */
static unsigned short bf16_bits(int v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (unsigned short)(u >> 16);
}

/* Value kinds: NUM (a C arithmetic type), H16 (half/bfloat16 moved as bit patterns), HALF and
 * BF16 (half/bfloat16 holding a small integer, for reductions). */
#define MK_NUM(T, p, i, k) ((T)1.5 == (T)1 ? (T)mix(p, i, k) : (T)((double)(mix(p, i, k) % 100000) / 4.0))
#define MK_H16(T, p, i, k) (h16_make_##T((unsigned short)mix(p, i, k)))
#define EQ_NUM(a, b) ((a) == (b))
#define EQ_H16(a, b) (h16_bits(a) == h16_bits(b))
#define EQ_HALF EQ_H16
#define EQ_BF16 EQ_H16
#define SHOW_NUM(v) ((long double)(v))
#define SHOW_H16(v) ((long double)h16_bits(v))
#define SHOW_HALF SHOW_H16
#define SHOW_BF16 SHOW_H16
#define CHECK_V(K, expected, got, ...)                                                         \
    do {                                                                                       \
        checks++;                                                                              \
        if (!EQ_##K(expected, got)) {                                                          \
            char w_[256];                                                                      \
            snprintf(w_, sizeof w_, __VA_ARGS__);                                              \
            fail("%s: expected %.21Lg got %.21Lg", w_, SHOW_##K(expected), SHOW_##K(got));     \
        }                                                                                      \
    } while (0)

static int finish(void) {
    where = "";
    nvshmem_barrier_all();
    if (failures == 0) {
        printf("PE %d: OK\n", me);
    } else {
        fprintf(stderr, "PE %d: FAILED (%ld of %ld checks)\n", me, failures, checks);
    }
    fflush(stdout);
    fflush(stderr);
    nvshmem_finalize();
    return failures == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- the team under test */

static nvshmem_team_t team;
static const int *mem; /* world PE of each member */
static int tn_pes, tme;   /* members, my index */
static unsigned char *sym_src, *sym_dst; /* symmetric scratch */
#define SCRATCH (512 * 1024)

/* ---------------------------------------------------------------- barriers */

static int *slots; /* symmetric, npes ints */

static void barriers(void) {
    for (int r = 1; r <= 3; r++) {
        int tag = r * 100;
        /* barrier / barrier_all: the puts before it have arrived after it */
        for (int j = 0; j < tn_pes; j++) nvshmem_int_p(&slots[tme], tag + tme, mem[j]);
        if (team == NVSHMEM_TEAM_WORLD && r == 1)
            nvshmem_barrier_all();
        else
            CHECK_EQ(0, nvshmem_barrier(team), "nvshmem_barrier return, round %d", r);
        for (int j = 0; j < tn_pes; j++)
            CHECK_EQ(tag + j, slots[j], "after %s round %d: slot of member %d",
                     team == NVSHMEM_TEAM_WORLD && r == 1 ? "nvshmem_barrier_all" : "nvshmem_barrier", r, j);
        CHECK_EQ(0, nvshmem_barrier(team), "nvshmem_barrier return");
        /* sync_all / team_sync: after a quiet the puts have arrived */
        for (int j = 0; j < tn_pes; j++) nvshmem_int_p(&slots[tme], tag + 50 + tme, mem[j]);
        nvshmem_quiet();
        if (team == NVSHMEM_TEAM_WORLD && r == 2)
            nvshmem_sync_all();
        else
            CHECK_EQ(0, nvshmem_team_sync(team), "nvshmem_team_sync return, round %d", r);
        for (int j = 0; j < tn_pes; j++)
            CHECK_EQ(tag + 50 + j, slots[j], "after quiet + %s round %d: slot of member %d",
                     team == NVSHMEM_TEAM_WORLD && r == 2 ? "nvshmem_sync_all" : "nvshmem_team_sync", r, j);
        CHECK_EQ(0, nvshmem_team_sync(team), "nvshmem_team_sync return");
    }
    /* A count: each member adds 1 to member 0's word, barrier, member 0 sees the total. */
    if (tme == 0) slots[npes - 1] = 0;
    CHECK_EQ(0, nvshmem_barrier(team), "nvshmem_barrier return");
    for (int r = 0; r < 5; r++) {
        nvshmem_int_atomic_add(&slots[npes - 1], 1, mem[0]);
        CHECK_EQ(0, nvshmem_barrier(team), "nvshmem_barrier return");
        if (tme == 0) CHECK_EQ((r + 1) * tn_pes, slots[npes - 1], "atomic count after barrier %d", r);
        CHECK_EQ(0, nvshmem_barrier(team), "nvshmem_barrier return");
    }
}

/* ---------------------------------------------------------------- broadcast, fcollect, alltoall */

/* NVSHMEM's 25 RMA types, as moved by the data collectives */
#define MOVE_TYPES(X)                                                                          \
    X(float, float, NUM) X(double, double, NUM) X(char, char, NUM)                             \
    X(schar, signed char, NUM) X(short, short, NUM) X(int, int, NUM) X(long, long, NUM)        \
    X(longlong, long long, NUM) X(uchar, unsigned char, NUM)                                   \
    X(ushort, unsigned short, NUM) X(uint, unsigned int, NUM) X(ulong, unsigned long, NUM)     \
    X(ulonglong, unsigned long long, NUM) X(int8, int8_t, NUM) X(int16, int16_t, NUM)          \
    X(int32, int32_t, NUM) X(int64, int64_t, NUM) X(uint8, uint8_t, NUM)                       \
    X(uint16, uint16_t, NUM) X(uint32, uint32_t, NUM) X(uint64, uint64_t, NUM)                 \
    X(size, size_t, NUM) X(ptrdiff, ptrdiff_t, NUM) X(half, half, H16)                         \
    X(bfloat16, __nv_bfloat16, H16)

#define NB 5

#define DEF_MOVE(NAME, T, K)                                                                   \
    static void move_##NAME(void) {                                                            \
        const char *tn = #NAME;                                                                \
        T *s = (T *)sym_src, *d = (T *)sym_dst;                                                \
        int n = tn_pes, rc;                                                                    \
        for (int root = 0; root < n; root += (n > 1 ? n - 1 : 1)) {                            \
            for (int i = 0; i < NB; i++) s[i] = MK_##K(T, mem[tme], i, 10 + root);             \
            for (int i = 0; i < NB + 2; i++) d[i] = MK_##K(T, 999, i, 0);                      \
            rc = nvshmem_##NAME##_broadcast(team, d, s, NB, root);                             \
            CHECK_EQ(0, rc, "nvshmem_%s_broadcast return", tn);                                \
            for (int i = 0; i < NB + 2; i++) {                                                 \
                T want = i < NB ? MK_##K(T, mem[root], i, 10 + root) : MK_##K(T, 999, i, 0);   \
                CHECK_V(K, want, d[i], "nvshmem_%s_broadcast from member %d [%d]", tn, root, i); \
            }                                                                                  \
            nvshmem_barrier(team);                                                             \
        }                                                                                      \
        for (int i = 0; i < NB; i++) s[i] = MK_##K(T, mem[tme], i, 20);                        \
        for (int i = 0; i < n * NB + 2; i++) d[i] = MK_##K(T, 999, i, 1);                      \
        rc = nvshmem_##NAME##_fcollect(team, d, s, NB);                                        \
        CHECK_EQ(0, rc, "nvshmem_%s_fcollect return", tn);                                     \
        for (int i = 0; i < n * NB + 2; i++) {                                                 \
            T want = i < n * NB ? MK_##K(T, mem[i / NB], i % NB, 20) : MK_##K(T, 999, i, 1);   \
            CHECK_V(K, want, d[i], "nvshmem_%s_fcollect [%d]", tn, i);                         \
        }                                                                                      \
        nvshmem_barrier(team);                                                                 \
        for (int i = 0; i < n * NB; i++) s[i] = MK_##K(T, mem[tme], i, 30);                    \
        for (int i = 0; i < n * NB + 2; i++) d[i] = MK_##K(T, 999, i, 2);                      \
        rc = nvshmem_##NAME##_alltoall(team, d, s, NB);                                        \
        CHECK_EQ(0, rc, "nvshmem_%s_alltoall return", tn);                                     \
        for (int i = 0; i < n * NB + 2; i++) {                                                 \
            T want = i < n * NB ? MK_##K(T, mem[i / NB], tme * NB + i % NB, 30)                \
                                : MK_##K(T, 999, i, 2);                                        \
            CHECK_V(K, want, d[i], "nvshmem_%s_alltoall [%d] (from member %d)", tn, i, i / NB); \
        }                                                                                      \
        nvshmem_barrier(team);                                                                 \
    }
MOVE_TYPES(DEF_MOVE)

static void move_mem(size_t nb) {
    int n = tn_pes, rc;
    unsigned char *s = sym_src, *d = sym_dst;
    int root = n - 1;
    for (size_t i = 0; i < nb; i++) s[i] = (unsigned char)mix(mem[tme], (long)i, 40);
    memset(d, 0xAB, nb + 8);
    rc = nvshmem_broadcastmem(team, d, s, nb, root);
    CHECK_EQ(0, rc, "nvshmem_broadcastmem return");
    for (size_t i = 0; i < nb + 8; i++)
        CHECK_EQ(i < nb ? (unsigned char)mix(mem[root], (long)i, 40) : 0xAB, d[i], "nvshmem_broadcastmem(%zu bytes) [%zu]", nb, i);
    nvshmem_barrier(team);
    for (size_t i = 0; i < nb; i++) s[i] = (unsigned char)mix(mem[tme], (long)i, 41);
    memset(d, 0xAB, n * nb + 8);
    rc = nvshmem_fcollectmem(team, d, s, nb);
    CHECK_EQ(0, rc, "nvshmem_fcollectmem return");
    for (size_t i = 0; i < n * nb + 8; i++)
        CHECK_EQ(i < n * nb ? (unsigned char)mix(mem[i / nb], (long)(i % nb), 41) : 0xAB, d[i],
                 "nvshmem_fcollectmem(%zu bytes) [%zu]", nb, i);
    nvshmem_barrier(team);
    for (size_t i = 0; i < n * nb; i++) s[i] = (unsigned char)mix(mem[tme], (long)i, 42);
    memset(d, 0xAB, n * nb + 8);
    rc = nvshmem_alltoallmem(team, d, s, nb);
    CHECK_EQ(0, rc, "nvshmem_alltoallmem return");
    for (size_t i = 0; i < n * nb + 8; i++)
        CHECK_EQ(i < n * nb ? (unsigned char)mix(mem[i / nb], (long)(tme * nb + i % nb), 42) : 0xAB, d[i],
                 "nvshmem_alltoallmem(%zu bytes) [%zu]", nb, i);
    nvshmem_barrier(team);
}

/* ---------------------------------------------------------------- reductions */

/* The value member world-PE p contributes at element i (salt k) for each op: small enough that
 * no sum or product leaves int8 or the exact range of half and bfloat16. */
static long long rv_sum(int p, long i, int k) { return (p * 3 + i + k) % 5 + 1; }
static long long rv_prod(int p, long i, int k) { return (p + i + k) % 3 == 0 ? 2 : 1; }
static long long rv_max(int p, long i, int k) { return (p * 7 + i * 3 + k) % 11 - 5; }
static long long rv_min(int p, long i, int k) { return (p * 5 + i * 7 + k) % 13 - 6; }
static long long rv_and(int p, long i, int k) { return (long long)(mix(p, i, k + 50) | mix(p, i + 1, k + 50)); }
static long long rv_or(int p, long i, int k) { return (long long)(mix(p, i, k + 60) & mix(p, i + 1, k + 60)); }
static long long rv_xor(int p, long i, int k) { return (long long)mix(p, i, k + 70); }
#define CMB_sum(a, b) ((a) + (b))
#define CMB_prod(a, b) ((a) * (b))
#define CMB_max(a, b) ((a) > (b) ? (a) : (b))
#define CMB_min(a, b) ((a) < (b) ? (a) : (b))
#define CMB_and(a, b) ((a) & (b))
#define CMB_or(a, b) ((a) | (b))
#define CMB_xor(a, b) ((a) ^ (b))

/* Per kind: the element of a value, the accumulator type, a value into it, and back. NUM folds
 * in the type itself (wrapping as the type does); HALF and BF16 fold small integers in int. */
#define TO_NUM(T, v) ((T)(v))
#define TO_HALF(T, v) (h16_make_##T(half_bits((int)(v))))
#define TO_BF16(T, v) (h16_make_##T(bf16_bits((int)(v))))
#define ACC_NUM(T) T
#define ACC_HALF(T) int
#define ACC_BF16(T) int
#define IN_NUM(T, v) ((T)(v))
#define IN_HALF(T, v) ((int)(v))
#define IN_BF16(T, v) ((int)(v))
#define OUT_NUM(T, a) (a)
#define OUT_HALF(T, a) TO_HALF(T, a)
#define OUT_BF16(T, a) TO_BF16(T, a)

#define R 7 /* elements per reduction (and per reducescatter block) */

#define DEF_RED_OP(NAME, T, K, OP)                                                             \
    static void red_##NAME##_##OP(void) {                                                      \
        const char *tn = #NAME, *on = #OP;                                                     \
        T *s = (T *)sym_src, *d = (T *)sym_dst;                                                \
        int n = tn_pes, rc;                                                                    \
        for (int i = 0; i < R; i++) s[i] = TO_##K(T, rv_##OP(mem[tme], i, 0));                 \
        for (int i = 0; i < R + 2; i++) d[i] = TO_##K(T, 3);                                   \
        rc = nvshmem_##NAME##_##OP##_reduce(team, d, s, R);                                    \
        CHECK_EQ(0, rc, "nvshmem_%s_%s_reduce return", tn, on);                                \
        for (int i = 0; i < R + 2; i++) {                                                      \
            ACC_##K(T) acc = IN_##K(T, rv_##OP(mem[0], i, 0));                                 \
            for (int m = 1; m < n; m++) acc = (ACC_##K(T))CMB_##OP(acc, IN_##K(T, rv_##OP(mem[m], i, 0))); \
            T want = i < R ? OUT_##K(T, acc) : TO_##K(T, 3);                                   \
            CHECK_V(K, want, d[i], "nvshmem_%s_%s_reduce [%d]", tn, on, i);                    \
        }                                                                                      \
        nvshmem_barrier(team);                                                                 \
        for (int i = 0; i < n * R; i++) s[i] = TO_##K(T, rv_##OP(mem[tme], i, 1));             \
        for (int i = 0; i < R + 2; i++) d[i] = TO_##K(T, 3);                                   \
        rc = nvshmem_##NAME##_##OP##_reducescatter(team, d, s, R);                             \
        CHECK_EQ(0, rc, "nvshmem_%s_%s_reducescatter return", tn, on);                         \
        for (int e = 0; e < R + 2; e++) {                                                      \
            long i = (long)tme * R + e;                                                        \
            ACC_##K(T) acc = IN_##K(T, rv_##OP(mem[0], i, 1));                                 \
            for (int m = 1; m < n; m++) acc = (ACC_##K(T))CMB_##OP(acc, IN_##K(T, rv_##OP(mem[m], i, 1))); \
            T want = e < R ? OUT_##K(T, acc) : TO_##K(T, 3);                                   \
            CHECK_V(K, want, d[e], "nvshmem_%s_%s_reducescatter [%d] (block %d)", tn, on, e, tme); \
        }                                                                                      \
        nvshmem_barrier(team);                                                                 \
    }

/* sum, prod, max, min */
#define ARITH_TYPES(X)                                                                         \
    X(float, float, NUM) X(double, double, NUM) X(char, char, NUM)                             \
    X(schar, signed char, NUM) X(short, short, NUM) X(int, int, NUM) X(long, long, NUM)        \
    X(longlong, long long, NUM) X(uchar, unsigned char, NUM)                                   \
    X(ushort, unsigned short, NUM) X(uint, unsigned int, NUM) X(ulong, unsigned long, NUM)     \
    X(ulonglong, unsigned long long, NUM) X(int8, int8_t, NUM) X(int16, int16_t, NUM)          \
    X(int32, int32_t, NUM) X(int64, int64_t, NUM) X(uint8, uint8_t, NUM)                       \
    X(uint16, uint16_t, NUM) X(uint32, uint32_t, NUM) X(uint64, uint64_t, NUM)                 \
    X(size, size_t, NUM) X(half, half, HALF) X(bfloat16, __nv_bfloat16, BF16)
/* and, or, xor */
#define BIT_TYPES(X)                                                                           \
    X(uchar, unsigned char, NUM) X(ushort, unsigned short, NUM) X(uint, unsigned int, NUM)     \
    X(ulong, unsigned long, NUM) X(ulonglong, unsigned long long, NUM) X(int8, int8_t, NUM)    \
    X(int16, int16_t, NUM) X(int32, int32_t, NUM) X(int64, int64_t, NUM)                       \
    X(uint8, uint8_t, NUM) X(uint16, uint16_t, NUM) X(uint32, uint32_t, NUM)                   \
    X(uint64, uint64_t, NUM) X(size, size_t, NUM)

#define DEF_ARITH(NAME, T, K)                                                                  \
    DEF_RED_OP(NAME, T, K, sum) DEF_RED_OP(NAME, T, K, prod) DEF_RED_OP(NAME, T, K, max)       \
    DEF_RED_OP(NAME, T, K, min)
#define DEF_BIT(NAME, T, K) DEF_RED_OP(NAME, T, K, and) DEF_RED_OP(NAME, T, K, or) DEF_RED_OP(NAME, T, K, xor)
ARITH_TYPES(DEF_ARITH)
BIT_TYPES(DEF_BIT)

/* A long reduction and reducescatter (more elements than any internal chunk is likely to be). */
static void red_long(void) {
    const long L = 20000;
    int *s = (int *)sym_src, *d = (int *)sym_dst;
    for (long i = 0; i < L; i++) s[i] = (int)(mix(mem[tme], i, 90) % 1000);
    CHECK_EQ(0, nvshmem_int_sum_reduce(team, d, s, (size_t)L), "nvshmem_int_sum_reduce(%ld) return", L);
    long bad = 0;
    for (long i = 0; i < L; i++) {
        int want = 0;
        for (int m = 0; m < tn_pes; m++) want += (int)(mix(mem[m], i, 90) % 1000);
        if (d[i] != want && bad++ < 3) fail("nvshmem_int_sum_reduce(%ld) [%ld]: expected %d got %d", L, i, want, d[i]);
    }
    checks++;
    nvshmem_barrier(team);
    /* in place: dest == src */
    for (long i = 0; i < 100; i++) s[i] = (int)(mem[tme] + i);
    CHECK_EQ(0, nvshmem_int_max_reduce(team, s, s, 100), "nvshmem_int_max_reduce in place return");
    for (long i = 0; i < 100; i++) {
        int want = -1;
        for (int m = 0; m < tn_pes; m++) want = mem[m] + (int)i > want ? mem[m] + (int)i : want;
        CHECK_EQ(want, s[i], "nvshmem_int_max_reduce in place [%ld]", i);
    }
    nvshmem_barrier(team);
    const long B = 3000;
    double *sd = (double *)sym_src, *dd = (double *)sym_dst;
    for (long i = 0; i < tn_pes * B; i++) sd[i] = (double)(mix(mem[tme], i, 91) % 4096) * 0.5;
    CHECK_EQ(0, nvshmem_double_sum_reducescatter(team, dd, sd, (size_t)B), "nvshmem_double_sum_reducescatter(%ld) return", B);
    bad = 0;
    for (long e = 0; e < B; e++) {
        double want = 0;
        for (int m = 0; m < tn_pes; m++) want += (double)(mix(mem[m], tme * B + e, 91) % 4096) * 0.5;
        if (dd[e] != want && bad++ < 3)
            fail("nvshmem_double_sum_reducescatter(%ld) [%ld]: expected %.17g got %.17g", B, e, want, dd[e]);
    }
    checks++;
    nvshmem_barrier(team);
}

/* ---------------------------------------------------------------- a whole team */

static void team_queries(void) {
    CHECK_EQ(tme, nvshmem_team_my_pe(team), "nvshmem_team_my_pe");
    CHECK_EQ(tn_pes, nvshmem_team_n_pes(team), "nvshmem_team_n_pes");
    for (int j = 0; j < tn_pes; j++) {
        CHECK_EQ(mem[j], nvshmem_team_translate_pe(team, j, NVSHMEM_TEAM_WORLD),
                 "nvshmem_team_translate_pe(team, %d, WORLD)", j);
        CHECK_EQ(j, nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, mem[j], team),
                 "nvshmem_team_translate_pe(WORLD, %d, team)", mem[j]);
    }
    for (int p = 0; p < npes; p++) {
        int member = 0;
        for (int j = 0; j < tn_pes; j++) member |= mem[j] == p;
        if (!member)
            CHECK_EQ(-1, nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, p, team),
                     "nvshmem_team_translate_pe(WORLD, %d, team) of a non-member", p);
    }
    CHECK_EQ(-1, nvshmem_team_translate_pe(team, tn_pes, NVSHMEM_TEAM_WORLD),
             "nvshmem_team_translate_pe(team, n_pes, WORLD)");
}

static void suite(nvshmem_team_t t, const char *label, const int *members, int n) {
    team = t;
    mem = members;
    tn_pes = n;
    tme = -1;
    for (int j = 0; j < n; j++)
        if (members[j] == me) tme = j;
    char buf[64];
    snprintf(buf, sizeof buf, "team %s: ", label);
    where = buf;
    if (tme < 0) {
        fail("not a member");
        where = "";
        return;
    }
    team_queries();
    barriers();
#define CALL_MOVE(NAME, T, K) move_##NAME();
    MOVE_TYPES(CALL_MOVE)
    move_mem(13);
    move_mem(1000);
#define CALL_ARITH(NAME, T, K) red_##NAME##_sum(); red_##NAME##_prod(); red_##NAME##_max(); red_##NAME##_min();
    ARITH_TYPES(CALL_ARITH)
#define CALL_BIT(NAME, T, K) red_##NAME##_and(); red_##NAME##_or(); red_##NAME##_xor();
    BIT_TYPES(CALL_BIT)
    red_long();
    where = "";
}

int main(void) {
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    if (npes > 64) {
        fail("coll.c handles at most 64 PEs");
        return finish();
    }
    /* self-checks of the half and bfloat16 encoders against known patterns */
    CHECK_EQ(0x3C00, half_bits(1), "half_bits(1)");
    CHECK_EQ(0x4200, half_bits(3), "half_bits(3)");
    CHECK_EQ(0xC500, half_bits(-5), "half_bits(-5)");
    CHECK_EQ(0x5140, half_bits(42), "half_bits(42)");
    CHECK_EQ(0x3F80, bf16_bits(1), "bf16_bits(1)");
    CHECK_EQ(0x4040, bf16_bits(3), "bf16_bits(3)");
    CHECK_EQ(0xC0A0, bf16_bits(-5), "bf16_bits(-5)");

    sym_src = (unsigned char *)nvshmem_malloc(SCRATCH);
    sym_dst = (unsigned char *)nvshmem_malloc(SCRATCH);
    slots = (int *)nvshmem_calloc((size_t)npes, sizeof(int));
    int world[64], evens[64], xm[2], ym[64];
    for (int p = 0; p < npes; p++) world[p] = p;

    /* predefined teams: one node, so SHARED and NODE are the world */
    CHECK_EQ(npes, nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD), "nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD)");
    CHECK_EQ(npes, nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED), "nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED)");
    CHECK_EQ(me, nvshmem_team_my_pe(NVSHMEM_TEAM_SHARED), "nvshmem_team_my_pe(NVSHMEM_TEAM_SHARED)");
    CHECK_EQ(npes, nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE), "nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE)");
    CHECK_EQ(me, nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE), "nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE)");
    {
        int *s = (int *)sym_src, *d = (int *)sym_dst;
        s[0] = me + 1;
        CHECK_EQ(0, nvshmem_int_sum_reduce(NVSHMEM_TEAM_SHARED, d, s, 1), "sum on NVSHMEM_TEAM_SHARED return");
        CHECK_EQ(npes * (npes + 1) / 2, d[0], "sum on NVSHMEM_TEAM_SHARED");
        nvshmem_barrier_all();
        CHECK_EQ(0, nvshmem_int_sum_reduce(NVSHMEMX_TEAM_NODE, d, s, 1), "sum on NVSHMEMX_TEAM_NODE return");
        CHECK_EQ(npes * (npes + 1) / 2, d[0], "sum on NVSHMEMX_TEAM_NODE");
        nvshmem_barrier_all();
    }

    suite(NVSHMEM_TEAM_WORLD, "WORLD", world, npes);
    nvshmem_barrier_all();

    /* the even PEs, with 2 contexts in their config */
    nvshmem_team_config_t cfg = NVSHMEM_TEAM_CONFIG_INITIALIZER;
    cfg.num_contexts = 2;
    nvshmem_team_t ev = NVSHMEM_TEAM_INVALID;
    int ne = (npes + 1) / 2;
    for (int j = 0; j < ne; j++) evens[j] = 2 * j;
    CHECK_EQ(0, nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, ne, &cfg, NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS, &ev),
             "nvshmem_team_split_strided(WORLD, 0, 2, %d) return", ne);
    if (me % 2 == 0) {
        CHECK(ev != NVSHMEM_TEAM_INVALID, "a member gets a team from nvshmem_team_split_strided");
        nvshmem_team_config_t got = NVSHMEM_TEAM_CONFIG_INITIALIZER;
        got.num_contexts = -7;
        nvshmem_team_get_config(ev, &got);
        CHECK_EQ(2, got.num_contexts, "nvshmem_team_get_config(evens).num_contexts");
        suite(ev, "evens (split_strided 0,2)", evens, ne);
    } else {
        CHECK_EQ(NVSHMEM_TEAM_INVALID, ev, "a non-member's team from nvshmem_team_split_strided");
        CHECK_EQ(-1, nvshmem_team_my_pe(ev), "nvshmem_team_my_pe(NVSHMEM_TEAM_INVALID)");
        CHECK_EQ(-1, nvshmem_team_n_pes(ev), "nvshmem_team_n_pes(NVSHMEM_TEAM_INVALID)");
    }
    nvshmem_barrier_all();

    /* every PE in reverse order: a negative PE_stride (as NVSHMEM and OpenSHMEM 1.6 allow) */
    nvshmem_team_t rev = NVSHMEM_TEAM_INVALID;
    CHECK_EQ(0, nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev),
             "nvshmem_team_split_strided(WORLD, %d, -1, %d) return", npes - 1, npes);
    CHECK_EQ(npes - 1 - me, nvshmem_team_my_pe(rev), "nvshmem_team_my_pe(reversed world)");
    CHECK_EQ(me, nvshmem_team_translate_pe(rev, npes - 1 - me, NVSHMEM_TEAM_WORLD),
             "nvshmem_team_translate_pe(reversed -> world)");
    nvshmem_team_destroy(rev);
    nvshmem_barrier_all();

    /* a 2-D split: rows of 2 (x) and columns (y), both run at once on different PEs */
    nvshmem_team_t xt = NVSHMEM_TEAM_INVALID, yt = NVSHMEM_TEAM_INVALID;
    CHECK_EQ(0, nvshmem_team_split_2d(NVSHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt),
             "nvshmem_team_split_2d(WORLD, 2) return");
    int base = me - me % 2, nx = base + 1 < npes ? 2 : 1, ny = 0;
    xm[0] = base;
    xm[1] = base + 1;
    for (int p = me % 2; p < npes; p += 2) ym[ny++] = p;
    CHECK(xt != NVSHMEM_TEAM_INVALID && yt != NVSHMEM_TEAM_INVALID, "nvshmem_team_split_2d gives both teams");
    if (xt != NVSHMEM_TEAM_INVALID && yt != NVSHMEM_TEAM_INVALID) {
        nvshmem_team_config_t got = NVSHMEM_TEAM_CONFIG_INITIALIZER;
        nvshmem_team_get_config(xt, &got);
        CHECK_EQ(0, got.num_contexts, "nvshmem_team_get_config(x team without a config).num_contexts");
        suite(xt, "x (split_2d rows of 2)", xm, nx);
        nvshmem_barrier_all();
        suite(yt, "y (split_2d columns)", ym, ny);
    }
    nvshmem_barrier_all();

    /* destroy, then make and use another team */
    if (ev != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(ev);
    if (xt != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(xt);
    if (yt != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(yt);
    nvshmem_barrier_all();
    nvshmem_team_t last = NVSHMEM_TEAM_INVALID;
    CHECK_EQ(0, nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, npes - 1, 1, 1, NULL, 0, &last),
             "nvshmem_team_split_strided after nvshmem_team_destroy return");
    if (me == npes - 1) {
        CHECK_EQ(1, nvshmem_team_n_pes(last), "nvshmem_team_n_pes of a new team after destroys");
        CHECK_EQ(0, nvshmem_team_my_pe(last), "nvshmem_team_my_pe of a new team after destroys");
        int *s = (int *)sym_src, *d = (int *)sym_dst;
        s[0] = 41;
        CHECK_EQ(0, nvshmem_int_sum_reduce(last, d, s, 1), "sum on a one-PE team return");
        CHECK_EQ(41, d[0], "sum on a one-PE team");
        nvshmem_team_destroy(last);
    } else {
        CHECK_EQ(NVSHMEM_TEAM_INVALID, last, "a non-member's team");
    }
    nvshmem_barrier_all();
    nvshmem_free(slots);
    nvshmem_free(sym_dst);
    nvshmem_free(sym_src);
    return finish();
}
