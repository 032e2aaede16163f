#!/bin/sh
# s37_call12.sh (session 37): the gains' loads run by every span product before its wait (the
# RAW ones' predicated off), so that their code is warm in the SM when a NORM product's late
# blocks reach it (call 11: their start to past the wait 1.1 us against RAW's 0.5). A/B against
# the session's start (f082982) 4 rounds, then the timeline (shortest wait, longest prologue).
# Here first: make -j2 all; tar cf - build/src/cuda | xz -T2 -3 > build/cuda_objs.tar.xz.
# Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
[ -f build/cuda_objs.tar.xz ] && xz -dc build/cuda_objs.tar.xz | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 100 build/tests/test_cuda_forward > $OUT/check.log 2>&1
echo "span_spec_bits: rc=$? $(grep -cE '^PASS' $OUT/check.log) pass $(grep -cE '^FAIL' $OUT/check.log) fail"
sh bench/decode_ab.sh 4 new old
timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl.md > /dev/null 2>&1
grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/tl.md | head -5
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
