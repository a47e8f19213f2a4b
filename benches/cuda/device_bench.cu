// Device-side NVSHMEM benchmark: one source, built against NVIDIA's NVSHMEM or oxshmem's
// (only the public NVSHMEM API). Needs at least 2 PEs.
//
//   put_rate_8B     8-byte nvshmem_long_put_nbi from many threads (PE 0 to PE 1), then quiet
//   put_lat_8B      one thread, 8-byte put-with-signal ping-pong PE 0 <-> PE 1 (half the round trip)
//   get_lat_8B      one thread, dependent 8-byte nvshmem_long_g from PE 1
//   alltoall_7KiB   nvshmemx_alltoallmem_block, 7 KiB to every PE, all PEs
//   moe_dispatch / moe_combine / moe_dispatch_combine
//                   DeepEP low-latency style: T=128 tokens of H=7168 bf16 per PE, top-8 experts
//                   spread over the PEs; dispatch = one put_signal (warp) per token and selected
//                   expert into the expert's PE, wait for the expected count; combine = the
//                   expert's PE puts each copy back with a signal, the source waits and sums
//                   the 8 copies with the gating weights. Checked once (output == input).
//
// Output (PE 0): a table, or with --csv lines `name,bytes,median_us,rate`, where rate is
// millions of operations per second for put_rate/put_lat/get_lat and GB/s (bytes each PE
// sends / time) for alltoall and moe. Options: --csv, --reps N (default 7), --quick.
// Every wait for the GPU has a deadline ($BENCH_TIMEOUT seconds, default 60).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <chrono>
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace cg = cooperative_groups;

static int g_me = -1;

#define DIE(...)                                                         \
    do {                                                                 \
        fprintf(stderr, "device_bench: PE %d: ", g_me);                  \
        fprintf(stderr, __VA_ARGS__);                                    \
        fprintf(stderr, "\n");                                           \
        exit(1);                                                         \
    } while (0)
#define CUDA_CHECK(call)                                                                    \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) DIE("%s: %s (line %d)", #call, cudaGetErrorString(e_), __LINE__); \
    } while (0)

static void sync_or_die(cudaStream_t s, const char *what) {
    const char *t = getenv("BENCH_TIMEOUT");
    double limit = t && atof(t) > 0 ? atof(t) : 60.0;
    auto start = std::chrono::steady_clock::now();
    for (;;) {
        cudaError_t e = cudaStreamQuery(s);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) DIE("%s: %s", what, cudaGetErrorString(e));
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit)
            DIE("%s: did not finish within %.0f s", what, limit);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}

static void launch_coll(const void *f, dim3 grid, dim3 block, void **args, cudaStream_t s, const char *what) {
    int rc = nvshmemx_collective_launch(f, grid, block, args, 0, s);
    if (rc != 0) DIE("nvshmemx_collective_launch(%s) returned %d", what, rc);
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct Row {
    const char *name;
    size_t bytes;
    double us;
    double rate;
};
static std::vector<Row> rows;

// ---------------------------------------------------------------- put rate
constexpr int RATE_BLOCKS = 32, RATE_THREADS = 256, RATE_PER_THREAD = 64;
__global__ void k_put_rate(long *dst, const long *src, int peer, int active) {
    if (!active) return;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < RATE_PER_THREAD; i++) {
        size_t idx = (size_t)i * gridDim.x * blockDim.x + t;
        nvshmem_long_put_nbi(dst + idx, src + idx, 1, peer);
    }
    nvshmem_quiet();
}

// ---------------------------------------------------------------- latency
__global__ void k_put_lat(long *buf, uint64_t *sig, int iters, uint64_t base, int me) {
    const long *v = buf + 32;  // symmetric source
    for (int i = 1; i <= iters; i++) {
        uint64_t want = base + i;
        if (me == 0) {
            nvshmem_long_put_signal(buf, v, 1, sig, want, NVSHMEM_SIGNAL_SET, 1);
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, want);
        } else if (me == 1) {
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, want);
            nvshmem_long_put_signal(buf, v, 1, sig, want, NVSHMEM_SIGNAL_SET, 0);
        }
    }
}

__global__ void k_get_lat(long *chain, int iters, long *out) {
    long idx = 0;
    for (int i = 0; i < iters; i++) idx = nvshmem_long_g(chain + (idx & 63), 1);  // dependent loads
    *out = idx;
}

// ---------------------------------------------------------------- alltoall
__global__ void k_alltoall(char *dst, const char *src, size_t bytes, int iters) {
    for (int i = 0; i < iters; i++) nvshmemx_alltoallmem_block(NVSHMEM_TEAM_WORLD, dst, src, bytes);
}

