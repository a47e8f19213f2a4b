#!/usr/bin/env bash
# Builds libnvshmem_device.a: NVSHMEM's device API (bindings/cuda/src) as relocatable device
# code for `nvcc -rdc=true prog.cu ... libnvshmem_device.a`.
#
#   bindings/cuda/build.sh OUTDIR [--arch LIST] [--jobs N]
#   bindings/cuda/build.sh OUTDIR --target hip [--arch LIST] [--jobs N] [--programs LIBDIR]
#   bindings/cuda/build.sh OUTDIR --target cpu [--jobs N]
#
# --target hip builds the same sources for AMD GPUs with hipcc (build-hip.sh), --target cpu with
# the C++ compiler for the CPU target (build-cpu.sh); each script says more. --target cuda is
# the default.
#
# LIST: comma-separated SM numbers (default 75,80,90,100: SASS for each, plus compute_100 PTX
# for the newest, which the driver JIT-compiles for GPUs newer than sm_100); `--arch 90` while
# developing. sm_75 is what nvcc 13 compiles for without -arch, so a program built with no -arch
# device-links against the default archive. nvcc: $OXSHMEM_NVCC, else nvcc on PATH.
# Headers: bindings/c/include (nvshmem.h) and device/include (oxshmem/device_state.h);
# OXSHMEM_DEVICE_STATE_INCLUDE overrides the latter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: build.sh OUTDIR [--target cuda|hip|cpu] [--arch LIST] [--jobs N]}"
shift
for ((i = 1; i <= $#; i++)); do
    if [ "${!i}" = --target ]; then
        j=$((i + 1))
        case "${!j:-}" in
            hip) exec bash "$here/build-hip.sh" "$out" "$@" ;;
            cpu) exec bash "$here/build-cpu.sh" "$out" "$@" ;;
            cuda) set -- "${@:1:i-1}" "${@:j+1}"; break ;;
            *) echo "build.sh: --target takes cuda, hip or cpu" >&2; exit 2 ;;
        esac
    fi
done
arch="75,80,90,100"
jobs="$(nproc 2>/dev/null || echo 2)"
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch="${2:?--arch needs a list}"; shift 2 ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        *) echo "build.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
nvcc="${OXSHMEM_NVCC:-nvcc}"
command -v "$nvcc" >/dev/null || { echo "build.sh: nvcc not found (set OXSHMEM_NVCC)" >&2; exit 1; }
state_inc="${OXSHMEM_DEVICE_STATE_INCLUDE:-$root/device/include}"
[ -f "$state_inc/oxshmem/device_state.h" ] || {
    echo "build.sh: $state_inc/oxshmem/device_state.h not found (generated from device/src/state.rs)" >&2
    exit 1
}
gencode=()
last=""
IFS=',' read -ra sms <<<"$arch"
for sm in "${sms[@]}"; do
    gencode+=("-gencode=arch=compute_${sm},code=sm_${sm}")
    last="$sm"
done
gencode+=("-gencode=arch=compute_${last},code=compute_${last}")
mkdir -p "$out/obj"
flags=(-rdc=true -std=c++17 -O2 -Xcompiler -fPIC "${gencode[@]}" -I"$root/bindings/c/include" -I"$state_inc"
       -diag-suppress 20040)
srcs=("$here/src/host.cu" "$here/src/core.cu" "$here"/src/generated/*.cu)
printf '%s\n' "${srcs[@]}" | xargs -P "$jobs" -I{} bash -c \
    'o="$0/obj/$(basename "{}" .cu).o"; "$1" "${@:2}" -c "{}" -o "$o" || exit 255' "$out" "$nvcc" "${flags[@]}"
objs=()
for s in "${srcs[@]}"; do objs+=("$out/obj/$(basename "$s" .cu).o"); done
rm -f "$out/libnvshmem_device.a"
"$nvcc" -lib "${gencode[@]}" "${objs[@]}" -o "$out/libnvshmem_device.a"
echo "built $out/libnvshmem_device.a (sm ${arch})"
