#!/usr/bin/env bash
# Builds the device library for the CPU target: the same sources as build.sh (src/core.cu,
# src/host.cu and src/generated/*.cu) with the ordinary C++ compiler against src/arch/cpu.cuh,
# plus the CUDA runtime of the CPU target (src/cpu_runtime.cpp), into OUTDIR/libnvshmem_device.a;
# and the emulated CUDA driver (tests/emucuda/libcuda.c) that the host library's GPU back end
# loads, into OUTDIR/emucuda/libcuda.so (the archive loads it by that path at start-up;
# OXSHMEM_CPU_DRIVER names another).
#
#   bindings/cuda/build-cpu.sh OUTDIR [--jobs N]
#   bindings/cuda/build.sh OUTDIR --target cpu [--jobs N]        (the same)
#
# The compiler is $CXX (default c++, and $CC, default cc, for the driver); $CXXFLAGS (and
# $CFLAGS for the driver) add options (-fsanitize=thread, -O0 -g, ...). A program links the
# archive before the host library (oshnvcc --target cpu does): the archive's NVSHMEM names that
# are also host routines
# (nvshmem_int_p, nvshmem_my_pe, ...) run the device code inside a kernel and forward host calls
# to the host library's definitions.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: build-cpu.sh OUTDIR [--jobs N]}"
shift
jobs="$(nproc 2>/dev/null || echo 2)"
while [ $# -gt 0 ]; do
    case "$1" in
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --target) [ "${2:-}" = cpu ] || { echo "build-cpu.sh: --target ${2:-} is not cpu" >&2; exit 2; }; shift 2 ;;
        *) echo "build-cpu.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
cxx="${CXX:-c++}"
cc="${CC:-cc}"
command -v "$cxx" >/dev/null || { echo "build-cpu.sh: no C++ compiler ($cxx; set CXX)" >&2; exit 1; }
command -v "$cc" >/dev/null || { echo "build-cpu.sh: no C compiler ($cc; set CC)" >&2; exit 1; }
state_inc="${OXSHMEM_DEVICE_STATE_INCLUDE:-$root/device/include}"
mkdir -p "$out/obj" "$out/emucuda"
out="$(cd "$out" && pwd)"
# The emulated driver, under the name the host library's loader tries first.
# shellcheck disable=SC2086
"$cc" -shared -fPIC -O2 -Wall -Wextra -Werror -pthread -Wl,-soname,libcuda.so ${CFLAGS:-} \
    -o "$out/emucuda/libcuda.so" "$root/tests/emucuda/libcuda.c"
# shellcheck disable=SC2206
flags=(-x c++ -std=c++17 -O2 -fPIC -Wall -DOXSHMEMI_TARGET_CPU "-DOXSHMEMI_CPU_DRIVER_PATH=\"$out/emucuda/libcuda.so\""
       -I"$here/src/arch/cuda-on-cpu" -I"$root/bindings/c/include" -I"$state_inc" ${CXXFLAGS:-})
srcs=("$here/src/core.cu" "$here/src/host.cu" "$here/src/cpu_runtime.cpp" "$here"/src/generated/*.cu)
printf '%s\n' "${srcs[@]}" | xargs -P "$jobs" -I{} bash -c \
    'f="$(basename "{}")"; o="$0/obj/${f%.*}.o"; "$1" "${@:2}" -c "{}" -o "$o" || exit 255' "$out" "$cxx" "${flags[@]}"
objs=()
for s in "${srcs[@]}"; do f="$(basename "$s")"; objs+=("$out/obj/${f%.*}.o"); done
rm -f "$out/libnvshmem_device.a"
ar rcs "$out/libnvshmem_device.a" "${objs[@]}"
echo "built $out/libnvshmem_device.a and $out/emucuda/libcuda.so (CPU target, $cxx)"
