#!/bin/sh
# s18_call4.sh (session 18): bench/persist_probe.cu's variants (split even / by counter, barriers
# on / off, a plain read), then test_cuda_forward under gpu_check's OFF_DEFAULTS 5 times (3 more with the chain test alone) (run 3's
# chain_bits failure, session 14's again: how often). Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
export OUT
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -o build/persist_probe bench/persist_probe.cu > $OUT/probe_build.log 2>&1 || { cat $OUT/probe_build.log; }
timeout 150 build/persist_probe > $OUT/probe.md 2>&1; echo "probe rc=$?"; cat $OUT/probe.md
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
OFF="GLIM_CUDA_LATE_NORM=0 GLIM_CUDA_BLOCK_ROWS=0 GLIM_CUDA_DEFER_MERGE=0 GLIM_CUDA_TMA=0 GLIM_CUDA_LATE_RING=1 GLIM_CUDA_PF=8 GLIM_CUDA_ATT_TRIG=0 GLIM_CUDA_I8=0 GLIM_CUDA_ATT_MMA=0 GLIM_CUDA_ATT_PMERGE=0 GLIM_CUDA_ATT_PACK=0"
: > $OUT/chain.log
for i in 1 2 3 4 5; do
  echo "== run $i OFF_DEFAULTS" >> $OUT/chain.log
  env $OFF GLIM_REQUIRE_CUDA=1 timeout 60 build/tests/test_cuda_forward >> $OUT/chain.log 2>&1
done
for i in 1 2 3; do
  echo "== run $i OFF_DEFAULTS, chain_bits alone" >> $OUT/chain.log
  env $OFF CHECK_ONLY=chain_bits GLIM_REQUIRE_CUDA=1 timeout 60 build/tests/test_cuda_forward >> $OUT/chain.log 2>&1
done
grep -E "^==|^FAIL|differs" $OUT/chain.log | head -40
# uninitialized device memory read by the chain (a fresh process's memory is zeros; the full
# file reuses earlier tests' memory): compute-sanitizer's initcheck on the chain test alone
env $OFF CHECK_ONLY=chain_bits GLIM_REQUIRE_CUDA=1 timeout 100 compute-sanitizer --tool initcheck --print-limit 20 build/tests/test_cuda_forward > $OUT/initcheck.log 2>&1
echo "initcheck rc=$?"; grep -E "ERROR SUMMARY|Uninitialized|at 0x|by thread" $OUT/initcheck.log | head -12
# five files come back as they are (the tool returns up to 8)
