/*
 * gpu_stream.c -- the *_on_stream routines as stream operations of the CUDA back end: they
 * return at once, run after what the stream held before them, and what the stream gets after
 * them waits for them.
 *
 * Like gpu_heap.c it registers as the device library (so nvshmem_init builds the GPU heap)
 * and runs under the emulated driver (tests/emucuda), whose streams are worker threads and
 * whose "GPU memory" the host may read. It makes its own stream through the driver API.
 *
 * A mismatch prints "PE n: <what>: expected X got Y" on stderr; a PE that saw none prints
 * "PE n: OK".
 */
#define _POSIX_C_SOURCE 200809L
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "emu_device_lib.h"

/* The few driver calls this program makes itself (CUDA 13.0's cuda.h signatures). */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
CUresult cuInit(unsigned flags);
CUresult cuDeviceGet(CUdevice *d, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d);
CUresult cuCtxSetCurrent(CUcontext c);
CUresult cuStreamCreate(CUstream *s, unsigned flags);
CUresult cuStreamSynchronize(CUstream s);
CUresult cuStreamDestroy_v2(CUstream s);
CUresult cuLaunchHostFunc(CUstream s, void (*fn)(void *), void *user);

static int attach(const void *a, const void *b) {
    (void)a, (void)b;
    return 0;
}
__attribute__((constructor)) static void register_device_library(void) {
    oxshmemi_register_device_library(OXSHMEM_DEVICE_ABI_VERSION, attach);
    oxshmemi_register_device_amo(emu_amo);
}

static int me = -1, npes = 0;
static long failures = 0;

static void check(const char *what, long long expected, long long got) {
    if (expected != got) {
        fprintf(stderr, "PE %d: %s: expected %lld got %lld\n", me, what, expected, got);
        failures++;
    }
}

static void cu(const char *what, CUresult r) {
    if (r != 0) {
        fprintf(stderr, "PE %d: %s returned %d\n", me, what, r);
        failures++;
    }
}

enum { N = 16 };
static int src[N];
static atomic_int filled;

/* A slow stream operation before the put: it fills the put's source. */
static void slow_fill(void *arg) {
    (void)arg;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    for (int i = 0; i < N; i++) src[i] = 100 * me + i;
    atomic_store(&filled, 1);
}

/* A stream operation after a put to oneself: it sees the put's data. */
static int *probe_at;
static int seen[4];
static void probe(void *arg) {
    (void)arg;
    for (int i = 0; i < 4; i++) seen[i] = ((volatile int *)probe_at)[i];
}

int main(void) {
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    cu("cuInit", cuInit(0));
    cu("cuDeviceGet", cuDeviceGet(&dev, 0));
    cu("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    cu("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    cu("cuStreamCreate", cuStreamCreate(&s, 0));

    int *buf = (int *)nvshmem_calloc(64, sizeof(int));

    /* The put is enqueued behind the slow fill, and returns before it ran. */
    cu("cuLaunchHostFunc", cuLaunchHostFunc(s, slow_fill, NULL));
    nvshmemx_int_put_on_stream(buf, src, N, right, s);
    nvshmemx_barrier_all_on_stream(s);
    check("put_on_stream returned before the stream reached it", 0, atomic_load(&filled));
    cu("cuStreamSynchronize", cuStreamSynchronize(s));
    check("the stream ran the fill", 1, atomic_load(&filled));
    for (int i = 0; i < N; i++) check("put_on_stream sent what the stream wrote before it", 100 * left + i, buf[i]);

    /* A value-returning form waits for the stream. */
    check("g_on_stream", 100 * me + 3, nvshmemx_int_g_on_stream(buf + 3, right, s));

    /* Later stream work waits for the put. */
    int vals[4] = {7 + me, 8 + me, 9 + me, 10 + me};
    probe_at = buf + 32;
    nvshmemx_int_put_on_stream(buf + 32, vals, 4, me, s);
    cu("cuLaunchHostFunc", cuLaunchHostFunc(s, probe, NULL));
    cu("cuStreamSynchronize", cuStreamSynchronize(s));
    for (int i = 0; i < 4; i++) check("stream work after put_on_stream saw its data", 7 + me + i, seen[i]);

    /* p, quiet and barriers on the stream, over GPU memory. */
    nvshmemx_barrier_all_on_stream(s);
    nvshmemx_int_p_on_stream(buf + 48, me + 1, right, s);
    nvshmemx_quiet_on_stream(s);
    nvshmemx_barrier_all_on_stream(s);
    cu("cuStreamSynchronize", cuStreamSynchronize(s));
    check("p_on_stream", left + 1, buf[48]);

    /* Signals on the stream: a put with signal to the right, a wait on our own signal word,
     * then a signal add and the host's fetch. */
    uint64_t *sig = (uint64_t *)nvshmem_calloc(2, sizeof(uint64_t));
    int *data = (int *)nvshmem_calloc(8, sizeof(int));
    int payload[8];
    for (int i = 0; i < 8; i++) payload[i] = 40 * me + i;
    nvshmem_barrier_all();
    nvshmemx_putmem_signal_on_stream(data, payload, sizeof payload, sig, 1, NVSHMEM_SIGNAL_ADD, right, s);
    nvshmemx_signal_wait_until_on_stream(sig, NVSHMEM_CMP_GE, 1, s);
    nvshmemx_signal_op_on_stream(sig + 1, 5, NVSHMEM_SIGNAL_SET, left, s);
    nvshmemx_barrier_all_on_stream(s);
    cu("cuStreamSynchronize", cuStreamSynchronize(s));
    for (int i = 0; i < 8; i++) check("putmem_signal_on_stream data", 40 * left + i, data[i]);
    check("the signal the left neighbour added", 1, (long long)nvshmem_signal_fetch(sig));
    check("the signal the right neighbour set", 5, (long long)nvshmem_signal_fetch(sig + 1));
    nvshmemx_int_wait_until_on_stream(data, NVSHMEM_CMP_EQ, 40 * left, s);
    nvshmemx_int_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, data, data, 8, s);
    cu("cuStreamSynchronize", cuStreamSynchronize(s));
    for (int i = 0; i < 8; i++) check("sum_reduce_on_stream in place", 40 * npes * (npes - 1) / 2 + npes * i, data[i]);
    nvshmem_barrier_all();
    nvshmem_free(data);
    nvshmem_free(sig);

    cu("cuStreamDestroy", cuStreamDestroy_v2(s));
    nvshmem_free(buf);
    nvshmem_finalize();
    if (failures == 0) printf("PE %d: OK\n", me);
    return failures != 0;
}
