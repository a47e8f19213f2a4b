// mixed.cc -- a C++17 program that mixes NVSHMEM and OpenSHMEM calls on the same memory, as
// code being ported from one API to the other does: one runtime serves both.
//
// - nvshmem_malloc'd memory is the target of shmem_TYPE_put/p/atomics and the source of
//   shmem gets; shmem_malloc'd memory the same for the nvshmem_ routines;
// - a barrier of either API completes the other's puts; shmem_ptr and nvshmem_ptr agree;
// - reductions on SHMEM_TEAM_WORLD and NVSHMEM_TEAM_WORLD (and on teams split the same way by
//   both APIs) give the same, exact results;
// - signals: nvshmemx_signal_op waited for with shmem_signal_wait_until (OpenSHMEM's
//   SHMEM_CMP_GE), and shmem_putmem_signal waited for with nvshmemx_signal_wait_until_on_stream
//   (NVSHMEM's NVSHMEM_CMP_GE, a different number);
// - RAII: the session, the symmetric buffers and the teams are objects whose destructors free
//   them in the right order (buffers and teams before nvshmem_finalize).
//
// Prints "PE n: <what>: expected X got Y" on stderr for each mismatch, "PE n: OK" when none.
#include <shmem.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

class Checker {
  public:
    int me = -1;
    long failures = 0, checks = 0;

    template <class T, class U>
    void eq(const U &expected_in, const T &got, const std::string &what) {
        T expected = static_cast<T>(expected_in);
        ++checks;
        if (!(got == expected)) {
            if (++failures > 40) return;
            std::ostringstream os;
            os << "PE " << me << ": " << what << ": expected " << show(expected) << " got " << show(got);
            std::fprintf(stderr, "%s\n", os.str().c_str());
            std::fflush(stderr);
        }
    }

    void ok(bool cond, const std::string &what) {
        ++checks;
        if (!cond && ++failures <= 40) {
            std::fprintf(stderr, "PE %d: %s: expected true got false\n", me, what.c_str());
            std::fflush(stderr);
        }
    }

  private:
    template <class T>
    static std::string show(const T &v) {
        std::ostringstream os;
        if constexpr (std::is_pointer_v<T>) {
            os << static_cast<const void *>(v);
        } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
            os << static_cast<int>(v);
        } else {
            os.precision(17);
            os << v;
        }
        return os.str();
    }
};

Checker check;

std::string str(const char *a, long i) { return std::string(a) + " [" + std::to_string(i) + "]"; }

// The library's life: nvshmem_init here, nvshmem_finalize when the object dies (after every
// object declared after it).
class Session {
  public:
    Session() {
        nvshmem_init();
        check.me = nvshmem_my_pe();
    }
    ~Session() { nvshmem_finalize(); }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;
    int me() const { return nvshmem_my_pe(); }
    int npes() const { return nvshmem_n_pes(); }
};

// Symmetric memory from either API's allocator; freed by the same one.
enum class Api { Nv, Shmem };

template <class T>
class Sym {
  public:
    Sym(Api api, std::size_t n) : api_(api), n_(n) {
        void *p = api == Api::Nv ? nvshmem_malloc(n * sizeof(T)) : shmem_malloc(n * sizeof(T));
        if (p == nullptr) throw std::runtime_error("symmetric allocation failed");
        p_ = static_cast<T *>(p);
        for (std::size_t i = 0; i < n; ++i) p_[i] = T{};
    }
    ~Sym() {
        if (api_ == Api::Nv)
            nvshmem_free(p_);
        else
            shmem_free(p_);
    }
    Sym(const Sym &) = delete;
    Sym &operator=(const Sym &) = delete;
    T *get() const { return p_; }
    T &operator[](std::size_t i) const { return p_[i]; }
    std::size_t size() const { return n_; }

  private:
    Api api_;
    std::size_t n_;
    T *p_ = nullptr;
};

class NvTeam {
  public:
    NvTeam(int start, int stride, int size) {
        int rc = nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, start, stride, size, nullptr, 0, &t_);
        check.eq(0, rc, "nvshmem_team_split_strided return");
    }
    ~NvTeam() {
        if (t_ != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(t_);
    }
    NvTeam(const NvTeam &) = delete;
    NvTeam &operator=(const NvTeam &) = delete;
    nvshmem_team_t get() const { return t_; }

  private:
    nvshmem_team_t t_ = NVSHMEM_TEAM_INVALID;
};

