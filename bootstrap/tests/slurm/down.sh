#!/usr/bin/env bash
# Stop everything that up.sh started in DIR: slurmd and slurmctld, and what outlives them —
# job step daemons (slurmstepd) and the tasks they started. All of those, and nothing else,
# carry SLURM_CONF=DIR/slurm.conf in their environment (up.sh exports it to the daemons, which
# pass it on). SIGTERM first, SIGKILL after ~3 s. Safe to run twice, or on a folder where up.sh
# failed half-way.
set -uo pipefail

dir=${1:?usage: down.sh DIR}
dir=$(cd "$dir" 2>/dev/null && pwd || echo "$dir")
conf="$dir/slurm.conf"

ours() {
    # One grep over every process's environment; -z: entries end with NUL.
    grep -lFxz "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null |
        sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' |
        grep -vx -e "$$" -e "${BASHPID:-$$}" || true
}

# The daemons first, so that no new step starts while the others are stopped.
for daemon in slurmd slurmctld; do
    pid=$(cat "$dir/$daemon.pid" 2>/dev/null || true)
    [ -n "$pid" ] && ours | grep -qx "$pid" && kill -TERM "$pid" 2>/dev/null
done
pids=$(ours)
[ -n "$pids" ] && kill -TERM $pids 2>/dev/null
for _ in $(seq 1 60); do
    pids=$(ours)
    [ -z "$pids" ] && break
    sleep 0.05
done
status=0
if [ -n "$pids" ]; then
    echo "down.sh: still running after SIGTERM, killing: $(echo $pids)" >&2
    kill -KILL $pids 2>/dev/null || status=1
fi
rm -f "$dir/slurmd.pid" "$dir/slurmctld.pid"
exit $status
