#!/bin/sh
# s33_callC.sh (session 33): GLIM_CUDA_ATT_SPEC (decode attention on an instance compiled for
# the 30B's decode: 8.6 K SASS instructions against 13.3 K). (1) att_spec_bits (bit for bit
# against the lean instance, 3 cases) and the whole forward test under ATT_SPEC=1; memcheck on
# att_spec_bits. (2) decode A/B, default against ATT_SPEC=1, 3 rounds. (3) the decode's run-time
# knobs chosen on H100s (sessions 24-31), once more on an H200, 2 rounds. Carry [".deps",
# "build/src/cuda"]; ~6 minutes.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
echo "== att_spec_bits" >> $OUT/checks.log
CHECK_ONLY=att_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
echo "== forward under ATT_SPEC=1" >> $OUT/checks.log
GLIM_CUDA_ATT_SPEC=1 GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed|spec_' $OUT/checks.log | head -12
CHECK_ONLY=att_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, att_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
set --
for r in 1 2 3; do set -- "$@" new new,GLIM_CUDA_ATT_SPEC=1; done
for r in 1 2; do
  for k in SPAN_ROWS=4 SPAN_TWO=11 SPAN_LATE=0 SPAN_LATE=2 SPAN_LATE=4 TMA_SLOTS=3 ATT_TRIG=1 ATT_TRIG=3 LATE_NORM=0 SPAN_EVEN=0; do
    set -- "$@" new,GLIM_CUDA_$k
  done
  # o_proj's early bytes slowed attention's cold pass (RESULTS v30): again with the smaller kernel
  for k in SPAN_LATE=4 SPAN_LATE=0 ATT_TRIG=1 SPAN_TWO=11; do
    set -- "$@" new,GLIM_CUDA_ATT_SPEC=1,GLIM_CUDA_$k
  done
done
OUT=$OUT/ab STEPS="qkvg, attention (sliding), attention (full), o_proj, gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new'
echo "attention rows, default and ATT_SPEC=1 (first process of each):"
awk -F'|' '/^decode with /{v=$0; sub(/^decode with /, "", v); t = (v in done) ? 0 : 1; done[v] = 1; next}
  /^timeline @ ctx/{c=$0; sub(/^timeline @ ctx /, "", c); sub(/:.*/, "", c)}
  t && (v == "new" || v == "new,GLIM_CUDA_ATT_SPEC=1") && /^\| attention/ {printf "  %s @%s %s: %s; %s; %s\n", v, c, $2, $4, $5, $10}' $OUT/ab/e.md
# where a decode attention block waits (the SPEC instance): ctx 0 and 4k, sliding layer 0
mkdir -p $OUT/ncu
GLIM_CUDA_ATT_SPEC=1 OUT=$OUT/ncu NCU_TAR=1 NCU_TARGETS="att0_sl k_attention 4;att4k_sl k_attention 20" timeout 200 sh bench/ncu_stalls.sh
cd $OUT && tar czf logs.tgz checks.log san.log ab/e.md 2>/dev/null; mv ncu/ncu_stalls.tgz . 2>/dev/null; rm -rf ab ncu san.log; ls
