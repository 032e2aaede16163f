#!/bin/sh
# next_call2.sh (session 16): the second device call, on the trees next_call.sh carried (run
# that one first; carry the same paths): the compute ceiling of the three trees
# (GLIM_CUDA_DIAG_WINDOW=4), the switches on the new tree in alternating processes
# (late_gains.patch's GLIM_CUDA_LATE_GAINS; main's clusters for qkvg and o_proj, owning row
# blocks per cluster with each block staging its own row, or with the staging shared; main's
# GLIM_CUDA_FLAG_WAIT: read the timeline's "past PDL wait" column of every kernel),
# then Nsight Compute's instruction count on gate/up for the old and new trees
# (paired_groups.patch predicts ~10 % fewer instructions per unit: ~126 -> ~113). ~8 minutes.
cd "$(dirname "$0")/../.." || exit 1
export OUT
D=GLIM_CUDA_DIAG_WINDOW=4
C1=new,GLIM_CUDA_CLUSTER_PRODUCTS=11,GLIM_CUDA_CLUSTER_OWN_STAGE=3
C2=new,GLIM_CUDA_CLUSTER_PRODUCTS=11
F=new,GLIM_CUDA_FLAG_WAIT=1
sh bench/ab_decode.sh old,$D mid,$D new,$D new new,GLIM_CUDA_LATE_GAINS=1 $C1 $C2 $F new new,GLIM_CUDA_LATE_GAINS=1 $C1 $C2 $F
for b in build/oldtree/build/glimmer build/glimmer; do
  timeout 120 ncu --kernel-name regex:k_dmv_tma --launch-skip 202 --launch-count 1 --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active $b bench --synthetic --prompt 0 -n 4 > $OUT/ncu_$(echo $b | tr / _).txt 2>&1
done
grep -E "k_dmv_tma|inst_executed|cycles_elapsed|issue_active|long_scoreboard" $OUT/ncu_*.txt | head -20
