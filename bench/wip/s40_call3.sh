#!/bin/sh
# s40_call3.sh (an H200): the GPU tests, the bench of record with its timeline, then 3
# alternating rounds of the switches for the compute-bound loops (GLIM_CUDA_SPAN_AHEAD, two row
# blocks a chunk), the L2 prefetch sizes and the no-bytes ceiling; timelines of the best guess
# and of no bytes. On an H100: the tests and a 2-round A/B only. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 \
        GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15 \
        GLIM_CUDA_SPAN_TWO=9,GLIM_CUDA_SPAN_AHEAD=15 \
        GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0,GLIM_CUDA_L2PF_DOWN_SELF=0 GLIM_CUDA_L2PF_GU_O=3 \
        GLIM_CUDA_L2PF_GU_O=5 GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 GLIM_CUDA_DIAG_RING=4
else
    sh bench/decode_ab.sh 2 new GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15
fi
cp $OUT/ab.md $OUT/ab_s40_call3.md
for v in GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_DIAG_RING=4; do
    n=$(echo "$v" | tr '=,' '__')
    env $(echo "$v" | tr ',' ' ') timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$n: $(grep -E '^\| (decode|qkvg|attention|o_proj|gate/up|down) ' $OUT/tl_$n.md | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
