#!/bin/sh
# s23_call1.sh (session 23). Carry .deps and build/src/cuda (built here with `make -j2 all`);
# timeout_s 600. On whatever card comes:
# 1. the span kernel's tests with GLIM_CUDA_SPAN_PAIR (test_cuda_kernels decode_matvec_span mode
#    17, test_cuda_forward span_loop's pair cases);
# 2. A/B in alternating processes: the default (span, sums in shared memory) against
#    GLIM_CUDA_SPAN_PAIR=8 (down on pairs), =10 (o_proj and down), =11 (and qkvg) and k_dmv_tma
#    (SPAN=0), twice, and GLIM_CUDA_ATT_WARM=1 (session 21, never run);
# 3. with the time left, the gpu_check suite's tests under the span default (the three tests
#    pinned to SPAN=0, the embedding in h2, dmv_plan's in-place guard).
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
left() { echo $((570 - $(date +%s) + T0)); }
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
nvidia-smi -L
for t in "kernels decode_matvec_span" "forward span_loop"; do
    set -- $t
    GLIM_REQUIRE_CUDA=1 CHECK_ONLY=$2 timeout 150 build/tests/test_cuda_$1 > $OUT/span_$1.log 2>&1
    echo "span $1 rc=$? $(grep -cE '^PASS' $OUT/span_$1.log) pass $(grep -cE '^FAIL' $OUT/span_$1.log) fail ($(($(date +%s) - T0)) s)"
    grep -E 'check failed|FAIL|info: span' $OUT/span_$1.log | head -16
done
P=GLIM_CUDA_SPAN_PAIR
W=GLIM_CUDA_ATT_WARM
sh bench/ab_decode.sh ${AB:-new new,$P=8 new,$P=10 new,$P=11 new,$W=1 new,GLIM_CUDA_SPAN=0 new new,$P=8 new,$P=10 new,$P=11 new,$W=1}
grep -E "^decode with|^\| (qkvg|attention|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=7) printf "   %s step %s spread %s loop(w/p/l) %s\n", $2, $3, $7, $10}'
echo "a/b done ($(($(date +%s) - T0)) s); $(left) s left"
L=$(left)
if [ "$L" -gt 60 ]; then
    OUT=$OUT/check KEEP_BUILD=1 timeout $((L - 10)) sh bench/gpu_check.sh tests 2>&1 | tail -40
fi
echo "all done ($(($(date +%s) - T0)) s)"
