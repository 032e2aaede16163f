#!/bin/sh
# s40_h200.sh: the tree on an H200 (sessions 38-39's L2 prefetch never ran on one): the GPU
# tests, the bench of record with its timeline, then 3 alternating rounds of the prefetch sizes,
# two row blocks a chunk (TWO=9; ROW0 + TWO=13) and the no-bytes ceiling. On an H100 only the
# tests and a short A/B. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0,GLIM_CUDA_L2PF_DOWN_SELF=0 \
        GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_GU_O=5 GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 \
        GLIM_CUDA_L2PF_QKVG_SELF=16 GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 \
        GLIM_CUDA_DIAG_RING=4
    cp $OUT/ab.md $OUT/ab_h200.md
    GLIM_CUDA_SPAN_ROW0=1 GLIM_CUDA_SPAN_TWO=13 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_row0_two13.md > /dev/null 2>&1
else
    sh bench/decode_ab.sh 2 new GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
fi
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
