#!/bin/sh
# s42_call1.sh: GLIM_CUDA_SPAN_LAND after session 41's fix, and its AHEAD form (git apply
# bench/wip/span_land.patch and build first). Carry .deps, build/src/cuda. LEAN picks how much
# of it the device time left holds (each step's output comes back even where a later one is cut):
#   unset (~450 s plus the start): span_land (6 cases) and span_ahead_bits, 2 alternating rounds
#     of the default, LAND=1 and LAND=1 + AHEAD=15 (on an H200 also ROW0 + TWO=13 + AHEAD=15 and
#     the bench of record), every GPU test under LAND=1 ($OUT/land_tests), timelines at ctx 0 of
#     the default and LAND=1;
#   LEAN=1: span_land, then those 2 rounds only;
#   LEAN=2 (~180 s): span_land, then 3 rounds of the default against LAND=1.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
tests=span_land
[ -z "$LEAN" ] && tests=span_land,span_ahead_bits
CHECK_ONLY=$tests GLIM_REQUIRE_CUDA=1 timeout 300 build/tests/test_cuda_forward > $OUT/span_land.log 2>&1
echo "tests rc=$? $(grep -c '^PASS' $OUT/span_land.log) pass $(grep -c '^FAIL' $OUT/span_land.log) fail"
grep -E "check failed|info: span_land" $OUT/span_land.log | cut -c1-220 | head -24
grep -q '^FAIL' $OUT/span_land.log && exit 1
L=GLIM_CUDA_SPAN_LAND=1 A=GLIM_CUDA_SPAN_AHEAD=15
[ "$LEAN" = 2 ] && { sh bench/decode_ab.sh 3 new $L; exit; }
h200=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -c H200)
if [ "$h200" = 1 ] && [ -z "$LEAN" ]; then
    sh bench/decode_ab.sh 2 new $L $L,$A GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,$A
else
    sh bench/decode_ab.sh 2 new $L $L,$A
fi
cp $OUT/ab.md $OUT/ab_s42_call1.md
[ -n "$LEAN" ] && exit 0
if [ "$h200" = 1 ]; then
    timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
fi
# every GPU test under LAND=1 (the evidence a default needs)
OUT=$OUT/land_tests GLIM_CUDA_SPAN_LAND=1 sh bench/gpu_tests.sh
for v in default $L; do
    n=$(echo "$v" | tr '=,' '__')
    env $( [ "$v" = default ] || echo "$v" ) timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$v: $(grep -E '^\| (decode|qkvg|attention|o_proj|gate/up|down) ' $OUT/tl_$n.md | head -7 | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
