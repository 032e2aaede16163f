#!/bin/sh
# s37_call2.sh (session 37): on an H200 the loops of qkvg, o_proj and down are compute-bound
# (call 1's no-bytes timeline: their loops as long without weight bytes). Two row blocks a chunk
# (GLIM_CUDA_SPAN_TWO, one wait and refill per two) shortened those loops on an H100 (session
# 28) but runs outside the SPEC instance; what does each weigh on this card? A/B, 3 rounds:
# today's default, TWO 9 (qkvg, down), TWO 9 with LATE 6 (sessions 28-33's default), TWO 11
# (o_proj too), SPAN_SPEC 0 (what the SPEC instance is worth here); then the timeline of TWO 9.
# Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=9,GLIM_CUDA_SPAN_LATE=6 \
    GLIM_CUDA_SPAN_TWO=11 GLIM_CUDA_SPAN_SPEC=0
GLIM_CUDA_SPAN_TWO=9 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/two9_timeline.md > /dev/null 2>&1
build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/new_timeline.md > /dev/null 2>&1
grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/two9_timeline.md $OUT/new_timeline.md | grep -v 4096 | head -24
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
