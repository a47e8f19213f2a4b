/*
 * Static data, the way most C OpenSHMEM programs are written: global and static variables
 * (initialized ones in .data, zero ones in .bss, static locals of a function, a struct, an
 * 8 MiB .bss array, variables defined in another object file) as the targets of puts, gets,
 * atomics, signals, wait_until, locks and collectives. Built twice by the suite: as a PIE
 * (the default here, so every PE has its globals at a different address) and with -no-pie.
 *
 * static_data_extra.c defines the variables of the second object file.
 */
#include "oxtest.h"

/* .data */
long g_table[1024] = {1, 2, 3};
int g_dflag = -1;
uint64_t g_dsig = 5;
struct record {
    int a;
    double b;
    char name[16];
} g_rec = {1, 2.5, "initial"};
double g_dval = 0.25;

/* .bss */
int g_counter;
static int g_flag;
static unsigned long g_bits;
static long g_lock;
static uint64_t g_sig;
static double g_dbl[100];
static int g_flags[64];
static char g_big[8 << 20];
static long g_red_src[16], g_red_dst[16];
static int g_coll[256];

/* from static_data_extra.c */
extern int g_extra_data[8];
extern long g_extra_bss[8];
int extra_peek(int i);

static int me, npes, right, left;

/* a function's static locals are symmetric too */
static int *local_static(void) {
    static int hidden = 11;
    return &hidden;
}
static long *local_static_bss(void) {
    static long zeroed[4];
    return zeroed;
}

static void initial_images(void) {
    long t[4];
    struct record r;
    shmem_long_get(t, g_table, 4, right);
    CHECK_EQ(1, t[0], "remote g_table[0] before any write");
    CHECK_EQ(3, t[2], "remote g_table[2] before any write");
    CHECK_EQ(0, t[3], "remote g_table[3] before any write");
    shmem_getmem(&r, &g_rec, sizeof r, right);
    CHECK_EQ(1, r.a, "remote g_rec.a");
    CHECK_EQ(2.5, r.b, "remote g_rec.b");
    CHECK(strcmp(r.name, "initial") == 0, "remote g_rec.name is \"initial\"");
    CHECK_EQ(-1, shmem_int_g(&g_dflag, right), "remote g_dflag");
    CHECK_EQ(0, shmem_int_g(&g_counter, right), "remote g_counter");
    CHECK_EQ(11, shmem_int_g(local_static(), right), "remote function-static int");
    CHECK_EQ(0.25, shmem_double_g(&g_dval, right), "remote g_dval");
    CHECK_EQ(7, shmem_int_g(&g_extra_data[3], right), "remote g_extra_data[3] (other object file)");
    CHECK_EQ(0, shmem_long_g(&g_extra_bss[7], right), "remote g_extra_bss[7] (other object file)");
    CHECK_EQ(0, shmem_char_g(&g_big[sizeof g_big - 1], right), "remote last byte of an 8 MiB .bss array");
    shmem_barrier_all();
}

static void puts_and_gets(void) {
    int i;
    long src[1024];
    struct record r = {me, me + 0.5, "from"};
    r.name[4] = (char)('0' + me);
    r.name[5] = 0;
    for (i = 0; i < 1024; i++) src[i] = me * 10000L + i;
    shmem_long_put(g_table, src, 1024, right);
    shmem_putmem(&g_rec, &r, sizeof r, right);
    shmem_double_p(&g_dbl[99], me + 0.125, right);
    shmem_int_p(local_static(), 100 + me, right);
    shmem_long_p(&local_static_bss()[3], 200 + me, right);
    shmem_int_p(&g_extra_data[7], 300 + me, right);
    shmem_long_p(&g_extra_bss[0], 400 + me, right);
    shmem_putmem(&g_big[sizeof g_big - 4096], src, 4096, right);
    shmem_putmem(&g_big[0], src, 64, right);
    shmem_barrier_all();
    for (i = 0; i < 1024; i++)
        if (g_table[i] != left * 10000L + i) {
            CHECK_EQ(left * 10000L + i, g_table[i], "g_table[%d] after put", i);
            break;
        }
    CHECK_EQ(left, g_rec.a, "g_rec.a after putmem");
    CHECK_EQ(left + 0.5, g_rec.b, "g_rec.b after putmem");
    CHECK_EQ('0' + left, g_rec.name[4], "g_rec.name[4] after putmem");
    CHECK_EQ(left + 0.125, g_dbl[99], "g_dbl[99] after p");
    CHECK_EQ(100 + left, *local_static(), "function-static int after p");
    CHECK_EQ(200 + left, local_static_bss()[3], "function-static .bss long after p");
    CHECK_EQ(300 + left, g_extra_data[7], "g_extra_data[7] after p");
    CHECK_EQ(400 + left, g_extra_bss[0], "g_extra_bss[0] after p");
    CHECK_EQ(300 + left, extra_peek(7), "g_extra_data[7] as the other object file sees it");
    CHECK(memcmp(&g_big[sizeof g_big - 4096], &g_table[0], 4096) == 0, "the last 4 KiB of g_big");
    CHECK(memcmp(&g_big[0], &g_table[0], 64) == 0, "the first 64 bytes of g_big");
    {
        char tail[4096];
        shmem_getmem(tail, &g_big[sizeof g_big - 4096], sizeof tail, right);
        CHECK_EQ(me * 10000L + 5, ((long *)(void *)tail)[5], "getmem of the end of g_big from PE %d", right);
    }
    shmem_barrier_all();
}

