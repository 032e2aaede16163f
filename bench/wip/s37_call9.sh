#!/bin/sh
# s37_call9.sh (session 37): decode attention's tile requests zero-fill the rows past the split's
# end (the decode instance's post-wait zeroing loop gone). The GPU tests (forward, kernels,
# hooks), memcheck on att_spec_bits and span_spec_bits, then the A/B against the session's start
# (f082982, build/old_glimmer.xz: the default path there is this tree's but for attention), 4
# rounds; on an H200 also the TWO variants. Here first: make -j2 all; scripts/old_binary.sh
# f082982; tar cf - build/src/cuda | xz -T2 -3 > build/cuda_objs.tar.xz. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz. ~5 min.
cd "$(dirname "$0")/../.." || exit 1
[ -f build/cuda_objs.tar.xz ] && xz -dc build/cuda_objs.tar.xz | tar xf -
q="name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"
nvidia-smi --query-gpu=$q --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
CHECK_ONLY=att_spec_bits,span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 250 compute-sanitizer --tool memcheck \
  --error-exitcode 9 build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    sh bench/decode_ab.sh 3 new old GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_TWO=1 GLIM_CUDA_SPAN_TWO=8
else
    sh bench/decode_ab.sh 4 new old
fi
for v in new old; do
    b=build/glimmer; [ $v = old ] && b=build/old_glimmer
    timeout 100 $b bench --synthetic --timeline --prompt 0 --out $OUT/tl_$v.md > /dev/null 2>&1
    echo "$v"; grep -E '^\| (attention|decode)' $OUT/tl_$v.md | head -9
done
nvidia-smi --query-gpu=$q --format=csv,noheader
