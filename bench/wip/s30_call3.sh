#!/bin/sh
# s30_call3.sh (session 30): the prefill GEMM's piece epilogue as two FMAs a sum (was an FMUL,
# an FFMA and an FADD) and stream-K (GLIM_CUDA_GEMM=3: one wave of blocks sharing the tiles'
# spans in equal contiguous ranges; gate/up's 468 split-K blocks were 3.55 waves), against the
# tree before both (commit 1b27206's binary, built here: build/oldtree/glimmer_old.xz). Tests
# first (kernels, whose matvec_gemm runs GEMM 1, 2, 3 and 0; forward under 2 and 3; memcheck on
# matvec_gemm, racecheck on a 41-token prompt under 3), then prefill of 2048 tokens, 3 rounds of
# new GEMM 2, new GEMM 3, old; then the prompt profile under 3.
# Carry [".deps", "build/src/cuda", "build/oldtree"]; ~6 minutes.
# Ran once (RESULTS v32, call 3): the old binary, linked here, did not load on the device
# (libmicrohttpd.so.12 is not there, and .deps does not carry it: the device build leaves the
# server out), so its rows repeat the row before. Build such a binary here with `make HAVE_MHD=`
# (no server) for it to load there.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open('build/oldtree/glimmer_old.xz').read())" > /tmp/glimmer_old && chmod +x /tmp/glimmer_old
: > $OUT/checks.log
GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
for g in 2 3; do
  GLIM_CUDA_GEMM=$g GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^FAIL|check failed' $OUT/checks.log | head -8
CHECK_ONLY=matvec_gemm GLIM_REQUIRE_CUDA=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_kernels > $OUT/san_k.log 2>&1
echo "memcheck, matvec_gemm: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_k.log | tail -1)"
P=0,$(seq -s, 11 50)
GLIM_CUDA_GEMM=3 timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 build/glimmer run -m tests/vectors/mlx8_b --backend cuda \
  --tokens "$P" -n 4 --temp 0 --ignore-eos > $OUT/san_race.log 2>&1
echo "racecheck, 41-token prompt, GEMM=3: rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race.log | tail -1)"
: > $OUT/pf.md
for r in 1 2 3; do
  for v in "2 build/glimmer" "3 build/glimmer" "2 /tmp/glimmer_old"; do
    set -- $v
    GLIM_CUDA_GEMM=$1 timeout 120 $2 bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf.log 2>&1 || tail -3 $OUT/pf.log
    echo "GEMM=$1 $2: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
GLIM_CUDA_GEMM=3 timeout 150 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof.md 2>&1 || tail -3 $OUT/prof.md
sed -n '/prompt sub-chunk, kernel alone/,/^$/p' $OUT/prof.md
