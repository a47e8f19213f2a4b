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

/// nvshmemx_signal_counted_reset: the local signal word back to 0, one volatile store (another
/// agent's counted puts add to it).
template <class V> __device__ void signal_counted_reset(uint64_t *signal_addr) { volatile_store(signal_addr, (uint64_t)0); }

// Device regions (NVSHMEM 3.8): a block brackets a stretch of its operations with hints (only
// NVSHMEMX_REGION_HINT_BATCH_RMA exists), which lets NVSHMEM batch non-blocking RMA inside it.
// This library issues every operation at once, so a region changes nothing on the issue path;
// the routines check their arguments as NVSHMEM's do and hand out a handle that names the block
// (bit 63 set, the hints in bits 32..39, the block's linear index in bits 0..31), which
// region_stop_block checks. region_is_active reports 0: no region is in effect on the issue path.
constexpr uint64_t REGION_TAG = 1ull << 63;
__device__ inline bool region_hints_ok(uint32_t hints) { return (hints & ~(uint32_t)NVSHMEMX_REGION_HINT_BATCH_RMA) == 0; }

template <class V> __device__ int region_start(nvshmemx_region_handle_t *handle, const nvshmemx_region_attrs_t *attrs) {
    V::sync();
    uint32_t hints = attrs ? attrs->hints : (uint32_t)NVSHMEMX_REGION_HINT_NONE;
    int rc = NVSHMEMX_SUCCESS;
    if (!handle || !region_hints_ok(hints)) rc = NVSHMEMX_ERROR_INVALID_VALUE;
    else *handle = REGION_TAG | ((uint64_t)hints << 32) | block_id();
    V::sync();
    return rc;
}
template <class V> __device__ int region_stop(nvshmemx_region_handle_t handle) {
    V::sync();
    bool ok = (handle & REGION_TAG) && region_hints_ok((uint32_t)(handle >> 32) & 0x7fffffffu) &&
              (uint32_t)handle == block_id();
    V::sync();
    return ok ? NVSHMEMX_SUCCESS : NVSHMEMX_ERROR_INVALID_VALUE;
}
template <class V> __device__ int region_is_active(uint32_t hints, int *active) {
    if (!active || !region_hints_ok(hints)) return NVSHMEMX_ERROR_INVALID_VALUE;
    *active = 0;
    return NVSHMEMX_SUCCESS;
}

// Shared memory for NVSHMEM 3.8's TMA transfers. This library moves data without TMA, so a
// block's shared memory is never used; ask_smem answers NVSHMEM's amounts so that a program
// sizes its launch as it would for NVSHMEM, give_smem and release_smem accept and keep nothing
// (what NVSHMEM does when its TMA policy is off).
template <class V> __device__ int ask_smem(nvshmemx_smem_amount_t flag) {
    switch (flag) {
        case NVSHMEMX_SMEM_MINIMUM: return 32 * 1024;
        case NVSHMEMX_SMEM_BARRIERS_ONLY: return 512 + 32 * 16 + 7 * 16;  // NVSHMEM 3.8's barrier carve
        default: return 64 * 1024;
    }
}
template <class V> __device__ void give_smem(void *, size_t) {}
template <class V> __device__ void release_smem() {}

}  // namespace api
}  // namespace oxshmemi
