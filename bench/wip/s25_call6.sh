#!/bin/sh
# s25_call6.sh (session 25, ~4 minutes): the final tree's GPU tests after the input instances'
# revert (the kernel tests last ran on those instances): test_cuda_kernels, test_cuda_forward,
# test_cuda_hooks under the default, forward under SPAN=0, then synccheck and memcheck on a
# 70-token prompt (2 splits per full layer) and one A/B pair. Carry [".deps", "build/src/cuda"].
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
KTESTS=1 CHECKS="GLIM_CUDA_SPAN=15 GLIM_CUDA_SPAN=0" sh bench/ab_decode.sh new new 2>&1 | grep -v '^new'
grep -E "^==|^FAIL|check failed" $OUT/checks.log | head -12
P70=0,$(seq -s, 11 79)
for tool in synccheck memcheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx8_b --backend cuda \
    --tokens $P70 -n 4 --temp 0 --ignore-eos > $OUT/san.log 2>&1
  echo "$tool mlx8_b 70 tokens: rc=$? $(grep 'ERROR SUMMARY' $OUT/san.log | tail -1)"
done
echo "total $(($(date +%s) - T0)) s"
