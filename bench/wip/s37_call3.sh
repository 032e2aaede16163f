#!/bin/sh
# s37_call3.sh (session 37): two row blocks a chunk on the LATE instance and its SPEC levels
# (GLIM_CUDA_SPAN_TWO's products no longer leave the SPEC instance). The test (span_spec_bits
# with its two new two-row cases, span_chunk_bits), then decode A/B, 3 rounds: today's default,
# TWO 9 (qkvg, down), 11 (o_proj too), 1 (qkvg), 8 (down); then the timeline of TWO 9 and 11.
# Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for t in span_spec_bits span_chunk_bits; do
    CHECK_ONLY=$t GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/check_$t.log 2>&1
    rc=$?
    echo "$t: rc=$rc $(grep -cE '^PASS' $OUT/check_$t.log) pass $(grep -cE '^FAIL' $OUT/check_$t.log) fail"
    grep -E '^FAIL|info: span_spec._two|check failed' $OUT/check_$t.log | head -6
    [ $rc -eq 0 ] || exit 0
done
sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=11 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8
for v in 0 9 11; do
    GLIM_CUDA_SPAN_TWO=$v build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/two${v}_timeline.md > /dev/null 2>&1
    echo "TWO=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/two${v}_timeline.md | head -5
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
