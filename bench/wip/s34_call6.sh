#!/bin/sh
# s34_call6.sh (session 34): GLIM_CUDA_SPAN_SPEC, the span kernel's LATE instance with the
# stamps, the no-bytes diagnostic, the flag release and the fused staging compiled out (1; 5.3 K
# -> 3.8 K SASS instructions) and the timeline too (2; 3.7 K). bench/icache_probe.cu (call 5)
# found a taken jump to a line not in the SM's instruction caches at ~170 cycles from L2 and
# ~300 from DRAM, straight-line code free: the run path jumping over inlined code it does not
# run is the cost. First span_spec_bits (bit for bit against SPEC 0, and its launch count) and
# memcheck on it; then decode without the timeline (which SPEC 2 compiles out), alternating
# processes, 4 rounds; then the timeline of SPEC 0 against 1, 2 rounds. Carry
# [".deps","build/src/cuda"]; ~6 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_spec_bits,span_chunk_bits,span_loop GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/checks.log 2>&1
echo "forward: rc=$? $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail"
grep -E '^FAIL|check failed|span_spec' $OUT/checks.log | head -8
CHECK_ONLY=span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, span_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
for r in 1 2 3 4; do for s in 0 1 2; do
  echo "spec $s" >> $OUT/nt.md
  GLIM_CUDA_SPAN_SPEC=$s timeout 100 build/glimmer bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<3; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "SPAN_SPEC=%d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
set -- new new,GLIM_CUDA_SPAN_SPEC=1 new new,GLIM_CUDA_SPAN_SPEC=1
OUT=$OUT/ab STEPS="qkvg, attention (sliding), o_proj, gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new'
cd $OUT && tar czf logs.tgz checks.log san.log nt.md ab/e.md 2>/dev/null; rm -rf ab san.log checks.log; ls
