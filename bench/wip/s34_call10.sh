#!/bin/sh
# s34_call10.sh (session 34): GLIM_CUDA_SPAN_SPEC=3 (2 with the norm's scale before the loop and
# the softcap epilogue compiled out too: 3688 -> 3608 SASS instructions) against 2.
# span_spec_bits first (3 bit for bit against 0); decode without the timeline, alternating
# processes, 3 rounds; on an H200 also the whole bench. Carry [".deps","build/src/cuda"]; ~2 min.
cd "$(dirname "$0")/../.." || exit 1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/checks.log 2>&1
echo "forward: rc=$? $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail"
grep -E '^FAIL|check failed|span_spec3' $OUT/checks.log | head -6
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
for r in 1 2 3; do for s in 2 3; do
  echo "spec $s" >> $OUT/nt.md
  GLIM_CUDA_SPAN_SPEC=$s timeout 100 build/glimmer bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<4; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "SPAN_SPEC=%d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
case "$gpu" in *H200*)
  timeout 150 build/glimmer bench --synthetic --out $OUT/final.md > $OUT/final.log 2>&1 || { echo "bench rc $?"; tail -5 $OUT/final.log; }
  grep -E '^copy|^\| (decode|prefill)' $OUT/final.md ;;
esac
cd $OUT && tar czf logs.tgz checks.log nt.md final.md 2>/dev/null; rm -f checks.log; ls
