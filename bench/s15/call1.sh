#!/bin/sh
# session 15, device call 1: chain_bits repro (old = 72cef3c, new = + staging_two_rounds),
# the new tree's checks, the A/B of the staging patch, the SASS of the tma kernels.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
make -C build/oldtree -j16 DEPS_PREFIX="$PWD/.deps/root" build/glimmer build/tests/test_cuda_forward > $OUT/build_old.log 2>&1 || { tail -20 $OUT/build_old.log; exit 1; }
OFF="GLIM_CUDA_BLOCK_ROWS=0 GLIM_CUDA_DEFER_MERGE=0 GLIM_CUDA_TMA=0 GLIM_CUDA_LATE_RING=1 GLIM_CUDA_PF=8 GLIM_CUDA_ATT_TRIG=0 GLIM_CUDA_I8=0 GLIM_CUDA_ATT_MMA=0 GLIM_CUDA_ATT_PMERGE=0 GLIM_CUDA_ATT_PACK=0"
: > $OUT/chain.log
for tree in build/oldtree/build build/oldtree/build build/oldtree/build build build; do
  echo "== $tree OFF_DEFAULTS" >> $OUT/chain.log
  env $OFF CHECK_ONLY=chain_bits GLIM_REQUIRE_CUDA=1 timeout 60 $tree/tests/test_cuda_forward >> $OUT/chain.log 2>&1
done
for v in GLIM_CUDA_LATE_RING=1 GLIM_CUDA_ATT_TRIG=0 GLIM_CUDA_PF=8 "GLIM_CUDA_ATT_PMERGE=0 GLIM_CUDA_ATT_PACK=0" GLIM_CUDA_ATT_MMA=0 "GLIM_CUDA_LATE_RING=1 GLIM_CUDA_PF=8"; do
  echo "== new $v" >> $OUT/chain.log
  env $v CHECK_ONLY=chain_bits GLIM_REQUIRE_CUDA=1 timeout 60 build/tests/test_cuda_forward >> $OUT/chain.log 2>&1
done
echo "chain: $(grep -c '^PASS' $OUT/chain.log) pass, $(grep -c '^FAIL' $OUT/chain.log) fail"
grep -E '^(==|FAIL)' $OUT/chain.log | paste -sd' ' | sed 's/== /\n== /g' | grep FAIL
(cuobjdump -sass build/src/cuda/decode_mv_tma.o | gzip > $OUT/sass_tma.gz) 2>/dev/null
CHECKS="GLIM_NOTHING=1 GLIM_CUDA_LATE_RING=1 GLIM_CUDA_LATE_RING=2 $(echo $OFF | tr ' ' ',')" KTESTS=1 sh bench/ab_decode.sh old new old new new,GLIM_CUDA_DIAG_WINDOW=4
cp build/oldtree/build/glimmer /dev/null
