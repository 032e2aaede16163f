#!/bin/sh
# s28_call1.sh (written in session 27, not yet run; ~6 minutes): bench/wip/span_two_rows.patch,
# two row blocks per chunk of the span kernel (one mbarrier wait, one refill of two bulk copies,
# one pass of the chunk's bookkeeping per two row blocks; GLIM_CUDA_SPAN_CHUNK=4, its default,
# and 2 = one row block a chunk as on main). RESULTS v29: with no bytes about half of a chunk of
# one row block is bookkeeping around its two units. At the 30B's shapes two slots of 4 units fit
# for qkvg (10 -> 5 chunks a warp), o_proj (4 -> 2) and down (20 -> 10: its rings now start at
# shared memory's offset 0, RAW stages no row); gate/up's do not (its 19 rows of sums take 62 KB)
# and it keeps one row block a chunk. Same sums in the same order per row block: the same bits.
# Compiled only (default instance 118 -> 122 registers, no spills; a helper reviewed it: no bug, the
# register-sum instances now keep rpc 1 at compile time, their spills as on main); the request/loop walk is
# checked by bench/wip/two_rows_sim.py (528 cases). Prepare here, from a clean main:
#   rm -rf build/oldtree && git worktree add build/oldtree HEAD && rm build/oldtree/.git &&
#   git worktree prune && rm -rf build/oldtree/tests/vectors build/oldtree/bench/runs &&
#   git apply bench/wip/span_two_rows.patch && make -j2 all
# Carry [".deps", "build/src/cuda", "build/oldtree"]; timeout_s 600. Land if the tests pass and
# new beats old at every context; if SPAN_CHUNK=2 alone is slower than old, the rpc branches cost
# the default instance (as the diagnostics' did in session 27).
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
CHECKS="GLIM_CUDA_SPAN=1 GLIM_CUDA_SPAN_CHUNK=2 GLIM_CUDA_SPAN_ACC=0" KTESTS=1 sh bench/ab_decode.sh \
   old new,GLIM_CUDA_SPAN_CHUNK=2 new old new,GLIM_CUDA_SPAN_CHUNK=2 new old new,GLIM_CUDA_SPAN_CHUNK=2 new \
   2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
FIX=tests/vectors/mlx4_a; [ -d "$FIX" ] || FIX=tests/vectors/hf_a
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 build/glimmer run -m "$FIX" --backend cuda \
   --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/memcheck.log 2>&1; echo "memcheck rc=$? $(grep -c 'ERROR SUMMARY: 0' $OUT/memcheck.log) clean summaries"
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=4) printf "   %s step %s loop(w/p/l) %s\n", $2, $4, $10}' | head -15
echo "total $(($(date +%s) - T0)) s"
