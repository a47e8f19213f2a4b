// Programs written the way NVSHMEM's examples and perftests are (not copied from them): the
// patterns users start from, each a kernel or two with its own check.
//
//   ring         every PE p's one thread puts its number to PE p+1 (nvshmem_int_p), then a
//                barrier on the stream; each PE finds its left neighbour's number. The kernel
//                dawdles first (about 50 ms), so that a barrier that does not wait for the
//                kernel (the stream 0 of another device than the library's) loses the race
//                every time, not now and then
//   block put    a block stages data through __shared__ memory into a symmetric buffer, then
//                nvshmemx_putmem_block to the right neighbour
//   ping-pong    PE 0 and PE 1 alternate put_signal + signal_wait_until, 50 rounds
//   warps+quiet  8 warps each put their slice (nvshmemx_putmem_nbi_warp), __syncthreads(), one
//                thread nvshmem_quiet() then raises a flag (nvshmem_uint64_p): a receiver that
//                sees the flag finds every warp's slice (quiet completes every warp's operations)
//   fence        data, nvshmem_fence(), flag, 100 times: the flag never overtakes the data
//   dyn shared   extern __shared__ scratch sized at launch, a block reduction, then a team reduce
//   moe          a small MoE dispatch/combine: tokens routed to top-2 of 2 experts per PE by
//                put_signal into per-source receive slots, the experts scale what they got,
//                a combine puts results back and each PE checks its weighted sums
#include "cutest.h"

// ---- ring ---------------------------------------------------------------------------------------

__global__ void ring_put(int *destination) {
    // About 50 ms on the CPU target (clock64 counts nanoseconds there), 30 on a 1.7 GHz GPU.
    for (long long start = clock64(); clock64() - start < 50000000;) __nanosleep(100000);
    int mype = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int peer = (mype + 1) % npes;
    nvshmem_int_p(destination, mype, peer);
}

// ---- block put through shared memory ------------------------------------------------------------

constexpr int BLOCK = 256;

__global__ void block_put(int *stage, int *dest) {
    __shared__ int tile[BLOCK];
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    tile[threadIdx.x] = me * 1000 + (int)threadIdx.x;
    __syncthreads();
    stage[(threadIdx.x + 1) % BLOCK] = tile[(threadIdx.x + 1) % BLOCK];  // another thread's element
    __syncthreads();
    nvshmemx_putmem_block(dest, stage, BLOCK * sizeof(int), (me + 1) % npes);
}

// ---- ping-pong ----------------------------------------------------------------------------------

constexpr int PINGS = 50;

__global__ void ping_pong(long *buf, uint64_t *sig, DevErr *err) {
    int me = nvshmem_my_pe();
    if (me > 1) return;
    int peer = 1 - me;
    for (int r = 0; r < PINGS; r++) {
        if ((r % 2) == me) {
            buf[PINGS + r] = 100 * r + me;  // the source: symmetric
            nvshmem_long_put_signal(buf + r, buf + PINGS + r, 1, sig, (uint64_t)(r + 1), NVSHMEM_SIGNAL_SET, peer);
        } else {
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, (uint64_t)(r + 1));
            DCHECK(err, buf[r], 100 * r + peer);
        }
    }
}

// ---- many warps put, one thread quiets and raises a flag ----------------------------------------

constexpr int WARPS = 8, SLICE = 512;

__global__ void warps_then_quiet(int *src, int *dst, uint64_t *flag) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes, warp = threadIdx.x / warpSize;
    for (int i = threadIdx.x % warpSize; i < SLICE; i += warpSize) src[warp * SLICE + i] = me * 100000 + warp * SLICE + i;
    __syncwarp();
    nvshmemx_putmem_nbi_warp(dst + warp * SLICE, src + warp * SLICE, SLICE * sizeof(int), right);
    __syncthreads();
    if (threadIdx.x == 0) {
        nvshmem_quiet();
        nvshmem_uint64_p(flag, 1, right);
    }
}

__global__ void check_warps(int *dst, uint64_t *flag, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int left = (me + npes - 1) % npes;
    nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_EQ, 1);
    for (int i = 0; i < WARPS * SLICE; i++) DCHECK(err, dst[i], left * 100000 + i);
}

// ---- fence ordering -----------------------------------------------------------------------------

constexpr int FENCES = 100;

