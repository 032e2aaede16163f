#!/bin/sh
# s37_call11.sh (session 37): the timeline's new column, the shortest wait and the longest
# prologue over a kernel's blocks: is a late-started block's extra time (v38) before its PDL wait
# or in its prologue? ctx 0, 2 runs; on an H200 first the TWO A/B (s37_call7.sh's).
# Here first: make -j2 all; tar cf - build/src/cuda | xz -T2 -3 > build/cuda_objs.tar.xz.
# Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
[ -f build/cuda_objs.tar.xz ] && xz -dc build/cuda_objs.tar.xz | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8 \
        GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=9
    cp $OUT/ab.md $OUT/ab_h200.md
fi
for r in 1 2; do
    timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_r$r.md > /dev/null 2>&1
    grep -E '^\| (qkvg|attention|o_proj|gate|down|head|kernel)' $OUT/tl_r$r.md | head -8
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
