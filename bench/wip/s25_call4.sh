#!/bin/sh
# s25_call4.sh (session 25, ~7 minutes): the split tail removed (every kernel as the lean
# instance was, the span kernel 119 -> 114 registers, the lean k_dmv_tma's 64-byte stack gone)
# and the span kernel's input instances (GLIM_CUDA_SPAN_IN=3: o_proj and down on the raw-input
# instance, 100 registers). 1) test_cuda_forward, test_cuda_kernels, test_cuda_hooks under the
# default, then the forward test under the switches whose kernels changed (SPAN_IN=0, SPAN=0:
# the lean k_dmv_tma, SPAN=0 UNIT_AHEAD=0: the general one, CHAIN=1, SPAN_ACC=0, the off
# defaults at once); 2) the A/B, alternating processes, three times: old (main before the
# merge, build/oldtree), the default, SPAN_IN=0 (the tail gone, the run-time instance), SPAN_IN=1
# (the raw instance only); 3) greedy ids of the old and new binaries on the fixtures, compared.
# Carry [".deps", "build/src/cuda", "build/oldtree"]; timeout_s 600.
cd "$(dirname "$0")/../.." || exit 1
[ -d build/oldtree ] || { echo "build/oldtree must be carried"; exit 1; }
T0=$(date +%s)
OFF="GLIM_CUDA_SPAN=0,GLIM_CUDA_LATE_NORM=0,GLIM_CUDA_BLOCK_ROWS=0,GLIM_CUDA_DEFER_MERGE=0,GLIM_CUDA_TMA=0,GLIM_CUDA_LATE_RING=1,GLIM_CUDA_PF=8,GLIM_CUDA_ATT_TRIG=0,GLIM_CUDA_I8=0,GLIM_CUDA_ATT_MMA=0,GLIM_CUDA_ATT_PMERGE=0,GLIM_CUDA_ATT_PACK=0,GLIM_CUDA_ATT_LEAN=0,GLIM_CUDA_UNIT_AHEAD=0"
I=GLIM_CUDA_SPAN_IN
KTESTS=1 CHECKS="GLIM_CUDA_SPAN=15 $I=0 GLIM_CUDA_SPAN=0 GLIM_CUDA_SPAN=0,GLIM_CUDA_UNIT_AHEAD=0 GLIM_CUDA_CHAIN=1 GLIM_CUDA_SPAN_ACC=0 $OFF" \
  sh bench/ab_decode.sh old new new,$I=0 new,$I=1 old new new,$I=0 new,$I=1 old new new,$I=0 new,$I=1 2>&1 | grep -v '^new\|^old'
grep -E "^==|^FAIL|check failed|span_in" $OUT/checks.log | head -30
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=6) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -28
echo "ab $(($(date +%s) - T0)) s"
P=0,$(seq -s, 11 50)
for fx in tests/vectors/*/; do
  [ -f $fx/config.json ] || continue
  a=$(timeout 60 build/oldtree/build/glimmer run -m $fx --backend cuda --tokens $P -n 12 --temp 0 --ignore-eos 2>/dev/null | tail -1)
  b=$(timeout 60 build/glimmer run -m $fx --backend cuda --tokens $P -n 12 --temp 0 --ignore-eos 2>/dev/null | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && echo "same ids $fx: $b" || echo "DIFFERENT ids $fx: old [$a] new [$b]"
done
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 build/glimmer run -m tests/vectors/mlx8_b --backend cuda \
  --tokens $P -n 4 --temp 0 --ignore-eos > $OUT/san.log 2>&1
echo "memcheck mlx8_b 41 tokens: rc=$? $(grep 'ERROR SUMMARY' $OUT/san.log | tail -1)"
timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 build/glimmer run -m tests/vectors/mlx4_a --backend cuda \
  --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/san2.log 2>&1
echo "racecheck mlx4_a: rc=$? $(grep 'RACECHECK SUMMARY' $OUT/san2.log | tail -1)"
echo "total $(($(date +%s) - T0)) s"
