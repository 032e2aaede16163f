#!/bin/sh
# s36_group_half.sh (written in session 35, not run): measures bench/wip/att_group_half.patch.
# Here first: `git apply bench/wip/att_group_half.patch && make -j2 all` (make: the device build
# runs the carried objects as they are). Then on the GPU machine: the GPU tests (the patch adds
# att_group_half_bits: GROUP_HALF=8 with 4 heads a block equals 8 heads a block bit for bit) and
# memcheck on it; decode without the timeline, alternating processes, 3 rounds, for
# GLIM_CUDA_ATT_GROUP_HALF 0 (off: today's plan), 128, 512, 1024 and GLIM_CUDA_ATT_HEADS=8 (session
# 35: 163.5 / 156.6 / 150.6 against 164.7 / 155.7 / 149.8). Keep the best value that does not
# lose ctx 0 as the default (forward_cuda.cu is at 1,498 lines with the patch).
# Carry [".deps","build/src/cuda"]; ~3 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
grep -q group_half_keys src/cuda/gcu.cuh || { echo "apply bench/wip/att_group_half.patch first"; exit 1; }
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/gpu_tests.sh
grep -E 'check failed|group_half' $OUT/checks.log | head -10
CHECK_ONLY=att_group_half_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck att_group_half_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
sh bench/decode_ab.sh 3 GLIM_CUDA_ATT_GROUP_HALF=0 GLIM_CUDA_ATT_GROUP_HALF=128 GLIM_CUDA_ATT_GROUP_HALF=512 \
  GLIM_CUDA_ATT_GROUP_HALF=1024 GLIM_CUDA_ATT_HEADS=8
cd $OUT && tar czf logs.tgz checks.log san.log ab.md; rm -f checks.log san.log
