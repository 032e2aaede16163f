#!/bin/sh
# s19_call4.sh (session 19): the split tail (GLIM_CUDA_TAIL_SPLIT: qkvg's, o_proj's and down's leftover
# row blocks cut along the input over every block, the consumer's prologue adding the slots)
# tested (the forward test, its tail_split case, kernel and hooks tests on the default path),
# then measured against the default and the diagnostics 3 (owners cut to the mean) and 4 (no
# weight bytes), alternating processes.
cd "$(dirname "$0")/../.." || exit 1
T=GLIM_CUDA_TAIL_SPLIT R=GLIM_CUDA_DIAG_RING
CHECKS="$T=0" KTESTS=1 sh bench/ab_decode.sh new new,$T=10 new,$R=3 new,$T=2 new new,$T=10 new,$R=4 new,$T=8 new,$T=10
grep -E "^(FAIL|PASS)|info: tail_split" $OUT/checks.log | sort | uniq -c | sort -rn | head -30
awk '/^decode with/{w=$0} /^\| (qkvg|o_proj|gate.up|down) /{split($0,a,"|"); s[w]=s[w] sprintf("%s %s; ", a[2], a[3])} /^timeline @ ctx 4096/{done[w]=1} END{}' $OUT/e.md
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s loop(w/p/l) %s\n", $2, $3, $10}'
# memcheck on the split tail (the forward test's tail_split model, where both products split)
GLIM_REQUIRE_CUDA=1 CHECK_ONLY=tail_split timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/test_cuda_forward > $OUT/memcheck.log 2>&1
echo "memcheck tail_split rc=$? $(grep 'ERROR SUMMARY' $OUT/memcheck.log | tail -1) $(grep -E '^(PASS|FAIL)' $OUT/memcheck.log | tr '\n' ' ')"