__global__ void fenced(int *data, int *flag, int *src, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (int r = 1; r <= FENCES; r++) {
        src[0] = r * 7 + me;
        nvshmem_int_put(data, src, 1, right);
        nvshmem_fence();
        nvshmem_int_p(flag, r, right);                     // after the data, by the fence
        nvshmem_int_wait_until(flag, NVSHMEM_CMP_GE, r);   // the left neighbour's round r
        DCHECK(err, *(volatile int *)data, r * 7 + left);  // its data is there
        nvshmem_int_p(flag + 1, r, left);                  // it may overwrite our data now
        nvshmem_int_wait_until(flag + 1, NVSHMEM_CMP_GE, r);
    }
}

// ---- dynamic shared memory and a team reduction ---------------------------------------------------

__global__ void dyn_reduce(int *in, int *out, DevErr *err) {
    extern __shared__ int scratch[];
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    scratch[threadIdx.x] = me + (int)threadIdx.x;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) in[0] = scratch[0];
    __syncthreads();
    nvshmemx_int_sum_reduce_block(NVSHMEM_TEAM_WORLD, out, in, 1);
    int n = blockDim.x;
    long want = 0;
    for (int p = 0; p < npes; p++) want += (long)p * n + (long)n * (n - 1) / 2;
    if (threadIdx.x == 0) DCHECK(err, out[0], want);
}

// ---- a small MoE dispatch/combine ----------------------------------------------------------------

constexpr int TOKENS = 8, HIDDEN = 64, EXPERTS_PER_PE = 2, TOPK = 2;

struct Moe {
    float *x;         // TOKENS * HIDDEN: this PE's tokens (filled by the host)
    float *recv;      // npes * TOKENS * TOPK * HIDDEN: tokens received, by source PE and slot
    int *recv_meta;   // npes * TOKENS * TOPK: the local expert of each received slot (-1: none)
    float *back;      // TOKENS * TOPK * HIDDEN: expert outputs returned, by token and k
    uint64_t *sig;    // npes: dispatch signals by source PE; npes + 0: combine count
    float *y;         // TOKENS * HIDDEN: the combined result
};

/// The expert (global number) of token t's k-th choice on PE `pe`, and its gate weight.
__host__ __device__ inline int route_expert(int pe, int t, int k, int experts) { return (pe * 3 + t * 5 + k * 7) % experts; }
__host__ __device__ inline float gate(int t, int k) { return k == 0 ? 0.75f : 0.25f - 0.01f * (float)(t % 3); }

/// Dispatch: block b sends token b's TOPK copies to the PEs of their experts (one warp each).
__global__ void moe_dispatch(Moe m) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), experts = npes * EXPERTS_PER_PE;
    int t = blockIdx.x, k = threadIdx.x / warpSize;
    if (k >= TOPK) return;
    int e = route_expert(me, t, k, experts), pe = e / EXPERTS_PER_PE;
    size_t slot = ((size_t)me * TOKENS + t) * TOPK + k;
    if (threadIdx.x % warpSize == 0) {
        nvshmem_int_p(m.recv_meta + slot, e % EXPERTS_PER_PE, pe);
        nvshmem_fence();  // the slot's expert before its data and signal
    }
    __syncwarp();
    nvshmemx_float_put_signal_nbi_warp(m.recv + slot * HIDDEN, m.x + (size_t)t * HIDDEN, HIDDEN, m.sig + me, 1,
                                       NVSHMEM_SIGNAL_ADD, pe);
}

/// Experts and combine: wait until every source PE's TOKENS * TOPK slots are accounted for
/// (each source signals once per slot it sent here; the host told us how many), scale each
/// received token by (local expert + 2), and put it back to its source's `back` slot.
__global__ void moe_expert_combine(Moe m, const int *expect, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    for (int src = 0; src < npes; src++) {
        if (threadIdx.x == 0) nvshmem_signal_wait_until(m.sig + src, NVSHMEM_CMP_EQ, (uint64_t)expect[src]);
        __syncthreads();
        for (int i = 0; i < TOKENS * TOPK; i++) {
            size_t slot = (size_t)src * TOKENS * TOPK + i;
            int le = m.recv_meta[slot];
            if (le < 0) continue;
            float *row = m.recv + slot * HIDDEN;
            for (int h = threadIdx.x; h < HIDDEN; h += blockDim.x) row[h] *= (float)(le + 2);
            __syncthreads();
            nvshmemx_float_put_nbi_block(m.back + (size_t)i * HIDDEN, row, HIDDEN, src);
        }
    }
    nvshmem_quiet();
    __syncthreads();
    if (threadIdx.x == 0)
        for (int pe = 0; pe < npes; pe++) nvshmemx_signal_op(m.sig + npes, 1, NVSHMEM_SIGNAL_ADD, pe);
    (void)err;
}

