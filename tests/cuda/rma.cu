// Device-initiated RMA: p/g, typed put/get, putmem/getmem, the nbi forms completed by
// nvshmem_quiet, and the warp and block forms; every PE writes to and reads from its right
// neighbour, then checks what it received and what it fetched.
#include "cutest.h"

constexpr int N = 1024;  // elements per buffer

__device__ __forceinline__ int ival(int pe, int i) { return pe * 100000 + i; }

// One thread: p, g, typed put/get, putmem/getmem, nbi + quiet. Sources are the symmetric
// upper halves (index N..), which the host filled with this PE's values (device memory that
// every channel can read, as with NVSHMEM's remote transports).
__global__ void k_thread(int *isym, long *lsym, double *dsym, char *msym, int *iget, long *lget, double *dget,
                         char *mget, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes;
    nvshmem_int_p(isym + 0, ival(me, 7), right);                // p
    nvshmem_int_put(isym + 1, isym + N + 1, 63, right);         // typed put
    nvshmem_long_put_nbi(lsym, lsym + N, 8, right);             // typed put_nbi
    nvshmem_double_put(dsym, dsym + N, 4, right);
    nvshmem_putmem_nbi(msym, msym + N, 37, right);              // putmem_nbi
    nvshmem_quiet();                                            // completes the nbi puts
    // g and get read the neighbour's source areas (unchanged).
    DCHECK(err, nvshmem_int_g(isym + N + 5, right), ival(right, 5));
    nvshmem_int_get(iget, isym + N, 64, right);
    for (int i = 0; i < 64; i++) DCHECK(err, iget[i], ival(right, i));
    nvshmem_long_get_nbi(lget, lsym + N, 8, right);
    nvshmem_double_get(dget, dsym + N, 4, right);
    nvshmem_getmem_nbi(mget, msym + N, 37, right);
    nvshmem_quiet();
    for (int i = 0; i < 8; i++) DCHECK(err, lget[i], ((long)ival(right, i) << 20) + 1);
    for (int i = 0; i < 4; i++) DCHECK(err, (long long)(dget[i] * 2), (long long)((right + i + 0.5) * 2));
    for (int i = 0; i < 37; i++) DCHECK(err, mget[i], (char)(right * 5 + i));
}

// Checks, on the receiving side, what k_thread put here from the left neighbour.
__global__ void k_verify_thread(int *isym, long *lsym, double *dsym, char *msym, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int left = (me + npes - 1) % npes;
    DCHECK(err, isym[0], ival(left, 7));
    for (int i = 1; i < 64; i++) DCHECK(err, isym[i], ival(left, i));
    for (int i = 0; i < 8; i++) DCHECK(err, lsym[i], ((long)ival(left, i) << 20) + 1);
    for (int i = 0; i < 4; i++) DCHECK(err, (long long)(dsym[i] * 2), (long long)((left + i + 0.5) * 2));
    for (int i = 0; i < 37; i++) DCHECK(err, msym[i], (char)(left * 5 + i));
}

// Warp and block forms: each warp of block 0 puts a slice (warp form), the whole block puts
// and gets a larger span (block forms), nbi block form + quiet.
__global__ void k_group(int *isym, float *fsym, int *iget, float *fget, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes;
    int warp = threadIdx.x / warpSize, nwarps = blockDim.x / warpSize;
    int per = N / nwarps;
    // Sources live in the symmetric buffer's upper half (isym + N), filled by the host.
    nvshmemx_int_put_warp(isym + warp * per, isym + N + warp * per, per, right);
    nvshmemx_putmem_block(fsym, fsym + N, N * sizeof(float), right);
    nvshmemx_int_get_nbi_block(iget, isym + N, N, right);
    nvshmemx_float_get_block(fget, fsym + N, N, right);
    nvshmemx_putmem_nbi_block(isym + 2 * N, isym + N, N * sizeof(int), right);
    nvshmemx_getmem_warp(iget + N + warp * per, isym + N + warp * per, per * sizeof(int), right);
    nvshmem_quiet();
    __syncthreads();
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        DCHECK(err, iget[i], ival(right, i));
        DCHECK(err, (long long)fget[i], (long long)(right * 1000 + i));
        DCHECK(err, iget[N + i], ival(right, i));
    }
}

__global__ void k_verify_group(int *isym, float *fsym, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int left = (me + npes - 1) % npes;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        DCHECK(err, isym[i], ival(left, i));
        DCHECK(err, (long long)fsym[i], (long long)(left * 1000 + i));
        DCHECK(err, isym[2 * N + i], ival(left, i));
    }
}

