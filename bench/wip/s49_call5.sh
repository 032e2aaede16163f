#!/bin/sh
# s49_call5.sh (session 49): SPAN_TWO's default by the device (15 above 32 GB/s of data-sheet
# memory bandwidth per SM, 13 below): the bench's device line (the peak it computes), the
# forward and hooks tests under the default, and the forward test under SPAN_TWO=15 (the
# default an H200 gets). On an H200, bench/wip/s49_h200.sh after them; on an H100 the H200
# emulation (DIAG_RING=9) with TWO=15 against three of s49_h200.sh's switches. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
sh bench/gpu_tests.sh test_cuda_forward test_cuda_hooks
mv $OUT/checks.log $OUT/checks_default.log
GLIM_CUDA_SPAN_TWO=15 sh bench/gpu_tests.sh test_cuda_forward
mv $OUT/checks.log $OUT/checks_two15.log
echo "checks done at $(( $(date +%s) - t0 )) s"
case $gpu in
*H200*) BUILT=1 ROUNDS=2 sh bench/wip/s49_h200.sh ;;
*) timeout 100 build/glimmer bench --synthetic --prompt 0 --out $OUT/bench.md > /dev/null 2>&1
   grep -E "^device|^copy|^\| decode" $OUT/bench.md
   R=GLIM_CUDA_DIAG_RING=9,GLIM_CUDA_SPAN_TWO=15
   sh bench/decode_ab.sh ${ROUNDS:-3} $R $R,GLIM_CUDA_L2PF_GU_O=3 $R,GLIM_CUDA_SPAN_AHEAD=15 \
       $R,GLIM_CUDA_L2PF_QKVG_SELF=8 2>&1 | tail -4 ;;
esac
echo "call took $(( $(date +%s) - t0 )) s"
