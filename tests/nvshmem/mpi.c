/*
 * mpi.c -- initialization with NVSHMEMX_INIT_WITH_MPI_COMM in an MPI program (built with
 * MPICH's mpicc, started by mpiexec.hydra): MPI_Init, nvshmemx_set_attr_mpi_comm_args(&comm),
 * nvshmemx_init_attr, checks against MPI's own answers, nvshmem_finalize, MPI_Finalize.
 *
 * argv[1] picks the communicator:
 *   world    MPI_COMM_WORLD: NVSHMEM PE i is MPI rank i
 *   reversed MPI_Comm_split of the world with one color and reversed keys: NVSHMEM PE i is
 *            world rank n - 1 - i
 *   halves   MPI_Comm_split by rank parity: two NVSHMEM jobs side by side in one MPI job
 *
 * The library links no MPI: it finds MPI's routines in the program at run time.
 * "PE n: <what>: expected X got Y" on stderr for a mismatch, "PE n: OK" at the end.
 */
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdarg.h>
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

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "world";
    MPI_Init(&argc, &argv);
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm comm = MPI_COMM_WORLD;
    if (strcmp(mode, "reversed") == 0) {
        MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comm);
    } else if (strcmp(mode, "halves") == 0) {
        MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &comm);
    } else if (strcmp(mode, "world") != 0) {
        fprintf(stderr, "mpi: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 9);
    }
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);

    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    int rc = nvshmemx_set_attr_mpi_comm_args(&comm, &attr);
    if (rc != 0) {
        fprintf(stderr, "mpi: rank %d: set_attr_mpi_comm_args returned %d\n", wrank, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rc = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr);
    if (rc != 0) {
        fprintf(stderr, "mpi: rank %d: init returned %d\n", wrank, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    CHECK_EQ(crank, me, "nvshmem_my_pe() of world rank %d (%s communicator)", wrank, mode);
    CHECK_EQ(csize, npes, "nvshmem_n_pes() (%s communicator)", mode);
    if (strcmp(mode, "reversed") == 0) CHECK_EQ(wsize - 1 - wrank, me, "PE of world rank %d, reversed", wrank);

    /* which world rank is each PE: from MPI, then through NVSHMEM */
    int *world_of = (int *)malloc((size_t)csize * sizeof(int));
    MPI_Allgather(&wrank, 1, MPI_INT, world_of, 1, MPI_INT, comm);
    int *sym = (int *)nvshmem_malloc(4 * sizeof(int));
    int *all = (int *)nvshmem_malloc((size_t)npes * sizeof(int));
    sym[0] = wrank;
    nvshmem_barrier_all();
    CHECK_EQ(0, nvshmem_int_fcollect(NVSHMEM_TEAM_WORLD, all, sym, 1), "nvshmem_int_fcollect return");
    for (int p = 0; p < npes; p++) CHECK_EQ(world_of[p], all[p], "world rank of PE %d (fcollect vs MPI_Allgather)", p);

    /* a ring and a reduction, compared with MPI_Allreduce */
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    nvshmem_int_p(&sym[1], 1000 + me, right);
    nvshmem_barrier_all();
    CHECK_EQ(1000 + left, sym[1], "nvshmem_int_p from PE %d", left);
    long *src = (long *)nvshmem_malloc(8 * sizeof(long)), *dst = (long *)nvshmem_malloc(8 * sizeof(long));
    long mine[8], want[8];
    for (int i = 0; i < 8; i++) src[i] = mine[i] = (long)(wrank + 3) * (i + 1);
    MPI_Allreduce(mine, want, 8, MPI_LONG, MPI_SUM, comm);
    CHECK_EQ(0, nvshmem_long_sum_reduce(NVSHMEM_TEAM_WORLD, dst, src, 8), "nvshmem_long_sum_reduce return");
    for (int i = 0; i < 8; i++) CHECK_EQ(want[i], dst[i], "nvshmem_long_sum_reduce [%d] vs MPI_Allreduce", i);
    MPI_Allreduce(mine, want, 8, MPI_LONG, MPI_MAX, comm);
    CHECK_EQ(0, nvshmem_long_max_reduce(NVSHMEM_TEAM_WORLD, dst, src, 8), "nvshmem_long_max_reduce return");
    for (int i = 0; i < 8; i++) CHECK_EQ(want[i], dst[i], "nvshmem_long_max_reduce [%d] vs MPI_Allreduce", i);
    nvshmem_barrier_all();
    /* MPI keeps working beside NVSHMEM */
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_EQ(wsize, total, "MPI_Allreduce on MPI_COMM_WORLD after the NVSHMEM init");

    nvshmem_free(dst);
    nvshmem_free(src);
    nvshmem_free(all);
    nvshmem_free(sym);
    free(world_of);
    nvshmem_barrier_all();
    nvshmem_finalize();
    if (failures == 0)
        printf("PE %d: OK\n", me);
    else
        fprintf(stderr, "PE %d: FAILED (%ld of %ld checks)\n", me, failures, checks);
    fflush(stdout);
    fflush(stderr);
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
