// The rest of the device API: addresses, versions, global_exit.
#pragma once

#include "sync.cuh"

namespace oxshmemi {
namespace api {

/// nvshmem_ptr: the peer's copy mapped here (P2P peers), else NULL.
template <class V> __device__ void *ptr(const void *p, int pe) {
    oxshmem_device_state_t *s = st();
    uint64_t a = (uint64_t)p;
    if (!s || pe < 0 || (uint32_t)pe >= s->n_pes || a < s->heap_base || a >= s->heap_base + s->heap_size) return nullptr;
    if (s->channel[pe] != OXSHMEM_CHANNEL_P2P) return nullptr;
    return (void *)(s->peer_base[pe] + (a - s->heap_base));
}
/// nvshmemx_mc_ptr: no multicast objects here.
template <class V> __device__ void *mc_ptr(nvshmem_team_t, const void *) { return nullptr; }
template <class V> __device__ void info_get_version(int *major, int *minor) {
    *major = NVSHMEM_MAJOR_VERSION;
    *minor = NVSHMEM_MINOR_VERSION;
}
template <class V> __device__ void vendor_get_version_info(int *major, int *minor, int *patch) {
    *major = NVSHMEM_VENDOR_MAJOR_VERSION;
    *minor = NVSHMEM_VENDOR_MINOR_VERSION;
    *patch = NVSHMEM_VENDOR_PATCH_VERSION;
}
template <class V> __device__ void info_get_name(char *name) {
    const char v[] = NVSHMEM_VENDOR_STRING;
    for (size_t i = 0; i < sizeof(v) && i < NVSHMEM_MAX_NAME_LEN; i++) name[i] = v[i];
}
/// nvshmem_global_exit from the device: records KernelPanic (value = status) so the host
/// reports it, then traps the kernel.
template <class V> __device__ void global_exit(int status) {
    record_in(st(), OXSHMEM_ERR_KERNEL_PANIC, OXSHMEM_OP_KERNEL, st() ? (int64_t)st()->my_pe : -1, 0, 0, (uint64_t)(int64_t)status,
              0, block_id(), thread_id());
    fence_system();
    trap();
}

}  // namespace api
}  // namespace oxshmemi
