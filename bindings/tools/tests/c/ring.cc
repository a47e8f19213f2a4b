// The C++ twin of ring.c, through the header's C++ overloads.
#include <shmem.h>
#include <cstdio>

static int from_left = -1;

int main() {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_p(&from_left, me, (me + 1) % n);
    shmem_barrier_all();
    if (from_left != (me + n - 1) % n) return 3;
    std::printf("C++ PE %d of %d: got %d\n", me, n, from_left);
    shmem_finalize();
    return 0;
}
