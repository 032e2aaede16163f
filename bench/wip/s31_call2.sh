#!/bin/sh
# s31_call2.sh (session 31): the prefill GEMM on wgmma (GLIM_CUDA_GEMM=4 and 5: the 32-token instance
# issues wgmma.m64n64k16 with the dequantized nibbles as A from registers and x hi/lo as B from
# shared memory). Tests first (kernels: matvec_gemm under 1..5 and 0; forward under 4 and 5;
# memcheck on matvec_gemm), then prefill of 2048 tokens, 3 rounds of GEMM 3, 4 and 5, then the
# prompt profile under 4 and 5. Carry [".deps", "build/src/cuda"]; ~5 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
for g in 4 5; do GLIM_CUDA_GEMM=$g GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log; done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed|GEMM' $OUT/checks.log | head -12
CHECK_ONLY=matvec_gemm GLIM_REQUIRE_CUDA=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_kernels > $OUT/san_k.log 2>&1
echo "memcheck, matvec_gemm: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_k.log | tail -1)"
: > $OUT/pf.md
for r in 1 2 3; do
  for g in 3 4 5; do
    GLIM_CUDA_GEMM=$g timeout 60 build/glimmer bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf.log 2>&1 || tail -3 $OUT/pf.log
    echo "GEMM=$g: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
for g in 4 5; do GLIM_CUDA_GEMM=$g timeout 150 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof$g.md 2>&1 || tail -3 $OUT/prof$g.md; echo "profile, GEMM=$g:"; sed -n "/prompt sub-chunk, kernel alone/,/^$/p" $OUT/prof$g.md; done
cd $OUT && tar czf logs.tgz *.log *.md 2>/dev/null; ls
