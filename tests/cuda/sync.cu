// Point-to-point synchronization and barriers in kernels:
//   wait_until, wait_until_all/any/some and their _vector forms, test, test_all/any/some and
//   their _vector forms, with and without a status mask;
//   barrier_all, sync_all (+ quiet), team barrier and team_sync, in the thread, warp and
//   block forms, checked by counting atomics between barriers;
//   team_my_pe, team_n_pes and team_translate_pe on the device for NVSHMEM_TEAM_WORLD and a
//   team of the even PEs made with nvshmem_team_split_strided.
// Kernels that synchronize are started with nvshmemx_collective_launch.
#include "cutest.h"

constexpr int NV = 4;  // ivars per PE

__global__ void k_wait(long *iv, int *flag, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), right = (me + 1) % npes;
    size_t idx[NV];
    int none[NV] = {0, 0, 0, 0};
    // Nothing written yet.
    DCHECK(err, nvshmem_long_test(iv + 0, NVSHMEM_CMP_NE, 0), 0);
    DCHECK(err, nvshmem_long_test_all(iv, NV, NULL, NVSHMEM_CMP_NE, 0), 0);
    DCHECK(err, nvshmem_long_test_any(iv, NV, none, NVSHMEM_CMP_NE, 0), SIZE_MAX);
    DCHECK(err, nvshmem_long_test_some(iv, NV, idx, NULL, NVSHMEM_CMP_NE, 0), 0);
    nvshmem_barrier_all();

    // 1: the left neighbour sets ivar 2.
    nvshmem_long_p(iv + 2, 1, right);
    nvshmem_quiet();
    DCHECK(err, nvshmem_long_wait_until_any(iv, NV, NULL, NVSHMEM_CMP_EQ, 1), 2);
    nvshmem_long_wait_until(iv + 2, NVSHMEM_CMP_EQ, 1);
    DCHECK(err, nvshmem_long_test(iv + 2, NVSHMEM_CMP_EQ, 1), 1);
    DCHECK(err, nvshmem_long_test_any(iv, NV, NULL, NVSHMEM_CMP_EQ, 1), 2);
    DCHECK(err, nvshmem_long_test_some(iv, NV, idx, NULL, NVSHMEM_CMP_EQ, 1), 1);
    DCHECK(err, idx[0], 2);
    nvshmem_barrier_all();

    // 2: it sets ivars 0 and 3 to 5; ivars 1 and 2 are masked out.
    int mask[NV] = {0, 1, 1, 0};
    nvshmem_long_p(iv + 0, 5, right);
    nvshmem_long_p(iv + 3, 5, right);
    nvshmem_quiet();
    nvshmem_long_wait_until_all(iv, NV, mask, NVSHMEM_CMP_EQ, 5);
    DCHECK(err, nvshmem_long_test_all(iv, NV, mask, NVSHMEM_CMP_EQ, 5), 1);
    size_t n = nvshmem_long_wait_until_some(iv, NV, idx, mask, NVSHMEM_CMP_EQ, 5);
    DCHECK(err, n, 2);
    DCHECK(err, idx[0] + idx[1], 3);
    DCHECK(err, nvshmem_long_test_all(iv, NV, NULL, NVSHMEM_CMP_EQ, 5), 0);  // ivar 1, 2 differ
    nvshmem_barrier_all();

    // 3: vector forms, ivar i = 10 + i.
    long want[NV] = {10, 11, 12, 13};
    for (int i = 0; i < NV; i++) nvshmem_long_p(iv + i, 10 + i, right);
    nvshmem_quiet();
    nvshmem_long_wait_until_all_vector(iv, NV, NULL, NVSHMEM_CMP_EQ, want);
    DCHECK(err, nvshmem_long_test_all_vector(iv, NV, NULL, NVSHMEM_CMP_EQ, want), 1);
    int only2[NV] = {1, 1, 0, 1};
    DCHECK(err, nvshmem_long_wait_until_any_vector(iv, NV, only2, NVSHMEM_CMP_EQ, want), 2);
    DCHECK(err, nvshmem_long_test_any_vector(iv, NV, only2, NVSHMEM_CMP_EQ, want), 2);
    DCHECK(err, nvshmem_long_wait_until_some_vector(iv, NV, idx, NULL, NVSHMEM_CMP_GE, want), NV);
    DCHECK(err, nvshmem_long_test_some_vector(iv, NV, idx, NULL, NVSHMEM_CMP_GT, want), 0);
    nvshmem_barrier_all();

    // 4: another type (int): the right neighbour's flag, a GT wait.
    nvshmem_int_atomic_add(flag, 3, right);
    nvshmem_int_wait_until(flag, NVSHMEM_CMP_GT, 2);
    DCHECK(err, nvshmem_int_test(flag, NVSHMEM_CMP_LT, 3), 0);
}

