#!/usr/bin/env bash
# Builds the NVSHMEM test programs (tests/cuda/*.cu) and the device benchmark
# (benches/cuda/device_bench.cu) against an NVSHMEM-layout prefix:
#
#   tests/cuda/build.sh PREFIX OUTDIR [ARCH]
#
# PREFIX holds include/nvshmem.h, include/nvshmemx.h, lib/libnvshmem_device.a and
# lib/libnvshmem_host.so: NVIDIA's NVSHMEM (e.g. the pip wheel's nvidia/nvshmem folder, which
# `scripts/cuda-toolchain.sh --nvshmem --env` names in OXSHMEM_NVSHMEM_HOME) or an oxshmem
# installation. ARCH is the GPU architecture (default sm_90). Each program is compiled and
# linked as NVSHMEM's documentation says:
#
#   nvcc -rdc=true -arch=ARCH -I PREFIX/include prog.cu PREFIX/lib/libnvshmem_device.a \
#        -L PREFIX/lib -lnvshmem_host -o OUTDIR/prog
#
# The device-code modules (tests/cuda/modules/*.cu) are compiled with -rdc=true and
# device-linked with libnvshmem_device.a into OUTDIR/NAME.fatbin (nvcc -dlink -fatbin), what
# the Rust GPU device's load_module takes.
#
# nvcc is $OXSHMEM_NVCC, else scripts/cuda-toolchain.sh's, else nvcc on PATH. $BUILD_JOBS
# programs build at once (default 2); $NVCC_FLAGS and $LDFLAGS add options. A program newer
# than its source, cutest.h and PREFIX's headers and device library is kept (BUILD_FORCE=1
# rebuilds it; flags are not tracked). Prints one line
# per program and exits non-zero if any failed (its errors are in OUTDIR/PROG.log), if a
# program or module is not in OUTDIR afterwards, or if there is nothing to build.
set -uo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: tests/cuda/build.sh PREFIX OUTDIR [ARCH]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
prefix=$(cd "$1" 2>/dev/null && pwd) || { echo "build.sh: no folder $1" >&2; exit 2; }
out=$2
arch=${3:-sm_90}
for f in include/nvshmem.h include/nvshmemx.h lib/libnvshmem_device.a; do
    [ -e "$prefix/$f" ] || { echo "build.sh: $prefix/$f is missing (not an NVSHMEM-layout prefix)" >&2; exit 2; }
done
if [ ! -e "$prefix/lib/libnvshmem_host.so" ] && [ ! -e "$prefix/lib/libnvshmem_host.so.3" ]; then
    echo "build.sh: $prefix/lib/libnvshmem_host.so is missing" >&2
    exit 2
