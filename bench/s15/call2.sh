#!/bin/sh
# session 15, device call 2: the conflict-free unit and digit layouts: GPU tests, A/B against
# 72cef3c (build/oldtree), the diagnostic row, and Nsight Compute's shared-memory counters on
# gate/up for both trees.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
KEEP_BUILD=1 OUT=$OUT/check sh bench/gpu_check.sh tests > /dev/null 2>&1
grep -E "tests:|FAIL" $OUT/check/summary.txt | head
grep -B3 "^FAIL" $OUT/check/tests.log | head -20
sh bench/ab_decode.sh old new old new new,GLIM_CUDA_DIAG_WINDOW=4 old,GLIM_CUDA_DIAG_WINDOW=4
for b in build/oldtree/build/glimmer build/glimmer; do
  timeout 120 ncu --kernel-name regex:k_dmv_tma --launch-skip 202 --launch-count 1 --section MemoryWorkloadAnalysis_Tables --section SchedulerStats --section WarpStateStats --metrics smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_wait,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__cycles_elapsed.avg $b bench --synthetic --prompt 0 -n 4 > $OUT/ncu_$(echo $b | tr / _).txt 2>&1
done
grep -E "k_dmv_tma|bank_conflicts|wavefronts_mem|Duration|cycles_elapsed|Issued Warp|Eligible Warps" $OUT/ncu_*.txt | head -30
