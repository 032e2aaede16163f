#!/bin/sh
# s28_call3.sh (session 28): which products gain from two row blocks a chunk. Call 2 (rpc at
# compile time) had all of them at once 1.3 % slower than main although qkvg's step fell 0.66 us
# and o_proj's 0.83: attention's tiles rose 5.14 -> 7.21 us (o_proj's blocks, launched during
# attention, run the two-row instance) and down's prologue 0.36 -> 1.42 us. GLIM_CUDA_SPAN_TWO is
# now a product mask (qkvg 1, o_proj 2, down 8; 0 = main's one row block a chunk, byte-identical
# kernels to call 2's, which passed 90 checks). Forward test under the default, then 3 rounds.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
CHECKS="GLIM_CUDA_SPAN=1" sh bench/ab_decode.sh \
   new,GLIM_CUDA_SPAN_TWO=0 new,GLIM_CUDA_SPAN_TWO=1 new,GLIM_CUDA_SPAN_TWO=2 new,GLIM_CUDA_SPAN_TWO=8 new,GLIM_CUDA_SPAN_TWO=9 new \
   new,GLIM_CUDA_SPAN_TWO=0 new,GLIM_CUDA_SPAN_TWO=1 new,GLIM_CUDA_SPAN_TWO=2 new,GLIM_CUDA_SPAN_TWO=8 new,GLIM_CUDA_SPAN_TWO=9 new \
   new,GLIM_CUDA_SPAN_TWO=0 new,GLIM_CUDA_SPAN_TWO=1 new,GLIM_CUDA_SPAN_TWO=2 new,GLIM_CUDA_SPAN_TWO=8 new,GLIM_CUDA_SPAN_TWO=9 new \
   2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{n=0; d=$0; next} {n++; if (n<=5) printf "%s %s step %s loop(w/p/l) %s\n", d, $2, $4, $10}' | head -30
echo "total $(($(date +%s) - T0)) s"
