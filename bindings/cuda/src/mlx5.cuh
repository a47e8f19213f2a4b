// The mlx5 work-queue format the IBGDA channel writes: work requests encoded into 64-byte
// send-queue slots, the doorbell record and the doorbell register word, byte for byte as
// device/src/ibgda/layout.rs (Mlx5: NicLayout) encodes them. __host__ __device__, so a host
// program can print what the device would write (tests/tests/cuda_device.rs compares it with
// the Rust encoder).
#pragma once

#include "arch/arch.cuh"

#include <stdint.h>
#include <string.h>

namespace oxshmemi {
namespace mlx5 {

constexpr uint32_t SEND_WQE_BB = 64;
constexpr uint32_t INLINE_SEG = 0x80000000u;
constexpr uint8_t OP_NOP = 0x00, OP_RDMA_WRITE = 0x08, OP_RDMA_READ = 0x10, OP_ATOMIC_CS = 0x11, OP_ATOMIC_FA = 0x12,
                  OP_ATOMIC_MASKED_CS = 0x14, OP_ATOMIC_MASKED_FA = 0x15, OP_DUMP = 0x23;
constexpr uint8_t OPMOD_EXT_ATOMIC_4B = 0x08, OPMOD_EXT_ATOMIC_8B = 0x09;
constexpr uint8_t CTRL_CQ_UPDATE = 2 << 2, CTRL_FENCE = 4 << 5;

/// A local buffer (layout.rs Sge).
struct Sge {
    uint64_t addr;
    uint32_t len, lkey;
};
/// A remote buffer (layout.rs Remote).
struct Remote {
    uint64_t addr;
    uint32_t rkey;
};
/// A NIC atomic (layout.rs NicAtomic): masked fetch-and-add or masked compare-and-swap.
struct NicAtomic {
    bool cs;
    uint64_t add, boundary;                          // fetch-and-add
    uint64_t swap, compare, swap_mask, compare_mask;  // compare-and-swap
};
/// The device API's atomics (layout.rs Amo).
enum class Amo { Fetch, Set, CompareSwap, Add, And, Or, Xor };

/// layout.rs Amo::to_nic: how NVSHMEM's IBGDA encodes each atomic.
__host__ __device__ inline NicAtomic to_nic(Amo a, uint64_t value, uint64_t cond) {
    const uint64_t all = ~0ull;
    switch (a) {
        case Amo::Fetch: return {false, 0, 0, 0, 0, 0, 0};
        case Amo::Add: return {false, value, 0, 0, 0, 0, 0};
        case Amo::Xor: return {false, value, all, 0, 0, 0, 0};
        case Amo::Set: return {true, 0, 0, value, 0, all, 0};
        case Amo::And: return {true, 0, 0, value, 0, ~value, 0};
        case Amo::Or: return {true, 0, 0, value, 0, value, 0};
        case Amo::CompareSwap: return {true, 0, 0, value, cond, all, all};
    }
    return {false, 0, 0, 0, 0, 0, 0};
}

/// A work request (layout.rs WorkRequest).
struct Wr {
    enum Kind { Write, WriteInline, Read, Atomic, Nop, Dump } kind;
    Sge local;            // Write/Read source/destination, Atomic result, Dump byte
    Remote remote;        // Write/WriteInline/Read/Atomic target
    const uint8_t *data;  // WriteInline payload
    uint32_t len;         // WriteInline bytes
    NicAtomic op;         // Atomic
    uint32_t width;       // Atomic: 4 or 8
};

__host__ __device__ inline bool is_std_cs(const NicAtomic &a) {
    return a.cs && a.swap_mask == ~0ull && a.compare_mask == ~0ull;
}
__host__ __device__ inline bool is_std_fa(const NicAtomic &a) { return !a.cs && a.boundary == 0; }

/// Data segments (16 bytes each) of a request.
__host__ __device__ inline uint32_t ds_of(const Wr &wr) {
    switch (wr.kind) {
        case Wr::Write:
        case Wr::Read: return 3;
        case Wr::WriteInline: return 2 + (4 + wr.len + 15) / 16;
        case Wr::Atomic: return (wr.op.cs && wr.width == 8 && !is_std_cs(wr.op)) ? 5 : 4;
        case Wr::Nop: return 1;
        case Wr::Dump: return 2;
    }
    return 1;
}

/// Slots a request spans.
__host__ __device__ inline uint32_t wqebbs(const Wr &wr) { return (ds_of(wr) * 16 + SEND_WQE_BB - 1) / SEND_WQE_BB; }

__host__ __device__ inline void be32(uint8_t *b, uint32_t v) {
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}
__host__ __device__ inline void be64(uint8_t *b, uint64_t v) {
    be32(b, (uint32_t)(v >> 32));
    be32(b + 4, (uint32_t)v);
}
__host__ __device__ inline void ctrl_seg(uint8_t *b, uint16_t idx, uint8_t opcode, uint8_t opmod, uint32_t qpn,
                                         uint8_t fm_ce_se, uint8_t ds) {
    be32(b, ((uint32_t)opmod << 24) | ((uint32_t)idx << 8) | opcode);
    be32(b + 4, (qpn << 8) | ds);
    b[8] = 0;
    b[9] = b[10] = 0;
    b[11] = fm_ce_se;
    be32(b + 12, 0);
}
__host__ __device__ inline void raddr_seg(uint8_t *b, const Remote &r) {
    be64(b, r.addr);
    be32(b + 8, r.rkey);
    be32(b + 12, 0);
}
__host__ __device__ inline void data_seg(uint8_t *b, const Sge &s) {
    be32(b, s.len);
    be32(b + 4, s.lkey);
    be64(b + 8, s.addr);
}

/// layout.rs Mlx5::encode: writes the request's wqebbs(wr) slots (zero-filled first) to `out`.
__host__ __device__ inline void encode(const Wr &wr, uint64_t idx, uint32_t qpn, bool signal, bool fence, uint8_t *out) {
    uint32_t ds = ds_of(wr);
    uint32_t n = wqebbs(wr) * SEND_WQE_BB;
    for (uint32_t i = 0; i < n; i++) out[i] = 0;
    uint8_t fm = (signal ? CTRL_CQ_UPDATE : 0) | (fence ? CTRL_FENCE : 0);
    uint8_t op = OP_NOP, om = 0;
    switch (wr.kind) {
        case Wr::Write:
        case Wr::WriteInline: op = OP_RDMA_WRITE; break;
        case Wr::Read: op = OP_RDMA_READ; break;
        case Wr::Nop: op = OP_NOP; break;
        case Wr::Dump: op = OP_DUMP; break;
        case Wr::Atomic:
            if (wr.width == 8 && is_std_cs(wr.op)) op = OP_ATOMIC_CS;
            else if (wr.width == 8 && is_std_fa(wr.op)) op = OP_ATOMIC_FA;
            else {
                op = wr.op.cs ? OP_ATOMIC_MASKED_CS : OP_ATOMIC_MASKED_FA;
                om = wr.width == 8 ? OPMOD_EXT_ATOMIC_8B : OPMOD_EXT_ATOMIC_4B;
            }
            break;
    }
    ctrl_seg(out, (uint16_t)idx, op, om, qpn, fm, (uint8_t)ds);
    switch (wr.kind) {
        case Wr::Write:
        case Wr::Read:
            raddr_seg(out + 16, wr.remote);
            data_seg(out + 32, wr.local);
            break;
        case Wr::WriteInline:
            raddr_seg(out + 16, wr.remote);
            be32(out + 32, wr.len | INLINE_SEG);
            for (uint32_t i = 0; i < wr.len; i++) out[36 + i] = wr.data[i];
            break;
        case Wr::Atomic: {
            raddr_seg(out + 16, wr.remote);
            uint32_t at = 32;
            const NicAtomic &a = wr.op;
            if (wr.width == 8 && is_std_cs(a)) {
                be64(out + at, a.swap);
                be64(out + at + 8, a.compare);
            } else if (wr.width == 8 && is_std_fa(a)) {
                be64(out + at, a.add);
                be64(out + at + 8, 0);
            } else if (a.cs && wr.width == 8) {
                be64(out + at, a.swap);
                be64(out + at + 8, a.compare);
                be64(out + at + 16, a.swap_mask);
                be64(out + at + 24, a.compare_mask);
                at += 16;
            } else if (a.cs) {
                be32(out + at, (uint32_t)a.swap);
                be32(out + at + 4, (uint32_t)a.compare);
                be32(out + at + 8, (uint32_t)a.swap_mask);
                be32(out + at + 12, (uint32_t)a.compare_mask);
            } else if (wr.width == 8) {
                be64(out + at, a.add);
                be64(out + at + 8, a.boundary);
            } else {
                be32(out + at, (uint32_t)a.add);
                be32(out + at + 4, (uint32_t)a.boundary);
                be64(out + at + 8, 0);
            }
            data_seg(out + at + 16, wr.local);
            break;
        }
        case Wr::Nop: break;
        case Wr::Dump: data_seg(out + 16, wr.local); break;
    }
}

/// layout.rs Mlx5::dbr_value: the doorbell record word (the low 16 bits of the producer index,
/// big-endian bytes in the word as it sits in memory).
__host__ __device__ inline uint32_t dbr_value(uint64_t prod) {
    uint8_t b[4];
    be32(b, (uint32_t)prod & 0xffff);
    uint32_t v;
    memcpy(&v, b, 4);
    return v;
}

/// layout.rs Mlx5::doorbell: the doorbell register word (the first 8 bytes of a control
/// segment with the producer index and the QP number).
__host__ __device__ inline uint64_t doorbell(uint64_t prod, uint32_t qpn) {
    uint8_t b[16];
    ctrl_seg(b, (uint16_t)prod, 0, 0, qpn, 0, 0);
    uint64_t v;
    memcpy(&v, b, 8);
    return v;
}

}  // namespace mlx5
}  // namespace oxshmemi
