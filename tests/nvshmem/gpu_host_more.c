/*
 * gpu_host_more.c -- the host routines on GPU memory beyond put, get and atomics (gpu_heap.c):
 * strided RMA (iput/iget in typed, sized and context forms, both directions, several strides
 * and element sizes, the local side in host or GPU memory), the multi-word waits and tests
 * (_all/_any/_some and their _vector forms on several types, with status masks, "not yet"
 * answers, and waits whose ivars are all masked), and the team collectives: collect with
 * unequal sizes (a member contributing nothing), fcollect, alltoall and alltoalls with strides,
 * broadcast from several roots, reduce (several operations and types, long double, in place,
 * over more than one host chunk) and reducescatter, with the buffers in GPU memory or one of
 * them in host memory, on the world and on split teams; members that disagree on a collective's
 * arguments all get an error; and two threads running collectives on two teams at once.
 *
 * Like gpu_heap.c it stands in for libnvshmem_device.a (it registers attach and the AMO
 * callback before main, emu_device_lib.h), runs under the emulated driver (tests/emucuda: "GPU
 * memory" is shared host memory, so the program fills and checks it directly), and is
 * launched by tests/tests/nvshmem.rs.
 *
 * Arguments: none, every check; "strided", "waits" or "coll", that part only ("threads": the
 * two threads' part of "coll"); "hang": PE 0
 * waits on GPU memory for a value that never comes (the launcher's timeout ends the job, its
 * hang report naming the wait); "unreached": a host routine that does not reach GPU memory (a
 * lock there), which must end the job saying so.
 *
 * A mismatch prints "PE n: <what>: expected X got Y" on stderr; a PE that saw none prints
 * "PE n: OK".
 */
#define _POSIX_C_SOURCE 200809L
#include <nvshmem.h>
#include <nvshmemx.h>
#include <oxshmem/device_state.h>
#include <shmem.h>

#include "emu_device_lib.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int attach(const void *device_state, const void *cuda) {
    (void)device_state, (void)cuda;
    return 0;
}

__attribute__((constructor)) static void register_device_library(void) {
    oxshmemi_register_device_library(OXSHMEM_DEVICE_ABI_VERSION, attach);
    oxshmemi_register_device_amo(emu_amo);
}

static int me = -1, npes = 0, left, right;
static long failures = 0;

static void check(const char *what, long long expected, long long got) {
    if (expected != got) {
        fprintf(stderr, "PE %d: %s: expected %lld got %lld\n", me, what, expected, got);
        failures++;
    }
}

static void nap(long us) {
    struct timespec t = { 0, us * 1000 };
    nanosleep(&t, NULL);
}

/* ---- Strided RMA ------------------------------------------------------------------------ */

typedef void (*strided_fn)(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe);

/* The typed and context forms, behind the sized forms' signature. */
#define STRIDED_AS_SIZED(name, call)                                                    \
    static void name(void *d, const void *s, ptrdiff_t a, ptrdiff_t b, size_t n, int pe) { \
        call;                                                                           \
    }
STRIDED_AS_SIZED(int_iput, nvshmem_int_iput(d, s, a, b, n, pe))
STRIDED_AS_SIZED(int_iget, nvshmem_int_iget(d, s, a, b, n, pe))
STRIDED_AS_SIZED(double_iput, nvshmem_double_iput(d, s, a, b, n, pe))
STRIDED_AS_SIZED(double_iget, nvshmem_double_iget(d, s, a, b, n, pe))
STRIDED_AS_SIZED(short_iput, nvshmem_short_iput(d, s, a, b, n, pe))
STRIDED_AS_SIZED(char_iput, shmem_char_iput(d, s, a, b, n, pe))
STRIDED_AS_SIZED(char_iget, shmem_char_iget(d, s, a, b, n, pe))
STRIDED_AS_SIZED(ctx_long_iput, shmem_ctx_long_iput(SHMEM_CTX_DEFAULT, d, s, a, b, n, pe))
STRIDED_AS_SIZED(ctx_long_iget, shmem_ctx_long_iget(SHMEM_CTX_DEFAULT, d, s, a, b, n, pe))

