#!/bin/sh
# s40_call6.sh: GLIM_CUDA_DIAG_RING=9 (2 of every 7 chunks without bytes: an H200's bytes per
# unit of compute on an H100, the general instance) as the H200's stand-in: first against
# session 37's H200 timeline (prefetch off, as then), then the switches for the compute-bound
# loops and the prefetch sizes under it, 3 alternating rounds. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
D=GLIM_CUDA_DIAG_RING=9 A=GLIM_CUDA_SPAN_AHEAD=15 T=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
P0=GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0,GLIM_CUDA_L2PF_DOWN_SELF=0
sh bench/decode_ab.sh 3 new $D $D,$A $D,$T $D,$T,$A $D,GLIM_CUDA_SPAN_TWO=9,$A $D,$P0 $D,GLIM_CUDA_L2PF_GU_O=3 \
    $D,GLIM_CUDA_L2PF_QKVG_SELF=16 GLIM_CUDA_SPAN_SPEC=0
cp $OUT/ab.md $OUT/ab_s40_call6.md
for v in $D,$P0 $D $D,$T,$A; do
    n=$(echo "$v" | tr '=,' '__' | cut -c1-80)
    env $(echo "$v" | tr ',' ' ') timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$v: $(grep -E '^\| (decode|qkvg|attention|o_proj|gate/up|down) ' $OUT/tl_$n.md | head -7 | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
