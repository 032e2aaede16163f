#!/bin/sh
# s37_call14.sh (session 37): the NORM/RESID prologue's element loops (tma_load_gains, tma_rows,
# tma_prepare_row) test j against the thread's element count and address from one pointer per
# row: the same elements, the same arithmetic, the same bits; 80 SASS instructions fewer in the
# span kernel's SPEC 4 instance. The GPU tests (forward, kernels, hooks), then the A/B against
# the session's start (f082982) 4 rounds, the timeline. Here first: make -j2 all;
# tar cf - build/src/cuda | xz -T2 -3 > build/cuda_objs.tar.xz. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
[ -f build/cuda_objs.tar.xz ] && xz -dc build/cuda_objs.tar.xz | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/decode_ab.sh 4 new old
timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl.md > /dev/null 2>&1
grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/tl.md | head -5
sh bench/gpu_tests.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
