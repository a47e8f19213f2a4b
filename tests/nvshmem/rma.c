/*
 * rma.c -- NVSHMEM host RMA: p/g/put/get/iput/iget/put_nbi/get_nbi for the 25 types of
 * NVSHMEM's RMA table (half and bfloat16 included), the sized forms (8..128, mem) and their
 * strided and non-blocking forms, nvshmem_ptr, nvshmem_calloc/align, and the ordering that
 * nvshmem_fence and nvshmem_quiet promise.
 *
 * Written as an NVSHMEM program is (nvshmem.h, nvshmem_init, nvshmem_malloc), built with plain
 * `cc ... -lnvshmem_host`, and run by tests/tests/nvshmem.rs under oshrun and mpiexec.hydra.
 * Every value is computed here with plain C arithmetic; a mismatch prints
 * "PE n: <what>: expected X got Y" on stderr, and a PE that saw none prints "PE n: OK".
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

/* got == expected in the type of `got`, both printed through long double (exact for every
 * 64-bit integer). The rest is a printf format naming what was checked. */
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

/* A value for PE p, element i, salt k: wide enough for 64-bit types, cut by the cast. */
static uint64_t mix(int p, long i, int k) {
    uint64_t x = (uint64_t)(p + 1) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ULL ^
                 (uint64_t)(k + 7) * 0x94D049BB133111EBULL;
    x ^= x >> 29;
    return x;
}

/* Values of a type: exact multiples of 1/4 for floating types; for half and bfloat16 (16-bit
 * storage without CUDA) a bit pattern. KIND is NUM or H16. */
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

/* ---------------------------------------------------------------- the types */

/* NVSHMEM's RMA types: X(NAME, TYPE, KIND) */
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

#define N 37      /* elements per typed transfer */
#define NP 5      /* elements written with _p / read with _g */
#define NS 5      /* elements of a strided transfer */
#define DST 2     /* its target stride */
#define SST 3     /* its source stride */

/* One type: every RMA routine to the right neighbour (puts) and from every PE (gets). The
 * target has four regions: put, p, iput, put_nbi; what is not written must stay untouched. */
