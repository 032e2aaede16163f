#!/bin/sh
# s38_h200.sh (prepared in session 37 for the next one; not run): the H200 call session 37 could
# not get again. On an H200: GLIM_CUDA_SPAN_TWO's default there (3 rounds: 0, 9, 1, 8, and the
# no-bytes pair), then the bench of record with its timeline and the same without weight bytes.
# On an H100 it stops at once. Here first: make -j2 all. Carry .deps, build/src/cuda (~2 min).
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: stopped"; exit 0; }
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8 \
    GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=9
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
GLIM_CUDA_DIAG_RING=4 timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/nobytes.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md $OUT/nobytes.md
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
