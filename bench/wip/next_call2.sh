#!/bin/sh
# next_call2.sh (session 16; session 18 added the tests at the top): the second device call, on
# the trees next_call.sh carried (carry the same paths). First the GPU checks session 18 needs:
# flag_bits under GLIM_CUDA_I8=1 GLIM_CUDA_DYN=1 (its fix pins DYN=0) and the forward test under
# late_gains.patch's GLIM_CUDA_LATE_GAINS=1. Then main's and the patch's switches on the working
# tree, in alternating processes: GLIM_CUDA_LATE_GAINS; main's clusters for qkvg and o_proj
# (owning row blocks per cluster, each block staging its own row, or with the staging shared);
# GLIM_CUDA_FLAG_WAIT (read the timeline's "past PDL wait" column of every kernel);
# GLIM_CUDA_LATE_NORM (the RESID prologues); GLIM_CUDA_STAGE_I8, down's input staged by gate/up's
# epilogue, last measured in session 8 before whole row blocks per block. ~9 minutes.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
T=build/tests/test_cuda_forward
{ echo "== flag_bits under I8=1 DYN=1"; GLIM_CUDA_I8=1 GLIM_CUDA_DYN=1 CHECK_ONLY=flag_bits GLIM_REQUIRE_CUDA=1 timeout 120 $T
  echo "== LATE_GAINS=1"; GLIM_CUDA_LATE_GAINS=1 GLIM_REQUIRE_CUDA=1 timeout 240 $T; } > $OUT/tests.log 2>&1
echo "tests: $(grep -c '^PASS' $OUT/tests.log) passed, $(grep -c '^FAIL' $OUT/tests.log) failed"
grep -E "^==|^FAIL|check failed" $OUT/tests.log | head -20
C1=new,GLIM_CUDA_CLUSTER_PRODUCTS=11,GLIM_CUDA_CLUSTER_OWN_STAGE=3
C2=new,GLIM_CUDA_CLUSTER_PRODUCTS=11
F=new,GLIM_CUDA_FLAG_WAIT=1
N=new,GLIM_CUDA_LATE_NORM=1
S=new,GLIM_CUDA_STAGE_I8=1
sh bench/ab_decode.sh new new,GLIM_CUDA_LATE_GAINS=1 $C1 $C2 $F $N $S new new,GLIM_CUDA_LATE_GAINS=1 $C1 $C2 $F $N $S
# everything under $OUT in one file, which alone comes back with e.md (the tool returns at most
# 8 files, and which ones of more is not said)
tar czf /tmp/r.tgz -C "$OUT" . && cp "$OUT/e.md" /tmp/e.md 2>/dev/null; rm -rf "$OUT"/* && mv /tmp/r.tgz "$OUT/r.tgz" && { [ -f /tmp/e.md ] && mv /tmp/e.md "$OUT/e.md"; true; }