// ---------------------------------------------------------------- MoE
constexpr int T = 128, H = 7168, TOPK = 8;
constexpr size_t TOKEN_BYTES = (size_t)H * sizeof(__nv_bfloat16);

struct Moe {
    __nv_bfloat16 *x;      // [T][H] input tokens (symmetric: a put source)
    __nv_bfloat16 *recv;   // [npes][T][TOPK][H] copies received for my experts
    __nv_bfloat16 *comb;   // [T][TOPK][H] copies returned by the experts
    __nv_bfloat16 *out;    // [T][H] weighted sum
    uint64_t *sig;         // [npes] dispatch counters (per source PE), [npes] combine counter at sig[npes]
    unsigned long long *ns;  // [iters][2] dispatch and combine times (globaltimer, block 0)
    int npes, experts, iters;
    uint64_t round0;       // rounds done before this launch
};

__device__ __forceinline__ int moe_expert(int src, int t, int k, int experts) {
    int base = (src * 131 + t * 17) % experts;
    return (base + k * (experts / TOPK)) % experts;  // 8 distinct experts
}
__device__ __forceinline__ float moe_weight(int k) { return (k + 1) / 36.0f; }
__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_moe(Moe m) {
    cg::grid_group grid = cg::this_grid();
    int me = nvshmem_my_pe();
    int per_pe = m.experts / m.npes;
    int gwarp = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int nwarps = gridDim.x * blockDim.x / warpSize;
    uint64_t *dsig = m.sig, *csig = m.sig + m.npes;
    // How many copies each source sends me per round (fixed routing).
    for (int it = 0; it < m.iters; it++) {
        uint64_t round = m.round0 + it + 1;
        unsigned long long t0 = gtime();
        // dispatch: warp w sends copies (t, k) = w, w + nwarps, ...
        for (int c = gwarp; c < T * TOPK; c += nwarps) {
            int t = c / TOPK, k = c % TOPK;
            int pe = moe_expert(me, t, k, m.experts) / per_pe;
            size_t slot = ((size_t)me * T + t) * TOPK + k;
            nvshmemx_putmem_signal_nbi_warp(m.recv + slot * H, m.x + (size_t)t * H, TOKEN_BYTES, dsig + me, 1,
                                            NVSHMEM_SIGNAL_ADD, pe);
        }
        // wait: source s sends me as many copies as its routing picks my experts
        if (blockIdx.x == 0 && threadIdx.x < m.npes) {
            int s = threadIdx.x;
            uint64_t n = 0;
            for (int t = 0; t < T; t++)
                for (int k = 0; k < TOPK; k++) n += moe_expert(s, t, k, m.experts) / per_pe == me;
            nvshmem_signal_wait_until(dsig + s, NVSHMEM_CMP_GE, n * round);
        }
        grid.sync();
        unsigned long long t1 = gtime();
        // combine: send every copy I received back to its source (the expert is the identity)
        for (int c = gwarp; c < m.npes * T * TOPK; c += nwarps) {
            int s = c / (T * TOPK), t = (c / TOPK) % T, k = c % TOPK;
            if (moe_expert(s, t, k, m.experts) / per_pe != me) continue;
            size_t slot = ((size_t)s * T + t) * TOPK + k;
            nvshmemx_putmem_signal_nbi_warp(m.comb + ((size_t)t * TOPK + k) * H, m.recv + slot * H, TOKEN_BYTES, csig,
                                            1, NVSHMEM_SIGNAL_ADD, s);
        }
        if (blockIdx.x == 0 && threadIdx.x == 0)
            nvshmem_signal_wait_until(csig, NVSHMEM_CMP_GE, (uint64_t)T * TOPK * round);
        grid.sync();
        // weighted sum of the 8 copies
        for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)T * H; i += gridDim.x * blockDim.x) {
            size_t t = i / H, h = i % H;
            float acc = 0;
            for (int k = 0; k < TOPK; k++) acc += moe_weight(k) * __bfloat162float(m.comb[(t * TOPK + k) * H + h]);
            m.out[i] = __float2bfloat16(acc);
        }
        grid.sync();
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            unsigned long long t2 = gtime();
            m.ns[2 * it] = t1 - t0;
            m.ns[2 * it + 1] = t2 - t1;
        }
    }
}

__global__ void k_moe_fill(__nv_bfloat16 *x, int me) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)T * H; i += gridDim.x * blockDim.x) {
        int t = i / H, h = i % H;
        x[i] = __float2bfloat16(((h + t + me) % 64 - 32) / 32.0f);
    }
}

