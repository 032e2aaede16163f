#!/bin/sh
# s34_call3.sh (session 34): the new defaults (every product on the span kernel's one-row LATE
# instance: SPAN_TWO=0 SPAN_LATE=15; attention's q preparation in registers) through the GPU
# tests (forward, kernels, hooks), then decode A/B, 3 rounds: the default against sessions
# 28-33's (SPAN_TWO=9 SPAN_LATE=6), and GLIM_CUDA_SPAN_EARLY=1 (qkvg's whole ring before the
# wait on the same instance) and =9 (qkvg's and down's); then the whole bench. Carry
# [".deps","build/src/cuda"]; ~5 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
set --
for r in 1 2 3; do set -- "$@" new new,GLIM_CUDA_SPAN_TWO=9,GLIM_CUDA_SPAN_LATE=6 new,GLIM_CUDA_SPAN_EARLY=1 new,GLIM_CUDA_SPAN_EARLY=9; done
OUT=$OUT/ab CHECKS="GLIM_CUDA_SPAN_LATE=15" KTESTS=1 STEPS="qkvg, attention (sliding), o_proj, gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new'
grep -E '^FAIL|check failed' $OUT/ab/checks.log | head -12
timeout 120 build/glimmer bench --synthetic --out $OUT/final.md > $OUT/final.log 2>&1 || tail -5 $OUT/final.log
grep -E '^copy|^\| (decode|prefill)' $OUT/final.md
cd $OUT && tar czf logs.tgz ab/checks.log ab/e.md final.md 2>/dev/null; rm -rf ab; ls
