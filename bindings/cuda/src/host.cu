// The archive's host side: the __device__ globals device code reads, the attach callback the
// host library calls with their values, its registration at load time, and the collective
// launch routines (only code linked into the program with the CUDA runtime can launch the
// program's kernels; these definitions interpose on the host library's fallbacks).
#include "state.cuh"

#include <cstring>
#include <mutex>

__device__ oxshmem_device_state_t *oxshmemi_state_d = nullptr;
__device__ oxshmemi::oxshmem_cuda_state_t *oxshmemi_cuda_d = nullptr;
/// The device state's head (read-only once nvshmem_init has built it) in constant memory, for
/// the inline fast paths (device_host/oxshmem_fast_path.cuh): operands from the constant cache,
/// as NVSHMEM's nvshmemi_device_state_d, instead of dependent loads from pinned host memory.
/// Until attach (or the host library's bind of a loaded module) it points at an empty peer table
/// with a limit of 0: every fast path takes its cold path, which reads oxshmemi_state_d. (The
/// fast paths load peer_base[min(pe, n_pes)] before they branch, so the table is never null.)
__device__ uint64_t oxshmemi_fast_none[1] = {0};
__constant__ oxshmemi_fast_state_t oxshmemi_fast_d = {0, 0, 0, 0, oxshmemi_fast_none, 0, nullptr, nullptr,
                                                     oxshmemi_fast_none};

extern "C" {

/// Exported by the host library (liboxshmem / libnvshmem_host): remembers `attach`, and calls
/// it with the device addresses of the runtime's and the CUDA-side state once they exist.
/// Weak, so that the archive also links against a host library without it.
__attribute__((weak)) int oxshmemi_register_device_library(int abi_version,
                                                           int (*attach)(const void *device_state_gpu_ptr,
                                                                         const void *cuda_state_gpu_ptr));
/// Exported by the host library: remembers the host-callable atomic on GPU memory below, which
/// host atomics and the proxy use on GPU heap addresses. Weak, as above.
__attribute__((weak)) int oxshmemi_register_device_amo(int (*amo)(uint64_t addr, uint32_t flags, uint64_t value,
                                                                  uint64_t cond, uint64_t *old));
#if defined(OXSHMEMI_TARGET_CPU)
/// Exported by the host library: remembers the CPU target's question "is this a device thread's
/// local or shared memory?" (cpu_runtime.cpp), which its proxy and software NIC ask before they
/// touch memory on a device thread's behalf. Weak, as above.
__attribute__((weak)) int oxshmemi_register_cpu_target(int (*local_memory)(uint64_t addr, uint64_t len, char *what,
                                                                           size_t what_len));
int oxshmemi_cpu_local_memory(uint64_t addr, uint64_t len, char *what, size_t what_len);
#endif

}  // extern "C"

namespace {

/// Copies the two pointers into the __device__ globals: 0, or the CUDA error code.
int oxshmemi_attach(const void *device_state_gpu_ptr, const void *cuda_state_gpu_ptr) {
    cudaError_t e = cudaMemcpyToSymbol(oxshmemi_state_d, &device_state_gpu_ptr, sizeof(void *));
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(oxshmemi_cuda_d, &cuda_state_gpu_ptr, sizeof(void *));
    // The state is pinned host memory at the same address for host and device (unified
    // addressing): its head is read here.
    oxshmemi_fast_state_t head;
    memcpy(&head, device_state_gpu_ptr, offsetof(oxshmemi_fast_state_t, amo_base));
    head.limit = head.heap_size >= 8 ? head.heap_size - 8 : 0;  // in place of the channel array
    // the atomics table, from the CUDA-side state (pinned host memory as well)
    const auto *cs = (const oxshmemi::oxshmem_cuda_state_t *)cuda_state_gpu_ptr;
    head.amo_base = cs && cs->amo_base ? cs->amo_base : head.peer_base;
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(oxshmemi_fast_d, &head, sizeof head);
    return (int)e;
}

/// One atomic on the word at `addr` (GPU memory, or a peer's heap mapped here), system scope,
/// by one thread: the prior value to `*old` (mapped host memory).
template <class T>
__device__ T amo_word(T *p, uint32_t op, T value, T cond) {
    oxshmemi::sys_ref<T> a(*p);
    switch (op) {
        case OXSHMEM_AMO_FETCH: return a.load(oxshmemi::mo_acquire);
        case OXSHMEM_AMO_SET: return a.exchange(value, oxshmemi::mo_acq_rel);
        case OXSHMEM_AMO_SWAP: return a.exchange(value, oxshmemi::mo_acq_rel);
        case OXSHMEM_AMO_COMPARE_SWAP: {
            T expected = cond;
            a.compare_exchange_strong(expected, value, oxshmemi::mo_acq_rel);
            return expected;
        }
        case OXSHMEM_AMO_FETCH_ADD: return a.fetch_add(value, oxshmemi::mo_acq_rel);
        case OXSHMEM_AMO_FETCH_AND: return a.fetch_and(value, oxshmemi::mo_acq_rel);
        case OXSHMEM_AMO_FETCH_OR: return a.fetch_or(value, oxshmemi::mo_acq_rel);
        default: return a.fetch_xor(value, oxshmemi::mo_acq_rel);
    }
}

}  // namespace

