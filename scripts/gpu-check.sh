#!/usr/bin/env bash
# The one-command GPU check, for a GPU machine without a package registry (no cargo, no pip):
# everything it runs is built beforehand on a build machine and carried over.
#
#   scripts/gpu-check.sh --prepare OUTDIR [--arch sm_90]   # on the build machine (no GPU needed)
#   scripts/gpu-check.sh [DIR]                             # on the GPU machine (DIR: an OUTDIR)
#   scripts/gpu-check.sh --prepare-cpu OUTDIR              # the same bundle for the CPU target
#
# --prepare-cpu packs the test programs built for the CPU target (oshnvcc --target cpu: kernels
# run as host threads over the emulated CUDA driver) with the debug build's oshrun and
# liboxshmem.so, so that the check's own plumbing (unpacking, the driver search, every program
# at every PE count over every channel, the tables, the cap) runs on any machine:
#   GPU_CHECK_LIBCUDA=OUTDIR/libcuda.so GPU_CHECK_NVSHMEM=0 GPU_CHECK_BENCH=0 GPU_CHECK_RUST=0 \
#     scripts/gpu-check.sh OUTDIR                          (tests/tests/cpu_programs.rs does)
#
# --prepare builds into OUTDIR/gpu-check.tar.xz (stripped binaries, xz; must stay <= 64 MiB):
#   oxshmem/bin/oshrun, oxshmem/lib/*.so*     oxshmem (oxshmem-install --prefix, release) with
#                                             libnvshmem_host.so.3
#   oxshmem-bin/{rma,signal,amo,sync,coll,stream,examples,buffer_register,persistent,device_bench}
#                                             tests/cuda/*.cu and benches/cuda/device_bench.cu
#                                             linked with oxshmem's libnvshmem_device.a
#                                             (bindings/cuda/build.sh) and libnvshmem_host
#   nvshmem-bin/...                           the same programs linked with NVIDIA's NVSHMEM
#                                             (scripts/cuda-toolchain.sh --nvshmem), run with the
#                                             GPU machine's own libnvshmem_host.so.3
#   oxshmem/bin/pe-gpu, oxshmem-bin/gpu_ring.fatbin
#                                             the Rust GPU device's test program (tests/src/bin,
#                                             --features cuda) and the module it loads
#                                             (tests/cuda/modules/gpu_ring.cu)
#   MANIFEST                                  what was built, from which sources, and what failed
# A part that does not build is reported and left out; the rest is still packed. The builds
# are kept in $GPU_CHECK_BUILD_DIR (default target/gpu-check-build) and redone only where a
# source or library changed; carry OUTDIR alone. $GPU_CHECK_FEATURES goes to oxshmem-install
# --features (cargo features of the oxshmem build, e.g. the one that enables its CUDA back end).
#
# The check (hard cap $GPU_CHECK_SECONDS, default 360 s; `timeout` on every step; a failed
# step is reported and the check goes on):
#   1. unpacks DIR/gpu-check.tar.xz (into $TMPDIR), 2. looks for the CUDA driver
#   (libcuda.so.1 through ldconfig -p and the usual folders; nvidia-smi for the GPU and driver
#   version) and exits 2 without one, 3. finds NVIDIA's NVSHMEM from python3
#   (nvidia.nvshmem, the nvidia-nvshmem-cu13 wheel) or $GPU_CHECK_NVSHMEM_LIB, 4. runs every test
#   program with 2 and 4 PEs on the GPU under oxshmem's `oshrun -n N` with
#   OXSHMEM_DEVICE_CHANNEL=p2p, proxy and ibgda, and the NVSHMEM builds too, 5. runs
#   device_bench --csv --quick for each channel and for NVSHMEM, 6. runs the Rust GPU device's
#   program (pe-gpu ring / errors with gpu_ring.fatbin, 2 and 4 PEs), 7. prints a table of the
#   test results and one of the benchmark side by side:
#     operation | oxshmem p2p | proxy | ibgda | NVSHMEM | ratio (best oxshmem / NVSHMEM, time)
#
# NVIDIA's NVSHMEM wheel ships no launcher (no nvshmrun/Hydra). Its programs are started by
# oxshmem's `oshrun`, which serves PMI-1 (PMI_FD, PMI_RANK, PMI_SIZE) to every process, with
# NVSHMEM_BOOTSTRAP=PMI: NVSHMEM's nvshmem_bootstrap_pmi.so.3 is a PMI-1 client (the simple
# PMI wire protocol: init, get_maxes, get_my_kvsname, put, get, barrier_in, finalize).
# Several PEs on one GPU without CUDA MPS is NVSHMEM's "limited" multi-process-per-GPU mode.
#
# Knobs: GPU_CHECK_SECONDS (360), GPU_CHECK_PES ("2 4"), GPU_CHECK_CHANNELS
# ("p2p proxy ibgda"), GPU_CHECK_NVSHMEM=0 (skip NVIDIA's NVSHMEM), GPU_CHECK_TESTS /
# GPU_CHECK_BENCH=0 / GPU_CHECK_RUST=0 (skip a part), GPU_CHECK_NVSHMEM_LIB (NVIDIA's lib folder), GPU_CHECK_LIBCUDA (a
# libcuda.so.1 the search misses; any file there also lets the plumbing run on a machine
# without a GPU, every program then failing). Logs go to
# $TMPDIR/gpu-check.*/logs, and to $OUT/gpu-check-logs when $OUT is set.
#
# Exit status: 0 all ran and passed, 1 something failed or timed out, 2 no CUDA driver,
# 3 usage or a missing/unusable DIR.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
progs="rma signal amo sync coll stream examples buffer_register persistent"

