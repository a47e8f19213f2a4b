#!/usr/bin/env bash
# Builds libnvshmem_device.a for AMD GPUs: the same sources as build.sh (bindings/cuda/src,
# generated/ included) through hipcc, as relocatable device code (-fgpu-rdc), and optionally
# the NVSHMEM-style test programs of tests/cuda linked against it.
#
#   bindings/cuda/build-hip.sh OUTDIR [--arch LIST] [--jobs N] [--programs LIBDIR]
#   bindings/cuda/build.sh OUTDIR --target hip [...]          (the same)
#
# LIST: comma-separated offload targets (default gfx90a). The archive's members are bundled
# objects (host code, and LLVM bitcode per target); `hipcc -fgpu-rdc` links a program's device
# code with them into one code object per target:
#
#   hipcc -x hip --offload-arch=gfx90a -fgpu-rdc -I bindings/c/include \
#         -I bindings/cuda/src/arch/cuda-on-hip -c prog.cu -o prog.o
#   hipcc --offload-arch=gfx90a -fgpu-rdc prog.o OUTDIR/libnvshmem_device.a -L LIBDIR -loxshmem
#
# bindings/cuda/src/arch/cuda-on-hip holds the part of CUDA's runtime headers those programs use,
# mapped onto HIP (cuda_runtime.h, cuda_fp16.h, cuda_bf16.h, cooperative_groups.h).
# --programs LIBDIR: also build tests/cuda/*.cu into OUTDIR/bin, linked against LIBDIR's host
# library (libnvshmem_host.so, else liboxshmem.so: `cargo build -p oxshmem-c` makes
# target/debug/liboxshmem.so), with LIBDIR as rpath.
#
# hipcc: $OXSHMEM_HIPCC, else hipcc on PATH (Debian 12: apt-get install -y hipcc
# libamdhip64-dev rocm-device-libs, ROCm 5.2; no GPU needed to build).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: build-hip.sh OUTDIR [--arch LIST] [--jobs N] [--programs LIBDIR]}"
shift
arch="gfx90a"
jobs="$(nproc 2>/dev/null || echo 2)"
libdir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch="${2:?--arch needs a list}"; shift 2 ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --programs) libdir="${2:?--programs needs the folder of the host library}"; shift 2 ;;
        --target) [ "${2:-}" = hip ] || { echo "build-hip.sh: --target ${2:-} is not hip" >&2; exit 2; }; shift 2 ;;
        *) echo "build-hip.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
hipcc="${OXSHMEM_HIPCC:-hipcc}"
command -v "$hipcc" >/dev/null || {
    echo "build-hip.sh: hipcc not found (set OXSHMEM_HIPCC; on Debian 12: apt-get install -y hipcc libamdhip64-dev rocm-device-libs)" >&2
    exit 1
}
state_inc="${OXSHMEM_DEVICE_STATE_INCLUDE:-$root/device/include}"
[ -f "$state_inc/oxshmem/device_state.h" ] || {
    echo "build-hip.sh: $state_inc/oxshmem/device_state.h not found (generated from device/src/state.rs)" >&2
    exit 1
}
offload=()
IFS=',' read -ra targets <<<"$arch"
for t in "${targets[@]}"; do offload+=("--offload-arch=$t"); done
mkdir -p "$out/obj"
out="$(cd "$out" && pwd)"
# hipcc runs rocm_agent_enumerator to guess a GPU when no --offload-arch is given; with one it
# is still called on some versions and prints a traceback on machines without /sys/class/kfd:
# harmless, filtered from the logs.
quiet() { grep -v -e '^Traceback' -e '^  File ' -e '^    ' -e 'FileNotFoundError' -e 'rocm_agent_enumerator' || true; }
export -f quiet
inc=(-I"$root/bindings/c/include" -I"$state_inc" -I"$here/src/arch/cuda-on-hip")
flags=(-x hip "${offload[@]}" -fgpu-rdc -std=c++17 -O2 -fPIC "${inc[@]}")
srcs=("$here/src/host.cu" "$here/src/core.cu" "$here"/src/generated/*.cu)
printf '%s\n' "${srcs[@]}" | xargs -P "$jobs" -I{} bash -c \
    'o="$0/obj/$(basename "{}" .cu).o"; "$1" "${@:2}" -c "{}" -o "$o" 2>&1 | quiet; [ "${PIPESTATUS[0]}" = 0 ] || exit 255' \
    "$out" "$hipcc" "${flags[@]}"
objs=()
for s in "${srcs[@]}"; do objs+=("$out/obj/$(basename "$s" .cu).o"); done
rm -f "$out/libnvshmem_device.a"
ar rcs "$out/libnvshmem_device.a" "${objs[@]}"
echo "built $out/libnvshmem_device.a (${arch}, relocatable device code)"

[ -n "$libdir" ] || exit 0
libdir="$(cd "$libdir" && pwd)"
if [ -e "$libdir/libnvshmem_host.so" ]; then
    hostlib=(-L"$libdir" -lnvshmem_host)
elif [ -e "$libdir/liboxshmem.so" ]; then
    hostlib=(-L"$libdir" -loxshmem)
else
    echo "build-hip.sh: no libnvshmem_host.so or liboxshmem.so in $libdir (cargo build -p oxshmem-c)" >&2
    exit 1
fi
mkdir -p "$out/bin"
build_prog() {
    local src=$1 name
    name=$(basename "$src" .cu)
    if { "$hipcc" "${flags[@]}" -c "$src" -o "$out/obj/prog-$name.o" &&
        "$hipcc" "${offload[@]}" -fgpu-rdc "$out/obj/prog-$name.o" "$out/libnvshmem_device.a" "${hostlib[@]}" \
            -Wl,-rpath,"$libdir" -Wl,-z,noexecstack -o "$out/bin/$name"; } 2>&1 | quiet >"$out/bin/$name.log"; then
        echo "built $out/bin/$name"
        [ -s "$out/bin/$name.log" ] || rm -f "$out/bin/$name.log"
    else
        echo "build-hip.sh: FAILED $name (see $out/bin/$name.log):" >&2
        tail -n 15 "$out/bin/$name.log" | sed 's/^/    /' >&2
        return 1
    fi
}
rc=0
pids=()
for src in "$root"/tests/cuda/*.cu; do
    build_prog "$src" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$jobs" ]; then
        wait "${pids[0]}" || rc=1
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
