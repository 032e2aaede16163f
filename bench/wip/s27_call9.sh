#!/bin/sh
# (Run in session 27 on main + bench/wip/refill_predicated.patch; results: RESULTS v29: -0.4 %, not kept.)
# s27_call9.sh (session 27): the span kernel's refill issued by lane 0 predicated, every lane
# keeping the (warp-uniform) request state, so that the warp no longer diverges and reconverges
# around lane 0's issue every chunk (call 8: under diagnostic 12 the per-chunk code's most
# sampled stall was that branch's BSSY, branch_resolving). Same bytes in the same order: the
# same bits. Tests (forward, kernels, hooks), then A/B x3 against main 979b910 (build/oldtree).
# Carry [".deps", "build/src/cuda", "build/oldtree"]; ~3 minutes.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
CHECKS="GLIM_CUDA_SPAN=1 GLIM_CUDA_DIAG_RING=0,GLIM_CUDA_SPAN_ACC=0" KTESTS=1 sh bench/ab_decode.sh old new old new old new 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=4) printf "   %s step %s loop(w/p/l) %s\n", $2, $4, $10}' | tail -10
echo "total $(($(date +%s) - T0)) s"
