#!/bin/sh
# s30_call3.sh (session 30): the prefill GEMM's piece epilogue as two FMAs a sum (was an FMUL,
# an FFMA and an FADD) against the tree before it (HEAD~, built here: build/oldtree/glimmer_old.xz,
# unpacked). Tests first (kernels and forward under the default), then prefill of 2048 tokens,
# new and old alternating, 3 rounds, and the prompt profile. Carry [".deps", "build/src/cuda",
# "build/oldtree"]; ~4 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open('build/oldtree/glimmer_old.xz').read())" > /tmp/glimmer_old && chmod +x /tmp/glimmer_old
: > $OUT/checks.log
GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep '^FAIL' $OUT/checks.log | head -8
: > $OUT/pf.md
for r in 1 2 3; do
  for b in build/glimmer /tmp/glimmer_old; do
    timeout 120 $b bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf.log 2>&1 || tail -3 $OUT/pf.log
    echo "$b: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
grep -E '^\| decode' $OUT/pf.md | head -3
timeout 150 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof.md 2>&1 || tail -3 $OUT/prof.md
sed -n '/prompt sub-chunk, kernel alone/,/^$/p' $OUT/prof.md
