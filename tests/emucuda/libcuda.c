/*
 * libcuda.c: an emulated CUDA driver for machines without a GPU.
 *
 * Built as libcuda.so.1 (and libcuda.so) and put on LD_LIBRARY_PATH, it stands in for the NVIDIA
 * driver that oxshmem's CUDA layer (device/src/cuda, via cudarc's dynamic loading) opens, so the
 * GPU heap's set-up runs for real in tests: VMM reservation, export as a POSIX fd, fd passing,
 * peer mapping, copies, pinned memory. Device memory is host memory: a cuMemCreate allocation
 * is a memfd, a mapping an mmap of it, so PEs of a node share it as they would a GPU's. It proves
 * the plumbing, not CUDA semantics: kernels cannot run, and a copy is memmove.
 *
 * Contexts: each device's primary context, and up to 32 more that cuCtxCreate makes (on a GPU
 * they are time-sliced; the CPU target's runtime keeps each context's resident blocks apart).
 * cuCtxPushCurrent/PopCurrent keep a per-thread stack; a stream's worker runs in its context.
 *
 * Streams are emulated for ordering: a stream is a worker thread running a FIFO of operations
 * (copies, memsets, host functions, stream memory operations: waits poll the word, writes are
 * release stores), so stream order, cuStreamSynchronize/Query, and cross-stream waits behave as
 * on a GPU. The null stream, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD run an operation in the
 * calling thread, before the call returns; on the first two it first waits for the work already
 * enqueued on the context's blocking streams (those made without CU_STREAM_NON_BLOCKING), as the
 * legacy stream does. cuStreamDestroy waits for the stream's work (CUDA returns at once).
 *
 * The calls follow CUDA 13.0's cuda.h (signatures, enum values, struct layouts) and check their
 * arguments as the driver does where that is cheap (granularity, ranges inside a reservation,
 * unknown handles), with its error codes. Only the calls oxshmem and its tests make are
 * defined: cudarc fails loudly (it panics: "Missing symbol") on any other.
 *
 * Environment:
 *   OXSHMEM_EMUCUDA_DEVICES  number of devices (default 1; 0: cuInit returns NO_DEVICE)
 *   OXSHMEM_EMUCUDA_MEM_MIB  MiB of memory per device (default 16384; cuMemCreate beyond: OOM)
 *   OXSHMEM_EMUCUDA_LOG      a file to which each VMM call, each 2D copy, each module load and
 *                            each context made appends one line (pid, call, result)
 *   OXSHMEM_EMUCUDA_MAX_PITCH CU_DEVICE_ATTRIBUTE_MAX_PITCH, the largest pitch a 2D copy takes
 *                            (default 2147483647, as on current GPUs)
 *   OXSHMEM_EMUCUDA_P2P_ATOMICS 0: two different devices have no native P2P atomics
 *                            (CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED is 0, as between
 *                            PCIe-only GPUs); default 1 (as over NVLink)
 *
 * Build: cc -shared -fPIC -O2 -Wall -Wextra -Werror -pthread -o libcuda.so.1 libcuda.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- Types and values of cuda.h (13.0) ---------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct emu_ctx *CUcontext;
typedef struct emu_stream *CUstream;
typedef void (*CUhostFn)(void *userData);
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
    int type;                 /* CUmemAllocationType */
    int requestedHandleTypes; /* CUmemAllocationHandleType, a bit mask */
    CUmemLocation location;
    void *win32HandleMetaData;
    struct { unsigned char compressionType, gpuDirectRDMACapable; unsigned short usage; unsigned char reserved[4]; }
        allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;

enum {
    CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_INVALID_HANDLE = 400, CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};
enum { /* CUdevice_attribute */
    ATTR_MAX_PITCH = 11, ATTR_MULTIPROCESSOR_COUNT = 16, ATTR_UNIFIED_ADDRESSING = 41, ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
    ATTR_CAN_USE_STREAM_MEM_OPS_V1 = 92, ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS_V1 = 93,
    ATTR_CAN_USE_STREAM_WAIT_VALUE_NOR_V1 = 94, ATTR_VMM_SUPPORTED = 102, ATTR_POSIX_FD_SUPPORTED = 103,
    ATTR_GDR_WITH_VMM_SUPPORTED = 110, ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS = 122,
    ATTR_CAN_USE_STREAM_WAIT_VALUE_NOR = 123,
};
enum { MEM_ALLOCATION_TYPE_PINNED = 1, MEM_LOCATION_TYPE_DEVICE = 1, MEM_HANDLE_TYPE_POSIX_FD = 1 };
enum { MEM_ACCESS_PROT_NONE = 0, MEM_ACCESS_PROT_READ = 1, MEM_ACCESS_PROT_READWRITE = 3 };
enum { POINTER_ATTRIBUTE_MEMORY_TYPE = 2, MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2, MEMORYTYPE_UNIFIED = 4 };
typedef struct { /* CUDA_MEMCPY2D (_v2) */
    size_t srcXInBytes, srcY;
    int srcMemoryType;        /* CUmemorytype */
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;           /* CUarray: none exist here */
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
enum { MEMHOSTALLOC_ALL_FLAGS = 0x7 }; /* PORTABLE | DEVICEMAP | WRITECOMBINED */
#define STREAM_LEGACY ((CUstream)0x1)
#define STREAM_PER_THREAD ((CUstream)0x2)
enum { STREAM_NON_BLOCKING = 1 }; /* CUstream_flags; CU_STREAM_DEFAULT is 0 */
enum { WAIT_VALUE_GEQ = 0, WAIT_VALUE_EQ = 1, WAIT_VALUE_AND = 2, WAIT_VALUE_NOR = 3, WAIT_VALUE_FLUSH = 1 << 30 };
enum { WRITE_VALUE_NO_MEMORY_BARRIER = 1 };

/* ---- State: small fixed tables under one lock --------------------------------------------- */

#define GRANULARITY ((size_t)2 << 20) /* minimum and recommended, as on current GPUs */
#define MAX_DEVICES 16
#define MAX_SLOTS 256
#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) /* what marks a cuMemCreate memfd */

/* A context: the first MAX_DEVICES are the devices' primary contexts (retained, never made),
 * the rest those cuCtxCreate makes (`live` while they exist). */
struct emu_ctx { unsigned refs; int dev, live; };
#define MAX_CREATED 32
struct handle { int fd; size_t size; unsigned refs, gen; int exportable, owned; };
struct range { uintptr_t base; size_t size; int prot; }; /* size 0: a free slot */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int initialized;
static int ndevices;
static size_t device_mem, max_pitch;
static struct emu_ctx ctxs[MAX_DEVICES + MAX_CREATED];
static struct handle handles[MAX_SLOTS];  /* refs 0: free */
static struct range reserved[MAX_SLOTS];  /* cuMemAddressReserve */
static struct range mapped[MAX_SLOTS];    /* cuMemMap, with the access cuMemSetAccess granted */
/* Per mapped slot: the allocation's memfd (a duplicate, closed with the mapping) and the offset
 * in it of the mapping's first byte: what cuMemGetHandleForAddressRange exports. */
static struct { int fd; size_t off; } mapsrc[MAX_SLOTS];
static struct range host[MAX_SLOTS];      /* cuMemHostAlloc */
static struct range registered[MAX_SLOTS]; /* cuMemHostRegister */
static struct emu_stream *streams[MAX_SLOTS]; /* cuStreamCreate; null: a free slot */
static _Thread_local CUcontext current;   /* the calling thread's current context */
static _Thread_local CUcontext pushed[16]; /* cuCtxPushCurrent's stack, below `current` */
static _Thread_local int npushed;

#define LOCK() pthread_mutex_lock(&lock)
#define UNLOCK() pthread_mutex_unlock(&lock)
#define REQUIRE_INIT() do { if (!atomic_load(&initialized)) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
#define REQUIRE_DEV(d) do { if ((d) < 0 || (d) >= ndevices) return CUDA_ERROR_INVALID_DEVICE; } while (0)
/* Calls that, in the real driver, work on the current context. */
#define REQUIRE_CTX() do { REQUIRE_INIT(); if (!current) return CUDA_ERROR_INVALID_CONTEXT; } while (0)
/* Stores a result through an out-pointer, which must not be null. */
#define ANSWER(out, v) do { if (!(out)) return CUDA_ERROR_INVALID_VALUE; *(out) = (v); return CUDA_SUCCESS; } while (0)

/* Appends "[pid] <call> -> <result>" to $OXSHMEM_EMUCUDA_LOG (one write, so lines of several
 * processes do not interleave); returns r. */
__attribute__((format(printf, 2, 3))) static CUresult logged(CUresult r, const char *fmt, ...) {
    const char *path = getenv("OXSHMEM_EMUCUDA_LOG");
    if (!path || !*path) return r;
    char line[320];
    int n = snprintf(line, sizeof line, "[%d] ", (int)getpid());
    va_list ap; va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 24) n = (int)sizeof line - 24;
    n += snprintf(line + n, sizeof line - (size_t)n, " -> %d\n", r);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return r;
    if (write(fd, line, (size_t)n) < 0) { /* nothing to do: the log is best effort */ }
    close(fd);
    return r;
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    char *end;
    long x = v && *v ? strtol(v, &end, 10) : dflt;
    return v && *v && *end == '\0' && x >= 0 ? x : dflt;
}

