#!/usr/bin/env bash
# Builds liboxshmem and oshrun (release), compiles benches/c/nv_vs_shmem.c against them (both
# nvshmem.h and shmem.h, linked to target/<profile>/liboxshmem.so), and runs it on 2 PEs: each
# NVSHMEM host name against its OpenSHMEM twin (put, p, get, fetch-add, barrier_all, broadcast,
# sum_reduce; 8 B), in interleaved blocks of one run, with a table of min, median and the ratio
# of medians NVSHMEM / OpenSHMEM (target <= 1.05).
#
#   benches/c/nv_vs_shmem.sh [--no-build] [--csv FILE]
#
# Environment: ROUNDS (blocks per name and operation, >= 15, default 31), BLOCK_MS (length of
# a block, default 70: about 7 x 2 x ROUNDS x BLOCK_MS ms in all, ~30 s on an idle host; more
# when other work slows the blocks down), NPES (default 2), PROFILE (cargo profile, default
# release). Many short rounds rather than few long ones: on a shared host a burst of other work
# that begins or ends between the two blocks of a round skews that round only.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
profile="${PROFILE:-release}"
rounds="${ROUNDS:-31}"
block_ms="${BLOCK_MS:-70}"
npes="${NPES:-2}"
build=1
csv=""
while (($#)); do
    case "$1" in
        --no-build) build=0 ;;
        --csv)
            [[ $# -ge 2 ]] || { echo "--csv needs a file name" >&2; exit 2; }
            csv="$2"
            shift
            ;;
        --csv=*) csv="${1#--csv=}" ;;
        -h | --help)
            sed -n '2,/^set /{/^set /!p}' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *) echo "unknown argument $1 (usage: $0 [--no-build] [--csv FILE])" >&2; exit 2 ;;
    esac
    shift
done
# The program runs in its own directory: give it an absolute CSV path.
if [[ -n "$csv" && "$csv" != /* ]]; then csv="$PWD/$csv"; fi

case "$profile" in dev | debug) pdir=debug ;; *) pdir="$profile" ;; esac
bin="$root/target/$pdir"
out="$root/target/bench-c/nv_vs_shmem"

if ((build)); then
    echo "== building oxshmem ($profile): liboxshmem, oshrun"
    (cd "$root" && cargo build --profile "$profile" -p oxshmem-c -p oxshmem-bootstrap -p oxshmem-tools 2>&1 | tail -n 3)
fi
for f in oshrun liboxshmem.so; do
    [[ -e "$bin/$f" ]] || { echo "missing $bin/$f (build with cargo build --profile $profile)" >&2; exit 1; }
done
nm -D --defined-only "$bin/liboxshmem.so" | grep ' nvshmem_long_sum_reduce$' >/dev/null ||
    { echo "$bin/liboxshmem.so has no NVSHMEM names: rebuild it (without --no-build)" >&2; exit 1; }
# The SONAME the executable asks the loader for, as an installation would provide it.
[[ -e "$bin/liboxshmem.so.1" ]] || ln -sf liboxshmem.so "$bin/liboxshmem.so.1"

mkdir -p "$out"
echo "== compiling nv_vs_shmem.c (cc -O2) against $bin/liboxshmem.so"
cc -std=gnu11 -O2 -Wall -Wextra -I "$root/bindings/c/include" "$here/nv_vs_shmem.c" -o "$out/nv_vs_shmem" \
    -L "$bin" -loxshmem -Wl,-rpath,"$bin"

echo "== running on $npes PEs: $rounds rounds, blocks of ~$block_ms ms"
args=(--rounds "$rounds" --block-ms "$block_ms")
[[ -n "$csv" ]] && args+=(--csv "$csv")
# On a shared host other work skews single blocks (the per-round ratios show it): say how busy.
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
echo "== load average before: $(loadavg) ($(nproc) CPUs)"
cd "$out"
timeout 900 "$bin/oshrun" -n "$npes" --timeout 890 ./nv_vs_shmem "${args[@]}"
echo "== load average after: $(loadavg)"
[[ -n "$csv" ]] && echo "== CSV written to $csv"
exit 0
