#!/bin/sh
# device_build.sh: builds glimmer on the GPU machine, which reaches no package registry.
# The -dev packages travel in .deps/root (made here by scripts/fetch-device-deps.sh and named in
# the device tool's `carry`); the build points at them through DEPS_PREFIX.
set -e
cd "$(dirname "$0")/.."
[ -d .deps/root/usr/include ] || { echo "device_build: .deps/root missing (run scripts/fetch-device-deps.sh here and carry .deps)" >&2; exit 1; }
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" "$@"
