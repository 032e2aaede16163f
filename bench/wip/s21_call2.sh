#!/bin/sh
# s21_call2.sh (sessions 20-21, prepared, not run; was s20_call2.sh): where a 64-key attention
# tile's ~3.7-4 us go (v21's timeline: "tiles' math" 3.69 us at context 0, 3.99 at 4k, far above
# its arithmetic).
# Nsight Compute (full set, source counters) on one sliding-layer attention launch at context 0
# and one at 4k, and (session 21) one full layer at 32k (4 tiles per split there, ~7.6 us each:
# 30.5 us of a 44.5 us launch), of a 2-layer synthetic decode (bench/ncu_stalls.sh: 2 attention
# launches per token, 8 tokens per context, so launch 4 is context 0's third token's sliding
# layer, 20 the same at 4k and 37 the full layer at 32k), then the decode's timeline for the
# per-phase split. The ncu outputs (5 files a launch) go back as one archive. Run after
# s21_call1.sh in the same warm machine (KEEP the build; ~9 minutes with the A/B items and the
# memchecks below, so use timeout_s 600), or alone (carry .deps and build/src/cuda).
cd "$(dirname "$0")/../.." || exit 1
[ -x build/glimmer ] || scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
W=$(mktemp -d)
OUT=$W NCU_TARGETS="att0 k_attention 4;att4k k_attention 20;att32k_full k_attention 37" timeout 300 sh bench/ncu_stalls.sh
for t in att0 att4k att32k_full; do
    grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Executed Ipc A|Warp Cycles Per Issued" \
        $W/${t}_details.txt | head -12 | sed "s/^/$t: /"
done
tar czf $OUT/ncu_attention.tgz -C $W .
# session 21: the rehearsal (GLIM_CUDA_ATT_WARM=1: q and the first tile run once before the PDL
# wait, so that the real pass finds its code and constants warm) against the default, in
# alternating processes with the timeline (~2 minutes; worth it if call 1's DIAG_ATT_TWICE row
# showed the second pass far cheaper than the first). The timeline rows of attention per item.
# And GLIM_CUDA_DIAG_RING=5 (timing only, wrong logits): the matvecs skip their prologues, so the
# token's time less this row's is what the prologues (13.1 us per layer in session 19's
# timeline) cost with the ring streaming through them: the prize of overlapping the staging with
# the loop (RESULTS v23, what comes next 2).
sh bench/ab_decode.sh new new,GLIM_CUDA_ATT_WARM=1 new,GLIM_CUDA_DIAG_RING=5 new new,GLIM_CUDA_ATT_WARM=1
grep -E "^decode with|^\| (attention|qkvg|o_proj|gate/up|down)|^\| decode" $OUT/e.md
# memcheck (from s21_call1.sh) on the split tail's model, whose slots and consumer sums are new
# memory traffic, and on the attention passes' models (the rehearsal reads before the wait):
# the call's last ~2.5 minutes
for c in tail_split att_pass_bits; do
    GLIM_REQUIRE_CUDA=1 CHECK_ONLY=$c timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 \
        build/tests/test_cuda_forward > $OUT/memcheck_$c.log 2>&1
    echo "memcheck $c rc=$? $(grep 'ERROR SUMMARY' $OUT/memcheck_$c.log | tail -1) $(grep -E '^(PASS|FAIL)' $OUT/memcheck_$c.log | tr '\n' ' ')"
done