static int aligned(uint64_t x) { return x % GRANULARITY == 0; }
static int sealed(int fd) { int s = fcntl(fd, F_GET_SEALS); return s >= 0 && (s & SEALS) == SEALS; }

static int slot_at(const struct range *t, uintptr_t base) { /* base 0: a free slot */
    for (int i = 0; i < MAX_SLOTS; i++)
        if (base ? t[i].size && t[i].base == base : !t[i].size) return i;
    return -1;
}
/* Forgets mapped slot `j` (the caller holds the lock; the pages go with munmap or a new mmap). */
static void unmap_slot(int j) {
    mapped[j].size = 0;
    if (mapsrc[j].fd >= 0) close(mapsrc[j].fd);
    mapsrc[j].fd = -1;
}
/* Records the new mapping [base, base+size) in `t`; unmaps it, false, when the table is full. */
static int record(struct range *t, void *base, size_t size, int prot) {
    LOCK();
    int i = slot_at(t, 0);
    if (i >= 0) t[i] = (struct range){ (uintptr_t)base, size, prot };
    UNLOCK();
    if (i < 0) munmap(base, size);
    return i >= 0;
}
static int containing(struct range *t, uintptr_t p, size_t n) { /* the entry holding [p, p+n) */
    for (int i = 0; i < MAX_SLOTS; i++)
        if (t[i].size && p >= t[i].base && n <= t[i].size && p - t[i].base <= t[i].size - n) return i;
    return -1;
}
static int overlaps(const struct range *r, uintptr_t p, size_t n) {
    return r->size && p < r->base + r->size && r->base < p + n;
}
/* How many bytes of [p, p+n) the mappings cover (they never overlap one another); -1 when one
 * there lacks access `prot`, or, with `whole`, when one sticks out of the range. */
static long long mapped_bytes(uintptr_t p, size_t n, int prot, int whole) {
    long long sum = 0;
    for (int i = 0; i < MAX_SLOTS; i++) {
        struct range *m = &mapped[i];
        if (!overlaps(m, p, n)) continue;
        if ((whole && (m->base < p || m->base + m->size > p + n)) || (m->prot & prot) != prot) return -1;
        uintptr_t lo = m->base > p ? m->base : p, hi = m->base + m->size < p + n ? m->base + m->size : p + n;
        sum += (long long)(hi - lo);
    }
    return sum;
}

/* A handle is (generation << 32 | slot + 1): 0 is never valid, and a released one stays invalid. */
static struct handle *lookup(CUmemGenericAllocationHandle h) {
    uint64_t i = (h & 0xffffffffu) - 1;
    if (i >= MAX_SLOTS || !handles[i].refs || handles[i].gen != h >> 32) return NULL;
    return &handles[i];
}
/* `owned`: created here, so it counts against the device's memory (an import does not). */
static CUresult new_handle(CUmemGenericAllocationHandle *out, int fd, size_t size, int exportable, int owned) {
    unsigned i = 0;
    while (i < MAX_SLOTS && handles[i].refs) i++;
    if (i == MAX_SLOTS) return CUDA_ERROR_OUT_OF_MEMORY;
    handles[i] = (struct handle){ fd, size, 1, handles[i].gen + 1, exportable, owned };
    *out = (uint64_t)handles[i].gen << 32 | (i + 1);
    return CUDA_SUCCESS;
}

/* ---- Driver, devices, primary contexts ---------------------------------------------------- */

CUresult cuInit(unsigned flags) {
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!atomic_load(&initialized)) {
        long n = env_long("OXSHMEM_EMUCUDA_DEVICES", 1);
        ndevices = (int)(n > MAX_DEVICES ? MAX_DEVICES : n);
        device_mem = (size_t)env_long("OXSHMEM_EMUCUDA_MEM_MIB", 16384) << 20;
        max_pitch = (size_t)env_long("OXSHMEM_EMUCUDA_MAX_PITCH", 2147483647);
        if (ndevices == 0) r = CUDA_ERROR_NO_DEVICE;
        else atomic_store(&initialized, 1);
    }
    UNLOCK();
    return r;
}

CUresult cuDriverGetVersion(int *v) { ANSWER(v, 13000); }

