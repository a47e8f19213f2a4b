/*
 * gpu_module.c -- nvshmemx_cumodule_init / _finalize and nvshmemx_culibrary_init / _finalize:
 * CUDA code the program loads itself (a cubin linked with libnvshmem_device.a, as Triton and
 * nvshmem4py load theirs) gets the PE's NVSHMEM device state, and its kernels then reach the
 * peers.
 *
 * It runs under the emulated driver (tests/emucuda), launched by tests/tests/nvshmem.rs with
 * OXSHMEM_CUDA_HEAP=on (this program does not link the device library: the GPU back end comes
 * up for the modules it loads). Its arguments are three copies of tests/cuda/modules/gpu_ring.cu
 * built for the CPU target (oshnvcc --target cpu -shared), each a module image of its own (one
 * copy of a shared object is one set of globals): the first is loaded as a module and bound,
 * the second as a module and never bound, the third as a library (cuLibraryLoadData) and bound.
 * ring_put(dest, me, npes), run by 32 threads, stores (me + 1) * 1000 + t into
 * dest[me * 32 + t] on PE (me + 1) % npes.
 *
 * Lines the test looks for: "PE n: module ring_put from PE l arrived (32 threads)", "PE n: an
 * unbound module's kernel stored nothing", "PE n: library ring_put from PE l arrived (32
 * threads)". A mismatch prints "PE n: <what>: expected X got Y" on stderr; a PE that saw none
 * prints "PE n: OK".
 */
#define _POSIX_C_SOURCE 200809L
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver calls this program makes itself (CUDA 13.0's cuda.h signatures). */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUfunction;
typedef void *CUkernel;
typedef void *CUstream;
CUresult cuInit(unsigned flags);
CUresult cuDeviceGet(CUdevice *d, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d);
CUresult cuCtxGetCurrent(CUcontext *c);
CUresult cuCtxSetCurrent(CUcontext c);
CUresult cuCtxSynchronize(void);
CUresult cuModuleLoadData(CUmodule *m, const void *image);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name);
CUresult cuModuleUnload(CUmodule m);
CUresult cuLibraryLoadData(CUlibrary *l, const void *code, void *jit_options, void **jit_values, unsigned n_jit,
                           void *lib_options, void **lib_values, unsigned n_lib);
CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name);
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name);
CUresult cuLibraryUnload(CUlibrary l);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra);

enum { THREADS = 32 };

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
        fprintf(stderr, "PE %d: %s returned CUDA error %d\n", me, what, r);
        failures++;
    }
}

/* The emulated driver's image naming the shared object `so`. */
static char *image_of(const char *so) {
    static const char magic[] = "OXEMUCUDA-HOST-SO\n";
    char *image = malloc(sizeof magic + strlen(so));
    if (!image) abort();
    strcpy(image, magic);
    strcat(image, so);
    return image;
}

/* The device library's state pointer in a module or library (its global oxshmemi_state_d, read
 * directly: device memory is host memory under the emulated driver). */
static uint64_t state_global(const char *what, CUdeviceptr at, size_t bytes) {
    check(what, 8, (long long)bytes);
    return at ? *(volatile uint64_t *)(uintptr_t)at : 0;
}
static uint64_t module_state(CUmodule m) {
    CUdeviceptr at = 0;
    size_t bytes = 0;
    cu("cuModuleGetGlobal(oxshmemi_state_d)", cuModuleGetGlobal_v2(&at, &bytes, m, "oxshmemi_state_d"));
    return state_global("module oxshmemi_state_d size", at, bytes);
}
static uint64_t library_state(CUlibrary l) {
    CUdeviceptr at = 0;
    size_t bytes = 0;
    cu("cuLibraryGetGlobal(oxshmemi_state_d)", cuLibraryGetGlobal(&at, &bytes, l, "oxshmemi_state_d"));
    return state_global("library oxshmemi_state_d size", at, bytes);
}

