/*
 * libcuda.c: an emulated CUDA driver for machines without a GPU.
 *
 * Built as libcuda.so.1 (and libcuda.so) and put on LD_LIBRARY_PATH, it stands in for the NVIDIA
 * driver that oxshmem's CUDA layer (device/src/cuda, via cudarc's dynamic loading) opens, so the
 * GPU heap's set-up runs for real in tests: VMM reservation, export as a POSIX fd, fd passing,
 * peer mapping, copies, pinned memory. Device memory is host memory: a cuMemCreate allocation
 * is a memfd, a mapping an mmap of it, so PEs of a node share it as they would a GPU's. It proves
 * the plumbing, not CUDA semantics: kernels cannot run, there are no streams, a copy is memmove.
 *
 * The calls follow CUDA 13.0's cuda.h (signatures, enum values, struct layouts) and check their
 * arguments as the driver does where that is cheap (granularity, ranges inside a reservation,
 * unknown handles), with its error codes. Only the calls oxshmem makes are defined: cudarc
 * fails loudly (it panics: "Missing symbol") on any other.
 *
 * Environment:
 *   OXSHMEM_EMUCUDA_DEVICES  number of devices (default 1; 0: cuInit returns NO_DEVICE)
 *   OXSHMEM_EMUCUDA_MEM_MIB  MiB of memory per device (default 16384; cuMemCreate beyond: OOM)
 *   OXSHMEM_EMUCUDA_LOG      a file to which each VMM call appends one line (pid, call, result)
 *
 * Build: cc -shared -fPIC -O2 -Wall -Wextra -Werror -pthread -o libcuda.so.1 libcuda.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Types and values of cuda.h (13.0) ---------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct emu_ctx *CUcontext;
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
    CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_NOT_SUPPORTED = 801,
};
enum { /* CUdevice_attribute */
    ATTR_MULTIPROCESSOR_COUNT = 16, ATTR_UNIFIED_ADDRESSING = 41, ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76,
    ATTR_VMM_SUPPORTED = 102, ATTR_POSIX_FD_SUPPORTED = 103, ATTR_GDR_WITH_VMM_SUPPORTED = 110,
};
enum { MEM_ALLOCATION_TYPE_PINNED = 1, MEM_LOCATION_TYPE_DEVICE = 1, MEM_HANDLE_TYPE_POSIX_FD = 1 };
enum { MEM_ACCESS_PROT_NONE = 0, MEM_ACCESS_PROT_READ = 1, MEM_ACCESS_PROT_READWRITE = 3 };
enum { POINTER_ATTRIBUTE_MEMORY_TYPE = 2, MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2 };
enum { MEMHOSTALLOC_ALL_FLAGS = 0x7 }; /* PORTABLE | DEVICEMAP | WRITECOMBINED */

/* ---- State: small fixed tables under one lock --------------------------------------------- */

#define GRANULARITY ((size_t)2 << 20) /* minimum and recommended, as on current GPUs */
#define MAX_DEVICES 16
#define MAX_SLOTS 256
#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) /* what marks a cuMemCreate memfd */

struct emu_ctx { unsigned refs; };                   /* a device's primary context */
struct handle { int fd; size_t size; unsigned refs, gen; int exportable, owned; };
struct range { uintptr_t base; size_t size; int prot; }; /* size 0: a free slot */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int initialized;
static int ndevices;
static size_t device_mem;
static struct emu_ctx ctxs[MAX_DEVICES];
static struct handle handles[MAX_SLOTS];  /* refs 0: free */
static struct range reserved[MAX_SLOTS];  /* cuMemAddressReserve */
static struct range mapped[MAX_SLOTS];    /* cuMemMap, with the access cuMemSetAccess granted */
static struct range host[MAX_SLOTS];      /* cuMemHostAlloc */
static _Thread_local CUcontext current;   /* the calling thread's current context */

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
        if (ndevices == 0) r = CUDA_ERROR_NO_DEVICE;
        else atomic_store(&initialized, 1);
    }
    UNLOCK();
    return r;
}

CUresult cuDriverGetVersion(int *v) { ANSWER(v, 13000); }
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
    if (attr == ATTR_UNIFIED_ADDRESSING || attr == ATTR_VMM_SUPPORTED || attr == ATTR_POSIX_FD_SUPPORTED) x = 1;
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

CUresult cuCtxSetCurrent(CUcontext ctx) {
    REQUIRE_INIT();
    uintptr_t c = (uintptr_t)ctx, first = (uintptr_t)ctxs;
    if (ctx && (c < first || c >= first + (size_t)ndevices * sizeof *ctxs || (c - first) % sizeof *ctxs))
        return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) { REQUIRE_INIT(); ANSWER(ctx, current); }
/* Every call here has completed when it returns: nothing to wait for. */
CUresult cuCtxSynchronize(void) { REQUIRE_CTX(); return CUDA_SUCCESS; }

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
            if (overlaps(&mapped[j], ptr, size)) mapped[j].size = 0; /* munmap ends them too */
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
            if (overlaps(&mapped[j], ptr, size)) mapped[j].size = 0;
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

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    REQUIRE_CTX();
    if (!n) return CUDA_SUCCESS;
    if (!reachable(dst, n, PROT_WRITE) || !reachable(src, n, PROT_READ)) return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
    REQUIRE_CTX();
    if (!n) return CUDA_SUCCESS;
    if (!reachable(dst, n, PROT_WRITE)) return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, value, n);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t n) {
    REQUIRE_CTX();
    if (!n) return CUDA_SUCCESS;
    if (dst % 4 || n > SIZE_MAX / 4 || !reachable(dst, n * 4, PROT_WRITE)) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int *p = (unsigned int *)(uintptr_t)dst; n--; p++) *p = value;
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
    REQUIRE_CTX();
    if (!pp || !n || (flags & ~MEMHOSTALLOC_ALL_FLAGS)) return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* zeroed */
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    if (!record(host, p, n, PROT_READ | PROT_WRITE)) return CUDA_ERROR_OUT_OF_MEMORY;
    ANSWER(pp, p);
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags) {
    REQUIRE_CTX();
    if (!d || flags) return CUDA_ERROR_INVALID_VALUE;
    LOCK(); int i = containing(host, (uintptr_t)p, 1); UNLOCK();
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
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
