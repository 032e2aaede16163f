#!/bin/sh
# s48_call1.sh (written in session 47 for the next call): bench/wip/i8_chains.patch (for groups
# of 64 a unit's two pairs into two int32 accumulators: two independent chains of 2 mma instead
# of one of 4, 4 integer adds a unit more; the same bits) with bench/wip/span_nofence.patch (the
# run-time switch GLIM_CUDA_SPAN_NOFENCE=1: the span kernel's refill without its proxy fence;
# default off, and its forward test span_nofence) against main, on whichever card comes.
# On an H200 first main's bench of record and its no-bytes timeline (old binary: the H200 figure
# owed since session 37). Then the integer matvec checks, ROUNDS (4) alternating rounds of old /
# new with and without weight bytes (~30 s on an H100), the three GPU test programs and
# compute-sanitizer. Before the call, here: `git apply bench/wip/i8_chains.patch
# bench/wip/span_nofence.patch && make -j2 all && scripts/pack_cuda_objects.sh`, and
# build/old_glimmer.xz from `scripts/old_binary.sh main` (made in session 47 at 257425b: same
# decode code as main).
# Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    timeout 100 build/old_glimmer bench --synthetic --timeline --out $OUT/bench_main_h200.md > /dev/null 2>&1
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/old_glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_nobytes_main_h200.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench_main_h200.md $OUT/tl_nobytes_main_h200.md
    echo "main's H200 bench done at $(( $(date +%s) - t0 )) s"
fi
CHECK_ONLY=i8_digits_bytes,decode_matvec,decode_matvec_span,swiglu_down_digits GLIM_REQUIRE_CUDA=1 \
    timeout 200 build/tests/test_cuda_kernels > $OUT/checks_digits.log 2>&1
rc=$?
echo "integer matvec checks rc=$rc: $(grep -c '^PASS' $OUT/checks_digits.log) pass, $(grep -c '^FAIL' $OUT/checks_digits.log) fail at $(( $(date +%s) - t0 )) s"
grep -A3 '^FAIL' $OUT/checks_digits.log | head -12
D=GLIM_CUDA_DIAG_RING=4
F=GLIM_CUDA_SPAN_NOFENCE=1
sh bench/decode_ab.sh ${ROUNDS:-4} old new $F old,$D $D $F,$D 2>&1 | tail -6
cp $OUT/ab.md $OUT/ab_chains.md
echo "a/b done at $(( $(date +%s) - t0 )) s"
if [ $rc -eq 0 ]; then
    sh bench/gpu_tests.sh
    for tool in memcheck racecheck synccheck; do
        timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx4_a \
            --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/san_$tool.log 2>&1
        echo "compute-sanitizer $tool: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1))"
    done
    timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
fi
echo "all took $(( $(date +%s) - t0 )) s"
