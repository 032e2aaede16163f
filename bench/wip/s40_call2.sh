#!/bin/sh
# s40_call2.sh: GLIM_CUDA_SPAN_AHEAD (each pair's digits made during the previous pair's last
# chunk): its test and span_spec_bits, then 3 alternating rounds with and without it, with bytes
# and without (GLIM_CUDA_DIAG_RING=4, the general instance: the proxy of an H200's compute-bound
# loops), with one and two row blocks a chunk; timelines of down's loop. On an H200 also the
# prefetch sizes (s40_h200.sh's list). Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for t in span_ahead_bits span_spec_bits; do
    CHECK_ONLY=$t GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/$t.log 2>&1
    echo "$t rc=$? $(grep -c '^PASS' $OUT/$t.log) pass $(grep -c '^FAIL' $OUT/$t.log) fail"
    grep -E "^FAIL|info: span_ahead" $OUT/$t.log | head -12
done
H200=0
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && H200=1
if [ $H200 = 1 ]; then
    sh bench/gpu_tests.sh
    timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0,GLIM_CUDA_L2PF_DOWN_SELF=0 \
        GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 \
        GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 \
        GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_DIAG_RING=4
    cp $OUT/ab.md $OUT/ab_h200.md
else
    sh bench/decode_ab.sh 3 new GLIM_CUDA_SPAN_AHEAD=15 \
        GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15 \
        GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_AHEAD=15 \
        GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 \
        GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15
    cp $OUT/ab.md $OUT/ab_h100.md
fi
for v in "" GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_AHEAD=15; do
    n=$(echo "${v:-default}" | tr '=,' '__')
    env $(echo "$v" | tr ',' ' ') timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$n: $(grep -E '^\| (decode|qkvg|o_proj|gate/up|down) ' $OUT/tl_$n.md | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
