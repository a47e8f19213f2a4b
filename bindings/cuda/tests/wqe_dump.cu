// Posts a fixed sequence of IBGDA operations through the CUDA queue-pair producer
// (src/ibgda.cuh: reserve, write, combining publish, doorbell — compiled for the host) into a
// queue of 64 slots, then prints every slot written, the doorbell record and the register:
//   wqe INDEX HEX        (64 bytes)
//   dbr HEX32            (the record word as it sits in memory)
//   db HEX64             (the register word)
// tests/tests/cuda_device.rs posts the same sequence with the Rust producer
// (oxshmem_device::ibgda::qp::QpBox<Mlx5>::post) and compares the output line by line.
#include <stdio.h>
#include <stdlib.h>

#include "../src/ibgda.cuh"

using namespace oxshmemi;
using namespace oxshmemi::mlx5;

static const uint32_t QPN = 0x000123;
static const uint64_t NWQES = 64;

int main() {
    oxshmem_device_state_t state;
    memset(&state, 0, sizeof state);
    oxshmem_qp_t *q = (oxshmem_qp_t *)aligned_alloc(64, sizeof(oxshmem_qp_t));
    memset(q, 0, sizeof *q);
    q->nic = (oxshmem_qp_doorbell_t *)aligned_alloc(64, sizeof(oxshmem_qp_doorbell_t));
    memset(q->nic, 0, sizeof *q->nic);
    q->sq = (uint64_t *)calloc(NWQES * 8, 8);
    q->marks = (uint64_t *)calloc(NWQES, 8);
    q->cq = (uint64_t *)calloc(8, 8);
    q->ibuf = (uint64_t *)calloc(OXSHMEM_IBUF_WORDS, 8);
    ((uint8_t *)q->cq)[63] = 0xf0;  // an empty CQE (opcode INVALID)
    q->ibuf_busy.value = 1;
    q->nwqes = NWQES;
    q->ncqes = 1;
    q->batch = 1;
    q->mode = OXSHMEM_CQ_MODE_COLLAPSED;
    q->qpn = QPN;

    auto post = [&](const Wr *wrs, int n, bool signal, bool fence) {
        uint64_t end;
        ib::Fail f;
        if (!ib::post(&state, q, wrs, n, signal, fence, &end, &f)) {
            fprintf(stderr, "post failed: code %u\n", f.code);
            exit(1);
        }
    };
    const Remote heap = {0x10000040ull, 0x11};
    const Sge local = {0x7f0000001000ull, 4096, 4097};
    uint8_t payload[13];
    for (int i = 0; i < 13; i++) payload[i] = (uint8_t)(i + 1);
    Wr w;
    // put, inline
    w = {Wr::WriteInline, {}, heap, payload, 13, {}, 0};
    post(&w, 1, true, false);
    // put, data segment
    w = {Wr::Write, local, {0x10002000ull, 0x11}, nullptr, 0, {}, 0};
    post(&w, 1, true, false);
    // get
    w = {Wr::Read, {0x7f0000003000ull, 64, 4097}, {0x10004000ull, 0x22}, nullptr, 0, {}, 0};
    post(&w, 1, true, false);
    // p (8 bytes inline)
    uint64_t v = 0x0123456789abcdefull;
    uint8_t vb[8];
    memcpy(vb, &v, 8);
    w = {Wr::WriteInline, {}, {0x10000080ull, 0x11}, vb, 8, {}, 0};
    post(&w, 1, true, false);
    // every AMO, 4 and 8 bytes
    const Amo amos[] = {Amo::Fetch, Amo::Set, Amo::CompareSwap, Amo::Add, Amo::And, Amo::Or, Amo::Xor};
    for (uint32_t width : {4u, 8u})
        for (Amo a : amos) {
            w = {Wr::Atomic, {0x7f0000005000ull, width, 4098}, {0x10006000ull, 0x33}, nullptr, 0,
                 to_nic(a, 0xf0f0f0f00000000full | width, 0x5555), width};
            post(&w, 1, true, false);
        }
    // put_signal: the data and the signal (add, 8 bytes) in one batch
    Wr ps[2] = {{Wr::Write, local, {0x10008000ull, 0x11}, nullptr, 0, {}, 0},
                {Wr::Atomic, {0x7f0000006000ull, 8, 4098}, {0x10009000ull, 0x11}, nullptr, 0, to_nic(Amo::Add, 1, 0), 8}};
    post(ps, 2, true, false);
    // a fenced batch (fence, then a NOP) and a signalled dump (quiet)
    w = {Wr::Nop, {}, {}, nullptr, 0, {}, 0};
    post(&w, 1, false, true);
    w = {Wr::Dump, {0x7f0000007000ull, 1, 4097}, {}, nullptr, 0, {}, 0};
    post(&w, 1, true, true);

    uint64_t prod = q->prod.resv_head;
    for (uint64_t i = 0; i < prod; i++) {
        printf("wqe %llu ", (unsigned long long)i);
        const uint8_t *b = (const uint8_t *)(q->sq + (i % NWQES) * 8);
        for (int k = 0; k < 64; k++) printf("%02x", b[k]);
        printf("\n");
    }
    printf("dbr %08x\n", q->nic->dbr[1]);
    printf("db %016llx\n", (unsigned long long)q->nic->db);
    return 0;
}