#define DEF_RMA(NAME, T, K)                                                                    \
    static void rma_##NAME(void) {                                                             \
        const char *tn = #NAME;                                                                \
        T *buf = (T *)nvshmem_malloc(4 * N * sizeof(T));                                       \
        T *src = (T *)nvshmem_malloc(SST * N * sizeof(T));                                     \
        if (!buf || !src) {                                                                    \
            fail("%s: nvshmem_malloc returned NULL", tn);                                      \
            return;                                                                            \
        }                                                                                      \
        int right = (me + 1) % npes, left = (me + npes - 1) % npes;                            \
        T loc[SST * N], loc3[N], tmp[DST * N];                                                 \
        for (int i = 0; i < SST * N; i++) src[i] = MK_##K(T, me, i, 1);                        \
        for (int i = 0; i < 4 * N; i++) buf[i] = MK_##K(T, 1000, i, 0);                        \
        nvshmem_barrier_all();                                                                 \
        for (int i = 0; i < SST * N; i++) loc[i] = MK_##K(T, me, i, 2);                        \
        nvshmem_##NAME##_put(buf, loc, N, right);                                              \
        for (int i = 0; i < NP; i++) nvshmem_##NAME##_p(buf + N + i, MK_##K(T, me, i, 3), right); \
        for (int i = 0; i < SST * N; i++) loc[i] = MK_##K(T, me, i, 4);                        \
        nvshmem_##NAME##_iput(buf + 2 * N, loc, DST, SST, NS, right);                          \
        for (int i = 0; i < N; i++) loc3[i] = MK_##K(T, me, i, 5);                             \
        nvshmem_##NAME##_put_nbi(buf + 3 * N, loc3, N, right);                                 \
        nvshmem_quiet();                                                                       \
        nvshmem_barrier_all();                                                                 \
        for (int i = 0; i < N; i++)                                                            \
            CHECK_V(K, MK_##K(T, left, i, 2), buf[i], "%s_put from PE %d [%d]", tn, left, i);  \
        for (int i = 0; i < N; i++) {                                                          \
            T want = i < NP ? MK_##K(T, left, i, 3) : MK_##K(T, 1000, N + i, 0);              \
            CHECK_V(K, want, buf[N + i], "%s_p from PE %d [%d]", tn, left, i);                 \
        }                                                                                      \
        for (int i = 0; i < N; i++) {                                                          \
            T want = (i % DST == 0 && i / DST < NS) ? MK_##K(T, left, (i / DST) * SST, 4)       \
                                                    : MK_##K(T, 1000, 2 * N + i, 0);          \
            CHECK_V(K, want, buf[2 * N + i], "%s_iput(dst %d, sst %d) from PE %d [%d]", tn, DST, SST, \
                    left, i);                                                                  \
        }                                                                                      \
        for (int i = 0; i < N; i++)                                                            \
            CHECK_V(K, MK_##K(T, left, i, 5), buf[3 * N + i], "%s_put_nbi from PE %d [%d]", tn, \
                    left, i);                                                                  \
        for (int p = 0; p < npes; p++) {                                                       \
            int q = (me + p) % npes;                                                           \
            memset(tmp, 0, sizeof tmp);                                                        \
            nvshmem_##NAME##_get(tmp, src, N, q);                                              \
            for (int i = 0; i < N; i++)                                                        \
                CHECK_V(K, MK_##K(T, q, i, 1), tmp[i], "%s_get from PE %d [%d]", tn, q, i);    \
            for (int i = 0; i < NP; i++) {                                                     \
                T v = nvshmem_##NAME##_g(src + 3 * i, q);                                      \
                CHECK_V(K, MK_##K(T, q, 3 * i, 1), v, "%s_g from PE %d [%d]", tn, q, 3 * i);   \
            }                                                                                  \
            for (int i = 0; i < DST * N; i++) tmp[i] = MK_##K(T, 2000, i, 0);                  \
            nvshmem_##NAME##_iget(tmp, src, DST, SST, NS, q);                                  \
            for (int i = 0; i < DST * N; i++) {                                                \
                T want = (i % DST == 0 && i / DST < NS) ? MK_##K(T, q, (i / DST) * SST, 1)      \
                                                        : MK_##K(T, 2000, i, 0);              \
                CHECK_V(K, want, tmp[i], "%s_iget(dst %d, sst %d) from PE %d [%d]", tn, DST, SST, q, \
                        i);                                                                    \
            }                                                                                  \
            memset(tmp, 0, sizeof tmp);                                                        \
            nvshmem_##NAME##_get_nbi(tmp, src + N, N, q);                                      \
            nvshmem_quiet();                                                                   \
            for (int i = 0; i < N; i++)                                                        \
                CHECK_V(K, MK_##K(T, q, N + i, 1), tmp[i], "%s_get_nbi from PE %d [%d]", tn, q, i); \
        }                                                                                      \
        nvshmem_barrier_all();                                                                 \
        nvshmem_free(src);                                                                     \
        nvshmem_free(buf);                                                                     \
    }
RMA_TYPES(DEF_RMA)

/* ---------------------------------------------------------------- sized forms */

static uint8_t byte_of(int p, long i, int k) { return (uint8_t)(mix(p, i, k) >> 17); }

/* put8..put128 and putmem (bytes), iput8..128, their get twins, and the nbi forms. `es` is the
 * element size, `n` the element count. */
#define SZ_BYTES (256 * 1024)
static uint8_t *sz_tgt, *sz_src, *sz_loc;

static void check_bytes(const uint8_t *got, size_t len, int from, int k, const char *what, size_t es,
                        size_t n) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < len; i++) {
        if (got[i] != byte_of(from, (long)i, k)) {
            if (bad == 0) first = i;
            bad++;
        }
    }
    checks++;
    if (bad) {
        fail("%s (%zu-byte elements, %zu of them) with PE %d: byte %zu: expected %u got %u (%zu bytes wrong)",
             what, es, n, from, first, byte_of(from, (long)first, k), got[first], bad);
    }
}

typedef void (*contig_fn)(void *, const void *, size_t, int);
typedef void (*strided_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int);

static void sized_one(const char *name, size_t es, size_t n, contig_fn put, contig_fn get, contig_fn put_nbi,
                      contig_fn get_nbi, int salt) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    size_t len = es * n;
    char what[96];
    for (size_t i = 0; i < len; i++) sz_src[i] = byte_of(me, (long)i, salt);
    memset(sz_tgt, 0, 2 * len + 64);
    for (size_t i = 0; i < len; i++) sz_loc[i] = byte_of(me, (long)i, salt + 1);
    nvshmem_barrier_all();
    put(sz_tgt, sz_loc, n, right);
    put_nbi(sz_tgt + len, sz_src, n, right);
    nvshmem_quiet();
    nvshmem_barrier_all();
    snprintf(what, sizeof what, "nvshmem_put%s", name);
    check_bytes(sz_tgt, len, left, salt + 1, what, es, n);
    snprintf(what, sizeof what, "nvshmem_put%s_nbi", name);
    check_bytes(sz_tgt + len, len, left, salt, what, es, n);
    for (int i = 0; i < 64; i++) CHECK_EQ(0, sz_tgt[2 * len + i], "nvshmem_put%s: byte %zu past the end", name, 2 * len + i);
    memset(sz_loc, 0, len);
    get(sz_loc, sz_src, n, right);
    snprintf(what, sizeof what, "nvshmem_get%s", name);
    check_bytes(sz_loc, len, right, salt, what, es, n);
    memset(sz_loc, 0, len);
    get_nbi(sz_loc, sz_src, n, left);
    nvshmem_quiet();
    snprintf(what, sizeof what, "nvshmem_get%s_nbi", name);
    check_bytes(sz_loc, len, left, salt, what, es, n);
    nvshmem_barrier_all();
}

