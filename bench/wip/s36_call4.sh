#!/bin/sh
# s36_call4.sh (session 36): the final tree. GPU tests (forward, kernels, hooks), memcheck on a
# decode through the new default (att_group_half_bits, span_spec_bits), the session against its
# start (624e875, build/old_glimmer.xz) 4 rounds alternating, then the bench of record (timeline
# on). The SM clock and throttle reasons before and after (call 3 ran on a machine whose decode
# fell to 121 tok/s with the copy bandwidth unchanged). Here first: make -j2 all;
# scripts/old_binary.sh 624e875; the objects as one archive, since with the old binary they pass
# the carry's 64 MiB: tar cf - build/src/cuda | xz -T2 -3 > build/cuda_objs.tar.xz. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz. ~5 min.
cd "$(dirname "$0")/../.." || exit 1
[ -f build/cuda_objs.tar.xz ] && xz -dc build/cuda_objs.tar.xz | tar xf -
q="name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"
nvidia-smi --query-gpu=$q --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
CHECK_ONLY=att_group_half_bits,span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 250 compute-sanitizer --tool memcheck \
  --error-exitcode 9 build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
sh bench/decode_ab.sh 4 new old
nvidia-smi --query-gpu=$q --format=csv,noheader
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| decode|^\| prefill" $OUT/bench.md
nvidia-smi --query-gpu=$q --format=csv,noheader
