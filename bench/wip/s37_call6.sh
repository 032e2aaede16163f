#!/bin/sh
# s37_call6.sh (session 37): what a span kernel with 8 working warps costs (GLIM_CUDA_SPAN_WARPS=8:
# 8 span groups, the other 8 warps idle but in the prologue and merge) — the price side of a
# half-SM design in which the next product's blocks are resident beside the running ones (no late
# launches, no cold starts at the NORM boundaries). With and without weight bytes (DIAG_RING=4:
# the compute-bound regime of an H200's qkvg, o_proj and down), and with TWO 9. On an H200 also
# call 5's TWO A/B. Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8 GLIM_CUDA_SPAN_TWO=11 \
        GLIM_CUDA_SPAN_WARPS=8 GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=9
    cp $OUT/ab.md $OUT/ab_h200.md
    for v in 0 9; do
        GLIM_CUDA_SPAN_TWO=$v build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/two${v}_timeline.md > /dev/null 2>&1
        echo "TWO=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/two${v}_timeline.md | head -5
    done
else
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_WARPS=8 GLIM_CUDA_SPAN_WARPS=8,GLIM_CUDA_SPAN_TWO=9 \
        GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_WARPS=8
    for v in 16 8; do
        GLIM_CUDA_SPAN_WARPS=$v build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/w${v}_timeline.md > /dev/null 2>&1
        echo "SPAN_WARPS=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/w${v}_timeline.md | head -5
    done
fi
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
