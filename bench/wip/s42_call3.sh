#!/bin/sh
# s42_call3.sh: the least a ~180 s device call can show: span_land's 6 cases (correctness of
# the landing and its AHEAD form), then as many alternating rounds of the default against
# LAND=1 as the time leaves ($OUT/ab.md grows round by round). Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_land GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_forward > $OUT/span_land.log 2>&1
echo "tests rc=$? $(grep -c '^PASS' $OUT/span_land.log) pass $(grep -c '^FAIL' $OUT/span_land.log) fail"
grep -E "check failed|info: span_land" $OUT/span_land.log | cut -c1-220 | head -24
grep -q '^FAIL' $OUT/span_land.log && exit 1
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_LAND=1
