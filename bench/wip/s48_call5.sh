#!/bin/sh
# s48_call5.sh (session 48): MLX units with rows g and g + 8 interleaved in each 16-byte word
# (gcu_unit_q_w32: each load is one integer mma's A operand, no register moves; the span loop's
# chunk 346 -> 289 instructions in ptxas's SASS) against main (build/old_glimmer.xz, 257425b: the
# same decode code as main). The kernel checks first (every reader of the layout: the decode
# matvecs, the prefill GEMM, k_mv), then ROUNDS (4) alternating rounds of old / new with and
# without weight bytes, the three GPU test programs, compute-sanitizer and the bench of record.
# Before the call, here: make -j2 all && scripts/pack_cuda_objects.sh. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    timeout 100 build/old_glimmer bench --synthetic --timeline --out $OUT/bench_main_h200.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench_main_h200.md
fi
GLIM_REQUIRE_CUDA=1 timeout 280 build/tests/test_cuda_kernels > $OUT/kernels.log 2>&1
rc=$?
echo "kernel checks rc=$rc: $(grep -c '^PASS' $OUT/kernels.log) pass, $(grep -c '^FAIL' $OUT/kernels.log) fail at $(( $(date +%s) - t0 )) s"
grep -A3 '^FAIL' $OUT/kernels.log | head -16
[ $rc -eq 0 ] || exit 1
D=GLIM_CUDA_DIAG_RING=4
sh bench/decode_ab.sh ${ROUNDS:-4} old new old,$D $D 2>&1 | tail -4
echo "a/b done at $(( $(date +%s) - t0 )) s"
sh bench/gpu_tests.sh test_cuda_forward test_cuda_hooks
for tool in memcheck racecheck synccheck; do
    timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx4_a \
        --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/san_$tool.log 2>&1
    echo "compute-sanitizer $tool: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1))"
done
rm -f $OUT/san_synccheck.log
timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
grep -E "^\| (decode|gate|down|qkvg|o_proj)" $OUT/tl_nobytes.md | head -6
echo "all took $(( $(date +%s) - t0 )) s"
