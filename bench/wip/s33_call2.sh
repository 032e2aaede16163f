#!/bin/sh
# s33_call2.sh (written in session 32, not run): the 64-token prefill GEMM on wgmma
# (bench/wip/wg64.patch: GLIM_CUDA_GEMM=5 sends 33..64 tokens to two wgmma.m64n64k16 a step on
# one D, hi then lo, B 32 KB a span in the stage's x room; ptxas: the 30B's instance spills 24
# bytes, 255 registers). Run s33_call1.sh first: wgmma only pays if the 64-token mma.sync
# instance is near the HMMA pipe's limit. Prepare here, from a clean main:
#   git apply bench/wip/wg64.patch && make -j2 all
# Tests (kernels: matvec_gemm's 33..64-token shapes under 5 now run on wgmma; forward under 5;
# memcheck on matvec_gemm), then prefill of 2048 tokens, GEMM 3 against 5, 3 rounds, and the
# prompt profile under 5. Carry [".deps", "build/src/cuda"]; ~5 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
GLIM_CUDA_GEMM=5 GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed' $OUT/checks.log | head -12
: > $OUT/pf.md
for r in 1 2 3; do
  for g in 3 5; do
    GLIM_CUDA_GEMM=$g timeout 60 build/glimmer bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf.log 2>&1 || tail -3 $OUT/pf.log
    echo "GEMM=$g: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
GLIM_CUDA_GEMM=5 timeout 100 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof5.md 2>&1 || tail -3 $OUT/prof5.md
echo "profile, GEMM=5:"; sed -n "/prompt sub-chunk, kernel alone/,/^$/p" $OUT/prof5.md
CHECK_ONLY=matvec_gemm GLIM_REQUIRE_CUDA=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_kernels > $OUT/san_k.log 2>&1
echo "memcheck, matvec_gemm: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_k.log | tail -1)"
