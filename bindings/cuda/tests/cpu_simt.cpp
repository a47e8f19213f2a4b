// The CPU target's SIMT model (src/arch/cpu.cuh) running the device library's own code: blocks
// of host threads call the library's scopes, shuffles, block broadcast, atomics, routing, P2P
// put/p/g, AMOs, signals, barriers and collectives on a one-node fake state whose "peer" heap
// is a second buffer of this process. Compiled with the ordinary C++ compiler:
//
//   c++ -x c++ -std=c++17 -DOXSHMEMI_TARGET_CPU -I bindings/c/include -I device/include
//       bindings/cuda/tests/cpu_simt.cpp -o cpu_simt -lpthread
//
// (tests/tests/cpu_target.rs does, with -fsanitize=thread too). Prints "ok: <what>" per check
// and "cpu_simt: all checks passed"; a failed check prints the line, the value and the
// expected one, and exits 1.
#include <atomic>
#include <stdio.h>
#include <stdlib.h>

#include "../src/core.cu"

oxshmem_device_state_t *oxshmemi_state_d = nullptr;
oxshmemi::oxshmem_cuda_state_t *oxshmemi_cuda_d = nullptr;
/// The constant copy of the state's head that host.cu's attach writes (the world barrier and
/// the ring's ticket counter read it): this test keeps it equal to its fake state by hand.
oxshmemi_fast_state_t oxshmemi_fast_d = {};

/// What attach copies from `s` (host.cu): after every change of the fake state's head.
static void sync_fast(const oxshmem_device_state_t &s) {
    oxshmemi_fast_d.my_pe = s.my_pe;
    oxshmemi_fast_d.n_pes = s.n_pes;
    oxshmemi_fast_d.heap_base = s.heap_base;
    oxshmemi_fast_d.heap_size = s.heap_size;
    oxshmemi_fast_d.peer_base = s.peer_base;
    oxshmemi_fast_d.limit = s.heap_size >= 8 ? s.heap_size - 8 : 0;
    oxshmemi_fast_d.ring = s.ring;
    oxshmemi_fast_d.ibgda = s.ibgda;
    oxshmemi_fast_d.amo_base = s.peer_base;
}

using namespace oxshmemi;
using arch::cpu::idx3;

