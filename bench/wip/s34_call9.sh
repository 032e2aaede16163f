#!/bin/sh
# s34_call9.sh (session 34): GLIM_CUDA_SPAN_PRO=1, the span kernel's SPEC instance per prologue
# kind (RAW: o_proj and down, 3688 -> 2768 SASS instructions; with the row: qkvg and gate/up,
# 3640), so that neither jumps over the other's prologue code. span_spec_bits (its span_pro case
# bit for bit against SPEC 0) first; then decode without the timeline, default against
# SPAN_PRO=1, alternating processes, 3 rounds. Carry [".deps","build/src/cuda"]; ~3 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/checks.log 2>&1
echo "forward: rc=$? $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail"
grep -E '^FAIL|check failed|span_pro' $OUT/checks.log | head -6
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
for r in 1 2 3; do for s in 0 1; do
  echo "pro $s" >> $OUT/nt.md
  GLIM_CUDA_SPAN_PRO=$s timeout 100 build/glimmer bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "pro $s: rc $?"
done; done
awk '/^pro/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<2; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "SPAN_PRO=%d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
cd $OUT && tar czf logs.tgz checks.log nt.md 2>/dev/null; rm -f checks.log; ls
