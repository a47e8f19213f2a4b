// Local buffers outside the symmetric heap: a kernel's put from cudaMalloc memory or pinned
// host memory, and its get into cudaMalloc memory, after nvshmemx_buffer_register, as NVSHMEM
// requires for its remote (IBGDA) transports, whose NIC reaches only registered memory; then
// nvshmemx_buffer_unregister. Every PE puts to and gets from its right neighbour.
//
// `buffer_register` (or `buffer_register registered`): registered buffers; passes over every
// channel. `buffer_register unregistered`: one put from a cudaMalloc buffer never registered.
// Over P2P and the proxy the put delivers the data. Over IBGDA it does not (the NIC has no key
// for it): the device records an error naming the put, the buffer and
// nvshmemx_buffer_register, reported when the PE finalizes. The PE prints which it saw; the
// buffer is never delivered in part.
#include "cutest.h"

constexpr size_t N = 4096;  // bytes per buffer: above every inline and scratch-slot size

// One thread: puts from a cudaMalloc and a pinned buffer, a put_signal from the cudaMalloc one,
// and a get into a cudaMalloc buffer, all registered; then quiet.
__global__ void k_registered(char *dst, char *dst_pinned, char *dst_sig, uint64_t *sig, const char *sym_src,
                             const char *dev_src, const char *pinned_src, char *get_dst) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int right = (me + 1) % npes;
    nvshmem_putmem(dst, dev_src, N, right);
    nvshmem_putmem_nbi(dst_pinned, pinned_src, N, right);
    nvshmem_putmem_signal(dst_sig, dev_src, N, sig, 1, NVSHMEM_SIGNAL_SET, right);
    nvshmem_getmem(get_dst, sym_src, N, right);
    nvshmem_quiet();
}

// A block puts from a registered cudaMalloc buffer (the block form shares the copy).
__global__ void k_block(char *dst, const char *dev_src) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    nvshmemx_putmem_block(dst, dev_src, N, (me + 1) % npes);
    if (threadIdx.x == 0) nvshmem_quiet();
}

__global__ void k_unregistered(char *dst, const char *dev_src) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    nvshmem_putmem(dst, dev_src, N, (me + 1) % npes);
    nvshmem_quiet();
}

static void fill(char *h, int pe, int salt) {
    for (size_t i = 0; i < N; i++) h[i] = (char)(pe * 31 + salt + i * 7);
}

