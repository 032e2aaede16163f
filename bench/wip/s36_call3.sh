#!/bin/sh
# s36_call3.sh (session 36): is the NORM/RESID prologue's ~2 us its gains' first read?
# GLIM_CUDA_GAIN_PF=1 (o_proj and down prefetch the next prologue's gains into L2 before their
# PDL wait): the forward test under it and memcheck; decode A/B, 4 rounds (new, GAIN_PF=1); the
# timeline at ctx 0 for both and for the general instance with and without GLIM_CUDA_DIAG_RING=8
# (no gains read; wrong logits). Here first: make -j2 all. Carry .deps, build/src/cuda. ~5 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
GLIM_CUDA_GAIN_PF=1 GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/test_cuda_forward > $OUT/check_pf.log 2>&1
echo "test_cuda_forward GAIN_PF=1: rc=$? $(grep -cE '^PASS' $OUT/check_pf.log) pass $(grep -cE '^FAIL' $OUT/check_pf.log) fail"
grep -E '^FAIL' $OUT/check_pf.log | head -5
CHECK_ONLY=span_spec_bits GLIM_CUDA_GAIN_PF=1 GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck \
  --error-exitcode 9 build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck span_spec_bits GAIN_PF=1: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
sh bench/decode_ab.sh 4 new GLIM_CUDA_GAIN_PF=1
for v in GLIM_CUDA_GAIN_PF=0 GLIM_CUDA_GAIN_PF=1 GLIM_CUDA_SPAN_SPEC=0 GLIM_CUDA_SPAN_SPEC=0,GLIM_CUDA_DIAG_RING=8; do
  f=$OUT/tl_$(echo "$v" | tr -c 'A-Za-z0-9\n' _).md
  timeout 100 env $(echo "$v" | tr ',' ' ') build/glimmer bench --synthetic --prompt 0 --timeline --out $f > /dev/null 2>&1
  echo "timeline $v: $(grep -E '^\| decode @ ctx 0' $f | cut -d'|' -f3)"
  grep -A9 "timeline @ ctx 0" $f | grep -E "^\| (qkvg|o_proj|gate|down)"
done
cd $OUT && tar czf tl.tgz tl_*.md && rm -f tl_*.md
