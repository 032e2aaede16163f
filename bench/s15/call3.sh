#!/bin/sh
# session 15, device call 3: k_dmv_tma's L2 prefetch before the PDL wait (GLIM_CUDA_PF units per
# warp) and the ring's depth / request time, swept on this tree in alternating processes.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
for e in GLIM_CUDA_PF=8 GLIM_CUDA_PF=32; do
  echo "== forward with $e" >> $OUT/checks.log
  env $e GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
: > $OUT/e.md
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
for v in - GLIM_CUDA_PF=4 GLIM_CUDA_PF=8 GLIM_CUDA_PF=16 GLIM_CUDA_PF=32 - GLIM_CUDA_PF=8 GLIM_CUDA_PF=16 GLIM_CUDA_TMA_SLOTS=3 GLIM_CUDA_TMA_SLOTS=3,GLIM_CUDA_PF=8 GLIM_CUDA_LATE_RING=0 GLIM_CUDA_LATE_RING=0,GLIM_CUDA_PF=8 - GLIM_CUDA_PF=16,GLIM_CUDA_DIAG_WINDOW=4; do
  envs=$(echo "$v" | tr ',' ' '); [ "$v" = - ] && envs=
  printf '\ndecode with %s:\n\n' "$v" >> $OUT/e.md
  env $envs timeout 100 build/glimmer bench --synthetic --prompt 0 --timeline -n 32 --out $OUT/e.md > $OUT/b.log 2>&1 || { echo "bench $v rc=$?"; tail -5 $OUT/b.log; }
  echo "$v: $(grep -E '^\| decode' $OUT/e.md | tail -3 | awk -F'|' '{printf "%s %s; ", $3, $7}')"
done
