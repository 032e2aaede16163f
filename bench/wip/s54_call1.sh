#!/bin/sh
# s54_call1.sh (session 54): on an H200, the figures owed since session 37 at d84ec4a (what
# s53_h200.sh runs: the bench of record, the no-bytes run, the A/B against SPAN_TWO=13 and
# WIDE_KEYS=0, the forward test) and the L2 prefetch settings tuned on H100s, where the memory
# was the limit, tried where compute is: more of gate/up prefetched during attention (every 3rd,
# 2nd row block), qkvg's own (every 8th), gate/up's and down's own more often, attention's loads
# ahead of o_proj's prefetch (a delay of 4000 cycles). On any other
# card: the three GPU test programs, the first GPU run of d84ec4a's review (WIDE_KEYS gated in
# gcu_attn_launch alone; poll_wide). Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
case "$gpu" in
*H200*)
    . bench/h200_record.sh
    echo "benches done at $(( $(date +%s) - t0 )) s"
    sh bench/decode_ab.sh ${ROUNDS:-3} new GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_ATT_WIDE_KEYS=0 \
        GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_GU_O=2 GLIM_CUDA_L2PF_QKVG_SELF=8 \
        GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 GLIM_CUDA_L2PF_DELAY=4000 2>&1 | tail -10
    echo "A/B done at $(( $(date +%s) - t0 )) s"
    sh bench/gpu_tests.sh test_cuda_forward ;;
*)
    sh bench/gpu_tests.sh ;;
esac
echo "call took $(( $(date +%s) - t0 )) s"
