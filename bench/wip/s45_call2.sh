#!/bin/sh
# s45_call2.sh (written in session 45, not yet run: no device started): the tree with
# bench/wip/row0_two_default.patch and bench/wip/nibble_unshifted.patch applied (the high
# nibbles unshifted, 16 q in A, their elements' digits of x / 16 in four columns), on whichever
# card comes: the digits' and the matvecs' kernel tests first, then 2 alternating rounds against
# main's binary under the same ROW0 + TWO=13 settings (old = build/old_glimmer.xz from
# scripts/old_binary.sh at main), both also without weight bytes (the H200's compute-bound
# regime); then the forward and whole kernel tests, the hooks test and the bench of record with
# its timeline. Carry .deps, build/src/cuda, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
# the digits and the integer path's matvecs first (seconds), the whole kernel test after the A/B
CHECK_ONLY=i8_digits_bytes,decode_matvec,decode_matvec_span,swiglu_down_digits GLIM_REQUIRE_CUDA=1 \
    timeout 120 build/tests/test_cuda_kernels > $OUT/checks_digits.log 2>&1
echo "digit and matvec checks rc=$?: $(grep -c '^PASS' $OUT/checks_digits.log) pass, $(grep -c '^FAIL' $OUT/checks_digits.log) fail at $(( $(date +%s) - t0 )) s"
grep '^FAIL' $OUT/checks_digits.log | head -5
R=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
sh bench/decode_ab.sh 2 old,$R new old,$R,GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4 2>&1 | tail -5
echo "a/b done at $(( $(date +%s) - t0 )) s"
sh bench/gpu_tests.sh test_cuda_forward test_cuda_kernels
cp $OUT/checks.log $OUT/checks_forward_kernels.log
echo "forward and kernel tests done at $(( $(date +%s) - t0 )) s"
# (the rest only where the call has the time: the device's budget is short)
if [ $(( $(date +%s) - t0 )) -lt ${REST_BEFORE:-300} ]; then
    sh bench/gpu_tests.sh test_cuda_hooks
    cp $OUT/checks.log $OUT/checks_hooks.log
    timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
fi
echo "all took $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
