#!/bin/sh
# s24_call1.sh (written in session 23 for the next GPU call; ~3-4 minutes): bisect the
# regression RESULTS v25 found on an H200 (k_dmv_tma 7.4 % slower than at session 19's tree
# 34e54b8, attention's q preparation slower too). Prepare here:
#   make -j2 all
#   git worktree add build/oldtree 34e54b8 && rm build/oldtree/.git && git worktree prune
#   git worktree add build/midtree abb53dc && rm build/midtree/.git && git worktree prune
# (abb53dc: the split tail's series done, before UNIT_AHEAD and the attention refactor; 13 MB
# each) and carry [".deps", "build/src/cuda", "build/oldtree", "build/midtree"]; timeout_s 600.
# Items, alternating processes, twice: old, mid, main with k_dmv_tma (SPAN=0), the same with the
# lean k_dmv_tma (UNIT_AHEAD=2: no split tail compiled in, no stack frame), main's default, and
# the default with GLIM_CUDA_ATT_LEAN=1 (attention without the pass loop compiled in). Reading:
# old ~ mid > SPAN=0 points at sessions 20-22; mid < old at the tail series (34e54b8..abb53dc);
# UNIT_AHEAD=2 ~ old says the tail's local-memory TmaTail is the matvec's part; ATT_LEAN's
# attention rows against old's say whether the pass loop is attention's part. Then the forward
# test under ATT_LEAN=1 (its lean_* cases pass either way: they set the switch themselves).
cd "$(dirname "$0")/../.." || exit 1
[ -d build/oldtree ] && [ -d build/midtree ] || { echo "build/oldtree and build/midtree must be carried"; exit 1; }
T0=$(date +%s)
S=GLIM_CUDA_SPAN=0
sh bench/ab_decode.sh old mid new,$S new,$S,GLIM_CUDA_UNIT_AHEAD=2 new new,GLIM_CUDA_ATT_LEAN=1 \
    old mid new,$S new,$S,GLIM_CUDA_UNIT_AHEAD=2 new new,GLIM_CUDA_ATT_LEAN=1 2>&1 | tail -8
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s loop(w/p/l) %s\n", $2, $4, $10}' | head -36
echo "ab $(($(date +%s) - T0)) s"
GLIM_CUDA_ATT_LEAN=1 GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_forward > $OUT/fwd_lean.log 2>&1
echo "forward ATT_LEAN=1 rc=$? $(grep -c '^PASS' $OUT/fwd_lean.log) pass $(grep -c '^FAIL' $OUT/fwd_lean.log) fail ($(($(date +%s) - T0)) s)"
grep -E '^FAIL|check failed' $OUT/fwd_lean.log | head -5