say() { echo "gpu-check: $*"; }

# ------------------------------------------------------------------------------------ prepare
prepare() {
    local out="" arch=sm_90 keep=false
    while [ $# -gt 0 ]; do
        case "$1" in
            --arch) arch=${2:?--arch needs a value, e.g. sm_90}; shift 2 ;;
            --keep-tree) keep=true; shift ;;
            -*) echo "gpu-check: unknown option $1" >&2; exit 3 ;;
            *) out=$1; shift ;;
        esac
    done
    [ -n "$out" ] || { echo "usage: scripts/gpu-check.sh --prepare OUTDIR [--arch sm_90] [--keep-tree]" >&2; exit 3; }
    mkdir -p "$out" || exit 3
    out=$(cd "$out" && pwd)
    # Programs build into $GPU_CHECK_BUILD_DIR (default target/gpu-check-build, kept:
    # tests/cuda/build.sh rebuilds only what changed); the bundle is packed from a copy in
    # $out/tree, so OUTDIR ends up holding only gpu-check.tar.xz.
    local tree="$out/tree" work="$out/work" build=${GPU_CHECK_BUILD_DIR:-$root/target/gpu-check-build} failed=()
    rm -rf "$tree" "$work"
    mkdir -p "$tree" "$work" "$build"
    local manifest="$tree/MANIFEST"
    {
        echo "gpu-check bundle, prepared $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) for $arch"
        echo "source: $root"
    } >"$manifest"

    say "setting up the CUDA toolchain and NVIDIA's NVSHMEM (scripts/cuda-toolchain.sh --nvshmem)"
    local envs
    if ! envs=$(bash "$root/scripts/cuda-toolchain.sh" --nvshmem --env); then
        echo "gpu-check: scripts/cuda-toolchain.sh --nvshmem failed" >&2
        exit 1
    fi
    eval "$envs"
    echo "nvcc: $("$OXSHMEM_NVCC" --version | tail -n1)" >>"$manifest"

    # NVIDIA's NVSHMEM builds.
    say "building the programs against NVIDIA's NVSHMEM ($OXSHMEM_NVSHMEM_HOME)"
    if bash "$root/tests/cuda/build.sh" "$OXSHMEM_NVSHMEM_HOME" "$build/nvshmem-bin" "$arch"; then
        echo "nvshmem-bin: built against nvidia-nvshmem-cu13 ${OXSHMEM_NVSHMEM_VERSION:-3.8.0}" >>"$manifest"
    else
        failed+=("programs against NVIDIA's NVSHMEM")
        echo "nvshmem-bin: FAILED to build some programs" >>"$manifest"
    fi

    # oxshmem: the prefix (oxshmem-install, which builds libnvshmem_device.a too when nvcc is
    # there), else bindings/cuda/build.sh for the device library; then the programs.
    local prefix="$build/oxshmem-prefix" cargo=${CARGO:-cargo}
    say "building oxshmem (cargo build --release -p oxshmem-tools; oxshmem-install --prefix --cuda-arch ${arch#sm_})"
    if (cd "$root" && "$cargo" build --release -p oxshmem-tools --bin oxshmem-install) &&
        "$root/target/release/oxshmem-install" --prefix "$prefix" --cuda-arch "${arch#sm_}" \
            ${GPU_CHECK_FEATURES:+--features "$GPU_CHECK_FEATURES"}; then
        mkdir -p "$tree/oxshmem/bin" "$tree/oxshmem/lib"
        for b in oshrun oxshmem-info; do
            [ -x "$prefix/bin/$b" ] && cp "$prefix/bin/$b" "$tree/oxshmem/bin/"
        done
        cp -P "$prefix"/lib/*.so* "$tree/oxshmem/lib/" 2>/dev/null
        echo "oxshmem: $(ls "$tree/oxshmem/bin" "$tree/oxshmem/lib" | tr '\n' ' ')" >>"$manifest"
        say "building the Rust GPU device's test program (cargo build --release -p oxshmem-tests --features cuda --bin pe-gpu)"
        if (cd "$root" && "$cargo" build --release -p oxshmem-tests --features cuda --bin pe-gpu); then
            cp "$root/target/release/pe-gpu" "$tree/oxshmem/bin/"
            echo "pe-gpu: built" >>"$manifest"
        else
            failed+=("pe-gpu (cargo build --features cuda)")
            echo "pe-gpu: FAILED to build" >>"$manifest"
        fi
    else
        failed+=("oxshmem (cargo build / oxshmem-install)")
        echo "oxshmem: FAILED to build or install" >>"$manifest"
    fi
    if [ -d "$prefix/lib" ] && [ ! -f "$prefix/lib/libnvshmem_device.a" ]; then
        say "oxshmem-install left no libnvshmem_device.a: bindings/cuda/build.sh --arch ${arch#sm_}"
        if [ -f "$root/bindings/cuda/build.sh" ] && bash "$root/bindings/cuda/build.sh" "$work/device" --arch "${arch#sm_}" &&
            cp "$work/device/libnvshmem_device.a" "$prefix/lib/"; then
            :
        else
            failed+=("oxshmem's libnvshmem_device.a (bindings/cuda/build.sh)")
            echo "oxshmem libnvshmem_device.a: FAILED" >>"$manifest"
        fi
    fi
    if [ -f "$prefix/lib/libnvshmem_device.a" ]; then
        say "building the programs against oxshmem ($prefix)"
        if bash "$root/tests/cuda/build.sh" "$prefix" "$build/oxshmem-bin" "$arch"; then
            echo "oxshmem-bin: built against oxshmem ($prefix)" >>"$manifest"
        else
            failed+=("programs against oxshmem")
            echo "oxshmem-bin: FAILED to build some programs" >>"$manifest"
        fi
    fi
    for d in nvshmem-bin oxshmem-bin; do
        [ -d "$build/$d" ] || continue
        mkdir -p "$tree/$d"
        for f in "$build/$d"/*; do
            case "$f" in
                *.log) { echo "build log $f:"; tail -n 20 "$f"; } >>"$manifest" ;;
                *.fatbin) [ "$d" = oxshmem-bin ] && cp "$f" "$tree/$d/" ;;
                *) [ -x "$f" ] && cp "$f" "$tree/$d/" ;;
            esac
        done
    done

    # Strip and pack.
    find "$tree" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null
    find "$tree/oxshmem/lib" -type f -name '*.so*' -exec strip --strip-unneeded {} + 2>/dev/null
    local raw
    raw=$(du -sb "$tree" | cut -f1)
    say "packing $((raw / 1048576)) MiB of programs into $out/gpu-check.tar.xz (xz -9: the NVSHMEM device code repeats in every program)"
    rm -f "$out/gpu-check.tar.xz"
    if ! (cd "$tree" && tar -cf - . | xz -9 -T "${XZ_THREADS:-2}" >"$out/gpu-check.tar.xz"); then
        echo "gpu-check: packing failed" >&2
        exit 1
    fi
    $keep || rm -rf "$tree"
    rm -rf "$work"
    local size
    size=$(du -sb "$out" | cut -f1)
    say "bundle: $out/gpu-check.tar.xz; $out holds $size bytes ($((size / 1048576)) MiB; the limit is 64 MiB)"
    if [ "$size" -gt $((64 * 1048576)) ]; then
        echo "gpu-check: $out is over 64 MiB" >&2
        exit 1
    fi
    if [ ${#failed[@]} -gt 0 ]; then
        say "prepared WITHOUT: ${failed[*]} (the check reports those parts as missing)"
        exit 1
    fi
    say "prepared; on the GPU machine: scripts/gpu-check.sh $out"
}


# ------------------------------------------------------------------------------- prepare-cpu
prepare_cpu() {
    local out=${1:?usage: scripts/gpu-check.sh --prepare-cpu OUTDIR}
    mkdir -p "$out" || exit 3
    out=$(cd "$out" && pwd)
    local tree="$out/tree" cargo=${CARGO:-cargo} target=${CARGO_TARGET_DIR:-$root/target}
    rm -rf "$tree"
    mkdir -p "$tree/oxshmem/bin" "$tree/oxshmem/lib" "$tree/oxshmem-bin"
    say "building oshrun, liboxshmem.so and oshnvcc (debug)"
    (cd "$root" && "$cargo" build -p oxshmem-c -p oxshmem-tools --bin oshnvcc -p oxshmem-bootstrap --bin oshrun) || exit 1
    cp "$target/debug/oshrun" "$tree/oxshmem/bin/"
    cp -P "$target"/debug/liboxshmem.so* "$tree/oxshmem/lib/"
    {
        echo "gpu-check bundle for the CPU target, prepared $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
        echo "source: $root"
    } >"$tree/MANIFEST"
    local p failed=0
    for p in $progs; do
        # Programs built already (tests/cpu_programs.rs passes its folder), else built here.
        if [ -n "${GPU_CHECK_CPU_PROGRAMS:-}" ] && [ -x "$GPU_CHECK_CPU_PROGRAMS/$p" ]; then
            cp "$GPU_CHECK_CPU_PROGRAMS/$p" "$tree/oxshmem-bin/$p"
            continue
        fi
        say "oshnvcc --target cpu tests/cuda/$p.cu"
        if ! "$target/debug/oshnvcc" --target cpu "$root/tests/cuda/$p.cu" -o "$tree/oxshmem-bin/$p"; then
            echo "oxshmem-bin/$p: FAILED to build" >>"$tree/MANIFEST"
            failed=1
        fi
    done
    # The emulated driver the programs load (its path is in them); the check's driver search
    # is pointed at it with GPU_CHECK_LIBCUDA.
    cp "$target/debug/cuda-cpu/emucuda/libcuda.so" "$out/libcuda.so"
    rm -f "$out/gpu-check.tar.xz"
    (cd "$tree" && tar -cf - . | xz -1 -T "${XZ_THREADS:-2}" >"$out/gpu-check.tar.xz") || exit 1
    rm -rf "$tree"
    say "prepared; run: GPU_CHECK_LIBCUDA=$out/libcuda.so GPU_CHECK_NVSHMEM=0 GPU_CHECK_BENCH=0 GPU_CHECK_RUST=0 scripts/gpu-check.sh $out"
    exit $failed
}

# ------------------------------------------------------------------------------------ check
declare -A result bench_us
deadline=0
logdir=""
any_fail=0

left() { echo $((deadline - $(date +%s))); }

# run_step LABEL LIMIT LOG CMD...: runs CMD under timeout (LIMIT or what is left of the cap).
run_step() {
    local label=$1 limit=$2 log=$3
    shift 3
    local l
    l=$(left)
    if [ "$l" -lt 8 ]; then
        echo "$label: skipped (the ${GPU_CHECK_SECONDS:-360} s cap is reached)" >"$log"
        return 125
    fi
    [ "$limit" -lt $((l - 3)) ] || limit=$((l - 3))
    timeout -k 5 "$limit" "$@" >"$log" 2>&1
}

find_libcuda() {
    local p
    if [ -n "${GPU_CHECK_LIBCUDA:-}" ] && [ -e "$GPU_CHECK_LIBCUDA" ]; then echo "$GPU_CHECK_LIBCUDA"; return 0; fi
    p=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
    if [ -n "$p" ] && [ -e "$p" ]; then echo "$p"; return 0; fi
    local d llp=${LD_LIBRARY_PATH:-}
    for d in ${llp//:/ } /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 \
        /usr/local/nvidia/lib /usr/lib/wsl/lib /usr/local/cuda/compat /usr/local/cuda/lib64/stubs/..; do
        if [ -e "$d/libcuda.so.1" ]; then echo "$d/libcuda.so.1"; return 0; fi
    done
    return 1
}

find_nvshmem_lib() {
    if [ -n "${GPU_CHECK_NVSHMEM_LIB:-}" ] && [ -e "$GPU_CHECK_NVSHMEM_LIB/libnvshmem_host.so.3" ]; then echo "$GPU_CHECK_NVSHMEM_LIB"; return 0; fi
    local py d
    for py in python3 python; do
        command -v "$py" >/dev/null || continue
        d=$("$py" -c 'import nvidia.nvshmem as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
        if [ -n "$d" ] && [ -e "$d/libnvshmem_host.so.3" ]; then echo "$d"; return 0; fi
    done
    return 1
}

check() {
    local dir=${1:-$root/target/gpu-check}
    local total=${GPU_CHECK_SECONDS:-360}
    deadline=$(($(date +%s) + total))
    if [ ! -d "$dir" ]; then
        echo "gpu-check: no folder $dir (make it with: scripts/gpu-check.sh --prepare $dir)" >&2
        exit 3
    fi
    dir=$(cd "$dir" && pwd)
    local tmp
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 3
    logdir="$tmp/logs"
    mkdir -p "$logdir"
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp/b'" EXIT  # the unpacked programs; the logs stay
    local b="$dir"
    if [ -f "$dir/gpu-check.tar.xz" ]; then
        say "unpacking $dir/gpu-check.tar.xz into $tmp/b"
        mkdir -p "$tmp/b"
        # tar -J needs the xz program; python3's lzma module does it where xz is missing.
        if ! { command -v xz >/dev/null && timeout 60 tar -C "$tmp/b" -xJf "$dir/gpu-check.tar.xz"; } &&
            ! timeout 90 python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
                "$dir/gpu-check.tar.xz" "$tmp/b"; then
            echo "gpu-check: cannot unpack $dir/gpu-check.tar.xz" >&2
            exit 3
        fi
        b="$tmp/b"
    fi
    [ -f "$b/MANIFEST" ] && sed 's/^/  /' "$b/MANIFEST" | head -n 8
    local ox="$b/oxshmem" oxbin="$b/oxshmem-bin" nvbin="$b/nvshmem-bin"
    [ -x "$ox/bin/oshrun" ] || say "missing: $ox/bin/oshrun (oxshmem did not build); nothing can be launched"
    [ -d "$oxbin" ] || say "missing: $oxbin (the programs built against oxshmem)"
    [ -d "$nvbin" ] || say "missing: $nvbin (the programs built against NVIDIA's NVSHMEM)"

    say "looking for the CUDA driver"
    local libcuda
    if ! libcuda=$(find_libcuda); then
        say "no CUDA driver found (libcuda.so.1): this check needs a GPU machine"
        exit 2
    fi
    say "CUDA driver: $libcuda"
    [ -r /proc/driver/nvidia/version ] && say "$(head -n1 /proc/driver/nvidia/version)"
    if command -v nvidia-smi >/dev/null; then
        timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader 2>&1 |
            sed 's/^/gpu-check: GPU: /'
    else
        say "nvidia-smi: not found"
    fi
    [ -x "$ox/bin/oshrun" ] || { say "no oshrun: cannot launch anything"; exit 1; }

    local nvlib=""
    if [ "${GPU_CHECK_NVSHMEM:-1}" != 0 ]; then
        if nvlib=$(find_nvshmem_lib); then
            say "NVIDIA NVSHMEM: $nvlib"
        else
            say "NVIDIA NVSHMEM: not found (python3 -c 'import nvidia.nvshmem'; or set GPU_CHECK_NVSHMEM_LIB): its column stays empty"
            nvlib=""
        fi
    fi

    local pes=${GPU_CHECK_PES:-2 4} channels=${GPU_CHECK_CHANNELS:-p2p proxy ibgda}
    local cfgs=""
    for c in $channels; do cfgs="$cfgs ox-$c"; done
    [ -n "$nvlib" ] && [ -d "$nvbin" ] && cfgs="$cfgs nvshmem"

    # run_cfg CFG N PROG ARGS...: launches a program of one configuration under oshrun.
    run_cfg() {
        local cfg=$1 n=$2 prog=$3 limit=$4
        shift 4
        local log="$logdir/$cfg-n$n-$prog.log"
        if [ "$cfg" = nvshmem ]; then
            [ -x "$nvbin/$prog" ] || { echo "missing $nvbin/$prog" >"$log"; return 126; }
            run_step "$cfg $prog" "$limit" "$log" env LD_LIBRARY_PATH="$nvlib:${LD_LIBRARY_PATH:-}" \
                NVSHMEM_BOOTSTRAP=PMI NVSHMEM_BOOTSTRAP_PMI=PMI NVSHMEM_REMOTE_TRANSPORT=none \
                CUTEST_TIMEOUT=$((limit - 5)) BENCH_TIMEOUT=$((limit - 5)) \
                "$ox/bin/oshrun" --timeout "$limit" -n "$n" "$nvbin/$prog" "$@"
        else
            [ -x "$oxbin/$prog" ] || { echo "missing $oxbin/$prog" >"$log"; return 126; }
            run_step "$cfg $prog" "$limit" "$log" env LD_LIBRARY_PATH="$ox/lib:${LD_LIBRARY_PATH:-}" \
                OXSHMEM_DEVICE_CHANNEL="${cfg#ox-}" CUTEST_TIMEOUT=$((limit - 5)) BENCH_TIMEOUT=$((limit - 5)) \
                "$ox/bin/oshrun" --timeout "$limit" -n "$n" "$oxbin/$prog" "$@"
        fi
    }

    run_tests_n() {
        local n=$1 cfg prog rc
        for cfg in $cfgs; do
            for prog in $progs; do
                run_cfg "$cfg" "$n" "$prog" "${GPU_CHECK_TEST_LIMIT:-40}"
                rc=$?
                local v=ok
                case $rc in
                    0) v=ok ;;
                    124 | 137) v=TIMEOUT; any_fail=1 ;;
                    125) v=skip ;;
                    126) v=missing; any_fail=1 ;;
                    *) v="FAIL($rc)"; any_fail=1 ;;
                esac
                result[$cfg,$n,$prog]=$v
                if [ "$v" != ok ]; then
                    say "$cfg -n $n $prog: $v"
                    [ "$v" = skip ] || tail -n 4 "$logdir/$cfg-n$n-$prog.log" | sed 's/^/    /'
                else
                    say "$cfg -n $n $prog: ok"
                fi
            done
        done
    }

    run_bench() {
        local cfg rc line
        for cfg in $cfgs; do
            run_cfg "$cfg" 2 device_bench "${GPU_CHECK_BENCH_LIMIT:-75}" --csv --quick
            rc=$?
            local log="$logdir/$cfg-n2-device_bench.log"
            if [ $rc -ne 0 ]; then
                say "$cfg device_bench: $([ $rc = 125 ] && echo skipped || echo "failed ($rc)")"
                [ $rc = 125 ] || { any_fail=1; tail -n 4 "$log" | sed 's/^/    /'; }
            else
                say "$cfg device_bench: ok"
            fi
            while IFS=, read -r name bytes us rate; do
                bench_us[$cfg,$name]=$us
            done < <(grep -E '^[A-Za-z0-9_]+,[0-9]+,[0-9.]+,' "$log" 2>/dev/null)
        done
    }

    local first=${pes%% *} rest=${pes#* }
    [ "$rest" = "$pes" ] && rest=""
    if [ "${GPU_CHECK_TESTS:-1}" != 0 ]; then
        say "test programs with $first PEs ($cfgs)"
        run_tests_n "$first"
    fi
    if [ "${GPU_CHECK_BENCH:-1}" != 0 ]; then
        say "device_bench with 2 PEs ($cfgs)"
        run_bench
    fi
    if [ "${GPU_CHECK_TESTS:-1}" != 0 ]; then
        for n in $rest; do
            say "test programs with $n PEs ($cfgs)"
            run_tests_n "$n"
        done
    fi

    # The Rust GPU device: pe-gpu loads gpu_ring.fatbin (P2P).
    local -A rust
    [ "${GPU_CHECK_RUST:-1}" != 0 ] || pes_rust=""
    for n in ${pes_rust-$pes}; do
        for case in ring errors; do
            local log="$logdir/rust-n$n-$case.log" v
            if [ ! -x "$ox/bin/pe-gpu" ] || [ ! -f "$oxbin/gpu_ring.fatbin" ]; then
                v=missing
            elif run_step "rust pe-gpu $case" "${GPU_CHECK_TEST_LIMIT:-40}" "$log" env LD_LIBRARY_PATH="$ox/lib:${LD_LIBRARY_PATH:-}" \
                "$ox/bin/oshrun" --timeout "${GPU_CHECK_TEST_LIMIT:-40}" -n "$n" "$ox/bin/pe-gpu" "$case" "$oxbin/gpu_ring.fatbin"; then
                v=ok
            else
                v="FAIL($?)"
            fi
            [ "$v" = ok ] || { any_fail=1; tail -n 4 "$log" 2>/dev/null | sed 's/^/    /'; }
            rust[$n,$case]=$v
            say "rust pe-gpu -n $n $case: $v"
        done
    done

    # Tables.
    echo
    echo "== the Rust GPU device (pe-gpu with gpu_ring.fatbin, P2P) =="
    for n in ${pes_rust-$pes}; do echo "n=$n | ring ${rust[$n,ring]} | errors ${rust[$n,errors]}"; done
    echo
    echo "== test programs (oshrun -n N on one GPU) =="
    local hdr="program" cfg n prog
    for cfg in $cfgs; do for n in $pes; do hdr="$hdr | $cfg n=$n"; done; done
    echo "$hdr"
    for prog in $progs; do
        local row="$prog"
        for cfg in $cfgs; do for n in $pes; do row="$row | ${result[$cfg,$n,$prog]:--}"; done; done
        echo "$row"
    done
    echo
    echo "== device_bench, 2 PEs, median microseconds per operation (put_rate: per put) =="
    echo "operation | oxshmem p2p | proxy | ibgda | NVSHMEM | ratio (best oxshmem / NVSHMEM)"
    local ops="put_rate_8B put_lat_8B get_lat_8B alltoall_7KiB moe_dispatch moe_combine moe_dispatch_combine"
    for op in $ops; do
        local p=${bench_us[ox-p2p,$op]:--} x=${bench_us[ox-proxy,$op]:--} i=${bench_us[ox-ibgda,$op]:--}
        local v=${bench_us[nvshmem,$op]:--} ratio=-
        ratio=$(awk -v a="$p" -v b="$x" -v c="$i" -v n="$v" 'BEGIN {
            best = -1; split(a " " b " " c, xs, " ");
            for (k = 1; k <= 3; k++) if (xs[k] != "-" && (best < 0 || xs[k] + 0 < best)) best = xs[k] + 0;
            if (best < 0 || n == "-" || n + 0 == 0) print "-"; else printf "%.2f", best / n }')
        echo "$op | $p | $x | $i | $v | $ratio"
    done
    echo
    say "logs: $logdir"
    if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
        cp -r "$logdir" "$OUT/gpu-check-logs" 2>/dev/null && say "logs copied to \$OUT/gpu-check-logs"
    fi
    if [ "$(left)" -lt 0 ]; then say "the ${total} s cap was reached"; fi
    exit $any_fail
}

main() {
    case "${1:-}" in
        --prepare) shift; prepare "$@" ;;
        --prepare-cpu) shift; prepare_cpu "$@" ;;
        -h | --help) sed -n "2,$(($(grep -n "^set -uo" "$0" | cut -d: -f1) - 1))p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) check "$@" ;;
    esac
}

# One line, read whole before it runs: editing this file while it runs cannot derail it.
main "$@"; exit $?
