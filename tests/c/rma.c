/*
 * RMA: every routine of the RMA tables for every standard RMA type, with and without a context,
 * into the symmetric heap and into global variables (.data) and static variables (.bss):
 *
 *   typed     shmem_TYPE_{p,put,iput,put_nbi,g,get,iget,get_nbi,put_signal,put_signal_nbi}
 *             and shmem_ctx_TYPE_* of each, for the 24 types of Table 5
 *   sized     shmem_{put,get,put_nbi,get_nbi,put_signal,put_signal_nbi}{8,16,32,64,128,mem},
 *             shmem_{iput,iget}{8,16,32,64,128}, and their ctx forms
 *   bulk      multi-MiB putmem/getmem/put_nbi between heap and .bss
 *   access    shmem_addr_accessible, shmem_pe_accessible, shmem_ptr
 *
 * Every PE writes to its right neighbour and reads from it, so each PE is both origin and
 * target; values are computed from (PE, index, routine) by OX_VAL.
 */
#include "oxtest.h"

#define NEL 8  /* elements per region */
#define NREG 8 /* regions per symmetric area */

static int me, npes, right, left;
static shmem_ctx_t ctx; /* a context of our own, beside SHMEM_CTX_DEFAULT */
static uint64_t g_sig[4]; /* .bss signals of the put-with-signal routines */

/* A global (.data, initialized) and a static (.bss) array of NREG regions for every type */
#define DECLARE(N, T)                                                                          \
    T g_data_##N[NREG][NEL] = {{(T)1, (T)2, (T)3}};                                            \
    static T g_bss_##N[NREG][NEL];
OX_RMA_TYPES(DECLARE)

#define SENT(T) ((T)0x5A)
#define V(T, p, i, k) OX_VAL(T, p, i, k)

