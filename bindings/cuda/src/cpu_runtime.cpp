// The CUDA runtime of the CPU target (issue 30, item 2): memory, streams, events, launches and
// device queries over host threads. See arch/cuda-on-cpu/cuda_runtime.h for what runs how.
// Compiled into the CPU target's libnvshmem_device.a by build-cpu.sh.
#include "arch/cuda-on-cpu/cuda_runtime.h"

#include <dlfcn.h>

#include <atomic>
#include <deque>
#include <map>
#include <string>

namespace {

using oxshmemi::arch::cpu::Grid;
using oxshmemi::arch::cpu::idx3;

// ---- the emulated device's shape ---------------------------------------------------------------

constexpr int SMS = 2;                  ///< multiprocessors
constexpr int THREADS_PER_SM = 1024;    ///< resident threads per multiprocessor
constexpr int BLOCKS_PER_SM = 32;       ///< resident blocks per multiprocessor (as on sm_90)
constexpr int MAX_BLOCK = 1024;         ///< threads per block
constexpr size_t SHARED_DEFAULT = 48 << 10, SHARED_OPTIN = 227 << 10;

int device_count() {
    const char *v = getenv("OXSHMEM_EMUCUDA_DEVICES");
    int n = v && *v ? atoi(v) : 1;
    return n < 0 ? 0 : n;
}

thread_local int current_device = 0;
thread_local cudaError_t last_error = cudaSuccess;

cudaError_t fail(cudaError_t e) {
    if (e != cudaSuccess) last_error = e;
    return e;
}

// ---- allocations -------------------------------------------------------------------------------

struct Alloc {
    size_t bytes;
    cudaMemoryType type;
};
std::mutex alloc_lock;
std::map<uintptr_t, Alloc> &allocs() {
    static auto *m = new std::map<uintptr_t, Alloc>;
    return *m;
}

cudaError_t alloc(void **p, size_t n, cudaMemoryType type) {
    if (!p) return fail(cudaErrorInvalidValue);
    size_t bytes = (n ? n : 1) + 255;
    bytes -= bytes % 256;
    void *m = aligned_alloc(256, bytes);
    if (!m) return fail(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> g(alloc_lock);
    allocs()[(uintptr_t)m] = Alloc{n, type};
    *p = m;
    return cudaSuccess;
}

cudaError_t release(void *p, cudaMemoryType type) {
    if (!p) return cudaSuccess;
    std::lock_guard<std::mutex> g(alloc_lock);
    auto it = allocs().find((uintptr_t)p);
    if (it == allocs().end() || it->second.type != type) return fail(cudaErrorInvalidValue);
    allocs().erase(it);
    free(p);
    return cudaSuccess;
}

}  // namespace

struct CUevent_st {
    std::mutex m;
    std::condition_variable cv;
    uint64_t recorded = 0, completed = 0;  ///< generations
    uint64_t when_ns = 0;
    bool timing = true;
};

namespace {

// ---- streams: the emulated driver's ----------------------------------------------------------
//
// A stream of this runtime is a stream of the emulated CUDA driver (tests/emucuda), as a
// cudaStream_t is a CUstream on a GPU: so the host library's stream operations
// (nvshmemx_*_on_stream: cuStreamWaitValue, cuLaunchHostFunc, copies) and this runtime's
// (kernels, copies, events: host functions on the stream) are ordered on one queue. The legacy
// stream (0) is a blocking stream of the driver made at first use; an operation on it first waits
// for what the other blocking streams hold, and one on a blocking stream for what it holds, as
// CUDA's legacy stream behaves.

typedef int (*cuInit_t)(unsigned);
typedef int (*cuDevicePrimaryCtxRetain_t)(void **, int);
typedef int (*cuCtxSetCurrent_t)(void *);
typedef int (*cuStreamCreate_t)(cudaStream_t *, unsigned);
typedef int (*cuStreamOne_t)(cudaStream_t);
typedef int (*cuLaunchHostFunc_t)(cudaStream_t, void (*)(void *), void *);
typedef int (*cuCtxSynchronize_t)(void);
typedef int (*cuCtxGetCurrent_t)(void **);
typedef int (*cuCtxGetDevice_t)(int *);

struct Driver {
    cuInit_t init = nullptr;
    cuDevicePrimaryCtxRetain_t retain = nullptr;
    cuCtxSetCurrent_t set_current = nullptr;
    cuStreamCreate_t create = nullptr;
    cuStreamOne_t destroy = nullptr, synchronize = nullptr, query = nullptr;
    cuLaunchHostFunc_t host_func = nullptr;
    cuCtxSynchronize_t ctx_sync = nullptr;
    cuCtxGetCurrent_t get_current = nullptr;
    cuCtxGetDevice_t ctx_device = nullptr;
    bool ok = false;
};

Driver &driver() {
    static Driver d = [] {
        Driver x;
        x.init = (cuInit_t)dlsym(RTLD_DEFAULT, "cuInit");
        x.retain = (cuDevicePrimaryCtxRetain_t)dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRetain");
        x.set_current = (cuCtxSetCurrent_t)dlsym(RTLD_DEFAULT, "cuCtxSetCurrent");
        x.create = (cuStreamCreate_t)dlsym(RTLD_DEFAULT, "cuStreamCreate");
        x.destroy = (cuStreamOne_t)dlsym(RTLD_DEFAULT, "cuStreamDestroy_v2");
        x.synchronize = (cuStreamOne_t)dlsym(RTLD_DEFAULT, "cuStreamSynchronize");
        x.query = (cuStreamOne_t)dlsym(RTLD_DEFAULT, "cuStreamQuery");
        x.host_func = (cuLaunchHostFunc_t)dlsym(RTLD_DEFAULT, "cuLaunchHostFunc");
        x.ctx_sync = (cuCtxSynchronize_t)dlsym(RTLD_DEFAULT, "cuCtxSynchronize");
        x.get_current = (cuCtxGetCurrent_t)dlsym(RTLD_DEFAULT, "cuCtxGetCurrent");
        x.ctx_device = (cuCtxGetDevice_t)dlsym(RTLD_DEFAULT, "cuCtxGetDevice");
        x.ok = x.init && x.retain && x.set_current && x.create && x.destroy && x.synchronize && x.query &&
               x.host_func && x.ctx_sync && x.get_current && x.ctx_device && x.init(0) == 0;
        if (!x.ok)
            fprintf(stderr,
                    "oxshmem CPU target: the emulated CUDA driver is not loaded (libcuda.so from build-cpu.sh, or "
                    "OXSHMEM_CPU_DRIVER): streams and launches fail\n");
        return x;
    }();
    return d;
}

/// The calling thread's device, as CUDA's runtime has it: the device of the driver's current
/// context (the host library makes its GPU's primary context current on the threads it works
/// on, as NVSHMEM does), else the last cudaSetDevice of the thread (0 at first).
int this_device() {
    Driver &d = driver();
    void *ctx = nullptr;
    int dev = 0;
    if (d.ok && d.get_current(&ctx) == 0 && ctx && d.ctx_device(&dev) == 0) return dev;
    return current_device;
}

/// Makes sure a context is current on the calling thread (the primary context of the thread's
/// device when none is); false without the driver.
bool context() {
    Driver &d = driver();
    if (!d.ok) return false;
    void *ctx = nullptr;
    if (d.get_current(&ctx) == 0 && ctx) return true;
    return d.retain(&ctx, current_device) == 0 && d.set_current(ctx) == 0;
}

/// The streams this runtime made: whether each is blocking (ordered with its device's legacy
/// stream), and its device.
struct StreamInfo {
    bool blocking;
    int device;
};
std::mutex streams_lock;
std::map<cudaStream_t, StreamInfo> &streams() {
    static auto *m = new std::map<cudaStream_t, StreamInfo>;
    return *m;
}

/// Each device's legacy stream (as on a GPU, one per device's primary context), made at first use.
std::map<int, cudaStream_t> &legacies() {
    static auto *m = new std::map<int, cudaStream_t>;
    return *m;
}

/// The legacy stream of the calling thread's device: a blocking stream of the driver in that
/// device's context, so that the host library's null-stream operations (made in the same
/// context) wait for it, as CUDA's legacy stream orders them.
cudaStream_t legacy() {
    if (!context()) return nullptr;
    int dev = this_device();
    std::lock_guard<std::mutex> g(streams_lock);
    auto it = legacies().find(dev);
    if (it != legacies().end()) return it->second;
    cudaStream_t x = nullptr;
    if (driver().create(&x, 0) != 0) return nullptr;
    legacies()[dev] = x;
    return x;
}

/// The driver stream an API call names (0 and the built-in handles: the legacy stream), or
/// null when `s` is not one this runtime made.
cudaStream_t resolve(cudaStream_t s) {
    if (!context()) return nullptr;
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return legacy();
    std::lock_guard<std::mutex> g(streams_lock);
    return streams().count(s) ? s : nullptr;
}

/// A one-shot flag a host function raises and another waits for.
struct Flag {
    std::mutex m;
    std::condition_variable cv;
    bool up = false;
    void raise() {
        std::lock_guard<std::mutex> l(m);
        up = true;
        cv.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return up; });
    }
};