int main(int argc, char **argv) {
    bool csv = false, quick = false;
    int reps = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--csv")) csv = true;
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: device_bench [--csv] [--reps N] [--quick]\n");
            return 2;
        }
    }
    nvshmem_init();
    g_me = nvshmem_my_pe();
    int me = g_me, npes = nvshmem_n_pes();
    int ndev = 0;
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    CUDA_CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % ndev));
    if (npes < 2) DIE("needs at least 2 PEs, got %d", npes);
    if (quick) reps = 3;
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    auto timed = [&](auto launch, const char *what) {
        nvshmem_barrier_all();
        CUDA_CHECK(cudaEventRecord(e0, s));
        launch();
        CUDA_CHECK(cudaEventRecord(e1, s));
        sync_or_die(s, what);
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        return (double)ms * 1000.0;  // us
    };

    // put rate
    {
        size_t n = (size_t)RATE_BLOCKS * RATE_THREADS * RATE_PER_THREAD;
        long *dst = (long *)nvshmem_malloc(n * sizeof(long));
        long *src = (long *)nvshmem_calloc(n, sizeof(long));  // symmetric source (any channel)
        if (!dst || !src) DIE("nvshmem_malloc(%zu) failed", n * sizeof(long));
        std::vector<double> v;
        for (int r = 0; r < reps + 1; r++) {
            double us = timed([&] { k_put_rate<<<RATE_BLOCKS, RATE_THREADS, 0, s>>>(dst, src, 1, me == 0); }, "k_put_rate");
            if (r) v.push_back(us);  // the first is a warm-up
        }
        double us = median(v);
        rows.push_back({"put_rate_8B", 8, us / n, n / us});
        nvshmem_barrier_all();
        nvshmem_free(dst);
        nvshmem_free(src);
    }
    // put latency (ping-pong on a signal)
    {
        long *buf = (long *)nvshmem_calloc(64, sizeof(long));
        uint64_t *sig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
        int iters = quick ? 200 : 1000;
        uint64_t base = 0;
        std::vector<double> v;
        for (int r = 0; r < reps + 1; r++) {
            double us = timed([&] { k_put_lat<<<1, 1, 0, s>>>(buf, sig, iters, base, me); }, "k_put_lat");
            base += iters;
            if (r) v.push_back(us / iters / 2);
        }
        double us = median(v);
        rows.push_back({"put_lat_8B", 8, us, 1.0 / us});
        // get latency
        long *out;
        CUDA_CHECK(cudaMalloc(&out, sizeof(long)));
        std::vector<long> h(64);
        for (int i = 0; i < 64; i++) h[i] = (i * 7 + 3) % 64;
        CUDA_CHECK(cudaMemcpy(buf, h.data(), 64 * sizeof(long), cudaMemcpyHostToDevice));
        v.clear();
        for (int r = 0; r < reps + 1; r++) {
            double us = timed([&] { if (me == 0) k_get_lat<<<1, 1, 0, s>>>(buf, iters, out); }, "k_get_lat");
            if (r) v.push_back(us / iters);
        }
        us = median(v);
        rows.push_back({"get_lat_8B", 8, us, 1.0 / us});
        nvshmem_barrier_all();
        nvshmem_free(buf);
        nvshmem_free(sig);
        CUDA_CHECK(cudaFree(out));
    }
    // alltoall 7 KiB (block form)
    {
        size_t bytes = 7 * 1024;
        char *src = (char *)nvshmem_malloc(bytes * npes), *dst = (char *)nvshmem_malloc(bytes * npes);
        if (!src || !dst) DIE("nvshmem_malloc(%zu) failed", bytes * npes);
        int iters = quick ? 20 : 100;
        std::vector<double> v;
        void *args[] = {&dst, &src, &bytes, &iters};
        for (int r = 0; r < reps + 1; r++) {
            double us = timed([&] { launch_coll((const void *)k_alltoall, 1, 256, args, s, "k_alltoall"); }, "k_alltoall");
            if (r) v.push_back(us / iters);
        }
        double us = median(v);
        rows.push_back({"alltoall_7KiB", bytes, us, bytes * npes / us / 1e3});
        nvshmem_barrier_all();
        nvshmem_free(src);
        nvshmem_free(dst);
    }
    // MoE dispatch + combine
    {
        Moe m;
        m.npes = npes;
        m.experts = npes * std::max(1, 32 / npes) >= TOPK ? npes * std::max(1, 32 / npes) : TOPK * npes;
        m.iters = quick ? 3 : 10;
        m.round0 = 0;
        m.x = (__nv_bfloat16 *)nvshmem_malloc((size_t)T * H * 2);
        m.recv = (__nv_bfloat16 *)nvshmem_malloc((size_t)npes * T * TOPK * H * 2);
        m.comb = (__nv_bfloat16 *)nvshmem_malloc((size_t)T * TOPK * H * 2);
        m.out = (__nv_bfloat16 *)nvshmem_malloc((size_t)T * H * 2);
        m.sig = (uint64_t *)nvshmem_calloc(npes + 1, sizeof(uint64_t));
        if (!m.x || !m.recv || !m.comb || !m.out || !m.sig) DIE("nvshmem_malloc for the MoE buffers failed (%d PEs)", npes);
        CUDA_CHECK(cudaMalloc(&m.ns, 2 * m.iters * sizeof(unsigned long long)));
        k_moe_fill<<<64, 256, 0, s>>>(m.x, me);
        sync_or_die(s, "k_moe_fill");
        int blocks = 0;
        void *args[] = {&m};
        if (nvshmemx_collective_launch_query_gridsize((const void *)k_moe, 256, args, 0, &blocks) != 0 || blocks < 1)
            DIE("nvshmemx_collective_launch_query_gridsize(k_moe) failed");
        blocks = std::min(blocks, 32);
        // The same grid on every PE does not matter (no symmetric per-block state).
        std::vector<double> vd, vc, vt;
        for (int r = 0; r < reps + 1; r++) {
            nvshmem_barrier_all();
            launch_coll((const void *)k_moe, blocks, 256, args, s, "k_moe");
            sync_or_die(s, "k_moe");
            m.round0 += m.iters;
            std::vector<unsigned long long> ns(2 * m.iters);
            CUDA_CHECK(cudaMemcpy(ns.data(), m.ns, ns.size() * 8, cudaMemcpyDeviceToHost));
            if (r == 0) {  // check once: the weights sum to 1, the experts are the identity
                std::vector<__nv_bfloat16> out((size_t)T * H), x((size_t)T * H);
                CUDA_CHECK(cudaMemcpy(out.data(), m.out, out.size() * 2, cudaMemcpyDeviceToHost));
                CUDA_CHECK(cudaMemcpy(x.data(), m.x, x.size() * 2, cudaMemcpyDeviceToHost));
                for (size_t i = 0; i < out.size(); i++) {
                    float a = __bfloat162float(out[i]), b = __bfloat162float(x[i]);
                    if (a - b > 0.02f || b - a > 0.02f)
                        DIE("moe: out[token %zu][%zu] = %f, expected %f (combine of the 8 expert copies)", i / H,
                            i % H, a, b);
                }
                continue;
            }
            for (int i = 0; i < m.iters; i++) {
                vd.push_back(ns[2 * i] / 1e3);
                vc.push_back(ns[2 * i + 1] / 1e3);
                vt.push_back((ns[2 * i] + ns[2 * i + 1]) / 1e3);
            }
        }
        size_t sent = (size_t)T * TOPK * TOKEN_BYTES;  // bytes each PE sends per phase
        double d = median(vd), c = median(vc), t = median(vt);
        rows.push_back({"moe_dispatch", sent, d, sent / d / 1e3});
        rows.push_back({"moe_combine", sent, c, sent / c / 1e3});
        rows.push_back({"moe_dispatch_combine", 2 * sent, t, 2 * sent / t / 1e3});
        nvshmem_barrier_all();
        nvshmem_free(m.x);
        nvshmem_free(m.recv);
        nvshmem_free(m.comb);
        nvshmem_free(m.out);
        nvshmem_free(m.sig);
        CUDA_CHECK(cudaFree(m.ns));
    }

    if (me == 0) {
        if (csv) {
            printf("# device_bench %d PEs: name,bytes,median_us,rate (put_rate/put_lat/get_lat: Mops/s; alltoall/moe: GB/s)\n",
                   npes);
            for (auto &r : rows) printf("%s,%zu,%.3f,%.3f\n", r.name, r.bytes, r.us, r.rate);
        } else {
            printf("device_bench: %d PEs\n%-22s %10s %12s %12s\n", npes, "name", "bytes", "median_us", "rate");
            for (auto &r : rows) printf("%-22s %10zu %12.3f %12.3f\n", r.name, r.bytes, r.us, r.rate);
        }
        fflush(stdout);
    }
    nvshmem_barrier_all();
    nvshmem_finalize();
    return 0;
}
