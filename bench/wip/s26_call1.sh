#!/bin/sh
# s26_call1.sh (written in session 25 for the next GPU call, ideally on an H200; ~6 minutes):
# 1) today's main against session 19's tree and under the no-bytes diagnostic on the H200
#    (sessions 24-25 measured on H100s only; session 25's H200 gave 187 tok/s, 66 % of the floor,
#    with no old tree beside it); ATT_TRIG=1 beside the default (on the H100 attention's tiles were
#    3.7 us under TRIG=1 against 5.1 under TRIG=2, the totals within noise);
# 2) Nsight Compute's per-instruction stall samples of one launch each of qkvg, o_proj, down (the
#    span kernel) and attention at ctx 0 (bench/ncu_stalls.sh: SASS with samples, CSV). The
#    question for qkvg and o_proj (compute-bound at 4-5 row blocks per block, RESULTS v27): how
#    many SASS instructions per chunk the loop issues, and what share of the stall samples sits
#    on lane 0's refill (fence.proxy.async, the expect_tx, the bulk copy) and on the warp's
#    reconvergence before the next mma. A large share argues for a producer warp (qkvg and
#    gate/up have 3 warps idle in the loop). For attention: which of its ~10 steps after the
#    wait hold the 5 us of tiles at ctx 0.
# Prepare here: make -j2 all; git worktree add build/oldtree 34e54b8 && rm build/oldtree/.git &&
# git worktree prune. Carry [".deps", "build/src/cuda", "build/oldtree"]; timeout_s 600.
cd "$(dirname "$0")/../.." || exit 1
[ -d build/oldtree ] || { echo "build/oldtree must be carried"; exit 1; }
T0=$(date +%s)
sh bench/ab_decode.sh old new new,GLIM_CUDA_DIAG_RING=4 new,GLIM_CUDA_ATT_TRIG=1 \
    old new new,GLIM_CUDA_DIAG_RING=4 new,GLIM_CUDA_ATT_TRIG=1 2>&1 | grep -v '^new\|^old'
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -20
echo "ab $(($(date +%s) - T0)) s"
NCU_TARGETS="qkvg k_dmv 22;oproj k_dmv 23;down k_dmv 25;attn k_attention 6" sh bench/ncu_stalls.sh
for k in qkvg oproj down attn; do
  echo "== $k: top stall reasons"
  grep -E "Warp Cycles Per Issued Instruction|Issue Slots Busy|Registers Per Thread|Executed Instructions " $OUT/${k}_details.txt | head -6
done
echo "total $(($(date +%s) - T0)) s"
