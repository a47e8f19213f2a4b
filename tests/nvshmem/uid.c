/*
 * uid.c -- initialization with NVSHMEMX_INIT_WITH_UNIQUEID, with processes started by anything
 * (tests/src/bin/uid-launch.rs here) and the id passed through a file:
 *
 *   rank and nranks  from OXS_TEST_RANK / OXS_TEST_NRANKS (or, under a PMI launcher such as
 *                    oshrun, from PMI_RANK / PMI_SIZE);
 *   the id           rank 0's nvshmemx_get_uniqueid, written to the file OXS_TEST_ID_FILE (to a
 *                    temporary name, then renamed); the others wait for the file (at most
 *                    OXS_TEST_ID_WAIT seconds, 30 by default) and read it;
 *   OXS_TEST_LATE_MS the other ranks sleep this long before their init (so that a test can do
 *                    something first).
 *
 * Then RMA around the ring, a reduction, an fcollect and a barrier, checking that
 * nvshmem_my_pe() is the rank. "PE n: <what>: expected X got Y" on stderr for a mismatch,
 * "PE n: OK" at the end.
 *
 * Bad input (argv[1]); each must end the job with the library's error naming
 * nvshmemx_init_attr, and no process may hang:
 *   truncated  the other ranks use an id whose bytes past the 64th are zero (a cut file)
 *   zeroed     the other ranks use an all-zero id
 *   corrupt    the other ranks use an id with one byte of its key flipped
 *   badrank    the last rank says it is rank nranks (outside 0..nranks)
 *   negrank    the last rank says it is rank -1
 *   nranks     the last rank says the job has nranks + 1 ranks
 *   twice      every rank initializes, then calls nvshmemx_init_attr again (same id)
 *   twicenew   every rank initializes, then calls nvshmemx_init_attr again with a fresh id of
 *              its own (as rank 0 of nranks): it must fail at once, not after a rendezvous
 *   rootdies   rank 0 writes the id and exits without initializing: the others time out
 *              (OXSHMEM_TIMEOUT)
 * On a failed init the program prints "uid: rank R: init returned C" (without the routine's
 * name, so that a test sees the library's own message) and exits with status 2.
 */
#define _POSIX_C_SOURCE 200809L
#include <nvshmem.h>
#include <nvshmemx.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* ---------------------------------------------------------------- */

static int env_int(const char *name, const char *fallback, int dflt) {
    const char *v = getenv(name);
    if (!v && fallback) v = getenv(fallback);
    if (!v || !*v) return dflt;
    return atoi(v);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Prints "uid: <message>" and exits with `code`. The line goes out in one write: the ranks and
 * the launcher share one standard error, where a line written in pieces can be cut by another. */
static void die(int code, const char *fmt, ...) {
    char line[1024];
    int k = snprintf(line, sizeof line, "uid: ");
    va_list ap;
    va_start(ap, fmt);
    k += vsnprintf(line + k, sizeof line - (size_t)k - 1, fmt, ap);
    va_end(ap);
    if (k > (int)sizeof line - 2) k = (int)sizeof line - 2;
    line[k++] = '\n';
    ssize_t w = write(2, line, (size_t)k);
    (void)w;
    exit(code);
}

static void write_id(const char *path, const nvshmemx_uniqueid_t *id) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) die(9, "cannot create %s: %s", tmp, strerror(errno));
    if (fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0) die(9, "cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die(9, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
}

