#!/bin/sh
# s46_call5.sh (written in session 46, not yet run: the device budget ran out): the whole-byte
# scheme (`git apply bench/wip/fullbyte.patch && make -j2 all`: the low nibbles' rows take the
# weight word unmasked, the high rows' digits those of Zh - Zl) on whichever card comes: on an
# H200 first main's bench of record with its timeline (the owed H200 figure); then the digits'
# checks (CHECKS, default i8_digits_bytes and swiglu_down_digits), ROUNDS (2) alternating rounds
# against main (old = build/old_glimmer.xz from scripts/old_binary.sh at main) with and without
# weight bytes, and the forward test. Carry .deps, build/src/cuda, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer
    LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu timeout 100 build/old_glimmer bench --synthetic --timeline \
        --out $OUT/bench_main_h200.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench_main_h200.md
    echo "main's bench done at $(( $(date +%s) - t0 )) s"
fi
CHECK_ONLY=${CHECKS:-i8_digits_bytes,swiglu_down_digits} GLIM_REQUIRE_CUDA=1 \
    timeout ${CHECK_T:-60} build/tests/test_cuda_kernels > $OUT/checks_digits.log 2>&1
rc=$?
echo "digit and matvec checks rc=$rc: $(grep -c '^PASS' $OUT/checks_digits.log) pass, $(grep -c '^FAIL' $OUT/checks_digits.log) fail at $(( $(date +%s) - t0 )) s"
grep -A3 '^FAIL' $OUT/checks_digits.log | head -12
if [ $rc -eq 0 ]; then
    sh bench/decode_ab.sh ${ROUNDS:-2} old new old,GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4 2>&1 | tail -4
    echo "a/b done at $(( $(date +%s) - t0 )) s"
    GLIM_REQUIRE_CUDA=1 timeout ${FWD_T:-150} build/tests/test_cuda_forward > $OUT/checks_forward.log 2>&1
    echo "forward test rc=$?: $(grep -c '^PASS' $OUT/checks_forward.log) pass, $(grep -c '^FAIL' $OUT/checks_forward.log) fail"
    grep -A3 '^FAIL' $OUT/checks_forward.log | head -12
fi
echo "all took $(( $(date +%s) - t0 )) s"
