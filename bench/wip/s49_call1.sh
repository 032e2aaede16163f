#!/bin/sh
# s49_call1.sh (session 49's first call): main at 8522bed had not run on a GPU (session 48's last
# mend, same SASS bar one prologue's register order): the three GPU test programs and the quick
# sanitizer pass, then bench/wip/s49_h200.sh (the bench of record, no-bytes timeline, A/B against
# session 47's main and three H200-sensitive switches). Carry .deps, build/cuda_objs.tar.xz,
# build/old_glimmer.xz (257425b).
cd "$(dirname "$0")/../.." || exit 1
t0=$(date +%s)
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sh bench/gpu_tests.sh
sh bench/san_quick.sh
echo "checks done at $(( $(date +%s) - t0 )) s"
BUILT=1 sh bench/wip/s49_h200.sh
echo "call took $(( $(date +%s) - t0 )) s"
