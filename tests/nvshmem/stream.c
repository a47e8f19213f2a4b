/*
 * stream.c -- every nvshmemx_*_on_stream family with stream 0 (CUDA's default stream: program
 * order on the host without CUDA):
 *
 * - put/get/p/g/iput/iget/put_nbi/get_nbi_on_stream for the 25 types and the sized forms;
 * - put_signal(_nbi)_on_stream (25 types, sized, mem) with nvshmemx_signal_wait_until_on_stream;
 * - nvshmemx_TYPE_wait_until(_all, _all_vector)_on_stream for the 14 sync types, with each of
 *   NVSHMEM's comparisons (LE and GE have NVSHMEM's values, not OpenSHMEM's);
 * - nvshmemx_signal_op(_on_stream) with NVSHMEM_SIGNAL_SET/ADD, nvshmem_signal_fetch;
 * - broadcast/fcollect/alltoall(_mem)_on_stream, every reduce_on_stream and
 *   reducescatter_on_stream;
 * - barrier(_all)_on_stream, team_sync_on_stream, sync_all_on_stream, quiet_on_stream.
 *
 * `stream badstream ROUTINE`: the last PE passes a non-zero stream to ROUTINE (put, g, barrier,
 * reduce, signal_wait, quiet, wait_until), the others stream 0: the job must end with an error
 * naming the routine (there is no CUDA here to run other streams).
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
#include <time.h>

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

static uint64_t mix(int p, long i, int k) {
    uint64_t x = (uint64_t)(p + 1) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ULL ^
                 (uint64_t)(k + 7) * 0x94D049BB133111EBULL;
    x ^= x >> 29;
    return x;
}

#define MK_NUM(T, p, i, k) ((T)1.5 == (T)1 ? (T)mix(p, i, k) : (T)((double)(mix(p, i, k) % 100000) / 4.0))
#define MK_H16(T, p, i, k) (h16_make_##T((unsigned short)mix(p, i, k)))
#define EQ_NUM(a, b) ((a) == (b))
#define EQ_H16(a, b) (h16_bits(a) == h16_bits(b))
#define SHOW_NUM(v) ((long double)(v))
#define SHOW_H16(v) ((long double)h16_bits(v))
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

/* ---------------------------------------------------------------- */

#define S0 ((cudaStream_t)0)

#define RMA_TYPES(X)                                                                           \
    X(float, float, NUM) X(double, double, NUM) X(char, char, NUM)                             \
    X(schar, signed char, NUM) X(short, short, NUM) X(int, int, NUM) X(long, long, NUM)        \
    X(longlong, long long, NUM) X(uchar, unsigned char, NUM)                                   \
    X(ushort, unsigned short, NUM) X(uint, unsigned int, NUM) X(ulong, unsigned long, NUM)     \
    X(ulonglong, unsigned long long, NUM) X(int8, int8_t, NUM) X(int16, int16_t, NUM)          \
    X(int32, int32_t, NUM) X(int64, int64_t, NUM) X(uint8, uint8_t, NUM)                       \
    X(uint16, uint16_t, NUM) X(uint32, uint32_t, NUM) X(uint64, uint64_t, NUM)                 \
    X(size, size_t, NUM) X(ptrdiff, ptrdiff_t, NUM) X(half, half, H16)                         \
    X(bfloat16, __nv_bfloat16, H16)

#define SYNC_TYPES(X)                                                                          \
    X(short, short) X(int, int) X(long, long) X(longlong, long long)                           \
    X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)                    \
    X(ulonglong, unsigned long long) X(int32, int32_t) X(int64, int64_t)                       \
    X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t) X(ptrdiff, ptrdiff_t)

static unsigned char *sym_a, *sym_b; /* symmetric scratch */
static uint64_t *sig;                /* symmetric signal words */
#define SCRATCH (256 * 1024)
#define N 29

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---------------------------------------------------------------- RMA on stream */

