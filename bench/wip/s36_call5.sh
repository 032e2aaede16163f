#!/bin/sh
# s36_call5.sh (session 36): the timeline's new column, the last block's start: does a NORM
# product's last loop start (gate/up ~4.7 us, qkvg ~3.5 after the previous kernel's end, with
# the PDL release at ~0.5 and a ~2 us prologue) wait on its last blocks' launch? Decode with the
# timeline at ctx 0 / 4k / 32k, twice; test_cuda_forward. Carry .deps, build/src/cuda. ~2 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/test_cuda_forward > $OUT/check.log 2>&1
echo "test_cuda_forward: rc=$? $(grep -cE '^PASS' $OUT/check.log) pass $(grep -cE '^FAIL' $OUT/check.log) fail"
for r in 1 2; do
  timeout 120 build/glimmer bench --synthetic --prompt 0 --timeline --out $OUT/tl_$r.md > /dev/null 2>&1
  grep -E '^\| decode' $OUT/tl_$r.md
  grep -A10 "timeline @ ctx 0" $OUT/tl_$r.md | grep -E "^\| (kernel|qkvg|att|o_proj|gate|down|head)"
done
