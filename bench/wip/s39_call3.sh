#!/bin/sh
# s39_call3.sh: gate/up's own prefetch's size around call 2's best (GLIM_CUDA_L2PF_GU_SELF 12 and
# 16: +1.4 % at ctx 0 on an H100), with the delay (GLIM_CUDA_L2PF_DELAY=4000) and o_proj's every
# 3rd; 3 rounds.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
S=GLIM_CUDA_L2PF_GU_SELF D=GLIM_CUDA_L2PF_DELAY=4000
sh bench/decode_ab.sh 3 new $S=12 $S=16 $S=24 $S=32 $S=12,$D $S=16,$D $S=16,$D,GLIM_CUDA_L2PF_GU_O=3
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
