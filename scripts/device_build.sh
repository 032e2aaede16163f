#!/bin/sh
# device_build.sh: builds glimmer on the GPU machine, which reaches no package registry.
# The -dev packages travel in .deps/root (made here by scripts/fetch-device-deps.sh and named in
# the device tool's `carry`); the build points at them through DEPS_PREFIX.
# --carried: the CUDA objects came in the carry (build/src/cuda, built here by `make all`, or
# build/cuda_objs.tar.xz from scripts/pack_cuda_objects.sh) and are
# used as they are: their dependency lists name this machine's system headers, which the device
# may not have, so they are dropped, and the objects are made newer than the copied sources. A
# carried object older than its source is therefore run as it is: `make -q all` here first.
# Usage: scripts/device_build.sh [--carried] [make arguments]
set -e
cd "$(dirname "$0")/.."
if [ "${1:-}" = --carried ]; then
    shift
    # the objects may travel as one archive (scripts/pack_cuda_objects.sh)
    if [ -f build/cuda_objs.tar.xz ]; then
        mkdir -p build/src/cuda
        xz -dc build/cuda_objs.tar.xz | tar -xf -
    fi
    rm -f build/src/cuda/*.d
    touch build/src/cuda/*.o 2>/dev/null || true
fi
[ -d .deps/root/usr/include ] || { echo "device_build: .deps/root missing (run scripts/fetch-device-deps.sh here and carry .deps)" >&2; exit 1; }
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" "$@"
