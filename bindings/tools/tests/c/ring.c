/* Each PE puts its number into its right neighbour's global variable and heap array, adds
 * one to PE 0's counter, and prints what it received. Exits non-zero on a wrong value. */
#include <shmem.h>
#include <stdio.h>

static int from_left = -1;
long counter = 0;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int *heap = shmem_malloc(4 * sizeof(int));
    if (!heap) return 2;
    int mine[4] = {me, me + 1, me + 2, me + 3};
    shmem_int_p(&from_left, me, right);
    shmem_int_put(heap, mine, 4, right);
    shmem_long_atomic_inc(&counter, 0);
    shmem_barrier_all();
    for (int i = 0; i < 4; i++)
        if (heap[i] != left + i) return 3;
    if (from_left != left) return 4;
    if (me == 0 && counter != n) return 5;
    printf("PE %d of %d: got %d\n", me, n, from_left);
    shmem_free(heap);
    shmem_finalize();
    return 0;
}
