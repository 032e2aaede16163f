#!/bin/sh
# s52_call2.sh (session 52): SPEC 3's full layers on their own instance, whose merge takes 72
# splits (AT_POLL_LOADS_FULL 9; the sliding layers keep main's 8-load instance), the working
# tree's change, against main (alt: main's attention object, build/attn_main.o, relinked here).
# Call 1 put 9 loads in every layer: full layers faster, decode at 4k 0.35 % slower. On an H200
# first the bench of record of this tree with its timeline and the no-bytes run. Then
# test_cuda_forward (att_poll_bits has poll_wide now: 66 splits at the full layers), the A/B
# (ROUNDS, default 4), this tree's timeline, memcheck over att_poll_bits.
# Carry .deps, build/cuda_objs.tar.xz, build/attn_main.o.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
case "$gpu" in
*H200*)
    timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
    grep -E "^\| decode" $OUT/tl_nobytes.md ;;
esac
sh bench/gpu_tests.sh test_cuda_forward
grep -E "poll|FAIL" $OUT/checks.log | head -12
echo "tests done at $(( $(date +%s) - t0 )) s"
cp build/src/cuda/attention.o build/attn_new.o
cp build/attn_main.o build/src/cuda/attention.o && touch build/src/cuda/attention.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" > $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
xz -T0 -1 -c build/glimmer > build/alt_glimmer.xz
cp build/attn_new.o build/src/cuda/attention.o && touch build/src/cuda/attention.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" >> $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
grep -c nvcc $OUT/build_alt.log | sed 's/^/nvcc lines in the two relinks (want 0): /'
sh bench/decode_ab.sh ${ROUNDS:-4} new alt 2>&1 | tail -2
echo "A/B done at $(( $(date +%s) - t0 )) s"
timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_new.md > /dev/null 2>&1
grep -E "^\| (decode|attention)" $OUT/tl_new.md | cut -d'|' -f1-4,6,10-12
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_forward > $OUT/san_poll_memcheck.log 2>&1
echo "compute-sanitizer memcheck over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY' $OUT/san_poll_memcheck.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_memcheck.log) pass)"
echo "call took $(( $(date +%s) - t0 )) s"
