// The mlx5 work-queue format the IBGDA channel writes: work requests encoded into 64-byte
// send-queue slots, the doorbell record and the doorbell register word, byte for byte as
// device/src/ibgda/layout.rs (Mlx5: NicLayout) encodes them. __host__ __device__, so a host
// program can print what the device would write (tests/tests/cuda_device.rs compares it with
// the Rust encoder). Every number of the format (opcodes, flag bits, shifts, masks, where each
// segment sits, each field's offset) comes from <oxshmem/device_protocol.h>, generated from
// device/src/ibgda/mlx5.rs; only the encoder's logic is written here too (docs/architecture.md).
#pragma once

#include "arch/arch.cuh"

#include <stdint.h>
#include <string.h>

#include <oxshmem/device_protocol.h>

namespace oxshmemi {
namespace mlx5 {

constexpr uint32_t SEND_WQE_BB = OXSHMEM_MLX5_SEND_WQE_BB;
constexpr uint32_t DS_BYTES = OXSHMEM_MLX5_WQE_DS_BYTES;
constexpr uint32_t INLINE_SEG = OXSHMEM_MLX5_INLINE_SEG;
constexpr uint8_t OP_NOP = OXSHMEM_MLX5_OPCODE_NOP, OP_RDMA_WRITE = OXSHMEM_MLX5_OPCODE_RDMA_WRITE,
                  OP_RDMA_READ = OXSHMEM_MLX5_OPCODE_RDMA_READ, OP_ATOMIC_CS = OXSHMEM_MLX5_OPCODE_ATOMIC_CS,
                  OP_ATOMIC_FA = OXSHMEM_MLX5_OPCODE_ATOMIC_FA, OP_ATOMIC_MASKED_CS = OXSHMEM_MLX5_OPCODE_ATOMIC_MASKED_CS,
                  OP_ATOMIC_MASKED_FA = OXSHMEM_MLX5_OPCODE_ATOMIC_MASKED_FA, OP_DUMP = OXSHMEM_MLX5_OPCODE_DUMP;
constexpr uint8_t OPMOD_EXT_ATOMIC_4B = OXSHMEM_MLX5_OPMOD_EXT_ATOMIC_4B, OPMOD_EXT_ATOMIC_8B = OXSHMEM_MLX5_OPMOD_EXT_ATOMIC_8B;
constexpr uint8_t CTRL_CQ_UPDATE = OXSHMEM_MLX5_CTRL_CQ_UPDATE, CTRL_FENCE = OXSHMEM_MLX5_CTRL_FENCE;
/// Where each segment sits in a WQE (mlx5.rs wqe).
constexpr uint32_t WQE_CTRL = OXSHMEM_MLX5_WQE_CTRL, WQE_RADDR = OXSHMEM_MLX5_WQE_RADDR,
                   WQE_PAYLOAD = OXSHMEM_MLX5_WQE_PAYLOAD, WQE_INLINE_DATA = OXSHMEM_MLX5_WQE_INLINE_DATA;
// The segments are whole DS units, and a WQE is at most four slots.
static_assert(OXSHMEM_MLX5_CTRL_SEG_SIZE == DS_BYTES && OXSHMEM_MLX5_RADDR_SEG_SIZE == DS_BYTES &&
                  OXSHMEM_MLX5_DATA_SEG_SIZE == DS_BYTES && OXSHMEM_MLX5_ATOMIC_SEG_SIZE == DS_BYTES,
              "mlx5 segments of one DS unit");
static_assert(OXSHMEM_IBGDA_MAX_WQE_BYTES == 4 * SEND_WQE_BB, "a WQE spans at most 4 slots");

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
        case Wr::Read: return (WQE_PAYLOAD + OXSHMEM_MLX5_DATA_SEG_SIZE) / DS_BYTES;
        case Wr::WriteInline: return WQE_PAYLOAD / DS_BYTES + (OXSHMEM_MLX5_INLINE_SEG_SIZE + wr.len + DS_BYTES - 1) / DS_BYTES;
        case Wr::Atomic: return (wr.op.cs && wr.width == 8 && !is_std_cs(wr.op)) ? 5 : 4;
        case Wr::Nop: return 1;
        case Wr::Dump: return 2;
    }
    return 1;
}

