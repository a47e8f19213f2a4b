/* Issue 32, "Hardening, round 2": C programs of bindings/c/tests/hardening.rs, one case per run
 * (argv[1]). Each prints "PE <n> <case> ok" when it got to its end; a case that must end the
 * job with the library's error says so in the test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvshmem.h>
#include <shmem.h>
#include <shmemx.h>

/* The legacy Fortran allocation routines, called the way gfortran passes arguments. */
extern void shpalloc_(void **addr, const int *length, int *errcode, const int *abort_);
extern void shpdeallc_(void **addr, int *errcode, const int *abort_);

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "FAIL PE %d line %d: ", shmem_my_pe(), __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            shmem_global_exit(1);                                             \
        }                                                                     \
    } while (0)

/* Item 14: the C11 generic blocked strided RMA of shmemx.h (and its OpenSHMEM 1.6 names). */
static int ibput(void) {
    int me = shmem_my_pe(), n = shmem_n_pes(), peer = (me + 1) % n, from = (me + n - 1) % n;
    int *di = shmem_calloc(8, sizeof(int));
    double *dd = shmem_calloc(8, sizeof(double));
    int si[8];
    double sd[8];
    for (int i = 0; i < 8; i++) {
        si[i] = 100 * me + i;
        sd[i] = 0.5 + me + i;
    }
    /* Blocks of 2 elements, source stride 4, destination stride 2: elements 0,1 and 4,5. */
    shmemx_ibput(di, si, 2, 4, 2, 2, peer);
    shmem_ibput(SHMEM_CTX_DEFAULT, dd, sd, 2, 4, 2, 2, peer);
    shmem_barrier_all();
    int want_i[4] = {100 * from, 100 * from + 1, 100 * from + 4, 100 * from + 5};
    for (int i = 0; i < 4; i++) {
        CHECK(di[i] == want_i[i], "shmemx_ibput: element %d is %d, expected %d", i, di[i], want_i[i]);
        double w = 0.5 + from + (i < 2 ? i : i + 2);
        CHECK(dd[i] == w, "shmem_ibput: element %d is %g, expected %g", i, dd[i], w);
    }
    int gi[4];
    double gd[4];
    shmemx_ibget(gi, di, 2, 2, 2, 2, peer);
    shmem_ibget(SHMEM_CTX_DEFAULT, gd, dd, 2, 2, 2, 2, peer);
    for (int i = 0; i < 4; i++) {
        CHECK(gi[i] == 100 * me + (i < 2 ? i : i + 2), "shmemx_ibget: element %d is %d", i, gi[i]);
        CHECK(gd[i] == 0.5 + me + (i < 2 ? i : i + 2), "shmem_ibget: element %d is %g", i, gd[i]);
    }
    shmem_barrier_all();
    shmem_free(di);
    shmem_free(dd);
    return 0;
}

/* Item 13: SHPALLOC and SHPDEALLC with abort = 0 return their code and print nothing. */
static int shpalloc(void) {
    void *p = NULL;
    int zero = 0, words = 16, code = 99, no_abort = 0;
    shpalloc_(&p, &zero, &code, &no_abort);
    CHECK(code == -1, "SHPALLOC of 0 words: errcode %d, expected -1", code);
    shpalloc_(&p, &words, &code, &no_abort);
    CHECK(code == 0 && p != NULL, "SHPALLOC of 16 words: errcode %d", code);
    void *stack = &code;
    shpdeallc_(&stack, &code, &no_abort);
    CHECK(code == -1, "SHPDEALLC of a stack address: errcode %d, expected -1", code);
    shpdeallc_(&p, &code, &no_abort);
    CHECK(code == 0, "SHPDEALLC: errcode %d", code);
    return 0;
}

/* Item 8: contexts and teams are reusable past 16,384 creations; a stale handle is refused
 * even after its slot holds a new record. argv[2]: "ctx" or "team"; argv[3]: how many;
 * argv[4], if "stale": one more is made and kept, in the first one's slot, and the first
 * handle is used (the job must end with the library's error). A handle is its slot's address
 * with a generation in the top 16 bits (bindings/c/README.md). */
