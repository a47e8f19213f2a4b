// Small kernels, one NVSHMEM call each, written only with NVSHMEM's public API: compiled for
// sm_90 against oxshmem's headers and libnvshmem_device.a and against NVIDIA NVSHMEM 3.8's, then
// device-linked and disassembled by tests/tests/cuda_sass.rs, which counts the SASS of each
// kernel along the P2P path (instructions, local-memory accesses, membars) for both libraries.
// Nothing here runs: the kernels are only compiled.
#include <nvshmem.h>
#include <nvshmemx.h>

#define K extern "C" __global__ void

K sass_int_p(int *dest, int v, int pe) { nvshmem_int_p(dest, v, pe); }
K sass_int_g(int *out, const int *src, int pe) { *out = nvshmem_int_g(src, pe); }
K sass_putmem_warp_64(void *dest, const void *src, int pe) { nvshmemx_putmem_warp(dest, src, 64, pe); }
K sass_putmem_block_4k(void *dest, const void *src, int pe) { nvshmemx_putmem_block(dest, src, 4096, pe); }
K sass_signal_set(uint64_t *sig, uint64_t v, int pe) { nvshmemx_signal_op(sig, v, NVSHMEM_SIGNAL_SET, pe); }
K sass_signal_add(uint64_t *sig, uint64_t v, int pe) { nvshmemx_signal_op(sig, v, NVSHMEM_SIGNAL_ADD, pe); }
K sass_put_signal_nbi(void *dest, const void *src, uint64_t *sig, int pe) {
    nvshmem_putmem_signal_nbi(dest, src, 8, sig, 1, NVSHMEM_SIGNAL_SET, pe);
}
K sass_quiet() { nvshmem_quiet(); }
K sass_fence() { nvshmem_fence(); }
K sass_wait_until(int *ivar, int v) { nvshmem_int_wait_until(ivar, NVSHMEM_CMP_EQ, v); }
K sass_int_fetch_add(int *out, int *dest, int v, int pe) { *out = nvshmem_int_atomic_fetch_add(dest, v, pe); }
K sass_barrier_all_block() { nvshmemx_barrier_all_block(); }
K sass_getmem_warp_64(void *dest, const void *src, int pe) { nvshmemx_getmem_warp(dest, src, 64, pe); }
