#!/bin/sh
# s33_callD.sh (session 33): ATT_SPEC=1 now the default; ATT_SPEC=2 (the few-key splits on the
# tensor cores too: no fp32 tiles compiled in) and the decode instance without the whole-block
# merge (6.1 K instructions, SPEC 2 5.2 K, against 8.6 K in call C). (1) tests: the
# forward test (att_spec_bits with its spec2 cases), kernels, hooks; memcheck on att_spec_bits.
# (2) decode A/B: SPEC 1 (default), 2 and 0, 3 rounds. (3) Nsight Compute of the decode
# attention (default instance) at ctx 0 and 4k, sliding layer 0 (the fixed NCU_TAR). Carry
# [".deps", "build/src/cuda", "build/oldtree"]; ~7 minutes.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
: > $OUT/checks.log
for t in test_cuda_forward test_cuda_kernels test_cuda_hooks; do
  echo "== $t" >> $OUT/checks.log
  GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/$t >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed|spec' $OUT/checks.log | head -14
CHECK_ONLY=att_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, att_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
set --
# old: 5bf9f17 (ATT_SPEC=1 the default, the whole-block merge still compiled in: 8.6 K)
for r in 1 2 3; do set -- "$@" old new new,GLIM_CUDA_ATT_SPEC=2 new,GLIM_CUDA_ATT_SPEC=0; done
# fewer span-kernel instances a layer (the code runs cold where instances alternate): all four
# products on one instance (the LATE one, or the plain one), or qkvg and down one-row
for r in 1 2; do set -- "$@" new,GLIM_CUDA_SPAN_TWO=0,GLIM_CUDA_SPAN_LATE=15 new,GLIM_CUDA_SPAN_TWO=0,GLIM_CUDA_SPAN_LATE=0 new,GLIM_CUDA_SPAN_TWO=0; done
OUT=$OUT/ab STEPS="qkvg, attention (sliding), o_proj, gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new'
echo "attention rows (first process of each):"
awk -F'|' '/^decode with /{v=$0; sub(/^decode with /, "", v); t = (v in done) ? 0 : 1; done[v] = 1; next}
  /^timeline @ ctx/{c=$0; sub(/^timeline @ ctx /, "", c); sub(/:.*/, "", c)}
  t && /^\| attention/ {printf "  %s @%s %s: %s; %s; %s\n", v, c, $2, $4, $5, $10}' $OUT/ab/e.md
mkdir -p $OUT/ncu
OUT=$OUT/ncu NCU_TARGETS="att0_sl k_attention 4;att4k_sl k_attention 20" timeout 200 sh bench/ncu_stalls.sh
for f in att0_sl att4k_sl; do
  echo "== $f"; grep -E "^ *(Duration|Elapsed Cycles|Warp Cycles Per Issued Instruction|Issue Slots Busy)" $OUT/ncu/${f}_details.txt | sort -u | head -5
  sed -n '/^| index/,$p' $OUT/ncu/${f}_profile.md | head -16 | cut -c1-160
done
cd $OUT && tar czf logs.tgz checks.log san.log ab/e.md 2>/dev/null; (cd ncu && tar czf ../ncu.tgz *_details.txt *_profile.md *_sass.csv 2>/dev/null); rm -rf ab ncu san.log; ls -la