static void strided_one(int bits, size_t es, strided_fn iput, strided_fn iget) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    const ptrdiff_t dst = 3, sst = 2;
    const size_t n = 7;
    size_t span = es * (n * 3 + 2);
    for (size_t i = 0; i < span; i++) sz_src[i] = byte_of(me, (long)i, bits);
    memset(sz_tgt, 0xEE, span);
    nvshmem_barrier_all();
    iput(sz_tgt, sz_src, dst, sst, n, right);
    nvshmem_barrier_all();
    for (size_t i = 0; i < span; i++) {
        size_t e = i / es, b = i % es;
        uint8_t want = (e % (size_t)dst == 0 && e / (size_t)dst < n)
                           ? byte_of(left, (long)((e / (size_t)dst) * (size_t)sst * es + b), bits)
                           : 0xEE;
        CHECK_EQ(want, sz_tgt[i], "nvshmem_iput%d(dst %td, sst %td) from PE %d: byte %zu", bits, dst, sst, left, i);
    }
    memset(sz_loc, 0xDD, span);
    iget(sz_loc, sz_src, dst, sst, n, right);
    for (size_t i = 0; i < span; i++) {
        size_t e = i / es, b = i % es;
        uint8_t want = (e % (size_t)dst == 0 && e / (size_t)dst < n)
                           ? byte_of(right, (long)((e / (size_t)dst) * (size_t)sst * es + b), bits)
                           : 0xDD;
        CHECK_EQ(want, sz_loc[i], "nvshmem_iget%d(dst %td, sst %td) from PE %d: byte %zu", bits, dst, sst, right, i);
    }
    nvshmem_barrier_all();
}

