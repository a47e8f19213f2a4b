#!/usr/bin/env bash
# Builds the OSU-style OpenSHMEM benchmarks of this folder with oxshmem's oshcc and, when it is
# installed, with OpenMPI's oshcc (apt-get install openmpi-bin libopenmpi-dev), runs both on
# 2 PEs interleaved round by round (oxshmem, OpenMPI, then OpenMPI, oxshmem in the next round,
# ...: on these shared 2-vCPU machines the placement of the two vCPUs flips every few seconds),
# and prints, per benchmark and size, the median and minimum of
# each and the ratio oxshmem / OpenMPI of the medians, the worst runs against each other, then
# the ratio of each round; and, per latency benchmark, how many runs of each side were slower
# than a size's median by more than 1 us per operation (a scheduler slice lost to another
# process costs both about 2 us per operation: a runtime's own tail shows as more of them).
#
#   benches/c/run.sh [--no-build]
#
# Environment: ROUNDS (default 15), NP (PEs per job, default 2), BUSY (busy-looping processes
# started beside every job for the whole run, default 0: BUSY=1 is "one busy process beside the
# job"), OSU_SCALE (iteration-count factor, default 1), PROFILE (cargo profile of oxshmem,
# default release), BENCHES (default: all nine), OXSHMEM_OSHRUN_ARGS (extra oshrun options,
# e.g. "--bind-to none"), OMPI_OSHCC / OMPI_OSHRUN (default /usr/bin/oshcc, /usr/bin/oshrun),
# TRIP (default 1; 0 skips the yardsticks of trip.c, measured at each round's start: the
# machine's cache-line trip, the barrier and fcollect floors, the CPU's speed).
#
# Both launchers use their default placement: OpenMPI binds PE i to core i when the PEs fit
# (none when oversubscribed), oshrun likewise (--bind-to core when they fit).
#
# OpenMPI's OSHMEM runs with OMPI_MCA_osc=ucx (without it, it crashes in finalize) and
# --allow-run-as-root --oversubscribe. The benchmarks avoid its broken 32-bit compare-swap.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rounds="${ROUNDS:-15}"
np="${NP:-2}"
busy="${BUSY:-0}"
read -r -a ox_args <<<"${OXSHMEM_OSHRUN_ARGS:-}"
profile="${PROFILE:-release}"
benches="${BENCHES:-put get put_mr atomics barrier broadcast reduce collect fcollect}"
ompi_oshcc="${OMPI_OSHCC:-/usr/bin/oshcc}"
ompi_oshrun="${OMPI_OSHRUN:-/usr/bin/oshrun}"
out="$root/target/bench-c"
cflags=(-std=gnu99 -O2 -Wall -Wextra -Wno-deprecated-declarations)

case "$profile" in dev | debug) pdir=debug ;; *) pdir="$profile" ;; esac
bin="$root/target/$pdir"

if [[ "${1:-}" != "--no-build" ]]; then
    echo "== building oxshmem ($profile): liboxshmem, oshcc, oshrun"
    (cd "$root" && cargo build --profile "$profile" -p oxshmem-c -p oxshmem-tools -p oxshmem-bootstrap --lib --bin oshrun \
        --bin oshcc --bin oshcxx 2>&1 | tail -n 3)
fi
for f in oshcc oshrun liboxshmem.so; do
    [[ -e "$bin/$f" ]] || { echo "missing $bin/$f (build with cargo build --profile $profile)" >&2; exit 1; }
done
# The SONAME the executables ask the loader for, as an installation would provide it.
[[ -e "$bin/liboxshmem.so.1" ]] || ln -sf liboxshmem.so "$bin/liboxshmem.so.1"

rm -rf "$out"
mkdir -p "$out/ox" "$out/ompi" "$out/results"

echo "== compiling with $bin/oshcc"
cc "${cflags[@]}" "$here/trip.c" -o "$out/trip"
for b in $benches; do
    "$bin/oshcc" "${cflags[@]}" "$here/osu_oshm_$b.c" -o "$out/ox/osu_oshm_$b"
done

have_ompi=0
if [[ -x "$ompi_oshcc" && -x "$ompi_oshrun" ]] && "$ompi_oshcc" --showme:version >/dev/null 2>&1; then
    echo "== compiling with $ompi_oshcc ($("$ompi_oshcc" --showme:version 2>&1 | head -n 1))"
    have_ompi=1
    for b in $benches; do
        if ! "$ompi_oshcc" "${cflags[@]}" "$here/osu_oshm_$b.c" -o "$out/ompi/osu_oshm_$b" 2>"$out/ompi/$b.cc.log"; then
            echo "OpenMPI's oshcc failed on osu_oshm_$b.c:" >&2
            cat "$out/ompi/$b.cc.log" >&2
            have_ompi=0
        fi
    done
else
    echo "== OpenMPI's OSHMEM is not installed ($ompi_oshcc): oxshmem only"
