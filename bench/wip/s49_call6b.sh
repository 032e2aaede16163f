#!/bin/sh
# s49_call6b.sh (session 49, not run: the device would not start in the last ~250 s; apply
# bench/wip/att_done_early.patch first): s49_call6.sh cut to what decides the
# change: the forward test (spec2_long merges on the decode instance) and both timelines (the
# merge's per-launch time; alt: the previous commit). Carry .deps, build/cuda_objs.tar.xz,
# build/alt_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
sh bench/gpu_tests.sh test_cuda_forward
echo "checks done at $(( $(date +%s) - t0 )) s"
xz -dc build/alt_glimmer.xz > build/alt_glimmer && chmod +x build/alt_glimmer
for b in alt_glimmer glimmer; do
    timeout 60 build/$b bench --synthetic --timeline --prompt 0 --out $OUT/tl_$b.md > /dev/null 2>&1
    echo "$b:"; grep -E "^\| (decode|attention)" $OUT/tl_$b.md | cut -d'|' -f1-4,10-11
done
echo "call took $(( $(date +%s) - t0 )) s"