static void sized(void) {
    sz_tgt = (uint8_t *)nvshmem_malloc(2 * SZ_BYTES + 64);
    sz_src = (uint8_t *)nvshmem_malloc(SZ_BYTES);
    sz_loc = (uint8_t *)malloc(SZ_BYTES);
    if (!sz_tgt || !sz_src || !sz_loc) {
        fail("sized: allocation failed");
        return;
    }
    const size_t counts[] = {1, 3, 1000};
    for (int c = 0; c < 3; c++) {
        size_t n = counts[c];
        sized_one("8", 1, n, nvshmem_put8, nvshmem_get8, nvshmem_put8_nbi, nvshmem_get8_nbi, 10);
        sized_one("16", 2, n, nvshmem_put16, nvshmem_get16, nvshmem_put16_nbi, nvshmem_get16_nbi, 20);
        sized_one("32", 4, n, nvshmem_put32, nvshmem_get32, nvshmem_put32_nbi, nvshmem_get32_nbi, 30);
        sized_one("64", 8, n, nvshmem_put64, nvshmem_get64, nvshmem_put64_nbi, nvshmem_get64_nbi, 40);
        sized_one("128", 16, n, nvshmem_put128, nvshmem_get128, nvshmem_put128_nbi, nvshmem_get128_nbi, 50);
        sized_one("mem", 1, n, nvshmem_putmem, nvshmem_getmem, nvshmem_putmem_nbi, nvshmem_getmem_nbi, 60);
    }
    /* A large putmem/getmem: a quarter MiB, odd-sized. */
    sized_one("mem", 1, SZ_BYTES - 13, nvshmem_putmem, nvshmem_getmem, nvshmem_putmem_nbi, nvshmem_getmem_nbi, 70);
    strided_one(8, 1, nvshmem_iput8, nvshmem_iget8);
    strided_one(16, 2, nvshmem_iput16, nvshmem_iget16);
    strided_one(32, 4, nvshmem_iput32, nvshmem_iget32);
    strided_one(64, 8, nvshmem_iput64, nvshmem_iget64);
    strided_one(128, 16, nvshmem_iput128, nvshmem_iget128);
    free(sz_loc);
    nvshmem_free(sz_src);
    nvshmem_free(sz_tgt);
}

/* ---------------------------------------------------------------- memory queries */

static void memory(void) {
    long *a = (long *)nvshmem_malloc(64 * sizeof(long));
    long *z = (long *)nvshmem_calloc(100, sizeof(long));
    void *al = nvshmem_align(4096, 100);
    CHECK(a != NULL && z != NULL && al != NULL, "nvshmem_malloc/calloc/align returned non-NULL");
    if (!a || !z || !al) return;
    for (int i = 0; i < 100; i++) CHECK_EQ(0, z[i], "nvshmem_calloc [%d]", i);
    CHECK_EQ(0, (uintptr_t)al % 4096, "nvshmem_align(4096) address modulo 4096");
    for (int i = 0; i < 64; i++) a[i] = (long)mix(me, i, 80);
    nvshmem_barrier_all();
    const char *forced = getenv("OXSHMEM_TRANSPORT");
    int may_be_null = forced && strcmp(forced, "ofi") == 0;
    CHECK(nvshmem_ptr(a, me) == (void *)a, "nvshmem_ptr(buf, my_pe) == buf");
    for (int p = 0; p < npes; p++) {
        long *r = (long *)nvshmem_ptr(a, p);
        if (r == NULL) {
            CHECK(may_be_null, "nvshmem_ptr(buf, %d) is not NULL on one node", p);
            continue;
        }
        for (int i = 0; i < 64; i++) CHECK_EQ((long)mix(p, i, 80), r[i], "load through nvshmem_ptr(buf, %d) [%d]", p, i);
        long *r2 = (long *)nvshmem_ptr(a + 17, p);
        CHECK(r2 == r + 17, "nvshmem_ptr(buf + 17, %d) == nvshmem_ptr(buf, %d) + 17", p, p);
    }
    int local = 7;
    CHECK(nvshmem_ptr(&local, (me + 1) % npes) == NULL || npes == 1, "nvshmem_ptr of a stack address is NULL");
    nvshmem_barrier_all();
    /* A store through nvshmem_ptr is seen by the owner after a barrier. */
    long *rr = (long *)nvshmem_ptr(a, (me + 1) % npes);
    if (rr) rr[63] = 1000 + me;
    nvshmem_barrier_all();
    if (nvshmem_ptr(a, (me + npes - 1) % npes))
        CHECK_EQ(1000 + (me + npes - 1) % npes, a[63], "store through nvshmem_ptr by PE %d", (me + npes - 1) % npes);
    nvshmem_barrier_all();
    nvshmem_free(al);
    nvshmem_free(z);
    nvshmem_free(a);
}

