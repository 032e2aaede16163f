#!/bin/sh
# s49_call4.sh (session 49): the tree to land, decode attention's merge in fewer round trips
# without the single split's early gates (calls 2-3): the three GPU test programs, the quick
# sanitizer pass with synccheck, 4 alternating rounds against 8522bed (build/old_glimmer.xz) and
# both timelines, and o_proj at two row blocks a chunk (SPAN_TWO=15) under the H200 emulation
# (DIAG_RING=9: 2 chunks in 7 without weight bytes). On an H200, bench/wip/s49_h200.sh (its A/B against 8522bed) instead of the
# rounds. Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
sh bench/gpu_tests.sh
sh bench/san_quick.sh --sync
echo "checks done at $(( $(date +%s) - t0 )) s"
case $gpu in
*H200*) BUILT=1 sh bench/wip/s49_h200.sh ;;
*) sh bench/decode_ab.sh ${ROUNDS:-4} old new GLIM_CUDA_DIAG_RING=9 GLIM_CUDA_DIAG_RING=9,GLIM_CUDA_SPAN_TWO=15 2>&1 | tail -4 ;;
esac
for b in old_glimmer glimmer; do
    timeout 100 build/$b bench --synthetic --timeline --prompt 0 --out $OUT/tl_$b.md > /dev/null 2>&1
    echo "$b:"; grep -E "^\| (decode|attention)" $OUT/tl_$b.md | cut -d'|' -f1-4,10-11
done
echo "call took $(( $(date +%s) - t0 )) s"
