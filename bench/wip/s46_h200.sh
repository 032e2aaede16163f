#!/bin/sh
# s46_h200.sh: the H200 call owed since session 37, on session 46's tree (ROW0 + TWO=13 the
# defaults, the high nibbles unshifted): stops at once on another card; else the bench of record
# with its timeline, the no-bytes timeline, and 3 alternating rounds against the tree before the
# session (old = build/old_glimmer.xz under ROW0=0, TWO=0: main at cbbfb19), AHEAD=15, and both
# trees without weight bytes; the forward test last if time is left. Carry .deps, build/src/cuda, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 3; }
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
for f in $OUT/bench.md $OUT/tl_nobytes.md; do
    echo "== $f"; grep -E '^\| (decode @ ctx 0|qkvg|attention|o_proj|gate/up|down) ' $f | head -7 | cut -c1-200
done
O=old,GLIM_CUDA_SPAN_ROW0=0,GLIM_CUDA_SPAN_TWO=0
sh bench/decode_ab.sh 3 new $O GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_DIAG_RING=4 $O,GLIM_CUDA_DIAG_RING=4 2>&1 | tail -5
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
# the forward test last, where the call has the time (it passed on an H100 in call 1)
[ $(( $(date +%s) - t0 )) -lt ${TESTS_BEFORE:-150} ] && sh bench/gpu_tests.sh test_cuda_forward
echo "all took $(( $(date +%s) - t0 )) s"
