/*
 * C++ as an application would use it: an RAII wrapper over shmem_malloc/shmem_free, a global
 * object built by its constructor before main (symmetric like any global), a static class
 * member as an atomic counter, and a 1-D Jacobi solver whose halos travel with
 * shmem_put_signal into double-buffered slots of the neighbours. Every PE also runs the same
 * solver serially on the whole domain; the distributed result must equal it bit for bit (the
 * same operations in the same order).
 */
#include <cstdint>
#include <new>
#include <vector>

#include "oxtest.h"

template <typename T> class Sym {
  public:
    explicit Sym(size_t n) : p_(static_cast<T *>(shmem_calloc(n, sizeof(T)))), n_(n) {
        if (p_ == nullptr) throw std::bad_alloc();
    }
    ~Sym() { shmem_free(p_); }
    Sym(const Sym &) = delete;
    Sym &operator=(const Sym &) = delete;
    T &operator[](size_t i) { return p_[i]; }
    T *data() { return p_; }
    size_t size() const { return n_; }

  private:
    T *p_;
    size_t n_;
};

struct Global {
    Global() : x(42), y(-1) {}
    int x;
    long y;
};
Global g_obj; // constructed before main on every PE

struct Stats {
    static long hits;
};
long Stats::hits;

static const int L = 64;      // points per PE
static const int STEPS = 200; // Jacobi sweeps

int main() {
    ox_init("cxx_app");
    const int me = ox_me, npes = ox_npes;
    const int left = me - 1, right = me + 1; // no wrap-around: a line, not a ring

    CHECK_EQ(42, shmem_int_g(&g_obj.x, (me + 1) % npes), "a global built by its constructor, read remotely");
    shmem_long_atomic_inc(&Stats::hits, 0);
    shmem_long_p(&g_obj.y, me, (me + 1) % npes);
    shmem_barrier_all();
    if (me == 0) CHECK_EQ(npes, Stats::hits, "static class member as an atomic counter");
    CHECK_EQ((me + npes - 1) % npes, g_obj.y, "a member of a global object as a put target");

    {
        // u[1..L] interior; halo[slot][0] from the left neighbour, halo[slot][1] from the right
        Sym<double> u(L + 2), unew(L + 2), halo(4);
        Sym<uint64_t> sig(2); // 0: from the left, 1: from the right
        for (int i = 1; i <= L; i++) u[i] = 0.0;
        shmem_barrier_all();
        for (int s = 0; s < STEPS; s++) {
            int slot = s % 2;
            if (left >= 0) shmem_double_put_signal(&halo[2 * slot + 1], &u[1], 1, &sig[1], (uint64_t)s + 1, SHMEM_SIGNAL_SET, left);
            if (right < npes) shmem_double_put_signal(&halo[2 * slot + 0], &u[L], 1, &sig[0], (uint64_t)s + 1, SHMEM_SIGNAL_SET, right);
            double lv = 1.0, rv = 0.0; // the fixed boundary values of the whole line
            if (left >= 0) {
                shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, (uint64_t)s + 1);
                lv = halo[2 * slot + 0];
            }
            if (right < npes) {
                shmem_signal_wait_until(&sig[1], SHMEM_CMP_GE, (uint64_t)s + 1);
                rv = halo[2 * slot + 1];
            }
            u[0] = lv;
            u[L + 1] = rv;
            for (int i = 1; i <= L; i++) unew[i] = 0.5 * (u[i - 1] + u[i + 1]);
            for (int i = 1; i <= L; i++) u[i] = unew[i];
        }
        shmem_barrier_all();

        // the same on the whole line, here
        const int n = npes * L;
        std::vector<double> w(n + 2, 0.0), wn(n + 2, 0.0);
        w[0] = 1.0;
        w[n + 1] = 0.0;
        for (int s = 0; s < STEPS; s++) {
            for (int i = 1; i <= n; i++) wn[i] = 0.5 * (w[i - 1] + w[i + 1]);
            for (int i = 1; i <= n; i++) w[i] = wn[i];
        }
        long bad = 0;
        for (int i = 1; i <= L; i++)
            if (u[i] != w[me * L + i]) bad++;
        CHECK_EQ(0, bad, "points of the distributed Jacobi that differ from the serial one");

        // a global residual through a reduction, compared with the serial sum in PE order
        static double part, total;
        part = 0;
        for (int i = 1; i <= L; i++) part += u[i];
        CHECK_EQ(0, shmem_double_sum_reduce(SHMEM_TEAM_WORLD, &total, &part, 1), "sum_reduce status");
        double e = 0;
        for (int p = 0; p < npes; p++) {
            double q = 0;
            for (int i = 1; i <= L; i++) q += w[p * L + i];
            e += q;
        }
        CHECK_EQ(e, total, "sum of the solution over every PE");
        shmem_barrier_all();
    } // the Sym buffers are freed here, collectively, in the same order everywhere

    return ox_finish();
}
