// A persistent kernel that fills the GPU waits on atomics and signals that the host carries out
// (issue 31, item 3): each PE launches a collective (cooperative) kernel with as many blocks as
// the GPU holds at once; its first thread does a fetching atomic and a signal add on the next
// PE (both over the proxy, or the software NIC, or the proxy between GPUs without native P2P
// atomics) and then waits on the device for the previous PE's signal, while every other block
// spins until it is done. The host runs those atomics as a one-thread kernel; in the program's
// context it would wait for a free multiprocessor, which the persistent kernels never give back:
// the job would hang. They run in a context of their own, which the GPU time-slices with the
// program's. The kernel does it twice, so the second round waits for the first round's atomics
// of every PE. Only the public NVSHMEM API is used.
#include "cutest.h"

struct Area {
    int counter;   // fetch_add target: one add per PE and round
    int go;        // this PE's blocks spin until its first thread sets it
    uint64_t sig;  // signal adds from the previous PE
};

__global__ void k_persistent(Area *a, int round, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int next = (me + 1) % npes;
        int old = nvshmem_int_atomic_fetch_add(&a->counter, 1, next);
        // only this PE adds to the next PE's counter: once per round
        if (old != round - 1) dev_fail(err, __LINE__, old, round - 1);
        nvshmemx_signal_op(&a->sig, 1, NVSHMEM_SIGNAL_ADD, next);
        uint64_t v = nvshmem_signal_wait_until(&a->sig, NVSHMEM_CMP_GE, (uint64_t)round);
        if (v < (uint64_t)round) dev_fail(err, __LINE__, (long long)v, round);
        nvshmem_int_p(&a->go, round, me);
        nvshmem_quiet();
    } else {
        nvshmem_int_wait_until(&a->go, NVSHMEM_CMP_GE, round);
    }
}

int main() {
    cutest_init("persistent");
    int dev = 0, sms = 0, per_sm = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    // One-thread blocks: as many as the GPU holds at once (its block limit, not its threads).
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_persistent, 1, 0));
    CHECK(per_sm > 0 && sms > 0, "occupancy %d blocks per SM, %d SMs", per_sm, sms);
    Area *a = (Area *)nvshmem_calloc(1, sizeof(Area));
    CHECK(a, "nvshmem_calloc");
    DevErr *err = dev_err_new();
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    nvshmem_barrier_all();
    for (int round = 1; round <= 2; round++) {
        void *args[] = {&a, &round, &err};
        COLL_LAUNCH(k_persistent, dim3(sms * per_sm), dim3(1), args, s);
        dev_err_check(err, s, "k_persistent");
    }
    nvshmem_barrier_all();
    Area h;
    CUDA_CHECK(cudaMemcpy(&h, a, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(h.counter == 2, "fetch_add total %d, expected 2 (one per round from the previous PE)", h.counter);
    CHECK(h.sig == 2, "signal %llu, expected 2", (unsigned long long)h.sig);
    cutest_ok("atomics and signals for a kernel that fills the GPU");
    nvshmem_free(a);
    CUDA_CHECK(cudaStreamDestroy(s));
    nvshmem_finalize();
    return 0;
}
