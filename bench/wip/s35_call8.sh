#!/bin/sh
# s35_call8.sh (session 35): decode attention's split merge (at_merge_head) on the decode instance
# with its loops over the splits unrolled and predicated (SASS 4328 -> 4104), against the HEAD
# binary of a089ce9 (build/old_glimmer.xz). GPU tests, memcheck on the attention and forward
# cases; decode without the timeline, alternating processes, 4 rounds; the bench with the
# timeline; ncu of attention at 4k (full layer: a merge) with line-annotated SASS.
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
grep -E '^FAIL|check failed|info: att_spec' $OUT/checks.log | head -10
CHECK_ONLY=random_mlx4,att_spec_bits,span_spec_bits GLIM_REQUIRE_CUDA=1 timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck, random_mlx4 + att_spec_bits + span_spec_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
# rows: 4 = this tree, 9 = the HEAD binary (a089ce9)
for r in 1 2 3 4; do for s in 4 9; do
  echo "spec $s" >> $OUT/nt.md
  case $s in 9) b="build/old_glimmer";; *) b="build/glimmer";; esac
  timeout 100 $b bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<=9; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "row %d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/final.md > $OUT/final.log 2>&1 || { echo "bench rc $?"; tail -5 $OUT/final.log; }
grep -E '^copy|^\| (decode|prefill)|^\| attention' $OUT/final.md
mkdir -p $OUT/prof
sh bench/sass_lines.sh $OUT/prof/lines build/src/cuda/attention.o 'k_attentionILb0ELi2E' || true
NCU_TARGETS="att4kf k_attention 21" OUT=$OUT/prof timeout 120 sh bench/ncu_stalls.sh
cd $OUT/prof && rm -f *_raw.csv *_cuda.csv *_details.txt && tar czf ../prof.tgz . && cd .. && rm -rf prof
cd $OUT && tar czf logs.tgz checks.log san.log nt.md 2>/dev/null; rm -f checks.log san.log; ls
