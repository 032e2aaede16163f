#!/bin/sh
# gpu_tests.sh (on the GPU machine, after a build): the three GPU test programs under the default
# settings (test_cuda_forward, test_cuda_kernels, test_cuda_hooks), their output in
# $OUT/checks.log, a line of counts and any failures on stdout. The quick check a device call
# runs before it measures; bench/gpu_check.sh runs the forward test under every switch.
# Arguments: the programs to run instead of all three (e.g. test_cuda_forward).
cd "$(dirname "$0")/.." || exit 1
progs=${*:-test_cuda_forward test_cuda_kernels test_cuda_hooks}
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
: > "$OUT/checks.log"
for t in $progs; do
    echo "== $t" >> "$OUT/checks.log"
    GLIM_REQUIRE_CUDA=1 timeout 250 build/tests/$t >> "$OUT/checks.log" 2>&1
    echo "rc=$?" >> "$OUT/checks.log"
done
echo "checks: $(grep -c '^PASS' "$OUT/checks.log") pass, $(grep -c '^FAIL' "$OUT/checks.log") fail"
grep -E '^FAIL|^rc=[1-9]' "$OUT/checks.log" | head -10