static void read_id(const char *path, nvshmemx_uniqueid_t *id, int rank) {
    double deadline = now_s() + env_int("OXS_TEST_ID_WAIT", NULL, 30);
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t n = fread(id, 1, sizeof *id, f);
            fclose(f);
            if (n == sizeof *id) return;
            die(9, "rank %d: %s holds %zu bytes, not %zu", rank, path, n, sizeof *id);
        }
        if (now_s() > deadline) die(9, "rank %d: no id in %s after %d s", rank, path, env_int("OXS_TEST_ID_WAIT", NULL, 30));
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ok";
    int rank = env_int("OXS_TEST_RANK", "PMI_RANK", -1);
    int nranks = env_int("OXS_TEST_NRANKS", "PMI_SIZE", -1);
    const char *path = getenv("OXS_TEST_ID_FILE");
    if (rank < 0 || nranks <= 0 || !path) die(9, "set OXS_TEST_RANK, OXS_TEST_NRANKS and OXS_TEST_ID_FILE");
    static const char *modes[] = {"ok", "truncated", "zeroed", "corrupt", "badrank", "negrank", "nranks", "twice", "twicenew", "rootdies"};
    int known = 0;
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) known |= strcmp(mode, modes[i]) == 0;
    if (!known) die(9, "unknown mode %s", mode);

    CHECK_EQ(NVSHMEM_STATUS_NOT_INITIALIZED, nvshmemx_init_status(), "nvshmemx_init_status before the init");
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) {
        int rc = nvshmemx_get_uniqueid(&id);
        if (rc != 0) die(2, "rank 0: nvshmemx_get_uniqueid returned %d", rc);
        write_id(path, &id);
        if (strcmp(mode, "rootdies") == 0) {
            fprintf(stderr, "uid: rank 0 wrote the id and leaves\n");
            fflush(stderr);
            return 0;
        }
    } else {
        read_id(path, &id, rank);
        int late = env_int("OXS_TEST_LATE_MS", NULL, 0);
        if (late > 0) {
            struct timespec t = {late / 1000, (long)(late % 1000) * 1000000L};
            nanosleep(&t, NULL);
        }
        if (strcmp(mode, "truncated") == 0) memset(id.internal + 60, 0, sizeof id.internal - 60);
        if (strcmp(mode, "zeroed") == 0) memset(&id, 0, sizeof id);
        if (strcmp(mode, "corrupt") == 0) id.internal[40] ^= 0x55;
    }
    int myrank = rank, mynranks = nranks;
    if (rank == nranks - 1 && rank > 0) {
        if (strcmp(mode, "badrank") == 0) myrank = nranks;
        if (strcmp(mode, "negrank") == 0) myrank = -1;
        if (strcmp(mode, "nranks") == 0) mynranks = nranks + 1;
    }

    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    int rc = nvshmemx_set_attr_uniqueid_args(myrank, mynranks, &id, &attr);
    if (rc != 0) die(2, "rank %d: set_attr_uniqueid_args returned %d", rank, rc);
    rc = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    if (rc != 0) die(2, "rank %d: init returned %d", rank, rc);

    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    CHECK_EQ(rank, me, "nvshmem_my_pe() after the unique-id init of rank %d", rank);
    CHECK_EQ(nranks, npes, "nvshmem_n_pes() after the unique-id init");
    CHECK_EQ(NVSHMEM_STATUS_IS_INITIALIZED, nvshmemx_init_status(), "nvshmemx_init_status after the init");

    if (strcmp(mode, "twice") == 0) {
        nvshmem_barrier_all();
        nvshmemx_init_attr_t again = NVSHMEMX_INIT_ATTR_INITIALIZER;
        nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &again);
        rc = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &again);
        if (rc != 0) die(2, "rank %d: the second init returned %d", rank, rc);
        fail("a second nvshmemx_init_attr: expected an error got %d", rc);
        return 1;
    }
    if (strcmp(mode, "twicenew") == 0) {
        nvshmem_barrier_all();
        nvshmemx_uniqueid_t fresh = NVSHMEMX_UNIQUEID_INITIALIZER;
        rc = nvshmemx_get_uniqueid(&fresh);
        if (rc != 0) die(2, "rank %d: a second get_uniqueid returned %d", rank, rc);
        nvshmemx_init_attr_t again = NVSHMEMX_INIT_ATTR_INITIALIZER;
        nvshmemx_set_attr_uniqueid_args(0, nranks, &fresh, &again);
        double t0 = now_s();
        rc = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &again);
        if (rc != 0) die(2, "rank %d: the second init returned %d after %.1f s", rank, rc, now_s() - t0);
        fail("a second nvshmemx_init_attr: expected an error got %d", rc);
        return 1;
    }

    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    int *ring = (int *)nvshmem_malloc(64 * sizeof(int));
    long *src = (long *)nvshmem_malloc(4 * sizeof(long));
    long *dst = (long *)nvshmem_malloc((size_t)npes * 4 * sizeof(long));
    int vals[64];
    for (int i = 0; i < 64; i++) vals[i] = me * 100 + i;
    nvshmem_barrier_all();
    nvshmem_int_put(ring, vals, 64, right);
    nvshmem_barrier_all();
    for (int i = 0; i < 64; i++) CHECK_EQ(left * 100 + i, ring[i], "nvshmem_int_put from PE %d [%d]", left, i);
    CHECK_EQ(right * 100 + 5, nvshmem_int_g(ring + 5, (right + 1) % npes), "nvshmem_int_g");
    for (int i = 0; i < 4; i++) src[i] = (long)(me + 1) * (i + 1);
    CHECK_EQ(0, nvshmem_long_sum_reduce(NVSHMEM_TEAM_WORLD, dst, src, 4), "nvshmem_long_sum_reduce return");
    for (int i = 0; i < 4; i++)
        CHECK_EQ((long)npes * (npes + 1) / 2 * (i + 1), dst[i], "nvshmem_long_sum_reduce [%d]", i);
    nvshmem_barrier_all();
    CHECK_EQ(0, nvshmem_long_fcollect(NVSHMEM_TEAM_WORLD, dst, src, 4), "nvshmem_long_fcollect return");
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < 4; i++) CHECK_EQ((long)(p + 1) * (i + 1), dst[p * 4 + i], "nvshmem_long_fcollect [%d]", p * 4 + i);
    nvshmem_barrier_all();
    nvshmem_free(dst);
    nvshmem_free(src);
    nvshmem_free(ring);
    nvshmem_barrier_all();
    nvshmem_finalize();
    CHECK_EQ(NVSHMEM_STATUS_NOT_INITIALIZED, nvshmemx_init_status(), "nvshmemx_init_status after nvshmem_finalize");
    if (failures == 0)
        printf("PE %d: OK\n", me);
    else
        fprintf(stderr, "PE %d: FAILED (%ld of %ld checks)\n", me, failures, checks);
    fflush(stdout);
    fflush(stderr);
    return failures == 0 ? 0 : 1;
}