#define DEF_RMA(NAME, T, K)                                                                    \
    static void rma_##NAME(void) {                                                             \
        const char *tn = #NAME;                                                                \
        T *buf = (T *)sym_a, *src = (T *)sym_b;                                                \
        int right = (me + 1) % npes, left = (me + npes - 1) % npes;                            \
        T loc[3 * N], loc3[N], tmp[2 * N];                                                     \
        for (int i = 0; i < 3 * N; i++) src[i] = MK_##K(T, me, i, 1);                          \
        for (int i = 0; i < 4 * N; i++) buf[i] = MK_##K(T, 1000, i, 0);                        \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        for (int i = 0; i < 3 * N; i++) loc[i] = MK_##K(T, me, i, 2);                          \
        nvshmemx_##NAME##_put_on_stream(buf, loc, N, right, S0);                               \
        for (int i = 0; i < 3; i++) nvshmemx_##NAME##_p_on_stream(buf + N + i, MK_##K(T, me, i, 3), right, S0); \
        nvshmemx_##NAME##_iput_on_stream(buf + 2 * N, loc, 2, 3, 5, right, S0);                \
        for (int i = 0; i < N; i++) loc3[i] = MK_##K(T, me, i, 5);                             \
        nvshmemx_##NAME##_put_nbi_on_stream(buf + 3 * N, loc3, N, right, S0);                  \
        nvshmemx_quiet_on_stream(S0);                                                          \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        for (int i = 0; i < N; i++)                                                            \
            CHECK_V(K, MK_##K(T, left, i, 2), buf[i], "nvshmemx_%s_put_on_stream from PE %d [%d]", tn, left, i); \
        for (int i = 0; i < N; i++) {                                                          \
            T want = i < 3 ? MK_##K(T, left, i, 3) : MK_##K(T, 1000, N + i, 0);                \
            CHECK_V(K, want, buf[N + i], "nvshmemx_%s_p_on_stream from PE %d [%d]", tn, left, i); \
        }                                                                                      \
        for (int i = 0; i < N; i++) {                                                          \
            T want = (i % 2 == 0 && i / 2 < 5) ? MK_##K(T, left, (i / 2) * 3, 2) : MK_##K(T, 1000, 2 * N + i, 0); \
            CHECK_V(K, want, buf[2 * N + i], "nvshmemx_%s_iput_on_stream from PE %d [%d]", tn, left, i); \
        }                                                                                      \
        for (int i = 0; i < N; i++)                                                            \
            CHECK_V(K, MK_##K(T, left, i, 5), buf[3 * N + i], "nvshmemx_%s_put_nbi_on_stream from PE %d [%d]", \
                    tn, left, i);                                                              \
        memset(tmp, 0, sizeof tmp);                                                            \
        nvshmemx_##NAME##_get_on_stream(tmp, src, N, right, S0);                               \
        for (int i = 0; i < N; i++)                                                            \
            CHECK_V(K, MK_##K(T, right, i, 1), tmp[i], "nvshmemx_%s_get_on_stream from PE %d [%d]", tn, right, i); \
        for (int i = 0; i < 3; i++) {                                                          \
            T v = nvshmemx_##NAME##_g_on_stream(src + 7 * i, right, S0);                       \
            CHECK_V(K, MK_##K(T, right, 7 * i, 1), v, "nvshmemx_%s_g_on_stream from PE %d [%d]", tn, right, 7 * i); \
        }                                                                                      \
        for (int i = 0; i < 2 * N; i++) tmp[i] = MK_##K(T, 2000, i, 0);                        \
        nvshmemx_##NAME##_iget_on_stream(tmp, src, 2, 3, 5, left, S0);                         \
        for (int i = 0; i < 2 * N; i++) {                                                      \
            T want = (i % 2 == 0 && i / 2 < 5) ? MK_##K(T, left, (i / 2) * 3, 1) : MK_##K(T, 2000, i, 0); \
            CHECK_V(K, want, tmp[i], "nvshmemx_%s_iget_on_stream from PE %d [%d]", tn, left, i); \
        }                                                                                      \
        memset(tmp, 0, sizeof tmp);                                                            \
        nvshmemx_##NAME##_get_nbi_on_stream(tmp, src + N, N, left, S0);                        \
        nvshmemx_quiet_on_stream(S0);                                                          \
        for (int i = 0; i < N; i++)                                                            \
            CHECK_V(K, MK_##K(T, left, N + i, 1), tmp[i], "nvshmemx_%s_get_nbi_on_stream from PE %d [%d]", tn, \
                    left, i);                                                                  \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
    }
RMA_TYPES(DEF_RMA)

typedef void (*put_fn)(void *, const void *, size_t, int, cudaStream_t);
typedef void (*iput_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int, cudaStream_t);
typedef void (*sig_fn)(void *, const void *, size_t, uint64_t *, uint64_t, int, int, cudaStream_t);

static uint8_t byte_of(int p, long i, int k) { return (uint8_t)(mix(p, i, k) >> 11); }

static void check_bytes(const uint8_t *got, size_t len, int from, int k, const char *what) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < len; i++)
        if (got[i] != byte_of(from, (long)i, k) && bad++ == 0) first = i;
    checks++;
    if (bad)
        fail("%s with PE %d: byte %zu: expected %u got %u (%zu bytes wrong)", what, from, first,
             byte_of(from, (long)first, k), got[first], bad);
}

