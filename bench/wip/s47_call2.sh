#!/bin/sh
# s47_call2.sh: the whole-byte scheme's remaining checks after s46_call5.sh passed its digit
# checks, A/B and forward test: test_cuda_kernels + test_cuda_hooks, compute-sanitizer
# memcheck / racecheck / synccheck on the mlx4 fixture, then (time left, any card) the bench
# of record with its timeline and the no-bytes timeline. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
[ -x build/glimmer ] || scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
sh bench/gpu_tests.sh ${PROGS:-test_cuda_kernels test_cuda_hooks}
echo "tests done at $(( $(date +%s) - t0 )) s"
for tool in memcheck racecheck synccheck; do
    timeout ${SAN_T:-70} compute-sanitizer --tool $tool --error-exitcode 9 \
        build/glimmer run -m tests/vectors/mlx4_a --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos \
        > $OUT/san_$tool.log 2>&1
    echo "compute-sanitizer $tool: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1))"
done
echo "sanitizer done at $(( $(date +%s) - t0 )) s"
if [ $(( $(date +%s) - t0 )) -lt ${BENCH_BEFORE:-330} ]; then
    timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
    for f in $OUT/bench.md $OUT/tl_nobytes.md; do
        echo "== $f"; grep -E '^device|^copy|^\| (decode|prefill)' $f | head -6
    done
fi
echo "all took $(( $(date +%s) - t0 )) s"
