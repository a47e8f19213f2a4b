/*
 * Teams and contexts:
 *
 *   teams     SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, shmem_team_split_strided (evens, a team of
 *             a team), shmem_team_split_2d (and with xrange larger than the parent),
 *             shmem_team_translate_pe both ways and for non-members, shmem_team_get_config,
 *             shmem_team_ptr, collectives on the 2-D teams, many create/destroy cycles,
 *             SHMEM_TEAM_INVALID
 *   contexts  shmem_ctx_create with every option, many contexts at once, shmem_ctx_get_team,
 *             shmem_team_create_ctx with team-relative PE numbers, shmem_ctx_fence ordering,
 *             one private context per thread under SHMEM_THREAD_MULTIPLE
 */
#include <pthread.h>
#include "oxtest.h"

static int me, npes;
static int g_slot[8];
static long g_team_slot[4];

static void world_and_shared(void) {
    CHECK_EQ(me, shmem_team_my_pe(SHMEM_TEAM_WORLD), "team_my_pe(WORLD)");
    CHECK_EQ(npes, shmem_team_n_pes(SHMEM_TEAM_WORLD), "team_n_pes(WORLD)");
    /* every PE of these runs is on one node */
    CHECK_EQ(npes, shmem_team_n_pes(SHMEM_TEAM_SHARED), "team_n_pes(SHARED)");
    CHECK_EQ(me, shmem_team_translate_pe(SHMEM_TEAM_SHARED, shmem_team_my_pe(SHMEM_TEAM_SHARED),
                                         SHMEM_TEAM_WORLD),
             "translate SHARED -> WORLD");
    CHECK_EQ(-1, shmem_team_my_pe(SHMEM_TEAM_INVALID), "team_my_pe(INVALID)");
    CHECK_EQ(-1, shmem_team_n_pes(SHMEM_TEAM_INVALID), "team_n_pes(INVALID)");
    CHECK_EQ(-1, shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD), "translate from INVALID");
    CHECK_EQ(-1, shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID), "translate to INVALID");
    CHECK_EQ(-1, shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_WORLD), "translate PE n_pes");
}

static void strided(void) {
    shmem_team_t evens, sub;
    shmem_team_config_t conf = {2}, got = {0};
    int k, ne = (npes + 1) / 2;
    CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, ne, &conf, SHMEM_TEAM_NUM_CONTEXTS, &evens),
             "split_strided(0, 2, %d)", ne);
    if (me % 2) {
        CHECK(evens == SHMEM_TEAM_INVALID, "odd PE gets SHMEM_TEAM_INVALID");
        CHECK_EQ(-1, shmem_team_my_pe(evens), "team_my_pe of a team I am not in");
    } else {
        CHECK_EQ(me / 2, shmem_team_my_pe(evens), "team_my_pe(evens)");
        CHECK_EQ(ne, shmem_team_n_pes(evens), "team_n_pes(evens)");
        for (k = 0; k < ne; k++)
            CHECK_EQ(2 * k, shmem_team_translate_pe(evens, k, SHMEM_TEAM_WORLD), "translate evens %d -> WORLD", k);
        for (k = 0; k < npes; k++)
            CHECK_EQ(k % 2 ? -1 : k / 2, shmem_team_translate_pe(SHMEM_TEAM_WORLD, k, evens), "translate WORLD %d -> evens", k);
        CHECK_EQ(0, shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got), "team_get_config");
        CHECK_EQ(2, got.num_contexts, "num_contexts from team_get_config");
        /* a team of a team: evens without its first member (a team has at least one PE) */
        sub = SHMEM_TEAM_INVALID;
        if (ne >= 2)
            CHECK_EQ(0, shmem_team_split_strided(evens, 1, 1, ne - 1, NULL, 0, &sub), "split of evens");
        if (ne < 2) {
        } else if (me == 0) {
            CHECK(sub == SHMEM_TEAM_INVALID, "PE 0 is outside the sub-team");
        } else {
            CHECK_EQ(me / 2 - 1, shmem_team_my_pe(sub), "team_my_pe(sub)");
            CHECK_EQ(me, shmem_team_translate_pe(sub, shmem_team_my_pe(sub), SHMEM_TEAM_WORLD), "translate sub -> WORLD");
            CHECK_EQ(me / 2, shmem_team_translate_pe(sub, shmem_team_my_pe(sub), evens), "translate sub -> evens");
            shmem_team_destroy(sub);
        }
        shmem_team_destroy(evens);
    }
    shmem_barrier_all();
}