static void sized_one(const char *name, size_t es, put_fn put, put_fn get, put_fn put_nbi, put_fn get_nbi,
                      iput_fn iput, iput_fn iget, int salt) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    size_t n = 301, len = es * n;
    uint8_t *loc = (uint8_t *)malloc(2 * len);
    char what[96];
    for (size_t i = 0; i < len; i++) sym_b[i] = byte_of(me, (long)i, salt);
    for (size_t i = 0; i < len; i++) loc[i] = byte_of(me, (long)i, salt + 1);
    memset(sym_a, 0, 2 * len);
    nvshmemx_barrier_all_on_stream(S0);
    put(sym_a, loc, n, right, S0);
    put_nbi(sym_a + len, sym_b, n, right, S0);
    nvshmemx_quiet_on_stream(S0);
    nvshmemx_barrier_all_on_stream(S0);
    snprintf(what, sizeof what, "nvshmemx_put%s_on_stream", name);
    check_bytes(sym_a, len, left, salt + 1, what);
    snprintf(what, sizeof what, "nvshmemx_put%s_nbi_on_stream", name);
    check_bytes(sym_a + len, len, left, salt, what);
    memset(loc, 0, len);
    get(loc, sym_b, n, right, S0);
    snprintf(what, sizeof what, "nvshmemx_get%s_on_stream", name);
    check_bytes(loc, len, right, salt, what);
    memset(loc, 0, len);
    get_nbi(loc, sym_b, n, left, S0);
    nvshmemx_quiet_on_stream(S0);
    snprintf(what, sizeof what, "nvshmemx_get%s_nbi_on_stream", name);
    check_bytes(loc, len, left, salt, what);
    if (iput) {
        /* every other element, from every third */
        nvshmemx_barrier_all_on_stream(S0);
        memset(sym_a, 0x5A, 2 * len);
        nvshmemx_barrier_all_on_stream(S0);
        iput(sym_a, sym_b, 2, 3, 50, right, S0);
        nvshmemx_barrier_all_on_stream(S0);
        iget(loc, sym_b, 2, 3, 50, left, S0);
        size_t bad = 0;
        for (size_t e = 0; e < 100; e++)
            for (size_t b = 0; b < es; b++) {
                uint8_t want = e % 2 == 0 ? byte_of(left, (long)((e / 2) * 3 * es + b), salt) : 0x5A;
                if (sym_a[e * es + b] != want && bad++ < 2)
                    fail("nvshmemx_iput%s_on_stream from PE %d: element %zu byte %zu: expected %u got %u", name, left,
                         e, b, want, sym_a[e * es + b]);
                if (e % 2 == 0 && loc[e * es + b] != byte_of(left, (long)((e / 2) * 3 * es + b), salt) && bad++ < 2)
                    fail("nvshmemx_iget%s_on_stream from PE %d: element %zu byte %zu: expected %u got %u", name, left,
                         e, b, byte_of(left, (long)((e / 2) * 3 * es + b), salt), loc[e * es + b]);
            }
        checks++;
    }
    nvshmemx_barrier_all_on_stream(S0);
    free(loc);
}

static void sized(void) {
    sized_one("8", 1, nvshmemx_put8_on_stream, nvshmemx_get8_on_stream, nvshmemx_put8_nbi_on_stream,
              nvshmemx_get8_nbi_on_stream, nvshmemx_iput8_on_stream, nvshmemx_iget8_on_stream, 1);
    sized_one("16", 2, nvshmemx_put16_on_stream, nvshmemx_get16_on_stream, nvshmemx_put16_nbi_on_stream,
              nvshmemx_get16_nbi_on_stream, nvshmemx_iput16_on_stream, nvshmemx_iget16_on_stream, 2);
    sized_one("32", 4, nvshmemx_put32_on_stream, nvshmemx_get32_on_stream, nvshmemx_put32_nbi_on_stream,
              nvshmemx_get32_nbi_on_stream, nvshmemx_iput32_on_stream, nvshmemx_iget32_on_stream, 3);
    sized_one("64", 8, nvshmemx_put64_on_stream, nvshmemx_get64_on_stream, nvshmemx_put64_nbi_on_stream,
              nvshmemx_get64_nbi_on_stream, nvshmemx_iput64_on_stream, nvshmemx_iget64_on_stream, 4);
    sized_one("128", 16, nvshmemx_put128_on_stream, nvshmemx_get128_on_stream, nvshmemx_put128_nbi_on_stream,
              nvshmemx_get128_nbi_on_stream, nvshmemx_iput128_on_stream, nvshmemx_iget128_on_stream, 5);
    sized_one("mem", 1, nvshmemx_putmem_on_stream, nvshmemx_getmem_on_stream, nvshmemx_putmem_nbi_on_stream,
              nvshmemx_getmem_nbi_on_stream, NULL, NULL, 6);
}

/* ---------------------------------------------------------------- put with signal */

static uint64_t sig_round = 0; /* what this PE's sig[0] holds after the last round */
static int psig_count = 0;      /* rounds so far: even ones SET, odd ones ADD */

/* The left neighbour puts and signals (SET to the last value + 100 on even rounds, ADD 1 on odd
 * ones); this PE waits on the stream and then must see the data. */
