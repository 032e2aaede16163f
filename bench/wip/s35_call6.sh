#!/bin/sh
# s35_call6.sh (session 35): the span kernel's rare paths laid out to fall through
# (__builtin_expect on the one-unit chunk and the ring's pair advance) and the merge's late-norm
# scale without a branch, against the HEAD binary of 67c6bbc (build/old_glimmer.xz, made here).
# GPU tests; decode without the timeline, alternating processes, 4 rounds; the line-annotated SASS
# of the span kernel's SPEC 4 and attention's SPEC 2 instances (bench/sass_lines.sh) with ncu
# profiles of qkvg, o_proj and attention at ctx 0 and 4k (bench/ncu_stalls.sh).
# Carry [".deps","build/src/cuda","build/old_glimmer.xz"]; ~5 min.
cd "$(dirname "$0")/../.." || exit 1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer || exit 1
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
: > $OUT/checks.log
for t in test_cuda_forward test_cuda_kernels test_cuda_hooks; do
  echo "== $t" >> $OUT/checks.log
  GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/$t >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed' $OUT/checks.log | head -10
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
# rows: 4 = this tree, 9 = the HEAD binary (67c6bbc)
for r in 1 2 3 4; do for s in 4 9; do
  echo "spec $s" >> $OUT/nt.md
  case $s in 9) b="build/old_glimmer";; *) b="build/glimmer";; esac
  timeout 100 $b bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<=9; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "row %d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
mkdir -p $OUT/prof
sh bench/sass_lines.sh $OUT/prof/lines build/src/cuda/decode_mv_span.o 'k_dmv_spanILi2ELb0ELi0ELi1ELb1ELi4E' || true
sh bench/sass_lines.sh $OUT/prof/lines build/src/cuda/attention.o 'k_attentionILb0ELi2E' || true
NCU_TARGETS="qkvg k_dmv 22;oproj k_dmv 23;att0 k_attention 6;att4k k_attention 20;att4kf k_attention 21" OUT=$OUT/prof timeout 200 sh bench/ncu_stalls.sh
cd $OUT/prof && rm -f *_raw.csv *_cuda.csv *_details.txt && tar czf ../prof.tgz . && cd .. && rm -rf prof
cd $OUT && tar czf logs.tgz checks.log nt.md 2>/dev/null; rm -f checks.log; ls
