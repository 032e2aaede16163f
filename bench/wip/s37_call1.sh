#!/bin/sh
# s37_call1.sh (session 37): session 36's prepared call (s36_call8.sh: span_join.patch's looped
# pair, GLIM_CUDA_SPAN_JOIN 4) and, in the same A/B, the no-bytes ceiling of today's tree
# (GLIM_CUDA_DIAG_RING=4: no weight bytes copied, wrong logits; the loops' own compute, which is
# the same on an H100 and an H200 with the same SMs and clocks, so it bounds an H200's decode).
# Here first: git apply bench/wip/span_join.patch, make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_join_bits GLIM_REQUIRE_CUDA=1 timeout 100 build/tests/test_cuda_forward > $OUT/check.log 2>&1
rc=$?
echo "span_join_bits: rc=$rc $(grep -cE '^PASS' $OUT/check.log) pass $(grep -cE '^FAIL' $OUT/check.log) fail"
grep -E '^FAIL|info: span_join|check failed' $OUT/check.log | head -6
[ $rc -eq 0 ] || exit 0
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_JOIN=3 GLIM_CUDA_SPAN_JOIN=7 GLIM_CUDA_SPAN_JOIN=5 GLIM_CUDA_DIAG_RING=4
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
