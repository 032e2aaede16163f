#!/bin/sh
# s34_call8.sh (session 34): GLIM_CUDA_ATT_SPEC=3 (decode attention's instance with the timeline
# compiled out, as SPAN_SPEC=2 did for the span kernel: 5048 -> 4888 SASS instructions). The
# forward test's att_spec_bits (3 bit for bit against 2, its count) first; then decode without
# the timeline, ATT_SPEC 2 against 3, alternating processes, 3 rounds. Carry
# [".deps","build/src/cuda"]; ~3 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=att_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/checks.log 2>&1
echo "forward: rc=$? $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail"
grep -E '^FAIL|check failed|spec3' $OUT/checks.log | head -6
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
for r in 1 2 3; do for s in 2 3; do
  echo "spec $s" >> $OUT/nt.md
  GLIM_CUDA_ATT_SPEC=$s timeout 100 build/glimmer bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<4; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "ATT_SPEC=%d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
cd $OUT && tar czf logs.tgz checks.log nt.md 2>/dev/null; rm -f checks.log; ls
