#!/bin/sh
# s40_call7.sh: the lean H200 call for the session's last device minutes (s40_call3.sh needs
# ~400 s): stops at once on another card; else span_ahead_bits, the bench of record with its
# timeline, and 2 alternating rounds of the compute-bound switches, the prefetch off and larger,
# and the no-bytes ceiling. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 3; }
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_ahead_bits GLIM_REQUIRE_CUDA=1 timeout 100 build/tests/test_cuda_forward > $OUT/span_ahead_bits.log 2>&1
echo "span_ahead_bits rc=$? $(grep -c '^PASS' $OUT/span_ahead_bits.log) pass $(grep -c '^FAIL' $OUT/span_ahead_bits.log) fail"
timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
A=GLIM_CUDA_SPAN_AHEAD T=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
sh bench/decode_ab.sh 2 new $A=15 $T $T,$A=15 GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_L2PF_GU_SELF=0,GLIM_CUDA_L2PF_DOWN_SELF=0 \
    GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_DIAG_RING=4
cp $OUT/ab.md $OUT/ab_s40_call7.md
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
