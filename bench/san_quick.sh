#!/bin/sh
# san_quick.sh (on the GPU machine, after a build): compute-sanitizer's memcheck and racecheck
# (and synccheck with --sync) over a short greedy decode of the 4-bit fixture on the CUDA
# backend, each tool's output in $OUT/san_TOOL.log, one line per tool on stdout; then memcheck
# over test_cuda_forward's att_poll_bits (the fixture's heads never take decode attention's
# instance for the 30B, SPEC 2 or 3; that test runs both on the 30B's heads, ~7 s on an H100;
# racecheck over it ran out 200 s in session 51). The quick sanitizer pass a device call runs
# next to bench/gpu_tests.sh (session 48's call scripts each carried their own copy of this loop).
# Usage: bench/san_quick.sh [--sync]
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
tools="memcheck racecheck"
[ "$1" = --sync ] && tools="$tools synccheck"
for tool in $tools; do
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx4_a \
        --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > "$OUT/san_$tool.log" 2>&1
    echo "compute-sanitizer $tool: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.log" | tail -1))"
done
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_forward > "$OUT/san_att_memcheck.log" 2>&1
echo "compute-sanitizer memcheck over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY' "$OUT/san_att_memcheck.log" | tail -1); $(grep -cE '^PASS' "$OUT/san_att_memcheck.log") pass)"
