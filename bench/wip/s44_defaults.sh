#!/bin/sh
# s44_defaults.sh: the tree with GLIM_CUDA_SPAN_ROW0=1 and GLIM_CUDA_SPAN_TWO=13 as defaults: the
# GPU tests (bench/gpu_tests.sh; LEAN=1: test_cuda_forward only), then the bench of record and 2
# rounds against the old defaults. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
if [ -n "$LEAN" ]; then
    sh bench/gpu_tests.sh test_cuda_forward
    exit 0
fi
sh bench/gpu_tests.sh
timeout 120 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
sh bench/decode_ab.sh 2 new GLIM_CUDA_SPAN_ROW0=0,GLIM_CUDA_SPAN_TWO=0 2>&1 | tail -2
