/*
 * moe_mpi.c — the MPI reference for oxshmem's MoE dispatch/combine (oxshmem_device::moe).
 *
 * The same deterministic workload as device/src/moe/reference.rs (transcribed line by line:
 * change both together), moved the way an MPI code does it: dispatch = pack each token once
 * per destination rank that holds one of its experts (a metadata header + the token's values
 * per row), MPI_Alltoall of the byte counts, MPI_Alltoallv of the rows; the experts on each
 * rank reduce their outputs per received row (partial = 0 + w_k * y_k in k order); combine =
 * MPI_Alltoallv of the partial rows back, then out = 0 + partial(0) + partial(1) + ... in rank
 * order. Every float operation is the one the Rust side performs, in the same order; build
 * with -ffp-contract=off so that no multiply-add is fused.
 *
 *   mpicc.mpich -O2 -ffp-contract=off -o moe_mpi moe_mpi.c
 *   mpiexec.hydra -n 2 ./moe_mpi [-t ITERS] [-w WARMUP] SPEC...
 *
 * SPEC is T:E:K:H:SEED:SCENARIO:RAGGED:ITERS (as for tests/src/bin/pe-moe.rs): at most T tokens
 * per rank of H bytes, E experts, top-K, scenario random|same-pe|zero-pe|masked, RAGGED 1 for
 * uneven token counts, ITERS rounds with seeds SEED, SEED+1, ... Each round prints
 *   rank R spec S iter I digest D
 * With -t, each spec is then timed: WARMUP (default 20) + ITERS rounds of [barrier, dispatch,
 * experts (untimed), barrier, combine], and rank 0 prints the per-round maximum over ranks as
 *   moe_mpi spec S ranks N: median M min m dispatch D combine C (us; ...)
 * (the median and minimum of dispatch+combine, then the medians of dispatch and of combine).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN 0x9E3779B97F4A7C15ULL

static uint64_t mix(uint64_t state)
{
    uint64_t z = state + GOLDEN;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r)
{
    uint64_t z = mix(r->s);
    r->s += GOLDEN;
    return z;
}

enum { RANDOM, SAME_PE, ZERO_PE, MASKED };

typedef struct {
    uint64_t seed;
    int tokens, hidden, topk, experts, npes, scenario, ragged, iters;
} problem_t;

static void die(const char *msg)
{
    fprintf(stderr, "moe_mpi: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static int tokens_on(const problem_t *p, int pe)
{
    return p->ragged ? (p->tokens + pe * 13) % (p->tokens + 1) : p->tokens;
}

static float value(const problem_t *p, int pe, int t, int h)
{
    uint64_t m = mix(p->seed ^ ((uint64_t)pe << 48) ^ ((uint64_t)t << 24) ^ (uint64_t)h);
    return (float)((int64_t)(m % 2001) - 1000) / 256.0f;
}

static void routing(const problem_t *p, int pe, int *idx, float *w)
{
    int n = tokens_on(p, pe), kk = p->topk, epp = p->experts / p->npes;
    for (int t = 0; t < n; t++) {
        rng_t r = {p->seed ^ ((uint64_t)pe << 32) ^ ((uint64_t)t * 0x00000100000001B3ULL)};
        int chosen[64];
        for (int k = 0; k < kk; k++) {
            int e;
            if (k == 1 && p->scenario == SAME_PE && epp >= 2) {
                int q = chosen[0] / epp, local = chosen[0] % epp;
                e = q * epp + (local + 1 + (int)(rng_next(&r) % (uint64_t)(epp - 1))) % epp;
            } else {
                for (;;) {
                    e = (int)(rng_next(&r) % (uint64_t)p->experts);
                    int excluded = p->scenario == ZERO_PE && p->npes > 1 && e / epp == p->npes - 1;
                    int seen = 0;
                    for (int j = 0; j < k; j++)
                        seen |= chosen[j] == e;
                    if (!excluded && !seen)
                        break;
                }
            }
            chosen[k] = e;
            idx[t * kk + k] = e;
            w[t * kk + k] = (float)((rng_next(&r) >> 40) % 1024 + 1) / 1024.0f;
            if (p->scenario == MASKED && rng_next(&r) % 4 == 0)
                idx[t * kk + k] = -1;
        }
    }
}

static void expert(int e, const float *x, float *y, int hf)
{
    float a = (float)(e + 1), b = (float)e;
    for (int h = 0; h < hf; h++)
        y[h] = x[h] * a + b;
}

static uint64_t digest(const float *out, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &out[i], 4);
        h ^= bits;
        h *= 0x00000100000001B3ULL;
    }
    return h;
}

/* One rank's state for one problem: inputs, buffers, and the layout of the last dispatch. */
typedef struct {
    const problem_t *p;
    int me, n, epp, hf, kk, mw, ntok;
    size_t rowb; /* bytes per dispatched row: mw metadata words + hf floats */
    float *x, *w, *out, *partial, *comb_recv, *y;
    int *idx, *row_of;
    unsigned char *sendbuf, *recvbuf;
    int *scnt, *sdsp, *rcnt, *rdsp, *bscnt, *bsdsp, *brcnt, *brdsp, *rows_to, *rows_from;
} moe_t;