/* Byte j of element k of PE p's source. */
static unsigned char pattern(int p, size_t k, size_t j) { return (unsigned char)(p * 61 + k * 7 + j * 3 + 1); }

enum { REGION = 64 << 10 };
static unsigned char *gdst, *gsrc, *gback; /* GPU memory, REGION bytes each */
static unsigned char hsrc[REGION], hback[REGION];

/* put: my source's elements 0, sst, 2 sst, ... to elements 0, dst, ... of the right
 * neighbour's gdst; checked there, untouched elements included. get: those elements back from
 * the right neighbour at stride dst into elements 0, sst, ... of `back`: my source again. */
static void strided_case(const char *name, strided_fn put, strided_fn get, size_t es, ptrdiff_t dst,
                         ptrdiff_t sst, size_t n, int gpu_local) {
    unsigned char *src = gpu_local ? gsrc : hsrc, *back = gpu_local ? gback : hback;
    size_t span = n ? ((n - 1) * (size_t)(dst > sst ? dst : sst) + 1) * es : 0, region = span + 8 * es;
    if (region > REGION) {
        fprintf(stderr, "PE %d: %s: the case does not fit the test's region\n", me, name);
        failures++;
        return;
    }
    memset(gdst, 0xee, region);
    memset(back, 0xdd, region);
    for (size_t k = 0; k < region / es; k++)
        for (size_t j = 0; j < es; j++) src[k * es + j] = pattern(me, k, j);
    nvshmem_barrier_all();
    put(gdst, src, dst, sst, n, right);
    nvshmem_barrier_all();
    long bad = 0;
    for (size_t k = 0; k < region / es; k++) {
        int hit = k % (size_t)dst == 0 && k / (size_t)dst < n;
        for (size_t j = 0; j < es; j++) {
            unsigned char want = hit ? pattern(left, k / (size_t)dst * (size_t)sst, j) : 0xee;
            bad += gdst[k * es + j] != want;
        }
    }
    char what[160];
    snprintf(what, sizeof what, "%s put (%zu-byte elements, strides %td/%td, %zu elements, %s source): wrong bytes",
             name, es, dst, sst, n, gpu_local ? "GPU" : "host");
    check(what, 0, bad);
    get(back, gdst, sst, dst, n, right);
    bad = 0;
    for (size_t k = 0; k < region / es; k++) {
        int hit = k % (size_t)sst == 0 && k / (size_t)sst < n;
        for (size_t j = 0; j < es; j++) bad += back[k * es + j] != (hit ? pattern(me, k, j) : 0xdd);
    }
    snprintf(what, sizeof what,
             "%s get (%zu-byte elements, strides %td/%td, %zu elements, %s destination): wrong bytes", name, es,
             sst, dst, n, gpu_local ? "GPU" : "host");
    check(what, 0, bad);
    nvshmem_barrier_all();
}