#define RMA_TEST(N, T)                                                                         \
    static void rma_##N(void) {                                                                \
        const char *tn = #N;                                                                   \
        T(*h)[NEL] = (T(*)[NEL])shmem_malloc(NREG * sizeof *h);                                \
        T(*d)[NEL] = g_data_##N;                                                               \
        T(*b)[NEL] = g_bss_##N;                                                                \
        T src[3 * NEL], loc[NEL], loc2[NEL];                                                   \
        int i, r;                                                                              \
        CHECK(h != NULL, "%s shmem_malloc", tn);                                               \
        /* static data starts as the program's image on every PE */                            \
        CHECK_EQ((T)2, shmem_##N##_g(&d[0][1], right), "%s g of initialized .data", tn);       \
        shmem_##N##_get(loc, b[1], NEL, right);                                                \
        for (i = 0; i < NEL; i++) CHECK_EQ((T)0, loc[i], "%s get of .bss[%d]", tn, i);         \
        shmem_barrier_all();                                                                   \
        for (r = 0; r < NREG; r++)                                                             \
            for (i = 0; i < NEL; i++) h[r][i] = d[r][i] = b[r][i] = SENT(T);                   \
        memset(g_sig, 0, sizeof g_sig);                                                        \
        shmem_barrier_all();                                                                   \
                                                                                               \
        /* ---- puts to the right neighbour ---- */                                           \
        for (i = 0; i < NEL; i++) shmem_##N##_p(&h[0][i], V(T, me, i, 0), right);              \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 1);                                     \
        shmem_##N##_put(b[0], src, NEL, right);                                                \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 2);                                     \
        shmem_##N##_put_nbi(d[0], src, NEL, right);                                            \
        shmem_quiet(); /* src is reused next */                                                \
        for (i = 0; i < 3 * NEL; i++) src[i] = V(T, me, i, 3);                                 \
        shmem_##N##_iput(h[1], src, 2, 3, NEL / 2, right);                                     \
        for (i = 0; i < NEL; i++) shmem_ctx_##N##_p(ctx, &b[1][i], V(T, me, i, 4), right);     \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 5);                                     \
        shmem_ctx_##N##_put(ctx, d[1], src, NEL, right);                                       \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 6);                                     \
        shmem_ctx_##N##_put_nbi(ctx, h[2], src, NEL, right);                                   \
        shmem_ctx_quiet(ctx);                                                                  \
        for (i = 0; i < 3 * NEL; i++) src[i] = V(T, me, i, 7);                                 \
        shmem_ctx_##N##_iput(ctx, b[2], src, 1, 2, NEL, right);                                \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 8);                                     \
        shmem_##N##_put_signal(d[2], src, NEL, &g_sig[0], 1000 + me, SHMEM_SIGNAL_SET, right); \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 9);                                     \
        shmem_##N##_put_signal_nbi(h[3], src, NEL, &g_sig[1], 3, SHMEM_SIGNAL_ADD, right);     \
        shmem_quiet();                                                                         \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 10);                                    \
        shmem_ctx_##N##_put_signal(ctx, b[3], src, NEL, &g_sig[2], 5, SHMEM_SIGNAL_ADD, right);  \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 11);                                    \
        shmem_ctx_##N##_put_signal_nbi(ctx, d[3], src, NEL, &g_sig[3], 77, SHMEM_SIGNAL_SET,    \
                                       right);                                                 \
        shmem_ctx_quiet(ctx);                                                                  \
        for (i = 0; i < NEL; i++) src[i] = V(T, me, i, 12);                                    \
        shmem_ctx_##N##_put(SHMEM_CTX_DEFAULT, h[4], src, NEL, right);                         \
        shmem_barrier_all();                                                                   \
                                                                                               \
        for (i = 0; i < NEL; i++) {                                                            \
            CHECK_EQ(V(T, left, i, 0), h[0][i], "%s p heap[%d]", tn, i);                       \
            CHECK_EQ(V(T, left, i, 1), b[0][i], "%s put .bss[%d]", tn, i);                     \
            CHECK_EQ(V(T, left, i, 2), d[0][i], "%s put_nbi .data[%d]", tn, i);                \
            CHECK_EQ(i % 2 ? SENT(T) : V(T, left, 3 * (i / 2), 3), h[1][i],                    \
                     "%s iput(dst 2, sst 3) heap[%d]", tn, i);                                 \
            CHECK_EQ(V(T, left, i, 4), b[1][i], "%s ctx_p .bss[%d]", tn, i);                   \
            CHECK_EQ(V(T, left, i, 5), d[1][i], "%s ctx_put .data[%d]", tn, i);                \
            CHECK_EQ(V(T, left, i, 6), h[2][i], "%s ctx_put_nbi heap[%d]", tn, i);             \
            CHECK_EQ(V(T, left, 2 * i, 7), b[2][i], "%s ctx_iput(dst 1, sst 2) .bss[%d]", tn, i); \
            CHECK_EQ(V(T, left, i, 8), d[2][i], "%s put_signal .data[%d]", tn, i);             \
            CHECK_EQ(V(T, left, i, 9), h[3][i], "%s put_signal_nbi heap[%d]", tn, i);          \
            CHECK_EQ(V(T, left, i, 10), b[3][i], "%s ctx_put_signal .bss[%d]", tn, i);         \
            CHECK_EQ(V(T, left, i, 11), d[3][i], "%s ctx_put_signal_nbi .data[%d]", tn, i);    \
            CHECK_EQ(V(T, left, i, 12), h[4][i], "%s ctx_put(SHMEM_CTX_DEFAULT) heap[%d]", tn, i); \
            CHECK_EQ(SENT(T), h[5][i], "%s heap[5][%d] untouched", tn, i);                     \
        }                                                                                      \
        CHECK_EQ(1000 + left, g_sig[0], "%s put_signal SET signal", tn);                       \
        CHECK_EQ(3, g_sig[1], "%s put_signal_nbi ADD signal", tn);                             \
        CHECK_EQ(5, g_sig[2], "%s ctx_put_signal ADD signal", tn);                             \
        CHECK_EQ(77, g_sig[3], "%s ctx_put_signal_nbi SET signal", tn);                        \
                                                                                               \
        /* ---- gets from the right neighbour ---- */                                         \
        for (i = 0; i < NEL; i++) {                                                            \
            h[5][i] = V(T, me, i, 20);                                                         \
            b[5][i] = V(T, me, i, 21);                                                         \
            d[5][i] = V(T, me, i, 22);                                                         \
            h[6][i] = V(T, me, i, 23);                                                         \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        for (i = 0; i < NEL; i++)                                                              \
            CHECK_EQ(V(T, right, i, 20), shmem_##N##_g(&h[5][i], right), "%s g heap[%d]", tn, i); \
        shmem_##N##_get(loc, b[5], NEL, right);                                                \
        for (i = 0; i < NEL; i++) CHECK_EQ(V(T, right, i, 21), loc[i], "%s get .bss[%d]", tn, i); \
        shmem_##N##_get_nbi(loc, d[5], NEL, right);                                            \
        shmem_quiet();                                                                         \
        for (i = 0; i < NEL; i++)                                                              \
            CHECK_EQ(V(T, right, i, 22), loc[i], "%s get_nbi .data[%d]", tn, i);               \
        shmem_##N##_iget(loc, h[6], 1, 2, NEL / 2, right);                                     \
        for (i = 0; i < NEL / 2; i++)                                                          \
            CHECK_EQ(V(T, right, 2 * i, 23), loc[i], "%s iget(dst 1, sst 2) heap[%d]", tn, i);  \
        for (i = 0; i < NEL; i++)                                                              \
            CHECK_EQ(V(T, right, i, 21), shmem_ctx_##N##_g(ctx, &b[5][i], right),              \
                     "%s ctx_g .bss[%d]", tn, i);                                              \
        shmem_ctx_##N##_get(ctx, loc, d[5], NEL, right);                                       \
        for (i = 0; i < NEL; i++)                                                              \
            CHECK_EQ(V(T, right, i, 22), loc[i], "%s ctx_get .data[%d]", tn, i);               \
        shmem_ctx_##N##_get_nbi(ctx, loc, h[5], NEL, right);                                   \
        shmem_ctx_quiet(ctx);                                                                  \
        for (i = 0; i < NEL; i++)                                                              \
            CHECK_EQ(V(T, right, i, 20), loc[i], "%s ctx_get_nbi heap[%d]", tn, i);            \
        for (i = 0; i < NEL; i++) loc2[i] = SENT(T);                                           \
        shmem_ctx_##N##_iget(ctx, loc2, b[5], 2, 1, NEL / 2, right);                           \
        for (i = 0; i < NEL; i++)                                                              \
            CHECK_EQ(i % 2 ? SENT(T) : V(T, right, i / 2, 21), loc2[i],                        \
                     "%s ctx_iget(dst 2, sst 1) local[%d]", tn, i);                            \
        shmem_barrier_all(); /* the sources stay until every PE has read them */              \
        shmem_free(h);                                                                         \
    }
OX_RMA_TYPES(RMA_TEST)

/* ---- the sized forms, on bytes: element e of SIZE-byte elements is bytes [e*B, e*B+B) ---- */

#define SZ_BYTES 256
static unsigned char g_sz_bss[4][SZ_BYTES];
unsigned char g_sz_data[4][SZ_BYTES] = {{1}};

static unsigned char byte_val(int p, int i, int k) { return (unsigned char)(ox_mix(p, i, k) >> 8); }

/* Expected byte j of a strided transfer of `nel` elements of `B` bytes: destination element e
 * comes from source element e*sst / dst, so byte j of the destination region is
 * source byte ((j/B)/dst*sst)*B + j%B when (j/B) % dst == 0, else untouched. */
static int strided_src_byte(int j, int B, int dst, int sst, int nel) {
    int e = j / B;
    if (e % dst != 0 || e / dst >= nel) return -1;
    return (e / dst * sst) * B + j % B;
}

#define SIZED_TEST(S, B)                                                                       \
    static void sized_##S(void) {                                                              \
        const char *sn = #S;                                                                   \
        unsigned char *h = (unsigned char *)shmem_malloc(4 * SZ_BYTES);                        \
        unsigned char src[SZ_BYTES], loc[SZ_BYTES];                                            \
        size_t nel = SZ_BYTES / (B);                                                           \
        int j, c;                                                                              \
        memset(h, 0x5A, 4 * SZ_BYTES);                                                         \
        memset(g_sz_bss, 0x5A, sizeof g_sz_bss);                                               \
        memset(g_sz_data, 0x5A, sizeof g_sz_data);                                             \
        memset(g_sig, 0, sizeof g_sig);                                                        \
        shmem_barrier_all();                                                                   \
        for (c = 0; c < 8; c++) {                                                              \
            for (j = 0; j < SZ_BYTES; j++) src[j] = byte_val(me, j, c);                        \
            switch (c) {                                                                       \
            case 0: shmem_put##S(h, src, nel, right); break;                                   \
            case 1: shmem_put##S##_nbi(g_sz_bss[0], src, nel, right); shmem_quiet(); break;    \
            case 2: shmem_put##S##_signal(g_sz_data[0], src, nel, &g_sig[0], 9, SHMEM_SIGNAL_ADD, right); \
                break;                                                                         \
            case 3: shmem_put##S##_signal_nbi(h + SZ_BYTES, src, nel, &g_sig[1], 11,           \
                                              SHMEM_SIGNAL_SET, right);                        \
                shmem_quiet();                                                                 \
                break;                                                                         \
            case 4: shmem_ctx_put##S(ctx, g_sz_bss[1], src, nel, right); break;                \
            case 5: shmem_ctx_put##S##_nbi(ctx, g_sz_data[1], src, nel, right);                \
                shmem_ctx_quiet(ctx);                                                          \
                break;                                                                         \
            case 6: shmem_ctx_put##S##_signal(ctx, h + 2 * SZ_BYTES, src, nel, &g_sig[2], 13,  \
                                              SHMEM_SIGNAL_SET, right);                        \
                break;                                                                         \
            case 7: shmem_ctx_put##S##_signal_nbi(ctx, g_sz_bss[2], src, nel, &g_sig[3], 15,   \
                                                  SHMEM_SIGNAL_ADD, right);                    \
                shmem_ctx_quiet(ctx);                                                          \
                break;                                                                         \
            }                                                                                  \
        }                                                                                      \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        for (j = 0; j < SZ_BYTES; j++) {                                                       \
            CHECK_EQ(byte_val(left, j, 0), h[j], "put%s byte %d", sn, j);                      \
            CHECK_EQ(byte_val(left, j, 1), g_sz_bss[0][j], "put%s_nbi .bss byte %d", sn, j);   \
            CHECK_EQ(byte_val(left, j, 2), g_sz_data[0][j], "put%s_signal .data byte %d", sn, j); \
            CHECK_EQ(byte_val(left, j, 3), h[SZ_BYTES + j], "put%s_signal_nbi byte %d", sn, j); \
            CHECK_EQ(byte_val(left, j, 4), g_sz_bss[1][j], "ctx_put%s .bss byte %d", sn, j);   \
            CHECK_EQ(byte_val(left, j, 5), g_sz_data[1][j], "ctx_put%s_nbi .data byte %d", sn, j); \
            CHECK_EQ(byte_val(left, j, 6), h[2 * SZ_BYTES + j], "ctx_put%s_signal byte %d", sn, j); \
            CHECK_EQ(byte_val(left, j, 7), g_sz_bss[2][j], "ctx_put%s_signal_nbi byte %d", sn, j); \
        }                                                                                      \
        CHECK_EQ(9, g_sig[0], "put%s_signal ADD", sn);                                         \
        CHECK_EQ(11, g_sig[1], "put%s_signal_nbi SET", sn);                                    \
        CHECK_EQ(13, g_sig[2], "ctx_put%s_signal SET", sn);                                    \
        CHECK_EQ(15, g_sig[3], "ctx_put%s_signal_nbi ADD", sn);                                \
        /* gets: sources in heap region 3 and .data region 3 */                                \
        for (j = 0; j < SZ_BYTES; j++) {                                                       \
            h[3 * SZ_BYTES + j] = byte_val(me, j, 30);                                         \
            g_sz_data[3][j] = byte_val(me, j, 31);                                             \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        for (c = 0; c < 4; c++) {                                                              \
            memset(loc, 0, sizeof loc);                                                        \
            switch (c) {                                                                       \
            case 0: shmem_get##S(loc, h + 3 * SZ_BYTES, nel, right); break;                    \
            case 1: shmem_get##S##_nbi(loc, g_sz_data[3], nel, right); shmem_quiet(); break;   \
            case 2: shmem_ctx_get##S(ctx, loc, g_sz_data[3], nel, right); break;               \
            case 3: shmem_ctx_get##S##_nbi(ctx, loc, h + 3 * SZ_BYTES, nel, right);            \
                shmem_ctx_quiet(ctx);                                                          \
                break;                                                                         \
            }                                                                                  \
            for (j = 0; j < SZ_BYTES; j++)                                                     \
                CHECK_EQ(byte_val(right, j, c == 1 || c == 2 ? 31 : 30), loc[j],               \
                         "%sget%s form %d byte %d", c >= 2 ? "ctx_" : "", sn, c, j);           \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
        shmem_free(h);                                                                         \
    }
OX_SIZED_SIZES(SIZED_TEST)

/* iput/iget exist for the bit sizes only */
#define STRIDED_TEST(S, B)                                                                     \
    static void strided_##S(void) {                                                            \
        const char *sn = #S;                                                                   \
        unsigned char src[SZ_BYTES], loc[SZ_BYTES];                                            \
        int nel = SZ_BYTES / (B) / 4, j, s;                                                    \
        memset(g_sz_bss, 0x5A, sizeof g_sz_bss);                                               \
        for (j = 0; j < SZ_BYTES; j++) g_sz_data[3][j] = byte_val(me, j, 40);                  \
        shmem_barrier_all();                                                                   \
        for (j = 0; j < SZ_BYTES; j++) src[j] = byte_val(me, j, 41);                           \
        shmem_iput##S(g_sz_bss[0], src, 3, 2, nel, right);                                     \
        for (j = 0; j < SZ_BYTES; j++) src[j] = byte_val(me, j, 42);                           \
        shmem_ctx_iput##S(ctx, g_sz_bss[1], src, 2, 3, nel, right);                            \
        shmem_ctx_quiet(ctx);                                                                  \
        shmem_barrier_all();                                                                   \
        for (j = 0; j < SZ_BYTES; j++) {                                                       \
            s = strided_src_byte(j, B, 3, 2, nel);                                             \
            CHECK_EQ(s < 0 ? 0x5A : byte_val(left, s, 41), g_sz_bss[0][j],                     \
                     "iput%s(dst 3, sst 2) byte %d", sn, j);                                   \
            s = strided_src_byte(j, B, 2, 3, nel);                                             \
            CHECK_EQ(s < 0 ? 0x5A : byte_val(left, s, 42), g_sz_bss[1][j],                     \
                     "ctx_iput%s(dst 2, sst 3) byte %d", sn, j);                               \
        }                                                                                      \
        memset(loc, 0x5A, sizeof loc);                                                         \
        shmem_iget##S(loc, g_sz_data[3], 2, 3, nel, right);                                    \
        for (j = 0; j < SZ_BYTES; j++) {                                                       \
            s = strided_src_byte(j, B, 2, 3, nel);                                             \
            CHECK_EQ(s < 0 ? 0x5A : byte_val(right, s, 40), loc[j], "iget%s(dst 2, sst 3) byte %d", \
                     sn, j);                                                                   \
        }                                                                                      \
        memset(loc, 0x5A, sizeof loc);                                                         \
        shmem_ctx_iget##S(ctx, loc, g_sz_data[3], 1, 3, nel, right);                           \
        for (j = 0; j < SZ_BYTES; j++) {                                                       \
            s = strided_src_byte(j, B, 1, 3, nel);                                             \
            CHECK_EQ(s < 0 ? 0x5A : byte_val(right, s, 40), loc[j],                            \
                     "ctx_iget%s(dst 1, sst 3) byte %d", sn, j);                               \
        }                                                                                      \
        shmem_barrier_all();                                                                   \
    }