static void moe_init(moe_t *m, const problem_t *p, int me, int n)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    m->me = me;
    m->n = n;
    m->epp = p->experts / n;
    m->hf = p->hidden;
    m->kk = p->topk;
    m->mw = 1 + 2 * p->topk;
    m->rowb = (size_t)4 * (m->mw + m->hf);
    size_t tmax = p->tokens, hf = m->hf;
    m->x = xmalloc(tmax * hf * 4);
    m->idx = xmalloc(tmax * m->kk * sizeof(int));
    m->w = xmalloc(tmax * m->kk * 4);
    m->out = xmalloc(tmax * hf * 4);
    m->row_of = xmalloc(tmax * n * sizeof(int));
    m->sendbuf = xmalloc(tmax * n * m->rowb);
    m->recvbuf = xmalloc(tmax * n * m->rowb);
    m->partial = xmalloc(tmax * n * hf * 4);
    m->comb_recv = xmalloc(tmax * n * hf * 4);
    m->y = xmalloc(hf * 4);
    int **v[] = {&m->scnt, &m->sdsp, &m->rcnt, &m->rdsp, &m->bscnt, &m->bsdsp, &m->brcnt, &m->brdsp, &m->rows_to, &m->rows_from};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        *v[i] = xmalloc(n * sizeof(int));
}

static void moe_free(moe_t *m)
{
    void *v[] = {m->x, m->idx, m->w, m->out, m->row_of, m->sendbuf, m->recvbuf, m->partial, m->comb_recv, m->y,
                 m->scnt, m->sdsp, m->rcnt, m->rdsp, m->bscnt, m->bsdsp, m->brcnt, m->brdsp, m->rows_to, m->rows_from};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        free(v[i]);
}

/* This rank's tokens and routing for seed `seed`. */
static void moe_inputs(moe_t *m, uint64_t seed)
{
    problem_t q = *m->p;
    q.seed = seed;
    m->ntok = tokens_on(&q, m->me);
    for (int t = 0; t < m->ntok; t++)
        for (int h = 0; h < m->hf; h++)
            m->x[(size_t)t * m->hf + h] = value(&q, m->me, t, h);
    routing(&q, m->me, m->idx, m->w);
}

static int goes_to(const moe_t *m, int t, int pe)
{
    for (int k = 0; k < m->kk; k++) {
        int e = m->idx[t * m->kk + k];
        if (e >= 0 && e / m->epp == pe)
            return 1;
    }
    return 0;
}

