#!/bin/sh
# s33_callA.sh (session 33): (1) wg64.patch (applied in the working tree, GLIM_CUDA_GEMM=5 =
# the 64-token prefill GEMM on wgmma): matvec_gemm under 5, the forward test under 5, prefill
# of 2048 tokens GEMM 3 against 5 (2 rounds); (2) the decode attention's run-time knobs on an
# H200 at 4k and 32k, where attention is 16-44 us a layer (RESULTS v34): default against
# ATT_CHUNK=128, ATT_HEADS=8 / 2, ATT_GROUP=4096, ATT_PMERGE=4, 2 rounds, attention's rows at
# each context. Carry [".deps", "build/src/cuda"]; ~7 minutes.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
echo "== matvec_gemm under 5" >> $OUT/checks.log
CHECK_ONLY=matvec_gemm GLIM_CUDA_GEMM=5 GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
echo "== forward under 5" >> $OUT/checks.log
GLIM_CUDA_GEMM=5 GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed' $OUT/checks.log | head -8
: > $OUT/pf.md
for r in 1 2; do
  for g in 3 5; do
    GLIM_CUDA_GEMM=$g timeout 60 build/glimmer bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf.log 2>&1 || tail -3 $OUT/pf.log
    echo "GEMM=$g: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
set --
for r in 1 2; do set -- "$@" new new,GLIM_CUDA_ATT_CHUNK=128 new,GLIM_CUDA_ATT_HEADS=8 new,GLIM_CUDA_ATT_HEADS=2 new,GLIM_CUDA_ATT_GROUP=4096 new,GLIM_CUDA_ATT_PMERGE=4; done
OUT=$OUT/ab sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new'
echo "attention rows (ctx: kernel step; first start; wait/prologue/loop), first process of each:"
awk -F'|' '/^decode with /{v=$0; sub(/^decode with /, "", v); t = (v in done) ? 0 : 1; done[v] = 1; next}
  /^timeline @ ctx/{c=$0; sub(/^timeline @ ctx /, "", c); sub(/:.*/, "", c)}
  t && /^\| attention/ {printf "  %s @%s %s: %s; %s; %s\n", v, c, $2, $4, $5, $10}' $OUT/ab/e.md
cd $OUT && tar czf logs.tgz checks.log pf.md ab/e.md 2>/dev/null; ls