#define DEF_PSIG(NAME, T, K)                                                                   \
    static void psig_##NAME(int nbi) {                                                         \
        const char *tn = #NAME;                                                                \
        T *buf = (T *)sym_a;                                                                   \
        int right = (me + 1) % npes, left = (me + npes - 1) % npes;                            \
        T loc[N];                                                                              \
        for (int i = 0; i < N; i++) buf[i] = MK_##K(T, 1000, i, 0);                            \
        for (int i = 0; i < N; i++) loc[i] = MK_##K(T, me, i, 40 + nbi);                       \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        int add = psig_count++ % 2;                                                            \
        uint64_t next = add ? sig_round + 1 : sig_round + 100;                                 \
        int op = add ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET;                                \
        uint64_t value = add ? 1 : next;                                                       \
        if (nbi)                                                                               \
            nvshmemx_##NAME##_put_signal_nbi_on_stream(buf, loc, N, &sig[0], value, op, right, S0); \
        else                                                                                   \
            nvshmemx_##NAME##_put_signal_on_stream(buf, loc, N, &sig[0], value, op, right, S0); \
        nvshmemx_signal_wait_until_on_stream(&sig[0], NVSHMEM_CMP_EQ, next, S0);               \
        CHECK_EQ(next, nvshmem_signal_fetch(&sig[0]), "signal of nvshmemx_%s_put_signal%s_on_stream (%s)", tn, \
                 nbi ? "_nbi" : "", op == NVSHMEM_SIGNAL_ADD ? "ADD" : "SET");                 \
        for (int i = 0; i < N; i++)                                                            \
            CHECK_V(K, MK_##K(T, left, i, 40 + nbi), buf[i], "nvshmemx_%s_put_signal%s_on_stream from PE %d [%d]", \
                    tn, nbi ? "_nbi" : "", left, i);                                           \
        sig_round = next;                                                                      \
        if (nbi) nvshmemx_quiet_on_stream(S0); /* the local source may be reused */            \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
    }
RMA_TYPES(DEF_PSIG)

static void psig_sized(const char *name, size_t es, sig_fn f, int nbi, int salt) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    size_t n = 777, len = n * es;
    uint8_t *loc = (uint8_t *)malloc(len);
    char what[96];
    for (size_t i = 0; i < len; i++) loc[i] = byte_of(me, (long)i, salt);
    memset(sym_a, 0, len);
    nvshmemx_barrier_all_on_stream(S0);
    uint64_t next = sig_round + 3;
    f(sym_a, loc, n, &sig[0], 3, NVSHMEM_SIGNAL_ADD, right, S0);
    /* wait with NVSHMEM_CMP_GE (5 in NVSHMEM, where OpenSHMEM's 5 is LE) */
    nvshmemx_signal_wait_until_on_stream(&sig[0], NVSHMEM_CMP_GE, next, S0);
    snprintf(what, sizeof what, "nvshmemx_put%s_signal%s_on_stream", name, nbi ? "_nbi" : "");
    CHECK_EQ(next, nvshmem_signal_fetch(&sig[0]), "%s: signal after NVSHMEM_CMP_GE", what);
    check_bytes(sym_a, len, left, salt, what);
    sig_round = next;
    nvshmemx_quiet_on_stream(S0);
    nvshmemx_barrier_all_on_stream(S0);
    free(loc);
}

static void put_signal(void) {
    sig[0] = 0;
    sig_round = 0;
    nvshmemx_barrier_all_on_stream(S0);
#define CALL_PSIG(NAME, T, K) psig_##NAME(0); psig_##NAME(1);
    RMA_TYPES(CALL_PSIG)
    const struct {
        const char *name;
        size_t es;
        sig_fn f, fnbi;
    } sz[] = {
        {"8", 1, nvshmemx_put8_signal_on_stream, nvshmemx_put8_signal_nbi_on_stream},
        {"16", 2, nvshmemx_put16_signal_on_stream, nvshmemx_put16_signal_nbi_on_stream},
        {"32", 4, nvshmemx_put32_signal_on_stream, nvshmemx_put32_signal_nbi_on_stream},
        {"64", 8, nvshmemx_put64_signal_on_stream, nvshmemx_put64_signal_nbi_on_stream},
        {"128", 16, nvshmemx_put128_signal_on_stream, nvshmemx_put128_signal_nbi_on_stream},
        {"mem", 1, nvshmemx_putmem_signal_on_stream, nvshmemx_putmem_signal_nbi_on_stream},
    };
    for (int i = 0; i < 6; i++) {
        psig_sized(sz[i].name, sz[i].es, sz[i].f, 0, 60 + i);
        psig_sized(sz[i].name, sz[i].es, sz[i].fnbi, 1, 70 + i);
    }
}

/* ---------------------------------------------------------------- signal_op */