static void strided(void) {
    gdst = (unsigned char *)nvshmem_malloc(REGION);
    gsrc = (unsigned char *)nvshmem_malloc(REGION);
    gback = (unsigned char *)nvshmem_malloc(REGION);
    for (int gpu = 0; gpu < 2; gpu++) {
        strided_case("nvshmem_int_iput/iget", int_iput, int_iget, 4, 1, 1, 10, gpu);
        strided_case("nvshmem_int_iput/iget", int_iput, int_iget, 4, 3, 2, 10, gpu);
        strided_case("nvshmem_int_iput/iget", int_iput, int_iget, 4, 2, 5, 9, gpu);
        strided_case("nvshmem_iput64/iget64", nvshmem_iput64, nvshmem_iget64, 8, 7, 1, 12, gpu);
        strided_case("nvshmem_iput64/iget64", nvshmem_iput64, nvshmem_iget64, 8, 1, 3, 12, gpu);
        strided_case("nvshmem_double_iput/iget", double_iput, double_iget, 8, 2, 2, 5, gpu);
        strided_case("nvshmem_short_iput/iget16", short_iput, nvshmem_iget16, 2, 5, 3, 11, gpu);
        strided_case("shmem_char_iput/iget", char_iput, char_iget, 1, 3, 7, 13, gpu);
        strided_case("nvshmem_iput8/iget8", nvshmem_iput8, nvshmem_iget8, 1, 1, 1, 100, gpu);
        strided_case("shmem_iput128/iget128", shmem_iput128, shmem_iget128, 16, 2, 3, 7, gpu);
        strided_case("nvshmem_iput128/iget128", nvshmem_iput128, nvshmem_iget128, 16, 9, 1, 4, gpu);
        strided_case("shmem_ctx_long_iput/iget", ctx_long_iput, ctx_long_iget, 8, 4, 1, 6, gpu);
        strided_case("shmem_iput32/iget32", shmem_iput32, shmem_iget32, 4, 1, 2, 1, gpu);
        strided_case("shmem_iput32/iget32", shmem_iput32, shmem_iget32, 4, 3, 3, 0, gpu);
        strided_case("nvshmem_int_iput/iget", int_iput, int_iget, 4, 3, 1, 3000, gpu);
    }
    nvshmem_free(gback);
    nvshmem_free(gsrc);
    nvshmem_free(gdst);
}

/* ---- Waits and tests -------------------------------------------------------------------- */

static void checku(const char *what, size_t expected, size_t got) {
    if (expected != got) {
        fprintf(stderr, "PE %d: %s: expected %zu got %zu\n", me, what, expected, got);
        failures++;
    }
}

/* One round: the PEs of parity `writer` update their right neighbour's ivars slowly (host
 * puts to GPU memory), while the others wait on their own. */
static void wait_round(int writer, int *iv, long *lv, uint64_t *uv, size_t *sv, long long *qv) {
    enum { K = 8 };
    size_t idx[K];
    int mask[K] = { 0 };
    if (me % 2 == writer) {
        for (int i = 0; i < K; i++) nap(300), nvshmem_int_p(&iv[i], 1, right);
        nap(2000), nvshmem_long_p(&lv[5], 7, right); /* masked below: must not end the wait */
        nap(2000), nvshmem_long_p(&lv[2], 7, right);
        nap(1000), nvshmem_uint64_p(&uv[6], 3, right);
        for (int i = 0; i < K; i++) nap(200), nvshmem_size_p(&sv[i], (size_t)i + 10, right);
        nap(1000), nvshmem_longlong_p(&qv[3], -4, right);
    } else {
        shmem_int_wait_until_all(iv, K, NULL, SHMEM_CMP_EQ, 1);
        for (int i = 0; i < K; i++) check("wait_until_all: element", 1, iv[i]);
        mask[5] = 1;
        checku("wait_until_any with a masked element", 2, shmem_long_wait_until_any(lv, K, mask, SHMEM_CMP_EQ, 7));
        mask[5] = 0;
        size_t k = shmem_uint64_wait_until_some(uv, K, idx, NULL, SHMEM_CMP_GE, 3);
        checku("wait_until_some: how many", 1, k);
        checku("wait_until_some: which", 6, idx[0]);
        size_t want[K];
        for (int i = 0; i < K; i++) want[i] = (size_t)i + 10;
        shmem_size_wait_until_all_vector(sv, K, NULL, SHMEM_CMP_EQ, want);
        for (int i = 0; i < K; i++) checku("wait_until_all_vector: element", want[i], sv[i]);
        long long lows[K];
        for (int i = 0; i < K; i++) lows[i] = i == 3 ? -3 : -100; /* only qv[3] = -4 is below its value */
        k = shmem_longlong_wait_until_some_vector(qv, K, idx, NULL, SHMEM_CMP_LT, lows);
        checku("wait_until_some_vector: how many", 1, k);
        checku("wait_until_some_vector: which", 3, idx[0]);
    }
    nvshmem_barrier_all();
}