OX_BITS_SIZES(STRIDED_TEST)

/* ---- bulk: several MiB through every path, heap <-> .bss ---- */
#define BULK (3 << 20)
static unsigned char g_bulk_bss[BULK + 64] __attribute__((aligned(64)));

static void bulk(void) {
    unsigned char *h = (unsigned char *)shmem_malloc(BULK + 64);
    unsigned char *loc = (unsigned char *)malloc(BULK + 64);
    size_t j, bad = 0, first = 0;
    for (j = 0; j < BULK; j++) h[j] = (unsigned char)(j * 7 + me * 13 + (j >> 12));
    shmem_barrier_all();
    /* an odd length at odd offsets: no path may assume alignment */
    shmem_putmem(g_bulk_bss + 3, h + 1, BULK - 5, right);
    shmem_barrier_all();
    for (j = 0; j < BULK - 5; j++) {
        unsigned char e = (unsigned char)((j + 1) * 7 + left * 13 + ((j + 1) >> 12));
        if (g_bulk_bss[j + 3] != e && bad++ == 0) first = j;
    }
    CHECK_EQ(0, bad, "putmem of %d bytes: mismatched bytes (first at %zu)", BULK - 5, first);
    shmem_getmem(loc, h, BULK, right);
    bad = 0;
    for (j = 0; j < BULK; j++) {
        unsigned char e = (unsigned char)(j * 7 + right * 13 + (j >> 12));
        if (loc[j] != e && bad++ == 0) first = j;
    }
    CHECK_EQ(0, bad, "getmem of %d bytes: mismatched bytes (first at %zu)", BULK, first);
    shmem_barrier_all();
    shmem_double_put_nbi((double *)(void *)h, (const double *)(const void *)g_bulk_bss, BULK / 8 - 1, right);
    shmem_quiet();
    shmem_barrier_all();
    /* what arrived is what the left neighbour had in its .bss: the bytes it got from its left */
    {
        int ll = (left + npes - 1) % npes;
        bad = 0;
        for (j = 3; j < (BULK / 8 - 1) * 8; j++) {
            unsigned char e = (unsigned char)((j - 2) * 7 + ll * 13 + ((j - 2) >> 12));
            if (j - 3 >= BULK - 5) break;
            if (h[j] != e && bad++ == 0) first = j;
        }
        CHECK_EQ(0, bad, "double_put_nbi of %d doubles: mismatched bytes (first at %zu)",
                 BULK / 8 - 1, first);
    }
    shmem_barrier_all();
    free(loc);
    shmem_free(h);
}

