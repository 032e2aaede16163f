#!/bin/sh
# s48_call6.sh (session 48): an MLX unit's scale words per piece, rows g and g + 8 side by side
# (layout.cu), so that the span loop's lanes load their own groups' scales only
# (tma_unit_load's HALF: no selects; the SPEC chunk 331 -> 318 SASS instructions), on top of
# the row interleave (568a4e2, build/alt_glimmer.xz) against main before it (build/old_glimmer.xz,
# 257425b). The kernel checks first, then ROUNDS (4) alternating rounds of old / alt / new with
# and without weight bytes, the forward and hooks tests, compute-sanitizer and the bench of
# record with the no-bytes timeline. Before the call, here: make -j2 all &&
# scripts/pack_cuda_objects.sh; scripts/old_binary.sh 568a4e2 alt. Carry .deps,
# build/cuda_objs.tar.xz, build/old_glimmer.xz, build/alt_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer
    timeout 100 build/old_glimmer bench --synthetic --timeline --out $OUT/bench_main_h200.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench_main_h200.md
fi
GLIM_REQUIRE_CUDA=1 timeout 280 build/tests/test_cuda_kernels > $OUT/kernels.log 2>&1
rc=$?
echo "kernel checks rc=$rc: $(grep -c '^PASS' $OUT/kernels.log) pass, $(grep -c '^FAIL' $OUT/kernels.log) fail at $(( $(date +%s) - t0 )) s"
grep -A3 '^FAIL' $OUT/kernels.log | head -16
[ $rc -eq 0 ] || exit 1
D=GLIM_CUDA_DIAG_RING=4
sh bench/decode_ab.sh ${ROUNDS:-4} old alt new old,$D alt,$D $D 2>&1 | tail -6
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