static void waits(void) {
    enum { K = 8 };
    int *iv = (int *)nvshmem_calloc(K, sizeof(int));
    long *lv = (long *)nvshmem_calloc(K, sizeof(long));
    uint64_t *uv = (uint64_t *)nvshmem_calloc(K, sizeof(uint64_t));
    size_t *sv = (size_t *)nvshmem_calloc(K, sizeof(size_t));
    long long *qv = (long long *)nvshmem_calloc(K, sizeof(long long));
    size_t idx[K];
    int all_masked[K], vals[K], zeros[K] = { 0 };
    for (int i = 0; i < K; i++) all_masked[i] = 1, vals[i] = i;
    nvshmem_barrier_all();

    /* Nothing yet: the tests say so at once, and waits on masked elements only return. */
    check("test_all, not yet", 0, shmem_int_test_all(iv, K, NULL, SHMEM_CMP_EQ, 1));
    checku("test_any, not yet", SIZE_MAX, shmem_int_test_any(iv, K, NULL, SHMEM_CMP_EQ, 1));
    checku("test_some, not yet", 0, shmem_int_test_some(iv, K, idx, NULL, SHMEM_CMP_EQ, 1));
    check("test_all_vector, not yet", 0, shmem_int_test_all_vector(iv, K, NULL, SHMEM_CMP_EQ, vals));
    checku("test_any_vector, not yet", SIZE_MAX, shmem_int_test_any_vector(iv, K, NULL, SHMEM_CMP_GT, vals));
    checku("test_some_vector, not yet", 0, shmem_int_test_some_vector(iv, K, idx, NULL, SHMEM_CMP_NE, zeros));
    check("test_all on masked elements", 1, shmem_int_test_all(iv, K, all_masked, SHMEM_CMP_EQ, 1));
    checku("wait_until_any, every element masked", SIZE_MAX,
           shmem_int_wait_until_any(iv, K, all_masked, SHMEM_CMP_EQ, 1));
    checku("wait_until_some, every element masked", 0,
           shmem_int_wait_until_some(iv, K, idx, all_masked, SHMEM_CMP_EQ, 1));
    shmem_int_wait_until_all(iv, K, all_masked, SHMEM_CMP_EQ, 1);
    check("test_all of zeros", 1, shmem_longlong_test_all(qv, K, NULL, SHMEM_CMP_EQ, 0));
    checku("test_any_vector, element 0", 0, shmem_int_test_any_vector(iv, K, NULL, SHMEM_CMP_LE, vals));
    nvshmem_barrier_all();

    for (int writer = 0; writer < 2; writer++) {
        wait_round(writer, iv, lv, uv, sv, qv);
        /* Both parities read their own words once the round is over. */
        if (me % 2 != writer) {
            check("test_all after the round", 1, shmem_int_test_all(iv, K, NULL, SHMEM_CMP_EQ, 1));
            size_t a = shmem_int_test_any(iv, K, NULL, SHMEM_CMP_EQ, 1);
            size_t b = shmem_int_test_any(iv, K, NULL, SHMEM_CMP_EQ, 1);
            check("test_any moves on to the next element", 1, a != b && a < K && b < K);
            checku("test_some after the round", 2, shmem_long_test_some(lv, K, idx, NULL, SHMEM_CMP_EQ, 7));
            checku("test_some: first index", 2, idx[0]);
            checku("test_some: second index", 5, idx[1]);
            long want[K];
            for (int i = 0; i < K; i++) want[i] = lv[i];
            check("test_all_vector after the round", 1, shmem_long_test_all_vector(lv, K, NULL, SHMEM_CMP_EQ, want));
            check("uint64 test_all with GE", 0, shmem_uint64_test_all(uv, K, NULL, SHMEM_CMP_GE, 3));
        }
        nvshmem_barrier_all();
        memset(iv, 0, K * sizeof *iv), memset(lv, 0, K * sizeof *lv), memset(uv, 0, K * sizeof *uv);
        memset(sv, 0, K * sizeof *sv), memset(qv, 0, K * sizeof *qv);
        nvshmem_barrier_all();
    }
    nvshmem_free(qv), nvshmem_free(sv), nvshmem_free(uv), nvshmem_free(lv), nvshmem_free(iv);
}

