#!/bin/sh
# s37_call5.sh (session 37): call 4 with the init of the general two-row LATE instance fixed (call 4: "invalid argument"; its shared-memory size was never raised); call 3's two-row LATE instance again, now with the general (SPEC 0)
# instance's test (span_chunk_bits' span_two_late) and the error that DIAG_RING=4 with TWO 9 gave in
# call 3b; then the A/B of call 3 (on an H200 if one comes: the card where qkvg's, o_proj's and
# down's loops are compute-bound). Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for t in span_chunk_bits span_spec_bits; do
    CHECK_ONLY=$t GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/check_$t.log 2>&1
    rc=$?
    echo "$t: rc=$rc $(grep -cE '^PASS' $OUT/check_$t.log) pass $(grep -cE '^FAIL' $OUT/check_$t.log) fail"
    grep -E '^FAIL|info: span_two_late|check failed|error' $OUT/check_$t.log | head -6
done
# on an H100 (the A/B of calls 3-4 done there) only the no-bytes pair: what TWO does to compute-bound loops
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8 GLIM_CUDA_SPAN_TWO=11 \
        GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=9
else
    sh bench/decode_ab.sh 3 GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_TWO=11
    for v in 0 9; do
        GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_SPAN_TWO=$v build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/nb_two${v}_timeline.md > /dev/null 2>&1
        echo "no bytes, TWO=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/nb_two${v}_timeline.md | head -5
    done
    exit 0
fi
for v in 0 9; do
    GLIM_CUDA_SPAN_TWO=$v build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/two${v}_timeline.md > /dev/null 2>&1
    echo "TWO=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/two${v}_timeline.md | head -5
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