/* a 2-D split of the world with xrange columns */
static void two_d(int xrange) {
    shmem_team_t xt, yt;
    int x = me % xrange, row = me / xrange;
    int xs = npes - row * xrange < xrange ? npes - row * xrange : xrange;
    int ys = (npes - x + xrange - 1) / xrange;
    int k;
    if (xrange > npes) {
        x = me;
        row = 0;
        xs = npes;
        ys = 1;
    }
    CHECK_EQ(0, shmem_team_split_2d(SHMEM_TEAM_WORLD, xrange, NULL, 0, &xt, NULL, 0, &yt), "split_2d(%d)", xrange);
    CHECK_EQ(x, shmem_team_my_pe(xt), "x team my_pe (xrange %d)", xrange);
    CHECK_EQ(xs, shmem_team_n_pes(xt), "x team n_pes (xrange %d)", xrange);
    CHECK_EQ(row, shmem_team_my_pe(yt), "y team my_pe (xrange %d)", xrange);
    CHECK_EQ(ys, shmem_team_n_pes(yt), "y team n_pes (xrange %d)", xrange);
    for (k = 0; k < xs; k++)
        CHECK_EQ(me - x + k, shmem_team_translate_pe(xt, k, SHMEM_TEAM_WORLD), "x team %d -> WORLD (xrange %d)", k, xrange);
    for (k = 0; k < ys; k++)
        CHECK_EQ(x + k * (xrange > npes ? 0 : xrange), shmem_team_translate_pe(yt, k, SHMEM_TEAM_WORLD),
                 "y team %d -> WORLD (xrange %d)", k, xrange);
    CHECK_EQ(x, shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, xt), "WORLD -> x team (xrange %d)", xrange);

    /* collectives on both: sum of world numbers, broadcast from the last member */
    {
        static long s, d, bsrc[2], bdst[2];
        long e = 0;
        s = me;
        CHECK_EQ(0, shmem_long_sum_reduce(xt, &d, &s, 1), "sum on x team");
        for (k = 0; k < xs; k++) e += me - x + k;
        CHECK_EQ(e, d, "sum of world PEs on the x team (xrange %d)", xrange);
        e = 0;
        for (k = 0; k < ys; k++) e += shmem_team_translate_pe(yt, k, SHMEM_TEAM_WORLD);
        CHECK_EQ(0, shmem_long_sum_reduce(yt, &d, &s, 1), "sum on y team");
        CHECK_EQ(e, d, "sum of world PEs on the y team (xrange %d)", xrange);
        bsrc[0] = me * 10;
        bsrc[1] = me * 10 + 1;
        CHECK_EQ(0, shmem_long_broadcast(yt, bdst, bsrc, 2, ys - 1), "broadcast on y team");
        CHECK_EQ(shmem_team_translate_pe(yt, ys - 1, SHMEM_TEAM_WORLD) * 10 + 1, bdst[1], "broadcast on the y team (xrange %d)", xrange);
    }

    /* a context on the x team: PE numbers are x-team numbers */
    {
        shmem_ctx_t c;
        shmem_team_t t = SHMEM_TEAM_INVALID;
        int tr = (x + 1) % xs, tl = (x + xs - 1) % xs;
        CHECK_EQ(0, shmem_team_create_ctx(xt, 0, &c), "team_create_ctx(x team)");
        CHECK_EQ(0, shmem_ctx_get_team(c, &t), "ctx_get_team");
        CHECK(t == xt, "ctx_get_team gives the x team");
        g_team_slot[0] = -1;
        shmem_team_sync(xt);
        shmem_ctx_long_p(c, &g_team_slot[0], 1000 + me, tr);
        shmem_ctx_quiet(c);
        shmem_team_sync(xt);
        CHECK_EQ(1000 + me - x + tl, g_team_slot[0], "put on an x-team context to x-team PE %d (xrange %d)", tr, xrange);
        CHECK_EQ(1000 + me, shmem_ctx_long_g(c, &g_team_slot[0], tr), "get on an x-team context");
        CHECK_EQ(1000 + me - x + tl, shmem_ctx_long_atomic_fetch_add(c, &g_team_slot[0], 0, x),
                 "fetch_add on an x-team context (own slot)");
        /* shmem_team_ptr to an x-team member */
        {
            long *p = (long *)shmem_team_ptr(xt, &g_team_slot[0], tr);
            if (p != NULL) CHECK_EQ(1000 + me, *p, "load through shmem_team_ptr(x team, %d)", tr);
        }
        shmem_team_sync(xt);
        shmem_ctx_destroy(c);
    }
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    shmem_barrier_all();
}