static void signal_ops(void) {
    int right = (me + 1) % npes;
    sig[1] = 0;
    sig[2] = 0;
    nvshmemx_barrier_all_on_stream(S0);
    nvshmemx_signal_op(&sig[1], 40, NVSHMEM_SIGNAL_SET, right);
    nvshmemx_signal_op(&sig[1], 2, NVSHMEM_SIGNAL_ADD, right);
    nvshmemx_signal_op_on_stream(&sig[2], 1000, NVSHMEM_SIGNAL_SET, right, S0);
    nvshmemx_signal_op_on_stream(&sig[2], 7, NVSHMEM_SIGNAL_ADD, right, S0);
    nvshmemx_barrier_all_on_stream(S0);
    CHECK_EQ(42, nvshmem_signal_fetch(&sig[1]), "nvshmemx_signal_op SET 40 then ADD 2");
    CHECK_EQ(1007, nvshmem_signal_fetch(&sig[2]), "nvshmemx_signal_op_on_stream SET 1000 then ADD 7");
    nvshmemx_signal_op(&sig[2], 3, NVSHMEM_SIGNAL_ADD, me);
    nvshmemx_quiet_on_stream(S0);
    CHECK_EQ(1010, nvshmem_signal_fetch(&sig[2]), "nvshmemx_signal_op ADD 3 on my own word");
    /* every PE adds to PE 0's word */
    nvshmemx_signal_op_on_stream(&sig[3], (uint64_t)me + 1, NVSHMEM_SIGNAL_ADD, 0, S0);
    if (me == 0) {
        nvshmemx_signal_wait_until_on_stream(&sig[3], NVSHMEM_CMP_EQ, (uint64_t)npes * (npes + 1) / 2, S0);
        CHECK_EQ((uint64_t)npes * (npes + 1) / 2, nvshmem_signal_fetch(&sig[3]), "sum of every PE's signal ADD");
    }
    nvshmemx_barrier_all_on_stream(S0);
}

/* ---------------------------------------------------------------- wait_until on stream */

/* Initial 10; the left neighbour sets the target (after a pause for int, so that a wait that
 * returns early is caught every time); the condition is false for 10 and true for the target. */
static const struct {
    int cmp;
    const char *name;
    int target, value;
} conds[] = {
    {NVSHMEM_CMP_EQ, "EQ", 20, 20}, {NVSHMEM_CMP_NE, "NE", 20, 10}, {NVSHMEM_CMP_GT, "GT", 20, 15},
    {NVSHMEM_CMP_GE, "GE", 20, 20}, {NVSHMEM_CMP_LT, "LT", 3, 5},   {NVSHMEM_CMP_LE, "LE", 3, 3},
};

#define DEF_WAIT(NAME, T)                                                                      \
    static void wait_##NAME(int pause_ms) {                                                    \
        const char *tn = #NAME;                                                                \
        T *iv = (T *)sym_a;                                                                    \
        int right = (me + 1) % npes;                                                           \
        for (int c = 0; c < 6; c++) {                                                          \
            iv[0] = 10;                                                                        \
            nvshmemx_barrier_all_on_stream(S0);                                                \
            if (pause_ms) sleep_ms(pause_ms);                                                  \
            nvshmemx_##NAME##_p_on_stream(&iv[0], (T)conds[c].target, right, S0);              \
            nvshmemx_##NAME##_wait_until_on_stream(&iv[0], conds[c].cmp, (T)conds[c].value, S0); \
            CHECK_EQ(conds[c].target, iv[0], "nvshmemx_%s_wait_until_on_stream(NVSHMEM_CMP_%s, %d) returned with", \
                     tn, conds[c].name, conds[c].value);                                       \
            nvshmemx_barrier_all_on_stream(S0);                                                \
        }                                                                                      \
        /* _all: element 1 is excluded by its status and never set */                          \
        int status[4] = {0, 1, 0, 0};                                                          \
        for (int i = 0; i < 4; i++) iv[i] = 10;                                                \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        if (pause_ms) sleep_ms(pause_ms);                                                      \
        for (int i = 0; i < 4; i++)                                                            \
            if (i != 1) nvshmemx_##NAME##_p_on_stream(&iv[i], (T)(30 + i), right, S0);         \
        nvshmemx_##NAME##_wait_until_all_on_stream(iv, 4, status, NVSHMEM_CMP_GE, (T)30, S0);  \
        for (int i = 0; i < 4; i++)                                                            \
            CHECK_EQ(i == 1 ? 10 : 30 + i, iv[i], "nvshmemx_%s_wait_until_all_on_stream(GE 30) returned with [%d]", tn, i); \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        /* _all_vector: each element its own value, LE */                                      \
        T want[4];                                                                             \
        for (int i = 0; i < 4; i++) {                                                          \
            iv[i] = 10;                                                                        \
            want[i] = (T)(2 + i);                                                              \
        }                                                                                      \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        if (pause_ms) sleep_ms(pause_ms);                                                      \
        for (int i = 0; i < 4; i++) nvshmemx_##NAME##_p_on_stream(&iv[i], (T)(2 + i), right, S0); \
        nvshmemx_##NAME##_wait_until_all_vector_on_stream(iv, 4, NULL, NVSHMEM_CMP_LE, want, S0); \
        for (int i = 0; i < 4; i++)                                                            \
            CHECK_EQ(2 + i, iv[i], "nvshmemx_%s_wait_until_all_vector_on_stream(LE) returned with [%d]", tn, i); \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
    }
