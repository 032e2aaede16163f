#!/bin/sh
# s40_call3.sh (an H200): the GPU tests, the bench of record with its timeline, then 3
# alternating rounds of the switches for the compute-bound loops (GLIM_CUDA_SPAN_AHEAD for
# gate/up and down or all four, two row blocks a chunk), the L2 prefetch sizes and the no-bytes
# ceiling; timelines of no bytes and of ROW0 + TWO=13 + AHEAD=12. On an H100: the tests, the
# bench of record and a 2-round A/B. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
# ONLY_H200=1: stop at once on another card (a call naming nvidia-h200 may get an H100)
[ "${ONLY_H200:-0}" = 1 ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && { echo "not an H200"; exit 3; }
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
A=GLIM_CUDA_SPAN_AHEAD T=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new $A=15 $A=12 $T $T,$A=15 GLIM_CUDA_SPAN_TWO=9,$A=15 \
        GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0,GLIM_CUDA_L2PF_DOWN_SELF=0 GLIM_CUDA_L2PF_GU_O=3 \
        GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 GLIM_CUDA_L2PF_QKVG_SELF=16 GLIM_CUDA_DIAG_RING=4
    TL="GLIM_CUDA_DIAG_RING=4 $T,$A=15"
else
    sh bench/decode_ab.sh 2 new $A=15 $T,$A=15
    TL=""
fi
cp $OUT/ab.md $OUT/ab_s40_call3.md
for v in $TL; do
    n=$(echo "$v" | tr '=,' '__' | cut -c1-80)
    env $(echo "$v" | tr ',' ' ') timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$v: $(grep -E '^\| (decode|qkvg|attention|o_proj|gate/up|down) ' $OUT/tl_$n.md | head -7 | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
