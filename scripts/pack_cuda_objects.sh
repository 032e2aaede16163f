#!/bin/sh
# pack_cuda_objects.sh: build/src/cuda's objects as one archive, build/cuda_objs.tar.xz (~8 MB
# against 28 MB as files), so that a device call's carry (64 MiB with the working tree) holds
# them next to .deps and two earlier binaries (scripts/old_binary.sh). scripts/device_build.sh
# --carried unpacks it there. Refuses a stale build: the device would run objects older than
# their sources.
# Usage: scripts/pack_cuda_objects.sh   (then carry "build/cuda_objs.tar.xz" instead of build/src/cuda)
set -e
cd "$(dirname "$0")/.."
make -q all || { echo "$0: the build is not up to date: run make all first" >&2; exit 1; }
tar -cf - build/src/cuda/*.o | xz -T0 -3 > build/cuda_objs.tar.xz
echo "build/cuda_objs.tar.xz: $(ls build/src/cuda/*.o | wc -l) objects, $(wc -c < build/cuda_objs.tar.xz) bytes"
