#!/usr/bin/env bash
# Bring up a private one-node Slurm cluster on this machine, for the launcher tests.
#
#   up.sh DIR     writes DIR/slurm.conf, starts slurmctld and slurmd with their state, spool,
#                 pid and log files under DIR, waits until the node accepts jobs, and prints
#                 the line `SLURM_CONF=DIR/slurm.conf` (export it for srun).
#   down.sh DIR   stops everything that up.sh started there.
#
# Authentication is auth/none + cred/none: no munged, nothing outside DIR. The two ports are
# picked at random below the kernel's ephemeral range among ports no socket uses (override with
# OXS_SLURMCTLD_PORT / OXS_SLURMD_PORT), so several clusters can run side by side; if a daemon
# still dies at start (a port taken in between), up.sh stops what it started and tries new
# ports, three times. Every wait is bounded: it gives up after 20 s. Needs root (slurmd starts
# job steps as the submitting user) and Debian's `slurm-wlm` (22.05), with its mpi/pmix plugin
# for --mpi=pmix. The node claims 64 CPUs, so jobs may have more tasks than the machine has cores.
set -euo pipefail

dir=${1:?usage: up.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
for tool in slurmctld slurmd scontrol srun; do
    command -v "$tool" >/dev/null || { echo "up.sh: $tool not found (apt-get install slurm-wlm)" >&2; exit 2; }
done
if [ "$(id -u)" != 0 ]; then
    echo "up.sh: slurmd must run as root here" >&2
    exit 2
fi

# A port that no TCP socket uses (listening, connected or closing), below the ephemeral range
# so that no outgoing connection takes it before the daemon binds it.
ephemeral_lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
    local p hex
    for _ in $(seq 1 500); do
        p=$((10000 + RANDOM % (ephemeral_lo - 10000)))
        hex=$(printf ':%04X ' "$p")
        if ! grep -qi -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    echo "up.sh: no free port found" >&2
    exit 1
}

alive() { # alive PIDFILE: the daemon it names runs
    local pid
    pid=$(cat "$1" 2>/dev/null || true)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

export SLURM_CONF="$dir/slurm.conf"
start=$SECONDS
for attempt in 1 2 3; do
    ctld_port=${OXS_SLURMCTLD_PORT:-$(free_port)}
    slurmd_port=${OXS_SLURMD_PORT:-$(free_port)}
    while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
    rm -rf "$dir/state" "$dir/spool"
    mkdir -p "$dir/state" "$dir/spool"
    cat >"$SLURM_CONF" <<CONF
# Written by oxshmem bootstrap/tests/slurm/up.sh; private to this folder.
ClusterName=oxs$$
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=5
InactiveLimit=0
KillWait=2
MinJobAge=2
# Jobs of more tasks than cores: the node claims 64 CPUs whatever it has.
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=64 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
    # -i: ignore saved state; -c: clear it. Both daemonize and write their pid files. Their
    # stdio goes to files: our caller's pipes would stay open as long as the daemons run.
    slurmctld -i -c -f "$SLURM_CONF" </dev/null >"$dir/slurmctld.out" 2>&1 || true
    slurmd -c -f "$SLURM_CONF" </dev/null >"$dir/slurmd.out" 2>&1 || true
    # Ready when the node is idle (or mixed/allocated: usable either way).
    state=unknown
    while [ $((SECONDS - start)) -lt 20 ]; do
        if ! alive "$dir/slurmctld.pid" || ! alive "$dir/slurmd.pid"; then
            sleep 0.1 # a pid file may lag the fork; look twice before giving up
            alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid" || { state=dead; break; }
        fi
        state=$(timeout 5 scontrol -o show node localhost 2>/dev/null |
            sed -n 's/.* State=\([A-Z+_]*\).*/\1/p' || true)
        case "$state" in
            IDLE* | MIXED* | ALLOCATED*)
                echo "SLURM_CONF=$SLURM_CONF"
                exit 0
                ;;
        esac
        sleep 0.05
    done
    echo "up.sh: attempt $attempt: the node is not ready (state: ${state:-unknown}; ports $ctld_port, $slurmd_port); see $dir/*.log" >&2
    tail -n 3 "$dir"/slurm*.out "$dir/slurmctld.log" "$dir/slurmd.log" >&2 2>/dev/null || true
    "$here/down.sh" "$dir" >&2 || true
    [ $((SECONDS - start)) -lt 20 ] || break
done
echo "up.sh: giving up after $((SECONDS - start)) s" >&2
exit 1
