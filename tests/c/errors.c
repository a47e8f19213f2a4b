/*
 * Errors a user makes, one per run (argv[1] names it). PE 0 makes the mistake while the other
 * PEs wait in shmem_barrier_all: the job must end, non-zero, with the library's message naming
 * the routine and the problem, and nobody may print "survived".
 *
 *   stack_p      shmem_int_p to a stack variable                -> shmem_int_p ... not symmetric
 *   stack_get    shmem_long_get from a stack variable           -> shmem_long_get ... not symmetric
 *   malloc_put   shmem_putmem into malloc'd memory              -> shmem_putmem ... not symmetric
 *   stack_amo    shmem_int_atomic_fetch_add on a stack variable -> ... not symmetric
 *   pe_range     shmem_int_p to PE n_pes                        -> shmem_int_p ... out of range
 *   global_exit  shmem_global_exit(7) on PE 0                   -> the job's status is 7
 *   global_exit0 shmem_global_exit(0) on PE 0                   -> the job's status is 0
 *   clear_lock   shmem_clear_lock on a lock nobody holds        -> shmem_clear_lock ... not held
 *   invalid_ctx  shmem_ctx_int_p on SHMEM_CTX_INVALID           -> ... SHMEM_CTX_INVALID
 *   ok           no mistake: exits 0
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_target;
static long g_lock;

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ok";
    volatile int on_stack = 0;
    long local[4] = {0};
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int peer = (me + 1) % npes;
    if (me == 0) {
        fprintf(stderr, "PE 0: about to make the mistake '%s'\n", mode);
        fflush(stderr);
        if (strcmp(mode, "stack_p") == 0) {
            shmem_int_p((int *)&on_stack, 1, peer);
        } else if (strcmp(mode, "stack_get") == 0) {
            long src_on_stack[4] = {1, 2, 3, 4};
            shmem_long_get(local, src_on_stack, 4, peer);
        } else if (strcmp(mode, "malloc_put") == 0) {
            char *m = (char *)malloc(64);
            shmem_putmem(m, "x", 1, peer);
            free(m);
        } else if (strcmp(mode, "stack_amo") == 0) {
            (void)shmem_int_atomic_fetch_add((int *)&on_stack, 1, peer);
        } else if (strcmp(mode, "pe_range") == 0) {
            shmem_int_p(&g_target, 1, npes);
        } else if (strcmp(mode, "global_exit") == 0) {
            shmem_global_exit(7);
        } else if (strcmp(mode, "global_exit0") == 0) {
            shmem_global_exit(0);
        } else if (strcmp(mode, "clear_lock") == 0) {
            fprintf(stderr, "PE 0: the lock is at %p\n", (void *)&g_lock);
            fflush(stderr);
            shmem_clear_lock(&g_lock);
        } else if (strcmp(mode, "invalid_ctx") == 0) {
            shmem_ctx_int_p(SHMEM_CTX_INVALID, &g_target, 1, peer);
        }
        if (strcmp(mode, "ok") != 0) {
            printf("PE 0: survived '%s'\n", mode);
            fflush(stdout);
        }
    }
    shmem_barrier_all();
    if (strcmp(mode, "ok") != 0) {
        printf("PE %d: survived the barrier after '%s'\n", me, mode);
        fflush(stdout);
    }
    shmem_finalize();
    return 0;
}
