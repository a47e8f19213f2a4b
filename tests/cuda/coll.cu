// Device collectives, started with nvshmemx_collective_launch:
//   reduce: sum, max, min, prod, and, or, xor on int, long, float, double, uint
//     (thread, warp and block forms, NVSHMEM_TEAM_WORLD and a team of the even PEs);
//   broadcast, fcollect, alltoall (thread, warp, block forms; mem and typed);
//   nvshmemx_collective_launch_query_gridsize, then a grid of that many blocks (up to 32) that
//   synchronizes through cooperative groups around a block barrier_all, which a collective
//   launch allows (every block co-resident).
#include "cutest.h"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

constexpr int N = 64;   // elements per PE
constexpr int MAXPES = 16;

struct Bufs {
    int *isrc, *idst;            // N and MAXPES * N
    long *lsrc, *ldst;
    float *fsrc, *fdst;
    double *dsrc, *ddst;
    unsigned int *usrc, *udst;
};

__device__ int ipow_fact(int n) { int f = 1; for (int i = 2; i <= n; i++) f *= i; return f; }

// group: 0 thread, 1 warp, 2 block. Each form is called by the threads of its group only.
__global__ void k_reduce(Bufs b, int group, nvshmem_team_t even, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    bool in_group = group == 2 || (group == 1 && threadIdx.x < warpSize) || (group == 0 && threadIdx.x == 0);
    nvshmem_team_t w = NVSHMEM_TEAM_WORLD;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        b.isrc[i] = me + i;
        b.lsrc[i] = (long)(me + i) << 32;
        b.fsrc[i] = (float)(me + i);
        b.dsrc[i] = (double)(me + 1);
        b.usrc[i] = (1u << me) | ((unsigned)i << 16);
    }
    __syncthreads();
    if (in_group) {
        switch (group) {
        case 0:
            nvshmem_int_sum_reduce(w, b.idst, b.isrc, N);
            nvshmem_long_max_reduce(w, b.ldst, b.lsrc, N);
            nvshmem_float_min_reduce(w, b.fdst, b.fsrc, N);
            nvshmem_double_prod_reduce(w, b.ddst, b.dsrc, N);
            nvshmem_uint_or_reduce(w, b.udst, b.usrc, N);
            break;
        case 1:
            nvshmemx_int_sum_reduce_warp(w, b.idst, b.isrc, N);
            nvshmemx_long_max_reduce_warp(w, b.ldst, b.lsrc, N);
            nvshmemx_float_min_reduce_warp(w, b.fdst, b.fsrc, N);
            nvshmemx_double_prod_reduce_warp(w, b.ddst, b.dsrc, N);
            nvshmemx_uint_and_reduce_warp(w, b.udst, b.usrc, N);
            break;
        case 2:
            nvshmemx_int_sum_reduce_block(w, b.idst, b.isrc, N);
            nvshmemx_long_max_reduce_block(w, b.ldst, b.lsrc, N);
            nvshmemx_float_min_reduce_block(w, b.fdst, b.fsrc, N);
            nvshmemx_double_prod_reduce_block(w, b.ddst, b.dsrc, N);
            nvshmemx_uint_xor_reduce_block(w, b.udst, b.usrc, N);
            break;
        }
    }
    __syncthreads();
    unsigned lo = (1u << npes) - 1;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        DCHECK(err, b.idst[i], npes * (npes - 1) / 2 + npes * i);
        DCHECK(err, b.ldst[i], (long)(npes - 1 + i) << 32);
        DCHECK(err, (int)b.fdst[i], i);
        DCHECK(err, (long long)b.ddst[i], ipow_fact(npes));
        unsigned want = group == 0 ? (lo | ((unsigned)i << 16))
                        : group == 1 ? (npes > 1 ? (unsigned)i << 16 : (lo | ((unsigned)i << 16)))
                                     : (lo | (npes % 2 ? (unsigned)i << 16 : 0u));
        DCHECK(err, b.udst[i], want);
    }
    // Everyone has read its result before idst is reused.
    nvshmemx_barrier_all_block();
    // A reduction over the even PEs only: int max and int sum.
    if (even != NVSHMEM_TEAM_INVALID) {
        int m = nvshmem_team_n_pes(even);
        if (threadIdx.x == 0) nvshmem_int_max_reduce(even, b.idst, b.isrc, N);
        __syncthreads();
        for (int i = threadIdx.x; i < N; i += blockDim.x) DCHECK(err, b.idst[i], 2 * (m - 1) + i);
        nvshmemx_barrier_block(even);
        nvshmemx_int_sum_reduce_block(even, b.idst, b.isrc, N);
        for (int i = threadIdx.x; i < N; i += blockDim.x) DCHECK(err, b.idst[i], m * (m - 1) + m * i);
    }
}

