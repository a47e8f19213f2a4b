#!/usr/bin/env bash
# Runs Miri (the nightly toolchain's UB checker) over the unit tests that touch no other
# process: what .ci/run calls, and what a developer runs after changing unsafe code in the
# allocator, codecs, queues or copies. Installs the nightly toolchain's miri component when
# missing. Takes about 10 minutes on 2 cores, most of it building the standard library for Miri.
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
# The runtime: everything but the configuration parser (safe code walking the repository,
# slow under Miri and with nothing for it to find).
cargo +nightly miri test -p oxshmem --lib -- --skip config::
# The device layer: device state, error slots, C layouts, the IBGDA queue's counters and the
# mlx5 WQE layout.
cargo +nightly miri test -p oxshmem-device --lib --test qp_counters --test mlx5_layout
# The bootstrap's codecs: PMI wire format, the job mapping, the unique-id codec.
cargo +nightly miri test -p oxshmem-bootstrap --lib -- wire:: mapping:: uid::codec
