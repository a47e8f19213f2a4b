// The host's *_on_stream forms, ordered with kernels on the same stream:
//   putmem/put/p/put_nbi/getmem/get/g on a stream, quiet_on_stream,
//   putmem_signal_on_stream + signal_wait_until_on_stream, signal_op_on_stream,
//   int wait_until_on_stream, barrier_all/sync_all/barrier/team_sync on a stream,
//   sum reduce, broadcast, fcollect and alltoall on a stream.
// Nothing waits on the host until the end of each step, where the stream is synchronized
// with a deadline.
#include "cutest.h"

constexpr int N = 256;

__global__ void k_fill(int *buf, int n, int base) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = base + i;
}

// Checks buf[i] == base + i, counting failures into err.
__global__ void k_expect(const int *buf, int n, int base, DevErr *err) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) DCHECK(err, buf[i], base + i);
}

int main() {
    cutest_init("stream");
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    CHECK(N % npes == 0, "%d PEs do not divide %d", npes, N);
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *src = (int *)nvshmem_malloc(N * sizeof(int));
    int *dst = (int *)nvshmem_malloc(N * sizeof(int));
    int *big = (int *)nvshmem_malloc(npes * N * sizeof(int));
    int *flag = (int *)nvshmem_calloc(1, sizeof(int));
    uint64_t *sig = (uint64_t *)nvshmem_calloc(4, sizeof(uint64_t));
    CHECK(src && dst && big && flag && sig, "nvshmem_malloc returned NULL");
    int *loc;
    CUDA_CHECK(cudaMalloc(&loc, N * sizeof(int)));
    DevErr *err = dev_err_new();
    nvshmem_barrier_all();

    // 1. putmem / put / p / put_nbi on a stream, quiet, barrier, then check what the left
    // neighbour wrote.
    k_fill<<<1, 128, 0, s>>>(src, N, me * 10000);
    nvshmemx_putmem_on_stream(dst, src, N / 2 * sizeof(int), right, s);
    nvshmemx_int_put_nbi_on_stream(dst + N / 2, src + N / 2, N / 2 - 1, right, s);
    nvshmemx_int_p_on_stream(dst + N - 1, me * 10000 + N - 1, right, s);
    nvshmemx_quiet_on_stream(s);
    nvshmemx_barrier_all_on_stream(s);
    k_expect<<<1, 128, 0, s>>>(dst, N, left * 10000, err);
    dev_err_check(err, s, "putmem/int_put_nbi/int_p on a stream + quiet_on_stream + barrier_all_on_stream");
    cutest_ok("putmem_on_stream, int_put_nbi_on_stream, int_p_on_stream, quiet_on_stream, barrier_all_on_stream");

    // 2. getmem / get / g on a stream from the right neighbour's src.
    nvshmemx_getmem_on_stream(loc, src, N / 2 * sizeof(int), right, s);
    nvshmemx_int_get_on_stream(loc + N / 2, src + N / 2, N / 2, right, s);
    k_expect<<<1, 128, 0, s>>>(loc, N, right * 10000, err);
    dev_err_check(err, s, "getmem/int_get on a stream");
    int g = nvshmemx_int_g_on_stream(src + 7, right, s);
    CHECK(g == right * 10000 + 7, "nvshmemx_int_g_on_stream(src+7, %d) = %d, expected %d", right, g, right * 10000 + 7);
    cutest_ok("getmem_on_stream, int_get_on_stream, int_g_on_stream");
    nvshmemx_barrier_all_on_stream(s);

    // 3. put with signal on a stream, signal_wait_until on a stream, signal_op on a stream.
    k_fill<<<1, 128, 0, s>>>(src, N, me * 20000);
    nvshmemx_putmem_signal_on_stream(dst, src, N * sizeof(int), sig + 0, 1, NVSHMEM_SIGNAL_SET, right, s);
    nvshmemx_signal_wait_until_on_stream(sig + 0, NVSHMEM_CMP_EQ, 1, s);
    k_expect<<<1, 128, 0, s>>>(dst, N, left * 20000, err);
    for (int pe = 0; pe < npes; pe++) nvshmemx_signal_op_on_stream(sig + 1, 2, NVSHMEM_SIGNAL_ADD, pe, s);
    nvshmemx_signal_wait_until_on_stream(sig + 1, NVSHMEM_CMP_EQ, 2 * npes, s);
    // int wait_until on a stream: the left neighbour's p sets the flag
    nvshmemx_int_p_on_stream(flag, 42, right, s);
    nvshmemx_int_wait_until_on_stream(flag, NVSHMEM_CMP_EQ, 42, s);
    dev_err_check(err, s, "putmem_signal_on_stream + signal_wait_until_on_stream + signal_op_on_stream + int_wait_until_on_stream");
    cutest_ok("putmem_signal_on_stream, signal_wait_until_on_stream, signal_op_on_stream, int_wait_until_on_stream");

    // 4. sync_all, team barrier and team_sync on a stream (quiet first: sync orders nothing).
    nvshmemx_sync_all_on_stream(s);
    nvshmemx_barrier_on_stream(NVSHMEM_TEAM_WORLD, s);
    nvshmemx_team_sync_on_stream(NVSHMEM_TEAM_WORLD, s);
    sync_or_die(s, "sync_all_on_stream/barrier_on_stream/team_sync_on_stream");
    cutest_ok("sync_all_on_stream, barrier_on_stream(WORLD), team_sync_on_stream(WORLD)");

    // 5. collectives on a stream.
    k_fill<<<1, 128, 0, s>>>(src, N, me);
    int rc = nvshmemx_int_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, dst, src, N, s);
    CHECK(rc == 0, "nvshmemx_int_sum_reduce_on_stream returned %d", rc);
    // sum over PEs of (pe + i) = npes*(npes-1)/2 + npes*i: check on the host
    sync_or_die(s, "int_sum_reduce_on_stream");
    int h[N];
    CUDA_CHECK(cudaMemcpy(h, dst, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        CHECK(h[i] == npes * (npes - 1) / 2 + npes * i, "sum reduce on a stream: dst[%d] = %d, expected %d", i, h[i],
              npes * (npes - 1) / 2 + npes * i);
    nvshmemx_barrier_all_on_stream(s);
    k_fill<<<1, 128, 0, s>>>(src, N, me * 1000);
    rc = nvshmemx_int_broadcast_on_stream(NVSHMEM_TEAM_WORLD, dst, src, N, 0, s);
    CHECK(rc == 0, "nvshmemx_int_broadcast_on_stream returned %d", rc);
    k_expect<<<1, 128, 0, s>>>(dst, N, 0, err);
    rc = nvshmemx_int_fcollect_on_stream(NVSHMEM_TEAM_WORLD, big, src, N, s);
    CHECK(rc == 0, "nvshmemx_int_fcollect_on_stream returned %d", rc);
    for (int pe = 0; pe < npes; pe++) k_expect<<<1, 128, 0, s>>>(big + pe * N, N, pe * 1000, err);
    dev_err_check(err, s, "int_broadcast_on_stream + int_fcollect_on_stream");
    nvshmemx_barrier_all_on_stream(s);
    // alltoall: src block j = values j*per.., my dst block j = PE j's block me.
    int per = N / npes;
    k_fill<<<1, 128, 0, s>>>(src, N, me * 1000);
    rc = nvshmemx_int_alltoall_on_stream(NVSHMEM_TEAM_WORLD, dst, src, per, s);
    CHECK(rc == 0, "nvshmemx_int_alltoall_on_stream returned %d", rc);
    for (int j = 0; j < npes; j++) k_expect<<<1, 128, 0, s>>>(dst + j * per, per, j * 1000 + me * per, err);
    dev_err_check(err, s, "int_alltoall_on_stream");
    cutest_ok("int_sum_reduce, int_broadcast, int_fcollect, int_alltoall on a stream");

    nvshmemx_barrier_all_on_stream(s);
    sync_or_die(s, "final barrier_all_on_stream");
    nvshmem_free(src);
    nvshmem_free(dst);
    nvshmem_free(big);
    nvshmem_free(flag);
    nvshmem_free(sig);
    nvshmem_finalize();
    return 0;
}
