/*
 * The NVSHMEM face against the OpenSHMEM one: the same operation through an NVSHMEM host name
 * (nvshmem.h) and through its OpenSHMEM twin (shmem.h), on the same symmetric buffers, in the
 * same run of liboxshmem (one nvshmem_init: both APIs share one runtime).
 *
 *   put 8 B       nvshmem_putmem + nvshmem_quiet          vs shmem_putmem + shmem_quiet
 *   p long        nvshmem_long_p (one quiet per block)    vs shmem_long_p (one quiet per block)
 *   get 8 B       nvshmem_getmem                          vs shmem_getmem
 *   fetch-add     nvshmem_long_atomic_fetch_add           vs shmem_long_atomic_fetch_add
 *   barrier_all   nvshmem_barrier_all                     vs shmem_barrier_all
 *   broadcast 8 B nvshmem_long_broadcast(NVSHMEM_TEAM_WORLD) vs shmem_long_broadcast(SHMEM_TEAM_WORLD)
 *   reduce 8 B    nvshmem_long_sum_reduce(NVSHMEM_TEAM_WORLD) vs shmem_long_sum_reduce(SHMEM_TEAM_WORLD)
 *
 * For each operation: a calibration (warm-up of both names, then an iteration count for blocks
 * of about --block-ms, from the fastest of three 20 ms calibration pairs on PE 0), then --rounds
 * rounds of one block per name, the order alternating (NVSHMEM, OpenSHMEM; OpenSHMEM, NVSHMEM;
 * ...) so that neither always goes first; the faster block of a round resizes the next round's
 * (both blocks of a round have the same iteration count; the table shows the median). A block is
 * shmem_barrier_all (untimed, the same for both), then `iters` operations timed with
 * clock_gettime(CLOCK_MONOTONIC). The one-sided operations go from PE 0 to PE 1 and are timed on
 * PE 0 (the other PEs wait in the next barrier); the collectives are timed on every PE and a
 * block's time is the mean over PEs. PE 0 prints, per operation, min and median of each side
 * (µs per operation), the ratio NVSHMEM / OpenSHMEM of the medians (and of the minima, and the
 * median of the per-round ratios: a round's two blocks run back to back, so this one is the
 * least sensitive to a busy host), then every round's ratio.
 *
 *   nv_vs_shmem [--rounds N] [--block-ms MS] [--csv FILE]      (at least 2 PEs; run at 2)
 *
 * benches/c/nv_vs_shmem.sh builds, compiles and runs it under oshrun -n 2.
 */
#include <shmem.h>
#include <nvshmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NV = 0, SH = 1 };
enum { OP_PUT, OP_P, OP_GET, OP_FADD, OP_BARRIER, OP_BCAST, OP_REDUCE, N_OPS };
#define MAX_ROUNDS 1000

static const char *op_name[N_OPS] = {
    "put 8 B (putmem+quiet)", "p long (long_p)", "get 8 B (getmem)", "fetch-add long",
    "barrier_all", "broadcast 8 B (long)", "sum_reduce 8 B (long)",
};
/* Collective: every PE takes part and times. */
static const int op_coll[N_OPS] = {0, 0, 0, 0, 1, 1, 1};

/* The symmetric buffers, shared by both names. */
static long *s_src, *s_dst, *s_get, *s_ctr, *s_bsrc, *s_bdst, *s_rsrc, *s_rdst, *s_iters;
/* Per-block µs per operation, [op][side][round]: symmetric, so that PE 0 can read the others'. */
static double *s_times;
static long sink;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* `iters` operations of `op` through the names of `side`; returns a nonzero status if any call
 * reported one. One function per operation and side, so that the timed loops hold no branch on
 * the side. */
#define LOOP(body)                                                                                \
    do {                                                                                          \
        for (long i = 0; i < iters; i++) {                                                        \
            body;                                                                                 \
        }                                                                                         \
    } while (0)