// Whether the N bytes at `dev` (device memory) hold `pe`'s pattern `salt`; `what` for the message.
static void expect(const char *dev, int pe, int salt, const char *what) {
    static char h[N];
    CUDA_CHECK(cudaMemcpy(h, dev, N, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < N; i++)
        CHECK(h[i] == (char)(pe * 31 + salt + i * 7), "%s: byte %zu is %d, expected %d", what, i, h[i],
              (char)(pe * 31 + salt + i * 7));
}

static void registered(int me, int left, int right) {
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    char *sym = (char *)nvshmem_calloc(5 * N, 1);  // dst, dst_pinned, dst_sig, dst_block, sym_src
    uint64_t *sig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    CHECK(sym && sig, "nvshmem_calloc returned NULL");
    char *dst = sym, *dst_pinned = sym + N, *dst_sig = sym + 2 * N, *dst_block = sym + 3 * N, *sym_src = sym + 4 * N;
    char *dev_src, *get_dst, *pinned_src;
    CUDA_CHECK(cudaMalloc(&dev_src, N));
    CUDA_CHECK(cudaMalloc(&get_dst, N));
    CUDA_CHECK(cudaMallocHost(&pinned_src, N));
    static char h[N];
    fill(h, me, 1);
    CUDA_CHECK(cudaMemcpy(dev_src, h, N, cudaMemcpyHostToDevice));
    fill(pinned_src, me, 2);
    fill(h, me, 3);
    CUDA_CHECK(cudaMemcpy(sym_src, h, N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(get_dst, 0, N));

    CHECK(nvshmemx_buffer_register(dev_src, N) == 0, "registering the cudaMalloc source");
    CHECK(nvshmemx_buffer_register(pinned_src, N) == 0, "registering the pinned source");
    CHECK(nvshmemx_buffer_register(get_dst, N) == 0, "registering the cudaMalloc destination");
    CHECK(nvshmemx_buffer_register(dev_src + 8, 8) != 0, "a range inside a registered buffer registers twice");
    cutest_ok("register cudaMalloc and pinned buffers");
    nvshmem_barrier_all();

    k_registered<<<1, 1, 0, s>>>(dst, dst_pinned, dst_sig, sig, sym_src, dev_src, pinned_src, get_dst);
    sync_or_die(s, "k_registered");
    k_block<<<1, 128, 0, s>>>(dst_block, dev_src);
    sync_or_die(s, "k_block");
    nvshmem_barrier_all();
    expect(dst, left, 1, "put from a registered cudaMalloc buffer");
    expect(dst_pinned, left, 2, "put from a registered pinned buffer");
    expect(dst_sig, left, 1, "put_signal from a registered cudaMalloc buffer");
    expect(dst_block, left, 1, "block put from a registered cudaMalloc buffer");
    uint64_t sv = 0;
    CUDA_CHECK(cudaMemcpy(&sv, sig, sizeof sv, cudaMemcpyDeviceToHost));
    CHECK(sv == 1, "the put_signal's signal is %llu, expected 1", (unsigned long long)sv);
    expect(get_dst, right, 3, "get into a registered cudaMalloc buffer");
    cutest_ok("put, put_signal, block put from and get into registered buffers");

    CHECK(nvshmemx_buffer_unregister(dev_src) == 0, "unregistering the cudaMalloc source");
    CHECK(nvshmemx_buffer_unregister(pinned_src) == 0, "unregistering the pinned source");
    CHECK(nvshmemx_buffer_unregister(get_dst) == 0, "unregistering the cudaMalloc destination");
    CHECK(nvshmemx_buffer_unregister(dev_src) != 0, "unregistering twice");
    // Registered again after unregistering (the slot is reused), and used again.
    CHECK(nvshmemx_buffer_register(dev_src, N) == 0, "registering the cudaMalloc source again");
    CUDA_CHECK(cudaMemset(dst_block, 0, N));
    nvshmem_barrier_all();
    k_block<<<1, 64, 0, s>>>(dst_block, dev_src);
    sync_or_die(s, "k_block (again)");
    nvshmem_barrier_all();
    expect(dst_block, left, 1, "block put from a buffer registered again");
    nvshmemx_buffer_unregister_all();
    cutest_ok("unregister, register again, unregister_all");

    nvshmem_barrier_all();
    CUDA_CHECK(cudaFree(dev_src));
    CUDA_CHECK(cudaFree(get_dst));
    CUDA_CHECK(cudaFreeHost(pinned_src));
    nvshmem_free(sig);
    nvshmem_free(sym);
    CUDA_CHECK(cudaStreamDestroy(s));
}

static void unregistered(int me, int left) {
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    char *dst = (char *)nvshmem_calloc(N, 1);
    CHECK(dst, "nvshmem_calloc returned NULL");
    char *dev_src;
    CUDA_CHECK(cudaMalloc(&dev_src, N));
    static char h[N];
    fill(h, me, 1);
    CUDA_CHECK(cudaMemcpy(dev_src, h, N, cudaMemcpyHostToDevice));
    printf("PE %d: unregistered source at %p\n", me, (void *)dev_src);
    fflush(stdout);
    nvshmem_barrier_all();
    k_unregistered<<<1, 1, 0, s>>>(dst, dev_src);
    sync_or_die(s, "k_unregistered");
    nvshmem_barrier_all();
    CUDA_CHECK(cudaMemcpy(h, dst, N, cudaMemcpyDeviceToHost));
    size_t same = 0, zero = 0;
    for (size_t i = 0; i < N; i++) {
        same += h[i] == (char)(left * 31 + 1 + i * 7);
        zero += h[i] == 0;
    }
    // All of it or none of it (bytes of the pattern that happen to be 0 count as both).
    CHECK(same == N || zero == N, "the put delivered %zu of %zu bytes", same, N);
    cutest_ok(same == N ? "unregistered put: delivered" : "unregistered put: not delivered");
    nvshmem_barrier_all();
    CUDA_CHECK(cudaFree(dev_src));
    nvshmem_free(dst);
    CUDA_CHECK(cudaStreamDestroy(s));
}

int main(int argc, char **argv) {
    cutest_init("buffer_register");
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int left = (me + npes - 1) % npes, right = (me + 1) % npes;
    if (argc > 1 && strcmp(argv[1], "unregistered") == 0)
        unregistered(me, left);
    else
        registered(me, left, right);
    nvshmem_finalize();
    return 0;
}
