#!/bin/sh
# s55_call1.sh (session 55): s54_call1.sh's H200 branch behind bench/h200_only.sh (an H100 lent
# for the H200 request costs only its start), with one more variant in the sweep: qkvg's blocks
# prefetching every 6th of gate/up's row blocks at their end (GLIM_CUDA_L2PF_GU=6, +1.2-1.6 % at
# ctx 0 on an H100 in session 38 but attention's wait 3.3 us later there; on an H200 qkvg's loop is
# compute-bound, so the memory is free under it). Steps:
#   1. the bench of record with its timeline and the no-bytes run (bench/h200_record.sh);
#   2. 3 alternating rounds at ctx 0 / 4k / 32k of the default against the settings tuned on
#      H100s (see s54_call1.sh) and L2PF_GU=6;
#   3. a leader above 0.5 % at ctx 0 and 4k (bench/wip/ab_lead.sh): 4 more rounds of the two at
#      ctx 0 / 4k, its timeline and the forward test under it;
#   4. the no-bytes diagnostic on valid units against d84ec4a's binary (old), 2 rounds;
#   5. the forward test under the default.
# Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz (scripts/old_binary.sh d84ec4a).
cd "$(dirname "$0")/../.." || exit 1
. bench/h200_only.sh
. bench/call_setup.sh
. bench/h200_record.sh
echo "benches done at $(( $(date +%s) - t0 )) s"
sh bench/decode_ab.sh ${ROUNDS:-3} new GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_ATT_WIDE_KEYS=0 \
    GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_GU_O=2 GLIM_CUDA_L2PF_QKVG_SELF=8 \
    GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 GLIM_CUDA_L2PF_DELAY=4000 \
    GLIM_CUDA_L2PF_GU=6 > $OUT/sweep.txt 2>&1
cp $OUT/ab.md $OUT/sweep_ab.md
cat $OUT/sweep.txt
echo "sweep done at $(( $(date +%s) - t0 )) s"
best=$(sh bench/wip/ab_lead.sh 0.5 < $OUT/sweep.txt)
if [ -n "$best" ]; then
    echo "confirming $best"
    CTX=0,4096 sh bench/decode_ab.sh 4 new "$best" 2>&1 | tail -3
    cp $OUT/ab.md $OUT/confirm_ab.md
    env $(echo "$best" | tr ',' ' ') timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_best.md > /dev/null 2>&1
    env $(echo "$best" | tr ',' ' ') sh bench/gpu_tests.sh test_cuda_forward
    cp $OUT/checks.log $OUT/checks_best.log
fi
sh bench/decode_ab.sh 2 GLIM_CUDA_DIAG_RING=4 old,GLIM_CUDA_DIAG_RING=4 2>&1 | tail -3
cp $OUT/ab.md $OUT/nobytes_ab.md
sh bench/gpu_tests.sh test_cuda_forward
echo "call took $(( $(date +%s) - t0 )) s"