// broadcast from root (npes - 1), fcollect, alltoall: thread, warp, block.
__global__ void k_data(Bufs b, int group, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), root = npes - 1;
    nvshmem_team_t w = NVSHMEM_TEAM_WORLD;
    bool in_group = group == 2 || (group == 1 && threadIdx.x < warpSize) || (group == 0 && threadIdx.x == 0);
    int per = N / npes;  // alltoall block per destination
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        b.isrc[i] = me * 1000 + i;
        b.lsrc[i] = (long)me * 1000 + i;
    }
    __syncthreads();
    if (in_group) {
        switch (group) {
        case 0:
            nvshmem_int_broadcast(w, b.idst, b.isrc, N, root);
            nvshmem_long_fcollect(w, b.ldst, b.lsrc, N);
            break;
        case 1:
            nvshmemx_int_broadcast_warp(w, b.idst, b.isrc, N, root);
            nvshmemx_long_fcollect_warp(w, b.ldst, b.lsrc, N);
            break;
        case 2:
            nvshmemx_int_broadcast_block(w, b.idst, b.isrc, N, root);  // (broadcastmem_block: NVSHMEM 3.8 declares it without PE_root)
            nvshmemx_fcollectmem_block(w, b.ldst, b.lsrc, N * sizeof(long));
            break;
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < N; i += blockDim.x) DCHECK(err, b.idst[i], root * 1000 + i);
    for (int i = threadIdx.x; i < npes * N; i += blockDim.x) DCHECK(err, b.ldst[i], (long)(i / N) * 1000 + i % N);
    nvshmemx_barrier_all_block();  // everyone has checked idst before alltoall writes it
    if (in_group) {
        switch (group) {
        case 0: nvshmem_int_alltoall(w, b.idst, b.isrc, per); break;
        case 1: nvshmemx_int_alltoall_warp(w, b.idst, b.isrc, per); break;
        case 2: nvshmemx_alltoallmem_block(w, b.idst, b.isrc, per * sizeof(int)); break;
        }
    }
    __syncthreads();
    // Block j of my dest came from PE j's block `me`: values j*1000 + me*per + k.
    for (int i = threadIdx.x; i < npes * per; i += blockDim.x)
        DCHECK(err, b.idst[i], (i / per) * 1000 + me * per + i % per);
}

// A grid of many blocks: each block puts its slice to the right neighbour, the grid syncs,
// block 0 runs a block barrier_all, the grid syncs, each block checks its slice from the left.
__global__ void k_grid(int *sym, DevErr *err) {
    cg::grid_group grid = cg::this_grid();
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    int *src = sym + gridDim.x * blockDim.x;
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    src[g] = me * 100000 + g;
    __syncthreads();
    nvshmemx_int_put_nbi_block(sym + blockIdx.x * blockDim.x, src + blockIdx.x * blockDim.x, blockDim.x, right);
    nvshmem_quiet();  // each thread completes its own puts
    grid.sync();
    if (blockIdx.x == 0) nvshmemx_barrier_all_block();  // every PE's grid has put
    grid.sync();
    DCHECK(err, sym[g], left * 100000 + g);
}