#define SAME_SLOT(a, b) ((((uintptr_t)(a)) & ((UINT64_C(1) << 48) - 1)) == (((uintptr_t)(b)) & ((UINT64_C(1) << 48) - 1)))
static int churn(int argc, char **argv) {
    int n = argc > 3 ? atoi(argv[3]) : 20000;
    int stale = argc > 4 && strcmp(argv[4], "stale") == 0;
    int me = shmem_my_pe(), npes = shmem_n_pes();
    if (strcmp(argv[2], "ctx") == 0) {
        shmem_ctx_t first = SHMEM_CTX_INVALID;
        for (int i = 0; i < n; i++) {
            shmem_ctx_t c;
            CHECK(shmem_ctx_create(0, &c) == 0, "shmem_ctx_create number %d failed", i + 1);
            shmem_ctx_quiet(c);
            if (i == 0) first = c;
            shmem_ctx_destroy(c);
        }
        if (stale) {
            /* One more, kept: it takes the oldest destroyed slot, the first context's (the
             * library reuses a slot after 1,024 other destroys: argv[3] is 1025). */
            shmem_ctx_t live;
            CHECK(shmem_ctx_create(0, &live) == 0, "shmem_ctx_create after the loop failed");
            CHECK(live != first && SAME_SLOT(live, first), "the first context's slot was not reused");
            printf("PE %d using a destroyed context whose slot holds a live one\n", me);
            fflush(stdout);
            shmem_ctx_quiet(first);
            printf("PE %d still running\n", me);
            return 1;
        }
    } else {
        shmem_team_t first = SHMEM_TEAM_INVALID;
        for (int i = 0; i < n; i++) {
            shmem_team_t t;
            CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0,
                  "shmem_team_split_strided number %d failed", i + 1);
            CHECK(shmem_team_my_pe(t) == me, "team number %d: my_pe %d", i + 1, shmem_team_my_pe(t));
            if (i == 0) first = t;
            shmem_team_destroy(t);
        }
        if (stale) {
            shmem_team_t live;
            CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &live) == 0,
                  "shmem_team_split_strided after the loop failed");
            CHECK(live != first && SAME_SLOT(live, first), "the first team's slot was not reused");
            printf("PE %d using a destroyed team whose slot holds a live one\n", me);
            fflush(stdout);
            shmem_team_my_pe(first);
            printf("PE %d still running\n", me);
            return 1;
        }
    }
    return 0;
}

/* Item 9: nvshmemx_buffer_register refuses memory that is not there. */
static char static_buf[4096];
static int reg(void) {
    int rc = nvshmemx_buffer_register((void *)0x10, 4096);
    CHECK(rc != 0, "registering 4096 bytes at 0x10 returned 0");
    rc = nvshmemx_buffer_register(static_buf, (size_t)1 << 62);
    CHECK(rc != 0, "registering 2^62 bytes at a 4 KiB static buffer returned 0");
    rc = nvshmemx_buffer_register(static_buf, sizeof static_buf);
    CHECK(rc == 0, "registering a 4 KiB static buffer returned %d", rc);
    char *heap = malloc(1 << 20);
    rc = nvshmemx_buffer_register(heap, 1 << 20);
    CHECK(rc == 0, "registering 1 MiB of malloc memory returned %d", rc);
    CHECK(nvshmemx_buffer_unregister(heap) == 0, "unregister");
    CHECK(nvshmemx_buffer_unregister(static_buf) == 0, "unregister");
    free(heap);
    return 0;
}

/* Item 12: a hang in NVSHMEM calls; the launcher's hang report must name them as called. PE 0
 * waits in nvshmem_barrier_all, PE 1 never comes. */
static int nvhang(void) {
    int me = nvshmem_my_pe();
    if (me == 0) {
        printf("PE 0 in nvshmem_barrier_all\n");
        fflush(stdout);
        nvshmem_barrier_all();
    } else {
        printf("PE %d sleeping\n", me);
        fflush(stdout);
        for (;;) pause();
    }
    return 1;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    int nv = strcmp(c, "register") == 0 || strcmp(c, "nvhang") == 0;
    if (nv)
        nvshmem_init();
    else
        shmem_init();
    int rc;
    if (strcmp(c, "ibput") == 0)
        rc = ibput();
    else if (strcmp(c, "shpalloc") == 0)
        rc = shpalloc();
    else if (strcmp(c, "churn") == 0 && argc > 2)
        rc = churn(argc, argv);
    else if (strcmp(c, "register") == 0)
        rc = reg();
    else if (strcmp(c, "nvhang") == 0)
        rc = nvhang();
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    if (rc == 0) {
        printf("PE %d %s ok\n", shmem_my_pe(), c);
        fflush(stdout);
    }
    if (nv)
        nvshmem_finalize();
    else
        shmem_finalize();
    return rc;
}
