#!/bin/sh
# s54_h200.sh (session 54): the H200 figures owed since session 37, at d6bf7da; nothing on
# another card (it leaves before the build). On an H200: the bench of record with its timeline and
# the no-bytes run (bench/h200_record.sh), 2 alternating rounds of the default against the
# settings s54_call1.sh sweeps (SPAN_TWO=13, the L2 prefetches), then the forward test. Carry
# .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/h200_only.sh
. bench/call_setup.sh
. bench/h200_record.sh
echo "benches done at $(( $(date +%s) - t0 )) s"
sh bench/decode_ab.sh ${ROUNDS:-2} new GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_QKVG_SELF=8 \
    GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 GLIM_CUDA_L2PF_DELAY=4000 2>&1 | tail -8
echo "A/B done at $(( $(date +%s) - t0 )) s"
sh bench/gpu_tests.sh test_cuda_forward
echo "call took $(( $(date +%s) - t0 )) s"
