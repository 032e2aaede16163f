#!/bin/sh
# s41_call1.sh (needs bench/wip/span_land.patch; ran before its fix): GLIM_CUDA_SPAN_LAND's
# first run: its test (span_land: 4 cases against the CPU and against the default), then 3
# alternating rounds of the default against LAND=1 (on an H200 also ROW0 + TWO=13 + AHEAD=15 and
# the no-bytes ceiling), and timelines of both at ctx 0.
# Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_land GLIM_REQUIRE_CUDA=1 timeout 240 build/tests/test_cuda_forward > $OUT/span_land.log 2>&1
echo "span_land rc=$? $(grep -c '^PASS' $OUT/span_land.log) pass $(grep -c '^FAIL' $OUT/span_land.log) fail"
grep -E "FAIL|info: span_land" $OUT/span_land.log | cut -c1-220 | head -40
grep -q '^FAIL' $OUT/span_land.log && exit 1
L=GLIM_CUDA_SPAN_LAND=1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    T=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15
    sh bench/decode_ab.sh 3 new $L $T GLIM_CUDA_DIAG_RING=4
else
    sh bench/decode_ab.sh 3 new $L
fi
cp $OUT/ab.md $OUT/ab_s41_call1.md
for v in default $L; do
    n=$(echo "$v" | tr '=,' '__' | cut -c1-60)
    env $( [ "$v" = default ] || echo "$v" ) timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$v: $(grep -E '^\| (decode|qkvg|attention|o_proj|gate/up|down) ' $OUT/tl_$n.md | head -7 | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
