#!/bin/sh
# s26_call4.sh (session 26): the paired-group layout with two mma chains per unit (call 3's one
# chain of four was 0.8 % slower than mid). 1) test_cuda_forward and test_cuda_kernels of this
# tree; 2) A/B mid (07fc62d, build/midtree: the refill trim) / new x3, alternating processes.
# Carry [".deps", "build/src/cuda", "build/midtree"].
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for t in test_cuda_forward test_cuda_kernels; do
  GLIM_REQUIRE_CUDA=1 timeout 150 build/tests/$t > $OUT/$t.log 2>&1; echo "$t rc=$? pass $(grep -c '^PASS' $OUT/$t.log) fail $(grep -c '^FAIL' $OUT/$t.log) skip $(grep -c '^SKIP' $OUT/$t.log)"
done
grep -E "^FAIL" $OUT/test_cuda_*.log | head
echo "tests $(($(date +%s) - T0)) s"
sh bench/ab_decode.sh mid new mid new mid new 2>&1 | grep -v '^new\|^mid'
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -12
echo "total $(($(date +%s) - T0)) s"
