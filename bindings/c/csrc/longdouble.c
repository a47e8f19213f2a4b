/*
 * The C side of `long double`, which Rust has no type for (x87 80-bit on x86-64, IEEE binary128
 * on AArch64).
 *
 * - oxshmem_ld_rma: the by-value routines (shmem_longdouble_p, _g and their ctx forms, compiled
 *   from c_impl.c) move the value through memory and call the Rust side's hook to do the
 *   transfer. The hook is a function pointer the Rust side installs at init (shmem_init,
 *   shmem_init_thread, start_pes): this file cannot name a Rust function without it becoming
 *   an exported symbol of the library.
 * - oxshmem_ld_combine: the arithmetic of the long double reductions (max, min, sum, prod).
 */
#include <stdio.h>
#include <stdlib.h>

#include "shmem.h"

typedef void (*oxshmem_ld_rma_hook_t)(int get, shmem_ctx_t ctx, void *dest, const void *src, size_t len, int pe,
                                      const char *func);

/* Installed by the Rust side (src/longdouble.rs); hidden in the shared library. */
oxshmem_ld_rma_hook_t oxshmem_ld_rma_hook;

void oxshmem_ld_rma(int get, shmem_ctx_t ctx, void *dest, const void *src, size_t len, int pe, const char *func);
void oxshmem_ld_rma(int get, shmem_ctx_t ctx, void *dest, const void *src, size_t len, int pe, const char *func) {
    if (!oxshmem_ld_rma_hook) {
        /* The runtime's own wording (oxshmem::ErrorKind::NotInitialized). */
        fprintf(stderr, "PE 0: %s: oxshmem is not initialized (call shmem_init first)\n", func);
        exit(1);
    }
    oxshmem_ld_rma_hook(get, ctx, dest, src, len, pe, func);
}

/* Operation codes shared with src/longdouble.rs. */
enum { OXSHMEM_LD_MAX = 0, OXSHMEM_LD_MIN = 1, OXSHMEM_LD_SUM = 2, OXSHMEM_LD_PROD = 3 };

/* acc[i] = acc[i] op x[i] for i < n; max and min as the runtime's float reductions do them. */
void oxshmem_ld_combine(int op, long double *acc, const long double *x, size_t n);
void oxshmem_ld_combine(int op, long double *acc, const long double *x, size_t n) {
    size_t i;
    switch (op) {
    case OXSHMEM_LD_MAX:
        for (i = 0; i < n; i++) acc[i] = acc[i] > x[i] ? acc[i] : x[i];
        break;
    case OXSHMEM_LD_MIN:
        for (i = 0; i < n; i++) acc[i] = acc[i] < x[i] ? acc[i] : x[i];
        break;
    case OXSHMEM_LD_SUM:
        for (i = 0; i < n; i++) acc[i] += x[i];
        break;
    case OXSHMEM_LD_PROD:
        for (i = 0; i < n; i++) acc[i] *= x[i];
        break;
    default:
        abort();
    }
}