/* ---- Collectives ------------------------------------------------------------------------ */

/* The members of a team, in world PEs, and this PE's index (-1: not a member). */
typedef struct {
    int n, me, pes[64];
} members_t;

static members_t strided_members(int start, int stride, int size) {
    members_t m = { size, -1, { 0 } };
    for (int i = 0; i < size; i++) {
        m.pes[i] = start + i * stride;
        if (m.pes[i] == me) m.me = i;
    }
    return m;
}

/* collect with unequal sizes: member i contributes size_of(i) ints, i * 100000 + k. */
static size_t size_of(int i) { return i == 1 ? 0 : (size_t)(1000 * (i + 1) + 17); }

static void collect_case(const char *what, shmem_team_t team, members_t m, int *dest, int *src) {
    size_t off = 0, total = 0;
    for (int i = 0; i < m.n; i++) total += size_of(i);
    for (size_t k = 0; k < total + 16; k++) dest[k] = -1;
    for (size_t k = 0; k < size_of(m.me); k++) src[k] = m.me * 100000 + (int)k;
    check(what, 0, shmem_int_collect(team, dest, src, size_of(m.me)));
    long bad = 0;
    for (int i = 0; i < m.n; i++) {
        for (size_t k = 0; k < size_of(i); k++) bad += dest[off + k] != i * 100000 + (int)k;
        off += size_of(i);
    }
    for (size_t k = total; k < total + 16; k++) bad += dest[k] != -1;
    char w[128];
    snprintf(w, sizeof w, "%s: wrong elements", what);
    check(w, 0, bad);
}

