/*
 * What the C test programs share: the type tables of OpenSHMEM 1.5 as X-macros, the checks
 * and the end of a run.
 *
 * Every program checks what the library did against values it computes itself (with plain C
 * arithmetic, never with the library) and reports each mismatch as
 *
 *     PE n: <what>: expected X got Y
 *
 * on stderr, then carries on (so that one run shows every failure and no PE is left alone in a
 * collective), and exits non-zero from ox_finish. On success each PE prints
 * "PE n: <program>: OK (k checks)" on stdout, which tests/c_suite.rs looks for.
 *
 * The type tables follow the tables of the specification (section 9.4.1 for RMA, 9.8 for AMO,
 * 9.9.2 for collectives, 9.10 for point-to-point synchronization). X(NAME, TYPE) per row.
 */
#ifndef OXTEST_H
#define OXTEST_H

#include <shmem.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Standard RMA types (Table 5): put/get/p/g/iput/iget/nbi/put_signal, broadcast, collect,
 * fcollect, alltoall(s), and the max/min/sum/prod reductions */
#define OX_RMA_TYPES(X)                                                                        \
    X(float, float) X(double, double) X(longdouble, long double) X(char, char)                 \
    X(schar, signed char) X(short, short) X(int, int) X(long, long) X(longlong, long long)     \
    X(uchar, unsigned char) X(ushort, unsigned short) X(uint, unsigned int)                    \
    X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int8, int8_t)                   \
    X(int16, int16_t) X(int32, int32_t) X(int64, int64_t) X(uint8, uint8_t)                    \
    X(uint16, uint16_t) X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t)                \
    X(ptrdiff, ptrdiff_t)

/* Standard AMO types (Table 6): compare_swap, fetch_inc, inc, fetch_add, add */
#define OX_AMO_TYPES(X)                                                                        \
    X(int, int) X(long, long) X(longlong, long long) X(uint, unsigned int)                     \
    X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int32, int32_t)                 \
    X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t)                  \
    X(ptrdiff, ptrdiff_t)

/* Extended AMO types (Table 7): fetch, set, swap */
#define OX_EXT_AMO_TYPES(X) X(float, float) X(double, double) OX_AMO_TYPES(X)

/* Bitwise AMO types (Table 8): and, or, xor and their fetching forms */
#define OX_BITWISE_AMO_TYPES(X)                                                                \
    X(uint, unsigned int) X(ulong, unsigned long) X(ulonglong, unsigned long long)             \
    X(int32, int32_t) X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t)

/* Point-to-point synchronization types (Table 13) */
#define OX_SYNC_TYPES(X)                                                                       \
    X(short, short) X(int, int) X(long, long) X(longlong, long long)                           \
    X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)                    \
    X(ulonglong, unsigned long long) X(int32, int32_t) X(int64, int64_t)                       \
    X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t) X(ptrdiff, ptrdiff_t)

/* and/or/xor reductions (Table 10, plus the signed types Sandia OpenSHMEM also has) */
#define OX_REDUCE_BIT_TYPES(X)                                                                 \
    X(short, short) X(int, int) X(long, long) X(longlong, long long)                           \
    X(uchar, unsigned char) X(ushort, unsigned short) X(uint, unsigned int)                    \
    X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int8, int8_t)                   \
    X(int16, int16_t) X(int32, int32_t) X(int64, int64_t) X(uint8, uint8_t)                    \
    X(uint16, uint16_t) X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t)

/* max/min reductions: every standard RMA type; sum/prod: those and the complex types */
#define OX_REDUCE_MINMAX_TYPES(X) OX_RMA_TYPES(X)
#define OX_REDUCE_ARITH_TYPES(X) OX_RMA_TYPES(X)

/* The deprecated TYPE_OP_to_all routines (OpenSHMEM 1.4 Table 12) */
#define OX_OLD_BIT_TYPES(X) X(short, short) X(int, int) X(long, long) X(longlong, long long)
#define OX_OLD_MINMAX_TYPES(X)                                                                 \
    X(float, float) X(double, double) X(longdouble, long double) OX_OLD_BIT_TYPES(X)
