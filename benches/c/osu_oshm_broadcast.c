/* Broadcast latency, as osu_oshm_broadcast: shmem_broadcast64 from PE 0 over the whole job with
 * a pSync array, 8 B to 1 MiB. */
#include "osu_coll.h"

static long pSync[_SHMEM_BCAST_SYNC_SIZE];

int main(void) {
    start_pes(0);
    int me = _my_pe(), npes = _num_pes(), i;
    size_t size;
    for (i = 0; i < _SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = _SHMEM_SYNC_VALUE;
    osu_coll_init();
    long *src = (long *)shmalloc(OSU_MAX_SIZE), *dst = (long *)shmalloc(OSU_MAX_SIZE);
    memset(src, 1, OSU_MAX_SIZE);
    if (me == 0) osu_header("OSU-style OpenSHMEM Broadcast Latency Test (shmem_broadcast64)", "Size", "Latency(us)");
    for (size = OSU_MIN_SIZE; size <= OSU_MAX_SIZE; size *= 2)
        OSU_TIME_COLLECTIVE(size, 1000, shmem_broadcast64(dst, src, size / 8, 0, 0, 0, npes, pSync));
    shmem_barrier_all();
    shfree(dst);
    shfree(src);
    shmem_finalize();
    return 0;
}