/* alltoalls: block j of member i's source (E elements sst apart) holds i * 10000 + j * 100 + k. */
#define ALLTOALLS_CASE(T, NAME, team, m, dest, src, dst, sst, E)                                       \
    do {                                                                                               \
        size_t dext = ((size_t)(m).n * (E) - 1) * (dst) + 1, sext = ((size_t)(m).n * (E) - 1) * (sst) + 1; \
        for (size_t k = 0; k < dext; k++) (dest)[k] = (T)-1;                                           \
        for (size_t k = 0; k < sext; k++) (src)[k] = (T)-2;                                            \
        for (int j = 0; j < (m).n; j++)                                                                \
            for (size_t k = 0; k < (E); k++) (src)[(j * (E) + k) * (sst)] = (T)((m).me * 10000 + j * 100 + (int)k); \
        check(#NAME, 0, NAME(team, dest, src, dst, sst, E));                                           \
        long bad_ = 0;                                                                                 \
        for (size_t k = 0; k < dext; k++) {                                                            \
            size_t e = k / (dst), i = e / (E);                                                         \
            T want = k % (dst) == 0 ? (T)((int)i * 10000 + (m).me * 100 + (int)(e % (E))) : (T)-1;     \
            bad_ += (dest)[k] != want;                                                                 \
        }                                                                                              \
        check(#NAME " (strides " #dst "/" #sst "): wrong elements", 0, bad_);                          \
    } while (0)

/* What every team collective does on the team `nv` (NVSHMEM's handle) / `sh` (OpenSHMEM's),
 * of members `m`, with buffers in GPU memory (g*) or host memory (h*). */
static void team_collectives(const char *tname, nvshmem_team_t nv, shmem_team_t sh, members_t m, int *g1, int *g2,
                             int *h1, int *h2) {
    char w[160];
    /* collect: GPU/GPU, GPU dest and host source, host dest and GPU source. */
    snprintf(w, sizeof w, "shmem_int_collect on %s, GPU to GPU", tname);
    collect_case(w, sh, m, g1, g2);
    snprintf(w, sizeof w, "shmem_int_collect on %s, host to GPU", tname);
    collect_case(w, sh, m, g1, h2);
    snprintf(w, sizeof w, "shmem_int_collect on %s, GPU to host", tname);
    collect_case(w, sh, m, h1, g2);

    /* fcollect. */
    enum { F = 3001 };
    for (int k = 0; k < F; k++) g2[k] = m.me * 7 + k;
    check("nvshmem_int_fcollect", 0, nvshmem_int_fcollect(nv, g1, g2, F));
    long bad = 0;
    for (int i = 0; i < m.n; i++)
        for (int k = 0; k < F; k++) bad += g1[i * F + k] != i * 7 + k;
    snprintf(w, sizeof w, "nvshmem_int_fcollect on %s: wrong elements", tname);
    check(w, 0, bad);

    /* alltoall, then alltoalls with strides, in each way. */
    enum { A = 1500 };
    for (int j = 0; j < m.n; j++)
        for (int k = 0; k < A; k++) g2[j * A + k] = m.me * 1000000 + j * 1000 + k;
    check("nvshmem_int_alltoall", 0, nvshmem_int_alltoall(nv, g1, g2, A));
    bad = 0;
    for (int i = 0; i < m.n; i++)
        for (int k = 0; k < A; k++) bad += g1[i * A + k] != i * 1000000 + m.me * 1000 + k;
    snprintf(w, sizeof w, "nvshmem_int_alltoall on %s: wrong elements", tname);
    check(w, 0, bad);
    ALLTOALLS_CASE(int, shmem_int_alltoalls, sh, m, g1, g2, 2, 3, 37);
    ALLTOALLS_CASE(int, shmem_int_alltoalls, sh, m, h1, g2, 3, 1, 20);
    ALLTOALLS_CASE(int, shmem_int_alltoalls, sh, m, g1, h2, 1, 4, 25);
    ALLTOALLS_CASE(double, shmem_double_alltoalls, sh, m, (double *)g1, (double *)g2, 5, 2, 9);
    ALLTOALLS_CASE(long, shmem_long_alltoalls, sh, m, (long *)g1, (long *)g2, 1, 1, 11);

    /* broadcast: from the last member (GPU to GPU), from member 0 with a host source, into
     * host memory from a GPU source. */
    enum { B = 5000 };
    for (int root = 0; root < m.n; root += m.n > 1 ? m.n - 1 : 1) {
        for (int k = 0; k < B; k++) g1[k] = g1[B + k] = h1[k] = -1, g2[k] = m.me * 3 + k, h2[k] = m.me * 5 + k;
        check("nvshmem_int_broadcast", 0, nvshmem_int_broadcast(nv, g1, g2, B, root));
        check("shmem_int_broadcast, host to GPU", 0, shmem_int_broadcast(sh, g1 + B, h2, B, root));
        check("shmem_int_broadcast, GPU to host", 0, shmem_int_broadcast(sh, h1, g2, B, root));
        bad = 0;
        for (int k = 0; k < B; k++) bad += g1[k] != root * 3 + k || g1[B + k] != root * 5 + k || h1[k] != root * 3 + k;
        snprintf(w, sizeof w, "broadcasts on %s from member %d: wrong elements", tname, root);
        check(w, 0, bad);
    }

    /* Reductions: a sum over more than one host chunk per member, in place too; max of
     * doubles; xor; a product; long double; one buffer in host memory; fewer elements than
     * members. */
    const size_t R = 300000; /* more than 65536 ints (a host chunk) per member */
    for (size_t k = 0; k < R; k++) g2[k] = (int)(k % 1000) + m.me, g1[k] = -1;
    check("nvshmem_int_sum_reduce", 0, nvshmem_int_sum_reduce(nv, g1, g2, R));
    bad = 0;
    for (size_t k = 0; k < R; k++) bad += g1[k] != m.n * (int)(k % 1000) + m.n * (m.n - 1) / 2;
    snprintf(w, sizeof w, "nvshmem_int_sum_reduce on %s: wrong elements", tname);
    check(w, 0, bad);
    check("nvshmem_int_sum_reduce in place", 0, nvshmem_int_sum_reduce(nv, g2, g2, R));
    bad = 0;
    for (size_t k = 0; k < R; k++) bad += g2[k] != m.n * (int)(k % 1000) + m.n * (m.n - 1) / 2;
    snprintf(w, sizeof w, "nvshmem_int_sum_reduce in place on %s: wrong elements", tname);
    check(w, 0, bad);

    double *d1 = (double *)g1, *d2 = (double *)g2;
    for (int k = 0; k < 999; k++) d2[k] = (k % 2 ? 1 : -1) * (double)(m.me * 1000 + k);
    check("nvshmem_double_max_reduce", 0, nvshmem_double_max_reduce(nv, d1, d2, 999));
    bad = 0;
    for (int k = 0; k < 999; k++) bad += d1[k] != (k % 2 ? (double)((m.n - 1) * 1000 + k) : -(double)k);
    check("nvshmem_double_max_reduce: wrong elements", 0, bad);

    unsigned *u1 = (unsigned *)g1, *u2 = (unsigned *)h2;
    for (int k = 0; k < 7; k++) u2[k] = 1u << (m.me + k);
    check("shmem_uint_xor_reduce, host to GPU", 0, shmem_uint_xor_reduce(sh, u1, u2, 7));
    for (int k = 0; k < 7; k++) check("shmem_uint_xor_reduce", (long long)(((1u << m.n) - 1) << k), u1[k]);

    long *l2 = (long *)g2, *l1 = (long *)h1;
    for (int k = 0; k < 3; k++) l2[k] = m.me + 2 + k;
    check("nvshmem_long_prod_reduce, GPU to host", 0, nvshmem_long_prod_reduce(nv, l1, l2, 3));
    for (int k = 0; k < 3; k++) {
        long p = 1;
        for (int i = 0; i < m.n; i++) p *= i + 2 + k;
        check("nvshmem_long_prod_reduce", p, l1[k]);
    }

    long double *ld1 = (long double *)g1, *ld2 = (long double *)g2;
    for (int k = 0; k < 100; k++) ld2[k] = (long double)m.me + (long double)k / 4;
    check("shmem_longdouble_sum_reduce", 0, shmem_longdouble_sum_reduce(sh, ld1, ld2, 100));
    bad = 0;
    for (int k = 0; k < 100; k++) bad += ld1[k] != (long double)(m.n * (m.n - 1) / 2) + (long double)m.n * k / 4;
    check("shmem_longdouble_sum_reduce: wrong elements", 0, bad);

    /* reducescatter: member i gets block i of the sum of the members' sources. */
    enum { NR = 2000 };
    for (int k = 0; k < NR * m.n; k++) g2[k] = m.me + k;
    check("nvshmem_int_sum_reducescatter", 0, nvshmem_int_sum_reducescatter(nv, g1, g2, NR));
    bad = 0;
    for (int k = 0; k < NR; k++) bad += g1[k] != m.n * (m.me * NR + k) + m.n * (m.n - 1) / 2;
    snprintf(w, sizeof w, "nvshmem_int_sum_reducescatter on %s: wrong elements", tname);
    check(w, 0, bad);
}

/* Collectives on one team from one thread, many times: the two threads of a PE use two teams. */
typedef struct {
    nvshmem_team_t team;
    int *dest, *src, first;
    long bad;
} job_t;

static void *run_job(void *arg) {
    job_t *j = (job_t *)arg;
    enum { C = 500 };
    if (!j->first) nap(2000); /* the other thread goes first: on odd PEs the other team */
    for (int it = 0; it < 40; it++) {
        for (int k = 0; k < C; k++) j->src[k] = me * 1000 + k + it;
        if (nvshmem_int_fcollect(j->team, j->dest, j->src, C) != 0) j->bad++;
        for (int p = 0; p < npes; p++)
            for (int k = 0; k < C; k++) j->bad += j->dest[p * C + k] != p * 1000 + k + it;
        if (nvshmem_int_sum_reduce(j->team, j->dest, j->src, C) != 0) j->bad++;
        for (int k = 0; k < C; k++) j->bad += j->dest[k] != 1000 * npes * (npes - 1) / 2 + npes * (k + it);
    }
    return NULL;
}

static void two_threads(void) {
    nvshmem_team_t ta, tb;
    nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &ta);
    nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &tb);
    /* nvshmem_malloc is collective: one call at a time, in one order. */
    int *ad = (int *)nvshmem_malloc(npes * 500 * sizeof(int)), *as = (int *)nvshmem_malloc(500 * sizeof(int));
    int *bd = (int *)nvshmem_malloc(npes * 500 * sizeof(int)), *bs = (int *)nvshmem_malloc(500 * sizeof(int));
    job_t a = { ta, ad, as, me % 2 == 0, 0 }, b = { tb, bd, bs, me % 2 == 1, 0 };
    pthread_t x, y;
    pthread_create(&x, NULL, run_job, &a);
    pthread_create(&y, NULL, run_job, &b);
    pthread_join(x, NULL);
    pthread_join(y, NULL);
    check("collectives on two teams from two threads: wrong elements on the first", 0, a.bad);
    check("collectives on two teams from two threads: wrong elements on the second", 0, b.bad);
    nvshmem_free(b.src), nvshmem_free(b.dest), nvshmem_free(a.src), nvshmem_free(a.dest);
    nvshmem_team_destroy(tb);
    nvshmem_team_destroy(ta);
}

