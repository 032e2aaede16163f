#!/bin/sh
# s29_call0.sh (written in session 29, when no GPU was lent; not yet run; ~4 minutes): the first
# run of the prefill GEMM (src/cuda/prefill_gemm.cu, GLIM_CUDA_GEMM=1; off by default until this
# call passes: then make 1 the default in gcu_options_default). Run it before s29_call1.sh.
# Build here first (make -j2 all); carry [".deps", "build/src/cuda"]. Two calls, timeout_s 400
# each: `sh bench/wip/s29_call0.sh tests` (1-3, ~3 min), then `... bench` (4-5, ~4 min).
#   1. test_cuda_kernels under GLIM_CUDA_GEMM=1 (matvec_gemm: the GEMM and k_mv against the CPU
#      on split, unsplit and odd shapes, every format; the other matvec tests' 5..32-token cases
#      then take the GEMM too)
#   2. test_cuda_forward under GLIM_CUDA_GEMM=1 and 2 (the fixtures' prompts: sub-chunks of 32
#      and of the rest through the GEMM)
#   3. compute-sanitizer memcheck and racecheck on the 41-token prompt of mlx8_b (prefill of 32 +
#      9 tokens: the 8-bit GEMM), memcheck on matvec_gemm
#   4. prefill of 2048 tokens on the synthetic 30B, GEMM (2 blocks an SM, and 1 for its 32-token
#      instance: GLIM_CUDA_GEMM=2) against k_mv, 3 alternating rounds
#   5. bench --profile's new prompt table under GEMM 1 and 0: the last 32-token sub-chunk of the
#      prompt kernel by kernel (the products' GB/s and TFLOPS, the stages, attention, a layer)
# Prediction (RESULTS v31): every test passes (the CPU emulation, bench/wip/pf_gemm_emulate.cu,
# matches the CPU on all its cases); prefill 610 -> 2000-3500 tok/s on an H100.
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/ab_out}
mkdir -p "$OUT"
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
if [ "${1:-tests}" = tests ]; then
: > $OUT/checks.log
echo "== kernels" >> $OUT/checks.log
GLIM_CUDA_GEMM=1 GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
for e in GLIM_CUDA_GEMM=1 GLIM_CUDA_GEMM=2; do
  echo "== forward with $e" >> $OUT/checks.log
  env $e GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep '^FAIL' $OUT/checks.log | head -8
P=0,$(seq -s, 11 50)
for tool in memcheck racecheck; do
  GLIM_CUDA_GEMM=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx8_b --backend cuda \
    --tokens "$P" -n 4 --temp 0 --ignore-eos > $OUT/san_$tool.log 2>&1
  echo "$tool, 41-token prompt: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1)"
done
CHECK_ONLY=matvec_gemm GLIM_REQUIRE_CUDA=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_kernels > $OUT/san_k.log 2>&1
echo "memcheck, matvec_gemm: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_k.log | tail -1)"
exit 0
fi
: > $OUT/pf.md
for r in 1 2 3; do
  for g in 1 2 0; do
    printf '\nprefill with GLIM_CUDA_GEMM=%s:\n\n' $g >> $OUT/pf.md
    GLIM_CUDA_GEMM=$g timeout 120 build/glimmer bench --synthetic -n 4 --prompt 2048 --out $OUT/pf.md > $OUT/pf_$g.log 2>&1 || tail -3 $OUT/pf_$g.log
    echo "GEMM=$g: $(grep -E '^\| prefill' $OUT/pf.md | tail -1)"
  done
done
# where a prompt's time goes: its last 32-token sub-chunk, kernel by kernel, under each setting
for g in 1 0; do
  echo "GEMM=$g, prompt sub-chunk kernels alone:"
  GLIM_CUDA_GEMM=$g timeout 150 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof_$g.md 2>&1 || tail -3 $OUT/prof_$g.md
  sed -n '/prompt sub-chunk, kernel alone/,/^$/p' $OUT/prof_$g.md
done