// Rounds of: every PE adds 1 to a counter on every member PE; synchronize; check the counter
// is rounds * members; synchronize again before the next round. `form`: 0 barrier_all (thread),
// 1 barrier_all_warp, 2 barrier_all_block, 3 quiet + sync_all, 4 quiet + sync_all_block,
// 5 team barrier, 6 team barrier_block, 7 quiet + team_sync, 8 quiet + team_sync_warp.
__device__ void team_sync_form(int form, nvshmem_team_t team) {
    switch (form) {
    case 0: if (threadIdx.x == 0) nvshmem_barrier_all(); break;
    case 1: if (threadIdx.x < warpSize) nvshmemx_barrier_all_warp(); break;
    case 2: nvshmemx_barrier_all_block(); break;
    case 3: if (threadIdx.x == 0) { nvshmem_quiet(); nvshmem_sync_all(); } break;
    case 4: if (threadIdx.x == 0) nvshmem_quiet(); __syncthreads(); nvshmemx_sync_all_block(); break;
    case 5: if (threadIdx.x == 0) nvshmem_barrier(team); break;
    case 6: nvshmemx_barrier_block(team); break;
    case 7: if (threadIdx.x == 0) { nvshmem_quiet(); nvshmem_team_sync(team); } break;
    case 8: if (threadIdx.x < warpSize) { if (threadIdx.x == 0) nvshmem_quiet(); __syncwarp(); nvshmemx_team_sync_warp(team); } break;
    }
    __syncthreads();
}

__global__ void k_barrier(int form, nvshmem_team_t team, int *ctr, DevErr *err) {
    bool world = form < 5;
    if (!world && team == NVSHMEM_TEAM_INVALID) return;  // not a member of the team
    nvshmem_team_t t = world ? NVSHMEM_TEAM_WORLD : team;
    int members = nvshmem_team_n_pes(t);
    for (int r = 1; r <= 8; r++) {
        if (threadIdx.x == 0)
            for (int i = 0; i < members; i++)
                nvshmem_int_atomic_add(ctr, 1, nvshmem_team_translate_pe(t, i, NVSHMEM_TEAM_WORLD));
        team_sync_form(form, team);
        if (threadIdx.x == 0) DCHECK(err, *(volatile int *)ctr, r * members);
        team_sync_form(form, team);
    }
}

__global__ void k_team(nvshmem_team_t even, DevErr *err) {
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    DCHECK(err, nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD), me);
    DCHECK(err, nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD), npes);
    DCHECK(err, nvshmem_team_n_pes(even), me % 2 ? -1 : (npes + 1) / 2);  // odd PEs hold NVSHMEM_TEAM_INVALID
    DCHECK(err, nvshmem_team_my_pe(even), me % 2 ? -1 : me / 2);
    DCHECK(err, nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, me, even), me % 2 ? -1 : me / 2);
    if (me % 2 == 0)
        for (int i = 0; i < nvshmem_team_n_pes(even); i++)
            DCHECK(err, nvshmem_team_translate_pe(even, i, NVSHMEM_TEAM_WORLD), 2 * i);
}

int main() {
    cutest_init("sync");
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    long *iv = (long *)nvshmem_calloc(NV, sizeof(long));
    int *flag = (int *)nvshmem_calloc(1, sizeof(int));
    int *ctr = (int *)nvshmem_calloc(1, sizeof(int));
    CHECK(iv && flag && ctr, "nvshmem_calloc returned NULL");
    DevErr *err = dev_err_new();
    nvshmem_barrier_all();

    void *wargs[] = {&iv, &flag, &err};
    COLL_LAUNCH(k_wait, 1, 1, wargs, s);
    dev_err_check(err, s, "k_wait (wait_until/test families)");
    cutest_ok("wait_until, wait_until_all/any/some(+_vector), test, test_all/any/some(+_vector), status masks");

    nvshmem_team_t even = NVSHMEM_TEAM_INVALID;
    int rc = nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    CHECK(rc == 0, "nvshmem_team_split_strided(WORLD, 0, 2, %d) returned %d", (npes + 1) / 2, rc);
    CHECK((me % 2 == 0) == (even != NVSHMEM_TEAM_INVALID), "even team handle %d on PE %d", (int)even, me);
    k_team<<<1, 1, 0, s>>>(even, err);
    dev_err_check(err, s, "k_team (team_my_pe/n_pes/translate_pe on the device)");
    cutest_ok("team_my_pe, team_n_pes, team_translate_pe on the device (WORLD, even PEs)");

    const char *forms[] = {"barrier_all", "barrier_all_warp", "barrier_all_block", "quiet+sync_all",
                           "quiet+sync_all_block", "team barrier", "team barrier_block", "quiet+team_sync",
                           "quiet+team_sync_warp"};
    for (int form = 0; form < 9; form++) {
        nvshmem_barrier_all();
        CUDA_CHECK(cudaMemset(ctr, 0, sizeof(int)));
        CUDA_CHECK(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        // every PE launches (a collective launch); non-members of the team return at once
        void *args[] = {&form, &even, &ctr, &err};
        COLL_LAUNCH(k_barrier, 1, 128, args, s);
        char what[96];
        snprintf(what, sizeof what, "k_barrier (%s)", forms[form]);
        dev_err_check(err, s, what);
    }
    cutest_ok("barrier_all, sync_all, team barrier, team_sync in kernels (thread/warp/block forms, 8 rounds each)");

    nvshmem_barrier_all();
    if (even != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(even);
    nvshmem_free(iv);
    nvshmem_free(flag);
    nvshmem_free(ctr);
    nvshmem_finalize();
    return 0;
}
