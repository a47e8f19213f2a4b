/* Reduce latency, as osu_oshm_reduce: shmem_longlong_sum_to_all over the whole job with pWrk and
 * pSync, 8 B to 1 MiB of long long. */
#include "osu_coll.h"

static long pSync[_SHMEM_REDUCE_SYNC_SIZE];

int main(void) {
    start_pes(0);
    int me = _my_pe(), npes = _num_pes(), i;
    size_t size, wrk;
    for (i = 0; i < _SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = _SHMEM_SYNC_VALUE;
    osu_coll_init();
    long long *src = (long long *)shmalloc(OSU_MAX_SIZE), *dst = (long long *)shmalloc(OSU_MAX_SIZE);
    wrk = OSU_MAX_SIZE / 8 / 2 + 1;
    if (wrk < _SHMEM_REDUCE_MIN_WRKDATA_SIZE) wrk = _SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    long long *pWrk = (long long *)shmalloc(wrk * sizeof(long long));
    for (i = 0; i < OSU_MAX_SIZE / 8; i++) src[i] = me + i;
    if (me == 0) osu_header("OSU-style OpenSHMEM Reduce Latency Test (shmem_longlong_sum_to_all)", "Size", "Latency(us)");
    for (size = OSU_MIN_SIZE; size <= OSU_MAX_SIZE; size *= 2)
        OSU_TIME_COLLECTIVE(size, 1000, shmem_longlong_sum_to_all(dst, src, (int)(size / 8), 0, 0, npes, pWrk, pSync));
    shmem_barrier_all();
    shfree(pWrk);
    shfree(dst);
    shfree(src);
    shmem_finalize();
    return 0;
}
