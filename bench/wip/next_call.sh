#!/bin/sh
# next_call.sh (session 16, for the next GPU session; replaces session 15's): the first device
# call. Checks and measures what sessions 15-16 could not run:
#   - main's integer staging by fma (4c5c8af, bit-identical by construction) and its byte test
#     (test_cuda_kernels' i8_digits_bytes, against the digits' definition),
#   - bench/wip/paired_groups.patch (the unit scales two groups per conversion: new bits, so the
#     GPU tests must pass against the CPU),
#   - bench/wip/late_gains.patch's switch (GLIM_CUDA_LATE_GAINS=1; measured in next_call2.sh),
#   - main's clusters for qkvg / o_proj (GLIM_CUDA_CLUSTER_PRODUCTS, GLIM_CUDA_CLUSTER_OWN_STAGE:
#     check_decode mode 13, the cluster-bits test and two forward settings of gpu_check.sh),
#   - main's flag release (GLIM_CUDA_FLAG_WAIT: test_cuda_forward's flag_bits, bit for bit
#     against the PDL wait, and a forward setting of gpu_check.sh),
#   - the timeline's split of attention's q-and-tiles phase (8495200).
# Three trees, in alternating processes: old = 5de9174 (before the staging by fma), mid = main,
# new = main with both patches. Before the call, here (the repository root):
#   rm -rf build/oldtree build/midtree
#   git worktree add build/oldtree 5de9174 && rm build/oldtree/.git
#   git worktree add build/midtree HEAD && rm build/midtree/.git && git worktree prune
#   git apply bench/wip/paired_groups.patch bench/wip/late_gains.patch && make -j2 all
# then run this with `carry` [".deps", "build/src/cuda", "build/oldtree", "build/midtree"]
# (~50 MiB). Revert the patches afterwards unless they are kept. ~8 minutes.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
# the old and mid trees build on the CPUs while the tests hold the GPU (ab_decode.sh's own make
# then finds them built): ~2 minutes saved of the call's 10
for t in oldtree midtree; do
  nice make -C build/$t -j8 DEPS_PREFIX="$PWD/.deps/root" build/glimmer > $OUT/prebuild_$t.log 2>&1 &
done
KEEP_BUILD=1 OUT=$OUT/check sh bench/gpu_check.sh tests > /dev/null 2>&1
wait
grep -E "tests:|FAIL" $OUT/check/summary.txt | head
grep -B3 "^FAIL" $OUT/check/tests.log | head -20
sh bench/ab_decode.sh old mid new old mid new
# the attention rows: wait / q and tiles (q + first tile + math) / merge; the three parts must
# add up to the q-and-tiles figure (~6.2 us at context 0)
grep -E "^\| attention" $OUT/e.md | head -6
# everything under $OUT in one file, which alone comes back with e.md (the tool returns at most
# 8 files, and which ones of more is not said)
tar czf /tmp/r.tgz -C "$OUT" . && cp "$OUT/e.md" /tmp/e.md 2>/dev/null; rm -rf "$OUT"/* && mv /tmp/r.tgz "$OUT/r.tgz" && { [ -f /tmp/e.md ] && mv /tmp/e.md "$OUT/e.md"; true; }