/// Slots a request spans.
__host__ __device__ inline uint32_t wqebbs(const Wr &wr) { return (ds_of(wr) * DS_BYTES + SEND_WQE_BB - 1) / SEND_WQE_BB; }

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
    be32(b + OXSHMEM_MLX5_CTRL_SEG_OFF_OPMOD_IDX_OPCODE,
         ((uint32_t)opmod << OXSHMEM_MLX5_SHIFT_OPMOD) | ((uint32_t)idx << OXSHMEM_MLX5_SHIFT_WQE_INDEX) | opcode);
    be32(b + OXSHMEM_MLX5_CTRL_SEG_OFF_QPN_DS, (qpn << OXSHMEM_MLX5_SHIFT_QPN) | ds);
    b[OXSHMEM_MLX5_CTRL_SEG_OFF_SIGNATURE] = 0;
    b[OXSHMEM_MLX5_CTRL_SEG_OFF_DCI_STREAM_CHANNEL_ID] = b[OXSHMEM_MLX5_CTRL_SEG_OFF_DCI_STREAM_CHANNEL_ID + 1] = 0;
    b[OXSHMEM_MLX5_CTRL_SEG_OFF_FM_CE_SE] = fm_ce_se;
    be32(b + OXSHMEM_MLX5_CTRL_SEG_OFF_IMM, 0);
}
__host__ __device__ inline void raddr_seg(uint8_t *b, const Remote &r) {
    be64(b + OXSHMEM_MLX5_RADDR_SEG_OFF_RADDR, r.addr);
    be32(b + OXSHMEM_MLX5_RADDR_SEG_OFF_RKEY, r.rkey);
    be32(b + OXSHMEM_MLX5_RADDR_SEG_OFF_RESERVED, 0);
}
__host__ __device__ inline void data_seg(uint8_t *b, const Sge &s) {
    be32(b + OXSHMEM_MLX5_DATA_SEG_OFF_BYTE_COUNT, s.len);
    be32(b + OXSHMEM_MLX5_DATA_SEG_OFF_LKEY, s.lkey);
    be64(b + OXSHMEM_MLX5_DATA_SEG_OFF_ADDR, s.addr);
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
    ctrl_seg(out + WQE_CTRL, (uint16_t)idx, op, om, qpn, fm, (uint8_t)ds);
    switch (wr.kind) {
        case Wr::Write:
        case Wr::Read:
            raddr_seg(out + WQE_RADDR, wr.remote);
            data_seg(out + WQE_PAYLOAD, wr.local);
            break;
        case Wr::WriteInline:
            raddr_seg(out + WQE_RADDR, wr.remote);
            be32(out + WQE_PAYLOAD + OXSHMEM_MLX5_INLINE_SEG_OFF_BYTE_COUNT, wr.len | INLINE_SEG);
            for (uint32_t i = 0; i < wr.len; i++) out[WQE_INLINE_DATA + i] = wr.data[i];
            break;
        case Wr::Atomic: {
            raddr_seg(out + WQE_RADDR, wr.remote);
            uint32_t at = WQE_PAYLOAD;
            const NicAtomic &a = wr.op;
            if (wr.width == 8 && is_std_cs(a)) {
                be64(out + at + OXSHMEM_MLX5_ATOMIC_SEG_OFF_SWAP_ADD, a.swap);
                be64(out + at + OXSHMEM_MLX5_ATOMIC_SEG_OFF_COMPARE, a.compare);
            } else if (wr.width == 8 && is_std_fa(a)) {
                be64(out + at + OXSHMEM_MLX5_ATOMIC_SEG_OFF_SWAP_ADD, a.add);
                be64(out + at + OXSHMEM_MLX5_ATOMIC_SEG_OFF_COMPARE, 0);
            } else if (a.cs && wr.width == 8) {
                be64(out + at + OXSHMEM_MLX5_MASKED_CS64_SEG_OFF_SWAP, a.swap);
                be64(out + at + OXSHMEM_MLX5_MASKED_CS64_SEG_OFF_COMPARE, a.compare);
                be64(out + at + OXSHMEM_MLX5_MASKED_CS64_SEG_OFF_SWAP_MASK, a.swap_mask);
                be64(out + at + OXSHMEM_MLX5_MASKED_CS64_SEG_OFF_COMPARE_MASK, a.compare_mask);
                at += OXSHMEM_MLX5_MASKED_CS64_SEG_SIZE - DS_BYTES;
            } else if (a.cs) {
                be32(out + at + OXSHMEM_MLX5_MASKED_CS32_SEG_OFF_SWAP, (uint32_t)a.swap);
                be32(out + at + OXSHMEM_MLX5_MASKED_CS32_SEG_OFF_COMPARE, (uint32_t)a.compare);
                be32(out + at + OXSHMEM_MLX5_MASKED_CS32_SEG_OFF_SWAP_MASK, (uint32_t)a.swap_mask);
                be32(out + at + OXSHMEM_MLX5_MASKED_CS32_SEG_OFF_COMPARE_MASK, (uint32_t)a.compare_mask);
            } else if (wr.width == 8) {
                be64(out + at + OXSHMEM_MLX5_MASKED_FA64_SEG_OFF_ADD, a.add);
                be64(out + at + OXSHMEM_MLX5_MASKED_FA64_SEG_OFF_FIELD_BOUNDARY, a.boundary);
            } else {
                be32(out + at + OXSHMEM_MLX5_MASKED_FA32_SEG_OFF_ADD, (uint32_t)a.add);
                be32(out + at + OXSHMEM_MLX5_MASKED_FA32_SEG_OFF_FIELD_BOUNDARY, (uint32_t)a.boundary);
                be64(out + at + OXSHMEM_MLX5_MASKED_FA32_SEG_OFF_RESERVED, 0);
            }
            data_seg(out + at + DS_BYTES, wr.local);
            break;
        }
        case Wr::Nop: break;
        case Wr::Dump: data_seg(out + WQE_RADDR, wr.local); break;
    }
}

/// layout.rs Mlx5::dbr_value: the doorbell record word (the low 16 bits of the producer index,
/// big-endian bytes in the word as it sits in memory).
__host__ __device__ inline uint32_t dbr_value(uint64_t prod) {
    uint8_t b[4];
    be32(b, (uint32_t)prod & OXSHMEM_MLX5_DBR_PROD_MASK);
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