static int nv_put(long iters) { LOOP(nvshmem_putmem(s_dst, s_src, 8, 1); nvshmem_quiet()); return 0; }
static int sh_put(long iters) { LOOP(shmem_putmem(s_dst, s_src, 8, 1); shmem_quiet()); return 0; }
static int nv_p(long iters) { LOOP(nvshmem_long_p(s_dst, i, 1)); nvshmem_quiet(); return 0; }
static int sh_p(long iters) { LOOP(shmem_long_p(s_dst, i, 1)); shmem_quiet(); return 0; }
static int nv_get(long iters) { LOOP(nvshmem_getmem(s_get, s_src, 8, 1)); return 0; }
static int sh_get(long iters) { LOOP(shmem_getmem(s_get, s_src, 8, 1)); return 0; }
static int nv_fadd(long iters) { long s = 0; LOOP(s += nvshmem_long_atomic_fetch_add(s_ctr, 1, 1)); sink += s; return 0; }
static int sh_fadd(long iters) { long s = 0; LOOP(s += shmem_long_atomic_fetch_add(s_ctr, 1, 1)); sink += s; return 0; }
static int nv_barrier(long iters) { LOOP(nvshmem_barrier_all()); return 0; }
static int sh_barrier(long iters) { LOOP(shmem_barrier_all()); return 0; }
static int nv_bcast(long iters) { int rc = 0; LOOP(rc |= nvshmem_long_broadcast(NVSHMEM_TEAM_WORLD, s_bdst, s_bsrc, 1, 0)); return rc; }
static int sh_bcast(long iters) { int rc = 0; LOOP(rc |= shmem_long_broadcast(SHMEM_TEAM_WORLD, s_bdst, s_bsrc, 1, 0)); return rc; }
static int nv_reduce(long iters) { int rc = 0; LOOP(rc |= nvshmem_long_sum_reduce(NVSHMEM_TEAM_WORLD, s_rdst, s_rsrc, 1)); return rc; }
static int sh_reduce(long iters) { int rc = 0; LOOP(rc |= shmem_long_sum_reduce(SHMEM_TEAM_WORLD, s_rdst, s_rsrc, 1)); return rc; }

static int (*const op_fn[N_OPS][2])(long) = {
    {nv_put, sh_put}, {nv_p, sh_p}, {nv_get, sh_get}, {nv_fadd, sh_fadd},
    {nv_barrier, sh_barrier}, {nv_bcast, sh_bcast}, {nv_reduce, sh_reduce},
};

