// Shared helpers of the NVSHMEM test programs in tests/cuda/: checks that name what failed,
// and a host-side bound on every wait for the GPU (a kernel that never finishes makes the PE
// exit with a message instead of hanging the job).
//
// Only the public NVSHMEM API is used, so the programs build against NVIDIA's NVSHMEM and
// against oxshmem's nvshmem.h alike.
#pragma once

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

static int cutest_me = -1;  // this PE, once known (for messages)
static const char *cutest_prog = "cuda-test";

#define CT_FAIL(...)                                                                  \
    do {                                                                              \
        fprintf(stderr, "%s: PE %d: FAILED at %s:%d: ", cutest_prog, cutest_me,       \
                __FILE__, __LINE__);                                                  \
        fprintf(stderr, __VA_ARGS__);                                                 \
        fprintf(stderr, "\n");                                                        \
        fflush(stderr);                                                               \
        exit(1);                                                                      \
    } while (0)

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) CT_FAIL("%s: %s", #call, cudaGetErrorString(e_));      \
    } while (0)

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s: PE %d: check failed: %s: ", cutest_prog, cutest_me,  \
                    #cond);                                                           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);                        \
            fflush(stderr);                                                           \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

// Seconds a single wait for the GPU may last: $CUTEST_TIMEOUT, default 60.
static double cutest_timeout_s() {
    const char *t = getenv("CUTEST_TIMEOUT");
    double v = t ? atof(t) : 0.0;
    return v > 0 ? v : 60.0;
}

// cudaStreamSynchronize with a deadline: polls the stream; past the deadline the PE exits
// with a message naming `what` (the kernel or step that did not finish).
static void sync_or_die(cudaStream_t s, const char *what) {
    auto start = std::chrono::steady_clock::now();
    double limit = cutest_timeout_s();
    for (;;) {
        cudaError_t e = cudaStreamQuery(s);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) CT_FAIL("%s: %s", what, cudaGetErrorString(e));
        double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (el > limit) CT_FAIL("%s: did not finish within %.0f s (a device-side wait never completed)", what, limit);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

// Device-side errors: kernels count failed checks into a counter in device memory; the host
// reads it after the kernel and names the first failure.
struct DevErr {
    int count;
    int line;
    long long got;
    long long want;
};

__device__ __forceinline__ void dev_fail(DevErr *e, int line, long long got, long long want) {
    if (atomicAdd(&e->count, 1) == 0) {
        e->line = line;
        e->got = got;
        e->want = want;
    }
}

#define DCHECK(err, got, want)                                                        \
    do {                                                                              \
        long long g_ = (long long)(got), w_ = (long long)(want);                      \
        if (g_ != w_) dev_fail((err), __LINE__, g_, w_);                              \
    } while (0)

static DevErr *dev_err_new() {
    DevErr *e;
    CUDA_CHECK(cudaMalloc(&e, sizeof(DevErr)));
    CUDA_CHECK(cudaMemset(e, 0, sizeof(DevErr)));
    return e;
}

// Reads the device error record after `what` ran on `s` and fails naming the first check.
static void dev_err_check(DevErr *e, cudaStream_t s, const char *what) {
    sync_or_die(s, what);
    DevErr h;
    CUDA_CHECK(cudaMemcpy(&h, e, sizeof h, cudaMemcpyDeviceToHost));
    if (h.count)
        CT_FAIL("%s: %d device check(s) failed; first at line %d: got %lld, expected %lld", what, h.count,
                h.line, h.got, h.want);
    CUDA_CHECK(cudaMemset(e, 0, sizeof(DevErr)));
}

// nvshmem_init, then the PE's device (PEs of a node share the node's GPUs round-robin).
static void cutest_init(const char *prog) {
    cutest_prog = prog;
    nvshmem_init();
    cutest_me = nvshmem_my_pe();
    int ndev = 0;
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    CHECK(ndev > 0, "no CUDA device");
    CUDA_CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % ndev));
}

static void cutest_ok(const char *what) {
    printf("PE %d: ok %s: %s (%d PEs)\n", cutest_me, cutest_prog, what, nvshmem_n_pes());
    fflush(stdout);
}

// A collective launch of `kernel` that fails with a message naming it.
#define COLL_LAUNCH(kernel, grid, block, args, stream)                                          \
    do {                                                                                        \
        int rc_ = nvshmemx_collective_launch((const void *)(kernel), (grid), (block), (args), 0, \
                                             (stream));                                         \
        if (rc_ != 0) CT_FAIL("nvshmemx_collective_launch(%s) returned %d", #kernel, rc_);      \
    } while (0)
