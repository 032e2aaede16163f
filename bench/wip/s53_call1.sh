#!/bin/sh
# s53_call1.sh (session 53): one call that serves either card. Main's build first (the carried
# build/cuda_objs.tar.xz), kept as the A/B's `old` binary. On an H200 only: the bench of record
# and the no-bytes run (bench/h200_record.sh, owed since RESULTS v39), main's three GPU test
# programs. Then the tree with bench/wip/att_wide_keys.patch applied and its objects
# (build/cuda_objs_wide.tar.xz, built here with the patch): att_poll_bits (poll_wide), the A/B
# at ctx 0/4k/8k/16k/32k of main against the patched tree at WIDE_KEYS 0 (its default: main's
# SASS), 1, 4200 and 12000, plus on an H200 o_proj at one row block a chunk (SPAN_TWO=13, the
# H100's default; the H200's 15 was set by emulation); memcheck over att_poll_bits and the
# forward test under the patch.
# Carry .deps, build/cuda_objs.tar.xz, build/cuda_objs_wide.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
xz -T0 -1 -c build/glimmer > build/old_glimmer.xz
. bench/h200_record.sh
case "$gpu" in *H200*) sh bench/gpu_tests.sh; extra=GLIM_CUDA_SPAN_TWO=13 ;; *) extra= ;; esac
echo "main done at $(( $(date +%s) - t0 )) s"
git apply bench/wip/att_wide_keys.patch 2>/dev/null || patch -p1 < bench/wip/att_wide_keys.patch > /dev/null || exit 1
mv build/cuda_objs_wide.tar.xz build/cuda_objs.tar.xz
scripts/device_build.sh --carried > "$OUT/build_wide.log" 2>&1 || { tail -20 "$OUT/build_wide.log"; exit 1; }
echo "nvcc lines in the patched build: $(grep -c nvcc "$OUT/build_wide.log")"
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 60 build/tests/test_cuda_forward > $OUT/poll.log 2>&1
echo "att_poll_bits: rc=$?"; grep -E "poll_wide|FAIL" $OUT/poll.log | head -4
CTX=0,4096,8192,16384,32768 sh bench/decode_ab.sh ${ROUNDS:-4} old new GLIM_CUDA_ATT_WIDE_KEYS=1 \
    GLIM_CUDA_ATT_WIDE_KEYS=4200 GLIM_CUDA_ATT_WIDE_KEYS=12000 $extra 2>&1 | tail -8
echo "A/B done at $(( $(date +%s) - t0 )) s"
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_forward > $OUT/san_poll_memcheck.log 2>&1
echo "compute-sanitizer memcheck over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY' $OUT/san_poll_memcheck.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_memcheck.log) pass)"
OUT=$OUT/wide sh bench/gpu_tests.sh test_cuda_forward
echo "call took $(( $(date +%s) - t0 )) s"