#define OX_OLD_ARITH_TYPES(X) OX_OLD_MINMAX_TYPES(X)

/* The sized forms: X(SIZE-suffix, bytes per element); iput/iget have no mem form */
#define OX_BITS_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)
#define OX_SIZED_SIZES(X) OX_BITS_SIZES(X) X(mem, 1)

/* ------------------------------------------------------------------------------------------ */

static int ox_me = -1, ox_npes = 0;
static long ox_failures = 0, ox_checks = 0;
static const char *ox_program = "test";

/* Starts the library and records who we are. */
static inline void ox_init(const char *program) {
    ox_program = program;
    shmem_init();
    ox_me = shmem_my_pe();
    ox_npes = shmem_n_pes();
}

/* Reports one mismatch; prints at most 40 per PE, counts them all. */
#ifdef __GNUC__
__attribute__((format(printf, 1, 2)))
#endif
static inline void ox_fail(const char *fmt, ...);

#include <stdarg.h>
static inline void ox_fail(const char *fmt, ...) {
    ox_failures++;
    if (ox_failures > 40) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "PE %d: %s\n", ox_me, buf);
    fflush(stderr);
}

/* Checks got == expected in the type of `got`; prints both through long double, whose 64-bit
 * mantissa holds every 64-bit integer exactly. WHAT is a printf format and its arguments. */
#define CHECK_EQ(expected, got, ...)                                                           \
    do {                                                                                       \
        __typeof__(got) ox_g_ = (got);                                                         \
        __typeof__(got) ox_e_ = (__typeof__(got))(expected);                                   \
        ox_checks++;                                                                           \
        if (!(ox_g_ == ox_e_)) {                                                               \
            char ox_w_[256];                                                                   \
            snprintf(ox_w_, sizeof ox_w_, __VA_ARGS__);                                        \
            ox_fail("%s: expected %.21Lg got %.21Lg", ox_w_, (long double)ox_e_,               \
                    (long double)ox_g_);                                                       \
        }                                                                                      \
    } while (0)

/* Checks a condition that has no single expected value. */
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        ox_checks++;                                                                           \
        if (!(cond)) {                                                                         \
            char ox_w_[256];                                                                   \
            snprintf(ox_w_, sizeof ox_w_, __VA_ARGS__);                                        \
            ox_fail("%s: expected %s got false", ox_w_, #cond);                                \
        }                                                                                      \
    } while (0)

/* A value of any arithmetic type for PE p, element i, salt k: wide enough to fill 64-bit
 * types, truncated by the cast for the narrow ones (computed the same way on every PE). */
static inline uint64_t ox_mix(int p, long i, int k) {
    uint64_t x = (uint64_t)(p + 1) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ULL ^
                 (uint64_t)(k + 7) * 0x94D049BB133111EBULL;
    x ^= x >> 29;
    return x;
}
/* For floating types keep the value exact and small enough to print: a multiple of 1/4. */
#define OX_VAL(T, p, i, k)                                                                     \
    ((T)1.5 == (T)1 ? (T)ox_mix(p, i, k) : (T)((double)(ox_mix(p, i, k) % 100000) / 4.0))

/* Ends the run: a barrier, the verdict, shmem_finalize, the exit status. */
static inline int ox_finish(void) {
    shmem_barrier_all();
    if (ox_failures == 0) {
        printf("PE %d: %s: OK (%ld checks)\n", ox_me, ox_program, ox_checks);
    } else {
        fprintf(stderr, "PE %d: %s: FAILED (%ld of %ld checks)\n", ox_me, ox_program, ox_failures,
                ox_checks);
    }
    fflush(stdout);
    fflush(stderr);
    shmem_finalize();
    return ox_failures == 0 ? 0 : 1;
}

#endif /* OXTEST_H */
