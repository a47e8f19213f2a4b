/*
 * Setup, query and memory management:
 *
 *   query    shmem_info_get_version/_name against the header's macros, shmem_query_thread
 *            after shmem_init, shmem_pcontrol, shmemx_heap_size/_free
 *   heap     shmem_malloc, shmem_calloc (zeroed), shmem_align for every power of two up to
 *            1 MiB, shmem_realloc (growing and shrinking keeps the contents, and the result is
 *            symmetric: remote puts land in it), shmem_malloc_with_hints, zero-size requests,
 *            shmem_free(NULL), hundreds of allocate/free cycles in shuffled sizes, one
 *            allocation of 256 MiB written and read remotely at both ends
 */
#include <stdint.h>
#include <shmemx.h>
#include "oxtest.h"

static int me, npes, right, left;

static void query(void) {
    int major = -1, minor = -1, level = -1;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    CHECK_EQ(SHMEM_MAJOR_VERSION, major, "shmem_info_get_version major");
    CHECK_EQ(SHMEM_MINOR_VERSION, minor, "shmem_info_get_version minor");
    CHECK_EQ(1, major, "major version");
    CHECK_EQ(5, minor, "minor version");
    memset(name, 'x', sizeof name);
    shmem_info_get_name(name);
    CHECK(memchr(name, 0, sizeof name) != NULL, "shmem_info_get_name writes a NUL within SHMEM_MAX_NAME_LEN");
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "shmem_info_get_name is SHMEM_VENDOR_STRING (%.60s)", name);
    shmem_query_thread(&level);
    CHECK(level >= SHMEM_THREAD_SINGLE && level <= SHMEM_THREAD_MULTIPLE, "shmem_query_thread level %d", level);
    shmem_pcontrol(0);
    shmem_pcontrol(1, "a", 2, 3.0);
    shmem_pcontrol(2, NULL);
    CHECK(shmemx_heap_size() >= shmemx_heap_free(), "shmemx_heap_size >= shmemx_heap_free");
}

static void heap(void) {
    size_t a, before;
    int i, k;
    /* calloc is zeroed, malloc is usable */
    long *z = (long *)shmem_calloc(1000, sizeof(long));
    long bad = 0;
    for (i = 0; i < 1000; i++) bad += z[i] != 0;
    CHECK_EQ(0, bad, "shmem_calloc elements not zero");
    shmem_free(z);

    /* every alignment, and the memory behind it works remotely */
    for (a = 1; a <= (1 << 20); a *= 2) {
        int *p = (int *)shmem_align(a, 3 * sizeof(int));
        CHECK(p != NULL, "shmem_align(%zu)", a);
        if (p == NULL) continue;
        CHECK_EQ(0, (uintptr_t)p % a, "shmem_align(%zu) alignment", a);
        shmem_int_p(&p[2], (int)a + me, right);
        shmem_barrier_all();
        CHECK_EQ((int)a + left, p[2], "put into shmem_align(%zu) memory", a);
        shmem_barrier_all();
        shmem_free(p);
    }

    /* realloc keeps contents and stays symmetric */
    {
        int *p = (int *)shmem_malloc(10 * sizeof(int));
        for (i = 0; i < 10; i++) p[i] = me * 100 + i;
        p = (int *)shmem_realloc(p, 100000 * sizeof(int));
        CHECK(p != NULL, "shmem_realloc to grow");
        for (i = 0; i < 10; i++) CHECK_EQ(me * 100 + i, p[i], "grown shmem_realloc keeps [%d]", i);
        shmem_int_p(&p[99999], me, right);
        shmem_barrier_all();
        CHECK_EQ(left, p[99999], "put into the grown block");
        shmem_barrier_all();
        p = (int *)shmem_realloc(p, 5 * sizeof(int));
        for (i = 0; i < 5; i++) CHECK_EQ(me * 100 + i, p[i], "shrunk shmem_realloc keeps [%d]", i);
        CHECK_EQ(right * 100 + 4, shmem_int_g(&p[4], right), "get from the shrunk block");
        shmem_barrier_all();
        shmem_free(p);
    }

    /* hints, zero sizes, NULL */
    {
        long *h = (long *)shmem_malloc_with_hints(64 * sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
        CHECK(h != NULL, "shmem_malloc_with_hints");
        h[0] = 0;
        shmem_barrier_all();
        shmem_long_atomic_add(&h[0], 1, 0);
        shmem_barrier_all();
        if (me == 0) CHECK_EQ(npes, h[0], "atomics in shmem_malloc_with_hints memory");
        shmem_barrier_all();
        shmem_free(h);
        void *zero = shmem_malloc(0);
        shmem_free(zero); /* NULL or a unique pointer: either may be freed */
        shmem_free(NULL);
    }

    /* churn: sizes in a different order every round; the heap ends as it started */
    before = shmemx_heap_free();
    for (k = 0; k < 200; k++) {
        size_t sz = (size_t)(1 + (k * 7919) % 65536);
        char *p = (char *)shmem_malloc(sz);
        char *q = (char *)shmem_calloc(1 + k % 17, 64);
        CHECK(p != NULL && q != NULL, "churn allocation %d", k);
        if (p && q) {
            p[sz - 1] = (char)k;
            q[0] = (char)k;
        }
        shmem_free(p);
        shmem_free(q);
    }
    shmem_barrier_all();
    CHECK_EQ(before, shmemx_heap_free(), "shmemx_heap_free after 200 allocate/free cycles");

    /* a large block, remotely at both ends */
    {
        size_t big = (size_t)256 << 20;
        char *b = (char *)shmem_malloc(big);
        CHECK(b != NULL, "shmem_malloc(256 MiB)");
        if (b != NULL) {
            shmem_char_p(&b[0], (char)(me + 1), right);
            shmem_char_p(&b[big - 1], (char)(me + 2), right);
            shmem_barrier_all();
            CHECK_EQ((char)(left + 1), b[0], "first byte of 256 MiB");
            CHECK_EQ((char)(left + 2), b[big - 1], "last byte of 256 MiB");
            shmem_barrier_all();
            shmem_free(b);
        }
    }
}

int main(void) {
    ox_init("memory");
    me = ox_me;
    npes = ox_npes;
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    query();
    heap();
    return ox_finish();
}