int main() {
    cutest_init("rma");
    int me = nvshmem_my_pe();
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    int *isym = (int *)nvshmem_malloc(3 * N * sizeof(int));
    long *lsym = (long *)nvshmem_malloc(2 * N * sizeof(long));
    double *dsym = (double *)nvshmem_malloc(2 * N * sizeof(double));
    char *msym = (char *)nvshmem_malloc(2 * N);
    float *fsym = (float *)nvshmem_malloc(2 * N * sizeof(float));
    CHECK(isym && lsym && dsym && msym && fsym, "nvshmem_malloc returned NULL");
    int *iget;
    long *lget;
    double *dget;
    char *mget;
    float *fget;
    CUDA_CHECK(cudaMalloc(&iget, 2 * N * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&lget, N * sizeof(long)));
    CUDA_CHECK(cudaMalloc(&dget, N * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&mget, N));
    CUDA_CHECK(cudaMalloc(&fget, N * sizeof(float)));
    DevErr *err = dev_err_new();
    // Gets land in these cudaMalloc buffers: a NIC (NVSHMEM's IBGDA) writes only registered
    // memory outside the symmetric heap.
    CHECK(nvshmemx_buffer_register(iget, 2 * N * sizeof(int)) == 0, "registering iget");
    CHECK(nvshmemx_buffer_register(lget, N * sizeof(long)) == 0, "registering lget");
    CHECK(nvshmemx_buffer_register(dget, N * sizeof(double)) == 0, "registering dget");
    CHECK(nvshmemx_buffer_register(mget, N) == 0, "registering mget");
    CHECK(nvshmemx_buffer_register(fget, N * sizeof(float)) == 0, "registering fget");

    // Source halves (index N..2N) hold known values on every PE.
    int hi[N];
    long hl[N];
    double hd[N];
    char hm[N];
    float hf[N];
    for (int i = 0; i < N; i++) {
        hi[i] = me * 100000 + i;
        hl[i] = ((long)(me * 100000 + i) << 20) + 1;
        hd[i] = me + i + 0.5;
        hm[i] = (char)(me * 5 + i);
        hf[i] = (float)(me * 1000 + i);
    }
    CUDA_CHECK(cudaMemcpy(isym + N, hi, sizeof hi, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(lsym + N, hl, sizeof hl, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dsym + N, hd, sizeof hd, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(msym + N, hm, sizeof hm, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(fsym + N, hf, sizeof hf, cudaMemcpyHostToDevice));
    nvshmem_barrier_all();

    k_thread<<<1, 1, 0, s>>>(isym, lsym, dsym, msym, iget, lget, dget, mget, err);
    dev_err_check(err, s, "k_thread (p/g, put/get, putmem/getmem, nbi + quiet)");
    nvshmem_barrier_all();
    k_verify_thread<<<1, 1, 0, s>>>(isym, lsym, dsym, msym, err);
    dev_err_check(err, s, "k_verify_thread (data put by the left neighbour)");
    cutest_ok("thread RMA: p, g, int/long/double put/get, putmem/getmem, nbi + quiet");

    nvshmem_barrier_all();
    k_group<<<1, 256, 0, s>>>(isym, fsym, iget, fget, err);
    dev_err_check(err, s, "k_group (warp and block put/get, nbi block + quiet)");
    nvshmem_barrier_all();
    k_verify_group<<<1, 256, 0, s>>>(isym, fsym, err);
    dev_err_check(err, s, "k_verify_group (data put by the left neighbour's warps and block)");
    cutest_ok("warp/block RMA: put_warp, getmem_warp, putmem_block, get_block, get_nbi_block, putmem_nbi_block");

    // nvshmem_ptr: the right neighbour's buffer, when it is directly addressable, reads the
    // same as nvshmem_int_g.
    int right = (me + 1) % nvshmem_n_pes();
    void *p = nvshmem_ptr(isym + N, right);
    if (p) {
        int v;
        CUDA_CHECK(cudaMemcpy(&v, (int *)p + 3, sizeof v, cudaMemcpyDeviceToHost));
        CHECK(v == (right * 100000 + 3), "nvshmem_ptr(isym+N, %d)[3] = %d, expected %d", right, v, right * 100000 + 3);
    }
    cutest_ok(p ? "nvshmem_ptr to the neighbour reads its data" : "nvshmem_ptr: neighbour not directly addressable (NULL)");

    nvshmem_barrier_all();
    for (void *b : {(void *)iget, (void *)lget, (void *)dget, (void *)mget, (void *)fget})
        CHECK(nvshmemx_buffer_unregister(b) == 0, "unregistering %p", b);
    nvshmem_free(isym);
    nvshmem_free(lsym);
    nvshmem_free(dsym);
    nvshmem_free(msym);
    nvshmem_free(fsym);
    nvshmem_finalize();
    return 0;
}
