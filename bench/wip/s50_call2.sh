#!/bin/sh
# s50_call2.sh (session 50): main with the early merger count (5315a88) on whichever card comes.
# First the figures (s49_h200.sh on the built tree: the bench of record, no-bytes timeline, A/B
# against 8522bed and the H200-sensitive switches, ROUNDS rounds, default 2), then the GPU tests
# of the landed tree under the defaults (all three programs) and the quick sanitizer with
# synccheck. Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz (8522bed).
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
BUILT=1 ROUNDS=${ROUNDS:-2} sh bench/wip/s49_h200.sh
sh bench/gpu_tests.sh
sh bench/san_quick.sh --sync
echo "call took $(( $(date +%s) - t0 )) s"
