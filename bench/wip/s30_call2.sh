#!/bin/sh
# s30_call2.sh (session 30): the prefill GEMM after call 1's Nsight Compute (copy offsets worked
# out once a block, a ring of 4 stages at one block an SM, the words held a span, one fence a
# block, splits counted with each block's own cost): tests under GLIM_CUDA_GEMM 2 (the default
# now) and 1, the sanitizers, then prefill of 2048 tokens under GEMM 2, 1 and 0 (k_mv) in 3
# alternating rounds and the prompt profile under the default.
# Carry [".deps", "build/src/cuda"]; ~5 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
for g in 2 1; do
  echo "== kernels, GEMM=$g" >> $OUT/checks.log
  GLIM_CUDA_GEMM=$g GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
  echo "== forward, GEMM=$g" >> $OUT/checks.log
  GLIM_CUDA_GEMM=$g GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep '^FAIL' $OUT/checks.log | head -8
P=0,$(seq -s, 11 50)
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx8_b --backend cuda \
    --tokens "$P" -n 4 --temp 0 --ignore-eos > $OUT/san_$tool.log 2>&1
  echo "$tool, 41-token prompt: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1)"
done
CHECK_ONLY=matvec_gemm GLIM_REQUIRE_CUDA=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_kernels > $OUT/san_k.log 2>&1
echo "memcheck, matvec_gemm: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_k.log | tail -1)"
: > $OUT/pf.md
for r in 1 2 3; do
  for g in 2 1 0; do
    GLIM_CUDA_GEMM=$g timeout 120 build/glimmer bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf_$g.log 2>&1 || tail -3 $OUT/pf_$g.log
    echo "GEMM=$g: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
timeout 150 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof.md 2>&1 || tail -3 $OUT/prof.md
sed -n '/prompt sub-chunk, kernel alone/,/^$/p' $OUT/prof.md
