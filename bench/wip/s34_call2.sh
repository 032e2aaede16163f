#!/bin/sh
# s34_call2.sh (session 34): attention's q preparation in registers and its gates prefetched into
# L1 (the decode instance only), against the session's starting tree (build/oldtree = 3d5d0c1's
# code, d09b400); and the span kernel on one instance a layer (SPAN_TWO=0 SPAN_LATE=15) or with
# qkvg alone on the two-row one (SPAN_TWO=1 SPAN_LATE=14). The forward test first (att_spec_bits
# holds SPEC 1, now on the register path, bit for bit against the lean instance's shared-memory
# path), memcheck on att_spec_bits. Carry [".deps","build/src/cuda","build/oldtree"]; ~4 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
set --
for r in 1 2 3; do set -- "$@" old new new,GLIM_CUDA_SPAN_TWO=0,GLIM_CUDA_SPAN_LATE=15 new,GLIM_CUDA_SPAN_TWO=1,GLIM_CUDA_SPAN_LATE=14; done
OUT=$OUT/ab CHECKS="GLIM_CUDA_ATT_SPEC=2" STEPS="qkvg, attention (sliding), o_proj, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E '^FAIL|info: (att_spec|spec2)' $OUT/ab/checks.log | head -12
CHECK_ONLY=att_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, att_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
echo "attention rows (first process of each):"
awk -F'|' '/^decode with /{v=$0; sub(/^decode with /, "", v); t = (v in done) ? 0 : 1; done[v] = 1; next}
  /^timeline @ ctx/{c=$0; sub(/^timeline @ ctx /, "", c); sub(/:.*/, "", c)}
  t && /^\| attention/ {printf "  %s @%s %s: %s; %s; %s\n", v, c, $2, $4, $5, $10}' $OUT/ab/e.md
cd $OUT && tar czf logs.tgz ab/checks.log san.log ab/e.md 2>/dev/null; rm -rf ab san.log; ls
