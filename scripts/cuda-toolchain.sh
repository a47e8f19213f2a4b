#!/usr/bin/env bash
# Installs the CUDA toolchain oxshmem's CUDA code builds with, from NVIDIA's pip wheels, into a
# local folder: no root, no system CUDA, no GPU (a machine without a driver compiles and links
# CUDA code; running it needs a GPU). A second run with the same versions does nothing.
#
#   scripts/cuda-toolchain.sh [DIR]        (default: $OXSHMEM_CUDA_HOME, else ~/.cache/oxshmem/cuda)
#   eval "$(scripts/cuda-toolchain.sh --env [DIR])"   # sets OXSHMEM_NVCC and OXSHMEM_CUDA_INCLUDE
#   scripts/cuda-toolchain.sh --nvshmem [--env] [DIR]  # also the reference NVSHMEM (see below)
#
# What it installs (a Python virtual environment holding the wheels):
#   nvidia-cuda-nvcc     nvcc, cudafe++, ptxas, nvlink, fatbinary (CUDA 13: sm_75 and newer)
#   nvidia-cuda-crt      the compiler's runtime headers (crt/host_defines.h, ...)
#   nvidia-cuda-cccl     libcu++/CUB/Thrust (<nv/target>, <cuda/atomic>): nvcc needs -I <inc>/cccl
#   nvidia-cuda-runtime  cuda_runtime.h, cuda_fp16.h, cuda_bf16.h, libcudart_static.a
#   nvidia-nvvm          libnvvm (cicc)
# and prints where nvcc and the include folder are. Pinned to the versions checked here; set
# OXSHMEM_CUDA_VERSION to choose other ones (e.g. 13.5.37).
#
# --nvshmem also installs NVIDIA's NVSHMEM (the reference implementation, the wheel
# nvidia-nvshmem-cu13, version $OXSHMEM_NVSHMEM_VERSION, default 3.8.0) into the same folder,
# and --env then also sets OXSHMEM_NVSHMEM_HOME, OXSHMEM_NVSHMEM_INCLUDE and OXSHMEM_NVSHMEM_LIB
# (include/nvshmem.h, lib/libnvshmem_device.a, lib/libnvshmem_host.so[.3], bin/ when the wheel
# has one). The test programs of tests/cuda/ are checked against it.
set -euo pipefail

env_only=false
with_nvshmem=false
while [ $# -gt 0 ]; do
    case "$1" in
        --env) env_only=true; shift ;;
        --nvshmem) with_nvshmem=true; shift ;;
        *) break ;;
    esac
done
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

nv=""
if $with_nvshmem; then
    nv_ver=${OXSHMEM_NVSHMEM_VERSION:-3.8.0}
    nv_stamp="$dir/.oxshmem-nvshmem-$nv_ver"
    if [ ! -e "$nv_stamp" ]; then
        log "installing nvidia-nvshmem-cu13==$nv_ver into $dir"
        "$dir/bin/pip" install --quiet --disable-pip-version-check "nvidia-nvshmem-cu13==$nv_ver" >&2 ||
            { echo "cuda-toolchain: pip install nvidia-nvshmem-cu13==$nv_ver failed" >&2; exit 1; }
        touch "$nv_stamp"
    fi
    nv=$(dirname "$(ls -d "$dir"/lib/python3*/site-packages/nvidia/nvshmem/include/nvshmem.h 2>/dev/null | head -n1)")
    nv=${nv%/include}
    if [ -z "$nv" ] || [ "$nv" = . ] || [ ! -f "$nv/lib/libnvshmem_device.a" ]; then
        echo "cuda-toolchain: no NVSHMEM (include/nvshmem.h, lib/libnvshmem_device.a) under $dir/lib/python3*/site-packages/nvidia/nvshmem" >&2
        exit 1
    fi
    if [ ! -e "$nv/lib/libnvshmem_host.so" ] && [ -e "$nv/lib/libnvshmem_host.so.3" ]; then
        ln -s libnvshmem_host.so.3 "$nv/lib/libnvshmem_host.so" # the wheel ships only the SONAME
    fi
fi
if $env_only; then
    echo "export OXSHMEM_NVCC='$cu/bin/nvcc'"
    echo "export OXSHMEM_CUDA_INCLUDE='$cu/include'"
    if [ -n "$nv" ]; then
        echo "export OXSHMEM_NVSHMEM_HOME='$nv'"
        echo "export OXSHMEM_NVSHMEM_INCLUDE='$nv/include'"
        echo "export OXSHMEM_NVSHMEM_LIB='$nv/lib'"
    fi
else
    log "nvcc:     $cu/bin/nvcc ($("$cu/bin/nvcc" --version | tail -n1))"
    log "include:  $cu/include (and $cu/include/cccl for nvcc: -I$cu/include/cccl)"
    if [ -n "$nv" ]; then
        log "nvshmem:  $nv (include/, lib/libnvshmem_device.a, lib/libnvshmem_host.so)"
    fi
    log "use:      eval \"\$(scripts/cuda-toolchain.sh$($with_nvshmem && echo " --nvshmem") --env${1:+ $1})\""
fi
