#!/bin/sh
# s37_call10.sh (session 37): what the last-started blocks of a NORM product wait for. Session
# 36 found its DIAG_RING 6-8 (no residual read, no rows read, no gains read) leave the mean
# prologue as it was, but measured them before the timeline had the last block's start and loop
# start. Here the timeline at ctx 0, 2 runs each, on the general span instance for all
# (GLIM_CUDA_SPAN_SPEC=0, since the diagnostics run there): off, 6, 7, 8. Timing only (wrong
# logits under 6-8). Here first: make -j2 all. Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
[ -f build/cuda_objs.tar.xz ] && xz -dc build/cuda_objs.tar.xz | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for r in 1 2; do
    for v in 0 6 7 8; do
        GLIM_CUDA_SPAN_SPEC=0 GLIM_CUDA_DIAG_RING=$v timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 \
            --out $OUT/diag${v}_r$r.md > /dev/null 2>&1
        echo "DIAG_RING=$v round $r"; grep -E '^\| (qkvg|o_proj|gate|down) ' $OUT/diag${v}_r$r.md | head -4
    done
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
