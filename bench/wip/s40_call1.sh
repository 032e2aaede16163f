#!/bin/sh
# s40_call1.sh: bench/wip/l2pf_last.patch applied (GLIM_CUDA_L2PF_LAST): its test, then an A/B
# against the default (3 rounds), and the no-bytes proxy of the H200's compute-bound loops
# (GLIM_CUDA_DIAG_RING=4) with and without two row blocks a chunk. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=l2pf_bits GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward 2>&1 | grep -E "^(PASS|FAIL)|rc=" | head
sh bench/decode_ab.sh 3 new GLIM_CUDA_L2PF_LAST=1 GLIM_CUDA_DIAG_RING=4 \
    GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
cp $OUT/ab.md $OUT/s40_call1_ab.md
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
