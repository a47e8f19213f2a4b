/*
 * amo.c -- every nvshmem_TYPE_atomic_* family for every type NVSHMEM defines it for, under
 * contention: every PE works on the same word of every PE at once, and the totals are exact.
 *
 * - add, inc: the final value is the exact sum of what every PE added;
 * - fetch_add, fetch_inc, compare_swap (as a fetch + CAS retry loop): the values the PEs fetched
 *   from one word are exactly 0, v, 2v, ... once each (no lost or doubled update), gathered on
 *   the word's owner;
 * - swap: the values fetched by all PEs plus the final one are exactly what was swapped in and
 *   the initial value, once each;
 * - set, fetch: a fetch during concurrent sets sees a value some PE set, never a torn one;
 * - and, or, xor and their fetching forms: every PE owns 4 bits of the word; the final word is
 *   exact, and every fetched value shows this PE's own bits as it left them.
 *
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

/* ---------------------------------------------------------------- checks (same in every program) */

static int me = -1, npes = 0;
static long failures = 0, checks = 0;

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
    fprintf(stderr, "PE %d: %s\n", me, buf);
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

static int finish(void) {
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

/* ---------------------------------------------------------------- the types */

/* add, inc, fetch_add, fetch_inc, compare_swap (and fetch, set, swap) */
#define STD_AMO_TYPES(X)                                                                       \
    X(int, int) X(long, long) X(longlong, long long) X(uint, unsigned int)                     \
    X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int32, int32_t)                 \
    X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t)                  \
    X(ptrdiff, ptrdiff_t)
/* fetch, set, swap only */
#define FLOAT_AMO_TYPES(X) X(float, float) X(double, double)
/* and, or, xor and the fetching forms */
#define BIT_AMO_TYPES(X)                                                                       \
    X(uint, unsigned int) X(ulong, unsigned long) X(ulonglong, unsigned long long)             \
    X(int32, int32_t) X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t)

#define K 40 /* operations per PE per target word */

static long long *logbuf; /* symmetric: npes * K fetched values, PE p's at p * K */
static long long rec[64][K]; /* fetched values, per target PE */

/* The target of this PE's op number j: every PE sweeps all PEs, each from another start. */
static int target(int j, int s) { return (me + j + s) % npes; }

/* Sends rec[t] to the log of every target t; after the barrier the owner checks that the
 * values fetched from its word (and `extra` ones of its own) are exactly 0, step, 2 step, ...,
 * each once. */
static void check_perm(const char *what, long long step, const long long *extra, int nextra) {
    for (int t = 0; t < npes; t++) nvshmem_longlong_put(logbuf + (long)me * K, rec[t], K, t);
    nvshmem_barrier_all();
    int total = npes * K + nextra;
    char *seen = (char *)calloc((size_t)total, 1);
    int bad = 0;
    for (int i = 0; i < total; i++) {
        long long v = i < npes * K ? logbuf[i] : extra[i - npes * K];
        long long idx = v / step;
        if (v % step != 0 || idx < 0 || idx >= total || seen[idx]) {
            if (bad++ < 3)
                fail("%s: the values fetched from PE %d's word: value %lld (fetched by PE %d) %s", what, me, v,
                     i < npes * K ? i / K : me, (v % step == 0 && idx >= 0 && idx < total) ? "twice" : "out of range");
            continue;
        }
        seen[idx] = 1;
    }
    checks++;
    free(seen);
    nvshmem_barrier_all();
}

/* The word of a set/fetch test, code c (1..65535) in every 16 bits: a torn value is seen. */
#define REP 0x0001000100010001ULL