void run_op(void *p) {
    auto *f = static_cast<std::function<void()> *>(p);
    (*f)();
    delete f;
}

/// Enqueues `op` on driver stream `s` as a host function.
bool push(cudaStream_t s, std::function<void()> op) {
    auto *f = new std::function<void()>(std::move(op));
    if (driver().host_func(s, run_op, f) != 0) {
        delete f;
        return false;
    }
    return true;
}

/// Enqueues `op` on `s` with the legacy stream's implicit ordering (see above): an operation
/// on a device's legacy stream waits for that device's blocking streams, one on a blocking
/// stream for its device's legacy stream.
cudaError_t enqueue(cudaStream_t s, std::function<void()> op) {
    std::vector<cudaStream_t> before;
    {
        std::lock_guard<std::mutex> g(streams_lock);
        auto own = streams().find(s);
        if (own == streams().end()) {  // a legacy stream
            int dev = -1;
            for (auto &l : legacies())
                if (l.second == s) dev = l.first;
            for (auto &x : streams())
                if (x.second.blocking && x.second.device == dev) before.push_back(x.first);
        } else if (own->second.blocking) {
            auto l = legacies().find(own->second.device);
            if (l != legacies().end()) before.push_back(l->second);
        }
    }
    std::vector<std::shared_ptr<Flag>> flags;
    for (cudaStream_t b : before) {
        auto f = std::make_shared<Flag>();
        if (push(b, [f] { f->raise(); })) flags.push_back(f);
    }
    bool ok = push(s, [flags, op = std::move(op)] {
        for (auto &f : flags) f->wait();
        op();
    });
    return ok ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

/// Waits until every stream has run what was enqueued on it before the call.
void sync_all() {
    if (context()) driver().ctx_sync();
}

// ---- kernels -----------------------------------------------------------------------------------

struct Kernel {
    oxshmemi::cpu_rt::Trampoline t;
    const char *name;
    const unsigned long long *sizes;
    size_t n_params;
    int max_dynamic_shared = (int)SHARED_DEFAULT;
};
std::mutex kernels_lock;
std::map<const void *, Kernel> &kernels() {
    static auto *m = new std::map<const void *, Kernel>;
    return *m;
}

Kernel *find_kernel(const void *f) {
    std::lock_guard<std::mutex> g(kernels_lock);
    auto it = kernels().find(f);
    return it == kernels().end() ? nullptr : &it->second;
}

cudaError_t unregistered(const char *call, const void *f) {
    fprintf(stderr,
            "oxshmem CPU target: %s of a kernel at %p that is not registered: oshnvcc --target cpu registers every "
            "non-template __global__ function of a file it compiles; register others with "
            "OXSHMEMI_CPU_REGISTER_KERNEL(kernel), or launch them with <<<>>>\n",
            call, f);
    return fail(cudaErrorInvalidDeviceFunction);
}

int blocks_per_sm(int threads) {
    if (threads <= 0 || threads > MAX_BLOCK) return 0;
    return std::min(THREADS_PER_SM / threads, BLOCKS_PER_SM);
}

/// What a GPU's kernels hold while they run: each context's resident blocks and threads. A
/// kernel starts when its resident blocks fit beside those of the kernels already running in
/// its context, and holds them until it ends, so that a kernel that keeps every multiprocessor
/// busy (a persistent or cooperative kernel spinning on a flag) keeps a later kernel of its
/// context from starting, as on a GPU, where the later kernel's blocks wait for free
/// multiprocessors. Contexts do not share them: a GPU time-slices its contexts.
struct Residency {
    std::mutex m;
    std::condition_variable cv;
    std::map<void *, std::pair<uint64_t, uint64_t>> held;  ///< per context: blocks, threads
};
Residency &residency() {
    static auto *r = new Residency;
    return *r;
}

/// Waits until `blocks` blocks of `threads` threads fit in context `ctx`, and holds them.
void occupy(void *ctx, uint64_t blocks, uint64_t threads) {
    Residency &r = residency();
    std::unique_lock<std::mutex> l(r.m);
    r.cv.wait(l, [&] {
        auto &h = r.held[ctx];
        return h.first + blocks <= (uint64_t)SMS * BLOCKS_PER_SM &&
               h.second + blocks * threads <= (uint64_t)SMS * THREADS_PER_SM;
    });
    auto &h = r.held[ctx];
    h.first += blocks;
    h.second += blocks * threads;
}

void vacate(void *ctx, uint64_t blocks, uint64_t threads) {
    Residency &r = residency();
    std::lock_guard<std::mutex> l(r.m);
    auto &h = r.held[ctx];
    h.first -= blocks;
    h.second -= blocks * threads;
    r.cv.notify_all();
}

}  // namespace

