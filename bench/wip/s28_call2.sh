#!/bin/sh
# s28_call2.sh (session 28): span_two_rows with the row blocks per chunk fixed at compile time
# (k_dmv_span's RPC template parameter). Call 1 ran the patch with rpc a run-time value: the
# two-row products' loops got shorter (qkvg 12.23 -> 11.04, o_proj 6.81 -> 5.19, down 25.97 ->
# 24.69 us) but gate/up, left on one row a chunk, 49.22 -> 49.68 us (step 56.0 -> 56.9), and
# SPAN_CHUNK=2 alone was 1.4 % slower: the run-time branches cost the one-row instance. Now that
# instance's PTX is main's (16 lines of diff: a parameter offset and labels). Same runs as call 1.
# Prepare as s28_call1.sh says; carry [".deps", "build/src/cuda", "build/oldtree"].
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
CHECKS="GLIM_CUDA_SPAN=1 GLIM_CUDA_SPAN_CHUNK=2 GLIM_CUDA_SPAN_ACC=0" KTESTS=1 sh bench/ab_decode.sh \
   old new new,GLIM_CUDA_SPAN_CHUNK=2 old new new,GLIM_CUDA_SPAN_CHUNK=2 old new new,GLIM_CUDA_SPAN_CHUNK=2 \
   2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
FIX=tests/vectors/mlx4_a; [ -d "$FIX" ] || FIX=tests/vectors/hf_a
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 build/glimmer run -m "$FIX" --backend cuda \
   --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/memcheck.log 2>&1; echo "memcheck rc=$? $(grep -c 'ERROR SUMMARY: 0' $OUT/memcheck.log) clean summaries"
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=4) printf "   %s step %s loop(w/p/l) %s\n", $2, $4, $10}' | head -15
echo "total $(($(date +%s) - T0)) s"
