/*
 * C++: the overloads of shmem.h, as C++ OpenSHMEM code calls them — shmem_put(dest, src, n, pe)
 * on typed pointers, shmem_p/shmem_g, the ctx overloads, the AMO, wait/test and collective
 * overloads — driven from templates over every distinct C type, so that each overload is
 * resolved and each moves the right number of bytes.
 */
#include <cstdint>
#include <cstring>
#include <vector>

#include "oxtest.h"

static int me, npes, rightpe, leftpe;
static shmem_ctx_t ctx;

template <typename T> static T val(int p, int i, int k) { return OX_VAL(T, p, i, k); }

template <typename T> static void rma(const char *tn) {
    T *d = static_cast<T *>(shmem_calloc(64, sizeof(T)));
    T src[16], loc[16];
    for (int i = 0; i < 16; i++) src[i] = val<T>(me, i, 1);
    shmem_barrier_all();
    shmem_put(d, src, 8, rightpe);
    shmem_put(ctx, d + 8, src + 8, 8, rightpe);
    shmem_p(d + 16, val<T>(me, 0, 2), rightpe);
    shmem_p(ctx, d + 17, val<T>(me, 1, 2), rightpe);
    shmem_iput(d + 24, src, 2, 1, 4, rightpe);
    shmem_put_nbi(d + 32, src, 16, rightpe);
    shmem_put_nbi(ctx, d + 48, src, 4, rightpe);
    shmem_quiet();
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    for (int i = 0; i < 8; i++) {
        CHECK_EQ(val<T>(leftpe, i, 1), d[i], "shmem_put(%s *) [%d]", tn, i);
        CHECK_EQ(val<T>(leftpe, i + 8, 1), d[8 + i], "shmem_put(ctx, %s *) [%d]", tn, i);
        CHECK_EQ(i % 2 ? T(0) : val<T>(leftpe, i / 2, 1), d[24 + i], "shmem_iput(%s *) [%d]", tn, i);
    }
    for (int i = 0; i < 16; i++) CHECK_EQ(val<T>(leftpe, i, 1), d[32 + i], "shmem_put_nbi(%s *) [%d]", tn, i);
    CHECK_EQ(val<T>(leftpe, 3, 1), d[51], "shmem_put_nbi(ctx, %s *)", tn);
    CHECK_EQ(val<T>(leftpe, 0, 2), d[16], "shmem_p(%s *)", tn);
    CHECK_EQ(val<T>(leftpe, 1, 2), d[17], "shmem_p(ctx, %s *)", tn);
    CHECK_EQ(val<T>(me, 0, 2), shmem_g(d + 16, rightpe), "shmem_g(%s *)", tn);
    CHECK_EQ(val<T>(me, 1, 2), shmem_g(ctx, d + 17, rightpe), "shmem_g(ctx, %s *)", tn);
    shmem_get(loc, d, 8, rightpe);
    for (int i = 0; i < 8; i++) CHECK_EQ(val<T>(me, i, 1), loc[i], "shmem_get(%s *) [%d]", tn, i);
    shmem_get(ctx, loc, d + 32, 16, rightpe);
    for (int i = 0; i < 16; i++) CHECK_EQ(val<T>(me, i, 1), loc[i], "shmem_get(ctx, %s *) [%d]", tn, i);
    shmem_iget(loc, d + 32, 1, 3, 5, rightpe);
    for (int i = 0; i < 5; i++) CHECK_EQ(val<T>(me, 3 * i, 1), loc[i], "shmem_iget(%s *) [%d]", tn, i);
    shmem_get_nbi(ctx, loc, d, 4, rightpe);
    shmem_ctx_quiet(ctx);
    CHECK_EQ(val<T>(me, 3, 1), loc[3], "shmem_get_nbi(ctx, %s *)", tn);
    shmem_barrier_all();
    // put with signal
    static uint64_t sig;
    sig = 0;
    shmem_barrier_all();
    shmem_put_signal(d, src + 4, 4, &sig, 1, SHMEM_SIGNAL_ADD, rightpe);
    shmem_put_signal_nbi(ctx, d + 4, src + 4, 4, &sig, 1, SHMEM_SIGNAL_ADD, rightpe);
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 2);
    shmem_ctx_quiet(ctx);
    CHECK_EQ(val<T>(leftpe, 7, 1), d[3], "shmem_put_signal(%s *)", tn);
    CHECK_EQ(val<T>(leftpe, 7, 1), d[7], "shmem_put_signal_nbi(ctx, %s *)", tn);
    // collectives and reductions
    shmem_barrier_all();
    T *cs = static_cast<T *>(shmem_malloc(4 * npes * sizeof(T)));
    T *cd = static_cast<T *>(shmem_malloc(4 * npes * sizeof(T)));
    for (int i = 0; i < 4 * npes; i++) cs[i] = val<T>(me, i, 3);
    CHECK_EQ(0, shmem_broadcast(SHMEM_TEAM_WORLD, cd, cs, 2, 0), "shmem_broadcast(%s *)", tn);
    CHECK_EQ(val<T>(0, 1, 3), cd[1], "shmem_broadcast(%s *)", tn);
    CHECK_EQ(0, shmem_fcollect(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_fcollect(%s *)", tn);
    for (int j = 0; j < npes; j++) CHECK_EQ(val<T>(j, 0, 3), cd[j], "shmem_fcollect(%s *) from %d", tn, j);
    CHECK_EQ(0, shmem_collect(SHMEM_TEAM_WORLD, cd, cs, 2), "shmem_collect(%s *)", tn);
    for (int j = 0; j < npes; j++) CHECK_EQ(val<T>(j, 1, 3), cd[2 * j + 1], "shmem_collect(%s *) from %d", tn, j);
    CHECK_EQ(0, shmem_alltoall(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_alltoall(%s *)", tn);
    for (int j = 0; j < npes; j++) CHECK_EQ(val<T>(j, me, 3), cd[j], "shmem_alltoall(%s *) from %d", tn, j);
    CHECK_EQ(0, shmem_alltoalls(SHMEM_TEAM_WORLD, cd, cs, 2, 1, 1), "shmem_alltoalls(%s *)", tn);
    for (int j = 0; j < npes; j++) CHECK_EQ(val<T>(j, me, 3), cd[2 * j], "shmem_alltoalls(%s *) from %d", tn, j);
    cs[0] = T(me + 1);
    CHECK_EQ(0, shmem_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_sum_reduce(%s *)", tn);
    CHECK_EQ(npes * (npes + 1) / 2, cd[0], "shmem_sum_reduce(%s *)", tn);
    CHECK_EQ(0, shmem_max_reduce(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_max_reduce(%s *)", tn);
    CHECK_EQ(npes, cd[0], "shmem_max_reduce(%s *)", tn);
    CHECK_EQ(0, shmem_min_reduce(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_min_reduce(%s *)", tn);
    CHECK_EQ(1, cd[0], "shmem_min_reduce(%s *)", tn);
    cs[0] = T(me % 2 + 1);
    CHECK_EQ(0, shmem_prod_reduce(SHMEM_TEAM_WORLD, cd, cs, 1), "shmem_prod_reduce(%s *)", tn);
    CHECK_EQ(1 << (npes / 2), cd[0], "shmem_prod_reduce(%s *)", tn);
    shmem_barrier_all();
    shmem_free(cd);
    shmem_free(cs);
    shmem_free(d);
}

template <typename T> static void bitred(const char *tn) {
    T *s = static_cast<T *>(shmem_malloc(sizeof(T))), *d = static_cast<T *>(shmem_malloc(sizeof(T)));
    *s = T(1 << me);
    CHECK_EQ(0, shmem_or_reduce(SHMEM_TEAM_WORLD, d, s, 1), "shmem_or_reduce(%s *)", tn);
    CHECK_EQ((1 << npes) - 1, *d, "shmem_or_reduce(%s *)", tn);
    CHECK_EQ(0, shmem_xor_reduce(SHMEM_TEAM_WORLD, d, s, 1), "shmem_xor_reduce(%s *)", tn);
    CHECK_EQ((1 << npes) - 1, *d, "shmem_xor_reduce(%s *)", tn);
    *s = T(0x7F & ~(1 << me));
    CHECK_EQ(0, shmem_and_reduce(SHMEM_TEAM_WORLD, d, s, 1), "shmem_and_reduce(%s *)", tn);
    CHECK_EQ(0x7F & ~((1 << npes) - 1), *d, "shmem_and_reduce(%s *)", tn);
    shmem_barrier_all();
    shmem_free(d);
    shmem_free(s);
}

template <typename T> static void amo(const char *tn) {
    T *a = static_cast<T *>(shmem_calloc(8, sizeof(T)));
    T f, prev;
    shmem_barrier_all();
    for (int k = 0; k < 20; k++) {
        (void)shmem_atomic_fetch_inc(a, 0);
        shmem_atomic_inc(ctx, a + 1, 0);
        (void)shmem_atomic_fetch_add(ctx, a + 2, T(3), 0);
        shmem_atomic_add(a + 3, T(me + 1), 0);
        shmem_atomic_fetch_inc_nbi(&f, a + 4, 0);
        shmem_atomic_fetch_add_nbi(ctx, &f, a + 4, T(2), 0);
        prev = shmem_atomic_fetch(a + 5, 0);
        while ((f = shmem_atomic_compare_swap(ctx, a + 5, prev, T(prev + 1), 0)) != prev) prev = f;
        (void)shmem_finc(a + 6, 0);
        (void)shmem_fadd(a + 6, T(2), 0);
        shmem_inc(a + 6, 0);
        shmem_add(a + 6, T(4), 0);
        prev = shmem_fetch(a + 7, 0);
        while ((f = shmem_cswap(a + 7, prev, T(prev + 1), 0)) != prev) prev = f;
    }
    shmem_quiet();
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (me == 0) {
        CHECK_EQ(20 * npes, a[0], "shmem_atomic_fetch_inc(%s *)", tn);
        CHECK_EQ(20 * npes, a[1], "shmem_atomic_inc(ctx, %s *)", tn);
        CHECK_EQ(60 * npes, a[2], "shmem_atomic_fetch_add(ctx, %s *)", tn);
        CHECK_EQ(20 * npes * (npes + 1) / 2, a[3], "shmem_atomic_add(%s *)", tn);
        CHECK_EQ(60 * npes, a[4], "shmem_atomic_fetch_inc_nbi + fetch_add_nbi(%s *)", tn);
        CHECK_EQ(20 * npes, a[5], "shmem_atomic_compare_swap(ctx, %s *)", tn);
        CHECK_EQ(160 * npes, a[6], "shmem_finc/fadd/inc/add(%s *)", tn);
        CHECK_EQ(20 * npes, a[7], "shmem_cswap(%s *)", tn);
    }
    shmem_barrier_all();
    shmem_atomic_set(a, T(me + 5), rightpe);
    shmem_set(a + 1, T(me + 6), rightpe);
    shmem_barrier_all();
    CHECK_EQ(leftpe + 5, a[0], "shmem_atomic_set(%s *)", tn);
    CHECK_EQ(leftpe + 6, a[1], "shmem_set(%s *)", tn);
    shmem_barrier_all();
    CHECK_EQ(me + 5, shmem_atomic_swap(ctx, a, T(1), rightpe), "shmem_atomic_swap(ctx, %s *)", tn);
    CHECK_EQ(me + 6, shmem_swap(a + 1, T(2), rightpe), "shmem_swap(%s *)", tn);
    shmem_atomic_swap_nbi(&f, a, T(3), rightpe);
    shmem_quiet();
    CHECK_EQ(1, f, "shmem_atomic_swap_nbi(%s *)", tn);
    shmem_atomic_compare_swap_nbi(&f, a, T(3), T(4), rightpe);
    shmem_quiet();
    CHECK_EQ(3, f, "shmem_atomic_compare_swap_nbi(%s *)", tn);
    shmem_atomic_fetch_nbi(ctx, &f, a, rightpe);
    shmem_ctx_quiet(ctx);
    CHECK_EQ(4, f, "shmem_atomic_fetch_nbi(ctx, %s *)", tn);
    shmem_barrier_all();
    shmem_free(a);
}

template <typename T> static void bits(const char *tn) {
    T *b = static_cast<T *>(shmem_malloc(3 * sizeof(T)));
    T f, bit = T(T(1) << me);
    b[0] = 0;
    b[1] = T(~T(0));
    b[2] = 0;
    shmem_barrier_all();
    f = shmem_atomic_fetch_or(b, bit, 0);
    CHECK_EQ(0, f & bit, "shmem_atomic_fetch_or(%s *)", tn);
    shmem_atomic_and(ctx, b + 1, T(~bit), 0);
    shmem_atomic_fetch_xor_nbi(&f, b + 2, bit, 0);
    shmem_atomic_fetch_and_nbi(ctx, &f, b + 1, T(~T(0)), 0);
    shmem_atomic_fetch_or_nbi(&f, b, T(0), 0);
    (void)shmem_atomic_fetch_and(b + 1, T(~T(0)), 0);
    shmem_atomic_or(b + 2, T(0), 0);
    shmem_atomic_xor(ctx, b, T(0), 0);
    (void)shmem_atomic_fetch_xor(ctx, b, T(0), 0);
    shmem_quiet();
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (me == 0) {
        T all = T((T(1) << npes) - 1);
        CHECK_EQ(all, b[0], "or overloads (%s)", tn);
        CHECK_EQ(T(~all), b[1], "and overloads (%s)", tn);
        CHECK_EQ(all, b[2], "xor overloads (%s)", tn);
    }
    shmem_barrier_all();
    shmem_free(b);
}

template <typename T> static void waits(const char *tn) {
    T *w = static_cast<T *>(shmem_calloc(64, sizeof(T)));
    std::vector<T> cmpv(npes);
    std::vector<size_t> idx(npes);
    std::vector<int> status(npes, 0);
    status[me] = 1;
    shmem_barrier_all();
    shmem_p(w + me, T(me + 1), rightpe);
    shmem_wait_until(w + leftpe, SHMEM_CMP_EQ, T(leftpe + 1));
    CHECK_EQ(1, shmem_test(w + leftpe, SHMEM_CMP_GE, T(1)), "shmem_test(%s *)", tn);
    CHECK_EQ(leftpe, shmem_wait_until_any(w, npes, nullptr, SHMEM_CMP_NE, T(0)), "shmem_wait_until_any(%s *)", tn);
    CHECK_EQ(leftpe, shmem_test_any(w, npes, nullptr, SHMEM_CMP_NE, T(0)), "shmem_test_any(%s *)", tn);
    CHECK_EQ(1, shmem_wait_until_some(w, npes, idx.data(), nullptr, SHMEM_CMP_NE, T(0)), "shmem_wait_until_some(%s *)", tn);
    CHECK_EQ(1, shmem_test_some(w, npes, idx.data(), nullptr, SHMEM_CMP_NE, T(0)), "shmem_test_some(%s *)", tn);
    shmem_barrier_all();
    for (int j = 0; j < npes; j++)
        if (j != me) shmem_p(w + 32 + me, T(me + 2), j);
    for (int j = 0; j < npes; j++) cmpv[j] = T(j + 2);
    shmem_wait_until_all(w + 32, npes, status.data(), SHMEM_CMP_GE, T(2));
    CHECK_EQ(1, shmem_test_all(w + 32, npes, status.data(), SHMEM_CMP_GE, T(2)), "shmem_test_all(%s *)", tn);
    shmem_wait_until_all_vector(w + 32, npes, status.data(), SHMEM_CMP_EQ, cmpv.data());
    CHECK_EQ(1, shmem_test_all_vector(w + 32, npes, status.data(), SHMEM_CMP_EQ, cmpv.data()), "shmem_test_all_vector(%s *)", tn);
    CHECK(shmem_wait_until_any_vector(w + 32, npes, status.data(), SHMEM_CMP_EQ, cmpv.data()) != size_t(me), "shmem_wait_until_any_vector(%s *)", tn);
    CHECK(shmem_test_any_vector(w + 32, npes, status.data(), SHMEM_CMP_EQ, cmpv.data()) != size_t(me), "shmem_test_any_vector(%s *)", tn);
    CHECK_EQ(npes - 1, shmem_wait_until_some_vector(w + 32, npes, idx.data(), status.data(), SHMEM_CMP_EQ, cmpv.data()), "shmem_wait_until_some_vector(%s *)", tn);
    CHECK_EQ(npes - 1, shmem_test_some_vector(w + 32, npes, idx.data(), status.data(), SHMEM_CMP_EQ, cmpv.data()), "shmem_test_some_vector(%s *)", tn);
    shmem_barrier_all();
    shmem_free(w);
}

int main() {
    ox_init("cxx_overloads");
    me = ox_me;
    npes = ox_npes;
    rightpe = (me + 1) % npes;
    leftpe = (me + npes - 1) % npes;
    CHECK_EQ(0, shmem_ctx_create(0, &ctx), "shmem_ctx_create");
    rma<float>("float");
    rma<double>("double");
    rma<long double>("long double");
    rma<char>("char");
    rma<signed char>("signed char");
    rma<short>("short");
    rma<int>("int");
    rma<long>("long");
    rma<long long>("long long");
    rma<unsigned char>("unsigned char");
    rma<unsigned short>("unsigned short");
    rma<unsigned int>("unsigned int");
    rma<unsigned long>("unsigned long");
    rma<unsigned long long>("unsigned long long");
    bitred<unsigned char>("unsigned char");
    bitred<unsigned short>("unsigned short");
    bitred<unsigned int>("unsigned int");
    bitred<unsigned long>("unsigned long");
    bitred<unsigned long long>("unsigned long long");
    bitred<short>("short");
    bitred<int>("int");
    bitred<long>("long");
    bitred<long long>("long long");
    amo<int>("int");
    amo<long>("long");
    amo<long long>("long long");
    amo<unsigned int>("unsigned int");
    amo<unsigned long>("unsigned long");
    amo<unsigned long long>("unsigned long long");
    bits<unsigned int>("unsigned int");
    bits<unsigned long>("unsigned long");
    bits<unsigned long long>("unsigned long long");
    bits<int32_t>("int32_t");
    bits<int64_t>("int64_t");
    waits<short>("short");
    waits<int>("int");
    waits<long>("long");
    waits<long long>("long long");
    waits<unsigned short>("unsigned short");
    waits<unsigned int>("unsigned int");
    waits<unsigned long>("unsigned long");
    waits<unsigned long long>("unsigned long long");
    shmem_ctx_destroy(ctx);
    return ox_finish();
}
