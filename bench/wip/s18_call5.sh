#!/bin/sh
# s18_call5.sh (session 18): persist_probe with the "dealt" split (is the even split's loss the
# SMs' speeds or the address pattern?), then chain_bits alone under OFF_DEFAULTS less one switch
# at a time (run 4: it fails 8 of 8 under all of them; which one makes it fail?).
cd "$(dirname "$0")/../.." || exit 1
export OUT
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -o build/persist_probe bench/persist_probe.cu > $OUT/probe_build.log 2>&1 || cat $OUT/probe_build.log
timeout 100 build/persist_probe > $OUT/probe.md 2>&1; echo "probe rc=$?"; cat $OUT/probe.md
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
OFF="GLIM_CUDA_LATE_NORM=0 GLIM_CUDA_BLOCK_ROWS=0 GLIM_CUDA_DEFER_MERGE=0 GLIM_CUDA_TMA=0 GLIM_CUDA_LATE_RING=1 GLIM_CUDA_PF=8 GLIM_CUDA_ATT_TRIG=0 GLIM_CUDA_I8=0 GLIM_CUDA_ATT_MMA=0 GLIM_CUDA_ATT_PMERGE=0 GLIM_CUDA_ATT_PACK=0"
: > $OUT/chain.log
for drop in none $OFF; do
  envs=$(for e in $OFF; do [ "$e" = "$drop" ] || echo $e; done)
  printf "without %s: " "$drop" >> $OUT/chain.log
  env $envs CHECK_ONLY=chain_bits GLIM_REQUIRE_CUDA=1 timeout 40 build/tests/test_cuda_forward 2>&1 | grep -E "^(PASS|FAIL)" | tr '\n' ' ' >> $OUT/chain.log
  echo >> $OUT/chain.log
done
cat $OUT/chain.log
