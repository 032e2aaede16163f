#!/bin/sh
# s39_call6.sh: gate/up's ring deeper than 2 slots a warp now that a third of its chunks are L2
# hits (GLIM_CUDA_TMA_SLOTS_GU 3, 4; a hit holds one of 2 slots while it waits for the warp, so
# fewer of its requests are in flight: its loop at 2.39 TB/s of the DRAM bytes against 3.0
# without the prefetch), down's (GLIM_CUDA_TMA_SLOTS_DOWN=3), with more prefetch. The bits test
# first. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=deep_ring_bits GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_forward 2>&1 | tail -3
G=GLIM_CUDA_TMA_SLOTS_GU
sh bench/decode_ab.sh 3 new $G=3 $G=4 GLIM_CUDA_TMA_SLOTS_DOWN=3 $G=4,GLIM_CUDA_TMA_SLOTS_DOWN=3 \
    $G=4,GLIM_CUDA_L2PF_GU_O=3 $G=4,GLIM_CUDA_L2PF_GU_SELF=8 $G=4,GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0
env $G=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 -n 32 --out $OUT/tl_gu4.md > /dev/null 2>&1
grep -E "^\| (decode|gate|down)" $OUT/tl_gu4.md
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
