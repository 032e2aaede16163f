#!/bin/sh
# s44_h200.sh: session 40's owed H200 call (s40_call7.sh: stops at once on another card; the
# AHEAD test, the bench of record with its timeline, 2 alternating rounds of the compute-bound
# switches, the prefetch off and larger, the no-bytes ceiling) plus the timeline of ROW0 + TWO=13
# + AHEAD=15, so that a win or a loss there is seen per product. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
sh bench/wip/s40_call7.sh || exit $?
env GLIM_CUDA_SPAN_ROW0=1 GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_SPAN_AHEAD=15 timeout 100 build/glimmer bench --synthetic \
    --timeline --prompt 0 --out $OUT/tl_row0_two13_ahead15.md > /dev/null 2>&1
for f in $OUT/bench.md $OUT/tl_row0_two13_ahead15.md; do
    echo "== $f"; grep -E '^\| (decode @ ctx 0|qkvg|attention|o_proj|gate/up|down) ' $f | head -7 | cut -c1-200
done