SYNC_TYPES(DEF_WAIT)

/* ---------------------------------------------------------------- collectives on stream */

#define NB 4
#define DEF_CMOVE(NAME, T, K)                                                                  \
    static void cmove_##NAME(void) {                                                           \
        const char *tn = #NAME;                                                                \
        T *s = (T *)sym_b, *d = (T *)sym_a;                                                    \
        int root = npes - 1;                                                                   \
        for (int i = 0; i < npes * NB; i++) s[i] = MK_##K(T, me, i, 80);                       \
        CHECK_EQ(0, nvshmemx_##NAME##_broadcast_on_stream(NVSHMEM_TEAM_WORLD, d, s, NB, root, S0), \
                 "nvshmemx_%s_broadcast_on_stream return", tn);                                \
        for (int i = 0; i < NB; i++)                                                           \
            CHECK_V(K, MK_##K(T, root, i, 80), d[i], "nvshmemx_%s_broadcast_on_stream [%d]", tn, i); \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        CHECK_EQ(0, nvshmemx_##NAME##_fcollect_on_stream(NVSHMEM_TEAM_WORLD, d, s, NB, S0),     \
                 "nvshmemx_%s_fcollect_on_stream return", tn);                                 \
        for (int i = 0; i < npes * NB; i++)                                                    \
            CHECK_V(K, MK_##K(T, i / NB, i % NB, 80), d[i], "nvshmemx_%s_fcollect_on_stream [%d]", tn, i); \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        CHECK_EQ(0, nvshmemx_##NAME##_alltoall_on_stream(NVSHMEM_TEAM_WORLD, d, s, NB, S0),     \
                 "nvshmemx_%s_alltoall_on_stream return", tn);                                 \
        for (int i = 0; i < npes * NB; i++)                                                    \
            CHECK_V(K, MK_##K(T, i / NB, me * NB + i % NB, 80), d[i], "nvshmemx_%s_alltoall_on_stream [%d]", tn, i); \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
    }
RMA_TYPES(DEF_CMOVE)

static void cmove_mem(void) {
    size_t nb = 333;
    for (size_t i = 0; i < npes * nb; i++) sym_b[i] = byte_of(me, (long)i, 90);
    CHECK_EQ(0, nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, sym_a, sym_b, nb, 0, S0), "nvshmemx_broadcastmem_on_stream return");
    check_bytes(sym_a, nb, 0, 90, "nvshmemx_broadcastmem_on_stream");
    nvshmemx_barrier_all_on_stream(S0);
    CHECK_EQ(0, nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, sym_a, sym_b, nb, S0), "nvshmemx_fcollectmem_on_stream return");
    for (int p = 0; p < npes; p++) check_bytes(sym_a + p * nb, nb, p, 90, "nvshmemx_fcollectmem_on_stream block");
    nvshmemx_barrier_all_on_stream(S0);
    CHECK_EQ(0, nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, sym_a, sym_b, nb, S0), "nvshmemx_alltoallmem_on_stream return");
    size_t bad = 0;
    for (int p = 0; p < npes; p++)
        for (size_t i = 0; i < nb; i++) {
            uint8_t want = byte_of(p, (long)(me * nb + i), 90);
            if (sym_a[p * nb + i] != want && bad++ < 2)
                fail("nvshmemx_alltoallmem_on_stream block %d [%zu]: expected %u got %u", p, i, want, sym_a[p * nb + i]);
        }
    checks++;
    nvshmemx_barrier_all_on_stream(S0);
}

/* Reductions: NUM types fold in the type, half/bfloat16 hold small integers. */
static unsigned short half_bits(int v) {
    if (v == 0) return 0;
    unsigned short sign = v < 0 ? 0x8000 : 0;
    unsigned a = (unsigned)(v < 0 ? -v : v);
    int e = 31 - __builtin_clz(a);
    return (unsigned short)(sign | (unsigned)((e + 15) << 10) | ((a << (10 - e)) & 0x3FF));
}
static unsigned short bf16_bits(int v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (unsigned short)(u >> 16);
}
static long long rv_sum(int p, long i) { return (p * 3 + i) % 5 + 1; }
static long long rv_prod(int p, long i) { return (p + i) % 3 == 0 ? 2 : 1; }
static long long rv_max(int p, long i) { return (p * 7 + i * 3) % 11 - 5; }
static long long rv_min(int p, long i) { return (p * 5 + i * 7) % 13 - 6; }
static long long rv_and(int p, long i) { return (long long)(mix(p, i, 50) | mix(p, i + 1, 50)); }
static long long rv_or(int p, long i) { return (long long)(mix(p, i, 60) & mix(p, i + 1, 60)); }
static long long rv_xor(int p, long i) { return (long long)mix(p, i, 70); }
#define CMB_sum(a, b) ((a) + (b))
#define CMB_prod(a, b) ((a) * (b))
#define CMB_max(a, b) ((a) > (b) ? (a) : (b))
#define CMB_min(a, b) ((a) < (b) ? (a) : (b))
#define CMB_and(a, b) ((a) & (b))
#define CMB_or(a, b) ((a) | (b))
#define CMB_xor(a, b) ((a) ^ (b))
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
#define EQ_HALF EQ_H16
#define EQ_BF16 EQ_H16
#define SHOW_HALF SHOW_H16
#define SHOW_BF16 SHOW_H16
#define R 6

