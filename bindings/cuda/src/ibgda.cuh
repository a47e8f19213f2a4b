// The IBGDA channel on the device: the queue-pair protocol of device/src/ibgda/qp.rs (reserve,
// flow control, write the WQEs, combining publish through the marks, doorbell lock + record +
// register, CQ poll in collapsed and normal mode, quiet, the scratch buffer) as
// __host__ __device__ code over arch::sys_ref, and the operations of
// device/src/ibgda/device.rs on top of it. WQE bytes come from mlx5.cuh.
#pragma once

#include "mlx5.cuh"
#include "state.cuh"

namespace oxshmemi {
namespace ib {

using mlx5::Wr;
// device/include/oxshmem/device_protocol.h, from device/src/ibgda/{layout,device,qp,mlx5}.rs.
constexpr uint32_t MAX_INLINE = OXSHMEM_IBGDA_MAX_INLINE;
constexpr uint64_t MAX_XFER = OXSHMEM_IBGDA_MAX_XFER;
constexpr uint8_t CQE_REQ = OXSHMEM_MLX5_CQE_REQ, CQE_REQ_ERR = OXSHMEM_MLX5_CQE_REQ_ERR,
                  CQE_RESP_ERR = OXSHMEM_MLX5_CQE_RESP_ERR;
static_assert(OXSHMEM_MLX5_CQE64_SIZE == 64 && OXSHMEM_MLX5_ERR_CQE_SIZE == 64, "one 64-byte CQE (8 words)");

/// Why a queue operation gave up (device.rs ib_fail's encoding): code, addr, len.
struct Fail {
    uint32_t code;
    uint64_t addr, len;
};

/// A word the NIC or the host reads (the queue's memory: the send queue, the CQ, the scratch
/// buffer, the doorbell words): system scope.
template <class T>
__host__ __device__ inline sys_ref<T> at(T &w) {
    return sys_ref<T>(w);
}
/// A word of the descriptor (counters, ring lock and indices, error latch, scratch bitmap) or
/// the marks: GPU memory that only this GPU's threads touch (the host copies a few out, the
/// NIC never reads them), so device scope, as NVSHMEM's management variables — no system-scope
/// fence in the reserve, publish and poll. What the NIC reads after them is ordered by the
/// system-scope release store of the doorbell record (cumulative over what the ringer has
/// acquired).
template <class T>
__host__ __device__ inline gpu_ref<T> mv(T &w) {
    return gpu_ref<T>(w);
}
constexpr auto RLX = mo_relaxed;
constexpr auto ACQ = mo_acquire;
constexpr auto REL = mo_release;
constexpr auto AR = mo_acq_rel;
constexpr auto SC = mo_seq_cst;

__host__ __device__ inline uint64_t widen(uint64_t base, uint16_t c16) {
    return base + (uint16_t)(c16 - (uint16_t)base);
}

/// The latched NIC error, if any.
__host__ __device__ inline bool latched(oxshmem_qp_t *q, Fail *f) {
    uint64_t v = mv(q->error.value).load(ACQ);
    if (!v) return false;
    *f = {OXSHMEM_ERR_NIC, (v >> OXSHMEM_QP_ERR_COUNTER_SHIFT) & 0xffff,
          ((v >> OXSHMEM_QP_ERR_SYNDROME_SHIFT) & 0xff) << 8 | (v & 0xff)};
    return true;
}

__host__ __device__ inline void latch(oxshmem_qp_t *q, uint16_t counter, uint8_t syndrome, uint8_t opcode, Fail *f) {
    uint64_t v = OXSHMEM_QP_ERR_LATCHED | (uint64_t)counter << OXSHMEM_QP_ERR_COUNTER_SHIFT |
                 (uint64_t)syndrome << OXSHMEM_QP_ERR_SYNDROME_SHIFT | opcode;
    uint64_t zero = 0;
    mv(q->error.value).compare_exchange_strong(zero, v, AR, ACQ);
    *f = {OXSHMEM_ERR_NIC, counter, (uint64_t)syndrome << 8 | opcode};
}

/// Loads CQ entry `e` (word 7 with acquire first, as qp.rs load_cqe).
__host__ __device__ inline void load_cqe(oxshmem_qp_t *q, uint64_t e, uint8_t out[64]) {
    uint64_t w[8];
    w[7] = at(q->cq[e * 8 + 7]).load(ACQ);
    for (int k = 0; k < 7; k++) w[k] = at(q->cq[e * 8 + k]).load(RLX);
    memcpy(out, w, 64);
}

/// layout.rs decode_cqe: 0 none, 1 ok, 2 error.
__host__ __device__ inline int decode_cqe(const uint8_t *c, uint16_t *counter, uint8_t *owner, uint8_t *syndrome,
                                          uint8_t *opcode) {
    uint8_t op_own = c[OXSHMEM_MLX5_CQE64_OFF_OP_OWN];
    *owner = op_own & OXSHMEM_MLX5_CQE_OWNER_MASK;
    *counter = (uint16_t)(c[OXSHMEM_MLX5_CQE64_OFF_WQE_COUNTER] << 8 | c[OXSHMEM_MLX5_CQE64_OFF_WQE_COUNTER + 1]);
    switch (op_own >> OXSHMEM_MLX5_SHIFT_CQE_OPCODE) {
        case CQE_REQ: return 1;
        case CQE_REQ_ERR:
        case CQE_RESP_ERR:
            *syndrome = c[OXSHMEM_MLX5_ERR_CQE_OFF_SYNDROME];
            *opcode = c[OXSHMEM_MLX5_ERR_CQE_OFF_S_WQE_OPCODE_QPN];  // big-endian, opcode in the top byte
            return 2;
        default: return 0;
    }
}

/// qp.rs poll: reads the CQ, advances cons_idx; false (f set) on a NIC error.
__host__ __device__ inline bool poll(oxshmem_qp_t *q, uint64_t *cons, Fail *f) {
    if (latched(q, f)) return false;
    uint8_t c[64];
    uint16_t counter;
    uint8_t owner, syn = 0, opc = 0;
    if (q->mode == OXSHMEM_CQ_MODE_COLLAPSED) {
        for (;;) {
            uint64_t c0 = mv(q->prod.cons_idx).load(ACQ);
            load_cqe(q, 0, c);
            uint64_t c1 = mv(q->prod.cons_idx).load(ACQ);
            if (c0 != c1) continue;
            int k = decode_cqe(c, &counter, &owner, &syn, &opc);
            if (k == 0) {
                *cons = c0;
                return true;
            }
            if (k == 2) {
                latch(q, counter, syn, opc, f);
                return false;
            }
            uint64_t n = widen(c0, (uint16_t)(counter + 1));
            uint64_t old = mv(q->prod.cons_idx).fetch_max(n, AR);
            *cons = old > n ? old : n;
            return true;
        }
    }
    uint32_t unlocked = 0;
    if (!mv(q->prod.poll_lock).compare_exchange_strong(unlocked, 1, ACQ, RLX)) {
        *cons = mv(q->prod.cons_idx).load(ACQ);
        return true;
    }
    uint64_t ci = mv(q->prod.cq_ci).load(RLX);
    bool ok = true;
    for (;;) {
        load_cqe(q, ci % q->ncqes, c);
        uint8_t lap = (uint8_t)((ci / q->ncqes) & 1);
        int k = decode_cqe(c, &counter, &owner, &syn, &opc);
        if (k == 1 && owner == lap) {
            uint64_t c0 = mv(q->prod.cons_idx).load(ACQ);
            mv(q->prod.cons_idx).fetch_max(widen(c0, (uint16_t)(counter + 1)), AR);
            ci++;
        } else if (k == 2 && owner == lap) {
            latch(q, counter, syn, opc, f);
            ok = false;
            break;
        } else {
            break;
        }
    }
    *cons = mv(q->prod.cons_idx).load(ACQ);
    mv(q->prod.cq_ci).store(ci, REL);
    // The NIC's (and the host's) copy, in the queue's memory: how far it may write entries.
    at(q->nic->cq_ci).store(ci, REL);
    mv(q->prod.poll_lock).store(0, REL);
    return ok;
}

/// qp.rs ring: announces every slot below `end` under the doorbell lock, or leaves the request
/// to the holder.
__host__ __device__ inline void ring(oxshmem_qp_t *q, uint64_t end) {
    for (;;) {
        uint32_t unlocked = 0;
        if (mv(q->ring.db_lock).compare_exchange_strong(unlocked, 1, SC, RLX)) {
            uint64_t old = mv(q->ring.prod_idx).load(RLX);
            uint64_t req = mv(q->ring.ring_req).load(SC);
            uint64_t want = end > req ? end : req;
            if (want > old) {
                mv(q->ring.prod_idx).store(want, REL);
                at(q->nic->dbr[1]).store(mlx5::dbr_value(want), REL);
                uint64_t value = mlx5::doorbell(want, q->qpn);
                at(q->nic->db).store(value, REL);
                // A hardware NIC's doorbell register, mapped for this producer (0: the
                // software NIC, which watches `db`): written after the record is out.
                uint64_t uar = mv(q->ring.uar).load(RLX);
                if (uar) {
                    fence_sc_system();
                    volatile_store((uint64_t *)(uintptr_t)uar, value);
                }
            }
            mv(q->ring.db_lock).exchange(0, SC);
            uint64_t again = mv(q->ring.ring_req).load(SC);
            if (again <= (want > old ? want : old)) return;
            end = again;
            continue;
        }
        mv(q->ring.ring_req).fetch_max(end, SC);
        if (mv(q->ring.prod_idx).load(ACQ) >= end || mv(q->ring.db_lock).load(SC) != 0) return;
    }
}

__host__ __device__ inline void help_ring(oxshmem_qp_t *q) {
    uint64_t r = mv(q->prod.ready_head).load(ACQ);
    if (r > mv(q->ring.prod_idx).load(ACQ)) ring(q, r);
}

/// qp.rs wait_complete: every slot below `idx` complete.
__host__ __device__ inline bool wait_complete(oxshmem_device_state_t *s, oxshmem_qp_t *q, uint64_t idx, Fail *f) {
    Waiter w;
    for (;;) {
        uint64_t c;
        if (!poll(q, &c, f)) return false;
        if (c >= idx) return true;
        if (mv(q->ring.prod_idx).load(ACQ) < idx) help_ring(q);
        if (!w.ok(s)) {
            *f = {OXSHMEM_ERR_NIC_STALLED, idx, mv(q->prod.cons_idx).load(ACQ)};
            return false;
        }
    }
}

/// qp.rs wait_room: before reserving, until `n` more slots fit.
__host__ __device__ inline bool wait_room(oxshmem_device_state_t *s, oxshmem_qp_t *q, uint64_t n, Fail *f) {
    Waiter w;
    for (;;) {
        uint64_t r = mv(q->prod.resv_head).load(ACQ) + n;
        uint64_t need = r > q->nwqes ? r - q->nwqes : 0;
        uint64_t c;
        if (need == 0 || mv(q->prod.cons_idx).load(ACQ) >= need) return true;
        if (!poll(q, &c, f)) return false;
        if (c >= need) return true;
        if (mv(q->ring.prod_idx).load(ACQ) < need) help_ring(q);
        if (!w.ok(s)) {
            *f = {OXSHMEM_ERR_NIC_STALLED, need, mv(q->prod.cons_idx).load(ACQ)};
            return false;
        }
    }
}

__host__ __device__ inline void store_slot(oxshmem_qp_t *q, uint64_t idx, const uint8_t *b) {
    uint64_t base = (idx & (q->nwqes - 1)) * 8;
    for (int k = 0; k < 8; k++) {
        uint64_t v;
        memcpy(&v, b + 8 * k, 8);
        at(q->sq[base + k]).store(v, RLX);
    }
}

/// qp.rs publish: mark the batch written and advance ready_head over every written batch at
/// the head; ring unless a later reservation will.
__host__ __device__ inline void publish(oxshmem_qp_t *q, uint64_t base, uint64_t end) {
    uint64_t b = base;
    bool advanced = mv(q->prod.ready_head).load(SC) == base &&
                    mv(q->prod.ready_head).compare_exchange_strong(b, end, SC, SC);
    if (!advanced) mv(q->marks[base & (q->nwqes - 1)]).exchange(end, SC);
    for (;;) {
        uint64_t r = mv(q->prod.ready_head).load(SC);
        uint64_t m = mv(q->marks[r & (q->nwqes - 1)]).load(SC);
        if (m <= r) break;
        if (mv(q->prod.ready_head).compare_exchange_strong(r, m, SC, SC)) advanced = true;
    }
    if (!advanced) return;
    uint64_t ready = mv(q->prod.ready_head).load(ACQ);
    bool later = mv(q->prod.resv_head).load(ACQ) > ready;
    if (!later || base / q->batch != ready / q->batch || (ready > base ? ready - base : 0) >= q->batch) ring(q, ready);
}

/// Slots a batch takes (with the trailing signalled NOP a multi-slot last WQE needs).
__host__ __device__ inline uint64_t slots_for(const Wr *wrs, int n, bool signal) {
    uint64_t t = 0;
    for (int i = 0; i < n; i++) t += mlx5::wqebbs(wrs[i]);
    uint32_t last = n ? mlx5::wqebbs(wrs[n - 1]) : 1;
    return t + (signal && last > 1 ? 1 : 0);
}

/// qp.rs post: one batch, the last WQE signalled (when `signal`), the first fenced (when
/// `fence_first`). `*end`: the index past the batch.
__host__ __device__ inline bool post(oxshmem_device_state_t *s, oxshmem_qp_t *q, const Wr *wrs, int nwr, bool signal,
                                     bool fence_first, uint64_t *end, Fail *f) {
    if (latched(q, f)) return false;
    uint64_t n = slots_for(wrs, nwr, signal);
    if (!wait_room(s, q, n, f)) return false;
    uint64_t base = mv(q->prod.resv_head).fetch_add(n, AR);
    *end = base + n;
    if (*end > q->nwqes && mv(q->prod.cons_idx).load(ACQ) < *end - q->nwqes &&
        !wait_complete(s, q, *end - q->nwqes, f))
        return false;
    uint64_t idx = base;
    uint8_t buf[4 * mlx5::SEND_WQE_BB];
    for (int i = 0; i < nwr; i++) {
        uint32_t k = mlx5::wqebbs(wrs[i]);
        bool last = i + 1 == nwr;
        mlx5::encode(wrs[i], idx, q->qpn, signal && last && k == 1, fence_first && i == 0, buf);
        for (uint32_t j = 0; j < k; j++) store_slot(q, idx + j, buf + j * mlx5::SEND_WQE_BB);
        idx += k;
    }
    if (idx < *end) {
        Wr nop = {Wr::Nop, {}, {}, nullptr, 0, {}, 0};
        mlx5::encode(nop, idx, q->qpn, true, false, buf);
        store_slot(q, idx, buf);
    }
#if OXSHMEMI_DEVICE_PASS
    fence_system();
#endif
    publish(q, base, *end);
    return true;
}

/// qp.rs quiet: completes everything reserved so far.
__host__ __device__ inline bool quiet(oxshmem_device_state_t *s, oxshmem_qp_t *q, Fail *f) {
    uint64_t r = mv(q->prod.resv_head).load(ACQ);
    if (r == 0 || mv(q->prod.cons_idx).load(ACQ) >= r) return !latched(q, f);
    return wait_complete(s, q, r, f);
}

// ---- the scratch buffer (qp.rs ibuf_*) -------------------------------------------------------

__host__ __device__ inline uint64_t ibuf_addr(oxshmem_qp_t *q, uint64_t slot) {
    return (uint64_t)(q->ibuf + (slot % OXSHMEM_IBUF_SLOTS) * (OXSHMEM_IBUF_SLOT_BYTES / 8));
}

__host__ __device__ inline bool ibuf_acquire(oxshmem_device_state_t *s, oxshmem_qp_t *q, uint32_t hint,
                                             uint64_t *slot) {
    Waiter w;
    for (;;) {
        uint64_t m = mv(q->ibuf_busy.value).load(ACQ);
        if (m != ~0ull) {
            uint32_t rot = hint % OXSHMEM_IBUF_SLOTS;
            uint64_t rotated = rot ? (m >> rot | m << (64 - rot)) : m;
            uint64_t freebits = ~rotated;
            uint32_t tz = 0;
            while (!((freebits >> tz) & 1)) tz++;
            uint32_t bit = (tz + rot) % OXSHMEM_IBUF_SLOTS;
            if (mv(q->ibuf_busy.value).compare_exchange_weak(m, m | 1ull << bit, AR, ACQ)) {
                *slot = bit;
                return true;
            }
            continue;
        }
        if (!w.ok(s)) return false;
    }
}

__host__ __device__ inline void ibuf_release(oxshmem_qp_t *q, uint64_t slot) {
    mv(q->ibuf_busy.value).fetch_and(~(1ull << slot), AR);
}

}  // namespace ib

// ---- the device operations (device/src/ibgda/device.rs) ---------------------------------------

/// This thread's queue set: its warp across the grid (device.rs ib_rc).
__device__ inline uint32_t ib_rc() {
    return block_id() * ((block_threads() + WARP_SIZE - 1) / WARP_SIZE) + thread_id() / WARP_SIZE;
}
__device__ inline oxshmem_ibgda_t *ibg() { return st()->ibgda; }
__device__ inline uint32_t ib_qi(int pe) { return (ib_rc() % ibg()->num_rc) * ibg()->n_pes + (uint32_t)pe; }
__device__ inline oxshmem_qp_t *ib_qp(int pe) { return &ibg()->qps[ib_qi(pe)]; }
__device__ inline mlx5::Remote ib_remote(int pe, uint64_t addr) {
    return {ibg()->rbases[pe] + (addr - ibg()->heap_base), ibg()->rkeys[pe]};
}
/// The key of every queue's scratch buffer (they lie in the channel's one registered allocation).
__device__ inline uint32_t ibuf_key(int) { return ibg()->ibuf_lkey; }
/// The key of the local buffer [addr, addr + len) (a put's source, a get's destination): the
/// heap's when it is symmetric, else that of the registered buffer (nvshmemx_buffer_register)
/// holding it, as NVSHMEM looks it up. A NIC reaches nothing else of a GPU program (not
/// cudaMalloc or pinned host memory, which an implicit on-demand-paging key does not cover, nor
/// a thread's local memory): false then, with OXSHMEM_ERR_UNREGISTERED recorded for `op`.
__device__ inline bool ib_lkey(uint32_t op, int pe, uint64_t addr, uint64_t len, uint32_t *key) {
    oxshmem_ibgda_t *g = ibg();
    if (addr >= g->heap_base && addr + len <= g->heap_base + g->heap_size) {
        *key = g->heap_lkey;
        return true;
    }
    uint32_t n = ib::at(g->nlbufs).load(ib::ACQ);
    for (uint32_t i = 0; i < n && i < g->max_lbufs; i++) {
        oxshmem_ibgda_lbuf_t *b = &g->lbufs[i];
        // len is written last and cleared to free the entry (ibgda/mod.rs register_local).
        uint64_t blen = ib::at(b->len).load(ib::ACQ);
        if (blen && addr >= b->base && addr + len <= b->base + blen) {
            *key = b->lkey;
            return true;
        }
    }
    fail(OXSHMEM_ERR_UNREGISTERED, op, pe, addr, len);
    return false;
}

__device__ inline void ib_fail(uint32_t op, int pe, const ib::Fail &f) { fail(f.code, op, pe, f.addr, f.len); }

/// Posts one batch to `pe`'s queue; false (recorded) on failure.
__device__ inline bool ib_post(uint32_t op, int pe, const ib::Wr *wrs, int n, uint64_t *end) {
    if (!ibg()) {
        fail(OXSHMEM_ERR_TRANSPORT, op, pe, 0, 0);
        return false;
    }
    ib::Fail f;
    if (!ib::post(st(), ib_qp(pe), wrs, n, true, false, end, &f)) {
        ib_fail(op, pe, f);
        return false;
    }
    return true;
}

__device__ inline bool ib_wait(uint32_t op, int pe, uint64_t end) {
    ib::Fail f;
    if (!ib::wait_complete(st(), ib_qp(pe), end, &f)) {
        ib_fail(op, pe, f);
        return false;
    }
    return true;
}

/// put (device.rs ib_put_local/ib_put_sym): inline up to MAX_INLINE bytes, else RDMA writes of
/// at most MAX_XFER; a blocking put from a non-inline source waits for the last write.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void ib_put(uint32_t op, int pe, uint64_t dst, const void *src, uint64_t len, bool nbi) {
    uint64_t end = 0;
    if (len <= ib::MAX_INLINE) {
        ib::Wr w = {ib::Wr::WriteInline, {}, ib_remote(pe, dst), (const uint8_t *)src, (uint32_t)len, {}, 0};
        ib_post(op, pe, &w, 1, &end);
        return;
    }
    uint32_t key;
    if (!ibg()) {
        fail(OXSHMEM_ERR_TRANSPORT, op, pe, dst, len);
        return;
    }
    if (!ib_lkey(op, pe, (uint64_t)src, len, &key)) return;
    for (uint64_t off = 0; off < len; off += ib::MAX_XFER) {
        uint64_t n = len - off < ib::MAX_XFER ? len - off : ib::MAX_XFER;
        uint64_t a = (uint64_t)src + off;
        ib::Wr w = {ib::Wr::Write, {a, (uint32_t)n, key}, ib_remote(pe, dst + off), nullptr, 0, {}, 0};
        if (!ib_post(op, pe, &w, 1, &end)) return;
    }
    if (!nbi) ib_wait(op, pe, end);
}
#else
__device__ OXSHMEMI_NOINLINE void ib_put(uint32_t op, int pe, uint64_t dst, const void *src, uint64_t len, bool nbi);
#endif

