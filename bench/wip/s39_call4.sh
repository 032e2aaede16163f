#!/bin/sh
# s39_call4.sh: the tree with GLIM_CUDA_L2PF_GU_SELF=16 the default: the GPU tests, an A/B against
# session 38's end (old = e319676) and the tree with it off, 3 rounds, and the bench of record with
# its timeline. On an H200 also the variants s39_h200.sh was for (o_proj's size, ROW0 + TWO=13,
# no bytes). Carry .deps, build/src/cuda, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
R=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new old GLIM_CUDA_L2PF_GU_SELF=0 GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_GU_SELF=8 $R \
        GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,$R
else
    sh bench/decode_ab.sh 3 new old GLIM_CUDA_L2PF_GU_SELF=0
fi
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
