#!/bin/sh
# s47_call1.sh: session 47's first call, on whichever card comes. This tree = the whole-byte
# digits (bench/wip/fullbyte.patch) + two groups per m16n8k32 ("pairs"); alt = the whole-byte
# tree alone (build/alt_glimmer.xz), old = main (build/old_glimmer.xz). On an H200 first main's
# bench of record with its timeline (the owed H200 figure). Then the digits' and the integer
# matvecs' kernel checks; if they pass, ROUNDS alternating rounds of old / alt / new with and
# without weight bytes, and the forward test. Carry .deps, build/cuda_objs.tar.xz (tar -cf - build/src/cuda/*.o | xz),
# build/old_glimmer.xz, build/alt_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
# the CUDA objects travel as build/cuda_objs.tar.xz (the working tree and carry fit 64 MiB so)
[ -f build/cuda_objs.tar.xz ] && { mkdir -p build/src/cuda && xz -dc build/cuda_objs.tar.xz | tar -xf -; }
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=${ROUNDS:-3}
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer
    timeout 100 build/old_glimmer bench --synthetic --timeline --out $OUT/bench_main_h200.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench_main_h200.md
    echo "main's bench done at $(( $(date +%s) - t0 )) s"
    R=${ROUNDS:-2}
fi
CHECK_ONLY=${CHECKS:-i8_digits_bytes,decode_matvec,decode_matvec_span,swiglu_down_digits} GLIM_REQUIRE_CUDA=1 \
    timeout ${CHECK_T:-90} build/tests/test_cuda_kernels > $OUT/checks_digits.log 2>&1
rc=$?
echo "digit and matvec checks rc=$rc: $(grep -c '^PASS' $OUT/checks_digits.log) pass, $(grep -c '^FAIL' $OUT/checks_digits.log) fail at $(( $(date +%s) - t0 )) s"
grep -A3 '^FAIL' $OUT/checks_digits.log | head -12
D=GLIM_CUDA_DIAG_RING=4
if [ $rc -eq 0 ]; then
    sh bench/decode_ab.sh $R old alt new old,$D alt,$D $D 2>&1 | tail -6
else
    # pairs fails: back to the whole-byte tree alone (bench/wip/pairs.patch reversed; the
    # objects that include the matvec headers rebuilt, ~1-2 min), its checks, A/B and forward test
    cp $OUT/checks_digits.log $OUT/checks_digits_pairs.log
    { git apply -R bench/wip/pairs.patch || patch -R -p1 < bench/wip/pairs.patch; } > $OUT/unpatch.log 2>&1 || { echo "reversing pairs failed"; tail -5 $OUT/unpatch.log; exit 1; }
    for o in decode_chain decode_mv decode_mv_dyn decode_mv_span decode_mv_tma prefill_gemm qmatvec; do rm -f build/src/cuda/$o.o; done
    scripts/device_build.sh > $OUT/build_fullbyte.log 2>&1 || { tail -20 $OUT/build_fullbyte.log; exit 1; }
    echo "whole-byte tree rebuilt at $(( $(date +%s) - t0 )) s"
    CHECK_ONLY=${CHECKS:-i8_digits_bytes,decode_matvec,decode_matvec_span,swiglu_down_digits} GLIM_REQUIRE_CUDA=1 \
        timeout ${CHECK_T:-90} build/tests/test_cuda_kernels > $OUT/checks_digits.log 2>&1
    rc=$?
    echo "whole-byte checks rc=$rc: $(grep -c '^PASS' $OUT/checks_digits.log) pass, $(grep -c '^FAIL' $OUT/checks_digits.log) fail"
    grep -A3 '^FAIL' $OUT/checks_digits.log | head -12
    [ $rc -eq 0 ] && sh bench/decode_ab.sh $R old new old,$D $D 2>&1 | tail -4
fi
echo "a/b done at $(( $(date +%s) - t0 )) s"
if [ $rc -eq 0 ]; then
    GLIM_REQUIRE_CUDA=1 timeout ${FWD_T:-150} build/tests/test_cuda_forward > $OUT/checks_forward.log 2>&1
    echo "forward test rc=$?: $(grep -c '^PASS' $OUT/checks_forward.log) pass, $(grep -c '^FAIL' $OUT/checks_forward.log) fail"
    grep -A3 '^FAIL' $OUT/checks_forward.log | head -12
fi
echo "all took $(( $(date +%s) - t0 )) s"
