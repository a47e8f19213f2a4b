#!/bin/sh
# Builds oxshmem in release and installs it under a prefix:
#
#   bindings/tools/install.sh --prefix DIR [--features LIST] [--pmix]
#
# bin/ (oshrun, oshcc, oshc++, oshcxx, oshCC, oshfort, oshnvcc, oxshmem-info), lib/ (liboxshmem.so,
# liboxshmem.so.1, liboxshmem.a, pkgconfig/oxshmem.pc, oxshmem/cpu/: oshnvcc's CPU target),
# include/ (shmem.h, shmemx.h, mpp/, nvshmem*.h, oxshmem/: the CPU target's CUDA headers),
# share/oxshmem/fortran/shmem.f90. All the work is done by the oxshmem-install program
# (bindings/tools/src/install.rs); `oxshmem-install --help` lists its options.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
exec "${CARGO:-cargo}" run --quiet --release --manifest-path "$root/Cargo.toml" \
    -p oxshmem-tools --bin oxshmem-install -- "$@"