/// get (device.rs ib_get_local/ib_get_sym): up to a scratch slot through the queue's scratch
/// buffer, else RDMA reads straight into `dst`.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void ib_get(uint32_t op, int pe, void *dst, uint64_t src, uint64_t len, bool nbi) {
    if (len == 0) return;
    uint64_t end = 0;
    if (len <= OXSHMEM_IBUF_SLOT_BYTES && ibg()) {
        oxshmem_qp_t *q = ib_qp(pe);
        uint64_t t;
        if (!ib::ibuf_acquire(st(), q, block_id() * block_threads() + thread_id(), &t)) {
            fail(OXSHMEM_ERR_NIC_STALLED, op, pe, 0, 0);
            return;
        }
        ib::Wr w = {ib::Wr::Read, {ib::ibuf_addr(q, t), (uint32_t)len, ibuf_key(pe)}, ib_remote(pe, src), nullptr, 0, {}, 0};
        if (ib_post(op, pe, &w, 1, &end) && ib_wait(op, pe, end)) {
            const uint64_t *words = (const uint64_t *)ib::ibuf_addr(q, t);
            for (uint64_t k = 0; k < len; k += 8) {
                uint64_t v = ib::at(*(uint64_t *)&words[k / 8]).load(ib::ACQ);
                memcpy((char *)dst + k, &v, len - k < 8 ? len - k : 8);
            }
        }
        ib::ibuf_release(q, t);
        return;
    }
    uint32_t key;
    if (!ibg()) {
        fail(OXSHMEM_ERR_TRANSPORT, op, pe, src, len);
        return;
    }
    if (!ib_lkey(op, pe, (uint64_t)dst, len, &key)) return;
    for (uint64_t off = 0; off < len; off += ib::MAX_XFER) {
        uint64_t n = len - off < ib::MAX_XFER ? len - off : ib::MAX_XFER;
        uint64_t a = (uint64_t)dst + off;
        ib::Wr w = {ib::Wr::Read, {a, (uint32_t)n, key}, ib_remote(pe, src + off), nullptr, 0, {}, 0};
        if (!ib_post(op, pe, &w, 1, &end)) return;
    }
    if (!nbi) ib_wait(op, pe, end);
}
#else
__device__ OXSHMEMI_NOINLINE void ib_get(uint32_t op, int pe, void *dst, uint64_t src, uint64_t len, bool nbi);
#endif

