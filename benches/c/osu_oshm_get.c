/* Get latency, as osu_oshm_get: PE 0 gets `size` bytes from PE 1's symmetric buffer
 * (shmem_getmem), 8 B to 1 MiB; PE 1 waits in the barrier. */
#include "osu_util.h"

int main(void) {
    start_pes(0);
    int me = _my_pe(), i;
    size_t size;
    if (_num_pes() != 2) {
        if (me == 0) fprintf(stderr, "osu_oshm_get needs exactly 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    char *s_buf = (char *)shmalloc(OSU_MAX_SIZE), *r_buf = (char *)shmalloc(OSU_MAX_SIZE);
    memset(s_buf, 'a', OSU_MAX_SIZE);
    memset(r_buf, 'b', OSU_MAX_SIZE);
    if (me == 0) osu_header("OSU-style OpenSHMEM Get Test (shmem_getmem)", "Size", "Latency(us)");
    for (size = OSU_MIN_SIZE; size <= OSU_MAX_SIZE; size *= 2) {
        int iters = osu_iters(size, 10000), skip = osu_skip(iters);
        double t0 = 0;
        shmem_barrier_all();
        if (me == 0) {
            for (i = 0; i < iters + skip; i++) {
                if (i == skip) t0 = osu_now_us();
                shmem_getmem(r_buf, s_buf, size, 1);
            }
            osu_line(size, (osu_now_us() - t0) / iters);
        }
        shmem_barrier_all();
    }
    shfree(r_buf);
    shfree(s_buf);
    shmem_finalize();
    return 0;
}
