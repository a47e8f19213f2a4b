// Cooperative groups on the CPU target: the block, the grid (its sync only in a cooperative
// launch, as on a GPU, where it is otherwise undefined: here it ends the program saying so) and
// the warp tile.
#pragma once
#include "cuda_runtime.h"

namespace cooperative_groups {

struct thread_block {
    void sync() const { __syncthreads(); }
    unsigned thread_rank() const { return oxshmemi::arch::thread_id(); }
    unsigned size() const { return oxshmemi::arch::block_threads(); }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
};
inline thread_block this_thread_block() { return {}; }
inline void sync(const thread_block &b) { b.sync(); }

struct grid_group {
    void sync() const {
        oxshmemi::arch::cpu::Block &b = *oxshmemi::arch::cpu::me().block;
        if (!b.launch || !b.launch->cooperative) {
            fprintf(stderr,
                    "oxshmem CPU target: grid_group::sync() in a kernel that was not launched cooperatively "
                    "(cudaLaunchCooperativeKernel or nvshmemx_collective_launch): undefined on a GPU\n");
            abort();
        }
        b.launch->all.wait();
    }
    bool is_valid() const {
        oxshmemi::arch::cpu::Block &b = *oxshmemi::arch::cpu::me().block;
        return b.launch && b.launch->cooperative;
    }
    unsigned long long size() const {
        oxshmemi::arch::cpu::Block &b = *oxshmemi::arch::cpu::me().block;
        return (unsigned long long)b.grid.count() * b.threads;
    }
    unsigned long long num_threads() const { return size(); }
    unsigned long long thread_rank() const {
        return (unsigned long long)oxshmemi::arch::block_id() * oxshmemi::arch::block_threads() +
               oxshmemi::arch::thread_id();
    }
    unsigned long long block_rank() const { return oxshmemi::arch::block_id(); }
    unsigned long long num_blocks() const { return oxshmemi::arch::cpu::me().block->grid.count(); }
};
inline grid_group this_grid() { return {}; }
inline void sync(const grid_group &g) { g.sync(); }

template <unsigned N>
struct thread_block_tile {
    static_assert(N == 32, "the CPU target has warp-sized tiles only");
    void sync() const { __syncwarp(); }
    unsigned thread_rank() const { return __laneid(); }
    unsigned size() const { return N; }
    unsigned meta_group_rank() const { return oxshmemi::arch::thread_id() / N; }
    template <class T>
    T shfl(T v, int lane) const { return __shfl_sync(0xffffffffu, v, lane); }
    template <class T>
    T shfl_down(T v, unsigned d) const { return __shfl_down_sync(0xffffffffu, v, d); }
    template <class T>
    T shfl_xor(T v, int m) const { return __shfl_xor_sync(0xffffffffu, v, m); }
    unsigned ballot(int p) const { return __ballot_sync(0xffffffffu, p); }
    int any(int p) const { return __any_sync(0xffffffffu, p); }
    int all(int p) const { return __all_sync(0xffffffffu, p); }
};
template <unsigned N>
inline thread_block_tile<N> tiled_partition(const thread_block &) { return {}; }

}  // namespace cooperative_groups