fi
# What there is to build: a glob that matches nothing builds nothing and would pass, so each
# must find something (and the benchmark must be there).
shopt -s nullglob
progs=("$here"/*.cu)
modules=("$here"/modules/*.cu)
shopt -u nullglob
[ ${#progs[@]} -gt 0 ] || { echo "build.sh: no programs: $here/*.cu matches nothing" >&2; exit 1; }
[ ${#modules[@]} -gt 0 ] || { echo "build.sh: no modules: $here/modules/*.cu matches nothing" >&2; exit 1; }
[ -f "$root/benches/cuda/device_bench.cu" ] || { echo "build.sh: no $root/benches/cuda/device_bench.cu" >&2; exit 1; }
nvcc=${OXSHMEM_NVCC:-}
if [ -z "$nvcc" ]; then
    if env_out=$(bash "$root/scripts/cuda-toolchain.sh" --env 2>/dev/null); then
        eval "$env_out"
        nvcc=$OXSHMEM_NVCC
    elif command -v nvcc >/dev/null; then
        nvcc=$(command -v nvcc)
    else
        echo "build.sh: no nvcc (set OXSHMEM_NVCC or run scripts/cuda-toolchain.sh)" >&2
        exit 2
    fi
fi
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
# The wheel ships only libnvshmem_host.so.3: link against it by path then.
hostlib="-L$prefix/lib -lnvshmem_host"
[ -e "$prefix/lib/libnvshmem_host.so" ] || hostlib="$prefix/lib/libnvshmem_host.so.3"

build_one() {
    src=$1
    name=$(basename "$src" .cu)
    # Up to date: newer than its source, the shared header and the libraries it links.
    if [ -x "$out/$name" ] && [ -z "${BUILD_FORCE:-}" ]; then
        local newer=""
        for dep in "$src" "$here/cutest.h" "$prefix/lib/libnvshmem_device.a" "$prefix/include/nvshmem.h" \
            "$prefix/include/nvshmemx.h"; do
            [ "$dep" -nt "$out/$name" ] && newer=$dep
        done
        if [ -z "$newer" ]; then
            echo "build.sh: $name is up to date"
            return 0
        fi
    fi
    # shellcheck disable=SC2086
    if "$nvcc" -rdc=true -arch="$arch" -O2 -I"$prefix/include" ${NVCC_FLAGS:-} "$src" \
        "$prefix/lib/libnvshmem_device.a" $hostlib ${LDFLAGS:-} -o "$out/$name" >"$out/$name.log" 2>&1; then
        echo "build.sh: built $name"
        [ -s "$out/$name.log" ] || rm -f "$out/$name.log"
    else
        echo "build.sh: FAILED $name (see $out/$name.log):"
        tail -n 15 "$out/$name.log" | sed 's/^/    /'
        return 1
    fi
}
# A module (modules/*.cu): device code only, device-linked with the device library into a
# fatbin that a host program loads with cuModuleLoadData (the Rust GPU device's load_module).
build_module() {
    src=$1
    name=$(basename "$src" .cu)
    if "$nvcc" -rdc=true -arch="$arch" -O2 -I"$prefix/include" ${NVCC_FLAGS:-} -c "$src" -o "$out/$name.o" \
        >"$out/$name.fatbin.log" 2>&1 &&
        "$nvcc" -dlink -fatbin -arch="$arch" "$out/$name.o" "$prefix/lib/libnvshmem_device.a" \
            -o "$out/$name.fatbin" >>"$out/$name.fatbin.log" 2>&1; then
        echo "build.sh: built $name.fatbin"
        rm -f "$out/$name.o"
        [ -s "$out/$name.fatbin.log" ] || rm -f "$out/$name.fatbin.log"
    else
        echo "build.sh: FAILED $name.fatbin (see $out/$name.fatbin.log):"
        tail -n 15 "$out/$name.fatbin.log" | sed 's/^/    /'
        return 1
    fi
}
export -f build_one build_module
export nvcc arch prefix out hostlib here

srcs=$(ls "$here"/*.cu "$root/benches/cuda/device_bench.cu")
printf '%s\n' $srcs | xargs -P "${BUILD_JOBS:-2}" -I{} bash -c 'build_one "$1"' _ {}
rc=$?
for m in "$here"/modules/*.cu; do
    build_module "$m" || rc=1
done
# Every program and module found above is in OUTDIR now: a build that made fewer (a compiler
# that exits 0 without writing its output) does not pass.
for src in "${progs[@]}" "$root/benches/cuda/device_bench.cu"; do
    name=$(basename "$src" .cu)
    [ -x "$out/$name" ] || { echo "build.sh: $name was not built: no $out/$name"; rc=1; }
done
for m in "${modules[@]}"; do
    name=$(basename "$m" .cu)
    [ -s "$out/$name.fatbin" ] || { echo "build.sh: $name.fatbin was not built: no $out/$name.fatbin"; rc=1; }
done
if [ $rc -ne 0 ]; then
    echo "build.sh: some programs failed to build against $prefix" >&2
    exit 1
fi
echo "build.sh: all $((${#progs[@]} + 1)) programs and ${#modules[@]} modules built against $prefix into $out ($arch)"
