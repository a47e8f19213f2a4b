#!/usr/bin/env bash
# Runs Miri (the nightly toolchain's UB checker) over the unit tests of the modules that hold
# unsafe code and touch no other process: what .ci/run calls, and what a developer runs after
# changing unsafe code in the copies, segments, reductions, teams, waits, device state or IBGDA
# queues. Safe code (the configuration parser, the bootstrap's codecs, the DEVX command
# transcriptions, the header generator) has nothing for Miri to find that the ordinary tests do
# not, and cost most of its minutes; a module that gains unsafe code joins the lists below.
# Installs the nightly toolchain's miri component when missing. About 5 minutes on 2 cores, half
# of it building the standard library for Miri.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal --component miri,rust-src
fi
cargo +nightly miri setup
# Isolation off: the config tests read the repository's docs. Leaks ignored: a leak is not
# undefined behaviour, and test helpers leak on purpose to get 'static buffers (the WQE
# round-trip helpers in device/src/ibgda/layout.rs).
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation -Zmiri-ignore-leaks}"
# The runtime: shared-memory copies, heap segments and static data, reductions and collective
# headers, teams, the world's shared layout, the wait table, the relaxed atomic element copies,
# and the safe local accessors of SymSlice and its puts and gets to this PE racing another
# thread's accesses.
cargo +nightly miri test -p oxshmem --lib -- transport::shm:: heap:: coll::reduce:: coll::header:: team:: \
    world::layout:: wait::tests:: transport::relaxed:: sym::slice:: sym::rma::
# The device layer: device state and error slots, the IBGDA queue pair, software NIC, ringer and
# WQE layouts, device-memory channels, the software NIC provider, the device API's local read
# racing a device thread's stores; the IBGDA queue's counters and the mlx5 WQE layout from
# outside the crate.
cargo +nightly miri test -p oxshmem-device --lib -- ibgda:: state:: channel:: nic::soft:: api::
cargo +nightly miri test -p oxshmem-device --test qp_counters --test mlx5_layout
