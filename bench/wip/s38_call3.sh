#!/bin/sh
# s38_call3.sh (not run: no machine was lent; s38_call4.sh took its control and sizes): call 2 found o_proj's prefetch of every 5th gate/up row block before its PDL wait
# with attention's trigger at its start (GLIM_CUDA_L2PF_GU_O=5 GLIM_CUDA_L2PF_AT=2
# GLIM_CUDA_ATT_TRIG=1) +2.8 / +2.6 / +2.4 %. Here: the trigger alone (the control), and the
# prefetch's size with it, 3 alternating rounds; the timeline of the trigger alone and of the
# best guess. Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
P=GLIM_CUDA_L2PF_AT=2,GLIM_CUDA_ATT_TRIG=1
sh bench/decode_ab.sh 3 new GLIM_CUDA_ATT_TRIG=1 GLIM_CUDA_L2PF_GU_O=8,$P GLIM_CUDA_L2PF_GU_O=5,$P \
    GLIM_CUDA_L2PF_GU_O=4,$P GLIM_CUDA_L2PF_GU_O=3,$P GLIM_CUDA_L2PF_GU_O=2,$P \
    GLIM_CUDA_L2PF_GU_O=4,$P,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
for v in GLIM_CUDA_ATT_TRIG=1 GLIM_CUDA_L2PF_GU_O=4,$P; do
    n=$(echo "$v" | tr -c 'A-Za-z0-9\n' _)
    env $(echo "$v" | tr ',' ' ') timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "== $v"; grep -E "^\| (decode|prefill|qkvg|attention|o_proj|gate|down)" $OUT/tl_$n.md | head -10
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