/* Pack, exchange counts, exchange rows. */
static void moe_dispatch(moe_t *m)
{
    int n = m->n;
    for (int p = 0; p < n; p++)
        m->rows_to[p] = 0;
    for (int t = 0; t < m->ntok; t++)
        for (int p = 0; p < n; p++)
            m->row_of[t * n + p] = goes_to(m, t, p) ? m->rows_to[p]++ : -1;
    size_t off = 0;
    for (int p = 0; p < n; p++) {
        m->sdsp[p] = (int)off;
        m->scnt[p] = (int)(m->rows_to[p] * m->rowb);
        off += m->scnt[p];
    }
    for (int t = 0; t < m->ntok; t++)
        for (int p = 0; p < n; p++) {
            int j = m->row_of[t * n + p];
            if (j < 0)
                continue;
            unsigned char *row = m->sendbuf + m->sdsp[p] + (size_t)j * m->rowb;
            uint32_t meta[1 + 2 * 64];
            meta[0] = (uint32_t)t;
            for (int k = 0; k < m->kk; k++) {
                meta[1 + k] = (uint32_t)m->idx[t * m->kk + k];
                memcpy(&meta[1 + m->kk + k], &m->w[t * m->kk + k], 4);
            }
            memcpy(row, meta, (size_t)4 * m->mw);
            memcpy(row + (size_t)4 * m->mw, m->x + (size_t)t * m->hf, (size_t)4 * m->hf);
        }
    MPI_Alltoall(m->scnt, 1, MPI_INT, m->rcnt, 1, MPI_INT, MPI_COMM_WORLD);
    off = 0;
    for (int p = 0; p < n; p++) {
        m->rdsp[p] = (int)off;
        off += m->rcnt[p];
        m->rows_from[p] = (int)(m->rcnt[p] / m->rowb);
    }
    MPI_Alltoallv(m->sendbuf, m->scnt, m->sdsp, MPI_BYTE, m->recvbuf, m->rcnt, m->rdsp, MPI_BYTE, MPI_COMM_WORLD);
}

/* The experts of this rank, reduced per received row. */
static void moe_experts(moe_t *m)
{
    size_t rows = 0;
    for (int p = 0; p < m->n; p++)
        rows += m->rows_from[p];
    for (size_t r = 0; r < rows; r++) {
        const unsigned char *row = m->recvbuf + r * m->rowb;
        uint32_t meta[1 + 2 * 64];
        memcpy(meta, row, (size_t)4 * m->mw);
        const float *x = (const float *)(row + (size_t)4 * m->mw);
        float *part = m->partial + r * m->hf;
        for (int h = 0; h < m->hf; h++)
            part[h] = 0.0f;
        for (int k = 0; k < m->kk; k++) {
            int e = (int)meta[1 + k];
            if (e < 0 || e / m->epp != m->me)
                continue;
            float wk;
            memcpy(&wk, &meta[1 + m->kk + k], 4);
            expert(e, x, m->y, m->hf);
            for (int h = 0; h < m->hf; h++)
                part[h] += wk * m->y[h];
        }
    }
}

