#!/usr/bin/env bash
# Install what the bootstrap launcher tests (tests/launchers.rs) and the runtime's ofi transport
# need, and start nothing:
#   mpich        mpiexec.hydra (PMI-1 and PMI-2)
#   openmpi-bin libopenmpi-dev  mpirun.openmpi (PMIx) and libmpi.so.40 for the launcher and MPI-
#                communicator tests (it repoints the mpicc/mpirun alternatives: the tests call
#                mpicc.mpich and mpiexec.hydra by name)
#   libpmix-dev  libpmix 4.2 for `--features pmix`, and Slurm's mpi/pmix plugin
#   slurm-wlm    slurmctld, slurmd, srun for the private cluster of tests/slurm/up.sh
#   munge        what slurm-wlm expects to find (the test cluster itself uses auth/none)
#   pkg-config   how build.rs finds libpmix
#   libfabric-dev  libfabric 1.17 for the runtime's `--features ofi` (runtime/build.rs)
#   libclang-dev   what bindgen loads: runtime/tests/ofi_bindings.rs regenerates the committed
#                  libfabric bindings, device/build.rs (feature verbs) reads mlx5dv.h
#   libibverbs-dev rdma-core's infiniband/mlx5dv.h, which device/tests/mlx5_layout.rs checks the
#                  IBGDA work-queue layouts against, and libibverbs/libmlx5 for the device
#                  crate's `verbs` feature (with librdmacm-dev, which rdma-sys links)
#   gcc g++ gfortran  what oshcc/oshc++/oshfort wrap (the C, C++ and Fortran test programs)
#   binutils     nm and readelf, which the C library's ABI tests read it with
#   hipcc libamdhip64-dev rocm-device-libs  ROCm 5.2's HIP compiler and device libraries: the
#                device library's HIP build for gfx90a (tests/tests/hip_build.rs; no GPU needed)
#   python3, python3-venv  the doc-command check (scripts/doc-commands.sh) reads the docs with
#                it; scripts/cuda-toolchain.sh installs NVIDIA's CUDA wheels into a venv
# Debian 12 / Ubuntu. Needs root (or sudo). Then run the tests with
# OXSHMEM_TEST_REQUIRE=all, so that a missing tool fails its test instead of skipping it.
set -euo pipefail

pkgs=(mpich openmpi-bin libopenmpi-dev libpmix-dev slurm-wlm munge pkg-config libfabric-dev libclang-dev libibverbs-dev
      librdmacm-dev gcc g++ gfortran binutils python3 python3-venv hipcc libamdhip64-dev rocm-device-libs)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "ci-deps: ${pkgs[*]} already installed"
    exit 0
fi

# As root, run apt-get directly; otherwise through sudo, keeping DEBIAN_FRONTEND (-E). An array,
# so that an empty prefix adds no word (a plain "$sudo -E" ran "-E" as a command as root).
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo -E)

# Packages with daemons (munge, slurmd, slurmctld) would start them where an init system runs:
# a policy-rc.d that says "no" keeps the install from starting anything.
policy=/usr/sbin/policy-rc.d
added_policy=false
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    added_policy=true
fi
cleanup() { if $added_policy; then "${sudo[@]}" rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q "${missing[@]}"
echo "ci-deps: installed ${missing[*]}"
