#!/usr/bin/env bash
# Compiles the device library for the CPU target: the same sources as build.sh (src/core.cu and
# src/generated/*.cu; host.cu is the CUDA runtime's side and has no CPU twin yet) with the
# ordinary C++ compiler against src/arch/cpu.cuh, into OUTDIR/libnvshmem_device.a.
#
#   bindings/cuda/build-cpu.sh OUTDIR [--jobs N]
#   bindings/cuda/build.sh OUTDIR --target cpu [--jobs N]        (the same)
#
# The compiler is $CXX (default c++); $CXXFLAGS adds options (-fsanitize=thread, -O0 -g, ...).
# What this archive is for so far: proof that the library's own files compile as C++ for the CPU
# target. Its extern "C" NVSHMEM names (nvshmem_int_p, ...) are the host library's names too, so
# a program cannot link both yet; bindings/cuda/tests/cpu_simt.cpp runs the library's code by
# including src/core.cu instead (tests/tests/cpu_target.rs).
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
command -v "$cxx" >/dev/null || { echo "build-cpu.sh: no C++ compiler ($cxx; set CXX)" >&2; exit 1; }
state_inc="${OXSHMEM_DEVICE_STATE_INCLUDE:-$root/device/include}"
mkdir -p "$out/obj"
out="$(cd "$out" && pwd)"
# shellcheck disable=SC2206
flags=(-x c++ -std=c++17 -O2 -fPIC -Wall -DOXSHMEMI_TARGET_CPU -I"$root/bindings/c/include" -I"$state_inc" ${CXXFLAGS:-})
srcs=("$here/src/core.cu" "$here"/src/generated/*.cu)
printf '%s\n' "${srcs[@]}" | xargs -P "$jobs" -I{} bash -c \
    'o="$0/obj/$(basename "{}" .cu).o"; "$1" "${@:2}" -c "{}" -o "$o" || exit 255' "$out" "$cxx" "${flags[@]}"
objs=()
for s in "${srcs[@]}"; do objs+=("$out/obj/$(basename "$s" .cu).o"); done
rm -f "$out/libnvshmem_device.a"
ar rcs "$out/libnvshmem_device.a" "${objs[@]}"
echo "built $out/libnvshmem_device.a (CPU target, $cxx)"