class ShmemTeam {
  public:
    ShmemTeam(int start, int stride, int size) {
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, nullptr, 0, &t_);
        check.eq(0, rc, "shmem_team_split_strided return");
    }
    ~ShmemTeam() {
        if (t_ != SHMEM_TEAM_INVALID) shmem_team_destroy(t_);
    }
    ShmemTeam(const ShmemTeam &) = delete;
    ShmemTeam &operator=(const ShmemTeam &) = delete;
    shmem_team_t get() const { return t_; }

  private:
    shmem_team_t t_ = SHMEM_TEAM_INVALID;
};

// Per type: the routines of both APIs.
template <class T>
struct Ops;
#define OPS(T, NAME)                                                                           \
    template <>                                                                                \
    struct Ops<T> {                                                                            \
        static constexpr const char *name = #NAME;                                             \
        static void nv_put(T *d, const T *s, std::size_t n, int pe) { nvshmem_##NAME##_put(d, s, n, pe); } \
        static void sh_put(T *d, const T *s, std::size_t n, int pe) { shmem_##NAME##_put(d, s, n, pe); } \
        static void nv_get(T *d, const T *s, std::size_t n, int pe) { nvshmem_##NAME##_get(d, s, n, pe); } \
        static void sh_get(T *d, const T *s, std::size_t n, int pe) { shmem_##NAME##_get(d, s, n, pe); } \
        static T nv_g(const T *s, int pe) { return nvshmem_##NAME##_g(s, pe); }                \
        static T sh_g(const T *s, int pe) { return shmem_##NAME##_g(s, pe); }                  \
        static void nv_p(T *d, T v, int pe) { nvshmem_##NAME##_p(d, v, pe); }                  \
        static void sh_p(T *d, T v, int pe) { shmem_##NAME##_p(d, v, pe); }                    \
        static int nv_sum(nvshmem_team_t t, T *d, const T *s, std::size_t n) {                 \
            return nvshmem_##NAME##_sum_reduce(t, d, s, n);                                    \
        }                                                                                      \
        static int sh_sum(shmem_team_t t, T *d, const T *s, std::size_t n) {                   \
            return shmem_##NAME##_sum_reduce(t, d, s, n);                                      \
        }                                                                                      \
        static int nv_max(nvshmem_team_t t, T *d, const T *s, std::size_t n) {                 \
            return nvshmem_##NAME##_max_reduce(t, d, s, n);                                    \
        }                                                                                      \
        static int sh_max(shmem_team_t t, T *d, const T *s, std::size_t n) {                   \
            return shmem_##NAME##_max_reduce(t, d, s, n);                                      \
        }                                                                                      \
    };
OPS(int, int)
OPS(long, long)
OPS(double, double)
OPS(std::uint64_t, uint64)
OPS(short, short)
#undef OPS

template <class T>
T value(int pe, long i, int salt) {
    long v = (pe + 1) * 1000 + i * 7 + salt;
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v) + static_cast<T>(0.25);
    return static_cast<T>(v % 30000);
}

// RMA of each API into the other's memory, both directions, with either API's barrier.
template <class T>
void cross_rma(int me, int npes) {
    using O = Ops<T>;
    const std::string tn = O::name;
    const std::size_t n = 50;
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    Sym<T> nvbuf(Api::Nv, 2 * n), shbuf(Api::Shmem, 2 * n);
    std::vector<T> src(n), tmp(n);
    for (std::size_t i = 0; i < n; ++i) src[i] = value<T>(me, static_cast<long>(i), 1);
    shmem_barrier_all();

    O::sh_put(nvbuf.get(), src.data(), n, right);   // OpenSHMEM put into nvshmem_malloc memory
    O::nv_put(shbuf.get(), src.data(), n, right);   // NVSHMEM put into shmem_malloc memory
    O::sh_p(nvbuf.get() + n, value<T>(me, 0, 2), right);
    O::nv_p(shbuf.get() + n, value<T>(me, 0, 3), right);
    nvshmem_barrier_all();  // completes the shmem_ puts too
    for (std::size_t i = 0; i < n; ++i) {
        check.eq(value<T>(left, static_cast<long>(i), 1), nvbuf[i], str(("shmem_" + tn + "_put into nvshmem_malloc memory").c_str(), static_cast<long>(i)));
        check.eq(value<T>(left, static_cast<long>(i), 1), shbuf[i], str(("nvshmem_" + tn + "_put into shmem_malloc memory").c_str(), static_cast<long>(i)));
    }
    check.eq(value<T>(left, 0, 2), nvbuf[n], "shmem_" + tn + "_p into nvshmem_malloc memory");
    check.eq(value<T>(left, 0, 3), shbuf[n], "nvshmem_" + tn + "_p into shmem_malloc memory");
    shmem_barrier_all();

    // gets across: nvshmem_get from shmem memory, shmem_get from nvshmem memory
    O::nv_get(tmp.data(), shbuf.get(), n, right);
    for (std::size_t i = 0; i < n; ++i)
        check.eq(value<T>(me, static_cast<long>(i), 1), tmp[i], str(("nvshmem_" + tn + "_get of shmem_malloc memory").c_str(), static_cast<long>(i)));
    O::sh_get(tmp.data(), nvbuf.get(), n, left);
    for (std::size_t i = 0; i < n; ++i)
        check.eq(value<T>((left + npes - 1) % npes, static_cast<long>(i), 1), tmp[i],
                 str(("shmem_" + tn + "_get of nvshmem_malloc memory").c_str(), static_cast<long>(i)));
    check.eq(value<T>(me, 0, 3), O::sh_g(shbuf.get() + n, right), "shmem_" + tn + "_g of shmem_malloc memory");
    check.eq(value<T>(me, 0, 2), O::nv_g(nvbuf.get() + n, right), "nvshmem_" + tn + "_g of nvshmem_malloc memory");
    check.eq(value<T>(me, 0, 3), O::nv_g(shbuf.get() + n, right), "nvshmem_" + tn + "_g of shmem_malloc memory");
    check.eq(value<T>(me, 0, 2), O::sh_g(nvbuf.get() + n, right), "shmem_" + tn + "_g of nvshmem_malloc memory");
    nvshmem_barrier_all();
}

// The same reduction through both APIs, on both world teams and on teams both APIs split the
// same way: identical and exact.
template <class T>
void cross_reduce(int me, int npes) {
    using O = Ops<T>;
    const std::string tn = O::name;
    const std::size_t n = 9;
    Sym<T> src(Api::Nv, n), d1(Api::Shmem, n), d2(Api::Nv, n), d3(Api::Shmem, n);
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<T>((me + 1) * (static_cast<int>(i) + 1) % 97);
    check.eq(0, O::sh_sum(SHMEM_TEAM_WORLD, d1.get(), src.get(), n), "shmem_" + tn + "_sum_reduce(SHMEM_TEAM_WORLD) return");
    check.eq(0, O::nv_sum(NVSHMEM_TEAM_WORLD, d2.get(), src.get(), n), "nvshmem_" + tn + "_sum_reduce(NVSHMEM_TEAM_WORLD) return");
    check.eq(0, O::nv_max(NVSHMEM_TEAM_WORLD, d3.get(), src.get(), n), "nvshmem_" + tn + "_max_reduce(NVSHMEM_TEAM_WORLD) return");
    for (std::size_t i = 0; i < n; ++i) {
        T sum = 0, mx = 0;
        for (int p = 0; p < npes; ++p) {
            T v = static_cast<T>((p + 1) * (static_cast<int>(i) + 1) % 97);
            sum = static_cast<T>(sum + v);
            mx = v > mx ? v : mx;
        }
        check.eq(sum, d1[i], str(("shmem_" + tn + "_sum_reduce on SHMEM_TEAM_WORLD").c_str(), static_cast<long>(i)));
        check.eq(sum, d2[i], str(("nvshmem_" + tn + "_sum_reduce on NVSHMEM_TEAM_WORLD").c_str(), static_cast<long>(i)));
        check.eq(mx, d3[i], str(("nvshmem_" + tn + "_max_reduce on NVSHMEM_TEAM_WORLD").c_str(), static_cast<long>(i)));
    }
    shmem_barrier_all();
    check.eq(0, O::sh_max(SHMEM_TEAM_WORLD, d2.get(), src.get(), n), "shmem_" + tn + "_max_reduce return");
    for (std::size_t i = 0; i < n; ++i) check.eq(d3[i], d2[i], str(("shmem_" + tn + "_max_reduce == nvshmem_" + tn + "_max_reduce").c_str(), static_cast<long>(i)));
    nvshmem_barrier_all();

    // the odd PEs, split by each API (every PE calls both splits: they are collective)
    const int nodd = npes / 2;
    NvTeam nvodd(1, 2, nodd > 0 ? nodd : 1);
    ShmemTeam shodd(1, 2, nodd > 0 ? nodd : 1);
    const bool member = me % 2 == 1;
    check.eq(member, nvodd.get() != NVSHMEM_TEAM_INVALID, "membership of the NVSHMEM odd team");
    check.eq(member, shodd.get() != SHMEM_TEAM_INVALID, "membership of the OpenSHMEM odd team");
    if (member && nvodd.get() != NVSHMEM_TEAM_INVALID && shodd.get() != SHMEM_TEAM_INVALID) {
        check.eq(shmem_team_my_pe(shodd.get()), nvshmem_team_my_pe(nvodd.get()), "my PE in the odd teams of both APIs");
        check.eq(shmem_team_n_pes(shodd.get()), nvshmem_team_n_pes(nvodd.get()), "size of the odd teams of both APIs");
        check.eq(0, O::sh_sum(shodd.get(), d1.get(), src.get(), n), "shmem_" + tn + "_sum_reduce(odd) return");
        check.eq(0, O::nv_sum(nvodd.get(), d2.get(), src.get(), n), "nvshmem_" + tn + "_sum_reduce(odd) return");
        for (std::size_t i = 0; i < n; ++i) {
            T sum = 0;
            for (int p = 1; p < npes; p += 2) sum = static_cast<T>(sum + static_cast<T>((p + 1) * (static_cast<int>(i) + 1) % 97));
            check.eq(sum, d1[i], str(("shmem_" + tn + "_sum_reduce on the odd team").c_str(), static_cast<long>(i)));
            check.eq(sum, d2[i], str(("nvshmem_" + tn + "_sum_reduce on the odd team").c_str(), static_cast<long>(i)));
        }
    }
    nvshmem_barrier_all();
}

void identities(int me, int npes) {
    check.eq(shmem_my_pe(), me, "shmem_my_pe() == nvshmem_my_pe()");
    check.eq(shmem_n_pes(), npes, "shmem_n_pes() == nvshmem_n_pes()");
    check.eq(shmem_team_my_pe(SHMEM_TEAM_WORLD), nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD), "my PE in both world teams");
    check.eq(shmem_team_n_pes(SHMEM_TEAM_WORLD), nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD), "size of both world teams");
    check.eq(shmem_team_n_pes(SHMEM_TEAM_SHARED), nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED), "size of both shared teams");
    Sym<long> a(Api::Nv, 4), b(Api::Shmem, 4);
    for (int p = 0; p < npes; ++p) {
        check.eq(shmem_ptr(a.get(), p), nvshmem_ptr(a.get(), p), "shmem_ptr == nvshmem_ptr of nvshmem_malloc memory on PE " + std::to_string(p));
        check.eq(shmem_ptr(b.get(), p), nvshmem_ptr(b.get(), p), "shmem_ptr == nvshmem_ptr of shmem_malloc memory on PE " + std::to_string(p));
    }
    check.ok(shmem_addr_accessible(a.get(), (me + 1) % npes) == 1, "shmem_addr_accessible of nvshmem_malloc memory");
    nvshmem_barrier_all();
}

// Atomics of both APIs on one word: an exact total; fetched tickets all distinct.
void cross_atomics(int me, int npes) {
    Sym<int> w(Api::Nv, 1);
    Sym<long> tickets(Api::Shmem, static_cast<std::size_t>(npes) * 64);
    shmem_barrier_all();
    const int rounds = 32;
    std::vector<long> mine;
    for (int r = 0; r < rounds; ++r) {
        if (r % 2)
            shmem_int_atomic_add(w.get(), 1, 0);
        else
            mine.push_back(nvshmem_int_atomic_fetch_add(w.get(), 1, 0));
        mine.push_back(shmem_int_atomic_fetch_inc(w.get(), 0));
        nvshmem_int_atomic_inc(w.get(), 0);
    }
    nvshmem_long_put(tickets.get() + static_cast<std::size_t>(me) * 64, mine.data(), mine.size(), 0);
    shmem_barrier_all();
    if (me == 0) {
        const long total = static_cast<long>(npes) * rounds * 3;
        check.eq(total, static_cast<long>(w[0]), "the word after mixed shmem_ and nvshmem_ atomics");
        std::vector<char> seen(static_cast<std::size_t>(total), 0);
        for (int p = 0; p < npes; ++p)
            for (std::size_t i = 0; i < mine.size(); ++i) {
                long t = tickets[static_cast<std::size_t>(p) * 64 + i];
                bool fresh = t >= 0 && t < total && !seen[static_cast<std::size_t>(t)];
                check.ok(fresh, "fetched value " + std::to_string(t) + " of PE " + std::to_string(p) + " is unique");
                if (fresh) seen[static_cast<std::size_t>(t)] = 1;
            }
    }
    nvshmem_barrier_all();
}

// Signals across the APIs, and their different comparison constants.
void cross_signals(int me, int npes) {
    static_assert(NVSHMEM_CMP_GE != SHMEM_CMP_GE, "the two APIs number GE differently");
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    Sym<std::uint64_t> sig(Api::Shmem, 2);
    Sym<int> data(Api::Nv, 100);
    shmem_barrier_all();
    // NVSHMEM signal op, OpenSHMEM wait
    nvshmemx_signal_op(&sig[0], 5, NVSHMEM_SIGNAL_SET, right);
    nvshmemx_signal_op(&sig[0], 2, NVSHMEM_SIGNAL_ADD, right);
    std::uint64_t got = shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, 7);
    check.eq(std::uint64_t{7}, got, "shmem_signal_wait_until(SHMEM_CMP_GE 7) after nvshmemx_signal_op SET 5, ADD 2");
    // OpenSHMEM put with signal, NVSHMEM wait on the stream
    std::vector<int> src(100);
    for (int i = 0; i < 100; ++i) src[i] = me * 1000 + i;
    shmem_putmem_signal(data.get(), src.data(), 100 * sizeof(int), &sig[1], 3, SHMEM_SIGNAL_ADD, right);
    nvshmemx_signal_wait_until_on_stream(&sig[1], NVSHMEM_CMP_GE, 3, (cudaStream_t)0);
    check.eq(std::uint64_t{3}, nvshmem_signal_fetch(&sig[1]), "nvshmem_signal_fetch after shmem_putmem_signal ADD 3");
    for (int i = 0; i < 100; ++i) check.eq(left * 1000 + i, data[static_cast<std::size_t>(i)], str("data of shmem_putmem_signal seen after the NVSHMEM wait", i));
    shmem_quiet();
    nvshmem_barrier_all();
}

}  // namespace

int main() {
    int status = 0;
    try {
        Session session;
        const int me = session.me(), npes = session.npes();
        identities(me, npes);
        cross_rma<int>(me, npes);
        cross_rma<long>(me, npes);
        cross_rma<double>(me, npes);
        cross_rma<std::uint64_t>(me, npes);
        cross_rma<short>(me, npes);
        cross_reduce<int>(me, npes);
        cross_reduce<long>(me, npes);
        cross_reduce<double>(me, npes);
        cross_reduce<short>(me, npes);
        cross_atomics(me, npes);
        cross_signals(me, npes);
        shmem_barrier_all();
        if (check.failures == 0) {
            std::printf("PE %d: OK\n", me);
        } else {
            std::fprintf(stderr, "PE %d: FAILED (%ld of %ld checks)\n", me, check.failures, check.checks);
            status = 1;
        }
        std::fflush(stdout);
        std::fflush(stderr);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "PE %d: exception: %s\n", check.me, e.what());
        return 2;
    }
    return status;
}