static std::atomic<int> failures{0};
#define CHECK(got, want)                                                                              \
    do {                                                                                              \
        long long g_ = (long long)(got), w_ = (long long)(want);                                     \
        if (g_ != w_) {                                                                               \
            if (failures++ < 20)                                                                      \
                fprintf(stderr, "cpu_simt.cpp:%d: %s = %lld, expected %lld (thread %d)\n", __LINE__, \
                        #got, g_, w_, arch::cpu::self ? (int)thread_id() : -1);                      \
        }                                                                                             \
    } while (0)

static void ok(const char *what) {
    if (failures) {
        fprintf(stderr, "cpu_simt: FAILED %s\n", what);
        exit(1);
    }
    printf("ok: %s\n", what);
}

// ---- issue 31, items 1, 5 and 6 -------------------------------------------------------------------

/// A NIC for the IBGDA checks: watches every queue's producer index (ring.prod_idx), executes its
/// inline RDMA writes (raddr is a host address here) and completes it through the collapsed CQ.
/// Queue sets other than 0 are completed only `slow_ms` after their doorbell, so a quiet that
/// returns early is caught.
struct FakeNic {
    oxshmem_ibgda_t *g;
    int slow_ms;
    std::atomic<bool> stop{false};
    std::thread t;
    FakeNic(oxshmem_ibgda_t *g_, int slow_ms_) : g(g_), slow_ms(slow_ms_) {
        t = std::thread([this] { run(); });
    }
    ~FakeNic() {
        stop = true;
        t.join();
    }
    static uint32_t be32(const uint8_t *b) { return (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]; }
    static uint64_t be64(const uint8_t *b) { return (uint64_t)be32(b) << 32 | be32(b + 4); }
    void run() {
        uint32_t nq = g->num_rc * g->n_pes;
        std::vector<uint64_t> done(nq, 0);
        std::vector<std::chrono::steady_clock::time_point> seen(nq);
        while (!stop) {
            for (uint32_t i = 0; i < nq; i++) {
                oxshmem_qp_t *q = &g->qps[i];
                uint64_t p = __atomic_load_n(&q->ring.prod_idx, __ATOMIC_ACQUIRE);
                if (p <= done[i]) continue;
                auto now = std::chrono::steady_clock::now();
                if (seen[i] == std::chrono::steady_clock::time_point()) seen[i] = now;
                if (i / g->n_pes != 0 && now - seen[i] < std::chrono::milliseconds(slow_ms)) continue;
                for (uint64_t k = done[i]; k < p; k++) {
                    uint8_t w[64];
                    for (int j = 0; j < 8; j++) {
                        uint64_t v = __atomic_load_n(&q->sq[(k % q->nwqes) * 8 + j], __ATOMIC_RELAXED);
                        memcpy(w + 8 * j, &v, 8);
                    }
                    uint32_t len = be32(w + 32);
                    if (w[3] == mlx5::OP_RDMA_WRITE && (len & mlx5::INLINE_SEG) && (len & 0xffff) <= 28)
                        memcpy((void *)(uintptr_t)be64(w + 16), w + 36, len & 0xffff);
                }
                uint16_t c = (uint16_t)(p - 1);  // the last WQE's counter, big-endian at bytes 60-61
                uint64_t cqe7 = (uint64_t)(c >> 8) << 32 | (uint64_t)(c & 0xff) << 40;  // opcode REQ
                __atomic_store_n(&q->cq[7], cqe7, __ATOMIC_RELEASE);
                done[i] = p;
                seen[i] = {};
            }
            std::this_thread::yield();
        }
    }
};

/// Item 1: quiet and barrier complete every queue of the PE, not only the calling warp's. Four
/// warps put to PE 1 over IBGDA (queue sets 0, 1, 0, 1); queue set 1's NIC is slow; after
/// __syncthreads, thread 0's quiet (and quiet<Block>, barrier_all<Block>) must have waited for
/// every warp's write.
static void check_ibgda_quiet(oxshmem_device_state_t &st, unsigned char *heap0, unsigned char *heap1) {
    const uint32_t NRC = 2, NPES = 2, NW = 64;
    static oxshmem_qp_t qps[NRC * NPES];
    static oxshmem_qp_doorbell_t nics[NRC * NPES];
    static uint64_t sq[NRC * NPES][NW * 8], marks[NRC * NPES][NW], cq[NRC * NPES][8],
        ibuf[NRC * NPES][OXSHMEM_IBUF_WORDS];
    static uint32_t rkeys[NPES] = {0x11, 0x22};
    // the heaps' bases: their data start after the world flag area
    static uint64_t rbases[NPES] = {(uint64_t)(heap0 - TEAM_FLAG_BYTES), (uint64_t)(heap1 - TEAM_FLAG_BYTES)};
    static const uint8_t channel[2] = {OXSHMEM_CHANNEL_P2P, OXSHMEM_CHANNEL_IBGDA};
    static oxshmem_ibgda_t g = {};
    g.n_pes = NPES;
    g.num_rc = NRC;
    g.nwqes = NW;
    g.ncqes = 1;
    g.batch = 1;
    g.cq_mode = OXSHMEM_CQ_MODE_COLLAPSED;
    g.nqps = NRC * NPES;
    g.heap_base = st.heap_base;
    g.heap_size = st.heap_size;
    g.qps = qps;
    g.rkeys = rkeys;
    g.rbases = rbases;
    auto reset = [&] {
        for (uint32_t i = 0; i < NRC * NPES; i++) {
            oxshmem_qp_t &q = qps[i];
            memset(&q, 0, sizeof q);
            memset(&nics[i], 0, sizeof nics[i]);
            q.nic = &nics[i];
            memset(sq[i], 0, sizeof sq[i]);
            memset(marks[i], 0, sizeof marks[i]);
            memset(cq[i], 0, sizeof cq[i]);
            ((uint8_t *)cq[i])[63] = 0xf0;  // an empty CQE
            q.sq = sq[i];
            q.marks = marks[i];
            q.cq = cq[i];
            q.ibuf = ibuf[i];
            q.nwqes = NW;
            q.ncqes = 1;
            q.batch = 1;
            q.mode = OXSHMEM_CQ_MODE_COLLAPSED;
            q.qpn = 0x100 + i;
            q.peer = i % NPES;
        }
    };
    const uint8_t *saved = st.channel;
    st.channel = channel;
    st.ibgda = &g;
    st.n_pes = 2;
    st.error = {};
    sync_fast(st);
    uint64_t *out = (uint64_t *)(heap0 + 24576), *out1 = (uint64_t *)(heap1 + 24576);
    for (int variant = 0; variant < 3; variant++) {
        reset();
        memset(out1, 0, 4 * 8);
        static std::atomic<int> incomplete;
        incomplete = 0;
        {
            FakeNic nic(&g, 300);
            auto check = [&] {
                if (thread_id() == 0) {
                    // the "flag" point: every warp's write is complete
                    for (uint32_t i = 0; i < NRC * NPES; i++)
                        if (__atomic_load_n(&qps[i].prod.cons_idx, __ATOMIC_ACQUIRE) <
                            __atomic_load_n(&qps[i].prod.resv_head, __ATOMIC_ACQUIRE))
                            incomplete++;
                    for (uint32_t k = 0; k < 4; k++)
                        if (__atomic_load_n(&out1[k], __ATOMIC_RELAXED) != 0x5100 + k) incomplete++;
                }
            };
            arch::cpu::launch_block({1, 1, 1}, {128, 1, 1}, {0, 0, 0}, [&] {
                uint32_t w = thread_id() / 32;
                uint64_t v = 0x5100 + w;
                api::put_nbi<Warp, uint64_t>(out + w, &v, 1, 1);  // inline: one WQE on set w % 2
                if (variant == 0) {
                    Block::sync();
                    if (thread_id() == 0) api::quiet<Thread>();
                    check();
                } else if (variant == 1) {
                    api::quiet<Block>();
                    check();
                }
            });
            if (variant == 2) {
                st.n_pes = 1;  // a barrier of this PE alone: what it waits for is the quiet
                sync_fast(st);
                arch::cpu::launch_block({1, 1, 1}, {128, 1, 1}, {0, 0, 0}, [&] {
                    api::barrier_all<Block>();
                    check();
                });
                st.n_pes = 2;
                sync_fast(st);
            }
        }
        CHECK(incomplete.load(), 0);
        for (uint32_t k = 0; k < 4; k++) CHECK(out1[k], 0x5100 + k);
        CHECK(qps[0 * NPES + 1].prod.resv_head, 2);  // warps 0 and 2 on set 0
        CHECK(qps[1 * NPES + 1].prod.resv_head, 2);  // warps 1 and 3 on set 1
        CHECK(st.error.state, 0);
    }
    memset(out1, 0, 4 * 8);
    st.ibgda = nullptr;
    st.channel = saved;
    sync_fast(st);
    ok("IBGDA: quiet<Thread> after __syncthreads, quiet<Block>, barrier_all<Block> complete every warp's queue set");
}

/// Item 5: a successful test/wait is an acquire: the payload a producer wrote before its
/// release store of the flag is read after it without a race (ThreadSanitizer checks).
static void check_test_acquires(oxshmem_device_state_t &st, unsigned char *heap0) {
    st.error = {};
    st.n_pes = 1;
    sync_fast(st);
    static int payload[6];
    int *flags = (int *)(heap0 + 28672);
    for (int k = 0; k < 6; k++) flags[k] = 0, payload[k] = 0;
    std::thread producer([&] {
        for (int k = 0; k < 6; k++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            payload[k] = 100 + k;                                 // plain data
            __atomic_store_n(&flags[k], 1, __ATOMIC_RELEASE);     // then the flag
        }
    });
    static int got[6];
    arch::cpu::launch_block({1, 1, 1}, {1, 1, 1}, {0, 0, 0}, [&] {
        size_t idx[1];
        while (!api::test<Thread, int>(&flags[0], NVSHMEM_CMP_EQ, 1)) arch::pause();
        got[0] = payload[0];
        while (!api::test_all<Thread, int>(&flags[1], 1, nullptr, NVSHMEM_CMP_EQ, 1)) arch::pause();
        got[1] = payload[1];
        while (api::test_any<Thread, int>(&flags[2], 1, nullptr, NVSHMEM_CMP_EQ, 1) != 0) arch::pause();
        got[2] = payload[2];
        while (api::test_some<Thread, int>(&flags[3], 1, idx, nullptr, NVSHMEM_CMP_EQ, 1) != 1) arch::pause();
        got[3] = payload[3];
        api::wait_until<Thread, int>(&flags[4], NVSHMEM_CMP_EQ, 1);
        got[4] = payload[4];
        CHECK((api::wait_until_any<Thread, int>(&flags[5], 1, nullptr, NVSHMEM_CMP_EQ, 1)), 0);
        got[5] = payload[5];
    });
    producer.join();
    for (int k = 0; k < 6; k++) CHECK(got[k], 100 + k);
    CHECK(st.error.state, 0);
    ok("test, test_all, test_any, test_some, wait_until, wait_until_any acquire the payload (no race under TSan)");
}

/// Item 6: warp and block put/put_signal synchronize the group on entry: the threads fill the
/// source and call the collective put with no __syncthreads of their own.
static void check_group_put_entry_sync(oxshmem_device_state_t &st, unsigned char *heap0, unsigned char *heap1) {
    st.error = {};
    st.n_pes = 2;
    sync_fast(st);
    const uint32_t N = 64, PER = 16;
    static int src[N * PER];
    int *dst = (int *)(heap0 + 57344), *dst1 = (int *)(heap1 + 57344);  // words no other section uses
    uint64_t *sig = (uint64_t *)(heap0 + 61440), *sig1 = (uint64_t *)(heap1 + 61440);
    for (int variant = 0; variant < 3; variant++) {
        memset(src, 0, sizeof src);
        memset(dst1, 0, sizeof src);
        *sig1 = 0;
        arch::cpu::launch_block({1, 1, 1}, {N, 1, 1}, {0, 0, 0}, [&] {
            uint32_t t = thread_id();
            // the last thread of each warp is late: the others would copy its slice before it writes
            if (t % 32 == 31) std::this_thread::sleep_for(std::chrono::milliseconds(30));
            for (uint32_t k = 0; k < PER; k++) src[t * PER + k] = (int)(variant * 100000 + t * 100 + k);
            if (variant == 0)
                api::put<Block, int>(dst, src, N * PER, 1);
            else if (variant == 1)
                api::put<Warp, int>(dst + t / 32 * 32 * PER, src + t / 32 * 32 * PER, 32 * PER, 1);
            else
                api::put_signal<Block, int>(dst, src, N * PER, sig, 7, NVSHMEM_SIGNAL_SET, 1);
        });
        for (uint32_t i = 0; i < N * PER; i++) CHECK(dst1[i], variant * 100000 + i / PER * 100 + i % PER);
        if (variant == 2) CHECK(*sig1, 7);
    }
    // get<Block> into a buffer the group still reads just before the call
    static int old_seen[N * PER];
    for (uint32_t i = 0; i < N * PER; i++) src[i] = -(int)i, dst1[i] = (int)i;
    arch::cpu::launch_block({1, 1, 1}, {N, 1, 1}, {0, 0, 0}, [&] {
        uint32_t t = thread_id();
        if (t % 32 == 31) std::this_thread::sleep_for(std::chrono::milliseconds(30));
        for (uint32_t k = 0; k < PER; k++) old_seen[t * PER + k] = src[t * PER + k];
        api::get<Block, int>(src, dst, N * PER, 1);
    });
    for (uint32_t i = 0; i < N * PER; i++) CHECK(old_seen[i], -(int)i);
    for (uint32_t i = 0; i < N * PER; i++) CHECK(src[i], (int)i);
    CHECK(st.error.state, 0);
    memset(dst1, 0, N * PER * sizeof(int));
    *sig1 = 0;
    ok("put<Block>, put<Warp>, put_signal<Block> of a source the group fills just before the call; get<Block> into a buffer it reads just before");
}

int main() {
    // Indices, warps (the last one partial), shuffles, broadcast, block barrier.
    const uint32_t N = 100;
    static int seen[N];
    arch::cpu::launch_block({3, 1, 1}, {N, 1, 1}, {1, 0, 0}, [&] {
        uint32_t t = thread_id();
        CHECK(block_id(), 1);
        CHECK(block_threads(), N);
        CHECK(Warp::rank(), t % 32);
        CHECK(Warp::size(), t < 96 ? 32 : 4);
        CHECK(activemask(), t < 96 ? 0xffffffffu : 0xfu);
        CHECK(shfl(activemask(), (int)t * 3, 0), t / 32 * 32 * 3);
        CHECK(shfl(activemask(), (uint64_t)t << 40, 2), (uint64_t)(t / 32 * 32 + 2) << 40);
        CHECK(share_rc<Warp>((int)t + 7), t / 32 * 32 + 7);
        CHECK(share_rc<Block>((int)t + 5), 5);
        seen[t] = (int)t + 1;
        Block::sync();
        CHECK(seen[(t + 1) % N], (t + 1) % N + 1);
        Block::sync();
    });
    ok("indices, warp ranks and sizes, activemask, shfl, share_rc<Warp|Block>, Block::sync");

    // Warpgroups: two groups of 128 meet at their own barriers.
    static int wg[256];
    arch::cpu::launch_block({1, 1, 1}, {16, 16, 1}, {0, 0, 0}, [&] {
        uint32_t t = thread_id();
        CHECK(Warpgroup::rank(), t % 128);
        for (int round = 1; round <= 3; round++) {
            wg[t] = round * 1000 + (int)t;
            Warpgroup::sync();
            uint32_t peer = t / 128 * 128 + (t + 1) % 128;
            CHECK(wg[peer], round * 1000 + (int)peer);
            Warpgroup::sync();
        }
    });
    ok("2-D block of 256: Warpgroup::rank, Warpgroup::sync");

    // Atomics of system scope from every thread.
    static uint64_t sum = 0, hi = 0;
    static uint32_t cas_ctr = 0;
    arch::cpu::launch_block({1, 1, 1}, {64, 1, 1}, {0, 0, 0}, [&] {
        uint32_t t = thread_id();
        sys_ref<uint64_t>(sum).fetch_add(t, mo_relaxed);
        sys_ref<uint64_t>(hi).fetch_max(t * 11, mo_acq_rel);
        uint32_t c = sys_ref<uint32_t>(cas_ctr).load(mo_relaxed);
        while (!sys_ref<uint32_t>(cas_ctr).compare_exchange_weak(c, c + 1, mo_acq_rel, mo_relaxed)) {
        }
    });
    CHECK(sum, 64 * 63 / 2);
    CHECK(hi, 63 * 11);
    CHECK(cas_ctr, 64);
    ok("sys_ref fetch_add, fetch_max, compare_exchange_weak from 64 threads");

    // half and bfloat16 as the reductions use them.
    float hs = (float)combine<Op::Sum, half>((half)1.5f, (half)2.25f);
    CHECK(hs * 4, 15);
    float bm = combine<Op::Max, __nv_bfloat16>(__nv_bfloat16(3.0f), __nv_bfloat16(-8.0f));
    CHECK(bm, 3);
    CHECK(__nv_bfloat16(1.0f).x, 0x3f80);
    float bp = combine<Op::Prod, __nv_bfloat16>(__nv_bfloat16(1.5f), __nv_bfloat16(2.0f));
    CHECK(bp, 3);
    ok("half and __nv_bfloat16 arithmetic");

    // The library's P2P paths on a fake 2-PE state: PE 1's heap is a second buffer here.
    // Each heap starts with the world barrier's flag area (TEAM_FLAG_BYTES: the flags, the
    // world epoch and the ring's ticket counter, as in the GPU heap's reserved area); the
    // sections' data start after it, at heap0 and heap1.
    const uint64_t HEAP = 1 << 16;
    alignas(64) static unsigned char raw0[TEAM_FLAG_BYTES + HEAP], raw1[TEAM_FLAG_BYTES + HEAP];
    unsigned char *heap0 = raw0 + TEAM_FLAG_BYTES, *heap1 = raw1 + TEAM_FLAG_BYTES;
    static const uint64_t peers[3] = {(uint64_t)raw0, (uint64_t)raw1, 0};
    static const uint8_t channel[2] = {OXSHMEM_CHANNEL_P2P, OXSHMEM_CHANNEL_P2P};
    static oxshmem_device_state_t st = {};
    st.my_pe = 0;
    st.n_pes = 2;
    st.heap_base = (uint64_t)raw0;
    st.heap_size = TEAM_FLAG_BYTES + HEAP;
    st.peer_base = peers;
    st.channel = channel;
    st.barrier_flags = (uint64_t)raw0;
    st.timeout_ns = 5000000000ull;
    oxshmemi_state_d = &st;
    sync_fast(st);
    int *src = (int *)heap0, *dst = (int *)(heap0 + 4096);
    for (int i = 0; i < 1000; i++) src[i] = i * 7;
    uint64_t *sig = (uint64_t *)(heap0 + 8192);
    arch::cpu::launch_block({1, 1, 1}, {64, 1, 1}, {0, 0, 0}, [&] {
        api::put<Block, int>(dst, src, 1000, 1);                        // all 64 threads stride
        api::put_signal<Warp, int>(dst + 1000 + thread_id() / 32 * 10, src, 10, sig, 5, NVSHMEM_SIGNAL_ADD, 1);
        if (thread_id() == 0) {
            api::p<Thread, int>(dst + 2000, 42, 1);
            int g3 = api::g<Thread, int>(src + 3, 1);
            CHECK(g3, 0);  // PE 1's copy of src is zero
            CHECK((api::atomic_fetch_add<Thread, long>((long *)(heap0 + 12288), 3, 1)), 0);
            CHECK((api::atomic_compare_swap<Thread, long>((long *)(heap0 + 12288), 3, 9, 1)), 3);
            api::signal_op<Thread>(sig + 1, 77, NVSHMEM_SIGNAL_SET, 1);
        }
    });
    int *dst1 = (int *)(heap1 + 4096);
    for (int i = 0; i < 1000; i++) CHECK(dst1[i], i * 7);
    for (int i = 0; i < 20; i++) CHECK(dst1[1000 + i], i % 10 * 7);
    CHECK(*(uint64_t *)(heap1 + 8192), 10);  // 5 added by each of 2 warps
    CHECK(dst1[2000], 42);
    CHECK(*(long *)(heap1 + 12288), 9);
    CHECK(*(uint64_t *)(heap1 + 8200), 77);
    CHECK(st.error.state, 0);
    ok("route + put<Block>, put_signal<Warp> (add), p, g, fetch_add, compare_swap, signal_op over P2P");

    // Signal after data, across agents: block 0 puts a payload to PE 1 with put_signal (set),
    // block 1 (standing for PE 1) waits for the signal and reads the payload. The signal is a
    // release after the data and the wait an acquire, so ThreadSanitizer sees the payload read
    // ordered after its write; a signal written with a plain store (or before the data) is a
    // race it reports (tests/cpu_breaks.rs breaks it on purpose).
    {
        // PE 0 to itself through its P2P mapping, so that the waiter's word is its own heap's.
        int *payload = (int *)(heap0 + 16384), *dest = (int *)(heap0 + 24576);
        uint64_t *flag = (uint64_t *)(heap0 + 20480);
        for (int i = 0; i < 256; i++) payload[i] = 1000 + i;
        static int got[256];
        arch::cpu::launch_grid({2, 1, 1}, {1, 1, 1}, [&] {
            if (block_id() == 0) {
                api::put_signal<Thread, int>(dest, payload, 256, flag, 1, NVSHMEM_SIGNAL_SET, 0);
            } else {
                api::signal_wait_until<Thread>(flag, NVSHMEM_CMP_EQ, 1);
                for (int i = 0; i < 256; i++) got[i] = dest[i];
            }
        });
        CHECK(st.error.state, 0);
        for (int i = 0; i < 256; i++) CHECK(got[i], 1000 + i);
        ok("put_signal's signal is seen after its data by a waiter on another agent");
    }

    // A bad PE and an address outside the heap are recorded with the thread that hit them.
    arch::cpu::launch_block({4, 1, 1}, {8, 1, 1}, {2, 0, 0}, [&] {
        if (thread_id() == 5) api::p<Thread, int>(dst, 1, 7);
    });
    CHECK(st.error.state, 2);
    CHECK(st.error.code, OXSHMEM_ERR_PE_OUT_OF_RANGE);
    CHECK(st.error.pe, 7);
    CHECK(st.error.block, 2);
    CHECK(st.error.thread, 5);
    ok("a bad PE is recorded with its block and thread");

    // wait_until sees a value another host thread stores later; a 1-PE barrier passes.
    st.error = {};
    st.n_pes = 1;
    sync_fast(st);
    static uint64_t *flag = (uint64_t *)(heap0 + 16384);
    std::thread writer([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        sys_ref<uint64_t>(*flag).store(3, mo_release);
    });
    arch::cpu::launch_block({1, 1, 1}, {32, 1, 1}, {0, 0, 0}, [&] {
        api::signal_wait_until<Thread>(flag, NVSHMEM_CMP_GE, 3);
        api::barrier_all<Warp>();
        api::barrier_all<Block>();
    });
    writer.join();
    CHECK(st.error.state, 0);
    CHECK(*(uint64_t *)(st.heap_base + WORLD_EPOCH_OFFSET), 2);  // the world epoch, in the heap
    ok("signal_wait_until across host threads, barrier_all<Warp|Block> on one PE");

    // A grid of 3 concurrent blocks: the first error wins, every block's AMOs land.
    st.error = {};
    st.n_pes = 2;
    sync_fast(st);
    static long *ctr = (long *)(heap0 + 20480);
    arch::cpu::launch_grid({3, 1, 1}, {40, 1, 1}, [&] {
        api::atomic_add<Thread, long>(ctr, (long)block_id() + 1, 1);
        if (thread_id() == 39) api::p<Thread, int>(dst, 1, -1 - (int)block_id());
    });
    CHECK(*(long *)(heap1 + 20480), 40 * (1 + 2 + 3));
    CHECK(st.error.state, 2);
    CHECK(st.error.thread, 39);
    CHECK(st.error.pe, -1 - (long long)st.error.block);
    ok("launch_grid: 3 concurrent blocks, AMOs from all, the first error recorded whole");

    // Issue 31: every queue quieted, tests that acquire, group puts that sync on entry.
    check_ibgda_quiet(st, heap0, heap1);
    check_test_acquires(st, heap0);
    check_group_put_entry_sync(st, heap0, heap1);

    // Collectives on one PE through the world team's table entry and scratch.
    st.error = {};
    st.n_pes = 1;
    sync_fast(st);
    static oxshmem_cuda_team_t teams[1] = {{0, 1, 1, 0, (uint64_t)(heap0 + 32768), 0}};
    static oxshmem_cuda_state_t cuda = {ABI_VERSION, 1, teams, 4096};
    oxshmemi_cuda_d = &cuda;
    static double *dsrc = (double *)(heap0 + 40960), *ddst = dsrc + 1000;
    for (int i = 0; i < 1000; i++) dsrc[i] = i * 0.5;
    arch::cpu::launch_block({1, 1, 1}, {64, 1, 1}, {0, 0, 0}, [&] {
        CHECK((api::reduce<Block, double, Op::Sum>(NVSHMEM_TEAM_WORLD, ddst, dsrc, 1000)), 0);
        // one collective on a team at a time: the first warp alone
        if (thread_id() < 32) CHECK((api::fcollect<Warp, double>(NVSHMEM_TEAM_WORLD, ddst + 1000, dsrc, 8)), 0);
        CHECK((api::team_n_pes<Thread>(NVSHMEM_TEAM_WORLD)), 1);
    });
    for (int i = 0; i < 1000; i++) CHECK(ddst[i] * 2, i);
    for (int i = 0; i < 8; i++) CHECK(ddst[1000 + i] * 2, i);
    CHECK(st.error.state, 0);
    ok("reduce<Block> (sum of 1000 doubles in chunks of the scratch), fcollect<Warp> on one PE");

    void check_v38_names(oxshmem_device_state_t &, unsigned char *, unsigned char *);
    check_v38_names(st, heap0, heap1);

    printf("cpu_simt: all checks passed\n");
    return 0;
}

// ---- issue 31, item 12: NVSHMEM 3.8's device names --------------------------------------------------

/// Float, double and half atomic adds under contention over P2P, refused (recorded) over the proxy;
/// signal_counted_reset; flush over P2P and waiting for the proxy ring; put16_signal; regions.
void check_v38_names(oxshmem_device_state_t &st, unsigned char *heap0, unsigned char *heap1) {
    static const uint8_t p2p[2] = {OXSHMEM_CHANNEL_P2P, OXSHMEM_CHANNEL_P2P};
    static const uint8_t proxy[2] = {OXSHMEM_CHANNEL_P2P, OXSHMEM_CHANNEL_PROXY};
    const uint8_t *saved_channel = st.channel;
    oxshmem_ring_t *saved_ring = st.ring;
    st.error = {};
    st.n_pes = 2;
    st.channel = p2p;
    st.ring = nullptr;
    sync_fast(st);
    oxshmemi_state_d = &st;
    const size_t base = 49152;  // past the other sections' words
    float *fsum = (float *)(heap0 + base);
    half *hsum = (half *)(heap0 + base + 8);  // 2 bytes into a 4-byte word: the HIP CAS's shift
    half *hsum2 = (half *)(heap0 + base + 10);
    double *dctr = (double *)(heap0 + base + 16);
    static unsigned char seen[3 * 64 * 20];
    // 3 concurrent blocks of 64 threads: each thread adds 0.25f 20 times, 1.0 in half 4 times
    // (768 < 2048: exact in half), and fetch-adds 1.0 to a double 20 times, whose old values
    // must be 0..3839 each exactly once (a lost update would repeat one).
    arch::cpu::launch_grid({3, 1, 1}, {64, 1, 1}, [&] {
        for (int i = 0; i < 20; i++) {
            api::atomic_add<Thread, float>(fsum, 0.25f, 1);
            double old = api::atomic_fetch_add<Thread, double>(dctr, 1.0, 1);
            long k = (long)old;
            if (k >= 0 && k < (long)sizeof(seen)) __atomic_fetch_add(&seen[k], 1, __ATOMIC_RELAXED);
            if (i < 4) {
                api::atomic_add<Thread, half>(hsum, (half)1.0f, 1);
                (void)api::atomic_fetch_add<Thread, half>(hsum2, (half)-0.5f, 1);
            }
        }
    });
    CHECK(*(float *)(heap1 + base) * 4, 3 * 64 * 20);
    CHECK(*(double *)(heap1 + base + 16), 3 * 64 * 20);
    CHECK((float)*(half *)(heap1 + base + 8), 3 * 64 * 4);
    CHECK((float)*(half *)(heap1 + base + 10) * -2, 3 * 64 * 4);
    int once = 0;
    for (size_t k = 0; k < sizeof(seen); k++) once += seen[k] == 1;
    CHECK(once, (int)sizeof(seen));
    CHECK(*(float *)(heap0 + base), 0);  // PE 0's own copy untouched
    CHECK(st.error.state, 0);
    // fetch_add returns the old value as a float (not its bits as an integer).
    arch::cpu::launch_block({1, 1, 1}, {1, 1, 1}, {0, 0, 0}, [&] {
        CHECK((api::atomic_fetch_add<Thread, float>(fsum, 1.5f, 1)) * 4, 3 * 64 * 20);
        CHECK((float)(api::atomic_fetch_add<Thread, half>(hsum, (half)2.0f, 1)), 3 * 64 * 4);
    });
    CHECK(*(float *)(heap1 + base) * 2, 3 * 64 * 10 + 3);
    CHECK((float)*(half *)(heap1 + base + 8), 3 * 64 * 4 + 2);
    ok("nvshmemx_{float,double,half}_atomic_{add,fetch_add} over P2P from 3 blocks of 64 threads");

    // Over the proxy the float add is not performed: recorded as a transport error.
    st.channel = proxy;
    sync_fast(st);
    arch::cpu::launch_block({1, 1, 1}, {32, 1, 1}, {0, 0, 0}, [&] {
        if (thread_id() == 3) {
            CHECK((api::atomic_fetch_add<Thread, double>(dctr, 1.0, 1)), 0);
            api::atomic_add<Thread, float>(fsum, 1.0f, 1);
        }
    });
    CHECK(st.error.state, 2);
    CHECK(st.error.code, OXSHMEM_ERR_TRANSPORT);
    CHECK(st.error.op, OXSHMEM_OP_AMO);
    CHECK(st.error.pe, 1);
    CHECK(st.error.thread, 3);
    CHECK(*(double *)(heap1 + base + 16), 3 * 64 * 20);
    ok("a float AMO over the proxy is refused and recorded (OXSHMEM_ERR_TRANSPORT)");

    // signal_counted_reset: the local word back to 0.
    st.error = {};
    st.channel = p2p;
    sync_fast(st);
    uint64_t *cnt = (uint64_t *)(heap0 + base + 64);
    *cnt = 12345;
    arch::cpu::launch_block({1, 1, 1}, {1, 1, 1}, {0, 0, 0}, [&] { api::signal_counted_reset<Thread>(cnt); });
    CHECK(*cnt, 0);
    ok("nvshmemx_signal_counted_reset");

    // put16_signal<Block>: 16-bit elements, the signal added once per call.
    uint16_t *s16 = (uint16_t *)(heap0 + base + 128), *d16 = s16 + 300;
    uint64_t *sig = (uint64_t *)(heap0 + base + 1536);
    for (int i = 0; i < 300; i++) s16[i] = (uint16_t)(i * 211);
    *(uint64_t *)(heap1 + base + 1536) = 0;
    arch::cpu::launch_block({1, 1, 1}, {64, 1, 1}, {0, 0, 0}, [&] {
        api::put_signal_nbi<Block, uint16_t>(d16, s16, 300, sig, 4, NVSHMEM_SIGNAL_ADD, 1);
        api::flush<Block>();
    });
    for (int i = 0; i < 300; i++) CHECK(((uint16_t *)(heap1 + base + 128))[300 + i], (uint16_t)(i * 211));
    CHECK(*(uint64_t *)(heap1 + base + 1536), 4);
    CHECK(st.error.state, 0);
    ok("put16_signal_nbi<Block> then flush<Block> over P2P");

    // flush waits for the proxy ring: issue 5, completed 3; a "proxy" thread completes the rest
    // after 30 ms, and no flushing thread returns before it did. The device's ticket counter is
    // a word of the heap (RING_ISSUE_OFFSET); the header's `issue` is not used.
    static oxshmem_ring_slot_t slots[8];
    static oxshmem_ring_t ring = {0, 3, 8, slots};
    *(uint64_t *)(st.heap_base + RING_ISSUE_OFFSET) = 5;
    static std::atomic<bool> completed{false};
    st.ring = &ring;
    sync_fast(st);
    st.proxy_alive = 1;
    std::thread proxy_thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        completed = true;
        sys_ref<uint64_t>(ring.completed).store(5, mo_release);
    });
    static std::atomic<int> early{0};
    arch::cpu::launch_block({1, 1, 1}, {64, 1, 1}, {0, 0, 0}, [&] {
        if (thread_id() < 32) api::flush<Warp>();
        else if (thread_id() == 40) api::flush<Thread>();
        if (thread_id() < 32 || thread_id() == 40) early += !completed.load();
        Block::sync();
        api::flush<Block>();
    });
    proxy_thread.join();
    CHECK(early.load(), 0);
    CHECK(st.error.state, 0);
    ok("flush<Thread|Warp|Block> waits for the proxy ring's outstanding requests");

    // Regions: a handle names the block; a foreign or forged handle and bad hints are refused.
    arch::cpu::launch_block({2, 1, 1}, {64, 1, 1}, {1, 0, 0}, [&] {
        nvshmemx_region_handle_t h = 0;
        nvshmemx_region_attrs_t a = NVSHMEMX_REGION_ATTRS_INITIALIZER;
        a.hints = NVSHMEMX_REGION_HINT_BATCH_RMA;
        CHECK((api::region_start<Block>(&h, &a)), NVSHMEMX_SUCCESS);
        CHECK(h != 0, 1);
        int active = -1;
        CHECK((api::region_is_active<Thread>(NVSHMEMX_REGION_HINT_BATCH_RMA, &active)), NVSHMEMX_SUCCESS);
        CHECK(active, 0);
        CHECK((api::region_is_active<Thread>(4, &active)), NVSHMEMX_ERROR_INVALID_VALUE);
        CHECK((api::region_stop<Block>(h ^ 1)), NVSHMEMX_ERROR_INVALID_VALUE);  // block 0's handle
        CHECK((api::region_stop<Block>(h)), NVSHMEMX_SUCCESS);
        a.hints = 2;
        CHECK((api::region_start<Block>(&h, &a)), NVSHMEMX_ERROR_INVALID_VALUE);
        CHECK((api::region_start<Block>(nullptr, nullptr)), NVSHMEMX_ERROR_INVALID_VALUE);
        CHECK((api::ask_smem<Thread>(NVSHMEMX_SMEM_MINIMUM)), 32768);
        CHECK((api::ask_smem<Thread>(NVSHMEMX_SMEM_RECOMMENDED)), 65536);
        api::give_smem<Thread>(nullptr, 0);
        api::release_smem<Thread>();
    });
    ok("region_start/stop_block, region_is_active, ask/give/release_smem");

    st.channel = saved_channel;
    st.ring = saved_ring;
    sync_fast(st);
}
