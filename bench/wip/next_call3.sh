#!/bin/sh
# next_call3.sh (session 16): the third device call, on the same carried trees: the compute
# ceiling (GLIM_CUDA_DIAG_WINDOW=4) of the old and new trees, then Nsight Compute's instruction
# count on gate/up for both (paired_groups.patch predicts ~10 % fewer instructions per unit:
# ~126 -> ~113; the staging by fma fewer in the prologue). ~5 minutes.
cd "$(dirname "$0")/../.." || exit 1
export OUT
D=GLIM_CUDA_DIAG_WINDOW=4
sh bench/ab_decode.sh old,$D new,$D old,$D new,$D
for b in build/oldtree/build/glimmer build/glimmer; do
  timeout 120 ncu --kernel-name regex:k_dmv_tma --launch-skip 202 --launch-count 1 --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active $b bench --synthetic --prompt 0 -n 4 > $OUT/ncu_$(echo $b | tr / _).txt 2>&1
done
grep -E "k_dmv_tma|inst_executed|cycles_elapsed|issue_active|long_scoreboard" $OUT/ncu_*.txt | head -20
# everything under $OUT in one file, which alone comes back with e.md (the tool returns at most
# 8 files, and which ones of more is not said)
tar czf /tmp/r.tgz -C "$OUT" . && cp "$OUT/e.md" /tmp/e.md 2>/dev/null; rm -rf "$OUT"/* && mv /tmp/r.tgz "$OUT/r.tgz" && { [ -f /tmp/e.md ] && mv /tmp/e.md "$OUT/e.md"; true; }