static void churn(void) {
    int k;
    for (k = 0; k < 50; k++) {
        shmem_team_t t;
        int size = 1 + k % npes;
        CHECK_EQ(0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, size, NULL, 0, &t), "split %d", k);
        if (me < size) {
            CHECK_EQ(size, shmem_team_n_pes(t), "n_pes of team %d", k);
            shmem_team_sync(t);
            shmem_team_destroy(t);
        } else {
            CHECK(t == SHMEM_TEAM_INVALID, "non-member of team %d", k);
        }
    }
    shmem_barrier_all();
}

/* ---- contexts ---- */
static void contexts(void) {
    static const long opts[] = {0, SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE, SHMEM_CTX_NOSTORE,
                                SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE};
    shmem_ctx_t c[32];
    shmem_team_t t;
    int right = (me + 1) % npes, left = (me + npes - 1) % npes, k, r;
    for (k = 0; k < 5; k++) {
        CHECK_EQ(0, shmem_ctx_create(opts[k], &c[k]), "ctx_create(%ld)", opts[k]);
        t = SHMEM_TEAM_INVALID;
        CHECK_EQ(0, shmem_ctx_get_team(c[k], &t), "ctx_get_team");
        CHECK(t == SHMEM_TEAM_WORLD, "a context of shmem_ctx_create belongs to SHMEM_TEAM_WORLD");
        shmem_ctx_int_p(c[k], &g_slot[k], 10 * k + me, right);
        shmem_ctx_quiet(c[k]);
    }
    t = SHMEM_TEAM_INVALID;
    CHECK_EQ(0, shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t), "ctx_get_team(DEFAULT)");
    CHECK(t == SHMEM_TEAM_WORLD, "SHMEM_CTX_DEFAULT belongs to SHMEM_TEAM_WORLD");
    shmem_barrier_all();
    for (k = 0; k < 5; k++) {
        CHECK_EQ(10 * k + left, g_slot[k], "put on context %d", k);
        CHECK_EQ(10 * k + me, shmem_ctx_int_g(c[k], &g_slot[k], right), "get on context %d", k);
        shmem_ctx_destroy(c[k]);
    }
    /* many at once, each used */
    static long counter;
    counter = 0;
    shmem_barrier_all();
    for (k = 0; k < 32; k++) CHECK_EQ(0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &c[k]), "ctx_create #%d", k);
    for (r = 0; r < 4; r++)
        for (k = 0; k < 32; k++) shmem_ctx_long_atomic_add(c[k], &counter, 1, 0);
    for (k = 0; k < 32; k++) {
        shmem_ctx_quiet(c[k]);
        shmem_ctx_destroy(c[k]);
    }
    shmem_barrier_all();
    if (me == 0) CHECK_EQ(4 * 32 * npes, counter, "adds on 32 contexts");

    /* ctx_fence orders a context's puts to one PE */
    {
        static int data[128], flag, ack;
        int src[128], j;
        shmem_ctx_t f;
        CHECK_EQ(0, shmem_ctx_create(SHMEM_CTX_SERIALIZED, &f), "ctx_create for fence");
        flag = ack = 0;
        shmem_barrier_all();
        if (me == 0 && npes > 1) {
            for (r = 1; r <= 50; r++) {
                for (j = 0; j < 128; j++) src[j] = r * 1000 + j;
                shmem_ctx_int_put(f, data, src, 128, 1);
                shmem_ctx_fence(f);
                shmem_ctx_int_p(f, &flag, r, 1);
                shmem_ctx_quiet(f);
                shmem_int_wait_until(&ack, SHMEM_CMP_EQ, r);
            }
        } else if (me == 1) {
            for (r = 1; r <= 50; r++) {
                shmem_int_wait_until(&flag, SHMEM_CMP_EQ, r);
                for (j = 0; j < 128; j++)
                    if (data[j] != r * 1000 + j) {
                        CHECK_EQ(r * 1000 + j, data[j], "data after ctx_fence and flag, round %d [%d]", r, j);
                        break;
                    }
                shmem_int_p(&ack, r, 0);
            }
        }
        shmem_barrier_all();
        shmem_ctx_destroy(f);
    }
}