static void atomics(void) {
    int k, old;
    const int K = 100;
    g_counter = 0;
    g_bits = 0;
    shmem_barrier_all();
    for (k = 0; k < K; k++) {
        shmem_int_atomic_inc(&g_counter, 0);
        (void)shmem_int_atomic_fetch_add(local_static(), 2, 0);
    }
    shmem_ulong_atomic_fetch_or(&g_bits, 1UL << me, npes - 1);
    /* a compare-swap chain on a .data word: each PE waits its turn */
    do {
        old = shmem_int_atomic_compare_swap(&g_dflag, -1 + me, me, 0);
    } while (old != -1 + me);
    shmem_barrier_all();
    if (me == 0) {
        CHECK_EQ(npes * K, g_counter, "g_counter after every PE's increments");
        CHECK_EQ(100 + left + 2 * npes * K, *local_static(), "function-static after fetch_adds");
        CHECK_EQ(npes - 1, g_dflag, "compare-swap chain on .data");
    }
    if (me == npes - 1) CHECK_EQ((1UL << npes) - 1, g_bits, "g_bits after fetch_or from every PE");
    CHECK_EQ(400 + left, shmem_long_atomic_swap(&g_extra_bss[0], 0, me), "swap on another object's .bss");
    shmem_barrier_all();
}

static void signals_and_waits(void) {
    int i;
    /* every PE tells PE 0 through a signal in .data and data in the big .bss array */
    g_dsig = 5;
    g_flag = 0;
    memset(g_flags, 0, sizeof g_flags);
    shmem_barrier_all();
    {
        char blk[1000];
        for (i = 0; i < 1000; i++) blk[i] = (char)(me * 7 + i);
        shmem_putmem_signal(&g_big[me * 1000], blk, 1000, &g_dsig, 1, SHMEM_SIGNAL_ADD, 0);
    }
    if (me == 0) {
        shmem_signal_wait_until(&g_dsig, SHMEM_CMP_EQ, 5 + (uint64_t)npes);
        for (int p = 0; p < npes; p++)
            for (i = 0; i < 1000; i++)
                if (g_big[p * 1000 + i] != (char)(p * 7 + i)) {
                    CHECK_EQ((char)(p * 7 + i), g_big[p * 1000 + i], "g_big from PE %d [%d] at the signal", p, i);
                    break;
                }
    }
    /* wait_until on a static flag and on a .data flag */
    shmem_int_p(&g_flag, 2 + me, right);
    shmem_int_wait_until(&g_flag, SHMEM_CMP_EQ, 2 + left);
    CHECK_EQ(2 + left, g_flag, "static flag after wait_until");
    shmem_int_p(&g_flags[me], 1, 0);
    if (me == 0) {
        shmem_int_wait_until_all(g_flags, (size_t)npes, NULL, SHMEM_CMP_EQ, 1);
        for (i = 0; i < npes; i++) CHECK_EQ(1, g_flags[i], "static flag array [%d]", i);
    }
    shmem_barrier_all();
    /* put_signal into .bss with the signal in .bss */
    g_sig = 0;
    shmem_barrier_all();
    shmem_double_put_signal(g_dbl, (double[]){me + 1.5, me + 2.5}, 2, &g_sig, 9, SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(&g_sig, SHMEM_CMP_EQ, 9);
    CHECK_EQ(left + 2.5, g_dbl[1], "g_dbl[1] with its signal");
    shmem_barrier_all();
}

static void lock_and_collectives(void) {
    int k, i;
    g_counter = 0;
    shmem_barrier_all();
    for (k = 0; k < 20; k++) {
        shmem_set_lock(&g_lock);
        int v = shmem_int_g(&g_counter, npes - 1);
        shmem_int_p(&g_counter, v + 1, npes - 1);
        shmem_quiet();
        shmem_clear_lock(&g_lock);
    }
    shmem_barrier_all();
    if (me == npes - 1) CHECK_EQ(20 * npes, g_counter, "counter under a static lock");
    for (i = 0; i < 16; i++) g_red_src[i] = me * i;
    CHECK_EQ(0, shmem_long_sum_reduce(SHMEM_TEAM_WORLD, g_red_dst, g_red_src, 16), "sum_reduce status");
    for (i = 0; i < 16; i++) CHECK_EQ((long)i * npes * (npes - 1) / 2, g_red_dst[i], "sum_reduce into .bss [%d]", i);
    for (i = 0; i < 4; i++) g_extra_data[i] = me * 4 + i;
    CHECK_EQ(0, shmem_int_fcollect(SHMEM_TEAM_WORLD, g_coll, g_extra_data, 4), "fcollect status");
    for (i = 0; i < 4 * npes; i++) CHECK_EQ(i, g_coll[i], "fcollect from .data into .bss [%d]", i);
    g_table[0] = me + 77;
    CHECK_EQ(0, shmem_long_broadcast(SHMEM_TEAM_WORLD, &g_table[1], &g_table[0], 1, npes - 1), "broadcast status");
    CHECK_EQ(npes - 1 + 77, g_table[1], "broadcast within .data");
    shmem_barrier_all();
}

int main(void) {
    ox_init("static_data");
    me = ox_me;
    npes = ox_npes;
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    initial_images();
    puts_and_gets();
    atomics();
    signals_and_waits();
    lock_and_collectives();
    return ox_finish();
}