/* The names and descriptions of the codes this driver returns (CUDA 13.0's words). */
static const struct { CUresult code; const char *name, *text; } error_text[] = {
    { 0, "CUDA_SUCCESS", "no error" },
    { 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
    { 3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
    { 101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { 200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
    { 201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { 301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found" },
    { 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
    { 500, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
    { 600, "CUDA_ERROR_NOT_READY", "device not ready" },
    { 712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped" },
    { 713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region" },
    { 720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch" },
    { 801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
};

static CUresult error_lookup(CUresult e, const char **out, int name) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof error_text / sizeof error_text[0]; i++)
        if (error_text[i].code == e) {
            *out = name ? error_text[i].name : error_text[i].text;
            return CUDA_SUCCESS;
        }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGetErrorString(CUresult e, const char **out) { return error_lookup(e, out, 0); }
CUresult cuGetErrorName(CUresult e, const char **out) { return error_lookup(e, out, 1); }
CUresult cuDeviceGetCount(int *n) { REQUIRE_INIT(); ANSWER(n, ndevices); }
CUresult cuDeviceGet(CUdevice *d, int ordinal) { REQUIRE_INIT(); REQUIRE_DEV(ordinal); ANSWER(d, ordinal); }
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) { REQUIRE_INIT(); REQUIRE_DEV(d); ANSWER(bytes, device_mem); }

CUresult cuDeviceGetName(char *buf, int len, CUdevice d) {
    REQUIRE_INIT(); REQUIRE_DEV(d);
    if (!buf || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(buf, (size_t)len, "oxshmem emulated GPU %d", d);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    REQUIRE_INIT(); REQUIRE_DEV(d);
    /* Compute capability 9.0; GPUDirect RDMA off (ATTR_GDR_WITH_VMM_SUPPORTED): no NIC reaches
     * this memory as GPU memory. */
    int x = attr == ATTR_CC_MAJOR ? 9 : attr == ATTR_MULTIPROCESSOR_COUNT ? 4 : 0;
    if (attr == ATTR_MAX_PITCH) x = max_pitch > 2147483647 ? 2147483647 : (int)max_pitch;
    if (attr == ATTR_UNIFIED_ADDRESSING || attr == ATTR_VMM_SUPPORTED || attr == ATTR_POSIX_FD_SUPPORTED) x = 1;
    if ((attr >= ATTR_CAN_USE_STREAM_MEM_OPS_V1 && attr <= ATTR_CAN_USE_STREAM_WAIT_VALUE_NOR_V1) ||
        attr == ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS || attr == ATTR_CAN_USE_STREAM_WAIT_VALUE_NOR)
        x = 1; /* stream memory operations, 32- and 64-bit, NOR included */
    ANSWER(v, x);
}

/* CUdevice_P2PAttribute (cuda.h) */
enum { P2P_PERFORMANCE_RANK = 1, P2P_ACCESS_SUPPORTED = 2, P2P_NATIVE_ATOMIC_SUPPORTED = 3,
       P2P_CUDA_ARRAY_ACCESS_SUPPORTED = 4, P2P_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED = 5 };

/* Every pair of devices reaches each other's memory; native atomics between two different ones
 * unless OXSHMEM_EMUCUDA_P2P_ATOMICS=0. The driver refuses src == dst. */
CUresult cuDeviceGetP2PAttribute(int *v, int attr, CUdevice src, CUdevice dst) {
    REQUIRE_INIT(); REQUIRE_DEV(src); REQUIRE_DEV(dst);
    if (src == dst) return CUDA_ERROR_INVALID_DEVICE;
    int x;
    switch (attr) {
        case P2P_PERFORMANCE_RANK: x = 0; break;
        case P2P_ACCESS_SUPPORTED: case P2P_CUDA_ARRAY_ACCESS_SUPPORTED: x = 1; break;
        case P2P_NATIVE_ATOMIC_SUPPORTED: x = env_long("OXSHMEM_EMUCUDA_P2P_ATOMICS", 1) != 0; break;
        case P2P_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: x = 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    ANSWER(v, x);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
    REQUIRE_INIT(); REQUIRE_DEV(d);
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    LOCK(); ctxs[d].refs++; UNLOCK();
    ANSWER(ctx, &ctxs[d]);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    REQUIRE_INIT(); REQUIRE_DEV(d);
    LOCK();
    CUresult r = ctxs[d].refs ? (ctxs[d].refs--, CUDA_SUCCESS) : CUDA_ERROR_INVALID_CONTEXT;
    UNLOCK();
    return r;
}

/* Whether `ctx` is a context: a primary one of a device, or a made one still alive. */
static int valid_ctx(CUcontext ctx) {
    uintptr_t c = (uintptr_t)ctx, first = (uintptr_t)ctxs;
    if (c < first || c >= first + sizeof ctxs || (c - first) % sizeof *ctxs) return 0;
    long i = ctx - ctxs;
    return i < MAX_DEVICES ? i < ndevices : ctx->live;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    REQUIRE_INIT();
    LOCK();
    int ok = !ctx || valid_ctx(ctx);
    UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) { REQUIRE_INIT(); ANSWER(ctx, current); }
CUresult cuCtxGetDevice(CUdevice *d) {
    REQUIRE_CTX();
    long i = current - ctxs;
    ANSWER(d, i < MAX_DEVICES ? (CUdevice)i : current->dev);
}

/* A context of its own on device `d` (CUDA 13 keeps the _v2 form: flags, device), made current
 * on the calling thread (pushed, as the driver does). Its streams' kernels share no device
 * resources with another context's: contexts of one GPU are time-sliced. */
CUresult cuCtxCreate_v2(CUcontext *out, unsigned flags, CUdevice d) {
    REQUIRE_INIT(); REQUIRE_DEV(d);
    (void)flags;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (npushed == (int)(sizeof pushed / sizeof *pushed)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUcontext c = NULL;
    LOCK();
    for (int i = MAX_DEVICES; i < MAX_DEVICES + MAX_CREATED && !c; i++)
        if (!ctxs[i].live) { c = &ctxs[i]; c->live = 1; c->dev = d; c->refs = 1; }
    UNLOCK();
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    pushed[npushed++] = current;
    current = c;
    *out = c;
    return logged(CUDA_SUCCESS, "cuCtxCreate(device %d)", d);
}

/* CUDA 12.5's form (what oxshmem calls): creation parameters, which may be NULL, are not kept. */
CUresult cuCtxCreate_v4(CUcontext *out, void *params, unsigned flags, CUdevice d) {
    (void)params;
    return cuCtxCreate_v2(out, flags, d);
}

/* Ends a made context: its streams' work is waited for (as the driver does); it is no longer
 * current anywhere it was pushed on this thread. */
static int drain(CUcontext ctx, int blocking, int query);
CUresult cuCtxDestroy_v2(CUcontext ctx) {
    REQUIRE_INIT();
    LOCK();
    int ok = ctx && ctx - ctxs >= MAX_DEVICES && valid_ctx(ctx);
    UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_CONTEXT;
    drain(ctx, 0, 0);
    LOCK(); ctx->live = 0; UNLOCK();
    if (current == ctx) current = npushed ? pushed[--npushed] : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    REQUIRE_INIT();
    LOCK();
    int ok = ctx && valid_ctx(ctx);
    UNLOCK();
    if (!ok) return CUDA_ERROR_INVALID_CONTEXT;
    if (npushed == (int)(sizeof pushed / sizeof *pushed)) return CUDA_ERROR_OUT_OF_MEMORY;
    pushed[npushed++] = current;
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *out) {
    REQUIRE_CTX();
    if (out) *out = current;
    current = npushed ? pushed[--npushed] : NULL;
    return CUDA_SUCCESS;
}

/* ---- Virtual memory management ------------------------------------------------------------ */

/* What cuMemCreate and cuMemGetAllocationGranularity accept: pinned memory on a device here,
 * exportable as nothing or as a POSIX fd (no Win32 or fabric handles on this emulator). */
static CUresult check_prop(const CUmemAllocationProp *p) {
    if (!p || p->type != MEM_ALLOCATION_TYPE_PINNED || p->location.type != MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    REQUIRE_DEV(p->location.id);
    return p->requestedHandleTypes & ~MEM_HANDLE_TYPE_POSIX_FD ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, int option) {
    REQUIRE_INIT();
    CUresult r = check_prop(prop);
    if (r || (option != 0 && option != 1)) return r ? r : CUDA_ERROR_INVALID_VALUE; /* MINIMUM, RECOMMENDED */
    ANSWER(g, GRANULARITY);
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
    REQUIRE_INIT();
    if (align < GRANULARITY) align = GRANULARITY;
    if (!ptr || !size || !aligned(size) || (align & (align - 1)) || flags || size > SIZE_MAX - align)
        return logged(CUDA_ERROR_INVALID_VALUE, "cuMemAddressReserve(%zu, align %zu)", size, align);
    /* Over-reserve by the alignment, then trim both ends to an aligned range of `size`. */
    size_t len = size + align;
    char *p = mmap((void *)(uintptr_t)addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return logged(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAddressReserve(%zu, align %zu)", size, align);
    char *base = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    if (base > p) munmap(p, (size_t)(base - p));
    if (base + size < p + len) munmap(base + size, (size_t)(p + len - base - size));
    if (!record(reserved, base, size, PROT_NONE))
        return logged(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAddressReserve(%zu): table full", size);
    *ptr = (uintptr_t)base;
    return logged(CUDA_SUCCESS, "cuMemAddressReserve(%zu, align %zu) = %p", size, align, (void *)base);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    REQUIRE_INIT();
    LOCK();
    int i = ptr ? slot_at(reserved, (uintptr_t)ptr) : -1;
    if (i >= 0 && reserved[i].size == size) { /* only a whole reservation */
        for (int j = 0; j < MAX_SLOTS; j++)
            if (overlaps(&mapped[j], ptr, size)) unmap_slot(j); /* munmap ends them too */
        reserved[i].size = 0;
        munmap((void *)(uintptr_t)ptr, size);
    } else i = -1;
    UNLOCK();
    return logged(i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, "cuMemAddressFree(%#llx, %zu)", ptr, size);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
    REQUIRE_INIT();
    CUresult r = check_prop(prop);
    if (!r && (!h || !size || !aligned(size) || flags)) r = CUDA_ERROR_INVALID_VALUE;
    if (r) return logged(r, "cuMemCreate(%zu)", size);
    LOCK();
    size_t used = 0;
    for (int i = 0; i < MAX_SLOTS; i++)
        if (handles[i].refs && handles[i].owned) used += handles[i].size;
    r = CUDA_ERROR_OUT_OF_MEMORY;
    if (size <= device_mem - used) {
        /* Sealed against resizing: a peer can neither shrink it under another's mapping (SIGBUS)
         * nor pass off a file of its own; the seals are what an import checks. */
        int fd = memfd_create("oxshmem-emucuda", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd >= 0 && ftruncate(fd, (off_t)size) == 0 && fcntl(fd, F_ADD_SEALS, SEALS) == 0)
            r = new_handle(h, fd, size, prop->requestedHandleTypes & MEM_HANDLE_TYPE_POSIX_FD, 1);
        if (r && fd >= 0) close(fd);
    }
    UNLOCK();
    return logged(r, "cuMemCreate(%zu) = %#llx", size, r ? 0ull : *h);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
    REQUIRE_INIT();
    LOCK();
    struct handle *e = lookup(h);
    if (e && --e->refs == 0) close(e->fd); /* mappings keep the memory alive, as mmap does */
    UNLOCK();
    return logged(e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, "cuMemRelease(%#llx)", h);
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                  unsigned long long flags) {
    REQUIRE_INIT();
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct handle *e = lookup(h);
    int i = slot_at(mapped, 0);
    if (e && size && !flags && aligned(ptr) && aligned(size) && aligned(offset) && offset <= e->size &&
        size <= e->size - offset && containing(reserved, ptr, size) >= 0 && mapped_bytes(ptr, size, 0, 0) == 0) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        /* No access until cuMemSetAccess grants it, as on a GPU. */
        void *want = (void *)(uintptr_t)ptr;
        if (i >= 0 && mmap(want, size, PROT_NONE, MAP_SHARED | MAP_FIXED, e->fd, (off_t)offset) == want) {
            mapped[i] = (struct range){ (uintptr_t)ptr, size, PROT_NONE };
            mapsrc[i].fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
            mapsrc[i].off = offset;
            r = CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return logged(r, "cuMemMap(%#llx, %zu, offset %zu, %#llx)", ptr, size, offset, h);
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    REQUIRE_INIT();
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    LOCK();
    /* The range must be inside a reservation and exactly covered by whole mappings. */
    if (size && containing(reserved, ptr, size) >= 0 && mapped_bytes(ptr, size, 0, 1) == (long long)size) {
        for (int j = 0; j < MAX_SLOTS; j++)
            if (overlaps(&mapped[j], ptr, size)) unmap_slot(j);
        /* Back to reserved address space: the reservation stays until cuMemAddressFree. */
        int anon = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED;
        r = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, anon, -1, 0) == MAP_FAILED ? CUDA_ERROR_OUT_OF_MEMORY : 0;
    }
    UNLOCK();
    return logged(r, "cuMemUnmap(%#llx, %zu)", ptr, size);
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    REQUIRE_INIT();
    /* One host stands for every device: the access granted is the widest any descriptor asks. */
    int prot = PROT_NONE;
    CUresult r = desc && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; !r && k < count; k++) {
        int f = desc[k].flags;
        if (desc[k].location.type != MEM_LOCATION_TYPE_DEVICE) r = CUDA_ERROR_INVALID_VALUE;
        else if (desc[k].location.id < 0 || desc[k].location.id >= ndevices) r = CUDA_ERROR_INVALID_DEVICE;
        else if (f == MEM_ACCESS_PROT_READWRITE) prot |= PROT_READ | PROT_WRITE;
        else if (f == MEM_ACCESS_PROT_READ) prot |= PROT_READ;
        else if (f != MEM_ACCESS_PROT_NONE) r = CUDA_ERROR_INVALID_VALUE;
    }
    LOCK();
    if (!r && (!size || mapped_bytes(ptr, size, 0, 1) != (long long)size)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && mprotect((void *)(uintptr_t)ptr, size, prot) != 0) r = CUDA_ERROR_INVALID_VALUE;
    for (int j = 0; !r && j < MAX_SLOTS; j++)
        if (overlaps(&mapped[j], ptr, size)) mapped[j].prot = prot;
    UNLOCK();
    return logged(r, "cuMemSetAccess(%#llx, %zu, prot %d, count %zu)", ptr, size, prot, count);
}

/* A dma-buf of [dptr, dptr+size): here the allocation's memfd, which is one only when the range
 * starts at the allocation's first byte (a dma-buf's byte 0 is dptr) — the case of a heap that is
 * one allocation; a range that starts inside one is refused as unsupported, never misaligned.
 * Type 1 is CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD; the range must be whole host pages inside one
 * mapping, as the driver requires. */
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size, int type,
                                       unsigned long long flags) {
    REQUIRE_INIT();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    int fd = -1;
    if (!handle || type != 1 || flags || !size || dptr % page || size % page)
        return logged(r, "cuMemGetHandleForAddressRange(%#llx, %zu, type %d)", dptr, size, type);
    LOCK();
    for (int j = 0; j < MAX_SLOTS; j++) {
        struct range *m = &mapped[j];
        if (m->size && dptr >= m->base && dptr - m->base <= m->size && size <= m->size - (dptr - m->base)) {
            r = CUDA_ERROR_NOT_SUPPORTED;
            if (mapsrc[j].off + (dptr - m->base) == 0 && mapsrc[j].fd >= 0) {
                fd = fcntl(mapsrc[j].fd, F_DUPFD_CLOEXEC, 0);
                r = fd >= 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
            }
            break;
        }
    }
    UNLOCK();
    if (!r) *(int *)handle = fd;
    return logged(r, "cuMemGetHandleForAddressRange(%#llx, %zu, DMA_BUF_FD) = fd %d", dptr, size, fd);
}

CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h, int type, unsigned long long flags) {
    REQUIRE_INIT();
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    int fd = -1;
    LOCK();
    struct handle *e = lookup(h);
    if (out && e && e->exportable && type == MEM_HANDLE_TYPE_POSIX_FD && !flags) {
        fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0); /* a new descriptor, the caller's to close */
        r = fd >= 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    UNLOCK();
    if (!r) *(int *)out = fd;
    return logged(r, "cuMemExportToShareableHandle(%#llx) = fd %d", h, fd);
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os_handle, int type) {
    REQUIRE_INIT();
    int fd = (int)(intptr_t)os_handle, mine = -1; /* the fd's value, cast to a pointer */
    struct stat st;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    /* Only what cuMemCreate made: a memfd with its seals, of a whole number of granules. */
    if (h && type == MEM_HANDLE_TYPE_POSIX_FD && fd >= 0 && sealed(fd) &&
        fstat(fd, &st) == 0 && st.st_size > 0 && aligned((uint64_t)st.st_size)) {
        mine = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the caller keeps, and closes, its own */
        r = CUDA_ERROR_OUT_OF_MEMORY;
        LOCK();
        if (mine >= 0) r = new_handle(h, mine, (size_t)st.st_size, 1, 0);
        UNLOCK();
        if (r && mine >= 0) close(mine);
    }
    return logged(r, "cuMemImportFromShareableHandle(fd %d) = %#llx", fd, r ? 0ull : *h);
}

/* ---- Streams ------------------------------------------------------------------------------ */

/* An operation of a stream, run by its worker (or by the caller, on the built-in streams). */
enum { OP_COPY, OP_SET, OP_HOST, OP_WAIT, OP_WRITE, OP_COPY2D };
struct op {
    struct op *next;
    int kind;
    unsigned size;            /* bytes of a set's element, of a wait's or a write's word */
    unsigned cond;            /* a wait's test: CU_STREAM_WAIT_VALUE_GEQ, EQ, AND or NOR */
    uintptr_t dst, src;
    size_t n;                 /* bytes of a copy (of each row of a 2D one), elements of a set */
    size_t spitch, dpitch, rows; /* a 2D copy's */
    uint64_t value;
    CUhostFn fn;
    void *user;
};

/* A stream: a worker thread running a FIFO of operations in order, each with no lock held (a
 * host function may block for long: only its stream waits). `refs` and `dying` are under
 * `lock`, the queue and counts under `mu`; a thread may take `mu` holding `lock`, never `lock`
 * holding `mu`. `queued` and `done` count operations: what was enqueued before a moment has
 * finished once `done` reaches the `queued` of that moment. A reference keeps the memory alive:
 * the table's, until cuStreamDestroy, and one for each call using the stream. */
struct emu_stream {
    CUcontext ctx;             /* set at creation, as are `flags` and `worker` */
    unsigned flags, refs;
    int dying;                 /* in cuStreamDestroy: no longer a valid handle */
    pthread_mutex_t mu;
    pthread_cond_t work;       /* for the worker: an operation arrived, or `stop` */
    pthread_cond_t progress;   /* for waiters: `done` grew */
    struct op *head, *tail;    /* the head: running, or next to run */
    unsigned long long queued, done;
    int stop;                  /* the worker ends once the queue is empty */
    pthread_t worker;
};

static int builtin(CUstream s) { return (uintptr_t)s <= (uintptr_t)STREAM_PER_THREAD; }
static int slot_of_stream(CUstream s) { /* s null: a free slot */
    for (int i = 0; i < MAX_SLOTS; i++)
        if (streams[i] == s) return i;
    return -1;
}

/* Takes a reference to a live stream; false for anything else (then an invalid handle). */
static int acquire(CUstream s) {
    LOCK();
    int ok = !builtin(s) && slot_of_stream(s) >= 0 && !s->dying;
    if (ok) s->refs++;
    UNLOCK();
    return ok;
}
static void release(CUstream s) {
    LOCK();
    unsigned left = --s->refs;
    UNLOCK();
    if (left) return;
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->progress);
    free(s);
}

/* Whether a wait's word passes its test (CUstreamWaitValue_flags) against its value. */
static int satisfied(const struct op *o) {
    uint64_t x, v = o->value, d;
    if (o->size == 8) x = __atomic_load_n((uint64_t *)o->dst, __ATOMIC_ACQUIRE);
    else x = __atomic_load_n((uint32_t *)o->dst, __ATOMIC_ACQUIRE); /* v too has 32 bits */
    switch (o->cond) {
    case WAIT_VALUE_GEQ: /* cyclic: (int32_t)(x - v) >= 0 */
        d = x - v;
        return o->size == 8 ? (int64_t)d >= 0 : (int32_t)(uint32_t)d >= 0;
    case WAIT_VALUE_EQ: return x == v;
    case WAIT_VALUE_AND: return (x & v) != 0;
    default: return (o->size == 8 ? ~(x | v) : (uint32_t)~(x | v)) != 0; /* NOR */
    }
}

static void run(const struct op *o) {
    void *p = (void *)o->dst;
    switch (o->kind) {
    case OP_COPY: if (o->n) memmove(p, (const void *)o->src, o->n); break;
    case OP_COPY2D:
        for (size_t r = 0; r < o->rows; r++)
            memmove((char *)p + r * o->dpitch, (const char *)o->src + r * o->spitch, o->n);
        break;
    case OP_SET:
        if (o->size == 1) memset(p, (int)o->value, o->n);
        else for (uint32_t *w = p; w < (uint32_t *)p + o->n; w++) *w = (uint32_t)o->value;
        break;
    case OP_HOST: o->fn(o->user); break;
    case OP_WRITE:
        if (o->size == 8) __atomic_store_n((uint64_t *)p, o->value, __ATOMIC_RELEASE);
        else __atomic_store_n((uint32_t *)p, (uint32_t)o->value, __ATOMIC_RELEASE);
        break;
    case OP_WAIT: /* polls, as the GPU's front end does: a host store wakes no one */
        for (long ns = 0; !satisfied(o); ns = ns < 100000 ? ns + 1000 : ns) {
            if (ns < 20000) sched_yield();
            else nanosleep(&(struct timespec){ 0, ns }, NULL);
        }
        break;
    }
}

static void *worker(void *arg) {
    struct emu_stream *s = arg;
    pthread_setname_np(pthread_self(), "emucuda-stream");
    current = s->ctx; /* a stream's work runs in its context (kernels ask for it) */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->work, &s->mu);
        struct op *o = s->head;
        if (!o) break; /* stopped, and drained */
        pthread_mutex_unlock(&s->mu); /* enqueuers and waiters go on while it runs */
        run(o);
        pthread_mutex_lock(&s->mu);
        if (!(s->head = o->next)) s->tail = NULL;
        s->done++;
        pthread_cond_broadcast(&s->progress);
        free(o);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Waits until `done` reaches `target` (with `now`, the `queued` of this moment); with `query`
 * does not wait. Whether it has. */
static int reach(struct emu_stream *s, unsigned long long target, int now, int query) {
    pthread_mutex_lock(&s->mu);
    if (now) target = s->queued;
    while (!query && s->done < target) pthread_cond_wait(&s->progress, &s->mu);
    int idle = s->done >= target;
    pthread_mutex_unlock(&s->mu);
    return idle;
}

/* Waits for the work enqueued so far on the streams of `ctx` (with `blocking`, only those made
 * without CU_STREAM_NON_BLOCKING); with `query` does not wait. Whether all of it has finished. */
static int drain(CUcontext ctx, int blocking, int query) {
    struct emu_stream *s[MAX_SLOTS];
    unsigned long long target[MAX_SLOTS];
    int n = 0, idle = 1;
    LOCK();
    for (int i = 0; i < MAX_SLOTS; i++) {
        struct emu_stream *x = streams[i];
        if (!x || x->ctx != ctx || (blocking && (x->flags & STREAM_NON_BLOCKING))) continue;
        x->refs++;
        pthread_mutex_lock(&x->mu);
        target[n] = x->queued;
        pthread_mutex_unlock(&x->mu);
        s[n++] = x;
    }
    UNLOCK();
    for (int i = 0; i < n; i++) {
        idle &= reach(s[i], target[i], 0, query);
        release(s[i]);
    }
    return idle;
}

/* Enqueues a copy of `o` on `s`; on a built-in stream runs it now (after the blocking streams'
 * work, on the legacy one). The arguments were checked. */
static CUresult submit(CUstream s, const struct op *o) {
    if (builtin(s)) {
        if (s != STREAM_PER_THREAD) drain(current, 1, 0);
        run(o);
        return CUDA_SUCCESS;
    }
    if (!acquire(s)) return CUDA_ERROR_INVALID_HANDLE;
    struct op *q = malloc(sizeof *q);
    CUresult r = q ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&s->mu);
    if (!r && s->stop) r = CUDA_ERROR_INVALID_HANDLE; /* destroyed meanwhile */
    if (!r) {
        *q = *o;
        q->next = NULL;
        *(s->tail ? &s->tail->next : &s->head) = q;
        s->tail = q;
        s->queued++;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
    if (r) free(q);
    release(s);
    return r;
}

CUresult cuStreamCreate(CUstream *out, unsigned int flags) {
    REQUIRE_CTX();
    if (!out || (flags & ~(unsigned)STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    struct emu_stream *s = calloc(1, sizeof *s);
    if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = current;
    s->flags = flags;
    s->refs = 1; /* the table's */
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->progress, NULL);
    LOCK();
    int i = slot_of_stream(NULL);
    CUresult r = i >= 0 && pthread_create(&s->worker, NULL, worker, s) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) streams[i] = s;
    UNLOCK();
    if (r) release(s);
    else *out = s;
    return r;
}

/* Waits for the stream's work, then ends its worker: unlike CUDA's, which returns at once. */
CUresult cuStreamDestroy_v2(CUstream s) {
    REQUIRE_CTX();
    LOCK();
    int i = builtin(s) ? -1 : slot_of_stream(s);
    if (i >= 0 && s->dying) i = -1;
    if (i >= 0) s->dying = 1;
    UNLOCK();
    if (i < 0) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
    LOCK();
    streams[i] = NULL;
    UNLOCK();
    release(s);
    return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream s) { return cuStreamDestroy_v2(s); }

/* Waits for (or, with `query`, asks about) what was enqueued on `s` before the call. */
static CUresult finish(CUstream s, int query) {
    REQUIRE_CTX();
    int idle;
    if (builtin(s)) /* their operations are done when their calls return; the legacy one's waits */
        idle = s == STREAM_PER_THREAD || drain(current, 1, query);
    else if (!acquire(s)) return CUDA_ERROR_INVALID_HANDLE;
    else {
        idle = reach(s, 0, 1, query);
        release(s);
    }
    return idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult cuStreamSynchronize(CUstream s) { return finish(s, 0); }
CUresult cuStreamQuery(CUstream s) { return finish(s, 1); }

/* No stream is ever captured into a graph here: the status is CU_STREAM_CAPTURE_STATUS_NONE (0). */
CUresult cuStreamIsCapturing(CUstream s, int *status) {
    REQUIRE_CTX();
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    if (!builtin(s)) {
        if (!acquire(s)) return CUDA_ERROR_INVALID_HANDLE;
        release(s);
    }
    *status = 0;
    return CUDA_SUCCESS;
}

/* Waits for every stream of the context (the built-in streams' work is done already). */
CUresult cuCtxSynchronize(void) { REQUIRE_CTX(); drain(current, 0, 0); return CUDA_SUCCESS; }

/* ---- Copies, pinned host memory, pointer queries ------------------------------------------ */

/* Whether [p, p+n) may be touched by a copy with access `prot`: device memory (in a
 * reservation) must be mapped with that access, as a GPU would fault otherwise; any other
 * address is taken for host memory, as unified addressing lets cuMemcpy take host pointers. */
static int reachable(CUdeviceptr p, size_t n, int prot) {
    if (!p || p > UINTPTR_MAX - n) return 0;
    LOCK();
    int ok = 1;
    for (int i = 0; ok && i < MAX_SLOTS; i++)
        if (overlaps(&reserved[i], p, n))
            ok = containing(reserved, p, n) >= 0 && mapped_bytes(p, n, prot, 0) == (long long)n;
    UNLOCK();
    return ok;
}

/* The arguments are checked when the operation is enqueued, as the driver does. */
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    REQUIRE_CTX();
    if (n && (!reachable(dst, n, PROT_WRITE) || !reachable(src, n, PROT_READ))) return CUDA_ERROR_INVALID_VALUE;
    return submit(s, &(struct op){ .kind = OP_COPY, .dst = dst, .src = src, .n = n });
}

/* One side of a 2D copy: its first byte, from the memory type (HOST: the host pointer; DEVICE:
 * device memory, which must lie in a reservation; UNIFIED: any address, as with cuMemcpy; no
 * arrays exist here), 0 when the type does not fit. */
static uintptr_t side2d(int type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t pitch) {
    uintptr_t base;
    if (type == MEMORYTYPE_HOST) base = (uintptr_t)host;
    else if (type == MEMORYTYPE_DEVICE || type == MEMORYTYPE_UNIFIED) base = (uintptr_t)dev;
    else return 0;
    if (!base || x > UINTPTR_MAX - base || (y && pitch > (UINTPTR_MAX - base - x) / y)) return 0;
    base += y * pitch + x;
    if (type == MEMORYTYPE_DEVICE) {
        LOCK(); int in = containing(reserved, base, 1) >= 0; UNLOCK();
        if (!in) return 0;
    }
    return base;
}

/* Height rows of WidthInBytes bytes, each a pitch after the last on either side, checked as the
 * driver does: pitches at least the row (x offset included) and at most CU_DEVICE_ATTRIBUTE_MAX_PITCH,
 * every byte of both spans reachable. The span between rows is checked too: a stricter test
 * than the driver's, which looks at the rows only (strided RMA never straddles a hole). */
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s) {
    REQUIRE_CTX();
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    size_t w = p->WidthInBytes, h = p->Height, sp = p->srcPitch, dp = p->dstPitch;
    uintptr_t src = side2d(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, sp);
    uintptr_t dst = side2d(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, dp);
    int ok = src && dst && sp <= max_pitch && dp <= max_pitch;
    if (ok && h > 1) /* a row fits in its pitch, after its x offset */
        ok = p->srcXInBytes <= sp && w <= sp - p->srcXInBytes && p->dstXInBytes <= dp && w <= dp - p->dstXInBytes;
    if (ok && w && h) { /* the spans: h - 1 pitches and a row, on each side */
        size_t most = sp > dp ? sp : dp;
        ok = !most || h - 1 <= (SIZE_MAX - w) / most;
        ok = ok && reachable(src, (h - 1) * sp + w, PROT_READ) && reachable(dst, (h - 1) * dp + w, PROT_WRITE);
    }
    CUresult r = ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (!r && w && h) {
        struct op o = { .kind = OP_COPY2D, .dst = dst, .src = src, .n = w, .spitch = sp, .dpitch = dp, .rows = h };
        r = submit(s, &o);
    }
    return logged(r, "cuMemcpy2DAsync(%zu rows of %zu bytes, pitch %zu to %zu)", h, w, sp, dp);
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
    REQUIRE_CTX();
    if (n && !reachable(dst, n, PROT_WRITE)) return CUDA_ERROR_INVALID_VALUE;
    return submit(s, &(struct op){ .kind = OP_SET, .size = 1, .dst = dst, .n = n, .value = value });
}

/* The synchronous ones: on the legacy stream, done when they return. */
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { return cuMemcpyAsync(dst, src, n, NULL); }
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) { return cuMemsetD8Async(dst, value, n, NULL); }

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t n) {
    REQUIRE_CTX();
    if (n && (dst % 4 || n > SIZE_MAX / 4 || !reachable(dst, n * 4, PROT_WRITE))) return CUDA_ERROR_INVALID_VALUE;
    return submit(NULL, &(struct op){ .kind = OP_SET, .size = 4, .dst = dst, .n = n, .value = value });
}

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
    REQUIRE_CTX();
    if (!pp || !n || (flags & ~MEMHOSTALLOC_ALL_FLAGS)) return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* zeroed */
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    if (!record(host, p, n, PROT_READ | PROT_WRITE)) return CUDA_ERROR_OUT_OF_MEMORY;
    ANSWER(pp, p);
}

/* Page-locks host memory for the devices (here: records it, so that cuMemHostGetDevicePointer
 * answers for it). PORTABLE 1, DEVICEMAP 2, IOMEMORY 4 (an I/O page such as a NIC's doorbell
 * register: here an ordinary page), READ_ONLY 8. */
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
    REQUIRE_CTX();
    if (!p || !n || (flags & ~15u)) return logged(CUDA_ERROR_INVALID_VALUE, "cuMemHostRegister(%p, %zu)", p, n);
    /* Only a table slot: the memory is the caller's (record() would unmap it on a full table). */
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    int i = slot_at(registered, 0);
    if (containing(registered, (uintptr_t)p, 1) >= 0) r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else if (i >= 0) {
        registered[i] = (struct range){ (uintptr_t)p, n, PROT_READ | PROT_WRITE };
        r = CUDA_SUCCESS;
    }
    UNLOCK();
    return logged(r, "cuMemHostRegister(%p, %zu, flags %#x)", p, n, flags);
}

CUresult cuMemHostUnregister(void *p) {
    REQUIRE_CTX();
    LOCK();
    int i = p ? slot_at(registered, (uintptr_t)p) : -1;
    if (i >= 0) registered[i].size = 0; /* the memory stays: it is the caller's */
    UNLOCK();
    return logged(i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister(%p)", p);
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags) {
    REQUIRE_CTX();
    if (!d || flags) return CUDA_ERROR_INVALID_VALUE;
    LOCK(); int i = containing(host, (uintptr_t)p, 1), j = containing(registered, (uintptr_t)p, 1); UNLOCK();
    if (i < 0 && j < 0) return CUDA_ERROR_INVALID_VALUE;
    ANSWER(d, (uintptr_t)p); /* unified addressing: the device sees it at the host's address */
}

CUresult cuMemFreeHost(void *p) {
    REQUIRE_CTX();
    LOCK();
    int i = p ? slot_at(host, (uintptr_t)p) : -1;
    if (i >= 0) {
        munmap(p, host[i].size);
        host[i].size = 0;
    }
    UNLOCK();
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
    REQUIRE_INIT();
    if (!data || attr != POINTER_ATTRIBUTE_MEMORY_TYPE) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    unsigned int type = containing(mapped, p, 1) >= 0 ? MEMORYTYPE_DEVICE
                        : containing(host, p, 1) >= 0 ? MEMORYTYPE_HOST : 0;
    UNLOCK();
    if (!type) return CUDA_ERROR_INVALID_VALUE; /* memory the driver does not know, as malloc's */
    ANSWER((unsigned int *)data, type);
}

/* ---- Stream memory operations, host functions --------------------------------------------- */

/* Whether a stream memory operation may reach the `size`-byte word at p: aligned, and in a
 * cuMemHostAlloc allocation (its device address is its host address) or a VMM mapping with
 * access `prot`. Any other address, host memory the driver does not know included, is refused. */
static int word_known(CUdeviceptr p, unsigned size, int prot) {
    if (!p || p % size || p > UINTPTR_MAX - size) return 0;
    LOCK();
    int ok = containing(host, p, size) >= 0 || mapped_bytes(p, size, prot, 0) == (long long)size;
    UNLOCK();
    return ok;
}

/* The stream waits (polling) until the word at addr passes the test in flags & 3 against v. */
static CUresult wait_value(CUstream s, CUdeviceptr addr, uint64_t v, unsigned flags, unsigned size) {
    REQUIRE_CTX();
    if ((flags & ~(3u | WAIT_VALUE_FLUSH)) || !word_known(addr, size, PROT_READ)) return CUDA_ERROR_INVALID_VALUE;
    return submit(s, &(struct op){ .kind = OP_WAIT, .size = size, .cond = flags & 3, .dst = addr, .value = v });
}

/* The stream stores v at addr, a release store with or without NO_MEMORY_BARRIER. */
static CUresult write_value(CUstream s, CUdeviceptr addr, uint64_t v, unsigned flags, unsigned size) {
    REQUIRE_CTX();
    if ((flags & ~(unsigned)WRITE_VALUE_NO_MEMORY_BARRIER) || !word_known(addr, size, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    return submit(s, &(struct op){ .kind = OP_WRITE, .size = size, .dst = addr, .value = v });
}

/* cuda.h maps the plain names to _v2; both are here, the same calls. */
#define MEMOP(name, T, call, size) \
    CUresult name(CUstream s, CUdeviceptr addr, T value, unsigned flags) { return call(s, addr, value, flags, size); }
MEMOP(cuStreamWaitValue32_v2, cuuint32_t, wait_value, 4)
MEMOP(cuStreamWaitValue32, cuuint32_t, wait_value, 4)
MEMOP(cuStreamWaitValue64_v2, cuuint64_t, wait_value, 8)
MEMOP(cuStreamWaitValue64, cuuint64_t, wait_value, 8)
MEMOP(cuStreamWriteValue32_v2, cuuint32_t, write_value, 4)
MEMOP(cuStreamWriteValue32, cuuint32_t, write_value, 4)
MEMOP(cuStreamWriteValue64_v2, cuuint64_t, write_value, 8)
MEMOP(cuStreamWriteValue64, cuuint64_t, write_value, 8)

/* fn(user) runs on the stream's worker, in order; it may block (only its stream waits), but
 * must make no CUDA call, as CUDA requires. */
CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user) {
    REQUIRE_CTX();
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    return submit(s, &(struct op){ .kind = OP_HOST, .fn = fn, .user = user });
}

/* ---- Modules: host shared objects in the place of GPU code -------------------------------- */

/* A GPU cannot be emulated, so neither can its code: the image cuModuleLoadData accepts here is
 * the text "OXEMUCUDA-HOST-SO\n" followed by the path of a shared object (tests/emucuda/README).
 * Its kernels are host functions `void NAME(const oxemu_launch_t *at, void **params)`, run once
 * for each thread of the grid, in order, on the launch's stream; `oxemu_params_NAME` (an array
 * of unsigned long long: the count, then each parameter's size) answers cuFuncGetParamInfo; its
 * data symbols are the module's globals (cuModuleGetGlobal gives their address and size). Any
 * other image (a cubin, a fatbin, PTX) is CUDA_ERROR_INVALID_IMAGE, as on a driver that cannot
 * read it. */
#include <dlfcn.h>
#include <link.h>

#define MODULE_MAGIC "OXEMUCUDA-HOST-SO\n"
#define MAX_KERNELS 64
enum { CUDA_ERROR_INVALID_IMAGE = 200, CUDA_ERROR_NOT_FOUND = 500 };

typedef struct { unsigned grid[3], block[3], block_idx[3], thread_idx[3]; } oxemu_launch_t;
typedef void (*emu_kernel)(const oxemu_launch_t *, void **);
/* A module built for oxshmem's CPU target (oshnvcc --target cpu -shared) runs its own kernels:
 * the driver asks it for a kernel's parameter sizes and hands it whole launches. */
typedef long (*cpu_params_fn)(const char *name, unsigned long long *sizes, size_t max);
typedef int (*cpu_run_fn)(const char *name, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                          void **params, int cooperative);
struct emu_function {
    emu_kernel fn;
    const unsigned long long *params;
    char name[64];
    cpu_run_fn cpu_run;              /* a CPU-target module's kernel (fn is NULL) */
    unsigned long long cpu_params[33];
};
struct emu_module { void *dl; int n; struct emu_function fns[MAX_KERNELS]; };
typedef struct emu_module *CUmodule;
typedef struct emu_function *CUfunction;

/* 1 while a module's shared object is being loaded: a CPU-target module's load-time
 * constructor reads it and leaves the host library's registrations to the program. */
__attribute__((visibility("default"))) int oxemu_loading_module;

/* Loads an image for cuModuleLoadData and cuLibraryLoadData (`call`, for the log). */
static CUresult load_image(struct emu_module **out, const void *image, const char *call) {
    if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
    if (strncmp(image, MODULE_MAGIC, strlen(MODULE_MAGIC)) != 0)
        return logged(CUDA_ERROR_INVALID_IMAGE, "%s(not a host shared object image)", call);
    const char *path = (const char *)image + strlen(MODULE_MAGIC);
    /* Deep binding: the object's code uses its own definitions first, as a cubin's device code
     * does, rather than the process's (the host library exports host routines of the same names,
     * nvshmem_uint64_p and the like, which would otherwise serve its device calls). */
    __atomic_store_n(&oxemu_loading_module, 1, __ATOMIC_SEQ_CST);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    __atomic_store_n(&oxemu_loading_module, 0, __ATOMIC_SEQ_CST);
    if (!dl) return logged(CUDA_ERROR_INVALID_IMAGE, "%s(%s): %s", call, path, dlerror());
    struct emu_module *m = calloc(1, sizeof *m);
    if (!m) { dlclose(dl); return CUDA_ERROR_OUT_OF_MEMORY; }
    m->dl = dl;
    *out = m;
    return logged(CUDA_SUCCESS, "%s(%s)", call, path);
}

CUresult cuModuleLoadData(CUmodule *out, const void *image) {
    REQUIRE_CTX();
    return load_image(out, image, "cuModuleLoadData");
}

/* A module image in a file (a host shared object's image, as cuModuleLoadData takes). */
CUresult cuModuleLoad(CUmodule *out, const char *fname) {
    REQUIRE_CTX();
    if (!out || !fname) return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(fname, "rb");
    if (!f) return logged(301, "cuModuleLoad(%s): not found", fname);
    char image[4096];
    size_t n = fread(image, 1, sizeof image - 1, f);
    fclose(f);
    image[n] = 0;
    while (n > 0 && (image[n - 1] == '\n' || image[n - 1] == '\r')) image[--n] = 0;
    return cuModuleLoadData(out, image);
}

CUresult cuModuleUnload(CUmodule m) {
    REQUIRE_INIT();
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    /* Like the driver, it does not wait for kernels still running: the caller synchronizes. */
    dlclose(m->dl);
    free(m);
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
    REQUIRE_CTX();
    if (!out || !m || !name || strlen(name) >= sizeof m->fns[0].name) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->fns[i].name, name)) { *out = &m->fns[i]; return CUDA_SUCCESS; }
    char pname[96];
    snprintf(pname, sizeof pname, "oxemu_params_%s", name);
    if (m->n == MAX_KERNELS) return CUDA_ERROR_OUT_OF_MEMORY;
    cpu_params_fn cpu_params = (cpu_params_fn)dlsym(m->dl, "oxshmemi_cpu_kernel_params");
    cpu_run_fn cpu_run = (cpu_run_fn)dlsym(m->dl, "oxshmemi_cpu_run_kernel");
    if (cpu_params && cpu_run) {
        struct emu_function *f = &m->fns[m->n];
        long n = cpu_params(name, f->cpu_params + 1, 32);
        if (n < 0) return CUDA_ERROR_NOT_FOUND;
        if (n > 32) return CUDA_ERROR_NOT_SUPPORTED;
        f->cpu_params[0] = (unsigned long long)n;
        f->params = f->cpu_params;
        f->fn = NULL;
        f->cpu_run = cpu_run;
        strcpy(f->name, name);
        m->n++;
        *out = f;
        return CUDA_SUCCESS;
    }
    emu_kernel fn = (emu_kernel)dlsym(m->dl, name);
    const unsigned long long *params = dlsym(m->dl, pname);
    if (!fn || !params) return CUDA_ERROR_NOT_FOUND;
    struct emu_function *f = &m->fns[m->n++];
    f->fn = fn;
    f->params = params;
    f->cpu_run = NULL;
    strcpy(f->name, name);
    *out = f;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
    REQUIRE_CTX();
    if (!m || !name) return CUDA_ERROR_INVALID_VALUE;
    void *p = dlsym(m->dl, name);
    if (!p) return CUDA_ERROR_NOT_FOUND;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) return CUDA_ERROR_NOT_FOUND;
    if (dptr) *dptr = (CUdeviceptr)(uintptr_t)p;
    if (bytes) *bytes = sym->st_size;
    return CUDA_SUCCESS;
}

/* Libraries (CUDA 12.0): the same host shared objects, loaded without a context (the driver
 * loads a library into each context when first used there). A kernel handle is the module's
 * function handle, which cuLaunchKernel takes (a CUkernel may be cast to a CUfunction). */
typedef struct emu_module *CUlibrary;
typedef struct emu_function *CUkernel;

CUresult cuLibraryLoadData(CUlibrary *out, const void *code, void *jit_options, void **jit_values,
                           unsigned n_jit, void *lib_options, void **lib_values, unsigned n_lib) {
    REQUIRE_INIT();
    (void)jit_options, (void)jit_values, (void)lib_options, (void)lib_values;
    if ((n_jit && (!jit_options || !jit_values)) || (n_lib && (!lib_options || !lib_values)))
        return CUDA_ERROR_INVALID_VALUE;
    return load_image(out, code, "cuLibraryLoadData");
}

CUresult cuLibraryUnload(CUlibrary l) { return cuModuleUnload(l); }
CUresult cuLibraryGetKernel(CUkernel *out, CUlibrary l, const char *name) { return cuModuleGetFunction(out, l, name); }
CUresult cuLibraryGetModule(CUmodule *out, CUlibrary l) {
    REQUIRE_CTX();
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    ANSWER(out, l);
}
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name) {
    return cuModuleGetGlobal_v2(dptr, bytes, l, name);
}

/* Offsets as nvcc lays parameters out: each at its natural alignment (sizes are 1, 2, 4, 8). */
CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
    REQUIRE_INIT();
    if (!f || !offset || !size) return CUDA_ERROR_INVALID_VALUE;
    size_t n = f->params[0], at = 0;
    if (index >= n) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i <= index; i++) {
        size_t s = f->params[1 + i];
        at = (at + s - 1) / s * s;
        if (i == index) { *offset = at; *size = s; }
        at += s;
    }
    return CUDA_SUCCESS;
}

/* A launch, as a host function of its stream: the parameters copied at launch, as the driver
 * copies them. */
struct emu_launch {
    struct emu_function *f;
    oxemu_launch_t at;
    unsigned shared;
    int cooperative; /* every block at once (a CPU-target module's kernel; others run in order) */
    void *args[32];
    unsigned char values[32][8];
};

static void run_launch(void *user) {
    struct emu_launch *l = user;
    oxemu_launch_t at = l->at;
    if (l->f->cpu_run) {
        int rc = l->f->cpu_run(l->f->name, at.grid, at.block, l->shared, l->args, l->cooperative);
        if (rc) fprintf(stderr, "emucuda: the CPU-target kernel %s failed to launch (cudaError %d)\n", l->f->name, rc);
        free(l);
        return;
    }
    for (at.block_idx[2] = 0; at.block_idx[2] < at.grid[2]; at.block_idx[2]++)
        for (at.block_idx[1] = 0; at.block_idx[1] < at.grid[1]; at.block_idx[1]++)
            for (at.block_idx[0] = 0; at.block_idx[0] < at.grid[0]; at.block_idx[0]++)
                for (at.thread_idx[2] = 0; at.thread_idx[2] < at.block[2]; at.thread_idx[2]++)
                    for (at.thread_idx[1] = 0; at.thread_idx[1] < at.block[1]; at.thread_idx[1]++)
                        for (at.thread_idx[0] = 0; at.thread_idx[0] < at.block[0]; at.thread_idx[0]++)
                            l->f->fn(&at, l->args);
    free(l);
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, CUstream s, void **params, void **extra, int cooperative);

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra) {
    return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, 0);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, CUstream s, void **params) {
    return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL, 1);
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, CUstream s, void **params, void **extra, int cooperative) {
    REQUIRE_CTX();
    if (!f || !gx || !gy || !gz || !bx || !by || !bz || (unsigned long long)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (extra) return CUDA_ERROR_NOT_SUPPORTED;
    size_t n = f->params[0];
    if (n > 32 || (n && !params)) return CUDA_ERROR_INVALID_VALUE;
    struct emu_launch *l = calloc(1, sizeof *l);
    if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
    l->f = f;
    l->at = (oxemu_launch_t){ .grid = { gx, gy, gz }, .block = { bx, by, bz } };
    l->shared = shared;
    l->cooperative = cooperative;
    for (size_t i = 0; i < n; i++) {
        size_t sz = f->params[1 + i];
        if (sz > 8) { free(l); return CUDA_ERROR_NOT_SUPPORTED; }
        memcpy(l->values[i], params[i], sz);
        l->args[i] = l->values[i];
    }
    CUresult r = submit(s, &(struct op){ .kind = OP_HOST, .fn = run_launch, .user = l });
    if (r) free(l);
    return r;
}
