#!/bin/sh
# s35_first.sh (written in session 34, not run): the final tree (GLIM_CUDA_SPAN_SPEC=3 the default) through the GPU
# tests (forward, kernels, hooks) and memcheck on a 3-layer decode's forward cases; decode
# without the timeline, SPAN_SPEC 3 (default), 2 and 0, alternating processes, 3 rounds; the whole
# bench. Carry [".deps","build/src/cuda"]; ~5 min.
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
grep -E '^FAIL|check failed|info: span_spec' $OUT/checks.log | head -10
CHECK_ONLY=random_mlx4,span_spec_bits,att_spec_bits GLIM_REQUIRE_CUDA=1 timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, random_mlx4 + span_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
for r in 1 2 3; do for s in 3 2 0; do
  echo "spec $s" >> $OUT/nt.md
  GLIM_CUDA_SPAN_SPEC=$s timeout 100 build/glimmer bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<=3; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "SPAN_SPEC=%d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/final.md > $OUT/final.log 2>&1 || { echo "bench rc $?"; tail -5 $OUT/final.log; }
grep -E '^copy|^\| (decode|prefill)' $OUT/final.md
cd $OUT && tar czf logs.tgz checks.log san.log nt.md final.md 2>/dev/null; rm -f san.log checks.log; ls
