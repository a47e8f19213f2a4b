/*
 * gpu_heap.c -- the CUDA back end's set-up, seen from a program: the GPU symmetric heap that
 * nvshmem_malloc allocates from, the peers' heaps mapped here (nvshmem_ptr), host RMA on GPU
 * memory, and the device state handed to the device library.
 *
 * This program stands in for libnvshmem_device.a: like the archive's host part, it registers
 * an attach callback before main (oxshmemi_register_device_library), and so receives the
 * device state and the CUDA-side team table that kernels would read. Then it does in plain C
 * what a kernel's P2P path does (a store through the peer's mapping, a load of its own heap).
 *
 * It runs under the emulated driver (tests/emucuda: "GPU memory" is shared host memory, so
 * the host may touch it), launched by tests/tests/nvshmem.rs; on a real GPU the direct
 * stores through nvshmem_ptr below would need a kernel. It also registers, as the archive does,
 * the host-callable atomic on GPU memory (a one-thread kernel there, CPU atomics on the
 * emulated memory here: emu_device_lib.h). With OXSHMEM_TEST_NO_AMO_KERNEL set, the first
 * host atomic must fail saying the AMO kernel is missing (gpu_host_more.c has the other host
 * routines on GPU memory, and the one it does not reach). Under
 * OXSHMEM_DEVICE_CHANNEL=proxy it also plays a kernel's proxy path: requests into the ring the
 * device state points to, with the ring protocol of bindings/cuda (ticket, wait for room, body,
 * sequence word), executed by the host library's proxy thread on the GPU heaps.
 *
 * A mismatch prints "PE n: <what>: expected X got Y" on stderr; a PE that saw none prints
 * "PE n: OK".
 */
#define _POSIX_C_SOURCE 200809L
#include <nvshmem.h>
#include <nvshmemx.h>
#include <oxshmem/device_state.h>
#include <shmem.h>

#include "emu_device_lib.h"
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA-side state (bindings/cuda/src/state.cuh: oxshmem_cuda_state_t / _team_t). */
typedef struct {
    int32_t start, stride, size, my_pe;
    uint64_t scratch, epoch;
} cuda_team_t;
typedef struct {
    uint32_t abi_version, n_teams;
    cuda_team_t *teams;
    uint64_t scratch_bytes;
} cuda_state_t;


static const oxshmem_device_state_t *state;
static const cuda_state_t *cuda_state;
static int attached;

static int attach(const void *device_state, const void *cuda) {
    state = (const oxshmem_device_state_t *)device_state;
    cuda_state = (const cuda_state_t *)cuda;
    attached++;
    return 0;
}

__attribute__((constructor)) static void register_device_library(void) {
    oxshmemi_register_device_library(OXSHMEM_DEVICE_ABI_VERSION, attach);
    if (!getenv("OXSHMEM_TEST_NO_AMO_KERNEL")) oxshmemi_register_device_amo(emu_amo);
}

static int me = -1, npes = 0;
static long failures = 0;

/* The proxy ring's producer side (bindings/cuda/src/state.cuh ring_submit). */
static uint64_t ring_submit(oxshmem_ring_t *ring, const oxshmem_proxy_request_t *r) {
    uint64_t t = __atomic_fetch_add(&ring->issue, 1, __ATOMIC_RELAXED);
    while (__atomic_load_n(&ring->completed, __ATOMIC_ACQUIRE) + ring->capacity <= t) sched_yield();
    oxshmem_ring_slot_t *slot = &ring->slots[t % ring->capacity];
    slot->body = *r;
    __atomic_store_n(&slot->seq, t + 1, __ATOMIC_RELEASE);
    return t;
}

static void ring_wait(oxshmem_ring_t *ring, uint64_t t) {
    while (__atomic_load_n(&ring->completed, __ATOMIC_ACQUIRE) <= t) sched_yield();
}

static void check(const char *what, long long expected, long long got) {
    if (expected != got) {
        fprintf(stderr, "PE %d: %s: expected %lld got %lld\n", me, what, expected, got);
        failures++;
    }
}