/// The host-callable atomic's kernel. C linkage and namespace scope, so that a program that
/// loads the device library as a module finds it by name (`cuModuleGetFunction(...,
/// "oxshmemi_amo_kernel")`: the Rust GPU device, whose proxy and software NIC run kernels'
/// atomics through it).
extern "C" __global__ void oxshmemi_amo_kernel(uint64_t addr, uint32_t flags, uint64_t value, uint64_t cond,
                                               uint64_t *old) {
    uint32_t op = flags & OXSHMEM_AMO_OP_MASK;
    if (flags & OXSHMEM_AMO_W64)
        *old = amo_word<unsigned long long>((unsigned long long *)addr, op, value, cond);
    else
        *old = amo_word<uint32_t>((uint32_t *)addr, op, (uint32_t)value, (uint32_t)cond);
    oxshmemi::fence_system();
}
#if defined(OXSHMEMI_TARGET_CPU)
OXSHMEMI_CPU_REGISTER_KERNEL(oxshmemi_amo_kernel);
#endif

namespace {

/// What the host-callable atomic uses on one device: a non-blocking stream and a result slot,
/// made at the first call there, in the context current then (the device's atomic context,
/// which the host library makes current for every call: `segment::amo_at`).
struct AmoLane {
    int device = -1;
    cudaStream_t stream = nullptr;
    uint64_t *slot_host = nullptr, *slot_dev = nullptr;
};
struct AmoSetup {
    std::mutex lock;
    AmoLane lanes[64];
    int n = 0;
};
AmoSetup amo_setup;

/// The lane of the current device, made if it is new: null with `*e` set on failure.
AmoLane *amo_lane(cudaError_t *e) {
    int device = -1;
    *e = cudaGetDevice(&device);
    if (*e != cudaSuccess) return nullptr;
    for (int i = 0; i < amo_setup.n; i++)
        if (amo_setup.lanes[i].device == device) return &amo_setup.lanes[i];
    if (amo_setup.n == 64) {
        *e = cudaErrorInvalidDevice;
        return nullptr;
    }
    AmoLane l;
    l.device = device;
    cudaFuncAttributes attr;
    *e = cudaFuncGetAttributes(&attr, oxshmemi_amo_kernel);  // loads the module here, now
    if (*e == cudaSuccess) *e = cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking);
    if (*e == cudaSuccess)
        *e = cudaHostAlloc((void **)&l.slot_host, sizeof(uint64_t), cudaHostAllocMapped | cudaHostAllocPortable);
    if (*e == cudaSuccess) *e = cudaHostGetDevicePointer((void **)&l.slot_dev, l.slot_host, 0);
    if (*e != cudaSuccess) return nullptr;
    amo_setup.lanes[amo_setup.n] = l;
    return &amo_setup.lanes[amo_setup.n++];
}

