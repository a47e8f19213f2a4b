/* Collect latency, as osu_oshm_collect: shmem_collect64 over the whole job with a pSync array,
 * 8 B to 1 MiB from every PE. */
#include "osu_coll.h"

static long pSync[_SHMEM_COLLECT_SYNC_SIZE];

int main(void) {
    start_pes(0);
    int me = _my_pe(), npes = _num_pes(), i;
    size_t size;
    for (i = 0; i < _SHMEM_COLLECT_SYNC_SIZE; i++) pSync[i] = _SHMEM_SYNC_VALUE;
    osu_coll_init();
    long *src = (long *)shmalloc(OSU_MAX_SIZE), *dst = (long *)shmalloc((size_t)OSU_MAX_SIZE * npes);
    memset(src, 2, OSU_MAX_SIZE);
    if (me == 0) osu_header("OSU-style OpenSHMEM Collect Latency Test (shmem_collect64)", "Size", "Latency(us)");
    for (size = OSU_MIN_SIZE; size <= OSU_MAX_SIZE; size *= 2)
        OSU_TIME_COLLECTIVE(size, 1000, shmem_collect64(dst, src, size / 8, 0, 0, npes, pSync));
    shmem_barrier_all();
    shfree(dst);
    shfree(src);
    shmem_finalize();
    return 0;
}