/* ---------------------------------------------------------------- ordering */

#define OM (64 * 1024) /* ints per message */
#define ROUNDS 12

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Waits until the local int *flag reaches `want` (reading it with an atomic fetch); false
 * after 20 s. */
static int wait_flag(int *flag, int want) {
    double deadline = now_s() + 20.0;
    while (nvshmem_int_atomic_fetch(flag, me) < want) {
        if (now_s() > deadline) return 0;
    }
    return 1;
}

/* Data, then fence (or quiet), then a flag: the flag's receiver must see all the data. */
static void ordering(void) {
    int *data = (int *)nvshmem_malloc(2 * OM * sizeof(int));
    int *flag = (int *)nvshmem_calloc(2, sizeof(int));
    int *msg = (int *)malloc(OM * sizeof(int));
    if (!data || !flag || !msg) {
        fail("ordering: allocation failed");
        return;
    }
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    nvshmem_barrier_all();
    for (int r = 1; r <= ROUNDS; r++) {
        int use_quiet = r % 2;
        for (int i = 0; i < OM; i++) msg[i] = r * 1000003 + me * 7919 + i;
        nvshmem_int_put(data, msg, OM, right);
        nvshmem_int_put(data + OM, msg, 100, right);
        if (use_quiet)
            nvshmem_quiet();
        else
            nvshmem_fence();
        nvshmem_int_p(flag, r, right);
        if (!wait_flag(flag, r)) {
            fail("%s ordering round %d: the flag from PE %d never came (20 s)", use_quiet ? "quiet" : "fence", r, left);
            break;
        }
        int bad = 0;
        for (int i = 0; i < OM && bad < 3; i++) {
            int want = r * 1000003 + left * 7919 + i;
            if (data[i] != want) {
                fail("%s ordering round %d: data[%d] from PE %d after its flag: expected %d got %d",
                     use_quiet ? "quiet" : "fence", r, i, left, want, data[i]);
                bad++;
            }
        }
        for (int i = 0; i < 100 && bad < 3; i++) {
            int want = r * 1000003 + left * 7919 + i;
            if (data[OM + i] != want) {
                fail("%s ordering round %d: data[OM + %d] from PE %d after its flag: expected %d got %d",
                     use_quiet ? "quiet" : "fence", r, i, left, want, data[OM + i]);
                bad++;
            }
        }
        checks++;
        nvshmem_barrier_all();
    }
    /* put_nbi then quiet: the source may be reused at once, the target holds the data. */
    for (int i = 0; i < OM; i++) msg[i] = -i - me;
    nvshmem_int_put_nbi(data, msg, OM, right);
    nvshmem_quiet();
    for (int i = 0; i < OM; i++) msg[i] = 0;
    nvshmem_barrier_all();
    for (int i = 0; i < OM; i += 997) CHECK_EQ(-i - left, data[i], "put_nbi + quiet from PE %d [%d]", left, i);
    nvshmem_barrier_all();
    free(msg);
    nvshmem_free(flag);
    nvshmem_free(data);
}

int main(void) {
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    CHECK_EQ(NVSHMEM_STATUS_IS_INITIALIZED, nvshmemx_init_status(), "nvshmemx_init_status after nvshmem_init");
    int major = 0, minor = 0;
    nvshmem_info_get_version(&major, &minor);
    CHECK_EQ(NVSHMEM_MAJOR_VERSION, major, "nvshmem_info_get_version major");
    CHECK_EQ(NVSHMEM_MINOR_VERSION, minor, "nvshmem_info_get_version minor");
    char name[NVSHMEM_MAX_NAME_LEN];
    nvshmem_info_get_name(name);
    CHECK(strlen(name) > 0 && strlen(name) < NVSHMEM_MAX_NAME_LEN, "nvshmem_info_get_name gives a name");
#define CALL_RMA(NAME, T, K) rma_##NAME();
    RMA_TYPES(CALL_RMA)
    sized();
    memory();
    ordering();
    return finish();
}
