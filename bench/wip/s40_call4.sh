#!/bin/sh
# s40_call4.sh: GLIM_CUDA_SPAN_REFILL_EARLY (with GLIM_CUDA_SPAN_AHEAD: each chunk's slot refilled
# once its last row block's units are in registers, before their math): the test, then 3
# alternating rounds with bytes and without (GLIM_CUDA_DIAG_RING=4). Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_ahead_bits GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/span_ahead_bits.log 2>&1
echo "span_ahead_bits rc=$? $(grep -c '^PASS' $OUT/span_ahead_bits.log) pass $(grep -c '^FAIL' $OUT/span_ahead_bits.log) fail"
grep -E "^FAIL|info: span_ahead" $OUT/span_ahead_bits.log | head -12
A=GLIM_CUDA_SPAN_AHEAD=15 E=GLIM_CUDA_SPAN_REFILL_EARLY=1 T=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 D=GLIM_CUDA_DIAG_RING=4
sh bench/decode_ab.sh 3 new $A $A,$E $T $T,$A,$E $D,$A $D,$A,$E $D,$T,$A,$E
cp $OUT/ab.md $OUT/ab_s40_call4.md
for v in $A,$E $T,$A,$E; do
    n=$(echo "$v" | tr '=,' '__')
    env $(echo "$v" | tr ',' ' ') timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$n: $(grep -E '^\| (decode|qkvg|o_proj|gate/up|down) ' $OUT/tl_$n.md | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
