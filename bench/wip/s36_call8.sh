#!/bin/sh
# s36_call8.sh (session 36; written, not run: the session's device time ran out):
# span_join.patch with the pair's body once, looped over its two
# steps (GLIM_CUDA_SPAN_JOIN's 4; 2936 instructions against the two-copy pair's 5112): is the
# two-copy pair's loss its code? The test (span_join_bits, both pair kernels bit for bit), then
# decode A/B, 3 rounds: JOIN 0, 3 (two copies), 7 (looped), 5 (looped, o_proj + gate/up only).
# Here first: git apply bench/wip/span_join.patch (it has the looped kernel), make -j2 all. Carry .deps,
# build/src/cuda. ~3 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_join_bits GLIM_REQUIRE_CUDA=1 timeout 100 build/tests/test_cuda_forward > $OUT/check.log 2>&1
rc=$?
echo "span_join_bits: rc=$rc $(grep -cE '^PASS' $OUT/check.log) pass $(grep -cE '^FAIL' $OUT/check.log) fail"
grep -E '^FAIL|info: span_join|check failed' $OUT/check.log | head -6
[ $rc -eq 0 ] || exit 0
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_JOIN=3 GLIM_CUDA_SPAN_JOIN=7 GLIM_CUDA_SPAN_JOIN=5