namespace oxshmemi {
namespace cpu_rt {

/// Every device thread sets its threadIdx, blockIdx, blockDim and gridDim when it starts.
static const bool builtins_hooked = (arch::cpu::thread_start_hook = &set_builtins, true);

void register_kernel(const void *f, Trampoline t, const char *name, const unsigned long long *sizes, size_t n) {
    std::lock_guard<std::mutex> g(kernels_lock);
    kernels()[f] = Kernel{t, name, sizes, n};
}

cudaError_t launch(dim3 grid, dim3 block, size_t shmem, cudaStream_t stream, bool cooperative, Body body) {
    uint64_t threads = (uint64_t)block.x * block.y * block.z, blocks = (uint64_t)grid.x * grid.y * grid.z;
    if (threads == 0 || blocks == 0 || threads > MAX_BLOCK || block.z > 64 || grid.y > 65535 || grid.z > 65535)
        return fail(cudaErrorInvalidConfiguration);
    if (shmem > SHARED_OPTIN) return fail(cudaErrorInvalidValue);
    uint64_t resident = (uint64_t)SMS * blocks_per_sm((int)threads);
    if (cooperative && blocks > resident) return fail(cudaErrorCooperativeLaunchTooLarge);
    // The context the kernel runs in: the caller's (a stream's worker runs in its stream's).
    void *ctx = nullptr;
    if (driver().ok) driver().get_current(&ctx);
    auto run = [=] {
        uint64_t held = std::min(blocks, resident);
        occupy(ctx, held, threads);
        Grid g;
        g.grid = idx3{grid.x, grid.y, grid.z};
        g.dim = idx3{block.x, block.y, block.z};
        g.dynamic_bytes = shmem;
        g.cooperative = cooperative;
        arch::cpu::run_grid(g, body, (uint32_t)resident);
        vacate(ctx, held, threads);
    };
    if (stream == OXSHMEMI_CPU_RUN_NOW) {
        run();
        return cudaSuccess;
    }
    cudaStream_t s = resolve(stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    return enqueue(s, run);
}

void Launch::record_launch_error(cudaError_t e) {
    if (e != cudaSuccess) last_error = e;
}

}  // namespace cpu_rt
}  // namespace oxshmemi

// ---- the API -----------------------------------------------------------------------------------

extern "C" {

cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return last_error; }

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInitializationError: return "cudaErrorInitializationError";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidSymbol: return "cudaErrorInvalidSymbol";
        case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
        case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
        case cudaErrorNoDevice: return "cudaErrorNoDevice";
        case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
        case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
        case cudaErrorNotReady: return "cudaErrorNotReady";
        case cudaErrorPeerAccessAlreadyEnabled: return "cudaErrorPeerAccessAlreadyEnabled";
        case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
        case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
        case cudaErrorCooperativeLaunchTooLarge: return "cudaErrorCooperativeLaunchTooLarge";
        case cudaErrorNotSupported: return "cudaErrorNotSupported";
        default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInitializationError: return "initialization error";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidSymbol: return "invalid device symbol";
        case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
        case cudaErrorInvalidDeviceFunction: return "invalid device function";
        case cudaErrorNoDevice: return "no CUDA-capable device is detected";
        case cudaErrorInvalidDevice: return "invalid device ordinal";
        case cudaErrorInvalidResourceHandle: return "invalid resource handle";
        case cudaErrorNotReady: return "device not ready";
        case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
        case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
        case cudaErrorLaunchFailure: return "unspecified launch failure";
        case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
        case cudaErrorNotSupported: return "operation not supported";
        default: return "unknown error";
    }
}

