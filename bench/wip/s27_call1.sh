#!/bin/sh
# s27_call1.sh (written in session 26, not yet run; ~6 minutes): the span kernel's two units of a
# chunk in one basic block (bench/wip/chunk_ilp.patch: behind `if (n == 2)` the second unit's mma
# chain began only after the first's; the loop is latency-bound, ~9 cycles per issued
# instruction per warp, RESULTS v28; same sums in the same order, so the same bits; default
# instance 114 -> 119 registers, no spills). 1) the forward and kernel tests of the patched
# tree; 2) A/B old (main, build/oldtree) / new (patched) x4, alternating processes;
# 3) ncu of the patched qkvg and o_proj (instruction counts and stall samples, one tarball).
# Prepare here: git apply bench/wip/chunk_ilp.patch && make -j2 all &&
# git worktree add build/oldtree HEAD && rm build/oldtree/.git && git worktree prune &&
# rm -rf build/oldtree/tests/vectors build/oldtree/bench/runs. Carry [".deps", "build/src/cuda",
# "build/oldtree"]; timeout_s 600. Keep the patch only if new beats old at every context.
cd "$(dirname "$0")/../.." || exit 1
[ -d build/oldtree ] || { echo "build/oldtree must be carried"; exit 1; }
T0=$(date +%s)
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for t in test_cuda_forward test_cuda_kernels; do
  GLIM_REQUIRE_CUDA=1 timeout 150 build/tests/$t > $OUT/$t.log 2>&1; echo "$t rc=$? pass $(grep -c '^PASS' $OUT/$t.log) fail $(grep -c '^FAIL' $OUT/$t.log) skip $(grep -c '^SKIP' $OUT/$t.log)"
done
echo "tests $(($(date +%s) - T0)) s"
sh bench/ab_decode.sh old new old new old new old new 2>&1 | grep -v '^new\|^old'
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -12
echo "ab $(($(date +%s) - T0)) s"
mkdir -p /tmp/r
OUT=/tmp/r NCU_TARGETS="qkvg k_dmv 22;oproj k_dmv 23" sh bench/ncu_stalls.sh
for k in qkvg oproj; do
  echo "== $k"
  grep -E "Warp Cycles Per Issued Instruction|Issue Slots Busy|Executed Instructions  |Stall (Long|Wait|Short|Barrier)" /tmp/r/${k}_details.txt | head -8
done
tar czf $OUT/s27_call1_ncu.tgz -C /tmp r
echo "total $(($(date +%s) - T0)) s"
