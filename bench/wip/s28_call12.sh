#!/bin/sh
# s28_call12.sh (session 28; call 5's script again, after GLIM_CUDA_SPAN_LATE=6 became the
# default next to GLIM_CUDA_SPAN_TWO=9): forward, kernels, hooks, memcheck on a fixture.
cd "$(dirname "$0")/../.." || exit 1
KTESTS=1 CHECKS="GLIM_CUDA_SPAN=1" sh bench/ab_decode.sh new new,GLIM_CUDA_SPAN_TWO=0 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
FIX=tests/vectors/mlx4_a; [ -d "$FIX" ] || FIX=tests/vectors/hf_a
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 build/glimmer run -m "$FIX" --backend cuda \
   --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/memcheck.log 2>&1; echo "memcheck rc=$? $(grep -c 'ERROR SUMMARY: 0' $OUT/memcheck.log) clean summaries"
