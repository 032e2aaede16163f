#!/bin/sh
# next_call.sh (written by session 15 for the next GPU session's first device call): checks the
# timeline's new attention parts (8495200, not yet run on a GPU), measures
# bench/wip/late_gains.patch against the default in alternating processes, and reruns the GPU
# tests with the patch applied (it must change no bit). Run it from the repository root on the
# device with `carry` [".deps", "build/src/cuda"] after `git apply bench/wip/late_gains.patch`
# and `make -j2 all` here; revert the patch afterwards unless it is kept.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
KEEP_BUILD=1 OUT=$OUT/check sh bench/gpu_check.sh tests > /dev/null 2>&1
grep -E "tests:|FAIL" $OUT/check/summary.txt | head
: > $OUT/e.md
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
for v in - GLIM_CUDA_LATE_GAINS=1 - GLIM_CUDA_LATE_GAINS=1; do
  envs=$(echo "$v" | tr ',' ' '); [ "$v" = - ] && envs=
  printf '\ndecode with %s:\n\n' "$v" >> $OUT/e.md
  env $envs timeout 100 build/glimmer bench --synthetic --prompt 0 --timeline -n 32 --out $OUT/e.md > $OUT/b.log 2>&1 || { echo "bench $v rc=$?"; tail -5 $OUT/b.log; }
  echo "$v: $(grep -E '^\| decode' $OUT/e.md | tail -3 | awk -F'|' '{printf "%s %s; ", $3, $7}')"
done
# the attention rows: wait / q and tiles (q + first tile + math) / merge; the three parts must
# add up to the q-and-tiles figure
grep -E "^\| attention" $OUT/e.md | head -6
