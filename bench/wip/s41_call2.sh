#!/bin/sh
# s41_call2.sh: GLIM_CUDA_SPAN_LAND after call 1's fix (the lanes' items at dmv_item's places;
# apply bench/wip/span_land.patch and build first):
# span_land and span_ahead_bits (its 12 variables now all set), alternating rounds of the
# default against LAND=1 (ROUNDS, default 2; on an H200 also ROW0 + TWO=13 + AHEAD=15), timelines at ctx
# 0 of TL (unset: LAND=1; "default" for the default; empty: none).
# Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_land,span_ahead_bits GLIM_REQUIRE_CUDA=1 timeout 240 build/tests/test_cuda_forward > $OUT/span_land.log 2>&1
echo "tests rc=$? $(grep -c '^PASS' $OUT/span_land.log) pass $(grep -c '^FAIL' $OUT/span_land.log) fail"
grep -E "check failed|info: span_land" $OUT/span_land.log | cut -c1-200 | head -24
grep -q '^FAIL' $OUT/span_land.log && exit 1
L=GLIM_CUDA_SPAN_LAND=1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh ${ROUNDS:-2} new $L GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15
else
    sh bench/decode_ab.sh ${ROUNDS:-2} new $L
fi
cp $OUT/ab.md $OUT/ab_s41_call2.md
for v in ${TL-$L}; do
    n=$(echo "$v" | tr '=,' '__' | cut -c1-60)
    env $( [ "$v" = default ] || echo "$v" ) timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$v: $(grep -E '^\| (decode|qkvg|attention|o_proj|gate/up|down) ' $OUT/tl_$n.md | head -7 | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