cudaError_t cudaGetDeviceCount(int *n) {
    if (!n) return fail(cudaErrorInvalidValue);
    *n = device_count();
    return *n ? cudaSuccess : fail(cudaErrorNoDevice);
}
cudaError_t cudaGetDevice(int *d) {
    if (!d) return fail(cudaErrorInvalidValue);
    *d = this_device();
    return cudaSuccess;
}
/// As CUDA's runtime: makes `d`'s primary context current on the calling thread.
cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= device_count()) return fail(cudaErrorInvalidDevice);
    current_device = d;
    Driver &drv = driver();
    void *ctx = nullptr;
    if (drv.ok && (drv.retain(&ctx, d) != 0 || drv.set_current(ctx) != 0)) return fail(cudaErrorInvalidDevice);
    return cudaSuccess;
}
cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d) {
    if (!v) return fail(cudaErrorInvalidValue);
    if (d < 0 || d >= device_count()) return fail(cudaErrorInvalidDevice);
    switch (a) {
        case cudaDevAttrMaxThreadsPerBlock: *v = MAX_BLOCK; break;
        case cudaDevAttrMaxBlockDimX: *v = MAX_BLOCK; break;
        case cudaDevAttrMaxGridDimX: *v = 0x7fffffff; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)SHARED_DEFAULT; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)SHARED_OPTIN; break;
        case cudaDevAttrWarpSize: *v = 32; break;
        case cudaDevAttrClockRate: *v = 1000000; break;
        case cudaDevAttrMultiProcessorCount: *v = SMS; break;
        case cudaDevAttrUnifiedAddressing: *v = 1; break;
        case cudaDevAttrPciBusId: *v = d + 1; break;
        case cudaDevAttrPciDeviceId: *v = 0; break;
        case cudaDevAttrMaxThreadsPerMultiProcessor: *v = THREADS_PER_SM; break;
        case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
        case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
        case cudaDevAttrManagedMemory: *v = 1; break;
        case cudaDevAttrConcurrentManagedAccess: *v = 0; break;
        case cudaDevAttrCooperativeLaunch: *v = 1; break;
        // A GPU on PCIe: the CPU and the GPU may not both run atomics on one word.
        case cudaDevAttrHostNativeAtomicSupported: *v = 0; break;
        default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (!p) return fail(cudaErrorInvalidValue);
    if (d < 0 || d >= device_count()) return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "oxshmem CPU target %d (host threads)", d);
    p->totalGlobalMem = (size_t)16 << 30;
    p->sharedMemPerBlock = SHARED_DEFAULT;
    p->sharedMemPerBlockOptin = SHARED_OPTIN;
    p->sharedMemPerMultiprocessor = SHARED_OPTIN;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = MAX_BLOCK;
    p->maxThreadsDim[0] = MAX_BLOCK;
    p->maxThreadsDim[1] = MAX_BLOCK;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff;
    p->maxGridSize[1] = 65535;
    p->maxGridSize[2] = 65535;
    p->clockRate = 1000000;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = SMS;
    p->maxThreadsPerMultiProcessor = THREADS_PER_SM;
    p->canMapHostMemory = 1;
    p->concurrentKernels = 1;
    p->unifiedAddressing = 1;
    p->managedMemory = 1;
    p->cooperativeLaunch = 1;
    p->pciBusID = d + 1;
    p->asyncEngineCount = 1;
    p->l2CacheSize = 1 << 20;
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int d, int peer) {
    if (!can) return fail(cudaErrorInvalidValue);
    int n = device_count();
    if (d < 0 || d >= n || peer < 0 || peer >= n) return fail(cudaErrorInvalidDevice);
    *can = d != peer;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned) {
    return peer >= 0 && peer < device_count() ? cudaSuccess : fail(cudaErrorInvalidDevice);
}
cudaError_t cudaDeviceSynchronize(void) {
    sync_all();
    return cudaSuccess;
}
cudaError_t cudaDeviceReset(void) {
    sync_all();
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) {
    if (!v) return fail(cudaErrorInvalidValue);
    *v = 13000;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v) { return cudaDriverGetVersion(v); }
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int d) {
    if (!id || len <= 0) return fail(cudaErrorInvalidValue);
    if (d < 0 || d >= device_count()) return fail(cudaErrorInvalidDevice);
    snprintf(id, (size_t)len, "0000:%02x:00.0", d + 1);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n) { return alloc(p, n, cudaMemoryTypeDevice); }
