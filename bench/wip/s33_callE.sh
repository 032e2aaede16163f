#!/bin/sh
# s33_callE.sh (session 33): the final tree on an H200, cut to the device time left. The
# forward test (att_spec_bits among its cases) under the new default ATT_SPEC=2, memcheck on
# att_spec_bits; decode A/B: default (SPEC 2) against SPEC 1, and all four products on the span
# kernel's LATE one-row instance (SPAN_TWO=0 SPAN_LATE=15: +0.5 % at ctx 0 on an H100 in call
# D), 3 rounds; then the whole bench of the default with a 2048-token prompt. Carry [".deps",
# "build/src/cuda"]; ~4 minutes.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
for t in test_cuda_forward; do
  echo "== $t" >> $OUT/checks.log
  GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/$t >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed|info: spec2' $OUT/checks.log | head -12
CHECK_ONLY=att_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, att_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
set --
for r in 1 2 3; do set -- "$@" new new,GLIM_CUDA_ATT_SPEC=1 new,GLIM_CUDA_SPAN_TWO=0,GLIM_CUDA_SPAN_LATE=15; done
OUT=$OUT/ab STEPS="qkvg, attention (sliding), attention (full), o_proj, gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new'
echo "attention rows (first process of each):"
awk -F'|' '/^decode with /{v=$0; sub(/^decode with /, "", v); t = (v in done) ? 0 : 1; done[v] = 1; next}
  /^timeline @ ctx/{c=$0; sub(/^timeline @ ctx /, "", c); sub(/:.*/, "", c)}
  t && /^\| attention/ {printf "  %s @%s %s: %s; %s; %s\n", v, c, $2, $4, $5, $10}' $OUT/ab/e.md
timeout 120 build/glimmer bench --synthetic --out $OUT/final.md > $OUT/final.log 2>&1 || tail -5 $OUT/final.log
grep -E '^copy|^\| (decode|prefill)' $OUT/final.md
cd $OUT && tar czf logs.tgz checks.log san.log ab/e.md final.md 2>/dev/null; rm -rf ab san.log; ls