/* ---- accessibility ---- */
static int g_acc = 5;
static void access_checks(void) {
    int on_stack = 0;
    int *h = (int *)shmem_malloc(sizeof(int));
    *h = 100 + me;
    shmem_barrier_all();
    CHECK_EQ(1, shmem_pe_accessible(right), "shmem_pe_accessible(%d)", right);
    CHECK_EQ(0, shmem_pe_accessible(npes), "shmem_pe_accessible(n_pes)");
    CHECK_EQ(0, shmem_pe_accessible(-1), "shmem_pe_accessible(-1)");
    CHECK_EQ(1, shmem_addr_accessible(h, right), "shmem_addr_accessible(heap)");
    CHECK_EQ(1, shmem_addr_accessible(&g_acc, right), "shmem_addr_accessible(.data)");
    CHECK_EQ(1, shmem_addr_accessible(g_sig, right), "shmem_addr_accessible(.bss)");
    CHECK_EQ(0, shmem_addr_accessible(&on_stack, right), "shmem_addr_accessible(stack)");
    void *m = malloc(64);
    CHECK_EQ(0, shmem_addr_accessible(m, right), "shmem_addr_accessible(malloc)");
    free(m);
    CHECK(shmem_ptr(&on_stack, right) == NULL, "shmem_ptr(stack) is NULL");
    CHECK(shmem_ptr(h, me) == (void *)h, "shmem_ptr(heap, me) is the address itself");
    /* every PE of these tests is on one node: where shmem_ptr gives a pointer, loads through
     * it see the peer's memory */
    int *rp = (int *)shmem_ptr(h, right);
    if (rp != NULL) CHECK_EQ(100 + right, *rp, "load through shmem_ptr(heap, %d)", right);
    int *rs = (int *)shmem_ptr(&g_acc, right);
    if (rs != NULL) CHECK_EQ(5, *rs, "load through shmem_ptr(.data, %d)", right);
    shmem_barrier_all();
    shmem_free(h);
}

int main(void) {
    ox_init("rma");
    me = ox_me;
    npes = ox_npes;
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    CHECK_EQ(0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx), "shmem_ctx_create");

#define RUN(N, T) rma_##N();
    OX_RMA_TYPES(RUN)
#define RUN_SIZED(S, B) sized_##S();
    OX_SIZED_SIZES(RUN_SIZED)
#define RUN_STRIDED(S, B) strided_##S();
    OX_BITS_SIZES(RUN_STRIDED)
    bulk();
    access_checks();

    shmem_ctx_destroy(ctx);
    return ox_finish();
}
