/* Put message rate, as osu_oshm_put_mr: PE 0 issues windows of 64 shmem_putmem to PE 1, each
 * window completed by shmem_quiet; messages per second, 8 B to 8 KiB. */
#include "osu_util.h"

#define WINDOW 64
#define MR_MAX 8192

int main(void) {
    start_pes(0);
    int me = _my_pe(), i, j;
    size_t size;
    if (_num_pes() != 2) {
        if (me == 0) fprintf(stderr, "osu_oshm_put_mr needs exactly 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    char *s_buf = (char *)shmalloc(MR_MAX * WINDOW), *r_buf = (char *)shmalloc(MR_MAX * WINDOW);
    memset(s_buf, 'a', MR_MAX * WINDOW);
    if (me == 0) osu_header("OSU-style OpenSHMEM Put Message Rate Test (window 64)", "Size", "Messages/s");
    for (size = OSU_MIN_SIZE; size <= MR_MAX; size *= 2) {
        int iters = osu_iters(size * 8, 2000), skip = osu_skip(iters);
        double t0 = 0;
        shmem_barrier_all();
        if (me == 0) {
            for (i = 0; i < iters + skip; i++) {
                if (i == skip) t0 = osu_now_us();
                for (j = 0; j < WINDOW; j++) shmem_putmem(r_buf + j * size, s_buf + j * size, size, 1);
                shmem_quiet();
            }
            osu_line(size, (double)iters * WINDOW / ((osu_now_us() - t0) / 1e6));
        }
        shmem_barrier_all();
    }
    shfree(r_buf);
    shfree(s_buf);
    shmem_finalize();
    return 0;
}