static void collectives(void) {
    const size_t G = 2 << 20; /* bytes of each buffer */
    int *g1 = (int *)nvshmem_malloc(G), *g2 = (int *)nvshmem_malloc(G);
    int *h1 = (int *)shmem_malloc(G), *h2 = (int *)shmem_malloc(G);
    team_collectives("the world", NVSHMEM_TEAM_WORLD, SHMEM_TEAM_WORLD, strided_members(0, 1, npes), g1, g2, h1, h2);

    /* Split teams: the odd PEs (NVSHMEM's and OpenSHMEM's split alike). */
    nvshmem_team_t odd_nv;
    shmem_team_t odd_sh;
    nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd_nv);
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd_sh);
    if (me % 2 == 1) team_collectives("the odd PEs", odd_nv, odd_sh, strided_members(1, 2, npes / 2), g1, g2, h1, h2);
    nvshmem_barrier_all();

    /* Members that disagree on the arguments: every one of them gets an error. */
    check("fcollect with different counts fails everywhere", 1,
          nvshmem_int_fcollect(NVSHMEM_TEAM_WORLD, g1, g2, me == 0 ? 3 : 4) != 0);
    nvshmem_barrier_all();

    two_threads();
    if (me % 2 == 1) {
        nvshmem_team_destroy(odd_nv);
        shmem_team_destroy(odd_sh);
    }
    shmem_free(h2), shmem_free(h1), nvshmem_free(g2), nvshmem_free(g1);
}

