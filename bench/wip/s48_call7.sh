#!/bin/sh
# s48_call7.sh (session 48): the span loop's chunk leaner three ways, on top of 972dcd0 (the row
# interleave and the per-lane scales; build/alt_glimmer.xz): the refill issues its copies before
# the source advances (no register copies of the old source across the advance's branches), the
# slots' barriers by a shared-memory address kept in a register (no address made again per
# chunk), and a full chunk of 2 x 2 units by one tensor copy through the matrix's tensor map
# (tensor_map.cu; GLIM_CUDA_SPAN_TMAP, default 1) instead of a bulk copy per row block. Against
# main before the session (build/old_glimmer.xz, 257425b). The span and matvec kernel checks, the
# forward tests (span_tmap: the same bits with and without the map) and hooks tests, ROUNDS (4)
# alternating rounds with and without weight bytes, compute-sanitizer and the bench of record.
# Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz, build/alt_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CHECK_ONLY=decode_matvec_span,decode_matvec GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels > $OUT/kernels.log 2>&1
rc=$?
echo "kernel checks rc=$rc: $(grep -c '^PASS' $OUT/kernels.log) pass, $(grep -c '^FAIL' $OUT/kernels.log) fail at $(( $(date +%s) - t0 )) s"
grep -A3 '^FAIL' $OUT/kernels.log | head -12
sh bench/gpu_tests.sh test_cuda_forward test_cuda_hooks
grep -E "span_tmap|tensor" $OUT/checks.log | head -5
echo "tests done at $(( $(date +%s) - t0 )) s"
grep -q '^FAIL' $OUT/checks.log && exit 1
[ $rc -eq 0 ] || exit 1
D=GLIM_CUDA_DIAG_RING=4
sh bench/decode_ab.sh ${ROUNDS:-4} old alt new GLIM_CUDA_SPAN_TMAP=0 alt,$D $D 2>&1 | tail -6
echo "a/b done at $(( $(date +%s) - t0 )) s"
for tool in memcheck racecheck synccheck; do
    timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx4_a \
        --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/san_$tool.log 2>&1
    echo "compute-sanitizer $tool: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1))"
done
rm -f $OUT/san_synccheck.log
timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
echo "all took $(( $(date +%s) - t0 )) s"