/// An atomic (device.rs ib_amo): the prior value through a scratch slot when fetched, into the
/// sink (slot 0) when not.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE uint64_t ib_amo(uint32_t op, int pe, uint64_t dst, uint32_t width, mlx5::Amo a,
                                               uint64_t value, uint64_t cond, bool fetch) {
    if (!ibg()) {
        fail(OXSHMEM_ERR_TRANSPORT, op, pe, dst, width);
        return 0;
    }
    oxshmem_qp_t *q = ib_qp(pe);
    uint64_t end = 0;
    mlx5::Remote r = ib_remote(pe, dst);
    if (!fetch) {
        ib::Wr w = {ib::Wr::Atomic, {ib::ibuf_addr(q, 0), width, ibuf_key(pe)}, r, nullptr, 0, mlx5::to_nic(a, value, cond), width};
        ib_post(op, pe, &w, 1, &end);
        return 0;
    }
    uint64_t t;
    if (!ib::ibuf_acquire(st(), q, block_id() * block_threads() + thread_id(), &t)) {
        fail(OXSHMEM_ERR_NIC_STALLED, op, pe, 0, 0);
        return 0;
    }
    ib::Wr w = {ib::Wr::Atomic, {ib::ibuf_addr(q, t), width, ibuf_key(pe)}, r, nullptr, 0, mlx5::to_nic(a, value, cond), width};
    uint64_t out = 0;
    if (ib_post(op, pe, &w, 1, &end) && ib_wait(op, pe, end)) {
        uint64_t raw = ib::at(*(uint64_t *)ib::ibuf_addr(q, t)).load(ib::ACQ);
        out = width == 4 ? (uint64_t)bswap32((uint32_t)raw) : raw;
    }
    ib::ibuf_release(q, t);
    return out;
}
#else
__device__ OXSHMEMI_NOINLINE uint64_t ib_amo(uint32_t op, int pe, uint64_t dst, uint32_t width, mlx5::Amo a,
                                               uint64_t value, uint64_t cond, bool fetch);
