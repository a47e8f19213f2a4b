/* Barrier latency, as osu_oshm_barrier: shmem_barrier_all, and shmem_barrier over the whole job
 * with a pSync array. */
#include "osu_util.h"

static long pSync[_SHMEM_BARRIER_SYNC_SIZE];

int main(void) {
    start_pes(0);
    int me = _my_pe(), npes = _num_pes(), i, k;
    for (i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; i++) pSync[i] = _SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    if (me == 0) osu_header("OSU-style OpenSHMEM Barrier Latency Test", "Operation", "Latency(us)");
    for (k = 0; k < 2; k++) {
        int iters = osu_iters(8, 10000), skip = osu_skip(iters);
        double t0 = 0;
        for (i = 0; i < iters + skip; i++) {
            if (i == skip) t0 = osu_now_us();
            if (k == 0) shmem_barrier_all();
            else shmem_barrier(0, 0, npes, pSync);
        }
        if (me == 0) {
            osu_named_line(k == 0 ? "barrier_all" : "barrier(pSync)", (osu_now_us() - t0) / iters);
        }
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