int main() {
    cutest_init("coll");
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    CHECK(npes <= MAXPES && N % npes == 0, "this test needs a PE count dividing %d, at most %d; got %d", N, MAXPES, npes);
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    Bufs b;
    b.isrc = (int *)nvshmem_malloc(N * sizeof(int));
    b.idst = (int *)nvshmem_malloc(MAXPES * N * sizeof(int));
    b.lsrc = (long *)nvshmem_malloc(N * sizeof(long));
    b.ldst = (long *)nvshmem_malloc(MAXPES * N * sizeof(long));
    b.fsrc = (float *)nvshmem_malloc(N * sizeof(float));
    b.fdst = (float *)nvshmem_malloc(N * sizeof(float));
    b.dsrc = (double *)nvshmem_malloc(N * sizeof(double));
    b.ddst = (double *)nvshmem_malloc(N * sizeof(double));
    b.usrc = (unsigned *)nvshmem_malloc(N * sizeof(unsigned));
    b.udst = (unsigned *)nvshmem_malloc(N * sizeof(unsigned));
    CHECK(b.isrc && b.idst && b.lsrc && b.ldst && b.fsrc && b.fdst && b.dsrc && b.ddst && b.usrc && b.udst,
          "nvshmem_malloc returned NULL");
    DevErr *err = dev_err_new();
    nvshmem_team_t even = NVSHMEM_TEAM_INVALID;
    int rc = nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    CHECK(rc == 0, "nvshmem_team_split_strided returned %d", rc);
    nvshmem_barrier_all();

    const char *gname[] = {"thread", "warp", "block"};
    for (int group = 0; group < 3; group++) {
        char what[96];
        void *ra[] = {&b, &group, &even, &err};
        COLL_LAUNCH(k_reduce, 1, 128, ra, s);
        snprintf(what, sizeof what, "k_reduce (%s forms)", gname[group]);
        dev_err_check(err, s, what);
        nvshmem_barrier_all();
        void *da[] = {&b, &group, &err};
        COLL_LAUNCH(k_data, 1, 128, da, s);
        snprintf(what, sizeof what, "k_data (%s broadcast/fcollect/alltoall)", gname[group]);
        dev_err_check(err, s, what);
        nvshmem_barrier_all();
    }
    cutest_ok("reduce sum/max/min/prod/and/or/xor (WORLD and a team), broadcast, fcollect, alltoall: thread/warp/block");

    int grid = 0;
    dim3 block(128);
    int *gsym = nullptr;
    void *ga[] = {&gsym, &err};
    rc = nvshmemx_collective_launch_query_gridsize((const void *)k_grid, block, ga, 0, &grid);
    CHECK(rc == 0 && grid >= 1, "nvshmemx_collective_launch_query_gridsize(k_grid, 128 threads) = %d, grid %d", rc, grid);
    int g = grid < 32 ? grid : 32;
    // The grid size must be the same on every PE (the buffer is symmetric): take the minimum.
    int *gmin = (int *)nvshmem_malloc(sizeof(int));
    int *gall = (int *)nvshmem_malloc(sizeof(int));
    CUDA_CHECK(cudaMemcpy(gmin, &g, sizeof g, cudaMemcpyHostToDevice));
    nvshmem_int_min_reduce(NVSHMEM_TEAM_WORLD, gall, gmin, 1);
    CUDA_CHECK(cudaMemcpy(&g, gall, sizeof g, cudaMemcpyDeviceToHost));
    gsym = (int *)nvshmem_calloc(2 * g * 128, sizeof(int));
    CHECK(gsym, "nvshmem_calloc(%d) returned NULL", 2 * g * 128);
    nvshmem_barrier_all();
    COLL_LAUNCH(k_grid, g, block, ga, s);
    dev_err_check(err, s, "k_grid (a collective launch of the queried grid size, cooperative grid sync)");
    printf("PE %d: collective_launch_query_gridsize: %d blocks of 128 (launched %d)\n", me, grid, g);
    cutest_ok("nvshmemx_collective_launch_query_gridsize + a multi-block collective launch with grid sync");

    nvshmem_barrier_all();
    if (even != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(even);
    nvshmem_free(gsym);
    nvshmem_free(gmin);
    nvshmem_free(gall);
    nvshmem_free(b.isrc);
    nvshmem_free(b.idst);
    nvshmem_free(b.lsrc);
    nvshmem_free(b.ldst);
    nvshmem_free(b.fsrc);
    nvshmem_free(b.fdst);
    nvshmem_free(b.dsrc);
    nvshmem_free(b.ddst);
    nvshmem_free(b.usrc);
    nvshmem_free(b.udst);
    nvshmem_finalize();
    return 0;
}
