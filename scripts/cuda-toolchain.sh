#!/usr/bin/env bash
# Installs the CUDA toolchain oxshmem's CUDA code builds with, from NVIDIA's pip wheels, into a
# local folder: no root, no system CUDA, no GPU (a machine without a driver compiles and links
# CUDA code; running it needs a GPU). A second run with the same versions does nothing.
#
#   scripts/cuda-toolchain.sh [DIR]        (default: $OXSHMEM_CUDA_HOME, else ~/.cache/oxshmem/cuda)
#   eval "$(scripts/cuda-toolchain.sh --env [DIR])"   # sets OXSHMEM_NVCC and OXSHMEM_CUDA_INCLUDE
#
# What it installs (a Python virtual environment holding the wheels):
#   nvidia-cuda-nvcc     nvcc, cudafe++, ptxas, nvlink, fatbinary (CUDA 13: sm_75 and newer)
#   nvidia-cuda-crt      the compiler's runtime headers (crt/host_defines.h, ...)
#   nvidia-cuda-cccl     libcu++/CUB/Thrust (<nv/target>, <cuda/atomic>): nvcc needs -I <inc>/cccl
#   nvidia-cuda-runtime  cuda_runtime.h, cuda_fp16.h, cuda_bf16.h, libcudart_static.a
#   nvidia-nvvm          libnvvm (cicc)
# and prints where nvcc and the include folder are. Pinned to the versions checked here; set
# OXSHMEM_CUDA_VERSION to choose other ones (e.g. 13.5.37).
set -euo pipefail

env_only=false
if [ "${1:-}" = "--env" ]; then env_only=true; shift; fi
dir=${1:-${OXSHMEM_CUDA_HOME:-$HOME/.cache/oxshmem/cuda}}
ver=${OXSHMEM_CUDA_VERSION:-13.5.37}
cccl_ver=${OXSHMEM_CCCL_VERSION:-13.3.5.0.6}
stamp="$dir/.oxshmem-cuda-$ver-$cccl_ver"

log() { if ! $env_only; then echo "cuda-toolchain: $*"; else echo "cuda-toolchain: $*" >&2; fi; }

if [ ! -e "$stamp" ]; then
    command -v python3 >/dev/null || { echo "cuda-toolchain: python3 is needed (apt-get install python3 python3-venv)" >&2; exit 1; }
    log "installing CUDA $ver wheels into $dir"
    rm -rf "$dir"
    python3 -m venv "$dir" || { echo "cuda-toolchain: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
    "$dir/bin/pip" install --quiet --disable-pip-version-check \
        "nvidia-cuda-nvcc==$ver" "nvidia-cuda-crt==$ver" "nvidia-cuda-runtime==$ver" "nvidia-nvvm==$ver" \
        "nvidia-cuda-cccl==$cccl_ver" >&2
    touch "$stamp"
fi

cu=$(ls -d "$dir"/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -n1)
if [ -z "$cu" ] || [ ! -x "$cu/bin/nvcc" ]; then
    echo "cuda-toolchain: no nvcc under $dir (remove the folder and run again)" >&2
    exit 1
fi
"$cu/bin/nvcc" --version >/dev/null || { echo "cuda-toolchain: $cu/bin/nvcc does not run" >&2; exit 1; }
if $env_only; then
    echo "export OXSHMEM_NVCC='$cu/bin/nvcc'"
    echo "export OXSHMEM_CUDA_INCLUDE='$cu/include'"
else
    log "nvcc:     $cu/bin/nvcc ($("$cu/bin/nvcc" --version | tail -n1))"
    log "include:  $cu/include (and $cu/include/cccl for nvcc: -I$cu/include/cccl)"
    log "use:      eval \"\$(scripts/cuda-toolchain.sh --env${1:+ $1})\""
fi
