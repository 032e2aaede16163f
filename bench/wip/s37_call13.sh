#!/bin/sh
# s37_call13.sh (session 37): the span kernel reads one word of each 64-byte line of its
# arguments at its start, one warp a line (GLIM_CUDA_PARAM_TOUCH=1, gcu_param_touch): is a late
# block's ~1.1 us before its wait (call 11) its constant-cache misses, one line after another?
# span_spec_bits under it, A/B 4 rounds (0 / 1), the timeline of each.
# Here first: make -j2 all; tar cf - build/src/cuda | xz -T2 -3 > build/cuda_objs.tar.xz.
# Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
[ -f build/cuda_objs.tar.xz ] && xz -dc build/cuda_objs.tar.xz | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
GLIM_CUDA_PARAM_TOUCH=1 CHECK_ONLY=span_spec_bits,span_loop GLIM_REQUIRE_CUDA=1 timeout 150 build/tests/test_cuda_forward > $OUT/check.log 2>&1
echo "check: rc=$? $(grep -cE '^PASS' $OUT/check.log) pass $(grep -cE '^FAIL' $OUT/check.log) fail"
sh bench/decode_ab.sh 4 new GLIM_CUDA_PARAM_TOUCH=1
for v in 0 1; do
    GLIM_CUDA_PARAM_TOUCH=$v timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl$v.md > /dev/null 2>&1
    echo "PARAM_TOUCH=$v"; grep -E '^\| (qkvg|o_proj|gate|down|decode)' $OUT/tl$v.md | head -5
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