#endif

/// The signal WQE of put_signal/signal_op (device.rs ib_signal_wr): an 8-byte set or add.
__device__ inline ib::Wr ib_signal_wr(int pe, uint64_t sig, uint64_t value, int sig_op) {
    mlx5::Amo a = sig_op == NVSHMEM_SIGNAL_ADD ? mlx5::Amo::Add : mlx5::Amo::Set;
    return {ib::Wr::Atomic, {ib::ibuf_addr(ib_qp(pe), 0), 8, ibuf_key(pe)}, ib_remote(pe, sig), nullptr, 0,
            mlx5::to_nic(a, value, 0), 8};
}

/// put_signal (device.rs ib_put_signal): data and signal in one batch when the data fits one
/// WQE, else the data first and the signal after it.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void ib_put_signal(uint32_t op, int pe, uint64_t dst, const void *src, uint64_t len,
                                                  uint64_t sig, uint64_t value, int sig_op, bool nbi) {
    if (!ibg()) {
        fail(OXSHMEM_ERR_TRANSPORT, op, pe, dst, len);
        return;
    }
    ib::Wr wrs[2];
    wrs[1] = ib_signal_wr(pe, sig, value, sig_op);
    uint64_t end = 0;
    if (len <= ib::MAX_INLINE) {
        wrs[0] = {ib::Wr::WriteInline, {}, ib_remote(pe, dst), (const uint8_t *)src, (uint32_t)len, {}, 0};
        ib_post(op, pe, wrs, 2, &end);
    } else if (len <= ib::MAX_XFER) {
        uint32_t key;
        if (!ib_lkey(op, pe, (uint64_t)src, len, &key)) return;
        wrs[0] = {ib::Wr::Write, {(uint64_t)src, (uint32_t)len, key}, ib_remote(pe, dst), nullptr, 0, {}, 0};
        if (ib_post(op, pe, wrs, 2, &end) && !nbi) ib_wait(op, pe, end);
    } else {
        // No signal without the data: an unregistered source fails here, before either.
        uint32_t key;
        if (!ib_lkey(op, pe, (uint64_t)src, len, &key)) return;
        ib_put(op, pe, dst, src, len, nbi);
        ib_post(op, pe, &wrs[1], 1, &end);
    }
}
#else
__device__ OXSHMEMI_NOINLINE void ib_put_signal(uint32_t op, int pe, uint64_t dst, const void *src, uint64_t len,
                                                  uint64_t sig, uint64_t value, int sig_op, bool nbi);
