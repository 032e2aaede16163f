#!/bin/sh
# s54_call1.sh (session 54; not run then: no device was lent). On an H200, the figures owed since
# session 37 and a sweep of the settings tuned on H100s, where the memory was the limit, now where
# compute is too:
#   1. the bench of record with its timeline and the no-bytes run (bench/h200_record.sh);
#   2. 3 alternating rounds at ctx 0 / 4k / 32k of the default against o_proj at one row block a
#      chunk (SPAN_TWO=13, the H100's), WIDE_KEYS=0, and the L2 prefetches: more of gate/up's
#      rows during attention (every 3rd, 2nd), qkvg's own (every 8th), gate/up's and down's own
#      more often, attention's loads ahead of o_proj's prefetch (a delay of 4000 cycles);
#   3. where the best of them leads the default by more than 0.5 % at both ctx 0 and 4k
#      (bench/wip/ab_lead.sh): 4 more rounds of the two at ctx 0 / 4k, that variant's timeline,
#      and the forward test under it;
#   4. the no-bytes diagnostic on valid units (session 54) against d84ec4a's (old), 2 rounds;
#   5. the forward test under the default.
# On any other card: the three GPU test programs (the first GPU run of d84ec4a's review and of
# session 54's diag_nobytes_finite), the bench's decode rows, the no-bytes A/B of 4 (3 rounds)
# and the no-bytes timeline. MORE: more variants for the H200's sweep (s55_call1.sh). Carry
# .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz (d84ec4a: scripts/old_binary.sh d84ec4a).
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
nob_ab() { # the no-bytes diagnostic, this tree against d84ec4a's binary
    sh bench/decode_ab.sh "$1" GLIM_CUDA_DIAG_RING=4 old,GLIM_CUDA_DIAG_RING=4 2>&1 | tail -3
    cp $OUT/ab.md $OUT/nobytes_ab.md
}
case "$gpu" in
*H200*)
    . bench/h200_record.sh
    echo "benches done at $(( $(date +%s) - t0 )) s"
    sh bench/decode_ab.sh ${ROUNDS:-3} new GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_ATT_WIDE_KEYS=0 \
        GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_GU_O=2 GLIM_CUDA_L2PF_QKVG_SELF=8 \
        GLIM_CUDA_L2PF_GU_SELF=8 GLIM_CUDA_L2PF_DOWN_SELF=4 GLIM_CUDA_L2PF_DELAY=4000 $MORE > $OUT/sweep.txt 2>&1
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
    nob_ab 2
    sh bench/gpu_tests.sh test_cuda_forward ;;
*)
    sh bench/gpu_tests.sh
    cp $OUT/checks.log $OUT/checks_all.log
    timeout 100 build/glimmer bench --synthetic --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| decode|^warning" $OUT/bench.md
    nob_ab 3
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_nobytes.md > /dev/null 2>&1
    grep -E "^\| decode|^\| (qkvg|attention|o_proj|gate|down|head)|^warning" $OUT/tl_nobytes.md | head -10 ;;
esac
echo "call took $(( $(date +%s) - t0 )) s"
