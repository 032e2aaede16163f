#!/bin/sh
# s35_call3.sh (session 35): GLIM_CUDA_SPAN_SPEC=4 (3 with the front-owner shares and the inputs'
# scalar load path compiled out; in every instance the barrier init and sums-zeroing loops not
# unrolled, the merge straight-line over 16 groups: the run path's skipped stretches of the
# session-35 ncu profile) against 3 and against the HEAD binary of 5baf822 (build/old_glimmer.xz,
# made here). span_spec_bits and the GPU tests, memcheck on span_spec_bits; decode without the
# timeline, alternating processes, 3 rounds; the whole bench; ncu of qkvg and o_proj (skips).
# Carry [".deps","build/src/cuda","build/old_glimmer.xz"]; ~6 min.
cd "$(dirname "$0")/../.." || exit 1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer || exit 1
: > $OUT/checks.log
for t in test_cuda_forward test_cuda_kernels test_cuda_hooks; do
  echo "== $t" >> $OUT/checks.log
  GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/$t >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed|info: span_spec' $OUT/checks.log | head -10
CHECK_ONLY=random_mlx4,span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, random_mlx4 + span_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
# rows: 4 = this tree (SPEC 4, its default), 3 = this tree with SPEC 3, 9 = the HEAD binary (its default, SPEC 3)
for r in 1 2 3; do for s in 4 3 9; do
  echo "spec $s" >> $OUT/nt.md
  case $s in 9) b="build/old_glimmer";; *) b="env GLIM_CUDA_SPAN_SPEC=$s build/glimmer";; esac
  timeout 100 $b bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<=9; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "row %d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
timeout 150 build/glimmer bench --synthetic --out $OUT/final.md > $OUT/final.log 2>&1 || { echo "bench rc $?"; tail -5 $OUT/final.log; }
grep -E '^copy|^\| (decode|prefill)' $OUT/final.md
NCU_TAR=1 NCU_TARGETS="qkvg k_dmv 22;oproj k_dmv 23" OUT=$OUT/ncu timeout 120 sh bench/ncu_stalls.sh
cd $OUT && tar czf logs.tgz checks.log san.log nt.md final.md 2>/dev/null; rm -f san.log checks.log; ls