#endif

#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void ib_signal_op(uint32_t op, int pe, uint64_t sig, uint64_t value, int sig_op) {
    if (!ibg()) {
        fail(OXSHMEM_ERR_TRANSPORT, op, pe, sig, 8);
        return;
    }
    ib::Wr w = ib_signal_wr(pe, sig, value, sig_op);
    uint64_t end = 0;
    ib_post(op, pe, &w, 1, &end);
}
#else
__device__ OXSHMEMI_NOINLINE void ib_signal_op(uint32_t op, int pe, uint64_t sig, uint64_t value, int sig_op);
#endif

/// quiet on every queue of this PE (every queue set, to every PE), as NVSHMEM's quiet completes
/// all of a PE's operations: each warp posts on its own set (ib_rc), and the common pattern
/// "every warp puts, __syncthreads(), thread 0 quiets, then a flag" must cover the other warps'
/// operations too. A queue with nothing outstanding costs two loads.
#ifdef OXSHMEMI_CORE_IMPL
__device__ OXSHMEMI_NOINLINE void ib_quiet(uint32_t op) {
    oxshmem_ibgda_t *g = ibg();
    if (!g) return;
    uint32_t n = g->num_rc * g->n_pes;
    for (uint32_t i = 0; i < n; i++) {
        ib::Fail f;
        if (!ib::quiet(st(), &g->qps[i], &f)) ib_fail(op, (int)(i % g->n_pes), f);
    }
}
#else
__device__ OXSHMEMI_NOINLINE void ib_quiet(uint32_t op);
#endif

}  // namespace oxshmemi
