#!/bin/sh
# s26_call2.sh (session 26): the GPU tests on today's main (5f9f31f's host refactor was not
# GPU-run), then Nsight Compute with per-instruction execution counts and stall samples of the
# span kernel's down and qkvg launches, and the span kernel's SASS, all in one tarball (call 1's
# ncu outputs were lost to the 8-file limit); then an A/B against build/oldtree. Carry [".deps",
# "build/src/cuda", "build/oldtree"].
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
mkdir -p /tmp/r
for t in test_cuda_forward test_cuda_kernels test_cuda_hooks; do
  GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/$t > /tmp/r/$t.log 2>&1; echo "$t rc=$? pass $(grep -c '^PASS' /tmp/r/$t.log) fail $(grep -c '^FAIL' /tmp/r/$t.log) skip $(grep -c '^SKIP' /tmp/r/$t.log)"
done
echo "tests $(($(date +%s) - T0)) s"
OUT=/tmp/r NCU_TARGETS="down k_dmv 25;qkvg k_dmv 22" sh bench/ncu_stalls.sh
cuobjdump -sass build/src/cuda/decode_mv_span.o > /tmp/r/span_sass.txt 2>&1
for k in down qkvg; do
  echo "== $k"
  grep -E "Warp Cycles Per Issued Instruction|Issue Slots Busy|Executed Instructions  |Stall (No Inst|Wait|Short|Long|Not Sel|Barrier|Math|Branch|MIO|LG|Dispatch)|Stall Selected" /tmp/r/${k}_details.txt | head -20
done
tar czf $OUT/s26_call2.tgz -C /tmp r
echo "total $(($(date +%s) - T0)) s"
# A/B: this tree (the span's factors hoisted per pair) against build/oldtree (main before it)
T1=$(date +%s)
sh bench/ab_decode.sh old new old new old new 2>&1 | grep -v '^new\|^old'
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -12
echo "ab $(($(date +%s) - T1)) s"