/* Partial rows back, summed per token in rank order. */
static void moe_combine(moe_t *m)
{
    int n = m->n;
    size_t so = 0, ro = 0, hb = (size_t)4 * m->hf;
    for (int p = 0; p < n; p++) {
        m->bscnt[p] = (int)(m->rows_from[p] * hb);
        m->bsdsp[p] = (int)so;
        so += m->bscnt[p];
        m->brcnt[p] = (int)(m->rows_to[p] * hb);
        m->brdsp[p] = (int)ro;
        ro += m->brcnt[p];
    }
    MPI_Alltoallv(m->partial, m->bscnt, m->bsdsp, MPI_BYTE, m->comb_recv, m->brcnt, m->brdsp, MPI_BYTE, MPI_COMM_WORLD);
    for (int t = 0; t < m->ntok; t++) {
        float *o = m->out + (size_t)t * m->hf;
        for (int h = 0; h < m->hf; h++)
            o[h] = 0.0f;
        for (int q = 0; q < n; q++) {
            int j = m->row_of[t * n + q];
            if (j < 0)
                continue;
            const float *src = m->comb_recv + m->brdsp[q] / 4 + (size_t)j * m->hf;
            for (int h = 0; h < m->hf; h++)
                o[h] += src[h];
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

static int parse_spec(const char *s, problem_t *p, int npes)
{
    char sc[32];
    unsigned long long seed;
    if (sscanf(s, "%d:%d:%d:%d:%llu:%31[^:]:%d:%d", &p->tokens, &p->experts, &p->topk, &p->hidden, &seed, sc, &p->ragged,
               &p->iters) != 8)
        return 0;
    p->seed = seed;
    p->hidden /= 4;
    p->npes = npes;
    if (!strcmp(sc, "random"))
        p->scenario = RANDOM;
    else if (!strcmp(sc, "same-pe"))
        p->scenario = SAME_PE;
    else if (!strcmp(sc, "zero-pe"))
        p->scenario = ZERO_PE;
    else if (!strcmp(sc, "masked"))
        p->scenario = MASKED;
    else
        return 0;
    return p->tokens > 0 && p->topk > 0 && p->topk <= 64 && p->experts % npes == 0 && p->topk <= p->experts;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int timing = 0, warmup = 20, spec = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-t") && a + 1 < argc) {
            timing = atoi(argv[++a]);
            continue;
        }
        if (!strcmp(argv[a], "-w") && a + 1 < argc) {
            warmup = atoi(argv[++a]);
            continue;
        }
        problem_t p;
        if (!parse_spec(argv[a], &p, n))
            die("bad spec (T:E:K:H:SEED:SCENARIO:RAGGED:ITERS)");
        moe_t m;
        moe_init(&m, &p, me, n);
        for (int it = 0; it < p.iters; it++) {
            moe_inputs(&m, p.seed + it);
            moe_dispatch(&m);
            moe_experts(&m);
            moe_combine(&m);
            printf("rank %d spec %d iter %d digest %016llx\n", me, spec, it,
                   (unsigned long long)digest(m.out, (size_t)m.ntok * m.hf));
        }
        fflush(stdout);
        if (timing > 0) {
            int total = warmup + timing;
            double *td = xmalloc(sizeof(double) * total), *tc = xmalloc(sizeof(double) * total);
            double *all = xmalloc(sizeof(double) * 3 * timing), *mx = xmalloc(sizeof(double) * 3 * timing);
            moe_inputs(&m, p.seed);
            for (int i = 0; i < total; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                moe_dispatch(&m);
                double t1 = MPI_Wtime();
                moe_experts(&m);
                MPI_Barrier(MPI_COMM_WORLD);
                double t2 = MPI_Wtime();
                moe_combine(&m);
                double t3 = MPI_Wtime();
                td[i] = (t1 - t0) * 1e6;
                tc[i] = (t3 - t2) * 1e6;
            }
            for (int i = 0; i < timing; i++) {
                all[i] = td[warmup + i] + tc[warmup + i];
                all[timing + i] = td[warmup + i];
                all[2 * timing + i] = tc[warmup + i];
            }
            MPI_Reduce(all, mx, 3 * timing, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (me == 0) {
                double mn = mx[0];
                for (int i = 1; i < timing; i++)
                    mn = mx[i] < mn ? mx[i] : mn;
                double med = median(mx, timing);
                double dmed = median(mx + timing, timing), cmed = median(mx + 2 * timing, timing);
                printf("moe_mpi spec %d ranks %d: median %.1f min %.1f dispatch %.1f combine %.1f "
                       "(us; dispatch+combine median and min, then the medians of each)\n",
                       spec, n, med, mn, dmed, cmed);
                fflush(stdout);
            }
            free(td);
            free(tc);
            free(all);
            free(mx);
        }
        moe_free(&m);
        spec++;
    }
    MPI_Finalize();
    return 0;
}
