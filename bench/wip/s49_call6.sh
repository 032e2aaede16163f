#!/bin/sh
# s49_call6.sh (session 49, not run: no device time was left): with bench/wip/att_done_early.patch
# applied, the decode instance's mergers count themselves done before their
# merge (the atomic's round trip under the merge's loads instead of ending the block). The
# forward and hooks tests (spec2_long merges on the decode instance), the quick sanitizer pass,
# then 4 alternating rounds against the previous commit (build/alt_glimmer.xz) and both
# timelines; on an H200, bench/wip/s49_h200.sh (2 rounds) instead. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz (8522bed), build/alt_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
sh bench/gpu_tests.sh test_cuda_forward test_cuda_hooks
sh bench/san_quick.sh
echo "checks done at $(( $(date +%s) - t0 )) s"
case $gpu in
*H200*) BUILT=1 ROUNDS=2 sh bench/wip/s49_h200.sh ;;
*) sh bench/decode_ab.sh ${ROUNDS:-4} alt new 2>&1 | tail -2
   for b in alt_glimmer glimmer; do
       timeout 100 build/$b bench --synthetic --timeline --prompt 0 --out $OUT/tl_$b.md > /dev/null 2>&1
       echo "$b:"; grep -E "^\| (decode|attention)" $OUT/tl_$b.md | cut -d'|' -f1-4,10-11
   done ;;
esac
echo "call took $(( $(date +%s) - t0 )) s"
