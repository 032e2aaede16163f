#!/bin/sh
# s37_call7.sh (session 37): the TWO A/B on an H200 only (calls 2-6 got H100s); on an H100 it
# stops at once (the device time of a start is spent either way). Here first: make -j2 all.
# Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: stopped"; exit 0; }
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8 GLIM_CUDA_SPAN_TWO=11 \
    GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=9
for v in 0 9; do
    GLIM_CUDA_SPAN_TWO=$v build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/two${v}_timeline.md > /dev/null 2>&1
    echo "TWO=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/two${v}_timeline.md | head -5
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
