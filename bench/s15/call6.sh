#!/bin/sh
# session 15, device call 6: k_dmv_tma's L2 prefetch of GLIM_CUDA_PF units per warp issued
# right after the PDL wait (call 3 issued it before the wait: slower at every size).
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/e.md
for v in - GLIM_CUDA_PF=2 GLIM_CUDA_PF=4 GLIM_CUDA_PF=8 - GLIM_CUDA_PF=4; do
  envs=$(echo "$v" | tr ',' ' '); [ "$v" = - ] && envs=
  printf '\ndecode with %s:\n\n' "$v" >> $OUT/e.md
  env $envs timeout 60 build/glimmer bench --synthetic --prompt 0 --timeline -n 32 --out $OUT/e.md > $OUT/b.log 2>&1 || { echo "bench $v rc=$?"; tail -5 $OUT/b.log; }
  echo "$v: $(grep -E '^\| decode' $OUT/e.md | tail -3 | awk -F'|' '{printf "%s %s; ", $3, $7}')"
done