/* ---- threads: one private context each ---- */
#define NTHREADS 3
static long g_thread_slots[NTHREADS * 64], g_thread_count;
struct targ {
    int id;
};
static void *thread_main(void *arg) {
    int id = ((struct targ *)arg)->id, k, right = (me + 1) % npes;
    shmem_ctx_t c;
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &c) != 0) c = SHMEM_CTX_DEFAULT;
    for (k = 0; k < 64; k++) shmem_ctx_long_p(c, &g_thread_slots[id * 64 + k], me * 100000 + id * 1000 + k, right);
    for (k = 0; k < 64; k++) shmem_ctx_long_atomic_inc(c, &g_thread_count, 0);
    shmem_ctx_quiet(c);
    if (c != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(c);
    return NULL;
}
static void threads(int provided) {
    pthread_t th[NTHREADS];
    struct targ a[NTHREADS];
    int i, k, left = (me + npes - 1) % npes;
    if (provided != SHMEM_THREAD_MULTIPLE) {
        printf("PE %d: SHMEM_THREAD_MULTIPLE not provided (%d): threads skipped\n", me, provided);
        return;
    }
    memset(g_thread_slots, 0, sizeof g_thread_slots);
    g_thread_count = 0;
    shmem_barrier_all();
    for (i = 0; i < NTHREADS; i++) {
        a[i].id = i;
        pthread_create(&th[i], NULL, thread_main, &a[i]);
    }
    for (i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    shmem_barrier_all();
    for (i = 0; i < NTHREADS; i++)
        for (k = 0; k < 64; k++)
            CHECK_EQ(left * 100000 + i * 1000 + k, g_thread_slots[i * 64 + k], "thread %d slot %d", i, k);
    if (me == 0) CHECK_EQ(64L * NTHREADS * npes, g_thread_count, "increments from every thread of every PE");
    shmem_barrier_all();
}

int main(void) {
    int provided = -1;
    ox_program = "teams";
    CHECK_EQ(0, shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided), "shmem_init_thread");
    ox_me = me = shmem_my_pe();
    ox_npes = npes = shmem_n_pes();
    {
        int q = -1;
        shmem_query_thread(&q);
        CHECK_EQ(provided, q, "shmem_query_thread");
    }
    world_and_shared();
    strided();
    two_d(2);
    two_d(npes + 1);
    if (npes >= 3) two_d(3);
    churn();
    contexts();
    threads(provided);
    return ox_finish();
}
