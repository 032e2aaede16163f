#!/bin/sh
# (Run in session 27, results: RESULTS v29.)
# s27_call1.sh (written in session 26, not yet run; ~8 minutes): two prepared changes, both
# compiled here, neither yet run on a GPU:
#  - bench/wip/chunk_ilp.patch: the span kernel's two units of a chunk in one basic block, so
#    that their mma chains can interleave (the loop is latency-bound, ~9 cycles per issued
#    instruction per warp, RESULTS v28); same sums in the same order, so the same bits; default
#    instance 112 -> 118 registers (on main after its review commit), no spills.
#  - bench/wip/att_short.patch: GLIM_CUDA_ATT_SHORT=64, decode attention over at most 64 keys a
#    warp per query head with no block barrier between scores, softmax and P V (attention is
#    ~9 us a layer at ctx 0, ~4.5 us of it the one tile's "tiles" phase); the fp32 tiles' bits
#    (test_cuda_forward's new att_short_bits, a device count that it ran); k_attention 122 ->
#    128 registers, no spills (the cap of its (256, 2) bounds: also re-time ATT_SHORT=0 against main,
#    as the A/B below does). Off by default. A helper reviewed it (session 26): no bug found in the
#    kernel; the test now pins ATT_FEW/WARM/DIAG_ATT_TWICE off, counts at least a block per kv head
#    per short (layer, token), and covers 16 heads of 256 in one block and in head groups.
# Trees: old = main (build/oldtree), mid = main + chunk_ilp (build/midtree), new = this tree =
# main + both. 1) test_cuda_forward under the default and under ATT_SHORT=64 (the fixtures
# against transformers' logits), test_cuda_kernels; 2) alternating processes x3: old, mid, new
# (the short path's code present but off: what it costs the default), new with ATT_SHORT=64.
# Prepare here, from a clean main (bench/wip/s27_prepare.sh does all of it):
#   for t in old mid; do git worktree add build/${t}tree HEAD && rm build/${t}tree/.git; done
#   git worktree prune; (cd build/midtree && patch -p1 < ../../bench/wip/chunk_ilp.patch)
#   rm -rf build/oldtree/tests/vectors build/oldtree/bench/runs build/midtree/tests/vectors build/midtree/bench/runs
#   git apply bench/wip/chunk_ilp.patch bench/wip/att_short.patch && make -j2 all
# Carry [".deps", "build/src/cuda", "build/oldtree", "build/midtree"]; timeout_s 600.
# Land each patch only if it wins at every context (and for att_short: if ATT_SHORT=64 wins,
# make it the default and rerun the forward test).
cd "$(dirname "$0")/../.." || exit 1
[ -d build/oldtree ] && [ -d build/midtree ] || { echo "build/oldtree and build/midtree must be carried"; exit 1; }
T0=$(date +%s)
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
run_test() { # name, log, settings...
  t=$1; log=$2; shift 2
  env "$@" GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/$t > $OUT/$log 2>&1
  echo "$t $*: rc=$? pass $(grep -c '^PASS' $OUT/$log) fail $(grep -c '^FAIL' $OUT/$log) skip $(grep -c '^SKIP' $OUT/$log)"
  grep -E "^FAIL|check failed" $OUT/$log | head -5
}
run_test test_cuda_forward fwd.log GLIM_CUDA_ATT_SHORT=0
grep -E "short_|att_short" $OUT/fwd.log | head -8
run_test test_cuda_forward fwd_short.log GLIM_CUDA_ATT_SHORT=64
run_test test_cuda_kernels kern.log GLIM_CUDA_ATT_SHORT=0
echo "tests $(($(date +%s) - T0)) s"
sh bench/ab_decode.sh old mid new new,GLIM_CUDA_ATT_SHORT=64 old mid new new,GLIM_CUDA_ATT_SHORT=64 \
   old mid new new,GLIM_CUDA_ATT_SHORT=64 2>&1 | grep -v '^new\|^old\|^mid'
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|attention \(full\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=6) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -28
echo "total $(($(date +%s) - T0)) s"
