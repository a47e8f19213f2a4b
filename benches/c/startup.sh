#!/usr/bin/env bash
# Start-up time of a whole job: `shmem_init`, one `shmem_barrier_all`, `shmem_finalize` in a C
# program built with oshcc, launched by oxshmem's oshrun and by MPICH's Hydra (mpiexec.hydra,
# PMI-1, when installed), for each job size. Prints wall-clock seconds per launcher and size
# (the best and the median of ROUNDS runs) and, for each launcher, the growth from one size to
# the next against linear (a ratio of 4 from 64 to 256 PEs is linear, 16 is n²).
#
#   benches/c/startup.sh [--no-build] [SIZES...]        (default sizes: 16 64 256 1000)
#
# Environment: ROUNDS (default 3), PROFILE (default release), TIMEOUT (seconds per job,
# default 300), CSV (a file to write `launcher,pes,best_s,median_s` lines to).
# What it measures: from the launcher's start to its exit, so the PEs' process creation and
# library loading are included, as a user sees it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rounds="${ROUNDS:-3}"
profile="${PROFILE:-release}"
limit="${TIMEOUT:-300}"
case "$profile" in dev | debug) pdir=debug ;; *) pdir="$profile" ;; esac
bin="$root/target/$pdir"
if [[ "${1:-}" == "--no-build" ]]; then
    shift
else
    echo "== building oxshmem ($profile)"
    (cd "$root" && cargo build --profile "$profile" -p oxshmem-c -p oxshmem-tools -p oxshmem-bootstrap --lib \
        --bin oshrun --bin oshcc 2>&1 | tail -n 1)
fi
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(16 64 256 1000)

work="$root/target/bench-startup"
mkdir -p "$work"
cat >"$work/startup.c" <<'EOF'
#include <shmem.h>
#include <stdio.h>
int main(void) {
    shmem_init();
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("%d PEs up\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
EOF
"$bin/oshcc" -O2 "$work/startup.c" -o "$work/startup"

launchers=(oshrun)
hydra="$(command -v mpiexec.hydra || true)"
[[ -n "$hydra" ]] && launchers+=(hydra) || echo "(mpiexec.hydra not found: oshrun only; apt-get install mpich)"

# One job; prints its wall seconds, or "fail".
one() {
    local launcher="$1" n="$2" t0 t1
    t0=$(date +%s.%N)
    case "$launcher" in
    oshrun) timeout "$limit" "$bin/oshrun" -n "$n" --timeout "$limit" "$work/startup" >/dev/null 2>"$work/err" || {
        echo fail
        return
    } ;;
    hydra) timeout "$limit" "$hydra" -n "$n" "$work/startup" >/dev/null 2>"$work/err" || {
        echo fail
        return
    } ;;
    esac
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

declare -A best med
[[ -n "${CSV:-}" ]] && echo "launcher,pes,best_s,median_s" >"$CSV"
printf '%-8s %6s %10s %10s %s\n' launcher PEs best_s median_s runs
for n in "${sizes[@]}"; do
    for l in "${launchers[@]}"; do
        runs=()
        for ((r = 0; r < rounds; r++)); do runs+=("$(one "$l" "$n")"); done
        if printf '%s\n' "${runs[@]}" | grep -q fail; then
            printf '%-8s %6s %10s %10s %s\n' "$l" "$n" fail fail "$(head -c 300 "$work/err")"
            continue
        fi
        sorted=($(printf '%s\n' "${runs[@]}" | sort -g))
        b="${sorted[0]}"
        m="${sorted[$((rounds / 2))]}"
        best[$l,$n]="$b"
        med[$l,$n]="$m"
        printf '%-8s %6s %10.3f %10.3f %s\n' "$l" "$n" "$b" "$m" "$(printf '%.2f ' "${runs[@]}")"
        [[ -n "${CSV:-}" ]] && echo "$l,$n,$b,$m" >>"$CSV"
    done
done
echo
echo "growth of the median from one size to the next (linear = the ratio of the sizes):"
for l in "${launchers[@]}"; do
    prev=""
    for n in "${sizes[@]}"; do
        [[ -n "${med[$l,$n]:-}" ]] || continue
        if [[ -n "$prev" ]]; then
            printf '  %-8s %5s -> %-5s x%-7.2f (linear x%.2f, n^2 x%.2f)\n' "$l" "$prev" "$n" \
                "$(echo "${med[$l,$n]} / ${med[$l,$prev]}" | bc -l)" "$(echo "$n / $prev" | bc -l)" \
                "$(echo "($n / $prev)^2" | bc -l)"
        fi
        prev="$n"
    done
done
