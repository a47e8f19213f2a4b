/*
 * What the OSU-style OpenSHMEM benchmarks share: the clock, the size loop and the iteration
 * counts, and the output format.
 *
 * Like the OSU micro-benchmarks (osu_oshm_*.c), the programs use only the OpenSHMEM 1.0-1.3
 * names (start_pes, shmalloc, _my_pe, shmem_putmem, shmem_long_fadd, shmem_broadcast64 with
 * pSync, ...), so that the same source builds unchanged against oxshmem and OpenMPI's OSHMEM.
 * They do call shmem_finalize at the end (OSU leaves it out after start_pes).
 *
 * Output: "# <title>" and "# <column> <unit>" headers, then one "<size> <value>" line per size
 * (or "<operation> <value>"), which benches/c/run.sh reads.
 *
 * OSU_SCALE (environment, default 1.0) multiplies every iteration count.
 */
#ifndef OSU_UTIL_H
#define OSU_UTIL_H

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OSU_MIN_SIZE 8
#define OSU_MAX_SIZE (1 << 20)

static inline double osu_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline double osu_scale(void) {
    const char *s = getenv("OSU_SCALE");
    double v = s ? atof(s) : 1.0;
    return v > 0 ? v : 1.0;
}

/* Iterations for a message of `size` bytes: OSU's 10000 (+1000 warm-up) for small messages,
 * fewer as the messages grow so that every size takes about the same time. */
static inline int osu_iters(size_t size, int small) {
    double n = small;
    if (size > 8192) n = small * 8192.0 / (double)size;
    n *= osu_scale();
    if (n < 20) n = 20;
    return (int)n;
}
static inline int osu_skip(int iters) { return iters / 10 > 10 ? iters / 10 : 10; }

static inline void osu_header(const char *title, const char *column, const char *unit) {
    printf("# %s\n# %s %s\n", title, column, unit);
    fflush(stdout);
}

static inline void osu_line(size_t size, double value) {
    printf("%-10zu %14.3f\n", size, value);
    fflush(stdout);
}

static inline void osu_named_line(const char *name, double value) {
    printf("%-18s %14.3f\n", name, value);
    fflush(stdout);
}

#endif /* OSU_UTIL_H */