fi

run_ox() { # bench round
    timeout 600 "$bin/oshrun" -n "$np" ${ox_args[@]+"${ox_args[@]}"} --timeout 590 "$out/ox/osu_oshm_$1" >"$out/results/ox.$1.$2" 2>"$out/results/ox.$1.$2.err"
}
run_ompi() { # bench round
    OMPI_MCA_osc=ucx timeout 600 "$ompi_oshrun" -np "$np" --allow-run-as-root --oversubscribe \
        "$out/ompi/osu_oshm_$1" >"$out/results/ompi.$1.$2" 2>"$out/results/ompi.$1.$2.err"
}
# CPU time the host took from this VM's CPUs so far (steal, in ms; /proc/stat counts 10 ms ticks):
# a run it falls in stalls for that long, whatever the runtime.
steal_ms() { awk '/^cpu / { print $9 * 10; exit }' /proc/stat 2>/dev/null || echo 0; }
report_failure() { # impl bench round status
    echo "!! $1 osu_oshm_$2 round $3 failed with status $4; its stderr ends with:" >&2
    tail -n 15 "$out/results/$1.$2.$3.err" >&2
}

busy_pids=()
stop_busy() { ((${#busy_pids[@]} == 0)) || kill "${busy_pids[@]}" 2>/dev/null || true; }
trap stop_busy EXIT
for ((i = 0; i < busy; i++)); do
    (while :; do :; done) &
    busy_pids+=($!)
done
((busy == 0)) || echo "== $busy busy-looping process(es) beside every job: ${busy_pids[*]}"

for ((r = 1; r <= rounds; r++)); do
    echo "== round $r of $rounds"
    # The yardsticks of this round (trip.c): the cache-line trip, the floors, the CPU speed.
    [[ "${TRIP:-1}" == 0 ]] || timeout 60 "$out/trip" >"$out/results/trip.$r" 2>&1 || true
    for b in $benches; do
        order="ox ompi"
        ((r % 2 == 0)) && order="ompi ox"
        for impl in $order; do
            [[ "$impl" == ompi && "$have_ompi" == 0 ]] && continue
            st=0
            s0=$(steal_ms)
            "run_$impl" "$b" "$r" || st=$?
            echo "$impl $b $r $(($(steal_ms) - s0))" >>"$out/results/steal"
            ((st == 0)) || report_failure "$impl" "$b" "$r" "$st"
        done
    done
done

echo
stop_busy
python3 - "$out/results" "$rounds" "$benches" "$have_ompi" "$np" "$busy" <<'PY'
import os, statistics, sys

res, rounds, benches, have_ompi = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4] == "1"
np, busy = int(sys.argv[5]), int(sys.argv[6])

def read(impl, bench, r):
    """{key: value} and the unit of one run's output ({} when it failed)."""
    path = os.path.join(res, f"{impl}.{bench}.{r}")
    vals, unit = {}, ""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    parts = line[1:].split()
                    if len(parts) == 2:
                        unit = parts[1]
                    continue
                parts = line.split()
                if len(parts) == 2:
                    vals[parts[0]] = float(parts[1])
    except FileNotFoundError:
        pass
    return vals, unit

def fmt(v):
    if v is None:
        return "-"
    return f"{v:.0f}" if v >= 1e4 else f"{v:.3f}" if v < 10 else f"{v:.2f}"

def spread(xs):
    """A side's worst run against its best (latency: max/min; rates: best/worst)."""
    if not xs or min(xs) <= 0:
        return "-"
    return f"{max(xs) / min(xs):.2f}"

rows = []
for b in benches:
    per = {impl: [read(impl, b, r) for r in range(1, rounds + 1)] for impl in ("ox", "ompi")}
    unit = next((u for runs in per.values() for _, u in runs if u), "")
    keys = []
    for runs in per.values():
        for vals, _ in runs:
            for k in vals:
                if k not in keys:
                    keys.append(k)
    for k in keys:
        ox = [v[k] for v, _ in per["ox"] if k in v]
        om = [v[k] for v, _ in per["ompi"] if k in v]
        ratios = [vo[k] / vm[k] for (vo, _), (vm, _) in zip(per["ox"], per["ompi"]) if k in vo and k in vm and vm[k] > 0]
        med = lambda xs: statistics.median(xs) if xs else None
        mo, mm = med(ox), med(om)
        # The worst runs against each other: the slowest (latency) or the lowest rate of each side.
        worst = (max if unit.startswith("Latency") else min)
        wr = f"{worst(ox) / worst(om):.2f}" if ox and om and worst(om) > 0 else "-"
        rows.append((b, k, unit, fmt(mo), fmt(min(ox) if ox else None), fmt(mm), fmt(min(om) if om else None),
                     f"{mo / mm:.2f}" if mo and mm else "-", spread(ox), spread(om), wr,
                     " ".join(f"{x:.2f}" for x in ratios)))

head = ("benchmark", "size", "unit", "oxshmem median", "oxshmem min", "OpenMPI median", "OpenMPI min",
        "ratio ox/OpenMPI", "ox worst/best", "OpenMPI worst/best", "worst ox/OpenMPI", "ratio per round")
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
load = f", {busy} busy process(es) beside the job" if busy else ""
print(f"{rounds} interleaved rounds, {np} PEs{load}. Latency(us): lower is better, a ratio below 1 favours oxshmem;")
print("Messages/s: higher is better, a ratio above 1 favours oxshmem. worst ox/OpenMPI: the slowest run of each")
print("(latency: the longest; rates: the lowest), against each other.")
if not have_ompi:
    print("OpenMPI's OSHMEM was not run: its columns are empty.")
print(line(head))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows:
    print(line(r))

# The yardsticks (trip.c, no OpenSHMEM), once per round: the machine's one-way cache-line trip
# between the CPUs of PEs 0 and 1, the floors of the barrier and 8 B fcollect rows (the same
# loops with no runtime: cache lines and nothing else), and the first CPU's speed at dependent
# integer work. Latency-bound rows vary with the first three, software-bound ones with the last.
yard = {"one-way-ns": [], "floor-barrier-ns": [], "floor-fcollect-ns": [], "compute-ns": []}
for r in range(1, rounds + 1):
    got = {}
    try:
        with open(os.path.join(res, f"trip.{r}")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] in yard:
                    got[parts[0]] = float(parts[1])
    except (OSError, ValueError):
        pass
    for k in yard:
        yard[k].append(got.get(k))
texts = {"one-way-ns": ("The machine's one-way cache-line trip between the CPUs of PEs 0 and 1", "ns", "{:.0f}"),
         "floor-barrier-ns": ("The barrier row's floor, a 2-process barrier with no runtime", "ns", "{:.0f}"),
         "floor-fcollect-ns": ("The 8 B fcollect row's floor, OSU's loop with no runtime", "ns", "{:.0f}"),
         "compute-ns": ("The first CPU's time per step of dependent integer work", "ns", "{:.2f}")}
for k, vals in yard.items():
    got = [v for v in vals if v]
    if not got:
        continue
    what, unit, f = texts[k]
    print()
    print(f"{what} (trip.c, no OpenSHMEM), per round: median {f.format(statistics.median(got))} {unit}, "
          f"best {f.format(min(got))}, worst {f.format(max(got))} (worst/best {max(got) / min(got):.2f}); "
          "by round: " + " ".join(f.format(v) if v else "-" for v in vals))

# Slow runs: per latency benchmark, the runs (one size of one round) at 2 KiB or less that took
# more than 1 us per operation over that size's median. A busy process beside the job takes a
# PE's core for a scheduler slice now and then (2-3 ms: about 2 us per operation over a run's
# ~1,000 iterations, whatever the runtime); a runtime's own tail (a wait that falls asleep) shows
# as more slow runs than the other runtime's, or as runs slower than a slice or two explains.
slow = []
for b in benches:
    counts = {}
    for impl in ("ox", "ompi"):
        runs = [read(impl, b, r) for r in range(1, rounds + 1)]
        if not any(u.startswith("Latency") for _, u in runs):
            continue
        keys = {k for v, _ in runs for k in v if not k.isdigit() or int(k) <= 2048}
        n = 0
        worst = 0.0
        for k in keys:
            xs = [v[k] for v, _ in runs if k in v]
            m = statistics.median(xs)
            for x in xs:
                if x - m > 1.0:
                    n += 1
                    worst = max(worst, x - m)
        counts[impl] = (n, worst, sum(1 for v, _ in runs for k in v if k in keys))
    if counts:
        slow.append((b, counts))
if slow:
    print()
    print("Slow runs (sizes up to 2 KiB: more than 1 us per operation over the size's median; a scheduler slice "
          "lost to another process is about 2 us per operation), oxshmem / OpenMPI, with the largest excess:")
    for b, c in slow:
        print("  " + b + ": " + "; ".join(
            f"{'oxshmem' if i == 'ox' else 'OpenMPI'} {n} of {tot} runs (largest +{w:.1f} us)" for i, (n, w, tot) in c.items()))

# Steal: the CPU time the host took from this VM while each run ran (10 ms resolution). A run
# it falls in stalls for that long, whatever the runtime: the runs that lost 20 ms or more.
stolen = []
try:
    with open(os.path.join(res, "steal")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4 and int(parts[3]) >= 20:
                stolen.append(f"{'oxshmem' if parts[0] == 'ox' else 'OpenMPI'} {parts[1]} round {parts[2]}: {parts[3]} ms")
except (OSError, ValueError):
    pass
if stolen:
    print()
    print("Runs during which the host took 20 ms or more of CPU time from this VM (steal, /proc/stat): "
          + "; ".join(stolen))
PY
