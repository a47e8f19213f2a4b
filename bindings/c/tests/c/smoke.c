/* A two-PE smoke test of liboxshmem, run by tests/smoke.rs under oshrun.
 *
 *   smoke          puts into a global variable of the peer, fetch-adds a heap int on PE 0,
 *                  reduces over SHMEM_TEAM_WORLD and over a split team, moves and reduces a
 *                  long double; prints "PE <me> OK" when every check holds
 *   smoke destroyed  uses a team handle after shmem_team_destroy: must end the job with the
 *                  library's message, not a crash
 *   smoke garbage  uses a pointer that was never a team handle: the same
 */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int global_x = -1;         /* .data: symmetric because shmem_init makes it so */
static long sum_src, sum_dst; /* .bss */
static long double ld_x, ld_sum;

static int failures;
#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            printf("PE %d FAILED %s: ", me, #cond);       \
            printf(__VA_ARGS__);                          \
            printf("\n");                                 \
            failures++;                                   \
        }                                                 \
    } while (0)

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    if (argc > 1 && strcmp(argv[1], "garbage") == 0) {
        shmem_team_n_pes((shmem_team_t) &global_x); /* ends the job */
        printf("PE %d: still running\n", me);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "destroyed") == 0) {
        shmem_team_t half;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &half);
        shmem_team_destroy(half);
        printf("PE %d: my_pe on the destroyed team\n", me);
        fflush(stdout);
        shmem_team_my_pe(half); /* ends the job */
        printf("PE %d: still running\n", me);
        return 0;
    }

    /* put into the peer's global variable */
    int peer = (me + 1) % n, left = (me + n - 1) % n;
    shmem_int_p(&global_x, 100 + me, peer);
    shmem_barrier_all();
    CHECK(global_x == 100 + left, "global_x = %d", global_x);

    /* fetch-add on a heap int of PE 0 */
    int *counter = shmem_malloc(sizeof(int));
    *counter = 0;
    shmem_barrier_all();
    int old = shmem_int_atomic_fetch_add(counter, me + 1, 0);
    CHECK(old >= 0 && old <= n * (n + 1) / 2, "old = %d", old);
    shmem_barrier_all();
    if (me == 0) CHECK(*counter == n * (n + 1) / 2, "counter = %d", *counter);

    /* the generic reduction over the world team */
    sum_src = me + 1;
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, &sum_dst, &sum_src, 1) == 0, "status");
    CHECK(sum_dst == (long) n * (n + 1) / 2, "sum = %ld", sum_dst);

    /* a team of the even PEs, with a context on it */
    shmem_team_t evens;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens) == 0, "split");
    if (me % 2 == 0) {
        CHECK(shmem_team_my_pe(evens) == me / 2, "team pe %d", shmem_team_my_pe(evens));
        CHECK(shmem_team_translate_pe(evens, shmem_team_my_pe(evens), SHMEM_TEAM_WORLD) == me, "translate");
        shmem_ctx_t ctx;
        CHECK(shmem_team_create_ctx(evens, 0, &ctx) == 0, "ctx");
        shmem_ctx_long_p(ctx, &sum_dst, -5, 0); /* team PE 0 is world PE 0 */
        shmem_ctx_quiet(ctx);
        shmem_ctx_destroy(ctx);
        shmem_team_sync(evens);
        if (me == 0) CHECK(sum_dst == -5, "ctx put: %ld", sum_dst);
        sum_src = 1;
        CHECK(shmem_long_sum_reduce(evens, &sum_dst, &sum_src, 1) == 0, "team status");
        CHECK(sum_dst == (n + 1) / 2, "team sum = %ld", sum_dst);
        shmem_team_destroy(evens);
    } else {
        CHECK(evens == SHMEM_TEAM_INVALID, "odd PEs get no team");
        CHECK(shmem_team_my_pe(evens) == -1, "my_pe of SHMEM_TEAM_INVALID");
    }

    /* long double: by value through the C shim, reduced with C arithmetic */
    shmem_longdouble_p(&ld_x, 0.5L + me, peer);
    shmem_barrier_all();
    CHECK(ld_x == 0.5L + left, "ld_x = %Lf", ld_x);
    CHECK(shmem_longdouble_g(&ld_x, peer) == 0.5L + me, "ld g");
    CHECK(shmem_longdouble_sum_reduce(SHMEM_TEAM_WORLD, &ld_sum, &ld_x, 1) == 0, "ld status");
    CHECK(ld_sum == 0.5L * n + (long double) n * (n - 1) / 2, "ld sum = %Lf", ld_sum);

    /* the rest of the surface, briefly: the variadic routine (compiled from C), the name,
     * the deprecated active-set routines, the untyped forms */
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_name(name);
    CHECK(strncmp(name, "oxshmem", 7) == 0, "name %s", name);
    shmem_pcontrol(1, "ignored");
    static long psync[SHMEM_REDUCE_SYNC_SIZE], pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static int to_all_src, to_all_dst;
    to_all_src = me;
    shmem_barrier(0, 0, n, psync);
    shmem_int_max_to_all(&to_all_dst, &to_all_src, 1, 0, 0, n, (int *) pwrk, psync);
    CHECK(to_all_dst == n - 1, "max_to_all %d", to_all_dst);
    shmem_long_p(&sum_dst, 7, peer);
    shmem_barrier_all();
    CHECK(shmem_swap(&sum_dst, 8L, me) == 7, "swap");

    shmem_free(counter);
    shmem_barrier_all();
    if (failures == 0) printf("PE %d OK\n", me);
    shmem_finalize();
    return failures != 0;
}
