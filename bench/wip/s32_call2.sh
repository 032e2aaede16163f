#!/bin/sh
# s32_call2.sh (session 32): prompt sub-chunks of 64 tokens (GCU_TMAX 64; the prefill GEMM's
# 8-n-block instance, 3 stages; k_mv in parts of 32). Tests first (kernels, forward with the new
# long_prompt and the 64-row rewind, hooks), then prefill of 2048 tokens in alternating
# processes, GLIM_CUDA_PREFILL_T=32 (the old sub-chunk) against 64, 2 rounds, the prompt profile
# at 64, and memcheck on matvec_gemm last (device time was short). Carry [".deps",
# "build/src/cuda"]; ~5 minutes.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
for t in test_cuda_kernels test_cuda_forward test_cuda_hooks; do
  echo "== $t" >> $OUT/checks.log
  GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/$t >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
  echo "$t: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail so far; rc $(tail -1 $OUT/checks.log)"
done
grep -E '^FAIL|check failed|long_|rewind' $OUT/checks.log | head -14
: > $OUT/pf.md
for r in 1 2; do
  for t in 32 64; do
    GLIM_CUDA_PREFILL_T=$t timeout 60 build/glimmer bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf.log 2>&1 || tail -3 $OUT/pf.log
    echo "PREFILL_T=$t: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
timeout 100 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof64.md 2>&1 || tail -3 $OUT/prof64.md
echo "profile, PREFILL_T=64:"; sed -n "/prompt sub-chunk, kernel alone/,/^$/p" $OUT/prof64.md
CHECK_ONLY=matvec_gemm GLIM_REQUIRE_CUDA=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_kernels > $OUT/san_k.log 2>&1
echo "memcheck, matvec_gemm: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_k.log | tail -1)"
cd $OUT && tar czf logs.tgz *.log *.md 2>/dev/null; ls
