#!/bin/sh
# s39_call2.sh: gate/up's own prefetch before its wait (GLIM_CUDA_L2PF_GU_SELF=S, rb % S == S - 2,
# on top of o_proj's every 4th) was call 1's best (+1.1 % at ctx 0 with S 8, H100): its size
# (12, 16), with o_proj's every 3rd, with the delay, with ROW0 + TWO=13; timelines of the best.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
S=GLIM_CUDA_L2PF_GU_SELF
sh bench/decode_ab.sh 2 new $S=8 $S=12 $S=16 $S=6 $S=8,GLIM_CUDA_L2PF_GU_O=3 $S=8,GLIM_CUDA_L2PF_DELAY=4000 \
    $S=8,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
for v in $S=8 GLIM_CUDA_L2PF_DELAY=4000 GLIM_CUDA_L2PF_GU_O=0; do
    n=$(echo $v | tr '=,' '__')
    env $v timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 -n 32 --out $OUT/tl_$n.md > /dev/null 2>&1
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
