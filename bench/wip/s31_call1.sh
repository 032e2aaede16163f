#!/bin/sh
# s31_call1.sh (written in session 30, not yet run; ~4 minutes on an H100): stream-K only where
# split-K's grid is more than one wave (bench/wip/sk_where_waves.patch: GLIM_CUDA_GEMM=4; gate/up
# stream-K, qkvg, o_proj and down split-K in one wave, which call 3's profile had at 49 / 32 / 81
# us against stream-K's 49 / 36 / 84; expected ~7 us a layer, ~2 %). Prepare here, from a clean
# main: git apply bench/wip/sk_where_waves.patch && make -j2 all
# Carry [".deps", "build/src/cuda"]. Land it (make 4's rule GEMM=3's and drop 4) if 4 beats 3 in
# every round and the tests pass (matvec_gemm gains a 150-tile shape that 4 runs stream-K).
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
GLIM_CUDA_GEMM=4 GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed' $OUT/checks.log | head -8
: > $OUT/pf.md
for r in 1 2 3; do
  for g in 3 4; do
    GLIM_CUDA_GEMM=$g timeout 60 build/glimmer bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf.log 2>&1 || tail -3 $OUT/pf.log
    echo "GEMM=$g: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
GLIM_CUDA_GEMM=4 timeout 150 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof.md 2>&1 || tail -3 $OUT/prof.md
sed -n '/prompt sub-chunk, kernel alone/,/^$/p' $OUT/prof.md
