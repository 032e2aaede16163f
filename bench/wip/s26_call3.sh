#!/bin/sh
# s26_call3.sh (session 26): the span kernel's loop trimmed. old = main before (5f9f31f,
# build/oldtree), mid = the refill as a running pointer and the factors hoisted (07fc62d,
# build/midtree), new = mid + the paired-group layout (one scale epilogue per two groups,
# decode_mv_i8.cuh). 1) forward, kernel and hooks tests of new, the forward test under
# SPAN_ACC=0 (the register-sums instances); 2) A/B old / mid / new x3, alternating processes;
# 3) compute-sanitizer memcheck on new. Carry [".deps", "build/src/cuda",
# "build/oldtree", "build/midtree"].
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
KTESTS=1 CHECKS="GLIM_CUDA_SPAN=15 GLIM_CUDA_SPAN_ACC=0" sh bench/ab_decode.sh old mid new old mid new old mid new 2>&1 | grep -v '^new\|^old\|^mid'
grep -E "^==|^FAIL|check failed" $OUT/checks.log | head -30
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -18
echo "ab $(($(date +%s) - T0)) s"
P=0,$(seq -s, 11 50)
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 build/glimmer run -m tests/vectors/mlx4_a --backend cuda \
  --tokens $P -n 4 --temp 0 --ignore-eos > $OUT/san.log 2>&1
echo "memcheck mlx4_a 41 tokens: rc=$? $(grep 'ERROR SUMMARY' $OUT/san.log | tail -1)"
echo "total $(($(date +%s) - T0)) s"
