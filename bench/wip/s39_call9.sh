#!/bin/sh
# s39_call9.sh: the session's final tree (GLIM_CUDA_L2PF_GU_SELF=16, GLIM_CUDA_L2PF_DOWN_SELF=6 the
# defaults): the GPU tests, an A/B against session 38's end (old = e319676) and the tree without
# down's prefetch, 3 rounds (on an H200 also the switches still to try there), the bench of
# record with its timeline. GLIM_CUDA_L2PF_LAST=1 (bench/wip/l2pf_last.patch, written after call
# 9, not yet run: apply it first, or drop the variant) in both branches. Carry .deps, build/src/cuda, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new old GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0,GLIM_CUDA_L2PF_DOWN_SELF=0 \
        GLIM_CUDA_L2PF_QKVG_SELF=16 GLIM_CUDA_TMA_SLOTS_GU=3 GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 \
        GLIM_CUDA_L2PF_LAST=1
else
    sh bench/decode_ab.sh 3 new old GLIM_CUDA_L2PF_DOWN_SELF=0 GLIM_CUDA_L2PF_LAST=1
fi
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
