#!/usr/bin/env bash
# Checks that .ci/run cannot pass without what it tests with: its set-up, run with the CUDA
# toolchain broken on purpose, must fail and say why, and the same set-up with the real toolchain
# must pass. Runs .ci/run itself, stopped after its set-up (OXSHMEM_CI_STOP_AFTER=setup), in this
# tree (OXSHMEM_CI_ISOLATED=1: no clone). Needs what .ci/run installs; .ci/run calls it once its
# own set-up has passed. Offline: the broken toolchain is a folder that claims to hold one and
# has no nvcc, which scripts/cuda-toolchain.sh must refuse.
#
#   scripts/test-ci-run.sh
set -uo pipefail
cd "$(dirname "$0")/.."

fail() { echo "test-ci-run: FAIL: $*" >&2; exit 1; }
broken=$(mktemp -d)
trap 'rm -rf "$broken"' EXIT

# The stamp that cuda-toolchain.sh writes after a good install, with nothing behind it.
ver=${OXSHMEM_CUDA_VERSION:-13.5.37}
cccl=${OXSHMEM_CCCL_VERSION:-13.3.5.0.6}
touch "$broken/.oxshmem-cuda-$ver-$cccl"
out=$(env -u OXSHMEM_NVCC -u OXSHMEM_CUDA_INCLUDE CI=true OXSHMEM_CI_ISOLATED=1 OXSHMEM_CI_STOP_AFTER=setup \
    OXSHMEM_CUDA_HOME="$broken" bash .ci/run 2>&1)
status=$?
[ $status -ne 0 ] || fail ".ci/run passed its set-up with a broken CUDA toolchain:"$'\n'"$out"
grep -q "cuda-toolchain.sh failed" <<<"$out" || fail ".ci/run failed, but without naming the toolchain:"$'\n'"$out"
grep -q "set-up done" <<<"$out" && fail ".ci/run went past its set-up with a broken toolchain:"$'\n'"$out"
echo "test-ci-run: a broken CUDA toolchain fails .ci/run's set-up (status $status)"

# The control: the same set-up with the toolchain as installed passes.
out=$(CI=true OXSHMEM_CI_ISOLATED=1 OXSHMEM_CI_STOP_AFTER=setup bash .ci/run 2>&1) ||
    fail ".ci/run's set-up fails with the real toolchain:"$'\n'"$out"
grep -q "set-up done" <<<"$out" || fail ".ci/run's set-up did not reach its end:"$'\n'"$out"
echo "test-ci-run: the set-up passes with the real toolchain"
echo "test-ci-run: 2 passed, 0 failed"
