#!/bin/sh
# s39_call7.sh: down's and qkvg's own blocks prefetching their rows before their wait
# (GLIM_CUDA_L2PF_DOWN_SELF: during gate/up's tail; GLIM_CUDA_L2PF_QKVG_SELF: during the previous
# down's loop), 3 rounds; l2pf_bits first. On an H200 also the session's defaults against
# e319676 (old) and the bench of record. Carry .deps, build/src/cuda, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=l2pf_bits GLIM_REQUIRE_CUDA=1 timeout 150 build/tests/test_cuda_forward 2>&1 | grep -E "PASS|FAIL|info" | tail -6
D=GLIM_CUDA_L2PF_DOWN_SELF Q=GLIM_CUDA_L2PF_QKVG_SELF
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new old GLIM_CUDA_L2PF_GU_SELF=0 GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0 \
        $D=16 $Q=16 GLIM_CUDA_TMA_SLOTS_GU=3 GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
    timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
else
    sh bench/decode_ab.sh 3 new $D=16 $D=8 $Q=16 $Q=8 $D=16,$Q=16
fi
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
