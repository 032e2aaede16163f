#!/bin/sh
# s49_call2.sh (session 49): decode attention's merge with fewer round trips (the partials'
# outputs loaded with the maxima and sums, the gate loaded ahead, the last arrival not polling
# the counter) and a single split's gates loaded before its tiles. The forward and hooks tests
# (spec2_* hold the decode instance against the general one), the quick sanitizer pass, 4
# alternating rounds against 8522bed (build/old_glimmer.xz) with o_proj's two row blocks a chunk
# (SPAN_TWO=15) as a third variant, then both trees' timelines at ctx 0 / 4k / 32k. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
sh bench/gpu_tests.sh test_cuda_forward test_cuda_hooks
sh bench/san_quick.sh
echo "checks done at $(( $(date +%s) - t0 )) s"
sh bench/decode_ab.sh ${ROUNDS:-4} old new GLIM_CUDA_SPAN_TWO=15 2>&1 | tail -3
for b in old glimmer; do
    timeout 100 build/$b bench --synthetic --timeline --prompt 0 --out $OUT/tl_$b.md > /dev/null 2>&1
    echo "$b:"; grep -E "^\| (decode|attention)" $OUT/tl_$b.md | cut -d'|' -f1-4,10-11
done
echo "call took $(( $(date +%s) - t0 )) s"