int main(int argc, char **argv) {
    int provided = -1;
    nvshmem_init_thread(NVSHMEM_THREAD_MULTIPLE, &provided);
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    right = (me + 1) % npes, left = (me + npes - 1) % npes;
    check("thread level", NVSHMEM_THREAD_MULTIPLE, provided);
    const char *what = argc > 1 ? argv[1] : "all";

    if (strcmp(what, "hang") == 0) {
        int *iv = (int *)nvshmem_calloc(4, sizeof(int));
        if (me == 0) shmem_int_wait_until_all(iv, 4, NULL, SHMEM_CMP_EQ, 99); /* never: the launcher ends it */
        nvshmem_barrier_all();
        fprintf(stderr, "PE %d: the wait that never ends returned\n", me);
        return 1;
    }
    if (strcmp(what, "unreached") == 0) {
        long *lock = (long *)nvshmem_calloc(1, sizeof(long));
        shmem_set_lock(lock); /* a lock in GPU memory: must end the job, saying why */
        fprintf(stderr, "PE %d: a lock in GPU memory was taken\n", me);
        return 1;
    }
    int all = strcmp(what, "all") == 0;
    if (all || strcmp(what, "strided") == 0) strided();
    if (all || strcmp(what, "waits") == 0) waits();
    if (all || strcmp(what, "coll") == 0) collectives();
    if (strcmp(what, "threads") == 0) two_threads();

    nvshmem_finalize();
    if (failures == 0) printf("PE %d: OK\n", me);
    return failures != 0;
}