#define DEF_STD(NAME, T)                                                                       \
    static void amo_##NAME(void) {                                                             \
        const char *tn = #NAME;                                                                \
        char what[80];                                                                         \
        T *w = (T *)nvshmem_malloc(8 * sizeof(T));                                             \
        long long n = (long long)npes * K;                                                     \
        /* add and inc */                                                                      \
        w[0] = 0;                                                                              \
        w[1] = 0;                                                                              \
        nvshmem_barrier_all();                                                                 \
        for (int j = 0; j < K * npes; j++) {                                                   \
            nvshmem_##NAME##_atomic_add(&w[0], (T)(me + 1), target(j, 0));                     \
            nvshmem_##NAME##_atomic_inc(&w[1], target(j, 1));                                  \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ((long long)K * npes * (npes + 1) / 2, w[0], "nvshmem_%s_atomic_add total", tn); \
        CHECK_EQ(n, w[1], "nvshmem_%s_atomic_inc total", tn);                                  \
        /* fetch_add (by 3) */                                                                 \
        w[2] = 0;                                                                              \
        nvshmem_barrier_all();                                                                 \
        int cnt[64] = {0};                                                                     \
        for (int j = 0; j < K * npes; j++) {                                                   \
            int t = target(j, 0);                                                              \
            T got = nvshmem_##NAME##_atomic_fetch_add(&w[2], (T)3, t);                         \
            if (cnt[t] > 0 && (long long)got <= rec[t][cnt[t] - 1])                            \
                fail("nvshmem_%s_atomic_fetch_add from PE %d: fetched %lld after %lld", tn, t, \
                     (long long)got, rec[t][cnt[t] - 1]);                                      \
            rec[t][cnt[t]++] = (long long)got;                                                 \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ(3 * n, w[2], "nvshmem_%s_atomic_fetch_add total", tn);                        \
        snprintf(what, sizeof what, "nvshmem_%s_atomic_fetch_add", tn);                        \
        check_perm(what, 3, NULL, 0);                                                          \
        /* fetch_inc */                                                                        \
        w[3] = 0;                                                                              \
        memset(cnt, 0, sizeof cnt);                                                            \
        nvshmem_barrier_all();                                                                 \
        for (int j = 0; j < K * npes; j++) {                                                   \
            int t = target(j, 2);                                                              \
            rec[t][cnt[t]++] = (long long)nvshmem_##NAME##_atomic_fetch_inc(&w[3], t);         \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ(n, w[3], "nvshmem_%s_atomic_fetch_inc total", tn);                            \
        snprintf(what, sizeof what, "nvshmem_%s_atomic_fetch_inc", tn);                        \
        check_perm(what, 1, NULL, 0);                                                          \
        /* compare_swap: fetch, then CAS old -> old + 1 until it takes */                      \
        w[4] = 0;                                                                              \
        memset(cnt, 0, sizeof cnt);                                                            \
        nvshmem_barrier_all();                                                                 \
        long retries = 0;                                                                      \
        for (int j = 0; j < K * npes; j++) {                                                   \
            int t = target(j, 3);                                                              \
            for (;;) {                                                                         \
                T old = nvshmem_##NAME##_atomic_fetch(&w[4], t);                               \
                T got = nvshmem_##NAME##_atomic_compare_swap(&w[4], old, (T)(old + 1), t);     \
                if (got == old) {                                                              \
                    rec[t][cnt[t]++] = (long long)old;                                         \
                    break;                                                                     \
                }                                                                              \
                if (++retries > 10000000L) {                                                   \
                    fail("nvshmem_%s_atomic_compare_swap on PE %d: no progress", tn, t);       \
                    break;                                                                     \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ(n, w[4], "nvshmem_%s_atomic_compare_swap total", tn);                         \
        snprintf(what, sizeof what, "nvshmem_%s_atomic_compare_swap (fetched old values)", tn); \
        check_perm(what, 1, NULL, 0);                                                          \
        /* a compare_swap whose condition fails changes nothing and returns the value */       \
        {                                                                                      \
            int t = (me + 1) % npes;                                                           \
            T got = nvshmem_##NAME##_atomic_compare_swap(&w[4], (T)(n + 5), (T)77, t);         \
            CHECK_EQ(n, got, "nvshmem_%s_atomic_compare_swap with a false condition, on PE %d", tn, t); \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ(n, w[4], "the word after a false nvshmem_%s_atomic_compare_swap", tn);        \
        /* swap: values me * K + j in, the initial n; fetched + final = 0..n once each */      \
        w[5] = (T)n;                                                                           \
        memset(cnt, 0, sizeof cnt);                                                            \
        nvshmem_barrier_all();                                                                 \
        for (int j = 0; j < K * npes; j++) {                                                   \
            int t = target(j, 4);                                                              \
            rec[t][cnt[t]] = (long long)nvshmem_##NAME##_atomic_swap(&w[5], (T)(me * K + cnt[t]), t); \
            cnt[t]++;                                                                          \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        long long fin = (long long)w[5];                                                       \
        snprintf(what, sizeof what, "nvshmem_%s_atomic_swap (fetched and final values)", tn);  \
        check_perm(what, 1, &fin, 1);                                                          \
        /* set while others fetch: never a torn value */                                       \
        w[6] = (T)(1 * REP);                                                                   \
        nvshmem_barrier_all();                                                                 \
        for (int j = 0; j < K * npes; j++) {                                                   \
            int t = target(j, 5);                                                              \
            unsigned c = (unsigned)(2 + me * K * npes + j);                                    \
            nvshmem_##NAME##_atomic_set(&w[6], (T)(c * REP), t);                               \
            T got = nvshmem_##NAME##_atomic_fetch(&w[6], target(j, 6));                        \
            unsigned gc = (unsigned)((unsigned long long)got & 0xFFFF);                        \
            if ((T)(gc * REP) != got || gc < 1 || gc >= (unsigned)(2 + npes * K * npes))       \
                fail("nvshmem_%s_atomic_fetch during sets, from PE %d: %#llx is no value any PE set", \
                     tn, target(j, 6), (unsigned long long)got);                               \
        }                                                                                      \
        checks++;                                                                              \
        nvshmem_quiet();                                                                       \
        nvshmem_barrier_all();                                                                 \
        {                                                                                      \
            unsigned gc = (unsigned)((unsigned long long)w[6] & 0xFFFF);                       \
            CHECK((T)(gc * REP) == w[6] && gc >= 2, "nvshmem_%s_atomic_set: the final word %#llx is a value some PE set", \
                  tn, (unsigned long long)w[6]);                                               \
        }                                                                                      \
        /* a set by one PE, fetched by all */                                                  \
        if (me == 0) nvshmem_##NAME##_atomic_set(&w[7], (T)(npes - 1 + 100), npes - 1);        \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ(npes - 1 + 100, nvshmem_##NAME##_atomic_fetch(&w[7], npes - 1),                \
                 "nvshmem_%s_atomic_fetch of PE 0's set on PE %d", tn, npes - 1);              \
        nvshmem_barrier_all();                                                                 \
        nvshmem_free(w);                                                                       \
    }
STD_AMO_TYPES(DEF_STD)

/* float and double: fetch, set, swap */
#define DEF_FLT(NAME, T)                                                                       \
    static void amo_##NAME(void) {                                                             \
        const char *tn = #NAME;                                                                \
        char what[80];                                                                         \
        T *w = (T *)nvshmem_malloc(4 * sizeof(T));                                             \
        long long n = (long long)npes * K;                                                     \
        int cnt[64] = {0};                                                                     \
        w[0] = (T)n;                                                                           \
        w[2] = (T)0;                                                                           \
        nvshmem_barrier_all();                                                                 \
        for (int j = 0; j < K * npes; j++) {                                                   \
            int t = target(j, 0);                                                              \
            T got = nvshmem_##NAME##_atomic_swap(&w[0], (T)(me * K + cnt[t]), t);              \
            rec[t][cnt[t]++] = (long long)got;                                                 \
            if ((T)(long long)got != got) fail("nvshmem_%s_atomic_swap fetched %g", tn, (double)got); \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        long long fin = (long long)w[0];                                                       \
        snprintf(what, sizeof what, "nvshmem_%s_atomic_swap (fetched and final values)", tn);  \
        check_perm(what, 1, &fin, 1);                                                          \
        /* set while others fetch: a fetched value is one some PE set (or the initial 0.5) */  \
        w[1] = (T)0.5;                                                                         \
        nvshmem_barrier_all();                                                                 \
        for (int j = 0; j < K * npes; j++) {                                                   \
            nvshmem_##NAME##_atomic_set(&w[1], (T)(me * 1000 + j) + (T)0.25, target(j, 1));    \
            T got = nvshmem_##NAME##_atomic_fetch(&w[1], target(j, 2));                        \
            long long whole = (long long)got;                                                  \
            int ok = got == (T)0.5 || ((T)whole + (T)0.25 == got && whole % 1000 < K * npes &&  \
                                       whole / 1000 < npes);                                   \
            if (!ok) fail("nvshmem_%s_atomic_fetch during sets: %.17g is no value any PE set", tn, (double)got); \
        }                                                                                      \
        checks++;                                                                              \
        nvshmem_quiet();                                                                       \
        nvshmem_barrier_all();                                                                 \
        if (me == npes - 1) nvshmem_##NAME##_atomic_set(&w[2], (T)-2.75, 0);                   \
        nvshmem_barrier_all();                                                                 \
        for (int p = 0; p < npes; p++)                                                         \
            CHECK_EQ(p == 0 ? (T)-2.75 : (T)0, nvshmem_##NAME##_atomic_fetch(&w[2], p),         \
                     "nvshmem_%s_atomic_fetch from PE %d after PE %d's set on PE 0", tn, p, npes - 1); \
        nvshmem_barrier_all();                                                                 \
        nvshmem_free(w);                                                                       \
    }
FLOAT_AMO_TYPES(DEF_FLT)

/* and, or, xor, fetch_and, fetch_or, fetch_xor: this PE's bits are 4 * me .. 4 * me + 3 */
#define DEF_BIT(NAME, T)                                                                       \
    static void bit_##NAME(void) {                                                             \
        const char *tn = #NAME;                                                                \
        T *w = (T *)nvshmem_malloc(6 * sizeof(T));                                             \
        T all = 0, ones = (T)~(T)0;                                                            \
        for (int b = 0; b < 4 * npes; b++) all |= (T)(1ULL << b);                              \
        w[0] = 0;                                                                              \
        w[1] = ones;                                                                           \
        w[2] = 0;                                                                              \
        w[3] = 0;                                                                              \
        w[4] = ones;                                                                           \
        w[5] = 0;                                                                              \
        nvshmem_barrier_all();                                                                 \
        for (int r = 0; r < 12; r++) /* each bit 3 times on every PE */                      \
            for (int t0 = 0; t0 < npes; t0++) {                                                \
                int t = (me + t0) % npes;                                                      \
                T bit = (T)(1ULL << (4 * me + r % 4));                                         \
                nvshmem_##NAME##_atomic_or(&w[0], bit, t);                                     \
                nvshmem_##NAME##_atomic_and(&w[1], (T)~bit, t);                                \
                nvshmem_##NAME##_atomic_xor(&w[2], bit, t);                                    \
            }                                                                                  \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ(all, w[0], "nvshmem_%s_atomic_or: the word", tn);                             \
        CHECK_EQ((T)(ones & (T)~all), w[1], "nvshmem_%s_atomic_and: the word", tn);            \
        CHECK_EQ(all, w[2], "nvshmem_%s_atomic_xor (each bit 3 times): the word", tn);         \
        /* fetching forms: this PE's bits in each fetched value are as it left them */         \
        for (int t0 = 0; t0 < npes; t0++) {                                                    \
            int t = (me + t0) % npes;                                                          \
            T mine = (T)(15ULL << (4 * me));                                                   \
            for (int b = 0; b < 4; b++) {                                                      \
                T bit = (T)(1ULL << (4 * me + b));                                             \
                T before = (T)((1ULL << (4 * me + b)) - (1ULL << (4 * me))); /* bits < b */    \
                T got = nvshmem_##NAME##_atomic_fetch_or(&w[3], bit, t);                       \
                CHECK_EQ(before, (T)(got & mine), "nvshmem_%s_atomic_fetch_or on PE %d, bit %d: my bits", tn, t, b); \
                got = nvshmem_##NAME##_atomic_fetch_and(&w[4], (T)~bit, t);                    \
                CHECK_EQ((T)(mine & (T)~before), (T)(got & mine),                              \
                         "nvshmem_%s_atomic_fetch_and on PE %d, bit %d: my bits", tn, t, b);   \
            }                                                                                  \
            for (int r = 0; r < 3; r++)                                                        \
                for (int b = 0; b < 4; b++) {                                                  \
                    T bit = (T)(1ULL << (4 * me + b));                                         \
                    T low = (T)((1ULL << (4 * me + b)) - (1ULL << (4 * me)));                  \
                    /* after r full passes my bits are all set (r odd) or clear (r even);    \
                       bits < b of this pass are toggled */                                    \
                    T want = (r % 2) ? (T)(mine & (T)~low) : low;                              \
                    T got = nvshmem_##NAME##_atomic_fetch_xor(&w[5], bit, t);                  \
                    CHECK_EQ(want, (T)(got & mine), "nvshmem_%s_atomic_fetch_xor on PE %d, pass %d bit %d: my bits", \
                             tn, t, r, b);                                                     \
                }                                                                              \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        CHECK_EQ(all, w[3], "nvshmem_%s_atomic_fetch_or: the word", tn);                       \
        CHECK_EQ((T)(ones & (T)~all), w[4], "nvshmem_%s_atomic_fetch_and: the word", tn);      \
        CHECK_EQ(all, w[5], "nvshmem_%s_atomic_fetch_xor (3 passes): the word", tn);           \
        nvshmem_barrier_all();                                                                 \
        nvshmem_free(w);                                                                       \
    }
BIT_AMO_TYPES(DEF_BIT)

int main(void) {
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    if (npes > 8) {
        fail("amo.c needs at most 8 PEs (4 bits each in a 32-bit word), got %d", npes);
        return finish();
    }
    logbuf = (long long *)nvshmem_malloc((size_t)npes * K * sizeof(long long));
#define CALL_STD(NAME, T) amo_##NAME();
    STD_AMO_TYPES(CALL_STD)
    FLOAT_AMO_TYPES(CALL_STD)
#define CALL_BIT(NAME, T) bit_##NAME();
    BIT_AMO_TYPES(CALL_BIT)
    nvshmem_free(logbuf);
    return finish();
}