int main(int argc, char **argv) {
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    /* The device state the device library received. */
    check("attach calls", 1, attached);
    if (!state || !cuda_state) {
        fprintf(stderr, "PE %d: no device state attached\n", me);
        return 1;
    }
    check("state my_pe", me, state->my_pe);
    check("state n_pes", npes, state->n_pes);
    const char *channel = getenv("OXSHMEM_DEVICE_CHANNEL");
    int proxy = channel && strcmp(channel, "proxy") == 0;
    /* The device's peer bases are the P2P peers' mappings, 0 for a PE reached otherwise (the
     * inline fast paths take a base for "P2P"), and one more entry, 0, for a PE out of range. */
    check("own peer_base is heap_base (0 over the proxy)", proxy ? 0 : (long long)state->heap_base,
          (long long)state->peer_base[me]);
    check("a ring with the proxy channel", proxy, state->ring != NULL);
    for (int pe = 0; pe < npes; pe++) {
        check("channel", proxy ? OXSHMEM_CHANNEL_PROXY : OXSHMEM_CHANNEL_P2P, state->channel[pe]);
        check("peer base of a P2P peer only", !proxy, state->peer_base[pe] != 0);
    }
    check("the peer base past the last PE", 0, (long long)state->peer_base[npes]);
    check("no device error", 0, (long long)state->error.state);
    check("barrier flags in the GPU heap", (long long)state->heap_base, (long long)state->barrier_flags);
    check("cuda state abi", OXSHMEM_DEVICE_ABI_VERSION, cuda_state->abi_version);
    check("team table size", 4096, cuda_state->n_teams);
    const cuda_team_t *world = &cuda_state->teams[NVSHMEM_TEAM_WORLD];
    check("world start", 0, world->start);
    check("world stride", 1, world->stride);
    check("world size", npes, world->size);
    check("world my_pe", me, world->my_pe);
    check("world scratch in the heap", 1,
          world->scratch > state->heap_base && world->scratch < state->heap_base + state->heap_size);
    check("node team size", npes, cuda_state->teams[NVSHMEMX_TEAM_NODE].size);
    check("shared team my_pe", me, cuda_state->teams[NVSHMEM_TEAM_SHARED].my_pe);

    /* nvshmem_malloc gives GPU memory, at the same offset on every PE; shmem_malloc host memory. */
    const int N = 64;
    int *buf = (int *)nvshmem_malloc(N * sizeof(int));
    uintptr_t a = (uintptr_t)buf;
    check("nvshmem_malloc in the GPU heap", 1, a >= state->heap_base && a + N * sizeof(int) <= state->heap_base + state->heap_size);
    check("nvshmem_malloc aligned to 256", 0, (long long)(a % 256));
    long *host_off = (long *)shmem_malloc(sizeof(long));
    long *all_offs = (long *)shmem_malloc(npes * sizeof(long));
    *host_off = (long)(a - state->heap_base);
    check("shmem_malloc is not in the GPU heap", 0,
          (uintptr_t)host_off >= state->heap_base && (uintptr_t)host_off < state->heap_base + state->heap_size);
    nvshmem_long_fcollect(NVSHMEM_TEAM_WORLD, all_offs, host_off, 1);
    for (int pe = 0; pe < npes; pe++) check("same offset on every PE", *host_off, all_offs[pe]);

    /* nvshmem_ptr: the peer's heap as mapped here. */
    for (int pe = 0; pe < npes; pe++) {
        uintptr_t p = (uintptr_t)nvshmem_ptr(buf, pe);
        if (!proxy)
            check("nvshmem_ptr is the peer mapping", (long long)(state->peer_base[pe] + (a - state->heap_base)),
                  (long long)p);
        else
            check("nvshmem_ptr maps the peer", 1, p != 0);
    }
    check("nvshmem_ptr to oneself", (long long)a, (long long)(uintptr_t)nvshmem_ptr(buf, me));

    /* What a kernel's P2P store does: through the mapping of the right neighbour's heap. */
    int *peer = (int *)nvshmem_ptr(buf, right);
    for (int i = 0; i < 16; i++) peer[i] = 1000 * me + i;
    nvshmem_barrier_all();
    for (int i = 0; i < 16; i++) check("P2P store arrived", 1000 * left + i, nvshmem_int_g(buf + i, me));

    /* Host RMA on GPU memory: put, get, p, g, the nbi forms, the typed and mem forms. */
    int src[16], got[16];
    for (int i = 0; i < 16; i++) src[i] = 7 * me + i;
    nvshmem_int_put(buf + 16, src, 16, right);
    nvshmem_putmem_nbi(buf + 32, src, 8 * sizeof(int), right);
    nvshmem_quiet();
    nvshmem_int_p(buf + 48, 5000 + me, left);
    nvshmem_barrier_all();
    nvshmem_getmem(got, buf + 16, sizeof got, me);
    for (int i = 0; i < 16; i++) check("nvshmem_int_put", 7 * left + i, got[i]);
    memset(got, 0, sizeof got);
    nvshmem_int_get_nbi(got, buf + 32, 8, me);
    nvshmem_quiet();
    for (int i = 0; i < 8; i++) check("nvshmem_putmem_nbi", 7 * left + i, got[i]);
    check("nvshmem_int_p", 5000 + right, buf[48]);
    check("nvshmem_int_g from the right", 7 * me + 3, nvshmem_int_g(buf + 19, right));
    nvshmem_int_get(got, buf, 4, left);
    for (int i = 0; i < 4; i++) check("nvshmem_int_get from the left", 1000 * ((left + npes - 1) % npes) + i, got[i]);

    /* calloc zeroes, free gives the space back at the same offset on every PE. */
    nvshmem_barrier_all();
    size_t big = 4096;
    unsigned char *dirty = (unsigned char *)nvshmem_malloc(big);
    memset(dirty, 0xab, big); /* emulated GPU memory: the host may write it */
    nvshmem_free(dirty);
    unsigned char *clean = (unsigned char *)nvshmem_calloc(big / 4, 4);
    check("calloc reuses the freed block", (long long)(uintptr_t)dirty, (long long)(uintptr_t)clean);
    long nonzero = 0;
    for (size_t i = 0; i < big; i++) nonzero += clean[i] != 0;
    check("calloc zeroes", 0, nonzero);
    void *aligned = nvshmem_align(1 << 16, 100);
    check("nvshmem_align", 0, (long long)((uintptr_t)aligned % (1 << 16)));

    /* A team made by the program appears in the device team table. */
    nvshmem_team_t evens;
    nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &evens);
    if (me % 2 == 0) {
        check("split team is valid", 1, evens != NVSHMEM_TEAM_INVALID);
        const cuda_team_t *t = &cuda_state->teams[evens];
        check("team start", 0, t->start);
        if (t->size > 1) check("team stride", 2, t->stride);
        check("team size", (npes + 1) / 2, t->size);
        check("team my_pe", me / 2, t->my_pe);
        check("team scratch in the GPU heap", 1, t->scratch > state->heap_base && t->scratch < state->heap_base + state->heap_size);
        check("team epoch starts at 0", 0, (long long)t->epoch);
        uint64_t first_scratch = t->scratch;
        nvshmem_team_t again;
        nvshmem_team_split_strided(evens, 0, 1, (npes + 1) / 2, NULL, 0, &again);
        check("a second team gets another slot", 1, cuda_state->teams[again].scratch != first_scratch && cuda_state->teams[again].scratch != 0);
        nvshmem_team_destroy(again);
        nvshmem_team_destroy(evens);
        check("destroyed team's slot", -1, cuda_state->teams[evens].start);
        nvshmem_team_t third;
        nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &third);
        check("a freed slot is reused", (long long)first_scratch, (long long)cuda_state->teams[third].scratch);
        nvshmem_team_destroy(third);
    } else {
        check("not in the split team", NVSHMEM_TEAM_INVALID, evens);
        nvshmem_team_t third;
        nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &third);
        check("not in the third team", NVSHMEM_TEAM_INVALID, third);
    }

    if (argc > 1 && strcmp(argv[1], "align") == 0) {
        nvshmem_align(4 << 20, 64); /* must end the job, saying the largest alignment */
        fprintf(stderr, "PE %d: nvshmem_align(4 MiB) returned\n", me);
        return 1;
    }
    {
        /* Put with signal across the two heaps: host data with a GPU signal, and GPU data with
         * a host signal, each half on its own heap. */
        int *hdata = (int *)shmem_calloc(4, sizeof(int));
        uint64_t *hsig = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
        uint64_t *gsig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
        int *gdata = (int *)nvshmem_calloc(4, sizeof(int));
        int v[4] = {me, me + 1, me + 2, me + 3};
        shmem_putmem_signal(hdata, v, sizeof v, gsig, 3, SHMEM_SIGNAL_ADD, right); /* the OpenSHMEM form: NVSHMEM has it on streams */
        shmem_putmem_signal(gdata, v, sizeof v, hsig, 9, SHMEM_SIGNAL_SET, right);
        nvshmem_barrier_all();
        for (int i = 0; i < 4; i++) check("host data, GPU signal: data", left + i, hdata[i]);
        check("host data, GPU signal: signal", 3, (long long)nvshmem_signal_fetch(gsig));
        for (int i = 0; i < 4; i++) check("GPU data, host signal: data", left + i, gdata[i]);
        check("GPU data, host signal: signal", 9, (long long)*hsig);
        nvshmem_barrier_all();
        nvshmem_free(gdata), nvshmem_free(gsig), shmem_free(hsig), shmem_free(hdata);
    }
    void *big_align = nvshmem_align(2 << 20, 64);
    check("nvshmem_align(2 MiB)", 0, (long long)((uintptr_t)big_align % (2 << 20)));
    nvshmem_free(big_align);

    /* Host atomics on GPU memory, through the device library's AMO kernel. */
    int *ctr = buf + 56;
    long long *wide = (long long *)(buf + 60);
    nvshmem_int_p(ctr, 0, me);
    nvshmem_longlong_p(wide, 0, me);
    nvshmem_barrier_all();
    nvshmem_int_atomic_add(ctr, me + 1, right);
    nvshmem_longlong_atomic_add(wide, 1LL << 40, left);
    nvshmem_barrier_all();
    check("atomic_add from the left", left + 1, nvshmem_int_atomic_fetch(ctr, me));
    check("64-bit atomic_add from the right", 1LL << 40, nvshmem_longlong_atomic_fetch(wide, me));
    check("fetch_add", left + 1, nvshmem_int_atomic_fetch_add(ctr, 10, me));
    check("compare_swap hit", left + 11, nvshmem_int_atomic_compare_swap(ctr, left + 11, -5, me));
    check("compare_swap miss", -5, nvshmem_int_atomic_compare_swap(ctr, 99, 7, me));
    check("swap", -5, nvshmem_int_atomic_swap(ctr, 3, me));
    check("fetch_or", 3, (int)nvshmem_uint_atomic_fetch_or((unsigned *)ctr, 4u, me));
    check("after fetch_or", 7, nvshmem_int_atomic_fetch(ctr, me));
    int fetched = -1;
    shmem_int_atomic_fetch_add_nbi(&fetched, ctr, 1, me); /* the OpenSHMEM twin, on GPU memory */
    nvshmem_quiet();
    check("shmem_int_atomic_fetch_add_nbi", 7, fetched);
    check("the AMO kernel was used", 1, emu_amo_calls >= 9);

    /* Host collectives on GPU memory, through the peers' mappings. */
    {
        const size_t R = 70000, F = 20000; /* ints: reduce/broadcast, and per member for fcollect/alltoall */
        int *gs = (int *)nvshmem_malloc(R * sizeof(int)), *gd = (int *)nvshmem_malloc(R * sizeof(int));
        int *fs = (int *)nvshmem_malloc(F * sizeof(int)), *fd = (int *)nvshmem_malloc(npes * F * sizeof(int));
        int *as = (int *)nvshmem_malloc(npes * F * sizeof(int)), *ad = (int *)nvshmem_malloc(npes * F * sizeof(int));
        for (size_t i = 0; i < R; i++) gs[i] = (int)(i % 1000) + me; /* emulated GPU memory: the host may write it */
        for (size_t i = 0; i < F; i++) fs[i] = me * 100000 + (int)i;
        for (int p = 0; p < npes; p++)
            for (size_t i = 0; i < F; i++) as[p * F + i] = me * 1000000 + p * 100000 + (int)i;
        nvshmem_barrier_all();
        nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, gd, gs, R);
        long bad = 0;
        for (size_t i = 0; i < R; i++) bad += gd[i] != npes * (int)(i % 1000) + npes * (npes - 1) / 2;
        check("sum_reduce on GPU memory: wrong elements", 0, bad);
        nvshmem_int_max_reduce(NVSHMEM_TEAM_WORLD, gd, gs, 5);
        check("max_reduce on GPU memory", npes - 1 + 4, gd[4]);
        nvshmem_int_broadcast(NVSHMEM_TEAM_WORLD, gd, gs, R, npes - 1);
        bad = 0;
        for (size_t i = 0; i < R; i++) bad += gd[i] != (int)(i % 1000) + npes - 1;
        check("broadcast on GPU memory: wrong elements", 0, bad);
        nvshmem_int_fcollect(NVSHMEM_TEAM_WORLD, fd, fs, F);
        bad = 0;
        for (int p = 0; p < npes; p++)
            for (size_t i = 0; i < F; i++) bad += fd[p * F + i] != p * 100000 + (int)i;
        check("fcollect on GPU memory: wrong elements", 0, bad);
        nvshmem_int_alltoall(NVSHMEM_TEAM_WORLD, ad, as, F);
        bad = 0;
        for (int p = 0; p < npes; p++)
            for (size_t i = 0; i < F; i++) bad += ad[p * F + i] != p * 1000000 + me * 100000 + (int)i;
        check("alltoall on GPU memory: wrong elements", 0, bad);
        nvshmem_free(ad), nvshmem_free(as), nvshmem_free(fd), nvshmem_free(fs), nvshmem_free(gd), nvshmem_free(gs);
    }

    if (proxy) {
        /* A kernel's proxy path: put, p, a fetching AMO, put-signal and a signal op to the
         * neighbours, then a get, each a request executed by the proxy thread. */
        int *pbuf = (int *)nvshmem_calloc(32, sizeof(int));
        oxshmem_ring_t *ring = state->ring;
        int mine[8], back[8];
        uint64_t old = 12345, t;
        for (int i = 0; i < 8; i++) mine[i] = 500 * me + i;
        oxshmem_proxy_request_t r;
        memset(&r, 0, sizeof r);
        r.kind = OXSHMEM_PROXY_PUT, r.pe = right, r.len = sizeof mine, r.dest = (uintptr_t)pbuf, r.local = (uintptr_t)mine;
        ring_submit(ring, &r);
        memset(&r, 0, sizeof r);
        r.kind = OXSHMEM_PROXY_P, r.pe = right, r.len = 4, r.dest = (uintptr_t)(pbuf + 8), r.value = 900 + me;
        ring_submit(ring, &r);
        memset(&r, 0, sizeof r);
        r.kind = OXSHMEM_PROXY_AMO, r.flags = OXSHMEM_AMO_FETCH_ADD | OXSHMEM_AMO_W64, r.pe = right;
        r.dest = (uintptr_t)(pbuf + 16), r.value = 1ull << me, r.local = (uintptr_t)&old;
        ring_submit(ring, &r);
        memset(&r, 0, sizeof r);
        r.kind = OXSHMEM_PROXY_PUT_SIGNAL, r.pe = right, r.len = 4 * sizeof(int), r.dest = (uintptr_t)(pbuf + 20);
        r.local = (uintptr_t)mine, r.sig = (uintptr_t)(pbuf + 24), r.value = 77 + me, r.flags = 0;
        ring_submit(ring, &r);
        memset(&r, 0, sizeof r);
        r.kind = OXSHMEM_PROXY_SIGNAL_OP, r.pe = left, r.sig = (uintptr_t)(pbuf + 26), r.value = 5, r.flags = 1;
        t = ring_submit(ring, &r);
        ring_wait(ring, t);
        check("the AMO's fetched value", 0, (long long)old);
        nvshmem_barrier_all();
        for (int i = 0; i < 8; i++) check("proxy put", 500 * left + i, pbuf[i]);
        check("proxy p", 900 + left, pbuf[8]);
        check("proxy fetch_add", 1ll << left, *(long long *)(pbuf + 16));
        for (int i = 0; i < 4; i++) check("proxy put_signal data", 500 * left + i, pbuf[20 + i]);
        check("proxy put_signal signal", 77 + left, (long long)*(uint64_t *)(pbuf + 24));
        check("proxy signal add", 5, (long long)*(uint64_t *)(pbuf + 26));
        memset(&r, 0, sizeof r);
        r.kind = OXSHMEM_PROXY_GET, r.pe = right, r.len = sizeof back, r.dest = (uintptr_t)pbuf, r.local = (uintptr_t)back;
        ring_wait(ring, ring_submit(ring, &r));
        for (int i = 0; i < 8; i++) check("proxy get", 500 * me + i, back[i]);
        check("the proxy thread runs", 1, (long long)state->proxy_alive);
        nvshmem_barrier_all();
        nvshmem_free(pbuf);
    }

    nvshmem_free(aligned);
    nvshmem_free(clean);
    nvshmem_free(buf);
    shmem_free(all_offs);
    shmem_free(host_off);
    check("no device error at the end", 0, (long long)state->error.state);
    nvshmem_finalize();
    if (failures == 0) printf("PE %d: OK\n", me);
    return failures != 0;
}