/* One block: µs per operation on this PE, or a negative value on a PE that does not take part. */
static double block(int op, int side, long iters, int me) {
    shmem_barrier_all();
    if (!op_coll[op] && me != 0) return -1;
    double t0 = now_us();
    int rc = op_fn[op][side](iters);
    double t = (now_us() - t0) / (double)iters;
    if (rc != 0) {
        fprintf(stderr, "PE %d: %s through the %s name returned %d\n", me, op_name[op],
                side == NV ? "NVSHMEM" : "OpenSHMEM", rc);
        shmem_global_exit(1);
    }
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n) {
    double tmp[MAX_ROUNDS];
    memcpy(tmp, v, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static double median_long(const long *v, int n) {
    double tmp[MAX_ROUNDS];
    for (int i = 0; i < n; i++) tmp[i] = (double)v[i];
    return median(tmp, n);
}

static double minimum(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m) m = v[i];
    return m;
}

static void usage(void) {
    fprintf(stderr, "usage: nv_vs_shmem [--rounds N (15..%d, default 31)] [--block-ms MS (default 70)] [--csv FILE]\n",
            MAX_ROUNDS);
}

int main(int argc, char **argv) {
    int rounds = 31;
    double block_ms = 70;
    const char *csv = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--rounds") && a + 1 < argc) rounds = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--block-ms") && a + 1 < argc) block_ms = atof(argv[++a]);
        else if (!strcmp(argv[a], "--csv") && a + 1 < argc) csv = argv[++a];
        else { usage(); return 2; }
    }
    if (rounds < 15 || rounds > MAX_ROUNDS || !(block_ms > 0)) { usage(); return 2; }

    nvshmem_init();
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    if (npes < 2) {
        fprintf(stderr, "nv_vs_shmem needs at least 2 PEs (run it with oshrun -n 2)\n");
        nvshmem_finalize();
        return 1;
    }
    long *sym = nvshmem_malloc(9 * 64);
    s_times = nvshmem_malloc(sizeof(double) * N_OPS * 2 * MAX_ROUNDS);
    if (!sym || !s_times) {
        fprintf(stderr, "PE %d: nvshmem_malloc failed\n", me);
        shmem_global_exit(1);
    }
    /* One 64-byte line per buffer. */
    s_src = sym; s_dst = sym + 8; s_get = sym + 16; s_ctr = sym + 24; s_bsrc = sym + 32;
    s_bdst = sym + 40; s_rsrc = sym + 48; s_rdst = sym + 56; s_iters = sym + 64;
    memset(sym, 0, 9 * 64);
    *s_src = 42; *s_bsrc = 7; *s_rsrc = me + 1;
    for (int k = 0; k < N_OPS * 2 * MAX_ROUNDS; k++) s_times[k] = -1;
    nvshmem_barrier_all();

    double t_start = now_us();
    for (int op = 0; op < N_OPS; op++) {
        /* Calibration: 1000 operations through each name (warm-up), then pairs of blocks of n
         * operations (one per name), n growing 4-fold until a pair lasts 20 ms on PE 0, then two
         * more pairs of that length. The fastest of those three sets the iteration count of the
         * measured blocks on every PE (the fastest: on a busy host a slow calibration would
         * make the blocks short and the measurement noisy). */
        for (int side = 0; side < 2; side++) block(op, side, 1000, me);
        double t_cal = 1e30;
        int long_pairs = 0;
        for (long n = 1000;;) {
            double t = 0;
            for (int side = 0; side < 2; side++) t += block(op, side, n, me) / 2;
            shmem_barrier_all();
            if (me == 0) {
                long v = -4 * n; /* negative: another pair of -v operations */
                if (t * (double)n * 2 >= 20e3 || n >= 50000000) {
                    long_pairs++;
                    if (t < t_cal) t_cal = t;
                    v = -n;
                }
                if (long_pairs == 3) {
                    v = (long)(block_ms * 1e3 / (t_cal > 1e-4 ? t_cal : 1e-4));
                    if (v < 100) v = 100;
                    if (v > 100000000) v = 100000000;
                }
                for (int pe = 0; pe < npes; pe++) shmem_long_p(s_iters, v, pe);
            }
            shmem_barrier_all();
            if (*s_iters > 0) break;
            n = -*s_iters;
        }
        long iters = *s_iters, used[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            int first = r % 2 == 0 ? NV : SH;
            double t[2];
            used[r] = iters;
            for (int k = 0; k < 2; k++) {
                int side = k == 0 ? first : !first;
                t[side] = s_times[(op * 2 + side) * MAX_ROUNDS + r] = block(op, side, iters, me);
            }
            /* Keep the blocks near --block-ms: the faster block of the round (on PE 0) sets the
             * count of the next round, so that a calibration on a busy host does not leave short,
             * noisy blocks behind, nor a slow spell long ones. Both blocks of a round always
             * have the same count. */
            if (me == 0) {
                double fast = t[NV] < t[SH] ? t[NV] : t[SH];
                long v = (long)(block_ms * 1e3 / (fast > 1e-4 ? fast : 1e-4));
                if (v < 100) v = 100;
                if (v > 100000000) v = 100000000;
                for (int pe = 0; pe < npes; pe++) shmem_long_p(s_iters, v, pe);
            }
            shmem_barrier_all();
            iters = *s_iters;
        }
        if (me == 0) s_iters[1 + op] = (long)median_long(used, rounds); /* for the table */
    }
    shmem_barrier_all();
    double t_total = (now_us() - t_start) / 1e6;

    if (me == 0) {
        /* The collectives' blocks: mean over PEs. */
        static double other[N_OPS * 2 * MAX_ROUNDS];
        for (int pe = 1; pe < npes; pe++) {
            shmem_getmem(other, s_times, sizeof other, pe);
            for (int op = 0; op < N_OPS; op++) {
                if (!op_coll[op]) continue;
                for (int k = 0; k < 2 * MAX_ROUNDS; k++) s_times[op * 2 * MAX_ROUNDS + k] += other[op * 2 * MAX_ROUNDS + k];
            }
        }
        for (int op = 0; op < N_OPS; op++) {
            if (!op_coll[op]) continue;
            for (int k = 0; k < 2 * MAX_ROUNDS; k++) s_times[op * 2 * MAX_ROUNDS + k] /= npes;
        }

        FILE *cf = NULL;
        if (csv) {
            cf = fopen(csv, "w");
            if (!cf) perror(csv);
            else
                fprintf(cf, "operation,pes,rounds,iters_per_block,nvshmem_min_us,nvshmem_median_us,"
                            "openshmem_min_us,openshmem_median_us,ratio_medians,ratio_mins,median_round_ratio\n");
        }
        printf("# NVSHMEM host names vs their OpenSHMEM twins in liboxshmem: the same operation through both names,\n"
               "# same symmetric buffers, same run (one nvshmem_init, one runtime), %d PEs. %d rounds of one block per\n"
               "# name, order alternating (NV,SH / SH,NV); a block is ~%.0f ms of back-to-back operations timed with\n"
               "# clock_gettime(CLOCK_MONOTONIC) (one-sided: PE 0 -> PE 1, timed on PE 0; collectives: mean over PEs).\n"
               "# us per operation, min and median over the rounds; lower is better. ratio = NVSHMEM / OpenSHMEM:\n"
               "# above 1 the NVSHMEM name is slower; target: ratio of medians <= 1.05.\n",
               npes, rounds, block_ms);
        const char *head[] = {"operation", "iters/block", "NVSHMEM min", "NVSHMEM median", "OpenSHMEM min",
                              "OpenSHMEM median", "ratio of medians", "ratio of mins",
                              "median of round ratios"};
        int w[] = {22, 11, 11, 14, 13, 16, 16, 13, 22};
        printf("|");
        for (int c = 0; c < 9; c++) printf(" %-*s |", w[c], head[c]);
        printf("\n|");
        for (int c = 0; c < 9; c++) {
            for (int k = 0; k < w[c] + 2; k++) putchar('-');
            putchar('|');
        }
        printf("\n");
        int over = 0;
        for (int op = 0; op < N_OPS; op++) {
            const double *nv = &s_times[(op * 2 + NV) * MAX_ROUNDS], *sh = &s_times[(op * 2 + SH) * MAX_ROUNDS];
            double nmin = minimum(nv, rounds), nmed = median(nv, rounds);
            double smin = minimum(sh, rounds), smed = median(sh, rounds);
            double rr[MAX_ROUNDS];
            for (int r = 0; r < rounds; r++) rr[r] = nv[r] / sh[r];
            double rmed = nmed / smed, rmin = nmin / smin, rround = median(rr, rounds);
            if (rmed > 1.05) over++;
            printf("| %-*s | %*ld | %*.4f | %*.4f | %*.4f | %*.4f | %*.3f | %*.3f | %*.3f |\n", w[0], op_name[op],
                   w[1], s_iters[1 + op], w[2], nmin, w[3], nmed, w[4], smin, w[5], smed, w[6], rmed, w[7], rmin,
                   w[8], rround);
            if (cf)
                fprintf(cf, "\"%s\",%d,%d,%ld,%.6f,%.6f,%.6f,%.6f,%.4f,%.4f,%.4f\n", op_name[op], npes, rounds,
                        s_iters[1 + op], nmin, nmed, smin, smed, rmed, rmin, rround);
        }
        printf("# NVSHMEM / OpenSHMEM per round (the two blocks of a round run back to back):\n");
        for (int op = 0; op < N_OPS; op++) {
            const double *nv = &s_times[(op * 2 + NV) * MAX_ROUNDS], *sh = &s_times[(op * 2 + SH) * MAX_ROUNDS];
            printf("#   %-22s", op_name[op]);
            for (int r = 0; r < rounds; r++) printf(" %.2f", nv[r] / sh[r]);
            printf("\n");
        }
        if (over)
            printf("# %d of %d ratios of medians above 1.05 (total %.1f s)\n", over, N_OPS, t_total);
        else
            printf("# every ratio of medians <= 1.05 (total %.1f s)\n", t_total);
        if (cf) fclose(cf);
        fflush(stdout);
    }
    shmem_barrier_all();
    nvshmem_free(s_times);
    nvshmem_free(sym);
    nvshmem_finalize();
    return (int)(sink & 0); /* sink keeps the fetched values live */
}