__global__ void moe_finish(Moe m, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), experts = npes * EXPERTS_PER_PE;
    if (threadIdx.x == 0) nvshmem_signal_wait_until(m.sig + npes, NVSHMEM_CMP_EQ, (uint64_t)npes);
    __syncthreads();
    for (int t = 0; t < TOKENS; t++)
        for (int h = threadIdx.x; h < HIDDEN; h += blockDim.x) {
            float acc = 0, want = 0;
            for (int k = 0; k < TOPK; k++) {
                int e = route_expert(me, t, k, experts);
                acc += gate(t, k) * m.back[((size_t)t * TOPK + k) * HIDDEN + h];
                want += gate(t, k) * (m.x[(size_t)t * HIDDEN + h] * (float)(e % EXPERTS_PER_PE + 2));
            }
            m.y[(size_t)t * HIDDEN + h] = acc;
            DCHECK(err, (long long)(acc * 1024), (long long)(want * 1024));
        }
}

int main() {
    cutest_init("examples");
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    DevErr *err = dev_err_new();

    // ring
    int *destination = (int *)nvshmem_malloc(sizeof(int));
    ring_put<<<1, 1>>>(destination);
    nvshmemx_barrier_all_on_stream(0);
    int msg = -1;
    CUDA_CHECK(cudaMemcpyAsync(&msg, destination, sizeof(int), cudaMemcpyDeviceToHost, 0));
    CUDA_CHECK(cudaStreamSynchronize(0));
    CHECK(msg == (me + npes - 1) % npes, "ring: got %d from the left neighbour", msg);
    cutest_ok("ring put (nvshmem_int_p to the right neighbour, barrier on the stream)");

    // block put through shared memory
    int *stage = (int *)nvshmem_malloc(BLOCK * sizeof(int)), *bdest = (int *)nvshmem_malloc(BLOCK * sizeof(int));
    block_put<<<1, BLOCK, 0, s>>>(stage, bdest);
    sync_or_die(s, "block_put");
    nvshmem_barrier_all();
    int hb[BLOCK];
    CUDA_CHECK(cudaMemcpy(hb, bdest, sizeof hb, cudaMemcpyDeviceToHost));
    int left = (me + npes - 1) % npes;
    for (int i = 0; i < BLOCK; i++) CHECK(hb[i] == left * 1000 + i, "block put: element %d is %d", i, hb[i]);
    cutest_ok("block put (__shared__ staging, nvshmemx_putmem_block)");

    // ping-pong
    long *pbuf = (long *)nvshmem_calloc(2 * PINGS, sizeof(long));
    uint64_t *psig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    nvshmem_barrier_all();
    ping_pong<<<1, 1, 0, s>>>(pbuf, psig, err);
    dev_err_check(err, s, "ping_pong");
    cutest_ok("signal ping-pong between PE 0 and PE 1 (put_signal, signal_wait_until)");

    // many warps put, one thread quiets and raises a flag
    int *wsrc = (int *)nvshmem_malloc(WARPS * SLICE * sizeof(int)), *wdst = (int *)nvshmem_malloc(WARPS * SLICE * sizeof(int));
    uint64_t *wflag = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    nvshmem_barrier_all();
    cudaStream_t s2;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    check_warps<<<1, 1, 0, s2>>>(wdst, wflag, err);
    warps_then_quiet<<<1, WARPS * 32, 0, s>>>(wsrc, wdst, wflag);
    sync_or_die(s, "warps_then_quiet");
    dev_err_check(err, s2, "check_warps");
    cutest_ok("8 warps put_nbi_warp, __syncthreads, one thread quiet then a flag: every warp's data is there");

    // fence ordering
    int *fdata = (int *)nvshmem_calloc(1, sizeof(int)), *fflag = (int *)nvshmem_calloc(2, sizeof(int));
    int *fsrc = (int *)nvshmem_calloc(1, sizeof(int));
    nvshmem_barrier_all();
    void *fa[] = {&fdata, &fflag, &fsrc, &err};
    COLL_LAUNCH(fenced, 1, 1, fa, s);
    dev_err_check(err, s, "fenced");
    cutest_ok("put, fence, flag x100: the flag never overtakes the data");

    // dynamic shared memory, then a team reduction
    int *rin = (int *)nvshmem_malloc(sizeof(int)), *rout = (int *)nvshmem_malloc(sizeof(int));
    nvshmem_barrier_all();
    void *ra[] = {&rin, &rout, &err};
    CHECK(nvshmemx_collective_launch((const void *)dyn_reduce, 1, 128, ra, 128 * sizeof(int), s) == 0,
          "collective launch with dynamic shared memory");
    dev_err_check(err, s, "dyn_reduce");
    cutest_ok("extern __shared__ block reduction, then nvshmemx_int_sum_reduce_block");

    // MoE dispatch/combine
    Moe m;
    m.x = (float *)nvshmem_malloc(TOKENS * HIDDEN * sizeof(float));
    m.recv = (float *)nvshmem_calloc((size_t)npes * TOKENS * TOPK * HIDDEN, sizeof(float));
    m.recv_meta = (int *)nvshmem_malloc((size_t)npes * TOKENS * TOPK * sizeof(int));
    m.back = (float *)nvshmem_calloc((size_t)TOKENS * TOPK * HIDDEN, sizeof(float));
    m.sig = (uint64_t *)nvshmem_calloc((size_t)npes + 1, sizeof(uint64_t));
    m.y = (float *)nvshmem_calloc((size_t)TOKENS * HIDDEN, sizeof(float));
    float hx[TOKENS * HIDDEN];
    for (int i = 0; i < TOKENS * HIDDEN; i++) hx[i] = (float)((me * 31 + i) % 17) / 8.0f;
    CUDA_CHECK(cudaMemcpy(m.x, hx, sizeof hx, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(m.recv_meta, 0xff, (size_t)npes * TOKENS * TOPK * sizeof(int)));
    // How many slots each source PE sends here (the same routing function the kernels use).
    int *expect;
    CUDA_CHECK(cudaMalloc(&expect, npes * sizeof(int)));
    int *hexp = (int *)calloc((size_t)npes, sizeof(int));
    for (int src = 0; src < npes; src++)
        for (int t = 0; t < TOKENS; t++)
            for (int k = 0; k < TOPK; k++)
                if (route_expert(src, t, k, npes * EXPERTS_PER_PE) / EXPERTS_PER_PE == me) hexp[src]++;
    CUDA_CHECK(cudaMemcpy(expect, hexp, npes * sizeof(int), cudaMemcpyHostToDevice));
    nvshmem_barrier_all();
    moe_dispatch<<<TOKENS, TOPK * 32, 0, s>>>(m);
    moe_expert_combine<<<1, 64, 0, s>>>(m, expect, err);
    moe_finish<<<1, 64, 0, s>>>(m, err);
    dev_err_check(err, s, "moe dispatch/expert/combine");
    cutest_ok("MoE dispatch (put_signal_nbi_warp to top-2 experts) and combine (put_nbi_block back, weighted sum)");

    nvshmem_barrier_all();
    free(hexp);
    CUDA_CHECK(cudaFree(expect));
    nvshmem_free(m.x);
    nvshmem_free(m.recv);
    nvshmem_free(m.recv_meta);
    nvshmem_free(m.back);
    nvshmem_free(m.sig);
    nvshmem_free(m.y);
    nvshmem_free(destination);
    nvshmem_free(stage);
    nvshmem_free(bdest);
    nvshmem_free(pbuf);
    nvshmem_free(psig);
    nvshmem_free(wsrc);
    nvshmem_free(wdst);
    nvshmem_free(wflag);
    nvshmem_free(fdata);
    nvshmem_free(fflag);
    nvshmem_free(fsrc);
    nvshmem_free(rin);
    nvshmem_free(rout);
    CUDA_CHECK(cudaStreamDestroy(s2));
    CUDA_CHECK(cudaStreamDestroy(s));
    nvshmem_finalize();
    return 0;
}