/// The host side: launches the kernel on the current context's device, on a non-blocking
/// stream of its own there, and waits for it. The host library calls it with the device's
/// atomic context current: a context of its own, not the program's (the primary context), so
/// the launch never waits for the program's kernels, even one that fills the GPU and spins on
/// this atomic. Any host thread may call it (the proxy, the software NIC, stream workers). 0,
/// or the CUDA error code.
int oxshmemi_amo(uint64_t addr, uint32_t flags, uint64_t value, uint64_t cond, uint64_t *old) {
    std::lock_guard<std::mutex> g(amo_setup.lock);
    cudaError_t e = cudaSuccess;
    AmoLane *l = amo_lane(&e);
    if (!l) return (int)e;
    uint64_t *slot = l->slot_dev;
    void *args[] = {&addr, &flags, &value, &cond, &slot};
    e = cudaLaunchKernel((const void *)oxshmemi_amo_kernel, dim3(1), dim3(1), args, 0, l->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(l->stream);
    if (e == cudaSuccess) *old = *(volatile uint64_t *)l->slot_host;
    return (int)e;
}

__attribute__((constructor)) void oxshmemi_register() {
#if defined(OXSHMEMI_TARGET_CPU)
    // The emulated CUDA driver that the host library's GPU back end loads by name (libcuda.so):
    // loaded here by path first, so that the name finds it (OXSHMEM_CPU_DRIVER, else the one
    // build-cpu.sh built beside this archive).
    // NVSHMEM programs give each PE of a node its own GPU (cudaSetDevice(mype_node)): the CPU
    // target offers 8 emulated devices unless told otherwise (they all share host memory).
    setenv("OXSHMEM_EMUCUDA_DEVICES", "8", 0);
    const char *driver = getenv("OXSHMEM_CPU_DRIVER");
#if defined(OXSHMEMI_CPU_DRIVER_PATH)
    if (!driver || !*driver) driver = OXSHMEMI_CPU_DRIVER_PATH;
#endif
    // A module loaded by a program that already has a driver (tests/emucuda's module images)
    // uses that one.
    void *have = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
    if (!have) have = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!have && driver && *driver && !dlopen(driver, RTLD_NOW | RTLD_GLOBAL))
        fprintf(stderr, "oxshmem CPU target: cannot load the emulated CUDA driver %s: %s\n", driver, dlerror());
    // A module (cuModuleLoadData of a CPU-target shared object) is device code the program
    // binds with nvshmemx_cumodule_init, as a cubin is: it registers nothing with the host
    // library, whose registrations are the program's own archive's (the driver raises its
    // oxemu_loading_module while it loads one).
    const int *loading = have ? (const int *)dlsym(have, "oxemu_loading_module") : nullptr;
    if (loading && *loading) return;
    if (oxshmemi_register_cpu_target) oxshmemi_register_cpu_target(oxshmemi_cpu_local_memory);
#endif
    if (oxshmemi_register_device_library) oxshmemi_register_device_library(oxshmemi::ABI_VERSION, oxshmemi_attach);
    if (oxshmemi_register_device_amo) oxshmemi_register_device_amo(oxshmemi_amo);
}

}  // namespace

extern "C" {

/// nvshmemx_collective_launch: a cooperative launch (every block resident at once, so that
/// device-side barriers across blocks cannot deadlock). 0, or the CUDA error code.
int nvshmemx_collective_launch(const void *func, dim3 gridDims, dim3 blockDims, void **args, size_t sharedMem,
                               cudaStream_t stream) {
    return (int)cudaLaunchCooperativeKernel(func, gridDims, blockDims, args, sharedMem, stream);
}

/// nvshmemx_collective_launch_query_gridsize: the largest grid a cooperative launch of `func`
/// with `blockDims` allows (blocks per SM by the occupancy API × SMs). 0, or the CUDA error code.
int nvshmemx_collective_launch_query_gridsize(const void *func, dim3 blockDims, void **args, size_t sharedMem,
                                              int *gridsize) {
    (void)args;
    int dev = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, (int)(blockDims.x * blockDims.y * blockDims.z),
                                                          sharedMem);
    if (e != cudaSuccess) return (int)e;
    *gridsize = per_sm * sms;
    return 0;
}

}  // extern "C"
