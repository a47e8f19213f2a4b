// gpu_ibgda.cu -- the IBGDA channel of the C library's CUDA back end, end to end without a GPU:
// the device library's own queue-pair producer (bindings/cuda/src/ibgda.cuh, __host__
// __device__ code, compiled here for the host by nvcc) posts mlx5 work requests into the
// queues nvshmem_init built in pinned memory, rings their doorbells and polls their CQs; the
// host library's software NIC executes them on the peers' GPU heaps.
//
// Like gpu_heap.c it registers as the device library (attach, and the AMO callback as CPU
// atomics on the emulated memory) and runs under the emulated driver (tests/emucuda) with
// OXSHMEM_DEVICE_CHANNEL=ibgda, launched by tests/tests/nvshmem.rs. A mismatch prints
// "PE n: <what>: expected X got Y" on stderr; a PE that saw none prints "PE n: OK".
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdio.h>
#include <string.h>

#include "../../bindings/cuda/src/ibgda.cuh"
#include "emu_device_lib.h"

using namespace oxshmemi;
using namespace oxshmemi::mlx5;

static oxshmem_device_state_t *state;

static int attach(const void *device_state, const void *cuda_state) {
    (void)cuda_state;
    state = (oxshmem_device_state_t *)device_state;
    return 0;
}

__attribute__((constructor)) static void register_device_library() {
    oxshmemi_register_device_library(OXSHMEM_DEVICE_ABI_VERSION, attach);
    oxshmemi_register_device_amo(emu_amo);
}

static int me = -1;
static long failures = 0;

static void check(const char *what, long long expected, long long got) {
    if (expected != got) {
        fprintf(stderr, "PE %d: %s: expected %lld got %lld\n", me, what, expected, got);
        failures++;
    }
}

/// Posts `w` (signalled) on `q`; false after saying why.
static bool post(oxshmem_qp_t *q, const Wr &w) {
    uint64_t end;
    ib::Fail f;
    if (ib::post(state, q, &w, 1, true, false, &end, &f)) return true;
    fprintf(stderr, "PE %d: post failed: code %u addr %#llx\n", me, f.code, (unsigned long long)f.addr);
    failures++;
    return false;
}

static void quiet(oxshmem_qp_t *q) {
    ib::Fail f;
    if (!ib::quiet(state, q, &f)) {
        fprintf(stderr, "PE %d: quiet failed: code %u addr %#llx len %llu\n", me, f.code,
                (unsigned long long)f.addr, (unsigned long long)f.len);
        failures++;
    }
}

int main() {
    nvshmem_init();
    me = nvshmem_my_pe();
    int npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    if (!state || !state->ibgda) {
        fprintf(stderr, "PE %d: no IBGDA table in the device state\n", me);
        return 1;
    }
    oxshmem_ibgda_t *ib = state->ibgda;
    for (int pe = 0; pe < npes; pe++) check("channel is IBGDA", OXSHMEM_CHANNEL_IBGDA, state->channel[pe]);
    check("IBGDA heap is the GPU heap", (long long)state->heap_base, (long long)ib->heap_base);
    // The device's peer bases are P2P's alone (0 here); the software NIC has the mappings.
    check("no P2P base for an IBGDA peer", 0, (long long)state->peer_base[right]);
    check("peer mapping (the software NIC's)", 1, ib->mapped[right] != 0);

    int *buf = (int *)nvshmem_calloc(64, sizeof(int));
    uint64_t off = (uint64_t)(uintptr_t)buf - state->heap_base;
    oxshmem_qp_t *q = &ib->qps[right];  // queue 0 to the right neighbour
    Remote there = {ib->rbases[right] + off, ib->rkeys[right]};

    // An inline put, a put from a local (unregistered) buffer, a fetching 64-bit add.
    int small[8], big[16];
    for (int i = 0; i < 8; i++) small[i] = 100 * me + i;
    for (int i = 0; i < 16; i++) big[i] = 1000 * me + i;
    unsigned long long fetched = 12345;
    post(q, {Wr::WriteInline, {}, there, (const uint8_t *)small, sizeof small, {}, 0});
    post(q, {Wr::Write, {(uint64_t)(uintptr_t)big, sizeof big, ib->implicit_lkey}, {there.addr + 64, there.rkey},
             nullptr, 0, {}, 0});
    post(q, {Wr::Atomic, {(uint64_t)(uintptr_t)&fetched, 8, ib->implicit_lkey}, {there.addr + 160, there.rkey},
             nullptr, 0, to_nic(Amo::Add, 1ull << me, 0), 8});
    quiet(q);
    check("the add's fetched value", 0, (long long)fetched);
    nvshmem_barrier_all();
    for (int i = 0; i < 8; i++) check("inline put", 100 * left + i, buf[i]);
    for (int i = 0; i < 16; i++) check("put", 1000 * left + i, buf[16 + i]);
    check("fetch-add", 1ll << left, *(long long *)(buf + 40));

    // A get from the right neighbour.
    int got[8] = {0};
    post(q, {Wr::Read, {(uint64_t)(uintptr_t)got, sizeof got, ib->implicit_lkey}, there, nullptr, 0, {}, 0});
    quiet(q);
    for (int i = 0; i < 8; i++) check("get", 100 * me + i, got[i]);
    check("no device error", 0, (long long)state->error.state);

    nvshmem_barrier_all();
    nvshmem_free(buf);
    nvshmem_finalize();
    if (failures == 0) printf("PE %d: OK\n", me);
    return failures != 0;
}