cudaError_t cudaMallocManaged(void **p, size_t n, unsigned) { return alloc(p, n, cudaMemoryTypeManaged); }
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    cudaMemoryType t;
    {
        std::lock_guard<std::mutex> g(alloc_lock);
        auto it = allocs().find((uintptr_t)p);
        if (it == allocs().end() || it->second.type == cudaMemoryTypeHost) return fail(cudaErrorInvalidValue);
        t = it->second.type;
    }
    sync_all();  // cudaFree synchronizes the device
    return release(p, t);
}
cudaError_t cudaMallocHost(void **p, size_t n) { return alloc(p, n, cudaMemoryTypeHost); }
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned) { return alloc(p, n, cudaMemoryTypeHost); }
cudaError_t cudaFreeHost(void *p) {
    sync_all();  // as CUDA's: what the streams still do may read or write it
    return release(p, cudaMemoryTypeHost);
}
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned) {
    if (!d) return fail(cudaErrorInvalidValue);
    *d = h;  // one address space
    return cudaSuccess;
}
cudaError_t cudaHostRegister(void *p, size_t n, unsigned) { return p && n ? cudaSuccess : fail(cudaErrorInvalidValue); }
cudaError_t cudaHostUnregister(void *p) { return p ? cudaSuccess : fail(cudaErrorInvalidValue); }
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
    if (!a) return fail(cudaErrorInvalidValue);
    memset(a, 0, sizeof *a);
    std::lock_guard<std::mutex> g(alloc_lock);
    auto &m = allocs();
    auto it = m.upper_bound((uintptr_t)p);
    if (it != m.begin()) {
        --it;
        if ((uintptr_t)p < it->first + (it->second.bytes ? it->second.bytes : 1)) {
            a->type = it->second.type;
            a->device = this_device();
            a->devicePointer = (void *)p;
            a->hostPointer = it->second.type == cudaMemoryTypeDevice ? nullptr : (void *)p;
            return cudaSuccess;
        }
    }
    a->type = cudaMemoryTypeUnregistered;
    a->hostPointer = (void *)p;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_, size_t *total) {
    if (!free_ || !total) return fail(cudaErrorInvalidValue);
    *total = (size_t)16 << 30;
    *free_ = *total / 2;
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
    if ((int)k < 0 || (int)k > 4) return fail(cudaErrorInvalidMemcpyDirection);
    if (n && (!dst || !src)) return fail(cudaErrorInvalidValue);
    cudaStream_t s = resolve(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    return n ? enqueue(s, [=] { memmove(dst, src, n); }) : cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k) {
    cudaError_t e = cudaMemcpyAsync(dst, src, n, k, nullptr);
    if (e == cudaSuccess) e = cudaStreamSynchronize(nullptr);
    return e;
}
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind k) {
    if (width > dpitch || width > spitch) return fail(cudaErrorInvalidValue);
    for (size_t r = 0; r < height; r++) {
        cudaError_t e = cudaMemcpyAsync((char *)dst + r * dpitch, (const char *)src + r * spitch, width, k, nullptr);
        if (e != cudaSuccess) return e;
    }
    return cudaStreamSynchronize(nullptr);
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st) {
    if (n && !p) return fail(cudaErrorInvalidValue);
    cudaStream_t s = resolve(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    return n ? enqueue(s, [=] { memset(p, v, n); }) : cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n) {
    cudaError_t e = cudaMemsetAsync(p, v, n, nullptr);
    if (e == cudaSuccess) e = cudaStreamSynchronize(nullptr);
    return e;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    if (!s) return fail(cudaErrorInvalidValue);
    if (!context()) return fail(cudaErrorInitializationError);
    cudaStream_t x = nullptr;
    // CU_STREAM_NON_BLOCKING is cudaStreamNonBlocking's value
    if (driver().create(&x, flags & cudaStreamNonBlocking) != 0) return fail(cudaErrorUnknown);
    std::lock_guard<std::mutex> g(streams_lock);
    streams()[x] = StreamInfo{!(flags & cudaStreamNonBlocking), this_device()};
    *s = x;
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int) { return cudaStreamCreateWithFlags(s, flags); }
cudaError_t cudaStreamGetPriority(cudaStream_t, int *priority) {
    if (!priority) return fail(cudaErrorInvalidValue);
    *priority = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = 0;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t st) {
    {
        std::lock_guard<std::mutex> g(streams_lock);
        if (!st || !streams().erase(st)) return fail(cudaErrorInvalidResourceHandle);
    }
    // CUDA returns at once and releases the stream when its work is done (the emulated driver's
    // destroy waits for it): on a thread of its own.
    std::thread([st] { driver().destroy(st); }).detach();
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t st) {
    cudaStream_t s = resolve(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    return driver().synchronize(s) == 0 ? cudaSuccess : fail(cudaErrorUnknown);
}
cudaError_t cudaStreamQuery(cudaStream_t st) {
    cudaStream_t s = resolve(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    int rc = driver().query(s);
    return rc == 0 ? cudaSuccess : rc == 600 ? cudaErrorNotReady : fail(cudaErrorUnknown);
}
cudaError_t cudaLaunchHostFunc(cudaStream_t st, cudaHostFn_t fn, void *data) {
    cudaStream_t s = resolve(st);
    if (!s || !fn) return fail(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
    return enqueue(s, [fn, data] { fn(data); });
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    if (!e) return fail(cudaErrorInvalidValue);
    *e = new CUevent_st;
    (*e)->timing = !(flags & cudaEventDisableTiming);
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    if (!e) return fail(cudaErrorInvalidResourceHandle);
    std::thread([e] {
        std::unique_lock<std::mutex> l(e->m);
        e->cv.wait(l, [&] { return e->completed >= e->recorded; });
        l.unlock();
        delete e;
    }).detach();
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st) {
    if (!e) return fail(cudaErrorInvalidResourceHandle);
    cudaStream_t s = resolve(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    uint64_t gen;
    {
        std::lock_guard<std::mutex> l(e->m);
        gen = ++e->recorded;
    }
    return enqueue(s, [e, gen] {
        std::lock_guard<std::mutex> l(e->m);
        if (e->completed < gen) {
            e->completed = gen;
            e->when_ns = oxshmemi::arch::now_ns();
        }
        e->cv.notify_all();
    });
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (!e) return fail(cudaErrorInvalidResourceHandle);
    std::unique_lock<std::mutex> l(e->m);
    uint64_t gen = e->recorded;
    e->cv.wait(l, [&] { return e->completed >= gen; });
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
    if (!e) return fail(cudaErrorInvalidResourceHandle);
    std::lock_guard<std::mutex> l(e->m);
    return e->completed >= e->recorded ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (!ms || !a || !b) return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> la(a->m);
    std::lock_guard<std::mutex> lb(b->m);
    if (!a->timing || !b->timing) return fail(cudaErrorInvalidResourceHandle);
    if (a->completed < a->recorded || b->completed < b->recorded || !a->recorded || !b->recorded)
        return fail(cudaErrorNotReady);
    *ms = (float)((double)((int64_t)(b->when_ns - a->when_ns)) / 1e6);
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t e, unsigned) {
    cudaStream_t s = resolve(st);
    if (!s || !e) return fail(cudaErrorInvalidResourceHandle);
    uint64_t gen;
    {
        std::lock_guard<std::mutex> l(e->m);
        gen = e->recorded;
    }
    return enqueue(s, [e, gen] {
        std::unique_lock<std::mutex> l(e->m);
        e->cv.wait(l, [&] { return e->completed >= gen; });
    });
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s) {
    Kernel *k = find_kernel(func);
    if (!k) return unregistered("cudaLaunchKernel", func);
    return k->t(func, args, grid, block, shmem, s, false);
}
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                                        cudaStream_t s) {
    Kernel *k = find_kernel(func);
    if (!k) return unregistered("cudaLaunchCooperativeKernel", func);
    return k->t(func, args, grid, block, shmem, s, true);
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *func) {
    if (!a) return fail(cudaErrorInvalidValue);
    Kernel *k = find_kernel(func);
    memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = MAX_BLOCK;
    a->numRegs = 32;
    a->ptxVersion = 90;
    a->binaryVersion = 90;
    a->maxDynamicSharedSizeBytes = k ? k->max_dynamic_shared : (int)SHARED_DEFAULT;
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
    Kernel *k = find_kernel(func);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || (size_t)value > SHARED_OPTIN) return fail(cudaErrorInvalidValue);
        if (k) k->max_dynamic_shared = value;
    }
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *, int block, size_t shmem) {
    if (!n || block <= 0) return fail(cudaErrorInvalidValue);
    *n = shmem > SHARED_OPTIN ? 0 : blocks_per_sm(block);
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxPotentialBlockSize(int *grid, int *block, const void *, size_t, int limit) {
    if (!grid || !block) return fail(cudaErrorInvalidValue);
    *block = limit > 0 && limit < MAX_BLOCK ? limit : MAX_BLOCK;
    *grid = SMS * blocks_per_sm(*block);
    return cudaSuccess;
}

}  // extern "C"

// ---- kernels of a module (the emulated driver's cuModuleGetFunction and cuLaunchKernel) ------

extern "C" {

/// The parameter sizes of the kernel registered as `name` in this object: their number (at
/// most `max` written to `sizes`), or -1 when no kernel has that name. The emulated driver
/// asks a module's shared object this (tests/emucuda/libcuda.c).
long oxshmemi_cpu_kernel_params(const char *name, unsigned long long *sizes, size_t max) {
    std::lock_guard<std::mutex> g(kernels_lock);
    for (auto &k : kernels())
        if (name && strcmp(k.second.name, name) == 0) {
            for (size_t i = 0; i < k.second.n_params && i < max; i++) sizes[i] = k.second.sizes[i];
            return (long)k.second.n_params;
        }
    return -1;
}

/// Runs the grid of kernel `name` with the parameters `params` points at, on the calling
/// thread (the driver's stream worker), every block at once when `cooperative`
/// (cuLaunchCooperativeKernel), and returns when every thread has ended: 0, or a cudaError_t.
int oxshmemi_cpu_run_kernel(const char *name, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                            void **params, int cooperative) {
    const void *f = nullptr;
    Kernel k{};
    {
        std::lock_guard<std::mutex> g(kernels_lock);
        for (auto &x : kernels())
            if (strcmp(x.second.name, name) == 0) {
                f = x.first;
                k = x.second;
            }
    }
    if (!f) return (int)cudaErrorInvalidDeviceFunction;
    return (int)k.t(f, params, dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]), shmem,
                    OXSHMEMI_CPU_RUN_NOW, cooperative != 0);
}

}  // extern "C"

// ---- what the host library asks of the CPU target ---------------------------------------------

extern "C" {

/// Whether [addr, addr + len) is a device thread's local memory or a block's shared memory,
/// which a GPU's host cannot reach: 1 and its description in `what`, else 0. The host library
/// (proxy, software NIC) asks before it touches memory on a device thread's behalf.
int oxshmemi_cpu_local_memory(uint64_t addr, uint64_t len, char *what, size_t what_len) {
    return oxshmemi::arch::cpu::local_memory_owner((uintptr_t)addr, (size_t)len, what, what_len) ? 1 : 0;
}

}  // extern "C"
