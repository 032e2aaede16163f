#!/bin/sh
# s42_call2.sh: s42_call1.sh cut to what ~250 s of device time holds: span_land's 6 cases, then
# 2 alternating rounds of the default, LAND=1 and LAND=1 + AHEAD=15 ($OUT/ab.md grows round by
# round, so a cut run still returns what it measured). Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_land GLIM_REQUIRE_CUDA=1 timeout 150 build/tests/test_cuda_forward > $OUT/span_land.log 2>&1
echo "tests rc=$? $(grep -c '^PASS' $OUT/span_land.log) pass $(grep -c '^FAIL' $OUT/span_land.log) fail"
grep -E "check failed|info: span_land" $OUT/span_land.log | cut -c1-220 | head -24
grep -q '^FAIL' $OUT/span_land.log && exit 1
sh bench/decode_ab.sh 2 new GLIM_CUDA_SPAN_LAND=1 GLIM_CUDA_SPAN_LAND=1,GLIM_CUDA_SPAN_AHEAD=15
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