#define DEF_RED_OP(NAME, T, K, OP)                                                             \
    static void red_##NAME##_##OP(void) {                                                      \
        const char *tn = #NAME, *on = #OP;                                                     \
        T *s = (T *)sym_b, *d = (T *)sym_a;                                                    \
        for (int i = 0; i < npes * R; i++) s[i] = TO_##K(T, rv_##OP(me, i));                   \
        CHECK_EQ(0, nvshmemx_##NAME##_##OP##_reduce_on_stream(NVSHMEM_TEAM_WORLD, d, s, R, S0), \
                 "nvshmemx_%s_%s_reduce_on_stream return", tn, on);                            \
        for (int i = 0; i < R; i++) {                                                          \
            ACC_##K(T) acc = IN_##K(T, rv_##OP(0, i));                                         \
            for (int m = 1; m < npes; m++) acc = (ACC_##K(T))CMB_##OP(acc, IN_##K(T, rv_##OP(m, i))); \
            CHECK_V(K, OUT_##K(T, acc), d[i], "nvshmemx_%s_%s_reduce_on_stream [%d]", tn, on, i); \
        }                                                                                      \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
        CHECK_EQ(0, nvshmemx_##NAME##_##OP##_reducescatter_on_stream(NVSHMEM_TEAM_WORLD, d, s, R, S0), \
                 "nvshmemx_%s_%s_reducescatter_on_stream return", tn, on);                     \
        for (int e = 0; e < R; e++) {                                                          \
            long i = (long)me * R + e;                                                         \
            ACC_##K(T) acc = IN_##K(T, rv_##OP(0, i));                                         \
            for (int m = 1; m < npes; m++) acc = (ACC_##K(T))CMB_##OP(acc, IN_##K(T, rv_##OP(m, i))); \
            CHECK_V(K, OUT_##K(T, acc), d[e], "nvshmemx_%s_%s_reducescatter_on_stream [%d]", tn, on, e); \
        }                                                                                      \
        nvshmemx_barrier_all_on_stream(S0);                                                    \
    }
#define ARITH_TYPES(X)                                                                         \
    X(float, float, NUM) X(double, double, NUM) X(char, char, NUM)                             \
    X(schar, signed char, NUM) X(short, short, NUM) X(int, int, NUM) X(long, long, NUM)        \
    X(longlong, long long, NUM) X(uchar, unsigned char, NUM)                                   \
    X(ushort, unsigned short, NUM) X(uint, unsigned int, NUM) X(ulong, unsigned long, NUM)     \
    X(ulonglong, unsigned long long, NUM) X(int8, int8_t, NUM) X(int16, int16_t, NUM)          \
    X(int32, int32_t, NUM) X(int64, int64_t, NUM) X(uint8, uint8_t, NUM)                       \
    X(uint16, uint16_t, NUM) X(uint32, uint32_t, NUM) X(uint64, uint64_t, NUM)                 \
    X(size, size_t, NUM) X(half, half, HALF) X(bfloat16, __nv_bfloat16, BF16)
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

/* ---------------------------------------------------------------- barriers on stream */

static void barriers(void) {
    int *slots = (int *)sym_a;
    for (int r = 1; r <= 4; r++) {
        for (int p = 0; p < npes; p++) nvshmemx_int_p_on_stream(&slots[me], r * 10 + me, p, S0);
        switch (r) {
        case 1: CHECK_EQ(0, nvshmemx_barrier_on_stream(NVSHMEM_TEAM_WORLD, S0), "nvshmemx_barrier_on_stream return"); break;
        case 2: nvshmemx_barrier_all_on_stream(S0); break;
        case 3:
            nvshmemx_quiet_on_stream(S0);
            CHECK_EQ(0, nvshmemx_team_sync_on_stream(NVSHMEM_TEAM_WORLD, S0), "nvshmemx_team_sync_on_stream return");
            break;
        default: nvshmemx_quiet_on_stream(S0); nvshmemx_sync_all_on_stream(S0); break;
        }
        static const char *names[] = {"", "nvshmemx_barrier_on_stream", "nvshmemx_barrier_all_on_stream",
                                      "quiet + nvshmemx_team_sync_on_stream", "quiet + nvshmemx_sync_all_on_stream"};
        for (int p = 0; p < npes; p++) CHECK_EQ(r * 10 + p, slots[p], "after %s: slot of PE %d", names[r], p);
        nvshmemx_barrier_all_on_stream(S0);
    }
    /* also on a split team: the odd PEs */
    nvshmem_team_t odd = NVSHMEM_TEAM_INVALID;
    if (npes >= 2) {
        nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd);
        if (odd != NVSHMEM_TEAM_INVALID) {
            CHECK_EQ(0, nvshmemx_barrier_on_stream(odd, S0), "nvshmemx_barrier_on_stream(odd team) return");
            CHECK_EQ(0, nvshmemx_team_sync_on_stream(odd, S0), "nvshmemx_team_sync_on_stream(odd team) return");
            int *s = (int *)sym_b, *d = (int *)sym_a;
            s[0] = me;
            CHECK_EQ(0, nvshmemx_int_sum_reduce_on_stream(odd, d, s, 1, S0), "nvshmemx_int_sum_reduce_on_stream(odd team) return");
            int want = 0;
            for (int p = 1; p < npes; p += 2) want += p;
            CHECK_EQ(want, d[0], "nvshmemx_int_sum_reduce_on_stream(odd team)");
            nvshmem_team_destroy(odd);
        }
    }
    nvshmemx_barrier_all_on_stream(S0);
}

/* ---------------------------------------------------------------- a stream that is not 0 */

static int bad_stream(const char *which) {
    cudaStream_t bad = me == npes - 1 ? (cudaStream_t)(uintptr_t)0x1000 : S0;
    int *a = (int *)sym_a;
    uint64_t *s = sig;
    int v = 1;
    printf("PE %d: calling %s with stream %p\n", me, which, (void *)bad);
    fflush(stdout);
    if (strcmp(which, "put") == 0) {
        nvshmemx_int_put_on_stream(a, &v, 1, (me + 1) % npes, bad);
        nvshmemx_barrier_all_on_stream(S0);
    } else if (strcmp(which, "g") == 0) {
        v = nvshmemx_int_g_on_stream(a, (me + 1) % npes, bad);
        nvshmemx_barrier_all_on_stream(S0);
    } else if (strcmp(which, "barrier") == 0) {
        nvshmemx_barrier_all_on_stream(bad);
    } else if (strcmp(which, "reduce") == 0) {
        nvshmemx_int_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, a, a + 8, 1, bad);
    } else if (strcmp(which, "signal_wait") == 0) {
        nvshmemx_signal_wait_until_on_stream(s, NVSHMEM_CMP_GE, 0, bad);
        nvshmemx_barrier_all_on_stream(S0);
    } else if (strcmp(which, "quiet") == 0) {
        nvshmemx_quiet_on_stream(bad);
        nvshmemx_barrier_all_on_stream(S0);
    } else if (strcmp(which, "wait_until") == 0) {
        a[0] = 0;
        nvshmemx_int_wait_until_on_stream(a, NVSHMEM_CMP_EQ, 0, bad);
        nvshmemx_barrier_all_on_stream(S0);
    } else {
        fprintf(stderr, "PE %d: unknown routine %s for badstream\n", me, which);
        return 2;
    }
    if (me == npes - 1) {
        fprintf(stderr, "PE %d: %s returned although its stream %p is not 0 (value %d)\n", me, which, (void *)bad, v);
        return 3;
    }
    /* the others wait for the job to be ended */
    nvshmem_barrier_all();
    fprintf(stderr, "PE %d: the job went on after PE %d's call of %s with a bad stream\n", me, npes - 1, which);
    return 4;
}

int main(int argc, char **argv) {
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    sym_a = (unsigned char *)nvshmem_malloc(SCRATCH);
    sym_b = (unsigned char *)nvshmem_malloc(SCRATCH);
    sig = (uint64_t *)nvshmem_calloc(8, sizeof(uint64_t));
    if (argc > 2 && strcmp(argv[1], "badstream") == 0) {
        nvshmem_barrier_all();
        return bad_stream(argv[2]);
    }
    nvshmem_barrier_all();
#define CALL_RMA(NAME, T, K) rma_##NAME();
    RMA_TYPES(CALL_RMA)
    sized();
    put_signal();
    signal_ops();
    wait_int(20);
#define CALL_WAIT(NAME, T) wait_##NAME(0);
    SYNC_TYPES(CALL_WAIT)
#define CALL_CMOVE(NAME, T, K) cmove_##NAME();
    RMA_TYPES(CALL_CMOVE)
    cmove_mem();
#define CALL_ARITH(NAME, T, K) red_##NAME##_sum(); red_##NAME##_prod(); red_##NAME##_max(); red_##NAME##_min();
    ARITH_TYPES(CALL_ARITH)
#define CALL_BIT(NAME, T, K) red_##NAME##_and(); red_##NAME##_or(); red_##NAME##_xor();
    BIT_TYPES(CALL_BIT)
    barriers();
    nvshmem_free(sig);
    nvshmem_free(sym_b);
    nvshmem_free(sym_a);
    return finish();
}
