#!/bin/sh
# s37_call8.sh (session 37): qkvg's and gate/up's 52 spans on 16 span groups instead of 13
# (GLIM_CUDA_SPAN_WARPS=16: the same longest share of 4 spans, but 4 warps on every scheduler
# instead of 4 on one and 3 on the others, which matters if the loop is issue-bound per
# scheduler), with and without weight bytes; on an H200 first s37_call7's TWO A/B.
# Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8 GLIM_CUDA_SPAN_TWO=11 \
        GLIM_CUDA_SPAN_WARPS=16 GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=9
    cp $OUT/ab.md $OUT/ab_h200.md
    for v in 0 9; do
        GLIM_CUDA_SPAN_TWO=$v build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/two${v}_timeline.md > /dev/null 2>&1
        echo "TWO=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/two${v}_timeline.md | head -5
    done
else
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_WARPS=16 GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_WARPS=16
    GLIM_CUDA_SPAN_WARPS=16 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/w16_timeline.md > /dev/null 2>&1
    grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/w16_timeline.md | head -5
fi
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
