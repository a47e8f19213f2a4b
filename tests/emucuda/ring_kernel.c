/*
 * ring_kernel.c: what tests/cuda/gpu_ring.cu's kernels do, as host code for the emulated driver
 * (libcuda.c runs a module's "kernels" as host functions of a shared object: see README.md).
 *
 * It reads the device library's globals, which GpuDevice::load_module sets, and does what the
 * library's nvshmem_uint64_p does over P2P: a store into the peer's heap through the mapping
 * the device state names, or, for a PE out of range, an error recorded in the state's slot as
 * the library records it. So the Rust GPU device's plumbing (module globals, device state,
 * peer mappings, argument passing, the error report) runs in CI; the CUDA file runs on a GPU.
 *
 * Build: cc -shared -fPIC -O2 -I device/include -o ring_kernel.so ring_kernel.c
 */
#include <stdint.h>

#include "oxshmem/device_state.h"

typedef struct { unsigned grid[3], block[3], block_idx[3], thread_idx[3]; } oxemu_launch_t;

/* The device library's globals (bindings/cuda/src/host.cu). */
oxshmem_device_state_t *oxshmemi_state_d;
void *oxshmemi_cuda_d;

/* Records the first error, as the device library's record_in does: claim, fill, publish. */
static void record(oxshmem_device_state_t *s, uint32_t code, uint32_t op, int64_t pe, const oxemu_launch_t *at) {
    uint32_t free_ = 0;
    if (!__atomic_compare_exchange_n(&s->error.state, &free_, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    s->error.code = code;
    s->error.op = op;
    s->error.pe = pe;
    s->error.block = at->block_idx[0];
    s->error.thread = at->thread_idx[0];
    __atomic_store_n(&s->error.state, 2, __ATOMIC_RELEASE);
}

/* nvshmem_uint64_p over P2P. */
static void p_u64(uint64_t *dest, uint64_t v, int pe, const oxemu_launch_t *at) {
    oxshmem_device_state_t *s = oxshmemi_state_d;
    if (pe < 0 || (uint32_t)pe >= s->n_pes) {
        record(s, OXSHMEM_ERR_PE_OUT_OF_RANGE, OXSHMEM_OP_P, pe, at);
        return;
    }
    uint64_t *remote = (uint64_t *)(uintptr_t)(s->peer_base[pe] + ((uint64_t)(uintptr_t)dest - s->heap_base));
    __atomic_store_n(remote, v, __ATOMIC_RELEASE);
}

/* ring_put(uint64_t *dest, int me, int npes): thread t stores (me + 1) * 1000 + t into
 * dest[me * blockDim.x + t] on PE (me + 1) % npes. */
const unsigned long long oxemu_params_ring_put[] = { 3, 8, 4, 4 };
void ring_put(const oxemu_launch_t *at, void **params) {
    uint64_t *dest = *(uint64_t **)params[0];
    int me = *(int *)params[1], npes = *(int *)params[2];
    unsigned t = at->thread_idx[0];
    p_u64(dest + (uint64_t)me * at->block[0] + t, (uint64_t)(me + 1) * 1000 + t, (me + 1) % npes, at);
}

/* bad_pe(uint64_t *dest, int pe): nvshmem_uint64_p to `pe`. */
const unsigned long long oxemu_params_bad_pe[] = { 2, 8, 4 };
void bad_pe(const oxemu_launch_t *at, void **params) {
    p_u64(*(uint64_t **)params[0], 1, *(int *)params[1], at);
}
