#!/bin/sh
# next_call2.sh (session 16): the second device call, on the trees next_call.sh carried (run
# that one first; carry the same paths): main's and the patches' switches on the new tree, in
# alternating processes: late_gains.patch's GLIM_CUDA_LATE_GAINS; main's clusters for qkvg and
# o_proj (owning row blocks per cluster, each block staging its own row, or with the staging
# shared); main's GLIM_CUDA_FLAG_WAIT (read the timeline's "past PDL wait" column of every
# kernel); main's GLIM_CUDA_LATE_NORM (the RESID prologues, and the GPU tests' forward setting
# for its tolerance); and (session 17) main's GLIM_CUDA_STAGE_I8, down's input staged by gate/up's
# epilogue, last measured in session 8 before whole row blocks per block. Only the new tree is
# built. ~8 minutes.
cd "$(dirname "$0")/../.." || exit 1
export OUT
C1=new,GLIM_CUDA_CLUSTER_PRODUCTS=11,GLIM_CUDA_CLUSTER_OWN_STAGE=3
C2=new,GLIM_CUDA_CLUSTER_PRODUCTS=11
F=new,GLIM_CUDA_FLAG_WAIT=1
N=new,GLIM_CUDA_LATE_NORM=1
S=new,GLIM_CUDA_STAGE_I8=1
sh bench/ab_decode.sh new new,GLIM_CUDA_LATE_GAINS=1 $C1 $C2 $F $N $S new new,GLIM_CUDA_LATE_GAINS=1 $C1 $C2 $F $N $S
# everything under $OUT in one file, which alone comes back with e.md (the tool returns at most
# 8 files, and which ones of more is not said)
tar czf /tmp/r.tgz -C "$OUT" . && cp "$OUT/e.md" /tmp/e.md 2>/dev/null; rm -rf "$OUT"/* && mv /tmp/r.tgz "$OUT/r.tgz" && { [ -f /tmp/e.md ] && mv /tmp/e.md "$OUT/e.md"; true; }
