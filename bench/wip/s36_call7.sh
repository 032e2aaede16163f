#!/bin/sh
# s36_call7.sh (session 36): GLIM_CUDA_SPAN_JOIN, o_proj + gate/up (1) and down + the next qkvg
# (2) as one launch each of the span kernel's pair. Its test (span_join_bits: the same logits bit
# for bit, the pairs ran) and span_spec_bits, memcheck on span_join_bits; if they pass, decode
# A/B, 3 rounds, JOIN 0 / 1 / 2 / 3; if not, each bit alone through the test. Here first: make -j2
# all. Carry .deps, build/src/cuda. ~4 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_join_bits,span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_forward > $OUT/check.log 2>&1
rc=$?
echo "span_join_bits, span_spec_bits: rc=$rc $(grep -cE '^PASS' $OUT/check.log) pass $(grep -cE '^FAIL' $OUT/check.log) fail"
grep -E '^FAIL|info: span_join|check failed|trap|error' $OUT/check.log | head -8
if [ $rc -ne 0 ]; then
  for j in 1 2; do
    GLIM_CUDA_SPAN_JOIN=$j timeout 60 build/glimmer bench --synthetic --layers 2 --prompt 0 -n 8 > $OUT/join$j.log 2>&1
    echo "bench JOIN=$j alone: rc=$? $(grep -E 'decode @ ctx 0' $OUT/join$j.log)"; tail -2 $OUT/join$j.log
  done
  exit 0
fi
CHECK_ONLY=span_join_bits GLIM_REQUIRE_CUDA=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck span_join_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_JOIN=1 GLIM_CUDA_SPAN_JOIN=2 GLIM_CUDA_SPAN_JOIN=3
