/* Atomics latency, as osu_oshm_atomics: PE 0 performs each 64-bit atomic on a symmetric long of
 * PE 1 (shmem_long_fadd, _finc, _add, _inc, _cswap, _swap), blocking, one at a time. The 32-bit
 * compare-swap is left out: OpenMPI 4.1's is broken (stack smashing). */
#include "osu_util.h"

#define OPS 6
static const char *names[OPS] = {"shmem_long_fadd", "shmem_long_finc", "shmem_long_add",
                                 "shmem_long_inc", "shmem_long_cswap", "shmem_long_swap"};

int main(void) {
    start_pes(0);
    int me = _my_pe(), i, op;
    if (_num_pes() != 2) {
        if (me == 0) fprintf(stderr, "osu_oshm_atomics needs exactly 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    long *target = (long *)shmalloc(sizeof(long));
    volatile long sink = 0;
    *target = 0;
    if (me == 0) osu_header("OSU-style OpenSHMEM Atomic Operation Test (64-bit)", "Operation", "Latency(us)");
    for (op = 0; op < OPS; op++) {
        int iters = osu_iters(8, 10000), skip = osu_skip(iters);
        double t0 = 0;
        shmem_barrier_all();
        if (me == 0) {
            for (i = 0; i < iters + skip; i++) {
                if (i == skip) t0 = osu_now_us();
                switch (op) {
                case 0: sink += shmem_long_fadd(target, 1, 1); break;
                case 1: sink += shmem_long_finc(target, 1); break;
                case 2: shmem_long_add(target, 1, 1); break;
                case 3: shmem_long_inc(target, 1); break;
                case 4: sink += shmem_long_cswap(target, (long)i, (long)i + 1, 1); break;
                default: sink += shmem_long_swap(target, (long)i, 1); break;
                }
            }
            /* the non-fetching forms complete at the quiet, inside the timed span */
            shmem_quiet();
            osu_named_line(names[op], (osu_now_us() - t0) / iters);
        }
        shmem_barrier_all();
    }
    (void)sink;
    shfree(target);
    shmem_finalize();
    return 0;
}