/* ring_put(buf, me, npes) on 32 threads, waited for, then a barrier so every PE's puts are in. */
static void ring(const char *what, CUfunction f, uint64_t *buf) {
    void *params[] = {&buf, &me, &npes};
    cu(what, cuLaunchKernel(f, 1, 1, 1, THREADS, 1, 1, 0, NULL, params, NULL));
    cu("cuCtxSynchronize", cuCtxSynchronize());
    nvshmem_barrier_all();
}

/* How many of `buf`'s npes * 32 words hold what ring_put stores: the left neighbour's slots
 * here (read with nvshmem_getmem from this PE's GPU heap) and this PE's slots on the right
 * neighbour. Every other word must be 0. */
static int ring_arrived(const char *what, const uint64_t *buf) {
    int left = (me + npes - 1) % npes, right = (me + 1) % npes, arrived = 0;
    uint64_t *mine = calloc((size_t)npes * THREADS, sizeof(uint64_t));
    uint64_t theirs[THREADS];
    if (!mine) abort();
    nvshmem_getmem(mine, buf, (size_t)npes * THREADS * sizeof(uint64_t), me);
    nvshmem_getmem(theirs, buf + (size_t)me * THREADS, sizeof theirs, right);
    char label[160];
    for (int pe = 0; pe < npes; pe++)
        for (int t = 0; t < THREADS; t++) {
            uint64_t v = mine[pe * THREADS + t];
            if (pe == left && v == (uint64_t)(left + 1) * 1000 + t) arrived++;
            else if (pe != left) {
                snprintf(label, sizeof label, "%s: word %d of PE %d's slots here", what, t, pe);
                check(label, 0, (long long)v);
            }
        }
    int stored = 0;
    for (int t = 0; t < THREADS; t++) stored += theirs[t] == (uint64_t)(me + 1) * 1000 + t;
    free(mine);
    if (arrived != stored) {
        fprintf(stderr, "PE %d: %s: %d of the left neighbour's words arrived here, %d of mine on the right\n", me, what,
                arrived, stored);
        failures++;
    }
    return arrived;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: gpu_module BOUND.so UNBOUND.so LIBRARY.so (CPU-target builds of gpu_ring.cu)\n");
        return 2;
    }
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    int left = (me + npes - 1) % npes;
    size_t words = (size_t)npes * THREADS;
    uint64_t *bound_buf = nvshmem_calloc(words, sizeof(uint64_t));
    uint64_t *unbound_buf = nvshmem_calloc(words, sizeof(uint64_t));
    uint64_t *finalized_buf = nvshmem_calloc(words, sizeof(uint64_t));
    uint64_t *library_buf = nvshmem_calloc(words, sizeof(uint64_t));
    if (!bound_buf || !unbound_buf || !finalized_buf || !library_buf) {
        fprintf(stderr, "PE %d: nvshmem_calloc failed\n", me);
        return 1;
    }

    /* The program's own context: the GPU's primary context, which nvshmem_init made current when
     * the GPU back end came up. */
    CUcontext ctx = NULL;
    cu("cuInit", cuInit(0));
    cu("cuCtxGetCurrent", cuCtxGetCurrent(&ctx));
    if (!ctx) {
        CUdevice d;
        cu("cuDeviceGet", cuDeviceGet(&d, 0));
        cu("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, d));
        cu("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    }

    /* Bad handles: a clear error and a non-zero code, nothing else. */
    check("nvshmemx_cumodule_init(NULL) fails", 1, nvshmemx_cumodule_init(NULL) != 0);
    check("nvshmemx_culibrary_init(NULL) fails", 1, nvshmemx_culibrary_init(NULL) != 0);

    /* A module bound with nvshmemx_cumodule_init: its kernels reach the peers. */
    CUmodule bound = NULL, unbound = NULL;
    CUfunction f = NULL;
    cu("cuModuleLoadData(bound)", cuModuleLoadData(&bound, image_of(argv[1])));
    if (!bound) return 1;
    check("oxshmemi_state_d before nvshmemx_cumodule_init", 0, (long long)module_state(bound));
    check("nvshmemx_cumodule_init", 0, nvshmemx_cumodule_init(bound));
    uint64_t state = module_state(bound);
    check("oxshmemi_state_d set by nvshmemx_cumodule_init", 1, state != 0);
    cu("cuModuleGetFunction(ring_put)", cuModuleGetFunction(&f, bound, "ring_put"));
    ring("cuLaunchKernel(module ring_put)", f, bound_buf);
    int got = ring_arrived("module ring_put", bound_buf);
    check("module ring_put: words arrived", THREADS, got);
    if (got == THREADS) printf("PE %d: module ring_put from PE %d arrived (%d threads)\n", me, left, THREADS);

    /* A module nobody bound: its device library has no state, so its kernel's puts go nowhere.
     * (The device library does not report that today: the data is simply missing.) */
    cu("cuModuleLoadData(unbound)", cuModuleLoadData(&unbound, image_of(argv[2])));
    if (!unbound) return 1;
    check("an unbound module's oxshmemi_state_d", 0, (long long)module_state(unbound));
    cu("cuModuleGetFunction(ring_put, unbound)", cuModuleGetFunction(&f, unbound, "ring_put"));
    ring("cuLaunchKernel(unbound ring_put)", f, unbound_buf);
    got = ring_arrived("unbound ring_put", unbound_buf);
    check("unbound module ring_put: words arrived", 0, got);
    if (got == 0)
        printf("PE %d: an unbound module's kernel stored nothing (0 of %d words; no error is reported)\n", me, THREADS);

    /* nvshmemx_cumodule_finalize: the module's state is null again, and so are its puts. */
    check("nvshmemx_cumodule_finalize", 0, nvshmemx_cumodule_finalize(bound));
    check("oxshmemi_state_d after nvshmemx_cumodule_finalize", 0, (long long)module_state(bound));
    cu("cuModuleGetFunction(ring_put)", cuModuleGetFunction(&f, bound, "ring_put"));
    ring("cuLaunchKernel(finalized ring_put)", f, finalized_buf);
    check("finalized module ring_put: words arrived", 0, ring_arrived("finalized ring_put", finalized_buf));

    /* A library (CUDA 12's cuLibraryLoadData) bound with nvshmemx_culibrary_init. */
    CUlibrary lib = NULL;
    CUkernel k = NULL;
    cu("cuLibraryLoadData", cuLibraryLoadData(&lib, image_of(argv[3]), NULL, NULL, 0, NULL, NULL, 0));
    if (!lib) return 1;
    check("nvshmemx_culibrary_init", 0, nvshmemx_culibrary_init(lib));
    check("the library's oxshmemi_state_d is the module's", (long long)state, (long long)library_state(lib));
    cu("cuLibraryGetKernel(ring_put)", cuLibraryGetKernel(&k, lib, "ring_put"));
    ring("cuLaunchKernel(library ring_put)", (CUfunction)k, library_buf);
    got = ring_arrived("library ring_put", library_buf);
    check("library ring_put: words arrived", THREADS, got);
    if (got == THREADS) printf("PE %d: library ring_put from PE %d arrived (%d threads)\n", me, left, THREADS);
    check("nvshmemx_culibrary_finalize", 0, nvshmemx_culibrary_finalize(lib));
    check("library oxshmemi_state_d after nvshmemx_culibrary_finalize", 0, (long long)library_state(lib));

    nvshmem_free(library_buf);
    nvshmem_free(finalized_buf);
    nvshmem_free(unbound_buf);
    nvshmem_free(bound_buf);
    nvshmem_finalize();
    /* Unloaded last: a CPU-target module's host part registers callbacks with the host library
     * when it is loaded (bindings/cuda/src/host.cu), which must not outlive it while NVSHMEM
     * runs. */
    cu("cuModuleUnload(bound)", cuModuleUnload(bound));
    cu("cuModuleUnload(unbound)", cuModuleUnload(unbound));
    cu("cuLibraryUnload", cuLibraryUnload(lib));
    if (failures == 0) printf("PE %d: OK\n", me);
    return failures != 0;
}
