/*
 * The machine's own cache-line trip, as a yardstick for the rounds of run.sh: two processes
 * bound to the first two CPUs this process may use (where oshrun and OpenMPI bind PEs 0 and 1)
 * pass a counter back and forth through one shared cache line, and the one-way time (half a
 * round trip) is printed, the median of 9 batches of 20,000 round trips.
 *
 * No OpenSHMEM here: this is what any runtime's small collective at 2 PEs waits for at least
 * once. On a VM whose vCPUs the host moves between physical cores, it changes from round to
 * round, and so does every latency-bound benchmark with it.
 *
 * Then, alone on the first CPU, it times a loop of dependent integer work (a store, a load and
 * a multiply per iteration, through memory as runtime code goes), the median of 9 batches: the
 * speed of that CPU this round. The host's other tenants change it too (here by up to 2x
 * within seconds), and with it every software-bound row.
 *
 * Between the trip and the CPU's speed, the same two processes run the floors of two OSU
 * rows: what a runtime with no software at all would report there. "floor-barrier-ns" is a
 * 2-process barrier (each stores its count in a line of its own and waits for the other's),
 * timed back to back as osu_oshm_barrier times shmem_barrier_all. "floor-fcollect-ns" is OSU's
 * fcollect loop (barrier, clock, 8 B allgather, clock) with the allgather done as each side
 * storing its value and count in one line of its own and copying the other's, the average of
 * the two processes as OSU reports it.
 *
 *   trip            prints "one-way-ns", "floor-barrier-ns", "floor-fcollect-ns" and
 *                   "compute-ns" (ns per step), each followed by its value
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 9
#define TRIPS 20000
#define STEPS 1000000
#define FLOOR_ITERS 5000

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v) {
    qsort(v, BATCHES, sizeof v[0], cmp);
    return v[BATCHES / 2];
}

/* The time per step of a dependent chain through memory: the CPU's speed, not the memory's. */
static double compute_ns(void) {
    volatile unsigned long x = 1;
    unsigned long a[512] = {0};
    double per[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        double t = now_ns();
        for (long i = 0; i < STEPS; i++) {
            a[i & 511] += x;
            x = x * 3 + 1;
        }
        per[b] = (now_ns() - t) / STEPS;
    }
    if (a[7] == 42) puts("");  /* keeps the array alive */
    return median(per);
}

/* One side `p` of a 2-process barrier, round `i`, through one flag line per side. */
static void pair_sync(_Atomic long *flag[2], int p, long i) {
    atomic_store_explicit(flag[p], i, memory_order_release);
    while (atomic_load_explicit(flag[1 - p], memory_order_acquire) < i) _mm_pause();
}

/* Side `p`'s floors, per batch: the barrier's time per call and the fcollect loop's. `flag[q]`
 * and `msg[q]` (count, then value) are lines side q alone writes. */
static void floors(int p, _Atomic long *flag[2], _Atomic long *msg[2], double *barrier_ns, double *fcollect_ns) {
    long round = 0, sent = 0;
    volatile long dst[2];
    for (int b = 0; b < BATCHES; b++) {
        double t = now_ns();
        for (int k = 0; k < FLOOR_ITERS; k++) pair_sync(flag, p, ++round);
        barrier_ns[b] = (now_ns() - t) / FLOOR_ITERS;
        double total = 0;
        for (int k = 0; k < FLOOR_ITERS; k++) {
            pair_sync(flag, p, ++round);
            t = now_ns();
            long v = p + 2 * k;
            atomic_store_explicit(msg[p] + 1, v, memory_order_relaxed);
            atomic_store_explicit(msg[p], ++sent, memory_order_release);
            while (atomic_load_explicit(msg[1 - p], memory_order_acquire) < sent) _mm_pause();
            dst[1 - p] = atomic_load_explicit(msg[1 - p] + 1, memory_order_relaxed);
            dst[p] = v;
            total += now_ns() - t;
        }
        fcollect_ns[b] = total / FLOOR_ITERS;
    }
    (void)dst[0];
}

/* Binds this process to the k-th CPU of `set`; returns 0 when there is none. */
static int bind_kth(const cpu_set_t *set, int k) {
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, set) && k-- == 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            return sched_setaffinity(0, sizeof one, &one) == 0;
        }
    }
    return 0;
}

int main(void) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
        fprintf(stderr, "trip: needs two CPUs\n");
        return 1;
    }
    /* The counters, each on a cache line of its own, and after them the child's floors. */
    _Atomic long *line = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (line == MAP_FAILED) {
        perror("trip: mmap");
        return 1;
    }
    _Atomic long *ping = line, *pong = line + 8;
    _Atomic long *flag[2] = {line + 16, line + 24}, *msg[2] = {line + 32, line + 40};
    double *child_floors = (double *)(line + 64); /* BATCHES barrier, then BATCHES fcollect */
    long total = (long)BATCHES * TRIPS;
    pid_t child = fork();
    if (child < 0) {
        perror("trip: fork");
        return 1;
    }
    if (!bind_kth(&allowed, child == 0 ? 1 : 0)) {
        fprintf(stderr, "trip: cannot bind\n");
        return 1;
    }
    if (child == 0) {
        for (long i = 1; i <= total; i++) {
            while (atomic_load_explicit(ping, memory_order_acquire) < i) _mm_pause();
            atomic_store_explicit(pong, i, memory_order_release);
        }
        floors(1, flag, msg, child_floors, child_floors + BATCHES);
        _exit(0);
    }
    double one_way[BATCHES];
    long i = 1;
    for (int b = 0; b < BATCHES; b++) {
        double t = now_ns();
        for (int k = 0; k < TRIPS; k++, i++) {
            atomic_store_explicit(ping, i, memory_order_release);
            while (atomic_load_explicit(pong, memory_order_acquire) < i) _mm_pause();
        }
        one_way[b] = (now_ns() - t) / TRIPS / 2;
    }
    double barrier_ns[BATCHES], fcollect_ns[BATCHES];
    floors(0, flag, msg, barrier_ns, fcollect_ns);
    int st;
    waitpid(child, &st, 0);
    for (int b = 0; b < BATCHES; b++) {
        barrier_ns[b] = (barrier_ns[b] + child_floors[b]) / 2;
        fcollect_ns[b] = (fcollect_ns[b] + child_floors[BATCHES + b]) / 2;
    }
    printf("one-way-ns %.1f\n", median(one_way));
    printf("floor-barrier-ns %.1f\n", median(barrier_ns));
    printf("floor-fcollect-ns %.1f\n", median(fcollect_ns));
    printf("compute-ns %.2f\n", compute_ns());
    return 0;
}
