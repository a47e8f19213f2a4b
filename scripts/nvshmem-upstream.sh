#!/usr/bin/env bash
# Builds NVIDIA's own NVSHMEM examples and device perftests, unchanged, for oxshmem's CPU target
# (oshnvcc --target cpu: kernels run as host threads calling oxshmem's device library) and runs
# each under oxshmem's oshrun over every device channel, printing one table.
#
#   scripts/nvshmem-upstream.sh NVSHMEM_SRC [OUTDIR]
#
# NVSHMEM_SRC is a checkout of https://github.com/NVIDIA/nvshmem (its examples/ and perftest/
# folders; NVIDIA's code is under NVIDIA's licence and stays there: nothing of it is copied into
# this project). It needs the build tree's oshnvcc, oshrun and liboxshmem.so:
#   cargo build -p oxshmem-c -p oxshmem-tools --bin oshnvcc -p oxshmem-bootstrap --bin oshrun
# Programs that need MPI, CUTLASS or the tile API (nvshmem_tensor.h) are left out.
#
# Knobs: UPSTREAM_CHANNELS ("p2p proxy ibgda"), UPSTREAM_PES (2), UPSTREAM_TIMEOUT (120 s per
# run). Exit status: 0 when every program built and passed everywhere, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
src=${1:?usage: scripts/nvshmem-upstream.sh NVSHMEM_SRC [OUTDIR]}
out=${2:-${TMPDIR:-/tmp}/nvshmem-upstream}
src=$(cd "$src" && pwd) || exit 1
[ -d "$src/examples" ] && [ -d "$src/perftest" ] || { echo "nvshmem-upstream: $src has no examples/ and perftest/" >&2; exit 1; }
nvcc="$root/target/debug/oshnvcc"
oshrun="$root/target/debug/oshrun"
for t in "$nvcc" "$oshrun" "$root/target/debug/liboxshmem.so"; do
    [ -e "$t" ] || { echo "nvshmem-upstream: $t is missing (cargo build -p oxshmem-c -p oxshmem-tools --bin oshnvcc -p oxshmem-bootstrap --bin oshrun)" >&2; exit 1; }
done
mkdir -p "$out/bin" "$out/logs"
channels=${UPSTREAM_CHANNELS:-p2p proxy ibgda}
pes=${UPSTREAM_PES:-2}
limit=${UPSTREAM_TIMEOUT:-120}

# name | sources (relative to NVSHMEM_SRC) | arguments
programs=(
    "dev-guide-ring|examples/dev-guide-ring.cu|"
    "collective-launch|examples/collective-launch.cu|"
    "on-stream|examples/on-stream.cu|"
    "thread-group|examples/thread-group.cu|"
    "ring-bcast|examples/ring-bcast.cu|"
    "ring-reduce|examples/ring-reduce.cu|-b 1024 -e 4096 -n 2 -w 1 -c 2 -t 32 -m 256"
)
for f in "$src"/perftest/device/pt-to-pt/*.cu; do
    n=$(basename "$f" .cu)
    programs+=("$n|perftest/device/pt-to-pt/$n.cu perftest/common/utils.cu|-n 5 -w 1 -b 8 -e 64 -c 1 -t 32")
done
for f in "$src"/perftest/device/coll/*.cu; do
    n=$(basename "$f" .cu)
    case "$n" in redmaxloc*) continue ;; esac
    programs+=("$n|perftest/device/coll/$n.cu perftest/common/utils.cu|-n 2 -w 1 -b 8 -e 64 -c 1 -t 32")
done

declare -A result
fail=0
for p in "${programs[@]}"; do
    IFS='|' read -r name srcs args <<<"$p"
    files=()
    for s in $srcs; do files+=("$src/$s"); done
    if ! "$nvcc" --target cpu -I"$src/perftest/common" "${files[@]}" -lcuda -o "$out/bin/$name" >"$out/logs/$name.build.log" 2>&1; then
        result[$name]="build: $(grep -m1 -E 'error' "$out/logs/$name.build.log" | cut -c1-100)"
        fail=1
        echo "$name: does not build ($out/logs/$name.build.log)"
        continue
    fi
    for ch in $channels; do
        for n in $pes; do
            log="$out/logs/$name.$ch.n$n.log"
            # shellcheck disable=SC2086
            if OXSHMEM_DEVICE_CHANNEL=$ch timeout -k 5 "$limit" "$oshrun" -n "$n" "$out/bin/$name" $args >"$log" 2>&1; then
                result[$name,$ch,$n]=ok
            else
                rc=$?
                result[$name,$ch,$n]=$([ $rc = 124 ] && echo TIMEOUT || echo "FAIL($rc)")
                fail=1
            fi
            echo "$name $ch n=$n: ${result[$name,$ch,$n]}"
        done
    done
done

echo
hdr="program"
for ch in $channels; do for n in $pes; do hdr="$hdr | $ch n=$n"; done; done
echo "$hdr"
for p in "${programs[@]}"; do
    name=${p%%|*}
    if [ -n "${result[$name]:-}" ]; then echo "$name | ${result[$name]}"; continue; fi
    row=$name
    for ch in $channels; do for n in $pes; do row="$row | ${result[$name,$ch,$n]:--}"; done; done
    echo "$row"
done
echo "logs: $out/logs"
exit $fail
