/*
 * The timing loop of the OSU-style collective benchmarks: each iteration is one call of the
 * collective, timed alone, with shmem_barrier_all between iterations (which also makes each
 * pSync reusable, as the active-set collectives require); the reported latency is the
 * average over PEs of each PE's average, as OSU reports it.
 */
#ifndef OSU_COLL_H
#define OSU_COLL_H

#include "osu_util.h"

static long osu_red_psync[_SHMEM_REDUCE_SYNC_SIZE];
static double osu_red_wrk[_SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double osu_red_src, osu_red_dst;

static inline void osu_coll_init(void) {
    int i;
    for (i = 0; i < _SHMEM_REDUCE_SYNC_SIZE; i++) osu_red_psync[i] = _SHMEM_SYNC_VALUE;
    shmem_barrier_all();
}

/* the average over PEs of `local_avg` */
static inline double osu_avg_over_pes(double local_avg) {
    osu_red_src = local_avg;
    shmem_barrier_all();
    shmem_double_sum_to_all(&osu_red_dst, &osu_red_src, 1, 0, 0, _num_pes(), osu_red_wrk, osu_red_psync);
    shmem_barrier_all();
    return osu_red_dst / _num_pes();
}

/* Runs BODY (one collective call for `size` bytes) the number of times osu_iters gives,
 * timed, and prints the line for `size` on PE 0. */
#define OSU_TIME_COLLECTIVE(size, small, BODY)                                                 \
    do {                                                                                       \
        int iters_ = osu_iters(size, small), skip_ = osu_skip(iters_), i_;                     \
        double total_ = 0, t_;                                                                 \
        for (i_ = 0; i_ < iters_ + skip_; i_++) {                                              \
            shmem_barrier_all();                                                               \
            t_ = osu_now_us();                                                                 \
            BODY;                                                                              \
            if (i_ >= skip_) total_ += osu_now_us() - t_;                                      \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        double avg_ = osu_avg_over_pes(total_ / iters_);                                       \
        if (_my_pe() == 0) osu_line(size, avg_);                                               \
    } while (0)

#endif /* OSU_COLL_H */
